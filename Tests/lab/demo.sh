#!/usr/bin/env bash
# `make demo`: brings the lab up, runs vpnctl through a whole session inside
# the client namespace, showing each command and its real output, then tears
# the lab down. Usage: demo.sh path/to/vpnctl
set -uo pipefail
V=$(realpath "${1:?usage: demo.sh path/to/vpnctl}")
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lab.sh"
source "$HERE/openvpn.sh"
source "$HERE/ikev2.sh"

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
ike_why=$(ike_cannot_run)
if [ -z "$ike_why" ]; then
  echo
  echo "== IKEv2: a throwaway CA (strongSwan pki), a strongSwan responder on 198.18.0.1 (its own charon, vici socket and /run)"
  ike_up || exit 1
  step "vpnctl create road ikev2 --server 198.18.0.1 --remote-id vpn.lab.test --auth eap --username bob --ca ca.crt < password"
  ike_profile road eap
  run vpnctl show road
  run vpnctl start road --wait --verbose
  run vpnctl status road
  run vpnctl verify road --probe http://198.19.21.1:8080/
  run vpnctl stop road --verbose
else
  echo
  echo "== IKEv2 part skipped: $ike_why"
fi
echo
echo "== tearing the lab down"
