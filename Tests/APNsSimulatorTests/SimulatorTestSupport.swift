import APNsCore
import APNsSimulator
import Foundation
import HTTP2TLS
import Locking
import PGPushCore
import PGPushTestSupport
import PushCrypto
import Testing

let testTeamID = "TEAM123456"
let testKeyID = "KEY1234567"
let testBundleID = "com.example.app"
let testDeviceToken = String(repeating: "ab", count: 32)

/// One signing key per test run: key generation is the slow part of a JWT.
let testSigningKey: Result<ES256PrivateKey, CredentialError> = Result { () throws(CredentialError) in
    try ES256PrivateKey.generate()
}

func signingKey() throws -> ES256PrivateKey { try testSigningKey.get() }

/// A compact ES256 JWT as APNs expects it, with every part adjustable.
func makeJWT(key: ES256PrivateKey? = nil, keyID: String = testKeyID, teamID: String = testTeamID,
             issuedAt: Date = Date(), algorithm: String = "ES256") throws -> String {
    let header = Base64URL.encode(#"{"alg":"\#(algorithm)","kid":"\#(keyID)"}"#)
    let claims = Base64URL.encode(#"{"iss":"\#(teamID)","iat":\#(Int(issuedAt.timeIntervalSince1970))}"#)
    let signingInput = header + "." + claims
    let signature = try (key ?? signingKey()).sign(Array(signingInput.utf8))
    return signingInput + "." + Base64URL.encode(signature)
}

/// A wall clock the test moves by hand.
final class TestClock: Sendable {
    private let now = Locked(Date())
    var date: Date { now.withLock { $0 } }
    func advance(by seconds: TimeInterval) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// A push request as a well-behaved token-auth client sends it; each part can be changed.
func pushRequest(token: String = testDeviceToken, apnsID: String? = UUID().uuidString.lowercased(),
                 pushType: String? = "alert", topic: String? = testBundleID, priority: String? = nil,
                 jwt: String?, body: [UInt8] = Array(#"{"aps":{"alert":"Hi"}}"#.utf8),
                 extraHeaders: [HTTP2TLS.HeaderField] = [], method: String = "POST", path: String? = nil) -> HTTP2Request {
    var headers: [HTTP2TLS.HeaderField] = []
    if let jwt { headers.append(HTTP2TLS.HeaderField("authorization", "bearer \(jwt)", neverIndex: true)) }
    if let pushType { headers.append(HTTP2TLS.HeaderField("apns-push-type", pushType)) }
    if let topic { headers.append(HTTP2TLS.HeaderField("apns-topic", topic)) }
    if let apnsID { headers.append(HTTP2TLS.HeaderField("apns-id", apnsID)) }
    if let priority { headers.append(HTTP2TLS.HeaderField("apns-priority", priority)) }
    headers += extraHeaders
    return HTTP2Request(method: method, path: path ?? "/3/device/\(token)", headers: headers, body: body)
}

/// A JSON body of exactly `size` bytes.
func payload(ofSize size: Int) -> [UInt8] {
    let frame = #"{"aps":{"alert":"x"},"pad":""}"#
    return Array((#"{"aps":{"alert":"x"},"pad":""# + String(repeating: "a", count: size - frame.utf8.count) + #""}"#).utf8)
}

extension HTTP2Response {
    var reason: String? { APNsErrorBody.parse(body)?.reason }
}
