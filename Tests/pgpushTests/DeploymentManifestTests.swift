import Foundation
import PGPushTestSupport
import Postgres
import Testing

/// The files in deploy/ say what they mean: the manifests parse, name only real
/// commands and settings, and the autoscaler's query runs against the schema.
@Suite struct DeploymentManifestTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = "/usr/bin/python3"
    /// Every variable the worker reads (WorkerConfiguration) and the README documents.
    static let knownVariables: Set<String> = [
        "DATABASE_URL", "PGPUSH_APNS_ENV", "PGPUSH_APNS_URL", "PGPUSH_CA_FILE", "PGPUSH_TEAM_ID", "PGPUSH_KEY_ID",
        "PGPUSH_KEY_FILE", "PGPUSH_CERT_FILE", "PGPUSH_CERT_PASSWORD", "PGPUSH_TOPIC", "PGPUSH_CONNECTIONS",
        "PGPUSH_RATE_PER_CONNECTION", "PGPUSH_CONFIG", "PGPUSH_APP", "PGPUSH_LEASE_SECONDS", "PGPUSH_DRAIN_SECONDS",
        "PGPUSH_WORKER_ID", "PGPUSH_PRUNE_AFTER_DAYS", "PGPUSH_METRICS_ADDR", "PGPUSH_FCM_CREDENTIALS_FILE",
        "PGPUSH_FCM_PROJECT_ID", "PGPUSH_FCM_URL",
    ]
    static let commands: Set<String> = ["migrate", "run", "doctor", "prune", "enqueue", "status", "demo", "mock-apns", "mock-fcm"]

    /// Debian's python3-yaml, installed by .ci/run and deploy/local/install-dependencies.sh.
    static let pythonWithYAML = FileManager.default.isExecutableFile(atPath: python)
        && FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/yaml/__init__.py")

    /// The Kubernetes documents as JSON, converted by PyYAML (python3-yaml).
    func kubernetesDocuments() async throws -> [[String: Any]] {
        let script = "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))"
        let child = try ChildProcess(Self.python, ["-c", script, Self.root.appendingPathComponent("deploy/kubernetes/pgpush.yaml").path])
        #expect(await child.wait(timeout: .seconds(20)) == 0, "\(child.output)")
        let parsed = try JSONSerialization.jsonObject(with: Data(child.output.utf8))
        return (parsed as? [[String: Any]]) ?? []
    }

    @Test(.enabled(if: pythonWithYAML, "needs /usr/bin/python3 with PyYAML (Debian python3-yaml)"))
    func kubernetesManifestsAreWellFormedAndUseRealSettings() async throws {
        let documents = try await kubernetesDocuments()
        #expect(documents.map { $0["kind"] as? String } == ["Job", "Deployment", "TriggerAuthentication", "ScaledObject"])
        for document in documents {
            #expect(document["apiVersion"] is String)
            #expect((document["metadata"] as? [String: Any])?["name"] is String)
        }
        for workload in documents.prefix(2) {
            let template = ((workload["spec"] as? [String: Any])?["template"] as? [String: Any])?["spec"] as? [String: Any]
            let containers = template?["containers"] as? [[String: Any]] ?? []
            #expect(containers.count == 1)
            for container in containers {
                let arguments = container["args"] as? [String] ?? []
                #expect(arguments.first.map(Self.commands.contains) == true, "\(arguments)")
                for variable in container["env"] as? [[String: Any]] ?? [] {
                    let name = variable["name"] as? String ?? ""
                    #expect(Self.knownVariables.contains(name), "unknown variable \(name)")
                }
            }
        }
        // The autoscaler's query runs against the real schema.
        let scaledObject = try #require(documents.first { $0["kind"] as? String == "ScaledObject" })
        let trigger = (((scaledObject["spec"] as? [String: Any])?["triggers"] as? [[String: Any]])?.first)?["metadata"] as? [String: Any]
        let query = try #require(trigger?["query"] as? String)
        let database = try PostgresConnection(conninfo: try TestDatabase.migrated())
        #expect(try database.query(query).int(0, 0) == 0)
        try database.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{}')", [[String(repeating: "ab", count: 32), String(repeating: "cd", count: 32)]])
        // No live worker serves app "default" yet: more workers of this Deployment would not help.
        #expect(try database.query(query).int(0, 0) == 0)
        try database.query("INSERT INTO pgpush.workers (id, host, pid, version, apps) VALUES ('w', 'h', 1, 'v', '{default}')")
        #expect(try database.query(query).int(0, 0) == 2)
    }

    @Test func systemdUnitAndContainerRunRealCommands() throws {
        let unit = try String(contentsOf: Self.root.appendingPathComponent("deploy/systemd/pgpush.service"), encoding: .utf8)
        let migrateUnit = try String(contentsOf: Self.root.appendingPathComponent("deploy/systemd/pgpush-migrate.service"),
                                     encoding: .utf8)
        let executions = unit.split(separator: "\n").filter { $0.hasPrefix("ExecStart") }
        // The worker's role may not change the schema: migrations run in their own unit, with
        // the owner's credentials in their own file.
        #expect(executions == ["ExecStart=/usr/local/bin/pgpush run"])
        #expect(unit.contains("Requires=pgpush-migrate.service"))
        let migrations = migrateUnit.split(separator: "\n").filter { $0.hasPrefix("ExecStart") }
        #expect(migrations == ["ExecStart=/usr/local/bin/pgpush migrate"])
        #expect(migrateUnit.contains("EnvironmentFile=/etc/pgpush/migrate.env"))
        for line in executions + migrations {
            let words = line.split(separator: "=", maxSplits: 1).last?.split(separator: " ") ?? []
            #expect(words.first == "/usr/local/bin/pgpush")
            #expect(words.dropFirst().first.map { Self.commands.contains(String($0)) } == true, "\(line)")
        }
        #expect(unit.contains("KillSignal=SIGTERM"))

        let dockerfile = try String(contentsOf: Self.root.appendingPathComponent("deploy/container/Dockerfile"), encoding: .utf8)
        // The binary looks for migrations in share/pgpush/sql beside its bin/ folder.
        #expect(dockerfile.contains("/out/usr/local/bin/pgpush"))
        #expect(dockerfile.contains("/out/usr/local/share/pgpush/sql"))
        // A numeric user, the one the Kubernetes pods run as.
        #expect(dockerfile.contains("USER 10001:10001"))
    }
}
