import Foundation
import Locking
import PGPushDemo
import PGPushTestSupport
import Postgres
import Testing

/// The demo's own story, small, against a real PostgreSQL and the in-process simulator.
@Suite struct DemoRunTests {
    @Test func everyRowEndsAsTheScenarioSays() async throws {
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        // Another application's row in the same database: the demo must neither send nor report it.
        try database.query("SELECT pgpush.enqueue(device_token => 'aa11', payload => '{\"aps\":{\"alert\":\"x\"}}', app => 'shop')")

        let scenario = DemoScenario.standard(alerts: 24, background: 3, voip: 1, scheduledDelay: 1, randomServerErrors: 0.05, seed: 42)
        var options = DemoOptions(conninfo: conninfo)
        options.progressInterval = .milliseconds(50)
        options.timeout = stateWaitLimit
        let updates = ProgressLog()
        let result = try await DemoRun(scenario: scenario, options: options).run(progress: { progress, _ in updates.append(progress) })

        #expect(result.rows.count == scenario.notificationCount)
        #expect(result.unexpected.isEmpty, "\(result.unexpected)")
        #expect(result.succeeded)
        let statuses = Dictionary(grouping: result.rows, by: \.status).mapValues(\.count)
        #expect(statuses == ["delivered": scenario.notificationCount - 7, "failed": 6, "expired": 1])
        #expect(result.rows.first { $0.label == "503 on every attempt" }?.lastStatus == 503)
        #expect(result.rows.first { $0.label == "unregistered token" }?.lastReason == "Unregistered")
        #expect(result.rows.first { $0.label == "the unregistered token again" }?.lastReason == "KnownInvalidToken")

        // The views were read while the worker still served the app, limited to it.
        let snapshot = try #require(result.snapshot)
        #expect(snapshot.app == "demo")
        #expect(snapshot.workers.count == 1 && snapshot.workers.first?.delivered == scenario.notificationCount - 7)
        // APNs's unregistered token, the uninstalled Android app's and the unsubscribed browser's.
        #expect(snapshot.invalidTokens.map(\.app) == ["demo"] && snapshot.invalidTokens.map(\.tokens) == [3])
        #expect(snapshot.errors.contains { $0.reason == "BadBackgroundPayload" && $0.status == nil })
        #expect(snapshot.queue.isEmpty)

        // Sent to APNs: every APNs row but the expired one, the bad payload and the known-invalid token, plus
        // each retry, plus the channel's creation and deletion.
        let android = result.rows.filter { $0.label.hasSuffix("(FCM)") }
        #expect(android.count == 14)
        let browsers = result.rows.filter { $0.label.hasSuffix("(Web Push)") }
        #expect(browsers.count == 7)
        let retries = result.rows.reduce(0) { $0 + max($1.attempts - 1, 0) }
        #expect(result.simulator.managementRequests == 2)
        #expect(result.simulator.totalRequests == scenario.notificationCount - android.count - browsers.count - 3 + retries + 2)
        // Sent to FCM: every Android row once, with one access token for all of them.
        let fcm = try #require(result.fcm)
        #expect(fcm.sends == android.count && fcm.delivered == android.count - 1 && fcm.errors == ["UNREGISTERED": 1])
        #expect(fcm.tokensIssued == 1)
        #expect(android.first { $0.label == "Android app uninstalled (FCM)" }?.lastReason == "UNREGISTERED")
        #expect(DemoReport(result: result, app: "demo", psqlCommand: nil).rendered().contains("== The FCM simulator saw =="))
        // Sent to the browsers' push service: each once, VAPID checked, the payload decrypted as the row holds it.
        let webPush = try #require(result.webPush)
        #expect(webPush.requests == 7 && webPush.delivered == 6 && webPush.refusals == ["Unregistered": 1])
        #expect(Set(webPush.deliveredPayloads) == [#"{"url":"/orders/42","body":"Your order has shipped","title":"Demo"}"#])
        #expect(browsers.first { $0.label == "browser unsubscribed (Web Push)" }?.lastReason == "SubscriptionGone")
        #expect(DemoReport(result: result, app: "demo", psqlCommand: nil).rendered().contains("== The Web Push simulator saw =="))
        #expect(result.simulator.maxRequestsPerConnectionPerSecond <= options.ratePerConnection)
        #expect(result.simulator.duplicateAcceptedAPNsIDs == 0)
        // The one-time code, enqueued after the 300-row bulk campaign, went before most of it
        // (claimed first; rows of the campaign already in flight may still go before it).
        let overtaking = try #require(result.overtaking)
        #expect(overtaking.campaignRows == 300 && overtaking.sentAfterTheCode >= 150, "\(overtaking)")
        #expect(DemoReport(result: result, app: "demo", psqlCommand: nil).rendered().contains("== Lanes =="))

        // The Live Activity: started on a device subscribed to the channel, two updates broadcast to
        // the channel, which the demo then deleted; pgpush.channels shows it so.
        let channel = try #require(result.channel)
        #expect(channel.deletedAt != nil && channel.messageStoragePolicy == 1 && channel.app == "demo")
        #expect(result.simulator.broadcasts(toChannel: channel.channelID) == 2)
        let broadcastRows = result.rows.filter { $0.label == "Live Activity update to the channel" }
        #expect(broadcastRows.count == 2 && broadcastRows.allSatisfy { $0.token == channel.channelID && $0.status == "delivered" })
        #expect(try database.query("SELECT deleted_at IS NOT NULL FROM pgpush.channels WHERE channel_id = $1",
                                   [channel.channelID]).bool(0, 0) == true)
        #expect(DemoReport(result: result, app: "demo", psqlCommand: nil).rendered().contains("2 broadcast request(s)"))

        #expect(updates.last?.isFinished == true)
        #expect(try database.query("SELECT status FROM pgpush.notifications WHERE app = 'shop'").string(0, 0) == "queued")
        #expect(try database.query("SELECT count(*) FROM pgpush.workers").int(0, 0) == 0)

        let report = DemoReport(result: result, app: "demo", psqlCommand: nil).rendered()
        #expect(report.contains("Every row ended as expected."))
        #expect(report.contains("SELECT status, count(*) FROM pgpush.notifications WHERE app = 'demo' GROUP BY 1;"))
    }

    @Test func progressLineNamesEveryStatus() {
        let progress = DemoProgress(total: 10, counts: ["queued": 2, "sending": 3, "delivered": 4, "failed": 1])
        #expect(!progress.isFinished)
        #expect(progress.line(elapsedSeconds: 1.25) == "  1.2s  queued 2  sending 3  delivered 4  failed 1  expired 0   (5/10 finished)")
        #expect(DemoProgress(total: 2, counts: ["delivered": 1, "expired": 1]).isFinished)
    }

    @Test func shortTokensKeepTheirLength() {
        #expect(DemoReport.shortToken(String(repeating: "ab", count: 80)) == "abababab…abab (160)")
        #expect(DemoReport.shortToken("aa11") == "aa11")
    }
}

/// Progress updates as the demo reported them.
final class ProgressLog: Sendable {
    private let updates = Locked<[DemoProgress]>([])
    func append(_ progress: DemoProgress) { updates.withLock { $0.append(progress) } }
    var last: DemoProgress? { updates.withLock { $0.last } }
}
