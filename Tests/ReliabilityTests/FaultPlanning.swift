import APNsSimulator

/// Fault plans the scenarios share.
enum FaultPlanning {
    static let none = FaultPlan()

    static func plan(seed: UInt64 = 7, _ adjust: (inout FaultPlan) throws -> Void) rethrows -> FaultPlan {
        var plan = FaultPlan()
        plan.seed = seed
        try adjust(&plan)
        return plan
    }
}
