/// The wg-quick(8) configuration format: [Interface] and [Peer] sections of
/// `Key = Value` lines. Keys are case-insensitive; `#` starts a comment.
/// PrivateKey and PresharedKey move into secrets. Pre/PostUp/Down commands
/// are refused, never run.
public enum WGQuick {
    public static let privateKeySecret = "private-key"

    public static func presharedKeySecret(peer index: Int) -> String { "peer\(index + 1)-preshared-key" }

    public static func parse(_ text: String, name: String, source: String) throws -> ImportResult {
        var reader = Reader()
        var lineNumber = 0
        var body = Substring(text)
        if body.hasPrefix("\u{FEFF}") { body = body.dropFirst() }
        for rawLine in body.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            lineNumber += 1
            reader.read(rawLine, at: L("line \(lineNumber)"))
        }
        reader.finishPeer()
        return try reader.result(name: name, source: source)
    }

    /// The file read so far: the configuration, its secrets, and the section
    /// (and peer) that the next line belongs to.
    struct Reader {
        var config = WireGuardConfiguration()
        var secrets: [String: [UInt8]] = [:]
        var problems: [String] = []
        var notes: [String] = []
        /// "interface", "peer", "unknown", or nil before the first header.
        var section: String? = nil
        /// "[interface]" once an [Interface] was read, and "section.key" for
        /// the keys given in the current section.
        var seen = Set<String>()
        var peer: WireGuardPeer? = nil
        /// The secrets an export's first line says it left out.
        var leftOut: [String] = []

        mutating func finishPeer() {
            if let p = peer { config.peers.append(p) }
            peer = nil
        }

        /// One line; `at` is "line N", for messages.
        mutating func read(_ rawLine: Substring, at: String) {
            var line = rawLine
            if seen.isEmpty, let names = ExportMarker.secrets(in: line) { leftOut = names }
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            let trimmed = trim(line)
            if trimmed.isEmpty { return }
            if trimmed.hasPrefix("[") {
                readHeader(trimmed, at: at)
            } else {
                readSetting(trimmed, at: at)
            }
        }

        mutating func readHeader(_ trimmed: String, at: String) {
            guard trimmed.hasSuffix("]") else {
                problems.append(L("\(at): section header \(trimmed.quotedForMessage) has no closing ']'"))
                return
            }
            switch trim(trimmed.dropFirst().dropLast()).lowercased() {
            case "interface":
                finishPeer()
                if section == "interface" || seen.contains("[interface]") {
                    problems.append(L("\(at): a second [Interface] section"))
                }
                seen.insert("[interface]")
                section = "interface"
            case "peer":
                finishPeer()
                section = "peer"
                peer = WireGuardPeer(publicKey: "")
                seen = seen.filter { !$0.hasPrefix("peer.") }
            default:
                problems.append(L("\(at): unknown section [\(trim(trimmed.dropFirst().dropLast()))] (expected [Interface] or [Peer])"))
                section = "unknown"
            }
        }

        /// A `Key = Value` line, checked for its place and for repeats, then
        /// applied to the current section.
        mutating func readSetting(_ trimmed: String, at: String) {
            guard let eq = trimmed.firstIndex(of: "=") else {
                problems.append(L("\(at): expected 'Key = Value'"))
                return
            }
            let keyOriginal = trim(trimmed[..<eq])
            let key = keyOriginal.lowercased()
            let value = trim(trimmed[trimmed.index(after: eq)...])
            guard let section else {
                problems.append(L("\(at): \(keyOriginal.quotedForMessage) appears before any [Interface] or [Peer] section"))
                return
            }
            if section == "unknown" { return }
            let repeatable: Set<String> = ["address", "dns", "allowedips"]
            let seenKey = (section == "peer" ? "peer." : "interface.") + key
            if !repeatable.contains(key) && seen.contains(seenKey) {
                problems.append(L("\(at): \(keyOriginal) is given twice in this section"))
                return
            }
            seen.insert(seenKey)
            if section == "interface" {
                setInterface(key, keyOriginal, value, at: at)
            } else {
                setPeer(key, keyOriginal, value, at: at)
            }
        }

        mutating func setInterface(_ key: String, _ keyOriginal: String, _ value: String, at: String) {
            switch key {
            case "privatekey":
                if WireGuardKey.decode(value) != nil {
                    secrets[privateKeySecret] = Array(value.utf8)
                    config.privateKeySecret = privateKeySecret
                } else {
                    problems.append(L("\(at): PrivateKey is not a WireGuard key (44 characters of base64 encoding 32 bytes)"))
                }
            case "address":
                for a in list(value) {
                    if CIDR(a) == nil { problems.append(L("\(at): Address \(a.quotedForMessage) is not an IP address with an optional /prefix")) }
                    config.addresses.append(a)
                }
            case "dns":
                for d in list(value) {
                    if IPAddress(d) == nil && !isDomainName(d) { problems.append(L("\(at): DNS \(d.quotedForMessage) is neither an IP address nor a search domain")) }
                    config.dns.append(d)
                }
            case "mtu":
                if let n = Int(value), (576...65535).contains(n) { config.mtu = n }
                else { problems.append(L("\(at): MTU \(value.quotedForMessage) must be a number from 576 to 65535")) }
            case "listenport":
                if let n = Int(value), (0...65535).contains(n) { config.listenPort = n }
                else { problems.append(L("\(at): ListenPort \(value.quotedForMessage) must be a number from 0 to 65535")) }
            case "table":
                let t = value.lowercased()
                if t == "auto" || t == "off" || UInt32(t) != nil { config.table = t }
                else if t == "main" { config.table = "254" }
                else { problems.append(L("\(at): Table \(value.quotedForMessage) must be auto, off, main, or a table number")) }
            case "fwmark":
                let t = value.lowercased()
                if Fwmark(t) != nil { config.fwmark = t }
                else { problems.append(L("\(at): FwMark \(value.quotedForMessage) must be off or a number")) }
            case "saveconfig":
                notes.append("\(at): SaveConfig is ignored; vpnctl keeps the profile in its own store")
            case "preup", "postup", "predown", "postdown":
                problems.append(L("\(at): \(keyOriginal) runs a shell command; vpnctl refuses to import commands (remove the line)"))
            default:
                problems.append(L("\(at): unknown key \(keyOriginal.quotedForMessage) in [Interface]"))
            }
        }

        mutating func setPeer(_ key: String, _ keyOriginal: String, _ value: String, at: String) {
            switch key {
            case "publickey":
                if WireGuardKey.isValid(value) { peer?.publicKey = value }
                else { problems.append(L("\(at): PublicKey \(value.quotedForMessage) is not a WireGuard key (44 characters of base64 encoding 32 bytes)")) }
            case "presharedkey":
                if WireGuardKey.isValid(value) {
                    // The peer is not in config.peers yet: its index is the count.
                    let secretName = presharedKeySecret(peer: config.peers.count)
                    secrets[secretName] = Array(value.utf8)
                    peer?.presharedKeySecret = secretName
                } else {
                    problems.append(L("\(at): PresharedKey is not a WireGuard key (44 characters of base64 encoding 32 bytes)"))
                }
            case "allowedips":
                for a in list(value) {
                    if CIDR(a) == nil { problems.append(L("\(at): AllowedIPs \(a.quotedForMessage) is not a CIDR prefix")) }
                    peer?.allowedIPs.append(a)
                }
            case "endpoint":
                switch Endpoint.parse(value) {
                case .success: peer?.endpoint = value
                case .failure(.missingPort): problems.append(L("\(at): Endpoint \(value.quotedForMessage) has no port (host:port)"))
                case .failure(.badPort): problems.append(L("\(at): Endpoint \(value.quotedForMessage) has a port outside 1–65535"))
                case .failure(.badHost): problems.append(L("\(at): Endpoint \(value.quotedForMessage) has an invalid host"))
                }
            case "persistentkeepalive":
                if value.lowercased() == "off" { peer?.persistentKeepalive = 0 }
                else if let n = Int(value), (0...65535).contains(n) { peer?.persistentKeepalive = n }
                else { problems.append(L("\(at): PersistentKeepalive \(value.quotedForMessage) must be off or 0–65535 seconds")) }
            default:
                problems.append(L("\(at): unknown key \(keyOriginal.quotedForMessage) in [Peer]"))
            }
        }

        func result(name: String, source: String) throws -> ImportResult {
            var problems = problems
            if !seen.contains("[interface]") { problems.append(L("no [Interface] section")) }
            if !problems.isEmpty {
                throw VPNError.invalid(problems.count == 1 ? L("\(source) is not a usable wg-quick file (1 problem)")
                                      : L("\(source) is not a usable wg-quick file (\(problems.count) problems)"),
                                       problems: problems, hint: L("fix the file and import it again"))
            }
            // A vpnctl export without its secrets: they stay the profile's,
            // unset, for `vpnctl secret set` (start names them until then).
            var config = config, notes = notes
            if config.privateKeySecret == nil, leftOut.contains(privateKeySecret) { config.privateKeySecret = privateKeySecret }
            for i in config.peers.indices where config.peers[i].presharedKeySecret == nil && leftOut.contains(presharedKeySecret(peer: i)) {
                config.peers[i].presharedKeySecret = presharedKeySecret(peer: i)
            }
            let unset = leftOut.filter { secrets[$0] == nil && ([config.privateKeySecret] + config.peers.map(\.presharedKeySecret)).contains($0) }
            if !unset.isEmpty {
                notes.append(ExportMarker.unsetNote(unset))
            }
            let profile = Profile(name: name, protocol: .wireguard(config))
            var result = ImportResult(profile: profile, secrets: secrets, notes: notes)
            if seen.contains("interface.saveconfig") { result.noEffect = ["SaveConfig"] }
            return result
        }
    }

    /// Writes a profile back as a wg-quick file. `secret` supplies key values by name.
    public static func export(_ config: WireGuardConfiguration, secret: (String) -> String?) -> String {
        var out = "[Interface]\n"
        if let k = config.privateKeySecret, let v = secret(k) { out += "PrivateKey = \(v)\n" }
        if !config.addresses.isEmpty { out += "Address = \(config.addresses.joined(separator: ", "))\n" }
        if !config.dns.isEmpty { out += "DNS = \(config.dns.joined(separator: ", "))\n" }
        if let m = config.mtu { out += "MTU = \(m)\n" }
        if let p = config.listenPort { out += "ListenPort = \(p)\n" }
        if let t = config.table { out += "Table = \(t)\n" }
        if let f = config.fwmark { out += "FwMark = \(f)\n" }
        for p in config.peers {
            out += "\n[Peer]\nPublicKey = \(p.publicKey)\n"
            if let s = p.presharedKeySecret, let v = secret(s) { out += "PresharedKey = \(v)\n" }
            if !p.allowedIPs.isEmpty { out += "AllowedIPs = \(p.allowedIPs.joined(separator: ", "))\n" }
            if let e = p.endpoint { out += "Endpoint = \(e)\n" }
            if let k = p.persistentKeepalive { out += "PersistentKeepalive = \(k)\n" }
        }
        return out
    }

    static func trim<S: StringProtocol>(_ s: S) -> String {
        var sub = Substring(s)
        while let f = sub.first, f == " " || f == "\t" || f == "\r" { sub = sub.dropFirst() }
        while let l = sub.last, l == " " || l == "\t" || l == "\r" { sub = sub.dropLast() }
        return String(sub)
    }

    static func list(_ value: String) -> [String] {
        value.split(separator: ",").map { trim($0) }.filter { !$0.isEmpty }
    }
}
