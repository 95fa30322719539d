/// What `pgpush bench` runs and how big; every field has a flag.
public struct BenchOptions: Sendable, Codable, Equatable {
    public enum Scenario: String, Sendable, Codable, CaseIterable {
        case database, transport, uncapped, fcm, capped, latency, steady, scale, faults, broadcast, memory, history
    }

    public var scenarios: [Scenario] = Scenario.allCases
    /// Backlog for the database ceiling and the uncapped drain.
    public var rows = 200_000
    /// Requests for the transport ceiling.
    public var transportRequests = 200_000
    /// HTTP/2 connections for the uncapped, transport, latency and fault runs.
    public var connections = 4
    public var payloadBytes = 128
    /// Requests/second per connection in the capped runs.
    public var cap = 100
    public var cappedConnections = [1, 50]
    public var cappedSeconds = 10
    /// Offered load of the latency run (rows/second, one per transaction), for how long,
    /// and the worker's cap there (0: uncapped).
    public var latencyRate = 1_000
    public var latencySeconds = 10
    public var latencyCap = 0
    /// Offered rates of the steady runs (one row per transaction; twice rate / cap
    /// connections at the cap), and how long each inserts.
    public var steadyRates = [100, 1_000]
    public var steadySeconds = 10
    /// Notifications already sent before each steady run, not yet vacuumed: the dead index
    /// entries a queue carries between autovacuum's visits (0: a fresh table).
    public var steadyHistory = 0
    /// Worker processes side by side in the scale runs, each with this many connections at
    /// the cap, under a backlog, for how long.
    public var scaleWorkers = [1, 2, 4]
    public var scaleConnections = 50
    public var scaleSeconds = 10
    public var faultRows = 50_000
    /// mock-apns `--fault-mix`.
    public var faultMix = "503=0.05,429=0.02"
    public var goAwayAfter = 5_000
    /// The broadcast mix: a backlog of this many rows, every `broadcastEvery`-th one a Live
    /// Activity update to one of `broadcastChannels` channels, the rest alerts to tokens,
    /// drained uncapped on `connections` connections.
    public var broadcastRows = 50_000
    public var broadcastEvery = 2
    public var broadcastChannels = 100
    /// Backlog for the memory run, and how long the uncapped worker works on it.
    public var memoryRows = 1_000_000
    public var memorySeconds = 15
    /// Finished rows added under the claim query in the history run.
    public var historyRows = 10_000_000
    /// Keep the scratch folder (simulator logs and reports, worker output) for a look afterwards.
    public var keepFiles = false
    /// The steady runs' worker reaches PostgreSQL through a PgBouncer in transaction pooling
    /// mode (LISTEN on a session connection of its own, as the README says to run it).
    public var throughPgBouncer = false

    public init() {}

    /// About a minute in all: enough for a first look, not for the record.
    public static var quick: BenchOptions {
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
        return options
    }
}
