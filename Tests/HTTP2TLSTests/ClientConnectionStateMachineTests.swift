@testable import HTTP2TLS
import Testing

private let second: UInt64 = 1_000_000_000
private let millisecond: UInt64 = 1_000_000

private typealias Machine = ClientConnectionStateMachine

private func limits(maxConcurrentStreams: Int = 1000, singleStream: Bool = false, unresponsiveAfter: Int = 0) -> Machine.Limits {
    Machine.Limits(maxConcurrentStreams: maxConcurrentStreams, singleStreamUntilFirstResponse: singleStream,
                   connectTimeout: 10 * second, pingInterval: 60 * second, pingTimeout: 10 * second,
                   unresponsiveAfterDeadlines: unresponsiveAfter)
}

/// A machine whose session started at `start`, as after a successful connect.
private func running(_ limits: Machine.Limits = limits(), start: UInt64 = 100 * second) -> Machine {
    var machine = Machine(limits: limits, now: start - second)
    machine.tcpConnected()
    machine.sessionStarted(now: start)
    return machine
}

private let goAway = GoAway(lastStreamID: 5, errorCode: 0, debugData: Array(#"{"reason":"Shutdown"}"#.utf8))

@Suite("Client connection state machine: stream limits, PING, deadlines and closing on a manual clock")
struct ClientConnectionStateMachineTests {
    @Test("one stream until the peer's SETTINGS, then the lower of its limit and ours")
    func streamLimitFollowsSettings() {
        var machine = running(limits(maxConcurrentStreams: 50))
        #expect(machine.streamLimit == 1)
        #expect(machine.settingsReceived(maxConcurrentStreams: 200) == .first(maxConcurrentStreams: 200))
        #expect(machine.streamLimit == 50)
        #expect(machine.settingsReceived(maxConcurrentStreams: 20) == .changed(maxConcurrentStreams: 20))
        #expect(machine.streamLimit == 20)
        #expect(machine.settingsReceived(maxConcurrentStreams: 20) == .unchanged)
        #expect(machine.settingsReceived(maxConcurrentStreams: 0) == .changed(maxConcurrentStreams: 0))
        #expect(machine.streamLimit == 0)
    }

    @Test("with single stream until first response, one stream even after SETTINGS until an answer")
    func singleStreamUntilFirstAnswer() {
        var machine = running(limits(singleStream: true))
        #expect(machine.streamLimit == 1)
        _ = machine.settingsReceived(maxConcurrentStreams: 100)
        #expect(machine.streamLimit == 1)
        machine.streamEnded()  // a failed stream is no answer
        #expect(machine.streamLimit == 1)
        machine.streamAnswered()
        #expect(machine.streamLimit == 100)
    }

    @Test("without the option, the peer's limit applies as soon as its SETTINGS arrive")
    func noSingleStreamWithoutOption() {
        var machine = running()
        _ = machine.settingsReceived(maxConcurrentStreams: 100)
        #expect(machine.streamLimit == 100)
    }

    @Test("no streams before the session runs")
    func noStreamsWhileConnecting() {
        var machine = Machine(limits: limits(), now: 0)
        #expect(machine.streamLimit == 0)
        machine.tcpConnected()
        #expect(machine.streamLimit == 0)
        #expect(machine.requestQueued(token: 1, deadline: 5 * second) == nil)
        #expect(machine.beginSubmitting() == 0)
    }

    @Test("requests and freed streams make a submit due; submitting clears it")
    func submitDue() {
        var machine = running()
        #expect(!machine.submitDue)
        #expect(machine.requestQueued(token: 1, deadline: .max) == nil)
        #expect(machine.submitDue)
        #expect(machine.beginSubmitting() == 1)
        #expect(!machine.submitDue)
        machine.streamEnded()
        #expect(machine.submitDue)
        _ = machine.beginSubmitting()
        _ = machine.settingsReceived(maxConcurrentStreams: 10)
        #expect(machine.submitDue)
    }

    @Test("GOAWAY drains: queued and new requests fail as not processed, nothing is submitted, close once nghttp2 is done")
    func goAwayDrains() {
        var machine = running()
        _ = machine.settingsReceived(maxConcurrentStreams: 100)
        let queueFailure = machine.goAwayReceived(goAway)
        #expect(queueFailure == RequestFailure(.notProcessed, .goAway(goAway)))
        #expect(machine.goAway == goAway)
        #expect(machine.streamLimit == 0)
        #expect(machine.beginSubmitting() == 0)
        #expect(machine.requestQueued(token: 7, deadline: .max) == RequestFailure(.notProcessed, .goAway(goAway)))
        #expect(machine.sessionRunning)
        // Streams up to the last stream id are still finishing.
        #expect(machine.closeDue(sessionFinished: false) == nil)
        #expect(machine.closeDue(sessionFinished: true) == .goAway(goAway))
        let closing = machine.close(.goAway(goAway), openStreams: 0)
        #expect(closing?.reason == .goAway(goAway))
        #expect(machine.isClosed)
        #expect(machine.close(.peerClosed, openStreams: 0) == nil)
    }

    @Test("after GOAWAY the peer closing the socket is reported as the GOAWAY, with it for the open streams")
    func peerCloseAfterGoAway() {
        var machine = running()
        _ = machine.goAwayReceived(goAway)
        let closing = machine.close(.peerClosed, openStreams: 3)
        #expect(closing?.reason == .goAway(goAway))
        #expect(closing?.goAway == goAway)
        #expect(closing?.connectPending == false)
        #expect(machine.requestQueued(token: 1, deadline: .max) == RequestFailure(.notProcessed, .connectionClosed(.goAway(goAway))))
    }

    @Test("a GOAWAY after a local graceful close still decides the reason")
    func goAwayAfterLocalDrain() {
        var machine = running()
        #expect(machine.closeRequested(graceful: true) == .drain(queueFailure: RequestFailure(.notProcessed, .connectionClosed(.closedLocally))))
        _ = machine.goAwayReceived(goAway)
        #expect(machine.closeDue(sessionFinished: true) == .goAway(goAway))
        let closing = machine.close(.peerClosed, openStreams: 1)
        #expect(closing?.reason == .goAway(goAway))
    }

    @Test("local graceful close: no new requests, streams finish, the peer's close afterwards is ours")
    func localGracefulClose() {
        var machine = running()
        _ = machine.settingsReceived(maxConcurrentStreams: 100)
        #expect(machine.closeRequested(graceful: true) == .drain(queueFailure: RequestFailure(.notProcessed, .connectionClosed(.closedLocally))))
        #expect(machine.streamLimit == 0)
        #expect(machine.requestQueued(token: 1, deadline: .max) == RequestFailure(.notProcessed, .connectionClosed(.closedLocally)))
        #expect(machine.closeDue(sessionFinished: false) == nil)
        #expect(machine.closeDue(sessionFinished: true) == .closedLocally)
        var withStreams = machine
        // The peer closing while streams are still open is the peer's doing.
        let peerClosing = withStreams.close(.peerClosed, openStreams: 2)
        #expect(peerClosing?.reason == .peerClosed)
        let closing = machine.close(.peerClosed, openStreams: 0)
        #expect(closing?.reason == .closedLocally)
        #expect(machine.closeRequested(graceful: true) == .none)
    }

    @Test("a close that is not graceful, or before the session runs, is immediate")
    func immediateClose() {
        var active = running()
        #expect(active.closeRequested(graceful: false) == .closeNow)
        var connecting = Machine(limits: limits(), now: 0)
        #expect(connecting.closeRequested(graceful: true) == .closeNow)
        #expect(connecting.requestQueued(token: 1, deadline: .max) == nil)
    }

    @Test("a PING goes out after the idle interval, not before; bytes arriving answer it")
    func pingAfterIdle() {
        let start = 100 * second
        var machine = running(start: start)
        #expect(machine.nextTimer == start + 60 * second)
        #expect(machine.timerFired(now: start + 60 * second - 1) == [])
        machine.received(now: start + 30 * second)
        #expect(machine.nextTimer == start + 90 * second)
        #expect(machine.timerFired(now: start + 60 * second) == [])
        #expect(machine.timerFired(now: start + 90 * second) == [.sendPing])
        // The PING's timeout is now the next thing to check; no second PING meanwhile.
        #expect(machine.nextTimer == start + 100 * second)
        #expect(machine.timerFired(now: start + 95 * second) == [])
        machine.received(now: start + 95 * second)
        #expect(machine.timerFired(now: start + 100 * second) == [])
        #expect(machine.nextTimer == start + 155 * second)
        #expect(machine.timerFired(now: start + 155 * second) == [.sendPing])
    }

    @Test("HTTP/1.1: one request at a time at once, no PING however long it idles; deadlines still count")
    func http1HasOneStreamAndNoPing() {
        let start = 100 * second
        var machine = Machine(limits: limits(maxConcurrentStreams: 50, unresponsiveAfter: 1), now: start - second)
        machine.tcpConnected()
        #expect(machine.http1Started(now: start) == 1)
        #expect(machine.streamLimit == 1 && machine.submitDue)
        #expect(machine.nextTimer == nil)
        #expect(machine.timerFired(now: start + 3600 * second) == [])
        #expect(machine.requestQueued(token: 1, deadline: start + 10 * second) == nil)
        machine.requestSubmitted(token: 1, now: start)
        #expect(machine.nextTimer == start + 10 * second)
        #expect(machine.timerFired(now: start + 10 * second) == [.expireRequests([1]), .close(.unresponsive(deadlinesInARow: 1))])
    }

    @Test("an unanswered PING declares the connection dead at its timeout, not before")
    func pingTimeout() {
        let start = 100 * second
        var machine = running(start: start)
        #expect(machine.timerFired(now: start + 60 * second) == [.sendPing])
        #expect(machine.timerFired(now: start + 70 * second - 1) == [])
        #expect(machine.timerFired(now: start + 70 * second) == [.close(.pingTimeout)])
    }

    @Test("a draining connection still checks liveness")
    func pingWhileDraining() {
        let start = 100 * second
        var machine = running(start: start)
        _ = machine.goAwayReceived(goAway)
        #expect(machine.timerFired(now: start + 60 * second) == [.sendPing])
    }

    @Test("only requests past their deadlines expire, and resolved ones never")
    func requestDeadlines() {
        let start = 100 * second
        var machine = running(start: start)
        #expect(machine.requestQueued(token: 1, deadline: start + 5 * second) == nil)
        #expect(machine.requestQueued(token: 2, deadline: start + 8 * second) == nil)
        #expect(machine.requestQueued(token: 3, deadline: start + 5 * second) == nil)
        machine.requestEnded(token: 3)
        #expect(machine.nextTimer == start + 5 * second)
        #expect(machine.timerFired(now: start + 5 * second - 1) == [])
        #expect(machine.timerFired(now: start + 5 * second) == [.expireRequests([1])])
        #expect(machine.nextTimer == start + 8 * second)
        #expect(machine.timerFired(now: start + 9 * second) == [.expireRequests([2])])
        #expect(machine.nextTimer == start + 60 * second)
    }

    @Test("expired deadlines come before the PING check in one firing")
    func expiryAndPingTogether() {
        let start = 100 * second
        var machine = running(start: start)
        _ = machine.requestQueued(token: 9, deadline: start + 60 * second)
        #expect(machine.timerFired(now: start + 60 * second) == [.expireRequests([9]), .sendPing])
    }

    @Test("the rate window's hold is a timer that asks for a submit, cleared by submitting")
    func rateTimer() {
        let start = 100 * second
        var machine = running(start: start)
        _ = machine.beginSubmitting()
        machine.rateLimited(until: start + 300 * millisecond)
        #expect(machine.nextTimer == start + 300 * millisecond)
        #expect(machine.timerFired(now: start + 299 * millisecond) == [])
        #expect(machine.timerFired(now: start + 300 * millisecond) == [.submit])
        _ = machine.beginSubmitting()
        #expect(machine.nextTimer == start + 60 * second)
    }

    @Test("the connect deadline covers TCP and TLS, and no longer applies once the session runs")
    func connectDeadline() {
        let start = 100 * second
        var machine = Machine(limits: limits(), now: start)
        #expect(machine.nextTimer == start + 10 * second)
        machine.connecting(addressIndex: 1)
        #expect(machine.state == .connecting(addressIndex: 1, deadline: start + 10 * second))
        machine.tcpConnected()
        #expect(machine.state == .handshaking(deadline: start + 10 * second))
        #expect(machine.timerFired(now: start + 10 * second - 1) == [])
        #expect(machine.timerFired(now: start + 10 * second) == [.failConnect(.timedOut)])
        var connected = machine
        connected.sessionStarted(now: start + 2 * second)
        #expect(connected.timerFired(now: start + 10 * second) == [])
        let closing = machine.close(.ioError("connect timed out"), openStreams: 0)
        #expect(closing?.connectPending == true)
        #expect(machine.nextTimer == nil)
    }

    @Test("a closed connection has no timers and fails new requests with its reason")
    func closedConnection() {
        var machine = running()
        _ = machine.requestQueued(token: 1, deadline: 1)
        _ = machine.close(.pingTimeout, openStreams: 0)
        #expect(machine.closeReason == .pingTimeout)
        #expect(machine.nextTimer == nil)
        #expect(machine.timerFired(now: .max) == [])
        #expect(machine.requestQueued(token: 2, deadline: .max) == RequestFailure(.notProcessed, .connectionClosed(.pingTimeout)))
        #expect(machine.streamLimit == 0)
    }

    @Test("three requests in a row expiring in flight with no answer since they went out close the connection as unresponsive")
    func unresponsive() {
        let start = 100 * second
        var machine = running(limits(unresponsiveAfter: 3), start: start)
        _ = machine.settingsReceived(maxConcurrentStreams: 100)
        for token in UInt64(1)...3 {
            let deadline = start + token * 10 * second
            #expect(machine.requestQueued(token: token, deadline: deadline) == nil)
            machine.requestSubmitted(token: token, now: deadline - 10 * second)
            // PINGs answered meanwhile (bytes arriving) do not count as answers.
            machine.received(now: deadline - second)
            let expected: [Machine.Action] = token < 3
                ? [.expireRequests([token])]
                : [.expireRequests([token]), .close(.unresponsive(deadlinesInARow: 3))]
            #expect(machine.timerFired(now: deadline) == expected)
        }
        _ = machine.close(.unresponsive(deadlinesInARow: 3), openStreams: 0)
        #expect(machine.requestQueued(token: 9, deadline: .max)
                == RequestFailure(.notProcessed, .connectionClosed(.unresponsive(deadlinesInARow: 3))))
    }

    @Test("an answer starts the count again; queued requests and those sent before an answer do not count")
    func answersResetUnresponsiveCount() {
        let start = 100 * second
        var machine = running(limits(unresponsiveAfter: 3), start: start)
        _ = machine.settingsReceived(maxConcurrentStreams: 100)
        for token in UInt64(1)...2 {
            _ = machine.requestQueued(token: token, deadline: start + 10 * second)
            machine.requestSubmitted(token: token, now: start)
        }
        // Held back by the rate window, say: its expiry says nothing about the peer.
        _ = machine.requestQueued(token: 3, deadline: start + 10 * second)
        #expect(machine.timerFired(now: start + 10 * second) == [.expireRequests([1, 2, 3])])
        // Response HEADERS for some other stream: the peer answers.
        machine.answerReceived(now: start + 11 * second)
        for token in UInt64(4)...5 {
            _ = machine.requestQueued(token: token, deadline: start + 20 * second)
            machine.requestSubmitted(token: token, now: start + 10 * second)
        }
        // Sent before that answer: the peer was answering while they waited; slow, not gone.
        #expect(machine.timerFired(now: start + 20 * second) == [.expireRequests([4, 5])])
        for token in UInt64(6)...7 {
            _ = machine.requestQueued(token: token, deadline: start + 22 * second)
            machine.requestSubmitted(token: token, now: start + 12 * second)
        }
        #expect(machine.timerFired(now: start + 22 * second) == [.expireRequests([6, 7])])
        #expect(!machine.isClosed)
        // Several at once count one by one.
        for token in UInt64(8)...10 {
            _ = machine.requestQueued(token: token, deadline: start + 23 * second)
            machine.requestSubmitted(token: token, now: start + 13 * second)
        }
        #expect(machine.timerFired(now: start + 23 * second) == [.expireRequests([8, 9, 10]), .close(.unresponsive(deadlinesInARow: 5))])
    }

    @Test("a busy server slow for some requests is not unresponsive: answers come between the expiries")
    func slowButAnswering() {
        let start = 100 * second
        var machine = running(limits(unresponsiveAfter: 3), start: start)
        _ = machine.settingsReceived(maxConcurrentStreams: 100)
        // A request every 10 ms with a 1 s deadline; three in five go unanswered (three
        // expiries in a row, then two answers), the others are answered after 500 ms.
        for index in UInt64(0)..<1000 {
            let now = start + index * 10 * millisecond
            for action in machine.timerFired(now: now) {
                if case .close(let reason) = action { Issue.record("closed at request \(index): \(reason)") }
            }
            _ = machine.requestQueued(token: index, deadline: now + second)
            machine.requestSubmitted(token: index, now: now)
            if index >= 50 && index % 5 >= 3 {
                machine.answerReceived(now: now)
                machine.requestEnded(token: index - 50)
            }
        }
        #expect(!machine.isClosed)
    }

    @Test("with the count at 0 a connection is never closed for expiries")
    func unresponsiveDisabled() {
        let start = 100 * second
        var machine = running(limits(unresponsiveAfter: 0), start: start)
        for token in UInt64(1)...10 {
            _ = machine.requestQueued(token: token, deadline: start + token * second)
            machine.requestSubmitted(token: token, now: start)
            #expect(machine.timerFired(now: start + token * second) == [.expireRequests([token])])
        }
    }

    @Test("an abort for a bound names the bound as the close reason, over the error nghttp2 returns")
    func abortForBound() {
        var machine = running()
        machine.abort(for: .headerList(limit: 16_384))
        #expect(!machine.isClosed)
        let closing = machine.close(.protocolError("The user callback function failed"), openStreams: 1)
        #expect(closing?.reason == .responseTooLarge(.headerList(limit: 16_384)))
        #expect(machine.closeReason == .responseTooLarge(.headerList(limit: 16_384)))
    }
}
