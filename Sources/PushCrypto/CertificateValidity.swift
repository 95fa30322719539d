import Foundation

/// When a generated certificate is valid.
package struct CertificateValidity: Sendable, Equatable {
    package let notBefore: Date
    package let notAfter: Date

    package init(notBefore: Date, notAfter: Date) {
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// From an hour before `start` (tolerating small clock differences) to `days` after it.
    package static func days(_ days: Int, from start: Date = Date()) -> CertificateValidity {
        CertificateValidity(notBefore: start.addingTimeInterval(-3_600), notAfter: start.addingTimeInterval(Double(days) * 86_400))
    }
}
