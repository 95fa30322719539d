import Testing
@testable import PGPushCore

struct JSONScannerTests {
    static func compact(_ text: String) throws(JSONSyntaxError) -> String {
        let result = try JSONScanner.scan(Array(text.utf8), compacting: true, buildingValue: false)
        return String(decoding: result.compact, as: UTF8.self)
    }

    static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue? {
        try JSONScanner.scan(Array(text.utf8), compacting: false, buildingValue: true).value
    }

    static func failureKind(_ text: String) -> JSONSyntaxError.Kind? {
        do {
            _ = try JSONScanner.scan(Array(text.utf8), compacting: true, buildingValue: true)
            return nil
        } catch {
            return error.kind
        }
    }

    @Test(arguments: [
        (#"{"aps": {"alert": "hi"}}"#, #"{"aps":{"alert":"hi"}}"#),
        ("{\n  \"a\" : [ 1 , 2 ,\t3 ] ,\r\n \"b\" : { } }\n", #"{"a":[1,2,3],"b":{}}"#),
        (#"  {"a":1}  "#, #"{"a":1}"#),
        (#"{"a": "  spaces  inside  "}"#, #"{"a":"  spaces  inside  "}"#),
        (#"{"a": [ ], "b": [ [ ] ]}"#, #"{"a":[],"b":[[]]}"#),
        (#"{"t": true, "f": false, "n": null}"#, #"{"t":true,"f":false,"n":null}"#),
        (#"{"k": "a\"b\\c\/d\b\f\n\r\t"}"#, #"{"k":"a\"b\\c\/d\b\f\n\r\t"}"#),
        (#"{"u": "\u00e9\uD83D\uDE00"}"#, #"{"u":"\u00e9\uD83D\uDE00"}"#),
        (#"{"raw": "é 日本 😀"}"#, #"{"raw":"é 日本 😀"}"#),
        (#"{"big": 1e400, "long": 12345678901234567890, "neg": -0.0, "exp": 1E-7, "p": 2e+5}"#,
         #"{"big":1e400,"long":12345678901234567890,"neg":-0.0,"exp":1E-7,"p":2e+5}"#),
        (#"{"d": 0.1000000000000000055511151231257827}"#, #"{"d":0.1000000000000000055511151231257827}"#),
        (#"{"deep": {"a": {"b": {"c": [1, {"d": "e"}]}}}}"#, #"{"deep":{"a":{"b":{"c":[1,{"d":"e"}]}}}}"#),
        (#"{"":""}"#, #"{"":""}"#),
    ])
    func compactsKeepingTokensByteExact(input: String, expected: String) throws {
        #expect(try Self.compact(input) == expected)
    }

    @Test func alreadyCompactInputIsUnchanged() throws {
        let text = #"{"aps":{"alert":{"title":"T","body":"B"},"badge":3},"x":[1,2.5,"s"]}"#
        #expect(try Self.compact(text) == text)
    }

    @Test(arguments: [
        ("", JSONSyntaxError.Kind.empty),
        ("   ", .unexpectedEnd),
        ("{", .unexpectedEnd),
        (#"{"a"}"#, .unexpectedByte),
        (#"{"a":}"#, .unexpectedByte),
        (#"{"a":1,}"#, .unexpectedByte),
        (#"{"a":1 "b":2}"#, .unexpectedByte),
        (#"{a:1}"#, .unexpectedByte),
        (#"{'a':1}"#, .unexpectedByte),
        (#"[1,]"#, .unexpectedByte),
        (#"[1 2]"#, .unexpectedByte),
        (#"{"a":1}}"#, .trailingContent),
        (#"{"a":1} x"#, .trailingContent),
        (#"{"a":01}"#, .unexpectedByte),
        (#"{"a":-}"#, .invalidNumber),
        (#"{"a":1.}"#, .invalidNumber),
        (#"{"a":.5}"#, .unexpectedByte),
        (#"{"a":1e}"#, .invalidNumber),
        (#"{"a":+1}"#, .unexpectedByte),
        (#"{"a":NaN}"#, .unexpectedByte),
        (#"{"a":Infinity}"#, .unexpectedByte),
        (#"{"a":tru}"#, .unexpectedByte),
        (#"{"a":nul"#, .unexpectedEnd),
        (#"{"a":"\x"}"#, .invalidEscape),
        (#"{"a":"\u12G4"}"#, .invalidEscape),
        (#"{"a":"\u12"#, .unexpectedEnd),
        ("{\"a\":\"line\nbreak\"}", .controlCharacterInString),
        ("{\"a\":\"tab\there\"}", .controlCharacterInString),
        (#"{"a":"unterminated}"#, .unexpectedEnd),
        ("\u{FEFF}{}", .unexpectedByte),
        ("{\"a\":1}\u{0}", .trailingContent),
    ])
    func rejectsInvalidJSON(input: String, kind: JSONSyntaxError.Kind) {
        #expect(Self.failureKind(input) == kind)
    }

    @Test(arguments: [
        [0x22, 0xC3, 0x22] as [UInt8],                 // truncated 2-byte sequence
        [0x22, 0xC0, 0xAF, 0x22],                       // overlong '/'
        [0x22, 0xE0, 0x80, 0xAF, 0x22],                 // overlong 3-byte
        [0x22, 0xED, 0xA0, 0x80, 0x22],                 // UTF-8 encoded surrogate
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],           // above U+10FFFF
        [0x22, 0xFF, 0x22],                             // never valid
        [0x22, 0x80, 0x22],                             // lone continuation byte
        [0x22, 0xF0, 0x9F, 0x98, 0x22],                 // truncated 4-byte sequence
    ])
    func rejectsInvalidUTF8InStrings(body: [UInt8]) {
        let input = Array(#"{"a":"#.utf8) + body + [UInt8(ascii: "}")]
        #expect(throws: JSONSyntaxError.self) {
            try JSONScanner.scan(input, compacting: true, buildingValue: false)
        }
    }

    // The wrapping object is level 1, so 63 arrays inside reach exactly 64.
    @Test func nestingIsCappedAt64() throws {
        let ok = String(repeating: "[", count: 63) + String(repeating: "]", count: 63)
        #expect(try Self.compact("{\"a\":\(ok)}").utf8.count == 5 + 63 * 2 + 1)
        let tooDeep = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(Self.failureKind("{\"a\":\(tooDeep)}") == .nestingTooDeep)
    }

    @Test func depthBombIsRejectedWithoutDeepRecursion() {
        let bomb = String(repeating: "{\"a\":[", count: 500_000)
        #expect(Self.failureKind(bomb) == .nestingTooDeep)
        let arrays = String(repeating: "[", count: 1_000_000)
        #expect(Self.failureKind(arrays) == .nestingTooDeep)
    }

    @Test func errorsCarryTheByteOffset() {
        do {
            _ = try JSONScanner.scan(Array(#"{"a": x}"#.utf8), compacting: true, buildingValue: false)
            Issue.record("accepted")
        } catch {
            #expect(error.offset == 6)
            #expect(error.description == "unexpected character at byte 6")
        }
    }

    @Test func buildsValuesWithDecodedStringsAndRawNumbers() throws {
        let value = try Self.parse(#"{"s": "a\u00e9\n\uD83D\uDE00", "n": 1e400, "arr": [true, null], "o": {"k": -2}}"#)
        #expect(value == .object([
            "s": .string("aé\n😀"),
            "n": .number("1e400"),
            "arr": .array([.bool(true), .null]),
            "o": .object(["k": .number("-2")]),
        ]))
    }

    @Test func loneSurrogatesDecodeToReplacementCharacter() throws {
        #expect(try Self.parse(#"{"a": "\uD800x"}"#)?["a"] == .string("\u{FFFD}x"))
        #expect(try Self.parse(#"{"a": "\uDC00"}"#)?["a"] == .string("\u{FFFD}"))
        #expect(try Self.parse(#"{"a": "\uD800\u0041"}"#)?["a"] == .string("\u{FFFD}A"))
        #expect(try Self.parse(#"{"a": "\uD800"}"#)?["a"] == .string("\u{FFFD}"))
    }

    @Test func duplicateKeysKeepTheLastValueLikeJSONB() throws {
        #expect(try Self.parse(#"{"a": 1, "a": 2}"#)?["a"] == .number("2"))
    }

    @Test func escapedKeysAreDecoded() throws {
        #expect(try Self.parse(#"{"\u0061ps": 1}"#)?["aps"] == .number("1"))
    }

    @Test func topLevelScalarsAreValidJSONText() throws {
        #expect(try Self.compact(" 1 ") == "1")
        #expect(try Self.compact(#" "s" "#) == #""s""#)
        #expect(try Self.compact("null") == "null")
    }

    @Test func acceptsNonArrayCollections() throws {
        let slice = Array(#"xx{"a": 1}"#.utf8)[2...]
        let result = try JSONScanner.scan(slice, compacting: true, buildingValue: false)
        #expect(result.compact == Array(#"{"a":1}"#.utf8))
        let lazy = #"{"a": 1}"#.utf8.lazy.map { $0 }
        #expect(try JSONScanner.scan(lazy, compacting: true, buildingValue: false).compact == Array(#"{"a":1}"#.utf8))
    }

    @Test func publicParseGivesNilForInvalidText() {
        #expect(JSONValue.parse(Array(#"{"alg":"ES256","kid":"ABC123DEFG"}"#.utf8))?["kid"]?.stringValue == "ABC123DEFG")
        #expect(JSONValue.parse(Array(#"{"iat": 1700000000}"#.utf8))?["iat"]?.integerValue == 1_700_000_000)
        #expect(JSONValue.parse(Array(#"{"iat": 1.5}"#.utf8))?["iat"]?.integerValue == nil)
        #expect(JSONValue.parse(Array("{".utf8)) == nil)
        #expect(JSONValue.parse(Array(String(repeating: "[", count: 100).utf8)) == nil)
        #expect(JSONValue.parse(Array("[1]".utf8))?["k"] == nil)
    }
}
