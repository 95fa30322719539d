/// One submitted request on the I/O thread, collecting its answer.
final class ClientStream {
    let pending: PendingRequest
    /// Its place in the connection's `SubmitWindow`, when the connection has a rate cap.
    let windowSequence: Int?
    /// Its place in the `SharedSubmitWindow`, when the client has one.
    let sharedSequence: Int?
    var bodyOffset = 0
    var headersSent = false
    var endStreamReceived = false
    var status: Int?
    var headers = ResponseHeaders()
    /// The decoded size of its header fields so far, trailers included (name + value + 32 each).
    var headerListSize = 0
    /// The answer went past this bound, which ends the connection: the close fails it with it.
    var exceeded: ResponseBound?
    var body: [UInt8] = []

    init(_ pending: PendingRequest, windowSequence: Int?, sharedSequence: Int?) {
        self.pending = pending
        self.windowSequence = windowSequence
        self.sharedSequence = sharedSequence
    }
}
