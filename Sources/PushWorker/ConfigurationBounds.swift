import Foundation

/// What configuration may not do, whoever wrote it: hold a NUL inside a string, point a file
/// setting at something that is not a file, list more apps than one worker can carry.
extension WorkerConfiguration {
    /// Apps one worker serves at most. An app is not free: it has its own APNs client with
    /// `connections` TLS + HTTP/2 connections (4 by default, up to 64) and their buffers, its
    /// key or certificate, a claim loop that asks the one shared claims connection for rows
    /// every poll interval, and a dozen metric series. At 100 apps and the default 4
    /// connections that is already 400 connections to Apple and 100 claims a second on one
    /// database connection; 40,000 apps once started 430 threads and 403 MB and were still
    /// starting after 12 s. Past the limit, run more workers, each with its own `--config`.
    package static let maximumApps = 100

    static func checkAppCount(_ count: Int) throws(ConfigurationError) {
        guard count <= maximumApps else {
            throw ConfigurationError("the configuration lists \(count) apps; a worker serves at most \(maximumApps) "
                                     + "(each app holds its own APNs connections and claim loop): split them across "
                                     + "workers, each with its own --config file")
        }
    }

    static func checkUniqueNames(_ apps: [FileApp]) throws(ConfigurationError) {
        var seen: Set<String> = []
        for app in apps where !seen.insert(app.name).inserted {
            throw ConfigurationError("app \"\(app.name)\" is listed more than once in the configuration file")
        }
    }

    /// The flags and the variables pgpush reads, refused when one holds a NUL: C reads a string
    /// only up to it, so the key file, database URL or topic used would not be the one given.
    static func checkNoNUL(flags: [String: String], environment: [String: String]) throws(ConfigurationError) {
        for (flag, value) in flags.sorted(by: { $0.key < $1.key }) where value.utf8.contains(0) {
            throw ConfigurationError("--\(flag) contains a NUL byte; no setting may hold one")
        }
        let read = { (name: String) in name.hasPrefix("PGPUSH_") || name == "DATABASE_URL" || name == "SSLKEYLOGFILE" }
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) where read(name) && value.utf8.contains(0) {
            throw ConfigurationError("\(name) contains a NUL byte; no setting may hold one")
        }
    }

    /// Key, certificate and CA paths must name regular files (after symlinks): a FIFO blocks
    /// the open that reads it for ever, a device never ends. A path that does not exist
    /// passes here; loading the credentials says "not found".
    static func checkRegularFiles(_ app: AppConfiguration) throws(ConfigurationError) {
        var files: [(setting: String, path: String)] = []
        switch app.authentication {
        case .token(_, _, let keyFile)?: files.append(("PGPUSH_KEY_FILE (key_file in the file)", keyFile))
        case .certificate(let file, _)?: files.append(("PGPUSH_CERT_FILE (cert_file in the file)", file))
        case nil: break
        }
        if let fcm = app.fcm {
            files.append(("PGPUSH_FCM_CREDENTIALS_FILE (fcm_credentials_file in the file)", fcm.credentialsFile))
        }
        if let webPush = app.webPush {
            files.append(("PGPUSH_VAPID_KEY_FILE (vapid_key_file in the file)", webPush.vapidKeyFile))
        }
        if let caFile = app.caFile { files.append(("PGPUSH_CA_FILE (ca_file in the file)", caFile)) }
        for (setting, path) in files {
            if let kind = RegularFile.notRegular(path) {
                throw ConfigurationError("app \"\(app.name)\": \(setting) \(path) is \(kind), not a regular file")
            }
        }
    }
}

enum RegularFile {
    /// What `path` is when it exists (symlinks followed) and is not a regular file; nil for a
    /// regular file, and for a path `stat` cannot see (whoever opens it reports why).
    static func notRegular(_ path: String) -> String? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        switch status.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFIFO: return "a FIFO"
        case S_IFDIR: return "a directory"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "not a file"
        }
    }
}

extension ConfigurationFile {
    /// Where the first string holding a NUL is in the file (`apps[0].key_file`), any key, known or
    /// not: JSON's `"\u0000"` decodes to one, and C would read the value only up to it.
    static func firstNUL(in data: Data) -> String? {
        guard let root = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else { return nil }
        return firstNUL(in: root, at: "")
    }

    private static func firstNUL(in value: Any, at path: String) -> String? {
        func printable(_ key: String) -> String { key.replacingOccurrences(of: "\0", with: "\\u0000") }
        switch value {
        case let text as String:
            return text.utf8.contains(0) ? (path.isEmpty ? "the top level" : path) : nil
        case let array as [Any]:
            for (index, element) in array.enumerated() {
                if let found = firstNUL(in: element, at: "\(path)[\(index)]") { return found }
            }
        case let object as [String: Any]:
            for key in object.keys.sorted() {
                let here = path.isEmpty ? printable(key) : "\(path).\(printable(key))"
                if key.utf8.contains(0) { return here }
                if let found = firstNUL(in: object[key] as Any, at: here) { return found }
            }
        default:
            break
        }
        return nil
    }
}
