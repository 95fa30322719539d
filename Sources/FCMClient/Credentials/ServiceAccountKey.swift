import Foundation
import PushCrypto

/// A Google service-account key file (`fcm_credentials_file`): who signs the assertion an
/// FCM sender trades for access tokens, and where to trade it. Only the fields sending
/// needs are read; the private key never appears in any error or description.
package struct ServiceAccountKey: Sendable, CustomStringConvertible {
    package let projectID: String
    /// The assertion's `iss`.
    package let clientEmail: String
    /// The assertion header's `kid`.
    package let privateKeyID: String
    /// Where the assertion is POSTed for an access token.
    package let tokenURI: URL
    package let privateKey: RS256PrivateKey

    /// Reads and checks the file at `path`.
    package init(contentsOfFile path: String) throws(ServiceAccountKeyError) {
        let bytes: [UInt8]
        do {
            bytes = try CredentialFile.contents(of: path)
        } catch {
            throw .unreadable(path: path, detail: error.description)
        }
        try self.init(json: bytes, source: path)
    }

    /// Parses the file's JSON; `source` names it in errors.
    package init(json bytes: [UInt8], source: String) throws(ServiceAccountKeyError) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            throw .notJSON(source: source)
        }
        func field(_ name: String) throws(ServiceAccountKeyError) -> String {
            guard let value = object[name] as? String, !value.isEmpty else { throw .missingField(source: source, field: name) }
            return value
        }
        let type = object["type"] as? String
        guard type == "service_account" else { throw .notAServiceAccount(source: source, type: type) }
        projectID = try field("project_id")
        clientEmail = try field("client_email")
        privateKeyID = try field("private_key_id")
        let uri = try field("token_uri")
        // The assertion and the access token travel to this address: TLS only.
        guard let url = URL(string: uri), url.scheme == "https", url.host != nil else {
            throw .tokenURINotHTTPS(source: source)
        }
        tokenURI = url
        let pem = try field("private_key")
        do {
            privateKey = try RS256PrivateKey(pemEncoded: pem, source: "\(source): private_key")
        } catch {
            throw .privateKey(error)
        }
    }

    package var description: String { "ServiceAccountKey(\(clientEmail), project \(projectID), key id \(privateKeyID))" }
}

/// Why a service-account key file cannot be used; never quotes the file's secrets.
package enum ServiceAccountKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    case unreadable(path: String, detail: String)
    case notJSON(source: String)
    case notAServiceAccount(source: String, type: String?)
    case missingField(source: String, field: String)
    case tokenURINotHTTPS(source: String)
    case privateKey(CredentialError)

    package var description: String {
        switch self {
        case .unreadable(_, let detail):
            return detail
        case .notJSON(let source):
            return "\(source): not a JSON object (a service-account key file downloaded from the Firebase console or Google Cloud)"
        case .notAServiceAccount(let source, let type):
            return "\(source): \"type\" is \(type.map { "\"\($0)\"" } ?? "missing"), not \"service_account\""
        case .missingField(let source, let field):
            return "\(source): no \"\(field)\" text; a service-account key file has type, project_id, private_key_id, private_key, client_email and token_uri"
        case .tokenURINotHTTPS(let source):
            return "\(source): \"token_uri\" is not an https:// URL"
        case .privateKey(let error):
            return error.description
        }
    }
}
