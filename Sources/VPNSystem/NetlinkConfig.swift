#if canImport(Glibc)
import Glibc
#endif
import CNetlink

/// Link, address and route changes through libnl-route. Each method names
/// the libnl call it makes.
extension NetlinkRouteSocket {
    func withLink<T>(_ name: String, _ body: (OpaquePointer) throws -> T) throws -> T {
        var link: OpaquePointer? = nil
        let r = rtnl_link_get_kernel(handle, 0, name, &link)
        if r < 0 { throw NetlinkError("get link \(name)", code: r) }
        defer { rtnl_link_put(link) }
        return try body(link!)
    }

    /// Facts about one link. The corresponding libnl call is rtnl_link_get_kernel().
    public struct LinkInfo: Sendable {
        public let index: Int32
        public let isUp: Bool
        public let hasCarrier: Bool
        public let mtu: UInt32
    }

    public func linkInfo(named name: String) throws -> LinkInfo? {
        var link: OpaquePointer? = nil
        let r = rtnl_link_get_kernel(handle, 0, name, &link)
        if r == -NLE_OBJ_NOTFOUND || r == -NLE_NODEV { return nil }
        if r < 0 { throw NetlinkError("get link \(name)", code: r) }
        defer { rtnl_link_put(link) }
        let flags = rtnl_link_get_flags(link)
        return LinkInfo(index: rtnl_link_get_ifindex(link), isUp: flags & UInt32(IFF_UP) != 0,
                        hasCarrier: flags & UInt32(IFF_RUNNING) != 0, mtu: rtnl_link_get_mtu(link))
    }

    public func linkInfo(index: Int32) throws -> (name: String, info: LinkInfo)? {
        var link: OpaquePointer? = nil
        let r = rtnl_link_get_kernel(handle, index, nil, &link)
        if r == -NLE_OBJ_NOTFOUND || r == -NLE_NODEV { return nil }
        if r < 0 { throw NetlinkError("get link \(index)", code: r) }
        defer { rtnl_link_put(link) }
        let flags = rtnl_link_get_flags(link)
        let name = rtnl_link_get_name(link).map { String(cString: $0) } ?? "if\(index)"
        return (name, LinkInfo(index: index, isUp: flags & UInt32(IFF_UP) != 0,
                               hasCarrier: flags & UInt32(IFF_RUNNING) != 0, mtu: rtnl_link_get_mtu(link)))
    }

    /// Sets the link up and, optionally, its MTU. The corresponding libnl call is rtnl_link_change().
    public func setLink(_ name: String, up: Bool? = nil, mtu: UInt32? = nil) throws {
        try withLink(name) { orig in
            guard let change = rtnl_link_alloc() else { throw NetlinkError("allocate link", code: NLE_NOMEM) }
            defer { rtnl_link_put(change) }
            if let up {
                if up { rtnl_link_set_flags(change, UInt32(IFF_UP)) } else { rtnl_link_unset_flags(change, UInt32(IFF_UP)) }
            }
            if let mtu { rtnl_link_set_mtu(change, mtu) }
            let r = rtnl_link_change(handle, orig, change, 0)
            if r < 0 { throw NetlinkError("change link \(name)", code: r) }
        }
    }

    /// Sets a link's alias (IFLA_IFALIAS), which vpnctl uses to mark the
    /// interfaces it created. The corresponding libnl calls are
    /// rtnl_link_set_ifalias() and rtnl_link_change().
    public func setAlias(_ name: String, _ alias: String) throws {
        try withLink(name) { orig in
            guard let change = rtnl_link_alloc() else { throw NetlinkError("allocate link", code: NLE_NOMEM) }
            defer { rtnl_link_put(change) }
            rtnl_link_set_ifalias(change, alias)
            let r = rtnl_link_change(handle, orig, change, 0)
            if r < 0 { throw NetlinkError("set alias of link \(name)", code: r) }
        }
    }

    /// A link's index and alias, or nil when there is no such link. The
    /// corresponding libnl calls are rtnl_link_get_kernel() and rtnl_link_get_ifalias().
    public func linkAlias(named name: String) throws -> (index: Int32, alias: String?)? {
        var link: OpaquePointer? = nil
        let r = rtnl_link_get_kernel(handle, 0, name, &link)
        if r == -NLE_OBJ_NOTFOUND || r == -NLE_NODEV { return nil }
        if r < 0 { throw NetlinkError("get link \(name)", code: r) }
        defer { rtnl_link_put(link) }
        return (rtnl_link_get_ifindex(link), rtnl_link_get_ifalias(link).map { String(cString: $0) })
    }

    /// Deletes a link by name. The corresponding libnl call is rtnl_link_delete().
    public func deleteLink(_ name: String) throws {
        guard let link = rtnl_link_alloc() else { throw NetlinkError("allocate link", code: NLE_NOMEM) }
        defer { rtnl_link_put(link) }
        rtnl_link_set_name(link, name)
        let r = rtnl_link_delete(handle, link)
        if r < 0 && r != -NLE_OBJ_NOTFOUND && r != -NLE_NODEV { throw NetlinkError("delete link \(name)", code: r) }
    }

    func parseAddress(_ text: String) throws -> OpaquePointer {
        var addr: OpaquePointer? = nil
        let r = nl_addr_parse(text, AF_UNSPEC, &addr)
        if r < 0 || addr == nil { throw NetlinkError("parse address \(text)", code: r) }
        return addr!
    }

    /// Adds an address ("10.0.0.2/32", "fd00::2/64"). IPv6 gets IFA_F_NODAD,
    /// or it stays tentative. The corresponding libnl call is rtnl_addr_add().
    /// `noPrefixRoute`: IFA_F_NOPREFIXROUTE, the kernel adds no route to
    /// the address's subnet (app rules route the tunnel in a table of its own).
    public func addAddress(_ cidr: String, ifindex: Int32, noPrefixRoute: Bool = false) throws {
        try changeAddress(cidr, ifindex: ifindex, add: true, noPrefixRoute: noPrefixRoute)
    }

    /// The corresponding libnl call is rtnl_addr_delete().
    public func deleteAddress(_ cidr: String, ifindex: Int32) throws {
        try changeAddress(cidr, ifindex: ifindex, add: false)
    }

    func changeAddress(_ cidr: String, ifindex: Int32, add: Bool, noPrefixRoute: Bool = false) throws {
        let local = try parseAddress(cidr)
        defer { nl_addr_put(local) }
        guard let addr = rtnl_addr_alloc() else { throw NetlinkError("allocate address", code: NLE_NOMEM) }
        defer { rtnl_addr_put(addr) }
        rtnl_addr_set_ifindex(addr, ifindex)
        rtnl_addr_set_family(addr, nl_addr_get_family(local))
        var r = rtnl_addr_set_local(addr, local)
        if r < 0 { throw NetlinkError("set address \(cidr)", code: r) }
        if nl_addr_get_family(local) == AF_INET6 { rtnl_addr_set_flags(addr, UInt32(IFA_F_NODAD)) }
        if noPrefixRoute { rtnl_addr_set_flags(addr, UInt32(IFA_F_NOPREFIXROUTE)) }
        r = add ? rtnl_addr_add(handle, addr, 0) : rtnl_addr_delete(handle, addr, 0)
        if r < 0 && !(add == false && (r == -NLE_OBJ_NOTFOUND || r == -NLE_NOADDR)) {
            throw NetlinkError("\(add ? "add" : "delete") address \(cidr)", code: r)
        }
    }

    /// Adds or deletes a route to `destination` (a network prefix) out of
    /// `ifindex`, optionally via `gateway`. The corresponding libnl calls are
    /// rtnl_route_add() and rtnl_route_delete().
    public func changeRoute(_ destination: String, ifindex: Int32, gateway: String? = nil, table: UInt32 = 254, add: Bool) throws {
        let dst = try parseAddress(destination)
        defer { nl_addr_put(dst) }
        guard let route = rtnl_route_alloc() else { throw NetlinkError("allocate route", code: NLE_NOMEM) }
        defer { rtnl_route_put(route) }
        rtnl_route_set_family(route, UInt8(nl_addr_get_family(dst)))
        var r = rtnl_route_set_dst(route, dst)
        if r < 0 { throw NetlinkError("set route destination \(destination)", code: r) }
        rtnl_route_set_table(route, table)
        rtnl_route_set_protocol(route, UInt8(RTPROT_STATIC))
        if add { rtnl_route_set_scope(route, UInt8(gateway == nil ? RT_SCOPE_LINK.rawValue : RT_SCOPE_UNIVERSE.rawValue)) }
        // ifindex 0 on delete: match by destination and table alone.
        if ifindex != 0 || gateway != nil {
            guard let nh = rtnl_route_nh_alloc() else { throw NetlinkError("allocate nexthop", code: NLE_NOMEM) }
            if ifindex != 0 { rtnl_route_nh_set_ifindex(nh, ifindex) }
            if let gateway {
                let gw = try parseAddress(gateway)
                defer { nl_addr_put(gw) }
                rtnl_route_nh_set_gateway(nh, gw)
            }
            rtnl_route_add_nexthop(route, nh)
        }
        r = add ? rtnl_route_add(handle, route, NLM_F_EXCL) : rtnl_route_delete(handle, route, 0)
        if r < 0 && !(add == false && (r == -NLE_OBJ_NOTFOUND)) {
            throw NetlinkError("\(add ? "add" : "delete") route \(destination)", code: r)
        }
    }
}

extension NetlinkRouteSocket {
    /// A policy-routing rule `to <destination> lookup <table> priority <priority>`
    /// (what `ip rule add to ... table ... pref ...` makes). A rule that is
    /// there already (add) or gone already (delete) is not an error. The
    /// corresponding libnl calls are rtnl_rule_add() and rtnl_rule_delete().
    public func changeRule(to destination: String, table: UInt32, priority: UInt32, add: Bool) throws {
        let dst = try parseAddress(destination)
        defer { nl_addr_put(dst) }
        guard let rule = rtnl_rule_alloc() else { throw NetlinkError("allocate rule", code: NLE_NOMEM) }
        defer { rtnl_rule_put(rule) }
        rtnl_rule_set_family(rule, nl_addr_get_family(dst))
        var r = rtnl_rule_set_dst(rule, dst)
        if r < 0 { throw NetlinkError("set rule destination \(destination)", code: r) }
        rtnl_rule_set_table(rule, table)
        rtnl_rule_set_prio(rule, priority)
        rtnl_rule_set_action(rule, UInt8(FR_ACT_TO_TBL))
        r = add ? rtnl_rule_add(handle, rule, NLM_F_EXCL) : rtnl_rule_delete(handle, rule, 0)
        if r < 0 && !(add && r == -NLE_EXIST) && !(!add && (r == -NLE_OBJ_NOTFOUND || r == -NLE_NOADDR)) {
            throw NetlinkError("\(add ? "add" : "delete") rule to \(destination) table \(table)", code: r)
        }
    }
}

extension NetlinkRouteSocket {
    /// A policy-routing rule by packet mark: `[not] fwmark MARK lookup TABLE`,
    /// or with no mark `lookup TABLE suppress_prefixlength N` (what
    /// `ip rule add ... pref PRIORITY` makes). libnl's rule object has no
    /// invert flag or suppress_prefixlength, so the request it builds
    /// (rtnl_rule_build_add_request / _delete_request) gets FIB_RULE_INVERT in
    /// its header and FRA_SUPPRESS_PREFIXLEN as an attribute (nla_put_u32),
    /// and is sent with nl_send_auto and nl_wait_for_ack. Already there (add)
    /// or gone already (delete) is not an error.
    public func changeMarkRule(family: Int32, priority: UInt32, table: UInt32, mark: UInt32?, invert: Bool,
                               suppressPrefixLength: UInt32?, add: Bool) throws {
        guard let rule = rtnl_rule_alloc() else { throw NetlinkError("allocate rule", code: NLE_NOMEM) }
        defer { rtnl_rule_put(rule) }
        rtnl_rule_set_family(rule, family)
        rtnl_rule_set_table(rule, table)
        rtnl_rule_set_prio(rule, priority)
        rtnl_rule_set_action(rule, UInt8(FR_ACT_TO_TBL))
        if let mark {
            rtnl_rule_set_mark(rule, mark)
            rtnl_rule_set_mask(rule, 0xFFFF_FFFF)
        }
        let what = "\(add ? "add" : "delete") rule \(invert ? "not " : "")\(mark.map { "fwmark \($0) " } ?? "")lookup \(table)"
        var msg: OpaquePointer? = nil
        var r = add ? rtnl_rule_build_add_request(rule, NLM_F_EXCL, &msg) : rtnl_rule_build_delete_request(rule, 0, &msg)
        if r < 0 { throw NetlinkError(what, code: r) }
        defer { nlmsg_free(msg) }
        if invert, let header = nlmsg_data(nlmsg_hdr(msg)) {
            header.assumingMemoryBound(to: fib_rule_hdr.self).pointee.flags |= UInt32(FIB_RULE_INVERT)
        }
        if let n = suppressPrefixLength {
            r = nla_put_u32(msg, Int32(FRA_SUPPRESS_PREFIXLEN), n)
            if r < 0 { throw NetlinkError(what, code: r) }
        }
        r = nl_send_auto(handle, msg)
        if r >= 0 { r = nl_wait_for_ack(handle) }
        if r < 0 && !(add && r == -NLE_EXIST) && !(!add && (r == -NLE_OBJ_NOTFOUND || r == -NLE_NOADDR)) {
            throw NetlinkError(what, code: r)
        }
    }
}

extension NetlinkRouteSocket {
    /// One link's counters (IFLA_STATS64, which the kernel fills from
    /// dev_get_stats(), the same source as /proc/net/dev), folded as
    /// /proc/net/dev prints them: rx drops include missed packets. The corresponding
    /// libnl calls are rtnl_link_get_kernel() and rtnl_link_get_stat().
    /// Returns nil when there is no such link.
    public func counters(named name: String) throws -> (ifindex: Int32, counters: InterfaceCounters)? {
        var link: OpaquePointer? = nil
        let r = rtnl_link_get_kernel(handle, 0, name, &link)
        if r == -NLE_OBJ_NOTFOUND || r == -NLE_NODEV { return nil }
        if r < 0 { throw NetlinkError("get link \(name)", code: r) }
        defer { rtnl_link_put(link) }
        func stat(_ id: rtnl_link_stat_id_t) -> UInt64 { rtnl_link_get_stat(link, id) }
        let c = InterfaceCounters(name: name, rxBytes: stat(RTNL_LINK_RX_BYTES), rxPackets: stat(RTNL_LINK_RX_PACKETS),
                                  rxErrors: stat(RTNL_LINK_RX_ERRORS),
                                  rxDropped: stat(RTNL_LINK_RX_DROPPED) &+ stat(RTNL_LINK_RX_MISSED_ERR),
                                  txBytes: stat(RTNL_LINK_TX_BYTES), txPackets: stat(RTNL_LINK_TX_PACKETS),
                                  txErrors: stat(RTNL_LINK_TX_ERRORS), txDropped: stat(RTNL_LINK_TX_DROPPED))
        return (rtnl_link_get_ifindex(link), c)
    }
}
