// swift-tools-version:6.0
import PackageDescription

// Layout: a pure core (PGPushCore) with no I/O; one small wrapper module per C
// library (Postgres over libpq, PushCrypto over OpenSSL's keys and certificates,
// HTTP2TLS over nghttp2 + OpenSSL's TLS); the APNs client, the queue, the worker
// and the simulator above them; the operator commands' logic (PGPushOperator),
// the demo (PGPushDemo) and the benchmarks (PGPushBench) above those; `pgpush`
// is a thin command-line layer. Every target lists exactly the modules it imports.
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
        // APNs's vocabulary and request rules, shared by its client and its simulator.
        .target(name: "APNsCore", dependencies: ["PGPushCore"]),

        // A lock that ThreadSanitizer understands (see Locked.swift).
        .target(name: "Locking"),
        .target(name: "Spawn", dependencies: ["CShims"]),
        // The small HTTP/1.1 server of the metrics endpoint and the status page.
        .target(name: "LocalHTTP", dependencies: ["CShims", "Locking"]),

        // C-library wrappers.
        .target(name: "Postgres", dependencies: ["CLibPQ", "CShims"]),
        // ES256 keys and signatures, PKCS#12, PEM, certificates, the self-signed CA, credential files.
        .target(name: "PushCrypto", dependencies: ["COpenSSL", "CShims"]),
        .target(name: "HTTP2TLS", dependencies: ["CNGHTTP2", "COpenSSL", "CShims", "Locking", "PushCrypto", "PGPushCore"]),

        // I/O layers.
        .target(name: "EmbeddedPostgres", dependencies: ["Postgres", "Spawn"]),
        .target(name: "PushTransport", dependencies: ["PGPushCore", "HTTP2TLS"]),
        .target(name: "APNsClient", dependencies: ["PGPushCore", "APNsCore", "PushTransport", "HTTP2TLS", "PushCrypto", "Locking"]),
        .target(name: "FCMClient", dependencies: ["PGPushCore", "PushTransport", "PushCrypto", "HTTP2TLS", "Locking"]),
        .target(name: "FCMSimulator", dependencies: ["PGPushCore", "HTTP2TLS", "PushCrypto", "Locking"]),
        // Web Push (RFC 8030, 8291, 8292): subscriptions, VAPID, requests, answers, the sender.
        .target(name: "WebPushClient", dependencies: ["PGPushCore", "PushTransport", "PushCrypto", "HTTP2TLS", "Locking"]),
        .target(name: "WebPushSimulator", dependencies: ["PGPushCore", "PushCrypto", "HTTP2TLS", "Locking"]),
        .target(name: "PushQueue", dependencies: ["PGPushCore", "Postgres"]),
        .target(name: "APNsSimulator", dependencies: ["PGPushCore", "APNsCore", "HTTP2TLS", "PushCrypto", "Locking"]),
        .target(name: "PushWorker", dependencies: [
            "PGPushCore", "PushQueue", "PushTransport", "APNsCore", "APNsClient", "FCMClient", "WebPushClient", "HTTP2TLS", "PushCrypto",
            "Postgres", "CShims", "Locking", "LocalHTTP",
        ]),
        // What operators see: status snapshots, enqueue requests and their errors, channel management.
        .target(name: "PGPushOperator", dependencies: ["Postgres", "APNsClient", "APNsCore", "PGPushCore"]),
        // `pgpush web`: the status page, its queries and its HTML.
        .target(name: "PGPushWeb", dependencies: ["LocalHTTP", "Postgres", "Locking", "PGPushCore"]),
        // `pgpush demo`: a scenario run against the simulator with a worker in the same process.
        .target(name: "PGPushDemo", dependencies: [
            "PGPushCore", "Postgres", "PushQueue", "PushTransport", "PushWorker", "APNsSimulator", "FCMSimulator", "WebPushSimulator", "WebPushClient", "PushCrypto",
            "PGPushOperator", "Locking",
        ]),
        // `pgpush bench`: scenarios and measurement, run against separate simulator and worker processes.
        .target(name: "PGPushBench", dependencies: [
            "PGPushCore", "Postgres", "EmbeddedPostgres", "PushQueue", "APNsCore", "APNsClient", "APNsSimulator", "FCMSimulator", "WebPushSimulator", "PushWorker", "PushCrypto",
            "Locking", "Spawn", "PGPushWeb", "LocalHTTP",
        ]),
        .executableTarget(name: "pgpush", dependencies: [
            "PGPushCore", "Postgres", "EmbeddedPostgres", "PushQueue", "PushTransport", "APNsCore", "APNsClient", "FCMClient", "APNsSimulator",
            "FCMSimulator", "WebPushSimulator", "WebPushClient", "PushWorker",
            "PGPushOperator", "PGPushDemo", "PGPushBench", "HTTP2TLS", "PushCrypto", "Locking", "PGPushWeb", "LocalHTTP",
        ]),

        // Fuzz targets over every input pgpush takes from outside, and their libFuzzer / replay entry.
        .target(name: "PGPushFuzzTargets", dependencies: [
            "PGPushCore", "APNsCore", "PushWorker", "APNsSimulator", "HTTP2TLS", "PushCrypto", "FCMClient", "WebPushClient",
        ]),
        .executableTarget(name: "pgpush-fuzz", dependencies: ["PGPushFuzzTargets"]),

        // Shared by the test targets: the throwaway PostgreSQL cluster and fresh databases.
        .target(name: "PGPushTestSupport", dependencies: ["Postgres", "EmbeddedPostgres", "PushQueue", "Spawn", "Locking", "APNsSimulator", "APNsClient", "PushTransport", "HTTP2TLS", "PushCrypto", "PushWorker"]),

        // Tests mirror the modules.
        .testTarget(name: "PGPushCoreTests", dependencies: ["PGPushCore", "APNsCore"]),
        .testTarget(name: "APNsCoreTests", dependencies: ["APNsCore", "PGPushCore"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "EmbeddedPostgres", "PGPushTestSupport"]),
        .testTarget(name: "PushQueueTests", dependencies: ["PushQueue", "Postgres", "PGPushTestSupport", "PGPushCore", "APNsCore"]),
        .testTarget(name: "PushCryptoTests", dependencies: ["PushCrypto", "COpenSSL", "PGPushTestSupport"]),
        .testTarget(name: "FCMClientTests", dependencies: ["FCMClient", "PushCrypto", "PGPushCore", "PGPushTestSupport"]),
        .testTarget(name: "WebPushClientTests", dependencies: ["WebPushClient", "PushCrypto", "PGPushCore", "PushTransport", "PGPushTestSupport"]),
        .testTarget(name: "WebPushSimulatorTests", dependencies: [
            "WebPushSimulator", "WebPushClient", "PushCrypto", "PGPushCore", "HTTP2TLS", "PGPushTestSupport",
        ]),
        .testTarget(name: "FCMSimulatorTests", dependencies: [
            "FCMSimulator", "FCMClient", "HTTP2TLS", "PushCrypto", "PGPushCore", "PGPushTestSupport",
        ]),
        .testTarget(name: "HTTP2TLSTests", dependencies: ["HTTP2TLS", "PushCrypto", "COpenSSL", "Locking", "PGPushTestSupport"]),
        .testTarget(name: "PushTransportTests", dependencies: ["PushTransport", "PGPushCore", "HTTP2TLS"]),
        .testTarget(name: "APNsClientTests", dependencies: [
            "APNsClient", "APNsCore", "APNsSimulator", "PushTransport", "HTTP2TLS", "PushCrypto", "PGPushCore", "Locking", "PGPushTestSupport",
        ]),
        .testTarget(name: "PushWorkerTests", dependencies: [
            "PushWorker", "PushQueue", "PGPushCore", "APNsCore", "PGPushTestSupport", "Postgres", "APNsSimulator", "APNsClient", "PushCrypto",
            "Locking", "EmbeddedPostgres", "FCMClient", "FCMSimulator", "PushTransport", "WebPushClient", "WebPushSimulator", "HTTP2TLS",
        ]),
        .testTarget(name: "PGPushWebTests", dependencies: ["PGPushWeb", "LocalHTTP", "PGPushTestSupport", "Postgres"]),
        .testTarget(name: "LocalHTTPTests", dependencies: ["LocalHTTP", "PGPushTestSupport"]),
        .testTarget(name: "PGPushFuzzTargetsTests", dependencies: ["PGPushFuzzTargets"]),
        .testTarget(name: "pgpushTests", dependencies: ["PGPushTestSupport", "Postgres", "APNsSimulator", "PushCrypto", "EmbeddedPostgres"]),
        .testTarget(name: "PGPushOperatorTests", dependencies: ["PGPushOperator", "PGPushTestSupport", "Postgres"]),
        .testTarget(name: "PGPushDemoTests", dependencies: ["PGPushDemo", "PGPushTestSupport", "Postgres", "Locking"]),
        .testTarget(name: "APNsSimulatorTests", dependencies: [
            "APNsSimulator", "APNsCore", "HTTP2TLS", "PushCrypto", "PGPushCore", "PGPushTestSupport", "Locking",
        ]),
        .testTarget(name: "PGPushBenchTests", dependencies: ["PGPushBench", "PGPushTestSupport", "Postgres"]),
        // Fault suite: kills, database outages and APNs storms against the "nothing is lost" invariants.
        .testTarget(name: "ReliabilityTests", dependencies: [
            "PushWorker", "PushQueue", "PGPushCore", "PGPushTestSupport", "Postgres", "EmbeddedPostgres", "APNsSimulator",
            "APNsClient", "PushTransport", "PushCrypto",
        ]),
    ]
)
