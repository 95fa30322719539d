import Testing

/// Every fault scenario runs one after another: they measure timing-sensitive
/// behaviour (leases, rates) on a small shared machine, and the database outage
/// must not overlap anything else using its cluster.
@Suite(.serialized) enum Reliability {}
