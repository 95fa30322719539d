import APNsCore
import Foundation
import HTTP2TLS
import PGPushCore
import PushTransport

/// Sends notifications of one app to APNs over a pool of HTTP/2 connections.
///
/// `send` never throws: every outcome, answered or not, is a `Delivery` whose verdict
/// `DeliveryPolicy` gave. What the client does with an answer before returning it is
/// `DeliveryPolicy.clientStep`: resend
/// what APNs certainly did not process, renew a refused provider token once (retiring every
/// connection that carried it), replace a connection that refused a renewed one. It never
/// resends a request APNs may have processed. The provider token is read when a connection
/// is leased, so a request that waited through a renewal never carries the refused token,
/// and a connection carries one token for its life.
///
/// Many `send`s may run at once; each waits its turn for a free stream and the connection's
/// rate, so a caller with a backlog simply awaits. The worker should hand over no more than
/// it can afford to wait for: connections × rate per second.
package final class APNsClient: Sendable {
    package let configuration: APNsClientConfiguration
    private let pool: ConnectionPool
    private let transport: HTTP2Client
    private let recorder = StatisticsRecorder()
    private let clock = ContinuousClock()

    /// Checks the configuration, builds the TLS context (system trust store plus the extra
    /// CA file; the client certificate for certificate auth) and the I/O thread. No
    /// connection is opened until `start()` or the first `send`.
    package init(configuration: APNsClientConfiguration) throws(APNsClientConfigurationError) {
        try configuration.validate()
        self.configuration = configuration
        let tls: ClientTLSContext
        do {
            switch configuration.authentication {
            case .token:
                tls = try ClientTLSContext(extraCAFile: configuration.extraCAFile, keyLog: configuration.tlsKeyLog)
            case .certificate(let identity):
                tls = try ClientTLSContext(extraCAFile: configuration.extraCAFile, identity: identity,
                                           keyLog: configuration.tlsKeyLog)
            }
        } catch {
            throw APNsClientConfigurationError(setting: "TLS (PGPUSH_CA_FILE / PGPUSH_CERT_FILE)", error.description,
                                               app: configuration.appName)
        }
        var connection = configuration.connection.clientConfiguration(tls: tls)
        var refusals: RefusedTokenWatch?
        if case .token(let cache) = configuration.authentication {
            // APNs allows one stream until it has seen a valid JWT.
            connection.singleStreamUntilFirstResponse = true
            let watch = RefusedTokenWatch(cache: cache)
            connection.answerObserver = { request, response in watch.observe(request, response) }
            refusals = watch
        }
        do {
            transport = try HTTP2Client(threadName: "apns-\(configuration.appName.prefix(10))")
        } catch {
            throw APNsClientConfigurationError(setting: "I/O thread", error.description, app: configuration.appName)
        }
        pool = ConnectionPool(endpoint: configuration.endpoint.address, connections: configuration.connection.connections,
                                  ratePerConnection: configuration.connection.effectiveRatePerConnection,
                                  backoff: configuration.connection.reconnectBackoff, transport: transport,
                                  connectionConfiguration: connection, statistics: recorder)
        refusals?.attach(pool)
    }

    deinit { transport.shutdown() }

    /// Opens the connections; returns once each has connected or failed its first attempt
    /// (failed ones keep retrying with backoff in the background).
    package func start() async {
        await pool.start()
    }

    /// Stops taking requests (new `send`s return `clientShutDown`), lets requests in flight
    /// finish for up to `timeout`, then closes every connection.
    package func shutdown(timeout: Duration = .seconds(10)) async {
        await pool.shutdown(timeout: timeout)
    }

    package var statistics: SenderStatistics {
        var snapshot = recorder.snapshot
        snapshot.liveConnections = pool.liveConnections
        snapshot.throttledConnections = pool.throttledConnections
        return snapshot
    }

    /// The last connect error (for `pgpush doctor` and logs), nil if none happened.
    package var lastConnectError: String? { pool.lastConnectError }

    /// The last connect failure with its particulars, nil if none happened.
    package var lastConnectFailure: ConnectionFailure? { pool.lastConnectFailure }

    /// `observer` is told of every failure to connect and every connection that ends on a
    /// protocol or I/O error, as it happens, on the task that saw it (keep it quick). One
    /// observer per client; a later call replaces it.
    package func onConnectionFailure(_ observer: @escaping @Sendable (ConnectionFailure) -> Void) {
        pool.onConnectionFailure(observer)
    }

    /// Sends one notification and returns what happened to it. What to do with each answer
    /// is `DeliveryPolicy.clientStep`'s to say; this carries it out. `lane`: while requests
    /// wait for a connection, the more urgent lane goes first.
    package func send(_ request: APNsRequest, lane: Lane = .unnamed) async -> Delivery {
        let started = clock.now
        guard pool.admit() else {
            return failed(.init(processing: .notProcessed, cause: .clientShutDown, detail: "APNs client is shut down"),
                          request: request, resends: 0, since: started)
        }
        defer { pool.leave() }
        pool.startKeepersIfNeeded()

        var resends = ClientResends()
        var avoidedSlot: Int?
        while true {
            let granted: (lease: ConnectionLease, token: ProviderToken?)
            var rateWait: Duration?
            switch await pool.acquire(lane: lane, avoiding: avoidedSlot, requestTimeout: configuration.connection.requestTimeout,
                                      credential: providerToken, carrying: Self.carried, rateWait: &rateWait) {
            case .success(let lease): granted = lease
            case .failure(let failure): return failed(failure, request: request, resends: resends.total, since: started)
            }
            let (lease, token) = granted
            // Built once the connection is granted, with the token read for it: a request
            // that waited through a renewal never carries the token that was refused.
            let wireRequest = APNsWireRequest.make(for: request, authority: configuration.endpoint.authority,
                                                   providerToken: token, timeout: configuration.connection.requestTimeout)
            let outcome = await pool.send(wireRequest, on: lease, rateWait: rateWait)

            let result: Delivery
            switch outcome {
            case .success(let response):
                result = answered(response, request: request, resends: resends.total, since: started)
                let throttled = if case .throttled = result.verdict { true } else { false }
                pool.finish(lease, answered: true, throttled: throttled)
            case .failure(let failure):
                pool.finish(lease, answered: false, throttled: false)
                result = failed(pool.deliveryFailure(failure), request: request, resends: resends.total, since: started,
                                counted: false)
            }

            switch DeliveryPolicy.clientStep(for: result, after: resends) {
            case .done:
                if let failure = result.failure { recorder.countFailure(failure) }
                return result
            case .resendElsewhere:
                guard result.failure?.cause.anotherConnectionMayHelp ?? true, !pool.isShuttingDown else {
                    if let failure = result.failure { recorder.countFailure(failure) }
                    return result
                }
                resends.notProcessed += 1
            case .renewProviderTokenAndResend:
                resends.renewedProviderToken = true
                guard case .token(let cache) = configuration.authentication, let token,
                      case .renewed? = try? cache.renewAfterRefusal(of: token) else { return result }
                recorder.update { $0.credentialRenewals += 1 }
                pool.retireConnections(carrying: token.jwt)
            case .replaceConnectionAndResend:
                resends.replacedConnection = true
                pool.retire(lease)
            }
            recorder.update { $0.resends += 1 }
            avoidedSlot = lease.slot
        }
    }

    // MARK: pieces of send

    /// What the pool knows of a provider token: a connection carries one for its life.
    private static func carried(_ token: ProviderToken) -> ConnectionCredential {
        ConnectionCredential(text: token.jwt, issuedAt: token.issuedAt)
    }

    private func providerToken() -> Result<ProviderToken?, DeliveryFailure> {
        guard case .token(let cache) = configuration.authentication else { return .success(nil) }
        do throws(ProviderTokenError) {
            return .success(try cache.currentToken())
        } catch {
            let refused = if case .refusedByAPNs = error { APNsReason.expiredProviderToken.rawValue } else { String?.none }
            return .failure(DeliveryFailure(processing: .notProcessed, cause: .credentials, serviceReason: refused,
                                            detail: error.description))
        }
    }

    private func answered(_ response: HTTP2Response, request: APNsRequest, resends: Int,
                          since started: ContinuousClock.Instant) -> Delivery {
        let success = (200..<300).contains(response.status)
        let body = success || response.body.isEmpty ? nil : APNsErrorBody.parse(response.body)
        var delivery = DeliveryPolicy.delivery(status: response.status, body: body,
                                               uniqueID: response.headers.withValue(of: "apns-unique-id", UUID.init(canonicalText:)) ?? nil,
                                               topicIsExplicit: request.topicIsExplicit)
        delivery.resends = resends
        delivery.latency = started.duration(to: clock.now)
        return delivery
    }

    /// A result without an answer; `counted`: it is final, so it goes into the statistics now.
    private func failed(_ failure: DeliveryFailure, request: APNsRequest, resends: Int, since started: ContinuousClock.Instant,
                        counted: Bool = true) -> Delivery {
        if counted { recorder.countFailure(failure) }
        var delivery = DeliveryPolicy.delivery(failure: failure, topicIsExplicit: request.topicIsExplicit)
        delivery.resends = resends
        delivery.latency = started.duration(to: clock.now)
        return delivery
    }
}
