import Foundation
import PGPushCore
import PushWorker
import Testing
import WebPushClient

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

    /// An app with only a service-account file serves FCM alone (no bundle id needed); with
    /// APNs credentials too it serves both.
    @Test func fcmSettingsMakeAnFCMAppAloneOrBesideAPNs() throws {
        let alone = try WorkerConfiguration.load(flags: [:], environment: [
            "PGPUSH_FCM_CREDENTIALS_FILE": "/keys/fcm.json", "PGPUSH_FCM_PROJECT_ID": "shop-prod",
            "DATABASE_URL": "postgres://x",
        ])
        #expect(alone.apps.count == 1 && alone.apps[0].authentication == nil)
        #expect(alone.apps[0].fcm == AppConfiguration.FCM(credentialsFile: "/keys/fcm.json", projectID: "shop-prod"))
        let both = try WorkerConfiguration.load(flags: ["fcm-credentials-file": "/keys/fcm.json"], environment: [
            "PGPUSH_TOPIC": "com.example.shop", "PGPUSH_CERT_FILE": "/certs/shop.p12", "DATABASE_URL": "postgres://x",
        ])
        #expect(both.apps[0].authentication == .certificate(file: "/certs/shop.p12", password: nil))
        #expect(both.apps[0].fcm?.credentialsFile == "/keys/fcm.json" && both.apps[0].fcm?.url == nil)
        let file = try WorkerConfiguration.apps(fromFile: Data("""
            {"apps": [{"name": "android", "fcm_credentials_file": "/keys/a.json", "fcm_url": "https://127.0.0.1:2198"}]}
            """.utf8))
        #expect(file.first?.fcm == AppConfiguration.FCM(credentialsFile: "/keys/a.json", url: "https://127.0.0.1:2198"))
    }

    /// A VAPID key and subject make a Web Push app, alone or beside the others; the allow-list
    /// is the public push services unless set.
    @Test func vapidSettingsMakeAWebPushApp() throws {
        let alone = try WorkerConfiguration.load(flags: [:], environment: [
            "PGPUSH_VAPID_KEY_FILE": "/keys/vapid.pem", "PGPUSH_VAPID_SUBJECT": "mailto:ops@example.com",
            "DATABASE_URL": "postgres://x",
        ])
        #expect(alone.apps.count == 1 && alone.apps[0].authentication == nil && alone.apps[0].fcm == nil)
        #expect(alone.apps[0].webPush == AppConfiguration.WebPush(vapidKeyFile: "/keys/vapid.pem",
                                                                  vapidSubject: try VAPIDSubject("mailto:ops@example.com")))
        #expect(alone.apps[0].webPush?.allowedOrigins == AllowedOrigins.publicPushServices)
        let file = try WorkerConfiguration.apps(fromFile: Data("""
            {"apps": [{"name": "web", "vapid_key_file": "/keys/v.pem", "vapid_subject": "https://example.com/contact",
                       "webpush_allowed_origins": "https://127.0.0.1:2199, https://*.push.apple.com",
                       "fcm_credentials_file": "/keys/a.json"}]}
            """.utf8))
        #expect(file.first?.fcm?.credentialsFile == "/keys/a.json")
        #expect(file.first?.webPush?.allowedOrigins == (try AllowedOrigins("https://127.0.0.1:2199, https://*.push.apple.com")))
    }

    @Test(arguments: [
        (["PGPUSH_VAPID_KEY_FILE": "/v.pem"], "needs PGPUSH_VAPID_SUBJECT"),
        (["PGPUSH_VAPID_SUBJECT": "mailto:a@example.com"], "need PGPUSH_VAPID_KEY_FILE"),
        (["PGPUSH_WEBPUSH_ALLOWED_ORIGINS": "https://127.0.0.1:2199"], "need PGPUSH_VAPID_KEY_FILE"),
        (["PGPUSH_VAPID_KEY_FILE": "/v.pem", "PGPUSH_VAPID_SUBJECT": "ops@example.com"], "PGPUSH_VAPID_SUBJECT"),
        (["PGPUSH_VAPID_KEY_FILE": "/v.pem", "PGPUSH_VAPID_SUBJECT": "mailto:a@example.com",
          "PGPUSH_WEBPUSH_ALLOWED_ORIGINS": "http://push.example"], "PGPUSH_WEBPUSH_ALLOWED_ORIGINS"),
        (["PGPUSH_VAPID_KEY_FILE": "/v.pem", "PGPUSH_VAPID_SUBJECT": "mailto:a@example.com",
          "PGPUSH_WEBPUSH_ALLOWED_ORIGINS": "https://*.com"], "PGPUSH_WEBPUSH_ALLOWED_ORIGINS"),
    ])
    func badWebPushSettingsAreRefusedByName(environment: [String: String], message: String) {
        #expect {
            try WorkerConfiguration.load(flags: [:], environment: environment.merging(["DATABASE_URL": "postgres://x"]) { a, _ in a })
        } throws: { error in
            (error as? ConfigurationError)?.description.contains(message) == true
        }
    }

    @Test(arguments: [
        (["PGPUSH_TOPIC": "com.example"], "no credentials"),
        (["PGPUSH_TEAM_ID": "T", "PGPUSH_KEY_FILE": "/k.p8", "PGPUSH_TOPIC": "x"], "needs all of"),
        (["PGPUSH_CERT_FILE": "/c.p12", "PGPUSH_KEY_FILE": "/k.p8", "PGPUSH_KEY_ID": "K", "PGPUSH_TEAM_ID": "T", "PGPUSH_TOPIC": "x"], "not both"),
        (["PGPUSH_CERT_FILE": "/c.p12"], "bundle id is missing"),
        (["PGPUSH_CERT_FILE": "/c.p12", "PGPUSH_TOPIC": "x", "PGPUSH_APNS_ENV": "staging"], "production or development"),
        (["PGPUSH_CERT_FILE": "/c.p12", "PGPUSH_TOPIC": "x", "PGPUSH_APNS_URL": "http://127.0.0.1:2197"], "https://"),
        (["PGPUSH_CERT_FILE": "/c.p12", "PGPUSH_TOPIC": "x", "PGPUSH_CONNECTIONS": "0"], "PGPUSH_CONNECTIONS): must be from 1 to 64"),
        (["PGPUSH_CERT_FILE": "/c.p12", "PGPUSH_TOPIC": "x", "PGPUSH_RATE_PER_CONNECTION": "fast"], "whole number"),
        ([:], "no app configured"),
        (["PGPUSH_FCM_PROJECT_ID": "p"], "need PGPUSH_FCM_CREDENTIALS_FILE"),
        (["PGPUSH_FCM_CREDENTIALS_FILE": "/fcm.json", "PGPUSH_FCM_URL": "http://127.0.0.1:2198"], "https://"),
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

    // MARK: Per-app retry settings and skipKnownInvalidTokens

    let certificateEnvironment = ["PGPUSH_CERT_FILE": "/c.p12", "PGPUSH_TOPIC": "x"]

    func writeFile(_ json: String) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-config-\(UUID()).json")
        try Data(json.utf8).write(to: file)
        return file
    }

    @Test func retryAndSkipDefaultsAreUnchanged() throws {
        let app = try #require(try WorkerConfiguration.load(flags: [:], environment: tokenEnvironment).apps.first)
        #expect(app.retry == .default)
        #expect(app.retry.serverErrorRetries == 3)
        #expect(app.retry.serverErrorDelay == .seconds(1) ... .seconds(5))
        #expect(app.retry.tooManyRequestsBaseDelay == .seconds(1))
        #expect(app.retry.tooManyRequestsMaximumDelay == .seconds(60))
        #expect(app.retry.tooManyRequestsMaximumAttempts == 8)
        #expect(app.skipKnownInvalidTokens)
    }

    @Test func retryAndSkipFromEnvironment() throws {
        let configuration = try WorkerConfiguration.load(flags: [:], environment: tokenEnvironment.merging([
            "PGPUSH_RETRY_SERVER_ERRORS": "0", "PGPUSH_RETRY_DELAY_MIN_SECONDS": "0.25",
            "PGPUSH_RETRY_DELAY_MAX_SECONDS": " 900 ", "PGPUSH_RETRY_429_BASE_SECONDS": "1.5",
            "PGPUSH_RETRY_429_MAX_DELAY_SECONDS": "3600", "PGPUSH_RETRY_429_MAX_ATTEMPTS": "100",
            "PGPUSH_SKIP_KNOWN_INVALID_TOKENS": "false",
        ]) { $1 })
        let app = try #require(configuration.apps.first)
        #expect(app.retry == RetryConfiguration(
            serverErrorRetries: 0, serverErrorDelay: .milliseconds(250) ... .seconds(900),
            tooManyRequestsBaseDelay: .milliseconds(1500), tooManyRequestsMaximumDelay: .seconds(3600),
            tooManyRequestsMaximumAttempts: 100))
        #expect(!app.skipKnownInvalidTokens)
    }

    @Test func retryAndSkipFlagsWinOverEnvironment() throws {
        let configuration = try WorkerConfiguration.load(
            flags: ["retry-server-errors": "5", "retry-delay-max-seconds": "10", "retry-429-base-seconds": "2",
                    "retry-429-max-attempts": "3", "skip-known-invalid-tokens": "TRUE"],
            environment: tokenEnvironment.merging([
                "PGPUSH_RETRY_SERVER_ERRORS": "1", "PGPUSH_RETRY_DELAY_MIN_SECONDS": "2",
                "PGPUSH_RETRY_DELAY_MAX_SECONDS": "3", "PGPUSH_RETRY_429_MAX_DELAY_SECONDS": "30",
                "PGPUSH_RETRY_429_MAX_ATTEMPTS": "50", "PGPUSH_SKIP_KNOWN_INVALID_TOKENS": "false",
            ]) { $1 })
        let app = try #require(configuration.apps.first)
        #expect(app.retry.serverErrorRetries == 5)
        #expect(app.retry.serverErrorDelay == .seconds(2) ... .seconds(10))
        #expect(app.retry.tooManyRequestsBaseDelay == .seconds(2))
        #expect(app.retry.tooManyRequestsMaximumDelay == .seconds(30))
        #expect(app.retry.tooManyRequestsMaximumAttempts == 3)
        #expect(app.skipKnownInvalidTokens)
    }

    @Test func fileSetsRetryPerAppAndTheEnvironmentOverridesOneField() throws {
        let file = try writeFile("""
            {"apps": [
               {"name": "news", "topic": "com.example.news", "cert_file": "/certs/news.p12",
                "retry": {"server_errors": 3, "delay_min_seconds": 1, "delay_max_seconds": 5,
                          "too_many_requests_base_seconds": 1, "too_many_requests_max_delay_seconds": 60,
                          "too_many_requests_max_attempts": 8}},
               {"name": "shop", "topic": "com.example.shop", "cert_file": "/certs/shop.p12",
                "skip_known_invalid_tokens": false,
                "retry": {"server_errors": 10, "delay_min_seconds": 0.5, "delay_max_seconds": 120,
                          "too_many_requests_base_seconds": 2, "too_many_requests_max_delay_seconds": 300,
                          "too_many_requests_max_attempts": 20}},
               {"name": "todo", "topic": "com.example.todo", "cert_file": "/certs/todo.p12",
                "retry": {"delay_max_seconds": 30}}
             ]}
            """)
        defer { try? FileManager.default.removeItem(at: file) }
        let fromFile = try WorkerConfiguration.load(flags: ["config": file.path], environment: [:])
        #expect(fromFile.apps.map(\.name) == ["news", "shop", "todo"])
        #expect(fromFile.apps[0].retry == .default)
        #expect(fromFile.apps[0].skipKnownInvalidTokens)
        let shop = RetryConfiguration(
            serverErrorRetries: 10, serverErrorDelay: .milliseconds(500) ... .seconds(120),
            tooManyRequestsBaseDelay: .seconds(2), tooManyRequestsMaximumDelay: .seconds(300), tooManyRequestsMaximumAttempts: 20)
        #expect(fromFile.apps[1].retry == shop)
        #expect(!fromFile.apps[1].skipKnownInvalidTokens)
        // Keys left out keep their defaults.
        var todo = RetryConfiguration.default
        todo.serverErrorDelay = .seconds(1) ... .seconds(30)
        #expect(fromFile.apps[2].retry == todo)

        // The environment changes one field of the app PGPUSH_APP names; the file
        // supplies the rest, and the other apps keep theirs.
        let overridden = try WorkerConfiguration.load(
            flags: ["config": file.path, "retry-429-max-attempts": "4"],
            environment: ["PGPUSH_APP": "shop", "PGPUSH_RETRY_SERVER_ERRORS": "1", "PGPUSH_RETRY_429_MAX_ATTEMPTS": "9",
                          "PGPUSH_SKIP_KNOWN_INVALID_TOKENS": "true"])
        var expected = shop
        expected.serverErrorRetries = 1
        expected.tooManyRequestsMaximumAttempts = 4
        #expect(overridden.apps[1].retry == expected)
        #expect(overridden.apps[1].skipKnownInvalidTokens)
        #expect(overridden.apps[0].retry == .default)
        #expect(overridden.apps[2].retry == todo)
    }

    static let badRetryValues: [(variable: String, value: String, allowed: String)] = [
        ("PGPUSH_RETRY_SERVER_ERRORS", "21", "a whole number from 0 to 20"),
        ("PGPUSH_RETRY_SERVER_ERRORS", "-1", "a whole number from 0 to 20"),
        ("PGPUSH_RETRY_SERVER_ERRORS", "2.5", "a whole number from 0 to 20"),
        ("PGPUSH_RETRY_SERVER_ERRORS", "three", "a whole number from 0 to 20"),
        ("PGPUSH_RETRY_DELAY_MIN_SECONDS", "0", "more than 0 and at most 3600"),
        ("PGPUSH_RETRY_DELAY_MIN_SECONDS", "-1", "more than 0 and at most 3600"),
        ("PGPUSH_RETRY_DELAY_MIN_SECONDS", "1e-12", "more than 0 and at most 3600"),
        ("PGPUSH_RETRY_DELAY_MIN_SECONDS", "soon", "more than 0 and at most 3600"),
        ("PGPUSH_RETRY_DELAY_MAX_SECONDS", "3600.5", "more than 0 and at most 3600"),
        ("PGPUSH_RETRY_DELAY_MAX_SECONDS", "nan", "more than 0 and at most 3600"),
        ("PGPUSH_RETRY_DELAY_MAX_SECONDS", "inf", "more than 0 and at most 3600"),
        ("PGPUSH_RETRY_429_BASE_SECONDS", "0", "more than 0 and at most 3600"),
        ("PGPUSH_RETRY_429_BASE_SECONDS", "1e300", "more than 0 and at most 3600"),
        ("PGPUSH_RETRY_429_MAX_DELAY_SECONDS", "-5", "more than 0 and at most 3600"),
        ("PGPUSH_RETRY_429_MAX_DELAY_SECONDS", "7200", "more than 0 and at most 3600"),
        ("PGPUSH_RETRY_429_MAX_ATTEMPTS", "0", "a whole number from 1 to 100"),
        ("PGPUSH_RETRY_429_MAX_ATTEMPTS", "101", "a whole number from 1 to 100"),
        ("PGPUSH_RETRY_429_MAX_ATTEMPTS", "", "a whole number from 1 to 100"),
        // Each alone is in range; together they are not (max defaults to 5, base to 1).
        ("PGPUSH_RETRY_DELAY_MIN_SECONDS", "6", "must not exceed PGPUSH_RETRY_DELAY_MAX_SECONDS"),
        ("PGPUSH_RETRY_429_MAX_DELAY_SECONDS", "0.5", "must be at least PGPUSH_RETRY_429_BASE_SECONDS"),
        ("PGPUSH_SKIP_KNOWN_INVALID_TOKENS", "yes", "true or false"),
        ("PGPUSH_SKIP_KNOWN_INVALID_TOKENS", "", "true or false"),
    ]

    @Test(arguments: badRetryValues)
    func badRetryValuesAreRefusedByNameAndRange(variable: String, value: String, allowed: String) {
        let environment = certificateEnvironment.merging([variable: value]) { $1 }
        #expect {
            try WorkerConfiguration.load(flags: [:], environment: environment)
        } throws: { error in
            let description = (error as? ConfigurationError)?.description ?? ""
            return description.contains("app \"default\": \(variable)") && description.contains(allowed)
        }
    }

    @Test func badRetryFlagIsRefusedByName() {
        #expect {
            try WorkerConfiguration.load(flags: ["retry-429-max-attempts": "1000"], environment: certificateEnvironment)
        } throws: { error in
            (error as? ConfigurationError)?.description.contains("PGPUSH_RETRY_429_MAX_ATTEMPTS") == true
        }
    }

    @Test(arguments: [
        (#"{"server_errors": 21}"#, "PGPUSH_RETRY_SERVER_ERRORS (retry.server_errors in the file) must be a whole number from 0 to 20, got 21"),
        (#"{"server_errors": 2.5}"#, "PGPUSH_RETRY_SERVER_ERRORS (retry.server_errors in the file) must be a whole number from 0 to 20, got 2.5"),
        (#"{"delay_min_seconds": 0}"#, "PGPUSH_RETRY_DELAY_MIN_SECONDS (retry.delay_min_seconds in the file) must be a number of seconds more than 0"),
        (#"{"delay_max_seconds": 4000}"#, "PGPUSH_RETRY_DELAY_MAX_SECONDS (retry.delay_max_seconds in the file) must be a number of seconds more than 0 and at most 3600, got 4000"),
        (#"{"delay_min_seconds": 2, "delay_max_seconds": 1.5}"#, "must not exceed PGPUSH_RETRY_DELAY_MAX_SECONDS"),
        (#"{"too_many_requests_base_seconds": -1}"#, "PGPUSH_RETRY_429_BASE_SECONDS (retry.too_many_requests_base_seconds in the file)"),
        (#"{"too_many_requests_base_seconds": 10, "too_many_requests_max_delay_seconds": 5}"#,
         "PGPUSH_RETRY_429_MAX_DELAY_SECONDS (retry.too_many_requests_max_delay_seconds in the file) must be at least PGPUSH_RETRY_429_BASE_SECONDS"),
        (#"{"too_many_requests_max_attempts": 1e300}"#, "PGPUSH_RETRY_429_MAX_ATTEMPTS (retry.too_many_requests_max_attempts in the file) must be a whole number from 1 to 100"),
        (#"{"too_many_requests_max_attempts": 0}"#, "PGPUSH_RETRY_429_MAX_ATTEMPTS (retry.too_many_requests_max_attempts in the file) must be a whole number from 1 to 100, got 0"),
    ])
    func badRetryValuesInTheFileAreRefusedByName(retry: String, message: String) throws {
        let file = try writeFile(#"{"apps": [{"name": "shop", "topic": "x", "cert_file": "/c.p12", "retry": "# + retry + "}]}")
        defer { try? FileManager.default.removeItem(at: file) }
        let error = try #require(throws: ConfigurationError.self) {
            try WorkerConfiguration.load(flags: ["config": file.path], environment: [:])
        }
        #expect(error.description.hasPrefix("app \"shop\": "))
        #expect(error.description.contains(message), "\(error)")
    }

    @Test func delaysAreCheckedAcrossLayers() throws {
        // The file's maximum and the environment's minimum are each fine; together they are not.
        let file = try writeFile(#"{"apps": [{"name": "default", "topic": "x", "cert_file": "/c.p12", "retry": {"delay_max_seconds": 2}}]}"#)
        defer { try? FileManager.default.removeItem(at: file) }
        let error = try #require(throws: ConfigurationError.self) {
            try WorkerConfiguration.load(flags: ["config": file.path], environment: ["PGPUSH_RETRY_DELAY_MIN_SECONDS": "3"])
        }
        #expect(error.description.contains("must not exceed PGPUSH_RETRY_DELAY_MAX_SECONDS"))
        #expect(error.description.contains("3 s > 2 s"))
    }

    @Test func skipKnownInvalidTokensMustBeABooleanInTheFile() throws {
        let file = try writeFile(#"{"apps": [{"name": "a", "topic": "x", "cert_file": "/c.p12", "skip_known_invalid_tokens": "no"}]}"#)
        defer { try? FileManager.default.removeItem(at: file) }
        let error = try #require(throws: ConfigurationError.self) {
            try WorkerConfiguration.load(flags: ["config": file.path], environment: [:])
        }
        #expect(error.description.contains("skip"), "\(error)")
    }
}
