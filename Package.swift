// swift-tools-version:6.0
import PackageDescription

// Layout: a pure core (PGPushCore) with no I/O; one small wrapper module per C
// library (Postgres over libpq, HTTP2TLS over nghttp2 + OpenSSL); the APNs
// client, the queue, the worker and the simulator above them; `pgpush` is a
// thin command-line layer.
let package = Package(
    name: "pgpush",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "pgpush", targets: ["pgpush"]),
    ],
    targets: [
        // C libraries.
        .systemLibrary(name: "CLibPQ", path: "Sources/CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CNGHTTP2", path: "Sources/CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // What Swift's Glibc module hides (eventfd, accept4, ...) and OpenSSL's variadic/macro APIs.
        .target(name: "CShims", dependencies: ["COpenSSL"]),

        // Pure core: notification model, validation, APNs rules, reasons, retry policy.
        .target(name: "PGPushCore"),

        // A lock that ThreadSanitizer understands (see Locked.swift).
        .target(name: "Locking"),
        .target(name: "Spawn", dependencies: ["CShims"]),

        // C-library wrappers.
        .target(name: "Postgres", dependencies: ["CLibPQ", "CShims"]),
        .target(name: "HTTP2TLS", dependencies: ["CNGHTTP2", "COpenSSL", "CShims", "Locking"]),

        // I/O layers.
        .target(name: "EmbeddedPostgres", dependencies: ["Postgres", "Spawn"]),
        .target(name: "APNsClient", dependencies: ["PGPushCore", "HTTP2TLS", "Locking"]),
        .target(name: "PushQueue", dependencies: ["PGPushCore", "Postgres"]),
        .target(name: "APNsSimulator", dependencies: ["PGPushCore", "HTTP2TLS", "Locking"]),
        .target(name: "PushWorker", dependencies: ["PGPushCore", "PushQueue", "APNsClient", "HTTP2TLS", "Postgres", "CShims", "Locking"]),
        // What operators see: the demo scenario, status snapshots, enqueue requests and their errors.
        .target(name: "PGPushOperator", dependencies: [
            "PGPushCore", "Postgres", "PushQueue", "PushWorker", "APNsClient", "APNsSimulator", "HTTP2TLS", "Locking",
        ]),
        // `pgpush bench`: scenarios and measurement, run against separate simulator and worker processes.
        .target(name: "PGPushBench", dependencies: [
            "PGPushCore", "Postgres", "EmbeddedPostgres", "PushQueue", "APNsClient", "APNsSimulator", "PushWorker", "HTTP2TLS", "Locking",
            "Spawn",
        ]),
        .executableTarget(name: "pgpush", dependencies: [
            "PGPushCore", "Postgres", "EmbeddedPostgres", "PushQueue", "APNsClient", "APNsSimulator", "PushWorker",
            "PGPushOperator", "PGPushBench", "HTTP2TLS", "Locking",
        ]),

        // Fuzz targets over every input pgpush takes from outside, and their libFuzzer / replay entry.
        .target(name: "PGPushFuzzTargets", dependencies: ["PGPushCore", "PushWorker", "APNsSimulator", "HTTP2TLS"]),
        .executableTarget(name: "pgpush-fuzz", dependencies: ["PGPushFuzzTargets"]),

        // Shared by the test targets: the throwaway PostgreSQL cluster and fresh databases.
        .target(name: "PGPushTestSupport", dependencies: ["Postgres", "EmbeddedPostgres", "PushQueue", "Spawn", "Locking", "APNsSimulator", "APNsClient", "HTTP2TLS", "PushWorker"]),

        // Tests mirror the modules.
        .testTarget(name: "PGPushCoreTests", dependencies: ["PGPushCore"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "EmbeddedPostgres", "PGPushTestSupport"]),
        .testTarget(name: "PushQueueTests", dependencies: ["PushQueue", "Postgres", "PGPushTestSupport", "PGPushCore"]),
        .testTarget(name: "HTTP2TLSTests", dependencies: ["HTTP2TLS", "Locking", "PGPushTestSupport"]),
        .testTarget(name: "APNsClientTests", dependencies: [
            "APNsClient", "APNsSimulator", "HTTP2TLS", "PGPushCore", "Locking", "PGPushTestSupport",
        ]),
        .testTarget(name: "PushWorkerTests", dependencies: [
            "PushWorker", "PushQueue", "PGPushCore", "PGPushTestSupport", "Postgres", "APNsSimulator", "APNsClient", "HTTP2TLS",
            "Locking",
        ]),
        .testTarget(name: "PGPushFuzzTargetsTests", dependencies: ["PGPushFuzzTargets"]),
        .testTarget(name: "pgpushTests", dependencies: ["PGPushTestSupport", "Postgres", "APNsSimulator", "HTTP2TLS"]),
        .testTarget(name: "PGPushOperatorTests", dependencies: ["PGPushOperator", "PGPushTestSupport", "Postgres", "Locking"]),
        .testTarget(name: "APNsSimulatorTests", dependencies: ["APNsSimulator", "HTTP2TLS", "PGPushCore", "PGPushTestSupport", "Locking"]),
        .testTarget(name: "PGPushBenchTests", dependencies: ["PGPushBench", "PGPushTestSupport", "Postgres"]),
        // Fault suite: kills, database outages and APNs storms against the "nothing is lost" invariants.
        .testTarget(name: "ReliabilityTests", dependencies: [
            "PushWorker", "PushQueue", "PGPushCore", "PGPushTestSupport", "Postgres", "EmbeddedPostgres", "APNsSimulator",
            "APNsClient", "HTTP2TLS",
        ]),
    ]
)
