#!/usr/bin/python3
# A desktop's notification server, of the test's own, on a session bus
# (python3-dbus with GLib's main loop): notify-server.py ADDRESS SECONDS
# owns org.freedesktop.Notifications, prints "ready", then one line per
# Notify it is sent, "APP|SUMMARY|BODY|ICON", for SECONDS at most.
import sys
import dbus, dbus.service, dbus.mainloop.glib
from gi.repository import GLib

address, seconds = sys.argv[1], int(sys.argv[2])
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(address)

class Notifications(dbus.service.Object):
    serial = 0

    @dbus.service.method("org.freedesktop.Notifications", in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app, replaces, icon, summary, body, actions, hints, timeout):
        print(f"{app}|{summary}|{body}|{icon}", flush=True)
        Notifications.serial += 1
        return Notifications.serial

    @dbus.service.method("org.freedesktop.Notifications", out_signature="ssss")
    def GetServerInformation(self):
        return ("lab", "vpnctl", "1", "1.2")

name = dbus.service.BusName("org.freedesktop.Notifications", bus)
Notifications(bus, "/org/freedesktop/Notifications")
print("ready", flush=True)
loop = GLib.MainLoop()
GLib.timeout_add_seconds(seconds, loop.quit)
loop.run()
