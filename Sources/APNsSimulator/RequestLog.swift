import Foundation
import Locking

/// Appends `RequestLogEntry` lines to a file, buffered; safe from any thread.
final class RequestLog: Sendable {
    private struct State {
        var handle: FileHandle?
        var buffer = Data()
    }

    private static let flushThreshold = 64 * 1024
    private let state: Locked<State>

    init(path: String) throws(SimulatorError) {
        guard FileManager.default.createFile(atPath: path, contents: nil),
              let handle = FileHandle(forWritingAtPath: path) else { throw .cannotWriteFile(path: path) }
        state = Locked(State(handle: handle))
    }

    func append(_ entry: RequestLogEntry) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var line = try? encoder.encode(entry) else { return }
        line.append(0x0A)
        state.withLock { state in
            state.buffer.append(line)
            if state.buffer.count >= Self.flushThreshold { Self.flush(&state) }
        }
    }

    func flush() { state.withLock { Self.flush(&$0) } }

    func close() {
        state.withLock { state in
            Self.flush(&state)
            try? state.handle?.close()
            state.handle = nil
        }
    }

    private static func flush(_ state: inout State) {
        guard !state.buffer.isEmpty, let handle = state.handle else { return }
        try? handle.write(contentsOf: state.buffer)
        state.buffer.removeAll(keepingCapacity: true)
    }
}

/// One line of the simulator's JSON-lines request log. The `authorization` header is
/// never recorded (it holds the provider token); `providerToken` only says whether one came.
package struct RequestLogEntry: Sendable, Equatable, Codable {
    /// When the simulator handled the request (its clock, UNIX milliseconds).
    package var timeMilliseconds: Int64
    /// When the kernel received it (UNIX milliseconds, to the microsecond), before any
    /// wait for the simulator's thread; nil when the socket gave no time. Rates and
    /// latencies are measured from this.
    package var receivedMilliseconds: Double?
    package var connection: Int
    package var stream: Int32
    package var method: String
    package var path: String
    /// The device token from `:path`, as sent.
    package var token: String?
    /// Request headers except `authorization`.
    package var headers: [String: String]
    package var providerToken: Bool
    /// The `kid` its header names (not secret: which key signed it), when one came.
    package var providerTokenKeyID: String?
    package var bodyBytes: Int
    /// `answered`, `refused` (REFUSED_STREAM), `dropped` (connection closed, no answer),
    /// `ignored` (after this connection's GOAWAY) or `goaway` (answered by a GOAWAY that
    /// processed no stream).
    package var outcome: String
    package var status: Int?
    package var reason: String?
}
