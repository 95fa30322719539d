import APNsCore
import APNsSimulator
import Foundation
import PGPushCore
import PushCrypto
import PushWorker

enum MockAPNsCommand {
    static let help = """
        pgpush mock-apns — an APNs look-alike over TLS + HTTP/2, for tests and trials

        Checks provider tokens (ES256 signature, kid, iss, iat age, one new token per 20 min per
        connection), every apns-* header, token format and payload size per push type, and answers
        with APNs' statuses and JSON reasons. Prints one line when ready:
          mock-apns listening on https://127.0.0.1:PORT (CA: PATH)
        SIGTERM/SIGINT write the report (--report) and exit 0; SIGUSR1 writes it and keeps running.

        Listening:
          --port N               port to listen on (default 2197; 0 picks a free one)
          --host ADDRESS         address to bind (default 127.0.0.1)
          --cert FILE --key FILE server certificate chain and key (PEM); otherwise a CA and a
                                 localhost certificate are generated at start-up
          --ca-out PATH          where to write the generated CA (default: a temporary file);
                                 point PGPUSH_CA_FILE at it
          --max-streams N        SETTINGS_MAX_CONCURRENT_STREAMS after the first valid JWT (default 1000;
                                 token connections start at 1, as APNs does)
          --environment E        development (default: adds apns-unique-id) or production

        Authentication (token auth unless --certificate-auth):
          --team-id T --key-id K the expected iss and kid
          --public-key FILE      PEM public key to verify JWTs, or
          --p8 FILE              the .p8 private key (only its public half is used)
          --certificate-auth     require TLS client certificates instead; the topic is the certificate's
                                 UID (or CN)
          --client-ca FILE       with --certificate-auth: accept only certificates issued by this CA
          --bundle-id B          topics must be B plus the push type's suffix (default: any topic)
          --channels LIST        broadcast channels that exist from the start: comma-separated base64
                                 ids (storage policy 1); more come with the management API
                                 (POST /1/apps/<bundle id>/channels), served on the same port

        Faults (counts per connection unless said otherwise; random choices follow --seed):
          --faults FILE.json     a fault plan (see the APNsSimulator FaultPlan docs); flags below add to it
          --fault-503 P          answer 503 ServiceUnavailable with probability P (also --fault-500, --fault-429)
          --fault-mix LIST       e.g. "503=0.05,TooManyRequests=0.02,refuse=0.01"
          --unregistered LIST    comma-separated tokens answered 410 Unregistered with a timestamp
          --script LIST          per-token answers, e.g. "TOKEN=503,503,200;OTHER=TooManyRequests"
          --latency-ms N         delay every answer by N ms (--latency-jitter-ms N adds 0…N at random)
          --goaway-after N       GOAWAY (reason Shutdown) after N requests on a connection
          --drop-after N         close a connection without answering its request N+1
          --refuse-probability P RST_STREAM REFUSED_STREAM with probability P
          --refuse-every N       refuse every Nth request on a connection
          --goaway-before-first-stream REASON
                                 answer the first request of every connection with GOAWAY
                                 (last_stream_id 0, NO_ERROR, {"reason":"REASON"}) and close it,
                                 e.g. BadCertificateEnvironment
          --topic-answer TOPIC=ANSWER
                                 answer every request whose apns-topic is TOPIC with ANSWER (a status,
                                 a reason, refuse or drop) once its credentials pass; repeatable
          --stale-provider-tokens-after N
                                 after N requests in total (all connections), every JWT accepted so
                                 far is refused 403 ExpiredProviderToken for good; newer JWTs are not
          --expire-every-provider-token
                                 refuse every validly signed JWT 403 ExpiredProviderToken, however new
          --seed N               seed for the random choices (default 0)

        Output:
          --log FILE             JSON lines, one per request (never the authorization header)
          --report FILE          JSON report: counts by status and reason, requests per connection,
                                 most requests per connection in one second, duplicate apns-ids,
                                 connections opened, GOAWAYs sent and their reasons

        Examples:
          pgpush mock-apns --port 2197 --team-id TEAM123456 --key-id KEY1234567 --p8 AuthKey.p8 \\
              --bundle-id com.example.app --ca-out /tmp/mock-ca.pem
          PGPUSH_APNS_URL=https://127.0.0.1:2197 PGPUSH_CA_FILE=/tmp/mock-ca.pem pgpush run
          pgpush mock-apns --port 0 --p8 key.p8 --team-id T --key-id K --fault-503 0.05 --fault-429 0.02 \\
              --seed 7 --goaway-after 1000 --report /tmp/report.json
        """

    static let flags: Set<String> = [
        "help", "port", "host", "cert", "key", "ca-out", "max-streams", "environment", "team-id", "key-id",
        "public-key", "p8", "certificate-auth", "client-ca", "bundle-id", "channels", "faults", "fault-503", "fault-500",
        "fault-429", "fault-mix", "unregistered", "script", "latency-ms", "latency-jitter-ms", "goaway-after",
        "drop-after", "refuse-probability", "refuse-every", "seed", "log", "report", "goaway-before-first-stream",
        "topic-answer", "stale-provider-tokens-after", "expire-every-provider-token",
    ]
    static let switches: Set<String> = ["help", "certificate-auth", "expire-every-provider-token"]

    static func run(_ arguments: Arguments) throws -> Int32 {
        let configuration = try makeConfiguration(arguments)
        let reportPath = arguments.value("report")

        let simulator = try APNsSimulator(configuration: configuration)
        let port = try simulator.start()
        let address = simulator.baseURL ?? "https://\(configuration.host):\(port)"
        let trust = simulator.caCertificatePath.map { "CA: \($0)" } ?? "certificate: \(arguments.value("cert") ?? "")"
        StandardStreams.writeOutput("mock-apns listening on \(address) (\(trust))\n")

        StopSignals.wait(label: "mock-apns.signals") { writeReport(simulator, to: reportPath) }
        // The final report is written after the server has stopped.
        simulator.stop()
        writeReport(simulator, to: reportPath)
        return 0
    }

    private static func writeReport(_ simulator: APNsSimulator, to path: String?) {
        guard let path else { return }
        do { try simulator.writeReport(toFile: path) } catch { printError("pgpush mock-apns: \(error)") }
    }

    static func makeConfiguration(_ arguments: Arguments) throws -> SimulatorConfiguration {
        let authentication: SimulatorConfiguration.Authentication
        if arguments.isSet("certificate-auth") {
            authentication = .certificate(trustedCAFile: arguments.value("client-ca"))
        } else {
            guard let teamID = arguments.value("team-id"), let keyID = arguments.value("key-id") else {
                throw UsageError("token authentication needs --team-id and --key-id (or use --certificate-auth)")
            }
            let publicKey: ES256PublicKey
            if let path = arguments.value("public-key") {
                publicKey = try ES256PublicKey(contentsOfFile: path)
            } else if let path = arguments.value("p8") {
                publicKey = try ES256PublicKey.fromPrivateKeyFile(path)
            } else {
                throw UsageError("token authentication needs --public-key FILE or --p8 FILE")
            }
            authentication = .token(ProviderTokenKey(teamID: teamID, keyID: keyID, publicKey: publicKey))
        }
        var configuration = SimulatorConfiguration(authentication: authentication)
        configuration.host = arguments.value("host") ?? "127.0.0.1"
        configuration.port = try arguments.integer("port", in: 0...65535) ?? 2197
        switch (arguments.value("cert"), arguments.value("key")) {
        case (let certificate?, let key?):
            configuration.serverCertificate = .files(certificateChain: certificate, privateKey: key)
        case (nil, nil):
            configuration.serverCertificate = .generated(caOutputPath: arguments.value("ca-out"))
        default:
            throw UsageError("--cert and --key go together")
        }
        configuration.maxConcurrentStreams = try arguments.integer("max-streams", in: 1...Int(Int32.max)) ?? 1000
        if let text = arguments.value("environment") {
            guard let environment = APNsEnvironment(rawValue: text) else {
                throw UsageError("--environment must be development or production")
            }
            configuration.environment = environment
        }
        configuration.bundleID = arguments.value("bundle-id")
        for id in arguments.value("channels")?.split(separator: ",") ?? [] {
            let trimmed = id.trimmingCharacters(in: .whitespaces)
            guard let decoded = Data(base64Encoded: trimmed), !decoded.isEmpty else {
                throw UsageError("--channels takes base64 channel ids, got \"\(trimmed)\"")
            }
            configuration.channels[trimmed] = 1
        }
        configuration.logPath = arguments.value("log")
        configuration.faults = try makeFaults(arguments)
        return configuration
    }

    static func makeFaults(_ arguments: Arguments) throws -> FaultPlan {
        do { return try parseFaults(arguments) } catch let error as FaultPlanError { throw UsageError(error.description) }
    }

    private static func parseFaults(_ arguments: Arguments) throws -> FaultPlan {
        var plan = try arguments.value("faults").map { try FaultPlan.load(path: $0) } ?? FaultPlan()
        if let seed = arguments.value("seed") {
            guard let value = UInt64(seed) else { throw UsageError("--seed must be a non-negative integer") }
            plan.seed = value
        }
        var mix: [(String, Double)] = []
        for status in ["503", "500", "429"] {
            if let probability = try probability(arguments, "fault-\(status)") { mix.append((status, probability)) }
        }
        if let text = arguments.value("fault-mix") {
            for item in text.split(separator: ",") {
                let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2, let value = Double(parts[1]) else {
                    throw UsageError("--fault-mix items look like 503=0.05, got \"\(item)\"")
                }
                mix.append((parts[0], value))
            }
        }
        for (answer, value) in mix {
            plan.statusMix.append(FaultPlan.MixEntry(answer: try ScriptedAnswer(parsing: answer), probability: value))
        }
        if let tokens = arguments.value("unregistered") {
            plan.unregisteredTokens.formUnion(tokens.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
        }
        if let text = arguments.value("script") {
            for item in text.split(separator: ";") {
                let parts = item.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { throw UsageError("--script items look like TOKEN=503,503,200, got \"\(item)\"") }
                let answers = try parts[1].split(separator: ",").map { try ScriptedAnswer(parsing: String($0)) }
                plan.scripts[parts[0].trimmingCharacters(in: .whitespaces).lowercased(), default: []] += answers
            }
        }
        if let value = try arguments.integer("latency-ms", in: 0...600_000) { plan.latencyMilliseconds = value }
        if let value = try arguments.integer("latency-jitter-ms", in: 0...600_000) { plan.latencyJitterMilliseconds = value }
        if let value = try arguments.integer("goaway-after", in: 1...Int.max) { plan.goAwayAfterStreams = value }
        if let value = try arguments.integer("drop-after", in: 1...Int.max) { plan.dropAfterStreams = value }
        if let value = try probability(arguments, "refuse-probability") { plan.refuseProbability = value }
        if let value = try arguments.integer("refuse-every", in: 1...Int.max) { plan.refuseEveryNth = value }
        if let reason = arguments.value("goaway-before-first-stream") { plan.goAwayBeforeFirstStream = reason }
        for item in arguments.values("topic-answer") {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty else {
                throw UsageError("--topic-answer looks like com.example.app.voip=TopicDisallowed, got \"\(item)\"")
            }
            plan.topicAnswers[parts[0]] = try ScriptedAnswer(parsing: parts[1])
        }
        if let value = try arguments.integer("stale-provider-tokens-after", in: 1...Int.max) {
            plan.staleProviderTokensAfterRequests = value
        }
        if arguments.isSet("expire-every-provider-token") { plan.expireEveryProviderToken = true }
        try plan.validate()
        return plan
    }


    private static func probability(_ arguments: Arguments, _ name: String) throws(UsageError) -> Double? {
        guard let text = arguments.value(name) else { return nil }
        guard let value = Double(text), (0...1).contains(value) else {
            throw UsageError("--\(name) must be a probability between 0 and 1, got \"\(text)\"")
        }
        return value
    }
}
