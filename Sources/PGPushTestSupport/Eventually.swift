/// Polls `condition` until it holds or `timeout` passes; returns whether it held.
/// For state that lives in another process or in the database, where no event
/// reaches the test; the poll interval is short, so it adds no fixed delay.
public func eventually(timeout: Duration = .seconds(180), every interval: Duration = .milliseconds(20),
                       _ condition: () throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try await Task.sleep(for: interval)
    }
}
