#if canImport(Glibc)
import Glibc
#endif
import VPNCore
import VPNSystem

/// How `start` (and `toggle`) answer what a tunnel asks: a password from
/// `--password-file`, anything else typed at the terminal (nothing shown
/// for secrets), a sign-in URL printed (and with `--open` opened as the
/// calling user). No terminal: nil, and the start fails naming what was needed.
final class CredentialPrompt {
    let inv: Invocation
    let passwordFile: String?
    let open: Bool
    let spinner: Spinner
    /// The password typed or read (for `--save-password`), memory only.
    private(set) var password: String?
    /// The problem with --password-file, thrown after the start (the
    /// start's own error names what was needed).
    private(set) var fileProblem: VPNError?
    private var fileUsed = false

    init(_ inv: Invocation, spinner: Spinner) {
        self.inv = inv
        passwordFile = inv.args.value("password-file")
        open = inv.args.flag("open")
        self.spinner = spinner
    }

    func answer(_ r: CredentialRequest) -> CredentialAnswers? {
        spinner.clear()
        if let url = r.url { return show(url, r) }
        var answers = CredentialAnswers()
        let terminal = inv.context.stdinIsTerminal
        var announced = false
        for field in r.fields {
            // The file is read once: a password the server refused is not
            // sent again (auth-retry interact asks on the terminal, if any).
            if field.kind == .password, let path = passwordFile, !fileUsed {
                fileUsed = true
                guard let pw = readPasswordFile(path) else { return nil }
                answers[.password] = pw
                password = pw
                continue
            }
            if field.kind == .username {
                // The stored name is kept unless the person types another;
                // with the password from a file nothing is asked.
                if (passwordFile != nil && !fileUsed) || !terminal {
                    if let u = field.offered { answers[.username] = u; continue }
                }
            }
            guard terminal else { return nil }
            if !announced {
                inv.context.stderr.write(L("'\(r.profile)' asks for \(r.asked)") + "\n")
                announced = true
            }
            let offered = field.offered.map { " [\($0)]" } ?? ""
            let prompt = "\(field.prompt.escapingControls(keepLineBreaks: false))\(offered): "
            let typed: String?
            if field.echo {
                typed = inv.context.readAnswer(prompt)
            } else {
                var bytes = inv.context.readSecretFromTerminal(prompt)
                typed = String(decoding: bytes, as: UTF8.self)
                for i in bytes.indices { bytes[i] = 0 }
            }
            guard var value = typed else { return nil }
            if value.isEmpty, let o = field.offered { value = o }
            answers[field.kind] = value
            if field.kind == .password { password = value }
        }
        return answers
    }

    /// A sign-in in a web browser: the URL on stderr (a script can read it
    /// there too), opened with --open, and the wait goes on.
    func show(_ url: String, _ r: CredentialRequest) -> CredentialAnswers? {
        inv.context.stderr.write(L("sign in to '\(r.profile)' in a web browser: \(url.escapingControls(keepLineBreaks: false))") + "\n")
        inv.context.stderr.write(L("waiting up to \(r.timeoutSeconds) s for the sign-in") + "\n")
        if open { openInBrowser(url) }
        return CredentialAnswers()
    }

    /// xdg-open as the person at the keyboard, never as root: under sudo as
    /// SUDO_UID (runuser), as root alone not at all.
    func openInBrowser(_ url: String) {
        let env = inv.context.environment
        let path = env["PATH"]
        var argv: [String]
        if geteuid() != 0 {
            argv = ["xdg-open", url]
        } else if let user = env["SUDO_USER"], !user.isEmpty, user != "root" {
            argv = ["runuser", "-u", user, "--", "xdg-open", url]
        } else {
            inv.output.note(L("--open: not opening a browser as root; open the URL above as yourself"))
            return
        }
        guard let program = Processes.which(argv[0], path: path) else {
            inv.output.note(L("--open: \(argv[0]) is not installed; open the URL above yourself"))
            return
        }
        var childEnv: [String: String] = ["PATH": path ?? "/usr/bin:/bin"]
        // The session's variables (runuser -u sets HOME, USER and SHELL to the user's own).
        for key in ["DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "BROWSER"] {
            if let v = env[key] { childEnv[key] = v }
        }
        if geteuid() != 0, let home = env["HOME"] { childEnv["HOME"] = home }
        if (try? Processes.spawn(program, argv, environment: childEnv, newSession: true)) == nil {
            inv.output.note(L("--open: \(argv[0]) could not be started; open the URL above yourself"))
        }
    }

    /// The first line of --password-file, which must be the caller's own,
    /// a regular file (no symlink) that nobody else can read.
    func readPasswordFile(_ path: String) -> String? {
        do {
            guard let info = try FileSystem.info(path) else {
                throw VPNError(.configurationInvalid, L("--password-file \(path): no such file"))
            }
            if !info.isRegular {
                throw VPNError(.configurationInvalid, L("--password-file \(path): not a regular file (a symlink is refused)"))
            }
            if info.owner != geteuid() {
                throw VPNError(.permissionDenied, L("--password-file \(path): owned by uid \(info.owner), not by you"),
                               hint: L("a password file is your own: chown it, or copy it"))
            }
            if info.mode & 0o077 != 0 {
                throw VPNError(.permissionDenied, L("--password-file \(path): readable by others (mode \(String(info.mode & 0o777, radix: 8)))"),
                               hint: "chmod 600 \(path)") // English: a command line
            }
            guard var bytes = try FileSystem.readFileIfPresent(path, limit: 4096) else {
                throw VPNError(.configurationInvalid, L("--password-file \(path): no such file"))
            }
            defer { for i in bytes.indices { bytes[i] = 0 } }
            let line = bytes.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false).first ?? []
            let text = String(decoding: line.last == 0x0D ? line.dropLast() : line, as: UTF8.self)
            if text.isEmpty { throw VPNError(.configurationInvalid, L("--password-file \(path): the first line is empty")) }
            return text
        } catch let e as VPNError {
            fileProblem = e
        } catch {
            fileProblem = VPNError(.configurationInvalid, L("--password-file \(path): \(error)"))
        }
        return nil
    }
}
