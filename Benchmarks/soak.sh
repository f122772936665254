#!/usr/bin/env bash
# `make soak` (not CI): SOAK_CYCLES (default 1,000) start/stop cycles of one
# WireGuard profile in the lab. Every SOAK_EVERY cycles it samples the
# supervisor's fd count and RSS (a new supervisor each cycle: does the
# tenth-hundredth one need more than the first?), the CLI's peak RSS (start
# and stop under GNU time) and a long-lived CLI, `status --watch`, across all
# cycles (fds and RSS). Then SOAK_READERS (default 200) concurrent
# `status --json` readers, in waves, while the profile cycles: every read
# must exit 0 and parse. At the end nothing may be left: no utun link,
# route, UAPI socket, supervisor or provider.
# Usage: Benchmarks/soak.sh path/to/vpnctl
set -uo pipefail
V=$(realpath "${1:?usage: soak.sh path/to/vpnctl}")
CYCLES=${SOAK_CYCLES:-1000}
EVERY=${SOAK_EVERY:-$(( CYCLES >= 20 ? CYCLES / 20 : 1 ))}
READERS=${SOAK_READERS:-200}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../Tests/lab/lab.sh"
why=$(lab_cannot_run); [ -n "$why" ] && { echo "soak cannot run here: $why"; exit 1; }
[ -x /usr/bin/time ] || { echo "GNU time is needed: apt-get install --no-install-recommends time"; exit 1; }
trap lab_down EXIT
lab_up || exit 1
c "$V" import "$LAB_DIR/office.conf" >/dev/null || exit 1
SAMPLES=$LAB_DIR/samples.txt
: > "$SAMPLES"
fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null; }
record_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$1" "$2" 2>/dev/null; }
RECORD=$(ls "$VPNCTL_RUN_DIR"/*.json 2>/dev/null | head -1)

ip netns exec "$NS_C" "$V" status --watch --json > "$LAB_DIR/watch.out" 2>/dev/null &
WATCH=$!
LAB_PIDS+=($WATCH)
sleep 0.3

echo "== soak: $CYCLES start/stop cycles of one profile (samples every $EVERY)"
declare -A USED_IF=() SEEN_PIDS=() SEEN_PROVIDERS=()
failures=0
t0=$(date +%s)
for i in $(seq 1 "$CYCLES"); do
  if (( i % EVERY == 0 || i == 1 )); then
    /usr/bin/time -f "%M" -o "$LAB_DIR/start.rss" ip netns exec "$NS_C" "$V" start office >/dev/null 2>"$LAB_DIR/err" || { failures=$((failures + 1)); cat "$LAB_DIR/err"; }
    RECORD=${RECORD:-$(ls "$VPNCTL_RUN_DIR"/*.json | head -1)}
    sup=$(record_field "$RECORD" supervisorPid); prov=$(record_field "$RECORD" providerPid)
    echo "cycle $i supervisor_fds $(fds "$sup") supervisor_rss_kb $(rss "$sup") watch_fds $(fds $WATCH) watch_rss_kb $(rss $WATCH) start_peak_rss_kb $(cat "$LAB_DIR/start.rss")" >> "$SAMPLES"
    /usr/bin/time -f "%M" -o "$LAB_DIR/stop.rss" ip netns exec "$NS_C" "$V" stop office >/dev/null 2>"$LAB_DIR/err" || { failures=$((failures + 1)); cat "$LAB_DIR/err"; }
    echo "cycle $i stop_peak_rss_kb $(cat "$LAB_DIR/stop.rss")" >> "$SAMPLES"
  else
    c "$V" start office >/dev/null 2>"$LAB_DIR/err" || { failures=$((failures + 1)); cat "$LAB_DIR/err"; }
    RECORD=${RECORD:-$(ls "$VPNCTL_RUN_DIR"/*.json | head -1)}
    sup=$(record_field "$RECORD" supervisorPid); prov=$(record_field "$RECORD" providerPid)
    c "$V" stop office >/dev/null 2>"$LAB_DIR/err" || { failures=$((failures + 1)); cat "$LAB_DIR/err"; }
  fi
  [ -n "$sup" ] && SEEN_PIDS[$sup]=1
  [ -n "$prov" ] && SEEN_PROVIDERS[$prov]=1
  ifname=$(record_field "$RECORD" interface); [ -n "$ifname" ] && USED_IF[$ifname]=1
done
echo "cycles: $CYCLES in $(( $(date +%s) - t0 )) s, failed commands: $failures"
python3 - "$SAMPLES" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    p = line.split()
    for k, v in zip(p[2::2], p[3::2]):
        if v.isdigit(): rows.setdefault(k, []).append((int(p[1]), int(v)))
for k, vs in rows.items():
    n = len(vs); first = vs[: max(1, n // 4)]; last = vs[-max(1, n // 4):]
    a = sum(v for _, v in first) / len(first); b = sum(v for _, v in last) / len(last)
    grows = b > a * 1.10 + (2 if k.endswith("fds") else 256)
    print(f"{k:22s} first quarter {a:9.1f}  last quarter {b:9.1f}  min {min(v for _, v in vs):6d}  max {max(v for _, v in vs):6d}  {'GROWS' if grows else 'flat'}")
PY

echo "== $READERS concurrent status --json readers while the profile cycles"
( for i in $(seq 1 20); do c "$V" start office >/dev/null 2>&1; c "$V" stop office >/dev/null 2>&1; done; touch "$LAB_DIR/cycler.done" ) &
CYCLER=$!
LAB_PIDS+=($CYCLER)
ip netns exec "$NS_C" python3 - "$V" "$READERS" "$LAB_DIR/cycler.done" <<'PY'
import json, os, subprocess, sys, time
v, n, done = sys.argv[1], int(sys.argv[2]), sys.argv[3]
reads = errors = torn = waves = 0
seen = set()
deadline = time.time() + 300
while (not os.path.exists(done) or waves == 0) and time.time() < deadline:
    procs = [subprocess.Popen([v, "status", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(n)]
    for p in procs:
        out, err = p.communicate(timeout=60)
        reads += 1
        if p.returncode != 0 or err:
            errors += 1
            if errors <= 3: print(f"  error: exit {p.returncode}: {err.decode(errors='replace').strip()}")
            continue
        try:
            seen.add(json.loads(out)["profiles"][0]["status"])
        except Exception as e:
            torn += 1
            if torn <= 3: print(f"  torn: {e}: {out[:120]!r}")
    waves += 1
print(f"reads: {reads} in {waves} waves of {n}; errors: {errors}; unparsable: {torn}; statuses seen: {', '.join(sorted(seen))}")
sys.exit(1 if errors or torn else 0)
PY
readers=$?
wait $CYCLER 2>/dev/null
kill $WATCH 2>/dev/null; wait $WATCH 2>/dev/null
bad=$(python3 -c 'import json,sys
n = 0
for line in open(sys.argv[1]):
    try: json.loads(line)
    except Exception: n += 1
print(n)' "$LAB_DIR/watch.out")
echo "status --watch printed $(wc -l < "$LAB_DIR/watch.out") lines, $bad unparsable"

left=0
links=$(c ip -br link | grep -c '^utun' || true)
[ "$links" = 0 ] || { echo "LEFT: $links utun links"; left=1; }
routes=$(c ip route show | grep -c utun || true)
[ "$routes" = 0 ] || { echo "LEFT: $routes routes through utun"; left=1; }
for p in "${!SEEN_PIDS[@]}"; do
  if [ -d "/proc/$p" ] && grep -q __supervise "/proc/$p/cmdline" 2>/dev/null; then echo "LEFT: supervisor $p"; left=1; fi
done
for p in "${!SEEN_PROVIDERS[@]}"; do
  if [ -d "/proc/$p" ] && grep -q wireguard-go "/proc/$p/cmdline" 2>/dev/null; then echo "LEFT: provider $p"; left=1; fi
done
for i in "${!USED_IF[@]}"; do
  # The UAPI path is global: a live socket there may be another lab's; a
  # socket file nobody listens on is a leftover.
  if [ -S "/var/run/wireguard/$i.sock" ] && ! python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' \
       "/var/run/wireguard/$i.sock" 2>/dev/null; then echo "LEFT: stale UAPI socket $i"; left=1; fi
done
status=$(c "$V" status office --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["profiles"][0]["status"])')
[ "$status" = disconnected ] || { echo "LEFT: status $status"; left=1; }
[ $left = 0 ] && echo "nothing left: no utun link, route or stale UAPI socket, no supervisor ($(( ${#SEEN_PIDS[@]} )) seen) or provider ($(( ${#SEEN_PROVIDERS[@]} )) seen); status disconnected"
[ $left = 0 ] && [ $failures = 0 ] && [ $readers = 0 ]
