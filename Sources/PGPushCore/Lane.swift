/// A row's `lane` column: which of an app's due rows go first. The claim takes every due
/// urgent row before any normal one and normal before bulk (sql/018_daily_operations.sql);
/// rows already claimed keep that order where they wait for a connection (`LaneQueue`), so
/// a one-time code claimed behind a second of campaign rows is not sent after them.
package enum Lane: String, CaseIterable, Sendable, Hashable, Comparable {
    case urgent
    case normal
    case bulk

    /// What a row gets when its insert names none (the column's default, 018).
    package static let unnamed: Lane = .normal

    /// Claim order: urgent first.
    package static func < (lhs: Lane, rhs: Lane) -> Bool { lhs.rank < rhs.rank }

    var rank: Int {
        switch self {
        case .urgent: 0
        case .normal: 1
        case .bulk: 2
        }
    }
}
