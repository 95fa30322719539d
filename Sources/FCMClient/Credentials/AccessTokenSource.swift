import Foundation
import HTTP2TLS
import Locking

/// One app's FCM access tokens: hands each request the current token, fetched by one
/// exchange at a time (`AccessTokenStateMachine` decides when) over a connection of its own
/// to the key file's `token_uri`, opened for the exchange and closed after it: exchanges
/// come about once an hour. The assertion and the tokens appear in no error or log.
package final class AccessTokenSource: Sendable {
    /// What a request gets.
    package enum Availability: Hashable, Sendable {
        case token(String)
        /// No token until `until`: the row goes back to the queue uncounted, the reason to health.
        case unavailable(reason: String, until: Date)
    }

    /// What a request whose token FCM refused (401) does.
    package enum AfterRefusal: Equatable, Sendable {
        /// Ask for a token again and resend, uncounted.
        case resend
        /// A freshly renewed token was refused too: the app's FCM sending pauses.
        case paused(reason: String, until: Date)
    }

    private struct State {
        var machine = AccessTokenStateMachine()
        var waiters: [CheckedContinuation<AccessTokenStateMachine.Need?, Never>] = []
        var exchanges = 0
    }

    private let account: ServiceAccountKey
    private let client: HTTP2Client
    private let configuration: HTTP2ClientConfiguration
    private let now: @Sendable () -> Date
    private let state = Locked(State())

    /// `configuration` carries the TLS trust for the token endpoint; `now` is the clock
    /// (tests move it).
    package init(account: ServiceAccountKey, client: HTTP2Client, configuration: HTTP2ClientConfiguration,
                now: @escaping @Sendable () -> Date = Date.init) {
        self.account = account
        self.client = client
        self.configuration = configuration
        self.now = now
    }

    /// Token exchanges started so far.
    package var exchanges: Int { state.withLock { $0.exchanges } }

    package func token() async -> Availability {
        while true {
            // Asked and, if it must wait, registered under one lock: an exchange that ends in
            // between cannot be missed. A waiter is resumed with nil: ask again.
            let need: AccessTokenStateMachine.Need? = await withCheckedContinuation { continuation in
                let (immediate, start) = state.withLock { state -> (AccessTokenStateMachine.Need?, Bool) in
                    let need = state.machine.tokenNeeded(at: now())
                    switch need {
                    case .wait(let start):
                        state.waiters.append(continuation)
                        return (nil, start)
                    case .use(_, let start):
                        return (need, start)
                    case .unavailable:
                        return (need, false)
                    }
                }
                if start { startExchange() }
                if let immediate { continuation.resume(returning: immediate) }
            }
            switch need {
            case .use(let value, _)?: return .token(value)
            case .unavailable(let reason, let until)?: return .unavailable(reason: reason, until: until)
            case .wait?, nil: continue
            }
        }
    }

    /// FCM answered 401 without an FcmError to a request that carried `token`.
    package func refused(_ token: String) async -> AfterRefusal {
        let (refusal, start) = state.withLock { state -> (AccessTokenStateMachine.Refusal, Bool) in
            let refusal = state.machine.tokenRefused(token, at: now())
            if case .wait(let start) = refusal { return (refusal, start) }
            return (refusal, false)
        }
        if start { startExchange() }
        switch refusal {
        case .resend, .wait: return .resend
        case .paused(let reason, let until): return .paused(reason: reason, until: until)
        }
    }

    /// FCM answered a request with anything but a refusal of its token.
    package func accepted() {
        state.withLock { $0.machine.tokenAccepted() }
    }

    private func startExchange() {
        state.withLock { $0.exchanges += 1 }
        Task {
            let answer = await exchange()
            let waiters = state.withLock { state -> [CheckedContinuation<AccessTokenStateMachine.Need?, Never>] in
                state.machine.exchangeEnded(answer, at: now())
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: nil) }
        }
    }

    /// One POST of a fresh assertion to the token endpoint, and what its answer means.
    private func exchange() async -> TokenExchangeAnswer {
        let assertion: String
        do {
            assertion = try ServiceAccountAssertion.sign(account, issuedAt: now())
        } catch {
            return .refused(reason: "the service account's key cannot sign: \(error)")
        }
        let endpoint = account.tokenURI
        guard let host = endpoint.host else { return .refused(reason: "token_uri names no host") }
        var path = endpoint.path.isEmpty ? "/" : endpoint.path
        if let query = endpoint.query { path += "?" + query }
        let connection: HTTP2ClientConnection
        do {
            connection = try await client.connect(host: host, port: endpoint.port ?? 443, configuration: configuration)
        } catch {
            return .retry(reason: "cannot reach the token endpoint \(host): \(error)")
        }
        defer { connection.close() }
        do {
            let response = try await connection.send(HTTP2Request(
                path: path, authority: endpoint.port.map { "\(host):\($0)" } ?? host,
                headers: [HeaderField("content-type", "application/x-www-form-urlencoded"), HeaderField("accept", "application/json")],
                body: ServiceAccountAssertion.tokenRequestBody(assertion: assertion)))
            return TokenExchangeAnswer.decide(status: response.status, body: response.body, receivedAt: now())
        } catch {
            return .retry(reason: "the token endpoint \(host) gave no answer: \(error)")
        }
    }
}
