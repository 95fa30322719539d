import APNsCore
import APNsSimulator
import Foundation
import HTTP2TLS
import PGPushCore
import Testing

@Suite("Simulator decision rules without sockets")
struct DecisionRulesTests {
    func verifier() throws -> ProviderTokenVerifier {
        ProviderTokenVerifier(key: ProviderTokenKey(teamID: testTeamID, keyID: testKeyID, publicKey: try signingKey().publicKey()))
    }

    @Test func routeRules() {
        #expect(RequestRules.checkRoute(method: "POST", path: "/3/device/abcd") == .success("abcd"))
        #expect(RequestRules.checkRoute(method: "GET", path: "/3/device/abcd") == .failure(SimulatorAnswer(.methodNotAllowed)))
        #expect(RequestRules.checkRoute(method: "POST", path: "/3/device/") == .failure(SimulatorAnswer(.missingDeviceToken)))
        #expect(RequestRules.checkRoute(method: "POST", path: "/3/device") == .failure(SimulatorAnswer(.missingDeviceToken)))
        #expect(RequestRules.checkRoute(method: "POST", path: "/4/broadcasts/apps/x") == .failure(SimulatorAnswer(.badPath)))
        #expect(RequestRules.checkRoute(method: "POST", path: "/3/device/ab/cd") == .failure(SimulatorAnswer(.badPath)))
    }

    @Test func uuidShape() {
        #expect(RequestRules.isCanonicalUUID("123e4567-e89b-12d3-a456-426614174000"))
        #expect(RequestRules.isCanonicalUUID("123E4567-E89B-12D3-A456-426614174000"))
        #expect(!RequestRules.isCanonicalUUID("123e4567e89b12d3a456426614174000"))
        #expect(!RequestRules.isCanonicalUUID("123e4567-e89b-12d3-a456-42661417400g"))
    }

    @Test func topicRulesFollowPushTypeSuffixes() {
        let policy = TopicPolicy.token(bundleID: "com.example.app")
        func check(_ topic: String?, _ type: PushType) -> Result<AcceptedRequest, SimulatorAnswer> {
            var headers = [HeaderField("apns-push-type", type.rawValue)]
            if let topic { headers.append(HeaderField("apns-topic", topic)) }
            if type == .background { headers.append(HeaderField("apns-priority", "5")) }
            return RequestRules.checkContent(rawToken: "abcd", headers: headers, body: Array("{}".utf8), topics: policy)
        }
        for type in PushType.allCases {
            let topic = type.derivedTopic(bundleID: "com.example.app") ?? "mdm-uid"
            #expect((try? check(topic, type).get())?.topic == topic, "\(type)")
        }
        #expect(check("com.example.app", .voip) == .failure(SimulatorAnswer(.badTopic)))
        #expect(check("com.example.app.voip", .alert) == .failure(SimulatorAnswer(.badTopic)))
        #expect(check("com.other.app", .alert) == .failure(SimulatorAnswer(.deviceTokenNotForTopic)))
        #expect(check(nil, .alert) == .failure(SimulatorAnswer(.missingTopic)))
        #expect(RequestRules.checkContent(rawToken: "abcd", headers: [HeaderField("apns-topic", "anything")],
                                          body: Array("{}".utf8), topics: .token(bundleID: nil)).map(\.topic) == .success("anything"))
    }

    @Test func jwtVerification() throws {
        let verifier = try verifier()
        let now = Date()
        let token = try makeJWT(issuedAt: now)
        #expect(try verifier.verify(authorization: "bearer \(token)", now: now).get().token == token)
        #expect(try verifier.verify(authorization: "Bearer \(token)", now: now).get().issuedAt
                == Date(timeIntervalSince1970: TimeInterval(Int(now.timeIntervalSince1970))))
        #expect(verifier.verify(authorization: nil, now: now) == .failure(ProviderTokenRejection(.missingProviderToken)))
        #expect(verifier.verify(authorization: "bearer \(token)", now: now.addingTimeInterval(3602))
                == .failure(ProviderTokenRejection(.expiredProviderToken)))
        #expect(verifier.verify(authorization: "bearer \(token)", now: now.addingTimeInterval(-3600))
                == .failure(ProviderTokenRejection(.invalidProviderToken)))
        // A flipped signature byte.
        var tampered = Array(token.utf8)
        let index = tampered.count - 10
        tampered[index] = tampered[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(verifier.verify(token: String(decoding: tampered, as: UTF8.self), now: now)
                == .failure(ProviderTokenRejection(.invalidProviderToken)))
    }

    @Test func tokenUpdatesPerConnection() throws {
        let verifier = try verifier()
        let start = Date()
        var session = ProviderTokenSession()
        let first = "bearer " + (try makeJWT(issuedAt: start))
        #expect(session.check(authorization: first, verifier: verifier, now: start) == nil)
        #expect(session.isAuthenticated)
        let second = "bearer " + (try makeJWT(issuedAt: start.addingTimeInterval(60)))
        #expect(session.check(authorization: second, verifier: verifier, now: start.addingTimeInterval(19 * 60))
                == SimulatorAnswer(.tooManyProviderTokenUpdates))
        #expect(session.check(authorization: first, verifier: verifier, now: start.addingTimeInterval(19 * 60)) == nil)
        #expect(session.check(authorization: second, verifier: verifier, now: start.addingTimeInterval(20 * 60)) == nil)
        #expect(session.check(authorization: first, verifier: verifier, now: start.addingTimeInterval(40 * 60)) == nil)
        #expect(session.check(authorization: first, verifier: verifier, now: start.addingTimeInterval(61 * 60))
                == SimulatorAnswer(.expiredProviderToken))
        #expect(session.check(authorization: nil, verifier: verifier, now: start) == SimulatorAnswer(.missingProviderToken))
    }

    @Test func scriptedAnswerSpellings() throws {
        #expect(try ScriptedAnswer(parsing: "503") == .answer(SimulatorAnswer(.serviceUnavailable)))
        #expect(try ScriptedAnswer(parsing: "Shutdown") == .answer(SimulatorAnswer(.shutdown)))
        #expect(try ScriptedAnswer(parsing: "429") == .answer(SimulatorAnswer(.tooManyRequests)))
        #expect(try ScriptedAnswer(parsing: "200") == .answer(.accepted))
        #expect(try ScriptedAnswer(parsing: "refuse") == .refuse)
        #expect(try ScriptedAnswer(parsing: "drop") == .drop)
        #expect(throws: FaultPlanError.invalidAnswer("nonsense")) { try ScriptedAnswer(parsing: "nonsense") }
        #expect(throws: FaultPlanError.invalidAnswer("99")) { try ScriptedAnswer(parsing: "99") }
    }

    @Test func faultFileParses() throws {
        let json = """
            {"seed": 9, "unregisteredTokens": ["AABB"], "scripts": {"CCDD": [503, "TooManyRequests", "refuse", 200]},
             "statusMix": {"503": 0.05, "429": 0.02}, "latencyMilliseconds": 3, "goAwayAfterStreams": 10,
             "dropAfterStreams": 20, "refuseEveryNth": 7, "refuseProbability": 0.5}
            """
        let plan = try FaultPlan.parse(Data(json.utf8))
        #expect(plan.seed == 9)
        #expect(plan.unregisteredTokens == ["aabb"])
        #expect(plan.scripts["ccdd"] == [.answer(SimulatorAnswer(.serviceUnavailable)), .answer(SimulatorAnswer(.tooManyRequests)),
                                         .refuse, .answer(.accepted)])
        #expect(plan.statusMix.map(\.probability) == [0.05, 0.02])  // ServiceUnavailable, TooManyRequests
        #expect(plan.goAwayAfterStreams == 10 && plan.dropAfterStreams == 20 && plan.refuseEveryNth == 7)
        let roundTrip = try FaultPlan.parse(try JSONEncoder().encode(plan))
        #expect(roundTrip == plan)

        #expect(throws: FaultPlanError.self) { try FaultPlan.parse(Data(#"{"statusMix": {"503": 0.7, "429": 0.5}}"#.utf8)) }
        #expect(throws: FaultPlanError.self) { try FaultPlan.parse(Data(#"{"goAwayAfterStreams": 0}"#.utf8)) }
        #expect(throws: FaultPlanError.self) { try FaultPlan.parse(Data(#"{"scripts": {"aa": ["maybe"]}}"#.utf8)) }
        #expect(throws: FaultPlanError.self) { try FaultPlan.parse(Data("not json".utf8)) }
    }

    @Test func newFaultKeysParseRoundTripAndValidate() throws {
        let json = """
            {"goAwayBeforeFirstStream": "BadCertificateEnvironment", "staleProviderTokensAfterRequests": 50,
             "expireEveryProviderToken": true,
             "topicAnswers": {"com.example.app.voip": "TopicDisallowed", "com.example.app.complication": 503}}
            """
        let plan = try FaultPlan.parse(Data(json.utf8))
        #expect(plan.goAwayBeforeFirstStream == "BadCertificateEnvironment")
        #expect(plan.staleProviderTokensAfterRequests == 50)
        #expect(plan.expireEveryProviderToken)
        #expect(plan.topicAnswers == ["com.example.app.voip": .answer(SimulatorAnswer(.topicDisallowed)),
                                      "com.example.app.complication": .answer(SimulatorAnswer(.serviceUnavailable))])
        #expect(try FaultPlan.parse(try JSONEncoder().encode(plan)) == plan)

        let empty = try FaultPlan.parse(Data("{}".utf8))
        #expect(empty.goAwayBeforeFirstStream == nil && empty.staleProviderTokensAfterRequests == nil)
        #expect(!empty.expireEveryProviderToken && empty.topicAnswers.isEmpty)

        for bad in [#"{"staleProviderTokensAfterRequests": 0}"#, #"{"goAwayBeforeFirstStream": " "}"#,
                    #"{"goAwayBeforeFirstStream": "\#(String(repeating: "x", count: 1001))"}"#,
                    #"{"topicAnswers": {"": "TopicDisallowed"}}"#, #"{"topicAnswers": {"com.example.app": "maybe"}}"#,
                    #"{"expireEveryProviderToken": "yes"}"#] {
            #expect(throws: FaultPlanError.self, "\(bad)") { try FaultPlan.parse(Data(bad.utf8)) }
        }
    }

    @Test func goAwayBeforeTheFirstStreamComesFirst() {
        var plan = FaultPlan()
        plan.goAwayBeforeFirstStream = "BadCertificateEnvironment"
        plan.refuseEveryNth = 1
        var injector = FaultInjector(plan: plan)
        #expect(injector.transportDecision(requestNumber: 1) == .goAwayBeforeAnyStream(reason: "BadCertificateEnvironment"))
        #expect(injector.transportDecision(requestNumber: 2) == .refuse)
    }

    @Test func injectorIsDeterministicAndScriptsRunOut() throws {
        var plan = FaultPlan()
        plan.seed = 5
        plan.statusMix = [FaultPlan.MixEntry(answer: .answer(SimulatorAnswer(.serviceUnavailable)), probability: 0.5)]
        plan.scripts["aa"] = [.answer(SimulatorAnswer(.unregistered))]
        plan.unregisteredTokens = ["bb"]
        var first = FaultInjector(plan: plan)
        var second = FaultInjector(plan: plan)
        let now = Date()
        let a = (0..<50).map { _ in first.answer(forToken: "cc", now: now) }
        let b = (0..<50).map { _ in second.answer(forToken: "cc", now: now) }
        #expect(a == b)
        let hits = a.filter { $0 != nil }.count
        #expect(hits > 10 && hits < 40)
        var injector = FaultInjector(plan: plan)
        #expect(injector.answer(forToken: "aa", now: now) == .answer(SimulatorAnswer(.unregistered, timestamp: now)))
        #expect(injector.answer(forToken: "bb", now: now) == .answer(SimulatorAnswer(.unregistered, timestamp: now)))
    }

    @Test func transportFaultsCountPerConnection() {
        var plan = FaultPlan()
        plan.goAwayAfterStreams = 3
        plan.dropAfterStreams = 5
        plan.refuseEveryNth = 2
        var injector = FaultInjector(plan: plan)
        let decisions = (1...6).map { injector.transportDecision(requestNumber: $0) }
        #expect(decisions == [.proceed, .refuse, .proceedThenGoAway, .refuse, .proceed, .drop])
    }

    @Test func oneSecondWindowKeepsTheBusiestSecond() {
        var window = OneSecondWindow()
        let second: UInt64 = 1_000_000_000
        for index in 0..<5 { window.record(atNanoseconds: UInt64(index) * second / 10) }  // 5 within 0.5 s
        #expect(window.maximum == 5)
        for index in 0..<3 { window.record(atNanoseconds: 3 * second + UInt64(index)) }  // the first five have left
        #expect(window.maximum == 5)
        // 0.9 s apart stay in one window; exactly 1 s apart do not.
        var edge = OneSecondWindow()
        edge.record(atNanoseconds: 0)
        edge.record(atNanoseconds: second - 1)
        edge.record(atNanoseconds: second)
        #expect(edge.maximum == 2)
        var busy = OneSecondWindow()
        for index in 0..<10_000 { busy.record(atNanoseconds: UInt64(index) * second / 1000) }  // 1000 per second for 10 s
        #expect(busy.maximum == 1000)
    }

    @Test func answerBodies() {
        #expect(SimulatorAnswer.accepted.body.isEmpty)
        #expect(String(decoding: SimulatorAnswer(.badTopic).body, as: UTF8.self) == #"{"reason":"BadTopic"}"#)
        let gone = SimulatorAnswer(.unregistered, timestamp: Date(timeIntervalSince1970: 1_700_000_000.5))
        #expect(String(decoding: gone.body, as: UTF8.self) == #"{"reason":"Unregistered","timestamp":1700000000500}"#)
    }
}
