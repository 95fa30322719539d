import Foundation
@testable import PGPushCore
import Testing

struct RetryAfterTests {
    @Test func secondsAndHTTPDatesAreReadAndCappedAtAnHour() {
        // 1,780,000,000 s is 2026-05-28 20:26:40 UTC.
        let now = Date(timeIntervalSince1970: 1_780_000_000)
        #expect(RetryAfter.duration("Thu, 28 May 2026 20:27:00 GMT", now: now) == .seconds(20))
        #expect(RetryAfter.duration("Thu, 28 May 2026 20:00:00 GMT", now: now) == .zero)
        #expect(RetryAfter.duration("999999", now: now) == .seconds(3600))
        // RFC 9110's example, a leap day and the end of a year.
        #expect(RetryAfter.httpDate("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        #expect(RetryAfter.httpDate("Thu, 29 Feb 2024 00:00:00 GMT") == Date(timeIntervalSince1970: 1_709_164_800))
        #expect(RetryAfter.httpDate("Fri, 31 Dec 2027 23:59:59 GMT") == Date(timeIntervalSince1970: 1_830_297_599))
        for bad in ["Sun, 06 Nov 1994 08:49:37 UTC", "06 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
                    "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 6 Nov 1994 08:49 GMT", ""] {
            #expect(RetryAfter.httpDate(bad) == nil, "\(bad)")
        }
    }
}
