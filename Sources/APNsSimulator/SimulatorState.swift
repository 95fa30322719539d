import APNsCore
import Foundation
import HTTP2TLS
import PGPushCore

/// Everything the simulator remembers between requests; guarded by the handler's lock.
/// `decide` is the whole per-request policy: transport faults, route, credentials,
/// header rules, injected answers, report and log.
struct SimulatorState {
    struct Connection {
        var requests = 0
        var window = OneSecondWindow()
        var tokens = ProviderTokenSession()
        var certificateTopic: String?
        var hasCertificate = false
        /// Streams above this were sent after our GOAWAY and are not processed.
        var goAwayLastStream: Int32?
        var open = true
        var dropped = false
    }

    let verifier: ProviderTokenVerifier?
    let bundleID: String?
    let environment: APNsEnvironment
    let logging: Bool
    var faults: FaultInjector
    var tokenFaults: ProviderTokenFaults
    var recorder = ReportRecorder()
    var channels: ChannelRegistry
    var connections: [Int: Connection] = [:]

    init(configuration: SimulatorConfiguration) {
        if case .token(let key) = configuration.authentication {
            verifier = ProviderTokenVerifier(key: key, otherKeys: configuration.otherTokenKeys)
        } else {
            verifier = nil
        }
        bundleID = configuration.bundleID
        environment = configuration.environment
        logging = configuration.logPath != nil
        faults = FaultInjector(plan: configuration.faults)
        tokenFaults = ProviderTokenFaults(plan: configuration.faults)
        channels = ChannelRegistry(configuration: configuration)
    }

    /// The debug-data reason of the GOAWAY that `goAwayAfterStreams` sends.
    static let shutdownReason = "Shutdown"

    mutating func opened(_ info: ServerConnectionInfo) {
        var connection = Connection()
        connection.hasCertificate = info.peerCertificateSubject != nil || info.peerCertificateDER != nil
        connection.certificateTopic = info.peerCertificateSubject.flatMap(CertificateTopic.topic(fromSubject:))
        connections[info.id] = connection
        recorder.connectionOpened()
    }

    mutating func closed(_ id: Int) {
        connections[id]?.open = false
    }

    var report: SimulatorReport {
        recorder.snapshot(connections: connections.map { id, connection in
            ConnectionReport(id: id, requests: connection.requests, maxRequestsInOneSecond: connection.window.maximum,
                             authenticated: connection.tokens.isAuthenticated || (verifier == nil && connection.hasCertificate),
                             open: connection.open)
        })
    }

    mutating func decide(_ request: ServerRequest, now: Date, tick: UInt64) -> SimulatorDecision {
        recorder.received()
        tokenFaults.requestArrived(total: recorder.totalRequests)
        // Moved out and back rather than copied: a copy would make the window's and the
        // token session's storage shared, and the first write would copy them whole.
        var connection = connections.removeValue(forKey: request.connectionID) ?? Connection()
        defer { connections[request.connectionID] = connection }
        connection.requests += 1
        // The kernel's receive time where there is one: the simulator's own thread may get to
        // a request late, and a window counted at handling time would bunch what it delayed.
        connection.window.record(atNanoseconds: request.arrivalNanoseconds ?? tick)
        let apnsID = request.headers.value(of: "apns-id")

        if let last = connection.goAwayLastStream, request.streamID > last {
            recorder.refused()
            return logged(SimulatorDecision(step: .refuse), request, now: now, outcome: "ignored")
        }
        var goAway: SimulatorDecision.GoAway?
        switch faults.transportDecision(requestNumber: connection.requests) {
        case .drop:
            return dropped(request, &connection, apnsID: apnsID, now: now)
        case .refuse:
            recorder.refused()
            return logged(SimulatorDecision(step: .refuse), request, now: now, outcome: "refused")
        case .goAwayBeforeAnyStream(let reason):
            connection.goAwayLastStream = 0
            recorder.goAwaySent(reason: reason)
            recorder.refused()
            return logged(SimulatorDecision(step: .leaveToGoAway, goAway: .init(lastStreamID: 0, reason: reason)),
                          request, now: now, outcome: "goaway")
        case .proceedThenGoAway:
            connection.goAwayLastStream = request.streamID
            recorder.goAwaySent(reason: Self.shutdownReason)
            goAway = .init(lastStreamID: request.streamID, reason: Self.shutdownReason)
        case .proceed:
            break
        }

        let wasAuthenticated = connection.tokens.isAuthenticated
        let judged = judge(request, &connection, now: now)
        let raiseStreamLimit = !wasAuthenticated && connection.tokens.isAuthenticated
        let answer: SimulatorAnswer
        switch judged {
        case .answer(let value):
            answer = value
        case .refuse:
            recorder.refused()
            return logged(SimulatorDecision(step: .refuse, goAway: goAway, raiseStreamLimit: raiseStreamLimit),
                          request, now: now, outcome: "refused")
        case .drop:
            var result = dropped(request, &connection, apnsID: apnsID, now: now)
            result.goAway = goAway
            return result
        }

        recorder.processed(apnsID: apnsID)
        recorder.answered(answer, apnsID: apnsID)
        var headers: [HeaderField]
        if BroadcastRules.route(method: request.method, path: request.path) != nil {
            // Broadcasts and channel requests echo (or make up) `apns-request-id`; every
            // broadcast answer carries an `apns-unique-id`, in production too.
            headers = [HeaderField("apns-request-id",
                                            request.headers.value(of: "apns-request-id") ?? UUID().uuidString.lowercased())]
            if environment == .development || request.path.hasPrefix(BroadcastRules.broadcastPathPrefix) {
                headers.append(HeaderField("apns-unique-id", UUID().uuidString.lowercased()))
            }
        } else {
            headers = [HeaderField("apns-id", apnsID ?? UUID().uuidString.lowercased())]
            // The sandbox adds a fresh id to every answer, errors included; production never does.
            if environment == .development {
                headers.append(HeaderField("apns-unique-id", UUID().uuidString.lowercased()))
            }
        }
        for (name, value) in answer.headers.sorted(by: { $0.key < $1.key }) { headers.append(HeaderField(name, value)) }
        if !answer.body.isEmpty { headers.append(HeaderField("content-type", "application/json")) }
        let step = SimulatorDecision.Step.respond(status: answer.status, headers: headers, body: answer.body,
                                                  after: faults.latency())
        return logged(SimulatorDecision(step: step, goAway: goAway, raiseStreamLimit: raiseStreamLimit),
                      request, now: now, outcome: "answered", answer: answer)
    }

    /// Route, credentials, then content: the order in which APNs reports problems. Injected
    /// answers come after the credentials: a topic's answer instead of the content checks,
    /// a device token's (scripts, unregistered, the mix) in place of a 200.
    private mutating func judge(_ request: ServerRequest, _ connection: inout Connection, now: Date) -> ScriptedAnswer {
        var rawToken = ""
        let channelRoute = BroadcastRules.route(method: request.method, path: request.path)
        switch channelRoute {
        case .failure(let answer)?: return .answer(answer)
        case .success?: break
        case nil:
            switch RequestRules.checkRoute(method: request.method, path: request.path) {
            case .success(let token): rawToken = token
            case .failure(let answer): return .answer(answer)
            }
        }
        let topics: TopicPolicy
        if let verifier {
            let authorization = request.headers.value(of: "authorization")
            if let refusal = tokenFaults.refusal(authorization: authorization, verifier: verifier, now: now) {
                return .answer(refusal)
            }
            if let refusal = connection.tokens.check(authorization: authorization, verifier: verifier, now: now) {
                return .answer(refusal)
            }
            if let current = connection.tokens.current { tokenFaults.noteAccepted(current.token) }
            topics = .token(bundleID: bundleID)
        } else {
            guard connection.hasCertificate else { return .answer(SimulatorAnswer(.missingProviderToken)) }
            topics = .certificate(certificateTopic: connection.certificateTopic, bundleID: bundleID)
        }
        if case .success(let route)? = channelRoute { return judge(route, request, topics: topics, now: now) }
        if let injected = faults.answer(forTopic: request.headers.value(of: "apns-topic"), now: now) { return injected }
        switch RequestRules.checkContent(rawToken: rawToken, headers: request.headers, body: request.body, topics: topics) {
        case .success(let accepted): return faults.answer(forToken: accepted.deviceToken, now: now) ?? .answer(.accepted)
        case .failure(let answer): return .answer(answer)
        }
    }

    /// A broadcast or channel management request whose credentials passed: the bundle id in
    /// the path, then headers and body, then injected answers, then the channel registry.
    private mutating func judge(_ route: BroadcastRules.Route, _ request: ServerRequest, topics: TopicPolicy,
                                now: Date) -> ScriptedAnswer {
        switch route {
        case .broadcast(let bundleID):
            if let channelID = request.headers.value(of: "apns-channel-id") { recorder.broadcast(toChannel: channelID) }
            if let refusal = topics.covers(bundleID: bundleID) { return .answer(refusal) }
            switch BroadcastRules.checkBroadcast(headers: request.headers, body: request.body) {
            case .failure(let answer):
                return .answer(answer)
            case .success(let broadcast):
                if let injected = faults.answer(forChannel: broadcast.channelID, now: now) { return injected }
                return .answer(channels.judge(broadcast, bundleID: bundleID) ?? .accepted)
            }
        case .channel(_, let bundleID), .allChannels(let bundleID):
            recorder.managementRequest()
            if let refusal = topics.covers(bundleID: bundleID) { return .answer(refusal) }
            if let injected = faults.managementAnswer() { return injected }
            return .answer(channels.manage(route, headers: request.headers, body: request.body))
        }
    }

    private mutating func dropped(_ request: ServerRequest, _ connection: inout Connection, apnsID: String?,
                                  now: Date) -> SimulatorDecision {
        recorder.processed(apnsID: apnsID)
        recorder.unanswered()
        if !connection.dropped {
            connection.dropped = true
            recorder.connectionDropped()
        }
        return logged(SimulatorDecision(step: .drop), request, now: now, outcome: "dropped")
    }

    private func logged(_ decision: SimulatorDecision, _ request: ServerRequest, now: Date, outcome: String,
                        answer: SimulatorAnswer? = nil) -> SimulatorDecision {
        guard logging else { return decision }
        var result = decision
        var headers: [String: String] = [:]
        for field in request.headers where field.name.lowercased() != "authorization" {
            headers[field.name.lowercased()] = field.value
        }
        let token = request.path.hasPrefix(RequestRules.devicePathPrefix)
            ? String(request.path.dropFirst(RequestRules.devicePathPrefix.count)) : nil
        result.logEntry = RequestLogEntry(
            timeMilliseconds: Int64((now.timeIntervalSince1970 * 1000).rounded()),
            receivedMilliseconds: request.arrivalNanoseconds.map { Double($0 / 1000) / 1000 }, connection: request.connectionID,
            stream: request.streamID, method: request.method, path: request.path, token: token, headers: headers,
            providerToken: request.headers.value(of: "authorization") != nil,
            providerTokenKeyID: ProviderTokenVerifier.keyID(inAuthorization: request.headers.value(of: "authorization")),
            bodyBytes: request.body.count,
            outcome: outcome, status: answer?.status, reason: answer?.reason)
        return result
    }
}
