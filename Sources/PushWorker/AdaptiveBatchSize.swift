/// How many rows one statement takes (a claim, an outcome batch) when the database may
/// cancel it for time. Under a `statement_timeout` shorter than a full batch, a fixed size
/// fails every statement for ever (one row in 50 s was measured); halving after each
/// cancellation finds a size that fits, and growing back only after
/// `successesBeforeGrowing` statements in a row went through keeps it from flapping
/// between a size that fits and one that does not. Pure.
struct AdaptiveBatchSize: Equatable {
    let largest: Int
    private(set) var current: Int
    private var successesSinceResize = 0
    static let successesBeforeGrowing = 8

    init(largest: Int) {
        self.largest = largest
        current = largest
    }

    var isFull: Bool { current == largest }

    /// The database cancelled a statement of this size for time.
    mutating func timedOut() {
        current = max(current / 2, 1)
        successesSinceResize = 0
    }

    mutating func succeeded() {
        guard current < largest else { return }
        successesSinceResize += 1
        if successesSinceResize >= Self.successesBeforeGrowing {
            current = min(current * 2, largest)
            successesSinceResize = 0
        }
    }
}
