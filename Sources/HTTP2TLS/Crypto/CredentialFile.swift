import Foundation

/// Reads key and certificate files, telling "missing" apart from "unreadable"
/// so the operator knows whether to fix a path or a permission.
enum CredentialFile {
    static func contents(of path: String) throws(CredentialError) -> [UInt8] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw .fileNotFound(path: path)
        }
        if isDirectory.boolValue {
            throw .fileUnreadable(path: path, reason: "it is a directory")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw .fileUnreadable(path: path, reason: "permission denied or not a regular file")
        }
        defer { try? handle.close() }
        do {
            return Array(try handle.readToEnd() ?? Data())
        } catch {
            throw .fileUnreadable(path: path, reason: "read failed")
        }
    }
}
