import Foundation
import PushQueue
import Testing

/// Values from an answer as the queue stores them: `Outcome.storableText` and the outcome
/// a refused row gets instead.
@Suite struct StorableOutcomeTests {
    @Test func controlsAndSeparatorsBecomeReplacementCharacters() {
        #expect(Outcome.storableText("Bad\u{0}Token") == "Bad\u{FFFD}Token")
        #expect(Outcome.storableText("a\u{85}b\u{2028}c\u{2029}d\u{7F}e\n") == "a\u{FFFD}b\u{FFFD}c\u{FFFD}d\u{FFFD}e\u{FFFD}")
        #expect(Outcome.storableText("Unregistered") == "Unregistered")
    }

    @Test func longTextIsCutAtACharacterBoundaryWithAnEllipsis() {
        #expect(Outcome.storableText(String(repeating: "x", count: 10), maxBytes: 10) == String(repeating: "x", count: 10))
        #expect(Outcome.storableText(String(repeating: "x", count: 11), maxBytes: 10) == "xxxxxxx\u{2026}")
        // "é" is two bytes: the cut never splits one.
        let cut = Outcome.storableText(String(repeating: "é", count: 10), maxBytes: 10)
        #expect(cut == "ééé\u{2026}")
        #expect(cut.utf8.count <= 10)
        let huge = Outcome.storableText(String(repeating: "😀", count: 100_000))
        #expect(huge.utf8.count <= Outcome.maxReasonBytes)
        #expect(huge.hasSuffix("\u{2026}"))
    }

    @Test func aRefusedOutcomeKeepsOnlyItsStatusAndDisposition() {
        let failed = Outcome(id: 1, claimCount: 2, disposition: .retry(after: .seconds(1), countsAsAttempt: true),
                             httpStatus: 503, reason: "x", recordsError: true, invalidatesToken: true,
                             appleTimestamp: Date(), apnsUniqueID: UUID())
        #expect(failed.refusedByDatabase == Outcome(id: 1, claimCount: 2, disposition: .failed, httpStatus: 503,
                                                    reason: Outcome.refusedReason, recordsError: true))
        let delivered = Outcome(id: 3, claimCount: 1, disposition: .delivered, httpStatus: 200, apnsUniqueID: UUID())
        #expect(delivered.refusedByDatabase == Outcome(id: 3, claimCount: 1, disposition: .delivered, httpStatus: 200))
    }
}
