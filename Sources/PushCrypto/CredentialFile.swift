import Foundation

/// Reads key and certificate files, telling "missing" apart from "unreadable"
/// so the operator knows whether to fix a path or a permission.
package enum CredentialFile {
    /// Keys and certificates are a few kilobytes; a bound keeps a mistaken path
    /// (a log file, /dev/zero) from being read without end.
    static let maximumSize = 1 << 20

    package static func contents(of path: String) throws(CredentialError) -> [UInt8] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw .fileNotFound(path: path)
        }
        if isDirectory.boolValue {
            throw .fileUnreadable(path: path, reason: "it is a directory")
        }
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer for ever;
        // what was opened is then checked to be a regular file before anything is read.
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw .fileUnreadable(path: path, reason: String(cString: strerror(errno)))
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw .fileUnreadable(path: path, reason: "not a regular file")
        }
        let data: Data
        do {
            data = try handle.read(upToCount: maximumSize + 1) ?? Data()
        } catch {
            throw .fileUnreadable(path: path, reason: "read failed")
        }
        guard data.count <= maximumSize else {
            throw .fileUnreadable(path: path, reason: "larger than 1 MiB, so not a key or certificate")
        }
        return Array(data)
    }

    /// Writes secret material readable by the owner only (0600), replacing any existing file.
    static func writeSecret(_ text: String, to path: String) throws(CredentialError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .fileNotWritable(path: path, reason: String(cString: strerror(errno)))
        }
        defer { close(descriptor) }
        // An existing file keeps its old mode through O_CREAT, so set it explicitly.
        guard fchmod(descriptor, 0o600) == 0 else {
            throw .fileNotWritable(path: path, reason: String(cString: strerror(errno)))
        }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if result < 0 {
                if errno == EINTR { continue }
                throw .fileNotWritable(path: path, reason: String(cString: strerror(errno)))
            }
            written += result
        }
    }
}
