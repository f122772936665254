# The OpenVPN part of the lab (source after lab.sh): a throwaway CA and
# certificates made with openssl for this run only, tls-crypt, and openvpn
# servers in the server namespace.
#
#   server 198.18.0.1:1194/udp  tunnel 198.19.8.0/24 (server .1)
#   (the expired-certificate server on 1195: tunnel 198.19.10.0/24)
#   pushed route 198.19.9.0/24  resource http://198.19.9.1:8080/ (server lo)
#   user alice / password "s3cret pass" (checked by a script on the server side)

ovpn_pki() {
  local d=$LAB_DIR/pki
  mkdir -p "$d" && chmod 700 "$d"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -keyout "$d/ca.key" -out "$d/ca.crt" -days 2 -subj "/CN=vpnctl-lab-ca-$LAB" 2>/dev/null
  local who eku days
  for who in server:serverAuth:2 client:clientAuth:2 expired:serverAuth:-1; do
    IFS=: read -r name eku days <<<"$who"
    openssl req "${ec[@]}" -keyout "$d/$name.key" -out "$d/$name.csr" -subj "/CN=$name" 2>/dev/null
    printf 'extendedKeyUsage=%s\nkeyUsage=digitalSignature,keyAgreement\n' "$eku" > "$d/$name.ext"
    openssl x509 -req -in "$d/$name.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
      -out "$d/$name.crt" -days "$days" -extfile "$d/$name.ext" 2>/dev/null
  done
  openvpn --genkey secret "$d/tc.key"
  # The server's verify hook (via-file: $1 holds the username and the
  # password). alice: a password. bob: a password and the static
  # challenge's code 123456, as SCRV1 carries them. carol: a password, then
  # a CRV1 challenge whose answer is 7890. dave: a password, then a web
  # sign-in (deferred: the lab's sign-in page writes the verdict).
  cat > "$d/check-pass.sh" <<HOOK
#!/bin/sh
{ read -r u; read -r p; } < "\$1"
case \$u in
  alice) [ "\$p" = "s3cret pass" ] ;;
  bob) [ "\$p" = "SCRV1:\$(printf 'bob pass' | base64):\$(printf 123456 | base64)" ] ;;
  carol)
    [ "\$p" = "CRV1::st42::7890" ] && exit 0
    [ "\$p" = "carol pass" ] || exit 1
    printf 'CRV1:R,E:st42:%s:Enter the code from your token' "\$(printf carol | base64)" > "\$auth_failed_reason_file"
    echo 0 > "\$auth_control_file"
    exit 2 ;;
  dave)
    [ "\$p" = "dave pass" ] || exit 1
    key=\$(od -An -N8 -tx1 /dev/urandom | tr -d ' \\n')
    echo "\$auth_control_file" > "$d/pending-\$key"
    printf '%s\\nwebauth\\nWEB_AUTH::http://198.18.0.1:8099/signin?k=%s\\n' "\${SIGNIN_TIMEOUT:-60}" "\$key" > "\$auth_pending_file"
    exit 2 ;;
  *) exit 1 ;;
esac
HOOK
  chmod 700 "$d/check-pass.sh"
}

# ovpn_server NAME PORT CERTNAME [SUBNET]: an openvpn server in the server
# namespace. Each server its own subnet: with two on one, the route of the
# one started last (a restarted server is) would take the other's replies.
# OVPN_LOCAL: the address it listens on (198.18.0.1); OVPN_PUSH: its pushes
# (a route to 198.19.9.0/24 and DNS 198.19.8.1), one 'push "..."' line each.
ovpn_server() {
  local name=$1 port=$2 cert=$3 subnet=${4:-198.19.8.0} d=$LAB_DIR/pki
  local pushes=${OVPN_PUSH:-'push "route 198.19.9.0 255.255.255.0"
push "dhcp-option DNS 198.19.8.1"'}
  cat > "$d/$name.conf" <<CONF
dev ${LAB}$name
dev-type tun
proto udp
local ${OVPN_LOCAL:-198.18.0.1}
port $port
topology subnet
server $subnet 255.255.255.0
$pushes
ca $d/ca.crt
cert $d/$cert.crt
key $d/$cert.key
dh none
tls-crypt $d/tc.key
data-ciphers AES-256-GCM
# Pushes ping 2 / ping-restart 10: a silent server is noticed within the
# recovery tests' bounds. explicit-exit-notify: clients hear of a restart.
keepalive 2 10
explicit-exit-notify 1
# The hand-run client of the recovery tests uses the same certificate.
duplicate-cn
script-security 2
auth-user-pass-verify $d/check-pass.sh via-file
tmp-dir $d
verb 3
CONF
  ip netns exec "$NS_S" openvpn --config "$d/$name.conf" > "$LAB_DIR/ovpn-$name.log" 2>&1 &
  LAB_PIDS+=($!)
  echo $! > "$LAB_DIR/ovpn-$name.pid"
  wait_for "openvpn server $name to complete its initialization" 5 \
    grep -q "Initialization Sequence Completed" "$LAB_DIR/ovpn-$name.log" && return 0
  tail -5 "$LAB_DIR/ovpn-$name.log" | sed 's/^/  | /'; return 1
}

# ovpn_client_file PORT: an .ovpn as a provider would hand it out, inline blocks and all.
ovpn_client_file() {
  local d=$LAB_DIR/pki
  cat <<OVPN
# vpnctl lab OpenVPN client
client
dev tun
proto udp
remote 198.18.0.1 $1
nobind
remote-cert-tls server
data-ciphers AES-256-GCM
auth-user-pass
verb 3
<ca>
$(cat "$d/ca.crt")
</ca>
<cert>
$(cat "$d/client.crt")
</cert>
<key>
$(cat "$d/client.key")
</key>
<tls-crypt>
$(cat "$d/tc.key")
</tls-crypt>
OVPN
}

ovpn_up() {
  ovpn_pki || { echo "  OpenVPN lab: the throwaway PKI (openssl) failed"; return 1; }
  need s ip addr add 198.19.9.1/32 dev lo || return 1
  (cd "$LAB_DIR/www" && exec ip netns exec "$NS_S" python3 -m http.server --bind 198.19.9.1 8080) > "$LAB_DIR/http3.log" 2>&1 &
  LAB_PIDS+=($!)
  ovpn_server o 1194 server || return 1
  ovpn_server e 1195 expired 198.19.10.0 || return 1
  ovpn_client_file 1194 > "$LAB_DIR/work.ovpn"
  ovpn_client_file 1195 > "$LAB_DIR/expired.ovpn"
  ovpn_client_file 1199 > "$LAB_DIR/down.ovpn"
  # The same server, for logins that ask more than a password.
  { ovpn_client_file 1194; echo 'static-challenge "Enter your code" 1'; } > "$LAB_DIR/sc.ovpn"
  ovpn_client_file 1194 > "$LAB_DIR/cr.ovpn"
  ovpn_client_file 1194 > "$LAB_DIR/wa.ovpn"
  # The sign-in page of the web-auth login (the test's "browser" is curl).
  ip netns exec "$NS_S" python3 "$HERE/signin-server.py" "$LAB_DIR/pki" 198.18.0.1 8099 > "$LAB_DIR/signin.log" 2>&1 &
  LAB_PIDS+=($!)
  wait_for "the OpenVPN lab's HTTP server on 198.19.9.1:8080" 6 s bash -c 'exec 3<>/dev/tcp/198.19.9.1/8080'
}

# ovpn_server_ensure NAME PORT CERT [SUBNET]: the server runs and is not
# stopped (a test that failed mid-fault may have left it stopped or ended).
ovpn_server_ensure() {
  local pid; pid=$(cat "$LAB_DIR/ovpn-$1.pid" 2>/dev/null) || return 0
  kill -CONT "$pid" 2>/dev/null
  if gone "$pid"; then
    echo "  teardown: the openvpn server $1 had ended; starting it again"
    wait "$pid" 2>/dev/null
    ovpn_server "$@" >/dev/null
  fi
}
