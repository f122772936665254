#!/usr/bin/env bash
# `make demo`: brings the lab up, runs vpnctl through a whole session inside
# the client namespace, showing each command and its real output, then tears
# the lab down. Usage: demo.sh path/to/vpnctl
set -uo pipefail
V=$(realpath "${1:?usage: demo.sh path/to/vpnctl}")
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lab.sh"
source "$HERE/openvpn.sh"
source "$HERE/plugin.sh"

why=$(lab_cannot_run)
if [ -n "$why" ]; then echo "demo cannot run here: $why"; exit 1; fi
trap 'plugin_down; lab_down' EXIT

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
why=$(plugin_cannot_run "$V")
if [ -z "$why" ]; then
  echo
  echo "== A provider plugin: the example built with VPNProviderKit (plain UDP, NO encryption: an example, not for use),"
  echo "   its peer on 198.18.0.1:5555, a user $PLUG_USER it runs as"
  plugin_up || exit 1
  plugin_manifest "$VPNCTL_CONFIG_DIR/providers" relay.json "$PLUG_ID" "$PLUG_BIN/udp-relay"
  step "cat $VPNCTL_CONFIG_DIR/providers/relay.json"; cat "$VPNCTL_CONFIG_DIR/providers/relay.json"
  plugin_profile relay "$PLUG_ID"
  run vpnctl providers
  run vpnctl start relay --wait --verbose
  step "grep -E 'Uid|CapEff|NoNewPrivs' /proc/<plugin pid>/status"
  id=$(c "$V" status relay --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["profiles"][0]["id"])')
  grep -E '^(Uid|CapEff|NoNewPrivs):' "/proc/$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["providerPid"])' "$VPNCTL_RUN_DIR/$id.json")/status"
  run vpnctl verify relay --probe http://198.19.20.1:8080/
  run vpnctl stop relay
else
  echo
  echo "== plugin part skipped: $why"
fi
echo
echo "== tearing the lab down"
