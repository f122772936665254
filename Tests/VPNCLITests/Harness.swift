import Foundation
@testable import VPNCLI
import VPNCore
import VPNService
import VPNSystem

/// Runs vpnctl in-process with captured output and private directories.
final class Harness {
    let root: String
    var configDir: String { root + "/etc" }
    var runDir: String { root + "/run" }
    var stdin: [UInt8] = []
    var editor: ((String) throws -> Void)? = nil
    var environment: [String: String] = [:]
    /// Whether stdin and stderr are a terminal; `answers` are typed at it, in turn.
    var terminal = false
    var answers: [String] = []
    /// A terminal on stdout this many columns wide (nil: stdout is a pipe).
    var stdoutColumns: Int? = nil
    private(set) var prompts: [String] = []
    /// Where the tunnel commands' use cases run (nil: in-process, as for root).
    var service: TunnelService? = nil

    init() {
        var template = Array("/tmp/vpnctl-cli-XXXXXX".utf8CString)
        root = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    struct Result {
        let code: Int32
        let stdout: String
        let stderr: String
    }

    @discardableResult
    func run(_ args: String...) -> Result { run(args) }

    func run(_ args: [String]) -> Result {
        let out = BufferSink(), err = BufferSink()
        var env = ["VPNCTL_CONFIG_DIR": configDir, "VPNCTL_RUN_DIR": runDir, "EDITOR": "test-editor"]
        env.merge(environment) { $1 }
        let input = stdin
        let editor = self.editor
        let context = Context(environment: env, stdout: out, stderr: err, readStdin: { limit in
                                  if input.count > limit { throw FileSystem.FileProblem(path: "standard input", kind: .tooLarge(limit: limit)) }
                                  return input
                              },
                              runEditor: { _, path, _ in
                                  try editor?(path)
                                  return 0
                              })
        var ctx = context
        ctx.stdinIsTerminal = terminal
        ctx.stderrIsTerminal = terminal
        ctx.stdoutIsTerminal = stdoutColumns != nil
        ctx.terminalWidth = stdoutColumns
        ctx.service = service
        ctx.readAnswer = { [self] prompt in
            prompts.append(prompt)
            return answers.isEmpty ? nil : answers.removeFirst()
        }
        let code = VPNCLI.run(["vpnctl"] + args, context: ctx)
        return Result(code: code, stdout: out.text, stderr: err.text)
    }

    func write(_ name: String, _ text: String) -> String {
        let path = root + "/" + name
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }

    func fixture(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("fixtures/\(name)").path
    }

    /// Every file under the root, as text, except the secret files themselves.
    func allFilesExceptSecrets() -> [(String, String)] {
        var result: [(String, String)] = []
        let e = FileManager.default.enumerator(atPath: root)
        while let rel = e?.nextObject() as? String {
            let path = root + "/" + rel
            if rel.contains("secrets/") { continue }
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDir), !isDir.boolValue,
               let d = FileManager.default.contents(atPath: path) {
                result.append((rel, String(decoding: d, as: UTF8.self)))
            }
        }
        return result
    }
}

func jsonObject(_ text: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
}
