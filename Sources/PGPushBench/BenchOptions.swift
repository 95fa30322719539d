/// What `pgpush bench` runs and how big; every field has a flag.
package struct BenchOptions: Sendable, Codable, Equatable {
    package enum Scenario: String, Sendable, Codable, CaseIterable {
        case database, transport, uncapped, fcm, capped, latency, steady, scale, faults, broadcast, memory, history, webpush, lanes, web
    }

    package var scenarios: [Scenario] = Scenario.allCases
    /// Backlog for the database ceiling and the uncapped drain.
    package var rows = 200_000
    /// Requests for the transport ceiling.
    package var transportRequests = 200_000
    /// HTTP/2 connections for the uncapped, transport, latency and fault runs.
    package var connections = 4
    package var payloadBytes = 128
    /// Requests/second per connection in the capped runs.
    package var cap = 100
    package var cappedConnections = [1, 50]
    package var cappedSeconds = 10
    /// Offered load of the latency run (rows/second, one per transaction), for how long,
    /// and the worker's cap there (0: uncapped).
    package var latencyRate = 1_000
    package var latencySeconds = 10
    package var latencyCap = 0
    /// Offered rates of the steady runs (one row per transaction; twice rate / cap
    /// connections at the cap), and how long each inserts.
    package var steadyRates = [100, 1_000]
    package var steadySeconds = 10
    /// Notifications already sent before each steady run, not yet vacuumed: the dead index
    /// entries a queue carries between autovacuum's visits (0: a fresh table).
    package var steadyHistory = 0
    /// Worker processes side by side in the scale runs, each with this many connections at
    /// the cap, under a backlog, for how long.
    package var scaleWorkers = [1, 2, 4]
    package var scaleConnections = 50
    package var scaleSeconds = 10
    package var faultRows = 50_000
    /// mock-apns `--fault-mix`.
    package var faultMix = "503=0.05,429=0.02"
    package var goAwayAfter = 5_000
    /// The broadcast mix: a backlog of this many rows, every `broadcastEvery`-th one a Live
    /// Activity update to one of `broadcastChannels` channels, the rest alerts to tokens,
    /// drained uncapped on `connections` connections.
    package var broadcastRows = 50_000
    package var broadcastEvery = 2
    package var broadcastChannels = 100
    /// Backlog for the memory run, and how long the uncapped worker works on it.
    package var memoryRows = 1_000_000
    package var memorySeconds = 15
    /// Finished rows added under the claim query in the history run.
    package var historyRows = 10_000_000
    /// Messages sealed (and key agreements made for the floor) in the webpush run.
    package var webPushMessages = 20_000
    /// Bulk rows ahead of the urgent ones in the lanes run.
    package var laneBacklog = 100_000
    /// The status page's table in the web run: finished rows over a week, and queued rows.
    package var webFinishedRows = 10_000_000
    package var webQueuedRows = 1_000_000
    /// Keep the scratch folder (simulator logs and reports, worker output) for a look afterwards.
    package var keepFiles = false
    /// The steady runs' worker reaches PostgreSQL through a PgBouncer in transaction pooling
    /// mode (LISTEN on a session connection of its own, as the README says to run it).
    package var throughPgBouncer = false

    package init() {}

    /// About a minute in all: enough for a first look, not for the record.
    package static var quick: BenchOptions {
        var options = BenchOptions()
        options.rows = 20_000
        options.transportRequests = 20_000
        options.cappedSeconds = 5
        options.latencySeconds = 5
        options.steadySeconds = 4
        options.scaleSeconds = 4
        options.faultRows = 10_000
        options.broadcastRows = 10_000
        options.memoryRows = 100_000
        options.memorySeconds = 5
        options.historyRows = 100_000
        options.webPushMessages = 2_000
        options.laneBacklog = 20_000
        options.webFinishedRows = 100_000
        options.webQueuedRows = 10_000
        return options
    }
}
