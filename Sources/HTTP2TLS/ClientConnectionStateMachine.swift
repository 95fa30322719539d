/// One client connection's lifecycle and the rules that follow from it, with no I/O and no
/// clock: `ClientConnectionEngine` reports what happened, passing the time in (MonotonicClock
/// nanoseconds), and carries out what comes back. So every rule about streams, PING,
/// deadlines and closing can be driven by a test on a clock it advances itself.
struct ClientConnectionStateMachine {
    /// The configuration's numbers, in nanoseconds.
    struct Limits: Equatable {
        var maxConcurrentStreams: Int
        var singleStreamUntilFirstResponse: Bool
        var connectTimeout: UInt64
        var pingInterval: UInt64
        var pingTimeout: UInt64
        /// In-flight deadlines in a row, with no answer between, that close the connection; 0: never.
        var unresponsiveAfterDeadlines: Int = 0
    }

    /// What is known once the HTTP/2 session runs: the peer's limit and its liveness.
    struct Session: Equatable {
        /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS; nil until its first SETTINGS.
        var peerMaxConcurrentStreams: Int?
        /// A request has been answered: with `singleStreamUntilFirstResponse` the server
        /// allows more than one stream only after that.
        var answeredOnce = false
        /// When the socket was last found readable and read.
        var lastReceive: UInt64
        /// When the PING still unanswered went out.
        var pingSentAt: UInt64?
        /// When the last answer (response HEADERS) arrived.
        var lastAnswer: UInt64?
        /// Requests that passed their deadlines in flight with no answer on the connection
        /// since they went out, counted since the last answer. Bytes arriving do not reset
        /// it: a peer may answer PINGs and nothing else.
        var deadlinesInARow = 0
        /// HTTP/1.1 has no PING: liveness is left to deadlines and the peer's close.
        var canPing = true
    }

    /// A request not yet resolved: its deadline, and when it went out on a stream. Only
    /// those in flight say something about the peer when they expire: a queued one may
    /// just have waited for the rate window.
    struct Deadline: Equatable {
        var instant: UInt64
        var submittedAt: UInt64?
    }

    /// Why the connection takes no new requests.
    enum Drain: Equatable {
        /// This side asked (graceful close, stream ids used up).
        case local
        /// The peer sent GOAWAY; it decides the close reason even if this side asked first.
        case goAway(GoAway)
    }

    enum State: Equatable {
        case connecting(addressIndex: Int, deadline: UInt64)
        case handshaking(deadline: UInt64)
        /// The session runs; until the peer's SETTINGS only one stream may be open.
        case awaitingSettings(Session)
        case active(Session)
        /// Streams in flight may finish; nothing new is submitted.
        case draining(Session, Drain)
        case closed(CloseReason)
    }

    /// What a timer asks the engine to do, in this order.
    enum Action: Equatable {
        /// The connect deadline passed before the session started.
        case failConnect(ConnectError)
        /// These requests (by token) passed their deadlines.
        case expireRequests(Set<UInt64>)
        /// The rate window allows another request: submit what the stream limit allows.
        case submit
        case sendPing
        case close(CloseReason)
    }

    /// The outcome of a SETTINGS frame, for the engine to publish.
    enum SettingsChange: Equatable {
        case first(maxConcurrentStreams: Int)
        case changed(maxConcurrentStreams: Int)
        case unchanged
    }

    /// A close that has just happened: the reason to report, and what the engine needs to
    /// fail the requests still open.
    struct Closing: Equatable {
        var reason: CloseReason
        /// Streams above its last stream id were not processed.
        var goAway: GoAway?
        /// The caller of connect is still waiting for the outcome.
        var connectPending: Bool
    }

    let limits: Limits
    private(set) var state: State
    /// Set by whatever can let another queued request go: a new request, a freed stream,
    /// the peer's SETTINGS. Cleared when the engine submits.
    private(set) var submitDue = false
    /// When the rate window lets the next request go, if it held one back.
    private(set) var rateTimer: UInt64?
    /// Deadlines of the requests not yet resolved, queued or in flight, by token.
    private var deadlines: [UInt64: Deadline] = [:]
    /// No deadline comes before this; it may lag behind, ending in a scan that finds nothing.
    private var earliestDeadline: UInt64 = .max
    /// Set from inside an nghttp2 callback, where the session cannot be deleted: the reason
    /// the connection closes with once nghttp2 returns, over the error it returns with.
    private(set) var abortReason: CloseReason?

    init(limits: Limits, now: UInt64) {
        self.limits = limits
        state = .connecting(addressIndex: 0, deadline: now &+ limits.connectTimeout)
    }

    // MARK: phase

    var isClosed: Bool { if case .closed = state { return true } else { return false } }

    var closeReason: CloseReason? { if case .closed(let reason) = state { return reason } else { return nil } }

    /// The session runs (draining or not): frames may be read and written.
    var sessionRunning: Bool {
        switch state {
        case .awaitingSettings, .active, .draining: return true
        case .connecting, .handshaking, .closed: return false
        }
    }

    var goAway: GoAway? {
        if case .draining(_, .goAway(let goAway)) = state { return goAway } else { return nil }
    }

    private var connectPending: Bool {
        switch state {
        case .connecting, .handshaking: return true
        case .awaitingSettings, .active, .draining, .closed: return false
        }
    }

    /// The connection moved on to the address at `addressIndex` (the previous one failed).
    mutating func connecting(addressIndex: Int) {
        guard case .connecting(_, let deadline) = state else { return }
        state = .connecting(addressIndex: addressIndex, deadline: deadline)
    }

    mutating func tcpConnected() {
        guard case .connecting(_, let deadline) = state else { return }
        state = .handshaking(deadline: deadline)
    }

    /// TLS with ALPN h2 is up and the nghttp2 session exists.
    mutating func sessionStarted(now: UInt64) {
        guard case .handshaking = state else { return }
        state = .awaitingSettings(Session(lastReceive: now))
    }

    /// TLS is up and the server chose HTTP/1.1: one request at a time, no SETTINGS to wait
    /// for, no PING. Returns the stream limit (1) as a first SETTINGS would.
    mutating func http1Started(now: UInt64) -> Int {
        guard case .handshaking = state else { return 0 }
        state = .active(Session(peerMaxConcurrentStreams: 1, answeredOnce: true, lastReceive: now, canPing: false))
        submitDue = true
        return 1
    }

    /// The socket was readable and has been read: the peer counts as alive, and a PING sent
    /// before now as answered.
    mutating func received(now: UInt64) {
        updateSession { $0.lastReceive = now }
    }

    mutating func settingsReceived(maxConcurrentStreams limit: Int) -> SettingsChange {
        let known = updateSession { session -> Int? in
            defer { session.peerMaxConcurrentStreams = limit }
            return session.peerMaxConcurrentStreams
        }
        guard let previous = known else { return .unchanged }
        if case .awaitingSettings(let session) = state { state = .active(session) }
        submitDue = true
        // Before the first SETTINGS the limit counts as 1.
        guard let previous else { return .first(maxConcurrentStreams: limit) }
        return previous == limit ? .unchanged : .changed(maxConcurrentStreams: limit)
    }

    /// A request was answered. Returns true for the connection's first answer, the only
    /// one that can change `streamLimit`.
    @discardableResult
    mutating func streamAnswered() -> Bool {
        submitDue = true
        return updateSession { session -> Bool in
            defer { session.answeredOnce = true }
            return !session.answeredOnce
        } ?? false
    }

    /// The peer answered a request (its response HEADERS arrived): it is not unresponsive,
    /// whatever becomes of that stream.
    mutating func answerReceived(now: UInt64) {
        updateSession {
            $0.lastAnswer = now
            $0.deadlinesInARow = 0
        }
    }

    /// An answer went past a bound that ends the connection (see `ResponseBound`). Called
    /// from an nghttp2 callback, which then fails so that nghttp2 stops decoding; the
    /// engine closes once nghttp2 returns, and `close` reports this reason.
    mutating func abort(for bound: ResponseBound) {
        guard !isClosed, abortReason == nil else { return }
        abortReason = .responseTooLarge(bound)
    }

    /// A stream ended or a request left the queue without an answer: a slot may be free.
    mutating func streamEnded() {
        submitDue = true
    }

    // MARK: requests and the stream limit

    /// A request was handed in: nil if it joins the queue, else why it fails at once.
    mutating func requestQueued(token: UInt64, deadline: UInt64) -> RequestFailure? {
        switch state {
        case .closed(let reason):
            return RequestFailure(.notProcessed, .connectionClosed(reason))
        case .draining(_, .goAway(let goAway)):
            return RequestFailure(.notProcessed, .goAway(goAway))
        case .draining(_, .local):
            return RequestFailure(.notProcessed, .connectionClosed(.closedLocally))
        case .connecting, .handshaking, .awaitingSettings, .active:
            deadlines[token] = Deadline(instant: deadline)
            earliestDeadline = min(earliestDeadline, deadline)
            submitDue = true
            return nil
        }
    }

    /// The request went out on a stream: if its deadline passes, the peer had it unanswered.
    mutating func requestSubmitted(token: UInt64, now: UInt64) {
        deadlines[token]?.submittedAt = now
    }

    /// The request was resolved, one way or another: its deadline no longer matters.
    mutating func requestEnded(token: UInt64) {
        deadlines[token] = nil
    }

    /// How many streams may be open now: one until the peer's SETTINGS (and, if configured,
    /// until the first answer), then the lower of the peer's limit and ours; none unless
    /// the session runs and takes new requests.
    var streamLimit: Int {
        let session: Session
        switch state {
        case .awaitingSettings(let current), .active(let current): session = current
        case .connecting, .handshaking, .draining, .closed: return 0
        }
        var limit = min(limits.maxConcurrentStreams, session.peerMaxConcurrentStreams ?? 1)
        if limits.singleStreamUntilFirstResponse && !session.answeredOnce { limit = min(limit, 1) }
        return max(limit, 0)
    }

    /// The engine is about to submit from its queue: returns the stream limit to fill up to.
    mutating func beginSubmitting() -> Int {
        submitDue = false
        rateTimer = nil
        return streamLimit
    }

    /// The rate window holds the next request back until `instant`.
    mutating func rateLimited(until instant: UInt64) {
        rateTimer = instant
    }

    // MARK: draining and closing

    /// The peer's GOAWAY: returns the failure for every request still queued.
    mutating func goAwayReceived(_ goAway: GoAway) -> RequestFailure? {
        switch state {
        case .awaitingSettings(let session), .active(let session), .draining(let session, _):
            state = .draining(session, .goAway(goAway))
            return RequestFailure(.notProcessed, .goAway(goAway))
        case .connecting, .handshaking, .closed:
            return nil
        }
    }

    /// This side takes no new requests: returns the failure for every request still queued.
    mutating func drainLocally() -> RequestFailure? {
        switch state {
        case .awaitingSettings(let session), .active(let session):
            state = .draining(session, .local)
        case .draining:
            break
        case .connecting, .handshaking, .closed:
            return nil
        }
        return RequestFailure(.notProcessed, .connectionClosed(.closedLocally))
    }

    /// What a close asked of the connection means: a graceful one drains a running session
    /// (GOAWAY out, queued requests fail, streams in flight finish); anything else closes now.
    enum CloseRequest: Equatable {
        case none
        case closeNow
        case drain(queueFailure: RequestFailure)
    }

    mutating func closeRequested(graceful: Bool) -> CloseRequest {
        if isClosed { return .none }
        guard graceful, sessionRunning, let failure = drainLocally() else { return .closeNow }
        return .drain(queueFailure: failure)
    }

    /// nghttp2 has nothing left to read or write (after a GOAWAY either way): the reason to
    /// close with, or nil while it still has work.
    func closeDue(sessionFinished: Bool) -> CloseReason? {
        guard sessionFinished, sessionRunning else { return nil }
        return goAway.map { .goAway($0) } ?? .closedLocally
    }

    /// The connection closes for `proposed`; nil if it already had.
    mutating func close(_ proposed: CloseReason, openStreams: Int) -> Closing? {
        // An abort's nghttp2 error (or whatever followed it) is not the reason; the bound is.
        var reason = abortReason ?? proposed
        let goAway = self.goAway
        let connectPending = self.connectPending
        switch state {
        case .closed:
            return nil
        case .draining(_, let drain) where proposed == .peerClosed && abortReason == nil:
            // After GOAWAY either side may close first; the GOAWAY is the real reason. After
            // a local drain whose streams all ended, the peer only answered the GOAWAY.
            switch drain {
            case .goAway(let goAway): reason = .goAway(goAway)
            case .local: if openStreams == 0 { reason = .closedLocally }
            }
        case .connecting, .handshaking, .awaitingSettings, .active, .draining:
            break
        }
        state = .closed(reason)
        rateTimer = nil
        submitDue = false
        deadlines.removeAll()
        earliestDeadline = .max
        return Closing(reason: reason, goAway: goAway, connectPending: connectPending)
    }

    // MARK: timers

    /// The earliest instant `timerFired` has something to do.
    var nextTimer: UInt64? {
        switch state {
        case .connecting(_, let deadline), .handshaking(let deadline):
            return deadline
        case .closed:
            return nil
        case .awaitingSettings(let session), .active(let session), .draining(let session, _):
            let liveness = !session.canPing ? .max
                : session.pingSentAt.map { $0 &+ limits.pingTimeout } ?? session.lastReceive &+ limits.pingInterval
            let next = min(liveness, earliestDeadline, rateTimer ?? .max)
            return next == .max ? nil : next
        }
    }

    mutating func timerFired(now: UInt64) -> [Action] {
        switch state {
        case .connecting(_, let deadline), .handshaking(let deadline):
            return now >= deadline ? [.failConnect(.timedOut)] : []
        case .closed:
            return []
        case .awaitingSettings, .active, .draining:
            break
        }
        var actions: [Action] = []
        if now >= earliestDeadline {
            let (expired, submissions) = expireDeadlines(now: now)
            if !expired.isEmpty { actions.append(.expireRequests(expired)) }
            if let close = countUnanswered(submittedAt: submissions) {
                // Closing ends every timer; the PING check has nothing left to decide.
                actions.append(close)
                return actions
            }
        }
        if let rateTimer, now >= rateTimer { actions.append(.submit) }
        if let liveness = checkLiveness(now: now) { actions.append(liveness) }
        return actions
    }

    /// Removes and returns the requests whose deadlines passed by `now`, and when those of
    /// them in flight went out.
    private mutating func expireDeadlines(now: UInt64) -> (expired: Set<UInt64>, submittedAt: [UInt64]) {
        var expired = Set<UInt64>()
        var submissions: [UInt64] = []
        var earliest = UInt64.max
        for (token, deadline) in deadlines {
            if deadline.instant <= now {
                expired.insert(token)
                if let submittedAt = deadline.submittedAt { submissions.append(submittedAt) }
            } else {
                earliest = min(earliest, deadline.instant)
            }
        }
        for token in expired { deadlines[token] = nil }
        earliestDeadline = earliest
        return (expired, submissions)
    }

    /// Counts requests that expired in flight with no answer on the connection since they
    /// went out; a close once `unresponsiveAfterDeadlines` of them came with no answer
    /// between. PINGs may still be answered (so `checkLiveness` never closes it), but a
    /// connection that answers nothing else would spend an attempt of every request handed
    /// to it until the pool replaced it. A request that expired while others were answered
    /// is not counted: a server slow for some requests (a busy connection, answers
    /// interleaved with expiries) is not replaced for that, since another would be as slow.
    private mutating func countUnanswered(submittedAt submissions: [UInt64]) -> Action? {
        let threshold = limits.unresponsiveAfterDeadlines
        guard !submissions.isEmpty else { return nil }
        return updateSession { session -> Action? in
            let lastAnswer = session.lastAnswer
            session.deadlinesInARow += submissions.count { submittedAt in lastAnswer.map { $0 < submittedAt } ?? true }
            guard threshold > 0, session.deadlinesInARow >= threshold else { return nil }
            return .close(.unresponsive(deadlinesInARow: session.deadlinesInARow))
        } ?? nil
    }

    /// A PING goes out after `pingInterval` without bytes from the peer; without bytes
    /// within `pingTimeout` after it, the connection is dead.
    private mutating func checkLiveness(now: UInt64) -> Action? {
        let limits = self.limits
        return updateSession { session -> Action? in
            guard session.canPing else { return nil }
            if let sentAt = session.pingSentAt {
                if session.lastReceive >= sentAt {
                    session.pingSentAt = nil
                } else if now >= sentAt &+ limits.pingTimeout {
                    return .close(.pingTimeout)
                }
            }
            guard session.pingSentAt == nil, now >= session.lastReceive &+ limits.pingInterval else { return nil }
            session.pingSentAt = now
            return .sendPing
        } ?? nil
    }

    /// Runs `change` on the session if one runs; nil otherwise.
    @discardableResult
    private mutating func updateSession<T>(_ change: (inout Session) -> T) -> T? {
        switch state {
        case .awaitingSettings(var session):
            let result = change(&session)
            state = .awaitingSettings(session)
            return result
        case .active(var session):
            let result = change(&session)
            state = .active(session)
            return result
        case .draining(var session, let drain):
            let result = change(&session)
            state = .draining(session, drain)
            return result
        case .connecting, .handshaking, .closed:
            return nil
        }
    }
}

extension ClientConnectionStateMachine.Limits {
    init(_ configuration: HTTP2ClientConfiguration) {
        self.init(maxConcurrentStreams: configuration.maxConcurrentStreams,
                  singleStreamUntilFirstResponse: configuration.singleStreamUntilFirstResponse,
                  connectTimeout: MonotonicClock.nanoseconds(configuration.connectTimeout),
                  pingInterval: MonotonicClock.nanoseconds(configuration.pingInterval),
                  pingTimeout: MonotonicClock.nanoseconds(configuration.pingTimeout),
                  unresponsiveAfterDeadlines: max(configuration.unresponsiveAfterDeadlines, 0))
    }
}
