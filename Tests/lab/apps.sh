# Per-app VPN (appRules), on the wg-easy-shaped full tunnel of fulltunnel.sh
# (source after it; fulltunnel_tests calls apps_tests once ft_wg_server is
# up). A far host answers on the same addresses through the tunnel and over
# the underlay, with the address each request came from: the tunnel's
# (198.19.12.2, 2001:2:12::2) or the underlay's (198.18.0.2, 2001:2::2).
# Captures on the underlay and inside the tunnel say the same.
#
#   far host      198.18.62.1, 2001:2:62::1 (server lo): TCP 8000 (HTTP), UDP 9000 (addr-echo.py)
#   "ISP" DNS     198.18.0.1 (the client's resolv.conf during these tests; nothing answers)
#   tunnel DNS    198.19.12.1 (nothing answers)
#   test cgroup   /$LAB-apps, matched by path
#
# vpnctl and the programs run in the client's network namespace through
# `ac`: a private mount namespace with the namespace's own sysfs, cgroup2
# mounted at /sys/fs/cgroup (where nft resolves cgroup paths; this machine
# mounts it at /sys/fs/cgroup/unified) and the lab's resolv.conf bound over
# /etc/resolv.conf, as `ip netns exec` does.

ADDR_ECHO_PY=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/addr-echo.py
CG_HOST=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)

ac() { "$(ac_script)" "$@"; }
# ac_script: ac as a script of the lab's own, for what runs it in the
# background (its pid is the program's: each step execs the next).
ac_script() {
  if [ ! -x "$LAB_DIR/ac" ]; then
    cat > "$LAB_DIR/ac" <<SH
#!/bin/sh
exec unshare -m --propagation private nsenter --net="/run/netns/$NS_C" sh -c '
  mount -t sysfs none /sys && mount -t cgroup2 none /sys/fs/cgroup || exit 97
  [ -f "$RESOLV" ] && mount --bind "$RESOLV" /etc/resolv.conf
  exec "\$@"' sh "\$@"
SH
    chmod 700 "$LAB_DIR/ac"
  fi
  echo "$LAB_DIR/ac"
}
# acns CMD...: as ac, in a cgroup namespace whose root is /$LAB-ns (one level
# down), from its cgroup /inner: what a container's supervisor sees.
acns() {
  if [ ! -x "$LAB_DIR/acns-inner" ]; then
    cat > "$LAB_DIR/acns-inner" <<SH
#!/bin/sh
mount -t sysfs none /sys && mount -t cgroup2 none /sys/fs/cgroup || exit 97
mkdir -p /sys/fs/cgroup/inner && echo \$\$ > /sys/fs/cgroup/inner/cgroup.procs || exit 97
[ -f "$RESOLV" ] && mount --bind "$RESOLV" /etc/resolv.conf
exec "\$@"
SH
    chmod 700 "$LAB_DIR/acns-inner"
  fi
  unshare -m --propagation private sh -c 'd=$0 n=$1 i=$2; shift 2; mkdir -p "$d" && echo $$ > "$d/cgroup.procs" && exec unshare -C nsenter --net="$n" "$i" "$@"' \
    "$CG_HOST/$LAB-ns" "/run/netns/$NS_C" "$LAB_DIR/acns-inner" "$@"
}
ask_tcp() { ac "$@" curl -s -m 3 "http://$( [[ $ADDR == *:* ]] && echo "[$ADDR]" || echo "$ADDR"):8000/"; }
ask_udp() {
  ac "$@" python3 -c 'import socket,sys
a=sys.argv[1]; s=socket.socket(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
s.sendto(b"?", (a, 9000)); print(s.recv(100).decode().strip())' "$ADDR"
}
# path_is WHAT EXPECTED [RUNNER...]: TCP and UDP from RUNNER (nothing: outside
# every rule) reach the far host from EXPECTED.
path_is() {
  local what=$1 want=$2; shift 2
  expect_eq "$what, TCP" "$want" "$(ask_tcp "$@" | tr -d '\n')" || return 1
  expect_eq "$what, UDP" "$want" "$(ask_udp "$@" | tr -d '\n')" || return 1
}

apps_server() {
  # Not through the function s: its pid would be a subshell's, and the lab's teardown would end only that.
  ip netns exec "$NS_S" python3 "$ADDR_ECHO_PY" --label="$LAB_DIR" 198.18.62.1 2001:2:62::1 > "$LAB_DIR/addr-echo.out" 2>&1 &
  APPS_ECHO=$!; LAB_PIDS+=($APPS_ECHO)
  wait_for "the far host's echo server" 5 grep -q listening "$LAB_DIR/addr-echo.out"
}

# The client's IPv4 and IPv6 default routes through the "ISP", and its DNS there.
apps_underlay() {
  ft_dual_isp || return 1
  cp "$RESOLV" "$T/resolv.before"
  printf '# vpnctl lab %s (apps)\nnameserver 198.18.0.1\noptions timeout:1 attempts:1\n' "$NS_C" > "$RESOLV"
  defer sh -c "cat '$T/resolv.before' > '$RESOLV'"
  # Strict reverse-path filtering, as many distributions set it: replies must pass it.
  c sysctl -qw net.ipv4.conf.all.rp_filter=1 net.ipv4.conf.default.rp_filter=1
  defer c sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
  # A cgroup the profile matches by path, and a program placed in it by the test.
  mkdir "$CG_HOST/$LAB-apps" || return 1
  defer apps_cgroup_gone "$CG_HOST/$LAB-apps"
  APPS_BEFORE=$(c ip route show; c ip -6 route show; c ip rule show; c ip -6 rule show)
}

# apps_profile NAME MODE [includeAllNetworks]: wg-easy's file with appRules.
apps_profile() {
  expect_ok "import $1" cn "$V" import "$LAB_DIR/wg-easy.conf" --name "$1" || return 1
  cat > "$T/rules.py" <<PY
import json, sys
p = json.load(open(sys.argv[1]))
p["appRules"] = {"mode": "$2", "matches": [{"cgroup": "/$LAB-apps"}, {"unit": "$LAB-never-*.scope"}]}
if "${3:-}": p["includeAllNetworks"] = True
json.dump(p, open(sys.argv[1], "w"))
PY
  EDITOR="python3 $T/rules.py" expect_ok "edit $1: appRules $2" cn "$V" edit "$1" || return 1
}

# apps_capture NAME IFACE: the far host's TCP SYNs and UDP datagrams, and DNS queries, seen on IFACE (server side).
apps_capture() {
  ip netns exec "$NS_S" tcpdump -i "$2" -n -U --immediate-mode -w "$T/$1.pcap" \
    "((dst host 198.18.62.1 or dst host 2001:2:62::1) and ((tcp dst port 8000 and tcp[tcpflags] & tcp-syn != 0) or (ip6 and tcp dst port 8000 and ip6[53] & 2 != 0) or udp dst port 9000)) or udp dst port 53" \
    2> "$T/$1.tcpdump" &
  local pid=$!; LAB_PIDS+=($pid); defer stop_pid "$pid"
  eval "APPS_CAP_$1=$pid"
  wait_for "tcpdump on $2" 5 grep -q "listening on" "$T/$1.tcpdump"
}
apps_seen() {  # apps_seen NAME: what the capture holds (stopped first)
  local pid; eval "pid=\$APPS_CAP_$1"
  sleep 0.3; stop_pid "$pid"
  tcpdump -r "$T/$1.pcap" -n 2>/dev/null
}

# apps_cgroup_gone DIR: the test's cgroup DIR removed, after ending (by pid)
# what of the test still runs in it (a supervisor a failed check left).
apps_cgroup_gone() {
  local p
  for p in $(find "$1" -name cgroup.procs -exec cat {} + 2>/dev/null); do stop_pid "$p"; done
  find "$1" -depth -type d -exec rmdir {} + 2>/dev/null
  [ ! -e "$1" ] || echo "  cgroup $1 could not be removed"
}

apps_left() {
  local out
  out=$( (c ip rule show; c ip -6 rule show) | grep -E 'fwmark|suppress_prefixlength') && { echo "  rule left: $out"; return 1; }
  out=$(c nft list tables 2>/dev/null | grep vpnctl_) && { echo "  nft table left: $out"; return 1; }
  out=$(ls -d "$CG_HOST"/vpnctl/* 2>/dev/null) && { echo "  cgroup left: $out"; return 1; }
  expect_eq "src_valid_mark after stop" 0 "$(c cat /proc/sys/net/ipv4/conf/all/src_valid_mark)" || return 1
  expect_eq "routes and rules after stop" "$APPS_BEFORE" "$(c ip route show; c ip -6 route show; c ip rule show; c ip -6 rule show)" || return 1
  nothing_left
}

test_apps_include() {
  apps_underlay && apps_profile inapps include || return 1
  expect_ok "show" cn "$V" show inapps || return 1
  expect_contains "show: the app rules" "include: only these programs use the tunnel: cgroup /$LAB-apps, unit $LAB-never-*.scope" "$OUT" || return 1
  expect_ok "start" ac "$V" start inapps --timeout 10 || return 1
  local ifn; ifn=$(field inapps interface)
  expect_not_contains "the system resolver is left alone" "198.19.12.1" "$(cat "$RESOLV")" || return 1
  apps_capture under "${LAB}s0" && apps_capture inside "${LAB}g" || return 1
  ADDR=198.18.62.1 path_is "IPv4 outside the rules: the underlay" 198.18.0.2 || return 1
  ADDR=198.18.62.1 path_is "IPv4 under vpnctl run: the tunnel" 198.19.12.2 "$V" run inapps -- || return 1
  ADDR=2001:2:62::1 path_is "IPv6 outside the rules: the underlay" 2001:2::2 || return 1
  ADDR=2001:2:62::1 path_is "IPv6 under vpnctl run: the tunnel" 2001:2:12::2 "$V" run inapps -- || return 1
  expect_ok "verify" ac "$V" verify inapps --probe http://198.18.62.1:8000/ || return 1
  expect_contains "verify proves a matched program's path" "verdict: path proven" "$OUT" || return 1
  expect_contains "verify says how" "include: the probe carries the rules' mark" "$OUT" || return 1
  expect_eq "a child of the program follows it" 198.19.12.2 \
    "$(ac "$V" run inapps -- sh -c 'curl -s -m 3 http://198.18.62.1:8000/' | tr -d '\n')" || return 1
  # The cgroup matched by path: a program the test puts there.
  expect_eq "a program in the matched cgroup" 198.19.12.2 \
    "$(ac sh -c 'echo $$ > /sys/fs/cgroup/'"$LAB"'-apps/cgroup.procs && exec curl -s -m 3 http://198.18.62.1:8000/' | tr -d '\n')" || return 1
  # DNS: the matched program's query goes to the tunnel's server, inside; the others' to the ISP's.
  ac timeout 3 getent ahostsv4 outside.lab.test >/dev/null 2>&1
  ac "$V" run inapps -- timeout 3 getent ahostsv4 inside.lab.test >/dev/null 2>&1
  # A program started before the rule, then app add --pid.
  ac sh -c 'while [ ! -e "$0/go" ]; do sleep 0.1; done; curl -s -m 3 http://198.18.62.1:8000/ > "$0/late.out"' "$T" &
  local late=$!; LAB_PIDS+=($late); defer stop_pid "$late"; defer touch "$T/go"
  sleep 0.3
  local latepid; latepid=$(pgrep -P "$late" -x sh || echo "$late")
  expect_ok "app add --pid" ac "$V" app add inapps --pid "$latepid" || return 1
  expect_contains "app add's warning" "keep the path they had" "$OUT" || return 1
  expect_ok "apps --json" ac "$V" apps inapps --json || return 1
  expect_contains "apps lists the moved process" "\"pid\":$latepid" "$OUT" || return 1
  touch "$T/go"; wait "$late"
  expect_eq "the late program, moved" 198.19.12.2 "$(tr -d '\n' < "$T/late.out")" || return 1
  local under inside; under=$(apps_seen under) inside=$(apps_seen inside)
  expect_not_contains "underlay: no request from the tunnel's programs" "198.19.12.2" "$under" || return 1
  expect_eq "underlay: the outside programs' requests (TCP v4, UDP v4, TCP v6, UDP v6)" 4 \
    "$(grep -cE '^.* IP6? (198\.18\.0\.2|2001:2::2)\.[0-9]+ > (198\.18\.62\.1|2001:2:62::1)\.(8000|9000):' <<<"$under")" || return 1
  expect_match "underlay: the outside DNS query to the ISP" "198.18.0.2.[0-9]+ > 198.18.0.1.53: .*outside.lab.test" "$under" || return 1
  expect_not_contains "underlay: the matched program's DNS query is not there" "inside.lab.test" "$under" || return 1
  expect_not_contains "tunnel: no request from outside programs" "198.18.0.2." "$inside" || return 1
  expect_match "tunnel: the matched program's DNS query to the tunnel's server" "198.19.12.2.[0-9]+ > 198.19.12.1.53: .*inside.lab.test" "$inside" || return 1
  # Where only the tunnel routes a destination (no default route), a matched
  # program still gets there; the others do not (and never by the underlay).
  c ip route del default via 198.18.0.1 dev "${LAB}c0"
  expect_eq "no default route: a matched program through the tunnel" 198.19.12.2 \
    "$(ac "$V" run inapps -- curl -s -m 3 http://198.18.62.1:8000/ | tr -d '\n')" || return 1
  expect_run "no default route: another program does not use the tunnel" nonzero ac curl -s -m 2 http://198.18.62.1:8000/ || return 1
  c ip route add default via 198.18.0.1 dev "${LAB}c0"
  expect_ok "stop" ac "$V" stop inapps || return 1
  apps_left
}

test_apps_include_killswitch() {
  apps_underlay && apps_profile inks include yes || return 1
  expect_ok "start" ac "$V" start inks --timeout 10 || return 1
  ADDR=198.18.62.1 path_is "outside the rules, with the kill switch: the underlay still" 198.18.0.2 || return 1
  ADDR=198.18.62.1 path_is "under vpnctl run: the tunnel" 198.19.12.2 "$V" run inks -- || return 1
  # Local services stay reachable for the matched programs (a resolver stub among them).
  ip netns exec "$NS_C" python3 "$ADDR_ECHO_PY" --label="$LAB_DIR" 127.0.0.1 > "$T/local-echo.out" 2>&1 &
  local local_echo=$!; LAB_PIDS+=($local_echo); defer stop_pid "$local_echo"
  wait_for "a local service" 5 grep -q listening "$T/local-echo.out" || return 1
  expect_eq "under vpnctl run: a local service, through the kill switch" 127.0.0.1 \
    "$(ac "$V" run inks -- curl -s -m 3 http://127.0.0.1:8000/ | tr -d '\n')" || return 1
  # Take the tunnel's routes away: the matched programs get nowhere, never the underlay.
  local table; table=$(field inks id | python3 -c 'import sys; print(0x76610000 | int(sys.stdin.read().replace("-","")[:4], 16))')
  c ip route flush table "$table"; c ip -6 route flush table "$table"
  apps_capture under "${LAB}s0" || return 1
  expect_run "under vpnctl run, no tunnel route: blocked" nonzero ac "$V" run inks -- curl -s -m 2 http://198.18.62.1:8000/ || return 1
  expect_not_contains "underlay: the blocked program's request is not there" "198.18.62.1.8000" "$(apps_seen under)" || return 1
  expect_ok "stop" ac "$V" stop inks || return 1
  apps_left
}

test_apps_exclude() {
  apps_underlay && apps_profile exapps exclude yes || return 1
  expect_ok "start" ac "$V" start exapps --timeout 10 || return 1
  expect_contains "the tunnel's DNS on the system resolver" "nameserver 198.19.12.1" "$(cat "$RESOLV")" || return 1
  apps_capture under "${LAB}s0" && apps_capture inside "${LAB}g" || return 1
  ADDR=198.18.62.1 path_is "IPv4 outside the rules: the tunnel" 198.19.12.2 || return 1
  ADDR=198.18.62.1 path_is "IPv4 under vpnctl run: around the tunnel, through the kill switch" 198.18.0.2 "$V" run exapps -- || return 1
  ADDR=2001:2:62::1 path_is "IPv6 outside the rules: the tunnel" 2001:2:12::2 || return 1
  ADDR=2001:2:62::1 path_is "IPv6 under vpnctl run: around the tunnel" 2001:2::2 "$V" run exapps -- || return 1
  ac timeout 3 getent ahostsv4 intunnel.lab.test >/dev/null 2>&1
  ac "$V" run exapps -- timeout 3 getent ahostsv4 bypass.lab.test >/dev/null 2>&1
  local under inside; under=$(apps_seen under) inside=$(apps_seen inside)
  expect_eq "underlay: only the bypassing program's requests (4)" 4 \
    "$(grep -cE ' > (198\.18\.62\.1|2001:2:62::1)\.(8000|9000):' <<<"$under")" || return 1
  expect_not_contains "underlay: nothing from the tunnel's address" "198.19.12.2" "$under" || return 1
  expect_match "underlay: the bypassing program's DNS goes to the network's server, not the tunnel's" \
    "198.18.0.2.[0-9]+ > 198.18.0.1.53: .*bypass.lab.test" "$under" || return 1
  expect_not_contains "tunnel: the bypassing program's DNS query is not there" "bypass.lab.test" "$inside" || return 1
  expect_match "tunnel: everyone else's DNS to the tunnel's server" "198.19.12.2.[0-9]+ > 198.19.12.1.53: .*intunnel.lab.test" "$inside" || return 1
  expect_eq "tunnel: the other programs' requests (4)" 4 "$(grep -cE ' > (198\.18\.62\.1|2001:2:62::1)\.(8000|9000):' <<<"$inside")" || return 1
  # The supervisor killed: stop cleans up rules, table and cgroup.
  local sup; sup=$(record exapps supervisorPid)
  kill -9 "$sup"
  expect_ok "stop after the supervisor was killed" ac "$V" stop exapps || return 1
  apps_left
}

# A user other than root: vpnctl run through the agent, which puts only the
# caller's own processes under the rules, and only for a user the policy names.
test_apps_user_run() {
  apps_underlay && apps_profile userapps include || return 1
  agent_set_policy userapps "{\"users\":[\"${LAB}u1\"]}" || return 1
  defer agent_lab_down
  AGL_IN=$(ac_script) agent_lab_up || return 1
  local u1=${LAB}u1 u2=${LAB}u2
  uac() { local u=$1; shift; ac runuser -u "$u" -- env -u VPNCTL_CONFIG_DIR VPNCTL_RUN_DIR="$VPNCTL_RUN_DIR" "$AGL_V" "$@"; }
  expect_ok "start by $u1" uac "$u1" start userapps --timeout 10 || return 1
  expect_eq "$u1's vpnctl run: the tunnel" 198.19.12.2 "$(uac "$u1" run userapps -- curl -s -m 3 http://198.18.62.1:8000/ | tr -d '\n')" || return 1
  expect_eq "$u1 outside the rules: the underlay" 198.18.0.2 "$(ac runuser -u "$u1" -- curl -s -m 3 http://198.18.62.1:8000/ | tr -d '\n')" || return 1
  expect_run "$u1 moves root's process" 11 uac "$u1" app add userapps --pid "$AGL_PID" || return 1
  expect_contains "the refusal" "process $AGL_PID is not yours" "$OUT" || return 1
  expect_run "$u2 (named nowhere) runs under the rules" 9 uac "$u2" run userapps -- true || return 1
  grep -q "uid=$(id -u "$u1")($u1) pid=[0-9]* placeApp '[0-9a-f-]*' (user '$u1' may start 'userapps'.*exit 0" "$(dirname "$VPNCTL_RUN_DIR")/agent.log" \
    || { echo "  the agent's log lacks the placement"; return 1; }
  expect_ok "stop" ac "$V" stop userapps || return 1
  apps_left
}

# A supervisor in a cgroup namespace (a container) sees paths from the
# namespace's root, while nft counted levels from the tree's until Linux 6.11
# (nft_socket now adds the namespace's depth itself): it measures the
# difference with a probe, and the rules match either way.
test_apps_cgroup_namespace() {
  apps_underlay && apps_profile nsapps include || return 1
  defer apps_cgroup_gone "$CG_HOST/$LAB-ns"
  expect_ok "start in a cgroup namespace" acns "$V" start nsapps --timeout 10 || return 1
  # Kernels before 6.11 count from the tree's root (1 here); later ones from the loader's namespace (0).
  expect_match "the supervisor measured the namespace" "cgroup namespace: its root is [01] levels below the tree's" \
    "$(cat "$VPNCTL_RUN_DIR"/logs/*.log)" || return 1
  expect_eq "under vpnctl run in the namespace: the tunnel" 198.19.12.2 \
    "$(acns "$V" run nsapps -- curl -s -m 3 http://198.18.62.1:8000/ | tr -d '\n')" || return 1
  expect_eq "outside the rules in the namespace: the underlay" 198.18.0.2 \
    "$(acns curl -s -m 3 http://198.18.62.1:8000/ | tr -d '\n')" || return 1
  expect_ok "stop" acns "$V" stop nsapps || return 1
  apps_left
}

test_apps_exclude_plain() {
  apps_underlay && apps_profile explain exclude || return 1
  expect_ok "start" ac "$V" start explain --timeout 10 || return 1
  ADDR=198.18.62.1 path_is "outside the rules: the tunnel" 198.19.12.2 || return 1
  ADDR=198.18.62.1 path_is "under vpnctl run: around the tunnel" 198.18.0.2 "$V" run explain -- || return 1
  ADDR=2001:2:62::1 path_is "IPv6 under vpnctl run: around the tunnel" 2001:2::2 "$V" run explain -- || return 1
  expect_ok "stop" ac "$V" stop explain || return 1
  apps_left
}

apps_tests() {
  if ! command -v nsenter >/dev/null || ! command -v unshare >/dev/null; then skip "per-app tests: nsenter/unshare missing"; return 0; fi
  [ -n "$CG_HOST" ] || { skip "per-app tests: cgroup2 is not mounted"; return 0; }
  apps_server || { fail "the far host's echo server did not come up"; return 0; }
  lab_check "apps: include: only vpnctl run's programs (and their children, a matched cgroup, a process added by --pid) use the tunnel, over TCP, UDP, IPv4, IPv6 and DNS (captures); strict rp_filter; all undone" test_apps_include
  lab_check "apps: include with the kill switch: the matched programs through the tunnel or nowhere, the others untouched" test_apps_include_killswitch
  lab_check "apps: a user's vpnctl run goes through the agent (only their own processes, only with the policy's start right)" test_apps_user_run
  lab_check "apps: in a cgroup namespace (as in a container) the supervisor measures the namespace's depth with an nft probe, and the rules match" test_apps_cgroup_namespace
  lab_check "apps: exclude without the kill switch: vpnctl run's programs around the tunnel, the others through it" test_apps_exclude_plain
  lab_check "apps: exclude with the kill switch: vpnctl run's programs go around the tunnel (TCP, UDP, IPv4, IPv6, DNS to the network's server), everyone else through it (captures); supervisor SIGKILL then stop leaves nothing" test_apps_exclude
}
