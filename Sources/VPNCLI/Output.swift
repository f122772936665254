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

    public func line(_ text: String = "") {
        context.stdout.write(text + "\n")
    }

    /// A note for a person (stderr), so that stdout stays clean for scripts.
    public func note(_ text: String) {
        context.stderr.write(text + "\n")
    }

    public func emit<T: Encodable>(_ value: T) {
        context.stdout.write(Output.encodeJSON(value) + "\n")
    }

    static func encodeJSON<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        do {
            return String(decoding: try encoder.encode(value), as: UTF8.self)
        } catch {
            return "{\"schemaVersion\":1,\"error\":{\"code\":1,\"name\":\"failure\",\"message\":\"cannot encode output\",\"problems\":[]}}"
        }
    }

    public func error(_ e: VPNError) {
        let prefix = stderrColor ? "\u{1B}[31mvpnctl:\u{1B}[0m" : "vpnctl:"
        var text = "\(prefix) \(e.message)\n"
        for p in e.problems { text += "  - \(p)\n" }
        if let hint = e.hint {
            text += e.code == .usage ? "\(hint)\n" : "hint: \(hint)\n"
        }
        context.stderr.write(text)
        if json {
            emit(ErrorEnvelope(error: .init(code: e.code.rawValue, name: e.code.name, message: e.message,
                                            hint: e.hint, problems: e.problems)))
        }
    }

    public func paint(_ text: String, _ code: String) -> String {
        color ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }

    /// Columns padded to the widest cell; the last column is not padded.
    public func table(_ header: [String], _ rows: [[String]]) {
        let all = [header] + rows
        var widths = [Int](repeating: 0, count: header.count)
        for r in all { for (i, c) in r.enumerated() where i < widths.count { widths[i] = max(widths[i], c.count) } }
        for r in all {
            var s = ""
            for (i, c) in r.enumerated() {
                s += i == r.count - 1 ? c : c + String(repeating: " ", count: widths[i] - c.count + 2)
            }
            line(s)
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
