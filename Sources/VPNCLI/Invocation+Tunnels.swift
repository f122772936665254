#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNService
import VPNSystem

extension Invocation {
    var controller: TunnelController {
        TunnelController(configDirectory: options.configDirectory, runDirectory: options.runDirectory)
    }

    func timeoutSeconds(default value: Int) throws -> Int {
        guard let text = args.value("timeout") else { return value }
        guard let n = Int(text), n > 0, n <= 86400 else {
            throw VPNError.usage(L("invalid value '\(text)' for '--timeout <seconds>': expected a whole number of seconds (1–86400)"),
                                 hint: L("See 'vpnctl help \(args.command.joined(separator: " "))'."))
        }
        return n
    }
}

extension Substring {
    func trimmingPrefixWhitespace() -> Substring { drop(while: { $0 == " " || $0 == "\t" }) }
}
