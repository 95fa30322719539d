import Foundation
import HTTP2TLS
import Locking
import PGPushCore
import PushCrypto
import PushTransport

/// What one app's Web Push sender needs; built from the app's settings (`vapid_*`,
/// `webpush_allowed_origins`), checked by `WebPushSender.init`.
package struct WebPushSenderConfiguration: Sendable {
    package var appName: String
    /// The application server's key and contact (`vapid_key_file`, `vapid_subject`).
    package var signer: VAPIDSigner
    /// The only origins a row's endpoint may name.
    package var allowedOrigins: AllowedOrigins = .publicPushServices
    package var extraCAFile: String?
    package var tlsKeyLog: TLSKeyLog?
    /// Connections per origin, rate cap per connection, timeouts and reconnect back-off, as
    /// for every service.
    package var connection = ConnectionSettings()
    /// Origins with connections open at once. Browsers' push services are a handful of
    /// hosts (Windows' answers from one per region); the cap bounds what rows can make the
    /// worker hold open.
    package var openOrigins = 16
    /// An origin's connections close after this long without a request.
    package var idleTimeout: Duration = .seconds(120)

    package init(appName: String, signer: VAPIDSigner) {
        self.appName = appName
        self.signer = signer
    }
}

/// Why a Web Push sender could not be made; the text names the setting.
package struct WebPushSenderConfigurationError: Error, Sendable, CustomStringConvertible {
    package let description: String
}

/// Web Push (RFC 8030) as the worker sees it: a row's subscription becomes a `WebPushMessage`
/// sealed for its browser, sent to the subscription's endpoint with the app's VAPID token for
/// that origin, over connections to that origin (`OriginPools`); `WebPushPolicy` says what
/// each answer means.
///
/// The endpoint is the row's, so it is untrusted: an origin not in `allowedOrigins` fails the
/// row in `prepare`, before any connection, and a connection goes only to addresses
/// `AllowedOrigins.allows(_:for:)` permits (a name that resolves into a private range fails
/// the row `EndpointNotAllowed`, with nothing connected to).
package final class WebPushSender: NotificationSender {
    package let configuration: WebPushSenderConfiguration
    private let tokens: VAPIDTokenCache
    private let tls: ClientTLSContext
    private let transport: HTTP2Client
    private let recorder = StatisticsRecorder()
    private let clock = ContinuousClock()
    private let origins: Locked<OriginPools<ConnectionPool>>
    private let failureObserver = Locked<(@Sendable (ConnectionFailure) -> Void)?>(nil)
    /// Closes idle origins; started with the first one.
    private let janitor = Locked<Task<Void, Never>?>(nil)
    /// Resends of a request the push service certainly did not process, before the row decides.
    static let notProcessedResends = 2

    package init(configuration: WebPushSenderConfiguration) throws(WebPushSenderConfigurationError) {
        let label = "app \"\(configuration.appName)\""
        if let (setting, problem) = configuration.connection.problem() {
            throw WebPushSenderConfigurationError(description: "\(label): \(setting): \(problem)")
        }
        self.configuration = configuration
        tokens = VAPIDTokenCache(signer: configuration.signer)
        do {
            // Push services are not all HTTP/2 (Apple's answers HTTP/1.1 unless asked for h2).
            tls = try ClientTLSContext(extraCAFile: configuration.extraCAFile, keyLog: configuration.tlsKeyLog, offersHTTP1: true)
        } catch {
            throw WebPushSenderConfigurationError(description: "\(label): TLS (PGPUSH_CA_FILE): \(error)")
        }
        do {
            transport = try HTTP2Client(threadName: "webpush-\(configuration.appName.prefix(7))")
        } catch {
            throw WebPushSenderConfigurationError(description: "\(label): I/O thread: \(error)")
        }
        origins = Locked(OriginPools(limit: configuration.openOrigins, idleTimeout: configuration.idleTimeout))
    }

    deinit {
        janitor.withLock { $0 }?.cancel()
        transport.shutdown()
    }

    // MARK: NotificationSender

    package var app: String { configuration.appName }
    package var service: Service { .webpush }

    package func prepare(_ notification: PushNotification) throws(RowRefusal) -> WebPushMessage {
        do throws(WebPushRowError) {
            guard let json = notification.subscription else { throw .invalidSubscription("the row has no subscription") }
            let subscription = try WebPushSubscription(json: json)
            let origin = subscription.endpoint.origin
            guard configuration.allowedOrigins.allows(origin) else {
                throw .endpointNotAllowed("\(origin) is not in webpush_allowed_origins (\(configuration.allowedOrigins))")
            }
            let payload: [UInt8]
            do {
                payload = try JSONScanner.scan(notification.payload, compacting: true, buildingValue: false).compact
            } catch {
                throw .invalidPayload("\(error)")
            }
            let timeToLive = notification.expiration.map { Int(clamping: $0 - Int64(Date().timeIntervalSince1970)) }
            return try WebPushMessage(subscription: subscription, payload: payload, priority: notification.priority,
                                      timeToLive: timeToLive, deliverOnce: notification.deliverOnce ?? false,
                                      topic: notification.collapseID)
        } catch {
            throw RowRefusal(reason: error.reason, detail: error.description)
        }
    }

    /// A refused VAPID token pauses the app's sending to that origin only.
    package func scope(of request: WebPushMessage) -> String? { request.endpoint.origin.description }

    /// Per origin: every origin has its own connections.
    package var sharedWindow: SharedSubmitWindow? { configuration.connection.sharedWindow }

    package var requestsPerSecond: Int? { configuration.connection.effectiveRatePerConnection.map { $0 * configuration.connection.connections } }
    package var connections: Int { configuration.connection.connections }

    package var statistics: SenderStatistics {
        var snapshot = recorder.snapshot
        let pools = origins.withLock { $0.pools }
        snapshot.liveConnections = pools.reduce(0) { $0 + $1.liveConnections }
        snapshot.throttledConnections = pools.reduce(0) { $0 + $1.throttledConnections }
        return snapshot
    }

    package var reasons: Set<String> { WebPushPolicy.reasons }

    package var wrongSetup: (reason: String, why: String) {
        ("LikelyWrongVAPIDKey", "most recent answers refuse the VAPID key: the subscriptions were made with another "
            + "application server key than PGPUSH_VAPID_KEY_FILE's (public key \(configuration.signer.publicKey))")
    }

    /// Most answers from an origin refusing the key: that origin's health says so.
    package var wrongSetupIsPerScope: Bool { true }

    package func onConnectionFailure(_ observer: @escaping @Sendable (ConnectionFailure) -> Void) {
        failureObserver.withLock { $0 = observer }
        for pool in origins.withLock({ $0.pools }) { pool.onConnectionFailure(observer) }
    }

    package func shutdown() async {
        janitor.withLock { $0 }?.cancel()
        let pools = origins.withLock { $0.shutDown() }
        await withTaskGroup(of: Void.self) { group in
            for pool in pools { group.addTask { await pool.shutdown(timeout: .seconds(10), closingTransport: false) } }
        }
        transport.shutdown()
    }

    /// The origins with connections open now (tests).
    package var openOrigins: [PushServiceOrigin] { origins.withLock { $0.origins } }

    package func send(_ message: WebPushMessage, lane: Lane) async -> Delivery {
        let started = clock.now
        let origin = message.endpoint.origin
        let pool: ConnectionPool
        switch checkOut(origin) {
        case .use(let checkedOut, _): pool = checkedOut
        case .full:
            return failed(DeliveryFailure(processing: .notProcessed, cause: .couldNotConnect,
                                          detail: "\(configuration.openOrigins) push service origins busy; \(origin) waits"),
                          resends: 0, since: started)
        case .shutDown:
            return failed(DeliveryFailure(processing: .notProcessed, cause: .clientShutDown, detail: "the Web Push sender is shut down"),
                          resends: 0, since: started)
        }
        defer { origins.withLock { $0.checkIn(origin, at: clock.now) } }
        guard pool.admit() else {
            return failed(DeliveryFailure(processing: .notProcessed, cause: .clientShutDown, detail: "the Web Push sender is shut down"),
                          resends: 0, since: started)
        }
        defer { pool.leave() }
        pool.startKeepersIfNeeded()
        let token: VAPIDToken
        do {
            token = try tokens.token(for: origin.description)
        } catch {
            let failure = DeliveryFailure(processing: .notProcessed, cause: .credentials, serviceReason: "VapidSigningFailed",
                                          detail: error.description)
            return Delivery(verdict: .paused(.service, reason: "VapidSigningFailed: \(error)"), reason: "VapidSigningFailed",
                            failure: failure, latency: started.duration(to: clock.now))
        }
        var headers = [HeaderField("authorization", token.authorizationHeader, neverIndex: true)]
        headers += message.headers.map { HeaderField($0.name, $0.value) }
        let request = HTTP2Request(path: message.endpoint.target, authority: Self.authority(origin), headers: headers,
                                   body: message.body, timeout: configuration.connection.requestTimeout)
        var resends = 0
        var avoidedSlot: Int?
        while true {
            var rateWait: Duration?
            let lease: ConnectionLease
            switch await pool.acquire(lane: lane, avoiding: avoidedSlot, requestTimeout: configuration.connection.requestTimeout,
                                      credential: { () -> Result<String?, DeliveryFailure> in .success(nil) },
                                      rateWait: &rateWait) {
            case .success(let granted): lease = granted.0
            case .failure(let failure) where failure.cause == .addressNotPermitted:
                return Delivery(verdict: .failed(listsTarget: false), reason: EndpointRefusal.reason,
                                detail: "\(EndpointRefusal.reason): \(failure.detail)", resends: resends,
                                latency: started.duration(to: clock.now))
            case .failure(let failure): return failed(failure, resends: resends, since: started)
            }
            switch await pool.send(request, on: lease, rateWait: rateWait) {
            case .success(let response):
                var delivery = WebPushPolicy.delivery(status: response.status, location: response.headers.value(of: "location"),
                                                      apnsID: response.headers.value(of: "apns-id"),
                                                      retryAfter: response.headers.value(of: "retry-after"),
                                                      body: response.body, origin: origin)
                let throttled = if case .throttled = delivery.verdict { true } else { false }
                pool.finish(lease, answered: true, throttled: throttled)
                // The origin pauses; its probe after the pause signs a new token.
                if case .paused(.requestScope, _) = delivery.verdict { tokens.forget(origin.description) }
                delivery.resends = resends
                delivery.latency = started.duration(to: clock.now)
                return delivery
            case .failure(let error):
                pool.finish(lease, answered: false, throttled: false)
                let failure = pool.deliveryFailure(error)
                if failure.processing == .notProcessed, failure.cause.anotherConnectionMayHelp,
                   resends < Self.notProcessedResends, !pool.isShuttingDown {
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

    /// The origin's pool, made on first use with connections only to addresses the
    /// allow-list permits; an origin made room for is closed.
    private func checkOut(_ origin: PushServiceOrigin) -> OriginPools<ConnectionPool>.CheckOut {
        var made = false
        let decision = origins.withLock { table in
            table.checkOut(origin, at: clock.now) {
                made = true
                return makePool(for: origin, observer: failureObserver.withLock { $0 })
            }
        }
        if case .use(_, let closing?) = decision {
            Task { await closing.shutdown(timeout: configuration.connection.requestTimeout, closingTransport: false) }
        }
        // Only a new origin needs the janitor: the send path of an open origin takes one lock.
        if made { startJanitorIfNeeded() }
        return decision
    }

    private func makePool(for origin: PushServiceOrigin, observer: (@Sendable (ConnectionFailure) -> Void)?) -> ConnectionPool {
        var connection = configuration.connection.clientConfiguration(tls: tls)
        let allowed = configuration.allowedOrigins
        connection.permitsAddress = { bytes in IPAddress(bytes: bytes).map { allowed.allows($0, for: origin) } ?? false }
        let pool = ConnectionPool(endpoint: ServiceAddress(host: origin.host, port: origin.port),
                                  connections: configuration.connection.connections,
                                  ratePerConnection: configuration.connection.effectiveRatePerConnection,
                                  backoff: configuration.connection.reconnectBackoff, transport: transport,
                                  connectionConfiguration: connection, statistics: recorder)
        if let observer { pool.onConnectionFailure(observer) }
        return pool
    }

    private func startJanitorIfNeeded() {
        janitor.withLock { task in
            guard task == nil else { return }
            let every = configuration.idleTimeout / 4
            task = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: every)
                    guard let self else { return }
                    let idle = origins.withLock { $0.takeIdle(at: clock.now) }
                    for pool in idle { await pool.shutdown(timeout: .zero, closingTransport: false) }
                }
            }
        }
    }

    /// `Host`/`:authority` of an origin: the port only when it is not 443.
    static func authority(_ origin: PushServiceOrigin) -> String {
        let host = origin.host.contains(":") ? "[\(origin.host)]" : origin.host
        return origin.port == 443 ? host : "\(host):\(origin.port)"
    }

    /// No answer: the verdict is the shared one for a request that was or may have been processed.
    private func failed(_ failure: DeliveryFailure, resends: Int, since started: ContinuousClock.Instant) -> Delivery {
        recorder.noAnswer(failure, resends: resends, latency: started.duration(to: clock.now))
    }
}
