import HTTP2TLS
import APNsCore
import PGPushCore
import PushTransport

/// APNs as the worker sees it: a row becomes an `APNsRequest` by Apple's rules
/// (`PushNotification.validated`), a refusal may pause the request's topic, and the client
/// says what each answer means (`DeliveryPolicy`).
package struct APNsSender: NotificationSender {
    package let client: APNsClient

    package init(client: APNsClient) {
        self.client = client
    }

    package var app: String { client.configuration.appName }

    package var service: Service { .apns }

    package func prepare(_ notification: PushNotification) throws(RowRefusal) -> APNsRequest {
        do throws(ValidationFailure) {
            return try notification.validated(bundleID: client.configuration.bundleID,
                                              authentication: client.configuration.authentication.method)
        } catch {
            throw RowRefusal(reason: error.reason.rawValue, detail: error.message)
        }
    }

    package func scope(of request: APNsRequest) -> String? { request.topic }

    package func send(_ request: APNsRequest, lane: Lane) async -> Delivery { await client.send(request, lane: lane) }

    package var sharedWindow: SharedSubmitWindow? { client.configuration.connection.sharedWindow }

    package var requestsPerSecond: Int? {
        client.configuration.connection.effectiveRatePerConnection.map { $0 * client.configuration.connection.connections }
    }

    package var connections: Int { client.configuration.connection.connections }

    package var statistics: SenderStatistics { client.statistics }

    package var reasons: Set<String> {
        Set(APNsReason.allCases.map(\.rawValue)).union(ValidationFailure.Reason.allCases.map(\.rawValue))
    }

    package var wrongSetup: (reason: String, why: String) {
        ("LikelyEnvironmentMismatch", "most recent answers are BadDeviceToken: tokens may belong to the other APNs environment")
    }

    package func onConnectionFailure(_ observer: @escaping @Sendable (ConnectionFailure) -> Void) {
        client.onConnectionFailure(observer)
    }

    package func shutdown() async { await client.shutdown(timeout: .seconds(10)) }
}
