import FoundationEssentials
import VPNCore
import VPNSystem

/// Text and JSON rendering. Help and results go to stdout, errors to stderr;
/// with --json, stdout carries exactly one JSON value.
public struct Output {
    let context: Context
    let json: Bool
    let color: Bool
    let stderrColor: Bool

    init(context: Context, json: Bool, color: Bool) {
        self.context = context
        self.json = json
        self.color = color
        self.stderrColor = color && context.stderrIsTerminal
    }

    /// Each stream is coloured on its own: `vpnctl status | less` keeps
    /// red errors on the terminal and plain text in the pipe.
    init(context: Context, json: Bool, color mode: ColorMode) {
        self.context = context
        self.json = json
        self.color = mode.colors(terminal: context.stdoutIsTerminal, environment: context.environment)
        self.stderrColor = mode.colors(terminal: context.stderrIsTerminal, environment: context.environment)
    }

    /// Text for people. Control characters and invisible formatting
    /// characters are escaped here, for every command: a name from a
    /// hand-edited file cannot reach the terminal as an escape sequence.
    public func line(_ text: String = "") {
        context.stdout.write(terminalText(text, color: color) + "\n")
    }

    /// A note for a person (stderr), so that stdout stays clean for scripts.
    public func note(_ text: String) {
        context.stderr.write(terminalText(text, color: stderrColor) + "\n")
    }

    /// One JSON value: indented on a terminal (for a person), compact in a
    /// pipe (for a program). The keys and values are the same either way.
    public func emit<T: Encodable>(_ value: T) {
        json(Output.encodeJSON(value))
    }

    /// One line of a JSON stream (`--watch --json`): compact, always.
    public func emitLine<T: Encodable>(_ value: T) {
        context.stdout.write(Output.encodeJSON(value) + "\n")
    }

    /// JSON text a command built itself, written as `emit` writes.
    public func json(_ compact: String) {
        context.stdout.write((context.stdoutIsTerminal ? Output.indented(compact) : compact) + "\n")
    }

    /// JSON a command wrote with a `JSONWriter`: in a pipe its bytes go out
    /// as they are, with no copy into a String.
    public func json(_ writer: inout JSONWriter) {
        guard !context.stdoutIsTerminal else { return json(writer.text) }
        var bytes = writer.take()
        bytes.append(0x0A)
        context.stdout.write(utf8: bytes)
    }

    /// Compact JSON with two-space indentation and a space after each
    /// colon; strings are copied as they are.
    static func indented(_ compact: String) -> String {
        var out = ""
        out.reserveCapacity(compact.utf8.count * 2)
        var depth = 0, inString = false, escaped = false
        let chars = Array(compact.unicodeScalars)
        func newline() { out += "\n" + String(repeating: "  ", count: depth) }
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if inString {
                out.unicodeScalars.append(c)
                if escaped { escaped = false } else if c == "\\" { escaped = true } else if c == "\"" { inString = false }
                i += 1
                continue
            }
            switch c {
            case "\"": inString = true; out.unicodeScalars.append(c)
            case "{", "[":
                let close: Unicode.Scalar = c == "{" ? "}" : "]"
                if i + 1 < chars.count, chars[i + 1] == close {
                    out.unicodeScalars.append(c); out.unicodeScalars.append(close)
                    i += 2
                    continue
                }
                out.unicodeScalars.append(c)
                depth += 1
                newline()
            case "}", "]":
                depth -= 1
                newline()
                out.unicodeScalars.append(c)
            case ",": out += ","; newline()
            case ":": out += ": "
            case " ", "\n", "\t", "\r": break
            default: out.unicodeScalars.append(c)
            }
            i += 1
        }
        return out
    }

    /// Escapes what must not reach a terminal raw, then turns the colours
    /// that `paint` marked into escape sequences.
    func terminalText(_ text: String, color: Bool) -> String {
        let escaped = text.escapingControls(keepLineBreaks: true)
        guard !escaped.allBytes(below: 0x80), escaped.unicodeScalars.contains(Output.markStart) else { return escaped }
        let scalars = Array(escaped.unicodeScalars), nonce = Array(Output.nonce.unicodeScalars)
        var out = String.UnicodeScalarView()
        var i = 0
        while i < scalars.count {
            let codeStart = i + 1 + nonce.count
            if scalars[i] == Output.markStart, codeStart <= scalars.count, scalars[(i + 1)..<codeStart].elementsEqual(nonce),
               let end = scalars[codeStart...].firstIndex(of: Output.markEnd),
               scalars[codeStart..<end].allSatisfy({ ("0"..."9").contains($0) || $0 == ";" }) {
                if color {
                    out.append(contentsOf: "\u{1B}[".unicodeScalars)
                    out.append(contentsOf: scalars[codeStart..<end])
                    out.append("m")
                }
                i = end + 1
                continue
            }
            out.append(scalars[i])
            i += 1
        }
        return String(out)
    }

    /// Colour marks carry a per-process random nonce, so a stored string
    /// cannot forge one.
    static let markStart: Unicode.Scalar = "\u{E000}"
    static let markEnd: Unicode.Scalar = "\u{E001}"
    static let nonce = String(UInt64.random(in: .min ... .max), radix: 36) + ":"

    static func encodeJSON<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        do {
            return JSONValue.escapingInvisibles(String(decoding: try encoder.encode(value), as: UTF8.self))
        } catch {
            return "{\"schemaVersion\":1,\"error\":{\"code\":1,\"name\":\"failure\",\"message\":\"cannot encode output\",\"problems\":[]}}"
        }
    }

    /// An error on stderr, one write: see `errorLines`.
    public func error(_ e: VPNError) {
        let prefix = stderrColor ? "\u{1B}[31mvpnctl:\u{1B}[0m" : "vpnctl:"
        let hint = Hints.text(for: e)
        let text = Output.errorLines(e, hint: hint).joined(separator: "\n") + "\n"
        context.stderr.write(prefix + " " + text.escapingControls(keepLineBreaks: true))
        if json {
            emit(ErrorEnvelope(error: .init(code: e.code.rawValue, name: e.code.name, message: e.message,
                                            hint: hint, problems: e.problems)))
        }
    }

    /// The lines of an error, the first to follow "vpnctl: ": the message's
    /// first line (what scripts match), then "  - " before each further line
    /// of the message (text a program printed, such as nft's) and of each
    /// problem, then "hint: " before each line of the hint, usage errors'
    /// "See 'vpnctl help ...'." too. Every line after the first starts with
    /// one of the two; empty lines are left out.
    static func errorLines(_ e: VPNError, hint: String?) -> [String] {
        func lines(_ text: String) -> [String] {
            text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
                .filter { !$0.allSatisfy { $0 == " " || $0 == "\t" } }
        }
        let message = lines(e.message)
        var out = [message.first ?? ""]
        out += (message.dropFirst() + e.problems.flatMap(lines)).map { "  - " + $0 }
        out += hint.map(lines)?.map { L("hint: \($0)") } ?? []
        return out
    }

    /// Colour for `line`, which writes the escape sequences.
    public func paint(_ text: String, _ code: String) -> String {
        guard color else { return text }
        func mark(_ c: String) -> String { "\(Output.markStart)\(Output.nonce)\(c)\(Output.markEnd)" }
        return mark(code) + text + mark("0")
    }

    /// Columns padded to the widest cell; the last column is not padded.
    /// All rows go out in one write.
    public func table(_ header: [String], _ rows: [[String]]) {
        let all = ([header] + rows).map { $0.map { Cell($0.escapingControls(keepLineBreaks: false)) } }
        let widths = Self.columnWidths(all, count: header.count) { $0.width }
        var s: [UInt8] = []
        for (n, r) in all.enumerated() {
            if n > 0 { s.append(0x0A) }
            Self.append(r, widths, to: &s) { ($0.text, $0.width) }
        }
        line(String(decoding: s, as: UTF8.self))
    }

    /// Each column's width: its widest cell.
    static func columnWidths<C>(_ rows: [[C]], count: Int, _ width: (C) -> Int) -> [Int] {
        var w = [Int](repeating: 0, count: count)
        for r in rows { for (i, c) in r.enumerated() where i < count { w[i] = max(w[i], width(c)) } }
        return w
    }

    /// One line of a table: the cells padded to their columns, two spaces
    /// apart, the last one unpadded. `cell` gives the text and its visible width.
    static func append<C>(_ row: [C], _ widths: [Int], to s: inout [UInt8], _ cell: (C) -> (String, Int)) {
        for (i, c) in row.enumerated() {
            let (text, width) = cell(c)
            s.append(contentsOf: text.utf8)
            if i < row.count - 1 { s.append(contentsOf: repeatElement(UInt8(ascii: " "), count: widths[i] - width + 2)) }
        }
    }

    /// A table for a person at a terminal: like `table`, with coloured
    /// cells, and no line wider than `width`: the columns in `shrinking`
    /// are shortened with "…", in that order (the full text is in `show` and
    /// `--json`), and as a last resort each line is cut.
    public func table(_ header: [String], styled rows: [[StyledCell]], width: Int?, shrinking: [Int]) {
        var all = ([header.map { StyledCell($0) }] + rows).map { $0.map { StyledCell($0.text.escapingControls(keepLineBreaks: false), $0.colour) } }
        guard let columnCount = all.first?.count, columnCount > 0 else { return }
        func widths() -> [Int] { Self.columnWidths(all, count: columnCount) { $0.text.terminalWidth } }
        if let width {
            for column in shrinking where column < columnCount {
                let w = widths()
                let total = w.reduce(0, +) + 2 * (columnCount - 1)
                guard total > width else { break }
                let room = max(1, w[column] - (total - width))
                for r in all.indices where all[r][column].text.count > room {
                    all[r][column].text = String(all[r][column].text.prefix(room - 1)) + "…"
                }
            }
        }
        let w = widths()
        // Narrower than the fixed columns: each line is cut, uncoloured (a
        // colour cut in half would bleed into the next line).
        let cut = width.flatMap { w.reduce(0, +) + 2 * (columnCount - 1) > $0 ? $0 : nil }
        var s = ""
        for (n, r) in all.enumerated() {
            if n > 0 { s += "\n" }
            var bytes: [UInt8] = []
            Self.append(r, w, to: &bytes) { c in (cut == nil ? c.colour.map { paint(c.text, $0) } ?? c.text : c.text, c.text.terminalWidth) }
            let text = String(decoding: bytes, as: UTF8.self)
            s += cut.map { String(text.prefix($0)) } ?? text
        }
        line(s)
    }

    /// An escaped cell and its width in characters (bytes, for printable ASCII).
    struct Cell {
        let text: String
        let width: Int
        init(_ text: String) {
            self.text = text
            width = text.terminalWidth
        }
    }
}

/// One cell of a table for people: its text and, on a colour terminal, its
/// colour (an SGR code such as "32").
public struct StyledCell {
    public var text: String
    public var colour: String?
    public init(_ text: String, _ colour: String? = nil) {
        self.text = text
        self.colour = colour
    }
}

/// `--color=auto|always|never` (`--no-color` is `never`).
public enum ColorMode: String, CaseIterable, Sendable {
    case auto, always, never

    /// The mode a command line asks for. `--no-color` with `--color=always`
    /// (or `auto`) is a contradiction, not a guess.
    static func from(_ args: ParsedArguments) throws -> ColorMode {
        var mode = ColorMode.auto
        if let word = args.value("color") {
            guard let m = ColorMode(rawValue: word) else {
                throw VPNError(.usage, L("Invalid value \(word.quotedForMessage) for '--color <when>'; expected auto, always or never"),
                               hint: L("See 'vpnctl help'."))
            }
            mode = m
        }
        if args.flag("no-color") {
            guard args.value("color") == nil || mode == .never else {
                throw VPNError(.usage, L("'--no-color' and '--color=\(mode.rawValue)' cannot be used together"), hint: L("See 'vpnctl help'."))
            }
            mode = .never
        }
        return mode
    }

    /// Whether a stream gets colour. `auto` colours a terminal only, and
    /// not when NO_COLOR is set to anything but the empty string
    /// (no-color.org) or TERM is dumb; `always` and `never` override both.
    public func colors(terminal: Bool, environment: [String: String]) -> Bool {
        switch self {
        case .always: return true
        case .never: return false
        case .auto: return terminal && (environment["NO_COLOR"] ?? "").isEmpty && environment["TERM"] != "dumb"
        }
    }
}

struct ErrorEnvelope: Encodable {
    struct Body: Encodable {
        let code: Int32
        let name: String
        let message: String
        let hint: String?
        let problems: [String]
    }
    var schemaVersion = 1
    let error: Body
}
