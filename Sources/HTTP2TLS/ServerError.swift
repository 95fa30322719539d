/// Why an `HTTP2Server` could not start.
public enum ServerError: Error, Sendable, CustomStringConvertible {
    case cannotListen(String)
    case tls(TLSConfigurationError)
    case cannotStartThread(String)

    public var description: String {
        switch self {
        case .cannotListen(let text): return "cannot listen: \(text)"
        case .tls(let error): return error.description
        case .cannotStartThread(let text): return "cannot start I/O thread: \(text)"
        }
    }
}
