import APNsSimulator
import EmbeddedPostgres
import Foundation
import PGPushTestSupport
import PushCrypto
import Testing

/// `pgpush doctor` asking APNs (here the simulator, which checks JWTs against the key it
/// was given) whether the app's credentials and topic are good, as the real binary does it.
@Suite(.enabled(if: ChildProcess.pgpushBinary != nil, "the pgpush binary is built by `swift build` before the tests"))
struct DoctorTests {
    let binary = ChildProcess.pgpushBinary ?? "pgpush"

    /// The made-up device token doctor sends (documented in `pgpush doctor --help`).
    static let madeUpToken = String(repeating: "0", count: 56) + "d0c7d0c7"

    func doctor(_ extra: [String] = [], _ simulated: CommandLineTests.Simulated,
                overriding: [String: String] = [:]) async throws -> (code: Int32?, output: String) {
        // A key readable by others is only a warning, but keep the output about APNs.
        chmod(simulated.environment["PGPUSH_KEY_FILE"] ?? "", 0o600)
        let child = try ChildProcess(binary, ["doctor"] + extra,
                                     environment: simulated.environment.merging(overriding) { $1 })
        let code = await child.wait(timeout: .seconds(180))
        return (code, child.output)
    }

    /// A p8 key the simulator was never told about: what a key of another team looks like to APNs.
    static func foreignKey(in directory: URL) throws -> String {
        let path = directory.appendingPathComponent("OtherTeamAuthKey.p8").path
        try ES256PrivateKey.generate().writePKCS8(toFile: path)
        chmod(path, 0o600)
        return path
    }

    /// Neither the JWT (base64url JSON, so it starts with "eyJ") nor the key may be printed.
    static func expectNoSecrets(_ output: String) {
        #expect(!output.contains("eyJ"), "a JWT in the output: \(output)")
        #expect(!output.lowercased().contains("bearer"), "an authorization header in the output: \(output)")
        #expect(!output.contains("PRIVATE KEY"), "key material in the output: \(output)")
    }

    @Test func theRightKeyIsAcceptedByAPNs() async throws {
        let simulated = try CommandLineTests.Simulated(conninfo: try TestDatabase.migrated())
        defer { simulated.stop() }
        let result = try await doctor([], simulated)
        #expect(result.code == 0, "\(result.output)")
        #expect(result.output.contains("✔ app default: APNs credentials: APNs accepted the credentials for topic com.example.app"),
                "\(result.output)")
        #expect(!result.output.contains("✘"), "\(result.output)")
        Self.expectNoSecrets(result.output)
        // One request, to the made-up token, and nothing else.
        #expect(simulated.simulator.report().totalRequests == 1)
    }

    /// What the real APNs answers a made-up token when the credentials are good.
    @Test func badDeviceTokenForTheMadeUpTokenMeansTheCredentialsAreGood() async throws {
        var faults = FaultPlan()
        faults.scripts = [Self.madeUpToken: [try ScriptedAnswer(parsing: "BadDeviceToken")]]
        let simulated = try CommandLineTests.Simulated(conninfo: try TestDatabase.migrated(), faults: faults)
        defer { simulated.stop() }
        let result = try await doctor(["--check-apns"], simulated)
        #expect(result.code == 0, "\(result.output)")
        #expect(result.output.contains("✔ app default: APNs credentials: APNs accepted the credentials for topic com.example.app"),
                "\(result.output)")
        #expect(result.output.contains("refused as BadDeviceToken, as expected"), "\(result.output)")
        Self.expectNoSecrets(result.output)
    }

    /// The defect this check exists for: a key APNs does not know (another team's, or a
    /// revoked one) used to pass doctor, because a TLS + HTTP/2 handshake needs no JWT.
    @Test func aKeyAPNsDoesNotKnowFailsNamingInvalidProviderToken() async throws {
        let simulated = try CommandLineTests.Simulated(conninfo: try TestDatabase.migrated())
        defer { simulated.stop() }
        let result = try await doctor([], simulated, overriding: ["PGPUSH_KEY_FILE": try Self.foreignKey(in: simulated.directory)])
        #expect(result.code == 1, "\(result.output)")
        #expect(result.output.contains("✘ app default: APNs credentials"), "\(result.output)")
        #expect(result.output.contains("InvalidProviderToken"), "\(result.output)")
        #expect(result.output.contains("KEY1234567") && result.output.contains("TEAM123456"), "\(result.output)")
        // The handshake still succeeds: it is the answer that tells.
        #expect(result.output.contains("✔ app default: APNs: TLS + HTTP/2"), "\(result.output)")
        Self.expectNoSecrets(result.output)
    }

    @Test func aTopicTheCredentialsDoNotCoverIsNamed() async throws {
        let simulated = try CommandLineTests.Simulated(conninfo: try TestDatabase.migrated())
        defer { simulated.stop() }
        let result = try await doctor([], simulated, overriding: ["PGPUSH_TOPIC": "com.example.other"])
        #expect(result.code == 1, "\(result.output)")
        #expect(result.output.contains("✘ app default: APNs credentials"), "\(result.output)")
        #expect(result.output.contains("com.example.other"), "\(result.output)")
        Self.expectNoSecrets(result.output)
    }

    /// What the worker logs when it cannot connect, doctor prints: the endpoint, the cause
    /// and OpenSSL's reason, with the certificate's subject and expiry.
    @Test func anExpiredServerCertificateIsNamedWithItsExpiry() async throws {
        let simulated = try CommandLineTests.Simulated(conninfo: try TestDatabase.migrated())
        defer { simulated.stop() }
        let expired = try ServerCertificateFiles.expired(in: simulated.directory)
        let (caFile, chainFile, keyFile) = (expired.caFile, expired.chainFile, expired.keyFile)
        let notAfter = expired.validity.notAfter
        var configuration = SimulatorConfiguration(authentication: .token(ProviderTokenKey(
            teamID: simulated.harness.teamID, keyID: simulated.harness.keyID, publicKey: try simulated.harness.key.publicKey())))
        configuration.serverCertificate = .files(certificateChain: chainFile, privateKey: keyFile)
        let server = try APNsSimulator(configuration: configuration)
        let port = try server.start()
        defer { server.stop() }
        let result = try await doctor([], simulated, overriding: ["PGPUSH_APNS_URL": "https://127.0.0.1:\(port)",
                                                                  "PGPUSH_CA_FILE": caFile])
        #expect(result.code == 1, "\(result.output)")
        #expect(result.output.contains("✘ app default: APNs: cannot connect to 127.0.0.1:\(port) (tls_certificate): "),
                "\(result.output)")
        #expect(result.output.contains("certificate has expired (server certificate CN=expired.test, valid "), "\(result.output)")
        #expect(result.output.contains(" to \(notAfter.formatted(.iso8601)))"), "\(result.output)")
        #expect(server.report().totalRequests == 0)
        Self.expectNoSecrets(result.output)
    }

    @Test func noCheckAPNsSendsNothing() async throws {
        let simulated = try CommandLineTests.Simulated(conninfo: try TestDatabase.migrated())
        defer { simulated.stop() }
        // Even a key APNs would refuse passes: nothing is asked.
        let result = try await doctor(["--no-check-apns"], simulated,
                                      overriding: ["PGPUSH_KEY_FILE": try Self.foreignKey(in: simulated.directory)])
        #expect(result.code == 0, "\(result.output)")
        #expect(result.output.contains("✔ app default: APNs: TLS + HTTP/2"), "\(result.output)")
        #expect(result.output.contains("not asked (--no-check-apns)"), "\(result.output)")
        #expect(!result.output.contains("InvalidProviderToken"), "\(result.output)")
        #expect(simulated.simulator.report().totalRequests == 0)
        Self.expectNoSecrets(result.output)

        let both = try await doctor(["--check-apns", "--no-check-apns"], simulated)
        #expect(both.code == 2, "\(both.output)")
    }

    /// Behind PgBouncer in transaction pooling mode, doctor says so, says that wake-ups do
    /// not arrive through it and what to set; with a direct listen connection, that they do.
    @Test(.enabled(if: EmbeddedPgBouncer.isInstalled || ProcessInfo.processInfo.environment["CI"] == "true",
                   "skipped: pgbouncer is not installed"))
    func aTransactionPoolerIsNamedWithWhatWorksThroughIt() async throws {
        let (pooled, direct) = try TestDatabase.migratedBehindPooler()
        let simulated = try CommandLineTests.Simulated(conninfo: pooled)
        defer { simulated.stop() }
        let polled = try await doctor(["--no-check-apns"], simulated)
        #expect(polled.code == 0, "\(polled.output)")
        #expect(polled.output.contains("✔ connection pooling: DATABASE_URL goes through a transaction pooler"), "\(polled.output)")
        #expect(polled.output.contains("⚠ wake-ups: a NOTIFY did not reach a LISTEN through DATABASE_URL")
                && polled.output.contains("set PGPUSH_LISTEN_DATABASE_URL"), "\(polled.output)")

        let woken = try await doctor(["--no-check-apns"], simulated, overriding: ["PGPUSH_LISTEN_DATABASE_URL": direct])
        #expect(woken.code == 0, "\(woken.output)")
        #expect(woken.output.contains("✔ wake-ups: a NOTIFY reaches a LISTEN through PGPUSH_LISTEN_DATABASE_URL"), "\(woken.output)")

        // Straight to PostgreSQL: no pooler to speak of, and wake-ups arrive.
        let plain = try await doctor(["--no-check-apns"], simulated, overriding: ["DATABASE_URL": direct])
        #expect(!plain.output.contains("connection pooling"), "\(plain.output)")
        #expect(plain.output.contains("✔ wake-ups: a NOTIFY reaches a LISTEN through DATABASE_URL"), "\(plain.output)")
    }
}
