import PGPushTestSupport
import Testing
@testable import PushWorker

/// The app's and its topics' gates on their own: one probe before the first answer, rows
/// waiting for it, a refusal parking them, a stopping worker never stuck.
@Suite struct AppHealthGateTests {
    @Test func theAppProbesWithOneRowUntilItsCredentialsAreAccepted() {
        let health = AppHealth()
        #expect(health.phase == .probing)
        _ = health.reportSuccess()
        #expect(health.phase == .healthy)
        #expect(health.reportProblem() != nil)
        guard case .paused = health.phase else {
            Issue.record("a credential problem pauses the app")
            return
        }
    }

    @Test func rowsOfATopicWaitForItsProbeAndGoWhenItIsAccepted() async throws {
        let health = AppHealth()
        #expect(await health.admit(scope: "com.example.app") == nil)
        let waiting = Task { await health.admit(scope: "com.example.app") }
        // Another topic has a probe of its own and does not wait.
        #expect(await health.admit(scope: "com.example.app.voip") == nil)
        #expect(try await eventually { health.waitingRows(scope: "com.example.app") == 1 })
        _ = health.scopeAnswered("com.example.app", accepted: true)
        #expect(await waiting.value == nil)
        #expect(await health.admit(scope: "com.example.app") == nil)
    }

    @Test func aRefusedTopicParksTheRowsThatWaitedForItsProbe() async throws {
        // Time stands still: on a loaded machine the resumed row may run after the whole
        // pause, and would then rightly probe instead of parking.
        let frozen = ContinuousClock.now
        let health = AppHealth(now: { frozen })
        #expect(await health.admit(scope: "com.example.app.voip") == nil)
        let waiting = Task { await health.admit(scope: "com.example.app.voip") }
        // The row is waiting once it is registered, however late its task starts.
        #expect(try await eventually { health.waitingRows(scope: "com.example.app.voip") == 1 })
        #expect(health.reportProblem(scope: "com.example.app.voip") == AppHealth.firstPause)
        let parked = try #require(await waiting.value)
        #expect(parked == AppHealth.firstPause)
        // The app itself is not paused by a topic.
        #expect(health.phase == .probing)
    }

    /// The worker asks without waiting first: the same answers as `admit`, and only a row
    /// behind a probe is told to wait.
    @Test func admittingWithoutWaitingGivesAdmitsAnswers() {
        let frozen = ContinuousClock.now
        let health = AppHealth(now: { frozen })
        #expect(health.admitWithoutWaiting(scope: "com.example.app") == .send)
        #expect(health.admitWithoutWaiting(scope: "com.example.app") == .waitForProbe)
        _ = health.scopeAnswered("com.example.app", accepted: true)
        #expect(health.admitWithoutWaiting(scope: "com.example.app") == .send)
        #expect(health.admitWithoutWaiting(scope: "com.example.app") == .send)
        #expect(health.admitWithoutWaiting(scope: "com.example.app.voip") == .send)
        #expect(health.reportProblem(scope: "com.example.app.voip") == AppHealth.firstPause)
        #expect(health.admitWithoutWaiting(scope: "com.example.app.voip") == .park(AppHealth.firstPause))
    }

    @Test func aStoppingWorkersWaitingRowGoesBackAtOnce() async throws {
        let health = AppHealth()
        #expect(await health.admit(scope: "com.example.app") == nil)
        let waiting = Task { await health.admit(scope: "com.example.app") }
        // The row is waiting once it is registered, however late its task starts.
        #expect(try await eventually { health.waitingRows(scope: "com.example.app") == 1 })
        waiting.cancel()
        #expect(await waiting.value == .zero)
    }
}
