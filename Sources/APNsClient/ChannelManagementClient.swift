import APNsCore
import Foundation
import HTTP2TLS
import Locking
import PGPushCore
import PushCrypto

/// Apple's broadcast channel management API for one app: create, read, delete and list the
/// Live Activity channels of its bundle id, with the app's own credentials (provider token
/// or certificate) on one HTTP/2 connection of its own.
///
/// Paths and answers as Apple documents them: `POST /1/apps/<bundle id>/channels` answers
/// 201 with the new id in `apns-channel-id`; read and delete name the channel in the
/// `apns-channel-id` header (never in the path), and delete answers 204; the list is
/// `GET /1/apps/<bundle id>/all-channels`. 429 and 5xx are retried as `DeliveryPolicy`
/// retries a push, except that a create is retried only after a 429: after a 5xx or a lost
/// answer it may have been carried out, and a second one would make a second channel.
package final class ChannelManagementClient: Sendable {
    package let endpoint: APNsEndpoint
    package let bundleID: String
    private let authentication: APNsAuthentication
    private let tls: ClientTLSContext
    private let proxy: HTTPProxy?
    private let retry: RetryConfiguration
    private let client: HTTP2Client
    private let connection = Locked<HTTP2ClientConnection?>(nil)

    package init(endpoint: APNsEndpoint, bundleID: String, authentication: APNsAuthentication, extraCAFile: String? = nil,
                proxy: HTTPProxy? = nil, retry: RetryConfiguration = .default) throws(ChannelManagementError) {
        self.endpoint = endpoint
        self.proxy = proxy
        self.bundleID = bundleID
        self.authentication = authentication
        self.retry = retry
        var identity: ClientIdentity?
        if case .certificate(let certificate) = authentication { identity = certificate }
        do {
            tls = try ClientTLSContext(extraCAFile: extraCAFile, identity: identity)
            client = try HTTP2Client(threadName: "pgpush-channels")
        } catch {
            throw ChannelManagementError(status: nil, reason: nil, detail: "cannot set up TLS: \(error)")
        }
    }

    deinit { client.shutdown() }

    package func close() {
        connection.withLock { $0?.close() }
        client.shutdown()
    }

    /// Creates a channel; returns its id. `storesMessages`: Apple's storage policy 1 (the most
    /// recent message is kept for devices offline at the time), else 0 (nothing stored: every
    /// broadcast is then sent with expiration 0, for a higher publishing budget).
    package func create(storesMessages: Bool) async throws(ChannelManagementError) -> String {
        let body = #"{"message-storage-policy":\#(storesMessages ? 1 : 0),"push-type":"LiveActivity"}"#
        let answer = try await exchange("POST", path: channelsPath, body: Array(body.utf8), expecting: 201, repeatable: false)
        guard let id = answer.headers.value(of: "apns-channel-id"), !id.isEmpty else {
            throw ChannelManagementError(status: answer.status, reason: nil, detail: "APNs answered 201 without apns-channel-id")
        }
        return id
    }

    /// The channel's storage policy (0 or 1).
    package func read(channelID: String) async throws(ChannelManagementError) -> Int {
        let answer = try await exchange("GET", path: channelsPath, channelID: channelID, expecting: 200)
        let object = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any]
        guard let policy = object?["message-storage-policy"] as? Int else {
            throw ChannelManagementError(status: 200, reason: nil, detail: "APNs described the channel without message-storage-policy")
        }
        return policy
    }

    package func delete(channelID: String) async throws(ChannelManagementError) {
        _ = try await exchange("DELETE", path: channelsPath, channelID: channelID, expecting: 204)
    }

    /// Every live channel of the app in this environment.
    package func list() async throws(ChannelManagementError) -> [String] {
        let answer = try await exchange("GET", path: "/1/apps/\(bundleID)/all-channels", expecting: 200)
        let object = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any]
        guard let channels = object?["channels"] as? [String] else {
            throw ChannelManagementError(status: 200, reason: nil, detail: "APNs listed the channels without a \"channels\" array")
        }
        return channels
    }

    private var channelsPath: String { "/1/apps/\(bundleID)/channels" }

    /// One request, retried while the answer says so; throws for any answer but `expecting`.
    private func exchange(_ method: String, path: String, channelID: String? = nil, body: [UInt8] = [],
                          expecting: Int, repeatable: Bool = true) async throws(ChannelManagementError) -> HTTP2Response {
        var random = SystemRandomNumberGenerator()
        var attempts = 0
        while true {
            attempts += 1
            let delivery: Delivery
            switch await send(method, path: path, channelID: channelID, body: body) {
            case .success(let sent):
                if sent.status == expecting { return sent }
                delivery = DeliveryPolicy.delivery(status: sent.status, body: sent.body.isEmpty ? nil : APNsErrorBody.parse(sent.body),
                                                   uniqueID: nil, topicIsExplicit: false)
            case .failure(let lost):
                delivery = DeliveryPolicy.delivery(failure: lost, topicIsExplicit: false)
                connection.withLock { $0 = nil }
            }
            let mayRetry: Bool
            switch delivery.verdict {
            case .throttled, .notProcessed: mayRetry = true
            default: mayRetry = repeatable
            }
            let history = RowHistory(attempts: attempts, uncountedRequeues: delivery.verdict == .notProcessed ? attempts - 1 : 0)
            if mayRetry, case .retry(let delay, _)? = RetryRules.next(after: delivery.verdict, history: history, retry: retry,
                                                                      using: &random) {
                try? await Task.sleep(for: delay)
                continue
            }
            throw ChannelManagementError(delivery, attempts: attempts, creating: !repeatable)
        }
    }

    private func send(_ method: String, path: String, channelID: String?,
                      body: [UInt8]) async -> Result<HTTP2Response, DeliveryFailure> {
        var headers = [HeaderField("apns-request-id", UUID().uuidString.lowercased())]
        if case .token(let cache) = authentication {
            do {
                headers.append(HeaderField("authorization", try cache.currentToken().authorizationHeader, neverIndex: true))
            } catch {
                return .failure(DeliveryFailure(processing: .notProcessed, cause: .credentials, detail: error.description))
            }
        }
        if let channelID { headers.append(HeaderField("apns-channel-id", channelID)) }
        if !body.isEmpty { headers.append(HeaderField("content-type", "application/json")) }
        let open: HTTP2ClientConnection
        if let existing = connection.withLock({ $0 }) {
            open = existing
        } else {
            var configuration = HTTP2ClientConfiguration(tls: tls)
            configuration.proxy = proxy
            // The all-channels list is the one answer above the default 64 KiB: an app may
            // have thousands of channels, tens of bytes each.
            configuration.maxResponseBodySize = 4 << 20
            do {
                open = try await client.connect(host: endpoint.host, port: endpoint.port, configuration: configuration)
            } catch {
                return .failure(DeliveryFailure(processing: .notProcessed, cause: .couldNotConnect,
                                                detail: "cannot connect to \(endpoint): \(error)"))
            }
            connection.withLock { $0 = open }
        }
        do throws(RequestFailure) {
            return .success(try await open.send(HTTP2Request(method: method, path: path, headers: headers, body: body,
                                                             timeout: .seconds(30))))
        } catch {
            let cause: DeliveryFailure.Cause = error.processing == .notProcessed ? .refusedStream : .connectionLost
            return .failure(DeliveryFailure(processing: error.processing, cause: cause, detail: error.description))
        }
    }
}
