import Foundation
import PGPushCore

/// Applies a `FaultPlan`, request by request. Pure and deterministic: the caller passes
/// in what it knows (the request's number on its connection, its token) and gets a
/// decision; all randomness comes from one seeded generator.
package struct FaultInjector: Sendable {
    package let plan: FaultPlan
    private var random: SeededRandomNumberGenerator
    private var scriptPositions: [String: Int] = [:]
    private var channelScriptPositions: [String: Int] = [:]
    private var managementScriptPosition = 0

    package init(plan: FaultPlan) {
        self.plan = plan
        random = SeededRandomNumberGenerator(seed: plan.seed)
    }

    /// What happens to a request at the transport level, before its content is judged.
    package enum TransportDecision: Sendable, Equatable {
        case proceed
        /// Proceed, and send GOAWAY with this request as the last stream.
        case proceedThenGoAway
        /// Leave the request unanswered and send GOAWAY with last_stream_id 0 and this reason:
        /// no stream of the connection was processed.
        case goAwayBeforeAnyStream(reason: String)
        case refuse
        case drop
    }

    /// `number` counts requests on the connection from 1.
    package mutating func transportDecision(requestNumber number: Int) -> TransportDecision {
        if number == 1, let reason = plan.goAwayBeforeFirstStream { return .goAwayBeforeAnyStream(reason: reason) }
        if let limit = plan.dropAfterStreams, number > limit { return .drop }
        if let every = plan.refuseEveryNth, number % every == 0 { return .refuse }
        if plan.refuseProbability > 0, Double.random(in: 0..<1, using: &random) < plan.refuseProbability { return .refuse }
        if let limit = plan.goAwayAfterStreams, number == limit { return .proceedThenGoAway }
        return .proceed
    }

    /// The injected answer for a valid request to `token`, or nil for the normal 200.
    /// A script step is consumed even when it is 200, so `[503, 503, 200]` plays out exactly.
    package mutating func answer(forToken token: String, now: Date) -> ScriptedAnswer? {
        if plan.unregisteredTokens.contains(token) { return .answer(SimulatorAnswer(.unregistered, timestamp: now)) }
        if let script = plan.scripts[token] {
            let position = scriptPositions[token, default: 0]
            if position < script.count {
                scriptPositions[token] = position + 1
                return Self.stamped(script[position], now: now)
            }
        }
        guard !plan.statusMix.isEmpty else { return nil }
        var draw = Double.random(in: 0..<1, using: &random)
        for entry in plan.statusMix {
            if draw < entry.probability { return Self.stamped(entry.answer, now: now) }
            draw -= entry.probability
        }
        return nil
    }

    /// The injected answer for a valid broadcast to `channelID`, or nil for the normal answer.
    package mutating func answer(forChannel channelID: String, now: Date) -> ScriptedAnswer? {
        guard let script = plan.channelScripts[channelID] else { return nil }
        let position = channelScriptPositions[channelID, default: 0]
        guard position < script.count else { return nil }
        channelScriptPositions[channelID] = position + 1
        return Self.stamped(script[position], now: now)
    }

    /// The injected answer for the next channel management request, or nil for the normal one.
    package mutating func managementAnswer() -> ScriptedAnswer? {
        guard managementScriptPosition < plan.managementScript.count else { return nil }
        managementScriptPosition += 1
        return plan.managementScript[managementScriptPosition - 1]
    }

    /// The injected answer for a request with this `apns-topic` header, or nil when the
    /// topic has none.
    package func answer(forTopic topic: String?, now: Date) -> ScriptedAnswer? {
        guard let topic, let answer = plan.topicAnswers[topic] else { return nil }
        return Self.stamped(answer, now: now)
    }

    /// How long to wait before answering.
    package mutating func latency() -> Duration {
        var milliseconds = plan.latencyMilliseconds
        if plan.latencyJitterMilliseconds > 0 { milliseconds += Int.random(in: 0...plan.latencyJitterMilliseconds, using: &random) }
        return .milliseconds(milliseconds)
    }

    /// A scripted 410 carries the time of the request as its invalidation timestamp.
    private static func stamped(_ answer: ScriptedAnswer, now: Date) -> ScriptedAnswer {
        guard case .answer(var value) = answer, value.status == 410, value.timestamp == nil else { return answer }
        value.timestamp = now
        return .answer(value)
    }
}
