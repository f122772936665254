#!/usr/bin/python3
# Writes the dbusmessage fuzz target's seed corpus: method calls to
# org.vpnctl.VPN1 in their wire form, made by GLib's D-Bus (python3-gi), so
# that the seeds come from another implementation than the one under test.
# Usage: /usr/bin/python3 make-dbus-corpus.py DIR
import os, sys
from gi.repository import Gio, GLib

out = sys.argv[1]
P = "/org/vpnctl/VPN1/profile/18380c8262064bf6b96cf46ec4d630e7"
M = "/org/vpnctl/VPN1"
calls = {
    "list": (M, "org.vpnctl.VPN1.Manager", "ListProfiles", None),
    "by-name": (M, "org.vpnctl.VPN1.Manager", "GetProfileByName", GLib.Variant("(s)", ("office",))),
    "objects": (M, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", None),
    "start": (P, "org.vpnctl.VPN1.Profile", "Start", GLib.Variant("(a{sv})", ({"persist": GLib.Variant("b", True)},))),
    "start-bogus": (P, "org.vpnctl.VPN1.Profile", "Start", GLib.Variant("(a{sv})", ({"bogus": GLib.Variant("as", ["x", "y"])},))),
    "start-nested": (P, "org.vpnctl.VPN1.Profile", "Start", GLib.Variant("(a{sv})", ({"x": GLib.Variant("v", GLib.Variant("a{sv}", {"y": GLib.Variant("(ii)", (1, 2))}))},))),
    "stop": (P, "org.vpnctl.VPN1.Profile", "Stop", None),
    "verify": (P, "org.vpnctl.VPN1.Profile", "Verify", GLib.Variant("(s)", ("http://198.19.0.1:8080/",))),
    "get": (P, "org.freedesktop.DBus.Properties", "Get", GLib.Variant("(ss)", ("org.vpnctl.VPN1.Profile", "Status"))),
    "getall": (P, "org.freedesktop.DBus.Properties", "GetAll", GLib.Variant("(s)", ("",))),
    "set": (P, "org.freedesktop.DBus.Properties", "Set", GLib.Variant("(ssv)", ("org.vpnctl.VPN1.Profile", "Name", GLib.Variant("s", "x")))),
    "introspect": (P, "org.freedesktop.DBus.Introspectable", "Introspect", None),
    "bytes": (P, "org.vpnctl.VPN1.Profile", "Verify", GLib.Variant("(ayd)", (b"\x00\x01", 1.5))),
}
os.makedirs(out, exist_ok=True)
for name, (path, interface, member, body) in calls.items():
    m = Gio.DBusMessage.new_method_call("org.vpnctl.VPN1", path, interface, member)
    if body is not None:
        m.set_body(body)
    m.set_serial(1)
    with open(os.path.join(out, name), "wb") as f:
        f.write(m.to_blob(Gio.DBusCapabilityFlags.NONE))
