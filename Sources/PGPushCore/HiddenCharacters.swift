extension Unicode.Scalar {
    /// C0 controls (NUL among them), DEL, C1 controls and the line and paragraph separators:
    /// characters a reader of a log line, a terminal or a page would not see as themselves,
    /// and that text from the network uses to forge lines or drive terminals. The log escapes
    /// them; the queue stores them as U+FFFD.
    package var isHiddenInText: Bool {
        value < 0x20 || (0x7F...0x9F).contains(value) || self == "\u{2028}" || self == "\u{2029}"
    }
}

extension String {
    /// Printable ASCII without spaces (0x21–0x7E): all that a token, a topic or a header value
    /// naming something may hold. True for the empty string; callers bound the length.
    package var isVisibleASCII: Bool { utf8.allSatisfy { (0x21...0x7E).contains($0) } }
}
