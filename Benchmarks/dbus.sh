#!/usr/bin/env bash
# `make bench`: the D-Bus service's cost. A Get of a profile's Status
# (org.freedesktop.DBus.Properties.Get: the bus's uid lookup, the policy,
# the status derived from the run directory) against the bus's own GetId as
# the floor (target <= 3x), each a round trip from one python3-dbus client,
# on a private bus of its own. One profile, no tunnel, one namespace of its
# own for the service (nothing is started).
# Usage: Benchmarks/dbus.sh path/to/vpnctl [calls]
set -uo pipefail
V=$(realpath "${1:?usage: dbus.sh path/to/vpnctl [calls]}")
N=${2:-2000}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../Tests/lib/testlib.sh"
source "$HERE/../Tests/lab/dbus.sh"
[ "$(id -u)" = 0 ] || { echo "the D-Bus benchmark needs root (vpnctl-dbus runs as root)"; exit 1; }
[ -x "$(dirname "$V")/vpnctl-dbus" ] || { echo "no vpnctl-dbus beside $V (make build makes both)"; exit 1; }
/usr/bin/python3 -c 'import dbus' 2>/dev/null || { echo "python3-dbus is needed: apt-get install --no-install-recommends python3-dbus"; exit 1; }
P=vd$(( $$ % 100000 ))
D=$(mktemp -d /tmp/vpnctl-bench-dbus.XXXXXX)
NS=${P}ns BUS="" SVC=""
cleanup() {
  [ -n "$SVC" ] && stop_pid "$SVC"
  [ -n "$BUS" ] && stop_pid "$BUS"
  ip netns del "$NS" 2>/dev/null
  rm -rf "$D"
}
trap cleanup EXIT
export VPNCTL_CONFIG_DIR=$D/etc VPNCTL_RUN_DIR=$D/run
ip netns add "$NS" || exit 1
wg_quick_conf 198.19.0.2/32 198.19.0.0/24 198.18.0.1:51820 \
  yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk= xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg= > "$D/p.conf"
"$V" import "$D/p.conf" --name office >/dev/null || exit 1
dbus_bus_conf "$D/bus.sock" > "$D/bus.conf"
A=unix:path=$D/bus.sock
dbus-daemon --config-file="$D/bus.conf" --nofork --nopidfile > "$D/bus.log" 2>&1 &
BUS=$!
wait_for "the bus" 5 test -S "$D/bus.sock" || exit 1
ip netns exec "$NS" "$(dirname "$V")/vpnctl-dbus" --address "$A" > "$D/service.log" 2>&1 &
SVC=$!
wait_for "org.vpnctl.VPN1" 5 bash -c "busctl --address='$A' list | grep -q '^org.vpnctl.VPN1 '" || { cat "$D/service.log"; exit 1; }
/usr/bin/python3 - "$A" "$N" <<'PY'
import statistics, sys, time
import dbus
address, n = sys.argv[1], int(sys.argv[2])
bus = dbus.bus.BusConnection(address)
path = bus.call_blocking("org.vpnctl.VPN1", "/org/vpnctl/VPN1", "org.vpnctl.VPN1.Manager", "GetProfileByName", "s", ["office"])
def timed(call):
    out = []
    for _ in range(n):
        t = time.perf_counter_ns()
        call()
        out.append(time.perf_counter_ns() - t)
    return statistics.median(out) / 1000
get_id = lambda: bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", "", [])
get_status = lambda: bus.call_blocking("org.vpnctl.VPN1", path, "org.freedesktop.DBus.Properties", "Get", "ss", ["org.vpnctl.VPN1.Profile", "Status"])
for _ in range(200): get_id(); get_status()   # warm-up
# Interleaved rounds, so that both see the same machine.
floor, status = [], []
for _ in range(5):
    floor.append(timed(get_id)); status.append(timed(get_status))
f, s = statistics.median(floor), statistics.median(status)
print(f"== D-Bus round trips ({n} calls x 5 rounds, one python3-dbus client, median of the rounds' medians)")
print(f"bus GetId (the floor)        {f:8.1f} us")
print(f"Get Status of a profile      {s:8.1f} us   ratio {s / f:.2f} (target <= 3.0)")
PY
