/// Watches an app's recent answers for the sign of a wrong environment.
///
/// A sandbox token sent to production (or the reverse) is answered 400
/// `BadDeviceToken`, exactly like a dead token. One
/// such answer says nothing; when most of an app's recent answers are
/// `BadDeviceToken`, the likelier story is that the app talks to the wrong
/// environment, and the operator should hear it (app health).
public struct EnvironmentMismatchMonitor: Sendable {
    public enum Verdict: Equatable, Sendable {
        case unchanged
        case suspected
        case cleared
    }

    /// How many recent answers are looked at, and how many must be in before judging.
    public let window: Int
    public let minimumAnswers: Int
    /// Share of `BadDeviceToken` answers above which a mismatch is suspected.
    public let threshold: Double

    private var recent: [Bool] = []
    private var next = 0
    private var badCount = 0
    public private(set) var isSuspected = false

    public init(window: Int = 200, minimumAnswers: Int = 50, threshold: Double = 0.5) {
        self.window = max(window, 1)
        self.minimumAnswers = min(max(minimumAnswers, 1), self.window)
        self.threshold = threshold
        recent.reserveCapacity(self.window)
    }

    /// Records one APNs answer (nil reason for a success) and says whether the suspicion changed.
    public mutating func record(reason: String?) -> Verdict {
        let isBad = reason == APNsReason.badDeviceToken.rawValue
        if recent.count < window {
            recent.append(isBad)
        } else {
            if recent[next] { badCount -= 1 }
            recent[next] = isBad
            next = (next + 1) % window
        }
        if isBad { badCount += 1 }
        guard recent.count >= minimumAnswers else { return .unchanged }
        let suspect = Double(badCount) / Double(recent.count) > threshold
        defer { isSuspected = suspect }
        switch (isSuspected, suspect) {
        case (false, true): return .suspected
        case (true, false): return .cleared
        default: return .unchanged
        }
    }
}
