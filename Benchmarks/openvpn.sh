#!/usr/bin/env bash
# `make bench` (part 3): OpenVPN. start --wait to connected against a hand-run
# openvpn with the same configuration (the floor), and iperf3 throughput for
# 3 s through each tunnel, in the same lab and the same run.
# Usage: Benchmarks/openvpn.sh path/to/vpnctl [runs]
set -uo pipefail
V=$(realpath "${1:?usage: openvpn.sh path/to/vpnctl [runs]}")
RUNS=${2:-15}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../Tests/lab/lab.sh"
source "$HERE/../Tests/lab/openvpn.sh"
source "$HERE/throughput.sh"
why=$(lab_cannot_run); [ -n "$why" ] && { echo "benchmarks cannot run here: $why"; exit 1; }
command -v iperf3 >/dev/null || { echo "iperf3 is needed: apt-get install --no-install-recommends iperf3"; exit 1; }
trap 'hand_down; lab_down' EXIT
lab_up
ovpn_up || exit 1
c "$V" import "$LAB_DIR/work.ovpn" --username alice >/dev/null 2>&1
printf 's3cret pass\n' | c "$V" secret set work password >/dev/null

# The floor: the same client file run by hand (openvpn configures its own tun
# with ip), with the password in a file the benchmark owns.
printf 'alice\ns3cret pass\n' > "$LAB_DIR/pki/pass.txt"; chmod 600 "$LAB_DIR/pki/pass.txt"
sed "s|^auth-user-pass$|auth-user-pass $LAB_DIR/pki/pass.txt|; s|^dev tun$|dev utun9\ndev-type tun|" "$LAB_DIR/work.ovpn" > "$LAB_DIR/hand.ovpn"
hand_up() {  # starts openvpn by hand; returns once it says it is connected; sets HAND_PID
  # Its output is read through a pipe as it is written (no polling loop that
  # would take CPU from openvpn), then copied to hand.log in the background.
  local line ok=
  HAND_CAT=
  # In a session of its own (setsid), as vpnctl's openvpn is under its
  # detached supervisor: autogroup scheduling gives each session its own
  # share of the CPU, so the floor must not share the shell's (see ikev2.sh).
  exec {HAND_FD}< <(exec setsid ip netns exec "$NS_C" openvpn --config "$LAB_DIR/hand.ovpn" --disable-dco --verb 3 2>&1)
  HAND_PID=$!
  while IFS= read -r -t 20 -u "$HAND_FD" line; do
    echo "$line" >> "$LAB_DIR/hand.log"
    case $line in *"Initialization Sequence Completed"*) ok=1; break ;; esac
  done
  cat <&"$HAND_FD" >> "$LAB_DIR/hand.log" &
  HAND_CAT=$!
  exec {HAND_FD}<&-
  if [ -z "$ok" ]; then
    echo "hand-run openvpn failed:" >&2; tail -3 "$LAB_DIR/hand.log" >&2; hand_down; exit 1
  fi
}
hand_down() {
  [ -n "${HAND_PID:-}" ] || return 0
  kill "$HAND_PID" 2>/dev/null; wait "$HAND_PID" ${HAND_CAT:-} 2>/dev/null
  HAND_PID= HAND_CAT=
}

echo "== start --wait to connected vs hand-run openvpn (runs: $RUNS)"
for i in $(seq 1 "$RUNS"); do
  : > "$LAB_DIR/hand.log"
  t0=$(date +%s%N); hand_up; t1=$(date +%s%N); hand_down
  echo "floor $(( (t1 - t0) / 1000 ))" | awk '{printf "%s %.3f\n", $1, $2/1000}'
  t0=$(date +%s%N)
  if ! c "$V" start work >/dev/null; then
    echo "start failed; logs kept in /tmp/vpnctl-bench-failure" >&2
    mkdir -p /tmp/vpnctl-bench-failure && cp "$VPNCTL_RUN_DIR"/logs/*.log "$LAB_DIR"/ovpn-o.log "$LAB_DIR/hand.log" /tmp/vpnctl-bench-failure/
  fi
  t1=$(date +%s%N); c "$V" stop work >/dev/null
  echo "vpnctl $(( (t1 - t0) / 1000 ))" | awk '{printf "%s %.3f\n", $1, $2/1000}'
done > "$LAB_DIR/start.txt"
python3 "$HERE/stats.py" --ratio vpnctl floor "target <= 1.2" < "$LAB_DIR/start.txt"

echo "== iperf3 -t 3 through the tunnel: vpnctl-managed vs hand-run"
vpnctl_up() { c "$V" start work >/dev/null; }
vpnctl_down() { c "$V" stop work >/dev/null; }
compare_throughput 198.19.8.1 "${IPERF_RUNS:-4}" hand_up hand_down vpnctl_up vpnctl_down
