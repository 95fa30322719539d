import APNsCore
import Foundation
import PGPushCore
import PushTransport

/// Where APNs requests go: Apple's production or sandbox host, or a base URL override
/// such as `https://127.0.0.1:2197` for the simulator.
package struct APNsEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// Host name or IP address, without brackets, as given to the resolver.
    package let host: String
    package let port: Int

    package static let productionHost = "api.push.apple.com"
    package static let developmentHost = "api.sandbox.push.apple.com"
    /// Apple's documented ports: 443, and 2197 for networks that block 443.
    package static let applePorts: Set<Int> = [443, 2197]

    package static let production = APNsEndpoint(host: productionHost, port: 443)
    package static let development = APNsEndpoint(host: developmentHost, port: 443)
    /// Apple's broadcast channel management API: hosts and ports of its own (note the
    /// port split: 2196 production, 2195 sandbox).
    package static let channelManagementProduction = APNsEndpoint(host: "api-manage-broadcast.push.apple.com", port: 2196)
    package static let channelManagementDevelopment = APNsEndpoint(host: "api-manage-broadcast.sandbox.push.apple.com", port: 2195)

    private init(host: String, port: Int) {
        self.host = host
        self.port = port
        let bracketed = host.contains(":") ? "[\(host)]" : host
        authority = port == 443 ? bracketed : "\(bracketed):\(port)"
    }

    /// Apple's host for `environment` on port 443 or 2197.
    package init(environment: APNsEnvironment, port: Int = 443) throws(APNsEndpointError) {
        guard Self.applePorts.contains(port) else { throw .portNotOfferedByApple(port) }
        self.init(host: environment == .production ? Self.productionHost : Self.developmentHost, port: port)
    }

    /// Parses `https://host[:port][/]`; the port defaults to 443. IPv6 addresses go in brackets.
    /// Only https is accepted: APNs speaks HTTP/2 over TLS and verification is never off.
    package init(baseURL: String) throws(APNsEndpointError) {
        let text = baseURL.trimmingCharacters(in: .whitespaces)
        guard let schemeEnd = text.range(of: "://") else { throw .notAURL(baseURL) }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "https" else { throw .schemeNotHTTPS(String(scheme)) }
        var rest = Substring(text[schemeEnd.upperBound...])
        if let slash = rest.firstIndex(of: "/") {
            let path = rest[slash...]
            guard path == "/" else { throw .pathNotAllowed(String(path)) }
            rest = rest[..<slash]
        }
        guard !rest.contains("@") else { throw .userInfoNotAllowed }
        guard !rest.contains("?"), !rest.contains("#") else { throw .pathNotAllowed(String(rest)) }
        let hostPart: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw .invalidHost(String(rest)) }
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .invalidHost(String(rest)) }
                portText = after.dropFirst()
            }
            guard hostPart.contains(":"), hostPart.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw .invalidHost(String(hostPart))
            }
        } else {
            if let colon = rest.firstIndex(of: ":") {
                hostPart = rest[..<colon]
                portText = rest[rest.index(after: colon)...]
            } else {
                hostPart = rest
            }
            guard !hostPart.isEmpty else { throw .missingHost }
            guard hostPart.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }) else {
                throw .invalidHost(String(hostPart))
            }
        }
        guard !hostPart.isEmpty else { throw .missingHost }
        var port = 443
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value), portText.allSatisfy(\.isASCII) else {
                throw .invalidPort(String(portText))
            }
            port = value
        }
        self.init(host: String(hostPart).lowercased(), port: port)
    }

    /// `:authority`: the host, with the port unless 443; IPv6 in brackets. Stored: every request sends it.
    package let authority: String

    package var description: String { "https://\(authority)" }

    /// host:port, always with the port, IPv6 in brackets: the `endpoint` of a connection failure.
    package var hostAndPort: String { address.hostAndPort }

    package var address: ServiceAddress { ServiceAddress(host: host, port: port) }
}

/// Why an APNs endpoint setting was refused; the text names `PGPUSH_APNS_URL` / `PGPUSH_APNS_ENV`.
package enum APNsEndpointError: Error, Sendable, Equatable, CustomStringConvertible {
    case notAURL(String)
    case schemeNotHTTPS(String)
    case missingHost
    case invalidHost(String)
    case invalidPort(String)
    case pathNotAllowed(String)
    case userInfoNotAllowed
    case portNotOfferedByApple(Int)

    package var description: String {
        switch self {
        case .notAURL(let text):
            return "APNs URL \"\(text.prefix(200))\" is not a URL; expected https://host[:port] (PGPUSH_APNS_URL)"
        case .schemeNotHTTPS(let scheme):
            return "APNs URL scheme \"\(scheme.prefix(40))\" is not supported: only https (PGPUSH_APNS_URL)"
        case .missingHost:
            return "APNs URL has no host (PGPUSH_APNS_URL)"
        case .invalidHost(let host):
            return "APNs URL host \"\(host.prefix(200))\" is not a host name or IP address (PGPUSH_APNS_URL)"
        case .invalidPort(let port):
            return "APNs URL port \"\(port.prefix(40))\" is not a number from 1 to 65535 (PGPUSH_APNS_URL)"
        case .pathNotAllowed(let path):
            return "APNs URL must be a base URL without path, query or fragment, got \"\(path.prefix(200))\" (PGPUSH_APNS_URL)"
        case .userInfoNotAllowed:
            return "APNs URL must not contain user information (PGPUSH_APNS_URL)"
        case .portNotOfferedByApple(let port):
            return "APNs port \(port) is not offered by Apple: use 443 or 2197 (PGPUSH_APNS_ENV), or PGPUSH_APNS_URL for another server"
        }
    }
}
