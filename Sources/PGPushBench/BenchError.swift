/// Why the benchmark could not run a scenario.
package struct BenchError: Error, CustomStringConvertible, Sendable {
    package let description: String
    package init(_ description: String) { self.description = description }
}
