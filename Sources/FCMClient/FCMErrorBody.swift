import PGPushCore

/// The JSON body of an FCM HTTP v1 error answer, a `google.rpc.Status`:
/// `{"error": {"code": 404, "message": "…", "status": "NOT_FOUND", "details": [{"@type":
/// "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}}`.
/// `details` may also hold a `google.rpc.BadRequest` naming the fields at fault and a
/// `google.rpc.ErrorInfo`. Parsed with pgpush's own scanner: any bytes give a body or nil.
package struct FCMErrorBody: Equatable, Sendable {
    /// The gRPC status name (`INVALID_ARGUMENT`, `NOT_FOUND`, `UNAUTHENTICATED`, …).
    package let status: String?
    /// The FcmError detail's code (`UNREGISTERED`, `SENDER_ID_MISMATCH`, …), when there is one.
    package let errorCode: String?
    package let message: String?
    /// The fields a BadRequest detail names (`message.token`, `message.data[0].value`).
    package let fieldViolations: [String]

    package init(status: String?, errorCode: String?, message: String?, fieldViolations: [String] = []) {
        self.status = status
        self.errorCode = errorCode
        self.message = message
        self.fieldViolations = fieldViolations
    }

    /// Bounds on what is kept from the network: a code or status name, FCM's message (which
    /// reaches `delivery_errors`), a field name, and how many field names.
    static let longestName = 100
    static let longestMessage = 500
    static let mostFields = 20

    static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    static let badRequestType = "type.googleapis.com/google.rpc.BadRequest"
    /// The text FCM gives when a token is not one (the field violation is not always there).
    static let invalidTokenMessage = "registration token is not a valid FCM registration token"

    /// nil when the bytes are not a JSON object with an `error` object (an HTML page from a
    /// proxy, an empty body).
    package static func parse(_ bytes: some Collection<UInt8>) -> FCMErrorBody? {
        guard let error = JSONValue.parse(bytes)?["error"], case .object = error else { return nil }
        var errorCode: String?
        var violations: [String] = []
        if case .array(let details) = error["details"] {
            for detail in details {
                switch detail["@type"]?.stringValue {
                case fcmErrorType:
                    errorCode = errorCode ?? detail["errorCode"]?.stringValue.map { clipped($0, longestName) }
                case badRequestType:
                    if case .array(let fields) = detail["fieldViolations"] {
                        let names = fields.compactMap { $0["field"]?.stringValue.map { clipped($0, longestName) } }
                        violations += names.prefix(mostFields - violations.count)
                    }
                default:
                    break
                }
            }
        }
        return FCMErrorBody(status: error["status"]?.stringValue.map { clipped($0, longestName) }, errorCode: errorCode,
                            message: error["message"]?.stringValue.map { clipped($0, longestMessage) }, fieldViolations: violations)
    }

    private static func clipped(_ text: String, _ limit: Int) -> String {
        text.unicodeScalars.count <= limit ? text : String(String.UnicodeScalarView(text.unicodeScalars.prefix(limit)))
    }

    /// What pgpush records as the row's `last_reason`: the FcmError code, else the status.
    /// `APNS_AUTH_ERROR` is the older name of `THIRD_PARTY_AUTH_ERROR`, and
    /// `UNSPECIFIED_ERROR` says nothing the status does not.
    package var reason: String? {
        switch errorCode {
        case "APNS_AUTH_ERROR": "THIRD_PARTY_AUTH_ERROR"
        case nil, "UNSPECIFIED_ERROR": status ?? errorCode
        case let code?: code
        }
    }

    /// Whether an INVALID_ARGUMENT is about the registration token itself (the request is
    /// otherwise fine, so the token is dead), not about the message.
    package var concernsToken: Bool {
        guard reason == "INVALID_ARGUMENT" else { return false }
        return fieldViolations.contains("message.token")
            || (message?.contains(Self.invalidTokenMessage) ?? false)
    }

    /// The JSON FCM would send (for the simulator and tests).
    package func encoded(httpStatus: Int) -> [UInt8] {
        var error: [String] = ["\"code\":\(httpStatus)"]
        if let message { error.append("\"message\":" + JSONText.quoted(message)) }
        if let status { error.append("\"status\":" + JSONText.quoted(status)) }
        var details: [String] = []
        if let errorCode {
            details.append("{\"@type\":\"\(Self.fcmErrorType)\",\"errorCode\":\(JSONText.quoted(errorCode))}")
        }
        if !fieldViolations.isEmpty {
            let fields = fieldViolations.map { "{\"field\":\(JSONText.quoted($0)),\"description\":\"Invalid value\"}" }
            details.append("{\"@type\":\"\(Self.badRequestType)\",\"fieldViolations\":[\(fields.joined(separator: ","))]}")
        }
        if !details.isEmpty { error.append("\"details\":[\(details.joined(separator: ","))]") }
        return Array("{\"error\":{\(error.joined(separator: ","))}}".utf8)
    }
}
