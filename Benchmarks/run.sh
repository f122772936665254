#!/usr/bin/env bash
# `make bench`: the tunnel benchmarks, in a lab of their own. Each prints
# medians and the ratio against its anchor, measured in the same run.
# Usage: Benchmarks/run.sh path/to/vpnctl [runs]
set -uo pipefail
V=$(realpath "${1:?usage: run.sh path/to/vpnctl [runs]}")
RUNS=${2:-30}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../Tests/lab/lab.sh"
why=$(lab_cannot_run); [ -n "$why" ] && { echo "benchmarks cannot run here: $why"; exit 1; }
command -v hyperfine >/dev/null || { echo "hyperfine is needed: apt-get install --no-install-recommends hyperfine"; exit 1; }
trap lab_down EXIT
lab_up
c "$V" import "$LAB_DIR/office.conf" >/dev/null
c "$V" import "$LAB_DIR/second.conf" >/dev/null
sed 's/51820/51999/' "$LAB_DIR/office.conf" > "$LAB_DIR/third.conf"
c "$V" import "$LAB_DIR/third.conf" >/dev/null
now_ms() { python3 -c 'import time; print(f"{time.monotonic()*1000:.3f}")'; }

echo "== 1. vpnctl status --json (3 profiles, 1 connected) vs wg show, and the floor"
# The floor: a static Swift executable that prints a constant (the cost of
# starting any program built the way vpnctl is), so that the ratio shows how
# much of vpnctl's time is its own.
printf 'print("{\\"schemaVersion\\":1}")\n' > "$LAB_DIR/floor.swift"
swiftc -O -static-executable "$LAB_DIR/floor.swift" -o "$LAB_DIR/floor" 2>/dev/null || { echo "cannot build the floor executable"; exit 1; }
c "$V" start office >/dev/null
c hyperfine -N -w 20 -r 300 --export-json "$LAB_DIR/status.json" \
    -n status "$V status --json" -n show "wg show utun0" -n floor "$LAB_DIR/floor" >/dev/null 2>&1
python3 - "$LAB_DIR/status.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
s, w, f = (r[k]["median"] * 1000 for k in ("status", "show", "floor"))
print(f"vpnctl status --json  median {s:.2f} ms")
print(f"wg show utun0         median {w:.2f} ms")
print(f"floor (static Swift executable printing a constant) median {f:.2f} ms")
print(f"ratio {s / w:.2f} (target <= 1.1); vpnctl's own time {s - f:.2f} ms, wg's {w - f:+.2f} ms over the floor")
PY
c "$V" stop office >/dev/null

echo "== 2. start --wait to connected vs the hand-run floor (wireguard-go + wg set + first handshake)"
floor_once() {  # the same steps by hand, timed to the first handshake
  local t0 t1 pid
  t0=$(date +%s%N)
  ip netns exec "$NS_C" wireguard-go -f utun9 >/dev/null 2>&1 &
  LAB_PIDS+=($!)
  pid=$!
  while [ ! -S /var/run/wireguard/utun9.sock ]; do :; done
  c ip addr add 198.19.0.2/32 dev utun9
  c ip link set utun9 up
  c wg set utun9 private-key "$LAB_DIR/client.key" peer "$(cat "$LAB_DIR/${LAB}w.pub")" \
      endpoint 198.18.0.1:51820 allowed-ips 198.19.0.0/24 persistent-keepalive 25
  c ip route add 198.19.0.0/24 dev utun9
  until c wg show utun9 latest-handshakes | awk '{exit !($2 > 0)}'; do :; done
  t1=$(date +%s%N)
  kill $pid; wait $pid 2>/dev/null
  echo "floor $(( (t1 - t0) / 1000 ))" | awk '{printf "%s %.3f\n", $1, $2/1000}'
}
vpnctl_once() {
  local t0 t1
  t0=$(date +%s%N)
  c "$V" start office >/dev/null || echo "start failed" >&2
  t1=$(date +%s%N)
  c "$V" stop office >/dev/null
  echo "vpnctl $(( (t1 - t0) / 1000 ))" | awk '{printf "%s %.3f\n", $1, $2/1000}'
}
for i in $(seq 1 "$RUNS"); do floor_once; vpnctl_once; done > "$LAB_DIR/start.txt"
python3 "$HERE/stats.py" --ratio vpnctl floor "target <= 1.2x, or floor + 10 ms" < "$LAB_DIR/start.txt"

echo "== 3. watch latency: supervisor transition -> line printed by status --watch"
ip netns exec "$NS_C" "$V" status --watch --json > "$LAB_DIR/watch.fifo.out" 2>/dev/null &
LAB_PIDS+=($!)
WATCHER=$!
python3 - "$LAB_DIR/watch.fifo.out" "$RUNS" > "$LAB_DIR/watch.txt" <<'PY' &
import json, sys, time, calendar
path, runs = sys.argv[1], int(sys.argv[2])
f = open(path)
seen = 0
deadline = time.time() + 600
while seen < runs * 4 and time.time() < deadline:
    line = f.readline()
    if not line:
        time.sleep(0.0002); continue
    arrived = time.time()
    e = json.loads(line)
    t = e["time"]
    stamp = calendar.timegm(time.strptime(t[:19], "%Y-%m-%dT%H:%M:%S")) + int(t[20:23]) / 1000
    print(f"watch {max(0.0, (arrived - stamp) * 1000):.3f}")
    seen += 1
PY
READER=$!
sleep 0.5
for i in $(seq 1 "$RUNS"); do c "$V" start office >/dev/null; c "$V" stop office >/dev/null; done
wait $READER
kill $WATCHER; wait $WATCHER 2>/dev/null
python3 "$HERE/stats.py" < "$LAB_DIR/watch.txt"
echo "(the event time has millisecond resolution, so each figure is within 1 ms; target median < 5 ms)"
