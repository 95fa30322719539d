import Foundation
import HTTP2TLS
import PGPushCore
import PushCrypto
import PushTransport

/// What one app's FCM sender needs; built from the app's settings (`fcm_*`), checked by
/// `FCMSender.init`.
package struct FCMSenderConfiguration: Sendable {
    /// FCM's own host, used unless `fcm_url` says otherwise.
    package static let standardURL = "https://fcm.googleapis.com"

    package var appName: String
    package var account: ServiceAccountKey
    /// The project the messages are sent for: `fcm_project_id`, else the key file's.
    package var projectID: String
    /// `https://host[:port]` of the messages API.
    package var url: String = standardURL
    package var extraCAFile: String?
    package var tlsKeyLog: TLSKeyLog?
    /// Connections, rate cap, timeouts and reconnect back-off, as for every service.
    package var connection = ConnectionSettings()

    package init(appName: String, account: ServiceAccountKey, projectID: String? = nil) {
        self.appName = appName
        self.account = account
        self.projectID = projectID ?? account.projectID
    }
}

/// Why an FCM sender could not be made; the text names the setting.
package struct FCMSenderConfigurationError: Error, Sendable, CustomStringConvertible {
    package let description: String
}

/// FCM HTTP v1 as the worker sees it: a row becomes an `FCMMessage`, sent with the app's
/// current access token over the shared connection pool and rate cap; `FCMPolicy` says what
/// each answer means. Before returning, it does what the answer asks at once: a request FCM
/// certainly did not process is sent again on another connection (twice at most), and a 401
/// about the access token gets a new token and one resend (`AccessTokenSource` keeps the
/// renewals bounded and pauses after a renewed token is refused too).
package final class FCMSender: NotificationSender {
    package let configuration: FCMSenderConfiguration
    private let pool: ConnectionPool
    private let tokens: AccessTokenSource
    private let transport: HTTP2Client
    private let authority: String
    private let recorder = StatisticsRecorder()
    private let clock = ContinuousClock()
    /// Resends of a request FCM certainly did not process, before the row decides.
    static let notProcessedResends = 2

    package init(configuration: FCMSenderConfiguration) throws(FCMSenderConfigurationError) {
        let label = "app \"\(configuration.appName)\""
        guard let url = URL(string: configuration.url), url.scheme == "https", let host = url.host, !host.isEmpty,
              url.path.isEmpty || url.path == "/", url.query == nil else {
            throw FCMSenderConfigurationError(description: "\(label): PGPUSH_FCM_URL must be https://host[:port], got \"\(configuration.url)\"")
        }
        guard configuration.projectID.utf8.allSatisfy({ $0.isProjectIDCharacter }), !configuration.projectID.isEmpty,
              configuration.projectID.utf8.count <= 100 else {
            throw FCMSenderConfigurationError(description: "\(label): PGPUSH_FCM_PROJECT_ID must be a Firebase project id "
                                              + "(letters, digits, - and :), got \"\(configuration.projectID)\"")
        }
        if let (setting, problem) = configuration.connection.problem() {
            throw FCMSenderConfigurationError(description: "\(label): \(setting): \(problem)")
        }
        self.configuration = configuration
        let tls: ClientTLSContext
        do {
            tls = try ClientTLSContext(extraCAFile: configuration.extraCAFile, keyLog: configuration.tlsKeyLog)
        } catch {
            throw FCMSenderConfigurationError(description: "\(label): TLS (PGPUSH_CA_FILE): \(error)")
        }
        do {
            transport = try HTTP2Client(threadName: "fcm-\(configuration.appName.prefix(11))")
        } catch {
            throw FCMSenderConfigurationError(description: "\(label): I/O thread: \(error)")
        }
        let connection = configuration.connection.clientConfiguration(tls: tls)
        let port = url.port ?? 443
        authority = url.port.map { "\(host):\($0)" } ?? host
        pool = ConnectionPool(endpoint: ServiceAddress(host: host, port: port), connections: configuration.connection.connections,
                              ratePerConnection: configuration.connection.effectiveRatePerConnection, backoff: configuration.connection.reconnectBackoff,
                              transport: transport, connectionConfiguration: connection, statistics: recorder)
        // The token endpoint: the same deadlines and proxy, no cap (one exchange an hour).
        var exchange = configuration.connection.clientConfiguration(tls: tls)
        exchange.maxRequestsPerSecond = nil
        exchange.sharedWindow = nil
        tokens = AccessTokenSource(account: configuration.account, client: transport, configuration: exchange)
    }

    deinit { transport.shutdown() }

    // MARK: NotificationSender

    package var app: String { configuration.appName }
    package var service: Service { .fcm }

    package func prepare(_ notification: PushNotification) throws(RowRefusal) -> FCMMessage {
        let target: FCMMessage.Target = notification.channelID.map { .topic($0) } ?? .token(notification.deviceToken)
        let timeToLive = notification.expiration.map { Int(clamping: $0 - Int64(Date().timeIntervalSince1970)) }
        do throws(FCMMessageError) {
            return try FCMMessage(target: target, payload: notification.payload, priority: notification.priority,
                                  timeToLive: timeToLive, deliverOnce: notification.deliverOnce ?? false,
                                  collapseID: notification.collapseID)
        } catch {
            throw RowRefusal(reason: error.reason, detail: error.description)
        }
    }

    /// FCM pauses nothing smaller than the app's whole FCM sending.
    package func scope(of request: FCMMessage) -> String? { nil }

    package var sharedWindow: SharedSubmitWindow? { configuration.connection.sharedWindow }

    package var requestsPerSecond: Int? { configuration.connection.effectiveRatePerConnection.map { $0 * configuration.connection.connections } }
    package var connections: Int { configuration.connection.connections }

    package var statistics: SenderStatistics {
        var snapshot = recorder.snapshot
        snapshot.liveConnections = pool.liveConnections
        snapshot.throttledConnections = pool.throttledConnections
        return snapshot
    }

    package var reasons: Set<String> { FCMPolicy.reasons }

    package var wrongSetup: (reason: String, why: String) {
        ("LikelySenderIDMismatch", "most recent answers are SENDER_ID_MISMATCH: the tokens belong to another Firebase "
            + "project than \(configuration.projectID); check PGPUSH_FCM_CREDENTIALS_FILE and PGPUSH_FCM_PROJECT_ID")
    }

    package func onConnectionFailure(_ observer: @escaping @Sendable (ConnectionFailure) -> Void) {
        pool.onConnectionFailure(observer)
    }

    package func start() async { await pool.start() }

    package func shutdown() async { await pool.shutdown(timeout: .seconds(10)) }

    /// Token exchanges so far (tests: a handful a minute, never one per row).
    package var tokenExchanges: Int { tokens.exchanges }

    package func send(_ message: FCMMessage, lane: Lane) async -> Delivery {
        let started = clock.now
        guard pool.admit() else {
            return failed(DeliveryFailure(processing: .notProcessed, cause: .clientShutDown, detail: "the FCM sender is shut down"),
                          resends: 0, since: started)
        }
        defer { pool.leave() }
        pool.startKeepersIfNeeded()
        var resends = 0
        var notProcessedResends = 0
        var avoidedSlot: Int?
        while true {
            let token: String
            switch await tokens.token() {
            case .token(let current): token = current
            case .unavailable(let reason, _):
                return paused("AccessTokenUnavailable", reason, resends: resends, since: started)
            }
            var rateWait: Duration?
            let lease: ConnectionLease
            switch await pool.acquire(lane: lane, avoiding: avoidedSlot, requestTimeout: configuration.connection.requestTimeout,
                                      credential: { () -> Result<String?, DeliveryFailure> in .success(nil) },
                                      rateWait: &rateWait) {
            case .success(let granted): lease = granted.0
            case .failure(let failure): return failed(failure, resends: resends, since: started)
            }
            let request = HTTP2Request(
                path: FCMMessage.path(project: configuration.projectID), authority: authority,
                headers: [HeaderField("authorization", "Bearer \(token)", neverIndex: true),
                          HeaderField("content-type", "application/json; charset=utf-8")],
                body: message.body, timeout: configuration.connection.requestTimeout)
            switch await pool.send(request, on: lease, rateWait: rateWait) {
            case .success(let response):
                if FCMPolicy.refusesAccessToken(status: response.status, body: response.body) {
                    pool.finish(lease, answered: true, throttled: false)
                    switch await tokens.refused(token) {
                    case .resend:
                        recorder.update { $0.credentialRenewals += 1; $0.resends += 1 }
                        resends += 1
                        continue
                    case .paused(let reason, _):
                        return paused("AccessTokenRefused", reason, status: response.status, resends: resends, since: started)
                    }
                }
                tokens.accepted()
                var delivery = FCMPolicy.delivery(status: response.status, retryAfter: response.headers.value(of: "retry-after"),
                                                  body: response.body, project: configuration.projectID)
                let throttled = if case .throttled = delivery.verdict { true } else { false }
                pool.finish(lease, answered: true, throttled: throttled)
                delivery.resends = resends
                delivery.latency = started.duration(to: clock.now)
                return delivery
            case .failure(let error):
                pool.finish(lease, answered: false, throttled: false)
                let failure = pool.deliveryFailure(error)
                if failure.processing == .notProcessed, failure.cause.anotherConnectionMayHelp,
                   notProcessedResends < Self.notProcessedResends, !pool.isShuttingDown {
                    notProcessedResends += 1
                    resends += 1
                    recorder.update { $0.resends += 1 }
                    avoidedSlot = lease.slot
                    continue
                }
                return failed(failure, resends: resends, since: started)
            }
        }
    }

    // MARK: pieces of send

    /// No answer: the verdict is the shared one for a request that was or may have been processed.
    private func failed(_ failure: DeliveryFailure, resends: Int, since started: ContinuousClock.Instant) -> Delivery {
        recorder.noAnswer(failure, resends: resends, latency: started.duration(to: clock.now))
    }

    /// No usable access token: the app's FCM sending pauses, the row waits uncounted. `name`
    /// is the row's `last_reason`, `reason` what `app_health` shows.
    private func paused(_ name: String, _ reason: String, status: Int? = nil, resends: Int,
                        since started: ContinuousClock.Instant) -> Delivery {
        let failure = DeliveryFailure(processing: .notProcessed, cause: .credentials, serviceReason: name, detail: reason)
        return Delivery(verdict: .paused(.service, reason: "\(name): \(reason)"), status: status, reason: name,
                        failure: status == nil ? failure : nil, resends: resends, latency: started.duration(to: clock.now))
    }
}

extension UInt8 {
    /// Firebase project ids: lower-case letters, digits and '-' (older ones also ':' and '.').
    fileprivate var isProjectIDCharacter: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
            || self == UInt8(ascii: "-") || self == UInt8(ascii: ":") || self == UInt8(ascii: ".")
    }
}
