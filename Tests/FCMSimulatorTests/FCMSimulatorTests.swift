import FCMClient
import FCMSimulator
import Foundation
import HTTP2TLS
import PGPushTestSupport
import PushCrypto
import Testing

/// A running simulator, a service account it trusts (key file on disk, `token_uri` at the
/// simulator) and an HTTP/2 connection to it.
struct FCMFixture {
    let simulator: FCMSimulator
    let account: ServiceAccountKey
    let client: HTTP2Client
    let connection: HTTP2ClientConnection
    let key: RS256PrivateKey

    static let project = "example-project"
    static let email = "pgpush-sender@example-project.iam.gserviceaccount.com"
    static let keyID = "4b1d0c3f5e6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c"

    init(_ adjust: (inout FCMSimulatorConfiguration) -> Void = { _ in }) async throws {
        key = try RS256PrivateKey.generate()
        var configuration = FCMSimulatorConfiguration(projectID: Self.project, clientEmail: Self.email,
                                                      privateKeyID: Self.keyID, publicKey: try key.publicKey())
        adjust(&configuration)
        simulator = FCMSimulator(configuration: configuration)
        let port = try simulator.start()
        account = try Self.account(signedBy: key, tokenURI: "https://127.0.0.1:\(port)/token")
        client = try HTTP2Client(threadName: "fcm-test")
        let caFile = try #require(simulator.caCertificatePath)
        connection = try await client.connect(host: "127.0.0.1", port: port,
                                              configuration: HTTP2ClientConfiguration(tls: try ClientTLSContext(extraCAFile: caFile)))
    }

    static func account(signedBy key: RS256PrivateKey, tokenURI: String, email: String = email) throws -> ServiceAccountKey {
        let fields: [String: Any] = [
            "type": "service_account", "project_id": project, "private_key_id": keyID, "private_key": try key.pkcs8PEM(),
            "client_email": email, "token_uri": tokenURI,
        ]
        return try ServiceAccountKey(json: Array(try JSONSerialization.data(withJSONObject: fields)), source: "account.json")
    }

    func exchange(_ account: ServiceAccountKey? = nil, issuedAt: Date = Date()) async throws -> TokenExchangeAnswer {
        let assertion = try ServiceAccountAssertion.sign(account ?? self.account, issuedAt: issuedAt)
        let response = try await connection.send(HTTP2Request(
            path: "/token", headers: [HeaderField("content-type", "application/x-www-form-urlencoded")],
            body: ServiceAccountAssertion.tokenRequestBody(assertion: assertion)))
        return TokenExchangeAnswer.decide(status: response.status, body: response.body, receivedAt: Date())
    }

    func accessToken() async throws -> String {
        guard case .issued(let token) = try await exchange() else { throw TestSetupError("no access token") }
        return token.value
    }

    func send(_ message: FCMMessage, bearer: String) async throws -> HTTP2Response {
        try await connection.send(HTTP2Request(
            path: FCMMessage.path(project: Self.project),
            headers: [HeaderField("content-type", "application/json"), HeaderField("authorization", "Bearer \(bearer)", neverIndex: true)],
            body: message.body))
    }

    func stop() {
        client.shutdown()
        simulator.stop()
    }
}

func tokenMessage(_ token: String, payload: String = #"{"notification":{"title":"Hi"},"data":{"k":"v"}}"#) throws -> FCMMessage {
    try FCMMessage(target: .token(token), payload: Array(payload.utf8), priority: 10, timeToLive: 60, deliverOnce: false, collapseID: nil)
}

@Suite("FCM simulator over TLS + HTTP/2: the token endpoint and messages:send")
struct FCMSimulatorTests {
    @Test("a signed assertion buys an access token, and a message sent with it is accepted with its name")
    func tokenThenSend() async throws {
        let fixture = try await FCMFixture()
        defer { fixture.stop() }
        let token = try await fixture.accessToken()
        let response = try await fixture.send(try tokenMessage("device-1"), bearer: token)
        #expect(response.status == 200)
        let name = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: String]
        #expect(name?["name"]?.hasPrefix("projects/example-project/messages/") == true)
        let report = fixture.simulator.report()
        #expect(report.tokensIssued == 1)
        #expect(report.delivered == 1)
        let delivered = try #require(report.deliveredMessages.first)
        #expect(delivered.contains(#""token":"device-1""#))
        #expect(delivered.contains(#""android":{"priority":"HIGH","ttl":"60s"}"#))
    }

    @Test("assertions that are not the account's, are stale or claim another audience are refused with invalid_grant")
    func refusedAssertions() async throws {
        let fixture = try await FCMFixture()
        defer { fixture.stop() }
        let tokenURI = fixture.account.tokenURI.absoluteString
        let stranger = try FCMFixture.account(signedBy: try RS256PrivateKey.generate(), tokenURI: tokenURI)
        let otherEmail = try FCMFixture.account(signedBy: fixture.key, tokenURI: tokenURI, email: "someone@else.example")
        for (account, issued) in [(stranger, Date()), (otherEmail, Date()), (fixture.account, Date() - 7200)] {
            let answer = try await fixture.exchange(account, issuedAt: issued)
            guard case .refused(let reason) = answer else {
                Issue.record("not refused: \(answer)")
                continue
            }
            #expect(reason.contains("invalid_grant"))
        }
        #expect(fixture.simulator.report().assertionsRefused == 3)
        #expect(fixture.simulator.report().tokensIssued == 0)
    }

    @Test("each registration token fate answers with Google's error body, which the client reads")
    func tokenFates() async throws {
        let fixture = try await FCMFixture { configuration in
            configuration.tokenFates = ["gone": .unregistered, "junk": .invalid, "foreign": .senderIDMismatch, "ios": .thirdPartyAuthError]
        }
        defer { fixture.stop() }
        let token = try await fixture.accessToken()
        let expected: [(String, Int, String)] = [("gone", 404, "UNREGISTERED"), ("junk", 400, "INVALID_ARGUMENT"),
                                                 ("foreign", 403, "SENDER_ID_MISMATCH"), ("ios", 401, "THIRD_PARTY_AUTH_ERROR")]
        for (device, status, reason) in expected {
            let response = try await fixture.send(try tokenMessage(device), bearer: token)
            #expect(response.status == status)
            let body = FCMErrorBody.parse(response.body)
            #expect(body?.reason == reason)
            #expect(body?.concernsToken == (device == "junk"))
        }
        // An INVALID_ARGUMENT about the message, not the token.
        let response = try await fixture.connection.send(HTTP2Request(
            path: FCMMessage.path(project: FCMFixture.project), headers: [HeaderField("authorization", "Bearer \(token)")],
            body: Array(#"{"message":{"token":"ok","data":{"n":42}}}"#.utf8)))
        #expect(response.status == 400)
        #expect(FCMErrorBody.parse(response.body)?.concernsToken == false)
        #expect(FCMErrorBody.parse(response.body)?.fieldViolations == ["message.data[0].value"])
    }

    @Test("a bearer the simulator never issued is refused 401 without an FcmError, as Google's front end does")
    func unknownBearer() async throws {
        let fixture = try await FCMFixture()
        defer { fixture.stop() }
        let response = try await fixture.send(try tokenMessage("device-1"), bearer: "ya29.made-up")
        #expect(response.status == 401)
        let body = FCMErrorBody.parse(response.body)
        #expect(body?.reason == "UNAUTHENTICATED")
        #expect(body?.errorCode == nil)
        #expect(response.headers.contains { $0.name == "www-authenticate" })
    }

    @Test("injected faults: 503 and 429 with Retry-After, 500, refused tokens, the API not enabled")
    func faults() async throws {
        let busy = try await FCMFixture { $0.faults.unavailableEvery = 2; $0.faults.quotaExceededEvery = 3; $0.faults.retryAfterSeconds = 7 }
        defer { busy.stop() }
        let token = try await busy.accessToken()
        var statuses: [Int] = []
        for _ in 0..<4 {
            let response = try await busy.send(try tokenMessage("device"), bearer: token)
            statuses.append(response.status)
            if response.status != 200 { #expect(response.headers.contains { $0.name == "retry-after" && $0.value == "7" }) }
        }
        #expect(statuses == [200, 503, 429, 503])

        let refusing = try await FCMFixture { $0.faults.refuseAssertions = true }
        defer { refusing.stop() }
        guard case .refused = try await refusing.exchange() else {
            Issue.record("the assertion was not refused")
            return
        }

        let disabled = try await FCMFixture { $0.faults.permissionDenied = true }
        defer { disabled.stop() }
        let response = try await disabled.send(try tokenMessage("device"), bearer: try await disabled.accessToken())
        #expect(response.status == 403)
        #expect(FCMErrorBody.parse(response.body)?.reason == "PERMISSION_DENIED")
    }
}
