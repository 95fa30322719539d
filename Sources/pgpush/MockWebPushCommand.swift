import Foundation
import HTTP2TLS
import PushCrypto
import PushWorker
import WebPushSimulator

enum MockWebPushCommand {
    static let help = """
        pgpush mock-webpush — a Web Push service look-alike over TLS, for tests and trials

        Serves POST /push/<id> for the browser subscriptions it made: checks the VAPID token
        (ES256, aud = this origin, exp within 24 h, a mailto: or https: subject) against the key the
        subscription was made with, the TTL, Urgency and Topic headers, decrypts the aes128gcm body
        with the browser's keys and keeps the plaintext. Answers 201 with Location, or as push
        services refuse: 404/410 for a gone subscription, 403 for another VAPID key, 401 for a bad
        token, 400, 413. Speaks HTTP/2 or HTTP/1.1, as the client asks in ALPN. Prints one line when ready:
          mock-webpush listening on https://127.0.0.1:PORT (CA: PATH, subscriptions: PATH)
        SIGTERM/SIGINT write the report (--report) and exit 0; SIGUSR1 writes it and keeps running.

        Listening:
          --port N                  port to listen on (default 2199; 0 picks a free one)
          --ca-out PATH             where to copy the generated CA; point PGPUSH_CA_FILE at it
          --http1-only, --h2-only   speak only HTTP/1.1 (as Apple's service does unless asked for h2) or only HTTP/2

        The application server key and the subscriptions:
          --vapid-key FILE          the app's VAPID private key (PEM): subscriptions are made for its public half
          --vapid-key-out PATH      make a new key and write it there: point PGPUSH_VAPID_KEY_FILE at it (mode 600)
          --subscriptions N         make N browser subscriptions (default 1) ...
          --subscriptions-out PATH  ... and write them there, one PushSubscription.toJSON() a line, for
                                    pgpush enqueue --subscriptions-file
          --gone N                  the last N of them answer 410 Gone, as after the browser dropped them

        Faults:
          --fault-503-every N       every Nth push 503 (also --fault-429-every)
          --retry-after S           Retry-After on 503 and 429 (default 1)

        Output:
          --report FILE             JSON report: requests, deliveries, refusals by reason, the decrypted payloads

        Example:
          pgpush mock-webpush --vapid-key-out /tmp/vapid.pem --subscriptions 3 --subscriptions-out /tmp/subs.jsonl \\
              --ca-out /tmp/mock-webpush-ca.pem
          PGPUSH_VAPID_KEY_FILE=/tmp/vapid.pem PGPUSH_VAPID_SUBJECT=mailto:ops@example.com \\
              PGPUSH_WEBPUSH_ALLOWED_ORIGINS=https://127.0.0.1:2199 PGPUSH_CA_FILE=/tmp/mock-webpush-ca.pem pgpush run
          pgpush enqueue --subscriptions-file /tmp/subs.jsonl --alert "Hello, browser"
        """

    static let flags: Set<String> = [
        "help", "port", "ca-out", "http1-only", "h2-only", "vapid-key", "vapid-key-out", "subscriptions", "subscriptions-out",
        "gone", "fault-503-every", "fault-429-every", "retry-after", "report",
    ]
    static let switches: Set<String> = ["help", "http1-only", "h2-only"]

    static func run(_ arguments: Arguments) throws -> Int32 {
        let key: ES256PrivateKey
        switch (arguments.value("vapid-key"), arguments.value("vapid-key-out")) {
        case (let path?, nil):
            key = try ES256PrivateKey(contentsOfFile: path)
        case (nil, let path?):
            key = try ES256PrivateKey.generate()
            try key.writePKCS8(toFile: path)
            chmod(path, 0o600)
        default:
            throw UsageError("give --vapid-key FILE (the app's key) or --vapid-key-out PATH (make one), not both")
        }
        let protocols: ServerProtocols
        switch (arguments.isSet("http1-only"), arguments.isSet("h2-only")) {
        case (true, true): throw UsageError("--http1-only and --h2-only exclude each other")
        case (true, false): protocols = .http1
        case (false, true): protocols = .h2
        case (false, false): protocols = .h2AndHTTP1
        }
        var faults = WebPushSimulatorFaults()
        faults.unavailableEvery = try arguments.integer("fault-503-every", in: 1...Int.max)
        faults.throttleEvery = try arguments.integer("fault-429-every", in: 1...Int.max)
        faults.retryAfterSeconds = try arguments.integer("retry-after", in: 0...3600) ?? 1
        let count = try arguments.integer("subscriptions", in: 0...100_000) ?? 1
        let gone = try arguments.integer("gone", in: 0...count) ?? 0

        let simulator = WebPushSimulator(faults: faults, protocols: protocols)
        let port = try simulator.start(port: try arguments.integer("port", in: 0...65535) ?? 2199)
        guard var caPath = simulator.caCertificatePath, let origin = simulator.origin else {
            throw UsageError("the simulator did not start")
        }
        if let copy = arguments.value("ca-out") {
            try Data(contentsOf: URL(fileURLWithPath: caPath)).write(to: URL(fileURLWithPath: copy))
            caPath = copy
        }
        let applicationServerKey = try key.uncompressedPublicKey()
        var lines: [String] = []
        for index in 0..<count {
            let subscription = try simulator.mint(applicationServerKey: applicationServerKey)
            if index >= count - gone { simulator.drop(subscription) }
            lines.append(subscription.json(origin: origin))
        }
        let subscriptionsPath = arguments.value("subscriptions-out") ?? ""
        if !subscriptionsPath.isEmpty {
            guard FileManager.default.createFile(atPath: subscriptionsPath, contents: Data(lines.map { $0 + "\n" }.joined().utf8)) else {
                throw UsageError("cannot write --subscriptions-out \(subscriptionsPath)")
            }
        }
        StandardStreams.writeOutput("mock-webpush listening on https://127.0.0.1:\(port) (CA: \(caPath), subscriptions: \(subscriptionsPath))\n")

        let reportPath = arguments.value("report")
        StopSignals.wait(label: "mock-webpush.signals") { writeReport(simulator.report(), to: reportPath, command: "mock-webpush") }
        simulator.stop()
        writeReport(simulator.report(), to: reportPath, command: "mock-webpush")
        return 0
    }


}
