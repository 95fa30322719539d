/// The I/O thread (or its eventfd) could not be created.
public struct LoopStartError: Error, Sendable, CustomStringConvertible {
    public var detail: String
    public var description: String { "cannot start I/O thread: \(detail)" }
}
