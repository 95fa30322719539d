import Foundation

/// The push service origins an application's Web Push rows may name (`webpush_allowed_origins`):
/// `https://host[:port]`, or `https://*.domain[:port]` for any host under a domain (Apple's and
/// Windows' services answer from many hosts). An endpoint at any other origin is never called.
///
/// A host given as an address is allowed only when an entry names that very address: the
/// simulator on 127.0.0.1 in tests, a relay the operator runs. A host given by name must also
/// resolve to public addresses only (`IPAddress.isPublic`), checked where the connection is
/// made, so that a name pointed at an internal address does not turn the worker into a way in.
package struct AllowedOrigins: Sendable, Equatable, CustomStringConvertible {
    package struct Entry: Sendable, Equatable, CustomStringConvertible {
        /// A host, or for a wildcard the domain its hosts end in (without the `*.`).
        package let host: String
        package let wildcard: Bool
        package let port: Int

        package func allows(_ origin: PushServiceOrigin) -> Bool {
            guard origin.port == port else { return false }
            if wildcard { return !origin.hostIsAddress && origin.host.hasSuffix("." + host) }
            return origin.host == host
        }

        package var description: String {
            PushServiceOrigin(host: (wildcard ? "*." : "") + host, port: port).description
        }
    }

    /// The browsers' public push services: Chrome's (FCM), Firefox's (Mozilla), Safari's
    /// (Apple) and Edge's on Windows (WNS).
    package static let publicPushServices = try! AllowedOrigins(
        "https://fcm.googleapis.com, https://updates.push.services.mozilla.com, https://*.push.apple.com, https://*.notify.windows.com")

    package let entries: [Entry]

    /// Parses the setting: entries separated by commas, spaces around them ignored.
    package init(_ setting: String) throws(AllowedOriginsError) {
        var entries: [Entry] = []
        for item in setting.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
            var text = item
            let wildcard = text.lowercased().hasPrefix("https://*.")
            if wildcard { text = "https://" + text.dropFirst("https://*.".count) }
            let endpoint: WebPushEndpoint
            do {
                endpoint = try WebPushEndpoint(text)
            } catch {
                throw .invalid(item, "not https://host[:port] (\(error.detail))")
            }
            guard endpoint.target == "/", !text.hasSuffix("/") else { throw .invalid(item, "an origin has no path") }
            if wildcard {
                guard !endpoint.origin.hostIsAddress, endpoint.origin.host.contains(".") else {
                    throw .invalid(item, "*. must be followed by a domain of at least two labels")
                }
            }
            entries.append(Entry(host: endpoint.origin.host, wildcard: wildcard, port: endpoint.origin.port))
        }
        guard !entries.isEmpty else { throw .invalid(setting, "no origin listed") }
        self.entries = entries
    }

    /// Whether rows may send to `origin` at all (its addresses are checked when connecting).
    package func allows(_ origin: PushServiceOrigin) -> Bool {
        entries.contains { $0.allows(origin) }
    }

    /// Whether a connection to `origin` may go to `address`, one of the addresses its name
    /// resolved to: a public one, or the very address an entry names.
    package func allows(_ address: IPAddress, for origin: PushServiceOrigin) -> Bool {
        origin.hostIsAddress ? IPAddress(origin.host) == address && allows(origin) : address.isPublic
    }

    package var description: String { entries.map(\.description).joined(separator: ", ") }
}

package enum AllowedOriginsError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalid(String, String)

    package var description: String {
        switch self {
        case .invalid(let entry, let why): "webpush_allowed_origins: \"\(entry)\": \(why)"
        }
    }
}
