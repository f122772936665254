# The IKEv2 part of the lab (source after lab.sh): a throwaway CA and
# certificates made with strongSwan's pki for this run only, and a strongSwan
# responder in the server namespace: its own charon, in a private mount
# namespace (its run directory over /run, where charon's compiled-in pid file
# goes), its own strongswan.conf and vici socket. A system charon is never
# touched: nothing here uses /etc/swanctl, /etc/strongswan.conf or the
# system's vici socket.
#
#   responder 198.18.0.1 (UDP 500/4500)  id vpn.lab.test
#   virtual IPs 198.19.22.0/24 (see addresses.txt for who owns which range)  resource http://198.19.21.1:8080/ (server lo)
#   users: alice@lab.test (PSK), bob (EAP-MSCHAPv2), carol@lab.test (certificate),
#          dave@lab.test (PSK, a full tunnel: local_ts 0.0.0.0/0)   far host 198.18.64.1 (server lo)

IKE_DIR=$LAB_DIR/ike
IKE_PSK="psk for alice $LAB"
IKE_EAP_PASSWORD="bob's password $LAB"
IKE_P12_PASSWORD="carol's p12 $LAB"

ike_cannot_run() {
  [ -x /usr/lib/ipsec/charon ] || { echo "strongSwan's charon is not installed (make deps installs strongswan-charon and its plugins)"; return; }
  command -v swanctl >/dev/null || { echo "swanctl is not installed (strongswan-swanctl)"; return; }
  command -v pki >/dev/null || { echo "pki is not installed (strongswan-pki)"; return; }
  [ -e /usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so ] || { echo "kernel-libipsec is not installed (libcharon-extra-plugins)"; return; }
  command -v unshare >/dev/null || { echo "unshare is not installed (util-linux)"; return; }
}

# ike_pki: CA, the server's certificate (vpn.lab.test), another server's
# (other.lab.test), and carol's client certificate.
ike_pki() { ike_pki_ 2>>"$LAB_DIR/ike-pki.log"; }
ike_pki_() {
  local d=$IKE_DIR/pki
  mkdir -p "$d" && chmod 700 "$d"
  pki --gen --type ecdsa --size 256 --outform pem > "$d/ca.key" || return 1
  pki --self --ca --lifetime 2 --in "$d/ca.key" --type ecdsa --dn "CN=vpnctl lab CA $LAB" --outform pem > "$d/ca.crt" || return 1
  local who
  for who in server:vpn.lab.test:serverAuth other:other.lab.test:serverAuth carol:carol@lab.test:clientAuth; do
    IFS=: read -r name id flag <<<"$who"
    pki --gen --type ecdsa --size 256 --outform pem > "$d/$name.key" || return 1
    pki --pub --in "$d/$name.key" --type ecdsa | pki --issue --lifetime 2 --cacert "$d/ca.crt" --cakey "$d/ca.key" \
      --dn "CN=$id" --san "$id" --flag "$flag" --outform pem > "$d/$name.crt" || return 1
  done
  # vpn.lab.test's key, in a certificate that expired long ago.
  pki --pub --in "$d/server.key" --type ecdsa | pki --issue --cacert "$d/ca.crt" --cakey "$d/ca.key" \
    --not-before "01.01.20 00:00:00" --not-after "02.01.20 00:00:00" \
    --dn "CN=vpn.lab.test" --san vpn.lab.test --flag serverAuth --outform pem > "$d/expired.crt" || return 1
  cp "$d/server.key" "$d/expired.key"
  # carol's certificate and key as a .p12, as a provisioning service would hand them out.
  openssl pkcs12 -export -in "$d/carol.crt" -inkey "$d/carol.key" -passout "pass:$IKE_P12_PASSWORD" -out "$d/carol.p12" || return 1
}

# ike_responder_conf CERT: the responder's swanctl.conf (absolute paths only).
ike_responder_conf() {
  local d=$IKE_DIR/pki cert=${1:-server}
  cat <<CONF
connections {
  psk {
    version = 2
    local_addrs = 198.18.0.1
    pools = lab
    local { auth = psk
            id = vpn.lab.test }
    remote { auth = psk
             id = alice@lab.test }
    children { net { local_ts = 198.19.21.0/24 } }
  }
  full {
    version = 2
    local_addrs = 198.18.0.1
    pools = lab
    local { auth = psk
            id = vpn.lab.test }
    remote { auth = psk
             id = dave@lab.test }
    children { net { local_ts = 0.0.0.0/0 } }
  }
  eap {
    version = 2
    local_addrs = 198.18.0.1
    pools = lab
    local { auth = pubkey
            certs = $d/$cert.crt
            id = vpn.lab.test }
    remote { auth = eap-mschapv2
             eap_id = %any }
    children { net { local_ts = 198.19.21.0/24 } }
  }
  # Answers whatever identity the client asks for, with the certificate of
  # vpn.lab.test: a client that expects another identity must refuse it.
  anyid {
    version = 2
    local_addrs = 198.18.0.1
    pools = lab
    local { auth = pubkey
            certs = $d/$cert.crt
            id = %any }
    remote { auth = eap-mschapv2
             eap_id = %any }
    children { net { local_ts = 198.19.21.0/24 } }
  }
  cert {
    version = 2
    local_addrs = 198.18.0.1
    pools = lab
    local { auth = pubkey
            certs = $d/$cert.crt
            id = vpn.lab.test }
    remote { auth = pubkey
             id = carol@lab.test
             cacerts = $d/ca.crt }
    children { net { local_ts = 198.19.21.0/24 } }
  }
}
pools { lab { addrs = 198.19.22.0/24
               dns = 198.19.21.53 } }
secrets {
  ike-alice { id = alice@lab.test
              secret = "$IKE_PSK" }
  ike-dave { id = dave@lab.test
             secret = "$IKE_PSK" }
  eap-bob { id = bob
            secret = "$IKE_EAP_PASSWORD" }
}
CONF
}

# ike_responder_start [CERT]: the responder's charon; loads its config.
ike_responder_start() {
  local r=$IKE_DIR/responder
  mkdir -p "$r" && chmod 700 "$r"
  cat > "$r/strongswan.conf" <<CONF
charon {
  load_modular = no
  load = random nonce openssl pem pkcs1 pkcs8 x509 revocation constraints pubkey kdf attr kernel-libipsec kernel-netlink socket-default vici eap-identity eap-mschapv2 gcrypt
  plugins { vici { socket = unix:///run/charon.vici } }
  syslog { daemon { default = -1 } }
  filelog { stderr { default = 1
                     ike_name = yes } }
}
CONF
  ike_responder_conf "${1:-server}" > "$r/swanctl.conf"
  chmod 600 "$r/swanctl.conf"
  # swanctl loads private keys from the directories beside its config file.
  mkdir -p "$r/private" && cp "$IKE_DIR/pki/${1:-server}.key" "$r/private/server.key"
  rm -f "$r/charon.pid" "$r/charon.vici"
  # ip netns exec, unshare and sh all exec: $! is charon itself.
  STRONGSWAN_CONF=/run/strongswan.conf ip netns exec "$NS_S" unshare --mount --propagation private -- \
    /bin/sh -c 'mount --bind "$1" /run && exec /usr/lib/ipsec/charon' sh "$r" > "$LAB_DIR/ike-responder.log" 2>&1 &
  LAB_PIDS+=($!)
  echo $! > "$IKE_DIR/responder.pid"
  wait_for "the responder's vici socket" 5 test -S "$r/charon.vici" || { tail -5 "$LAB_DIR/ike-responder.log" | sed 's/^/  | /'; return 1; }
  swanctl --load-all --noprompt --uri "unix://$r/charon.vici" --file "$r/swanctl.conf" > "$LAB_DIR/ike-swanctl.log" 2>&1 \
    || { tail -5 "$LAB_DIR/ike-swanctl.log" | sed 's/^/  | /'; return 1; }
}

ike_responder_stop() {
  local pid; pid=$(cat "$IKE_DIR/responder.pid" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  wait_for "the responder's charon to exit" 5 gone "$pid"
}

ike_up() {
  mkdir -p "$IKE_DIR" && chmod 700 "$IKE_DIR"
  ike_pki || { echo "  lab set-up failed at: pki"; return 1; }
  need s ip addr add 198.19.21.1/32 dev lo || return 1
  (cd "$LAB_DIR/www" && exec ip netns exec "$NS_S" python3 -m http.server --bind 198.19.21.1 8080) > "$LAB_DIR/http-ike.log" 2>&1 &
  LAB_PIDS+=($!)
  wait_for "the lab's HTTP server on 198.19.21.1:8080" 6 s bash -c 'exec 3<>/dev/tcp/198.19.21.1/8080' || return 1
  ike_responder_start server
}

# ike_profile NAME AUTH [REMOTE_ID]: a profile through `vpnctl create`, its
# secrets from stdin. Prints nothing; returns vpnctl's status.
ike_profile() {
  local name=$1 auth=$2 rid=${3:-vpn.lab.test} d=$IKE_DIR/pki
  case $auth in
    psk) printf '%s' "$IKE_PSK" | c "$V" create "$name" ikev2 --server 198.18.0.1 --remote-id "$rid" \
           --local-id alice@lab.test --auth psk ;;
    eap) printf '%s' "$IKE_EAP_PASSWORD" | c "$V" create "$name" ikev2 --server 198.18.0.1 --remote-id "$rid" \
           --auth eap --username bob --ca "$d/ca.crt" ;;
    certificate) c "$V" create "$name" ikev2 --server 198.18.0.1 --remote-id "$rid" --local-id carol@lab.test \
           --auth certificate --ca "$d/ca.crt" --cert "$d/carol.crt" --key "$d/carol.key" ;;
    p12) printf '%s' "$IKE_P12_PASSWORD" | c "$V" create "$name" ikev2 --server 198.18.0.1 --remote-id "$rid" \
           --local-id carol@lab.test --auth certificate --ca "$d/ca.crt" --identity "$d/carol.p12" ;;
  esac
}
