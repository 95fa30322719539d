import APNsCore
import PGPushCore
import Testing

struct PayloadTests {
    static func reason(_ text: String, _ type: PushType = .alert) -> ValidationFailure.Reason? {
        reason(Array(text.utf8), type)
    }

    static func reason(_ bytes: [UInt8], _ type: PushType = .alert) -> ValidationFailure.Reason? {
        do {
            _ = try Payload(validating: bytes, for: type)
            return nil
        } catch {
            return error.reason
        }
    }

    @Test func compactsJSONBOutput() throws {
        let payload = try Payload(validating: Array(#"{"aps": {"alert": "hi", "badge": 1}, "id": 12345678901234567890}"#.utf8), for: .alert)
        #expect(payload.bytes == Array(#"{"aps":{"alert":"hi","badge":1},"id":12345678901234567890}"#.utf8))
    }

    @Test(arguments: ["[]", "[1]", "1", "\"s\"", "null", "true"])
    func rejectsNonObjects(text: String) {
        #expect(Self.reason(text) == .invalidPayload)
    }

    @Test(arguments: ["", " ", "{", "{\"a\":}", "not json", "{\"a\":1}{}"])
    func rejectsInvalidJSON(text: String) {
        #expect(Self.reason(text) == .invalidPayload)
    }

    /// `{"p":"xxx…"}` whose compact form is exactly `size` bytes, padded with
    /// whitespace that compaction removes.
    static func object(compactSize size: Int, padding: Int) -> [UInt8] {
        let filler = String(repeating: "x", count: size - 8)
        return Array("{\"p\":\(String(repeating: " ", count: padding))\"\(filler)\"}".utf8)
    }

    /// Background and Live Activity bodies need fields of their own: BroadcastRequestTests.
    @Test(arguments: PushType.allCases.filter { $0 != .background && $0 != .liveactivity })
    func sizeLimitIsMeasuredOnCompactBytes(type: PushType) throws {
        let limit = type.payloadLimit
        let atLimit = Self.object(compactSize: limit, padding: 500)
        #expect(atLimit.count > limit)
        #expect(try Payload(validating: atLimit, for: type).bytes.count == limit)
        #expect(Self.reason(Self.object(compactSize: limit + 1, padding: 0), type) == .payloadTooLarge)
    }

    @Test func voipAllowsMoreThanAlert() {
        let payload = Self.object(compactSize: 5000, padding: 0)
        #expect(Self.reason(payload, .alert) == .payloadTooLarge)
        #expect(Self.reason(payload, .voip) == nil)
    }

    @Test(arguments: [
        #"{"aps": {"content-available": 1}}"#,
        #"{"aps": {"content-available": 1}, "custom": {"k": [1, 2]}}"#,
        #"{"aps": {"content-available": 1.0, "thread-id": "t"}}"#,
        #"{"aps": {"content-available": 1}, "alert": "custom key outside aps is fine"}"#,
    ])
    func acceptsSilentBackgroundPayloads(text: String) {
        #expect(Self.reason(text, .background) == nil)
    }

    @Test(arguments: [
        #"{}"#,
        #"{"aps": 1}"#,
        #"{"aps": {}}"#,
        #"{"aps": {"content-available": 0}}"#,
        #"{"aps": {"content-available": "1"}}"#,
        #"{"aps": {"content-available": true}}"#,
        #"{"aps": {"content-available": 1, "alert": "hi"}}"#,
        #"{"aps": {"content-available": 1, "badge": 0}}"#,
        #"{"aps": {"content-available": 1, "sound": "default"}}"#,
        #"{"other": {"content-available": 1}}"#,
    ])
    func rejectsBackgroundPayloadsThatAreNotSilent(text: String) {
        #expect(Self.reason(text, .background) == .badBackgroundPayload)
    }

    @Test func backgroundRuleDoesNotApplyToOtherTypes() {
        #expect(Self.reason(#"{"aps": {"alert": "hi", "content-available": 1}}"#, .alert) == nil)
        #expect(Self.reason("{}", .voip) == nil)
    }

    @Test func failureMessagesNameTheProblem() {
        do {
            _ = try Payload(validating: Array(#"{"a": x}"#.utf8), for: .alert)
        } catch {
            #expect(error.message == "payload is not valid JSON: unexpected character at byte 6")
        }
        do {
            _ = try Payload(validating: Self.object(compactSize: 4097, padding: 0), for: .alert)
        } catch {
            #expect(error.message == "payload is 4097 bytes compact; alert allows 4096")
        }
    }
}
