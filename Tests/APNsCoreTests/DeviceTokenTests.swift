import APNsCore
import PGPushCore
import Testing

struct DeviceTokenTests {
    @Test(arguments: [2, 64, 108, 160, 400])
    func acceptsAnyEvenLengthUpTo400(length: Int) throws {
        let text = String(repeating: "aB", count: length / 2)
        let token = try DeviceToken(validating: text)
        #expect(token.hex == String(repeating: "ab", count: length / 2))
        #expect(token.hex.utf8.count == length)
    }

    @Test func lowercasesMixedCase() throws {
        let token = try DeviceToken(validating: "0123456789ABCDEFabcdef")
        #expect(token.hex == "0123456789abcdefabcdef")
        #expect(token.description == token.hex)
    }

    @Test(arguments: ["", "a", "abc", String(repeating: "ab", count: 201), String(repeating: "a", count: 401)])
    func rejectsBadLengths(text: String) {
        #expect(throws: ValidationFailure.self) { try DeviceToken(validating: text) }
        do {
            _ = try DeviceToken(validating: text)
        } catch {
            #expect(error.reason == .badDeviceToken)
        }
    }

    @Test(arguments: ["abcg", "ab cd", "ab-d", "ab\ncd", "éé", "0x12", "ab\u{0}0", "１２"])
    func rejectsNonHex(text: String) {
        do {
            _ = try DeviceToken(validating: text)
            Issue.record("accepted \(text.debugDescription)")
        } catch {
            #expect(error.reason == .badDeviceToken)
            #expect(!error.message.isEmpty)
        }
    }

    @Test func namesThePositionOfTheFirstBadCharacter() {
        do {
            _ = try DeviceToken(validating: "abcz")
            Issue.record("accepted")
        } catch {
            #expect(error.message.contains("position 4"))
        }
    }
}
