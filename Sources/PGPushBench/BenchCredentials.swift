import PushCrypto

/// The key and identifiers the simulator checks and the worker signs with.
package struct BenchCredentials: Sendable {
    package static let teamID = "BENCHTEAM1"
    package static let keyID = "BENCHKEY01"
    package static let bundleID = "com.example.bench"
    package let keyFile: String

    /// Generates a fresh P-256 key in `directory`.
    package static func generate(in directory: String) throws -> BenchCredentials {
        let keyFile = directory + "/AuthKey_bench.p8"
        try ES256PrivateKey.generate().writePKCS8(toFile: keyFile)
        return BenchCredentials(keyFile: keyFile)
    }
}
