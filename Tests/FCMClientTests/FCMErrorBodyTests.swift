import FCMClient
import Testing

@Suite("FCM error bodies: every errorCode, with and without its detail")
struct FCMErrorBodyTests {
    func parse(_ text: String) -> FCMErrorBody? { FCMErrorBody.parse(Array(text.utf8)) }

    @Test("the FcmError detail's code is the reason; without it, the status")
    func reasonFromDetailOrStatus() {
        let unregistered = parse("""
            {"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[\
            {"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}
            """)
        #expect(unregistered?.reason == "UNREGISTERED")
        #expect(unregistered?.status == "NOT_FOUND")
        #expect(unregistered?.message == "Requested entity was not found.")
        let noDetail = parse(#"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#)
        #expect(noDetail?.reason == "UNAUTHENTICATED")
        #expect(noDetail?.errorCode == nil)
        let unspecified = parse("""
            {"error":{"code":503,"status":"UNAVAILABLE","details":[\
            {"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNSPECIFIED_ERROR"}]}}
            """)
        #expect(unspecified?.reason == "UNAVAILABLE")
        let older = parse("""
            {"error":{"code":401,"status":"UNAUTHENTICATED","details":[\
            {"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"APNS_AUTH_ERROR"}]}}
            """)
        #expect(older?.reason == "THIRD_PARTY_AUTH_ERROR")
    }

    @Test("every code of Google's table round-trips through the simulator's encoding")
    func everyCode() {
        let table: [(Int, String, String)] = [
            (400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"), (404, "NOT_FOUND", "UNREGISTERED"),
            (403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH"), (429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"),
            (503, "UNAVAILABLE", "UNAVAILABLE"), (500, "INTERNAL", "INTERNAL"),
            (401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR"),
        ]
        for (http, status, code) in table {
            let body = FCMErrorBody(status: status, errorCode: code, message: "a \"quoted\"\nmessage")
            #expect(FCMErrorBody.parse(body.encoded(httpStatus: http)) == body)
            #expect(FCMErrorBody.parse(body.encoded(httpStatus: http))?.reason == code)
        }
    }

    @Test("an INVALID_ARGUMENT is about the token only when a field violation or the message says so")
    func tokenOrMessage() {
        let byField = FCMErrorBody(status: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", message: "Invalid value",
                                   fieldViolations: ["message.token"])
        #expect(FCMErrorBody.parse(byField.encoded(httpStatus: 400))?.concernsToken == true)
        let byMessage = FCMErrorBody(status: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT",
                                     message: "The registration token is not a valid FCM registration token")
        #expect(byMessage.concernsToken)
        let aboutData = FCMErrorBody(status: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT",
                                     message: "Invalid value at 'message.data[0].value' (TYPE_STRING), 42",
                                     fieldViolations: ["message.data[0].value"])
        #expect(!FCMErrorBody.parse(aboutData.encoded(httpStatus: 400))!.concernsToken)
        let notFound = FCMErrorBody(status: "NOT_FOUND", errorCode: "UNREGISTERED", message: nil, fieldViolations: ["message.token"])
        #expect(!notFound.concernsToken)
    }

    @Test("HTML, empty, truncated or oddly typed bodies give nil or empty fields, never a crash")
    func hostileBodies() {
        for text in ["", "<html><body>401</body></html>", #"{"error":"#, #"{"error":"denied"}"#, "[]", "null"] {
            #expect(parse(text) == nil)
        }
        let odd = parse(#"{"error":{"status":7,"message":["x"],"details":{"@type":"x"}}}"#)
        #expect(odd == FCMErrorBody(status: nil, errorCode: nil, message: nil))
        #expect(odd?.reason == nil)
        // What the network sends is kept bounded: long texts clipped, at most 20 field names.
        let fields = (0..<50).map { #"{"field":"message.data[\#($0)].value"}"# }.joined(separator: ",")
        let flood = parse(#"{"error":{"status":""# + String(repeating: "S", count: 10_000) + #"","message":""#
                          + String(repeating: "m", count: 100_000) + #"","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":["#
                          + fields + "]}]}}")
        #expect(flood?.status?.count == 100)
        #expect(flood?.message?.count == 500)
        #expect(flood?.fieldViolations.count == 20)
        #expect(flood?.fieldViolations.first == "message.data[0].value")
        let oddDetails = parse(#"{"error":{"status":"INVALID_ARGUMENT","details":[1,"x",{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":3},{}]}]}}"#)
        #expect(oddDetails?.fieldViolations == [])
    }
}
