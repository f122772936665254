#!/usr/bin/env bash
# Hostile input, end to end, through the built binary: as root and as an
# unprivileged user this suite creates (and removes). Every *.sh beside this
# file defines functions named sec_<suite>_<case>; each runs in a subshell with
# a fresh private $WORK and VPNCTL_CONFIG_DIR / VPNCTL_RUN_DIR inside it, and
# returns 0 (pass), 1 (fail) or 2 (skip, having said why).
# Afterwards the suite checks that nothing outside its own dirs changed: the
# host's links, addresses and routes, /etc/vpnctl, /run/vpnctl, namespaces
# and users. Skips fail the run when CI=true or VPNCTL_REQUIRE_LAB=1.
# Usage: Tests/security/run.sh path/to/vpnctl
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC_BIN=$(realpath "${1:?usage: run.sh path/to/vpnctl}")
SEC_PREFIX=vs$(( $$ % 100000 ))
SEC_ROOT=$(mktemp -d /tmp/vpnctl-sec.XXXXXX)
chmod 755 "$SEC_ROOT"   # the test user must reach its own dir below
mkdir -m 755 "$SEC_ROOT/bin"
cp "$SRC_BIN" "$SEC_ROOT/bin/vpnctl"
BIN=$SEC_ROOT/bin/vpnctl
SEC_USER=""
unset VPNCTL_TEST_FAULT
source "$HERE/../lib/testlib.sh"

snapshot() {
  ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort
  ip -o addr show | awk '{print $2, $4}' | sort
  ip route show table all 2>/dev/null | sort
  ip netns list 2>/dev/null | awk '{print $1}' | grep "^$SEC_PREFIX" || true
  ls -la /etc/vpnctl /run/vpnctl 2>&1 | grep -v ' \.\.\?$' || true
  getent passwd | cut -d: -f1 | grep "^$SEC_PREFIX" || true
}

cleanup() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$SEC_PREFIX"); do ip netns del "$ns"; done
  [ -n "$SEC_USER" ] && userdel "$SEC_USER" 2>/dev/null
  rm -rf "$SEC_ROOT"
}
trap cleanup EXIT

before=$(snapshot)
if [ "$(id -u)" = 0 ] && command -v useradd >/dev/null; then
  SEC_USER=${SEC_PREFIX}u
  useradd --system --no-create-home --shell /usr/sbin/nologin "$SEC_USER" || SEC_USER=""
fi
export BIN SEC_USER SEC_PREFIX

# Helpers for the suites.
# as_user CMD...: runs CMD as the unprivileged test user (its HOME is its own dir).
as_user() { runuser -u "$SEC_USER" -- env -u VPNCTL_CONFIG_DIR -u VPNCTL_RUN_DIR "$@"; }
need_user() { [ -n "$SEC_USER" ] || { echo "  skip: needs root and useradd to create a test user"; return 2; }; }
# new_netns NAME: creates a namespace of this suite's own; echoes its name.
new_netns() {
  local ns=$SEC_PREFIX$1
  ip netns add "$ns" 2>/dev/null || return 1
  ip netns exec "$ns" ip link set lo up
  echo "$ns"
}
need_netns() {
  [ "$(id -u)" = 0 ] || { echo "  skip: needs root for network namespaces"; return 2; }
  ip netns add "${SEC_PREFIX}probe" 2>/dev/null || { echo "  skip: cannot create a network namespace"; return 2; }
  ip netns del "${SEC_PREFIX}probe"
}
# wg_conf: a valid wg-quick file (lab addresses, a key that is not used anywhere).
wg_conf() {
  wg_quick_conf 198.19.0.2/32 198.19.0.0/24 198.18.0.1:51820 \
    yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk= xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=
}
export -f as_user need_user new_netns need_netns wg_conf wg_quick_conf

for f in "$HERE"/*.sh; do
  [ "$f" = "$HERE/run.sh" ] || source "$f"
done

n=0
for fn in $(declare -F | awk '{print $3}' | grep '^sec_' | sort); do
  selected "$fn" "$fn" || continue   # TEST_ONLY="word ..."
  n=$((n + 1))
  WORK=$SEC_ROOT/t$n
  mkdir -m 700 "$WORK"
  out=$( export WORK VPNCTL_CONFIG_DIR=$WORK/etc VPNCTL_RUN_DIR=$WORK/run; cd "$WORK" && "$fn" 2>&1 )
  rc=$?
  case $rc in
    0) pass "$fn" ;;
    2) skip "$fn"; [ -n "$out" ] && echo "$out" ;;
    *) fail "$fn"; [ -n "$out" ] && echo "$out" ;;
  esac
done

if [ -n "$SEC_USER" ]; then userdel "$SEC_USER" 2>/dev/null; SEC_USER=""; fi
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$SEC_PREFIX"); do ip netns del "$ns"; done
after=$(snapshot)
if [ "$before" = "$after" ]; then
  pass "nothing outside the suite's own dirs changed"
else
  fail "the suite changed the machine outside its own dirs:"
  diff <(echo "$before") <(echo "$after") | sed 's/^/  /'
fi
summary security
