import APNsCore
import APNsSimulator
import Foundation
import HTTP2TLS
import PGPushCore
import PGPushTestSupport
import PushCrypto
import Testing

@Suite("Simulator over TLS: provider tokens")
struct TokenAuthenticationTests {
    @Test func validRequestIsAcceptedAndItsIDEchoed() async throws {
        let harness = try SimulatorHarness(key: signingKey())
        defer { harness.stop() }
        let connection = try await harness.connect()
        let id = UUID().uuidString.lowercased()
        let response = try await connection.send(pushRequest(apnsID: id, jwt: try makeJWT()))
        #expect(response.status == 200)
        #expect(response.body.isEmpty)
        #expect(response.headers.value(of: "apns-id") == id)
        let uniqueID = try #require(response.headers.value(of: "apns-unique-id"))
        #expect(RequestRules.isCanonicalUUID(uniqueID))
    }

    @Test func missingIDIsMadeUpAsLowercaseUUID() async throws {
        let harness = try SimulatorHarness(key: signingKey()) { $0.environment = .production }
        defer { harness.stop() }
        let connection = try await harness.connect()
        let response = try await connection.send(pushRequest(apnsID: nil, jwt: try makeJWT()))
        #expect(response.status == 200)
        let id = try #require(response.headers.value(of: "apns-id"))
        #expect(RequestRules.isCanonicalUUID(id) && id == id.lowercased())
        #expect(response.headers.value(of: "apns-unique-id") == nil)
    }

    @Test(arguments: [APNsEnvironment.development, .production])
    func uniqueIDOnEveryDevelopmentAnswerAndNoneInProduction(_ environment: APNsEnvironment) async throws {
        let harness = try SimulatorHarness(key: signingKey()) { $0.environment = environment }
        defer { harness.stop() }
        let connection = try await harness.connect()
        let jwt = try makeJWT()
        let accepted = try await connection.send(pushRequest(jwt: jwt))
        let badTopic = try await connection.send(pushRequest(topic: "com.other.app", jwt: jwt))
        let unauthenticated = try await harness.connect().send(pushRequest(jwt: nil))
        let statuses: [Int] = [accepted.status, badTopic.status, unauthenticated.status]
        #expect(statuses == [200, 400, 403])
        let uniqueIDs = [accepted, badTopic, unauthenticated].map { $0.headers.value(of: "apns-unique-id") }
        switch environment {
        case .development:
            let present = uniqueIDs.compactMap { $0 }
            #expect(present.count == 3 && present.allSatisfy(RequestRules.isCanonicalUUID))
            #expect(Set(present).count == 3, "each answer gets its own id")
        case .production:
            #expect(uniqueIDs.allSatisfy { $0 == nil })
        }
    }

    enum BadToken: String, CaseIterable, Sendable {
        case badSignature, wrongKeyID, wrongTeam, expired, missing, wrongAlgorithm, notBearer, garbage
    }

    @Test(arguments: BadToken.allCases)
    func providerTokenProblemsGetTheirReason(_ problem: BadToken) async throws {
        let harness = try SimulatorHarness(key: signingKey())
        defer { harness.stop() }
        let connection = try await harness.connect()
        var request: HTTP2Request
        let expected: APNsReason
        switch problem {
        case .badSignature:
            request = pushRequest(jwt: try makeJWT(key: try ES256PrivateKey.generate()))
            expected = .invalidProviderToken
        case .wrongKeyID:
            request = pushRequest(jwt: try makeJWT(keyID: "OTHERKEY00"))
            expected = .invalidProviderToken
        case .wrongTeam:
            request = pushRequest(jwt: try makeJWT(teamID: "OTHERTEAM0"))
            expected = .invalidProviderToken
        case .expired:
            request = pushRequest(jwt: try makeJWT(issuedAt: Date().addingTimeInterval(-3601 - 5)))
            expected = .expiredProviderToken
        case .missing:
            request = pushRequest(jwt: nil)
            expected = .missingProviderToken
        case .wrongAlgorithm:
            request = pushRequest(jwt: try makeJWT(algorithm: "HS256"))
            expected = .invalidProviderToken
        case .notBearer:
            request = pushRequest(jwt: nil, extraHeaders: [HeaderField("authorization", "basic \(try makeJWT())")])
            expected = .invalidProviderToken
        case .garbage:
            request = pushRequest(jwt: "not.a.jwt")
            expected = .invalidProviderToken
        }
        let response = try await connection.send(request)
        #expect(response.status == 403)
        #expect(response.reason == expected.rawValue)
    }

    @Test func aNewTokenWithinTwentyMinutesOnTheSameConnectionIsRefused() async throws {
        let harness = try SimulatorHarness(key: signingKey())
        defer { harness.stop() }
        let connection = try await harness.connect()
        let first = try makeJWT(issuedAt: Date().addingTimeInterval(-10))
        let second = try makeJWT(issuedAt: Date().addingTimeInterval(-5))
        #expect(try await connection.send(pushRequest(jwt: first)).status == 200)
        let refused = try await connection.send(pushRequest(jwt: second))
        #expect(refused.status == 429)
        #expect(refused.reason == "TooManyProviderTokenUpdates")
        // The connection keeps its first token, and another connection may use the new one.
        #expect(try await connection.send(pushRequest(jwt: first)).status == 200)
        let other = try await harness.connect()
        #expect(try await other.send(pushRequest(jwt: second)).status == 200)
    }

    @Test func aNewTokenAfterTwentyMinutesIsAccepted() async throws {
        let clock = TestClock()
        let harness = try SimulatorHarness(key: signingKey()) { $0.clock = { clock.date } }
        defer { harness.stop() }
        let connection = try await harness.connect()
        #expect(try await connection.send(pushRequest(jwt: try makeJWT(issuedAt: clock.date))).status == 200)
        clock.advance(by: 21 * 60)
        #expect(try await connection.send(pushRequest(jwt: try makeJWT(issuedAt: clock.date))).status == 200)
        // The same token an hour later has expired.
        let token = try makeJWT(issuedAt: clock.date)
        clock.advance(by: 3601)
        let expired = try await connection.send(pushRequest(jwt: token))
        #expect(expired.status == 403 && expired.reason == "ExpiredProviderToken")
    }

    @Test func oneStreamOnlyUntilAValidTokenWasSeen() async throws {
        let harness = try SimulatorHarness(key: signingKey()) { $0.maxConcurrentStreams = 50 }
        defer { harness.stop() }
        let connection = try await harness.connect()
        let badToken = try makeJWT(teamID: "OTHERTEAM0")
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<10 {
                group.addTask { try await connection.send(pushRequest(jwt: badToken)).status }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 403, count: 10))
        #expect(harness.simulator.serverStatistics?.peakConcurrentStreams == 1)
        #expect(connection.status.peerMaxConcurrentStreams == 1)

        // The first valid JWT raises the limit before its answer goes out.
        #expect(try await connection.send(pushRequest(jwt: try makeJWT())).status == 200)
        #expect(connection.status.peerMaxConcurrentStreams == 50)
        let report = harness.simulator.report()
        #expect(report.connections.first?.authenticated == true)
    }
}
