# Full tunnels as the popular OpenVPN installers set them up (source after
# openvpn.sh and dns.sh; e2e.sh calls fulltunnel_tests once the OpenVPN lab is
# up). The client has a default route through an "ISP" (the server namespace,
# 198.18.0.1), as every real machine has; the server listens on an address
# that is reached only through that default route, and pushes what Nyr's,
# angristan's and PiVPN's servers push: redirect-gateway def1 bypass-dhcp,
# block-outside-dns and its DNS.
#
#   server      198.18.63.1:1196/udp (server lo)   tunnel 198.19.11.0/24 (server .1)
#   far host    198.18.62.1 (server lo): outside every pushed route
#   pushed DNS  198.19.11.1
#
# And a WireGuard server as wg-easy (and PiVPN, Algo) sets one up, with the
# client file it hands out: AllowedIPs = 0.0.0.0/0, ::/0, its DNS, a
# preshared key, the endpoint reached through the default route.
#
#   server      198.18.63.1:51829/udp (server lo)  tunnel 198.19.12.0/24, 2001:2:12::/64 (server .1, ::1)
#   far hosts   198.18.62.1, 2001:2:62::1 (server lo)
#   DNS         198.19.12.1 (nothing answers: the capture shows where the query goes)
#   IPv6 ISP    2001:2::2 (client) -> 2001:2::1 (server), default via 2001:2::1, added by the test

ft_server() {
  need s ip addr add 198.18.63.1/32 dev lo && need s ip addr add 198.18.62.1/32 dev lo || return 1
  OVPN_LOCAL=198.18.63.1 OVPN_PUSH='push "redirect-gateway def1 bypass-dhcp"
push "block-outside-dns"
push "dhcp-option DNS 198.19.11.1"' ovpn_server f 1196 server 198.19.11.0 || return 1
  # The client file as Nyr's installer writes it: no redirect-gateway of its own, and block-outside-dns.
  ovpn_client_file 1196 | sed -e 's/^remote 198.18.0.1 1196$/remote 198.18.63.1 1196/' \
    -e 's/^verb 3$/verb 3\nignore-unknown-option block-outside-dns\nblock-outside-dns/' > "$LAB_DIR/full.ovpn"
}

# ft_capture_start NAME: the client's pings to the far host and its DNS
# queries on the underlay, and the server's own marker ping (see ft_capture_count).
ft_capture_start() {
  ip netns exec "$NS_S" tcpdump -i "${LAB}s0" -n -U --immediate-mode -w "$T/$1.pcap" \
    "(icmp and dst host 198.18.62.1) or (udp dst port 53) or (icmp and src host 198.18.0.1 and icmp[icmptype] == icmp-echo)" 2> "$T/$1.tcpdump" &
  FT_CAP=$!; LAB_PIDS+=($FT_CAP)
  defer stop_pid "$FT_CAP"
  wait_for "tcpdump to listen" 5 grep -q "listening on" "$T/$1.tcpdump"
}
ft_marker_seen() { tcpdump -r "$T/$1.pcap" -n 2>/dev/null | grep -q "198.18.0.1 > 198.18.0.2: ICMP echo request"; }
ft_capture_count() {
  s ping -n -c 1 -W 1 198.18.0.2 >/dev/null 2>&1
  wait_for "the marker ping in the capture" 5 ft_marker_seen "$1" >&2 || { echo marker-missing; return; }
  stop_pid "$FT_CAP"
  tcpdump -r "$T/$1.pcap" -n 2>/dev/null | grep -cE "> 198.18.62.1: ICMP|\.53: "
}

# ft_tunnel_capture NAME IFACE FILTER: what reaches the server through its end of the tunnel.
ft_tunnel_capture() {
  ip netns exec "$NS_S" tcpdump -i "$2" -n -U --immediate-mode -w "$T/$1.pcap" "$3" 2> "$T/$1.tcpdump" &
  FT_TCAP=$!; LAB_PIDS+=($FT_TCAP)
  defer stop_pid "$FT_TCAP"
  wait_for "tcpdump on $2 to listen" 5 grep -q "listening on" "$T/$1.tcpdump"
}
ft_tunnel_seen() { stop_pid "$FT_TCAP"; tcpdump -r "$T/$1.pcap" -n 2>/dev/null; }

test_ovpn_pushed_full_tunnel() {
  dns_guard || return 1
  need c ip route add default via 198.18.0.1 dev "${LAB}c0" || return 1
  defer c ip route del default via 198.18.0.1 dev "${LAB}c0"
  expect_ok "import" cn "$V" import "$LAB_DIR/full.ovpn" --username alice || return 1
  expect_contains "import names what has no effect" "no effect on Linux" "$OUT" || return 1
  printf 's3cret pass\n' | cn "$V" secret set full password >/dev/null || { echo "  secret set failed"; return 1; }
  # Before the tunnel the far host is reached in the clear, through the ISP.
  expect_match "the route before" "via 198.18.0.1 dev ${LAB}c0" "$(c ip route get 198.18.62.1)" || return 1
  ft_capture_start before || return 1
  expect_ok "the far host before" c ping -n -c 1 -W 2 198.18.62.1 || return 1
  local n; n=$(ft_capture_count before)
  [ "$n" != marker-missing ] && [ "$n" -ge 1 ] || { echo "  the capture did not see the clear ping ($n)"; return 1; }
  expect_ok "start" cn "$V" start full --timeout 15 --verbose || return 1
  expect_contains "the full tunnel in start --verbose" "redirect-gateway: full tunnel (IPv4), 198.18.63.1/32 kept outside" "$OUT" || return 1
  expect_contains "the pushed option openvpn only warns about" "block-outside-dns" "$(cat "$VPNCTL_RUN_DIR"/logs/*.log)" || return 1
  local ifn; ifn=$(field full interface)
  expect_match "the far host's route" "dev $ifn" "$(c ip route get 198.18.62.1)" || return 1
  expect_match "the server's route" "198.18.63.1 via 198.18.0.1 dev ${LAB}c0" "$(c ip route get 198.18.63.1)" || return 1
  expect_match "the ISP's default route is kept" "^default via 198.18.0.1 dev ${LAB}c0" "$(c ip route show)" || return 1
  expect_contains "the pushed DNS" "nameserver 198.19.11.1" "$(cat "$RESOLV")" || return 1
  ft_capture_start during || return 1
  ft_tunnel_capture tunnel "${LAB}f" "udp dst port 53 and dst host 198.19.11.1" || return 1
  expect_ok "the far host through the tunnel" c ping -n -c 2 -i 0.2 -W 2 198.18.62.1 || return 1
  # A name looked up as any program does: the query goes to the pushed server, through the tunnel.
  c timeout 4 getent ahostsv4 probe.lab.test >/dev/null 2>&1
  n=$(ft_capture_count during)
  expect_eq "pings to the far host and DNS queries seen in the clear on the underlay" 0 "$n" || return 1
  expect_match "the DNS query reached the pushed server through the tunnel" "> 198.19.11.1.53: .*probe.lab.test" "$(ft_tunnel_seen tunnel)" || return 1
  expect_ok "stop" cn "$V" stop full || return 1
  expect_not_contains "routes after stop" "0.0.0.0/1" "$(c ip route show)" || return 1
  expect_not_contains "routes after stop" "198.18.63.1" "$(c ip route show)" || return 1
  expect_match "the ISP's default route after stop" "^default via 198.18.0.1 dev ${LAB}c0" "$(c ip route show)" || return 1
  expect_not_contains "resolv.conf after stop" "198.19.11.1" "$(cat "$RESOLV")" || return 1
  nothing_left
}

# pull-filter ignore redirect-gateway: the user keeps a full-tunnel server's
# client split; the far host stays on the ISP's route, the pushed DNS still applies.
test_ovpn_pull_filter() {
  dns_guard || return 1
  need c ip route add default via 198.18.0.1 dev "${LAB}c0" || return 1
  defer c ip route del default via 198.18.0.1 dev "${LAB}c0"
  sed 's/^verb 3$/verb 3\npull-filter ignore redirect-gateway/' "$LAB_DIR/full.ovpn" > "$T/split.ovpn"
  expect_ok "import" cn "$V" import "$T/split.ovpn" --username alice || return 1
  printf 's3cret pass\n' | cn "$V" secret set split password >/dev/null || { echo "  secret set failed"; return 1; }
  expect_ok "start" cn "$V" start split --timeout 15 --verbose || return 1
  expect_not_contains "no full tunnel" "redirect-gateway: full tunnel" "$OUT" || return 1
  expect_match "the far host stays on the ISP's route" "via 198.18.0.1 dev ${LAB}c0" "$(c ip route get 198.18.62.1)" || return 1
  expect_not_contains "no halves" "0.0.0.0/1" "$(c ip route show)" || return 1
  expect_contains "the pushed DNS still applies" "nameserver 198.19.11.1" "$(cat "$RESOLV")" || return 1
  expect_ok "stop" cn "$V" stop split || return 1
  nothing_left
}

# openvpn killed under a full tunnel: the halves, the server's host route and
# the DNS go with it; the ISP's default route stays.
test_ovpn_full_provider_dies() {
  dns_guard || return 1
  need c ip route add default via 198.18.0.1 dev "${LAB}c0" || return 1
  defer c ip route del default via 198.18.0.1 dev "${LAB}c0"
  local before; before=$(c ip route show)
  expect_ok "import" cn "$V" import "$LAB_DIR/full.ovpn" --name dies --username alice || return 1
  printf 's3cret pass\n' | cn "$V" secret set dies password >/dev/null || { echo "  secret set failed"; return 1; }
  expect_ok "start" cn "$V" start dies --timeout 15 || return 1
  expect_match "the halves" "^0.0.0.0/1 dev" "$(c ip route show)" || return 1
  kill -KILL "$(record dies providerPid)"
  wait_status dies disconnected 10 || return 1
  expect_field dies stopReason providerFailed || return 1
  expect_eq "routes after openvpn died" "$before" "$(c ip route show)" || return 1
  expect_not_contains "resolv.conf after openvpn died" "198.19.11.1" "$(cat "$RESOLV")" || return 1
  nothing_left
}

# The WireGuard server as wg-easy sets it up (see the top of this file).
ft_wg_server() {
  (umask 077; wg genkey > "$LAB_DIR/gclient.key") || return 1
  wg pubkey < "$LAB_DIR/gclient.key" > "$LAB_DIR/gclient.pub"
  (umask 077; wg genpsk > "$LAB_DIR/gclient.psk") || return 1
  lab_server_peer "${LAB}g" 198.19.12.1 51829 "$(cat "$LAB_DIR/gclient.pub")" 198.19.12.2 || return 1
  need s wg set "${LAB}g" peer "$(cat "$LAB_DIR/gclient.pub")" preshared-key "$LAB_DIR/gclient.psk" \
    allowed-ips 198.19.12.2/32,2001:2:12::2/128 || return 1
  need s ip -6 addr add 2001:2:12::1/64 dev "${LAB}g" nodad || return 1
  # The client file wg-easy hands out (its shape; our own keys and addresses).
  cat > "$LAB_DIR/wg-easy.conf" <<CONF
[Interface]
PrivateKey = $(cat "$LAB_DIR/gclient.key")
Address = 198.19.12.2/24, 2001:2:12::2/64
DNS = 198.19.12.1

[Peer]
PublicKey = $(cat "$LAB_DIR/${LAB}g.pub")
PresharedKey = $(cat "$LAB_DIR/gclient.psk")
AllowedIPs = 0.0.0.0/0, ::/0
PersistentKeepalive = 0
Endpoint = 198.18.63.1:51829
CONF
}

# ft_dual_isp: the client's IPv4 and IPv6 default routes through the "ISP"
# (the server namespace), and the far host's IPv6 address; all undone by defer.
ft_dual_isp() {
  dns_guard || return 1
  need c ip route add default via 198.18.0.1 dev "${LAB}c0" || return 1
  defer c ip route del default via 198.18.0.1 dev "${LAB}c0"
  need c ip -6 addr add 2001:2::2/64 dev "${LAB}c0" nodad || return 1
  defer c ip -6 addr del 2001:2::2/64 dev "${LAB}c0"
  need s ip -6 addr add 2001:2::1/64 dev "${LAB}s0" nodad || return 1
  defer s ip -6 addr del 2001:2::1/64 dev "${LAB}s0"
  need c ip -6 route add default via 2001:2::1 dev "${LAB}c0" || return 1
  defer c ip -6 route del default via 2001:2::1 dev "${LAB}c0"
  need s ip -6 addr add 2001:2:62::1/128 dev lo nodad || return 1
  defer s ip -6 addr del 2001:2:62::1/128 dev lo
  c ping -6 -n -c 1 -W 2 2001:2::1 >/dev/null 2>&1  # neighbour discovery first
}

test_wg_easy_full_tunnel() {
  ft_dual_isp || return 1
  expect_match "IPv6 before: through the ISP" "via 2001:2::1 dev ${LAB}c0" "$(c ip -6 route get 2001:2:62::1)" || return 1
  local before; before=$(c ip route show; c ip -6 route show)
  expect_ok "import" cn "$V" import "$LAB_DIR/wg-easy.conf" --name easy || return 1
  expect_contains "the import summary" "tunnel: full tunnel (IPv4 and IPv6); DNS 198.19.12.1, for every name; kept outside: 198.18.63.1" "$OUT" || return 1
  expect_ok "import --json" cn "$V" import "$LAB_DIR/wg-easy.conf" --name easy --replace --json || return 1
  expect_contains "the summary as data" '"tunnel":"full"' "$OUT" || return 1
  expect_ok "start" cn "$V" start easy --timeout 10 || return 1
  local ifn; ifn=$(field easy interface)
  expect_match "IPv4 through the tunnel" "dev $ifn" "$(c ip route get 198.18.62.1)" || return 1
  expect_match "IPv6 follows ::/0" "dev $ifn" "$(c ip -6 route get 2001:2:62::1)" || return 1
  expect_match "the endpoint stays on the underlay" "198.18.63.1 via 198.18.0.1 dev ${LAB}c0" "$(c ip route get 198.18.63.1)" || return 1
  expect_match "the ISP's default routes are kept" "^default via 2001:2::1 dev ${LAB}c0" "$(c ip -6 route show)" || return 1
  expect_contains "the DNS" "nameserver 198.19.12.1" "$(cat "$RESOLV")" || return 1
  # On the underlay: nothing from the client but WireGuard's UDP to the endpoint
  # (and the reply to the server's marker ping).
  ip netns exec "$NS_S" tcpdump -i "${LAB}s0" -n -U --immediate-mode -w "$T/wg-under.pcap" \
    "(src host 198.18.0.2 and not (udp dst port 51829) and not icmp[icmptype] == icmp-echoreply and not icmp[icmptype] == icmp-unreach) or (ip6 and src host 2001:2::2 and (udp or tcp or (icmp6 and ip6[40] == 128))) or (icmp and src host 198.18.0.1 and icmp[icmptype] == icmp-echo)" \
    2> "$T/wg-under.tcpdump" &
  FT_CAP=$!; LAB_PIDS+=($FT_CAP); defer stop_pid "$FT_CAP"
  wait_for "tcpdump to listen" 5 grep -q "listening on" "$T/wg-under.tcpdump" || return 1
  ft_tunnel_capture wg-tunnel "${LAB}g" "(icmp and dst host 198.18.62.1) or (icmp6 and dst host 2001:2:62::1) or (udp dst port 53 and dst host 198.19.12.1)" || return 1
  expect_ok "the far host over IPv4" c ping -n -c 2 -i 0.2 -W 2 198.18.62.1 || return 1
  expect_ok "the far host over IPv6" c ping -6 -n -c 2 -i 0.2 -W 2 2001:2:62::1 || return 1
  c timeout 4 getent ahostsv4 probe.lab.test >/dev/null 2>&1
  s ping -n -c 1 -W 1 198.18.0.2 >/dev/null 2>&1
  wait_for "the marker ping in the capture" 5 ft_marker_seen wg-under || return 1
  stop_pid "$FT_CAP"
  local leaks; leaks=$(tcpdump -r "$T/wg-under.pcap" -n 2>/dev/null | grep -v "198.18.0.1 > 198.18.0.2: ICMP echo request")
  expect_eq "client packets on the underlay other than WireGuard's" "" "$leaks" || return 1
  local inside; inside=$(ft_tunnel_seen wg-tunnel)
  expect_contains "IPv4 ping inside the tunnel" "198.19.12.2 > 198.18.62.1: ICMP echo request" "$inside" || return 1
  expect_contains "IPv6 ping inside the tunnel" "2001:2:12::2 > 2001:2:62::1: ICMP6, echo request" "$inside" || return 1
  expect_match "the DNS query inside the tunnel" "198.19.12.2.[0-9]+ > 198.19.12.1.53: .*probe.lab.test" "$inside" || return 1
  expect_ok "stop" cn "$V" stop easy || return 1
  expect_eq "routes after stop" "$before" "$(c ip route show; c ip -6 route show)" || return 1
  expect_not_contains "resolv.conf after stop" "198.19.12.1" "$(cat "$RESOLV")" || return 1
  nothing_left
}

fulltunnel_tests() {
  if ! command -v tcpdump >/dev/null; then skip "full-tunnel tests: tcpdump is not installed (make deps installs it)"; return 0; fi
  ft_server || { fail "the full-tunnel OpenVPN server did not come up (see above)"; return 0; }
  lab_check "openvpn full tunnel as installers push it (redirect-gateway def1, block-outside-dns) over a default route: far host and DNS through the tunnel (captures), server kept outside, all undone" test_ovpn_pushed_full_tunnel
  lab_check "openvpn pull-filter ignore redirect-gateway keeps a full-tunnel server's client split" test_ovpn_pull_filter
  lab_check "openvpn killed under a full tunnel: halves, server route and DNS undone, the default route kept" test_ovpn_full_provider_dies
  ft_wg_server || { fail "the wg-easy-shaped WireGuard server did not come up (see above)"; return 0; }
  lab_check "wg-easy's client file (0.0.0.0/0, ::/0, DNS, psk) over IPv4 and IPv6 default routes: both families and DNS through the tunnel, only WireGuard on the underlay (captures), all undone" test_wg_easy_full_tunnel
  apps_tests
}
