import APNsCore
import Foundation
@testable import PGPushCore
import Testing

/// Thousands of random and mutated inputs through every parser that sees
/// outside data: each must return a result or a typed failure, never crash,
/// and whatever is accepted must satisfy the compaction invariants.
struct FuzzTests {
    static let seeds: [String] = [
        #"{"aps": {"alert": {"title": "Hi", "body": "Body \"quoted\" \\ \u00e9"}, "badge": 3, "sound": "default"}}"#,
        #"{"aps": {"content-available": 1}, "data": [1, -2.5e10, true, false, null, {"k": []}]}"#,
        #"{"reason": "Unregistered", "timestamp": 1700000000123}"#,
        #"{"n": [12345678901234567890, 1e400, -0, 0.5E-3], "u": "\uD83D\uDE00 日本"}"#,
        "{\n  \"a\" : {\n    \"b\" : [ 1 , 2 ]\n  }\n}\n",
    ]

    static let interesting: [UInt8] = Array(#"{}[]",:\ u0123456789abcdefABCDEF-+.eEtruefalsn"#.utf8) + [0x00, 0x09, 0x0A, 0x0D, 0x20, 0x7F, 0x80, 0xBF, 0xC3, 0xE2, 0xED, 0xF0, 0xF4, 0xFF]

    static func mutate(_ input: [UInt8], using random: inout SeededRandomNumberGenerator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let choice = Int.random(in: 0..<6, using: &random)
            let index = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &random)
            switch choice {
            case 0 where !bytes.isEmpty: bytes[index] = interesting.randomElement(using: &random) ?? 0
            case 1: bytes.insert(interesting.randomElement(using: &random) ?? 0, at: index)
            case 2 where !bytes.isEmpty: bytes.remove(at: index)
            case 3 where !bytes.isEmpty:
                let end = min(bytes.count, index + Int.random(in: 1...16, using: &random))
                bytes.insert(contentsOf: bytes[index..<end], at: index)
            case 4 where !bytes.isEmpty: bytes[index] = UInt8.random(in: 0...255, using: &random)
            case 5 where !bytes.isEmpty: bytes.removeSubrange(index..<min(bytes.count, index + Int.random(in: 1...8, using: &random)))
            default: bytes.append(UInt8.random(in: 0...255, using: &random))
            }
        }
        return bytes
    }

    static func randomBytes(using random: inout SeededRandomNumberGenerator) -> [UInt8] {
        let alphabet = Bool.random(using: &random) ? interesting : nil
        return (0..<Int.random(in: 0...64, using: &random)).map { _ in
            alphabet?.randomElement(using: &random) ?? UInt8.random(in: 0...255, using: &random)
        }
    }

    /// A deliberately naive compactor: drop whitespace outside strings.
    static func referenceCompact(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                output.append(byte)
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
            } else if ![0x20, 0x09, 0x0A, 0x0D].contains(byte) {
                output.append(byte)
                if byte == UInt8(ascii: "\"") { inString = true }
            }
        }
        return output
    }

    static func inputs(count: Int, seed: UInt64) -> [[UInt8]] {
        var random = SeededRandomNumberGenerator(seed: seed)
        return (0..<count).map { index in
            if index % 5 == 0 { return randomBytes(using: &random) }
            let base = Array(seeds[index % seeds.count].utf8)
            return mutate(base, using: &random)
        }
    }

    @Test func scannerNeverCrashesAndCompactsLikeTheReference() throws {
        var accepted = 0
        for input in Self.inputs(count: 6000, seed: 1) {
            guard let result = try? JSONScanner.scan(input, compacting: true, buildingValue: true) else { continue }
            accepted += 1
            #expect(result.compact == Self.referenceCompact(input))
            let again = try JSONScanner.scan(result.compact, compacting: true, buildingValue: true)
            #expect(again.compact == result.compact)
            #expect(again.value == result.value)
        }
        // The mutations must exercise both paths, or the test proves little.
        #expect(accepted > 300)
        #expect(accepted < 5500)
    }

    @Test func payloadValidationNeverCrashes() {
        var outcomes: Set<String> = []
        for (index, input) in Self.inputs(count: 4000, seed: 2).enumerated() {
            let type = PushType.allCases[index % PushType.allCases.count]
            do {
                let payload = try Payload(validating: input, for: type)
                #expect(payload.bytes.first == UInt8(ascii: "{"))
                #expect(payload.bytes.count <= type.payloadLimit)
                outcomes.insert("ok")
            } catch {
                #expect(!error.message.isEmpty)
                outcomes.insert(error.reason.rawValue)
            }
        }
        #expect(outcomes.contains("ok"))
        #expect(outcomes.contains("InvalidPayload"))
        #expect(outcomes.contains("BadBackgroundPayload"))
    }

    @Test func errorBodyParsingNeverCrashes() {
        var withReason = 0
        for input in Self.inputs(count: 4000, seed: 3) {
            if let body = APNsErrorBody.parse(input), body.reason != nil { withReason += 1 }
        }
        #expect(withReason > 0)
    }

    @Test func tokenValidationNeverCrashes() {
        var random = SeededRandomNumberGenerator(seed: 4)
        let alphabet = Array("0123456789abcdefABCDEFgxyz -\u{0}é".unicodeScalars)
        var valid = 0
        for _ in 0..<4000 {
            let length = Int.random(in: 0...420, using: &random)
            var scalars = String.UnicodeScalarView()
            for _ in 0..<length {
                // Mostly hex so that some tokens pass.
                let pick = Int.random(in: 0..<100, using: &random) < 97 ? Int.random(in: 0..<22, using: &random) : Int.random(in: 0..<alphabet.count, using: &random)
                scalars.append(alphabet[pick])
            }
            let text = String(scalars)
            if let token = try? DeviceToken(validating: text) {
                valid += 1
                #expect(token.hex == text.lowercased())
                #expect(token.hex.utf8.count % 2 == 0 && token.hex.utf8.count <= 400)
            }
        }
        #expect(valid > 0)
    }

    @Test func notificationValidationNeverCrashes() {
        var random = SeededRandomNumberGenerator(seed: 5)
        let payloads = Self.inputs(count: 2000, seed: 6)
        for payload in payloads {
            let notification = PushNotification(
                id: Int64.random(in: .min ... .max, using: &random),
                deviceToken: Bool.random(using: &random) ? "abcd" : "xy",
                pushType: (PushType.allCases.map(\.rawValue) + ["", "bogus"]).randomElement(using: &random) ?? "",
                priority: [nil, 1, 5, 10, 0, -3, Int.max].randomElement(using: &random) ?? nil,
                topic: [nil, "", "t", "bad topic"].randomElement(using: &random) ?? nil,
                payload: payload,
                collapseID: [nil, "", "c", String(repeating: "x", count: 65)].randomElement(using: &random) ?? nil,
                expiration: [nil, 0, -1, .max, .min].randomElement(using: &random) ?? nil)
            let authentication: AuthenticationMethod = Bool.random(using: &random) ? .token : .certificate
            if let request = try? notification.validated(bundleID: "com.example", authentication: authentication) {
                #expect(request.notificationID == notification.id)
                #expect(request.pushType.rawValue == notification.pushType)
                #expect(request.collapseID == notification.collapseID)
            }
        }
    }
}
