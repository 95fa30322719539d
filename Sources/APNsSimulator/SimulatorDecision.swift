import HTTP2TLS

/// What the server glue must do for one request, decided under the simulator's lock
/// and carried out after it is released.
struct SimulatorDecision: Sendable {
    enum Step: Sendable {
        case respond(status: Int, headers: [HTTP2TLS.HeaderField], body: [UInt8], after: Duration)
        case refuse
        case drop
    }

    var step: Step
    /// Send GOAWAY with this request's stream as the last one, before answering.
    var goAway = false
    /// The connection has just authenticated: raise its stream limit first.
    var raiseStreamLimit = false
    var logEntry: RequestLogEntry?
}
