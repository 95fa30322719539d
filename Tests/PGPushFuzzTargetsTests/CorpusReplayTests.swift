import Foundation
import PGPushFuzzTargets
import Testing

/// Every input in Fuzz/corpus (seeds, and each crash the fuzzer ever found) runs
/// through its target in every test run, so a fixed crash stays fixed.
@Suite struct CorpusReplayTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus")

    @Test(arguments: FuzzTarget.allCases)
    func corpusReplaysWithoutCrashing(target: FuzzTarget) throws {
        let folder = Self.corpus.appendingPathComponent(target.rawValue)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(!files.isEmpty, "seed corpus for \(target.rawValue)")
        for file in files {
            let data = try Data(contentsOf: folder.appendingPathComponent(file))
            target.run(Array(data))
        }
    }

    @Test(arguments: FuzzTarget.allCases)
    func mutatedSeedsDoNotCrash(target: FuzzTarget) throws {
        let folder = Self.corpus.appendingPathComponent(target.rawValue)
        let seeds = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
            .map { Array(try Data(contentsOf: folder.appendingPathComponent($0))) }
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var input = seeds.randomElement(using: &random) ?? []
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                switch Int.random(in: 0..<3, using: &random) {
                case 0 where !input.isEmpty: input[Int.random(in: 0..<input.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                case 1: input.insert(UInt8.random(in: 0...255, using: &random), at: Int.random(in: 0...input.count, using: &random))
                default: if !input.isEmpty { input.remove(at: Int.random(in: 0..<input.count, using: &random)) }
                }
            }
            target.run(input)
        }
    }
}
