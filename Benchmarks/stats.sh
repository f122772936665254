#!/usr/bin/env bash
# `make bench` (part 2): vpnctl stats at scale. A lab namespace with 10,000
# ifb interfaces (this kernel has no dummy driver); whole-process medians,
# measured in the same run as the anchors.
# Usage: Benchmarks/stats.sh path/to/vpnctl [interfaces]
set -uo pipefail
V=$(realpath "${1:?usage: stats.sh path/to/vpnctl [interfaces]}")
N=${2:-10000}
NS=vbs$(( $$ % 100000 ))
OUT=$(mktemp -d /tmp/vpnctl-bench.XXXXXX)
cleanup() { ip netns del "$NS" 2>/dev/null; rm -rf "$OUT"; }
trap cleanup EXIT
ip netns add "$NS" || { echo "cannot create a network namespace"; exit 1; }
for i in $(seq 1 "$N"); do echo "link add b$i type ifb"; done > "$OUT/batch"
ip -n "$NS" -batch "$OUT/batch"
ip -n "$NS" link set b1 up
echo "== $N interfaces in namespace $NS ($(ip netns exec "$NS" sh -c 'wc -c < /proc/net/dev') bytes of /proc/net/dev)"
n() { ip netns exec "$NS" "$@"; }
n hyperfine -N -w 3 -r 25 --export-json "$OUT/all.json" \
  "$V stats --all --json" "ip -s -j link show" "cat /proc/net/dev" > /dev/null 2>&1
n hyperfine -N -w 10 -r 100 --export-json "$OUT/one.json" \
  "$V stats b1" "ip -s link show dev b1" > /dev/null 2>&1
python3 - "$OUT/all.json" "$OUT/one.json" <<'PY'
import json, sys
def medians(path):
    return {r["command"]: r["median"] * 1000 for r in json.load(open(path))["results"]}
a = medians(sys.argv[1]); o = medians(sys.argv[2])
v, ip, cat = (a[k] for k in a)
print(f"vpnctl stats --all --json   median {v:8.2f} ms")
print(f"ip -s -j link show          median {ip:8.2f} ms")
print(f"cat /proc/net/dev           median {cat:8.2f} ms")
print(f"ratio vs ip: {v / ip:.2f} (target <= 0.3)")
v1, ip1 = (o[k] for k in o)
print(f"vpnctl stats b1             median {v1:8.2f} ms")
print(f"ip -s link show dev b1      median {ip1:8.2f} ms")
print(f"ratio vs ip: {v1 / ip1:.2f} (target <= 2.0)")
PY
# The kernel's share: a dump of every link is ~1.5 KB of attributes each
# (14.8 MB for 10,000), printed by the kernel for vpnctl and ip alike.
echo "== user and system time (rusage of the child, median of 9)"
n python3 - "$V" <<'PY'
import os, subprocess, statistics, sys
for name, cmd in [("vpnctl stats --all --json", [sys.argv[1], "stats", "--all", "--json"]), ("ip -s -j link show", ["ip", "-s", "-j", "link", "show"])]:
    user, system = [], []
    for _ in range(9):
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        _, _, ru = os.wait4(p.pid, 0)
        user.append(ru.ru_utime * 1000); system.append(ru.ru_stime * 1000)
    print(f"  {name:28s} user {statistics.median(user):6.1f} ms   system {statistics.median(system):6.1f} ms")
PY
echo "== where the time goes (callgrind instruction counts, stats --all --json)"
n valgrind --tool=callgrind --callgrind-out-file="$OUT/cg" "$V" stats --all --json > /dev/null 2>&1
callgrind_annotate --inclusive=yes "$OUT/cg" 2>/dev/null | python3 -c '
import re, sys
want = [("total", "PROGRAM TOTALS"), ("RTM_GETLINK dump + parse", "LinkDumpO7forEach"),
        ("classify", "InterfaceFactsC5facts2of"), ("JSON output", "StatsCommandO9jsonBytes"),
        ("write to stdout", "FileDescriptorSinkC5write")]
rows = {}
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+) \(\s*([\d.]+)%\)\s+(.*)", line)
    if not m: continue
    for label, key in want:
        if key in m.group(3) and label not in rows:
            rows[label] = (m.group(1), m.group(2))
for label, _ in want:
    if label in rows: print(f"  {label:28s} {rows[label][0]:>14s} instructions ({rows[label][1]}%)")
'
