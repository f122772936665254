#ifndef VPNCTL_CNETLINK_SHIM_H
#define VPNCTL_CNETLINK_SHIM_H
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <netlink/errno.h>
#include <netlink/cache.h>
#include <netlink/route/link.h>
#include <netlink/route/addr.h>
#include <netlink/route/route.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/rtnl.h>
#include <netlink/route/rule.h>
#include <netlink/msg.h>
#include <netlink/attr.h>
#include <linux/fib_rules.h>
#endif
