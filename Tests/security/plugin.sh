# Provider plugins: the entitlement checks, end to end, before anything is
# spawned. Each case installs a manifest in its own config dir (and an empty
# package dir of its own), and expects exit 10 naming the identifier and the
# file, with no supervisor started. Sourced by run.sh.

SEC_PLUG_ID=org.vpnctl.test.sec
# plug_install [USER]: $WORK/plug (root's, 0755) with a copy of /bin/true and a
# manifest for it in the config dir; the profile 'pp' naming SEC_PLUG_ID.
plug_install() {
  export VPNCTL_PROVIDERS_DIR=$WORK/pkg
  mkdir -p -m 755 "$WORK/plug" "$VPNCTL_CONFIG_DIR/providers"
  chmod 700 "$VPNCTL_CONFIG_DIR"; chmod 755 "$VPNCTL_CONFIG_DIR/providers"
  install -m 0755 /bin/true "$WORK/plug/true"
  plug_manifest "$VPNCTL_CONFIG_DIR/providers/p.json" "$WORK/plug/true" "${1:-nobody}"
  python3 - "$VPNCTL_CONFIG_DIR/preferences.json" "${2:-$SEC_PLUG_ID}" <<'PY'
import json, os, sys
os.umask(0o077)
json.dump({"schemaVersion": 1, "profiles": [{"id": "3f1c2a9e-0d4b-4c8e-9a57-2b6f1e0c7d11", "name": "pp", "enabled": True,
  "revision": 1, "protocol": {"type": "provider", "providerIdentifier": sys.argv[2]}}]}, open(sys.argv[1], "w"))
PY
}
plug_manifest() {  # plug_manifest FILE EXECUTABLE USER
  printf '{"identifier": "%s", "executable": "%s", "capabilities": ["packet-tunnel"], "user": "%s"}\n' "$SEC_PLUG_ID" "$2" "$3" > "$1"
  chmod 644 "$1"
}
# plug_refused WHAT PATTERN: start exits 10 with the identifier and PATTERN in
# the message, and no supervisor ran.
plug_refused() {
  local err rc
  err=$(timeout 20 "$BIN" start pp --timeout 2 2>&1); rc=$?
  [ $rc = 10 ] || { echo "  $1: exit $rc: $err"; return 1; }
  grep -qF "provider plugin '$SEC_PLUG_ID' may not run" <<<"$err" && grep -qF -- "$2" <<<"$err" \
    || { echo "  $1: said: $err"; return 1; }
  [ -z "$(ls "$VPNCTL_RUN_DIR"/*.json 2>/dev/null)" ] || { echo "  $1: a supervisor was started"; return 1; }
}

sec_plugin_manifest_of_another_user_refused() {
  need_user || return 2
  plug_install || return 1
  chown "$SEC_USER" "$VPNCTL_CONFIG_DIR/providers/p.json"
  plug_refused "manifest owned by $SEC_USER" "$VPNCTL_CONFIG_DIR/providers/p.json: is owned by uid $(id -u "$SEC_USER"), not root"
}

sec_plugin_executable_of_another_user_refused() {
  need_user || return 2
  plug_install || return 1
  chown "$SEC_USER" "$WORK/plug/true"
  plug_refused "executable owned by $SEC_USER" "$WORK/plug/true: is owned by uid $(id -u "$SEC_USER"), not root"
}

sec_plugin_writable_executable_refused() {
  plug_install || return 1
  chmod 0775 "$WORK/plug/true"
  plug_refused "group-writable executable" "$WORK/plug/true: is writable by group or others (mode 775)" || return 1
  chmod 0757 "$WORK/plug/true"
  plug_refused "world-writable executable" "$WORK/plug/true: is writable by group or others (mode 757)"
}

sec_plugin_symlinks_refused() {
  plug_install || return 1
  ln -s "$WORK/plug/true" "$WORK/plug/link"
  plug_manifest "$VPNCTL_CONFIG_DIR/providers/p.json" "$WORK/plug/link" nobody
  plug_refused "symlinked executable" "$WORK/plug/link: is a symlink" || return 1
  # A symlinked manifest is never read: its identifier is not installed.
  plug_manifest "$WORK/plug/real.json" "$WORK/plug/true" nobody
  rm "$VPNCTL_CONFIG_DIR/providers/p.json"; ln -s "$WORK/plug/real.json" "$VPNCTL_CONFIG_DIR/providers/p.json"
  local err rc
  err=$(timeout 20 "$BIN" start pp 2>&1); rc=$?
  [ $rc = 10 ] && grep -qF "no provider plugin '$SEC_PLUG_ID' is installed" <<<"$err" \
    && grep -qF "$VPNCTL_CONFIG_DIR/providers/p.json" <<<"$err" || { echo "  symlinked manifest: exit $rc: $err"; return 1; }
}

sec_plugin_writable_directory_refused() {
  plug_install || return 1
  chmod 0777 "$VPNCTL_CONFIG_DIR/providers"
  local err rc
  err=$(timeout 20 "$BIN" start pp 2>&1); rc=$?
  [ $rc = 10 ] && grep -qF "$VPNCTL_CONFIG_DIR/providers: is writable by group or others (mode 777)" <<<"$err" \
    || { echo "  exit $rc: $err"; return 1; }
  "$BIN" providers | grep -qF "refused: $VPNCTL_CONFIG_DIR/providers: is writable" || { echo "  providers does not say why"; return 1; }
}

sec_plugin_root_user_refused() {
  plug_install root || return 1
  plug_refused "user root" "names the user 'root' (uid 0, gid 0)"
}

sec_plugin_identifier_must_be_an_identifier() {
  plug_install nobody "../../bin/sh" || return 1
  local err rc
  err=$(timeout 20 "$BIN" start pp 2>&1); rc=$?
  [ $rc = 5 ] && grep -qF "protocol.providerIdentifier: '../../bin/sh' is not an identifier" <<<"$err" \
    || { echo "  exit $rc: $err"; return 1; }
}

# A root-owned executable in a directory another user owns: that user could
# swap it between the check and the exec.
sec_plugin_executable_in_another_users_directory_refused() {
  need_user || return 2
  plug_install || return 1
  mkdir -m 755 "$WORK/udir" && install -m 0755 /bin/true "$WORK/udir/true" && chown "$SEC_USER" "$WORK/udir"
  plug_manifest "$VPNCTL_CONFIG_DIR/providers/p.json" "$WORK/udir/true" nobody
  plug_refused "executable in $SEC_USER's directory" "$WORK/udir/true: is in $WORK/udir, which is owned by uid $(id -u "$SEC_USER"), not root"
}

# Item 9 (issue 29): a symlinked directory on the executable's path is judged
# at its target and at every directory above the target. Here the link and
# the target are root's, but the target's parent is the test user's: that
# user could swap the target (renameat2 RENAME_EXCHANGE) and have their own
# program run as the plugin's user.
sec_plugin_symlinked_directory_judged_at_its_target() {
  need_user || return 2
  plug_install || return 1
  mkdir -m 755 "$WORK/home" "$WORK/home/u" "$WORK/home/u/real" && chown "$SEC_USER" "$WORK/home/u" || return 1
  install -m 0755 /bin/true "$WORK/home/u/real/true" && ln -s "$WORK/home/u/real" "$WORK/plug/bin" || return 1
  plug_manifest "$VPNCTL_CONFIG_DIR/providers/p.json" "$WORK/plug/bin/true" nobody
  plug_refused "the target's parent owned by $SEC_USER" \
    "$WORK/plug/bin/true: is in $WORK/home/u, which is owned by uid $(id -u "$SEC_USER"), not root (reached through the symlink $WORK/plug/bin); every directory on the path, symlinks resolved, must be root's and writable only by root: make $WORK/home/u so (chown root, chmod go-w) or install the plugin elsewhere" || return 1
  "$BIN" providers | grep -qF "is in $WORK/home/u, which is owned by uid" || { echo "  providers does not say why"; return 1; }
  # The same through a relative link and '..'.
  rm "$WORK/plug/bin" && ln -s ../home/u/real "$WORK/plug/bin"
  plug_refused "a relative link" "is in $WORK/home/u, which is owned by uid $(id -u "$SEC_USER"), not root"
}

# Item 9: the file that was checked is the one that runs. strace holds the
# plugin's exec for 1.5 s at its entry (after every check); meanwhile the
# directory its path leads to is exchanged with another (renameat2
# RENAME_EXCHANGE, as root here, since the check leaves nobody else a way
# to). Run by its path looked up again, the swapped program would run.
sec_plugin_swap_after_the_check_runs_the_checked_file() {
  command -v strace >/dev/null || { echo "  skip: strace is not installed"; return 2; }
  plug_install || return 1
  chmod 755 "$WORK"   # so that a lookup by path as nobody would reach the swapped program
  mkdir -m 755 "$WORK/a" "$WORK/b" && ln -s "$WORK/a" "$WORK/plug/bin" || return 1
  printf '#!/bin/sh\necho THE-CHECKED-PLUGIN\nexec sleep 4\n' > "$WORK/a/plugin"
  printf '#!/bin/sh\necho THE-SWAPPED-PROGRAM\nexec sleep 4\n' > "$WORK/b/plugin"
  chmod 755 "$WORK/a/plugin" "$WORK/b/plugin"
  plug_manifest "$VPNCTL_CONFIG_DIR/providers/p.json" "$WORK/plug/bin/plugin" nobody
  local log=$VPNCTL_RUN_DIR/logs/3f1c2a9e-0d4b-4c8e-9a57-2b6f1e0c7d11.log tracer i
  strace -f -qq -y -o "$WORK/trace" -e trace=execve,execveat -e inject=execve,execveat:delay_enter=1500000 \
    timeout 30 "$BIN" start pp --no-wait --timeout 10 >"$WORK/start.out" 2>&1 &
  tracer=$!
  for i in $(seq 1 100); do
    grep -qE "execve\(\"$WORK/plug/bin/plugin\"|execveat\([0-9]+<$WORK/a/plugin>" "$WORK/trace" 2>/dev/null && break
    sleep 0.1
  done
  python3 - "$WORK/a" "$WORK/b" <<'PY' || { echo "  renameat2 failed"; kill "$tracer"; return 1; }
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
    raise OSError(ctypes.get_errno(), "renameat2")
PY
  for i in $(seq 1 60); do grep -qE "THE-(CHECKED-PLUGIN|SWAPPED-PROGRAM)" "$log" 2>/dev/null && break; sleep 0.1; done
  timeout 20 "$BIN" stop pp >/dev/null 2>&1
  wait "$tracer"
  if grep -q THE-SWAPPED-PROGRAM "$log" 2>/dev/null; then echo "  the swapped program ran:"; sed 's/^/  log | /' "$log"; return 1; fi
  grep -q THE-CHECKED-PLUGIN "$log" 2>/dev/null || {
    echo "  the checked plugin did not run either"; sed 's/^/  log | /' "$log" 2>/dev/null; sed 's/^/  start | /' "$WORK/start.out"
    grep -E "execve" "$WORK/trace" | tail -5 | sed 's/^/  trace | /'; return 1; }
}

# Item 10 (issue 29): a plugin's first settings with a route the kernel
# refuses (one that exists already, on another link) fail the start with the
# reason and change nothing: not the namespace's resolv.conf (its own, by
# /etc/netns), no route, no utun, no plugin process left.
sec_plugin_refused_route_changes_nothing() {
  need_netns || return 2
  plug_install || return 1
  chmod 755 "$WORK"
  local ns made_etc=no
  ns=$(new_netns s10) || { echo "  cannot create a namespace"; return 1; }
  [ -d /etc/netns ] || made_etc=yes
  [ -e "/etc/netns/$ns" ] && { echo "  /etc/netns/$ns exists already"; return 1; }
  # Expanded now: the trap runs after this function's locals are gone.
  trap "rm -rf '/etc/netns/$ns'; [ $made_etc = yes ] && rmdir /etc/netns 2>/dev/null; ip netns del '$ns' 2>/dev/null" EXIT
  mkdir -p "/etc/netns/$ns" && printf '# the lab namespace'"'"'s own\nnameserver 198.19.43.9\n' > "/etc/netns/$ns/resolv.conf" || return 1
  local before; before=$(cat "/etc/netns/$ns/resolv.conf")
  ip netns exec "$ns" ip route add 198.19.44.0/24 dev lo || return 1
  cat > "$WORK/plug/refused.sh" <<'SH'
#!/bin/sh
read -r start <&4
printf '%s\n' '{"type":"setTunnelNetworkSettings","id":1,"addresses":["198.19.43.2/32"],"routes":["198.19.43.0/24","198.19.44.0/24"],"dns":["198.19.43.53"]}' >&4
exec sleep 20
SH
  chmod 755 "$WORK/plug/refused.sh"
  plug_manifest "$VPNCTL_CONFIG_DIR/providers/p.json" "$WORK/plug/refused.sh" nobody
  local err rc
  err=$(ip netns exec "$ns" timeout 30 "$BIN" start pp --timeout 10 2>&1); rc=$?
  [ $rc != 0 ] || { echo "  start succeeded: $err"; return 1; }
  grep -qF "configurationFailed: plugin '$SEC_PLUG_ID''s settings were refused:" <<<"$err" \
    || { echo "  exit $rc: $err"; return 1; }
  local id=3f1c2a9e-0d4b-4c8e-9a57-2b6f1e0c7d11
  grep -qF "settings were not applied (nothing of them is left): add route 198.19.44.0/24" "$VPNCTL_RUN_DIR/logs/$id.log" \
    || { echo "  the log does not say so:"; sed 's/^/  log | /' "$VPNCTL_RUN_DIR/logs/$id.log"; return 1; }
  [ "$(cat "/etc/netns/$ns/resolv.conf")" = "$before" ] || { echo "  the resolver was changed:"; sed 's/^/  | /' "/etc/netns/$ns/resolv.conf"; return 1; }
  local routes; routes=$(ip -n "$ns" route show table all)
  grep -q 198.19.43 <<<"$routes" && { echo "  a route of the refused settings is left:"; echo "$routes" | sed 's/^/  | /'; return 1; }
  ip -n "$ns" -o link show | grep -q utun && { echo "  a utun is left"; return 1; }
  local pid; pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("providerPid") or "")' "$VPNCTL_RUN_DIR/$id.json")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] && [ "$(stat -c %u "/proc/$pid")" = "$(id -u nobody)" ] && { echo "  the plugin ($pid) still runs"; return 1; }
  return 0
}

# Item 11 (issue 29): a plugin that flaps its status 6,000 times leaves an
# events file under the bound (256 KiB, and its .1 too; unbounded, this was
# over 1 MB), its changes are coalesced (at most 10 a second), and a
# `status --watch` started before it still sees the last transition.
sec_plugin_flapping_is_bounded_and_watch_sees_the_last_transition() {
  need_netns || return 2
  plug_install || return 1
  chmod 755 "$WORK"   # so that today's lookup by path reaches it too
  local ns; ns=$(new_netns s11) || { echo "  cannot create a namespace"; return 1; }
  trap "ip netns del '$ns' 2>/dev/null" EXIT
  cat > "$WORK/plug/flap.sh" <<'SH'
#!/bin/sh
read -r start <&4
printf '%s\n' '{"type":"setTunnelNetworkSettings","id":1,"addresses":["198.19.45.2/32"],"routes":["198.19.45.0/24"]}' >&4
read -r reply <&4
printf '%s\n' '{"type":"status","status":"connected"}' >&4
i=0
while [ $i -lt 3000 ]; do
  printf '%s\n%s\n' '{"type":"status","status":"reasserting"}' '{"type":"status","status":"connected"}' >&4
  i=$((i + 1))
done
echo "flapped 6000 times"
exec sleep 30
SH
  chmod 755 "$WORK/plug/flap.sh"
  plug_manifest "$VPNCTL_CONFIG_DIR/providers/p.json" "$WORK/plug/flap.sh" nobody
  local id=3f1c2a9e-0d4b-4c8e-9a57-2b6f1e0c7d11 watcher err rc i
  mkdir -p -m 700 "$VPNCTL_RUN_DIR"
  ip netns exec "$ns" timeout 30 "$BIN" status --watch --json pp > "$WORK/watch.out" 2>"$WORK/watch.err" &
  watcher=$!
  sleep 0.5
  err=$(ip netns exec "$ns" timeout 30 "$BIN" start pp --timeout 10 2>&1); rc=$?
  [ $rc = 0 ] || { echo "  start: exit $rc: $err"; kill "$watcher"; return 1; }
  for i in $(seq 1 50); do grep -q "flapped 6000 times" "$VPNCTL_RUN_DIR/logs/$id.log" 2>/dev/null && break; sleep 0.1; done
  sleep 1.5   # the end of the coalescing second
  local status; status=$(ip netns exec "$ns" "$BIN" status pp --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print((d.get("profiles") or [d])[0].get("status"))' 2>&1)
  ip netns exec "$ns" timeout 20 "$BIN" stop pp >/dev/null 2>&1
  sleep 0.5; kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null
  local ev=$VPNCTL_RUN_DIR/$id.events size1 size2
  size1=$(stat -c %s "$ev" 2>/dev/null || echo 0); size2=$(stat -c %s "$ev.1" 2>/dev/null || echo 0)
  [ "$size1" -le 262144 ] && [ "$size2" -le 262144 ] || { echo "  events: $size1 + $size2 bytes (bound 262144 each)"; return 1; }
  local n; n=$(cat "$ev.1" "$ev" 2>/dev/null | wc -l)
  [ "$n" -le 40 ] || { echo "  $n transitions recorded for 6000 changes"; return 1; }
  grep -q 'status changes coalesced (more than 10 a second)' "$ev" || { echo "  no event says what was coalesced:"; sed 's/^/  events | /' "$ev"; return 1; }
  grep -qF "changes its status more than 10 times a second; coalescing" "$VPNCTL_RUN_DIR/logs/$id.log" || { echo "  the log does not say so"; return 1; }
  [ "$status" = connected ] || { echo "  status after the flapping: $status"; return 1; }
  # The watch's last transition before the stop is the last change the plugin asked for.
  local last; last=$(python3 - "$WORK/watch.out" <<'PY'
import json, sys
seen = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
before_stop = [e for e in seen if e["status"] not in ("disconnecting", "disconnected")]
print(before_stop[-1]["previous"] + ">" + before_stop[-1]["status"] if before_stop else "none")
PY
)
  [ "$last" = "reasserting>connected" ] || { echo "  the watch's last transition before the stop: $last"; sed 's/^/  watch | /' "$WORK/watch.out" | tail -5; cat "$WORK/watch.err"; return 1; }
}
