import Glibc

/// Writes to stdout and stderr that cannot kill the process.
///
/// An operator's `pgpush run 2>&1 | head -2` closes the pipe under a running worker,
/// and a supervisor may start it with stderr closed. FileHandle's write traps when
/// write(2) fails, and SIGPIPE's default action kills the process: either would turn
/// lost log lines into a dead worker holding leases.
package enum StandardStreams {
    /// Makes a write to a pipe without a reader fail with EPIPE instead of killing the
    /// process. Call once, first thing in main.
    package static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Writes all of `text` to `descriptor`, retrying short writes and EINTR; any other
    /// failure (EPIPE, EBADF, a full disk) drops the rest, because there is nowhere left
    /// to report it.
    package static func write(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }

    package static func writeError(_ text: String) { write(text, to: STDERR_FILENO) }
    package static func writeOutput(_ text: String) { write(text, to: STDOUT_FILENO) }
}
