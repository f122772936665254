import Foundation
import Testing
@testable import VPNCore

/// Issue 36 item 11: text made at run time (relative times, verify's
/// checks) is whole messages, translated by the shipped catalogs. The
/// catalogs are compiled from po/ here; the process's language is never
/// changed (in-process tests run side by side and expect English).
@Suite struct RuntimeTextTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    static func catalog(_ language: String) throws -> MessageCatalog {
        let po = try String(contentsOfFile: root + "/po/\(language).po", encoding: .utf8)
        return try #require(MessageCatalog(bytes: try LocalizationTests.compile(po)))
    }

    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static func ago(_ seconds: Double, _ catalog: MessageCatalog?) -> String {
        Timestamp.ago(now.addingTimeInterval(-seconds), now: now, in: catalog)
    }

    @Test func relativeTimesInEnglish() {
        let table: [(Double, String)] = [(0, "just now"), (0.9, "just now"), (1, "1 s ago"), (59, "59 s ago"), (60, "1 min ago"),
                                         (3599, "59 min ago"), (3600, "1 h ago"), (3659, "1 h ago"), (3660, "1 h 1 min ago"),
                                         (86399, "23 h 59 min ago"), (86400, "1 day ago"), (86400 * 2, "2 days ago")]
        for (seconds, text) in table { #expect(Self.ago(seconds, nil) == text, "\(seconds)") }
    }

    @Test func relativeTimesAreTranslated() throws {
        let expected: [String: [String]] = [
            "vi": ["vừa xong", "42 giây trước", "3 phút trước", "2 giờ trước", "2 giờ 5 phút trước", "1 ngày trước", "4 ngày trước"],
            "zh_Hans": ["刚刚", "42 秒前", "3 分钟前", "2 小时前", "2 小时 5 分钟前", "1 天前", "4 天前"],
            "ru": ["только что", "42 с назад", "3 мин назад", "2 ч назад", "2 ч 5 мин назад", "1 день назад", "4 дн. назад"],
        ]
        let seconds: [Double] = [0, 42, 180, 7200, 7500, 86400, 86400 * 4]
        for (language, texts) in expected {
            let catalog = try Self.catalog(language)
            #expect(seconds.map { Self.ago($0, catalog) } == texts, "\(language)")
        }
    }

    /// Each case of the route check is one sentence, never "through nowhere".
    @Test func routeDetailsAreWholeSentences() {
        #expect(VerifyUseCase.leaves("198.19.0.1", via: "utun0", tunnel: nil) == "198.19.0.1 leaves through utun0")
        #expect(VerifyUseCase.leaves("198.19.0.1", via: "eth0", tunnel: "utun0") == "198.19.0.1 leaves through eth0, not utun0")
        #expect(VerifyUseCase.leaves("198.19.0.1", via: nil, tunnel: "utun0") == "198.19.0.1 has no route")
        #expect(VerifyUseCase.leaves("10.0.0.53 (resolved)", via: "eth0", tunnel: "utun0", dns: true)
                == "the tunnel's DNS server 10.0.0.53 (resolved) leaves through eth0, not utun0")
        #expect(VerifyUseCase.leaves("10.0.0.53 (resolved)", via: nil, tunnel: "utun0", dns: true)
                == "the tunnel's DNS server 10.0.0.53 (resolved) has no route")
    }

    /// Every message the run-time code builds has a translation in each
    /// catalog (check-translations covers them all; these are the ones
    /// issue 36 found English inside translated frames).
    @Test func runTimeFragmentsHaveTranslations() throws {
        let messages = ["just now", "%1$s s ago", "%1$s h %2$s min ago", "%1$s days ago", "path proven", "configured only",
                        "%1$s leaves through %2$s, not %3$s", "TCP connect to %1$s in %2$s ms", "no default route",
                        "%1$s; search domains: %2$s; DNS servers: %3$s", "probe %1$s answered %2$s", "any interface (%1$s)"]
        for language in ["vi", "zh_Hans", "ru"] {
            let catalog = try Self.catalog(language)
            for m in messages {
                let t = catalog.translation(of: m)
                #expect(t != nil && t != m, "\(language): \(m)")
            }
        }
    }
}
