import Foundation

/// One app's FCM access token, shared by all its connections: at most one exchange at a
/// time, a token renewed before it expires while requests go on with it, backoff after
/// failed exchanges, one renewal after FCM refuses a token (401) and then a pause that
/// grows while refusals go on. Token requests stay a handful a minute whatever the rows do.
/// Pure: events in, what to do out; the caller owns the clock, the exchange and the waiters.
struct AccessTokenStateMachine {
    enum State: Equatable {
        case empty
        /// An exchange is under way; `current` still serves requests meanwhile.
        case exchanging(current: AccessToken?, afterRefusal: Bool)
        /// `renewedAfterRefusal`: FCM refused the token before this one, which came in answer.
        case ready(AccessToken, renewedAfterRefusal: Bool)
        /// The last exchange failed; the next may start at `until`.
        case backingOff(until: Date, reason: String)
        /// Refused for good: no request goes out until `until`, when one exchange tries again.
        case paused(until: Date, reason: String)
    }

    /// What a request that needs a token does now.
    enum Need: Equatable {
        /// Send with this token; `startExchange`: renew it in the background now.
        case use(String, startExchange: Bool)
        /// Wait for an exchange (`startExchange`: the caller starts it) and ask again.
        case wait(startExchange: Bool)
        /// No token until `until`: the row goes back to the queue uncounted.
        case unavailable(reason: String, until: Date)
    }

    /// What a request whose token FCM refused (401) does.
    enum Refusal: Equatable {
        /// The token was replaced meanwhile: ask again and send, uncounted.
        case resend
        /// Wait for an exchange (`startExchange`: the caller starts it) and ask again.
        case wait(startExchange: Bool)
        /// A freshly renewed token was refused too: the app's FCM sending pauses.
        case paused(reason: String, until: Date)
    }

    /// First and longest wait after a failed exchange.
    static let firstBackoff: TimeInterval = 1
    static let longestBackoff: TimeInterval = 60
    /// First and longest pause after a refusal for good.
    static let firstPause: TimeInterval = 60
    static let longestPause: TimeInterval = 900

    static let refusedAfterRenewal = "FCM refused a freshly issued access token (401): check that the Firebase Cloud "
        + "Messaging API is enabled in the project and that the service account may send messages"

    private(set) var state = State.empty
    /// Failed exchanges in a row, for the backoff.
    private var failures = 0
    /// Pauses since FCM last accepted a token, for the pause's length.
    private var pauses = 0

    mutating func tokenNeeded(at now: Date) -> Need {
        switch state {
        case .empty:
            state = .exchanging(current: nil, afterRefusal: false)
            return .wait(startExchange: true)
        case .exchanging(let current, _):
            if let current, now < current.expiresAt { return .use(current.value, startExchange: false) }
            return .wait(startExchange: false)
        case .ready(let token, let renewedAfterRefusal):
            guard token.needsRenewal(at: now) else { return .use(token.value, startExchange: false) }
            let stillGood = now < token.expiresAt
            state = .exchanging(current: stillGood ? token : nil, afterRefusal: renewedAfterRefusal)
            return stillGood ? .use(token.value, startExchange: true) : .wait(startExchange: true)
        case .backingOff(let until, let reason), .paused(let until, let reason):
            guard now >= until else { return .unavailable(reason: reason, until: until) }
            state = .exchanging(current: nil, afterRefusal: false)
            return .wait(startExchange: true)
        }
    }

    /// The exchange ended; waiting requests then ask again with `tokenNeeded`.
    mutating func exchangeEnded(_ answer: TokenExchangeAnswer, at now: Date) {
        guard case .exchanging(let current, let afterRefusal) = state else { return }
        switch answer {
        case .issued(let token):
            failures = 0
            state = .ready(token, renewedAfterRefusal: afterRefusal)
        case .retry(let reason):
            failures += 1
            let wait = min(Self.firstBackoff * pow(2, Double(failures - 1)), Self.longestBackoff)
            if let current, now < current.expiresAt {
                // A token still good goes on serving; its renewal is tried again after the wait.
                state = .ready(current.renewing(at: min(now + wait, current.expiresAt)), renewedAfterRefusal: afterRefusal)
            } else {
                state = .backingOff(until: now + wait, reason: reason)
            }
        case .refused(let reason):
            pause(reason: reason, at: now)
        }
    }

    /// FCM answered a request that carried a token with anything but 401.
    mutating func tokenAccepted() {
        pauses = 0
        if case .ready(let token, true) = state { state = .ready(token, renewedAfterRefusal: false) }
    }

    /// FCM answered 401 to a request that carried `token`.
    mutating func tokenRefused(_ token: String, at now: Date) -> Refusal {
        switch state {
        case .ready(let current, let renewedAfterRefusal):
            guard current.value == token else { return .resend }
            guard !renewedAfterRefusal else {
                let until = pause(reason: Self.refusedAfterRenewal, at: now)
                return .paused(reason: Self.refusedAfterRenewal, until: until)
            }
            state = .exchanging(current: nil, afterRefusal: true)
            return .wait(startExchange: true)
        case .exchanging(let current, let afterRefusal):
            // A renewal under way: the refused token serves no one meanwhile.
            if current?.value == token { state = .exchanging(current: nil, afterRefusal: afterRefusal) }
            return .wait(startExchange: false)
        case .paused(let until, let reason):
            return .paused(reason: reason, until: until)
        case .empty, .backingOff:
            return .resend
        }
    }

    private var pauseLength: TimeInterval {
        min(Self.firstPause * pow(2, Double(max(pauses, 1) - 1)), Self.longestPause)
    }

    /// Pauses sending; returns when the pause ends.
    @discardableResult
    private mutating func pause(reason: String, at now: Date) -> Date {
        pauses += 1
        failures = 0
        let until = now + pauseLength
        state = .paused(until: until, reason: reason)
        return until
    }
}
