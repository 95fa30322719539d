@testable import HTTP2TLS
import Testing

@Suite("Transport value types")
struct ValueTests {
    @Test("GOAWAY debug data: JSON reason when present, nil otherwise")
    func goAwayReason() {
        #expect(GoAway(lastStreamID: 5, errorCode: 0, debugData: Array(#"{"reason":"Shutdown"}"#.utf8)).reason == "Shutdown")
        #expect(GoAway(lastStreamID: 5, errorCode: 0, debugData: Array("plain text".utf8)).reason == nil)
        #expect(GoAway(lastStreamID: 5, errorCode: 0, debugData: Array(#"{"reason":7}"#.utf8)).reason == nil)
        #expect(GoAway(lastStreamID: 5, errorCode: 0, debugData: []).reason == nil)
        #expect(GoAway(lastStreamID: 5, errorCode: 2, debugData: Array("oops".utf8)).description.contains("oops"))
    }

    @Test("failure descriptions say whether a resend is safe")
    func failureDescriptions() {
        #expect(RequestFailure(.notProcessed, .refusedStream).description.hasSuffix("(not processed)"))
        #expect(RequestFailure(.possiblyProcessed, .deadlineExceeded).description.hasSuffix("(may have been processed)"))
        #expect(RequestFailure(.notProcessed, .refusedStream).wasCertainlyNotProcessed)
        #expect(!RequestFailure(.possiblyProcessed, .connectionClosed(.peerClosed)).wasCertainlyNotProcessed)
    }

    @Test("header look-up ignores case")
    func headerLookup() {
        let headers = [HeaderField("apns-id", "A"), HeaderField("Apns-Unique-Id", "B")]
        #expect(headers.value(of: "APNS-ID") == "A")
        #expect(headers.value(of: "apns-unique-id") == "B")
        #expect(headers.value(of: "missing") == nil)
    }
}

@Suite("Submit window: at most N submissions in any one second")
struct SubmitWindowTests {
    @Test("a burst is spread so no one-second window holds more than the limit")
    func burstIsSpread() {
        var window = SubmitWindow(limit: 3)
        let second: UInt64 = 1_000_000_000
        var now: UInt64 = 10 * second
        var submitted: [UInt64] = []
        // Ten requests all ready at once: each goes at the first instant the window allows.
        for _ in 0..<10 {
            now = window.nextAllowed(now: now)
            window.record(now)
            submitted.append(now)
        }
        for (index, instant) in submitted.enumerated() {
            let inWindow = submitted[index...].prefix { $0 < instant + second }.count
            #expect(inWindow <= 3)
        }
        #expect(submitted[3] == submitted[0] + SubmitWindow.window)
        #expect(submitted[9] == 10 * second + 3 * SubmitWindow.window)
    }

    @Test("below the limit nothing waits")
    func belowLimit() {
        var window = SubmitWindow(limit: 100)
        for step in 0..<100 {
            let now = UInt64(step) * 10_000_000
            #expect(window.nextAllowed(now: now) == now)
            window.record(now)
        }
        #expect(window.nextAllowed(now: 990_000_001) == SubmitWindow.window)
    }
}
