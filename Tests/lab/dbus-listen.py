#!/usr/bin/python3
# A listener of org.vpnctl.VPN1's PropertiesChanged, written against the
# bus alone (python3-dbus with GLib's main loop, Debian's):
# dbus-listen.py ADDRESS SECONDS [PATH [UNTIL]]
# calls ListProfiles once (a caller is what the service sends signals to),
# and, with PATH, Gets that profile's Status (a read polkit may grant),
# and, with UNTIL (a status name), ends once a change to it arrives;
# prints "listening", then one line per PropertiesChanged it receives,
# "PATH STATUS-NAME [LastDisconnectError's message]", and one per
# ProfileAdded or ProfileRemoved, "added PATH" or "removed PATH", for
# SECONDS at most.
import sys
import dbus, dbus.mainloop.glib
from gi.repository import GLib

address, seconds = sys.argv[1], int(sys.argv[2])
until = sys.argv[4] if len(sys.argv) > 4 else None
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(address)

def changed(interface, props, invalidated, path=None):
    status = props.get("Status")
    error = props.get("LastDisconnectError")
    name = str(status[1]) if status is not None else "-"
    message = str(error[2]) if error is not None and len(error) > 2 else ""
    print(path, name, message, flush=True)
    if until is not None and name == until: loop.quit()

bus.add_signal_receiver(changed, signal_name="PropertiesChanged", dbus_interface="org.freedesktop.DBus.Properties",
                        bus_name="org.vpnctl.VPN1", path_keyword="path")
def added(path):
    print("added", path, flush=True)

def removed(path):
    print("removed", path, flush=True)

bus.add_signal_receiver(added, signal_name="ProfileAdded", dbus_interface="org.vpnctl.VPN1.Manager", bus_name="org.vpnctl.VPN1")
bus.add_signal_receiver(removed, signal_name="ProfileRemoved", dbus_interface="org.vpnctl.VPN1.Manager", bus_name="org.vpnctl.VPN1")
bus.call_blocking("org.vpnctl.VPN1", "/org/vpnctl/VPN1", "org.vpnctl.VPN1.Manager", "ListProfiles", "", [])
if len(sys.argv) > 3:
    bus.call_blocking("org.vpnctl.VPN1", sys.argv[3], "org.freedesktop.DBus.Properties", "Get", "ss", ["org.vpnctl.VPN1.Profile", "Status"])
print("listening", flush=True)
loop = GLib.MainLoop()
GLib.timeout_add_seconds(seconds, loop.quit)
loop.run()
