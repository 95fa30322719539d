import APNsCore
import PGPushCore
import PushCrypto

extension ClientIdentity {
    /// Apple's extension listing an APNs certificate's topics, as topic/type pairs.
    static let apnsTopicsExtensionOID = "1.2.840.113635.100.6.3.6"

    /// The APNs topics the certificate covers (Apple's topics extension, else the subject's UID); may be empty.
    package var topics: [String] {
        extensionData(Self.apnsTopicsExtensionOID).flatMap(APNsTopicList.topics(fromDER:)) ?? subjectUserID.map { [$0] } ?? []
    }

    /// The APNs environments Apple's extensions mark the certificate for; empty for other certificates.
    package var environments: Set<APNsEnvironment> {
        Set(APNsEnvironment.allCases.filter { hasExtension($0.certificateExtensionOID) })
    }
}
