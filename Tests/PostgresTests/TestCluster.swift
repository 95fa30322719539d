import EmbeddedPostgres
import Foundation
import Postgres

/// One throwaway cluster per test process; each test gets its own database.
enum TestCluster {
    static let shared: Result<EmbeddedPostgres, any Error> = Result { try EmbeddedPostgres.start() }

    static func freshDatabase() throws -> String {
        let cluster = try shared.get()
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        return try cluster.createDatabase(String(name))
    }
}
