import Dispatch
import Foundation
import HTTP2TLS
import Locking
import PGPushCore
import PushTransport
import PushWorker
import Synchronization

enum RunCommand {
    static let help = """
        pgpush run — the worker: claim queued notifications, send them to APNs, record every outcome

        Configuration comes from flags, then environment variables, then the JSON file
        given by --config / PGPUSH_CONFIG (for several apps). Everything is checked before
        the worker connects anywhere; an error names the setting to fix.

        Flags (environment variable in brackets). --topic to --skip-known-invalid-tokens describe
        the app named by --app; a --config file sets them for each app it lists:
          --database-url URL        [DATABASE_URL]  libpq connection string or URI (PG* variables also work)
          --listen-database-url URL [PGPUSH_LISTEN_DATABASE_URL] a direct (session) connection to the same
                                    database, for LISTEN only, when DATABASE_URL goes through a transaction
                                    pooler such as PgBouncer (without it the worker polls, and says so)
          --config FILE             [PGPUSH_CONFIG] JSON file listing apps (see README): at most 100 apps
                                    a worker, and a file of at most 1 MiB
          --app NAME                [PGPUSH_APP]    the app the single-app settings describe (default: default)
          --topic BUNDLE_ID         [PGPUSH_TOPIC]
          --apns-env ENV            [PGPUSH_APNS_ENV] production (default) or development
          --apns-url URL            [PGPUSH_APNS_URL] e.g. https://127.0.0.1:2197 for the simulator
          --ca-file FILE            [PGPUSH_CA_FILE]  extra trust anchors (PEM); verification is always on
          --team-id ID --key-id ID --key-file FILE   [PGPUSH_TEAM_ID, PGPUSH_KEY_ID, PGPUSH_KEY_FILE] token auth
          --cert-file FILE          [PGPUSH_CERT_FILE] certificate auth (.p12, or PEM with certificate and key);
                                    its password only from PGPUSH_CERT_PASSWORD
          --fcm-credentials-file FILE
                                    [PGPUSH_FCM_CREDENTIALS_FILE] a Google service-account key file (JSON): the app
                                    sends its rows with service = 'fcm' through FCM HTTP v1
          --fcm-project-id ID       [PGPUSH_FCM_PROJECT_ID] default: the key file's project_id
          --fcm-url URL             [PGPUSH_FCM_URL] default https://fcm.googleapis.com (the simulator's URL in tests)
          --vapid-key-file FILE     [PGPUSH_VAPID_KEY_FILE] the app's VAPID key (EC P-256, PEM): the app sends its
                                    rows with service = 'webpush' to the browsers' push services
          --vapid-subject URL       [PGPUSH_VAPID_SUBJECT] required with the key: a mailto: or https: contact
          --webpush-allowed-origins LIST
                                    [PGPUSH_WEBPUSH_ALLOWED_ORIGINS] the only https://host[:port] (or https://*.domain)
                                    origins a subscription's endpoint may name; default: the public push services.
                                    Any other endpoint fails EndpointNotAllowed without a connection
          --connections N           [PGPUSH_CONNECTIONS] HTTP/2 connections per app and service (default 4)
          --rate-per-connection N   [PGPUSH_RATE_PER_CONNECTION] requests/second per connection (default \(RateCap.standardPerConnection))
          --rate-per-app N          [PGPUSH_RATE_PER_APP] requests/second for the app and each service across every
                                    worker together, shared through the database (default 0: none)
          --retry-server-errors N   [PGPUSH_RETRY_SERVER_ERRORS] retries after a 5xx or no answer, 0–20 (default 3)
          --retry-delay-min-seconds S, --retry-delay-max-seconds S
                                    [PGPUSH_RETRY_DELAY_MIN_SECONDS, PGPUSH_RETRY_DELAY_MAX_SECONDS] the wait before
                                    each such retry, uniform between the two: 0 < min ≤ max ≤ 3600 (default 1, 5)
          --retry-429-base-seconds S, --retry-429-max-delay-seconds S
                                    [PGPUSH_RETRY_429_BASE_SECONDS, PGPUSH_RETRY_429_MAX_DELAY_SECONDS] the wait after
                                    429 TooManyRequests doubles from base up to max, with jitter:
                                    0 < base ≤ max ≤ 3600 (default 1, 60)
          --retry-429-max-attempts N
                                    [PGPUSH_RETRY_429_MAX_ATTEMPTS] attempts in total, the first included, before
                                    429s fail the notification, 1–100 (default 8)
          --skip-known-invalid-tokens true|false
                                    [PGPUSH_SKIP_KNOWN_INVALID_TOKENS] rows for a device token APNs already answered
                                    410 fail as KnownInvalidToken without a request; false sends them (default true)
          --lease-seconds N         [PGPUSH_LEASE_SECONDS] how long a claim holds a row (default 60)
          --drain-seconds N         [PGPUSH_DRAIN_SECONDS] how long SIGTERM waits for requests in flight (default 20)
          --worker-id ID            [PGPUSH_WORKER_ID] default: host-pid-random
          --metrics-addr HOST:PORT  [PGPUSH_METRICS_ADDR] Prometheus /metrics, /healthz and /readyz (off by default)
          --proxy URL               [https_proxy, HTTPS_PROXY] http://[user:password@]host[:port]: every connection to
                                    APNs, FCM, Google's token endpoint and the push services goes through this
                                    proxy's CONNECT tunnel (TLS is still end to end); NO_PROXY / no_proxy lists
                                    hosts reached directly (comma-separated; a name covers its subdomains). The
                                    password is never printed
          --prune-after-days N      [PGPUSH_PRUNE_AFTER_DAYS] delete rows finished longer ago (off by default;
                                    one worker at a time prunes, every 10 minutes)

        Environment only:
          SSLKEYLOGFILE=FILE        append the TLS secrets of every APNs connection to FILE (the key log
                                    format Wireshark reads), to read a capture of the traffic. For debugging
                                    only: whoever reads FILE can decrypt it. Off unless set; the log warns
                                    at start while it is on.

        Signals: SIGTERM or SIGINT stops claiming, lets requests in flight finish, writes every
        outcome, returns unsent rows to the queue and exits 0. A second signal exits at once
        (exit code 1); leases return whatever was left. SIGHUP reloads: the configuration file
        and every key and certificate file are read again; when they load, requests in flight
        finish, unsent rows go back to the queue, and the worker goes on (same pid and worker id)
        with new connections and the new credentials, logging what changed (reload_change);
        when they do not, reload_refused names the setting and nothing changes.

        Examples:
          DATABASE_URL=postgres://pgpush@db/app PGPUSH_TOPIC=com.example.app \\
          PGPUSH_TEAM_ID=ABCDE12345 PGPUSH_KEY_ID=KEY1234567 PGPUSH_KEY_FILE=/etc/pgpush/AuthKey.p8 pgpush run

          pgpush run --config /etc/pgpush/apps.json
        """

    static let flags: Set<String> = [
        "help", "database-url", "listen-database-url", "config", "app", "topic", "apns-env", "apns-url", "ca-file", "team-id", "key-id",
        "key-file", "cert-file", "connections", "rate-per-connection", "rate-per-app", "lease-seconds", "drain-seconds", "worker-id",
        "prune-after-days", "metrics-addr", "retry-server-errors", "retry-delay-min-seconds", "retry-delay-max-seconds",
        "retry-429-base-seconds", "retry-429-max-delay-seconds", "retry-429-max-attempts", "skip-known-invalid-tokens",
        "fcm-credentials-file", "fcm-project-id", "fcm-url", "vapid-key-file", "vapid-subject", "webpush-allowed-origins",
        "proxy",
    ]

    static func run(_ arguments: Arguments) throws -> Int32 {
        // This process runs one worker and nothing else: its tasks on one thread of their own
        // (TaskThread says why), from before the first task starts.
        TaskThread.becomeGlobalExecutor()
        var flagValues: [String: String] = [:]
        for flag in flags { if let value = arguments.value(flag) { flagValues[flag] = value } }
        let configuration: WorkerConfiguration
        do {
            configuration = try WorkerConfiguration.load(flags: flagValues, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw UsageError(error.description)
        }
        let keyLog: TLSKeyLog?
        do {
            keyLog = try configuration.tlsKeyLogFile.map { path throws(TLSConfigurationError) in try TLSKeyLog(path: path) }
        } catch {
            throw UsageError(error.description)
        }
        let senders: [any NotificationSender]
        do {
            senders = try SenderFactory.makeSenders(for: configuration.apps, keyLog: keyLog)
        } catch {
            throw UsageError(error.description)
        }
        let log = Log()
        if let keyLog {
            log.warning("tls_key_log", ["file": keyLog.path, "problem": "SSLKEYLOGFILE is set: the TLS secrets of every "
                + "APNs connection are written to this file, and whoever can read it can decrypt the traffic; "
                + "unset it once you are done debugging"])
        }
        warnAboutPermissions(of: configuration, log: log)
        // A reload reads the same flags and environment again; the file and the keys are what change.
        let reloading = ReloadingWorker(log: log) { [flagValues, workerID = configuration.workerID] in
            var configuration = try WorkerConfiguration.load(flags: flagValues, environment: ProcessInfo.processInfo.environment)
            configuration.workerID = workerID
            let senders = try SenderFactory.makeSenders(for: configuration.apps, keyLog: keyLog)
            warnAboutPermissions(of: configuration, log: log)
            return ReloadingWorker.Loaded(configuration: configuration, senders: senders)
        }
        let signals = SignalTrap(onFirst: { reloading.stop() }, onReload: { reloading.reload() })
        defer { withExtendedLifetime(signals) {} }
        let first = ReloadingWorker.Loaded(configuration: configuration, senders: senders)
        return try blockOn { try await reloading.run(first: first) } ? 0 : 1
    }

    private static func warnAboutPermissions(of configuration: WorkerConfiguration, log: Log) {
        for app in configuration.apps {
            for warning in CredentialFilePermissions.warnings(for: app) { log.warning("credential_file_permissions", ["app": app.name, "problem": warning]) }
        }
    }
}

/// SIGTERM/SIGINT: the first asks for a graceful stop, the second exits at once. SIGHUP,
/// when `onReload` is given: a reload.
final class SignalTrap {
    private let sources: [any DispatchSourceSignal]

    init(onFirst: @escaping @Sendable () -> Void, onReload: (@Sendable () -> Void)? = nil) {
        let received = Atomic<Int>(0)
        var reloads: [any DispatchSourceSignal] = []
        if let onReload {
            signal(SIGHUP, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
            source.setEventHandler { onReload() }
            source.resume()
            reloads.append(source)
        }
        sources = reloads + [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if received.add(1, ordering: .sequentiallyConsistent).newValue == 1 {
                    printError("pgpush: stopping (send the signal again to exit at once)")
                    onFirst()
                } else {
                    // At once: _exit skips the atexit handlers, among them OpenSSL's cleanup,
                    // which would race the I/O threads still sending.
                    _exit(1)
                }
            }
            source.resume()
            return source
        }
    }
}

/// Runs async work from the synchronous command layer and waits for it.
func blockOn(_ body: @escaping @Sendable () async throws -> Void) throws -> Bool {
    let outcome = Locked<Result<Void, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        do { try await body(); outcome.withLock { $0 = .success(()) } } catch { outcome.withLock { $0 = .failure(error) } }
        done.signal()
    }
    done.wait()
    try outcome.withLock { $0 }?.get()
    return true
}

