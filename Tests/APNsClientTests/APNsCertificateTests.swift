import PGPushTestSupport
import PushCrypto
import Testing
@testable import APNsClient

/// What Apple's extensions on a push certificate say, read off certificates the openssl CLI makes.
@Suite("APNs certificate topics and environments")
struct APNsCertificateTests {
    /// SEQUENCE { UTF8String "com.example.app", SEQUENCE { UTF8String "app" },
    ///            UTF8String "com.example.app.voip", SEQUENCE { UTF8String "voip" } }, as Apple encodes it.
    static let topicsHex = "30360C0F636F6D2E6578616D706C652E61707030050C036170700C14636F6D2E6578616D706C652E6170702E766F697030060C04766F6970"
    static var topicsDER: [UInt8] {
        let digits = Array(topicsHex.utf8)
        return stride(from: 0, to: digits.count, by: 2).compactMap { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16) }
    }
    static let developmentOID = "1.2.840.113635.100.6.3.1"
    static let productionOID = "1.2.840.113635.100.6.3.2"

    /// A self-signed certificate with Apple's push subject (UID=com.example.app) and `extensions` (OID, DER in hex).
    static func identity(extensions: [(oid: String, derHex: String)], in scratch: ScratchDirectory) throws -> ClientIdentity {
        var arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "push.key",
            "-out", "push.pem", "-subj", "/UID=com.example.app/CN=Apple Push Services: com.example.app", "-days", "30",
        ]
        for (oid, derHex) in extensions { arguments += ["-addext", "\(oid)=DER:\(derHex)"] }
        try OpenSSLCommand.succeed(arguments, in: scratch.path)
        return try ClientIdentity.loadPEM(certificatePath: scratch.file("push.pem"), keyPath: scratch.file("push.key"))
    }

    @Test("Apple's topics extension lists the topics; both environment extensions name both environments")
    func topicsAndEnvironments() throws {
        let scratch = try ScratchDirectory()
        let identity = try Self.identity(
            extensions: [("1.2.840.113635.100.6.3.6", Self.topicsHex), (Self.developmentOID, "0500"), (Self.productionOID, "0500")],
            in: scratch)
        #expect(identity.topics == ["com.example.app", "com.example.app.voip"])
        #expect(identity.environments == [.development, .production])
    }

    @Test("without Apple's topics extension the subject's UID is the topic")
    func topicFromUserID() throws {
        let identity = try Self.identity(extensions: [], in: try ScratchDirectory())
        #expect(identity.topics == ["com.example.app"])
        #expect(identity.environments.isEmpty)
    }

    @Test("a sandbox-only certificate names just the development environment")
    func developmentOnly() throws {
        let identity = try Self.identity(extensions: [(Self.developmentOID, "0500")], in: try ScratchDirectory())
        #expect(identity.environments == [.development])
    }
}

@Suite("APNs topics extension")
struct APNsTopicListTests {
    @Test("topics are read from topic/type pairs, including long-form lengths")
    func readsTopics() {
        let long = String(repeating: "a", count: 150)
        let longTopic: [UInt8] = [0x0C, 0x81, 150] + Array(long.utf8)
        let type: [UInt8] = [0x30, 0x05, 0x0C, 0x03] + Array("app".utf8)
        let content = longTopic + type
        let der: [UInt8] = [0x30, 0x81, UInt8(content.count)] + content
        #expect(APNsTopicList.topics(fromDER: der) == [long])
        #expect(APNsTopicList.topics(fromDER: APNsCertificateTests.topicsDER) == ["com.example.app", "com.example.app.voip"])
    }

    @Test("truncated or malformed input yields nil, never a crash", arguments: [
        [], [0x30], [0x30, 0x05, 0x0C], [0x30, 0x03, 0x0C, 0x05, 0x61], [0x0C, 0x00], [0x30, 0x80], [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF],
    ] as [[UInt8]])
    func rejectsMalformed(bytes: [UInt8]) {
        #expect(APNsTopicList.topics(fromDER: bytes) == nil)
    }
}
