#!/usr/bin/env bash
# `make bench` (part 6): many tunnels at once. One wireguard-go in the lab's
# server namespace with N peers; N profiles in the client namespace, all
# connected; then `status --json` (N connected) is timed, and `stop --all`
# once, after which every tunnel must be gone: no utun link, no supervisor
# or provider process, no UAPI socket, every status disconnected.
# Usage: Benchmarks/tunnels.sh path/to/vpnctl [tunnels]
set -uo pipefail
V=$(realpath "${1:?usage: tunnels.sh path/to/vpnctl [tunnels]}")
N=${2:-50}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../Tests/lab/lab.sh"
why=$(lab_cannot_run); [ -n "$why" ] && { echo "benchmarks cannot run here: $why"; exit 1; }
command -v hyperfine >/dev/null || { echo "hyperfine is needed: apt-get install --no-install-recommends hyperfine"; exit 1; }
trap lab_down EXIT
lab_up || exit 1
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# The many-peer server: 198.19.8.1/24, peer i is 198.19.8.(10+i).
M="${LAB}m"
(umask 077; wg genkey > "$LAB_DIR/many.key")
wg pubkey < "$LAB_DIR/many.key" > "$LAB_DIR/$M.pub"
ip netns exec "$NS_S" wireguard-go -f "$M" > "$LAB_DIR/$M.log" 2>&1 &
LAB_PIDS+=($!)
wait_for "the many-peer server's UAPI socket" 4 test -S "/var/run/wireguard/$M.sock" || exit 1
s wg set "$M" private-key "$LAB_DIR/many.key" listen-port 51900
s ip addr add 198.19.8.1/24 dev "$M"
s ip link set "$M" up
for i in $(seq 1 "$N"); do
  (umask 077; wg genkey > "$LAB_DIR/m$i.key")
  s wg set "$M" peer "$(wg pubkey < "$LAB_DIR/m$i.key")" allowed-ips "198.19.8.$(( 10 + i ))/32"
  # Each client routes only its own (unused) /32 through its tunnel, so that
  # N tunnels' routes do not overlap; connected means the handshake is done.
  cat > "$LAB_DIR/m$i.conf" <<CONF
[Interface]
PrivateKey = $(cat "$LAB_DIR/m$i.key")
Address = 198.19.8.$(( 10 + i ))/32

[Peer]
PublicKey = $(cat "$LAB_DIR/$M.pub")
AllowedIPs = 198.19.9.$i/32
Endpoint = 198.18.0.1:51900
CONF
  c "$V" import "$LAB_DIR/m$i.conf" >/dev/null || { echo "import m$i failed"; exit 1; }
done

echo "== $N WireGuard tunnels at once (one wireguard-go server with $N peers)"
t0=$(now_ms)
for i in $(seq 1 "$N"); do
  c "$V" start "m$i" --timeout 20 >/dev/null 2>"$LAB_DIR/start.err" || { echo "start m$i failed: $(cat "$LAB_DIR/start.err")"; exit 1; }
done
echo "start, one after another: $(( $(now_ms) - t0 )) ms for $N"
connected=$(c "$V" status --json | python3 -c 'import json,sys; print(sum(p["status"] == "connected" for p in json.load(sys.stdin)["profiles"]))')
echo "connected: $connected of $N"
c hyperfine -N -w 3 -r 30 --export-json "$LAB_DIR/status.json" "$V status --json" "wg show all" >/dev/null 2>&1
python3 - "$LAB_DIR/status.json" "$N" <<'PY'
import json, sys
r = [x["median"] * 1000 for x in json.load(open(sys.argv[1]))["results"]]
print(f"vpnctl status --json ({sys.argv[2]} connected)  median {r[0]:7.2f} ms")
print(f"wg show all (for scale)            median {r[1]:7.2f} ms")
PY
pids=$(python3 -c 'import json,sys,glob
for f in glob.glob(sys.argv[1] + "/*.json"):
    r = json.load(open(f))
    for k in ("supervisorPid", "providerPid"):
        if r.get(k): print(r[k])' "$VPNCTL_RUN_DIR")
t0=$(now_ms)
c "$V" stop --all >/dev/null 2>"$LAB_DIR/stop.err"; rc=$?
echo "stop --all: $(( $(now_ms) - t0 )) ms for $N (exit $rc)"

left=0
links=$(c ip -br link | grep -c '^utun' || true)
[ "$links" = 0 ] || { echo "LEFT: $links utun links"; left=1; }
for p in $pids; do
  if [ -d "/proc/$p" ] && grep -q -e __supervise -e wireguard-go "/proc/$p/cmdline" 2>/dev/null; then echo "LEFT: process $p"; left=1; fi
done
not=$(c "$V" status --json | python3 -c 'import json,sys; print(sum(p["status"] != "disconnected" for p in json.load(sys.stdin)["profiles"]))')
[ "$not" = 0 ] || { echo "LEFT: $not profiles not disconnected"; left=1; }
routes=$(c ip route show | grep -c utun || true)
[ "$routes" = 0 ] || { echo "LEFT: $routes routes through utun"; left=1; }
[ $left = 0 ] && echo "all $N stopped cleanly: no utun link, route, supervisor or provider left; every status disconnected"
exit $left
