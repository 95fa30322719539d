import APNsCore
import PGPushCore

extension APNsEnvironment {
    /// Apple's certificate extension marking a push certificate as issued for this
    /// environment (a "Sandbox & Production" certificate carries both). Pushing to the
    /// other one gets 403 BadCertificateEnvironment.
    var certificateExtensionOID: String {
        switch self {
        case .development: "1.2.840.113635.100.6.3.1"
        case .production: "1.2.840.113635.100.6.3.2"
        }
    }
}
