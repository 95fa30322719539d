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

    /// `switchNames` are the flags that take no value.
    init(_ arguments: some Sequence<String>, switchNames: Set<String> = ["help", "json", "watch"]) throws(UsageError) {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            guard argument.hasPrefix("--") else {
                positional.append(argument)
                continue
            }
            let flag = argument.dropFirst(2)
            if let equals = flag.firstIndex(of: "=") {
                add(String(flag[..<equals]), String(flag[flag.index(after: equals)...]))
            } else if switchNames.contains(String(flag)) {
                switches.insert(String(flag))
            } else if let value = iterator.next() {
                add(String(flag), value)
            } else {
                throw UsageError("--\(flag) needs a value")
            }
        }
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

    /// Refuses flags the command does not know, so a typo is an error, not a silent default.
    func checkOnly(_ known: Set<String>) throws(UsageError) {
        for name in values.keys.sorted() + switches.sorted() where !known.contains(name) {
            throw UsageError("unknown flag --\(name)")
        }
    }
}

/// Wrong use of the command line: printed with a pointer to `--help`, exit code 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
