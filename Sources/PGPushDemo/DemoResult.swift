import APNsSimulator
import FCMSimulator
import WebPushSimulator
import PGPushOperator

/// One demo row as it ended, beside how it should have.
package struct DemoRow: Sendable, Equatable {
    package var id: Int64
    package var label: String
    package var token: String
    package var pushType: String
    package var status: String
    package var attempts: Int
    package var lastStatus: Int?
    package var lastReason: String?
    package var expectation: DemoScenario.Expectation

    package var meetsExpectation: Bool {
        status == expectation.status
            && (expectation.attempts.map { $0 == attempts } ?? true)
            && (expectation.reason.map { $0 == lastReason } ?? true)
    }
}

/// What one demo run did.
package struct DemoResult: Sendable {
    package var rows: [DemoRow]
    /// The monitoring views right after the last row finished (nil when it never did).
    package var snapshot: StatusSnapshot?
    package var simulator: SimulatorReport
    /// What the FCM simulator saw, when the scenario had FCM rows.
    package var fcm: FCMSimulatorReport?
    /// What the Web Push simulator saw, when the scenario had Web Push rows.
    package var webPush: WebPushSimulatorReport?
    package var elapsedSeconds: Double
    package var interrupted: Bool
    package var ratePerConnection: Int
    /// The broadcast channel the demo created, as `pgpush.channels` shows it after its deletion.
    package var channel: ChannelRecord?
    /// The one-time code against the campaign enqueued before it.
    package var overtaking: Overtaking?

    package struct Overtaking: Sendable, Equatable {
        package var campaignRows: Int
        /// Campaign rows whose outcome was written after the code's.
        package var sentAfterTheCode: Int
    }

    package var unexpected: [DemoRow] { rows.filter { !$0.meetsExpectation } }
    package var succeeded: Bool {
        !interrupted && snapshot != nil && unexpected.isEmpty && (channel.map { $0.deletedAt != nil } ?? true)
    }
}

package struct DemoError: Error, CustomStringConvertible, Sendable {
    package let description: String
    package init(_ description: String) { self.description = description }
}
