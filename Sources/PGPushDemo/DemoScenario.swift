import APNsSimulator
import Foundation
import PGPushCore

/// The notifications `pgpush demo` enqueues, the faults the simulator plays for them,
/// and how each one must end. A value, so tests run a small version of the same story.
package struct DemoScenario: Sendable {
    /// How a row must end; attempts and reason only where the story fixes them.
    package struct Expectation: Sendable, Equatable {
        package var status: String
        package var attempts: Int?
        package var reason: String?

        package init(status: String, attempts: Int? = nil, reason: String? = nil) {
            self.status = status
            self.attempts = attempts
            self.reason = reason
        }
    }

    /// One `pgpush.enqueue` (one token) or `pgpush.enqueue_many` call.
    package struct Batch: Sendable {
        /// What the rows stand for in the report, e.g. "unregistered token".
        package var label: String
        package var tokens: [String]
        package var pushType = "alert"
        package var payload: String
        package var collapseID: String?
        /// Seconds from enqueue; negative is already past.
        package var expiresIn: Double?
        package var sendAfter: Double?
        /// Enqueued only once every row of the batch with this label has finished.
        package var after: String?
        /// One row to the broadcast channel the demo creates (`tokens` is then empty).
        package var toChannel = false
        /// `apns`, `fcm` or `webpush`: the service the rows go to. A Web Push batch's `tokens` name
        /// browsers; the demo makes a subscription for each at the Web Push simulator.
        package var service = "apns"
        /// An FCM topic the row goes to (`tokens` is then empty).
        package var topic: String?
        /// `urgent`, `normal` or `bulk`.
        package var lane = "normal"
        package var expectation: Expectation

        package init(label: String, tokens: [String], pushType: String = "alert", payload: String,
                    collapseID: String? = nil, expiresIn: Double? = nil, sendAfter: Double? = nil, after: String? = nil,
                    toChannel: Bool = false, service: String = "apns", topic: String? = nil, lane: String = "normal",
                    expectation: Expectation) {
            self.lane = lane
            self.service = service
            self.topic = topic
            self.label = label
            self.tokens = tokens
            self.pushType = pushType
            self.payload = payload
            self.collapseID = collapseID
            self.expiresIn = expiresIn
            self.sendAfter = sendAfter
            self.after = after
            self.toChannel = toChannel
            self.expectation = expectation
        }

        package var rowCount: Int { toChannel || topic != nil ? 1 : tokens.count }
    }

    /// The labels of the campaign and of the one-time code enqueued after it.
    package static let campaignLabel = "campaign (bulk lane)"
    package static let urgentLabel = "one-time code after the campaign (urgent lane)"

    /// Stands for the demo's channel id in payloads (`input-push-channel` of the start).
    package static let channelPlaceholder = "$CHANNEL_ID"

    package var batches: [Batch]
    package var faults: FaultPlan
    /// FCM registration tokens the FCM simulator answers `UNREGISTERED`.
    package var unregisteredFCMTokens: [String] = []
    /// Browsers (names in Web Push batches) whose subscription the push service says is gone.
    package var unsubscribedBrowsers: [String] = []

    package var notificationCount: Int { batches.reduce(0) { $0 + $1.rowCount } }
    /// Whether a batch goes to a channel: the demo then creates one first and deletes it at the end.
    package var usesChannel: Bool { batches.contains(where: \.toChannel) }
    /// Whether a batch goes to FCM: the demo then starts the FCM simulator and gives the app a service account.
    package var usesFCM: Bool { batches.contains { $0.service == "fcm" } }
    /// Whether a batch goes to browsers: the demo then starts the Web Push simulator and gives the app a VAPID key.
    package var usesWebPush: Bool { batches.contains { $0.service == "webpush" } }

    /// The realistic mix the demo shows: plain alerts (a few of them hit random 503s and
    /// are retried), background, VoIP and push-to-talk pushes, a 160-digit token, an
    /// unregistered token and a later row for it, a payload only the worker can reject, scripted 503 and 429 answers,
    /// a row already expired and one scheduled `scheduledDelay` seconds later; with `liveActivity`,
    /// a Live Activity started on a device (subscribed to a broadcast channel) and two
    /// updates broadcast to that channel.
    /// With `android`, the same app reaches Android devices through FCM: alerts and a data
    /// message to registration tokens, one to a topic, and an uninstalled app's token. With
    /// `browsers`, it reaches web browsers through their push service: a notification to each
    /// browser's subscription, and one to a browser that unsubscribed. Last, a `campaign` of
    /// that many rows in the bulk lane, and after it a one-time code in the urgent lane, which
    /// is sent before most of the campaign.
    package static func standard(alerts: Int = 200, background: Int = 20, voip: Int = 4, scheduledDelay: Double = 3,
                                randomServerErrors: Double = 0.03, liveActivity: Bool = true, android: Int = 12, browsers: Int = 6,
                                campaign: Int = 300, seed: UInt64 = UInt64.random(in: 1...UInt64.max)) -> DemoScenario {
        var random = SeededRandomNumberGenerator(seed: seed)
        func token(digits: Int = 64) -> String {
            String((0..<digits).map { _ in "0123456789abcdef".randomElement(using: &random) ?? "0" })
        }
        let delivered = Expectation(status: "delivered")
        let unregistered = token(), retriedTwice = token(), alwaysBusy = token(), throttled = token()

        var batches: [Batch] = []
        let greetings = ["Your order has shipped", "New message from Alice", "Your ride is 2 minutes away", "Flash sale: 20% off"]
        var remaining = alerts
        for (index, greeting) in greetings.enumerated() where remaining > 0 {
            let size = index == greetings.count - 1 ? remaining : min(remaining, (alerts + greetings.count - 1) / greetings.count)
            remaining -= size
            batches.append(Batch(label: "alert", tokens: (0..<size).map { _ in token() },
                                 payload: #"{"aps":{"alert":{"title":"Demo","body":"\#(greeting)"},"sound":"default"}}"#,
                                 collapseID: index == 3 ? "sale" : nil, expectation: delivered))
        }
        if background > 0 {
            batches.append(Batch(label: "background", tokens: (0..<background).map { _ in token() }, pushType: "background",
                                 payload: #"{"aps":{"content-available":1},"sync":"inbox"}"#, expectation: delivered))
        }
        for call in 0..<voip {
            batches.append(Batch(label: "voip", tokens: [token()], pushType: "voip",
                                 payload: #"{"call_id":"call-\#(call)","caller":"Alice"}"#, expectation: delivered))
        }
        batches += [
            Batch(label: "160-digit token", tokens: [token(digits: 160)],
                  payload: #"{"aps":{"alert":"Tokens are not always 64 digits"}}"#, expectation: delivered),
            Batch(label: "unregistered token", tokens: [unregistered], payload: #"{"aps":{"alert":"Anyone there?"}}"#,
                  expectation: Expectation(status: "failed", attempts: 1, reason: "Unregistered")),
            // Enqueued once APNs has answered the row above: its token is listed, so no request is spent.
            Batch(label: "the unregistered token again", tokens: [unregistered], payload: #"{"aps":{"alert":"Still there?"}}"#,
                  after: "unregistered token",
                  expectation: Expectation(status: "failed", attempts: 0, reason: "KnownInvalidToken")),
            Batch(label: "push to talk (tried once, never stored)", tokens: [token()], pushType: "pushtotalk",
                  payload: #"{"activeSpeaker":"Alice"}"#, expectation: delivered),
            Batch(label: "background push with an alert", tokens: [token()], pushType: "background",
                  payload: #"{"aps":{"content-available":1,"alert":"not allowed here"}}"#,
                  expectation: Expectation(status: "failed", attempts: 1, reason: "BadBackgroundPayload")),
            Batch(label: "503, 503, then 200", tokens: [retriedTwice], payload: #"{"aps":{"alert":"Third time lucky"}}"#,
                  expectation: Expectation(status: "delivered", attempts: 3)),
            Batch(label: "503 on every attempt", tokens: [alwaysBusy], payload: #"{"aps":{"alert":"Never answered"}}"#,
                  expectation: Expectation(status: "failed", attempts: 4, reason: "ServiceUnavailable")),
            Batch(label: "429, then 200", tokens: [throttled], payload: #"{"aps":{"alert":"Slow down"}}"#,
                  expectation: Expectation(status: "delivered", attempts: 2)),
            Batch(label: "expired before sending", tokens: [token()], payload: #"{"aps":{"alert":"Too late"}}"#,
                  expiresIn: -60, expectation: Expectation(status: "expired", attempts: 0)),
            Batch(label: "scheduled \(Int(scheduledDelay)) s later", tokens: [token()],
                  payload: #"{"aps":{"alert":"Scheduled"}}"#, sendAfter: scheduledDelay, expectation: delivered),
        ]

        if liveActivity {
            let liveActivityToken = token()
            let now = Int(Date().timeIntervalSince1970)
            batches += [
                Batch(label: "Live Activity start (subscribes to the channel)", tokens: [liveActivityToken], pushType: "liveactivity",
                      payload: #"{"aps":{"event":"start","timestamp":\#(now),"content-state":{"score":"0-0"},"#
                          + #""attributes-type":"MatchAttributes","attributes":{"home":"Lyon","away":"Porto"},"#
                          + #""alert":{"title":"Kick-off","body":"Lyon – Porto"},"input-push-channel":"\#(channelPlaceholder)"}}"#,
                      expectation: delivered),
                Batch(label: "Live Activity update to the channel", tokens: [], pushType: "liveactivity",
                      payload: #"{"aps":{"event":"update","timestamp":\#(now + 1),"content-state":{"score":"1-0"}}}"#,
                      toChannel: true, expectation: delivered),
                Batch(label: "Live Activity update to the channel", tokens: [], pushType: "liveactivity",
                      payload: #"{"aps":{"event":"update","timestamp":\#(now + 2),"content-state":{"score":"2-0"}}}"#,
                      toChannel: true, expectation: delivered),
            ]
        }

        var uninstalled: [String] = []
        if android > 0 {
            func registrationToken() -> String { "demo-" + token(digits: 22) + ":APA91b" + token(digits: 120) }
            let gone = registrationToken()
            uninstalled = [gone]
            batches += [
                Batch(label: "Android alert (FCM)", tokens: (0..<android).map { _ in registrationToken() },
                      payload: #"{"notification":{"title":"Demo","body":"Your order has shipped"},"data":{"order":"42"}}"#,
                      collapseID: "order", service: "fcm", expectation: delivered),
                Batch(label: "Android data message to topic news (FCM)", tokens: [],
                      payload: #"{"data":{"headline":"Lyon 2-0 Porto"}}"#, service: "fcm", topic: "news", expectation: delivered),
                Batch(label: "Android app uninstalled (FCM)", tokens: [gone], payload: #"{"notification":{"title":"Anyone?"}}"#,
                      service: "fcm", expectation: Expectation(status: "failed", attempts: 1, reason: "UNREGISTERED")),
            ]
        }

        var unsubscribed: [String] = []
        if browsers > 0 {
            unsubscribed = ["browser-unsubscribed"]
            batches += [
                Batch(label: "browser notification (Web Push)", tokens: (1...browsers).map { "browser-\($0)" },
                      payload: #"{"title":"Demo","body":"Your order has shipped","url":"/orders/42"}"#, collapseID: "order-42",
                      service: "webpush", expectation: delivered),
                Batch(label: "browser unsubscribed (Web Push)", tokens: unsubscribed, payload: #"{"title":"Anyone?"}"#,
                      service: "webpush", expectation: Expectation(status: "failed", attempts: 1, reason: "SubscriptionGone")),
            ]
        }

        if campaign > 0 {
            batches += [
                Batch(label: campaignLabel, tokens: (0..<campaign).map { _ in token() },
                      payload: #"{"aps":{"alert":{"title":"Weekend sale","body":"30% off everything"}}}"#, lane: "bulk",
                      expectation: delivered),
                Batch(label: urgentLabel, tokens: [token()], payload: #"{"aps":{"alert":"Your sign-in code is 123456"}}"#,
                      lane: "urgent", expectation: delivered),
            ]
        }

        var faults = FaultPlan()
        faults.seed = seed
        faults.unregisteredTokens = [unregistered]
        faults.scripts = [
            // Each script ends in its last attempt, so the random mix cannot change the attempt counts.
            retriedTwice: [.answer(.typical(forStatus: 503)), .answer(.typical(forStatus: 503)), .answer(.accepted)],
            alwaysBusy: Array(repeating: .answer(.typical(forStatus: 503)), count: 4),
            throttled: [.answer(SimulatorAnswer(.tooManyRequests)), .answer(.accepted)],
        ]
        if randomServerErrors > 0 {
            faults.statusMix = [FaultPlan.MixEntry(answer: .answer(.typical(forStatus: 503)), probability: randomServerErrors)]
        }
        faults.latencyMilliseconds = 2
        faults.latencyJitterMilliseconds = 8
        var scenario = DemoScenario(batches: batches, faults: faults)
        scenario.unregisteredFCMTokens = uninstalled
        scenario.unsubscribedBrowsers = unsubscribed
        return scenario
    }
}
