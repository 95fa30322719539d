/// The flags of one command: `--name value`, `--name=value` and bare `--switch`.
///
/// Small on purpose: pgpush has a handful of commands with a handful of flags
/// each, and SwiftPM cannot fetch an argument-parsing package here.
struct Arguments {
    private var values: [String: String] = [:]
    /// Every value of each flag in order, for the flags that may be given more than once.
    private var allValues: [String: [String]] = [:]
    private var switches: Set<String> = []
    private(set) var positional: [String] = []

    /// True when `-h` or `--help` appears anywhere: help then wins over everything else,
    /// so that asking for help can never migrate, prune or start a worker, even next to a
    /// mistyped flag or in the place of a flag's value.
    static func asksForHelp(_ arguments: some Sequence<String>) -> Bool {
        arguments.contains { $0 == "-h" || $0 == "--help" || $0.hasPrefix("--help=") }
    }

    /// `flags` are every flag the command knows; `switchNames` those of them that take no
    /// value; `optionalValues` the switches that also accept `--name=value` (`--watch=5`).
    /// Bare arguments are refused unless `positionalAllowed`: a command that takes none
    /// would otherwise ignore them silently.
    init(_ arguments: some Sequence<String>, flags: Set<String>, switchNames: Set<String>,
         optionalValues: Set<String> = [], positionalAllowed: Bool = false) throws(UsageError) {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            if !argument.hasPrefix("--") {
                if argument.count > 1, argument.hasPrefix("-"), argument.dropFirst().first?.isLetter == true {
                    throw UsageError("unknown flag \(argument)")
                }
                guard positionalAllowed else { throw UsageError("unexpected argument \(argument)") }
                positional.append(argument)
                continue
            }
            let flag = argument.dropFirst(2)
            if let equals = flag.firstIndex(of: "=") {
                let name = String(flag[..<equals])
                guard flags.contains(name) else { throw UsageError("unknown flag --\(name)") }
                if switchNames.contains(name) && !optionalValues.contains(name) {
                    throw UsageError("--\(name) takes no value")
                }
                add(name, String(flag[flag.index(after: equals)...]))
                continue
            }
            let name = String(flag)
            guard flags.contains(name) else { throw UsageError("unknown flag --\(name)") }
            if switchNames.contains(name) {
                switches.insert(name)
                continue
            }
            // A known flag in the value's place means the value was forgotten, not that
            // the value is "--batch-size".
            guard let value = iterator.next(), !Self.namesFlag(value, in: flags) else {
                throw UsageError("--\(name) needs a value")
            }
            add(name, value)
        }
    }

    private static func namesFlag(_ argument: String, in flags: Set<String>) -> Bool {
        guard argument.hasPrefix("--") else { return false }
        return flags.contains(String(argument.dropFirst(2).prefix { $0 != "=" }))
    }

    private mutating func add(_ name: String, _ value: String) {
        values[name] = value
        allValues[name, default: []].append(value)
    }

    /// The last value given for the flag.
    func value(_ name: String) -> String? { values[name] }
    /// Every value given for a repeatable flag, in order.
    func values(_ name: String) -> [String] { allValues[name] ?? [] }
    func isSet(_ name: String) -> Bool { switches.contains(name) }

    /// The flag's value as a whole number within `range`; nil when not given.
    func integer(_ name: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("--\(name) must be an integer in \(range.lowerBound)...\(range.upperBound), got \"\(text)\"")
        }
        return number
    }
}

import Foundation
import Postgres

extension Arguments {
    /// `--database-url`, else DATABASE_URL, else "" (libpq's PG* variables), checked by
    /// libpq before any connection: a string it cannot parse is a usage error naming its
    /// source, not a connection failure retried for ever.
    func databaseURL(environment: [String: String] = ProcessInfo.processInfo.environment) throws(UsageError) -> String {
        let conninfo = value("database-url") ?? environment["DATABASE_URL"] ?? ""
        do {
            try ConnectionString.validate(conninfo)
        } catch {
            let source = value("database-url") != nil ? "--database-url" : "DATABASE_URL"
            throw UsageError("\(source) is not a valid libpq connection string or URI: \(error)")
        }
        return conninfo
    }
}

/// Wrong use of the command line: printed with a pointer to `--help`, exit code 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
