@testable import HTTP2TLS
import Foundation
import Glibc
import Testing

/// The calling thread's name, as the kernel has it.
private func currentThreadName() -> String {
    let path = "/proc/thread-self/comm"
    guard let file = fopen(path, "r") else { return "" }
    defer { fclose(file) }
    var buffer = [UInt8](repeating: 0, count: 64)
    let count = fread(&buffer, 1, buffer.count, file)
    return String(decoding: buffer.prefix(count), as: UTF8.self).trimmingCharacters(in: .newlines)
}

private func isIOThread(_ executor: any TaskExecutor) -> Bool { executor is EventLoop<ClientCommand> }

@Suite("HTTP/2 client: its I/O thread as a task executor")
struct IOThreadExecutorTests {
    @Test("a few tasks run on the I/O thread, before and after their request is answered")
    func fewTasksRunOnTheIOThread() async throws {
        let server = try makeServer(echoHandler)
        defer { server.shutdown() }
        let client = try HTTP2Client(threadName: "h2-executor")
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration())
        let executor = client.preferredTaskExecutor(forTasks: 1)
        #expect(isIOThread(executor))
        let threads = try await Task(executorPreference: executor) {
            let before = currentThreadName()
            let response = try await connection.send(request(1))
            #expect(response.status == 200)
            return [before, currentThreadName()]
        }.value
        #expect(threads == ["h2-executor", "h2-executor"])
    }

    @Test("many tasks at once, or tasks for a busy I/O thread, go to the global executor")
    func manyTasksOrABusyThreadGoElsewhere() async throws {
        let client = try HTTP2Client(threadName: "h2-executor")
        defer { client.shutdown() }
        #expect(isIOThread(client.preferredTaskExecutor(forTasks: HTTP2Client.tasksOnIOThread)))
        #expect(!isIOThread(client.preferredTaskExecutor(forTasks: HTTP2Client.tasksOnIOThread + 1)))
        let thread = await Task(executorPreference: client.preferredTaskExecutor(forTasks: 1000)) { currentThreadName() }.value
        #expect(thread != "h2-executor")

        // A job that keeps the thread from polling for longer than a measuring window.
        let busy = Task(executorPreference: client.preferredTaskExecutor(forTasks: 1)) {
            let until = MonotonicClock.now() + 3 * BusyShare.window
            while MonotonicClock.now() < until {}
        }
        await busy.value
        // Published when the thread next goes to poll().
        var attempts = 0
        while isIOThread(client.preferredTaskExecutor(forTasks: 1)) && attempts < 200 {
            attempts += 1
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(!isIOThread(client.preferredTaskExecutor(forTasks: 1)))
    }

    @Test("a task that prefers a stopped I/O thread still runs, on the global executor")
    func stoppedThreadHandsJobsOn() async throws {
        let client = try HTTP2Client(threadName: "h2-executor")
        let executor = client.preferredTaskExecutor(forTasks: 1)
        client.shutdown()
        let thread = await Task(executorPreference: executor) { currentThreadName() }.value
        #expect(thread != "h2-executor")
    }

    @Test("busy share: the part of each window spent outside poll(), published once the window is over")
    func busyShare() {
        let window = BusyShare.window
        var share = BusyShare(start: 0)
        #expect(share.waited(from: 0, to: window / 4) == nil)
        // A quarter waiting so far; another half waiting ends the window a quarter busy.
        #expect(share.waited(from: window / 2, to: window) == 250)
        // A window spent entirely in poll() is idle.
        #expect(share.waited(from: window, to: 2 * window) == 0)
        // A window with no wait at all is fully busy.
        #expect(share.waited(from: 3 * window, to: 3 * window) == 1000)
    }
}
