#!/usr/bin/env bash
# `make demo`: brings the lab up, runs vpnctl through a whole session inside
# the client namespace, showing each command and its real output, then tears
# the lab down. Usage: demo.sh path/to/vpnctl
set -uo pipefail
V=$(realpath "${1:?usage: demo.sh path/to/vpnctl}")
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lab.sh"
source "$HERE/openvpn.sh"
source "$HERE/agent.sh"
source "$HERE/dbus.sh"
source "$HERE/ondemand.sh"
source "$HERE/plugin.sh"
source "$HERE/ikev2.sh"
source "$HERE/fulltunnel.sh"
RESOLV=/etc/netns/$NS_C/resolv.conf
source "$HERE/apps.sh"

why=$(lab_cannot_run)
if [ -n "$why" ]; then echo "demo cannot run here: $why"; exit 1; fi
trap 'plugin_down; lab_down' EXIT

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
# Commands run in the lab's directory, so that they read as a user types
# them (vpnctl import office.conf), without the lab's temporary paths.
# shown RUNNER WANT CMD...: shows the command as a user would type it, runs
# it with RUNNER (c: the client namespace), and fails the demo, naming the
# step, unless it exits WANT.
shown() {
  local runner=$1 want=$2; shift 2
  step "$*"
  local words=("$@"); words[0]=$V
  (cd "$LAB_DIR" && "$runner" "${words[@]}")
  local rc=$?
  [ $rc = 0 ] || echo "(exit $rc)"
  [ "$rc" = "$want" ] || { echo "demo: the step '$*' exited $rc, not $want"; exit 1; }
}
# run CMD...: a step that must succeed. must is the same (older name).
run() { shown c 0 "$@"; }
must() { shown c 0 "$@"; }
# fails CODE CMD...: a step shown failing on purpose, with its documented exit code.
fails() { local want=$1; shift; shown c "$want" "$@"; }

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

run vpnctl import office.conf
run vpnctl start office --wait --verbose
run vpnctl status
run vpnctl verify office --probe http://198.19.0.1:8080/
run vpnctl stats --profile office

echo
echo "== the tunnel lives in the client's namespace; from any other, wg show answers for it and status takes its supervisor's word"
office_if=$(c "$V" status office --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["profiles"][0]["interface"])')
step "wg show $office_if latest-handshakes   # in the host's namespace, where $office_if is no link"
wg show "$office_if" latest-handshakes || { echo "demo: wg show $office_if from the host's namespace failed"; exit 1; }
step "vpnctl status   # in the host's namespace"
"$V" status || { echo "demo: status from the host's namespace failed"; exit 1; }
"$V" status office --json | grep -q '"status":"connected"' || { echo "demo: status from the host's namespace does not say connected"; exit 1; }

echo
echo "== status --watch in another terminal catches every transition, including ones it did not cause"
timeout 10 ip netns exec "$NS_C" "$V" status office --watch --count 2 > "$LAB_DIR/watch.out" 2>&1 &
watcher=$!
LAB_PIDS+=($watcher)
sleep 0.5
run vpnctl toggle office
wait $watcher
step "vpnctl status office --watch   # (the other terminal)"
cat "$LAB_DIR/watch.out"
run vpnctl status

echo
echo "== no file at hand: a WireGuard profile from options, keys as wg makes them, the tunnel's own log"
step "vpnctl genkey | tee new.key | vpnctl pubkey   # the same as wg genkey | wg pubkey"
c "$V" genkey > "$LAB_DIR/new.key" && c "$V" pubkey < "$LAB_DIR/new.key" || { echo "demo: genkey | pubkey failed"; exit 1; }
rm -f "$LAB_DIR/new.key"
cp "$LAB_DIR/client.key" "$LAB_DIR/road.key"
must vpnctl create road wireguard --private-key-file road.key --address 198.19.0.2/32 \
  --peer-public-key "$(cat "$LAB_DIR/${LAB}w.pub")" --allowed-ips 198.19.0.0/24 --endpoint 198.18.0.1:51820
must vpnctl start road --wait
must vpnctl verify road --probe http://198.19.0.1:8080/
must vpnctl logs road --since 1m
must vpnctl stop road
must vpnctl remove road

echo
echo "== a failure, the way a user meets it: a server that does not answer"
sed 's/51820/51999/' "$LAB_DIR/office.conf" > "$LAB_DIR/lab-test.conf"
run vpnctl import lab-test.conf
fails 4 vpnctl start lab-test --timeout 3
run vpnctl status lab-test
run vpnctl remove lab-test

echo
echo "== the same server down, the tunnel persistent: it stays, says why, and connects when the server is back"
step "(the server's wireguard-go stops)"
lab_server_stop "${LAB}w"
fails 3 vpnctl start office --persist --timeout 3
run vpnctl status office
step "(the server's wireguard-go starts again)"
lab_server_start "${LAB}w"
step "vpnctl status office   # until connected (bounded: 40 s)"
for _ in $(seq 1 80); do
  [ "$(c "$V" status office --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["profiles"][0]["status"])')" = connected ] && break
  sleep 0.5
done
(cd "$LAB_DIR" && c "$V" status office) || exit 1
c "$V" status office --json | grep -q '"status":"connected"' || { echo "demo: the persistent tunnel did not connect once its server was back"; exit 1; }
run vpnctl stop office

if command -v useradd >/dev/null; then
  echo
  echo "== the agent: ${LAB}u1, a user named in office's policy, controls office without sudo; not 'second'"
  c "$V" import "$LAB_DIR/second.conf" >/dev/null
  step "EDITOR=vi vpnctl edit office   # \"policy\": {\"users\": [\"${LAB}u1\"]}"
  agent_set_policy office "{\"users\":[\"${LAB}u1\"]}" && c "$V" show office | grep "^allowed:"
  step "vpnctl agent &   # root, in the client namespace (systemd runs it: vpnctl-agent.socket)"
  agent_lab_up || exit 1
  as_user() {  # as_user WANT CMD...: shows the command as the user types it, runs it as that user; it must exit WANT
    local want=$1; shift
    step "$*   # as ${LAB}u1"
    local words=("$@"); as "${LAB}u1" "${words[@]:1}"
    local rc=$?; [ $rc = 0 ] || echo "(exit $rc)"
    [ "$rc" = "$want" ] || { echo "demo: the step '$*' as ${LAB}u1 exited $rc, not $want"; exit 1; }
  }
  as_user 0 vpnctl start office
  as_user 0 vpnctl status
  as_user 9 vpnctl start second
  as_user 0 vpnctl can stop office
  as_user 0 vpnctl show office   # through the agent: the secret named and set, never its value
  as_user 0 vpnctl ondemand pause office
  as_user 0 vpnctl ondemand resume office
  step "agent-client.py $VPNCTL_RUN_DIR/agent.sock isConnected profile='\"office\"'   # as ${LAB}u1: the agent's typed protocol, no vpnctl code"
  cp "$HERE/agent-client.py" "$LAB_DIR/bin/agent-client.py" && chmod 755 "$LAB_DIR/bin/agent-client.py"
  runuser -u "${LAB}u1" -- python3 "$LAB_DIR/bin/agent-client.py" "$VPNCTL_RUN_DIR/agent.sock" isConnected profile='"office"' \
    || { echo "demo: the typed client's call failed"; exit 1; }
  as_user 0 vpnctl stop office

  echo
  echo "== D-Bus: vpnctl-dbus (root) owns org.vpnctl.VPN1 on a bus of the lab's own; ${LAB}u1 toggles office with busctl"
  dbus_lab_up || exit 1
  bus_user() {  # bus_user WANT ARGS...: busctl as the user; it must exit WANT
    local want=$1; shift
    step "busctl $*   # as ${LAB}u1"
    as_bus "${LAB}u1" "$@"
    local rc=$?; [ $rc = 0 ] || echo "(exit $rc)"
    [ "$rc" = "$want" ] || { echo "demo: the step 'busctl $*' as ${LAB}u1 exited $rc, not $want"; exit 1; }
  }
  bus_user 0 call org.vpnctl.VPN1 /org/vpnctl/VPN1 org.vpnctl.VPN1.Manager GetProfileByName s office
  obj=$(as_bus "${LAB}u1" call org.vpnctl.VPN1 /org/vpnctl/VPN1 org.vpnctl.VPN1.Manager GetProfileByName s office | sed 's/^o "\(.*\)"$/\1/')
  bus_user 0 call org.vpnctl.VPN1 "$obj" org.vpnctl.VPN1.Profile Toggle
  wait_for "office to connect" 10 bash -c "ip netns exec $NS_C $V is-connected office" || { echo "demo: office did not connect from D-Bus"; exit 1; }
  bus_user 0 get-property org.vpnctl.VPN1 "$obj" org.vpnctl.VPN1.Profile Status Interface
  bus_user 0 call org.vpnctl.VPN1 "$obj" org.vpnctl.VPN1.Profile Verify s http://198.19.0.1:8080/
  bus_user 0 call org.vpnctl.VPN1 "$obj" org.vpnctl.VPN1.Profile Toggle
  bus_user 1 call org.vpnctl.VPN1 /org/vpnctl/VPN1 org.vpnctl.VPN1.Manager GetProfileByName s second
  dbus_lab_down
  agent_lab_down
else
  echo
  echo "== agent part skipped: useradd is not available to make a demo user"
fi

echo
echo "== on-demand: rules the agent runs. A namespace of its own (${LAB}o) with no default route yet;"
echo "   the rules: disconnect on the trusted network (search domain corp.example), connect on ethernet, else ignore"
T=$LAB_DIR/ondemand-demo
mkdir -p "$T"
ondemand_up || exit 1
orun() { shown o 0 "$@"; }  # orun CMD...: as run, in the on-demand namespace
step "vpnctl import od.conf; EDITOR=vi vpnctl edit od; vpnctl ondemand enable od"
od_use >/dev/null || { echo "$OUT"; exit 1; }
orun vpnctl show od
orun vpnctl ondemand test od
step "vpnctl agent &   # root (systemd runs it); it evaluates the rules on every network change"
od_agent_start || exit 1
step "ip route add default via 198.18.40.1   # the network comes up"
od_route_add
wait_for "od to connect by itself" 10 o "$V" is-connected od || { echo "demo: od did not connect by itself"; exit 1; }
orun vpnctl status
orun vpnctl ondemand status
step "vpnctl stop od   # pauses on-demand for od, so that it stays down"
(cd "$LAB_DIR" && o "$V" stop od) || { echo "demo: stop od failed"; exit 1; }
grep "on-demand:" "$T/agent.log" | sed 's/^/   agent log: /'
od_agent_stop
od_route_del

if command -v openssl >/dev/null && command -v python3 >/dev/null; then
  echo
  echo "== the same tunnel as an Apple configuration profile, signed by a throwaway MDM CA (openssl cms -sign)"
  mdm_profile "$LAB_DIR" || exit 1
  run vpnctl import office-signed.mobileconfig --ca mdm-ca.pem
  run vpnctl show office-mdm
  run vpnctl start office-mdm --wait
  run vpnctl verify office-mdm --probe http://198.19.0.1:8080/
  run vpnctl stop office-mdm
  step "# one byte of the signed file changed:"
  fails 5 vpnctl import office-tampered.mobileconfig
fi

if command -v openvpn >/dev/null && command -v openssl >/dev/null; then
  echo
  echo "== OpenVPN: a throwaway CA, an openvpn server on 198.18.0.1:1194 that pushes a route to 198.19.9.0/24"
  ovpn_up || exit 1
  step "cat work.ovpn   # inline <cert>, <key> and <tls-crypt> blocks not shown"
  awk '/^<(cert|key|tls-crypt|ca)>/{print; print "  ..."; skip=1; next} /^<\/(cert|key|tls-crypt|ca)>/{skip=0} !skip' "$LAB_DIR/work.ovpn"
  run vpnctl import work.ovpn --username alice
  step "vpnctl secret set work password   # read from stdin, never echoed"
  printf 's3cret pass\n' | c "$V" secret set work password || { echo "demo: secret set failed"; exit 1; }
  run vpnctl start work --wait --verbose
  run vpnctl status work
  run vpnctl verify work --probe http://198.19.9.1:8080/
  run vpnctl stop work --verbose
  echo
  echo "== A one-time code with each login (static-challenge), the password not stored: start asks for both"
  step "tail -1 sc.ovpn"; tail -1 "$LAB_DIR/sc.ovpn"
  run vpnctl import sc.ovpn --name otp --username bob
  step "vpnctl start otp < /dev/null   # in a script: nobody to ask"
  (cd "$LAB_DIR" && c "$V" start otp </dev/null); rc=$?
  echo "(exit $rc)"; [ $rc = 5 ] || { echo "demo: a start with nobody to ask exited $rc, not 5"; exit 1; }
  step "vpnctl start otp   # on a terminal: the password (not shown as typed), then the code"
  python3 "$HERE/term-answer.py" 40 "Username [bob]: " "" "Password: " "bob pass" "Enter your code: " "123456" -- \
    ip netns exec "$NS_C" "$V" start otp | grep -v '^echo-after:' || { echo "demo: the start on a terminal failed"; exit 1; }
  must vpnctl stop otp
  echo
  echo "== A web sign-in (openvpn WEB_AUTH, as SSO servers send it): the URL is printed; here curl is the browser"
  must vpnctl import wa.ovpn --name sso --username dave
  printf 'dave pass\n' | c "$V" secret set sso password >/dev/null
  step "vpnctl start sso --timeout 20"
  c "$V" start sso --timeout 20 </dev/null 2> "$LAB_DIR/sso.err" &
  sso_start=$!
  wait_for "the sign-in URL" 15 grep -q "sign in to 'sso'" "$LAB_DIR/sso.err" || { kill "$sso_start"; cat "$LAB_DIR/sso.err"; exit 1; }
  cat "$LAB_DIR/sso.err"
  sso_url=$(sed -n "s/^sign in to 'sso' in a web browser: //p" "$LAB_DIR/sso.err")
  step "curl $sso_url   # the browser"; c curl -fsS --max-time 5 "$sso_url" || { kill "$sso_start"; exit 1; }
  wait "$sso_start" || { echo "demo: the start after the sign-in failed"; cat "$LAB_DIR/sso.err"; exit 1; }
  must vpnctl status sso
  must vpnctl stop sso
  echo
  echo "== OpenVPN full tunnel as openvpn-install's servers push it (redirect-gateway def1 bypass-dhcp, block-outside-dns),"
  echo "   on a client with a default route of its own; the server 198.18.63.1 is reached through that route"
  ft_server || exit 1
  step "ip route add default via 198.18.0.1   # the client's ISP"; c ip route add default via 198.18.0.1 dev "${LAB}c0" || exit 1
  must vpnctl import full.ovpn --username alice
  printf 's3cret pass\n' | c "$V" secret set full password >/dev/null
  must vpnctl start full --wait --verbose
  step "ip route get 198.18.62.1   # a host outside every pushed route: through the tunnel"; c ip route get 198.18.62.1 || exit 1
  step "ip route get 198.18.63.1   # the server itself stays on the ISP's route"; c ip route get 198.18.63.1 || exit 1
  must vpnctl stop full
  echo
  echo "== A provider's download runs update-resolv-conf (vpnctl does its job, so it is not imported); the user keeps it split"
  sed -e 's/^verb 3$/verb 3\nscript-security 2\nup \/etc\/openvpn\/update-resolv-conf\ndown \/etc\/openvpn\/update-resolv-conf\npull-filter ignore redirect-gateway/' \
    "$LAB_DIR/full.ovpn" > "$LAB_DIR/provider.ovpn"
  step "grep -E '^(script-security|up|down|pull-filter)' provider.ovpn"; grep -E '^(script-security|up|down|pull-filter)' "$LAB_DIR/provider.ovpn"
  must vpnctl import provider.ovpn --username alice
  step "vpnctl export full > full-export.ovpn; vpnctl import full-export.ovpn --name full --replace   # same id, secrets kept"
  c "$V" export full > "$LAB_DIR/full-export.ovpn" 2>/dev/null || { echo "demo: export failed"; exit 1; }
  must vpnctl import full-export.ovpn --name full --replace
  echo
  echo "== Per-app VPN on wg-easy's full-tunnel file: only what 'vpnctl run' starts uses the tunnel."
  echo "   The far host 198.18.62.1 answers with the address each request came from."
  ft_wg_server || exit 1
  apps_server || exit 1
  # vpnctl and the programs see the namespace's cgroup2 tree (see apps.sh: ac).
  arun() { shown ac 0 "$@"; }
  must vpnctl import wg-easy.conf --name perapp
  printf '#!/bin/sh\nexec python3 -c "import json,sys; f=sys.argv[1]; p=json.load(open(f)); p[\\"appRules\\"]={\\"mode\\": \\"include\\", \\"matches\\": [{\\"unit\\": \\"firefox.service\\"}]}; json.dump(p, open(f, \\"w\\"), indent=2)" "$1"\n' > "$LAB_DIR/apps-editor"
  chmod 700 "$LAB_DIR/apps-editor"
  step "EDITOR=... vpnctl edit perapp   # \"appRules\": {\"mode\": \"include\", \"matches\": [{\"unit\": \"firefox.service\"}]}"
  c env EDITOR="$LAB_DIR/apps-editor" "$V" edit perapp || { echo "demo: edit failed"; exit 1; }
  must vpnctl show perapp
  arun vpnctl start perapp
  step "curl http://198.18.62.1:8000/   # outside the rules: the ISP's route"
  ac curl -sS -m 3 http://198.18.62.1:8000/ || { echo "demo: the curl outside the rules failed"; exit 1; }
  arun vpnctl run perapp -- curl -sS -m 3 http://198.18.62.1:8000/
  step "vpnctl run perapp -- sleep 3 &"; ac "$V" run perapp -- sleep 3 & apps_sleep=$!
  sleep 0.5
  arun vpnctl apps perapp
  wait "$apps_sleep"
  arun vpnctl stop perapp
  c ip route del default via 198.18.0.1 dev "${LAB}c0"
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
  run vpnctl import guarded.conf
  step "EDITOR=... vpnctl edit guarded   # sets \"includeAllNetworks\": true"
  c env EDITOR="$LAB_DIR/editor" "$V" edit guarded || { echo "demo: edit failed"; exit 1; }
  run vpnctl show guarded
  step "cat /etc/resolv.conf"; c cat /etc/resolv.conf
  run vpnctl start guarded --verbose
  step "cat /etc/resolv.conf"; c cat /etc/resolv.conf
  run vpnctl status
  run vpnctl verify guarded --probe http://198.19.0.1:8080/
  step "ip route add 198.19.0.64/26 dev ${LAB}c0   # a hostile DHCP server's option 121 (TunnelVision)"
  c ip route add 198.19.0.64/26 dev "${LAB}c0" || exit 1
  must vpnctl status guarded
  c ip route del 198.19.0.64/26 dev "${LAB}c0"
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
cat <<'NEXT'
== what to try next
   vpnctl help                     every command, its aliases and the exit codes
   vpnctl help start               usage, options and examples for one command
   vpnctl show office              a profile, with the public key to give the server
   vpnctl status --watch           transitions as they happen (Ctrl-C to stop)
   vpnctl stats --profile office --watch   live rates
   vpnctl completion bash          Tab completion, profiles and secrets included
   man vpnctl; man 5 vpnctl-profile
NEXT
echo
echo "== tearing the lab down"
