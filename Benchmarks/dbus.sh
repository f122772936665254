#!/usr/bin/env bash
# `make bench`: the D-Bus service's cost. A Get of a profile's Status
# (org.freedesktop.DBus.Properties.Get: the bus's uid lookup, the policy,
# the status derived from the run directory) against the bus's own GetId as
# the floor (target <= 3x), each a round trip from one python3-dbus client,
# on a private bus of its own, the service in the lab's client namespace
# (Tests/lab/lab.sh), one profile.
# Usage: Benchmarks/dbus.sh path/to/vpnctl [calls] [tunnels]
set -uo pipefail
V=$(realpath "${1:?usage: dbus.sh path/to/vpnctl [calls] [tunnels]}")
N=${2:-2000}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../Tests/lib/testlib.sh"
source "$HERE/../Tests/lab/dbus.sh"
[ "$(id -u)" = 0 ] || { echo "the D-Bus benchmark needs root (vpnctl-dbus runs as root)"; exit 1; }
[ -x "$(dirname "$V")/vpnctl-dbus" ] || { echo "no vpnctl-dbus beside $V (make build makes both)"; exit 1; }
/usr/bin/python3 -c 'import dbus' 2>/dev/null || { echo "python3-dbus is needed: apt-get install --no-install-recommends python3-dbus"; exit 1; }
source "$HERE/../Tests/lab/lab.sh"
why=$(lab_cannot_run); [ -n "$why" ] && { echo "the D-Bus benchmark cannot run here: $why"; exit 1; }
D=$LAB_DIR NS=$NS_C BUS="" SVC=""
cleanup() {
  [ -n "$SVC" ] && stop_pid "$SVC"
  [ -n "$BUS" ] && stop_pid "$BUS"
  lab_down
}
trap cleanup EXIT
lab_up || exit 1
"$V" import "$LAB_DIR/office.conf" --name office >/dev/null || exit 1
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
ping = lambda: bus.call_blocking("org.vpnctl.VPN1", path, "org.freedesktop.DBus.Peer", "Ping", "", [])
get_status = lambda: bus.call_blocking("org.vpnctl.VPN1", path, "org.freedesktop.DBus.Properties", "Get", "ss", ["org.vpnctl.VPN1.Profile", "Status"])
for _ in range(200): get_id(); ping(); get_status()   # warm-up
# Interleaved rounds, so that all see the same machine.
floor, pings, status = [], [], []
for _ in range(5):
    floor.append(timed(get_id)); pings.append(timed(ping)); status.append(timed(get_status))
f, p, s = statistics.median(floor), statistics.median(pings), statistics.median(status)
print(f"== D-Bus round trips ({n} calls x 5 rounds, one python3-dbus client, median of the rounds' medians)")
print(f"bus GetId (the floor)        {f:8.1f} us")
print(f"Ping of the service           {p:8.1f} us   ratio {p / f:.2f} (the bus's forwarding both ways, no work)")
print(f"Get Status of a profile      {s:8.1f} us   ratio {s / f:.2f} (target <= 3.0)")
PY

# Transition -> PropertiesChanged: office started in the service's namespace,
# then its link deleted under it by the client itself (RTM_DELLINK over
# netlink: the kernel event happens inside that one send); the time from
# just before the send until the client has the Status change in hand (an
# upper bound: it includes the deletion and the client's own dispatch), and
# until the bus has the signal (dbus-monitor's time of it: what the service
# takes, without the client's dispatch).
dbus-monitor --address "$A" "type='signal',member='PropertiesChanged'" > "$D/monitor.log" 2>&1 &
MONITOR=$!
wait_for "dbus-monitor" 5 grep -q NameAcquired "$D/monitor.log"
ip netns exec "$NS" /usr/bin/python3 - "$A" "$V" "${3:-30}" "$D/monitor.log" <<'PY'
import socket, statistics, struct, subprocess, sys, threading, time
import dbus, dbus.mainloop.glib
from gi.repository import GLib
address, vpnctl, runs, monitor = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(address)
path = bus.call_blocking("org.vpnctl.VPN1", "/org/vpnctl/VPN1", "org.vpnctl.VPN1.Manager", "GetProfileByName", "s", ["office"])
statuses = []   # (arrived, status number)
def changed(interface, props, invalidated):
    if "Status" in props: statuses.append((time.time(), int(props["Status"][0])))
bus.add_signal_receiver(changed, signal_name="PropertiesChanged", dbus_interface="org.freedesktop.DBus.Properties", path=path)
nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
# The kernel event: RTM_DELLINK as a listener of the link group gets it, read on a thread that does nothing else.
notified = {}   # ifindex -> when its RTM_DELLINK came
listener = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
listener.bind((0, 1))   # RTMGRP_LINK
def listen():
    while True:
        data = listener.recv(65536)
        t = time.time()
        off = 0
        while off + 32 <= len(data):
            n, kind = struct.unpack_from("IH", data, off)
            if kind == 17: notified.setdefault(struct.unpack_from("i", data, off + 20)[0], t)
            if n == 0: break
            off += (n + 3) & ~3
threading.Thread(target=listen, daemon=True).start()
def delete_link(index):
    """RTM_DELLINK (17), NLM_F_REQUEST|NLM_F_ACK: nlmsghdr, then ifinfomsg; the time just before the send."""
    request = struct.pack("IHHII", 32, 17, 5, 1, 0) + struct.pack("BxHiII", 0, 0, index, 0, 0)
    t = time.time()
    nl.send(request)
    ack = nl.recv(4096)
    error = struct.unpack_from("i", ack, 16)[0]
    if error: sys.exit(f"RTM_DELLINK of link {index} failed: errno {-error}")
    return t
context = GLib.MainContext.default()
GLib.timeout_add(100, lambda: True)   # so that a blocking iteration sees the deadline
def until(what, seconds, done):
    deadline = time.time() + seconds
    while not done():
        if time.time() > deadline: sys.exit(f"timed out waiting for {what} (Status changes {statuses})")
        context.iteration(True)
get = lambda name: bus.call_blocking("org.vpnctl.VPN1", path, "org.freedesktop.DBus.Properties", "Get", "ss", ["org.vpnctl.VPN1.Profile", name])
delays, sends, kernel_times = [], [], []
for i in range(runs):
    subprocess.run([vpnctl, "start", "office"], check=True, stdout=subprocess.DEVNULL)
    until("connected", 10, lambda: any(s == 3 for _, s in statuses))
    index = socket.if_nametoindex(str(get("Interface")))
    del statuses[:]
    sent = delete_link(index)
    sends.append((sent, index))
    until("the Status change and RTM_DELLINK", 10, lambda: any(s != 3 for _, s in statuses) and index in notified)
    delays.append((next(t for t, s in statuses if s != 3) - notified[index]) * 1000)
    subprocess.run([vpnctl, "stop", "office"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kernel_times.append(notified[index])
    until("disconnected", 10, lambda: any(s == 1 for _, s in statuses))
    del statuses[:]
# dbus-monitor: "signal time=SECONDS ... member=PropertiesChanged", then the body, whose first uint32 is Status's number.
time.sleep(0.2)
seen, stamp = [], None
for line in open(monitor):
    if line.startswith("signal time=") and "member=PropertiesChanged" in line: stamp = float(line.split()[1][5:])
    elif stamp is not None and line.strip().startswith("uint32 "):
        seen.append((stamp, int(line.split()[1]))); stamp = None
on_bus = sorted((next(t for t, s in seen if t > sent and s != 3) - notified.pop(index)) * 1000 for sent, index in sends)
kernel = sorted((notified_at - sent) * 1000 for (sent, index), notified_at in zip(sends, kernel_times))
delays.sort()
def line(what, d): print(f"{what:44s} median {statistics.median(d):7.3f} ms   p90 {d[int(len(d) * 0.9)]:7.3f} ms   max {d[-1]:7.3f} ms")
print(f"== a link deleted under its tunnel: the kernel's RTM_DELLINK -> PropertiesChanged of Status ({runs} tunnels; target median <= 2 ms)")
line("the deletion itself (sent -> RTM_DELLINK)", kernel)
line("on the bus (dbus-monitor's time)", on_bus)
line("in the client's hand (python3-dbus, GLib)", delays)
PY
stop_pid "$MONITOR"
