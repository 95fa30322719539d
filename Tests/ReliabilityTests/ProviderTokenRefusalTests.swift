import APNsSimulator
import Foundation
import PGPushTestSupport
import Postgres
import Testing

extension Reliability {
    /// APNs refuses a JWT for good while a backlog is sending. Requests that waited through the
    /// refusal carry the renewed JWT, and every connection that carried the refused one is
    /// retired where the refusal arrives: a refusal costs each such connection the request it
    /// had out, no connection sees two JWTs, and no row counts an attempt for it. Before, 300
    /// rows cost 120 refusals, 241 connections and 78 TooManyProviderTokenUpdates.
    ///
    /// In the fault suite, which runs alone: with eighty other tests beside it, the worker's
    /// tasks may be held for long enough that a connection writes two requests before the
    /// refusal of the first arrives, and both are refused (the requests already written are
    /// the cost no client can avoid). 20/s per connection keeps one request out at a time.
    @Suite struct ProviderTokenRefusalTests {
        @Test func aJWTRefusedForGoodCostsEachConnectionOneRequest() async throws {
            let faults = FaultPlanning.plan { $0.staleProviderTokensAfterRequests = 60 }
            let harness = try SimulatorHarness.reliability(faults: faults)
            defer { harness.stop() }
            try harness.start()
            let conninfo = try TestDatabase.migrated()
            let database = try PostgresConnection(conninfo: conninfo)
            try Backlog.enqueue(database, count: 300)
            let worker = try InProcessWorker.start(
                conninfo: conninfo, app: harness.app(connections: 2, ratePerConnection: 20), id: "jwt-worker")
            let settled = await Backlog.waitUntilSettled(conninfo: conninfo, timeout: .seconds(120))
            try await worker.stop()
            #expect(settled)
            let report = harness.simulator.report()
            let states = try database.query("SELECT status, count(*), max(attempts) FROM pgpush.notifications GROUP BY 1")
            #expect(states.rowCount == 1 && states.string(0, 0) == "delivered" && states.int(0, 1) == 300)
            #expect(states.int(0, 2) == 1, "no row counts an attempt for a refused JWT")
            let refusals = report.count(reason: "ExpiredProviderToken")
            print("reliability[jwt refused for good] refusals \(refusals), connections \(report.connectionsOpened), "
                  + "TooManyProviderTokenUpdates \(report.count(reason: "TooManyProviderTokenUpdates"))")
            #expect(refusals >= 1)
            #expect(refusals <= 2, "at most one refusal per connection that carried the JWT: \(refusals)")
            #expect(report.count(reason: "TooManyProviderTokenUpdates") == 0)
            #expect(report.connectionsOpened <= 4, "two connections, each replaced once: \(report.connectionsOpened)")
        }
    }
}
