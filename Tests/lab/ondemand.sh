# On-demand in the lab (source after lab.sh and agent.sh; e2e.sh calls
# ondemand_checks): the agent runs a profile's rules in a client namespace of
# its own, whose default route and resolver the tests change.
#
#   client ns  ${LAB}o, veth ${LAB}o0 198.18.40.2  <->  ${LAB}s4 198.18.40.1 (server ns)
#              default via 198.18.40.1: added and deleted by the tests
#   tunnel     198.19.40.1 (server wg ${LAB}z, port 51840)  <->  198.19.40.2 (client utunN)
#   resolver   /etc/netns/${LAB}o/resolv.conf: saved before a test writes it, restored after
#
# The rules: disconnect on the trusted network (search domain corp.example),
# connect on ethernet, otherwise leave the tunnel alone.

NS_O=${LAB}o
ODL_RESOLV=/etc/netns/$NS_O/resolv.conf
ODL_AGENT=""
o() { ip netns exec "$NS_O" "$@"; }
ondemand_ready=no

ondemand_up() {
  lab_netns_add "$NS_O" || return 1
  need ip link add "${LAB}o0" netns "$NS_O" type veth peer name "${LAB}s4" netns "$NS_S" || return 1
  need o ip addr add 198.18.40.2/24 dev "${LAB}o0" || return 1
  need s ip addr add 198.18.40.1/24 dev "${LAB}s4" || return 1
  need o ip link set "${LAB}o0" up || return 1
  need s ip link set "${LAB}s4" up || return 1
  (umask 077; wg genkey > "$LAB_DIR/cliento.key") || { echo "  lab set-up failed at: wg genkey"; return 1; }
  wg pubkey < "$LAB_DIR/cliento.key" > "$LAB_DIR/cliento.pub"
  lab_server_peer "${LAB}z" 198.19.40.1 51840 "$(cat "$LAB_DIR/cliento.pub")" 198.19.40.2 || return 1
  lab_profile od cliento "${LAB}z" 198.19.40.2 198.19.40.0/24 51840 \
    | sed 's/^Endpoint = 198.18.0.1:/Endpoint = 198.18.40.1:/' > "$LAB_DIR/od.conf"
}

od_route_add() { o ip route replace default via 198.18.40.1; }
od_route_del() { o ip route del default via 198.18.40.1 2>/dev/null; return 0; }

# od_agent_start: the agent in the client namespace, logging to $T/agent.log.
od_agent_start() {
  mkdir -p "$VPNCTL_RUN_DIR"
  ip netns exec "$NS_O" "$V" agent >> "$T/agent.log" 2>&1 &
  ODL_AGENT=$!
  LAB_PIDS+=("$ODL_AGENT")
  wait_for "the agent's socket" 5 python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' \
    "$VPNCTL_RUN_DIR/agent.sock"
}
od_agent_stop() { [ -n "$ODL_AGENT" ] && stop_pid "$ODL_AGENT"; ODL_AGENT=""; return 0; }

# od_resolv_save / od_resolv_restore: the namespace's resolver file is put
# back as it was, in place (never deleted: it is the namespace's own).
od_resolv_save() { cp "$ODL_RESOLV" "$T/resolv.saved"; }
od_resolv_restore() { [ -f "$T/resolv.saved" ] && cat "$T/resolv.saved" > "$ODL_RESOLV"; return 0; }

# od_use [RULES_JSON]: the lab's od profile with the rules, on-demand enabled.
od_use() {
  local rules=${1:-'[{"action":"disconnect","dnsSearchDomains":["corp.example"]},{"action":"connect","interfaceType":"ethernet"},{"action":"ignore"}]'}
  expect_ok "import od.conf" o "$V" import "$LAB_DIR/od.conf" || return 1
  printf '#!/bin/sh\nexec python3 -c %q "$1"\n' \
    "import json,os,sys; f=sys.argv[1]; p=json.load(open(f)); p['onDemand']={'enabled': False, 'rules': json.loads(os.environ['RULES'])}; json.dump(p, open(f,'w'))" \
    > "$T/od-editor"
  chmod 700 "$T/od-editor"
  expect_ok "edit od's rules" o env RULES="$rules" EDITOR="$T/od-editor" "$V" edit od || return 1
  expect_ok "ondemand enable od" o "$V" ondemand enable od
}

# Every on-demand test starts from: no default route, the resolver as the lab
# made it, no agent; and ends so.
od_begin() {
  # Set up by the first test that needs it (E2E_ONLY may select none).
  if [ $ondemand_ready = no ]; then
    if ondemand_up; then ondemand_ready=yes; else ondemand_ready=broken; fi
  fi
  [ $ondemand_ready = yes ] || { echo "  the on-demand lab did not come up (see above for the step that broke)"; return 1; }
  od_route_del
  od_resolv_save
  defer od_cleanup
}
od_cleanup() {
  od_agent_stop
  lab_stop_supervisors "$VPNCTL_RUN_DIR" >/dev/null
  od_route_del
  od_resolv_restore
}
od_poke_connected() { o ping -n -q -c 1 -W 1 198.19.40.1 >/dev/null 2>&1; status_is od connected; }
od_starts() { grep -c "on-demand: starting 'od'" "$T/agent.log"; }
od_nothing_left() { local IN_NS=$NS_O; nothing_left; }

test_ondemand_route_and_domain() {
  od_begin || return 1
  local IN_NS=$NS_O
  od_use || return 1
  od_agent_start || return 1
  sleep 1
  expect_field od status disconnected || return 1
  expect_ok "ondemand test, no default route" o "$V" ondemand test od || return 1
  expect_contains "test: no route" "decision: rule 3: ignore" "$OUT" || return 1
  od_route_add
  wait_status od connected 10 || { cat "$T/agent.log"; return 1; }
  expect_field od startedBy.rule 2 || return 1
  expect_field od startedBy.reason "ethernet, search domain not corp.example" || return 1
  expect_ok "status" o "$V" status || return 1
  expect_contains "status" "od: connected, on-demand rule 2: ethernet, search domain not corp.example" "$OUT" || return 1
  expect_ok "ondemand test" o "$V" ondemand test od || return 1
  expect_contains "test's decision" "decision: rule 2: connect (ethernet, search domain not corp.example)" "$OUT" || return 1
  expect_contains "test's rule 1" "no   dnsSearchDomains: search domain not corp.example" "$OUT" || return 1
  # The trusted network: the search domain is written into the namespace's
  # resolver in place (a bind mount), which a watch on /etc would miss.
  printf 'nameserver 127.0.0.1\nsearch corp.example\n' > "$ODL_RESOLV"
  wait_status od disconnected 10 || { cat "$T/agent.log"; return 1; }
  sleep 3
  expect_field od status disconnected || return 1
  expect_eq "starts" 1 "$(od_starts)" || return 1
  grep -q "on-demand: stopping 'od' (on-demand rule 1: search domain corp.example)" "$T/agent.log" \
    || { echo "  the agent's log lacks the stop"; cat "$T/agent.log"; return 1; }
  # A start by hand on the same network is the user's: left up.
  expect_ok "start by hand on the trusted network" o "$V" start od || return 1
  sleep 2
  expect_field od status connected || return 1
  expect_field od startedBy "" || return 1
  expect_ok "stop" o "$V" stop od || return 1
  expect_ok "resume" o "$V" ondemand resume od || return 1
  # Off the trusted network again: up again.
  od_resolv_restore
  wait_status od connected 10 || { cat "$T/agent.log"; return 1; }
  od_agent_stop
  expect_ok "stop" o "$V" stop od || return 1
  od_nothing_left
}

test_ondemand_flap() {
  od_begin || return 1
  local IN_NS=$NS_O i
  od_use || return 1
  od_route_add
  od_agent_start || return 1
  wait_status od connected 10 || { cat "$T/agent.log"; return 1; }
  for i in 1 2 3 4 5; do
    o ip link set "${LAB}o0" down; sleep 0.4
    o ip link set "${LAB}o0" up; od_route_add; sleep 0.6
  done
  # WireGuard comes back from reasserting with a handshake, which traffic prompts.
  wait_for "od to read connected again" 25 od_poke_connected || { cat "$T/agent.log"; field od status; return 1; }
  local n; n=$(od_starts)
  [ "$n" -ge 1 ] && [ "$n" -le 6 ] || { echo "  $n starts for 5 flaps (at most one a flap, plus the first)"; cat "$T/agent.log"; return 1; }
  echo "  ($n start(s) for 5 flaps)"
  expect_eq "supervisors" 1 "$(pgrep -fc "[_]_supervise.*$VPNCTL_RUN_DIR")" || return 1
  od_agent_stop
  expect_ok "stop" o "$V" stop od || return 1
  od_nothing_left
}

test_ondemand_stop_pauses_and_restart() {
  od_begin || return 1
  local IN_NS=$NS_O
  od_use || return 1
  od_route_add
  od_agent_start || return 1
  wait_status od connected 10 || { cat "$T/agent.log"; return 1; }
  expect_ok "stop" o "$V" stop od || return 1
  expect_contains "stop says it paused" "on-demand paused for 'od'" "$OUT" || return 1
  sleep 3
  expect_field od status disconnected || return 1
  expect_ok "ondemand status" o "$V" ondemand status od || return 1
  expect_match "ondemand status" "^od +paused +3 +disconnected" "$OUT" || return 1
  expect_ok "status" o "$V" status || return 1
  expect_contains "status" "od: on-demand paused (vpnctl ondemand resume od)" "$OUT" || return 1
  # The pause outlives the agent.
  od_agent_stop
  od_agent_start || return 1
  sleep 3
  expect_field od status disconnected || return 1
  expect_ok "resume" o "$V" ondemand resume od || return 1
  wait_status od connected 10 || { cat "$T/agent.log"; return 1; }
  local sup iface; sup=$(record od supervisorPid) iface=$(field od interface)
  # A restarted agent finds the tunnel up: no second one.
  od_agent_stop
  od_agent_start || return 1
  sleep 3
  expect_eq "supervisors after the restart" 1 "$(pgrep -fc "[_]_supervise.*$VPNCTL_RUN_DIR")" || return 1
  expect_eq "the same supervisor" "$sup" "$(record od supervisorPid)" || return 1
  expect_eq "the same interface" "$iface" "$(field od interface)" || return 1
  expect_eq "utun interfaces" 1 "$(o ip -o link show | grep -cE ' utun[0-9]+[:@]')" || return 1
  od_agent_stop
  expect_ok "stop" o "$V" stop od || return 1
  od_nothing_left
}

test_ondemand_probe_warning() {
  od_begin || return 1
  local IN_NS=$NS_O
  od_use '[{"action":"connect","probeURL":"http://198.19.40.1:8080/"},{"action":"ignore"}]' || return 1
  expect_contains "enable's warning" "198.19.40.1 is inside the tunnel's route 198.19.40.0/24" "$OUT" || return 1
  expect_ok "ondemand test" o "$V" ondemand test od || return 1
  expect_contains "test's warning" "warning: onDemand.rules[0].probeURL: 198.19.40.1 is inside the tunnel's route 198.19.40.0/24" "$OUT" || return 1
  expect_contains "test: the probe fails without the tunnel" "no   probeURL: probe http://198.19.40.1:8080/ failed" "$OUT" || return 1
  expect_contains "test's decision" "decision: rule 2: ignore" "$OUT" || return 1
  # A probe that answers without the tunnel (an HTTP server on the server's
  # underlay address): a disconnect rule on it keeps the tunnel down.
  (cd "$T" && exec ip netns exec "$NS_S" python3 -m http.server --bind 198.18.40.1 8041) > "$T/http.log" 2>&1 &
  local http=$!
  LAB_PIDS+=("$http")
  defer stop_pid "$http"
  wait_for "the probe's HTTP server" 6 o bash -c 'exec 3<>/dev/tcp/198.18.40.1/8041' || return 1
  printf '#!/bin/sh\nexec python3 -c %q "$1"\n' \
    "import json,sys; f=sys.argv[1]; p=json.load(open(f)); p['onDemand']['rules']=[{'action':'disconnect','probeURL':'http://198.18.40.1:8041/'},{'action':'connect','interfaceType':'ethernet'}]; json.dump(p, open(f,'w'))" \
    > "$T/od-editor3"
  chmod 700 "$T/od-editor3"
  expect_ok "edit: a disconnect rule with a probe" o env EDITOR="$T/od-editor3" "$V" edit od || return 1
  od_route_add
  expect_ok "ondemand test" o "$V" ondemand test od || return 1
  expect_contains "the probe answered" "yes  probeURL: probe http://198.18.40.1:8041/ answered 200" "$OUT" || return 1
  expect_contains "test's decision" "decision: rule 1: disconnect" "$OUT" || return 1
  od_agent_start || return 1
  wait_for "the agent to evaluate" 5 grep -q "rule 1 (disconnect) matches: probe http://198.18.40.1:8041/ answered 200" "$T/agent.log" \
    || { cat "$T/agent.log"; return 1; }
  expect_ok "ondemand status" o "$V" ondemand status od || return 1
  expect_contains "the agent's decision" "rule 1: disconnect (probe http://198.18.40.1:8041/ answered 200)" "$OUT" || return 1
  expect_field od status disconnected || return 1
  od_agent_stop
  # evaluateConnection is refused, with the way out.
  printf '#!/bin/sh\nexec python3 -c %q "$1"\n' \
    "import json,sys; f=sys.argv[1]; p=json.load(open(f)); p['onDemand']['rules'][0]['action']='evaluateConnection'; json.dump(p, open(f,'w'))" \
    > "$T/od-editor2"
  chmod 700 "$T/od-editor2"
  expect_run "evaluateConnection" 5 o env EDITOR="$T/od-editor2" "$V" edit od || return 1
  expect_contains "the refusal" "evaluateConnection needs a per-connection hook that Linux does not give" "$OUT"
}

# A start that cannot succeed (the private key removed: refused before any
# spawn) is retried with back-off, not in a loop; a network change retries at once.
test_ondemand_backoff() {
  od_begin || return 1
  local IN_NS=$NS_O
  od_use || return 1
  expect_ok "remove the key" o "$V" secret remove od private-key || return 1
  od_agent_start || return 1
  od_route_add
  sleep 6
  local n; n=$(grep -c "on-demand: cannot start 'od'" "$T/agent.log")
  # 1 s, 2 s, 4 s steps, each at least half: at most 4 tries in 6 s (5 with timing slack).
  [ "$n" -ge 2 ] && [ "$n" -le 5 ] || { echo "  $n failed starts in 6 s"; cat "$T/agent.log"; return 1; }
  grep -q "next try in .* s (failure 2)" "$T/agent.log" || { echo "  no back-off in the log"; cat "$T/agent.log"; return 1; }
  # The trusted network and back: a network change, so the next try is at once.
  printf 'nameserver 127.0.0.1\nsearch corp.example\n' > "$ODL_RESOLV"
  wait_for "the agent to see the trusted network" 5 grep -q "rule 1 (disconnect) matches" "$T/agent.log" || return 1
  od_resolv_restore
  wait_for "a try after the network change" 3 od_failures_over "$n" || { cat "$T/agent.log"; return 1; }
  expect_field od status disconnected || return 1
  od_agent_stop
  od_nothing_left
}
od_failures_over() { [ "$(grep -c "on-demand: cannot start 'od'" "$T/agent.log")" -gt "$1" ]; }

ondemand_checks() {
  lab_check "ondemand: a default route appearing brings the tunnel up (startedBy rule 2); search domain corp.example takes it down and keeps it down" \
    test_ondemand_route_and_domain
  lab_check "ondemand: the underlay flapping 5 times causes no storm of starts" test_ondemand_flap
  lab_check "ondemand: stop pauses (and an agent restart keeps the pause); resume; a restarted agent duplicates no tunnel" \
    test_ondemand_stop_pauses_and_restart
  lab_check "ondemand: a start that keeps failing is retried with back-off, not in a loop; a network change retries at once" \
    test_ondemand_backoff
  lab_check "ondemand: a tunnel-only probe URL gets the warning; a probe that answers decides; evaluateConnection is refused" \
    test_ondemand_probe_warning
}
