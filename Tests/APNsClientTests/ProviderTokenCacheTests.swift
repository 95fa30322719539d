import Foundation
import PushCrypto
import Testing
@testable import APNsClient

@Suite("Provider token cache")
struct ProviderTokenCacheTests {
    private let signer: ProviderTokenSigner

    init() throws {
        signer = ProviderTokenSigner(
            key: try ES256PrivateKey.generate(),
            identity: try ProviderTokenIdentity(keyID: "KEY0000001", teamID: "TEAM000001"))
    }

    private func makeCache(clock: ManualClock, policy: ProviderTokenRefreshPolicy = .standard) -> ProviderTokenCache {
        ProviderTokenCache(signer: signer, policy: policy, now: { clock.now() })
    }

    @Test("one token is reused until it is 50 minutes old, then replaced once")
    func reuseAndRefresh() throws {
        let clock = ManualClock()
        let cache = makeCache(clock: clock)
        let first = try cache.currentToken()
        #expect(first.issuedAt == clock.now())
        clock.advance(minutes: 49.9)
        #expect(try cache.currentToken() == first)
        #expect(cache.tokensSigned == 1)

        clock.advance(minutes: 0.1)
        let second = try cache.currentToken()
        #expect(second != first)
        #expect(second.issuedAt == clock.now())
        clock.advance(minutes: 10)
        #expect(try cache.currentToken() == second)
        #expect(cache.tokensSigned == 2)
    }

    @Test("the refresh age is configurable between 20 and 60 minutes")
    func configurableAge() throws {
        let clock = ManualClock()
        let cache = makeCache(clock: clock, policy: try ProviderTokenRefreshPolicy(refreshAge: 30 * 60))
        let first = try cache.currentToken()
        clock.advance(minutes: 29)
        #expect(try cache.currentToken() == first)
        clock.advance(minutes: 1)
        #expect(try cache.currentToken() != first)

        #expect(throws: ProviderTokenError.invalidRefreshAge(seconds: 19 * 60)) { try ProviderTokenRefreshPolicy(refreshAge: 19 * 60) }
        #expect(throws: ProviderTokenError.invalidRefreshAge(seconds: 60 * 60)) { try ProviderTokenRefreshPolicy(refreshAge: 60 * 60) }
        #expect(try ProviderTokenRefreshPolicy(refreshAge: 20 * 60).refreshAge == 20 * 60)
        #expect(ProviderTokenRefreshPolicy.standard.refreshAge == 50 * 60)
    }

    @Test("ExpiredProviderToken forces a new token even when the current one is young, once per stale token")
    func forcedRefreshIsIdempotent() throws {
        let clock = ManualClock()
        let cache = makeCache(clock: clock)
        let stale = try cache.currentToken()
        clock.advance(minutes: 1)

        let fresh = try #require(Self.renewed(try cache.renewAfterRefusal(of: stale)))
        #expect(fresh != stale)
        #expect(fresh.issuedAt == clock.now())
        #expect(try cache.renewAfterRefusal(of: stale) == .renewed(fresh))
        #expect(try cache.currentToken() == fresh)
        #expect(cache.tokensSigned == 2)
    }

    static func renewed(_ renewal: ProviderTokenCache.Renewal) -> ProviderToken? {
        guard case .renewed(let token) = renewal else { return nil }
        return token
    }

    @Test("a token signed because of a refusal and refused again is a credential problem: signing backs off")
    func refusedAgainBacksOff() throws {
        let clock = ManualClock()
        let cache = makeCache(clock: clock)
        let first = try cache.currentToken()
        let second = try #require(Self.renewed(try cache.renewAfterRefusal(of: first)))
        clock.advance(minutes: 0.5)
        #expect(try cache.renewAfterRefusal(of: second) == .refusedAgain(signedSecondsAgo: 30))
        #expect(cache.tokensSigned == 2)
        // After the one-minute hold one more signature; its own hold is two minutes.
        clock.advance(minutes: 1)
        let third = try #require(Self.renewed(try cache.renewAfterRefusal(of: second)))
        #expect(cache.tokensSigned == 3)
        clock.advance(minutes: 1.5)
        #expect(try cache.renewAfterRefusal(of: third) == .refusedAgain(signedSecondsAgo: 90))
        clock.advance(minutes: 1)
        #expect(Self.renewed(try cache.renewAfterRefusal(of: third)) != nil)
        #expect(cache.tokensSigned == 4)
    }

    @Test("a report about a token the cache never handed out, on an empty cache, signs the first token")
    func forcedRefreshOnEmptyCache() throws {
        let clock = ManualClock()
        let cache = makeCache(clock: clock)
        let foreign = try signer.sign(issuedAt: clock.now())
        let token = try #require(Self.renewed(try cache.renewAfterRefusal(of: foreign)))
        #expect(token != foreign)
        #expect(try cache.currentToken() == token)
        #expect(cache.tokensSigned == 1)
    }

    @Test("many connections asking at once all get the same token, signed once")
    func concurrentFirstUse() async throws {
        let clock = ManualClock()
        let cache = makeCache(clock: clock)
        let tokens = try await withThrowingTaskGroup(of: ProviderToken.self) { group in
            for _ in 0..<200 {
                group.addTask { try cache.currentToken() }
            }
            return try await group.reduce(into: [ProviderToken]()) { $0.append($1) }
        }
        #expect(tokens.count == 200)
        #expect(Set(tokens.map(\.jwt)).count == 1)
        #expect(cache.tokensSigned == 1)
    }

    @Test("many connections reporting the same expired token at once cause exactly one new signature")
    func concurrentForcedRefresh() async throws {
        let clock = ManualClock()
        let cache = makeCache(clock: clock)
        let stale = try cache.currentToken()
        clock.advance(minutes: 5)
        let tokens = try await withThrowingTaskGroup(of: ProviderToken.self) { group in
            for index in 0..<200 {
                group.addTask {
                    index.isMultiple(of: 2) ? Self.renewed(try cache.renewAfterRefusal(of: stale))! : try cache.currentToken()
                }
            }
            return try await group.reduce(into: [ProviderToken]()) { $0.append($1) }
        }
        let refreshed = try cache.currentToken()
        #expect(refreshed != stale)
        #expect(cache.tokensSigned == 2)
        // Every caller that asked for a refresh got the one new token.
        #expect(tokens.allSatisfy { $0 == refreshed || $0 == stale })
        #expect(tokens.filter { $0 == refreshed }.count >= 100)
    }
}
