/// The APNs environments a push certificate is issued for, marked by Apple's extensions
/// (a "Sandbox & Production" certificate carries both). Pushing to the other one gets 403 BadCertificateEnvironment.
package enum APNsCertificateEnvironment: String, Sendable, CaseIterable {
    case development
    case production

    var extensionOID: String {
        switch self {
        case .development: "1.2.840.113635.100.6.3.1"
        case .production: "1.2.840.113635.100.6.3.2"
        }
    }
}
