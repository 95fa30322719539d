import Foundation

/// Key and certificate files should be readable by their owner only: a p8 key
/// or a .p12 lets anyone push as the app. Not an error (containers and
/// secret mounts differ), but worth a warning at start-up and in `doctor`.
public enum CredentialFilePermissions {
    public static func warnings(for app: AppConfiguration) -> [String] {
        let file: String
        switch app.authentication {
        case .token(_, _, let keyFile): file = keyFile
        case .certificate(let certificateFile, _): file = certificateFile
        }
        guard let mode = try? FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int,
              mode & 0o077 != 0 else { return [] }
        return ["\(file) is readable by other users (mode \(String(mode, radix: 8))): chmod 600 it"]
    }
}
