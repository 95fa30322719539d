import Foundation

/// When a generated certificate is valid.
public struct CertificateValidity: Sendable, Equatable {
    public let notBefore: Date
    public let notAfter: Date

    public init(notBefore: Date, notAfter: Date) {
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// From an hour before `start` (tolerating small clock differences) to `days` after it.
    public static func days(_ days: Int, from start: Date = Date()) -> CertificateValidity {
        CertificateValidity(notBefore: start.addingTimeInterval(-3_600), notAfter: start.addingTimeInterval(Double(days) * 86_400))
    }
}
