import PGPushTestSupport
import APNsClient
import Foundation
import PushCrypto
import PGPushCore
import PushTransport
import Testing

@Suite("APNs endpoint: Apple's hosts and base URL overrides")
struct APNsEndpointTests {
    @Test("production and development hosts on 443 or 2197")
    func appleHosts() throws {
        #expect(APNsEndpoint.production.host == "api.push.apple.com")
        #expect(APNsEndpoint.production.authority == "api.push.apple.com")
        #expect(APNsEndpoint.development.host == "api.sandbox.push.apple.com")
        let alternate = try APNsEndpoint(environment: .development, port: 2197)
        #expect(alternate.authority == "api.sandbox.push.apple.com:2197")
        #expect(throws: APNsEndpointError.portNotOfferedByApple(8443)) { try APNsEndpoint(environment: .production, port: 8443) }
    }

    @Test("base URLs parse host and port", arguments: [
        ("https://127.0.0.1:2197", "127.0.0.1", 2197, "127.0.0.1:2197"),
        ("https://localhost", "localhost", 443, "localhost"),
        ("HTTPS://Api.Push.Apple.com:443/", "api.push.apple.com", 443, "api.push.apple.com"),
        ("https://[::1]:2197", "::1", 2197, "[::1]:2197"),
    ])
    func parses(url: String, host: String, port: Int, authority: String) throws {
        let endpoint = try APNsEndpoint(baseURL: url)
        #expect(endpoint.host == host)
        #expect(endpoint.port == port)
        #expect(endpoint.authority == authority)
    }

    @Test("a connection failure names the endpoint as host:port, IPv6 in brackets")
    func hostAndPort() throws {
        #expect(APNsEndpoint.production.hostAndPort == "api.push.apple.com:443")
        #expect(try APNsEndpoint(baseURL: "https://[::1]:8443").hostAndPort == "[::1]:8443")
        #expect(try APNsEndpoint(baseURL: "https://127.0.0.1:8443").hostAndPort == "127.0.0.1:8443")
    }

    @Test("bad base URLs give errors that name the setting", arguments: [
        ("http://127.0.0.1:2197", APNsEndpointError.schemeNotHTTPS("http")),
        ("127.0.0.1:2197", .notAURL("127.0.0.1:2197")),
        ("https://", .missingHost),
        ("https://:2197", .missingHost),
        ("https://host:0", .invalidPort("0")),
        ("https://host:70000", .invalidPort("70000")),
        ("https://host:abc", .invalidPort("abc")),
        ("https://host/3/device", .pathNotAllowed("/3/device")),
        ("https://user@host", .userInfoNotAllowed),
        ("https://ho st", .invalidHost("ho st")),
    ])
    func rejects(url: String, expected: APNsEndpointError) {
        #expect(throws: expected) { try APNsEndpoint(baseURL: url) }
        #expect(expected.description.contains("PGPUSH_APNS_URL"))
    }
}

@Suite("APNs client configuration: checked up front, errors name the setting")
struct APNsClientConfigurationTests {
    func configuration() throws -> APNsClientConfiguration {
        APNsClientConfiguration(appName: "shop", bundleID: "com.example.shop", endpoint: .production,
                                authentication: .token(try ClientTestValues.tokenCache()))
    }

    @Test("defaults: 4 connections, 100 requests/s, 10 s timeout, 1 s to 60 s backoff")
    func defaults() throws {
        let configuration = try configuration()
        #expect(configuration.connection.connections == 4)
        #expect(configuration.connection.ratePerConnection == 100)
        #expect(configuration.connection.effectiveRatePerConnection == 100)
        #expect(configuration.connection.requestTimeout == .seconds(10))
        #expect(configuration.connection.reconnectBackoff == ReconnectBackoff(initial: .seconds(1), maximum: .seconds(60)))
        try configuration.validate()
    }

    @Test("rate 0 or nil means no cap")
    func unlimited() throws {
        var configuration = try configuration()
        configuration.connection.ratePerConnection = 0
        #expect(configuration.connection.effectiveRatePerConnection == nil)
        try configuration.validate()
        configuration.connection.ratePerConnection = nil
        #expect(configuration.connection.effectiveRatePerConnection == nil)
    }

    @Test("each bad setting is named")
    func badSettings() throws {
        let base = try configuration()
        let cases: [(String, (inout APNsClientConfiguration) -> Void)] = [
            ("PGPUSH_CONNECTIONS", { $0.connection.connections = 0 }),
            ("PGPUSH_CONNECTIONS", { $0.connection.connections = 1000 }),
            ("PGPUSH_RATE_PER_CONNECTION", { $0.connection.ratePerConnection = -1 }),
            ("PGPUSH_TOPIC", { $0.bundleID = "" }),
            ("request timeout", { $0.connection.requestTimeout = .zero }),
            ("reconnect backoff", { $0.connection.reconnectBackoff = ReconnectBackoff(initial: .seconds(5), maximum: .seconds(1)) }),
            ("PGPUSH_CA_FILE", { $0.extraCAFile = "/nonexistent/ca.pem" }),
            ("app name", { $0.appName = " " }),
        ]
        for (setting, change) in cases {
            var configuration = base
            change(&configuration)
            do {
                try configuration.validate()
                Issue.record("accepted a bad \(setting)")
            } catch {
                #expect(error.description.contains(setting), "\(error.description)")
            }
            #expect(throws: APNsClientConfigurationError.self) { try APNsClient(configuration: configuration) }
        }
    }

    @Test("a CA file that is not PEM is refused when the client is made, not at the first send")
    func badCAFile() throws {
        let scratch = try ScratchDirectory()
        var configuration = try configuration()
        configuration.extraCAFile = try scratch.write(Array("not a certificate".utf8), to: "ca.pem")
        #expect(throws: APNsClientConfigurationError.self) { try APNsClient(configuration: configuration) }
    }

    @Test("an expired client certificate is refused up front")
    func expiredCertificate() throws {
        let authority = try SelfSignedAuthority.generate()
        let issued = try authority.issueClientCertificate(
            commonName: "Apple Push Services: com.example.shop",
            validity: CertificateValidity(notBefore: Date(timeIntervalSinceNow: -86_400 * 3), notAfter: Date(timeIntervalSinceNow: -86_400)))
        let identity = try ClientIdentity.fromPEM(certificatePEM: issued.certificatePEM, privateKeyPEM: issued.privateKeyPEM)
        var configuration = try configuration()
        configuration.authentication = .certificate(identity)
        #expect(throws: APNsClientConfigurationError.self) { try configuration.validate() }
    }
}
