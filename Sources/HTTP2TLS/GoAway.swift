import Foundation

/// A GOAWAY frame as received from (or sent by) the peer.
public struct GoAway: Sendable, Equatable, CustomStringConvertible {
    public var lastStreamID: Int32
    public var errorCode: UInt32
    public var debugData: [UInt8]

    public init(lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) {
        self.lastStreamID = lastStreamID
        self.errorCode = errorCode
        self.debugData = debugData
    }

    /// The `reason` of a JSON debug payload such as APNs' `{"reason":"Shutdown"}`, else nil.
    public var reason: String? {
        guard !debugData.isEmpty,
              let object = try? JSONSerialization.jsonObject(with: Data(debugData)) as? [String: Any]
        else { return nil }
        return object["reason"] as? String
    }

    public var description: String {
        var text = "GOAWAY(last_stream_id: \(lastStreamID), error: \(errorCode)"
        if let reason { text += ", reason: \(reason)" }
        else if !debugData.isEmpty { text += ", debug: \(String(decoding: debugData.prefix(200), as: UTF8.self))" }
        return text + ")"
    }
}
