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
address1=198.18.0.2/24
never-default=true

[ipv6]
method=ignore
EOF
  chmod 0600 "$HOST_MERGED/etc/NetworkManager/system-connections/lab.nmconnection"
  cp "$LAB_DIR/office.conf" "$HOST_MERGED/root/office.conf"
}
if ! host_install; then fail "vpnctl's .deb did not install in the container"; summary host; exit 1; fi
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
# host_policy PROFILE USER: the profile's policy names USER (vpnctl edit, an editor of sed).
host_policy() {
  printf '#!/bin/sh\nexec sed -i %q "$1"\n' '/^  "policy" : {/,/^  },\{0,1\}$/c\  "policy" : { "users" : [ "'"$2"'" ] },' \
    > "$HOST_MERGED/usr/local/bin/lab-editor"
  chmod 0755 "$HOST_MERGED/usr/local/bin/lab-editor"
  hx env EDITOR=lab-editor vpnctl edit "$1" > /dev/null
}

# The lab's DNS server on the server's tunnel address 198.19.0.53: names
# under corp.example are 198.19.0.1, others do not exist.
host_dns_up() {
  s ip addr add 198.19.0.53/32 dev "${LAB}w" 2>/dev/null
  cat > "$LAB_DIR/dns.py" <<'PY'
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("198.19.0.53", 53))
print("ready", flush=True)
while True:
    q, peer = s.recvfrom(512)
    i, labels = 12, []
    while q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode()); i += 1 + q[i]
    question = q[12:i + 5]
    name = ".".join(labels).lower()
    print("query", name, flush=True)
    if name.endswith("corp.example") and q[i + 2] == 1:
        a = b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04" + bytes([198, 19, 0, 1])
        s.sendto(q[:2] + b"\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00" + question + a, peer)
    else:
        s.sendto(q[:2] + b"\x81\x83\x00\x01\x00\x00\x00\x00\x00\x00" + question, peer)
PY
  ip netns exec "$NS_S" python3 "$LAB_DIR/dns.py" > "$LAB_DIR/dns.log" 2>&1 &
  LAB_PIDS+=($!)
  wait_for "the lab's DNS server on 198.19.0.53" 5 grep -q ready "$LAB_DIR/dns.log"
}
host_dns_up || fail "the lab's DNS server did not start"

# ---- 1. socket activation and the agent's sandbox ---------------------------
test_host_socket_activation() {
  sed 's|^Address = \(.*\)$|Address = \1\nDNS = 198.19.0.53, corp.example|' "$HOST_MERGED/root/office.conf" > "$HOST_MERGED/root/dnsoffice.conf"
  expect_ok "import" vx import /root/dnsoffice.conf --name office || return 1
  defer vx remove office
  expect_ok "policy" host_policy office "$HU" || return 1
  expect_eq "vpnctl-agent.socket after install and boot" active "$(hx systemctl is-active vpnctl-agent.socket)" || return 1
  expect_eq "vpnctl-agent.service before the first request" inactive "$(hx systemctl is-active vpnctl-agent.service)" || return 1
  expect_ok "start by $HU" hu "$HU" vpnctl start office || return 1
  expect_eq "vpnctl-agent.service after the request" active "$(hx systemctl is-active vpnctl-agent.service)" || return 1
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

host_down
t_end=$(date +%s)
echo "  host lab: $((t_end - t0)) s in all"
summary host
