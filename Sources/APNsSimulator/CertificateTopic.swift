import Foundation

/// The app topic named by a client certificate's RFC 2253 subject: Apple's push
/// certificates carry the bundle id as `UID`; test certificates may only have a `CN`.
enum CertificateTopic {
    static func topic(fromSubject subject: String) -> String? {
        let attributes = subject.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        func value(_ key: String) -> String? {
            attributes.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
        }
        let topic = value("UID") ?? value("CN")
        return topic?.isEmpty == false ? topic : nil
    }
}
