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

# mdm_profile DIR: DIR/office.conf wrapped as a .mobileconfig (WireGuard's own
# export shape), signed by a throwaway CA's signer, and a copy with one byte changed.
mdm_profile() {
  local d=$1
  ( cd "$d" &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout mdm-ca.key -out mdm-ca.pem \
      -days 2 -subj "/CN=Demo MDM CA" 2>/dev/null &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout mdm.key -out mdm.csr \
      -subj "/CN=Demo MDM Signer/O=Demo Org" 2>/dev/null &&
    openssl x509 -req -in mdm.csr -CA mdm-ca.pem -CAkey mdm-ca.key -CAcreateserial -out mdm.pem -days 2 2>/dev/null &&
    python3 - <<'PY' &&
import plistlib
wg = open("office.conf").read()
payload = {"PayloadType": "com.apple.vpn.managed", "PayloadVersion": 1, "PayloadIdentifier": "demo.office.wg",
           "PayloadUUID": "C0FFEE00-0000-4000-8000-000000000001", "PayloadDisplayName": "Office VPN",
           "UserDefinedName": "office-mdm", "VPNType": "VPN", "VPNSubType": "com.wireguard.ios",
           "VendorConfig": {"WgQuickConfig": wg}, "VPN": {"RemoteAddress": "198.18.0.1", "AuthenticationMethod": "Password"}}
doc = {"PayloadType": "Configuration", "PayloadVersion": 1, "PayloadIdentifier": "demo.office",
       "PayloadUUID": "C0FFEE00-0000-4000-8000-000000000000", "PayloadDisplayName": "Demo office VPN",
       "PayloadContent": [payload]}
open("office.mobileconfig", "wb").write(plistlib.dumps(doc))
PY
    openssl cms -sign -binary -nodetach -outform DER -in office.mobileconfig -signer mdm.pem -inkey mdm.key \
      -out office-signed.mobileconfig &&
    python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); i = b.index(b"office-mdm"); b[i] ^= 1; open(sys.argv[2], "wb").write(b)' \
      office-signed.mobileconfig office-tampered.mobileconfig
  ) || { echo "demo: cannot make the signed .mobileconfig"; return 1; }
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

if command -v openssl >/dev/null && command -v python3 >/dev/null; then
  echo
  echo "== the same tunnel as an Apple configuration profile, signed by a throwaway MDM CA (openssl cms -sign)"
  mdm_profile "$LAB_DIR" || exit 1
  run vpnctl import "$LAB_DIR/office-signed.mobileconfig" --ca "$LAB_DIR/mdm-ca.pem"
  run vpnctl show office-mdm
  run vpnctl start office-mdm --wait
  run vpnctl verify office-mdm --probe http://198.19.0.1:8080/
  run vpnctl stop office-mdm
  step "# one byte of the signed file changed:"
  run vpnctl import "$LAB_DIR/office-tampered.mobileconfig"
fi

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
echo
echo "== tearing the lab down"
