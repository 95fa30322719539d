import Testing
@testable import WebPushClient

/// A subscription's endpoint names the host the worker will call; only origins the operator
/// allowed, at public addresses (or an address an entry names), are ever called.
struct EndpointTests {
    @Test func endpointsOfThePublicPushServicesAreRead() throws {
        let cases: [(String, String, String)] = [
            ("https://fcm.googleapis.com/fcm/send/dQw4w9WgXcQ:APA91b", "https://fcm.googleapis.com", "/fcm/send/dQw4w9WgXcQ:APA91b"),
            ("https://updates.push.services.mozilla.com/wpush/v2/gAAAAABm", "https://updates.push.services.mozilla.com", "/wpush/v2/gAAAAABm"),
            ("https://web.push.apple.com/QGuQyavXutnMH", "https://web.push.apple.com", "/QGuQyavXutnMH"),
            ("https://wns2-ln2p.notify.windows.com/w/?token=BQYAAAD%2b", "https://wns2-ln2p.notify.windows.com", "/w/?token=BQYAAAD%2b"),
            ("https://Push.Example.COM:8443", "https://push.example.com:8443", "/"),
            ("https://[2001:db8::1]:9000/x", "https://[2001:db8::1]:9000", "/x"),
        ]
        for (text, origin, target) in cases {
            let endpoint = try WebPushEndpoint(text)
            #expect(endpoint.origin.description == origin && endpoint.target == target, "\(text)")
        }
    }

    @Test(arguments: ["http://fcm.googleapis.com/fcm/send/x", "https://user:pw@fcm.googleapis.com/x", "https://fcm.googleapis.com/x#frag",
                      "https://fcm.googleapis.com:0/x", "https://fcm.googleapis.com:65536/x", "https://fcm.googleapis.com:44a/x",
                      "https:///x", "https://fcm.googleapis.com./x", "https://-a.example.com/x", "https://a_b.example.com/x",
                      "https://fcm.googleapis.com/a b", "https://fcm.googleapis.com/é", "https://[::1/x", "https://[zz::1]/x",
                      "ftp://example.com", "", "https://example.com/" + String(repeating: "a", count: 2048)])
    func endpointsThatAreNotPlainHTTPSURLsAreRefused(_ text: String) {
        #expect(throws: EndpointRefusal.self) { try WebPushEndpoint(text) }
    }

    @Test func theDefaultListAllowsThePublicPushServicesOnly() throws {
        let allowed = AllowedOrigins.publicPushServices
        for host in ["fcm.googleapis.com", "updates.push.services.mozilla.com", "web.push.apple.com", "api.push.apple.com",
                     "wns2-ln2p.notify.windows.com"] {
            #expect(allowed.allows(PushServiceOrigin(host: host)), "\(host)")
        }
        for origin in [PushServiceOrigin(host: "fcm.googleapis.com", port: 8443), PushServiceOrigin(host: "push.apple.com"),
                       PushServiceOrigin(host: "evilpush.apple.com"), PushServiceOrigin(host: "web.push.apple.com.evil.example"),
                       PushServiceOrigin(host: "notify.windows.com"), PushServiceOrigin(host: "127.0.0.1"),
                       PushServiceOrigin(host: "localhost"), PushServiceOrigin(host: "169.254.169.254"),
                       PushServiceOrigin(host: "googleapis.com")] {
            #expect(!allowed.allows(origin), "\(origin)")
        }
    }

    /// An address is allowed only where an entry names it, and then only that address; a
    /// name must resolve to public addresses.
    @Test func addressesAreAllowedOnlyWhereNamedAndNamesOnlyAtPublicAddresses() throws {
        let allowed = try AllowedOrigins("https://127.0.0.1:8443, https://*.push.example.net")
        let simulator = PushServiceOrigin(host: "127.0.0.1", port: 8443)
        #expect(allowed.allows(simulator) && allowed.allows(IPAddress("127.0.0.1")!, for: simulator))
        #expect(!allowed.allows(IPAddress("127.0.0.2")!, for: simulator))
        #expect(!allowed.allows(PushServiceOrigin(host: "127.0.0.1", port: 443)))
        #expect(!allowed.allows(PushServiceOrigin(host: "10.0.0.1", port: 8443)))
        let named = PushServiceOrigin(host: "eu.push.example.net")
        #expect(allowed.allows(named))
        #expect(allowed.allows(IPAddress("93.184.215.14")!, for: named))
        for inside in ["127.0.0.1", "10.0.0.7", "169.254.169.254", "::1", "fd12::1", "::ffff:192.168.1.1"] {
            #expect(!allowed.allows(IPAddress(inside)!, for: named), "\(inside)")
        }
    }

    @Test func publicAndSpecialPurposeAddresses() {
        let table: [(String, Bool)] = [
            ("8.8.8.8", true), ("1.1.1.1", true), ("172.32.0.1", true), ("100.128.0.1", true), ("192.0.3.1", true),
            ("0.0.0.0", false), ("10.1.2.3", false), ("100.64.0.1", false), ("100.127.255.255", false), ("127.0.0.1", false),
            ("169.254.169.254", false), ("172.16.0.1", false), ("172.31.255.255", false), ("192.0.0.8", false),
            ("192.0.2.1", false), ("192.168.1.1", false), ("198.18.0.1", false), ("198.51.100.7", false),
            ("203.0.113.9", false), ("224.0.0.1", false), ("240.0.0.1", false), ("255.255.255.255", false),
            ("2001:4860:4860::8888", true), ("2606:4700::1111", true), ("::", false), ("::1", false), ("fe80::1", false),
            ("fd00::1", false), ("fc00::1", false), ("ff02::1", false), ("2001:db8::1", false), ("::ffff:10.0.0.1", false),
            ("::ffff:8.8.8.8", true), ("64:ff9b::a00:1", false), ("64:ff9b::808:808", true), ("2002:a00:1::1", false),
            ("100::1", false), ("::127.0.0.1", false),
        ]
        for (text, isPublic) in table {
            #expect(IPAddress(text)?.isPublic == isPublic, "\(text)")
        }
        #expect(IPAddress("256.1.1.1") == nil && IPAddress("1.2.3") == nil && IPAddress("example.com") == nil)
    }

    @Test(arguments: ["", " , ", "http://fcm.googleapis.com", "https://fcm.googleapis.com/", "https://fcm.googleapis.com/path",
                      "https://*.com", "https://*.10.0.0.1", "https://*", "fcm.googleapis.com"])
    func settingsThatNameNoOriginAreRefused(_ setting: String) {
        #expect(throws: AllowedOriginsError.self) { try AllowedOrigins(setting) }
    }

    @Test func theSettingReadsBackAsWritten() throws {
        let setting = "https://fcm.googleapis.com, https://*.push.apple.com, https://127.0.0.1:8443, https://[::1]:9443"
        #expect(try AllowedOrigins(setting).description == setting)
        #expect(AllowedOrigins.publicPushServices.entries.count == 4)
    }
}
