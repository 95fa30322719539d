/// A test could not set up what it tests (a tool missing, a server that did not
/// start): a failure of the test's surroundings, not of the code under test.
package struct TestSetupError: Error, Sendable, CustomStringConvertible {
    package let description: String

    package init(_ description: String) {
        self.description = description
    }
}
