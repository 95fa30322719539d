@testable import HTTP2TLS
import Testing

struct HeaderFieldTests {
    @Test func descriptionNeverShowsAnAuthorizationValue() {
        #expect(!HeaderField("authorization", "bearer secret.jwt.value").description.contains("secret"))
        #expect(!HeaderField("Authorization", "bearer secret.jwt.value", neverIndex: true).description.contains("secret"))
        #expect(HeaderField("apns-topic", "t").description == "apns-topic: t")
        #expect(HeaderField("apns-id", "i", neverIndex: true).description == "apns-id: i (never indexed)")
    }

    static func received(_ fields: [(String, String)]) -> ResponseHeaders {
        var headers = ResponseHeaders()
        for (name, value) in fields {
            Array(name.utf8).withUnsafeBufferPointer { name in
                Array(value.utf8).withUnsafeBufferPointer { value in headers.append(name: name, value: value) }
            }
        }
        return headers
    }

    @Test func anAnswersFieldsAreFoundByNameInAnyCaseAndKeptInOrder() {
        let long = String(repeating: "v", count: 70_000)
        let headers = Self.received([("apns-id", "first"), ("empty", ""), ("apns-id", "second"), ("x-long", long)])
        #expect(headers.count == 4)
        #expect(headers.value(of: "apns-id") == "first")
        #expect(headers.value(of: "APNS-Id") == "first")
        #expect(headers.value(of: "empty") == "")
        #expect(headers.value(of: "x-long") == long)
        #expect(headers.value(of: "apns") == nil && headers.value(of: "apns-id2") == nil)
        #expect(headers.withValue(of: "apns-id") { $0.count } == 5)
        #expect(headers.map(\.name) == ["apns-id", "empty", "apns-id", "x-long"])
        #expect(headers.map(\.value) == ["first", "", "second", long])
        #expect(ResponseHeaders().isEmpty && ResponseHeaders().value(of: "apns-id") == nil)
    }
}
