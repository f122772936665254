# iperf3 through a lab tunnel, shared by the transport benchmarks (source it
# after Tests/lab/lab.sh; $HERE is the Benchmarks directory).

# throughput ADDR: bits per second an iperf3 server on ADDR in the server
# namespace received from the client namespace in 3 s.
throughput() {
  ip netns exec "$NS_S" iperf3 -s -1 -B "$1" > /dev/null 2>&1 &
  local srv=$!
  sleep 0.3
  c iperf3 -c "$1" -t 3 -J 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])'
  wait $srv 2>/dev/null
}

# compare_throughput ADDR RUNS HAND_UP HAND_DOWN VPNCTL_UP VPNCTL_DOWN: RUNS
# pairs of runs, the hand-run tunnel and vpnctl's, in alternating order (a
# shared machine's load drifts), then the medians in Mbit/s and their ratio.
compare_throughput() {
  local addr=$1 runs=$2 i who
  for i in $(seq 1 "$runs"); do
    for who in $([ $((i % 2)) = 1 ] && echo "hand vpnctl" || echo "vpnctl hand"); do
      if [ "$who" = hand ]; then "$3"; echo "hand $(throughput "$addr")"; "$4"
      else "$5"; echo "vpnctl $(throughput "$addr")"; "$6"; fi
    done
  done > "$LAB_DIR/tput.txt"
  awk '{printf "%s %.1f\n", $1, $2 / 1e6}' "$LAB_DIR/tput.txt" | python3 "$HERE/stats.py" --ratio vpnctl hand "Mbit/s; target >= 0.95"
}
