import Foundation
import Glibc

/// Debian's Chromium driven headless through `chromedriver` and the W3C WebDriver protocol
/// (plain HTTP and JSON, so no client library is needed): open a page, find elements by CSS
/// selector, read their text, type, click, take a screenshot. What the page tests see is
/// what a person's browser renders, forms posted by the browser included.
package final class HeadlessChromium: @unchecked Sendable {
    // @unchecked: one test drives one browser, one call at a time; `driver` is only
    // signalled and waited for.
    private let driver: Process
    private let port: Int
    private let session: String
    private let scratch: ScratchDirectory

    /// The W3C name of an element reference in JSON.
    static let elementKey = "element-6066-11e4-a52e-4f735466cecf"

    /// Whether this machine has both (`.ci/run` installs them; elsewhere the tests say what is missing).
    package static var isAvailable: Bool { ChildProcess.tool("chromedriver") != nil && chromiumPath != nil }

    static var chromiumPath: String? { ChildProcess.tool("chromium") ?? ChildProcess.tool("chromium-browser") }

    /// Starts chromedriver on a port it picks (`--port=0`, read from its output) and a
    /// headless browser session with a window of `width` × `height`.
    package static func start(width: Int = 1400, height: Int = 1000, scriptsEnabled: Bool = true) async throws -> HeadlessChromium {
        guard let chromedriver = ChildProcess.tool("chromedriver"), let chromium = chromiumPath else {
            throw TestSetupError("chromium and chromium-driver are needed (apt-get install chromium chromium-driver)")
        }
        let scratch = try ScratchDirectory()
        // chromedriver picks the port for --port=0 itself, not the kernel, and exits when another
        // process took it first ("bind() failed: Address already in use"): started again then.
        var started: (process: Process, port: Int)?
        var lastLog = ""
        for attempt in 1...5 where started == nil {
            let logPath = scratch.file("chromedriver-\(attempt).log")
            guard FileManager.default.createFile(atPath: logPath, contents: nil),
                  let log = FileHandle(forWritingAtPath: logPath) else { throw TestSetupError("cannot write \(logPath)") }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: chromedriver)
            process.arguments = ["--port=0"]
            process.standardOutput = log
            process.standardError = log
            try process.run()
            try? log.close()
            var port: Int?
            _ = try await eventually(timeout: .seconds(60)) {
                let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
                port = text.range(of: "started successfully on port ").flatMap { range in
                    Int(text[range.upperBound...].prefix { $0.isNumber })
                }
                return port != nil || !process.isRunning
            }
            if let port {
                started = (process, port)
            } else {
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                lastLog = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            }
        }
        guard let (process, port) = started else { throw TestSetupError("chromedriver did not start: \(lastLog)") }
        var arguments = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                         "--user-data-dir=\(scratch.file("profile"))", "--window-size=\(width),\(height)", "--hide-scrollbars"]
        if !scriptsEnabled { arguments.append("--blink-settings=scriptEnabled=false") }
        let capabilities: [String: Any] = ["capabilities": ["alwaysMatch": [
            "browserName": "chrome",
            "goog:chromeOptions": ["binary": chromium, "args": arguments],
        ]]]
        let created = try PlainHTTP.json("POST", port: port, path: "/session", capabilities)
        guard created.status == 200, let session = (created.value as? [String: Any])?["sessionId"] as? String else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestSetupError("chromedriver refused a session (\(created.status)): \(String(describing: created.value))")
        }
        return HeadlessChromium(driver: process, port: port, session: session, scratch: scratch)
    }

    private init(driver: Process, port: Int, session: String, scratch: ScratchDirectory) {
        self.driver = driver
        self.port = port
        self.session = session
        self.scratch = scratch
    }

    deinit { stop() }

    package func stop() {
        guard driver.isRunning else { return }
        // Ending the session closes the browser; chromedriver itself outlives SIGTERM.
        _ = try? PlainHTTP.json("DELETE", port: port, path: "/session/\(session)")
        kill(driver.processIdentifier, SIGKILL)
        driver.waitUntilExit()
    }

    // MARK: Pages

    /// Opens `url` and returns once the browser has loaded it.
    package func open(_ url: String) throws { _ = try command("POST", "/url", ["url": url]) }

    package var currentURL: String { get throws { try command("GET", "/url") as? String ?? "" } }
    package var title: String { get throws { try command("GET", "/title") as? String ?? "" } }
    package var pageSource: String { get throws { try command("GET", "/source") as? String ?? "" } }

    /// Waits until the page's address satisfies `condition` (a form's answer may still be
    /// loading when a click returns); false after `timeout`.
    package func waitForURL(timeout: Duration = .seconds(60), _ condition: (String) -> Bool) async throws -> Bool {
        try await eventually(timeout: timeout, every: .milliseconds(50)) { condition((try? self.currentURL) ?? "") }
    }

    package func waitForTitle(timeout: Duration = .seconds(60), _ condition: (String) -> Bool) async throws -> Bool {
        try await eventually(timeout: timeout, every: .milliseconds(50)) { condition((try? self.title) ?? "") }
    }

    /// The page as a PNG.
    package func screenshot() throws -> Data {
        guard let text = try command("GET", "/screenshot") as? String, let data = Data(base64Encoded: text) else {
            throw TestSetupError("no screenshot")
        }
        return data
    }

    // MARK: Elements

    package struct Element: Sendable, Equatable { let id: String }

    package func elements(_ selector: String) throws -> [Element] {
        let found = try command("POST", "/elements", ["using": "css selector", "value": selector]) as? [[String: Any]] ?? []
        return found.compactMap { ($0[Self.elementKey] as? String).map(Element.init) }
    }

    /// The one element `selector` names first; an error when there is none.
    package func element(_ selector: String) throws -> Element {
        guard let first = try elements(selector).first else { throw TestSetupError("no element matches \(selector)") }
        return first
    }

    /// The text the browser renders for an element (what a person reads).
    package func text(_ element: Element) throws -> String { try command("GET", "/element/\(element.id)/text") as? String ?? "" }

    package func text(_ selector: String) throws -> String { try text(element(selector)) }

    package func attribute(_ element: Element, _ name: String) throws -> String? {
        try command("GET", "/element/\(element.id)/attribute/\(name)") as? String
    }

    package func click(_ element: Element) throws { _ = try command("POST", "/element/\(element.id)/click", [:]) }

    package func type(_ text: String, into element: Element) throws {
        _ = try command("POST", "/element/\(element.id)/value", ["text": text])
    }

    private func command(_ method: String, _ path: String, _ body: [String: Any]? = nil) throws -> Any? {
        let answer = try PlainHTTP.json(method, port: port, path: "/session/\(session)\(path)", body)
        guard answer.status == 200 else {
            throw TestSetupError("WebDriver \(method) \(path): \(answer.status) \(String(describing: answer.value))")
        }
        return answer.value
    }
}
