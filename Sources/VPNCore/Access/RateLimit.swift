import VPNSystem
/// A token bucket: up to `capacity` at once, refilled at `perSecond`.
/// Times are monotonic milliseconds, passed in (a test's clock).
public struct TokenBucket: Equatable, Sendable {
    public let capacity: Double
    public let perSecond: Double
    public private(set) var tokens: Double
    var lastMs: Int64

    public init(capacity: Int, perSecond: Double, nowMs: Int64) {
        self.capacity = Double(max(1, capacity))
        self.perSecond = max(0, perSecond)
        tokens = self.capacity
        lastMs = nowMs
    }

    mutating func refill(_ nowMs: Int64) {
        guard nowMs > lastMs else { return }
        tokens = min(capacity, tokens + Double(nowMs - lastMs) * perSecond / 1000)
        lastMs = nowMs
    }

    /// Takes one token if there is one.
    public mutating func take(nowMs: Int64) -> Bool {
        refill(nowMs)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// Whether it is full again (nothing to remember about its owner).
    public mutating func isFull(nowMs: Int64) -> Bool {
        refill(nowMs)
        return tokens >= capacity
    }
}

/// Log lines limited per kind, so that no client can grow a log without
/// bound: each kind (a key such as "uid=1000 status") may write `burst`
/// lines at once and then `perSecond`; the lines past that are counted and
/// summarised, with the last of them, once `summaryMs` has passed since the
/// first one held back (at `flush`). Lines with no key are always written.
/// The provider log (`BoundedLog`) collapses identical lines; an agent's
/// lines differ (a pid, a name), hence kinds.
public final class LogRateLimiter {
    public static let defaultBurst = 20
    public static let defaultPerSecond = 1.0
    public static let defaultSummaryMs: Int64 = 10_000

    struct Kind {
        var bucket: TokenBucket
        var held = 0
        var heldSinceMs: Int64 = 0
        var last = ""
    }

    let write: (String) -> Void
    let nowMs: () -> Int64
    let burst: Int
    let perSecond: Double
    let summaryMs: Int64
    var kinds: [String: Kind] = [:]

    public init(burst: Int = LogRateLimiter.defaultBurst, perSecond: Double = LogRateLimiter.defaultPerSecond,
                summaryMs: Int64 = LogRateLimiter.defaultSummaryMs, nowMs: @escaping () -> Int64,
                write: @escaping (String) -> Void) {
        self.burst = burst
        self.perSecond = perSecond
        self.summaryMs = summaryMs
        self.nowMs = nowMs
        self.write = write
    }

    /// Whether some lines are held back (a `flush` is due later).
    public var isHolding: Bool { kinds.values.contains { $0.held > 0 } }

    /// Writes `line`, or counts it when its kind is over its rate. Returns
    /// false when it was held back.
    @discardableResult
    public func log(_ kind: String?, _ line: String) -> Bool {
        guard let kind else { write(line); return true }
        let now = nowMs()
        var k = kinds[kind] ?? Kind(bucket: TokenBucket(capacity: burst, perSecond: perSecond, nowMs: now))
        defer { kinds[kind] = k }
        if k.held > 0 && now - k.heldSinceMs >= summaryMs { summarise(&k, now) }
        if k.bucket.take(nowMs: now) {
            write(line)
            return true
        }
        if k.held == 0 { k.heldSinceMs = now }
        k.held += 1
        k.last = line
        return false
    }

    /// Writes the summaries that are due (all of them with `all`), and
    /// forgets the kinds that have nothing held and a full bucket again.
    public func flush(all: Bool = false) {
        let now = nowMs()
        for key in kinds.keys.sorted() {
            guard var k = kinds[key] else { continue }
            if k.held > 0 && (all || now - k.heldSinceMs >= summaryMs) { summarise(&k, now) }
            if k.held == 0 && k.bucket.isFull(nowMs: now) { kinds[key] = nil } else { kinds[key] = k }
        }
    }

    func summarise(_ k: inout Kind, _ now: Int64) {
        let seconds = max(1, (now - k.heldSinceMs + 999) / 1000)
        let rate = perSecond == perSecond.rounded() ? String(Int(perSecond)) : String(perSecond)
        // English: the agent's log is English
        // (with the priority of the lines it stands for, when they carry one)
        let last = Journal.untag(k.last)
        let line = "rate-limited: \(k.held) more line\(k.held == 1 ? "" : "s") like this in \(seconds) s not written (at most \(burst) at once, then \(rate) a second); the last: \(last.text)"
        write(last.text == k.last ? line : Journal.tagged(last.priority, line))
        k.held = 0
    }
}
