# The agent, as the users it serves see it: real users and groups made by
# each case (names under $SEC_PREFIX, removed by the case's trap), a real
# agent started by the case inside a namespace of its own (so that a tunnel
# it starts is there, never in the host's), requests through the real CLI
# and through a raw socket. Sourced by run.sh.

# agent_up [AGENT-OPTION...]: users (a: named in office's policy; b: named
# in lab's, status and start only; c: in group g, which office names; d: in
# the admin group m), profiles office, lab and private (nobody named), and
# the agent. Sets AG_NS, AG_PID, AG_SOCK, the user names and AG_LOG.
agent_up() {
  need_user || return 2
  need_netns || return 2
  chmod 755 "$WORK"
  UA=${SEC_PREFIX}a UB=${SEC_PREFIX}b UC=${SEC_PREFIX}c UD=${SEC_PREFIX}d GG=${SEC_PREFIX}g GM=${SEC_PREFIX}m
  AG_USERS=() AG_GROUPS=() AG_PID="" AG_NS=""
  trap agent_down EXIT
  local g u
  for g in "$GG" "$GM"; do groupadd --system "$g" || return 1; AG_GROUPS+=("$g"); done
  for u in "$UA" "$UB" "$UC:$GG" "$UD:$GM"; do
    useradd --system --no-create-home --shell /usr/sbin/nologin ${u#*:} "${u%%:*}" 2>/dev/null \
      || useradd --system --no-create-home --shell /usr/sbin/nologin "${u%%:*}" || return 1
    AG_USERS+=("${u%%:*}")
  done
  usermod -aG "$GG" "$UC" && usermod -aG "$GM" "$UD" || return 1
  wg_conf > p.conf
  local n
  for n in office lab private; do "$BIN" import p.conf --name "$n" >/dev/null || return 1; done
  set_policy office "{\"users\":[\"$UA\"],\"groups\":[\"$GG\"]}" || return 1
  set_policy lab "{\"users\":[\"$UB\"],\"actions\":[\"status\",\"start\"]}" || return 1
  # The tunnel's endpoint (198.18.0.1) is routed but never answers: a start stays connecting.
  AG_NS=$(new_netns ag) || return 1
  ip -n "$AG_NS" link add "${SEC_PREFIX}v0" type veth peer name "${SEC_PREFIX}v1" || return 1
  ip -n "$AG_NS" addr add 198.18.0.2/24 dev "${SEC_PREFIX}v0" && ip -n "$AG_NS" link set "${SEC_PREFIX}v0" up || return 1
  ip -n "$AG_NS" link set "${SEC_PREFIX}v1" up
  AG_SOCK=$VPNCTL_RUN_DIR/agent.sock AG_LOG=$WORK/agent.log
  agent_start "$@"
}

agent_start() {
  ip netns exec "$AG_NS" "$BIN" agent --admin-group "$GM" "$@" >> "$AG_LOG" 2>&1 &
  AG_PID=$!
  wait_for "the agent's socket" 5 agent_answers || { cat "$AG_LOG"; return 1; }
}

# agent_answers: something accepts connections on the agent's socket.
agent_answers() { python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' "$AG_SOCK"; }

agent_down() {
  [ -n "$AG_PID" ] && stop_pid "$AG_PID"
  local rec pid
  for rec in "$VPNCTL_RUN_DIR"/*.json; do
    [ -e "$rec" ] || continue
    pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("supervisorPid") or "")' "$rec" 2>/dev/null)
    [ -n "$pid" ] && grep -q __supervise "/proc/$pid/cmdline" 2>/dev/null && stop_pid "$pid"
  done
  local u g p
  for u in "${AG_USERS[@]}"; do
    # A client a failed case left running: users this case made run only what it started.
    for p in $(pgrep -u "$u"); do kill -KILL "$p" 2>/dev/null; done
    userdel "$u" 2>/dev/null
  done
  for g in "${AG_GROUPS[@]}"; do groupdel "$g" 2>/dev/null; done
  [ -n "$AG_NS" ] && ip netns del "$AG_NS" 2>/dev/null
  return 0
}

# set_policy PROFILE JSON: as root, through vpnctl edit.
set_policy() {
  cat > "$WORK/set-policy.py" <<'PY'
import json, os, sys
p = json.load(open(sys.argv[1])); p["policy"] = json.loads(os.environ["POLICY"]); json.dump(p, open(sys.argv[1], "w"))
PY
  POLICY=$2 EDITOR="python3 $WORK/set-policy.py" "$BIN" edit "$1" >/dev/null
}

# as USER ARGS...: vpnctl as USER, with the system store (so it goes to the agent).
as() {
  local u=$1; shift
  env -u VPNCTL_CONFIG_DIR setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups "$BIN" "$@"
}
# root ARGS...: vpnctl as root, directly, where the agent runs.
root() { ip netns exec "$AG_NS" "$BIN" "$@"; }
# raw USER PYTHON-BYTES-LITERAL...: sends each literal as one connection's request; prints each reply's frames.
raw() {
  local u=$1; shift
  runuser -u "$u" -- python3 - "$AG_SOCK" "$@" <<'PY'
import socket, struct, sys
for lit in sys.argv[2:]:
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(10)
    data = eval(lit)   # the case's own literals, with * for sizes
    try:
        s.sendall(data)
    except OSError as e:
        print("send:", e)
    buf = b""
    try:
        while True:
            b = s.recv(65536)
            if not b: break
            buf += b
    except OSError as e:
        pass
    out = []
    if buf[:1] == b"{":
        # Protocol 2: JSON lines; the last is the result (exit 0) or the error (its code).
        import json
        for line in buf.split(b"\n"):
            if not line: continue
            r = json.loads(line)
            if r["event"] == "result": out += ["o:" + json.dumps(r["result"], separators=(",", ":")), "x:0"]
            elif r["event"] == "error": out += ["e:" + r["error"]["message"], "x:%d" % r["error"]["code"]]
            else: out.append(r["event"] + ":" + json.dumps(r))
    while buf[:1] != b"{" and len(buf) >= 5:
        # Protocol 1's frames, as an older client reads a refusal.
        t, n = buf[0:1].decode(), struct.unpack(">I", buf[1:5])[0]
        out.append(t + ":" + buf[5:5 + n].decode(errors="replace").replace("\n", "\\n")); buf = buf[5 + n:]
    print(" | ".join(out))
PY
}

# expect_code WANT WHAT CMD...: exit status WANT; output in $OUT.
expect_code() { local want=$1 what=$2; shift 2; expect_run "$what" "$want" "$@"; }

sec_agent_permitted_user_controls_the_profile() (
  agent_up || exit $?
  # The same bytes and exit status as root, for what the user may see.
  local mine theirs
  for args in "status office" "status office --json" "is-connected office" "stop office" "stop office --json" "can status office"; do
    mine=$(as "$UA" $args 2>&1; echo "exit $?"); theirs=$(root $args 2>&1; echo "exit $?")
    [ "$args" = "can status office" ] && { grep -q "^allowed: user '$UA' may see the status of 'office'" <<<"$mine" || { echo "  can: $mine"; exit 1; }; continue; }
    expect_eq "'$args' as $UA and as root" "$theirs" "$mine" || exit 1
  done
  # status --watch through the agent: the transitions the start and stop make.
  as "$UA" status office --watch --count 2 --json > "$WORK/watch.out" 2> "$WORK/watch.err" &
  local watcher=$!
  wait_for "the watch's worker" 5 pgrep -f "[_]_agent-run.*$VPNCTL_RUN_DIR" || exit 1
  sleep 0.3
  expect_ok "start by $UA" as "$UA" start office --no-wait || exit 1
  expect_eq "start's note" "start requested; status: connecting" "$OUT" || exit 1
  local id; id=$(profile_id office)
  wait_for "office's supervisor" 5 test -s "$VPNCTL_RUN_DIR/$id.json" || exit 1
  expect_eq "status as $UA and root" "$(root status office --json)" "$(as "$UA" status office --json)" || exit 1
  expect_match "status" '"status":"(connecting|reasserting)"' "$(as "$UA" status office --json)" || exit 1
  # The utun is in the agent's namespace, not the host's.
  ip -o link show | grep -q utun && { echo "  a utun appeared in the host namespace"; exit 1; }
  ip -n "$AG_NS" -o link show | grep -q utun || { echo "  no utun in the agent's namespace"; exit 1; }
  expect_ok "stop by $UA" as "$UA" stop office || exit 1
  expect_eq "stop's report" "stopped 'office'" "$OUT" || exit 1
  expect_eq "office's stop reason" userInitiated "$(root status office --json | json_get profiles.0.stopReason)" || exit 1
  wait_for "the watch to end after 2 transitions" 10 gone "$watcher" || exit 1
  wait "$watcher" || { echo "  the watch failed: $(cat "$WORK/watch.err")"; exit 1; }
  expect_eq "the watched transitions" "disconnected>connecting" \
    "$(python3 -c 'import json,sys; print(" ".join(l["previous"] + ">" + l["status"] for l in map(json.loads, open(sys.argv[1])))[:100])' "$WORK/watch.out" | cut -d' ' -f1)" || exit 1
  [ "$(wc -l < "$WORK/watch.out")" = 2 ] || { echo "  watch printed: $(cat "$WORK/watch.out")"; exit 1; }
  # A watcher that goes away ends its worker. (Not through `as`: a function
  # put in the background is a subshell, and $! must be vpnctl itself.)
  env -u VPNCTL_CONFIG_DIR setpriv --reuid="$UA" --regid="$(id -g "$UA")" --init-groups "$BIN" status --watch > /dev/null 2>&1 &
  watcher=$!
  wait_for "the watch's worker" 5 pgrep -f "[_]_agent-run.*$VPNCTL_RUN_DIR" || exit 1
  kill "$watcher"; wait "$watcher" 2>/dev/null
  wait_for "the worker to notice its client is gone" 5 bash -c "! pgrep -f '[_]_agent-run.*$VPNCTL_RUN_DIR'" || exit 1
  # A member of the group the policy names may too: toggle stops a running
  # tunnel, and starts a stopped one (which, with no peer, fails: 3 or 4).
  expect_ok "start by $UA again" as "$UA" start office --no-wait || exit 1
  # stop --all stops only what the caller may stop: $UB may stop nothing.
  expect_ok "stop --all by $UB" as "$UB" stop --all || exit 1
  expect_eq "stop --all by $UB" "no tunnel is running" "$OUT" || exit 1
  expect_match "office after $UB's stop --all" '"status":"(connecting|reasserting)"' "$(root status office --json)" || exit 1
  expect_ok "toggle by $UC (group $GG)" as "$UC" toggle office || exit 1
  expect_match "toggle's card" "disconnected +office" "$OUT" || exit 1
  expect_run "toggle by $UC again" nonzero as "$UC" toggle office --timeout 1 || exit 1
  expect_match "toggle's card" "office +serverNotResponding" "$OUT" || exit 1
  # Lists show what the user may see, nothing else.
  expect_eq "list as $UA" office "$(as "$UA" list --json | python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)["profiles"]))')" || exit 1
  expect_eq "status as $UB" lab "$(as "$UB" status --json | python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)["profiles"]))')" || exit 1
  expect_eq "status as admin $UD" "office lab private" "$(as "$UD" status --json | python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)["profiles"]))')" || exit 1
  # Logged: who, what, which profile, the result; never the key.
  grep -q "uid=$(id -u "$UA")($UA) pid=[0-9]* start 'office'.*accepted" "$AG_LOG" || { echo "  log:"; cat "$AG_LOG"; exit 1; }
  expect_absent "the private key" yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk= "$AG_LOG" "$VPNCTL_RUN_DIR" || exit 1
)

sec_agent_refusals_name_the_profile_and_agree_with_can() (
  agent_up || exit $?
  expect_code 11 "stop lab by $UB (lab grants status, start)" as "$UB" stop lab || exit 1
  expect_eq "the refusal" "vpnctl: user '$UB' may not stop 'lab': its policy grants only status, start
hint: root or a member of group '$GM' can grant it in the profile's policy: vpnctl edit lab" "$OUT" || exit 1
  expect_code 11 "stop lab by $UB --json" as "$UB" stop lab --json || exit 1
  expect_contains "the JSON refusal" '"code":11,' "$OUT" || exit 1
  # A profile whose policy grants the caller nothing is no profile of theirs (9), saying nothing of it.
  expect_code 9 "start office by $UB (named nowhere in it)" as "$UB" start office || exit 1
  expect_eq "the answer" "vpnctl: no profile named 'office'" "$(head -1 <<<"$OUT")" || exit 1
  expect_not_contains "the answer" "$UA" "$OUT" || exit 1
  expect_code 9 "start lab by $UA (allowed for office only)" as "$UA" start lab --json || exit 1
  expect_code 9 "stop private by $UC" as "$UC" stop private || exit 1
  expect_code 11 "import by a user" as "$UA" can import office || exit 1
  expect_ok "import by an admin" as "$UD" can import office || exit 1
  # can agrees with the agent, for every user, profile and action that starts nothing.
  local u p a want got
  for u in "$UA" "$UB" "$UC" "$UD"; do
    for p in office lab private; do
      for a in stop status; do
        as "$u" can "$a" "$p" >/dev/null 2>&1; want=$?
        if [ $a = stop ]; then as "$u" stop "$p" >/dev/null 2>&1; else as "$u" status "$p" >/dev/null 2>&1; fi; got=$?
        [ "$want" = "$got" ] || { echo "  $u $a $p: can says $want, the agent did $got"; exit 1; }
      done
      as "$u" can start "$p" >/dev/null 2>&1; want=$?
      if [ $want = 11 ]; then
        expect_code 11 "start $p by $u, as can said" as "$u" start "$p" || exit 1
      fi
    done
  done
  # A name nobody can see is no such profile (9), with no advice to import one.
  expect_code 9 "status of a typo by $UA" as "$UA" status offic || exit 1
  expect_contains "the hint" "did you mean 'office'?" "$OUT" || exit 1
  expect_code 9 "status of 'nothing' by $UB" as "$UB" status nothing || exit 1
  expect_not_contains "the hint" "vpnctl import" "$OUT" || exit 1
  grep -q "uid=$(id -u "$UB")($UB) pid=[0-9]* stop 'lab': denied" "$AG_LOG" || { echo "  no denial in the log"; cat "$AG_LOG"; exit 1; }
)

sec_agent_forged_and_hostile_requests() (
  agent_up --request-timeout 1000 || exit $?
  local out
  # Another uid, a config dir, a path: in the body they change nothing.
  out=$(raw "$UB" "b'{\"protocol\":2,\"call\":\"start\",\"profile\":\"office\",\"timeout\":20,\"uid\":0,\"gid\":0,\"user\":\"root\",\"configDir\":\"/tmp\"}\n'")
  expect_contains "forged uid" "no profile named 'office'" "$out" && expect_contains "forged uid" "x:9" "$out" || exit 1
  out=$(raw "$UB" "b'{\"protocol\":2,\"call\":\"stop\",\"profile\":\"lab\",\"timeout\":10,\"uid\":0,\"gid\":0,\"user\":\"root\"}\n'")
  expect_contains "forged uid" "may not stop 'lab'" "$out" && expect_contains "forged uid" "x:11" "$out" || exit 1
  out=$(raw "$UB" "b'{\"protocol\":2,\"call\":\"list\",\"uid\":0,\"runDir\":\"/tmp\"}\n'")
  expect_contains "forged list" '"name":"lab"' "$out" && expect_not_contains "forged list" office "$out" || exit 1
  # Calls the agent does not serve, other protocol versions, bad arguments,
  # garbage, oversize, NULs: exit 2, connection closed.
  out=$(raw "$UB" \
    "b'{\"verb\":\"status\",\"flags\":[\"config-dir\"]}\n'" \
    "b'{\"protocol\":3,\"call\":\"status\"}\n'" \
    "b'{\"protocol\":2,\"call\":\"import\",\"profile\":\"x\"}\n'" \
    "b'{\"protocol\":2,\"call\":\"start\",\"profile\":\"lab\\\\u0000x\",\"timeout\":5}\n'" \
    "b'not json at all\n'" \
    "b'[1,2,3]\n'" \
    "b'{\"protocol\":2,\"call\":\"status\"' + b' ' * 5000 + b'}\n'" \
    "b'\\xff\\xfe\\x00\\x01' * 2000" \
    "b'{\"protocol\":2,\"call\":\"start\",\"timeout\":5,\"profile\":\"' + b'a' * 300 + b'\"}\n'")
  [ "$(grep -c 'x:2$' <<<"$out")" = 9 ] || { echo "  expected 9 refusals (exit 2):"; echo "$out"; exit 1; }
  expect_contains "oversize" "larger than 4096 bytes" "$out" && expect_contains "a call it does not serve" "unknown call 'import'" "$out" || exit 1
  expect_contains "an older client, told in its own frames" "e:vpnctl: the vpnctl agent refused the request: the client speaks protocol 1 and this vpnctl agent protocol 2" "$out" || exit 1
  expect_contains "a newer client" "the client speaks protocol 3 and this vpnctl agent protocol 2: the agent is older than the client" "$out" || exit 1
  # A silent client and a slow one do not hold anybody up, and are cut off.
  runuser -u "$UB" -- python3 -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); time.sleep(4)' "$AG_SOCK" &
  local silent=$!
  runuser -u "$UB" -- python3 -c '
import socket,sys,time
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
for b in b"{\"protocol\":2,\"call\":\"list\"":
    try: s.send(bytes([b]))
    except OSError: break
    time.sleep(0.2)
' "$AG_SOCK" &
  local slow=$!
  sleep 0.2
  local t0=$(date +%s%N)
  expect_ok "status by $UA while two clients stall" as "$UA" status office || exit 1
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ $ms -lt 900 ] || { echo "  status took $ms ms while others stalled"; exit 1; }
  wait $silent $slow
  grep -q "malformed: no complete request within 1000 ms" "$AG_LOG" || { echo "  no cut-off in the log"; exit 1; }
  # A uid no database knows (a container's, say) gets an answer, not a crash.
  local nobody_uid=$(( 3000000 + $$ % 100000 ))
  expect_ok "status by uid $nobody_uid (no passwd entry)" \
    env -u VPNCTL_CONFIG_DIR setpriv --reuid=$nobody_uid --regid=$nobody_uid --clear-groups "$BIN" status || exit 1
  expect_code 9 "start by uid $nobody_uid" env -u VPNCTL_CONFIG_DIR setpriv --reuid=$nobody_uid --regid=$nobody_uid --clear-groups "$BIN" start office || exit 1
  expect_contains "the answer" "no profile's policy names you or a group of yours" "$OUT" || exit 1
  # Still alive and serving, same pid.
  gone "$AG_PID" && { echo "  the agent died"; cat "$AG_LOG"; exit 1; }
  expect_ok "status after the abuse" as "$UA" status office || exit 1
  # 200 clients at once are all answered.
  runuser -u "$UA" -- python3 - "$AG_SOCK" <<'PY' || exit 1
import json, socket, sys, struct
socks = []
for i in range(200):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); socks.append(s)
for s in socks: s.sendall(b'{"protocol":2,"call":"status"}\n')
ok = 0
bufs = []
for s in socks:
    s.settimeout(10); buf = b""
    while True:
        b = s.recv(65536)
        if not b: break
        buf += b
    bufs.append(buf)
    ok += buf.endswith(b"}\n") and json.loads(buf)["event"] == "result"
print("  200 concurrent clients: %d answered exit 0" % ok)
if ok != 200: print("  e.g.:", [b[:160] for b in bufs if b'"event":"result"' not in b][:3])
sys.exit(0 if ok == 200 else 1)
PY
)

sec_agent_not_running_says_how_to_start_it() (
  agent_up || exit $?
  stop_pid "$AG_PID"; AG_PID=""
  expect_code 11 "start with no agent" as "$UA" start office || exit 1
  expect_eq "the error" "vpnctl: 'start' needs root or the vpnctl agent, and the agent is not running (no agent at $AG_SOCK)
hint: start it with: systemctl start vpnctl-agent.socket (or run 'vpnctl agent' as root)" "$OUT" || exit 1
  # A socket left by a killed agent is no agent either.
  agent_start || exit 1
  kill -KILL "$AG_PID"; wait "$AG_PID" 2>/dev/null; AG_PID=""
  expect_code 11 "status with a dead agent's socket" as "$UA" status || exit 1
  expect_contains "the error" "the agent is not running" "$OUT" || exit 1
  # The next agent replaces the stale socket.
  agent_start || exit 1
  expect_ok "status with a new agent" as "$UA" status || exit 1
  # Not root: refused.
  expect_code 11 "agent as a user" runuser -u "$UA" -- "$BIN" agent --run-dir "$WORK/userrun" || exit 1
  expect_contains "the refusal" "the agent runs as root" "$OUT" || exit 1
)

sec_agent_refuses_untrusted_run_dirs() (
  agent_up || exit $?
  stop_pid "$AG_PID"; AG_PID=""
  mkdir -m 755 "$WORK/real"
  ln -s "$WORK/real" "$WORK/linked"
  expect_code 11 "a symlinked run dir" timeout 5 "$BIN" agent --run-dir "$WORK/linked" || exit 1
  expect_contains "the refusal" "symlink" "$OUT" || exit 1
  mkdir -m 755 "$WORK/theirs"; chown "$UA" "$WORK/theirs"
  expect_code 11 "a run dir a user owns" timeout 5 "$BIN" agent --run-dir "$WORK/theirs" || exit 1
  [ -e "$WORK/theirs/agent.sock" ] && { echo "  a socket was made in the user's dir"; exit 1; }
  # Something that is not a socket where the socket goes is not replaced.
  mkdir -m 755 "$WORK/r2"; echo keep > "$WORK/r2/agent.sock"
  expect_run "a file at the socket's path" nonzero timeout 5 "$BIN" agent --run-dir "$WORK/r2" || exit 1
  expect_eq "the file" keep "$(cat "$WORK/r2/agent.sock")" || exit 1
)

sec_agent_socket_activation_and_readiness() (
  command -v systemd-socket-activate >/dev/null || { echo "  skip: systemd-socket-activate is not installed"; exit 2; }
  agent_up || exit $?
  stop_pid "$AG_PID"; AG_PID=""
  rm -f "$AG_SOCK"
  # sd_notify: a datagram socket the test listens on.
  python3 - "$WORK/notify.sock" > "$WORK/notify.out" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1]); s.settimeout(15)
print(s.recv(4096).decode().replace("\n", " ")); sys.stdout.flush()
PY
  local listener=$!
  wait_for "the notify socket" 5 test -S "$WORK/notify.sock" || exit 1
  # systemd-socket-activate passes only the environment it is told to (-E).
  ip netns exec "$AG_NS" systemd-socket-activate -l "$AG_SOCK" -E NOTIFY_SOCKET="$WORK/notify.sock" \
    "$BIN" agent --admin-group "$GM" --config-dir "$VPNCTL_CONFIG_DIR" --run-dir "$VPNCTL_RUN_DIR" >> "$AG_LOG" 2>&1 &
  AG_PID=$!
  wait_for "the activation socket" 5 test -S "$AG_SOCK" || exit 1
  chmod 666 "$AG_SOCK"   # SocketMode=0666 in vpnctl-agent.socket
  # The first request starts the agent on the passed socket.
  expect_ok "status by $UA through an activated agent" as "$UA" status office --json || exit 1
  expect_contains "status" '"name":"office"' "$OUT" || exit 1
  grep -q "serving the socket systemd passed" "$AG_LOG" || { echo "  the agent made its own socket:"; cat "$AG_LOG"; exit 1; }
  wait_for "READY=1" 5 grep -q "READY=1" "$WORK/notify.out" || exit 1
  wait $listener
  expect_code 11 "stop lab by $UB, activated" as "$UB" stop lab || exit 1
)

# The units make install installs: systemd accepts them as they are (no
# warning either), with ExecStart pointing at a real vpnctl.
sec_agent_systemd_units_verify() (
  command -v systemd-analyze >/dev/null || { echo "  skip: systemd-analyze is not installed"; exit 2; }
  local units=$HERE/../../packaging/systemd u out
  for u in vpnctl-agent.socket vpnctl-agent.service vpnctl@.service vpnctl-block@.service; do
    sed "s|@BINDIR@|$(dirname "$BIN")|g" "$units/$u" > "$WORK/$u" || exit 1
  done
  out=$(cd "$WORK" && systemd-analyze verify --man=no ./vpnctl-agent.socket ./vpnctl-agent.service ./vpnctl@office.service ./vpnctl-block@office.service 2>&1) \
    || { echo "  systemd-analyze verify failed: $out"; exit 1; }
  [ -z "$out" ] || { echo "  systemd-analyze verify warned: $out"; exit 1; }
  grep -q '^KillMode=process$' "$WORK/vpnctl-agent.service" || { echo "  a restart of the agent would end tunnels"; exit 1; }
  grep -q '^SocketMode=0666$' "$WORK/vpnctl-agent.socket" && grep -q '^ListenStream=/run/vpnctl/agent.sock$' "$WORK/vpnctl-agent.socket" \
    || { echo "  the socket unit does not match vpnctl-agent(8)"; exit 1; }
)

# agent_request_ms USER-OR-root REQUEST-JSON: one request straight to the
# socket as that user; prints "<exit> <milliseconds>" (exit "-" when no
# exit frame came within 10 s).
agent_request_ms() {
  local u=$1 req=$2
  local py='
import socket, struct, sys, time
t0 = time.monotonic()
s = socket.socket(socket.AF_UNIX)
code = "-"
try:
    # A blocking connect, as vpnctl makes: it waits for room in the backlog.
    s.connect(sys.argv[1]); s.settimeout(10); s.sendall(sys.argv[2].encode() + b"\n")
    buf = b""
    while True:
        b = s.recv(65536)
        if not b: break
        buf += b
    import json
    last = json.loads(buf.rstrip(b"\n").split(b"\n")[-1])
    code = "0" if last["event"] == "result" else str(last["error"]["code"]) if last["event"] == "error" else "-"
except OSError:
    pass
print(code, int((time.monotonic() - t0) * 1000))'
  if [ "$u" = root ]; then python3 -c "$py" "$AG_SOCK" "$req"; else runuser -u "$u" -- python3 -c "$py" "$AG_SOCK" "$req"; fi
}

# Issue 29, item 5: one user floods the agent (600 connections held open,
# requests as fast as it can make them, garbage): another user's status
# and root's still answer in under 1 s, and the agent's log stays bounded.
sec_agent_flood_fair_share() (
  agent_up || exit $?
  local flood=$WORK/flood.py
  cat > "$flood" <<'PY'
import os, resource, select, socket, sys, time
path, seconds, mode = sys.argv[1], float(sys.argv[2]), sys.argv[3]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
end = time.monotonic() + seconds
def connect():
    s = socket.socket(socket.AF_UNIX); s.settimeout(2)
    try: s.connect(path); return s
    except OSError: s.close(); return None
if mode == "hold":
    # 600 connections that never send a request, opened again as the agent closes them.
    held = {}
    poller = select.poll()
    while time.monotonic() < end:
        while len(held) < 600 and time.monotonic() < end:
            s = connect()
            if s is None: break
            held[s.fileno()] = s; poller.register(s, select.POLLIN)
        for fd, _ in poller.poll(50):
            poller.unregister(fd); held.pop(fd).close()
else:
    request = b'{"protocol":2,"call":"status"}\n' if mode == "requests" else b'\xff{{{ garbage\n'
    while time.monotonic() < end:
        s = connect()
        if s is None: continue
        try:
            s.sendall(request)
            if mode == "requests":
                while s.recv(65536): pass
        except OSError: pass
        s.close()
PY
  local lines0 flooders=() m i
  lines0=$(wc -l < "$AG_LOG")
  for m in hold requests requests garbage; do
    runuser -u "$SEC_USER" -- timeout 20 python3 "$flood" "$AG_SOCK" 8 $m &
    flooders+=($!)
  done
  sleep 1.5
  local sample
  for i in 1 2 3 4 5; do
    local t0=$(date +%s%N)
    expect_ok "status by $UA while $SEC_USER floods (sample $i)" as "$UA" status office || { kill "${flooders[@]}" 2>/dev/null; exit 1; }
    local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    [ $ms -lt 1000 ] || { echo "  status by $UA took $ms ms while $SEC_USER flooded"; kill "${flooders[@]}" 2>/dev/null; exit 1; }
    sample=$(agent_request_ms root '{"protocol":2,"call":"status"}')
    [ "${sample%% *}" = 0 ] && [ "${sample##* }" -lt 1000 ] \
      || { echo "  root's status through the agent while $SEC_USER flooded: exit and ms: $sample"; kill "${flooders[@]}" 2>/dev/null; exit 1; }
    echo "  sample $i: $UA ${ms} ms, root ${sample##* } ms"
    sleep 0.7
  done
  wait "${flooders[@]}"
  gone "$AG_PID" && { echo "  the agent died"; tail -5 "$AG_LOG"; exit 1; }
  local added=$(( $(wc -l < "$AG_LOG") - lines0 ))
  echo "  the agent's log grew by $added lines during the flood"
  [ "$added" -lt 400 ] || { echo "  the log grew by $added lines in 8 s of flood:"; sort "$AG_LOG" | cut -c1-60 | uniq -c | sort -rn | head; exit 1; }
  # What was held back is said, counted, within a summary period.
  wait_for "a rate-limited summary in the log" 15 grep -q "^vpnctl agent: rate-limited: [0-9]* more lines like this" "$AG_LOG" || { tail -20 "$AG_LOG"; exit 1; }
  grep -q "refused uid=$(id -u "$SEC_USER") pid=[0-9]*: 256 requests of this uid are being read already" "$AG_LOG" \
    || { echo "  no refusal past the share in the log"; tail -20 "$AG_LOG"; exit 1; }
  # The flooder is served again once it stops.
  local tries=0
  until [ "$(agent_request_ms "$SEC_USER" '{"protocol":2,"call":"list"}' | cut -d' ' -f1)" = 0 ]; do
    tries=$((tries + 1)); [ $tries -lt 20 ] || { echo "  $SEC_USER is not answered after the flood"; tail -5 "$AG_LOG"; exit 1; }
    sleep 0.5
  done
)

# Issue 29, item 6: no reply names, suggests or describes a profile the
# caller may not see; a hidden profile reads as a name nothing has.
sec_agent_can_no_hidden_suggestion() (
  agent_up || exit $?
  "$BIN" import p.conf --name secretlab >/dev/null || exit 1
  local hidden; hidden=$(profile_id secretlab)
  local args ref got none
  for args in "can start REF" "can status REF --json" "start REF" "stop REF" "toggle REF" "status REF" "status REF --json" \
              "is-connected REF" "verify REF" "stats --profile REF" "status REF --watch"; do
    for ref in secretla secretlab ecretlab "$hidden" "${hidden^^}"; do
      got=$(timeout 10 env -u VPNCTL_CONFIG_DIR setpriv --reuid="$UA" --regid="$(id -g "$UA")" --init-groups "$BIN" ${args//REF/$ref} 2>&1; echo "exit $?")
      none=$(timeout 10 env -u VPNCTL_CONFIG_DIR setpriv --reuid="$UA" --regid="$(id -g "$UA")" --init-groups "$BIN" ${args//REF/zzzzzzzzzz} 2>&1; echo "exit $?")
      got=${got//$ref/REF} none=${none//zzzzzzzzzz/REF}
      expect_eq "'${args//REF/$ref}' by $UA reads as a name nothing has" "$none" "$got" || exit 1
      expect_not_contains "'${args//REF/$ref}' by $UA" secretlab "$got" || exit 1
    done
  done
  expect_contains "an absent name" "exit 9" "$none" || exit 1
  # Suggestions come from what the caller sees; an administrator sees everything.
  expect_code 9 "can start offic by $UA" as "$UA" can start offic || exit 1
  expect_contains "the hint" "did you mean 'office'?" "$OUT" || exit 1
  expect_code 9 "can start secretla by $UD (admin)" as "$UD" can start secretla || exit 1
  expect_contains "the admin's hint" "did you mean 'secretlab'?" "$OUT" || exit 1
  # A profile the caller sees is still refused with its policy's reason.
  expect_code 11 "can stop lab by $UB" as "$UB" can stop lab || exit 1
  expect_eq "the answer" "denied: user '$UB' may not stop 'lab': its policy grants only status, start" "$OUT" || exit 1
)

# Issue 29, item 7: a watch is decided again before each report. Revoked
# from a profile's policy, a watch of it ends with exit 11 and says why;
# out of the group that granted it, a watch of everything stops showing it.
sec_agent_watch_revoked() (
  agent_up || exit $?
  local a=$WORK/watch-a c=$WORK/watch-c
  env -u VPNCTL_CONFIG_DIR setpriv --reuid="$UA" --regid="$(id -g "$UA")" --init-groups "$BIN" status office --watch --json > "$a.out" 2> "$a.err" &
  local wa=$!
  env -u VPNCTL_CONFIG_DIR setpriv --reuid="$UC" --regid="$(id -g "$UC")" --init-groups "$BIN" status --watch --json > "$c.out" 2> "$c.err" &
  local wc=$!
  wait_for "two watch workers" 5 bash -c "[ \$(pgrep -fc '[_]_agent-run.*$VPNCTL_RUN_DIR') -ge 2 ]" || exit 1
  sleep 0.3
  expect_ok "start office" root start office --no-wait || exit 1
  wait_for "$UA's watch to report the start" 5 grep -q '"status":"connecting"' "$a.out" || { cat "$a.err"; exit 1; }
  wait_for "$UC's watch to report the start" 5 grep -q '"status":"connecting"' "$c.out" || { cat "$c.err"; exit 1; }
  # Revoke: $UA out of office's policy, $UC out of the group it names.
  set_policy office "{\"groups\":[\"$GG\"]}" || exit 1
  gpasswd -d "$UC" "$GG" >/dev/null || exit 1
  local na nc
  na=$(wc -l < "$a.out") nc=$(wc -l < "$c.out")
  expect_ok "stop office" root stop office || exit 1
  wait_for "$UA's watch to end" 10 gone "$wa" || { kill "$wc"; exit 1; }
  local rc=0; wait "$wa" || rc=$?
  expect_eq "$UA's watch's exit" 11 "$rc" || exit 1
  expect_eq "$UA's watch's last word" '"message":"the stream of '"'office'"' ends: you may no longer see it"' \
    "$(grep -o '"message":"[^"]*"' "$a.out" "$a.err" | head -1 | cut -d: -f2-)" || { cat "$a.out" "$a.err"; exit 1; }
  expect_eq "transitions $UA saw after the revocation" 0 "$(tail -n +$((na + 1)) "$a.out" | grep -c '"status"')" || { cat "$a.out"; exit 1; }
  sleep 1
  expect_eq "transitions $UC saw after the revocation" 0 "$(tail -n +$((nc + 1)) "$c.out" | grep -c '"status"')" || { cat "$c.out"; exit 1; }
  kill "$wc"; wait "$wc" 2>/dev/null
  # Text, not JSON: the message as a person reads it.
  set_policy office "{\"users\":[\"$UA\"]}" || exit 1
  env -u VPNCTL_CONFIG_DIR setpriv --reuid="$UA" --regid="$(id -g "$UA")" --init-groups "$BIN" status office --watch > "$a.out" 2> "$a.err" &
  wa=$!
  wait_for "the watch's worker" 5 pgrep -f "[_]_agent-run.*$VPNCTL_RUN_DIR" || exit 1
  set_policy office "{\"users\":[\"$UA\"],\"actions\":[\"start\"]}" || exit 1
  expect_ok "start office" root start office --no-wait || exit 1
  wait_for "$UA's watch to end" 10 gone "$wa" || exit 1
  rc=0; wait "$wa" || rc=$?
  expect_eq "$UA's watch's exit" 11 "$rc" || exit 1
  expect_contains "the message" "vpnctl: the stream of 'office' ends: user '$UA' may not see the status of 'office': its policy grants only start" "$(cat "$a.err")" || exit 1
  expect_not_contains "the watch's output" "connecting" "$(cat "$a.out")" || exit 1
  root stop office >/dev/null
)

# Issue 29, item 8: a worker's command line (which every user may read in
# /proc) names neither the request's profile nor the caller.
sec_agent_worker_argv_clean() (
  agent_up || exit $?
  local id uid; id=$(profile_id office) uid=$(id -u "$UA")
  env -u VPNCTL_CONFIG_DIR setpriv --reuid="$UA" --regid="$(id -g "$UA")" --init-groups "$BIN" status office --watch > /dev/null 2>&1 &
  local watcher=$!
  wait_for "the watch's worker" 5 pgrep -f "[_]_agent-run.*$VPNCTL_RUN_DIR" || exit 1
  local worker; worker=$(pgrep -f "[_]_agent-run.*$VPNCTL_RUN_DIR" | head -1)
  # As another user would read it.
  local argv; argv=$(runuser -u "$UB" -- cat "/proc/$worker/cmdline" | tr '\0' '\n')
  expect_contains "the worker's command line" "__agent-run" "$argv" || exit 1
  expect_not_contains "the worker's command line" "$id" "$argv" || exit 1
  expect_not_contains "the worker's command line" "office" "$argv" || exit 1
  expect_not_contains "the worker's command line" "--uid" "$argv" || exit 1
  expect_not_contains "the worker's command line" '"call"' "$argv" || exit 1
  grep -qx "$uid" <<<"$argv" && { echo "  the worker's command line holds $UA's uid: $argv"; exit 1; }
  runuser -u "$UB" -- cat "/proc/$worker/environ" >/dev/null 2>&1 && { echo "  another user reads the worker's environment"; exit 1; }
  # The watch still works: it reports a start.
  kill "$watcher"; wait "$watcher" 2>/dev/null
  # A worker started by hand, without the agent's socket, does nothing.
  expect_run "__agent-run without its order" nonzero runuser -u "$UB" -- "$BIN" __agent-run --config-dir "$VPNCTL_CONFIG_DIR" --run-dir "$VPNCTL_RUN_DIR" || exit 1
  expect_contains "the refusal" "reads its request from fd 4" "$OUT" || exit 1
)

# Issue 29, item 8, the same hole elsewhere: the agent's probe worker
# (on-demand probe URLs) has no URL on its command line either.
sec_agent_probe_argv_clean() (
  agent_up || exit $?
  cat > "$WORK/od-editor.py" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["onDemand"] = {"enabled": False, "rules": [{"action": "connect", "probeURL": "http://198.18.0.1:8080/token-a1b2c3"}]}
json.dump(p, open(sys.argv[1], "w"))
PY
  EDITOR="python3 $WORK/od-editor.py" "$BIN" edit office >/dev/null || exit 1
  expect_ok "ondemand enable office" "$BIN" ondemand enable office || exit 1
  # 198.18.0.1 never answers in the agent's namespace: the probe waits, and can be read.
  wait_for "the probe worker" 10 pgrep -f "[_]_probe" || { tail -5 "$AG_LOG"; exit 1; }
  local prober argv; prober=$(pgrep -f "[_]_probe" | head -1)
  argv=$(runuser -u "$UB" -- cat "/proc/$prober/cmdline" | tr '\0' '\n')
  expect_contains "the probe worker's command line" "__probe" "$argv" || exit 1
  expect_not_contains "the probe worker's command line" "token-a1b2c3" "$argv" || exit 1
  expect_not_contains "the probe worker's command line" "198.18.0.1" "$argv" || exit 1
  # It got the URL all the same: it is connecting to it.
  wait_for "the probe's connection to 198.18.0.1:8080" 5 \
    bash -c "ip netns exec '$AG_NS' ss -tnH state syn-sent dst 198.18.0.1:8080 | grep -q ." || exit 1
)
