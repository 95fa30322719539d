import Foundation
import EmbeddedPostgres
import PGPushTestSupport
import Postgres
import Testing

@Suite struct PostgresConnectionTests {
    @Test func parametersTravelSeparatelyFromSQL() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        let hostile = "'); DROP TABLE x; --"
        let result = try connection.query("SELECT $1::text AS text, $2::bigint AS number, $3::text IS NULL AS missing",
                                          [hostile, Int64(9_007_199_254_740_993), nil])
        #expect(result.rowCount == 1)
        #expect(result.string(0, 0) == hostile)
        #expect(result.int64(0, 1) == 9_007_199_254_740_993)
        #expect(result.bool(0, 2) == true)
    }

    @Test func arrayParametersKeepEveryElementIntact() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        let texts: [String?] = ["plain", "", "NULL", "with,comma", "with \"quote\"", "back\\slash", "{brace}", nil, "ünï😀"]
        let result = try connection.query("SELECT t, t IS NULL FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n", [texts])
        #expect(result.rowCount == texts.count)
        for (index, text) in texts.enumerated() {
            #expect(result.string(index, 0) == text)
            #expect(result.bool(index, 1) == (text == nil))
        }
        let numbers = try connection.query("SELECT sum(x) FROM unnest($1::bigint[]) AS x", [[Int64(1), 2, 3, Int64.max - 6]])
        #expect(numbers.int64(0, 0) == Int64.max)
    }

    /// libpq takes C strings, so a NUL used to end a value there without a word: "a\0b"
    /// arrived as "a". Refused instead, as PostgreSQL refuses NUL in text, and named as a
    /// refusal of the values (the outcome writer sets such a row apart).
    @Test func aNULInAParameterIsRefusedNotTruncated() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        for parameter in ["a\u{0}b", ["x", "a\u{0}b"]] as [any PostgresParameter] {
            #expect {
                try connection.query("SELECT $1::text", [parameter])
            } throws: { error in
                guard let error = error as? PostgresError else { return false }
                return error.sqlState == "22021" && error.refusesTheValues && !error.isConnectionProblem
            }
        }
        #expect(try connection.query("SELECT 1").int(0, 0) == 1)
    }

    @Test func serverErrorsCarrySQLStateAndConstraint() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        try connection.execute(script: "CREATE TABLE t (n int CONSTRAINT n_is_positive CHECK (n > 0))")
        let error = try #require(throws: PostgresError.self) { try connection.query("INSERT INTO t VALUES ($1)", [-1]) }
        #expect(error.kind == .server)
        #expect(error.sqlState == "23514")
        #expect(error.constraint == "n_is_positive")
        #expect(!error.isConnectionProblem)
        let syntax = try #require(throws: PostgresError.self) { try connection.query("SELEC 1") }
        #expect(syntax.sqlState == "42601")
        // The connection is still usable after errors.
        #expect(try connection.query("SELECT 1").int(0, 0) == 1)
    }

    @Test func connectingToNothingIsAClearConnectionError() throws {
        let error = try #require(throws: PostgresError.self) {
            try PostgresConnection(conninfo: "host=/nonexistent-pgpush port=1 user=x dbname=x connect_timeout=2")
        }
        #expect(error.kind == .connection)
        #expect(error.isConnectionProblem)
    }

    @Test func transactionRollsBackWhenBodyThrows() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        try connection.execute(script: "CREATE TABLE t (n int)")
        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try connection.transaction {
                try connection.query("INSERT INTO t VALUES (1)")
                throw Abort()
            }
        }
        #expect(try connection.query("SELECT count(*) FROM t").int(0, 0) == 0)
    }

    @Test func notifyReachesListener() throws {
        let conninfo = try TestDatabase.empty()
        let listener = try PostgresConnection(conninfo: conninfo)
        let sender = try PostgresConnection(conninfo: conninfo)
        try listener.listen("pgpush test")
        #expect(try listener.waitForNotifications(timeout: .milliseconds(10)).isEmpty)
        try sender.query("SELECT pg_notify($1, $2)", ["pgpush test", "hello"])
        var received: [PostgresNotification] = []
        for _ in 0..<50 where received.isEmpty {
            received = try listener.waitForNotifications(timeout: .seconds(1))
        }
        #expect(received == [PostgresNotification(channel: "pgpush test", payload: "hello", senderPID: sender.backendPID)])
    }

    @Test func reconnectAfterSessionIsTerminatedListensAgain() throws {
        let conninfo = try TestDatabase.empty()
        let connection = try PostgresConnection(conninfo: conninfo)
        let admin = try PostgresConnection(conninfo: conninfo)
        try connection.listen("wake")
        try admin.query("SELECT pg_terminate_backend($1)", [connection.backendPID])
        let lost = try #require(throws: PostgresError.self) { try connection.query("SELECT 1") }
        #expect(lost.isConnectionProblem)
        try connection.reconnect()
        #expect(try connection.query("SELECT 1").int(0, 0) == 1)
        try admin.query("SELECT pg_notify('wake', 'again')")
        var received: [PostgresNotification] = []
        for _ in 0..<50 where received.isEmpty {
            received = try connection.waitForNotifications(timeout: .seconds(1))
        }
        #expect(received.map(\.payload) == ["again"])
    }
    /// The worker's statements are prepared once per session and then only executed: the
    /// server parses and plans each once, not at every claim.
    @Test func statementsArePreparedOncePerSession() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        connection.preparesStatements = true
        for value in 1...3 {
            #expect(try connection.query("SELECT $1::int + 1", [value]).int(0, 0) == value + 1)
        }
        #expect(try connection.query("SELECT $1::int * 3", [2]).int(0, 0) == 6)
        // Through a pooler the statements are wherever its server sessions were.
        guard !TestDatabase.throughPooler else { return }
        connection.preparesStatements = false
        let prepared = try connection.query("SELECT statement FROM pg_prepared_statements ORDER BY prepare_time")
        #expect(prepared.rowCount == 2)
        #expect(prepared.string(0, 0) == "SELECT $1::int + 1" && prepared.string(1, 0) == "SELECT $1::int * 3")
        try connection.reconnect()
        connection.preparesStatements = true
        #expect(try connection.query("SELECT $1::int + 1", [7]).int(0, 0) == 8)
        #expect(connection.preparesStatements, "after a reconnect the statement is prepared again, not missed")
    }

    /// Past the limit a session's statements are sent unnamed: the server's memory holds only
    /// as many as the limit, and every statement still answers.
    @Test func aSessionPreparesNoMoreThanItsLimit() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        connection.preparesStatements = true
        let count = PostgresConnection.preparedStatementLimit + 5
        for index in 0..<count {
            #expect(try connection.query("SELECT $1::int + \(index)", [1]).int(0, 0) == index + 1)
        }
        #expect(connection.preparesStatements)
        guard !TestDatabase.throughPooler else { return }
        connection.preparesStatements = false
        #expect(try connection.query("SELECT count(*) FROM pg_prepared_statements").int(0, 0)
                == PostgresConnection.preparedStatementLimit)
    }

    /// A migration that changes what a prepared statement's function returns: the statement
    /// runs (unnamed), and the connection prepares nothing more.
    @Test func aChangedResultTypeEndsPreparingWithoutFailingTheStatement() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        try connection.execute(script: "CREATE FUNCTION public.answer() RETURNS integer LANGUAGE sql AS 'SELECT 42'")
        connection.preparesStatements = true
        #expect(try connection.query("SELECT * FROM public.answer() AS a WHERE $1::bool", [true]).int(0, 0) == 42)
        try connection.execute(script: """
            DROP FUNCTION public.answer();
            CREATE FUNCTION public.answer() RETURNS text LANGUAGE sql AS 'SELECT ''forty-two''';
            """)
        #expect(try connection.query("SELECT * FROM public.answer() AS a WHERE $1::bool", [true]).string(0, 0) == "forty-two")
        #expect(!connection.preparesStatements)
    }
}

/// A cluster of its own: restarting the shared one would disturb tests running beside it.
@Suite struct PostgresRestartTests {
    @Test func reconnectsAfterTheServerRestarts() throws {
        let cluster = try EmbeddedPostgres.start()
        defer { cluster.stop() }
        let connection = try PostgresConnection(conninfo: cluster.conninfo())
        try connection.listen("after_restart")
        try cluster.restartServer()
        let lost = try #require(throws: PostgresError.self) { try connection.query("SELECT 1") }
        #expect(lost.isConnectionProblem)
        try connection.reconnect()
        #expect(try connection.query("SELECT 1").int(0, 0) == 1)
        let sender = try PostgresConnection(conninfo: cluster.conninfo())
        try sender.query("SELECT pg_notify('after_restart', 'still listening')")
        var received: [PostgresNotification] = []
        for _ in 0..<50 where received.isEmpty {
            received = try connection.waitForNotifications(timeout: .seconds(1))
        }
        #expect(received.map(\.payload) == ["still listening"])
    }

    @Test func reconnectFailsClearlyWhileTheServerIsDown() throws {
        let cluster = try EmbeddedPostgres.start()
        defer { cluster.stop() }
        let connection = try PostgresConnection(conninfo: cluster.conninfo())
        try cluster.stopServer()
        let error = try #require(throws: PostgresError.self) { try connection.reconnect() }
        #expect(error.kind == .connection)
        try cluster.startServer()
        try connection.reconnect()
        #expect(try connection.query("SELECT 2").int(0, 0) == 2)
    }
}
