/// Where a Web Push subscription's messages go: an `https` origin (host and port). It is what
/// the allow-list names, what a VAPID token's `aud` is, and what connections are shared by.
package struct PushServiceOrigin: Sendable, Hashable, CustomStringConvertible {
    /// Lower case: a DNS name of letters, digits, `-` and `.`, an IPv4 literal, or an IPv6
    /// literal without its brackets.
    package let host: String
    package let port: Int

    package init(host: String, port: Int = 443) {
        self.host = host.lowercased()
        self.port = port
    }

    /// The host is an address, not a name.
    package var hostIsAddress: Bool { IPAddress(host) != nil }

    /// `https://host`, with `:port` unless it is 443, an IPv6 host in brackets: the form of
    /// RFC 6454's serialization that VAPID's `aud` takes.
    package var description: String {
        let shown = host.contains(":") ? "[\(host)]" : host
        return port == 443 ? "https://\(shown)" : "https://\(shown):\(port)"
    }
}
