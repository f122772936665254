# The D-Bus API (issue 33), sourced by e2e.sh after agent.sh. A private
# system bus of the lab's own (dbus-daemon with the lab's config, its socket
# in the lab's dir, the installed policy file included) and vpnctl-dbus on it,
# root, in the client namespace. Clients are busctl, dbus-send and
# dbus-monitor, as root and as the agent lab's users.

DBL_DIR="" DBL_BUS="" DBL_SVC=""
dbl_address() { echo "unix:path=$DBL_DIR/bus.sock"; }
B() { busctl --address="$(dbl_address)" "$@"; }
# as_bus USER busctl ARGS...: busctl as USER.
as_bus() { local u=$1; shift; runuser -u "$u" -- busctl --address="$(dbl_address)" "$@"; }
# dbus_call USER PATH INTERFACE.METHOD [OPTIONS_JSON]: the python3-dbus client (prints an error's name).
dbus_call() {
  local who=()
  [ "$1" != root ] && who=(runuser -u "$1" --)
  "${who[@]}" /usr/bin/python3 "$DBL_DIR/dbus-call.py" "$(dbl_address)" "${@:2}" 2>&1
}
# dbus_send USER ARGS...: dbus-send --print-reply (it prints an error's name).
# dbus_listen USER FILE: a listener of PropertiesChanged (dbus-listen.py)
# for 60 s at most, its lines in FILE; its pid in LISTENER.
dbus_listen() {
  local who=()
  [ "$1" != root ] && who=(runuser -u "$1" --)
  "${who[@]}" /usr/bin/python3 "$DBL_DIR/dbus-listen.py" "$(dbl_address)" 60 > "$2" 2>&1 &
  LISTENER=$!
  LAB_PIDS+=("$LISTENER")
  wait_for "a listener as $1" 5 grep -q '^listening' "$2" || { cat "$2"; return 1; }
}
dbus_send() {
  local who=()
  [ "$1" != root ] && who=(runuser -u "$1" --)
  shift
  "${who[@]}" dbus-send --bus="$(dbl_address)" --print-reply --dest=org.vpnctl.VPN1 "$@" 2>&1
}

# dbus_bus_conf SOCKET: a system bus's configuration as Debian's default
# policy has it (calls only where a policy file allows them, replies and
# signals), listening on SOCKET, with vpnctl's installed policy file.
dbus_bus_conf() {
  local policy; policy=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../dbus" && pwd)/org.vpnctl.VPN1.conf
  cat <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$1</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Monitoring"/>
  </policy>
  <include>$policy</include>
</busconfig>
CONF
}

dbus_lab_up() {
  DBL_DIR=$LAB_DIR/dbus
  mkdir -p -m 755 "$DBL_DIR"
  # The users run the client from the lab's dir (the checkout may be 0700).
  install -m 0755 "$HERE/dbus-call.py" "$DBL_DIR/dbus-call.py" || return 1
  install -m 0755 "$HERE/dbus-listen.py" "$DBL_DIR/dbus-listen.py" || return 1
  dbus_bus_conf "$DBL_DIR/bus.sock" > "$DBL_DIR/bus.conf"
  dbus-daemon --config-file="$DBL_DIR/bus.conf" --nofork --nopidfile > "$DBL_DIR/bus.log" 2>&1 &
  DBL_BUS=$!
  LAB_PIDS+=("$DBL_BUS")
  wait_for "the lab's bus" 5 test -S "$DBL_DIR/bus.sock" || { cat "$DBL_DIR/bus.log"; return 1; }
  ip netns exec "$NS_C" "$(dirname "$V")/vpnctl-dbus" --address "$(dbl_address)" > "$DBL_DIR/service.log" 2>&1 &
  DBL_SVC=$!
  LAB_PIDS+=("$DBL_SVC")
  wait_for "org.vpnctl.VPN1 on the lab's bus" 5 bash -c "busctl --address='$(dbl_address)' list | grep -q '^org.vpnctl.VPN1 '" \
    || { cat "$DBL_DIR/service.log"; return 1; }
}

dbus_lab_down() {
  [ -n "$DBL_SVC" ] && stop_pid "$DBL_SVC"
  [ -n "$DBL_BUS" ] && stop_pid "$DBL_BUS"
  DBL_SVC="" DBL_BUS=""
  return 0
}

# The org.vpnctl interfaces of introspection XML, as comparable text.
dbl_interfaces() {
  python3 - "$1" <<'PY'
import re, sys, xml.etree.ElementTree as ET
text = open(sys.argv[1]).read()
text = re.sub(r"<!DOCTYPE[^>]*>", "", text)
out = []
for i in ET.fromstring(text).iter("interface"):
    if not i.get("name", "").startswith("org.vpnctl."): continue
    for e in i:
        args = ",".join(f"{a.get('name')}:{a.get('type')}:{a.get('direction', '')}" for a in e.iter("arg"))
        out.append(f"{i.get('name')} {e.tag} {e.get('name')} {e.get('type', '')} {e.get('access', '')} {args}")
print("\n".join(sorted(out)))
PY
}

# dbl_accepted N: the silent server (test_dbus_api) has accepted N connections.
dbl_accepted() { [ "$(grep -c accepted "$T/silent.txt")" -ge "$1" ]; }

test_dbus_api() {
  use office || return 1
  agent_set_policy office "{\"users\":[\"${LAB}u1\"]}" || return 1
  defer agent_lab_down
  agent_lab_up || return 1
  defer dbus_lab_down
  dbus_lab_up || return 1
  local u1=${LAB}u1 u2=${LAB}u2 p
  expect_ok "ListProfiles as root" B call org.vpnctl.VPN1 /org/vpnctl/VPN1 org.vpnctl.VPN1.Manager ListProfiles || return 1
  p=/org/vpnctl/VPN1/profile/$(field office id | tr -d -)
  expect_eq "ListProfiles" "ao 1 \"$p\"" "$OUT" || return 1
  expect_ok "GetProfileByName office as $u1" as_bus "$u1" call org.vpnctl.VPN1 /org/vpnctl/VPN1 org.vpnctl.VPN1.Manager GetProfileByName s office || return 1
  expect_eq "office's object" "o \"$p\"" "$OUT" || return 1
  # What the service answers is the installed XML.
  B introspect --xml-interface org.vpnctl.VPN1 /org/vpnctl/VPN1 > "$T/manager.xml" && B introspect --xml-interface org.vpnctl.VPN1 "$p" > "$T/profile.xml" || return 1
  expect_eq "the served interfaces (the manager's and a profile's) and the installed XML" "$(dbl_interfaces "$HERE/../../dbus/org.vpnctl.VPN1.xml")" \
    "$( (dbl_interfaces "$T/manager.xml"; dbl_interfaces "$T/profile.xml") | sort)" || return 1
  expect_ok "Status as $u1" as_bus "$u1" get-property org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Status || return 1
  expect_eq "Status" '(us) 1 "disconnected"' "$OUT" || return 1

  # Every transition, whoever causes it, is a PropertiesChanged, sent to
  # each caller that may see the profile ($u1), never to the whole bus ($u2).
  dbus_listen "$u1" "$T/u1.txt" || return 1
  defer stop_pid $LISTENER
  dbus_listen "$u2" "$T/u2.txt" || return 1
  defer stop_pid $LISTENER
  dbus-monitor --address "$(dbl_address)" "type='signal',sender='org.vpnctl.VPN1',member='PropertiesChanged'" > "$T/signals.txt" 2>&1 &
  local monitor=$!
  defer stop_pid $monitor
  # (it is a monitor once the bus took its name back)
  wait_for "dbus-monitor to listen" 5 grep -q NameLost "$T/signals.txt" || { cat "$T/signals.txt"; return 1; }
  expect_ok "Start as $u1" as_bus "$u1" call org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Start 'a{sv}' 0 || return 1
  wait_status office connected 10 || return 1
  expect_ok "ping through the tunnel D-Bus started" c ping -c 1 -W 2 198.19.0.1 || return 1
  wait_for "PropertiesChanged to connected" 5 grep -q 'string "connected"' "$T/signals.txt" || { cat "$T/signals.txt"; return 1; }
  expect_ok "Interface as $u1" as_bus "$u1" get-property org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Interface || return 1
  expect_eq "Interface" "s \"$(field office interface)\"" "$OUT" || return 1
  expect_ok "stop from the command line" cn "$V" stop office || return 1
  wait_for "PropertiesChanged to disconnected (a stop by the CLI)" 5 grep -q 'string "disconnected"' "$T/signals.txt" || { cat "$T/signals.txt"; return 1; }
  # A provider's death (started by a Toggle, from the python client).
  expect_ok "Toggle as $u1" dbus_call "$u1" "$p" org.vpnctl.VPN1.Profile.Toggle || return 1
  wait_status office connected 10 || return 1
  # Verify proves the path as `vpnctl verify` does; a probe left hanging
  # (a server that accepts and never answers) holds up nobody else.
  expect_ok "Verify as $u1" as_bus "$u1" call org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Verify s http://198.19.0.1:8080/ || return 1
  expect_contains "Verify's verdict" '"Verdict" s "path proven"' "$OUT" || return 1
  expect_contains "Verify's Proven" '"Proven" b true' "$OUT" || return 1
  printf '%s\n' 'import socket, sys, time' 's = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)' \
    's.bind(("198.19.0.1", 8081)); s.listen(8); print("ready", flush=True)' \
    'held = []' 'while True: held.append(s.accept()[0]); print("accepted", flush=True)' > "$T/silent.py"
  ip netns exec "$NS_S" timeout 30 python3 "$T/silent.py" > "$T/silent.txt" 2>&1 &
  LAB_PIDS+=($!)
  wait_for "the silent server" 5 grep -q ready "$T/silent.txt" || return 1
  as_bus "$u1" call org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Verify s http://198.19.0.1:8081/ > "$T/slow.txt" 2>&1 &
  local slow=$!
  wait_for "the probe to reach the silent server" 5 grep -q accepted "$T/silent.txt" || return 1
  expect_ok "Status as $u1 while a Verify waits for its probe" as_bus "$u1" get-property org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Status || return 1
  expect_eq "Status" '(us) 3 "connected"' "$OUT" || return 1
  expect_eq "the Verify's reply, when the Status came" "" "$(cat "$T/slow.txt")" || return 1
  wait "$slow"
  expect_contains "the hanging probe's verdict" '"Verdict" s "probe failed"' "$(cat "$T/slow.txt")" || return 1
  # The agent's per-user limit: 32 calls of one user at once, the 33rd
  # refused by name while the others wait; the user's other calls go on.
  local i slows=()
  for i in $(seq 1 32); do
    as_bus "$u1" call org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Verify s http://198.19.0.1:8081/ > "$T/slow$i.txt" 2>&1 &
    slows+=($!)
  done
  wait_for "32 probes at the silent server" 10 dbl_accepted 33 || { cat "$T/silent.txt" | sort | uniq -c; return 1; }
  expect_contains "a 33rd Verify of $u1's" "org.vpnctl.VPN1.Error.Failure: 32 requests of yours are running already" \
    "$(dbus_send "$u1" "$p" org.vpnctl.VPN1.Profile.Verify string:http://198.19.0.1:8081/)" || return 1
  expect_ok "Status as $u1 meanwhile" as_bus "$u1" get-property org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Status || return 1
  wait "${slows[@]}"
  expect_contains "the 32nd Verify's verdict" '"Verdict" s "probe failed"' "$(cat "$T/slow32.txt")" || return 1
  : > "$T/signals.txt"
  kill -KILL "$(record office providerPid)"
  wait_for "PropertiesChanged naming the kill" 5 grep -q 'killed by signal 9' "$T/signals.txt" || { cat "$T/signals.txt"; return 1; }
  wait_status office disconnected 5 || return 1
  wait_for "$u1's listener to hear of the kill" 5 grep -q "$p disconnected .*killed by signal 9" "$T/u1.txt" || { cat "$T/u1.txt"; return 1; }
  expect_contains "what $u1 heard" "$p connected" "$(cat "$T/u1.txt")" || return 1
  expect_eq "what $u2 (outside the policy) heard" "listening" "$(cat "$T/u2.txt")" || return 1

  # A policy change is, for each caller, the profiles it now sees and no
  # longer sees: ProfileAdded for $u2, ProfileRemoved for $u1; the
  # ObjectManager answers the same.
  agent_set_policy office "{\"users\":[\"$u2\"]}" || return 1
  wait_for "$u2 to hear office added" 5 grep -q "^added $p" "$T/u2.txt" || { cat "$T/u2.txt"; return 1; }
  wait_for "$u1 to hear office removed" 5 grep -q "^removed $p" "$T/u1.txt" || { cat "$T/u1.txt"; return 1; }
  expect_ok "GetManagedObjects as $u2" as_bus "$u2" call org.vpnctl.VPN1 /org/vpnctl/VPN1 org.freedesktop.DBus.ObjectManager GetManagedObjects || return 1
  expect_contains "GetManagedObjects as $u2" "\"$p\" 1 \"org.vpnctl.VPN1.Profile\"" "$OUT" || return 1
  expect_contains "office's name in GetManagedObjects" '"Name" s "office"' "$OUT" || return 1
  expect_ok "GetManagedObjects as $u1" as_bus "$u1" call org.vpnctl.VPN1 /org/vpnctl/VPN1 org.freedesktop.DBus.ObjectManager GetManagedObjects || return 1
  expect_eq "GetManagedObjects as $u1 (outside the policy now)" "a{oa{sa{sv}}} 0" "$OUT" || return 1
  agent_set_policy office "{\"users\":[\"$u1\"]}" || return 1
  wait_for "$u1 to hear office added again" 5 grep -q "^added $p" "$T/u1.txt" || { cat "$T/u1.txt"; return 1; }
  wait_for "$u2 to hear office removed" 5 grep -q "^removed $p" "$T/u2.txt" || { cat "$T/u2.txt"; return 1; }

  # Outside the policy: no profile, by the stable name.
  expect_ok "ListProfiles as $u2" as_bus "$u2" call org.vpnctl.VPN1 /org/vpnctl/VPN1 org.vpnctl.VPN1.Manager ListProfiles || return 1
  expect_eq "ListProfiles as $u2" "ao 0" "$OUT" || return 1
  expect_contains "GetProfileByName as $u2" "org.vpnctl.VPN1.Error.ConfigurationUnknown" \
    "$(dbus_send "$u2" /org/vpnctl/VPN1 org.vpnctl.VPN1.Manager.GetProfileByName string:office)" || return 1
  expect_contains "Start as $u2" "error org.vpnctl.VPN1.Error.ConfigurationUnknown: no profile named" \
    "$(dbus_call "$u2" "$p" org.vpnctl.VPN1.Profile.Start '{}')" || return 1
  expect_field office status disconnected || return 1
  # Bad messages get D-Bus errors, and the service goes on.
  expect_contains "Start without its options" "org.freedesktop.DBus.Error.InvalidArgs" "$(dbus_send root "$p" org.vpnctl.VPN1.Profile.Start)" || return 1
  expect_contains "an unknown option" "error org.freedesktop.DBus.Error.InvalidArgs: unknown option 'bogus'" \
    "$(dbus_call root "$p" org.vpnctl.VPN1.Profile.Start '{"bogus": "x"}')" || return 1
  expect_contains "an unknown property" "org.freedesktop.DBus.Error.UnknownProperty" \
    "$(dbus_send root "$p" org.freedesktop.DBus.Properties.Get string:org.vpnctl.VPN1.Profile string:Nope)" || return 1
  expect_contains "an object of no profile" "org.vpnctl.VPN1.Error.ConfigurationUnknown" \
    "$(dbus_send root /org/vpnctl/VPN1/profile/00000000000040008000000000000000 org.vpnctl.VPN1.Profile.Stop)" || return 1
  expect_ok "the service still answers" B get-property org.vpnctl.VPN1 "$p" org.vpnctl.VPN1.Profile Status || return 1
  expect_eq "Status at the end" '(us) 1 "disconnected"' "$OUT" || return 1
  nothing_left
}

# toggle --notify: the card as a desktop notification on the user's own
# session bus (a dbus-daemon --session of $u1's, with a notification server
# of the test's own), shown by vpnctl-dbus run as $u1; without a session
# bus, or with no server on it, a note says so and the card is printed.
test_dbus_notify() {
  use office || return 1
  agent_set_policy office "{\"users\":[\"${LAB}u1\"]}" || return 1
  defer agent_lab_down
  agent_lab_up || return 1
  local u1=${LAB}u1 d=$LAB_DIR/session
  mkdir -p -m 700 "$d" && chown "$u1" "$d" && install -m 0755 "$HERE/notify-server.py" "$LAB_DIR/bin/notify-server.py" || return 1
  local address=unix:path=$d/bus
  runuser -u "$u1" -- dbus-daemon --session --address="$address" --nofork --nopidfile > "$T/session.log" 2>&1 &
  LAB_PIDS+=($!)
  defer stop_pid $!
  wait_for "$u1's session bus" 5 test -S "$d/bus" || { cat "$T/session.log"; return 1; }
  # No notification server yet: the card, and a note naming the bus's answer.
  expect_ok "toggle --notify with no notification server" as_session "$u1" "$address" toggle office --notify || return 1
  expect_contains "the card" "connected  office" "$OUT" || return 1
  expect_contains "the note" "no desktop notification: org.freedesktop.DBus.Error.ServiceUnknown" "$OUT" || return 1
  runuser -u "$u1" -- /usr/bin/python3 "$LAB_DIR/bin/notify-server.py" "$address" 60 > "$T/notes.txt" 2>&1 &
  LAB_PIDS+=($!)
  defer stop_pid $!
  wait_for "the notification server" 5 grep -q ready "$T/notes.txt" || { cat "$T/notes.txt"; return 1; }
  expect_ok "toggle --notify (a stop)" as_session "$u1" "$address" toggle office --notify || return 1
  expect_contains "the card" "disconnected  office" "$OUT" || return 1
  expect_not_contains "no note" "no desktop notification" "$OUT" || return 1
  expect_ok "toggle --notify (a start)" as_session "$u1" "$address" toggle office --notify || return 1
  wait_for "two notifications" 5 bash -c "[ \$(grep -c '^vpnctl|' '$T/notes.txt') -ge 2 ]" || { cat "$T/notes.txt"; return 1; }
  expect_contains "the stop's notification" "vpnctl|office|○ disconnected  office|network-offline" "$(cat "$T/notes.txt")" || return 1
  expect_contains "the start's notification" "vpnctl|office|● connected  office  $(field office interface)|network-vpn" "$(cat "$T/notes.txt")" || return 1
  # No session bus at all: the card and the note, exit 0.
  expect_ok "toggle --notify without a session bus" runuser -u "$u1" -- env -u DBUS_SESSION_BUS_ADDRESS -u VPNCTL_CONFIG_DIR \
    XDG_RUNTIME_DIR=/nonexistent VPNCTL_RUN_DIR="$VPNCTL_RUN_DIR" "$AGL_V" toggle office --notify || return 1
  expect_contains "the card" "disconnected  office" "$OUT" || return 1
  expect_contains "the note" "no desktop notification: no session bus: DBUS_SESSION_BUS_ADDRESS is not set and there is no \$XDG_RUNTIME_DIR/bus" "$OUT" || return 1
  expect_eq "notifications in all" 2 "$(grep -c '^vpnctl|' "$T/notes.txt")" || return 1
  nothing_left
}
# as_session USER ADDRESS ARGS...: vpnctl as USER (through the agent) with ADDRESS as the session bus.
as_session() {
  local u=$1 address=$2; shift 2
  runuser -u "$u" -- env -u VPNCTL_CONFIG_DIR DBUS_SESSION_BUS_ADDRESS="$address" VPNCTL_RUN_DIR="$VPNCTL_RUN_DIR" "$AGL_V" "$@"
}

