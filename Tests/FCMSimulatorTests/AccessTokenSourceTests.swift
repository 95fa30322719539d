import FCMClient
import FCMSimulator
import Foundation
import HTTP2TLS
import Locking
import PGPushTestSupport
import PushCrypto
import Testing

@Suite("FCM access tokens over TLS: one exchange for many requests, renewal, refusals that stay bounded")
struct AccessTokenSourceTests {
    func source(_ fixture: FCMFixture, account: ServiceAccountKey? = nil,
                now: @escaping @Sendable () -> Date = Date.init) throws -> AccessTokenSource {
        let caFile = try #require(fixture.simulator.caCertificatePath)
        return AccessTokenSource(account: account ?? fixture.account, client: fixture.client,
                                 configuration: HTTP2ClientConfiguration(tls: try ClientTLSContext(extraCAFile: caFile)), now: now)
    }

    @Test("twenty requests at once share one exchange and one token")
    func oneExchange() async throws {
        let fixture = try await FCMFixture()
        defer { fixture.stop() }
        let tokens = try source(fixture)
        let answers = await withTaskGroup(of: AccessTokenSource.Availability.self) { group in
            for _ in 0..<20 { group.addTask { await tokens.token() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(answers).count == 1)
        guard case .token(let value) = answers[0] else {
            Issue.record("no token: \(answers[0])")
            return
        }
        #expect(value.hasPrefix("ya29."))
        #expect(fixture.simulator.report().tokenRequests == 1)
        #expect(tokens.exchanges == 1)
        #expect(try await fixture.send(try tokenMessage("device"), bearer: value).status == 200)
    }

    @Test("an assertion refused for good makes rows wait with the reason; asking again does not ask Google again")
    func refusedAssertion() async throws {
        let fixture = try await FCMFixture { $0.faults.refuseAssertions = true }
        defer { fixture.stop() }
        let tokens = try source(fixture)
        for _ in 0..<50 {
            guard case .unavailable(let reason, let until) = await tokens.token() else {
                Issue.record("a token from a refused account")
                return
            }
            #expect(reason.contains("invalid_grant"))
            #expect(until > Date())
        }
        #expect(fixture.simulator.report().tokenRequests == 1)
    }

    @Test("a token FCM refuses is renewed once; when the new one is refused too, sending pauses with what to check")
    func refusedTokens() async throws {
        let fixture = try await FCMFixture { $0.faults.refuseAccessTokens = true }
        defer { fixture.stop() }
        let tokens = try source(fixture)
        guard case .token(let first) = await tokens.token() else { throw TestSetupError("no first token") }
        #expect(try await fixture.send(try tokenMessage("device"), bearer: first).status == 401)
        #expect(await tokens.refused(first) == .resend)
        guard case .token(let second) = await tokens.token() else { throw TestSetupError("no second token") }
        #expect(second != first)
        #expect(try await fixture.send(try tokenMessage("device"), bearer: second).status == 401)
        guard case .paused(let reason, _) = await tokens.refused(second) else {
            Issue.record("not paused")
            return
        }
        #expect(reason.contains("Firebase Cloud Messaging API is enabled"))
        guard case .unavailable = await tokens.token() else {
            Issue.record("a token while paused")
            return
        }
        #expect(fixture.simulator.report().tokenRequests == 2)
    }

    @Test("an unreachable token endpoint makes rows wait, and is asked again only after the backoff")
    func unreachableEndpoint() async throws {
        let fixture = try await FCMFixture()
        defer { fixture.stop() }
        // Held bound and not listening: connects are refused, and no other test can take the port.
        let (descriptor, closedPort) = try boundSocket()
        defer { close(descriptor) }
        let account = try FCMFixture.account(signedBy: fixture.key, tokenURI: "https://127.0.0.1:\(closedPort)/token")
        // The clock moves only when the test moves it: a loaded machine cannot stretch the backoff.
        let clock = Locked(Date())
        let tokens = try source(fixture, account: account, now: { clock.withLock { $0 } })
        guard case .unavailable(let reason, let until) = await tokens.token() else {
            Issue.record("a token from nowhere")
            return
        }
        #expect(reason.contains("cannot reach the token endpoint"))
        for _ in 0..<20 { _ = await tokens.token() }
        #expect(tokens.exchanges == 1)
        clock.withLock { $0 = until }
        _ = await tokens.token()
        #expect(tokens.exchanges == 2)
    }

    @Test("a token is renewed five minutes before it expires while requests go on with it")
    func renewal() async throws {
        let fixture = try await FCMFixture { $0.allowedClockSkew = 7200 }
        defer { fixture.stop() }
        let clock = Locked(Date())
        let tokens = try source(fixture, now: { clock.withLock { $0 } })
        guard case .token(let first) = await tokens.token() else { throw TestSetupError("no first token") }
        clock.withLock { $0 += 3599 - 299 }
        #expect(await tokens.token() == .token(first))
        #expect(tokens.exchanges == 2)
        // The renewal runs in the background; requests get the new token once it is in.
        var renewed = AccessTokenSource.Availability.token(first)
        let deadline = ContinuousClock.now + .seconds(60)
        while renewed == .token(first) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
            renewed = await tokens.token()
        }
        #expect(fixture.simulator.report().tokensIssued == 2)
        guard case .token(let second) = renewed else { throw TestSetupError("no renewed token") }
        #expect(second != first)
    }
}
