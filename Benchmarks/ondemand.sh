#!/usr/bin/env bash
# On-demand's reaction time: from a default route appearing to the tunnel
# connected (the agent evaluates the rules, starts the tunnel as `vpnctl
# start` does, wireguard-go handshakes), against a plain `vpnctl start --wait`
# measured in the same run (target: <= start + 50 ms). The lab's on-demand
# namespace (Tests/lab/ondemand.sh).
# Usage: Benchmarks/ondemand.sh path/to/vpnctl [runs]
set -uo pipefail
V=$(realpath "${1:?usage: ondemand.sh path/to/vpnctl [runs]}")
RUNS=${2:-15}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../Tests/lab/lab.sh"
source "$HERE/../Tests/lab/ondemand.sh"
why=$(lab_cannot_run); [ -n "$why" ] && { echo "benchmarks cannot run here: $why"; exit 1; }
trap 'od_agent_stop; lab_down' EXIT
T=$LAB_DIR/bench
mkdir -p "$T"
lab_up >/dev/null || { echo "the lab did not come up"; exit 1; }
ondemand_up || { echo "the on-demand lab did not come up"; exit 1; }
od_use >/dev/null || { echo "$OUT"; exit 1; }
ms() { date +%s%N; }

echo "== route appears -> connected (on-demand, through the agent) vs vpnctl start --wait; $RUNS runs each"
starts=() ondemand=()
for _ in $(seq "$RUNS"); do
  # Plain start: the route is there, on-demand paused (the stop pauses it).
  o "$V" ondemand pause od >/dev/null
  od_route_add
  t0=$(ms); o "$V" start od >/dev/null 2>&1 || { echo "start failed"; exit 1; }; t1=$(ms)
  starts+=($(( (t1 - t0) / 1000 )))
  o "$V" stop od >/dev/null 2>&1
  od_route_del
done
od_agent_start || exit 1
for _ in $(seq "$RUNS"); do
  o "$V" ondemand resume od >/dev/null
  sleep 0.5   # the agent has seen the resume: no route, nothing to do
  t0=$(ms); od_route_add
  until o "$V" is-connected od; do
    [ $(( ($(ms) - t0) / 1000000 )) -gt 15000 ] && { echo "od did not connect within 15 s"; tail "$T/agent.log"; exit 1; }
  done
  t1=$(ms)
  ondemand+=($(( (t1 - t0) / 1000 )))
  o "$V" stop od >/dev/null 2>&1   # pauses on-demand again
  od_route_del
done
python3 - "${starts[*]}" "${ondemand[*]}" <<'PY'
import statistics, sys
s = [int(x) / 1000 for x in sys.argv[1].split()]
o = [int(x) / 1000 for x in sys.argv[2].split()]
ms, mo = statistics.median(s), statistics.median(o)
print(f"vpnctl start --wait        median {ms:.1f} ms  (min {min(s):.1f}, max {max(s):.1f})")
print(f"route -> connected (agent) median {mo:.1f} ms  (min {min(o):.1f}, max {max(o):.1f})")
print(f"difference {mo - ms:+.1f} ms (target <= +50 ms)")
PY
