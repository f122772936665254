import Foundation
import Testing

/// Tests/lab/addresses.txt is the lab's address plan: every range a lab
/// script uses is in it, once, and used only by its owner and the files the
/// table names. Two labs on one range break each other only when both run.
@Suite struct LabAddressPlanTests {
    struct Row { let range: String, owner: String, users: Set<String>, reserved: Bool }

    func plan() throws -> [Row] {
        let text = try String(contentsOf: DocsTests.repo.appendingPathComponent("Tests/lab/addresses.txt"), encoding: .utf8)
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.allSatisfy(\.isWhitespace) }.map { line in
            let words = line.split(separator: " ").map(String.init)
            var users: Set<String> = []
            for w in words.dropFirst(2) { if w.hasSuffix(".sh") || w.hasSuffix(".py") || w == "*" { users.insert(w) } else if w != "-" { break } }
            return Row(range: words[0], owner: words[1], users: users, reserved: line.contains("reserved:"))
        }
    }

    /// The /24s of 198.18.0.0/15 each script names, keyed as the table names
    /// files: a lab file by its name, others by their folder and name.
    func usage() throws -> [String: Set<String>] {
        let fm = FileManager.default
        var out: [String: Set<String>] = [:]
        for (dir, key) in [("Tests/lab", ""), ("Tests/security", "security/"), ("Tests/cli", "cli/"), ("Benchmarks", "Benchmarks/")] {
            let path = DocsTests.repo.appendingPathComponent(dir).path
            for file in try fm.contentsOfDirectory(atPath: path) where file.hasSuffix(".sh") || file.hasSuffix(".py") {
                let text = try String(contentsOfFile: "\(path)/\(file)", encoding: .utf8)
                for piece in text.components(separatedBy: "198.1").dropFirst() {
                    let fields = piece.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
                    guard fields.count >= 2, let second = fields[0].first, second == "8" || second == "9", fields[0].count == 1,
                          let third = Int(fields[1]), (0...255).contains(third) else { continue }
                    out[key + file, default: []].insert("198.1\(second).\(third).0/24")
                }
            }
        }
        return out
    }

    @Test func everyRangeIsPlannedOnceAndUsedByItsOwners() throws {
        let rows = try plan()
        #expect(rows.count > 10)
        let ranges = rows.map(\.range)
        #expect(Set(ranges).count == ranges.count, "a range is in the table twice: \(ranges)")
        let byRange = Dictionary(rows.map { ($0.range, $0) }) { a, _ in a }
        let used = try usage()
        #expect(used["lab.sh"]?.contains("198.18.0.0/24") == true, "the scan finds the underlay in lab.sh")
        for (file, fileRanges) in used {
            for range in fileRanges.sorted() {
                guard let row = byRange[range] else {
                    Issue.record("\(file) uses \(range), which Tests/lab/addresses.txt does not plan: take a free range there")
                    continue
                }
                #expect(row.owner == file || row.users.contains(file) || row.users.contains("*"),
                        "\(file) uses \(range), owned by \(row.owner): name \(file) in its row, or take a free range")
            }
        }
        for row in rows where !row.reserved {
            #expect(used[row.owner]?.contains(row.range) == true, "\(row.range)'s owner \(row.owner) does not use it: update the table")
        }
    }
}
