/// The names vpnctl gives the interfaces it creates.
public enum InterfaceNames {
    /// utunN with the lowest free N. A name is taken when the link exists in
    /// this namespace or a live WireGuard UAPI socket exists for it: that
    /// path is shared by every network namespace.
    public static func chooseFree(_ system: TunnelSystem) -> String? {
        for n in 0..<256 {
            let name = "utun\(n)"
            if !system.interfaceExists(name) && !system.uapiSocketIsLive(name) { return name }
        }
        return nil
    }
}
