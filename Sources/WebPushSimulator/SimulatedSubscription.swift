import Foundation
import PGPushCore
import PushCrypto

/// A browser subscription the simulator made, as a browser's push service would: its id (the
/// endpoint's last path segment), the browser's key pair and auth secret, and the application
/// server key (VAPID public key) it was made for.
package struct SimulatedSubscription: Sendable {
    package let id: String
    package let browserKey: P256KeyAgreementKey
    package let auth: [UInt8]
    package let applicationServerKey: [UInt8]

    /// What `PushSubscription.toJSON()` gives a web app, for the push service at `origin`.
    package func json(origin: String) -> String {
        #"{"endpoint":"\#(origin)/push/\#(id)","expirationTime":null,"keys":{"p256dh":"\#(Base64URL.encode(browserKey.publicKey))","auth":"\#(Base64URL.encode(auth))"}}"#
    }

    static func mint(applicationServerKey: [UInt8]) throws(WebPushCryptoError) -> SimulatedSubscription {
        var auth = [UInt8](repeating: 0, count: 16)
        for index in auth.indices { auth[index] = UInt8.random(in: 0...255) }
        return SimulatedSubscription(id: UUID().uuidString.lowercased(), browserKey: try P256KeyAgreementKey.generate(),
                                     auth: auth, applicationServerKey: applicationServerKey)
    }
}
