/// How an app authenticates to APNs. Validation needs it
/// because some push types are refused on certificate connections.
package enum AuthenticationMethod: Sendable, Equatable {
    /// A provider token (ES256 JWT from a .p8 key), sent in `authorization`.
    case token
    /// A TLS client certificate; no `authorization` header.
    case certificate
}
