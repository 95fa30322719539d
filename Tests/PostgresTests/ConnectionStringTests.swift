import Postgres
import Testing

/// The connection-string checks and the password redaction, as pure functions.
struct ConnectionStringTests {
    @Test func libpqRejectsWhatItCannotParse() {
        for good in ["", "host=/tmp dbname=app", "postgresql://u:p@localhost:5432/app?connect_timeout=3", "port=5432,5433 host=a,b"] {
            #expect(throws: Never.self, "\(good)") { try ConnectionString.validate(good) }
        }
        for bad in ["host=localhost port=notanumber", "postgresql//user:pw@host", "=junk", "connect_timeout=soon", "host='unterminated"] {
            #expect(throws: ConnectionStringError.self, "\(bad)") { try ConnectionString.validate(bad) }
        }
    }

    @Test func passwordsAreRedactedInEveryForm() {
        let none: [String: String] = [:]
        let cases = [
            "postgresql://user:s3cret@host/db": "postgresql://user:***@host/db",
            "missing \"=\" after \"postgresql//user:s3cret@host/db\"": "missing \"=\" after \"postgresql//user:***@host/db\"",
            "host=h password=s3cret user=u": "host=h password=*** user=u",
            "host=h password = 'a b\\' s3cret' user=u": "host=h password = *** user=u",
            "postgresql://h/db?password=s3cret&sslmode=require": "postgresql://h/db?password=***&sslmode=require",
            "PASSWORD=s3cret": "PASSWORD=***",
        ]
        for (text, expected) in cases { #expect(ConnectionString.redact(text, environment: none) == expected) }
        #expect(ConnectionString.redact("echoed s3cret here", environment: ["PGPASSWORD": "s3cret"]) == "echoed *** here")
        let error = PostgresError(kind: .connection, message: "bad \"postgresql//u:s3cret@h\"", detail: "password=s3cret")
        #expect(!error.description.contains("s3cret"))
    }
}
