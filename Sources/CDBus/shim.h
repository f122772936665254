#ifndef VPNCTL_CDBUS_SHIM_H
#define VPNCTL_CDBUS_SHIM_H
#include <dbus/dbus.h>
#endif
