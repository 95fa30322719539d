@testable import HTTP2TLS
import Testing

@Suite("Transport value types")
struct ValueTests {
    @Test("GOAWAY debug data: JSON reason when present, nil otherwise")
    func goAwayReason() {
        #expect(GoAway(lastStreamID: 5, errorCode: 0, debugData: Array(#"{"reason":"Shutdown"}"#.utf8)).reason == "Shutdown")
        #expect(GoAway(lastStreamID: 5, errorCode: 0, debugData: Array("plain text".utf8)).reason == nil)
        #expect(GoAway(lastStreamID: 5, errorCode: 0, debugData: Array(#"{"reason":7}"#.utf8)).reason == nil)
        #expect(GoAway(lastStreamID: 5, errorCode: 0, debugData: []).reason == nil)
        #expect(GoAway(lastStreamID: 5, errorCode: 2, debugData: Array("oops".utf8)).description.contains("oops"))
    }

    @Test("failure descriptions say whether a resend is safe")
    func failureDescriptions() {
        #expect(RequestFailure(.notProcessed, .refusedStream).description.hasSuffix("(not processed)"))
        #expect(RequestFailure(.mayHaveBeenProcessed, .deadlineExceeded).description.hasSuffix("(may have been processed)"))
        #expect(RequestFailure(.notProcessed, .refusedStream).wasCertainlyNotProcessed)
        #expect(!RequestFailure(.mayHaveBeenProcessed, .connectionClosed(.peerClosed)).wasCertainlyNotProcessed)
    }

    @Test("header look-up ignores case")
    func headerLookup() {
        let headers = [HeaderField("apns-id", "A"), HeaderField("Apns-Unique-Id", "B")]
        #expect(headers.value(of: "APNS-ID") == "A")
        #expect(headers.value(of: "apns-unique-id") == "B")
        #expect(headers.value(of: "missing") == nil)
    }
}
