/// One submitted request on the I/O thread, collecting its answer.
final class ClientStream {
    let pending: PendingRequest
    var bodyOffset = 0
    var headersSent = false
    var endStreamReceived = false
    var status: Int?
    var headers: [HeaderField] = []
    var body: [UInt8] = []

    init(_ pending: PendingRequest) {
        self.pending = pending
    }
}
