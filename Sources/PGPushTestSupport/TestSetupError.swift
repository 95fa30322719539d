/// A test could not set up what it tests (a tool missing, a server that did not
/// start): a failure of the test's surroundings, not of the code under test.
public struct TestSetupError: Error, Sendable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}
