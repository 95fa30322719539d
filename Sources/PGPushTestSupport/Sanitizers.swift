import Glibc

/// Whether this test process runs under a sanitizer, so that a test sizes its loops to what
/// the sanitizer costs: ThreadSanitizer makes every memory access and lock several times
/// dearer, and a loop sized for a plain build would spend minutes proving nothing more.
package enum Sanitizers {
    /// ThreadSanitizer's runtime is linked in: it exports `__tsan_init` (a nil handle is
    /// glibc's RTLD_DEFAULT, the global symbol scope).
    package static let threadSanitizer = dlsym(nil, "__tsan_init") != nil

    /// `plain` in a plain build, `sanitized` under ThreadSanitizer.
    package static func scaled(_ plain: Int, underThreadSanitizer sanitized: Int) -> Int {
        threadSanitizer ? sanitized : plain
    }
}
