# DNS that follows the tunnel, and the kill switch (source after lab.sh and
# openvpn.sh; e2e.sh calls dns_tests). Everything happens in the lab's
# namespaces: the client's resolver is /etc/netns/$NS_C/resolv.conf (made by
# lab_netns_add, bind-mounted over /etc/resolv.conf by `ip netns exec`), and
# the kill switch's nftables table is made by vpnctl running in the client
# namespace. Before any DNS or kill-switch profile starts, dns_guard checks
# that the client really sees its own resolv.conf.
#
#   tunnel DNS   198.19.0.53 (office), 198.19.1.53 (second), 198.19.8.1 (openvpn push)
#   leak target  198.18.0.1 (the server's underlay address: not the endpoint's port)
#   IPv6 leak    2001:2::2 (client) -> 2001:2::1 (server), added by the test, removed after

RESOLV=/etc/netns/$NS_C/resolv.conf
DNS_SERVER_PY=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/dns-server.py

# dns_guard: the client namespace's /etc/resolv.conf is the lab's own file
# (the same inode as $RESOLV), so nothing vpnctl writes can reach this machine's.
dns_guard() {
  [ -f "$RESOLV" ] || { echo "  no $RESOLV: refusing to start a DNS profile"; return 1; }
  local inner outer
  inner=$(c stat -L -c %d:%i /etc/resolv.conf) outer=$(stat -L -c %d:%i "$RESOLV")
  [ "$inner" = "$outer" ] || { echo "  the client's /etc/resolv.conf ($inner) is not $RESOLV ($outer): refusing"; return 1; }
}

# dns_profile NAME SOURCE DNSLINE: the lab's SOURCE.conf with a DNS= line.
dns_profile() {
  sed "s|^Address = \(.*\)$|Address = \1\nDNS = $3|" "$LAB_DIR/$2.conf" > "$LAB_DIR/$1.conf"
}

# edit_profile NAME PYTHON: changes the profile's JSON (p) through `vpnctl edit`.
edit_profile() {
  printf '#!/bin/sh\nexec python3 -c %q "$1"\n' "import json,sys; f=sys.argv[1]; p=json.load(open(f)); $2; json.dump(p, open(f,'w'))" > "$T/editor"
  chmod 700 "$T/editor"
  expect_ok "edit $1" cn env EDITOR="$T/editor" "$V" edit "$1"
}

resolv() { cat "$RESOLV"; }
nft_tables() { c nft list tables 2>/dev/null | grep -c "inet vpnctl_"; }

test_dns_applied_restored() {
  dns_guard || return 1
  dns_profile dnsoffice office "198.19.0.53, corp.example"
  use dnsoffice || return 1
  local before; before=$(resolv)
  expect_ok "start" cn "$V" start dnsoffice || return 1
  expect_contains "resolv.conf while up" "nameserver 198.19.0.53" "$(resolv)" || return 1
  expect_contains "resolv.conf while up" "search corp.example" "$(resolv)" || return 1
  expect_not_contains "resolv.conf while up" "127.0.0.1" "$(resolv)" || return 1
  expect_field dnsoffice resolver.backend resolv.conf || return 1
  expect_ok "status" cn "$V" status && expect_contains "status" "198.19.0.53 search corp.example (resolv.conf)" "$OUT" || return 1
  expect_ok "stop" cn "$V" stop dnsoffice || return 1
  expect_eq "resolv.conf after stop" "$before" "$(resolv)" || return 1
  expect_eq "resolver state files left" "" "$(ls "$VPNCTL_RUN_DIR" | grep '^resolv-.*json')"
}

test_dns_supervisor_killed() {
  dns_guard || return 1
  dns_profile dnsoffice office "198.19.0.53"
  use dnsoffice || return 1
  local before; before=$(resolv)
  expect_ok "start" cn "$V" start dnsoffice || return 1
  kill_supervisor dnsoffice wireguard-go || return 1
  # A SIGKILL undoes nothing: the tunnel's DNS is still there...
  expect_contains "resolv.conf after the kill" "nameserver 198.19.0.53" "$(resolv)" || return 1
  # ...and status says so, with what restores it (issue 36, item 2).
  expect_ok "status after the kill" cn "$V" status || return 1
  expect_contains "status names the stale DNS" "dnsoffice: DNS: the dead tunnel's DNS is still in place (198.19.0.53 (resolv.conf)): names go to its servers; restore it with: vpnctl stop dnsoffice" "$OUT" || return 1
  expect_eq "status --json staleResolver" "198.19.0.53" "$(field dnsoffice staleResolver.servers | tr -d "[]'")" || return 1
  # ...until the next stop, which restores it from the backup it recorded.
  expect_ok "stop after the kill" cn "$V" stop dnsoffice || return 1
  expect_eq "resolv.conf after stop" "$before" "$(resolv)" || return 1
  expect_eq "no stale DNS after stop" "" "$(field dnsoffice staleResolver)" || return 1
  # The next start after a kill restores too, then applies again.
  expect_ok "start again" cn "$V" start dnsoffice || return 1
  kill_supervisor dnsoffice wireguard-go || return 1
  expect_ok "start after the second kill" cn "$V" start dnsoffice || return 1
  expect_contains "resolv.conf" "nameserver 198.19.0.53" "$(resolv)" || return 1
  expect_ok "stop" cn "$V" stop dnsoffice || return 1
  expect_eq "resolv.conf after the last stop" "$before" "$(resolv)" || return 1
  nothing_left
}

test_dns_split() {
  dns_guard || return 1
  dns_profile dnsoffice office "198.19.0.53"
  use dnsoffice || return 1
  edit_profile dnsoffice 'p["dnsSettings"]={"matchDomains":["corp.example"],"searchDomains":["lab.example"]}' || return 1
  expect_ok "show" cn "$V" show dnsoffice && expect_contains "show" "corp.example (split DNS)" "$OUT" || return 1
  local before; before=$(resolv)
  expect_ok "start" cn "$V" start dnsoffice || return 1
  expect_field dnsoffice resolver.matchDomains "['corp.example']" || return 1
  expect_field dnsoffice resolver.searchDomains "['lab.example']" || return 1
  # A plain resolv.conf cannot route by domain: every name goes to the tunnel, and status says so.
  expect_contains "the note" "split DNS needs systemd-resolved" "$(field dnsoffice resolver.note)" || return 1
  expect_contains "resolv.conf" "nameserver 198.19.0.53" "$(resolv)" || return 1
  expect_ok "stop" cn "$V" stop dnsoffice || return 1
  expect_eq "resolv.conf after stop" "$before" "$(resolv)"
}

test_dns_two_tunnels() {
  dns_guard || return 1
  dns_profile dnsoffice office "198.19.0.53"
  dns_profile dnssecond second "198.19.1.53"
  use dnsoffice dnssecond || return 1
  local before; before=$(resolv)
  expect_ok "start office" cn "$V" start dnsoffice || return 1
  expect_ok "start second" cn "$V" start dnssecond || return 1
  expect_contains "the most recent wins" "nameserver 198.19.1.53" "$(resolv)" || return 1
  expect_ok "stop second" cn "$V" stop dnssecond || return 1
  expect_contains "office's comes back" "nameserver 198.19.0.53" "$(resolv)" || return 1
  expect_ok "start second again" cn "$V" start dnssecond || return 1
  expect_ok "stop office (not on top)" cn "$V" stop dnsoffice || return 1
  expect_contains "second's stays" "nameserver 198.19.1.53" "$(resolv)" || return 1
  expect_ok "stop second" cn "$V" stop dnssecond || return 1
  expect_eq "resolv.conf after both" "$before" "$(resolv)" || return 1
  nothing_left
}

test_dns_openvpn_push() {
  [ "$ovpn_ready" = yes ] || { echo "  the OpenVPN lab is not up"; return 1; }
  dns_guard || return 1
  use work.ovpn || return 1
  local before; before=$(resolv)
  expect_ok "start" cn "$V" start work --timeout 15 || return 1
  expect_contains "the pushed DNS in resolv.conf" "nameserver 198.19.8.1" "$(resolv)" || return 1
  kill -KILL "$(record work providerPid)"
  wait_status work disconnected 5 || return 1
  expect_eq "resolv.conf after openvpn died" "$before" "$(resolv)" || return 1
  nothing_left
}

# dns_server_up: a DNS server at 198.19.0.53 in the server namespace, reachable
# only through the tunnel: names under corp.example are 198.19.0.1, the rest
# NXDOMAIN (Tests/lab/dns-server.py).
dns_server_up() {
  need s ip addr add 198.19.0.53/32 dev "${LAB}w" || return 1
  defer s ip addr del 198.19.0.53/32 dev "${LAB}w"
  ip netns exec "$NS_S" python3 "$DNS_SERVER_PY" 198.19.0.53 198.19.0.1 > "$T/dns.log" 2>&1 &
  local pid=$!; LAB_PIDS+=($pid)
  defer stop_pid "$pid"
  wait_for "the lab's DNS server on 198.19.0.53" 5 grep -q ready "$T/dns.log"
}

test_dns_verify() {
  dns_guard || return 1
  dns_server_up || return 1
  dns_profile dnsoffice office "198.19.0.53"
  use dnsoffice office || return 1
  expect_ok "start" cn "$V" start dnsoffice || return 1
  expect_ok "verify --dns" cn "$V" verify dnsoffice --probe http://198.19.0.1:8080/ --dns intranet.corp.example || return 1
  expect_contains "verify --dns" "intranet.corp.example is 198.19.0.1 (answered by 198.19.0.53" "$OUT" || return 1
  expect_contains "verify --dns" "leaves through utun" "$OUT" || return 1
  # The same name through the system resolver, which is now the tunnel's (getent reads the rewritten file).
  expect_ok "getent through the rewritten resolv.conf" c getent hosts intranet.corp.example || return 1
  expect_run "verify --dns, a name the server does not know" 4 cn "$V" verify dnsoffice --probe http://198.19.0.1:8080/ --dns nothere.example || return 1
  expect_contains "the reason" "NXDOMAIN" "$OUT" || return 1
  expect_ok "stop" cn "$V" stop dnsoffice || return 1
  expect_run "getent after stop" nonzero c getent hosts intranet.corp.example || return 1
  expect_ok "start a profile without DNS" cn "$V" start office || return 1
  expect_run "verify --dns without the tunnel's DNS" 12 cn "$V" verify office --probe http://198.19.0.1:8080/ --dns intranet.corp.example || return 1
  expect_ok "stop" cn "$V" stop office
}

# ---- kill switch ----

# leak_capture_start NAME: tcpdump in the server namespace on the underlay,
# every IP packet from the client except the provider's to its endpoint port
# and IPv6 neighbour discovery (which the kill switch lets through on purpose),
# plus the server's own marker ping (see leak_capture_count).
leak_capture_start() {
  ip netns exec "$NS_S" tcpdump -i "${LAB}s0" -n -U --immediate-mode -w "$T/$1.pcap" \
    "((ip or ip6) and (src host 198.18.0.2 or src host 2001:2::2) and not (udp port 51820)
      and not (icmp6 and ip6[40] >= 133 and ip6[40] <= 136))
     or (icmp and src host 198.18.0.1 and icmp[icmptype] == icmp-echo)" 2> "$T/$1.tcpdump" &
  CAP_PID=$!; LAB_PIDS+=($CAP_PID)
  defer stop_pid "$CAP_PID"
  wait_for "tcpdump to listen" 5 grep -q "listening on" "$T/$1.tcpdump"
}
marker_seen() { tcpdump -r "$T/$1.pcap" -n 2>/dev/null | grep -q "198.18.0.1 > 198.18.0.2: ICMP echo request"; }
# leak_capture_count NAME: the number of client packets captured. A ping from
# the server, sent last, must be in the capture first: it proves the capture
# was live and written out, so that 0 means nothing left, not nothing seen.
leak_capture_count() {
  s ping -n -c 1 -W 1 198.18.0.2 >/dev/null 2>&1
  wait_for "the marker ping in the capture" 5 marker_seen "$1" >&2 || { echo marker-missing; return; }
  stop_pid "$CAP_PID"
  tcpdump -r "$T/$1.pcap" -n 2>/dev/null | grep -v "198.18.0.1 > 198.18.0.2: ICMP echo request" | tee "$T/$1.txt" | wc -l
}

# leak_send: TCP, UDP (a DNS query), ICMP and ICMPv6 to lab addresses outside the tunnel.
leak_send() {
  c timeout 2 bash -c 'exec 3<>/dev/tcp/198.18.0.1/8081' 2>/dev/null
  c timeout 2 bash -c 'printf "\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03lab\x00\x00\x01\x00\x01" > /dev/udp/198.18.0.1/53' 2>/dev/null
  c ping -n -c 2 -i 0.2 -W 1 198.18.0.1 >/dev/null 2>&1
  c ping -6 -n -c 2 -i 0.2 -W 1 2001:2::1 >/dev/null 2>&1
  return 0
}

ks_ipv6_up() {
  c ip -6 addr add 2001:2::2/64 dev "${LAB}c0" nodad && s ip -6 addr add 2001:2::1/64 dev "${LAB}s0" nodad \
    || { echo "  lab set-up failed at: IPv6 addresses on the underlay"; return 1; }
  defer s ip -6 addr del 2001:2::1/64 dev "${LAB}s0"
  defer c ip -6 addr del 2001:2::2/64 dev "${LAB}c0"
}

test_killswitch_control() {
  # Without the kill switch the same sends leak: the capture can see them.
  use office && ks_ipv6_up || return 1
  c ping -6 -n -c 1 -W 2 2001:2::1 >/dev/null 2>&1  # neighbour discovery first
  expect_ok "start" cn "$V" start office || return 1
  leak_capture_start control || return 1
  leak_send
  local n; n=$(leak_capture_count control)
  [ "$n" != marker-missing ] && [ "$n" -ge 4 ] || { echo "  expected the capture to see the leaks (TCP, UDP, ICMP, ICMPv6), saw $n packets"; sed "s/^/  | /" "$T/control.tcpdump"; return 1; }
  expect_contains "captured" "ICMP6" "$(cat "$T/control.txt")" || return 1
  echo "  # without the kill switch the capture saw $n client packets outside the tunnel"
  expect_ok "stop" cn "$V" stop office
}

test_killswitch() {
  use office && ks_ipv6_up || return 1
  edit_profile office 'p["includeAllNetworks"]=True' || return 1
  expect_ok "show" cn "$V" show office && expect_contains "show" "kill switch:" "$OUT" || return 1
  [ "$(nft_tables)" = 0 ] || { echo "  a vpnctl table exists before the start"; return 1; }
  expect_ok "start" cn "$V" start office || return 1
  local table; table=vpnctl_$(field office id | tr -d -)
  expect_ok "the table" c nft list table inet "$table" || return 1
  expect_eq "killSwitch" on "$(field office killSwitch)" || return 1
  expect_ok "verify through the tunnel" cn "$V" verify office --probe http://198.19.0.1:8080/ || return 1
  # status reads nftables, not only the record: a table someone deleted is reported.
  c nft delete table inet "$table"
  expect_eq "killSwitch with its table deleted" missing "$(field office killSwitch)" || return 1
  expect_ok "stop" cn "$V" stop office && expect_ok "start again" cn "$V" start office || return 1
  leak_capture_start up || return 1
  leak_send
  expect_eq "packets outside the tunnel while up" 0 "$(leak_capture_count up)" || { cat "$T/up.txt"; return 1; }
  # The provider dies: the table stays (fail closed).
  kill -KILL "$(record office providerPid)"
  wait_status office disconnected 5 || return 1
  expect_ok "the table after the provider died" c nft list table inet "$table" || return 1
  expect_eq "killSwitch" blocking "$(field office killSwitch)" || return 1
  expect_ok "status" cn "$V" status && expect_contains "status" "blocking: kill switch active, tunnel down" "$OUT" || return 1
  leak_capture_start down || return 1
  leak_send
  expect_eq "packets outside the tunnel with the tunnel down" 0 "$(leak_capture_count down)" || { cat "$T/down.txt"; return 1; }
  expect_run "the underlay with the tunnel down" nonzero c ping -n -c 1 -W 1 198.18.0.1 || return 1
  # A start takes the blocking table over (replaced in one transaction, never lifted).
  expect_ok "start again" cn "$V" start office || return 1
  expect_eq "killSwitch after the restart" on "$(field office killSwitch)" || return 1
  expect_ok "verify after the restart" cn "$V" verify office --probe http://198.19.0.1:8080/ || return 1
  expect_run "the underlay after the restart" nonzero c ping -n -c 1 -W 1 198.18.0.1 || return 1
  # Only stop takes it away.
  expect_ok "stop" cn "$V" stop office || return 1
  expect_run "the table after stop" nonzero c nft list table inet "$table" || return 1
  expect_ok "the underlay after stop" c ping -n -c 1 -W 2 198.18.0.1 || return 1
  [ "$(nft_tables)" = 0 ] || { echo "  a vpnctl table is left"; return 1; }
  nothing_left
}

test_killswitch_supervisor_killed() {
  use office || return 1
  edit_profile office 'p["includeAllNetworks"]=True' || return 1
  expect_ok "start" cn "$V" start office || return 1
  local table; table=vpnctl_$(field office id | tr -d -)
  kill_supervisor office wireguard-go || return 1
  expect_ok "the table after the supervisor was killed" c nft list table inet "$table" || return 1
  expect_run "the underlay" nonzero c ping -n -c 1 -W 1 198.18.0.1 || return 1
  expect_ok "stop" cn "$V" stop office || return 1
  expect_run "the table after stop" nonzero c nft list table inet "$table" || return 1
  expect_ok "the underlay after stop" c ping -n -c 1 -W 2 198.18.0.1 || return 1
  nothing_left
}

test_killswitch_local() {
  use office || return 1
  edit_profile office 'p["includeAllNetworks"]=True; p["excludeLocalNetworks"]=True' || return 1
  expect_ok "start" cn "$V" start office || return 1
  # 198.18.0.0/24 is the client's own subnet: excluded, so it stays reachable.
  expect_ok "the local subnet" c ping -n -c 1 -W 2 198.18.0.1 || return 1
  expect_ok "stop" cn "$V" stop office || return 1
  [ "$(nft_tables)" = 0 ] || { echo "  a vpnctl table is left"; return 1; }
}

test_killswitch_second() {
  use office second || return 1
  edit_profile office 'p["includeAllNetworks"]=True' && edit_profile second 'p["includeAllNetworks"]=True' || return 1
  expect_ok "start office" cn "$V" start office || return 1
  expect_run "start a second kill switch" 1 cn "$V" start second || return 1
  expect_contains "the reason" "profile 'office' has a kill switch in place" "$OUT" || return 1
  expect_field second status disconnected || return 1
  expect_ok "stop office" cn "$V" stop office && expect_ok "start second" cn "$V" start second || return 1
  expect_ok "stop second" cn "$V" stop second || return 1
  [ "$(nft_tables)" = 0 ] || { echo "  a vpnctl table is left"; return 1; }
}

test_enforce_routes() {
  use office || return 1
  # A more specific underlay route to the tunnel's resource: without
  # enforceRoutes it wins, and the resource answers outside the tunnel.
  need c ip route add 198.19.0.1/32 via 198.18.0.1 dev "${LAB}c0" || return 1
  defer c ip route del 198.19.0.1/32 via 198.18.0.1 dev "${LAB}c0"
  expect_ok "start" cn "$V" start office || return 1
  expect_run "verify without enforceRoutes" 12 cn "$V" verify office --probe http://198.19.0.1:8080/ || return 1
  expect_contains "verify" "leaves through ${LAB}c0" "$OUT" || return 1
  expect_ok "stop" cn "$V" stop office || return 1
  edit_profile office 'p["enforceRoutes"]=True' || return 1
  expect_ok "start with enforceRoutes" cn "$V" start office || return 1
  expect_ok "verify with enforceRoutes" cn "$V" verify office --probe http://198.19.0.1:8080/ || return 1
  expect_contains "the rule" "198.19.0.0/24 lookup" "$(c ip rule show)" || return 1
  # The supervisor killed: its rule stays until stop cleans up.
  kill_supervisor office wireguard-go || return 1
  expect_ok "stop after the kill" cn "$V" stop office || return 1
  expect_not_contains "rules after stop" "198.19.0.0/24" "$(c ip rule show)" || return 1
  expect_eq "vpnctl tables left" 0 "$(nft_tables)" || return 1
  nothing_left
}

# The TunnelVision class (CVE-2024-3661; issue 29, item 1): routes out of the
# underlay, without a gateway, as a DHCP server's option 121 pushes them.
# 128.0.0.0/1 once became "a local network" the kill switch let through;
# 198.19.0.64/26 and 2001:2:19::/80 are more specific than the tunnel's own routes.
tv_routes_up() {
  need s ip addr add 198.18.60.1/32 dev "${LAB}s0" && need s ip addr add 198.19.0.77/32 dev "${LAB}s0" \
    && need s ip -6 addr add 2001:2:19::1/128 dev "${LAB}s0" nodad || return 1
  defer s ip -6 addr del 2001:2:19::1/128 dev "${LAB}s0"
  defer s ip addr del 198.19.0.77/32 dev "${LAB}s0"
  defer s ip addr del 198.18.60.1/32 dev "${LAB}s0"
  need c ip route add 128.0.0.0/1 dev "${LAB}c0" && need c ip route add 198.19.0.64/26 dev "${LAB}c0" \
    && need c ip -6 route add 2001:2:19::/80 dev "${LAB}c0" || return 1
  defer c ip -6 route del 2001:2:19::/80 dev "${LAB}c0"
  defer c ip route del 198.19.0.64/26 dev "${LAB}c0"
  defer c ip route del 128.0.0.0/1 dev "${LAB}c0"
}
tv_send() {
  c ping -n -c 2 -i 0.2 -W 1 198.18.60.1 >/dev/null 2>&1
  c ping -n -c 2 -i 0.2 -W 1 198.19.0.77 >/dev/null 2>&1
  c ping -6 -n -c 2 -i 0.2 -W 1 2001:2:19::1 >/dev/null 2>&1
  return 0
}

test_killswitch_tunnelvision() {
  use office && ks_ipv6_up || return 1
  # An IPv6 route in the tunnel too (2001:2:19::/64), so that the IPv6 class is proven.
  edit_profile office 'p["protocol"]["addresses"].append("2001:2:19::2/128"); p["protocol"]["peers"][0]["allowedIPs"].append("2001:2:19::/64")' || return 1
  # Without a kill switch the routes take the traffic, and status says that it leaks.
  expect_ok "start without a kill switch" cn "$V" start office || return 1
  tv_routes_up || return 1
  c ping -6 -n -c 1 -W 2 2001:2:19::1 >/dev/null 2>&1  # neighbour discovery first
  leak_capture_start tv-control || return 1
  tv_send
  local n; n=$(leak_capture_count tv-control)
  [ "$n" != marker-missing ] && [ "$n" -ge 3 ] || { echo "  expected the capture to see the routes' traffic, saw $n packets"; return 1; }
  expect_ok "status" cn "$V" status || return 1
  expect_contains "status" "office: route 198.19.0.64/26 dev ${LAB}c0 takes traffic off the tunnel: it leaks" "$OUT" || return 1
  expect_contains "status" "office: route 2001:2:19::/80 dev ${LAB}c0 takes traffic off the tunnel: it leaks" "$OUT" || return 1
  expect_not_contains "status" "128.0.0.0/1" "$OUT" || return 1
  expect_ok "stop" cn "$V" stop office || return 1
  echo "  # without the kill switch the capture saw $n packets that the pushed routes took off the tunnel"
  # With the kill switch and excludeLocalNetworks: nothing of it leaves, and status names the routes.
  edit_profile office 'p["includeAllNetworks"]=True; p["excludeLocalNetworks"]=True' || return 1
  expect_ok "start with the kill switch" cn "$V" start office || return 1
  local table; table=vpnctl_$(field office id | tr -d -)
  # The supervisor hears of route changes over netlink; another change makes sure it has looked.
  need c ip route add 198.18.61.0/24 dev "${LAB}c0" && defer c ip route del 198.18.61.0/24 dev "${LAB}c0"
  sleep 2
  local rules; rules=$(c nft list table inet "$table")
  for r in 128.0.0.0/1 198.19.0.64/26 198.18.61.0/24 2001:2:19::/80; do
    expect_not_contains "the kill switch's table" "$r" "$rules" || return 1
  done
  expect_contains "the kill switch's table" "198.18.0.0/24" "$rules" || return 1
  expect_contains "the kill switch's table" "2001:2::/64" "$rules" || return 1
  leak_capture_start tv || return 1
  tv_send
  # The local subnet is open (excludeLocalNetworks): the answer to the marker ping leaves, and is not counted.
  n=$(leak_capture_count tv)
  [ "$n" != marker-missing ] || { echo "  the capture missed its marker"; return 1; }
  # Counted by destination: tv_send's three targets. Other packets to the open
  # local subnet (198.18.0.1) are allowed there, e.g. the port-unreachable the
  # client's kernel answers to the server's wireguard-go still sending to the
  # previous tunnel's port (seen once in CI).
  expect_eq "packets the pushed routes took outside the tunnel" 0 \
    "$(grep -cE '> (198\.18\.60\.1|198\.19\.0\.77|2001:2:19::1): ' "$T/tv.txt")" || { cat "$T/tv.txt"; return 1; }
  expect_eq "killSwitch" on "$(field office killSwitch)" || return 1
  expect_contains "bypassRoutes" "198.19.0.64/26 dev ${LAB}c0" "$(field office bypassRoutes)" || return 1
  expect_contains "bypassRoutes" "2001:2:19::/80 dev ${LAB}c0" "$(field office bypassRoutes)" || return 1
  expect_ok "status" cn "$V" status || return 1
  expect_contains "status" "office: route 198.19.0.64/26 dev ${LAB}c0 takes traffic off the tunnel; the kill switch blocks it" "$OUT" || return 1
  expect_contains "the supervisor's log" "route 2001:2:19::/80 dev ${LAB}c0 takes traffic off the tunnel; the kill switch blocks it" \
    "$(cat "$VPNCTL_RUN_DIR"/logs/*.log 2>/dev/null)" || return 1
  expect_ok "the local subnet" c ping -n -c 1 -W 2 198.18.0.1 || return 1
  expect_ok "stop" cn "$V" stop office || return 1
  [ "$(nft_tables)" = 0 ] || { echo "  a vpnctl table is left"; return 1; }
  nothing_left
}

dns_tests() {
  lab_check "dns: applied to the namespace's resolv.conf while up, restored byte for byte by stop" test_dns_applied_restored
  lab_check "dns: supervisor SIGKILLed: the next stop (and the next start) restores resolv.conf" test_dns_supervisor_killed
  lab_check "dns: split DNS (match domains) recorded, with a note on the resolv.conf backend" test_dns_split
  lab_check "dns: two tunnels: the most recent wins, stopping it brings back the other's" test_dns_two_tunnels
  lab_check "dns: openvpn's pushed DNS applied; restored when openvpn dies" test_dns_openvpn_push
  lab_check "dns: verify --dns proves a name resolves through the tunnel's server (and getent agrees); NXDOMAIN is exit 4" test_dns_verify
  if ! command -v nft >/dev/null || ! command -v tcpdump >/dev/null; then
    skip "kill switch tests: nft or tcpdump is not installed (make deps installs them)"
    return 0
  fi
  lab_check "kill switch control: without it, TCP, UDP, ICMP and ICMPv6 outside the tunnel leak (the capture sees them)" test_killswitch_control
  lab_check "kill switch: tunnel traffic passes, nothing else leaves; provider killed: still blocked; stop removes it" test_killswitch
  lab_check "kill switch: supervisor SIGKILLed: still blocked until stop" test_killswitch_supervisor_killed
  lab_check "kill switch with excludeLocalNetworks: the local subnet stays reachable" test_killswitch_local
  lab_check "kill switch vs pushed routes (TunnelVision): on-link and more specific underlay routes, IPv4 and IPv6, open nothing; status names them (blocked, or a leak without it)" test_killswitch_tunnelvision
  lab_check "kill switch: a second profile's is refused while one is in place (they would block each other)" test_killswitch_second
  lab_check "enforceRoutes: the tunnel's route wins over a more specific underlay route (rule + table); stop removes the rule, also after a supervisor kill" test_enforce_routes
  [ "$ovpn_ready" = yes ] && lab_check "kill switch with openvpn (its sockets marked): tunnel passes, underlay blocked, also after openvpn died; disable removes it" test_killswitch_openvpn
  return 0
}

test_killswitch_openvpn() {
  [ "$ovpn_ready" = yes ] || { echo "  the OpenVPN lab is not up"; return 1; }
  use work.ovpn || return 1
  edit_profile work 'p["includeAllNetworks"]=True' || return 1
  expect_ok "start" cn "$V" start work --timeout 15 || return 1
  local table; table=vpnctl_$(field work id | tr -d -)
  expect_ok "verify through the tunnel" cn "$V" verify work --probe http://198.19.9.1:8080/ || return 1
  expect_run "the underlay while up" nonzero c ping -n -c 1 -W 1 198.18.0.1 || return 1
  kill -KILL "$(record work providerPid)"
  wait_status work disconnected 5 || return 1
  expect_ok "the table after openvpn died" c nft list table inet "$table" || return 1
  expect_run "the underlay after openvpn died" nonzero c ping -n -c 1 -W 1 198.18.0.1 || return 1
  # disable lifts a blocking kill switch too (stop is shown with WireGuard).
  expect_ok "disable" cn "$V" disable work || return 1
  expect_run "the table after disable" nonzero c nft list table inet "$table" || return 1
  expect_ok "the underlay after disable" c ping -n -c 1 -W 2 198.18.0.1 || return 1
  expect_eq "killSwitch after disable" "" "$(field work killSwitch)" || return 1
  nothing_left
}
