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
