# The network lab: a client and a server namespace joined by a veth pair,
# a wireguard-go peer in the server namespace, and an HTTP server reachable
# only through the tunnel. Source it; every name carries $LAB (unique per
# run), everything is cleaned up by lab_down (call it from a trap), and only
# processes this lab started are ended, by pid.
#
#   underlay  198.18.0.1 (server, ${LAB}s0)  <->  198.18.0.2 (client, ${LAB}c0)
#   tunnel    198.19.0.1 (server wg)         <->  198.19.0.2 (client utunN)
#   second    198.19.1.1 (server wg, 2nd)    <->  198.19.1.2 (second profile)
#   resource  http://198.19.0.1:8080/  (bound to the server's tunnel address)

LAB=${LAB:-vl$(( $$ % 100000 ))}
LAB_DIR=${LAB_DIR:-$(mktemp -d /tmp/vpnctl-lab.XXXXXX)}
LAB_PIDS=()
LAB_NETNS=()   # every namespace this lab made, deleted by lab_down
LAB_SOCKS=()   # the UAPI sockets of the wireguard-go servers it started
NS_C=${LAB}c
NS_S=${LAB}s
export VPNCTL_CONFIG_DIR=$LAB_DIR/etc VPNCTL_RUN_DIR=$LAB_DIR/run

type wait_for >/dev/null 2>&1 || source "$(dirname "${BASH_SOURCE[0]}")/../lib/testlib.sh"

c() { ip netns exec "$NS_C" "$@"; }
# need CMD...: a set-up step; on failure it says which one and returns 1.
need() { "$@" || { echo "  lab set-up failed at: $*"; return 1; }; }
s() { ip netns exec "$NS_S" "$@"; }

# lab_netns_add NAME: a namespace of this lab (lo up), deleted by lab_down
# even when the test that made it does not get to delete it. It gets a
# resolv.conf of its own (/etc/netns/NAME/resolv.conf, which `ip netns exec`
# bind-mounts over /etc/resolv.conf): DNS that vpnctl applies in the lab
# lands there, never in this machine's resolver.
lab_netns_add() {
  [ -e "/etc/netns/$1" ] && { echo "  lab set-up failed: /etc/netns/$1 exists already (not this lab's)"; return 1; }
  need ip netns add "$1" || return 1
  LAB_NETNS+=("$1")
  [ -d /etc/netns ] || LAB_MADE_ETC_NETNS=yes
  need mkdir -p "/etc/netns/$1" || return 1
  printf '# vpnctl lab %s\nnameserver 127.0.0.1\noptions timeout:1\n' "$1" > "/etc/netns/$1/resolv.conf" || return 1
  need ip -n "$1" link set lo up
}

# lab_netns_del NAME: deletes a namespace this lab made (a test's own teardown).
lab_netns_del() { ip netns del "$1" 2>/dev/null; rm -rf "/etc/netns/$1"; return 0; }

# Prints why the lab cannot run here, or nothing.
lab_cannot_run() {
  [ "$(id -u)" = 0 ] || { echo "needs root (network namespaces, tun)"; return; }
  [ -c /dev/net/tun ] || { echo "no /dev/net/tun"; return; }
  command -v wireguard-go >/dev/null || { echo "wireguard-go is not installed"; return; }
  command -v wg >/dev/null || { echo "wg (wireguard-tools) is not installed"; return; }
  if ! ip netns add "${LAB}probe" 2>/dev/null; then echo "cannot create a network namespace"; return; fi
  ip netns del "${LAB}probe"
}

# lab_server_peer NAME TUNNEL_ADDR PORT CLIENT_PUB CLIENT_ADDR: a wireguard-go peer in the server ns.
lab_server_peer() {
  local name=$1 addr=$2 port=$3 cpub=$4 caddr=$5
  if [ ! -f "$LAB_DIR/$name.key" ]; then
    (umask 077; wg genkey > "$LAB_DIR/$name.key")
    wg pubkey < "$LAB_DIR/$name.key" > "$LAB_DIR/$name.pub"
  fi
  echo "$*" > "$LAB_DIR/$name.args"
  # Not through s(): a backgrounded function would be a subshell, and $!
  # must be wireguard-go itself so that it can be ended by pid.
  ip netns exec "$NS_S" wireguard-go -f "$name" > "$LAB_DIR/$name.log" 2>&1 &
  LAB_PIDS+=($!)
  LAB_SOCKS+=("/var/run/wireguard/$name.sock")
  echo $! > "$LAB_DIR/$name.pid"
  wait_for "the UAPI socket of the server's wireguard-go $name" 4 test -S "/var/run/wireguard/$name.sock" || return 1
  need s wg set "$name" private-key "$LAB_DIR/$name.key" listen-port "$port" peer "$cpub" allowed-ips "$caddr/32" || return 1
  need s ip addr add "$addr/24" dev "$name" || return 1
  need s ip link set "$name" up
}

# Returns 1, naming the step, when any part of the lab fails to come up.
lab_up() {
  lab_netns_add "$NS_C" || return 1
  lab_netns_add "$NS_S" || return 1
  need ip link add "${LAB}c0" netns "$NS_C" type veth peer name "${LAB}s0" netns "$NS_S" || return 1
  need c ip addr add 198.18.0.2/24 dev "${LAB}c0" || return 1
  need s ip addr add 198.18.0.1/24 dev "${LAB}s0" || return 1
  need c ip link set "${LAB}c0" up || return 1
  need s ip link set "${LAB}s0" up || return 1
  mkdir -p "$LAB_DIR/www"
  echo "tunnel-only resource" > "$LAB_DIR/www/index.html"

  (umask 077; wg genkey > "$LAB_DIR/client.key"; wg genkey > "$LAB_DIR/client2.key") || { echo "  lab set-up failed at: wg genkey"; return 1; }
  wg pubkey < "$LAB_DIR/client.key" > "$LAB_DIR/client.pub"
  wg pubkey < "$LAB_DIR/client2.key" > "$LAB_DIR/client2.pub"
  lab_server_peer "${LAB}w" 198.19.0.1 51820 "$(cat "$LAB_DIR/client.pub")" 198.19.0.2 || return 1
  lab_server_peer "${LAB}x" 198.19.1.1 51821 "$(cat "$LAB_DIR/client2.pub")" 198.19.1.2 || return 1

  (cd "$LAB_DIR/www" && exec ip netns exec "$NS_S" python3 -m http.server --bind 198.19.0.1 8080) > "$LAB_DIR/http.log" 2>&1 &
  LAB_PIDS+=($!)
  (cd "$LAB_DIR/www" && exec ip netns exec "$NS_S" python3 -m http.server --bind 198.19.1.1 8080) > "$LAB_DIR/http2.log" 2>&1 &
  LAB_PIDS+=($!)
  wait_for "the lab's HTTP server on 198.19.0.1:8080" 6 s bash -c 'exec 3<>/dev/tcp/198.19.0.1/8080' || return 1

  lab_profile office client "${LAB}w" 198.19.0.2 198.19.0.0/24 51820 > "$LAB_DIR/office.conf"
  lab_profile second client2 "${LAB}x" 198.19.1.2 198.19.1.0/24 51821 > "$LAB_DIR/second.conf"
}

# lab_profile NAME KEYFILE SERVERNAME ADDR ALLOWED PORT: a wg-quick file for the client.
lab_profile() {
  cat <<CONF
# vpnctl lab profile '$1'
[Interface]
PrivateKey = $(cat "$LAB_DIR/$2.key")
Address = $4/32

[Peer]
PublicKey = $(cat "$LAB_DIR/$3.pub")
AllowedIPs = $5
Endpoint = 198.18.0.1:$6
CONF
}

# Stops the server's wireguard-go for NAME (to silence the peer)...
lab_server_stop() {
  local name=$1 pid; pid=$(cat "$LAB_DIR/$name.pid")
  kill -CONT "$pid" 2>/dev/null; kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  wait_for "the server's wireguard-go $name to remove its socket" 2 test ! -e "/var/run/wireguard/$name.sock"
}

# ...and starts it again with the same keys, port and peer.
lab_server_start() {
  # shellcheck disable=SC2046
  lab_server_peer $(cat "$LAB_DIR/$1.args")
}

# lab_server_ensure NAME: the server's wireguard-go for NAME runs and is not
# stopped (a test that failed mid-fault may have left it stopped or ended).
lab_server_ensure() {
  local pid; pid=$(cat "$LAB_DIR/$1.pid" 2>/dev/null) || return 0
  kill -CONT "$pid" 2>/dev/null
  if gone "$pid"; then
    echo "  teardown: the server's wireguard-go $1 had ended; starting it again"
    wait "$pid" 2>/dev/null
    lab_server_start "$1"
  fi
}

# lab_stop_supervisors RUN_DIR: ends the supervisors that vpnctl started with
# RUN_DIR (by the pids in its records, checked against their command lines).
# Prints each one it had to end.
lab_stop_supervisors() {
  local f pid
  for f in "$1"/*.json; do
    [ -f "$f" ] || continue
    pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("supervisorPid") or "")' "$f" 2>/dev/null)
    if [ -n "$pid" ] && ! gone "$pid" && grep -qF "$1" "/proc/$pid/cmdline" 2>/dev/null; then
      echo "  teardown: ending supervisor $pid ($(basename "$f" .json)), left running"
      kill "$pid" 2>/dev/null
      wait_for "supervisor $pid to exit" 5 gone "$pid" || kill -KILL "$pid" 2>/dev/null
    fi
  done
}

lab_down() {
  local pid d ns
  type dbus_lab_down >/dev/null 2>&1 && dbus_lab_down
  type agent_lab_down >/dev/null 2>&1 && agent_lab_down
  # Supervisors this lab's vpnctl started (by the pids in each run dir it used).
  for d in "$LAB_DIR"/run "$LAB_DIR"/*/run; do [ -d "$d" ] && lab_stop_supervisors "$d" >/dev/null; done
  # CONT first: a test that failed mid-fault may leave a server stopped.
  for pid in "${LAB_PIDS[@]}"; do kill -CONT "$pid" 2>/dev/null; kill "$pid" 2>/dev/null; done
  for pid in "${LAB_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  for ns in "${LAB_NETNS[@]}"; do ip netns del "$ns" 2>/dev/null; rm -rf "/etc/netns/$ns"; done
  [ -n "${LAB_MADE_ETC_NETNS:-}" ] && rmdir /etc/netns 2>/dev/null
  rm -f "${LAB_SOCKS[@]}"
  rm -rf "$LAB_DIR"
  LAB_PIDS=() LAB_NETNS=() LAB_SOCKS=()
}
