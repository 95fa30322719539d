import APNsSimulator
import Foundation
import HTTP2TLS
import PGPushCore
import PGPushTestSupport
import Testing

@Suite("Simulator over TLS: provider tokens refused on purpose")
struct ProviderTokenFaultsOverTLSTests {
    @Test func staleTokenIsRefusedForGoodWhileANewOneIsAccepted() async throws {
        var faults = FaultPlan()
        faults.staleProviderTokensAfterRequests = 3
        let harness = try SimulatorHarness(key: signingKey(), faults: faults)
        defer { harness.stop() }
        let stale = try makeJWT(issuedAt: Date().addingTimeInterval(-60))
        let first = try await harness.connect()
        for _ in 0..<3 { #expect(try await first.send(pushRequest(jwt: stale)).status == 200) }

        // From the fourth request on, the token is refused on its own connection and on new ones, every time.
        let second = try await harness.connect()
        for connection in [first, second, second] {
            let refused = try await connection.send(pushRequest(jwt: stale))
            #expect(refused.status == 403 && refused.reason == "ExpiredProviderToken")
        }

        // A newly signed token is accepted on a new connection and does not go stale later.
        let fresh = try makeJWT()
        let third = try await harness.connect()
        for _ in 0..<2 { #expect(try await third.send(pushRequest(jwt: fresh)).status == 200) }
        // The connection that never adopted the stale token takes the new one too ...
        #expect(try await second.send(pushRequest(jwt: fresh)).status == 200)
        // ... but the one that adopted it under twenty minutes ago still counts that as an update.
        let tooSoon = try await first.send(pushRequest(jwt: fresh))
        #expect(tooSoon.status == 429 && tooSoon.reason == "TooManyProviderTokenUpdates")

        let report = harness.simulator.report()
        #expect(report.count(reason: "ExpiredProviderToken") == 3)
        #expect(report.count(status: 200) == 6)
        #expect(report.connectionsOpened == 3)
    }

    @Test func everyTokenExpiredRefusesEvenAFreshOne() async throws {
        var faults = FaultPlan()
        faults.expireEveryProviderToken = true
        let harness = try SimulatorHarness(key: signingKey(), faults: faults)
        defer { harness.stop() }
        for _ in 0..<2 {
            let connection = try await harness.connect()
            let refused = try await connection.send(pushRequest(jwt: try makeJWT()))
            #expect(refused.status == 403 && refused.reason == "ExpiredProviderToken")
            // A token that fails the signature check keeps its own reason.
            let forged = try await connection.send(pushRequest(jwt: try makeJWT(teamID: "OTHERTEAM0")))
            #expect(forged.status == 403 && forged.reason == "InvalidProviderToken")
        }
        let report = harness.simulator.report()
        #expect(report.count(reason: "ExpiredProviderToken") == 2)
        #expect(report.connections.allSatisfy { !$0.authenticated })
    }

    @Test func tokenFaultsNeedTokenAuthentication() throws {
        var configuration = SimulatorConfiguration(authentication: .certificate(trustedCAFile: nil))
        configuration.faults.expireEveryProviderToken = true
        #expect(throws: SimulatorError.self) { try APNsSimulator(configuration: configuration) }
        configuration.faults = FaultPlan()
        configuration.faults.staleProviderTokensAfterRequests = 10
        #expect(throws: SimulatorError.self) { try APNsSimulator(configuration: configuration) }
    }
}
