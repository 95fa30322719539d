import Foundation
import PushWorker
import Testing

@Suite struct WorkerConfigurationTests {
    let tokenEnvironment = [
        "DATABASE_URL": "host=/tmp dbname=x", "PGPUSH_TOPIC": "com.example.app", "PGPUSH_TEAM_ID": "TEAM123456",
        "PGPUSH_KEY_ID": "KEY1234567", "PGPUSH_KEY_FILE": "/keys/AuthKey.p8",
    ]

    @Test func singleAppFromEnvironmentWithDefaults() throws {
        let configuration = try WorkerConfiguration.load(flags: [:], environment: tokenEnvironment)
        #expect(configuration.databaseURL == "host=/tmp dbname=x")
        let app = try #require(configuration.apps.first)
        #expect(configuration.apps.count == 1)
        #expect(app.name == "default")
        #expect(app.bundleID == "com.example.app")
        #expect(app.environment == .production)
        #expect(app.connections == 4)
        #expect(app.ratePerConnection == 100)
        #expect(app.authentication == .token(teamID: "TEAM123456", keyID: "KEY1234567", keyFile: "/keys/AuthKey.p8"))
    }

    @Test func flagsWinOverEnvironment() throws {
        let configuration = try WorkerConfiguration.load(
            flags: ["connections": "2", "apns-env": "development", "database-url": "postgres://flag"],
            environment: tokenEnvironment.merging(["PGPUSH_CONNECTIONS": "9"]) { $1 })
        #expect(configuration.apps.first?.connections == 2)
        #expect(configuration.apps.first?.environment == .development)
        #expect(configuration.databaseURL == "postgres://flag")
    }

    @Test func fileListsSeveralAppsAndEnvironmentOverridesOne() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-config-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data("""
            {"database_url": "postgres://file", "lease_seconds": 30,
             "apps": [
               {"name": "news", "topic": "com.example.news", "cert_file": "/certs/news.p12", "cert_password": "pw"},
               {"name": "shop", "topic": "com.example.shop", "team_id": "TEAM123456", "key_id": "KEY1234567",
                "key_file": "/keys/shop.p8", "connections": 8, "rate_per_connection": 50}
             ]}
            """.utf8).write(to: file)
        let configuration = try WorkerConfiguration.load(
            flags: ["config": file.path], environment: ["PGPUSH_APP": "shop", "PGPUSH_CONNECTIONS": "3"])
        #expect(configuration.databaseURL == "postgres://file")
        #expect(configuration.lease == .seconds(30))
        #expect(configuration.apps.map(\.name) == ["news", "shop"])
        #expect(configuration.apps[0].authentication == .certificate(file: "/certs/news.p12", password: "pw"))
        #expect(configuration.apps[1].connections == 3)
        #expect(configuration.apps[1].ratePerConnection == 50)
    }

    @Test(arguments: [
        (["PGPUSH_TOPIC": "com.example"], "no credentials"),
        (["PGPUSH_TEAM_ID": "T", "PGPUSH_KEY_FILE": "/k.p8", "PGPUSH_TOPIC": "x"], "needs all of"),
        (["PGPUSH_CERT_FILE": "/c.p12", "PGPUSH_KEY_FILE": "/k.p8", "PGPUSH_KEY_ID": "K", "PGPUSH_TEAM_ID": "T", "PGPUSH_TOPIC": "x"], "not both"),
        (["PGPUSH_CERT_FILE": "/c.p12"], "bundle id is missing"),
        (["PGPUSH_CERT_FILE": "/c.p12", "PGPUSH_TOPIC": "x", "PGPUSH_APNS_ENV": "staging"], "production or development"),
        (["PGPUSH_CERT_FILE": "/c.p12", "PGPUSH_TOPIC": "x", "PGPUSH_APNS_URL": "http://127.0.0.1:2197"], "https://"),
        (["PGPUSH_CERT_FILE": "/c.p12", "PGPUSH_TOPIC": "x", "PGPUSH_CONNECTIONS": "0"], "between 1 and 64"),
        (["PGPUSH_CERT_FILE": "/c.p12", "PGPUSH_TOPIC": "x", "PGPUSH_RATE_PER_CONNECTION": "fast"], "whole number"),
        ([:], "no APNs app configured"),
        (["PGPUSH_CONFIG": "/nonexistent/pgpush.json"], "cannot read"),
    ])
    func badSettingsAreRefusedByName(environment: [String: String], message: String) {
        #expect {
            try WorkerConfiguration.load(flags: [:], environment: environment)
        } throws: { error in
            (error as? ConfigurationError)?.description.contains(message) == true
        }
    }

    @Test func malformedFileSaysWhere() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-config-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"apps": [{"name": "a", "connections": "four"}]}"#.utf8).write(to: file)
        let error = try #require(throws: ConfigurationError.self) {
            try WorkerConfiguration.load(flags: ["config": file.path], environment: [:])
        }
        #expect(error.description.contains("apps"))
        #expect(error.description.contains("connections"))
    }
}
