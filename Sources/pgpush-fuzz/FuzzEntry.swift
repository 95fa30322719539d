import Foundation
import PGPushFuzzTargets

// Built two ways (see Fuzz/README.md):
// - with -DFUZZING and -sanitize=fuzzer: libFuzzer drives LLVMFuzzerTestOneInput, and
//   PGPUSH_FUZZ_TARGET names the target;
// - plainly: `pgpush-fuzz TARGET FILE…` replays inputs (a crash reproducer, a corpus).

#if FUZZING
// libFuzzer's own main would clash with the one SwiftPM gives every executable, so
// our main hands control to libFuzzer's driver instead.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>,
                     _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                     _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

nonisolated(unsafe) private var selectedTarget = FuzzTarget.payload

@main
struct FuzzMain {
    static func main() {
        let name = ProcessInfo.processInfo.environment["PGPUSH_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            FileHandle.standardError.write(Data("set PGPUSH_FUZZ_TARGET to one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))\n".utf8))
            exit(2)
        }
        selectedTarget = target
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(runFuzzerDriver(&argc, &argv) { data, size in
            selectedTarget.run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
            return 0
        })
    }
}
#else
@main
struct ReplayInputs {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
            print("usage: pgpush-fuzz TARGET FILE…   targets: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
            exit(2)
        }
        for path in arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else {
                print("cannot read \(path)")
                exit(1)
            }
            target.run(Array(data))
        }
        print("replayed \(arguments.count - 1) input(s) through \(target.rawValue)")
    }
}
#endif
