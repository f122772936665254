#!/usr/bin/env bash
# `make bench`: per-app VPN. iperf3 for 3 s through the lab's WireGuard
# tunnel by a program the app rules match (vpnctl run, include mode: marked,
# rerouted, masqueraded) against the same tunnel without app rules, in
# alternating runs; then what `vpnctl run` adds to a command's start
# (hyperfine: `vpnctl run apps -- true` against `true`, both entered the same
# way). Usage: Benchmarks/apps.sh path/to/vpnctl [runs]
set -uo pipefail
V=$(realpath "${1:?usage: apps.sh path/to/vpnctl [runs]}")
RUNS=${2:-6}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../Tests/lab/lab.sh"
RESOLV=/etc/netns/$NS_C/resolv.conf
source "$HERE/../Tests/lab/apps.sh"
why=$(lab_cannot_run); [ -n "$why" ] && { echo "benchmarks cannot run here: $why"; exit 1; }
for p in iperf3 hyperfine; do command -v $p >/dev/null || { echo "$p is needed: apt-get install --no-install-recommends $p"; exit 1; }; done
trap 'lab_down' EXIT
lab_up || exit 1
c "$V" import "$LAB_DIR/office.conf" --name plain >/dev/null || exit 1
c "$V" import "$LAB_DIR/office.conf" --name apps >/dev/null || exit 1
printf '%s\n' 'import json, sys' 'p = json.load(open(sys.argv[1]))' \
  'p["appRules"] = {"mode": "include", "matches": [{"unit": "never-started.service"}]}' 'json.dump(p, open(sys.argv[1], "w"))' \
  > "$LAB_DIR/apps-rules.py"
EDITOR="python3 $LAB_DIR/apps-rules.py" c "$V" edit apps >/dev/null || exit 1

# tput PROFILE [RUNNER...]: Mbit/s the server received in 3 s from the client, through PROFILE's tunnel.
tput() {
  local profile=$1; shift
  ac "$V" start "$profile" >/dev/null || { echo "start $profile failed" >&2; exit 1; }
  ip netns exec "$NS_S" iperf3 -s -1 -B 198.19.0.1 > /dev/null 2>&1 &
  local srv=$!
  sleep 0.3
  ac "$@" iperf3 -c 198.19.0.1 -t 3 -J 2>&1 | python3 -c 'import json,sys
t = sys.stdin.read()
try: print("%.1f" % (json.loads(t[t.index("{"):])["end"]["sum_received"]["bits_per_second"] / 1e6))
except Exception: sys.exit("iperf3 failed: " + t[-400:])'
  wait $srv 2>/dev/null
  ac "$V" stop "$profile" >/dev/null
}

echo "== iperf3 through the tunnel: a program under include-mode app rules vs the same tunnel without app rules (runs: $RUNS)"
for i in $(seq 1 "$RUNS"); do
  for who in $([ $((i % 2)) = 1 ] && echo "apps plain" || echo "plain apps"); do
    if [ "$who" = apps ]; then echo "apps $(tput apps "$V" run apps --)"; else echo "plain $(tput plain)"; fi
  done
done > "$LAB_DIR/apps-tput.txt"
python3 "$HERE/stats.py" --ratio apps plain "Mbit/s; target >= 0.97" < "$LAB_DIR/apps-tput.txt"

echo "== the start of a command under vpnctl run vs the command alone (hyperfine, both through the lab's namespace entry)"
ac "$V" start apps >/dev/null || exit 1
AC=$(ac_script)
hyperfine -N --warmup 3 --runs 40 --export-json "$LAB_DIR/run.json" \
  "$AC /bin/true" "$AC env VPNCTL_CONFIG_DIR=$VPNCTL_CONFIG_DIR VPNCTL_RUN_DIR=$VPNCTL_RUN_DIR $V run apps -- /bin/true" > /dev/null || exit 1
python3 - "$LAB_DIR/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
alone, run = r[0]["median"] * 1000, r[1]["median"] * 1000
print(f"true alone median={alone:.2f} ms; under vpnctl run median={run:.2f} ms; vpnctl run adds {run - alone:.2f} ms ({run / alone:.2f}x)")
PY
ac "$V" stop apps >/dev/null
