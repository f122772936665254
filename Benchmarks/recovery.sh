#!/usr/bin/env bash
# `make bench` (part 4): recovery after the underlay returns. The server's ends
# of the links go down for FAULT seconds (longer than openvpn's ping-restart,
# 10 s in this lab), then up; the time from then until vpnctl reads connected,
# against the same provider run by hand in its own namespace, facing the same
# fault at the same time (until a probe through its tunnel is answered).
# Usage: Benchmarks/recovery.sh path/to/vpnctl [runs] [fault seconds]
set -uo pipefail
V=$(realpath "${1:?usage: recovery.sh path/to/vpnctl [runs] [fault seconds]}")
RUNS=${2:-5}
FAULT=${3:-12}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../Tests/lab/lab.sh"
source "$HERE/../Tests/lab/openvpn.sh"
source "$HERE/../Tests/lab/recovery.sh"
why=$(lab_cannot_run); [ -n "$why" ] && { echo "benchmarks cannot run here: $why"; exit 1; }
trap lab_down EXIT
lab_up
ovpn_up || exit 1
rec_up || exit 1
c "$V" import "$LAB_DIR/roam.conf" >/dev/null
c "$V" import "$LAB_DIR/work.ovpn" --username alice >/dev/null 2>&1
printf 's3cret pass\n' | c "$V" secret set work password >/dev/null
field() {  # field PROFILE KEY: one field of `status --json`
  c "$V" status "$1" --json | python3 -c 'import json,sys; v=json.load(sys.stdin)["profiles"][0].get(sys.argv[1]); print("" if v is None else v)' "$2"
}

# bench PROFILE TARGET LABEL: RUNS underlay faults; 'label ms' lines.
bench() {
  local i
  for i in $(seq 1 "$RUNS"); do
    rec_cycle "$1" "$2" "$2" rec_underlay_down rec_underlay_up "$FAULT" yes "run $i" >&2 || continue
    echo "vpnctl_connected $REC_TC"
    echo "vpnctl_traffic $REC_TV"
    echo "by_hand_traffic $REC_TH"
  done
}
report() {  # ms in, seconds out; the target is 1.5x the hand-run time plus 1 s
  awk '{printf "%s %.3f\n", $1, $2 / 1000}' "$1" | python3 "$HERE/stats.py" --ratio vpnctl_connected by_hand_traffic "s; target <= 1.5x + 1 s"
  python3 - "$1" <<'PY'
import statistics, sys
d = {}
for l in open(sys.argv[1]):
    k, v = l.split(); d.setdefault(k, []).append(float(v) / 1000)
a, b = statistics.median(d["vpnctl_connected"]), statistics.median(d["by_hand_traffic"])
print(f"target {'met' if a <= 1.5 * b + 1 else 'MISSED'}: {a:.2f} s <= 1.5 x {b:.2f} s + 1 s = {1.5 * b + 1:.2f} s")
PY
}

echo "== WireGuard (endpoint through a default route): underlay down $FAULT s, runs: $RUNS"
rec_default_route add
rec_hand_wg_up
c "$V" start roam >/dev/null || exit 1
bench roam 198.19.0.1 > "$LAB_DIR/wg.txt"
c "$V" stop roam >/dev/null
rec_hand_wg_down
rec_default_route del
report "$LAB_DIR/wg.txt"

echo "== OpenVPN: underlay down $FAULT s, runs: $RUNS"
rec_hand_ovpn_up || exit 1
c "$V" start work --timeout 15 >/dev/null || exit 1
bench work 198.19.9.1 > "$LAB_DIR/ovpn.txt"
c "$V" stop work >/dev/null
rec_hand_ovpn_down
report "$LAB_DIR/ovpn.txt"
