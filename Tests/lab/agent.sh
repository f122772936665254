# The agent in the lab: users other than root bring a real tunnel up and
# down through `vpnctl agent`, which runs in the client namespace (so do the
# tunnels it starts). Users and groups are named after $LAB and removed by
# agent_lab_down (lab_down calls it too). Sourced by e2e.sh and demo.sh.

AGL_USERS=() AGL_PID=""

# agent_lab_up: users ${LAB}u1 (named in office's policy) and ${LAB}u2
# (named nowhere), and an agent serving $VPNCTL_RUN_DIR from the client
# namespace. Profiles are the caller's to import.
agent_lab_up() {
  local u
  for u in "${LAB}u1" "${LAB}u2"; do
    useradd --system --no-create-home --shell /usr/sbin/nologin "$u" || { echo "  lab set-up failed at: useradd $u"; return 1; }
    AGL_USERS+=("$u")
  done
  # The users reach the socket through the lab's dirs (files in them stay 0600).
  chmod 755 "$LAB_DIR" "$(dirname "$VPNCTL_RUN_DIR")"
  # The checkout may be in a 0700 directory: the users run a copy (with its catalogs) from the lab's own.
  mkdir -p -m 755 "$LAB_DIR/bin" && cp "$V" "$LAB_DIR/bin/vpnctl" && chmod 755 "$LAB_DIR/bin/vpnctl" \
    || { echo "  lab set-up failed at: copying vpnctl for the test users"; return 1; }
  # (and vpnctl-dbus beside it, which toggle --notify runs as the user)
  if [ -x "$(dirname "$V")/vpnctl-dbus" ]; then install -m 0755 "$(dirname "$V")/vpnctl-dbus" "$LAB_DIR/bin/vpnctl-dbus" || return 1; fi
  if [ -d "$(dirname "$V")/locale" ]; then cp -r "$(dirname "$V")/locale" "$LAB_DIR/bin/locale" && chmod -R go+rX "$LAB_DIR/bin/locale"; fi
  AGL_V=$LAB_DIR/bin/vpnctl
  agent_lab_start
}

agent_lab_start() {
  mkdir -p "$VPNCTL_RUN_DIR"
  # AGL_IN="ac": the per-app lab's namespace (its own cgroup2 mount), see apps.sh.
  ${AGL_IN:-ip netns exec "$NS_C"} "$V" agent >> "$(dirname "$VPNCTL_RUN_DIR")/agent.log" 2>&1 &
  AGL_PID=$!
  LAB_PIDS+=("$AGL_PID")
  wait_for "the agent's socket" 5 python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' \
    "$VPNCTL_RUN_DIR/agent.sock"
}

agent_lab_down() {
  [ -n "$AGL_PID" ] && stop_pid "$AGL_PID"
  AGL_PID=""
  local u
  for u in "${AGL_USERS[@]}"; do userdel "$u" 2>/dev/null; done
  AGL_USERS=()
  return 0
}

# agent_set_policy PROFILE JSON: as root, through vpnctl edit.
agent_set_policy() {
  printf '%s\n' 'import json, os, sys' \
    'p = json.load(open(sys.argv[1])); p["policy"] = json.loads(os.environ["POLICY"]); json.dump(p, open(sys.argv[1], "w"))' \
    > "$LAB_DIR/set-policy.py"
  POLICY=$2 EDITOR="python3 $LAB_DIR/set-policy.py" ip netns exec "$NS_C" "$V" edit "$1" >/dev/null
}

# as USER ARGS...: vpnctl as USER, on the system store: through the agent.
as() { local u=$1; shift; runuser -u "$u" -- env -u VPNCTL_CONFIG_DIR VPNCTL_RUN_DIR="$VPNCTL_RUN_DIR" "${AGL_V:-$V}" "$@"; }
# as_vi USER ARGS...: the same, by a user who reads Vietnamese.
as_vi() { local u=$1; shift; VPNCTL_LOCALEDIR=$(dirname "${AGL_V:-$V}")/locale LANGUAGE=vi as "$u" "$@"; }

test_agent_user_tunnel() {
  use office second || return 1
  agent_set_policy office "{\"users\":[\"${LAB}u1\"]}" || return 1
  agent_set_policy second "{\"users\":[\"${LAB}u2\"],\"actions\":[\"status\"]}" || return 1
  defer agent_lab_down
  agent_lab_up || return 1
  local u1=${LAB}u1 u2=${LAB}u2
  expect_ok "start by $u1" as "$u1" start office || return 1
  expect_match "start's report, as root's" "^connected 'office' \(utun[0-9]+\)$" "$OUT" || return 1
  expect_field office status connected || return 1
  expect_eq "status --json as $u1 and as root" "$(cn "$V" status office --json)" "$(as "$u1" status office --json)" || return 1
  # The agent answers in the client's language (its catalogs, beside the
  # agent's binary); --json stays English and byte-identical.
  expect_ok "status by $u1 in Vietnamese" as_vi "$u1" status office || return 1
  expect_contains "the agent's table in Vietnamese" "TRẠNG THÁI" "$OUT" && expect_contains "the status word" "đã kết nối" "$OUT" || return 1
  expect_eq "status --json by $u1 in Vietnamese" "$(cn "$V" status office --json)" "$(as_vi "$u1" status office --json)" || return 1
  # The next request does not inherit the last one's language: an error in JSON stays English.
  expect_ok "status in Vietnamese again" as_vi "$u1" status office || return 1
  expect_run "status of no such profile --json by $u1" nonzero as "$u1" status nosuch --json || return 1
  expect_contains "the JSON error after a Vietnamese request" "no profile named 'nosuch'" "$OUT" || return 1
  expect_ok "verify by $u1" as "$u1" verify office --probe http://198.19.0.1:8080/ || return 1
  expect_contains "verify" "verdict: path proven" "$OUT" || return 1
  # A profile whose policy grants u2 nothing is no profile of theirs (9).
  expect_run "stop office by $u2" 9 as "$u2" stop office || return 1
  expect_contains "the answer" "no profile named 'office'" "$OUT" || return 1
  expect_run "stop second by $u2 (status only)" 11 as "$u2" stop second || return 1
  expect_contains "the refusal" "user '$u2' may not stop 'second'" "$OUT" || return 1
  # A refusal reads in the client's language; the agent logs it in English.
  expect_run "stop second by $u2 in Vietnamese" 11 as_vi "$u2" stop second || return 1
  expect_contains "the refusal in Vietnamese" "người dùng '$u2' không được dừng 'second'" "$OUT" || return 1
  expect_eq "refusals the log has in English" 2 \
    "$(grep -c "($u2) pid=[0-9]* stop 'second': denied (exit 11): user '$u2' may not stop 'second'" "$(dirname "$VPNCTL_RUN_DIR")/agent.log")" || return 1
  expect_field office status connected || return 1
  expect_run "start second by $u1" 9 as "$u1" start second || return 1
  expect_run "second is untouched" 12 cn "$V" is-connected second || return 1
  expect_ok "toggle by $u1" as "$u1" toggle office || return 1
  expect_match "toggle's card" "disconnected +office" "$OUT" || return 1
  expect_field office stopReason userInitiated || return 1
  grep -q "uid=$(id -u "$u1")($u1) pid=[0-9]* start 'office'.*exit 0" "$(dirname "$VPNCTL_RUN_DIR")/agent.log" \
    || { echo "  the agent's log lacks the start"; return 1; }
  nothing_left
}

# The agent (and the worker answering) killed while a user waits for
# start --wait: the client says so clearly, the tunnel is its supervisor's
# and goes on, and a new agent reports the truth.
test_agent_killed_during_wait() {
  use office || return 1
  agent_set_policy office "{\"users\":[\"${LAB}u1\"]}" || return 1
  defer agent_lab_down
  agent_lab_up || return 1
  local u1=${LAB}u1 out rc worker
  silence_peer
  as "$u1" start office --wait --timeout 30 > "$LAB_DIR/agent-wait.out" 2>&1 &
  local client=$!
  wait_for "a worker for the start" 5 pgrep -f "[_]_agent-run.*$VPNCTL_RUN_DIR" || return 1
  worker=$(pgrep -f "[_]_agent-run.*$VPNCTL_RUN_DIR")
  wait_for "the tunnel to be connecting" 5 status_is office connecting || return 1
  kill -KILL "$AGL_PID"; wait "$AGL_PID" 2>/dev/null; AGL_PID=""
  kill -KILL "$worker"
  wait "$client"; rc=$?
  out=$(cat "$LAB_DIR/agent-wait.out")
  expect_eq "the client's exit" 1 "$rc" || return 1
  expect_contains "the client's error" "the vpnctl agent closed the connection before it answered" "$out" || return 1
  expect_contains "the client's hint" "tunnels are not affected; see 'vpnctl status'" "$out" || return 1
  expect_field office status connecting || return 1
  revive_peer
  agent_lab_start || return 1
  wait_for "office to connect by itself" 15 status_is office connected || return 1
  expect_eq "status as $u1 after the restart" "$(cn "$V" status office --json)" "$(as "$u1" status office --json)" || return 1
  expect_ok "stop by $u1" as "$u1" stop office || return 1
  nothing_left
}

# Issue 36 item 8: a user reads a profile's log through the agent (its
# policy's status), the same lines root reads; --follow streams the stop's
# lines; a user the policy does not name gets "no profile named" (9).
test_item8_agent_logs() {
  use office || return 1
  agent_set_policy office "{\"users\":[\"${LAB}u1\"]}" || return 1
  defer agent_lab_down
  agent_lab_up || return 1
  local u1=${LAB}u1 u2=${LAB}u2
  expect_ok "start by $u1" as "$u1" start office || return 1
  local iface; iface=$(field office interface)
  expect_ok "logs by $u1" as "$u1" logs office --since 10m || return 1
  expect_contains "logs by $u1" "[#] link $iface up" "$OUT" || return 1
  expect_eq "logs as $u1 and as root" "$(cn "$V" logs office --since 10m)" "$OUT" || return 1
  expect_run "logs by $u2" 9 as "$u2" logs office || return 1
  expect_contains "the answer to $u2" "no profile named 'office'" "$OUT" || return 1
  runuser -u "$u1" -- env -u VPNCTL_CONFIG_DIR VPNCTL_RUN_DIR="$VPNCTL_RUN_DIR" timeout 20 "$AGL_V" logs office --follow > "$T/follow.out" 2>&1 &
  local follower=$!
  wait_for "logs --follow by $u1 to print the log so far" 5 grep -qF "[#] link $iface up" "$T/follow.out" || { kill "$follower"; return 1; }
  pgrep -P "$AGL_PID" >/dev/null || { kill "$follower"; echo "  no worker of the agent streams the log"; return 1; }
  expect_ok "stop by $u1" as "$u1" stop office || { kill "$follower"; return 1; }
  wait_for "logs --follow by $u1 to print the stop" 5 grep -qF "[*] signal 15: stopping" "$T/follow.out" \
    || { kill "$follower"; echo "  it printed: $(cat "$T/follow.out")"; return 1; }
  kill "$follower"; wait "$follower" 2>/dev/null
  # The worker that streamed it ends with its client.
  wait_for "the agent's worker for --follow to end with its client" 5 bash -c "! pgrep -P $AGL_PID >/dev/null" \
    || { echo "  still running: $(pgrep -a -P "$AGL_PID")"; return 1; }
  nothing_left
}

# Issue 32: the agent driven by a client written against its typed protocol
# alone (Tests/lab/agent-client.py, Python), as a test user: typed results,
# events while a start waits, errors as data, a watch that streams
# transitions, show without a secret, the on-demand pause by its right, and
# version skew refused by name.
test_agent_typed_client() {
  use office second || return 1
  agent_set_policy office "{\"users\":[\"${LAB}u1\"]}" || return 1
  agent_set_policy second "{\"users\":[\"${LAB}u1\"],\"actions\":[\"status\"]}" || return 1
  defer agent_lab_down
  agent_lab_up || return 1
  local u1=${LAB}u1 sock=$VPNCTL_RUN_DIR/agent.sock client=$LAB_DIR/bin/agent-client.py
  cp "$HERE/agent-client.py" "$client" && chmod 755 "$client" || return 1
  py() { runuser -u "$u1" -- python3 "$client" "$sock" "$@"; }
  # reply EXPR: EXPR over the last reply line of $OUT (as `r`) and all of them (as `lines`).
  reply() { printf '%s\n' "$OUT" | python3 -c 'import json,sys; lines=[json.loads(l) for l in sys.stdin if l.startswith("{")]; r=lines[-1]; print(eval(sys.argv[1]))' "$1"; }
  expect_ok "list by the Python client" py list || return 1
  expect_eq "the profiles $u1 may see, typed" "office second True" "$(reply '" ".join(sorted(p["name"] for p in r["result"]["profiles"])) + " " + str(r["result"]["restricted"])')" || return 1
  expect_ok "start by the Python client" py start profile='"office"' wait=true timeout=20 changes=true || return 1
  expect_eq "the start's outcome and status" "connected connected" "$(reply 'r["result"]["outcome"] + " " + r["result"]["status"]["status"]')" || return 1
  expect_match "the waits it reported" "True" "$(reply 'any(l["event"] == "progress" and l["action"] == "start" for l in lines)')" || return 1
  expect_match "the supervisor's changes it reported" "True" "$(reply 'any(l["event"] == "change" and l["line"].startswith("[#] ") for l in lines)')" || return 1
  local iface; iface=$(reply 'r["result"]["status"]["interface"]')
  expect_field office interface "$iface" || return 1
  expect_ok "status by the Python client" py status profile='"office"' || return 1
  expect_eq "status, typed, as root's CLI says" "connected $iface" "$(reply 'r["result"]["profiles"][0]["status"]["status"] + " " + r["result"]["profiles"][0]["status"]["interface"]')" || return 1
  # A watch streams transitions until the client hangs up.
  runuser -u "$u1" -- python3 "$client" "$sock" watch profile='"office"' --until-events 1 > "$T/watch.out" 2>&1 &
  local watcher=$!
  wait_for "the watch to begin" 5 grep -q '"event": "watching"' "$T/watch.out" || { kill "$watcher"; return 1; }
  expect_ok "stop by root" cn "$V" stop office || { kill "$watcher"; return 1; }
  wait "$watcher"; expect_eq "the watch's exit" 0 "$?" || return 1
  expect_contains "the transition it streamed" '"previous": "connected"' "$(cat "$T/watch.out")" || return 1
  wait_for "the agent's worker for the watch to end with its client" 5 bash -c "! pgrep -P $AGL_PID >/dev/null" || return 1
  # Errors are data: code, stable name, message, remedy.
  expect_run "start of a status-only profile" 11 py start profile='"second"' wait=true timeout=5 || return 1
  expect_eq "the refusal, typed" "permissionDenied second" "$(reply 'r["error"]["name"] + " " + r["error"]["remedy"]["grant"]["profile"]')" || return 1
  expect_run "status of no such profile" 9 py status profile='"nosuch"' || return 1
  expect_eq "the error's name" configurationUnknown "$(reply 'r["error"]["name"]')" || return 1
  # show: the profile as stored, each secret named with whether it is set, never its value.
  expect_ok "show by the Python client" py show profile='"second"' || return 1
  expect_eq "the profile and its secret, typed" "second privateKeySecret True" "$(reply 'r["result"]["profile"]["name"] + " " + r["result"]["secrets"][0]["field"] + " " + str(r["result"]["secrets"][0]["set"])')" || return 1
  local key; key=$(awk '/^PrivateKey/ {print $3}' "$LAB_DIR/second.conf")
  expect_eq "the private key in show's reply" 0 "$(printf '%s' "$OUT" | grep -cF -- "$key")" || return 1
  # A pause needs the stop right, which second's policy does not give.
  expect_run "a pause of a status-only profile" 11 py pauseOnDemand profile='"second"' || return 1
  expect_ok "a pause of office" py pauseOnDemand profile='"office"' || return 1
  expect_eq "the pause, typed" "True True" "$(reply 'str(r["result"]["paused"]) + " " + str(r["result"]["changed"])')" || return 1
  expect_contains "root sees it" '"paused":true' "$(cn "$V" ondemand status office --json)" || return 1
  expect_ok "a resume of office" py resumeOnDemand profile='"office"' || return 1
  expect_run "a call the agent does not serve" 2 py import profile='"x"' || return 1
  expect_contains "its refusal" "unknown call 'import'" "$(reply 'r["error"]["message"]')" || return 1
  # An older client (protocol 1, binary frames) is told in its own frames.
  local old; old=$(runuser -u "$u1" -- python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"{\"verb\":\"status\"}\n"); d=b""
while True:
    c=s.recv(4096)
    if not c: break
    d+=c
print(chr(d[0]), d[5:].decode(errors="replace"))' "$sock")
  expect_contains "the refusal to a protocol 1 client" "e vpnctl: the vpnctl agent refused the request: the client speaks protocol 1 and this vpnctl agent protocol 2" "$old" || return 1
  nothing_left
}

# A user answers their own start's prompt through the agent: the question
# travels on that user's socket alone; another user watching the profile
# sees transitions, never the question; no answer, exit 5.
test_agent_user_answers_prompt() {
  expect_ok "import" cn "$V" import "$LAB_DIR/work.ovpn" --name asked --username alice || return 1
  agent_set_policy asked "{\"users\":[\"${LAB}u1\",\"${LAB}u2\"],\"actions\":[\"start\",\"stop\",\"status\"]}" || return 1
  defer agent_lab_down
  agent_lab_up || return 1
  local u1=${LAB}u1 u2=${LAB}u2
  expect_run "a start through the agent without a terminal" 5 as "$u1" start asked --timeout 15 </dev/null || return 1
  expect_contains "what was needed" "'asked' needs password, and nobody can be asked" "$OUT" || return 1
  # u2 watches the profile while u1 answers.
  as "$u2" status asked --watch --count 2 --json > "$T/u2-watch" 2>&1 &
  local watcher=$!
  OUT=$(python3 "$HERE/term-answer.py" 40 "Username [alice]: " "" "Password: " "s3cret pass" -- \
          runuser -u "$u1" -- env -u VPNCTL_CONFIG_DIR VPNCTL_RUN_DIR="$VPNCTL_RUN_DIR" "$AGL_V" start asked --timeout 15 2>&1)
  expect_contains "u1's start through the agent, answered on u1's terminal" "connected 'asked'" "$OUT" || { stop_pid "$watcher"; echo "$OUT" | sed 's/^/  | /'; return 1; }
  expect_not_contains "the password shown" "s3cret pass" "$OUT" || { stop_pid "$watcher"; return 1; }
  wait_for "u2's watch to see the connect" 10 grep -q '"status":"connected"' "$T/u2-watch"
  stop_pid "$watcher"
  expect_not_contains "the question in u2's watch" "Password" "$(cat "$T/u2-watch")" || return 1
  expect_not_contains "the question in u2's watch" "credentials" "$(cat "$T/u2-watch")" || return 1
  answer_nowhere "the password typed through the agent" "s3cret pass" || return 1
  expect_absent "the password in the agent's log" "s3cret pass" "$(dirname "$VPNCTL_RUN_DIR")/agent.log" || return 1
  expect_ok "stop by $u1" as "$u1" stop asked || return 1
  nothing_left
}

agent_lab_checks() {
  lab_check "agent: a client written against the typed protocol alone (Python): results, events, errors as data, a watch, version skew" \
    test_agent_typed_client
  lab_check "agent: a user reads a profile's log (and follows it) through the agent; a user not named gets exit 9" test_item8_agent_logs
  lab_check "agent: a user starts, verifies and toggles a real tunnel with root's output; others refused; nothing left" test_agent_user_tunnel
  [ "$ovpn_ready" = yes ] && lab_check "agent: credentials: a user answers their own start's prompt through the agent; another user watching never sees it; no terminal, exit 5" \
    test_agent_user_answers_prompt
  lab_check "agent: killed (and its worker) during a user's start --wait: a clear error, the tunnel goes on, a new agent reports it" \
    test_agent_killed_during_wait
}
