import PGPushCore

/// The `aps` fields a Live Activity push must carry. APNs accepts a Live Activity push
/// without them (200) and the device then ignores it, so the mistake would go unseen:
/// each missing field fails the row with a reason that names it, before a request is spent.
///
/// - every push: `event` (`start`, `update` or `end`) and `timestamp` (a number: the
///   device keeps the newest);
/// - `start` and `update`: `content-state`, the activity's state (an `end` may keep the
///   last one);
/// - `start`: `attributes-type`, `attributes` and an `alert`, and never to a channel: a
///   broadcast only updates or ends the activities that subscribed to it.
///
/// The same rules are CHECK constraints at INSERT (sql/010); these catch rows written
/// before them, and keep the worker's word the same as the table's.
enum LiveActivityPayload {
    enum Event: String {
        case start, update, end
    }

    static func check(_ root: JSONValue, broadcast: Bool) throws(ValidationFailure) {
        guard let aps = root["aps"], case .object = aps else {
            throw ValidationFailure(.liveActivityMissingEvent, #"a Live Activity push needs "aps" with "event""#)
        }
        guard let text = aps["event"]?.stringValue else {
            throw ValidationFailure(.liveActivityMissingEvent, #"a Live Activity push needs "event" in "aps""#)
        }
        guard let event = Event(rawValue: text) else {
            throw ValidationFailure(.liveActivityMissingEvent, #""event" in "aps" must be "start", "update" or "end""#)
        }
        guard aps["timestamp"]?.numberValue != nil else {
            throw ValidationFailure(.liveActivityMissingTimestamp, #"a Live Activity push needs a numeric "timestamp" in "aps""#)
        }
        if event != .end, !isObject(aps["content-state"]) {
            throw ValidationFailure(.liveActivityMissingContentState,
                #"a Live Activity \#(event.rawValue) needs a "content-state" object in "aps""#)
        }
        guard event == .start else { return }
        if broadcast {
            throw ValidationFailure(.broadcastCannotStartLiveActivity,
                "a broadcast cannot start a Live Activity; send the start to a device token")
        }
        guard aps["attributes-type"]?.stringValue != nil, isObject(aps["attributes"]) else {
            throw ValidationFailure(.liveActivityMissingAttributes,
                #"a Live Activity start needs "attributes-type" and an "attributes" object in "aps""#)
        }
        guard aps["alert"] != nil else {
            throw ValidationFailure(.liveActivityMissingAlert, #"a Live Activity start needs an "alert" in "aps""#)
        }
    }

    private static func isObject(_ value: JSONValue?) -> Bool {
        guard case .object? = value else { return false }
        return true
    }
}
