import CShims
import Glibc

/// Starts child processes the one way this project does: posix_spawn, stdin from
/// /dev/null, stdout and stderr together into a file, no other descriptor inherited, and
/// the caller waits with waitpid.
/// Foundation's Process was seen to hang in waitUntilExit here, and a pipe's write end
/// can be inherited by another child spawned at the same moment, so that a read waiting
/// for end of file waits as long as that child lives; a file has neither problem.
package enum Spawn {
    package enum OutputMode: Sendable {
        case truncate, append
    }

    /// Starts `executable` and returns its pid. `environment` nil passes this process's
    /// own; `directory` is where the child starts.
    package static func start(_ executable: String, _ arguments: [String], environment: [String: String]?,
                             output: String, mode: OutputMode = .truncate, permissions: mode_t = 0o600,
                             directory: String? = nil) throws(SpawnError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        let flags = O_WRONLY | O_CREAT | (mode == .append ? O_APPEND : O_TRUNC)
        posix_spawn_file_actions_addopen(&actions, 1, output, flags, permissions)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of this process's: a descriptor opened without O_CLOEXEC (a listening
        // socket of a test's server, a pipe) would otherwise live on in the child.
        cshims_spawn_actions_add_closefrom(&actions, 3)
        if let directory { cshims_spawn_actions_add_chdir(&actions, directory) }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { variables in
            variables.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        }
        defer { (argv + (envp ?? [])).forEach { free($0) } }
        // The child starts with no signal blocked and the usual signals at their defaults:
        // a thread of a test runner or of Dispatch may block or ignore some, and a child
        // inheriting that would never see the SIGTERM meant to stop it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGUSR1, SIGUSR2, SIGCHLD] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let result = envp.map { posix_spawn(&pid, executable, &actions, &attributes, argv, $0) }
            ?? posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard result == 0 else { throw SpawnError("could not start \(executable): \(String(cString: strerror(result)))") }
        return pid
    }

    /// The exit code in a `waitpid` status; 128 + the signal for a process that was killed.
    package static func exitCode(_ status: Int32) -> Int32 {
        status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}

package struct SpawnError: Error, CustomStringConvertible, Sendable {
    package let description: String
    package init(_ description: String) { self.description = description }
}
