#!/usr/bin/env bash
# Raw socket and netlink calls outside Sources/VPNSystem (issue 32: one socket
# helper there; everything else goes through it). Calls of VPNSystem's own
# helpers (UnixSocket.connect, socket.send on an IPSocket) are not raw. The
# plugin SDK (VPNProviderKit) and its example plugin are left out: they are
# built for third parties without vpnctl's modules, on purpose.
# Usage: Tools/raw-system-calls.sh [-v]
cd "$(dirname "$0")/.." || exit 1
hits=$(grep -rnE "(^|[^.A-Za-z_])(Glibc\.)?(socket|connect|bind|listen|accept4?|recv|recvfrom|recvmsg|send|sendto|sendmsg|setsockopt|getsockopt|nl_[a-z_]+|rtnl_[a-z_]+)\(" Sources --include=*.swift \
  | grep -v "^Sources/VPNSystem/\|^Sources/CNetlink/\|^Sources/CVPNShims/\|^Sources/VPNProviderKit/\|^Sources/vpnctl-example-udp-relay/" | grep -vE ":[0-9]+:\s*///|func (send|connect|listen)" \
  | grep -E "Glibc\.|[^A-Za-z_.](socket|connect|bind|listen|accept4?|recv|recvfrom|recvmsg|sendto|sendmsg|setsockopt|getsockopt|nl_[a-z_]+|rtnl_[a-z_]+)\(")
[ "${1:-}" = -v ] && [ -n "$hits" ] && printf '%s\n' "$hits"
printf '%s\n' "$hits" | grep -c . 
