import HTTP2TLS
import Testing

struct HeaderFieldTests {
    @Test func descriptionNeverShowsAnAuthorizationValue() {
        #expect(!HeaderField("authorization", "bearer secret.jwt.value").description.contains("secret"))
        #expect(!HeaderField("Authorization", "bearer secret.jwt.value", neverIndex: true).description.contains("secret"))
        #expect(HeaderField("apns-topic", "t").description == "apns-topic: t")
        #expect(HeaderField("apns-id", "i", neverIndex: true).description == "apns-id: i (never indexed)")
    }
}
