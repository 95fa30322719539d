import APNsCore
import HTTP2TLS
import Locking
import PGPushCore
import PushTransport

/// Acts on a refused provider token on the I/O thread, where the refusal arrives: the
/// token is renewed and every connection carrying the refused one is retired at once, so
/// no request written afterwards carries it. Left to the sending task, which may resume
/// many milliseconds later on a busy machine, every request written meanwhile with the
/// refused token would be refused too. The task still makes the same calls; both are
/// idempotent.
final class RefusedTokenWatch: Sendable {
    private struct PoolReference {
        weak var pool: ConnectionPool?
    }

    private let cache: ProviderTokenCache
    private let reference = Locked(PoolReference())

    init(cache: ProviderTokenCache) {
        self.cache = cache
    }

    /// The pool is made after the connection configuration that carries this watch.
    func attach(_ pool: ConnectionPool) {
        reference.withLock { $0.pool = pool }
    }

    func observe(_ request: HTTP2Request, _ response: HTTP2Response) {
        guard response.status == 403,
              APNsErrorBody.parse(response.body)?.reason == APNsReason.expiredProviderToken.rawValue,
              let authorization = request.headers.value(of: "authorization"), authorization.hasPrefix("bearer ")
        else { return }
        let jwt = String(authorization.dropFirst("bearer ".count))
        guard case .renewed? = try? cache.renewAfterRefusal(ofJWT: jwt) else { return }
        reference.withLock { $0.pool }?.retireConnections(carrying: jwt)
    }
}
