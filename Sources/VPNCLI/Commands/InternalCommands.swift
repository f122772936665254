#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// Commands vpnctl runs itself; not listed in help.
enum InternalCommands {
    /// Parsed by the same spec parser as every command, so a bad word is a
    /// usage error that names it, not a default taken in silence.
    static let superviseSpec = CommandSpec(
        name: "__supervise", abstract: "Run one profile's tunnel in the foreground; vpnctl start runs it.",
        options: [OptionSpec("timeout", value: "seconds", help: "How long the first handshake may take."),
                  OptionSpec("notify-fd", value: "fd", help: "A descriptor closed once the tunnel is up or has failed."),
                  OptionSpec("credentials-fd", value: "fd", help: "The start's credential line: its answers, and the questions asked on the way."),
                  OptionSpec("on-demand-rule", value: "n", help: "Started by on-demand: the rule that fired."),
                  OptionSpec("on-demand-reason", value: "text", help: "Started by on-demand: why the rule matched."),
                  OptionSpec("persist", help: "A server that does not answer does not end the tunnel (start --persist).")],
        positionals: [PositionalSpec("id", help: "The profile's UUID.")],
        run: { ExitCode(rawValue: try supervise($0)) ?? .failure })

    /// `vpnctl __supervise --config-dir D --run-dir R --timeout S [--notify-fd N] <id>`
    static func supervise(_ argv: [String], _ context: Context) -> Int32 {
        let output = Output(context: context, json: false, color: false)
        let parser = ArgumentParser(root: CommandSpec(name: "vpnctl", abstract: "", subcommands: [superviseSpec]))
        do {
            guard case .run(let spec, let args) = try parser.parse(["__supervise"] + argv) else {
                throw VPNError.usage("__supervise has no help or version; vpnctl start runs it") // English: __supervise speaks English only (its log)
            }
            return VPNCLI.execute(spec, args, context, early: output)
        } catch {
            return VPNCLI.report(error, to: output)
        }
    }

    static func supervise(_ inv: Invocation) throws -> Int32 {
        let args = inv.args
        guard let id = UUID(uuidString: args.positionals[0]) else {
            throw VPNError.usage("__supervise: '\(args.positionals[0].abbreviated(80))' is not a profile UUID") // English: as above
        }
        var notifyFD: Int32 = -1
        if let text = args.value("notify-fd") {
            guard let fd = Int32(text), fd >= 0 else { throw VPNError.usage("__supervise: '\(text.abbreviated(80))' is not a descriptor") } // English: as above
            notifyFD = fd
        }
        let startedBy = args.value("on-demand-rule").flatMap(Int.init).map {
            StartOrigin(rule: $0, reason: args.value("on-demand-reason") ?? "")
        }
        var options = Supervisor.Options(configDirectory: inv.options.configDirectory, runDirectory: inv.options.runDirectory,
                                         startTimeout: Int64(try inv.timeoutSeconds(default: 20)),
                                         path: inv.context.environment["PATH"], notifyFD: notifyFD, startedBy: startedBy)
        options.persistent = args.flag("persist")
        if let text = args.value("credentials-fd") {
            guard let fd = Int32(text), fd >= 0 else { throw VPNError.usage("__supervise: '\(text.abbreviated(80))' is not a descriptor") } // English: as above
            options.credentialsFD = fd
        }
        return Supervisor(id: id, options: options).run()
    }

    /// `vpnctl __probe`: the agent's probe worker, so that a slow probe
    /// never holds up the agent's loop. It reads the URLs, one a line, from
    /// fd 4 (to its end), or takes them as arguments; one line per URL, in
    /// order, on fd 3.
    static func probe(_ arguments: [String]) -> Int32 {
        var urls = arguments
        if urls.isEmpty {
            var input: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while input.count < 1 << 20 {
                let n = chunk.withUnsafeMutableBytes { read(4, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                input += chunk[0..<n]
            }
            close(4)
            urls = String(decoding: input, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        var out = ""
        for url in urls { out += HTTPProbe.probe(url).line + "\n" }
        let bytes = Array(out.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { write(3, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return 1 }
            done += n
        }
        return 0
    }
}
