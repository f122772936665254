import Dispatch
import VPNSystem

/// A progress indicator on stderr for the waits of start, stop and verify: only on
/// a terminal that can take it (not TERM=dumb), never with --json or in a
/// pipe, and only once the wait has lasted 300 ms (a quick start shows
/// nothing). It clears its line before anything else is printed.
final class Spinner {
    let enabled: Bool
    let sink: TextSink
    let shownAfterMs: Int64
    var frame = 0
    var shown = false
    static let frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
    static let delayMs: Int64 = 300

    init(enabled: Bool, sink: TextSink, now: Int64 = monotonicMilliseconds()) {
        self.enabled = enabled
        self.sink = sink
        self.shownAfterMs = now + Spinner.delayMs
    }

    /// The spinner a command's wait gets.
    convenience init(for inv: Invocation, when waiting: Bool) {
        let term = inv.context.environment["TERM"]
        self.init(enabled: waiting && inv.context.stderrIsTerminal && !inv.options.json && term != "dumb",
                  sink: inv.context.stderr)
    }

    func tick(_ text: String, now: Int64 = monotonicMilliseconds()) {
        guard enabled, now >= shownAfterMs else { return }
        sink.write("\r\u{1B}[K\(Spinner.frames[frame % Spinner.frames.count]) \(text)…")
        frame += 1
        shown = true
    }

    /// Runs `work` with the spinner turning on a timer of its own, for a
    /// wait the command cannot tick itself (verify's blocking probe). The
    /// timer is stopped, and the line cleared, before `work`'s result is used.
    func during<T>(_ text: String, _ work: () throws -> T) rethrows -> T {
        guard enabled else { return try work() }
        let queue = DispatchQueue(label: "vpnctl.spinner")
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .milliseconds(Int(Spinner.delayMs)), repeating: .milliseconds(100))
        nonisolated(unsafe) let spinner = self
        timer.setEventHandler { spinner.tick(text, now: spinner.shownAfterMs) }
        timer.resume()
        defer { queue.sync { timer.cancel(); spinner.clear() } }
        return try work()
    }

    func clear() {
        guard enabled, shown else { return }
        sink.write("\r\u{1B}[K")
        shown = false
    }
}
