/// Who push services may contact about an application's messages: the `sub` claim of every
/// VAPID token (RFC 8292 §2.1), a `mailto:` address or an `https:` URL.
///
/// Push services read it more strictly than the RFC: Apple's refuses tokens whose subject is
/// not a real address or site (`BadJwtToken`, seen with `mailto:` on `localhost`, reserved
/// names such as `.invalid`, and `mailto: <addr>` with a space or brackets). Such a subject
/// is refused when the configuration loads, not at the first send.
package struct VAPIDSubject: Sendable, Equatable, CustomStringConvertible {
    package let text: String

    /// Names no real host can have (RFC 2606, RFC 6761).
    static let reservedNames = ["localhost", "invalid", "local", "test"]

    package init(_ text: String) throws(VAPIDError) {
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) else {
            throw .invalidSubject("it must be printable ASCII without spaces or quotes")
        }
        let host: Substring
        if text.hasPrefix("mailto:") {
            let address = text.dropFirst("mailto:".count)
            guard !address.contains("<"), !address.contains(">"),
                  let at = address.firstIndex(of: "@"), address[..<at].count > 0
            else { throw .invalidSubject("a mailto: subject is mailto:name@domain, without brackets") }
            host = address[address.index(after: at)...]
        } else if text.hasPrefix("https://") {
            let rest = text.dropFirst("https://".count)
            let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            guard !authority.contains("@") else { throw .invalidSubject("an https: subject has no user name") }
            host = authority.prefix { $0 != ":" }
        } else {
            throw .invalidSubject("it must start with mailto: or https://")
        }
        let labels = host.lowercased().split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty }) else {
            throw .invalidSubject("\(host) is not a domain name")
        }
        if let last = labels.last, Self.reservedNames.contains(String(last)) {
            throw .invalidSubject("\(host) is a reserved name; push services refuse it")
        }
        self.text = text
    }

    package var description: String { text }
}
