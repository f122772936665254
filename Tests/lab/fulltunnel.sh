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

ft_server() {
  need s ip addr add 198.18.63.1/32 dev lo && need s ip addr add 198.18.62.1/32 dev lo || return 1
  OVPN_LOCAL=198.18.63.1 OVPN_PUSH='push "redirect-gateway def1 bypass-dhcp"
push "block-outside-dns"
push "dhcp-option DNS 198.19.11.1"' ovpn_server f 1196 server 198.19.11.0 || return 1
  # The client file as Nyr's installer writes it: no redirect-gateway of its own, and block-outside-dns.
  ovpn_client_file 1196 | sed -e 's/^remote 198.18.0.1 1196$/remote 198.18.63.1 1196/' \
    -e 's/^verb 3$/verb 3\nignore-unknown-option block-outside-dns\nblock-outside-dns/' > "$LAB_DIR/full.ovpn"
}

# ft_capture_start NAME: the client's pings to the far host on the underlay,
# and the server's own marker ping (see ft_capture_count).
ft_capture_start() {
  ip netns exec "$NS_S" tcpdump -i "${LAB}s0" -n -U --immediate-mode -w "$T/$1.pcap" \
    "(icmp and dst host 198.18.62.1) or (icmp and src host 198.18.0.1 and icmp[icmptype] == icmp-echo)" 2> "$T/$1.tcpdump" &
  FT_CAP=$!; LAB_PIDS+=($FT_CAP)
  defer stop_pid "$FT_CAP"
  wait_for "tcpdump to listen" 5 grep -q "listening on" "$T/$1.tcpdump"
}
ft_marker_seen() { tcpdump -r "$T/$1.pcap" -n 2>/dev/null | grep -q "198.18.0.1 > 198.18.0.2: ICMP echo request"; }
ft_capture_count() {
  s ping -n -c 1 -W 1 198.18.0.2 >/dev/null 2>&1
  wait_for "the marker ping in the capture" 5 ft_marker_seen "$1" >&2 || { echo marker-missing; return; }
  stop_pid "$FT_CAP"
  tcpdump -r "$T/$1.pcap" -n 2>/dev/null | grep -c "> 198.18.62.1: ICMP"
}

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
  expect_ok "the far host through the tunnel" c ping -n -c 2 -i 0.2 -W 2 198.18.62.1 || return 1
  n=$(ft_capture_count during)
  expect_eq "pings to the far host seen in the clear on the underlay" 0 "$n" || return 1
  expect_ok "stop" cn "$V" stop full || return 1
  expect_not_contains "routes after stop" "0.0.0.0/1" "$(c ip route show)" || return 1
  expect_not_contains "routes after stop" "198.18.63.1" "$(c ip route show)" || return 1
  expect_match "the ISP's default route after stop" "^default via 198.18.0.1 dev ${LAB}c0" "$(c ip route show)" || return 1
  expect_not_contains "resolv.conf after stop" "198.19.11.1" "$(cat "$RESOLV")" || return 1
  nothing_left
}

fulltunnel_tests() {
  if ! command -v tcpdump >/dev/null; then skip "full-tunnel tests: tcpdump is not installed (make deps installs it)"; return 0; fi
  ft_server || { fail "the full-tunnel OpenVPN server did not come up (see above)"; return 0; }
  lab_check "openvpn full tunnel as installers push it (redirect-gateway def1, block-outside-dns) over a default route: far host through the tunnel (capture), server kept outside, DNS, all undone" test_ovpn_pushed_full_tunnel
}
