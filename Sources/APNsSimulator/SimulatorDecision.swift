import HTTP2TLS

/// What the server glue must do for one request, decided under the simulator's lock
/// and carried out after it is released.
struct SimulatorDecision: Sendable {
    enum Step: Sendable {
        case respond(status: Int, headers: [HeaderField], body: [UInt8], after: Duration)
        case refuse
        case drop
        /// Nothing for the stream itself: the GOAWAY sent with this decision leaves it out,
        /// which tells the client it was not processed.
        case leaveToGoAway
    }

    /// A GOAWAY (NO_ERROR) to send before the step.
    struct GoAway: Sendable, Equatable {
        var lastStreamID: Int32
        /// Sent as the debug data `{"reason":…}`, as APNs does.
        var reason: String
    }

    var step: Step
    var goAway: GoAway?
    /// The connection has just authenticated: raise its stream limit first.
    var raiseStreamLimit = false
    var logEntry: RequestLogEntry?
}
