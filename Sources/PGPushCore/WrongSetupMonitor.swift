/// Watches an app's recent answers from one service for the sign of a wrong setup.
///
/// Some answers look like one bad row but, when most answers are of that kind, tell of a
/// wrong configuration: APNs answers a sandbox token sent to production (or the reverse)
/// 400 `BadDeviceToken`, exactly like a dead token; FCM answers tokens of another Firebase
/// project `SENDER_ID_MISMATCH`. One such answer says nothing; when most of the recent
/// ones are, the likelier story is the setup, and the operator should hear it (app health).
/// Which answers hint at it is the service's policy (`Delivery.hintsWrongSetup`).
package struct WrongSetupMonitor: Sendable {
    package enum Change: Equatable, Sendable {
        case unchanged
        case suspected
        case cleared
    }

    /// How many recent answers are looked at, and how many must be in before judging.
    package let window: Int
    package let minimumAnswers: Int
    /// Share of `BadDeviceToken` answers above which a mismatch is suspected.
    package let threshold: Double

    private var recent: [Bool] = []
    private var next = 0
    private var badCount = 0
    package private(set) var isSuspected = false

    package init(window: Int = 200, minimumAnswers: Int = 50, threshold: Double = 0.5) {
        self.window = max(window, 1)
        self.minimumAnswers = min(max(minimumAnswers, 1), self.window)
        self.threshold = threshold
        recent.reserveCapacity(self.window)
    }

    /// Records one APNs answer (nil reason for a success) and says whether the suspicion changed.
    package mutating func record(hintsWrongSetup isBad: Bool) -> Change {
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
