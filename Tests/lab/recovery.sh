# Recovery after faults (source after lab.sh and openvpn.sh). Adds to the lab:
#
#   roam endpoint  198.18.5.1 (server lo), reached from the client through a
#                  default route via 198.18.0.1
#   hand ns        ${LAB}h, veth ${LAB}h0 198.18.1.2 <-> ${LAB}s1 198.18.1.1
#                  (routes to 198.18.0.0/24 and 198.18.5.1 only, so that the
#                  tunnel's resources are reachable through the tunnel alone):
#                  the same providers run by hand, facing the same faults at
#                  the same time
#   hand wg        wireguard-go ${LAB}hw 198.19.0.3, a second peer of ${LAB}w
#   hand openvpn   openvpn client (dev ${LAB}ho) to the server 'o'
#
# rec_cycle measures, after a fault is undone, when vpnctl reads connected,
# when traffic passes through vpnctl's tunnel, and when it passes through
# the hand-run provider's (first answer to a probe).

NS_H=${LAB}h
h() { ip netns exec "$NS_H" "$@"; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

rec_up() {
  lab_netns_add "$NS_H" || return 1
  need ip link add "${LAB}h0" netns "$NS_H" type veth peer name "${LAB}s1" netns "$NS_S" || return 1
  need h ip addr add 198.18.1.2/24 dev "${LAB}h0" || return 1
  need s ip addr add 198.18.1.1/24 dev "${LAB}s1" || return 1
  need h ip link set "${LAB}h0" up || return 1
  need s ip link set "${LAB}s1" up || return 1
  need h ip route add 198.18.0.0/24 via 198.18.1.1 || return 1
  need h ip route add 198.18.5.1/32 via 198.18.1.1 || return 1
  lab_roam_endpoint || return 1
  sed 's/^Endpoint = 198.18.0.1:/Endpoint = 198.18.5.1:/' "$LAB_DIR/office.conf" > "$LAB_DIR/roam.conf"
  (umask 077; wg genkey > "$LAB_DIR/hand.key") || { echo "  lab set-up failed at: wg genkey"; return 1; }
  wg pubkey < "$LAB_DIR/hand.key" > "$LAB_DIR/hand.pub"
}

# lab_roam_endpoint: the server's endpoint address 198.18.5.1 on its lo,
# reached by clients only through a route (a default route, for the client).
lab_roam_endpoint() {
  # (the listing first: under pipefail, grep -q ending early can fail the pipe)
  local addrs; addrs=$(s ip -o addr show dev lo)
  grep -qF ' 198.18.5.1/32 ' <<<"$addrs" && return 0
  need s ip addr add 198.18.5.1/32 dev lo
}

# The client's default route exists only while the roam tests run: with it,
# the server's tunnel addresses would answer without the tunnel.
rec_default_route() { c ip route "$1" default via 198.18.0.1; }

# The server peer for the hand-run WireGuard client (again after a server restart).
rec_hand_peer() { s wg set "${LAB}w" peer "$(cat "$LAB_DIR/hand.pub")" allowed-ips 198.19.0.3/32; }

rec_hand_wg_up() {
  rec_hand_peer
  ip netns exec "$NS_H" env LOG_LEVEL=verbose wireguard-go -f "${LAB}hw" > "$LAB_DIR/hand-wg.log" 2>&1 &
  LAB_PIDS+=($!)
  LAB_SOCKS+=("/var/run/wireguard/${LAB}hw.sock")
  echo $! > "$LAB_DIR/hand-wg.pid"
  wait_for "the UAPI socket of the hand-run wireguard-go" 4 test -S "/var/run/wireguard/${LAB}hw.sock" || return 1
  need h wg set "${LAB}hw" private-key "$LAB_DIR/hand.key" peer "$(cat "$LAB_DIR/${LAB}w.pub")" \
    endpoint 198.18.5.1:51820 allowed-ips 198.19.0.0/24 || return 1
  need h ip addr add 198.19.0.3/32 dev "${LAB}hw" || return 1
  need h ip link set "${LAB}hw" up || return 1
  need h ip route add 198.19.0.0/24 dev "${LAB}hw"
}

rec_hand_wg_down() {
  local pid; pid=$(cat "$LAB_DIR/hand-wg.pid" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  rm -f "/var/run/wireguard/${LAB}hw.sock" "$LAB_DIR/hand-wg.pid"
}

rec_hand_ovpn_up() {
  printf 'alice\ns3cret pass\n' > "$LAB_DIR/pki/hand.pass"
  chmod 600 "$LAB_DIR/pki/hand.pass"
  { ovpn_client_file 1194 | sed -e 's/^dev tun$/dev '"${LAB}"'ho\ndev-type tun/' -e "s|^auth-user-pass$|auth-user-pass $LAB_DIR/pki/hand.pass|"
  } > "$LAB_DIR/hand.ovpn"
  ip netns exec "$NS_H" openvpn --config "$LAB_DIR/hand.ovpn" > "$LAB_DIR/hand-ovpn.log" 2>&1 &
  LAB_PIDS+=($!)
  echo $! > "$LAB_DIR/hand-ovpn.pid"
  wait_for "the hand-run openvpn client to connect" 15 \
    grep -q "Initialization Sequence Completed" "$LAB_DIR/hand-ovpn.log" && return 0
  tail -5 "$LAB_DIR/hand-ovpn.log" | sed 's/^/  | /'; return 1
}

rec_hand_ovpn_down() {
  local pid; pid=$(cat "$LAB_DIR/hand-ovpn.pid" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  rm -f "$LAB_DIR/hand-ovpn.pid"
}

# Faults. Silence: the server process stopped (SIGSTOP) and resumed.
rec_silence_wg() { kill -STOP "$(cat "$LAB_DIR/${LAB}w.pid")"; }
rec_resume_wg() { kill -CONT "$(cat "$LAB_DIR/${LAB}w.pid")"; }
rec_silence_ovpn() { kill -STOP "$(cat "$LAB_DIR/ovpn-o.pid")"; }
rec_resume_ovpn() { kill -CONT "$(cat "$LAB_DIR/ovpn-o.pid")"; }
# Underlay: the server's ends of both veth pairs (client and hand) down, then up.
rec_underlay_down() { s ip link set "${LAB}s0" down; s ip link set "${LAB}s1" down; }
rec_underlay_up() { s ip link set "${LAB}s0" up; s ip link set "${LAB}s1" up; }
# Restart: the server ended by pid and started again with the same configuration.
rec_stop_wg() { lab_server_stop "${LAB}w"; }
rec_start_wg() { lab_server_start "${LAB}w" && rec_hand_peer; }
rec_stop_ovpn() {
  local pid; pid=$(cat "$LAB_DIR/ovpn-o.pid")
  kill "$pid"; wait "$pid" 2>/dev/null
  wait_for "the openvpn server $pid to exit" 2 gone "$pid"
}
rec_start_ovpn() { ovpn_server o 1194 server >/dev/null; }

# probe_loop NS TARGET FILE SECONDS: a fresh one-packet ping every ~0.1 s (a
# long-running ping keeps the source address it started with, which a
# reconnect may change), each answer logged as `ping -D` would.
probe_loop() {
  local end=$(( $(date +%s) + $4 ))
  while [ "$(date +%s)" -lt $end ]; do
    ip netns exec "$1" ping -n -c 1 -W 0.3 "$2" >/dev/null 2>&1 && echo "[$(date +%s.%N)] bytes from $2" >> "$3"
    sleep 0.1
  done
}

# first_reply FILE AFTER_MS: the time (ms) of the first reply in a `ping -D`
# log at or after AFTER_MS, or nothing.
first_reply() {
  awk -v after="$2" '/bytes from/ { t = substr($1, 2, length($1) - 2) * 1000; if (t >= after) { printf "%.0f\n", t; exit } }' "$1"
}

secs() { awk -v d="$1" 'BEGIN { printf "%.1f", d / 1000 }'; }

# rec_cycle PROFILE VPN_TARGET HAND_TARGET BREAK FIX SECONDS MUST_NOTICE LABEL
# With pings running through both tunnels, BREAK, wait SECONDS (vpnctl must
# leave connected in that time when MUST_NOTICE is yes, and never reach
# disconnected), FIX, then vpnctl must read connected again by itself and
# traffic must pass through it. Prints the recovery times (REC_LINE; in ms:
# REC_TC connected, REC_TV traffic through vpnctl's, REC_TH through the hand-run).
rec_cycle() {
  local prof=$1 vt=$2 ht=$3 brk=$4 fix=$5 n=$6 notice=$7 label=$8
  local vping hping rc=0 left=no st t0 tc="" tv th end before
  before=$(field "$prof" reconnects)
  : > "$LAB_DIR/rec-v.ping"; : > "$LAB_DIR/rec-h.ping"
  probe_loop "$NS_C" "$vt" "$LAB_DIR/rec-v.ping" $((n + 70)) &
  vping=$!; LAB_PIDS+=($vping)
  probe_loop "$NS_H" "$ht" "$LAB_DIR/rec-h.ping" $((n + 70)) &
  hping=$!; LAB_PIDS+=($hping)
  # Traffic passes through both before the fault, or the cycle proves nothing.
  # (This is a precondition, not a measurement: a hand-run wireguard-go whose
  # handshake was lost in the previous fault retries every 5 s, and on a busy
  # two-core CI machine two retries can pass before an answer; so 30 s.)
  wait_for "a reply through $prof before the fault" 30 test -s "$LAB_DIR/rec-v.ping" \
    && wait_for "a reply through the hand-run tunnel before the fault" 30 test -s "$LAB_DIR/rec-h.ping" || rc=1
  if [ $rc != 0 ]; then
    kill $vping $hping 2>/dev/null; wait $vping $hping 2>/dev/null
    tail -n 8 "$LAB_DIR/hand-wg.log" "$LAB_DIR/hand-ovpn.log" 2>/dev/null | sed 's/^/  hand | /'
    return 1
  fi
  # The fault lasts SECONDS; status is sampled every 0.25 s meanwhile.
  $brk
  end=$(( $(now_ms) + n * 1000 ))
  while [ "$(now_ms)" -lt $end ]; do
    st=$(field "$prof" status)
    [ "$st" = connected ] || left=yes
    [ "$st" = disconnected ] && { echo "  $prof ended during the fault: $(field "$prof" lastDisconnectError.message)"; rc=1; break; }
    sleep 0.25
  done
  $fix
  t0=$(now_ms)
  if [ $rc = 0 ]; then
    end=$(( t0 + 60000 ))
    while [ "$(now_ms)" -lt $end ]; do
      if [ -z "$tc" ] && [ "$(field "$prof" status)" = connected ]; then tc=$(now_ms); fi
      tv=$(first_reply "$LAB_DIR/rec-v.ping" "$t0"); th=$(first_reply "$LAB_DIR/rec-h.ping" "$t0")
      [ -n "$tc" ] && [ -n "$tv" ] && [ -n "$th" ] && break
      sleep 0.1
    done
  fi
  kill $vping $hping 2>/dev/null; wait $vping $hping 2>/dev/null
  # The time vpnctl wrote the transition, not when this loop saw it.
  [ -n "$tc" ] && tc=$(python3 - "$VPNCTL_RUN_DIR/$(field "$prof" id).events" "$t0" "$tc" <<'PY'
import json, sys, datetime
t0, seen = int(sys.argv[2]), sys.argv[3]
for line in open(sys.argv[1]):
    e = json.loads(line)
    t = datetime.datetime.fromisoformat(e["time"].replace("Z", "+00:00")).timestamp() * 1000
    if e["status"] == "connected" and t >= t0:
        print(int(t)); break
else:
    print(seen)
PY
)
  [ $rc = 0 ] || return 1
  REC_TC=${tc:+$((tc - t0))} REC_TV=${tv:+$((tv - t0))} REC_TH=${th:+$((th - t0))}
  local conn="connected +$( [ -n "$tc" ] && secs $((tc - t0)) || echo never)s"
  [ $left = no ] && conn="stayed connected (never noticed the fault)"
  REC_LINE="$label: vpnctl $conn, traffic +$( [ -n "$tv" ] && secs $((tv - t0)) || echo never)s; by hand traffic +$( [ -n "$th" ] && secs $((th - t0)) || echo never)s"
  echo "  recovery ($REC_LINE)"
  [ "$notice" = yes ] && [ $left = no ] && { echo "  $prof never left connected during the fault"; rc=1; }
  [ -n "$tc" ] || { echo "  $prof is $(field "$prof" status), not connected, 60 s after the fault was undone"; rc=1; }
  [ -n "$tv" ] || { echo "  no traffic through $prof after the fault"; rc=1; }
  if [ -n "${REC_DEBUG_DIR:-}" ]; then
    mkdir -p "$REC_DEBUG_DIR/$prof-${label// /_}"; cp "$LAB_DIR"/*.log "$LAB_DIR"/rec-*.ping "$VPNCTL_RUN_DIR"/logs/* "$REC_DEBUG_DIR/$prof-${label// /_}"/ 2>/dev/null
    c ip route > "$REC_DEBUG_DIR/$prof-${label// /_}/routes-c"; h ip route > "$REC_DEBUG_DIR/$prof-${label// /_}/routes-h"
  fi
  if [ $left = yes ] && [ -n "$tc" ] && [ "$(field "$prof" reconnects)" -le "${before:-0}" ]; then
    echo "  reconnects did not grow ($before -> $(field "$prof" reconnects))"; rc=1
  fi
  return $rc
}
