import PushCrypto

/// The key and identifiers the simulator checks and the worker signs with.
public struct BenchCredentials: Sendable {
    public static let teamID = "BENCHTEAM1"
    public static let keyID = "BENCHKEY01"
    public static let bundleID = "com.example.bench"
    public let keyFile: String

    /// Generates a fresh P-256 key in `directory`.
    public static func generate(in directory: String) throws -> BenchCredentials {
        let keyFile = directory + "/AuthKey_bench.p8"
        try ES256PrivateKey.generate().writePKCS8(toFile: keyFile)
        return BenchCredentials(keyFile: keyFile)
    }
}
