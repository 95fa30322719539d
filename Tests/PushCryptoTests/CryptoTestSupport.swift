import Foundation
import PGPushTestSupport
import Testing

/// Key files made by the openssl CLI, as a developer would make or download them.
enum CryptoTestKeys {
    /// An unencrypted PKCS#8 EC key on `curve` (like Apple's .p8), written to `name`.
    @discardableResult
    static func p8(curve: String = "P-256", named name: String, in scratch: ScratchDirectory) throws -> String {
        try OpenSSLCommand.succeed(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:\(curve)", "-out", "\(name).raw"], in: scratch.path)
        try OpenSSLCommand.succeed(["pkcs8", "-topk8", "-nocrypt", "-in", "\(name).raw", "-out", name], in: scratch.path)
        return scratch.file(name)
    }

    @discardableResult
    static func rsa(named name: String, in scratch: ScratchDirectory) throws -> String {
        try OpenSSLCommand.succeed(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", name], in: scratch.path)
        return scratch.file(name)
    }

    /// A P-256 PKCS#8 key encrypted with `password`.
    @discardableResult
    static func encryptedP8(named name: String, password: String, in scratch: ScratchDirectory) throws -> String {
        try OpenSSLCommand.succeed(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(name).raw"], in: scratch.path)
        try OpenSSLCommand.succeed(["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-passout", "pass:\(password)", "-in", "\(name).raw", "-out", name], in: scratch.path)
        return scratch.file(name)
    }

    /// The base64 body lines of a PEM file: what must never leak into messages.
    static func secretLines(ofPEM text: String) -> [String] {
        text.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("-----") && $0.count > 20 }
    }
}

/// Certificates made by the openssl CLI: a test CA and APNs-like client certificates.
enum CryptoTestCertificates {
    static let pushSubject = "/UID=com.example.app/CN=Apple Push Services: com.example.app/OU=ABCDE12345/O=Example Ltd/C=US"

    /// `ca.pem` + `ca.key`: an EC test authority standing in for Apple's WWDR intermediate.
    static func authority(in scratch: ScratchDirectory) throws {
        try OpenSSLCommand.succeed([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=Test Push CA", "-days", "30",
        ], in: scratch.path)
    }

    /// `<name>.key` (RSA, as Apple issues) and `<name>.pem` signed by `ca.pem`, valid for `days`,
    /// carrying Apple's topics extension when `topics` is given.
    static func pushCertificate(
        named name: String, days: Int = 365, topics: [(String, String)]? = nil, environmentOIDs: [String] = [],
        in scratch: ScratchDirectory
    ) throws {
        try OpenSSLCommand.succeed([
            "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(name).key",
            "-subj", pushSubject, "-out", "\(name).csr",
        ], in: scratch.path)
        var extensions = "[push]\nbasicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n"
        if let topics {
            let hex = topicsExtensionDER(topics).map { String(format: "%02X", $0) }.joined()
            extensions += "1.2.840.113635.100.6.3.6=DER:\(hex)\n"
        }
        for oid in environmentOIDs {
            extensions += "\(oid)=DER:0500\n"
        }
        try scratch.write(extensions, to: "\(name).ext")
        try OpenSSLCommand.succeed([
            "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "7",
            "-days", String(days), "-extfile", "\(name).ext", "-extensions", "push", "-out", "\(name).pem",
        ], in: scratch.path)
    }

    /// `<name>.pem` + `<name>.key`: a self-signed certificate valid only from `start` to `end`
    /// (YYYYMMDDHHMMSSZ), made with `openssl ca`, which on OpenSSL 3.0 is the CLI way to backdate.
    static func backdatedCertificate(named name: String, start: String, end: String, in scratch: ScratchDirectory) throws {
        try scratch.write("", to: "\(name)-index.txt")
        try scratch.write("01\n", to: "\(name)-serial")
        try scratch.write("""
            [ca]
            default_ca = backdating
            [backdating]
            database = ./\(name)-index.txt
            new_certs_dir = .
            serial = ./\(name)-serial
            default_md = sha256
            policy = anything
            unique_subject = no
            [anything]
            commonName = supplied
            """, to: "\(name)-ca.cnf")
        try OpenSSLCommand.succeed([
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "\(name).key", "-subj", "/CN=Apple Push Services: com.example.old", "-out", "\(name).csr",
        ], in: scratch.path)
        try OpenSSLCommand.succeed([
            "ca", "-batch", "-config", "\(name)-ca.cnf", "-selfsign", "-keyfile", "\(name).key", "-in", "\(name).csr",
            "-startdate", start, "-enddate", end, "-notext", "-out", "\(name).pem",
        ], in: scratch.path)
    }

    /// `<name>.p12` from `<name>.pem` + `<name>.key` (+ `ca.pem` as chain).
    static func pkcs12(named name: String, password: String, legacy: Bool = false, in scratch: ScratchDirectory) throws {
        var arguments = [
            "pkcs12", "-export", "-inkey", "\(name).key", "-in", "\(name).pem", "-certfile", "ca.pem",
            "-passout", "pass:\(password)", "-out", "\(name).p12",
        ]
        if legacy { arguments.append("-legacy") }
        try OpenSSLCommand.succeed(arguments, in: scratch.path)
    }

    /// SEQUENCE { UTF8String topic, SEQUENCE { UTF8String type }, ... } as Apple encodes it.
    static func topicsExtensionDER(_ topics: [(String, String)]) -> [UInt8] {
        func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
            precondition(content.count < 128, "test input")
            return [tag, UInt8(content.count)] + content
        }
        let content = topics.flatMap { topic, type in
            tlv(0x0C, Array(topic.utf8)) + tlv(0x30, tlv(0x0C, Array(type.utf8)))
        }
        return tlv(0x30, content)
    }

    /// The certificate's notAfter as the openssl CLI reads it.
    static func notAfter(of name: String, in scratch: ScratchDirectory) throws -> Date? {
        let output = try OpenSSLCommand.succeed(["x509", "-in", name, "-noout", "-enddate", "-dateopt", "iso_8601"], in: scratch.path)
        let value = output.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "notAfter=", with: "")
        return try? Date(value.replacingOccurrences(of: " ", with: "T"), strategy: .iso8601)
    }
}
