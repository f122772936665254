#!/usr/bin/env bash
# `make demo`: brings the lab up, runs vpnctl through a whole session inside
# the client namespace, showing each command and its real output, then tears
# the lab down. Usage: demo.sh path/to/vpnctl
set -uo pipefail
V=$(realpath "${1:?usage: demo.sh path/to/vpnctl}")
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lab.sh"
source "$HERE/openvpn.sh"

why=$(lab_cannot_run)
if [ -n "$why" ]; then echo "demo cannot run here: $why"; exit 1; fi
trap lab_down EXIT

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run() {  # run CMD...: shows the command as a user would type it, then runs it in the client namespace
  step "$*"
  local words=("$@"); words[0]=$V
  c "${words[@]}"
  local rc=$?
  [ $rc = 0 ] || echo "(exit $rc)"
}

echo "== bringing the lab up: namespaces $NS_C (client) and $NS_S (server), wireguard-go peer, HTTP server on 198.19.0.1:8080"
lab_up
echo "   the server's tunnel-only resource: http://198.19.0.1:8080/ (reachable only through the tunnel)"
step "cat office.conf"; sed 's/^PrivateKey = .*/PrivateKey = (hidden)/' "$LAB_DIR/office.conf"

run vpnctl import "$LAB_DIR/office.conf"
run vpnctl start office --wait --verbose
run vpnctl status
run vpnctl verify office --probe http://198.19.0.1:8080/
run vpnctl stats --profile office
run vpnctl toggle office
run vpnctl status

if command -v openvpn >/dev/null && command -v openssl >/dev/null; then
  echo
  echo "== OpenVPN: a throwaway CA, an openvpn server on 198.18.0.1:1194 that pushes a route to 198.19.9.0/24"
  ovpn_up || exit 1
  step "cat work.ovpn   # inline <cert>, <key> and <tls-crypt> blocks not shown"
  awk '/^<(cert|key|tls-crypt|ca)>/{print; print "  ..."; skip=1; next} /^<\/(cert|key|tls-crypt|ca)>/{skip=0} !skip' "$LAB_DIR/work.ovpn"
  run vpnctl import "$LAB_DIR/work.ovpn" --username alice
  step "vpnctl secret set work password   # read from stdin, never echoed"
  printf 's3cret pass\n' | c "$V" secret set work password
  run vpnctl start work --wait --verbose
  run vpnctl status work
  run vpnctl verify work --probe http://198.19.9.1:8080/
  run vpnctl stop work --verbose
else
  echo
  echo "== OpenVPN part skipped: openvpn or openssl is not installed (make deps installs both)"
fi
if command -v nft >/dev/null; then
  echo
  echo "== DNS and the kill switch: the client namespace has its own resolv.conf ($NS_C's /etc/netns file)"
  sed "s|^Address = \(.*\)$|Address = \1\nDNS = 198.19.0.53, corp.example|" "$LAB_DIR/office.conf" > "$LAB_DIR/guarded.conf"
  printf '#!/bin/sh\nexec python3 -c "import json,sys; f=sys.argv[1]; p=json.load(open(f)); p[\\"includeAllNetworks\\"]=True; json.dump(p, open(f, \\"w\\"), indent=2)" "$1"\n' > "$LAB_DIR/editor"
  chmod 700 "$LAB_DIR/editor"
  run vpnctl import "$LAB_DIR/guarded.conf"
  step "EDITOR=... vpnctl edit guarded   # sets \"includeAllNetworks\": true"
  c env EDITOR="$LAB_DIR/editor" "$V" edit guarded
  run vpnctl show guarded
  step "cat /etc/resolv.conf"; c cat /etc/resolv.conf
  run vpnctl start guarded --verbose
  step "cat /etc/resolv.conf"; c cat /etc/resolv.conf
  run vpnctl status
  run vpnctl verify guarded --probe http://198.19.0.1:8080/
  step "ping -c 1 -W 1 198.18.0.1   # the underlay, outside the tunnel"; c ping -n -c 1 -W 1 198.18.0.1 2>&1 | grep -E "transmitted|not permitted"
  step "kill -KILL <wireguard-go>   # the tunnel dies"
  kill -KILL "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["providerPid"])' "$VPNCTL_RUN_DIR/$(c "$V" status guarded --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["profiles"][0]["id"])').json")"
  sleep 1
  run vpnctl status guarded
  step "ping -c 1 -W 1 198.18.0.1   # still blocked: fail closed"; c ping -n -c 1 -W 1 198.18.0.1 2>&1 | grep -E "transmitted|not permitted"
  run vpnctl stop guarded
  step "ping -c 1 -W 1 198.18.0.1   # the kill switch is gone"; c ping -n -c 1 -W 1 198.18.0.1 2>&1 | grep -E "transmitted|not permitted"
  step "cat /etc/resolv.conf"; c cat /etc/resolv.conf
else
  echo
  echo "== DNS and kill switch part skipped: nft is not installed (make deps installs nftables)"
fi
echo
echo "== tearing the lab down"
