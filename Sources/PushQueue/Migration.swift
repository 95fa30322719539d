import Foundation

/// One numbered file of `sql/` (`001_queue.sql` → version 1).
package struct Migration: Sendable, Equatable {
    package let version: Int
    package let name: String
    package let sql: String

    /// FNV-1a of the text: detects a migration edited after it was applied.
    package var checksum: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in sql.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// Reads every `NNN_name.sql` of `directory`, in version order. Other files
    /// (such as the optional `roles.sql`) are not migrations.
    package static func load(directory: String) throws -> [Migration] {
        let files: [String]
        do {
            files = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw MigrationError("cannot read the migrations folder \(directory): \(error.localizedDescription)")
        }
        var migrations: [Migration] = []
        for file in files where file.hasSuffix(".sql") {
            let stem = file.dropLast(4)
            guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]) else { continue }
            let path = directory + "/" + file
            guard let sql = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw MigrationError("cannot read \(path)")
            }
            migrations.append(Migration(version: version, name: String(stem[stem.index(after: underscore)...]), sql: sql))
        }
        migrations.sort { $0.version < $1.version }
        for (earlier, later) in zip(migrations, migrations.dropFirst()) where earlier.version == later.version {
            throw MigrationError("two migrations have version \(later.version): \(earlier.name) and \(later.name)")
        }
        guard !migrations.isEmpty else { throw MigrationError("no migrations (NNN_name.sql) in \(directory)") }
        return migrations
    }

    /// Where the `sql/` folder is: `PGPUSH_SQL_DIR`, then `share/pgpush/sql`
    /// beside the installed binary, then a `sql/` folder in a parent of the
    /// binary (a source checkout), then `./sql`.
    package static func locateDirectory(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        executablePath: String = CommandLine.arguments.first ?? "."
    ) -> String? {
        if let configured = environment["PGPUSH_SQL_DIR"] { return configured }
        let marker = "001_queue.sql"
        let executable = URL(fileURLWithPath: executablePath).resolvingSymlinksInPath()
        var candidates = [executable.deletingLastPathComponent().appendingPathComponent("../share/pgpush/sql").path]
        var folder = executable.deletingLastPathComponent()
        for _ in 0..<6 {
            candidates.append(folder.appendingPathComponent("sql").path)
            folder = folder.deletingLastPathComponent()
        }
        candidates.append(FileManager.default.currentDirectoryPath + "/sql")
        return candidates.first { FileManager.default.fileExists(atPath: $0 + "/" + marker) }
    }
}

package struct MigrationError: Error, CustomStringConvertible, Sendable {
    package let description: String
    package init(_ description: String) { self.description = description }
}
