@testable import FCMClient
import Foundation
import Testing

@Suite("FCM access tokens: one exchange at a time, renewal, backoff, refusal")
struct AccessTokenStateMachineTests {
    let start = Date(timeIntervalSince1970: 1_780_000_000)

    func token(_ value: String, at instant: Date, lifetime: TimeInterval = 3600) -> TokenExchangeAnswer {
        .issued(AccessToken(value: value, lifetime: lifetime, receivedAt: instant))
    }

    @Test("many requests at once start one exchange, and all send with its token")
    func oneExchangeForMany() {
        var machine = AccessTokenStateMachine()
        let needs = (0..<100).map { _ in machine.tokenNeeded(at: start) }
        #expect(needs.filter { $0 == .wait(startExchange: true) }.count == 1)
        #expect(needs.filter { $0 == .wait(startExchange: false) }.count == 99)
        machine.exchangeEnded(token("t1", at: start), at: start)
        #expect(machine.tokenNeeded(at: start + 1) == .use("t1", startExchange: false))
    }

    @Test("a token is renewed five minutes before it expires while requests go on with it")
    func renewalBeforeExpiry() {
        var machine = AccessTokenStateMachine()
        _ = machine.tokenNeeded(at: start)
        machine.exchangeEnded(token("t1", at: start), at: start)
        let due = start + 3600 - 300
        #expect(machine.tokenNeeded(at: due - 1) == .use("t1", startExchange: false))
        #expect(machine.tokenNeeded(at: due) == .use("t1", startExchange: true))
        #expect(machine.tokenNeeded(at: due + 1) == .use("t1", startExchange: false))
        machine.exchangeEnded(token("t2", at: due + 2), at: due + 2)
        #expect(machine.tokenNeeded(at: due + 3) == .use("t2", startExchange: false))
    }

    @Test("a failed renewal leaves the good token serving and is tried again after a growing wait")
    func failedRenewalBacksOff() {
        var machine = AccessTokenStateMachine()
        _ = machine.tokenNeeded(at: start)
        machine.exchangeEnded(token("t1", at: start), at: start)
        var now = start + 3300
        // Renewals at 3,300 s fail; each is tried again 1, 2, 4, 8 s later, t1 serving meanwhile.
        for wait in [1.0, 2, 4, 8] {
            #expect(machine.tokenNeeded(at: now) == .use("t1", startExchange: true))
            machine.exchangeEnded(.retry(reason: "busy"), at: now)
            #expect(machine.tokenNeeded(at: now + wait - 0.01) == .use("t1", startExchange: false))
            now += wait
        }
        // An answer to no exchange under way is ignored.
        machine.exchangeEnded(token("stray", at: now), at: now)
        #expect(machine.tokenNeeded(at: now) == .use("t1", startExchange: true))
        machine.exchangeEnded(token("t2", at: now), at: now)
        #expect(machine.tokenNeeded(at: now) == .use("t2", startExchange: false))
    }

    @Test("without a good token, failed exchanges make rows wait with the reason, 1 s then longer, at most 60 s")
    func failedExchangesWithoutAToken() {
        var machine = AccessTokenStateMachine()
        var now = start
        var exchanges = 0
        var lastUnavailable: AccessTokenStateMachine.Need?
        // A request every 100 ms for ten minutes; the endpoint never answers usefully.
        while now < start + 600 {
            let need = machine.tokenNeeded(at: now)
            if need == .wait(startExchange: true) {
                exchanges += 1
                machine.exchangeEnded(.retry(reason: "the token endpoint is unavailable (HTTP 503)"), at: now)
            } else if case .unavailable = need {
                lastUnavailable = need
            }
            now += 0.1
        }
        // 1 + 2 + 4 + 8 + 16 + 32 s, then one a minute: 15 in ten minutes.
        #expect(exchanges <= 16)
        guard case .unavailable(let reason, _) = lastUnavailable else {
            Issue.record("rows never waited")
            return
        }
        #expect(reason.contains("HTTP 503"))
    }

    @Test("an assertion refused for good pauses sending with the reason; the pause grows, the exchanges stay a few an hour")
    func refusedForGood() {
        var machine = AccessTokenStateMachine()
        var now = start
        var exchangeTimes: [Date] = []
        while now < start + 3600 {
            if machine.tokenNeeded(at: now) == .wait(startExchange: true) {
                exchangeTimes.append(now)
                machine.exchangeEnded(.refused(reason: "Google refused the service account's assertion (HTTP 400 invalid_grant)"), at: now)
                guard case .unavailable(let reason, let until) = machine.tokenNeeded(at: now) else {
                    Issue.record("a refused account did not make rows wait")
                    return
                }
                #expect(reason.contains("invalid_grant"))
                #expect(until > now)
            }
            now += 0.5
        }
        // At 0, 60, 180, 420, 900, 1800, 2700 s: seven in an hour.
        #expect(exchangeTimes.count == 7)
        #expect(exchangeTimes[1].timeIntervalSince(exchangeTimes[0]) == 60)
        #expect(exchangeTimes[2].timeIntervalSince(exchangeTimes[1]) == 120)
    }

    @Test("FCM refusing a token (401) renews it once; refusing the new one too pauses sending")
    func refusedTokenRenewedOnceThenPaused() {
        var machine = AccessTokenStateMachine()
        _ = machine.tokenNeeded(at: start)
        machine.exchangeEnded(token("t1", at: start), at: start)
        // Many requests in flight with t1 are refused: one exchange between them.
        #expect(machine.tokenRefused("t1", at: start + 10) == .wait(startExchange: true))
        #expect(machine.tokenRefused("t1", at: start + 10) == .wait(startExchange: false))
        #expect(machine.tokenNeeded(at: start + 10) == .wait(startExchange: false))
        machine.exchangeEnded(token("t2", at: start + 11), at: start + 11)
        #expect(machine.tokenNeeded(at: start + 11) == .use("t2", startExchange: false))
        // A request that still carried t1 when t2 came is sent again with t2.
        #expect(machine.tokenRefused("t1", at: start + 11) == .resend)
        // t2 refused too: paused, with what to check.
        let refusal = machine.tokenRefused("t2", at: start + 12)
        #expect(refusal == .paused(reason: AccessTokenStateMachine.refusedAfterRenewal, until: start + 12 + 60))
        #expect(machine.tokenNeeded(at: start + 13) == .unavailable(reason: AccessTokenStateMachine.refusedAfterRenewal, until: start + 72))
        #expect(AccessTokenStateMachine.refusedAfterRenewal.contains("Firebase Cloud Messaging API is enabled"))
    }

    @Test("FCM refusing every token for an hour costs a handful of exchanges a minute at most, fewer as it goes on")
    func endlessRefusalsStayBounded() {
        var machine = AccessTokenStateMachine()
        var now = start
        var exchanges = 0
        var sent = 0
        var exchangesInLastHalf = 0
        while now < start + 3600 {
            switch machine.tokenNeeded(at: now) {
            case .wait(true):
                exchanges += 1
                if now > start + 1800 { exchangesInLastHalf += 1 }
                machine.exchangeEnded(token("t\(exchanges)", at: now), at: now)
            case .use(let value, let renew):
                #expect(!renew)
                sent += 1
                _ = machine.tokenRefused(value, at: now)
            case .wait(false), .unavailable:
                break
            }
            now += 0.1
        }
        #expect(exchanges <= 2 * 8)
        #expect(exchangesInLastHalf <= 2 * 2)
        #expect(sent <= 2 * exchanges)
    }

    @Test("an accepted token ends the growing pauses")
    func acceptedTokenResetsPauses() {
        var machine = AccessTokenStateMachine()
        var now = start
        for round in 0..<3 {
            _ = machine.tokenNeeded(at: now)
            machine.exchangeEnded(token("a\(round)", at: now), at: now)
            _ = machine.tokenRefused("a\(round)", at: now)
            machine.exchangeEnded(token("b\(round)", at: now), at: now)
            guard case .paused(_, let until) = machine.tokenRefused("b\(round)", at: now) else {
                Issue.record("not paused")
                return
            }
            #expect(until.timeIntervalSince(now) == 60 * pow(2, Double(round)))
            now = until
        }
        #expect(machine.tokenNeeded(at: now) == .wait(startExchange: true))
        machine.exchangeEnded(token("c", at: now), at: now)
        machine.tokenAccepted()
        _ = machine.tokenRefused("c", at: now)
        machine.exchangeEnded(token("d", at: now), at: now)
        #expect(machine.tokenRefused("d", at: now) == .paused(reason: AccessTokenStateMachine.refusedAfterRenewal, until: now + 60))
    }
}
