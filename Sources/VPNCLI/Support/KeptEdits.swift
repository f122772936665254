#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// The edits `vpnctl edit` keeps when it cannot save them: FILE in a private
/// directory `$TMPDIR/vpnctl-edit-XXXXXX`, and beside it FILE.base, the
/// profile as it was when the editor opened (the base of `--rebase`).
/// Directories older than a day are removed on the next edit.
enum KeptEdits {
    static let directoryPrefix = "vpnctl-edit-"
    static let maximumAge: TimeInterval = 24 * 3600

    /// Where the revision a kept edit was made from is kept.
    static func basePath(of file: String) -> String { file + ".base" }

    /// Removes the kept-edit directories in `base` that are ours (owned by
    /// this user, private), hold only regular files, and in which nothing
    /// changed for `maximumAge`; `except` (the directory of a file being
    /// applied) stays. Returns the directories removed, and what could
    /// not be removed with the reason.
    static func removeOld(in base: String, now: Date = Date(), except: String? = nil) -> (removed: [String], failed: [String]) {
        var removed: [String] = [], failed: [String] = []
        let names: [String]
        do { names = try FileSystem.listAll(base) } catch { return ([], ["\(error)"]) }
        let keep = except.map(FileSystem.normalized)
        for name in names where name.hasPrefix(directoryPrefix) && name.count == directoryPrefix.count + 6 {
            let dir = "\(base)/\(name)"
            if let keep, FileSystem.normalized(dir) == keep { continue }
            do {
                guard let newest = try newestChange(ofPrivateDirectory: dir), now.timeIntervalSince(newest) > maximumAge else { continue }
                for entry in try FileSystem.listAll(dir) { try FileSystem.remove("\(dir)/\(entry)") }
                try FileSystem.removeDirectory(dir)
                removed.append(dir)
            } catch {
                failed.append("\(error)")
            }
        }
        return (removed, failed)
    }

    /// The newest modification time of the directory and its entries, when
    /// it is a kept-edit directory vpnctl made for this user: a real
    /// directory owned by us, closed to others, with regular files only.
    static func newestChange(ofPrivateDirectory dir: String) throws -> Date? {
        guard let st = lstatus(dir), st.st_mode & S_IFMT == S_IFDIR, st.st_uid == geteuid(), st.st_mode & 0o077 == 0 else { return nil }
        var newest = modified(st)
        for entry in try FileSystem.listAll(dir) {
            guard let e = lstatus("\(dir)/\(entry)"), e.st_mode & S_IFMT == S_IFREG else { return nil }
            newest = max(newest, modified(e))
        }
        return newest
    }

    static func lstatus(_ path: String) -> stat? {
        var st = stat()
        return lstat(path, &st) == 0 ? st : nil
    }

    static func modified(_ st: stat) -> Date {
        Date(timeIntervalSince1970: TimeInterval(st.st_mtim.tv_sec) + TimeInterval(st.st_mtim.tv_nsec) / 1e9)
    }

    /// What `edit` says of a clean-up: one line, and one per failure (none when nothing was done).
    static func report(_ result: (removed: [String], failed: [String]), base: String) -> [String] {
        var lines: [String] = []
        switch result.removed.count {
        case 0: break
        case 1: lines.append(L("removed 1 kept edit older than a day (\(result.removed[0]))"))
        default: lines.append(L("removed \(result.removed.count) kept edits older than a day from \(base)"))
        }
        for f in result.failed { lines.append(L("warning: cannot remove an old kept edit: \(f)")) }
        return lines
    }
}
