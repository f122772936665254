#!/usr/bin/env bash
# The host lab (`make test-host`): vpnctl installed from its .deb on a booted
# Debian 12 with systemd, systemd-resolved, D-Bus and NetworkManager
# (Tests/host/host.sh), tunnels to the lab's real servers (Tests/lab/lab.sh).
# Usage: run.sh path/to/vpnctl.deb
# TEST_ONLY="word ..." runs only the tests whose function name or title
# contains one of the words (the container is still booted in full).
set -uo pipefail
DEB=$(realpath "${1:?usage: run.sh path/to/vpnctl.deb}")
HERE=$(cd "$(dirname "$0")" && pwd)
LAB=vh$(( $$ % 100000 ))
source "$HERE/../lib/testlib.sh"
source "$HERE/../lab/lab.sh"
source "$HERE/../lab/openvpn.sh"
source "$HERE/../lab/ikev2.sh"
source "$HERE/host.sh"

why=$(lab_cannot_run)
[ -z "$why" ] && why=$(host_cannot_run)
if [ -n "$why" ]; then
  skip "every host lab test: $why"
  summary host
  exit $?
fi

HU=${LAB}u   # the user in the profiles' policies, made inside the container
host_teardown() { host_down; lab_down; }
trap host_teardown EXIT

t0=$(date +%s)
if ! lab_up; then fail "the lab did not come up (see above for the step that broke)"; summary host; exit 1; fi
if ! ovpn_up; then fail "the OpenVPN lab did not come up"; summary host; exit 1; fi
ike_why=$(ike_cannot_run)
if [ -n "$ike_why" ]; then skip "IKEv2 in the host lab: $ike_why"
elif ! ike_up; then fail "the IKEv2 lab did not come up"; summary host; exit 1; fi
if ! host_prepare "$DEB"; then fail "the host lab's root file system could not be made"; summary host; exit 1; fi
t_root=$(date +%s)

# Installed as an administrator would: dpkg -i of the .deb; a user of the
# machine; NetworkManager managing the lab's ethernet with its static address.
host_install() {
  host_offline dpkg -i /var/tmp/vpnctl.deb > "$LAB_DIR/host/dpkg.log" || { tail -5 "$LAB_DIR/host/dpkg.log" | sed 's/^/  dpkg | /'; return 1; }
  host_offline useradd --create-home --shell /bin/sh "$HU" > /dev/null || return 1
  install -d -m 0700 "$HOST_MERGED/etc/NetworkManager/system-connections"
  cat > "$HOST_MERGED/etc/NetworkManager/system-connections/lab.nmconnection" <<EOF
[connection]
id=lab
type=ethernet
interface-name=${LAB}c0
autoconnect=true

[ipv4]
method=manual
address1=198.18.0.2/24,198.18.0.1
dns=198.18.0.1

[ipv6]
method=ignore
EOF
  chmod 0600 "$HOST_MERGED/etc/NetworkManager/system-connections/lab.nmconnection"
  cp "$LAB_DIR/office.conf" "$HOST_MERGED/root/office.conf"
  cp "$LAB_DIR/work.ovpn" "$HOST_MERGED/root/work.ovpn"
}
if ! host_install; then fail "vpnctl's .deb did not install in the container"; summary host; exit 1; fi
# As on a real host, the ethernet comes up unconfigured and NetworkManager
# configures it at boot (address, default route via 198.18.0.1, DNS).
c ip addr flush dev "${LAB}c0"
if ! host_boot; then fail "the container did not boot"; summary host; exit 1; fi
t_boot=$(date +%s)
echo "  host lab up: root file system $((t_root - t0)) s, install and boot $((t_boot - t_root)) s"

# vx ARGS...: vpnctl in the container, as root.
vx() { hx vpnctl "$@"; }
# hfield PROFILE KEY: one field of `vpnctl status PROFILE --json`, as root in the container.
hfield() {
  vx status "$1" --json | python3 -c 'import json,sys; v=json.load(sys.stdin)["profiles"][0]
for k in sys.argv[1].split("."): v = (v or {}).get(k)
print("" if v is None else v)' "$2"
}
# hrecord PROFILE KEY: one field of the profile's runtime record (the pids vpnctl keeps there).
hrecord() {
  hx cat "/run/vpnctl/$(hfield "$1" id).json" | python3 -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1]) or "")' "$2"
}
host_unit_says() { hx journalctl -u "$1" --no-pager -o cat | grep -qF "$2"; }
# host_agent_sigkill: SIGKILL of the agent's main process only (its workers and
# the supervisors it started stay), then systemd's restart of it (Restart=on-failure).
host_agent_sigkill() {
  local main; main=$(hx systemctl show -P MainPID vpnctl-agent.service)
  hx systemctl kill --kill-whom=main -s KILL vpnctl-agent.service || return 1
  wait_for "systemd to restart the agent (pid $main SIGKILLed)" 15 host_agent_replaced "$main"
}
host_agent_replaced() {
  [ "$(hx systemctl show -P MainPID vpnctl-agent.service)" != "$1" ] && [ "$(hx systemctl is-active vpnctl-agent.service)" = active ]
}
host_status_is() { [ "$(hfield "$1" status)" = "$2" ]; }
# host_edit PROFILE SED-SCRIPT: the profile's JSON changed by vpnctl edit, with an editor of sed.
host_edit() {
  printf '#!/bin/sh\nexec sed -i %q "$1"\n' "$2" > "$HOST_MERGED/usr/local/bin/lab-editor"
  chmod 0755 "$HOST_MERGED/usr/local/bin/lab-editor"
  hx env EDITOR=lab-editor vpnctl edit "$1" > /dev/null
}
# host_policy PROFILE USER: the profile's policy names USER.
host_policy() { host_edit "$1" '/^  "policy" : {/,/^  },\{0,1\}$/c\  "policy" : { "users" : [ "'"$2"'" ] },'; }

# host_dns_up ADDR DEV ANSWER: a DNS server in the server namespace on ADDR
# (added to DEV): names under corp.example are ANSWER, others do not exist.
# Each query it gets is logged in $LAB_DIR/dns-ADDR.log.
host_dns_up() {
  s ip addr add "$1/32" dev "$2" 2>/dev/null
  ip netns exec "$NS_S" python3 "$HERE/../lab/dns-server.py" "$1" "$3" > "$LAB_DIR/dns-$1.log" 2>&1 &
  LAB_PIDS+=($!)
  wait_for "the lab's DNS server on $1" 5 grep -q ready "$LAB_DIR/dns-$1.log"
}
# The tunnel's (198.19.0.53, answers 198.19.0.1) and the underlay's, which
# NetworkManager gives the lab's ethernet (198.18.0.1, answers 198.18.0.99).
host_dns_up 198.19.0.53 "${LAB}w" 198.19.0.1 && host_dns_up 198.18.0.1 "${LAB}s0" 198.18.0.99 \
  || fail "the lab's DNS servers did not start"

# ---- 1. socket activation and the agent's sandbox ---------------------------
test_host_socket_activation() {
  sed 's|^Address = \(.*\)$|Address = \1\nDNS = 198.19.0.53, corp.example|' "$HOST_MERGED/root/office.conf" > "$HOST_MERGED/root/dnsoffice.conf"
  expect_ok "import" vx import /root/dnsoffice.conf --name office || return 1
  defer vx remove office
  expect_ok "policy" host_policy office "$HU" || return 1
  expect_contains "the host's default route (NetworkManager's)" "default via 198.18.0.1 dev ${LAB}c0" "$(hx ip route show default)" || return 1
  expect_eq "vpnctl-agent.socket after install and boot" active "$(hx systemctl is-active vpnctl-agent.socket)" || return 1
  expect_eq "vpnctl-agent.service before the first request" inactive "$(hx systemctl is-active vpnctl-agent.service)" || return 1
  expect_ok "start by $HU" hu "$HU" vpnctl start office || return 1
  expect_eq "vpnctl-agent.service after the request" active "$(hx systemctl is-active vpnctl-agent.service)" || return 1
  echo "  systemd-analyze security vpnctl-agent.service: $(hx systemd-analyze security --no-pager vpnctl-agent.service 2>/dev/null | tail -n 1 | sed 's/^.*Overall exposure level for [^:]*: //')"
  expect_eq "status" connected "$(hfield office status)" || return 1
  local ifn; ifn=$(hfield office interface)
  expect_ok "a ping through the tunnel, by $HU" hu "$HU" ping -c 1 -W 2 198.19.0.1 || return 1
  expect_eq "the resolver backend" systemd-resolved "$(hfield office resolver.backend)" || return 1
  expect_ok "resolvectl dns $ifn" hx resolvectl dns "$ifn" || return 1
  expect_contains "resolvectl dns $ifn" "198.19.0.53" "$OUT" || return 1
  expect_ok "resolvectl query of a tunnel-only name" hx resolvectl query --cache=no intranet.corp.example || return 1
  expect_contains "resolvectl query" "198.19.0.1" "$OUT" || return 1
  expect_ok "stop by $HU" hu "$HU" vpnctl stop office || return 1
  expect_eq "status after stop" disconnected "$(hfield office status)" || return 1
  expect_eq "links named utun after stop" "" "$(hx ip -o link show | grep -o 'utun[0-9]*' || true)" || return 1
  expect_eq "/etc/resolv.conf after stop" "../run/systemd/resolve/stub-resolv.conf" "$(hx readlink /etc/resolv.conf)"
}
check "socket activation: a user's start brings up the agent, a WireGuard tunnel with DNS on resolved; stop undoes it" test_host_socket_activation

# ---- 1b. D-Bus activation of org.vpnctl.VPN1 --------------------------------
test_host_dbus_activation() {
  expect_ok "import" vx import /root/office.conf --name office || return 1
  defer vx remove office
  expect_ok "policy" host_policy office "$HU" || return 1
  local p; p=/org/vpnctl/VPN1/profile/$(hfield office id | tr -d -)
  expect_eq "vpnctl-dbus.service before the first call" inactive "$(hx systemctl is-active vpnctl-dbus.service)" || return 1
  expect_ok "ListProfiles by $HU on the system bus" hu "$HU" busctl call org.vpnctl.VPN1 /org/vpnctl/VPN1 org.vpnctl.VPN1.Manager ListProfiles \
    || { hx journalctl --no-pager -n 30 -o cat -u vpnctl-dbus.service -u dbus.service | sed 's/^/  journal | /'; return 1; }
  expect_eq "ListProfiles" "ao 1 \"$p\"" "$OUT" || return 1
  expect_eq "vpnctl-dbus.service after the call (activated)" active "$(hx systemctl is-active vpnctl-dbus.service)" || return 1
  expect_ok "Start by $HU" hu "$HU" busctl call org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Start 'a{sv}' 0 || return 1
  wait_for "office to connect" 15 host_status_is office connected || return 1
  expect_ok "a ping through the tunnel D-Bus started" hx ping -c 1 -W 2 198.19.0.1 || return 1
  expect_ok "Status by $HU" hu "$HU" busctl get-property org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Status || return 1
  expect_eq "Status" '(us) 3 "connected"' "$OUT" || return 1
  # The tunnel belongs to its supervisor, not to the service's unit.
  expect_ok "systemctl restart vpnctl-dbus" hx systemctl restart vpnctl-dbus.service || return 1
  expect_eq "status after the service's restart" connected "$(hfield office status)" || return 1
  expect_ok "Stop by $HU" hu "$HU" busctl call org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Stop || return 1
  wait_for "office to disconnect" 10 host_status_is office disconnected || return 1
  expect_eq "links named utun after Stop" "" "$(hx ip -o link show | grep -o 'utun[0-9]*' || true)" || return 1
  expect_ok "the installed interfaces" hx busctl introspect org.vpnctl.VPN1 /org/vpnctl/VPN1 || return 1
  expect_contains "introspection" "GetManagedObjects" "$OUT" || return 1
  echo "  systemd-analyze security vpnctl-dbus.service: $(hx systemd-analyze security --no-pager vpnctl-dbus.service 2>/dev/null | tail -n 1 | sed 's/^.*Overall exposure level for [^:]*: //')"
}
check "D-Bus activation: a user's call starts vpnctl-dbus.service, which starts and stops a tunnel in its sandbox; a restart of it leaves the tunnel" test_host_dbus_activation

# polkit, for real (polkitd, activated by the bus): a rule of the
# administrator's grants what the profile's policy does not; a rule that
# wants authentication is InteractiveAuthorizationRequired for a caller that
# allows none; what no rule grants stays refused as the policy says.
test_host_polkit() {
  expect_ok "import" vx import /root/office.conf --name office || return 1
  defer vx remove office
  local p; p=/org/vpnctl/VPN1/profile/$(hfield office id | tr -d -)
  local rules=$HOST_MERGED/etc/polkit-1/rules.d/50-vpnctl-lab.rules
  expect_run "Start by $HU before any rule (the profile's policy names nobody)" nonzero \
    hu "$HU" busctl call org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Start 'a{sv}' 0 || return 1
  expect_contains "the policy's refusal" "no profile" "$OUT" || return 1
  mkdir -p "$(dirname "$rules")"
  printf '%s\n' 'polkit.addRule(function(action, subject) {' \
    '  if (action.id != "org.vpnctl.control" || subject.user != "'"$HU"'" || action.lookup("profile") != "office") return polkit.Result.NOT_HANDLED;' \
    '  var op = action.lookup("operation");' \
    '  if (op == "start" || op == "stop" || op == "status") return polkit.Result.YES;' \
    '  if (op == "toggle") return polkit.Result.AUTH_ADMIN;' \
    '  return polkit.Result.NOT_HANDLED;' \
    '});' > "$rules"
  defer rm -f "$rules"
  # A running polkitd reads rules.d again when told to (restarted).
  hx systemctl try-restart polkit.service
  expect_ok "Start by $HU under the rule" hu "$HU" busctl call org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Start 'a{sv}' 0 \
    || { hx journalctl --no-pager -n 30 -o cat -u vpnctl-dbus.service -u polkit.service | sed 's/^/  journal | /'; return 1; }
  wait_for "office to connect" 15 host_status_is office connected || return 1
  expect_ok "a ping through the tunnel polkit let $HU start" hx ping -c 1 -W 2 198.19.0.1 || return 1
  expect_ok "Status by $HU (operation status under the rule)" hu "$HU" busctl get-property org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Status || return 1
  expect_eq "Status" '(us) 3 "connected"' "$OUT" || return 1
  expect_ok "the service's log" hx journalctl --no-pager -o cat -u vpnctl-dbus.service || return 1
  expect_contains "the grant, logged" "polkit authorizes user '$HU' to start 'office' (org.vpnctl.control)" "$OUT" || return 1
  # A connection polkit let read the status is told of its transitions.
  install -D -m 0755 "$HERE/../lab/dbus-listen.py" "$HOST_MERGED/usr/local/bin/vpnctl-lab-listen"
  # (It ends at the change to disconnected, or after 20 s.)
  hu "$HU" vpnctl-lab-listen unix:path=/run/dbus/system_bus_socket 20 "$p" disconnected > "$LAB_DIR/polkit-listen.out" 2>&1 &
  wait_for "the listener of $HU" 10 grep -q listening "$LAB_DIR/polkit-listen.out" || { cat "$LAB_DIR/polkit-listen.out"; return 1; }
  expect_run "Toggle by $HU: the rule wants authentication, the call allows none" nonzero \
    hu "$HU" dbus-send --system --print-reply --dest=org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile.Toggle || return 1
  expect_contains "the error" "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired" "$OUT" || return 1
  expect_run "Verify by $HU (no rule for verify)" nonzero hu "$HU" busctl call org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Verify s 198.19.0.1 || return 1
  expect_contains "the policy's refusal" "no profile" "$OUT" || return 1
  expect_ok "ListProfiles by $HU (polkit grants actions, not the list)" hu "$HU" busctl call org.vpnctl.VPN1 /org/vpnctl/VPN1 org.vpnctl.VPN1.Manager ListProfiles || return 1
  expect_eq "ListProfiles" "ao 0" "$OUT" || return 1
  expect_ok "Stop by $HU under the rule" hu "$HU" busctl call org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Stop || return 1
  wait_for "office to disconnect" 10 host_status_is office disconnected || return 1
  wait_for "PropertiesChanged to $HU's listener (polkit's status grant)" 10 grep -q "$p disconnected" "$LAB_DIR/polkit-listen.out" \
    || { sed 's/^/  listener | /' "$LAB_DIR/polkit-listen.out"; return 1; }
  rm -f "$rules"; hx systemctl try-restart polkit.service
  expect_run "Start by $HU once the rule is gone" nonzero hu "$HU" busctl call org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Start 'a{sv}' 0 || return 1
}
check "polkit: an administrator's rule lets a user the profile's policy does not name start, read (and be signalled) and stop a tunnel over D-Bus; a rule that wants authentication, for a call that allows none, is refused by name; without a rule, the policy's refusal" test_host_polkit

# The same through the agent's sandbox for OpenVPN and IKEv2: a user's start,
# the pushed route and DNS, stop.
test_host_agent_providers() {
  expect_ok "import work.ovpn" vx import /root/work.ovpn --name work --username alice || return 1
  defer vx remove work
  printf 's3cret pass\n' | hx vpnctl secret set work password > /dev/null || { echo "  secret set work password failed"; return 1; }
  expect_ok "policy" host_policy work "$HU" || return 1
  expect_ok "openvpn: start by $HU" hu "$HU" vpnctl start work --timeout 20 || { hx journalctl -u vpnctl-agent --no-pager -n 20 | sed 's/^/  journal | /'; return 1; }
  expect_eq "openvpn: status" connected "$(hfield work status)" || return 1
  expect_ok "openvpn: a ping to the pushed route's resource" hu "$HU" ping -c 1 -W 2 198.19.9.1 || return 1
  expect_eq "openvpn: the pushed DNS on resolved" systemd-resolved "$(hfield work resolver.backend)" || return 1
  expect_ok "openvpn: resolvectl dns" hx resolvectl dns "$(hfield work interface)" || return 1
  expect_contains "openvpn: resolvectl dns" "198.19.8.1" "$OUT" || return 1
  expect_ok "openvpn: stop by $HU" hu "$HU" vpnctl stop work || return 1
  wait_for "openvpn to end after stop" 5 host_no_process openvpn || return 1
  [ -n "$ike_why" ] && { echo "  (IKEv2 not tried: $ike_why)"; return 0; }
  local charons; charons=$(host_charons)
  printf '%s' "$IKE_PSK" | hx vpnctl create ike ikev2 --server 198.18.0.1 --remote-id vpn.lab.test --local-id alice@lab.test --auth psk > /dev/null \
    || { echo "  create ike failed"; return 1; }
  defer vx remove ike
  expect_ok "policy" host_policy ike "$HU" || return 1
  expect_ok "ikev2: start by $HU" hu "$HU" vpnctl start ike --timeout 20 || { hx journalctl -u vpnctl-agent --no-pager -n 20 | sed 's/^/  journal | /'; return 1; }
  expect_eq "ikev2: status" connected "$(hfield ike status)" || return 1
  expect_ne "vpnctl's own charon beside the system's ($charons)" "$charons" "$(host_charons)" || return 1
  expect_ok "ikev2: a ping through the tunnel" hu "$HU" ping -c 1 -W 2 198.19.21.1 || return 1
  expect_ok "ikev2: stop by $HU" hu "$HU" vpnctl stop ike || return 1
  # The system's own charon (strongswan-starter's ipsec.service runs at boot)
  # stays; vpnctl's private one goes.
  wait_for "vpnctl's charon to end after stop" 5 host_same_charons "$charons" \
    || { hx ps -eo pid,ppid,etime,args | grep '[c]haron' | sed 's/^/  ps | /'; return 1; }
}
host_charons() { hx ps -eo pid=,comm= | awk '$2 == "charon" { print $1 }' | sort | tr '\n' ' '; }
host_same_charons() { [ "$(host_charons)" = "$1" ]; }
host_no_process() { ! hx ps -eo comm= | grep -qx "$1"; }
check "socket activation: OpenVPN and IKEv2 tunnels started by a user through the sandboxed agent, DNS on resolved, stop" test_host_agent_providers

# ---- 4. systemd-resolved, for real: a full tunnel takes every query ---------
# capture_dns NAME: tcpdump on the server's underlay veth, DNS only, in the background.
capture_dns() {
  ip netns exec "$NS_S" tcpdump -n -U --immediate-mode -i "${LAB}s0" -w "$LAB_DIR/$1.pcap" 'udp port 53 or tcp port 53' > "$LAB_DIR/$1.tcpdump" 2>&1 &
  CAP_PID=$!; LAB_PIDS+=($CAP_PID)
  wait_for "tcpdump on ${LAB}s0" 5 grep -q "listening on" "$LAB_DIR/$1.tcpdump"
}
capture_count() {
  stop_pid "$CAP_PID"
  tcpdump -n -r "$LAB_DIR/$1.pcap" 2>/dev/null | wc -l
}
test_host_resolved_full_tunnel() {
  sed -e 's|^Address = \(.*\)$|Address = \1\nDNS = 198.19.0.53, corp.example|' -e 's|^AllowedIPs = .*|AllowedIPs = 0.0.0.0/0|' \
    "$HOST_MERGED/root/office.conf" > "$HOST_MERGED/root/full.conf"
  expect_ok "import" vx import /root/full.conf --name full || return 1
  defer vx remove full
  expect_ok "kill switch on" host_edit full '/^  "id" : /a\  "includeAllNetworks" : true,' || return 1
  expect_ok "policy" host_policy full "$HU" || return 1
  # Before: the underlay's DNS answers, and the capture sees it.
  capture_dns before
  expect_ok "resolvectl query before the tunnel" hx resolvectl query --cache=no a.corp.example || return 1
  expect_contains "the underlay's answer" "198.18.0.99" "$OUT" || return 1
  local n; n=$(capture_count before)
  [ "$n" -ge 2 ] || { echo "  the capture on ${LAB}s0 saw $n DNS packets before the tunnel: it cannot prove anything"; sed "s/^/  tcpdump | /" "$LAB_DIR/before.tcpdump"; tail -3 "$LAB_DIR/dns-198.18.0.1.log"; return 1; }
  # Started and stopped by the user, through the sandboxed agent (nft inside its unit).
  expect_ok "start by $HU" hu "$HU" vpnctl start full || return 1
  local ifn; ifn=$(hfield full interface)
  expect_ok "resolvectl domain $ifn" hx resolvectl domain "$ifn" || return 1
  expect_contains "the tunnel's routing domain" "~." "$OUT" || return 1
  expect_ok "resolvectl default-route $ifn" hx resolvectl default-route "$ifn" || return 1
  expect_contains "the tunnel is resolved's default route" "yes" "$OUT" || return 1
  expect_ok "nft list tables" hx nft list tables || return 1
  expect_contains "the kill switch's table" "inet vpnctl_" "$OUT" || return 1
  capture_dns during
  expect_ok "resolvectl query through the full tunnel" hx resolvectl query --cache=no b.corp.example || return 1
  expect_contains "the tunnel's answer" "198.19.0.1" "$OUT" || return 1
  expect_run "a name that does not exist" nonzero hx resolvectl query --cache=no nosuch.example.org || return 1
  n=$(capture_count during)
  expect_eq "DNS packets on the underlay during the full tunnel" 0 "$n" || return 1
  echo "  capture on ${LAB}s0: DNS packets before the tunnel $(tcpdump -n -r "$LAB_DIR/before.pcap" 2>/dev/null | wc -l), during 0"
  expect_ok "stop by $HU" hu "$HU" vpnctl stop full || return 1
  expect_run "resolvectl dns $ifn after stop" nonzero hx resolvectl dns "$ifn" || return 1
  expect_eq "nft tables after stop" "" "$(hx nft list tables | grep vpnctl_ || true)" || return 1
  expect_ok "resolvectl query after stop" hx resolvectl query --cache=no c.corp.example || return 1
  expect_contains "the underlay's answer again" "198.18.0.99" "$OUT" || return 1
  expect_eq "/etc/resolv.conf after stop" "../run/systemd/resolve/stub-resolv.conf" "$(hx readlink /etc/resolv.conf)"
}
check "resolved: a user's full tunnel with its kill switch (through the agent) gets ~. and default-route, no query leaves through the underlay (capture), stop reverts the link" test_host_resolved_full_tunnel

# ---- 2. the agent restarted or killed: tunnels and status stay --------------
test_host_agent_restart() {
  expect_ok "import" vx import /root/office.conf --name office || return 1
  defer vx remove office
  expect_ok "policy" host_policy office "$HU" || return 1
  expect_ok "start by $HU" hu "$HU" vpnctl start office || return 1
  defer vx stop office
  local sup; sup=$(hrecord office supervisorPid)
  expect_nonempty "the supervisor's pid" "$sup" || return 1
  expect_ok "systemctl restart vpnctl-agent" hx systemctl restart vpnctl-agent.service || return 1
  expect_eq "status after the restart, by $HU" connected "$(hu "$HU" vpnctl status office --json | json_get profiles.0.status)" || return 1
  expect_ok "a ping after the restart" hu "$HU" ping -c 1 -W 2 198.19.0.1 || return 1
  expect_ok "SIGKILL of the agent, restarted by systemd (Restart=on-failure)" host_agent_sigkill || return 1
  expect_eq "status after SIGKILL of the agent, by $HU" connected "$(hu "$HU" vpnctl status office --json | json_get profiles.0.status)" || return 1
  expect_eq "the same supervisor" "$sup" "$(hrecord office supervisorPid)" || return 1
  expect_ok "a ping after the agent's SIGKILL" hu "$HU" ping -c 1 -W 2 198.19.0.1 || return 1
  expect_ok "stop by $HU through the new agent" hu "$HU" vpnctl stop office
}
check "systemctl restart vpnctl-agent and a SIGKILL of it keep the tunnel, its supervisor and its status" test_host_agent_restart

# On-demand goes on after the agent is killed: the rules started the tunnel,
# the restarted agent keeps it (one supervisor) and still acts on the rules.
test_host_ondemand_after_agent_kill() {
  expect_ok "import" vx import /root/office.conf --name od || return 1
  defer vx remove od
  expect_ok "on-demand rules" host_edit od '/^  "onDemand" : {/,/^  },\{0,1\}$/c\  "onDemand" : { "enabled" : false, "rules" : [ { "action" : "connect", "interfaceType" : "ethernet" } ] },' || return 1
  # (on-demand acts on the primary network: NetworkManager's default route)
  expect_ok "systemctl start vpnctl-agent" hx systemctl start vpnctl-agent.service || return 1
  expect_ok "ondemand enable od" vx ondemand enable od || return 1
  defer vx ondemand disable od
  wait_for "the rules to start od" 20 host_status_is od connected || { hx journalctl -u vpnctl-agent --no-pager -n 10 | sed 's/^/  journal | /'; return 1; }
  local sup; sup=$(hrecord od supervisorPid)
  host_agent_sigkill || return 1
  expect_eq "od after the agent's SIGKILL" connected "$(hfield od status)" || return 1
  expect_eq "the same supervisor (no second start)" "$sup" "$(hrecord od supervisorPid)" || return 1
  # The restarted agent still runs the rules: the tunnel ended by its provider's death comes back.
  hx kill -KILL "$(hrecord od providerPid)"
  wait_for "the restarted agent's rules to start od again" 40 host_status_again od "$sup" \
    || { hx journalctl -u vpnctl-agent --no-pager -n 12 | sed 's/^/  journal | /'; return 1; }
  expect_ok "stop (pauses on-demand)" vx stop od
}
# host_status_again PROFILE OLD_SUPERVISOR: connected, under another supervisor.
host_status_again() { host_status_is "$1" connected && [ "$(hrecord "$1" supervisorPid)" != "$2" ]; }
check "on-demand: the rules start the tunnel, a SIGKILLed agent restarts without a second start, and its rules still act" test_host_ondemand_after_agent_kill

# ---- 3. vpnctl@office.service at boot -----------------------------------------
test_host_unit_at_boot() {
  expect_ok "import" vx import /root/office.conf --name office || return 1
  defer vx remove office
  expect_ok "systemctl enable vpnctl@office" hx systemctl enable vpnctl@office.service || return 1
  defer hx systemctl disable vpnctl@office.service
  host_reboot || return 1  # (not in a subshell: it sets HOST_PID and HOST_LEADER)
  expect_eq "vpnctl@office after boot" active "$(hx systemctl is-active vpnctl@office.service)" || return 1
  expect_eq "status after boot" connected "$(hfield office status)" || return 1
  expect_ok "a ping through the tunnel after boot" hx ping -c 1 -W 2 198.19.0.1 || return 1
  expect_ok "its ordering" hx systemctl show -P After vpnctl@office.service || return 1
  expect_contains "After=" "network-online.target" "$OUT" || return 1
  expect_ok "systemctl stop vpnctl@office" hx systemctl stop vpnctl@office.service || return 1
  expect_eq "status after systemctl stop" disconnected "$(hfield office status)" || return 1
  expect_run "systemctl start vpnctl@nosuch" nonzero hx systemctl start vpnctl@nosuch.service || return 1
  expect_eq "vpnctl@nosuch" failed "$(hx systemctl is-active vpnctl@nosuch.service)" || return 1
  # (journald takes the unit's stderr from a stream: wait until it has the line)
  wait_for "vpnctl's message in the unit's journal" 10 host_unit_says vpnctl@nosuch.service "no profile named 'nosuch'" || return 1
  expect_run "systemctl status vpnctl@nosuch" nonzero hx systemctl status --no-pager --lines=20 vpnctl@nosuch.service
  expect_contains "vpnctl's message in systemctl status" "no profile named 'nosuch'" "$OUT" || return 1
  hx systemctl reset-failed vpnctl@nosuch.service 2>/dev/null
  return 0
}
check "vpnctl@office.service enabled: the tunnel is up after a reboot, systemctl stop stops it, a failed start fails the unit with vpnctl's message" test_host_unit_at_boot

# ---- 3. always-on: a kill-switch profile enabled at boot blocks from early boot --
# A probe sends a UDP datagram to the server's underlay address (port 9) every
# 20 ms from the first moments of boot; a capture on the server's veth shows
# which left. None may leave once vpnctl-block@ has run, i.e. before
# vpnctl@always.service even starts, and none after.
test_host_always_on_at_boot() {
  sed 's|^AllowedIPs = .*|AllowedIPs = 0.0.0.0/0|' "$HOST_MERGED/root/office.conf" > "$HOST_MERGED/root/always.conf"
  expect_ok "import" vx import /root/always.conf --name always || return 1
  defer vx remove always
  expect_ok "kill switch on" host_edit always '/^  "id" : /a\  "includeAllNetworks" : true,' || return 1
  expect_ok "systemctl enable vpnctl@always" hx systemctl enable vpnctl@always.service || return 1
  defer hx systemctl disable vpnctl@always.service
  cat > "$HOST_MERGED/etc/systemd/system/lab-probe.service" <<'UNIT'
[Unit]
Description=lab probe: a datagram to 198.18.0.1:9 every 20 ms from early boot
DefaultDependencies=no
After=local-fs.target
Before=vpnctl-block@always.service
[Service]
ExecStart=/bin/bash -c 'for i in $(seq 1 1500); do echo probe 2>/dev/null > /dev/udp/198.18.0.1/9; sleep 0.02; done'
[Install]
WantedBy=sysinit.target
UNIT
  expect_ok "enable the probe" hx systemctl enable lab-probe.service || return 1
  defer rm -f "$HOST_MERGED/etc/systemd/system/lab-probe.service" "$HOST_MERGED/etc/systemd/system/sysinit.target.wants/lab-probe.service"
  ip netns exec "$NS_S" tcpdump -n -U --immediate-mode -tt -i "${LAB}s0" -w "$LAB_DIR/boot.pcap" 'udp dst port 9' > "$LAB_DIR/boot.tcpdump" 2>&1 &
  CAP_PID=$!; LAB_PIDS+=($CAP_PID)
  wait_for "tcpdump on ${LAB}s0" 5 grep -q "listening on" "$LAB_DIR/boot.tcpdump" || return 1
  host_reboot || return 1
  wait_for "vpnctl@always to be up after boot" 30 bash -c "[ \"\$(nsenter -t $HOST_LEADER -m -p systemctl is-active vpnctl@always.service)\" = active ]" || return 1
  expect_eq "status after boot" connected "$(hfield always status)" || return 1
  expect_eq "the probe still runs" active "$(hx systemctl is-active lab-probe.service)" || return 1
  # The block ran before the agent's socket was needed: users still reach it.
  expect_ok "a user's request through the agent after such a boot" hu "$HU" vpnctl list || return 1
  # The stop lifts the kill switch while the probe still sends: the capture
  # must then see it (or it proves nothing).
  # (the time just before the stop: the table goes during it)
  local lifted; lifted=$(date +%s.%N)
  expect_ok "stop" vx stop always || return 1
  sleep 1
  hx systemctl stop lab-probe.service
  stop_pid "$CAP_PID"
  local started done unit nm
  started=$(hx systemctl show -P ExecMainStartTimestampMonotonic vpnctl-block@always.service)
  done=$(hx systemctl show -P ExecMainExitTimestampMonotonic vpnctl-block@always.service)
  unit=$(hx systemctl show -P ExecMainStartTimestampMonotonic vpnctl@always.service)
  nm=$(hx systemctl show -P ExecMainStartTimestampMonotonic NetworkManager.service)
  [ "${done:-0}" != 0 ] && [ "${unit:-0}" != 0 ] && [ "${nm:-0}" != 0 ] \
    || { echo "  vpnctl-block@always ($started-$done), vpnctl@always ($unit) or NetworkManager ($nm) did not run"; return 1; }
  [ "$done" -lt "$nm" ] || { echo "  the block ended at $done us, after NetworkManager started ($nm us)"; return 1; }
  tcpdump -n -tt -r "$LAB_DIR/boot.pcap" 2>/dev/null | awk '{print $1}' > "$LAB_DIR/boot.times"
  # The capture's times are the real-time clock's, systemd's the monotonic one (one kernel, one clock each).
  local counts; counts=$(python3 - "$LAB_DIR/boot.times" "$started" "$done" "$unit" "$lifted" <<'PY'
import sys, time
offset = time.time() - time.monotonic()
times = [float(l) for l in open(sys.argv[1]) if l.strip()]
started, done, unit = (int(a) / 1e6 + offset for a in sys.argv[2:5])
lifted = float(sys.argv[5])
print(sum(t < started for t in times), sum(started <= t < done for t in times), sum(done <= t < lifted for t in times),
      sum(unit <= t < lifted for t in times), sum(t >= lifted for t in times), round((done - started) * 1000),
      round((lifted - done) * 1000))
PY
)
  local before during blocked after_unit lifted_n ms held; read -r before during blocked after_unit lifted_n ms held <<<"$counts"
  echo "  probe datagrams on the underlay: $before before vpnctl-block@always, $during while it ran ($ms ms), $blocked in the $held ms from the block to the stop ($after_unit of them after vpnctl@always started), $lifted_n after the stop lifted it; NetworkManager started $(( (nm - done) / 1000 )) ms after the block was in place"
  [ "$lifted_n" -gt 0 ] || { echo "  the capture saw no probe after the stop: it cannot prove anything"; return 1; }
  expect_eq "probe datagrams on the underlay from the block to the stop" 0 "$blocked" || return 1
  expect_eq "nft tables after stop" "" "$(hx nft list tables | grep vpnctl_ || true)"
}
check "always-on: a kill-switch profile enabled at boot blocks from before the network comes up (capture: nothing leaves once vpnctl-block@ ran), then connects" test_host_always_on_at_boot

# ---- 5. NetworkManager on the same host ----------------------------------------
test_host_networkmanager() {
  sed 's|^Address = \(.*\)$|Address = \1\nDNS = 198.19.0.53, corp.example|' "$HOST_MERGED/root/office.conf" > "$HOST_MERGED/root/dnsoffice.conf"
  expect_ok "import" vx import /root/dnsoffice.conf --name office || return 1
  defer vx remove office
  expect_ok "start" vx start office || return 1
  defer vx stop office
  local ifn; ifn=$(hfield office interface)
  expect_ok "nmcli device" hx nmcli -t -f DEVICE,STATE device || return 1
  expect_contains "NetworkManager leaves $ifn alone" "$ifn:unmanaged" "$OUT" || return 1
  expect_contains "NetworkManager manages the lab's ethernet" "${LAB}c0:connected" "$OUT" || return 1
  # NetworkManager reconnects the ethernet: the tunnel's routes and DNS stay.
  expect_ok "nmcli connection down lab" hx nmcli connection down lab || { hx nmcli -t connection show | sed "s/^/  nm | /"; hx journalctl -u NetworkManager --no-pager -o cat | grep -iE "lab|warn|error|fail" | tail -8 | sed "s/^/  nmlog | /"; return 1; }
  expect_ok "nmcli connection up lab" hx nmcli connection up lab || return 1
  # (Without traffic WireGuard does not handshake again, and status stays
  # reasserting until something proves the path: a ping does.)
  wait_for "a ping through the tunnel after NM's reconnect" 10 hx ping -c 1 -W 1 198.19.0.1 || return 1
  wait_for "the tunnel to be connected again after NM's reconnect" 20 host_status_is office connected \
    || { vx status office | sed 's/^/  status | /'; hx ip route | sed 's/^/  route | /'; hx wg show | sed 's/^/  wg | /'; return 1; }
  expect_ok "the tunnel's route" hx ip route show dev "$ifn" || return 1
  expect_contains "the tunnel's route after NM's reconnect" "198.19.0.0/24" "$OUT" || return 1
  # Each link's DNS through resolved: the tunnel's from vpnctl, the ethernet's from NetworkManager.
  expect_ok "resolvectl dns $ifn after NM's reconnect" hx resolvectl dns "$ifn" || return 1
  expect_contains "the tunnel's DNS after NM's reconnect" "198.19.0.53" "$OUT" || return 1
  expect_ok "resolvectl dns ${LAB}c0" hx resolvectl dns "${LAB}c0" || return 1
  expect_contains "NetworkManager's DNS on its ethernet" "198.18.0.1" "$OUT" || return 1
  expect_ok "resolvectl query of a tunnel name beside NM's DNS" hx resolvectl query --cache=no d.corp.example || return 1
  expect_contains "the tunnel's answer" "198.19.0.1" "$OUT"
}
check "NetworkManager: vpnctl's utun is unmanaged, an NM reconnect of the ethernet keeps the tunnel's routes" test_host_networkmanager

# ---- 4. split DNS on resolved: only the match domains go to the tunnel ---------
test_host_resolved_split() {
  expect_ok "import" vx import /root/office.conf --name split || return 1
  defer vx remove split
  expect_ok "dnsSettings" host_edit split '/^  "id" : /a\  "dnsSettings" : { "servers" : [ "198.19.0.53" ], "matchDomains" : [ "corp.example" ] },' || return 1
  expect_ok "start" vx start split || return 1
  defer vx stop split
  local ifn; ifn=$(hfield split interface)
  expect_ok "resolvectl domain $ifn" hx resolvectl domain "$ifn" || return 1
  expect_contains "the match domain as a routing domain" "~corp.example" "$OUT" || return 1
  expect_not_contains "no ~. for a split tunnel" "~." "$OUT" || return 1
  expect_ok "resolvectl default-route $ifn" hx resolvectl default-route "$ifn" || return 1
  expect_contains "a split tunnel is not resolved's default route" "no" "$OUT" || return 1
  local before; before=$(wc -l < "$LAB_DIR/dns-198.18.0.1.log")
  expect_ok "resolvectl query of a corp.example name" hx resolvectl query --cache=no split1.corp.example || return 1
  expect_contains "the tunnel's answer" "198.19.0.1" "$OUT" || return 1
  expect_run "resolvectl query of another name" nonzero hx resolvectl query --cache=no split2.example.org || return 1
  local underlay; underlay=$(tail -n +"$((before + 1))" "$LAB_DIR/dns-198.18.0.1.log")
  expect_not_contains "the underlay's DNS server" "split1.corp.example" "$underlay" || return 1
  expect_contains "the underlay's DNS server gets the other name" "split2.example.org" "$underlay" || return 1
  expect_contains "the tunnel's DNS server gets the corp name" "split1.corp.example" "$(cat "$LAB_DIR/dns-198.19.0.53.log")"
}
check "resolved: a split tunnel's match domain is a routing domain (~corp.example, not default-route): corp names to the tunnel's server, others to NetworkManager's" test_host_resolved_split

# ---- 4. the tunnel's DNS on resolved after its provider or supervisor dies ------
# host_dns_gone IFNAME: no link of resolved's has the tunnel's server.
host_dns_gone() { ! hx resolvectl dns | grep -q '198.19.0.53'; }
test_host_resolved_after_death() {
  sed 's|^Address = \(.*\)$|Address = \1\nDNS = 198.19.0.53, corp.example|' "$HOST_MERGED/root/office.conf" > "$HOST_MERGED/root/dnsoffice.conf"
  expect_ok "import" vx import /root/dnsoffice.conf --name office || return 1
  defer vx remove office
  local pid
  expect_ok "start" vx start office || return 1
  pid=$(hrecord office providerPid)
  expect_nonempty "wireguard-go's pid" "$pid" || return 1
  hx kill -KILL "$pid"
  wait_for "status to leave connected after wireguard-go's SIGKILL" 10 host_status_not office connected || return 1
  wait_for "resolved to lose the tunnel's DNS after the provider died" 10 host_dns_gone || { hx resolvectl dns | sed 's/^/  resolvectl | /'; return 1; }
  expect_eq "/etc/resolv.conf after the provider died" "../run/systemd/resolve/stub-resolv.conf" "$(hx readlink /etc/resolv.conf)" || return 1
  expect_ok "stop after the provider died" vx stop office || return 1
  expect_ok "start again" vx start office || return 1
  pid=$(hrecord office supervisorPid)
  expect_nonempty "the supervisor's pid" "$pid" || return 1
  hx kill -KILL "$pid"
  wait_for "status to leave connected after the supervisor's SIGKILL" 10 host_status_not office connected || return 1
  expect_ok "stop after the supervisor's SIGKILL" vx stop office || return 1
  wait_for "resolved to lose the tunnel's DNS after stop" 10 host_dns_gone || { hx resolvectl dns | sed 's/^/  resolvectl | /'; return 1; }
  expect_eq "links named utun after stop" "" "$(hx ip -o link show | grep -o 'utun[0-9]*' || true)" || return 1
  expect_eq "/etc/resolv.conf after the supervisor's SIGKILL and stop" "../run/systemd/resolve/stub-resolv.conf" "$(hx readlink /etc/resolv.conf)"
}
host_status_not() { local st; st=$(hfield "$1" status); [ -n "$st" ] && [ "$st" != "$2" ]; }
check "resolved: wireguard-go's SIGKILL and the supervisor's SIGKILL (then stop) leave no tunnel DNS on resolved and /etc/resolv.conf unchanged" test_host_resolved_after_death

# ---- 6. logs: the journal, with priorities, reasons, and no secret ------------
# journal_has PRIORITY TEXT: an entry of vpnctl-agent.service at PRIORITY holds TEXT.
journal_has() {
  hx journalctl -u vpnctl-agent.service --no-pager -o export | python3 -c '
import sys
want_p, want_t = sys.argv[1], sys.argv[2]
entry = {}
for raw in sys.stdin.buffer.read().split(b"\n"):
    if not raw:
        if entry.get("PRIORITY") == want_p and want_t in entry.get("MESSAGE", ""): sys.exit(0)
        entry = {}; continue
    k, _, v = raw.decode("utf-8", "replace").partition("=")
    entry[k] = v
sys.exit(1)' "$1" "$2"
}
test_host_journal() {
  expect_ok "import work.ovpn" vx import /root/work.ovpn --name work --username alice || return 1
  defer vx remove work
  expect_ok "policy" host_policy work "$HU" || return 1
  printf 'a wrong password\n' | hx vpnctl secret set work password > /dev/null || return 1
  hx useradd --no-create-home --shell /bin/sh "${HU}x" || return 1
  defer hx userdel "${HU}x"
  expect_run "start by ${HU}x, named in no policy" 9 hu "${HU}x" vpnctl start work || return 1
  expect_run "start with a wrong password, by $HU" 4 hu "$HU" vpnctl start work --timeout 20 || return 1
  sleep 1  # (journald takes what the processes wrote)
  journal_has 6 "may start 'work': user '$HU' is named in its policy" || { echo "  no decision at priority 6 (info) in journalctl -u vpnctl-agent"; return 1; }
  journal_has 4 "start 'work': refused (exit 9)" || { echo "  no refusal at priority 4 (warning)"; hx journalctl -u vpnctl-agent --no-pager -n 10 | sed 's/^/  journal | /'; return 1; }
  journal_has 3 "authenticationFailed" || { echo "  the failed start's reason is not in the journal as an error"; hx journalctl -u vpnctl-agent --no-pager -n 15 | sed 's/^/  journal | /'; return 1; }
  journal_has 3 "exit 4" || { echo "  the worker's failure (exit 4) is not in the journal as an error"; return 1; }
  local all; all=$(hx journalctl --no-pager -o cat)
  expect_not_contains "the journal" "a wrong password" "$all" || return 1
  expect_not_contains "the journal" "$(sed -n 's/^PrivateKey = //p' "$LAB_DIR/office.conf")" "$all" || return 1
  expect_not_contains "the journal" "s3cret pass" "$all"
}
check "journal: the agent's decisions at info, refusals at warning, a failed start's reason (supervisor and worker) as an error, no secret" test_host_journal

# ---- 7. the .deb removed and installed again -------------------------------------
test_host_package_removal() {
  expect_ok "import" vx import /root/office.conf --name office || return 1
  expect_ok "start" vx start office || return 1
  expect_ok "a request through the socket (the agent runs)" hx runuser -u "$HU" -- vpnctl list || return 1
  expect_ok "a call on the system bus (vpnctl-dbus runs)" hx busctl call org.vpnctl.VPN1 /org/vpnctl/VPN1 org.vpnctl.VPN1.Manager ListProfiles || return 1
  expect_ok "dpkg -r vpnctl" hx dpkg -r vpnctl || return 1
  expect_eq "vpnctl-agent.socket after dpkg -r" inactive "$(hx systemctl is-active vpnctl-agent.socket)" || return 1
  expect_eq "vpnctl-agent.service after dpkg -r" inactive "$(hx systemctl is-active vpnctl-agent.service)" || return 1
  expect_eq "vpnctl-dbus.service after dpkg -r" inactive "$(hx systemctl is-active vpnctl-dbus.service)" || return 1
  expect_ok "a ping: the tunnel outlives the package" hx ping -c 1 -W 2 198.19.0.1 || return 1
  expect_ok "dpkg -i again" hx dpkg -i /var/tmp/vpnctl.deb || return 1
  expect_eq "vpnctl-agent.socket after dpkg -i" active "$(hx systemctl is-active vpnctl-agent.socket)" || { echo "  is-enabled: $(hx systemctl is-enabled vpnctl-agent.socket)"; hx sh -x /var/lib/dpkg/info/vpnctl.postinst configure 2>&1 | sed "s/^/  postinst | /"; return 1; }
  expect_eq "vpnctl-agent.socket enabled" enabled "$(hx systemctl is-enabled vpnctl-agent.socket)" || return 1
  expect_eq "status after reinstalling" connected "$(hfield office status)" || return 1
  expect_ok "stop" vx stop office || return 1
  expect_ok "remove" vx remove office
}
check "the .deb: dpkg -r stops the agent, its socket and vpnctl-dbus, the tunnel stays up; dpkg -i enables and starts the socket again" test_host_package_removal

# ---- 8. per-app VPN on a systemd host ---------------------------------------------
# The far end answers with the address each request came from: 198.19.0.2
# through the tunnel, 198.18.0.2 over the underlay (NetworkManager's default route).
test_host_apps() {
  ip netns exec "$NS_S" python3 "$HERE/../lab/addr-echo.py" --label="$LAB_DIR" 198.19.0.1 > "$LAB_DIR/host-echo.out" 2>&1 &
  local echo=$!; LAB_PIDS+=($echo); defer stop_pid "$echo"
  wait_for "the echo server" 5 grep -q listening "$LAB_DIR/host-echo.out" || return 1
  # The container has python3 and no curl: lab-get URL prints the body.
  printf '#!/usr/bin/python3\nimport sys, urllib.request\nsys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=3).read().decode())\n' \
    > "$HOST_MERGED/usr/local/bin/lab-get" && chmod 0755 "$HOST_MERGED/usr/local/bin/lab-get" || return 1
  expect_ok "import" vx import /root/office.conf --name perapp || return 1
  defer vx remove perapp
  expect_ok "app rules" host_edit perapp '/^  "id" : /a\  "appRules" : { "mode" : "include", "matches" : [ { "unit" : "never-started.service" } ] },' || return 1
  expect_ok "policy" host_policy perapp "$HU" || return 1
  local uid; uid=$(hx id -u "$HU")
  expect_ok "the user's manager (loginctl enable-linger)" hx loginctl enable-linger "$HU" || return 1
  defer hx loginctl disable-linger "$HU"
  wait_for "user@$uid.service" 15 sh -c "[ \"\$(nsenter -t $HOST_LEADER -m -u -i -n -p -C -- systemctl is-active user@$uid.service)\" = active ]" || return 1
  # Strict reverse-path filtering, as many hosts set it: the agent's sandbox lets vpnctl turn on src_valid_mark.
  # (Set from outside, in the lab's namespace the container runs in: its own /proc/sys is read-only.)
  local rp; rp=$(c cat /proc/sys/net/ipv4/conf/all/rp_filter)
  expect_ok "strict rp_filter" c sh -c 'echo 1 > /proc/sys/net/ipv4/conf/all/rp_filter' || return 1
  defer c sh -c "echo $rp > /proc/sys/net/ipv4/conf/all/rp_filter"
  expect_ok "start by $HU (through the agent)" hu "$HU" vpnctl start perapp || return 1
  expect_eq "src_valid_mark while it runs" 1 "$(hx cat /proc/sys/net/ipv4/conf/all/src_valid_mark)" || {
    echo "  rp_filter: $(hx cat /proc/sys/net/ipv4/conf/all/rp_filter)"; hx sh -c 'cat /var/log/vpnctl/*.log /run/vpnctl/logs/*.log 2>/dev/null' | grep -E "sysctl|rule|cgroup" | sed 's/^/  log | /'; return 1; }
  uvx() { hx runuser -u "$HU" -- env HOME=/ XDG_RUNTIME_DIR="/run/user/$uid" "$@"; }
  expect_eq "$HU's vpnctl run (systemd-run --user --scope): the tunnel" 198.19.0.2 \
    "$(uvx vpnctl run perapp -- lab-get http://198.19.0.1:8000/ 2>&1 | tr -d '\n')" || return 1
  expect_eq "$HU outside the rules: the underlay" 198.18.0.2 "$(uvx lab-get http://198.19.0.1:8000/ 2>&1 | tr -d '\n')" || return 1
  expect_eq "root's vpnctl run (systemd-run --scope): the tunnel" 198.19.0.2 \
    "$(vx run perapp -- lab-get http://198.19.0.1:8000/ 2>&1 | tr -d '\n')" || return 1
  uvx vpnctl run perapp -- sleep 4 > "$LAB_DIR/host-sleep.out" 2>&1 &
  local sleeper=$!; defer stop_pid "$sleeper"
  local i
  for i in $(seq 1 40); do
    vx apps perapp --json > "$LAB_DIR/host-apps.json" 2>&1
    grep -q '"command":"sleep 4"' "$LAB_DIR/host-apps.json" && break
    sleep 0.25
  done
  OUT=$(cat "$LAB_DIR/host-apps.json")
  expect_contains "apps --json lists the scope's sleep" '"command":"sleep 4"' "$OUT$(cat "$LAB_DIR/host-sleep.out")" || return 1
  expect_match "the sleep's cgroup: a scope of the profile's slice under $HU's manager" \
    "\"cgroup\":\"/user.slice/user-$uid.slice/user@$uid.service/vpnctl.slice/vpnctl-[0-9a-f]{12}.slice/run-[^\"]*.scope\"" "$OUT" || return 1
  wait "$sleeper"
  expect_ok "stop by $HU" hu "$HU" vpnctl stop perapp || return 1
  expect_eq "rules after stop" "" "$(hx ip rule show | grep -E 'fwmark|suppress' || true)" || return 1
  expect_eq "nft tables after stop" "" "$(hx nft list tables | grep vpnctl_ || true)" || return 1
  expect_eq "src_valid_mark after stop" 0 "$(hx cat /proc/sys/net/ipv4/conf/all/src_valid_mark)"
}
check "apps: on a systemd host a user's vpnctl run is a scope of the profile's slice under their own manager (systemd-run --user --scope) and uses the tunnel, root's through the system manager, others not; src_valid_mark under strict rp_filter from the sandboxed agent; all undone" test_host_apps

host_down
t_end=$(date +%s)
echo "  host lab: $((t_end - t0)) s in all"
summary host
