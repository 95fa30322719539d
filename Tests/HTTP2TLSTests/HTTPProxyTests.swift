@testable import HTTP2TLS
import Testing

@Suite("HTTP proxy settings: the URL, NO_PROXY, the CONNECT request and the answer's head")
struct HTTPProxyTests {
    @Test("a proxy URL with credentials: host, port, Basic header; the description hides the password")
    func credentials() throws {
        let proxy = try HTTPProxy(url: "http://alice:p%40ss%3Aword@proxy.internal:3128/")
        #expect(proxy.host == "proxy.internal" && proxy.port == 3128 && proxy.user == "alice")
        #expect(proxy.description == "http://alice:***@proxy.internal:3128")
        let request = String(decoding: proxy.connectRequest(host: "api.push.apple.com", port: 443), as: UTF8.self)
        // base64("alice:p@ss:word")
        #expect(request == "CONNECT api.push.apple.com:443 HTTP/1.1\r\nHost: api.push.apple.com:443\r\n"
                + "Proxy-Authorization: Basic YWxpY2U6cEBzczp3b3Jk\r\n\r\n")
        #expect(!"\(proxy)".contains("p@ss"))
    }

    @Test("defaults and forms: port 80, a bare host:port, an IPv6 literal; without credentials no header")
    func forms() throws {
        #expect(try HTTPProxy(url: "http://proxy").port == 80)
        let bare = try HTTPProxy(url: "10.0.0.1:8888")
        #expect(bare.host == "10.0.0.1" && bare.port == 8888 && bare.user == nil)
        let six = try HTTPProxy(url: "http://[::1]:3128")
        #expect(six.host == "::1" && six.description == "http://[::1]:3128")
        let request = String(decoding: six.connectRequest(host: "::1", port: 443), as: UTF8.self)
        #expect(request == "CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n")
    }

    @Test("URLs that cannot be used are refused, and the refusal never shows the password",
          arguments: ["https://alice:secret@proxy:3128", "socks5://proxy:1080", "http://alice:secret@proxy:99999",
                      "http://alice:secret@:3128", "http://alice:secret@proxy:3128/path", "http://alice:%zz@proxy:3128"])
    func refused(url: String) {
        let error = #expect(throws: ProxyConfigurationError.self) { try HTTPProxy(url: url) }
        #expect(error.map { !$0.description.contains("secret") } == true, "\(String(describing: error))")
    }

    @Test("NO_PROXY as curl reads it: names with their subdomains, leading dots and *., ports ignored, * for all")
    func noProxy() {
        let list = NoProxy("localhost, .example.com,*.corp.test:8443, 10.1.2.3, [::1]")
        #expect(list.matches("localhost") && list.matches("LOCALHOST"))
        #expect(list.matches("example.com") && list.matches("api.example.com"))
        #expect(!list.matches("notexample.com") && !list.matches("example.com.evil.test"))
        #expect(list.matches("push.corp.test") && list.matches("10.1.2.3") && list.matches("::1"))
        #expect(!list.matches("10.1.2.30") && !list.matches("api.push.apple.com"))
        #expect(NoProxy("*").matches("anything.test") && !NoProxy("").matches("localhost"))
    }

    @Test("the answer's head: where it ends, and its status")
    func answer() {
        let head = Array("HTTP/1.0 407 Proxy Authentication Required\r\nServer: tinyproxy\r\n\r\n<html>".utf8)
        #expect(ProxyAnswer.headLength(head) == head.count - "<html>".utf8.count)
        #expect(ProxyAnswer.headLength(Array("HTTP/1.1 200 OK\r\n".utf8)) == nil)
        let status = ProxyAnswer.status(ofHead: head)
        #expect(status?.code == 407 && status?.reason == "Proxy Authentication Required")
        #expect(ProxyAnswer.status(ofHead: Array("SSH-2.0-OpenSSH\r\n\r\n".utf8)) == nil)
    }
}
