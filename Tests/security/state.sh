# Hostile state: directories, files and runtime records that root must not
# trust, and interfaces that are not vpnctl's. Sourced by run.sh.

# forge_record ID FIELDS-JSON: writes a runtime record for profile ID.
forge_record() {
  python3 - "$VPNCTL_RUN_DIR/$1.json" "$1" "$2" <<'PY'
import json, sys
r = {"schemaVersion": 1, "id": sys.argv[2], "name": "p", "status": "connected", "updatedAt": "2026-01-01T00:00:00.000Z"}
r.update(json.loads(sys.argv[3]))
json.dump(r, open(sys.argv[1], "w"))
PY
  chmod 600 "$VPNCTL_RUN_DIR/$1.json"
}
start_time() { awk '{print $22}' "/proc/$1/stat"; }
# import_p: the profile 'p' from wg_conf, as most cases start.
import_p() { wg_conf > p.conf && "$BIN" import p.conf >/dev/null; }
profile_id() { "$BIN" show "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["profile"]["id"])'; }

sec_state_open_config_dir_refused() {
  import_p || return 1
  chmod 777 "$VPNCTL_CONFIG_DIR"
  local err rc
  err=$(timeout 10 "$BIN" list 2>&1); rc=$?
  [ $rc = 11 ] || { echo "  exit $rc: $err"; return 1; }
  grep -q "$VPNCTL_CONFIG_DIR is writable by group or others" <<<"$err" && grep -q "hint: chmod go-w" <<<"$err" \
    || { echo "  said: $err"; return 1; }
}

sec_state_foreign_preferences_refused() {
  need_user || return 2
  import_p || return 1
  chown "$SEC_USER" "$VPNCTL_CONFIG_DIR/preferences.json"
  local err rc
  err=$(timeout 10 "$BIN" list 2>&1); rc=$?
  [ $rc = 11 ] && grep -q "preferences.json is owned by uid" <<<"$err" || { echo "  exit $rc: $err"; return 1; }
}

# A key secret planted by another user is refused before anything starts.
sec_state_foreign_secret_refused_at_start() {
  need_user || return 2
  import_p || return 1
  local id err rc
  id=$(profile_id p)
  chown "$SEC_USER" "$VPNCTL_CONFIG_DIR/secrets/$id/private-key"
  err=$(timeout 20 "$BIN" start p --timeout 2 2>&1); rc=$?
  [ $rc = 11 ] && grep -q "private-key is owned by uid" <<<"$err" || { echo "  exit $rc: $err"; return 1; }
  [ ! -e "$VPNCTL_RUN_DIR/$id.json" ] || { echo "  a supervisor was started"; return 1; }
}

# A run dir another user owns: its records are not obeyed (no kill, no delete).
sec_state_foreign_run_dir_refused() {
  need_user || return 2
  import_p || return 1
  local id victim err rc
  id=$(profile_id p)
  sleep 60 & victim=$!
  mkdir -p "$VPNCTL_RUN_DIR"
  forge_record "$id" "{\"supervisorPid\": $victim, \"supervisorStartTime\": $(start_time $victim)}"
  chown -R "$SEC_USER" "$VPNCTL_RUN_DIR"
  err=$(timeout 10 "$BIN" stop p 2>&1); rc=$?
  local alive=no; kill -0 $victim 2>/dev/null && alive=yes
  kill $victim; wait $victim 2>/dev/null
  [ $alive = yes ] || { echo "  root's stop killed an unrelated process"; return 1; }
  [ $rc = 11 ] && grep -q "$VPNCTL_RUN_DIR is owned by uid" <<<"$err" || { echo "  exit $rc: $err"; return 1; }
  timeout 10 "$BIN" status p >/dev/null 2>&1; rc=$?
  [ $rc = 11 ] || { echo "  status: exit $rc"; return 1; }
}

# A record in a trusted run dir that cannot prove itself: a live process that
# is not a supervisor, a provider pid without a start time, and an interface
# vpnctl did not create. stop must touch none of them.
sec_state_unproven_record_touches_nothing() {
  need_netns || return 2
  import_p || return 1
  local ns id v1 v2 index err rc
  ns=$(new_netns rec) || return 1
  ip netns exec "$ns" ip tuntap add dev utun7 mode tun || return 1
  index=$(ip netns exec "$ns" cat /sys/class/net/utun7/ifindex)
  id=$(profile_id p)
  sleep 60 & v1=$!
  sleep 60 & v2=$!
  mkdir -m 700 -p "$VPNCTL_RUN_DIR"
  forge_record "$id" "{\"supervisorPid\": $v1, \"supervisorStartTime\": $(start_time $v1), \"providerPid\": $v2, \"interface\": \"utun7\", \"ifindex\": $index}"
  err=$(timeout 10 ip netns exec "$ns" "$BIN" stop p 2>&1); rc=$?
  local bad=""
  kill -0 $v1 2>/dev/null || bad+=" the non-supervisor was killed;"
  kill -0 $v2 2>/dev/null || bad+=" the unproven provider was killed;"
  ip netns exec "$ns" ip link show utun7 >/dev/null 2>&1 || bad+=" the unmarked interface was deleted;"
  kill $v1 $v2; wait $v1 $v2 2>/dev/null
  [ -z "$bad" ] || { echo " $bad ($err)"; return 1; }
  [ $rc = 0 ] && grep -q "left interface utun7 alone" <<<"$err" || { echo "  exit $rc: $err"; return 1; }
}

# interfaceName naming an existing tun: refused before anything is touched.
sec_state_existing_interface_not_taken_over() {
  need_netns || return 2
  import_p || return 1
  local ns err rc
  ns=$(new_netns iface) || return 1
  ip netns exec "$ns" ip tuntap add dev admin0 mode tun || return 1
  python3 - "$VPNCTL_CONFIG_DIR/preferences.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["profiles"][0]["protocol"]["interfaceName"] = "admin0"
json.dump(d, open(sys.argv[1], "w"))
PY
  err=$(timeout 20 ip netns exec "$ns" "$BIN" start p 2>&1); rc=$?
  ip netns exec "$ns" ip link show admin0 >/dev/null 2>&1 || { echo "  admin0 was deleted"; return 1; }
  [ $rc = 5 ] && grep -q "interface admin0 already exists; vpnctl only creates new interfaces" <<<"$err" || { echo "  exit $rc: $err"; return 1; }
}

# An unprivileged user: its own store works; root's is closed to it; tunnels need CAP_NET_ADMIN.
sec_state_unprivileged_user() {
  need_user || return 2
  import_p || return 1
  local home err rc
  home=$(mktemp -d "$(dirname "$WORK")/home.XXXXXX")   # $WORK itself is root's 0700
  cp p.conf "$home/"; chown -R "$SEC_USER" "$home"
  err=$(as_user timeout 10 "$BIN" --config-dir "$VPNCTL_CONFIG_DIR" list 2>&1); rc=$?
  [ $rc = 11 ] || { echo "  reading root's store: exit $rc: $err"; return 1; }
  err=$(cd "$home" && as_user timeout 10 "$BIN" --config-dir "$home/etc" --run-dir "$home/run" import p.conf 2>&1); rc=$?
  [ $rc = 0 ] || { echo "  own store: exit $rc: $err"; return 1; }
  [ "$(stat -c %U "$home/etc/preferences.json")" = "$SEC_USER" ] || return 1
  err=$(as_user timeout 10 "$BIN" --config-dir "$home/etc" --run-dir "$home/run" start p 2>&1); rc=$?
  [ $rc = 11 ] && grep -q "CAP_NET_ADMIN" <<<"$err" || { echo "  start: exit $rc: $err"; return 1; }
  # Root refuses the state the user made.
  err=$(timeout 10 "$BIN" --config-dir "$home/etc" list 2>&1); rc=$?
  [ $rc = 11 ] || { echo "  root read the user's store: exit $rc: $err"; return 1; }
}
