import CLibPQ
import CShims
import Foundation

/// One libpq connection. Owns its `PGconn`, which is closed in `deinit`.
///
/// Blocking by design: pgpush gives each connection its own thread (or uses it
/// from one task at a time), never the HTTP/2 I/O loop. Not Sendable: hand it
/// to another thread by moving it (`sending`), never by sharing it.
package final class PostgresConnection {
    private var handle: OpaquePointer
    private var listeningChannels: [String] = []
    package let conninfo: String
    /// Statements prepared on this session, by SQL text: their names.
    private var preparedNames: [String: String] = [:]
    /// Whether `query` prepares its statements once per session (named statements) instead
    /// of sending them unnamed, parsed and planned again every time. Worth it for the
    /// worker's few statements run thousands of times; off by default. Turned off for good
    /// on this connection when a statement it prepared is missing (a transaction pooler
    /// gave the next transaction another server session) or its result type changed (a
    /// migration ran).
    package var preparesStatements = false

    /// Connects with a libpq connection string or URI. An empty string means
    /// "from the PG* environment variables", as in psql.
    package init(conninfo: String) throws {
        guard let connection = PQconnectdb(conninfo) else {
            throw PostgresError(kind: .connection, message: "libpq could not allocate a connection")
        }
        // Checked before `self` owns the handle: once every property is set, a throw would run deinit.
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = PostgresError.connectionMessage(connection)
            PQfinish(connection)
            throw PostgresError(kind: .connection, message: message)
        }
        Self.silenceNotices(connection)
        self.conninfo = conninfo
        handle = connection
    }

    /// `DATABASE_URL` when set, otherwise libpq's PG* variables.
    package static func conninfoFromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        environment["DATABASE_URL"] ?? ""
    }

    deinit { PQfinish(handle) }

    package var isConnected: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Server process id of this session (for tests that terminate it, and for logs).
    package var backendPID: Int32 { PQbackendPID(handle) }

    /// Runs one statement with parameters sent separately from the SQL text.
    @discardableResult
    package func query(_ sql: String, _ parameters: [(any PostgresParameter)?] = []) throws -> PostgresResult {
        let texts = parameters.map { $0?.postgresText }
        // libpq takes C strings: a NUL would end the value there, silently. PostgreSQL's text
        // cannot hold one either, so the statement is refused as the server would refuse it.
        if let position = texts.firstIndex(where: { $0?.utf8.contains(0) == true }) {
            throw PostgresError(kind: .server, message: "parameter $\(position + 1) contains a NUL character",
                                sqlState: PostgresError.characterNotInRepertoire)
        }
        if preparesStatements && PQtransactionStatus(handle) == PQTRANS_IDLE {
            do {
                if let result = try queryPrepared(sql, texts) { return result }
            } catch let error as PostgresError where Self.endsPreparing(error) {
                // The statement did not run: sent again unnamed, as every later one is.
                preparesStatements = false
                preparedNames.removeAll()
            }
        }
        let result = withCStringArray(texts) { values in
            PQexecParams(handle, sql, Int32(texts.count), nil, values, nil, nil, 0)
        }
        return try check(result)
    }

    /// The most statements one session keeps prepared: the worker has a handful; anything
    /// past this is sent unnamed rather than filling the server's memory.
    package static let preparedStatementLimit = 32

    /// Outside a transaction block only: there, a failed statement ends nothing else, so it
    /// can be sent again unnamed. Nil when the session holds as many as it may: sent unnamed.
    private func queryPrepared(_ sql: String, _ texts: [String?]) throws -> PostgresResult? {
        let name: String
        if let known = preparedNames[sql] {
            name = known
        } else {
            guard preparedNames.count < Self.preparedStatementLimit else { return nil }
            // Named after the text itself: should a pooler hand this connection a server
            // session that another connection prepared on, a name found there is this very
            // statement, never another one with the same number of parameters.
            name = Self.statementName(sql)
            _ = try check(PQprepare(handle, name, sql, Int32(texts.count), nil))
            preparedNames[sql] = name
        }
        return try check(withCStringArray(texts) { PQexecPrepared(handle, name, Int32(texts.count), $0, nil, nil, 0) })
    }

    /// `pgpush_` and the text's 64-bit FNV-1a hash and length.
    static func statementName(_ sql: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in sql.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return "pgpush_" + String(hash, radix: 16) + "_" + String(sql.utf8.count)
    }

    /// Errors that say prepared statements cannot be relied on with this connection: a
    /// name missing or already taken (a pooler's server sessions), a changed result type.
    private static func endsPreparing(_ error: PostgresError) -> Bool {
        switch error.sqlState {
        // 0A000 is also "cached plan must not change result type", whatever the server's
        // language: a genuine 0A000 of the statement comes back the same way unnamed.
        case PostgresError.undefinedPreparedStatement, PostgresError.duplicatePreparedStatement,
             PostgresError.featureNotSupported: true
        default: false
        }
    }

    /// Runs SQL text that may hold several statements and takes no parameters
    /// (migration files shipped with pgpush, fixed maintenance statements).
    package func execute(script sql: String) throws {
        _ = try check(PQexec(handle, sql))
    }

    /// Runs `body` inside BEGIN/COMMIT, rolling back when it throws.
    package func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute(script: "BEGIN")
        do {
            let value = try body()
            try execute(script: "COMMIT")
            return value
        } catch {
            if isConnected { try? execute(script: "ROLLBACK") }
            throw error
        }
    }

    // MARK: LISTEN/NOTIFY

    package func listen(_ channel: String) throws {
        try execute(script: "LISTEN \(try quotedIdentifier(channel))")
        if !listeningChannels.contains(channel) { listeningChannels.append(channel) }
    }

    package func unlisten(_ channel: String) throws {
        try execute(script: "UNLISTEN \(try quotedIdentifier(channel))")
        listeningChannels.removeAll { $0 == channel }
    }

    /// Waits until a notification arrives, `wakeDescriptor` (or `alsoWakeOn`) becomes
    /// readable, or the timeout passes, and returns the notifications received (maybe none).
    package func waitForNotifications(timeout: Duration, wakeDescriptor: Int32? = nil,
                                     alsoWakeOn other: Int32? = nil) throws -> [PostgresNotification] {
        var pending = try drainNotifications()
        guard pending.isEmpty else { return pending }
        let socket = PQsocket(handle)
        guard socket >= 0 else { throw PostgresError(kind: .connection, message: "connection has no socket") }
        var descriptors = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0)]
        for descriptor in [wakeDescriptor, other].compactMap({ $0 }) {
            descriptors.append(pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0))
        }
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
        if ready < 0 && errno != EINTR {
            throw PostgresError(kind: .connection, message: "poll failed: errno \(errno)")
        }
        if descriptors[0].revents != 0 {
            guard PQconsumeInput(handle) == 1 else {
                throw PostgresError(kind: .connection, message: PostgresError.connectionMessage(handle))
            }
            pending = try drainNotifications()
        }
        return pending
    }

    private func drainNotifications() throws -> [PostgresNotification] {
        guard PQconsumeInput(handle) == 1 else {
            throw PostgresError(kind: .connection, message: PostgresError.connectionMessage(handle))
        }
        var received: [PostgresNotification] = []
        while let raw = PQnotifies(handle) {
            let notify = raw.pointee
            received.append(PostgresNotification(
                channel: String(cString: notify.relname),
                payload: String(cString: notify.extra),
                senderPID: notify.be_pid
            ))
            PQfreemem(raw)
        }
        return received
    }

    // MARK: Recovery

    /// Reconnects with the same parameters (after a server restart) and
    /// listens again on every channel this connection listened on.
    package func reconnect() throws {
        PQreset(handle)
        // A new server session: nothing of the old one is prepared there.
        preparedNames.removeAll()
        guard PQstatus(handle) == CONNECTION_OK else {
            throw PostgresError(kind: .connection, message: PostgresError.connectionMessage(handle))
        }
        Self.silenceNotices(handle)
        for channel in listeningChannels {
            try execute(script: "LISTEN \(try quotedIdentifier(channel))")
        }
    }

    // MARK: Helpers

    private func check(_ result: OpaquePointer?) throws -> PostgresResult {
        guard let result else {
            throw PostgresError(kind: .connection, message: PostgresError.connectionMessage(handle))
        }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            return PostgresResult(owning: result)
        default:
            let error = PostgresError.fromResult(result, connection: handle)
            PQclear(result)
            throw error
        }
    }

    private func quotedIdentifier(_ name: String) throws -> String {
        guard let escaped = PQescapeIdentifier(handle, name, name.utf8.count) else {
            throw PostgresError(kind: .server, message: "invalid identifier")
        }
        defer { PQfreemem(escaped) }
        return String(cString: escaped)
    }

    /// Runs `body` and returns, with its result, the messages the server sent meanwhile
    /// (NOTICE, and LOG with `client_min_messages = log`, as auto_explain writes plans).
    /// Otherwise they are dropped.
    package func collectingMessages<T>(_ body: () throws -> T) throws -> (result: T, messages: [String]) {
        let box = MessageBox()
        let context = Unmanaged.passRetained(box)
        PQsetNoticeProcessor(handle, { context, message in
            guard let context, let message else { return }
            Unmanaged<MessageBox>.fromOpaque(context).takeUnretainedValue().messages.append(String(cString: message))
        }, context.toOpaque())
        defer {
            Self.silenceNotices(handle)
            context.release()
        }
        return (try body(), box.messages)
    }

    /// libpq prints NOTICEs to stderr by default ("… does not exist, skipping"); pgpush logs its own way.
    private static func silenceNotices(_ connection: OpaquePointer) {
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
    }
}

private final class MessageBox {
    var messages: [String] = []
}

package struct PostgresNotification: Sendable, Equatable {
    package let channel: String
    package let payload: String
    package let senderPID: Int32

    package init(channel: String, payload: String, senderPID: Int32) {
        self.channel = channel
        self.payload = payload
        self.senderPID = senderPID
    }
}

/// Calls `body` with a C array of NUL-terminated copies of `strings` (nil stays NULL);
/// the copies live exactly for the call.
private func withCStringArray<T>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
    let copies: [UnsafeMutablePointer<CChar>?] = strings.map { $0.flatMap { strdup($0) } }
    defer { copies.forEach { free($0) } }
    return body(copies.map { $0.map { UnsafePointer($0) } })
}
