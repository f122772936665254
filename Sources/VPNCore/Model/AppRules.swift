import FoundationEssentials

/// Per-app VPN (NEAppRule): which programs use the tunnel. `include`: only
/// the matched programs' traffic enters the tunnel; `exclude`: the matched
/// programs go around a tunnel that everything else uses (split tunnelling).
/// A program is matched by the cgroup its sockets were made in: a systemd
/// unit or slice (a cgroup directory's name, `*` and `?` allowed), or a
/// cgroup path as `/proc/PID/cgroup` writes it. `vpnctl run` puts a program
/// in a cgroup the rules always cover (see `AppCgroups`).
public struct AppRules: Encodable, Equatable, Sendable {
    public enum Mode: String, Codable, CaseIterable, Sendable {
        case include, exclude
    }

    public enum Match: Equatable, Sendable {
        /// A unit or slice name, or a pattern of one ("app-firefox-*.scope").
        case unit(String)
        /// A cgroup path from the cgroup2 root ("/user.slice/user-1000.slice").
        case cgroup(String)
    }

    public var mode: Mode
    public var matches: [Match]

    public init(mode: Mode, matches: [Match] = []) {
        self.mode = mode
        self.matches = matches
    }

    enum CodingKeys: String, CodingKey { case mode, matches }
    enum MatchKeys: String, CodingKey { case unit, cgroup }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(mode.rawValue, forKey: .mode)
        var list = c.nestedUnkeyedContainer(forKey: .matches)
        for m in matches {
            var item = list.nestedContainer(keyedBy: MatchKeys.self)
            switch m {
            case .unit(let u): try item.encode(u, forKey: .unit)
            case .cgroup(let p): try item.encode(p, forKey: .cgroup)
            }
        }
    }

    /// "unit firefox.service", "cgroup /x/y": how show and the log name a match.
    public static func describe(_ m: Match) -> String {
        switch m {
        case .unit(let u): return "unit \(u)"
        case .cgroup(let p): return "cgroup \(p)"
        }
    }

    /// Every problem with the rules, each naming its field.
    public func problems() -> [String] {
        var p: [String] = []
        if matches.isEmpty {
            p.append(L("appRules.matches: empty (name at least one unit or cgroup, or remove appRules)"))
        }
        for (i, m) in matches.enumerated() {
            switch m {
            case .unit(let u):
                if let why = AppRules.unitProblem(u) { p.append(L("appRules.matches[\(i)].unit: '\(OpenVPNDirectives.shown(u))' \(why)")) }
            case .cgroup(let path):
                if let why = AppRules.cgroupProblem(path) { p.append(L("appRules.matches[\(i)].cgroup: '\(OpenVPNDirectives.shown(path))' \(why)")) }
            }
        }
        return p
    }

    /// The characters of a systemd unit name (and `*`, `?` of a pattern).
    static func isUnitCharacter(_ c: Unicode.Scalar) -> Bool {
        c.isASCII && (c.properties.isAlphabetic || ("0"..."9").contains(c) || ":_.-\\@*?".unicodeScalars.contains(c))
    }

    static func unitProblem(_ u: String) -> String? {
        guard !u.isEmpty, u.unicodeScalars.count <= 255 else { return L("is not a unit name (1 to 255 characters)") }
        guard u.unicodeScalars.allSatisfy(isUnitCharacter) else {
            return L("is not a unit name (letters, digits, ':', '_', '.', '-', '\\', '@', and '*' or '?' in a pattern)")
        }
        guard [".service", ".scope", ".slice"].contains(where: { u.hasSuffix($0) }) || u.hasSuffix("*") else {
            return L("names no unit that holds processes (a name ends in .service, .scope or .slice)")
        }
        if u.allSatisfy({ $0 == "*" || $0 == "?" }) { return L("matches every program (for that, remove appRules: a full tunnel)") }
        return nil
    }

    static func cgroupProblem(_ path: String) -> String? {
        guard path.hasPrefix("/") else { return L("is not a cgroup path (it starts with '/', as /proc/PID/cgroup writes it)") }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        if parts.isEmpty || parts == [""] { return L("is the root: it matches every program (for that, remove appRules: a full tunnel)") }
        for part in parts {
            if part.isEmpty || part == "." || part == ".." { return L("is not a cgroup path (empty, '.' or '..' parts)") }
            // nft takes the path as a quoted string: no quote, backslash or control character.
            if part.unicodeScalars.contains(where: { !$0.isASCII || $0.value < 0x21 || $0 == "\"" || $0 == "\\" || $0.value == 0x7F }) {
                return L("has a character nft cannot match (printable ASCII without spaces, quotes or backslashes)")
            }
        }
        return nil
    }
}

extension AppRules {
    init(json r: JSONReader) throws {
        guard let m = try r.optional("mode") else { throw r.problem("mode", "missing (include or exclude)") }
        mode = try m.oneOf(Mode.self, Mode.allCases)
        matches = try r.optional("matches")?.array().map { item in
            let unit = try item.string("unit"), cgroup = try item.string("cgroup")
            if try item.string("executable") != nil {
                throw item.problem("executable", "not a match vpnctl can make: nft tells programs apart by cgroup, not by executable; start the program with 'vpnctl run PROFILE -- PROGRAM', or match its unit")
            }
            switch (unit, cgroup) {
            case (let u?, nil): return .unit(u)
            case (nil, let c?): return .cgroup(c)
            case (nil, nil): throw item.problem(nil, "names neither a unit nor a cgroup")
            default: throw item.problem(nil, "names both a unit and a cgroup (one match each)")
            }
        } ?? []
    }
}
