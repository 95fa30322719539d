import APNsCore
import PGPushCore
import Testing

struct PushTypeTests {
    struct Expectation: Sendable, CustomTestStringConvertible {
        let type: PushType
        let raw: String
        let topic: String?
        let allowed: [APNsPriority]
        let defaultPriority: APNsPriority
        let limit: Int
        let tokenOnly: Bool
        var testDescription: String { raw }
    }

    static let all: [APNsPriority] = [.immediate, .powerAware, .powerFirst]
    static let urgentOrPowerAware: [APNsPriority] = [.immediate, .powerAware]

    static let table: [Expectation] = [
        .init(type: .alert, raw: "alert", topic: "com.example.app", allowed: all, defaultPriority: .immediate, limit: 4096, tokenOnly: false),
        .init(type: .background, raw: "background", topic: "com.example.app", allowed: [.powerAware], defaultPriority: .powerAware, limit: 4096, tokenOnly: false),
        .init(type: .voip, raw: "voip", topic: "com.example.app.voip", allowed: all, defaultPriority: .immediate, limit: 5120, tokenOnly: false),
        .init(type: .complication, raw: "complication", topic: "com.example.app.complication", allowed: all, defaultPriority: .immediate, limit: 4096, tokenOnly: false),
        .init(type: .fileprovider, raw: "fileprovider", topic: "com.example.app.pushkit.fileprovider", allowed: all, defaultPriority: .immediate, limit: 4096, tokenOnly: false),
        .init(type: .mdm, raw: "mdm", topic: nil, allowed: all, defaultPriority: .immediate, limit: 4096, tokenOnly: false),
        .init(type: .location, raw: "location", topic: "com.example.app.location-query", allowed: urgentOrPowerAware, defaultPriority: .immediate, limit: 4096, tokenOnly: true),
        .init(type: .liveactivity, raw: "liveactivity", topic: "com.example.app.push-type.liveactivity", allowed: urgentOrPowerAware, defaultPriority: .immediate, limit: 4096, tokenOnly: true),
        .init(type: .pushtotalk, raw: "pushtotalk", topic: "com.example.app.voip-ptt", allowed: urgentOrPowerAware, defaultPriority: .immediate, limit: 4096, tokenOnly: false),
        .init(type: .widgets, raw: "widgets", topic: "com.example.app.push-type.widgets", allowed: all, defaultPriority: .immediate, limit: 4096, tokenOnly: false),
        .init(type: .controls, raw: "controls", topic: "com.example.app.push-type.controls", allowed: all, defaultPriority: .immediate, limit: 4096, tokenOnly: false),
    ]

    @Test func tableCoversEveryPushType() {
        #expect(Set(Self.table.map(\.type)) == Set(PushType.allCases))
        #expect(PushType.allCases.count == 11)
    }

    @Test(arguments: table)
    func rules(_ expected: Expectation) {
        #expect(expected.type.rawValue == expected.raw)
        #expect(PushType(rawValue: expected.raw) == expected.type)
        #expect(expected.type.derivedTopic(bundleID: "com.example.app") == expected.topic)
        #expect(expected.type.allowedPriorities == expected.allowed)
        #expect(expected.type.defaultPriority == expected.defaultPriority)
        #expect(expected.type.allowedPriorities.contains(expected.type.defaultPriority))
        #expect(expected.type.payloadLimit == expected.limit)
        #expect(expected.type.requiresTokenAuthentication == expected.tokenOnly)
    }

    @Test func unknownPushTypesAreNotParsed() {
        for text in ["Alert", "ALERT", "", " alert", "live-activity", "push-to-talk"] {
            #expect(PushType(rawValue: text) == nil)
        }
    }

    @Test func priorityHeaderValues() {
        #expect(APNsPriority.immediate.headerValue == "10")
        #expect(APNsPriority.powerAware.headerValue == "5")
        #expect(APNsPriority.powerFirst.headerValue == "1")
        #expect(APNsPriority(rawValue: 7) == nil)
    }
}
