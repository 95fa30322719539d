import HTTP2TLS
import PushCrypto

/// Why the simulator could not start (or write its files). Never contains key material.
package enum SimulatorError: Error, Sendable, CustomStringConvertible {
    case invalidFaults(FaultPlanError)
    case credentials(CredentialError)
    case server(ServerError)
    case cannotWriteFile(path: String)
    case alreadyStarted
    case invalidConfiguration(String)

    package var description: String {
        switch self {
        case .invalidFaults(let error): "fault plan: \(error)"
        case .credentials(let error): "certificate or key: \(error)"
        case .server(let error): "cannot start the server: \(error)"
        case .cannotWriteFile(let path): "cannot write \(path)"
        case .alreadyStarted: "the simulator is already running"
        case .invalidConfiguration(let text): text
        }
    }
}
