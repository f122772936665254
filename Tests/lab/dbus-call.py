#!/usr/bin/python3
# A client of org.vpnctl.VPN1 written against the bus alone (python3-dbus,
# Debian's): dbus-call.py ADDRESS PATH INTERFACE.METHOD [OPTIONS_JSON]
# calls METHOD with OPTIONS_JSON as its a{sv} (when given) and prints the
# reply, or "error NAME: MESSAGE" (exit 1).
import json, sys
import dbus

address, path, method = sys.argv[1:4]
bus = dbus.bus.BusConnection(address)
interface, member = method.rsplit(".", 1)
args = []
if len(sys.argv) > 4:
    args.append(dbus.Dictionary(json.loads(sys.argv[4]), signature="sv"))
try:
    reply = bus.call_blocking("org.vpnctl.VPN1", path, interface, member, "a{sv}" if args else "", args)
except dbus.exceptions.DBusException as e:
    print(f"error {e.get_dbus_name()}: {e.get_dbus_message()}")
    sys.exit(1)
print(reply)
