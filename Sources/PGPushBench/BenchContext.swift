import Foundation

/// What every scenario shares: the pgpush executable to start, a scratch folder,
/// the key, the database and the progress line on stderr.
final class BenchContext {
    let executable: String
    let directory: String
    let credentials: BenchCredentials
    let database: BenchDatabase
    let options: BenchOptions
    let progress: (String) -> Void

    init(executable: String, directory: String, credentials: BenchCredentials, database: BenchDatabase,
         options: BenchOptions, progress: @escaping (String) -> Void) {
        self.executable = executable
        self.directory = directory
        self.credentials = credentials
        self.database = database
        self.options = options
        self.progress = progress
    }
}
