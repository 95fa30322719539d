import FCMClient
import FCMSimulator
import Foundation
import PushCrypto
import PushWorker

enum MockFCMCommand {
    static let help = """
        pgpush mock-fcm — an FCM HTTP v1 look-alike over TLS + HTTP/2, for tests and trials

        Serves Google's token endpoint (POST /token: checks the service account's RS256 assertion,
        issues access tokens) and POST /v1/projects/<project>/messages:send (checks the access token,
        the message, its target, data values and blocks), answering with Google's error bodies.
        Prints one line when ready:
          mock-fcm listening on https://127.0.0.1:PORT (CA: PATH, credentials: PATH)
        SIGTERM/SIGINT write the report (--report) and exit 0; SIGUSR1 writes it and keeps running.

        Listening:
          --port N                  port to listen on (default 2198; 0 picks a free one)
          --host ADDRESS            address to bind (default 127.0.0.1)
          --ca-out PATH             where to copy the generated CA; point PGPUSH_CA_FILE at it

        The service account (one of):
          --credentials FILE        trust this service-account key file (its key, email, key id, project)
          --credentials-out PATH    make a new key and write a service-account file there whose token_uri
                                    is this simulator: point PGPUSH_FCM_CREDENTIALS_FILE at it (mode 600)
          --project ID              with --credentials-out: the project id (default pgpush-demo)

        Faults:
          --unregistered LIST       comma-separated tokens answered 404 UNREGISTERED
          --invalid LIST            tokens answered 400 INVALID_ARGUMENT about message.token
          --sender-id-mismatch LIST tokens answered 403 SENDER_ID_MISMATCH
          --third-party-auth-error LIST
                                    tokens answered 401 THIRD_PARTY_AUTH_ERROR
          --fault-503-every N       every Nth send 503 UNAVAILABLE (also --fault-500-every, --fault-429-every)
          --retry-after S           Retry-After on 503 and 429 (default 1)
          --refuse-assertions       the token endpoint refuses every assertion (invalid_grant)
          --refuse-access-tokens    every access token is refused with 401 UNAUTHENTICATED
          --revoke-first-access-token  the first access token issued is refused (401), later ones not
          --permission-denied       every send is refused with 403 PERMISSION_DENIED

        Output:
          --report FILE             JSON report: token requests and tokens issued, sends, deliveries,
                                    errors by code, the delivered messages

        Example:
          pgpush mock-fcm --port 2198 --credentials-out /tmp/fcm.json --ca-out /tmp/mock-fcm-ca.pem
          PGPUSH_FCM_CREDENTIALS_FILE=/tmp/fcm.json PGPUSH_FCM_URL=https://127.0.0.1:2198 \\
              PGPUSH_CA_FILE=/tmp/mock-fcm-ca.pem pgpush run
        """

    static let flags: Set<String> = [
        "help", "port", "host", "ca-out", "credentials", "credentials-out", "project", "unregistered", "invalid",
        "sender-id-mismatch", "third-party-auth-error", "fault-503-every", "fault-500-every", "fault-429-every",
        "retry-after", "refuse-assertions", "refuse-access-tokens", "revoke-first-access-token", "permission-denied", "report",
    ]
    static let switches: Set<String> = ["help", "refuse-assertions", "refuse-access-tokens", "revoke-first-access-token",
                                        "permission-denied"]

    static func run(_ arguments: Arguments) throws -> Int32 {
        let account: (key: RS256PrivateKey, projectID: String, email: String, keyID: String)
        switch (arguments.value("credentials"), arguments.value("credentials-out")) {
        case (let path?, nil):
            let file = try ServiceAccountKey(contentsOfFile: path)
            account = (file.privateKey, file.projectID, file.clientEmail, file.privateKeyID)
        case (nil, _?):
            let project = arguments.value("project") ?? "pgpush-demo"
            account = (try RS256PrivateKey.generate(), project, "pgpush@\(project).iam.gserviceaccount.com",
                       String(UUID().uuidString.lowercased().filter { $0 != "-" }))
        default:
            throw UsageError("give --credentials FILE (a key file to trust) or --credentials-out PATH (make one), not both")
        }
        var configuration = FCMSimulatorConfiguration(projectID: account.projectID, clientEmail: account.email,
                                                      privateKeyID: account.keyID, publicKey: try account.key.publicKey())
        configuration.host = arguments.value("host") ?? "127.0.0.1"
        configuration.port = try arguments.integer("port", in: 0...65535) ?? 2198
        let fates: [(String, FCMSimulatorConfiguration.TokenFate)] = [
            ("unregistered", .unregistered), ("invalid", .invalid), ("sender-id-mismatch", .senderIDMismatch),
            ("third-party-auth-error", .thirdPartyAuthError),
        ]
        for (flag, fate) in fates {
            for token in arguments.value(flag)?.split(separator: ",") ?? [] {
                configuration.tokenFates[token.trimmingCharacters(in: .whitespaces)] = fate
            }
        }
        configuration.faults.unavailableEvery = try arguments.integer("fault-503-every", in: 1...Int.max)
        configuration.faults.internalErrorEvery = try arguments.integer("fault-500-every", in: 1...Int.max)
        configuration.faults.quotaExceededEvery = try arguments.integer("fault-429-every", in: 1...Int.max)
        configuration.faults.retryAfterSeconds = try arguments.integer("retry-after", in: 0...3600) ?? 1
        configuration.faults.refuseAssertions = arguments.isSet("refuse-assertions")
        configuration.faults.refuseAccessTokens = arguments.isSet("refuse-access-tokens")
        configuration.faults.revokeFirstAccessToken = arguments.isSet("revoke-first-access-token")
        configuration.faults.permissionDenied = arguments.isSet("permission-denied")

        let simulator = FCMSimulator(configuration: configuration)
        let port = try simulator.start()
        let address = "https://\(configuration.host):\(port)"
        guard var caPath = simulator.caCertificatePath else { throw UsageError("the simulator did not start") }
        if let copy = arguments.value("ca-out") {
            try Data(contentsOf: URL(fileURLWithPath: caPath)).write(to: URL(fileURLWithPath: copy))
            caPath = copy
        }
        var credentials = arguments.value("credentials") ?? ""
        if let path = arguments.value("credentials-out") {
            try writeServiceAccount(account.key, projectID: account.projectID, email: account.email, keyID: account.keyID,
                                    tokenURI: "\(address)/token", to: path)
            credentials = path
        }
        StandardStreams.writeOutput("mock-fcm listening on \(address) (CA: \(caPath), credentials: \(credentials))\n")

        let reportPath = arguments.value("report")
        StopSignals.wait(label: "mock-fcm.signals") { writeReport(simulator.report(), to: reportPath, command: "mock-fcm") }
        simulator.stop()
        writeReport(simulator.report(), to: reportPath, command: "mock-fcm")
        return 0
    }

    /// A service-account key file as Google issues them, for a key this simulator trusts.
    static func writeServiceAccount(_ key: RS256PrivateKey, projectID: String, email: String, keyID: String, tokenURI: String,
                                    to path: String) throws {
        let fields: [String: String] = [
            "type": "service_account", "project_id": projectID, "private_key_id": keyID, "private_key": try key.pkcs8PEM(),
            "client_email": email, "client_id": "0", "token_uri": tokenURI,
        ]
        let data = try JSONSerialization.data(withJSONObject: fields, options: [.prettyPrinted, .sortedKeys])
        guard FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw UsageError("cannot write --credentials-out \(path)")
        }
    }


}
