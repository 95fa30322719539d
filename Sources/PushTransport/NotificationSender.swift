import HTTP2TLS
import PGPushCore

/// One app's sending to one service, as the worker sees it: build a claimed row's request by
/// the service's own rules, say which part of the service it concerns, send it and report a
/// `Delivery` whose verdict the service's policy gave. A service is a module with one of
/// these (`APNsSender`, `FCMSender`); the worker, the queue and the outcome writer name no
/// service.
package protocol NotificationSender: Sendable {
    associatedtype Request: Sendable

    /// The configured app it sends for.
    var app: String { get }
    var service: Service { get }
    /// The request for a row, or why the row can never be sent.
    func prepare(_ notification: PushNotification) throws(RowRefusal) -> Request
    /// The part of the service a refusal of this request may pause (`PauseScope.requestScope`):
    /// APNs's topic. nil when the service pauses nothing smaller than the whole app.
    func scope(of request: Request) -> String?
    /// Sends one request; never throws: every outcome is a `Delivery`. `lane`: the row's;
    /// while requests wait for a connection, the more urgent lane goes first.
    func send(_ request: Request, lane: Lane) async -> Delivery
    /// Requests per second all connections together may send (claim sizing); nil when uncapped.
    var requestsPerSecond: Int? { get }
    /// How many connections the sender keeps (claim sizing).
    var connections: Int { get }
    /// The cap its connections share, when the app has a rate across workers
    /// (`ConnectionSettings.sharedWindow`): the worker grants it this worker's share.
    var sharedWindow: SharedSubmitWindow? { get }
    var statistics: SenderStatistics { get }
    /// Every `last_reason` its service's answers and its own refusals can give: metric label
    /// values as they are (any other reason counts as "other").
    var reasons: Set<String> { get }
    /// What `app_health` says when most of the app's recent answers hint at a wrong setup
    /// (`Delivery.hintsWrongSetup`): a reason name and what to check.
    var wrongSetup: (reason: String, why: String) { get }
    /// Whether a wrong setup is judged per scope (`scope(of:)`) rather than for the whole app:
    /// a VAPID key refused at one push service origin says nothing of the others.
    var wrongSetupIsPerScope: Bool { get }
    /// `observer` hears of every failure to connect and every connection ended by a protocol or I/O error.
    func onConnectionFailure(_ observer: @escaping @Sendable (ConnectionFailure) -> Void)
    func shutdown() async
}

extension NotificationSender {
    /// A request of the lane a row gets when its insert names none.
    package func send(_ request: Request) async -> Delivery { await send(request, lane: .unnamed) }

    package var wrongSetupIsPerScope: Bool { false }
}

/// Why a row can never be sent, found before any request: its `last_reason` (a stable name)
/// and a sentence for people that holds no payload content and no secret.
package struct RowRefusal: Error, Equatable, Sendable {
    package var reason: String
    package var detail: String

    package init(reason: String, detail: String) {
        self.reason = reason
        self.detail = detail
    }
}
