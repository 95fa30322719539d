import APNsSimulator
import FCMSimulator
import PGPushOperator

/// One demo row as it ended, beside how it should have.
public struct DemoRow: Sendable, Equatable {
    public var id: Int64
    public var label: String
    public var token: String
    public var pushType: String
    public var status: String
    public var attempts: Int
    public var lastStatus: Int?
    public var lastReason: String?
    public var expectation: DemoScenario.Expectation

    public var meetsExpectation: Bool {
        status == expectation.status
            && (expectation.attempts.map { $0 == attempts } ?? true)
            && (expectation.reason.map { $0 == lastReason } ?? true)
    }
}

/// What one demo run did.
public struct DemoResult: Sendable {
    public var rows: [DemoRow]
    /// The monitoring views right after the last row finished (nil when it never did).
    public var snapshot: StatusSnapshot?
    public var simulator: SimulatorReport
    /// What the FCM simulator saw, when the scenario had FCM rows.
    public var fcm: FCMSimulatorReport?
    public var elapsedSeconds: Double
    public var interrupted: Bool
    public var ratePerConnection: Int
    /// The broadcast channel the demo created, as `pgpush.channels` shows it after its deletion.
    public var channel: ChannelRecord?

    public var unexpected: [DemoRow] { rows.filter { !$0.meetsExpectation } }
    public var succeeded: Bool {
        !interrupted && snapshot != nil && unexpected.isEmpty && (channel.map { $0.deletedAt != nil } ?? true)
    }
}

public struct DemoError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
