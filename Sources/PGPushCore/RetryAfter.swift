import Foundation

/// A `Retry-After` header (RFC 9110 §10.2.3), as every service that sends one means it: the
/// shared reading behind FCM's and Web Push's throttling and server-trouble verdicts.
package enum RetryAfter {
    /// `Retry-After` as seconds or an HTTP date (RFC 9110 §10.2.3); nil when it is neither,
    /// and at most an hour: a header cannot hold a row for ever.
    package static func duration(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        let seconds: Double
        if let whole = Int(text), whole >= 0 {
            seconds = Double(whole)
        } else if let date = httpDate(text) {
            seconds = max(date.timeIntervalSince(now), 0)
        } else {
            return nil
        }
        return .milliseconds(Int64(min(seconds, 3600) * 1000))
    }

    /// An IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`, the form RFC 9110 §5.6.7 says to send;
    /// read by hand: the bytes come from the network, and Foundation's formatters are slow and
    /// keep state.
    package static func httpDate(_ text: String) -> Date? {
        let parts = text.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT",
              let day = Int(parts[1]), (1...31).contains(day),
              let month = months.firstIndex(of: String(parts[2])),
              let year = Int(parts[3]), (1970...9999).contains(year)
        else { return nil }
        let clock = parts[4].split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3, (0...23).contains(clock[0]), (0...59).contains(clock[1]), (0...60).contains(clock[2]) else {
            return nil
        }
        // Days since 1970-01-01 of a proleptic Gregorian date (the civil-from-days inverse).
        let shiftedYear = month < 2 ? year - 1 : year
        let era = shiftedYear / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * ((month + 10) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + clock[0] * 3600 + clock[1] * 60 + clock[2]))
    }
}
