/// One submitted request on the I/O thread, collecting its answer.
final class ClientStream {
    let pending: PendingRequest
    /// Its place in the connection's `SubmitWindow`, when the connection has a rate cap.
    let windowSequence: Int?
    var bodyOffset = 0
    var headersSent = false
    var endStreamReceived = false
    var status: Int?
    var headers: [HeaderField] = []
    var body: [UInt8] = []

    init(_ pending: PendingRequest, windowSequence: Int?) {
        self.pending = pending
        self.windowSequence = windowSequence
    }
}
