import Foundation

/// What the simulator does wrong on purpose, from flags or a JSON file.
///
/// File form (every key optional):
/// ```json
/// {
///   "seed": 7,
///   "unregisteredTokens": ["aabb…"],
///   "scripts": { "ccdd…": [503, 503, 200] },
///   "statusMix": { "503": 0.05, "TooManyRequests": 0.02 },
///   "latencyMilliseconds": 5, "latencyJitterMilliseconds": 20,
///   "goAwayAfterStreams": 1000, "dropAfterStreams": 500,
///   "refuseProbability": 0.01, "refuseEveryNth": 100,
///   "goAwayBeforeFirstStream": "BadCertificateEnvironment",
///   "staleProviderTokensAfterRequests": 50, "expireEveryProviderToken": false,
///   "topicAnswers": { "com.example.app.voip": "TopicDisallowed" },
///   "channelScripts": { "dGVzdA==": ["ChannelNotRegistered"] },
///   "managementScript": [429, 503]
/// }
/// ```
/// Scripts are per device token and consumed in order; once a script runs out the
/// token gets normal answers. Connection counts (`goAwayAfterStreams`, `dropAfterStreams`,
/// `refuseEveryNth`) are per connection; `staleProviderTokensAfterRequests` counts every
/// request the simulator received, on all connections.
package struct FaultPlan: Sendable, Equatable, Codable {
    /// Seeds every random choice (mix, refusals, jitter): the same seed and request
    /// order give the same answers.
    package var seed: UInt64 = 0
    /// Answered 410 Unregistered with a timestamp.
    package var unregisteredTokens: Set<String> = []
    /// Broadcast channel id (exactly as sent, base64 is case-sensitive) → answers for its
    /// next broadcasts, in order, in place of the normal answer.
    package var channelScripts: [String: [ScriptedAnswer]] = [:]
    /// Answers for the next channel management requests, in order.
    package var managementScript: [ScriptedAnswer] = []
    /// Token (lowercase hex) → answers for its next requests, in order.
    package var scripts: [String: [ScriptedAnswer]] = [:]
    /// Answers drawn at random for otherwise valid requests; probabilities sum to at most 1.
    package var statusMix: [MixEntry] = []
    package var latencyMilliseconds: Int = 0
    /// A uniform random extra delay in 0...this.
    package var latencyJitterMilliseconds: Int = 0
    /// After this many requests on a connection, GOAWAY (NO_ERROR, `{"reason":"Shutdown"}`)
    /// with the last of them as last_stream_id; later streams are refused.
    package var goAwayAfterStreams: Int?
    /// This many requests on a connection are answered; the next one closes the connection
    /// without GOAWAY and without an answer.
    package var dropAfterStreams: Int?
    /// Chance that a request is refused with RST_STREAM REFUSED_STREAM.
    package var refuseProbability: Double = 0
    /// Every Nth request on a connection is refused.
    package var refuseEveryNth: Int?
    /// The first request of every connection is not answered: the server sends GOAWAY
    /// (last_stream_id 0, NO_ERROR, `{"reason":"<this>"}`) and closes the connection, as
    /// APNs has been seen doing to a certificate meant for the other environment.
    package var goAwayBeforeFirstStream: String?
    /// Once this many requests have reached the simulator (all connections together),
    /// every provider token it had accepted until then is refused 403 ExpiredProviderToken
    /// for good, as APNs keeps refusing a JWT it once called expired. Tokens are compared
    /// by their exact compact text; one first accepted later is judged normally.
    package var staleProviderTokensAfterRequests: Int?
    /// Every provider token with a valid signature, key id and team is refused 403
    /// ExpiredProviderToken however recent its `iat`: a provider whose clock is an hour
    /// off, or whose key was revoked. Tokens failing those checks keep their own reason.
    package var expireEveryProviderToken = false
    /// `apns-topic` value → the answer for every request with exactly that header, given
    /// after the credential checks and instead of the content checks and other injected answers.
    package var topicAnswers: [String: ScriptedAnswer] = [:]

    package struct MixEntry: Sendable, Equatable {
        package var answer: ScriptedAnswer
        package var probability: Double

        package init(answer: ScriptedAnswer, probability: Double) {
            self.answer = answer
            self.probability = probability
        }
    }

    package init() {}

    static let maximumGoAwayReasonBytes = 1000

    /// Checks ranges; the simulator refuses to start with an invalid plan.
    package func validate() throws(FaultPlanError) {
        for entry in statusMix where !(0...1).contains(entry.probability) || !entry.probability.isFinite {
            throw .invalidProbability("\(entry.answer): \(entry.probability) is not between 0 and 1")
        }
        let total = statusMix.reduce(0) { $0 + $1.probability }
        if total > 1.000_000_1 { throw .invalidProbability("the status mix adds up to \(total), more than 1") }
        if !(0...1).contains(refuseProbability) { throw .invalidProbability("refuse probability \(refuseProbability) is not between 0 and 1") }
        if latencyMilliseconds < 0 || latencyJitterMilliseconds < 0 { throw .invalidSetting("latency must not be negative") }
        for (name, value) in [("goAwayAfterStreams", goAwayAfterStreams), ("dropAfterStreams", dropAfterStreams),
                              ("refuseEveryNth", refuseEveryNth),
                              ("staleProviderTokensAfterRequests", staleProviderTokensAfterRequests)] {
            if let value, value < 1 { throw .invalidSetting("\(name) must be at least 1, got \(value)") }
        }
        for token in Array(unregisteredTokens) + Array(scripts.keys) where token.isEmpty {
            throw .invalidSetting("a fault token is empty")
        }
        if let reason = goAwayBeforeFirstStream {
            if reason.trimmingCharacters(in: .whitespaces).isEmpty { throw .invalidSetting("goAwayBeforeFirstStream needs a reason") }
            // The debug data must fit one GOAWAY frame; a reason is a word, so the bound is generous.
            if reason.utf8.count > Self.maximumGoAwayReasonBytes {
                throw .invalidSetting("goAwayBeforeFirstStream is longer than \(Self.maximumGoAwayReasonBytes) bytes")
            }
        }
        if topicAnswers.keys.contains(where: { $0.isEmpty }) { throw .invalidSetting("a topicAnswers topic is empty") }
    }

    /// Reads the JSON file form.
    package static func load(path: String) throws(FaultPlanError) -> FaultPlan {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw .unreadableFile(path: path, detail: error.localizedDescription)
        }
        return try parse(data, source: path)
    }

    package static func parse(_ data: Data, source: String = "fault JSON") throws(FaultPlanError) -> FaultPlan {
        let plan: FaultPlan
        do { plan = try JSONDecoder().decode(FaultPlan.self, from: data) } catch let error as FaultPlanError {
            throw error
        } catch {
            throw .unreadableFile(path: source, detail: Self.describe(error))
        }
        try plan.validate()
        return plan
    }

    private static func describe(_ error: any Error) -> String {
        if let decoding = error as? DecodingError {
            switch decoding {
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
                 .dataCorrupted(let context):
                let path = context.codingPath.map(\.stringValue).joined(separator: ".")
                return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
            @unknown default: return "invalid JSON"
            }
        }
        return String(describing: error)
    }

    private enum CodingKeys: String, CodingKey {
        case seed, unregisteredTokens, scripts, statusMix, latencyMilliseconds, latencyJitterMilliseconds
        case goAwayAfterStreams, dropAfterStreams, refuseProbability, refuseEveryNth
        case goAwayBeforeFirstStream, staleProviderTokensAfterRequests, expireEveryProviderToken, topicAnswers
        case channelScripts, managementScript
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        seed = try container.decodeIfPresent(UInt64.self, forKey: .seed) ?? 0
        unregisteredTokens = Set((try container.decodeIfPresent([String].self, forKey: .unregisteredTokens) ?? []).map { $0.lowercased() })
        let rawScripts = try container.decodeIfPresent([String: [ScriptedAnswer]].self, forKey: .scripts) ?? [:]
        scripts = Dictionary(rawScripts.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, second in first + second })
        let mix = try container.decodeIfPresent([String: Double].self, forKey: .statusMix) ?? [:]
        // Sorted by the answer's canonical name, so the same seed draws the same answers
        // whatever the dictionary order or spelling ("429" or "TooManyRequests").
        statusMix = try mix.map { key, probability in MixEntry(answer: try ScriptedAnswer(parsing: key), probability: probability) }
            .sorted { $0.answer.description < $1.answer.description }
        latencyMilliseconds = try container.decodeIfPresent(Int.self, forKey: .latencyMilliseconds) ?? 0
        latencyJitterMilliseconds = try container.decodeIfPresent(Int.self, forKey: .latencyJitterMilliseconds) ?? 0
        goAwayAfterStreams = try container.decodeIfPresent(Int.self, forKey: .goAwayAfterStreams)
        dropAfterStreams = try container.decodeIfPresent(Int.self, forKey: .dropAfterStreams)
        refuseProbability = try container.decodeIfPresent(Double.self, forKey: .refuseProbability) ?? 0
        refuseEveryNth = try container.decodeIfPresent(Int.self, forKey: .refuseEveryNth)
        goAwayBeforeFirstStream = try container.decodeIfPresent(String.self, forKey: .goAwayBeforeFirstStream)
        staleProviderTokensAfterRequests = try container.decodeIfPresent(Int.self, forKey: .staleProviderTokensAfterRequests)
        expireEveryProviderToken = try container.decodeIfPresent(Bool.self, forKey: .expireEveryProviderToken) ?? false
        topicAnswers = try container.decodeIfPresent([String: ScriptedAnswer].self, forKey: .topicAnswers) ?? [:]
        channelScripts = try container.decodeIfPresent([String: [ScriptedAnswer]].self, forKey: .channelScripts) ?? [:]
        managementScript = try container.decodeIfPresent([ScriptedAnswer].self, forKey: .managementScript) ?? []
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(seed, forKey: .seed)
        try container.encode(unregisteredTokens.sorted(), forKey: .unregisteredTokens)
        try container.encode(scripts, forKey: .scripts)
        try container.encode(Dictionary(statusMix.map { ($0.answer.description, $0.probability) }, uniquingKeysWith: +),
                             forKey: .statusMix)
        try container.encode(latencyMilliseconds, forKey: .latencyMilliseconds)
        try container.encode(latencyJitterMilliseconds, forKey: .latencyJitterMilliseconds)
        try container.encodeIfPresent(goAwayAfterStreams, forKey: .goAwayAfterStreams)
        try container.encodeIfPresent(dropAfterStreams, forKey: .dropAfterStreams)
        try container.encode(refuseProbability, forKey: .refuseProbability)
        try container.encodeIfPresent(refuseEveryNth, forKey: .refuseEveryNth)
        try container.encodeIfPresent(goAwayBeforeFirstStream, forKey: .goAwayBeforeFirstStream)
        try container.encodeIfPresent(staleProviderTokensAfterRequests, forKey: .staleProviderTokensAfterRequests)
        try container.encode(expireEveryProviderToken, forKey: .expireEveryProviderToken)
        try container.encode(topicAnswers, forKey: .topicAnswers)
        try container.encode(channelScripts, forKey: .channelScripts)
        try container.encode(managementScript, forKey: .managementScript)
    }
}

/// A fault plan (file or flags) that cannot be used; names the offending setting.
package enum FaultPlanError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidAnswer(String)
    case invalidProbability(String)
    case invalidSetting(String)
    case unreadableFile(path: String, detail: String)

    package var description: String {
        switch self {
        case .invalidAnswer(let text):
            "\"\(text)\" is not an answer: use a status (503), an APNs reason (TooManyRequests), refuse or drop"
        case .invalidProbability(let text): "invalid probability: \(text)"
        case .invalidSetting(let text): text
        case .unreadableFile(let path, let detail): "cannot read fault file \(path): \(detail)"
        }
    }
}
