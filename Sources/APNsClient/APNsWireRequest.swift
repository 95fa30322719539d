import APNsCore
import HTTP2TLS
import PGPushCore

/// An `APNsRequest` as it goes on the wire: `POST /3/device/<token>`, or for a broadcast
/// `POST /4/broadcasts/apps/<bundle id>`, with its `apns-*` headers and body. The
/// transport writes the pseudo-headers from the method, path and authority.
enum APNsWireRequest {
    static func path(for request: APNsRequest) -> String {
        switch request.recipient {
        case .device(let token): "/3/device/\(token.hex)"
        case .channel: "/4/broadcasts/apps/\(request.topic)"
        }
    }

    /// Each header name appears once: APNs answers a repeated header with 400 DuplicateHeaders.
    ///
    /// Values that change with every request (`apns-id`, `apns-expiration`, `apns-collapse-id`,
    /// `apns-channel-id`) are never indexed: adding them to APNs's small HPACK dynamic table
    /// would only evict the values worth keeping there (the JWT, the topic, the push type).
    /// The JWT is indexed on purpose: a connection carries one token for its life, so after
    /// the first request it costs a byte or two instead of a few hundred.
    ///
    /// A broadcast names its channel in `apns-channel-id`, never in the path, and carries no
    /// `apns-topic` or `apns-collapse-id`. Its id header is `apns-request-id`.
    ///
    /// - Parameters:
    ///   - authority: the APNs host (and port when not 443), e.g. `api.push.apple.com`.
    ///   - providerToken: the token for token authentication; nil on a certificate connection.
    ///   - timeout: how long to wait for the answer; the connection's default when nil.
    static func make(for request: APNsRequest, authority: String, providerToken: ProviderToken?,
                     timeout: Duration?) -> HTTP2Request {
        HTTP2Request(method: "POST", path: path(for: request), authority: authority,
                     headers: headers(for: request, providerToken: providerToken), body: request.body, timeout: timeout)
    }

    static func headers(for request: APNsRequest, providerToken: ProviderToken?) -> [HeaderField] {
        var fields: [HeaderField] = []
        // Every header a request can carry: one allocation instead of one per growth.
        fields.reserveCapacity(7)
        if let providerToken { fields.append(HeaderField("authorization", providerToken.authorizationHeader)) }
        fields.append(HeaderField("apns-push-type", request.pushType.rawValue))
        // Broadcasts name the request's id `apns-request-id`; the row's apns_id serves as both.
        let idHeader = if case .channel = request.recipient { "apns-request-id" } else { "apns-id" }
        fields.append(HeaderField(idHeader, request.apnsID.lowercasedString, neverIndex: true))
        if let expiration = request.expiration {
            fields.append(HeaderField("apns-expiration", String(expiration), neverIndex: true))
        }
        fields.append(HeaderField("apns-priority", request.priority.headerValue))
        if case .channel(let channelID) = request.recipient {
            fields.append(HeaderField("apns-channel-id", channelID, neverIndex: true))
            return fields
        }
        fields.append(HeaderField("apns-topic", request.topic))
        if let collapseID = request.collapseID {
            fields.append(HeaderField("apns-collapse-id", collapseID, neverIndex: true))
        }
        return fields
    }
}
