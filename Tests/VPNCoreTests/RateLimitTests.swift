import Testing
@testable import VPNCore

/// Issue 29, item 5: one user's flood must not grow the agent's log
/// without bound, nor take every other user's requests.
@Suite struct RateLimitTests {
    final class Clock { var ms: Int64 = 1_000_000 }

    @Test func floodFairShare_aBucketGivesItsBurstThenItsRate() {
        var b = TokenBucket(capacity: 3, perSecond: 2, nowMs: 0)
        func take(_ ms: Int64) -> Bool { b.take(nowMs: ms) }
        func full(_ ms: Int64) -> Bool { b.isFull(nowMs: ms) }
        #expect((0..<5).map { _ in take(0) } == [true, true, true, false, false])
        #expect(!take(400))
        #expect(take(500))
        #expect(!take(500))
        #expect(!full(1000))
        #expect(full(10_000))
        // A clock that goes back gives nothing.
        var c = TokenBucket(capacity: 1, perSecond: 1, nowMs: 5000)
        let first = c.take(nowMs: 5000), back = c.take(nowMs: 1000)
        #expect(first && !back)
    }

    @Test func floodFairShare_repeatedLogLinesAreCountedNotWritten() {
        let clock = Clock()
        var lines: [String] = []
        let log = LogRateLimiter(burst: 3, perSecond: 1, summaryMs: 10_000, nowMs: { clock.ms }, write: { lines.append($0) })
        // 100,000 lines of one kind in 15 s: the burst, one a second, and a summary each 10 s.
        for i in 0..<100_000 {
            clock.ms = 1_000_000 + Int64(i) * 15_000 / 100_000
            log.log("uid=1000 busy", "refused uid=1000 pid=\(i): busy")
        }
        #expect(lines.count < 3 + 15 + 2 + 1, "\(lines.count) lines")
        #expect(lines.prefix(3) == ["refused uid=1000 pid=0: busy", "refused uid=1000 pid=1: busy", "refused uid=1000 pid=2: busy"])
        let summary = lines.first { $0.hasPrefix("rate-limited: ") }
        #expect(summary?.contains("like this in 10 s not written (at most 3 at once, then 1 a second); the last: refused uid=1000 pid=") == true)
        // Another kind is not held back by the first, nor are lines with no kind.
        #expect(log.log("uid=1001 status", "uid=1001(bob) pid=7 status: exit 0"))
        #expect(log.log(nil, "stopping on signal 15"))
        // What is still held back is said at the end, and the kinds are forgotten once quiet.
        #expect(log.isHolding)
        log.flush(all: true)
        #expect(!log.isHolding)
        #expect(lines.last?.hasPrefix("rate-limited: ") == true)
        let held = lines.filter { $0.hasPrefix("rate-limited: ") }
            .compactMap { Int($0.dropFirst("rate-limited: ".count).prefix { $0.isNumber }) }.reduce(0, +)
        let written = lines.filter { $0.hasPrefix("refused uid=1000") }.count
        #expect(held + written == 100_000, "every line is written or counted")
        clock.ms += 60_000
        log.flush()
        #expect(log.kinds.isEmpty)
    }
}
