import APNsCore
import APNsSimulator
import Foundation
import HTTP2TLS
import PGPushCore
import PGPushTestSupport
import Testing

@Suite("Simulator over TLS: injected faults")
struct FaultInjectionOverTLSTests {
    @Test func unregisteredTokenGets410WithTimestamp() async throws {
        var faults = FaultPlan()
        faults.unregisteredTokens = [testDeviceToken]
        let harness = try SimulatorHarness(key: signingKey(), faults: faults)
        defer { harness.stop() }
        let connection = try await harness.connect()
        let before = Date()
        let jwt = try makeJWT()
        let response = try await connection.send(pushRequest(jwt: jwt))
        #expect(response.status == 410)
        let body = try #require(APNsErrorBody.parse(response.body))
        #expect(body.reason == "Unregistered")
        let timestamp = try #require(body.timestamp)
        #expect(abs(timestamp.timeIntervalSince(before)) < 5)
        // Other tokens are unaffected.
        let other = String(repeating: "cd", count: 32)
        #expect(try await connection.send(pushRequest(token: other, jwt: jwt)).status == 200)
    }

    @Test func scriptedAnswersPlayInOrder() async throws {
        var faults = FaultPlan()
        faults.scripts[testDeviceToken] = [try ScriptedAnswer(parsing: "503"), try ScriptedAnswer(parsing: "503"),
                                           try ScriptedAnswer(parsing: "200")]
        let harness = try SimulatorHarness(key: signingKey(), faults: faults)
        defer { harness.stop() }
        let connection = try await harness.connect()
        let jwt = try makeJWT()
        var statuses: [Int] = []
        var reasons: [String?] = []
        for _ in 0..<4 {
            let response = try await connection.send(pushRequest(jwt: jwt))
            statuses.append(response.status)
            reasons.append(response.reason)
        }
        #expect(statuses == [503, 503, 200, 200])
        #expect(reasons == ["ServiceUnavailable", "ServiceUnavailable", nil, nil])
        let report = harness.simulator.report()
        #expect(report.count(status: 503) == 2 && report.count(reason: "ServiceUnavailable") == 2 && report.count(status: 200) == 2)
    }

    static func mixedStatuses(seed: UInt64) async throws -> [Int] {
        var faults = FaultPlan()
        faults.seed = seed
        faults.statusMix = [FaultPlan.MixEntry(answer: try ScriptedAnswer(parsing: "503"), probability: 0.3),
                            FaultPlan.MixEntry(answer: try ScriptedAnswer(parsing: "TooManyRequests"), probability: 0.2)]
        let harness = try SimulatorHarness(key: signingKey(), faults: faults)
        defer { harness.stop() }
        let connection = try await harness.connect()
        let jwt = try makeJWT()
        var statuses: [Int] = []
        for _ in 0..<40 { statuses.append(try await connection.send(pushRequest(jwt: jwt)).status) }
        return statuses
    }

    @Test func statusMixIsReproducibleWithASeed() async throws {
        let first = try await Self.mixedStatuses(seed: 42)
        let second = try await Self.mixedStatuses(seed: 42)
        let other = try await Self.mixedStatuses(seed: 43)
        #expect(first == second)
        #expect(first != other)
        #expect(Set(first) == [200, 429, 503])
    }

    @Test func goAwayAfterNStreams() async throws {
        var faults = FaultPlan()
        faults.goAwayAfterStreams = 3
        let harness = try SimulatorHarness(key: signingKey(), faults: faults)
        defer { harness.stop() }
        let connection = try await harness.connect()
        let jwt = try makeJWT()
        for _ in 0..<3 { #expect(try await connection.send(pushRequest(jwt: jwt)).status == 200) }
        let goAway = try #require(connection.status.goAway)
        #expect(goAway.reason == "Shutdown")
        #expect(goAway.lastStreamID == 5)
        do {
            _ = try await connection.send(pushRequest(jwt: jwt))
            Issue.record("a request after GOAWAY was sent")
        } catch {
            #expect(error.wasCertainlyNotProcessed)
        }
        // A new connection works again, and gets its own GOAWAY after three more.
        let next = try await harness.connect()
        #expect(try await next.send(pushRequest(jwt: jwt)).status == 200)
        let report = harness.simulator.report()
        #expect(report.goAwaysSent == 1 && report.goAwayReasons == ["Shutdown": 1])
        #expect(report.connectionsOpened == 2)
    }

    @Test func goAwayBeforeTheFirstStreamOnEveryConnection() async throws {
        var faults = FaultPlan()
        faults.goAwayBeforeFirstStream = "BadCertificateEnvironment"
        let harness = try SimulatorHarness(key: signingKey(), faults: faults)
        defer { harness.stop() }
        let jwt = try makeJWT()
        for _ in 0..<2 {
            let connection = try await harness.connect()
            do {
                let response = try await connection.send(pushRequest(jwt: jwt))
                Issue.record("the first request was answered \(response.status)")
            } catch {
                #expect(error.wasCertainlyNotProcessed)
                guard case .goAway(let goAway) = error.cause else {
                    Issue.record("not a GOAWAY: \(error)")
                    continue
                }
                #expect(goAway.lastStreamID == 0 && goAway.errorCode == 0)
                #expect(goAway.reason == "BadCertificateEnvironment")
            }
        }
        // The server closes each connection after its GOAWAY.
        #expect(try await eventually(timeout: .seconds(10)) {
            harness.simulator.report().connections.allSatisfy { !$0.open }
        })
        let report = harness.simulator.report()
        #expect(report.goAwaysSent == 2 && report.count(goAwayReason: "BadCertificateEnvironment") == 2)
        #expect(report.connectionsOpened == 2)
        #expect(report.totalRequests == 2 && report.refusedStreams == 2 && report.statusCounts.isEmpty)
    }

    @Test func listedTopicsGetTheirAnswerAfterTheCredentials() async throws {
        var faults = FaultPlan()
        faults.topicAnswers = [testBundleID + ".voip": try ScriptedAnswer(parsing: "TopicDisallowed"),
                               testBundleID + ".complication": try ScriptedAnswer(parsing: "refuse")]
        let harness = try SimulatorHarness(key: signingKey(), faults: faults)
        defer { harness.stop() }
        let connection = try await harness.connect()
        let jwt = try makeJWT()
        let voip = try await connection.send(pushRequest(pushType: "voip", topic: testBundleID + ".voip", jwt: jwt))
        #expect(voip.status == 400 && voip.reason == "TopicDisallowed")
        #expect(try await connection.send(pushRequest(jwt: jwt)).status == 200)
        do {
            _ = try await connection.send(pushRequest(pushType: "complication", topic: testBundleID + ".complication", jwt: jwt))
            Issue.record("the complication topic was answered")
        } catch {
            #expect(error.cause == .refusedStream)
        }
        // Credentials are judged first.
        let other = try await harness.connect()
        let unauthenticated = try await other.send(pushRequest(pushType: "voip", topic: testBundleID + ".voip", jwt: nil))
        #expect(unauthenticated.status == 403 && unauthenticated.reason == "MissingProviderToken")
        let report = harness.simulator.report()
        #expect(report.count(reason: "TopicDisallowed") == 1 && report.count(status: 200) == 1 && report.refusedStreams == 1)
    }

    @Test func dropAfterNStreams() async throws {
        var faults = FaultPlan()
        faults.dropAfterStreams = 2
        let harness = try SimulatorHarness(key: signingKey(), faults: faults)
        defer { harness.stop() }
        let connection = try await harness.connect()
        let jwt = try makeJWT()
        for _ in 0..<2 { #expect(try await connection.send(pushRequest(jwt: jwt)).status == 200) }
        do {
            _ = try await connection.send(pushRequest(jwt: jwt))
            Issue.record("the third request was answered")
        } catch {
            #expect(!error.wasCertainlyNotProcessed)
        }
        let report = harness.simulator.report()
        #expect(report.totalRequests == 3)
        #expect(report.unansweredRequests == 1)
        #expect(report.connectionsDropped == 1)
    }

    @Test func everyNthStreamIsRefusedAndNotCountedAsDuplicate() async throws {
        var faults = FaultPlan()
        faults.refuseEveryNth = 2
        let harness = try SimulatorHarness(key: signingKey(), faults: faults)
        defer { harness.stop() }
        let connection = try await harness.connect()
        let jwt = try makeJWT()
        var outcomes: [String] = []
        let id = UUID().uuidString.lowercased()
        for index in 0..<4 {
            // The refused second request is resent as the third, with the same apns-id.
            let request = pushRequest(apnsID: index == 1 || index == 2 ? id : UUID().uuidString.lowercased(), jwt: jwt)
            do {
                outcomes.append(String(try await connection.send(request).status))
            } catch {
                #expect(error.cause == .refusedStream && error.wasCertainlyNotProcessed)
                outcomes.append("refused")
            }
        }
        #expect(outcomes == ["200", "refused", "200", "refused"])
        let report = harness.simulator.report()
        #expect(report.refusedStreams == 2)
        #expect(report.duplicateAPNsIDs == 0)
    }

    @Test func refuseProbabilityOneRefusesEverything() async throws {
        var faults = FaultPlan()
        faults.refuseProbability = 1
        let harness = try SimulatorHarness(key: signingKey(), faults: faults)
        defer { harness.stop() }
        let connection = try await harness.connect()
        await #expect(throws: RequestFailure.self) { try await connection.send(pushRequest(jwt: try makeJWT())) }
        #expect(harness.simulator.report().refusedStreams == 1)
    }

    @Test func latencyDelaysTheAnswer() async throws {
        var faults = FaultPlan()
        faults.latencyMilliseconds = 150
        let harness = try SimulatorHarness(key: signingKey(), faults: faults)
        defer { harness.stop() }
        let connection = try await harness.connect()
        let clock = ContinuousClock()
        let start = clock.now
        #expect(try await connection.send(pushRequest(jwt: try makeJWT())).status == 200)
        #expect(clock.now - start >= .milliseconds(150))
    }
}
