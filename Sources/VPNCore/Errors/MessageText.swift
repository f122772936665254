/// How values from files and command lines appear in messages and on terminals.
extension String {
    /// The word as a shell reads it back: bare when it is plain, otherwise
    /// in single quotes (for a command line printed in a hint).
    public var shellQuoted: String {
        let plain = !isEmpty && utf8.allSatisfy { b in
            (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || "-_./:@%+=,".utf8.contains(b)
        }
        return plain ? self : "'" + split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }

    /// Whether every UTF-8 byte is below `limit`: over the string's own
    /// storage when it has it (a table of a thousand rows is one string).
    public func allBytes(below limit: UInt8) -> Bool {
        utf8.withContiguousStorageIfAvailable { $0.allSatisfy { $0 < limit } } ?? utf8.allSatisfy { $0 < limit }
    }

    /// Columns the text takes on a terminal: two for each wide (East Asian)
    /// character, such as the Chinese in a translated table header; one for
    /// any other character.
    public var terminalWidth: Int {
        if allBytes(below: 0x80) { return utf8.count }
        var n = 0
        for c in self {
            let v = c.unicodeScalars.first!.value
            let wide = (0x1100...0x115F).contains(v) || (0x2E80...0x303E).contains(v) || (0x3041...0x33FF).contains(v)
                || (0x3400...0x4DBF).contains(v) || (0x4E00...0x9FFF).contains(v) || (0xA000...0xA4CF).contains(v)
                || (0xAC00...0xD7A3).contains(v) || (0xF900...0xFAFF).contains(v) || (0xFE30...0xFE4F).contains(v)
                || (0xFF00...0xFF60).contains(v) || (0xFFE0...0xFFE6).contains(v) || (0x20000...0x3FFFD).contains(v)
            n += wide ? 2 : 1
        }
        return n
    }

    /// The value in single quotes, cut to 100 characters and with control
    /// characters escaped, for error messages: a 1 MB value gives a short line.
    public var quotedForMessage: String { "'" + abbreviated(100).escapingControls(keepLineBreaks: false) + "'" }

    /// At most `limit` characters; a longer string ends with "…" and its length.
    public func abbreviated(_ limit: Int) -> String {
        var n = 0
        for i in indices {
            if n == limit { return String(self[..<i]) + "… (\(count) characters)" }
            n += 1
        }
        return self
    }

    /// Control characters (C0, DEL, C1), bidi controls, zero-width and other
    /// invisible formatting characters written as `\u{1B}`, so that a string
    /// from a file cannot move the cursor, retitle the terminal or reorder text.
    /// Line breaks and tabs are kept when `keepLineBreaks`.
    public func escapingControls(keepLineBreaks: Bool = true) -> String {
        func plain(_ b: UInt8) -> Bool { (b >= 0x20 && b < 0x7F) || (keepLineBreaks && (b == 0x0A || b == 0x09)) }
        if utf8.withContiguousStorageIfAvailable({ $0.allSatisfy(plain) }) ?? utf8.allSatisfy(plain) { return self }
        var out = ""
        out.reserveCapacity(utf8.count)
        for u in unicodeScalars {
            if keepLineBreaks && (u == "\n" || u == "\t") || !u.needsEscapeOnTerminal {
                out.unicodeScalars.append(u)
            } else {
                out += "\\u{" + String(u.value, radix: 16, uppercase: true) + "}"
            }
        }
        return out
    }
}

extension Unicode.Scalar {
    /// C0, DEL and C1 controls, invisible formatting characters (bidi
    /// controls such as U+202E, zero-width spaces and joiners, U+FEFF) and
    /// the line and paragraph separators.
    public var needsEscapeOnTerminal: Bool {
        if value < 0x20 || (0x7F...0x9F).contains(value) { return true }
        if value < 0xA0 { return false }
        switch properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }
}

extension Unicode.Scalar {
    /// "U+202E", as the Unicode standard writes code points.
    public var codePointText: String {
        let hex = String(value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}

/// Errors that reach a message through `\(error)` describe themselves rather
/// than print a Swift dump of their fields.
extension ConnectionError: CustomStringConvertible {
    public var description: String { "\(name): \(message)" }
}

extension ProviderFailure: CustomStringConvertible {
    public var description: String { error.description }
}
