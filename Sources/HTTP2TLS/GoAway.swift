import Foundation

/// A GOAWAY frame as received from (or sent by) the peer.
package struct GoAway: Sendable, Equatable, CustomStringConvertible {
    package var lastStreamID: Int32
    package var errorCode: UInt32
    package var debugData: [UInt8]

    package init(lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) {
        self.lastStreamID = lastStreamID
        self.errorCode = errorCode
        self.debugData = debugData
    }

    /// The `reason` of a JSON debug payload such as APNs' `{"reason":"Shutdown"}`, else nil.
    package var reason: String? {
        guard !debugData.isEmpty,
              let object = try? JSONSerialization.jsonObject(with: Data(debugData)) as? [String: Any]
        else { return nil }
        return object["reason"] as? String
    }

    package var description: String {
        var text = "GOAWAY(last_stream_id: \(lastStreamID), error: \(errorCode)"
        if let reason { text += ", reason: \(reason)" }
        else if !debugData.isEmpty { text += ", debug: \(String(decoding: debugData.prefix(200), as: UTF8.self))" }
        return text + ")"
    }
}
