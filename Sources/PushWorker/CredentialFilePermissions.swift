import Foundation

/// Key and certificate files should be readable by their owner only: a p8 key, a .p12, a
/// service-account file or a VAPID key lets anyone push as the app. Not an error (containers and
/// secret mounts differ), but worth a warning at start-up and in `doctor`.
package enum CredentialFilePermissions {
    package static func warnings(for app: AppConfiguration) -> [String] {
        var files: [String] = []
        switch app.authentication {
        case .token(_, _, let keyFile)?: files.append(keyFile)
        case .certificate(let certificateFile, _)?: files.append(certificateFile)
        case nil: break
        }
        if let fcm = app.fcm { files.append(fcm.credentialsFile) }
        if let webPush = app.webPush { files.append(webPush.vapidKeyFile) }
        return files.compactMap { file in
            guard let mode = try? FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int,
                  mode & 0o077 != 0 else { return nil }
            return "\(file) is readable by other users (mode \(String(mode, radix: 8))): chmod 600 it"
        }
    }
}
