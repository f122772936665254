# The host lab: a booted Debian 12 with systemd, systemd-resolved, D-Bus and
# NetworkManager, in a systemd-nspawn container whose network namespace is the
# lab's client namespace (source after lab.sh). vpnctl is installed in it
# from the project's .deb, as a user would install it.
#
#   root file system  .build/host/<hash>/root, made by mmdebstrap from this
#                     machine's apt sources, cached, rebuilt when HOST_PACKAGES
#                     or this recipe change; each boot runs on an overlay of it
#                     (upper layer in $LAB_DIR), so the cache is never changed
#   network           the container lives in $NS_C (lab.sh's client namespace:
#                     ${LAB}c0 198.18.0.2 <-> the server namespace 198.18.0.1),
#                     so the lab's servers, captures and probes are the same as
#                     every other lab's; nothing touches this machine's namespace
#   cgroup            each nspawn runs from a cgroup of its own (with
#                     --keep-unit its systemd would otherwise share the caller's)
#
# host_boot starts the container; hx runs a command in it as root, hu as a
# user; host_down powers it off and removes everything.

HOST_PACKAGES="systemd,systemd-sysv,dbus,polkitd,python3-dbus,python3-gi,systemd-resolved,libnss-systemd,nftables,iproute2,iputils-ping,wireguard-go,wireguard-tools,openvpn,network-manager,strongswan-charon,libcharon-extra-plugins,libcharon-extauth-plugins,libstrongswan-standard-plugins,libstrongswan-extra-plugins,strongswan-swanctl"
HOST_SUITE=bookworm
HOST_CACHE=${HOST_CACHE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.build/host}
HOST_PID="" HOST_LEADER="" HOST_MERGED="" HOST_CGROUPS=()

# Prints why the host lab cannot run here, or nothing.
host_cannot_run() {
  command -v mmdebstrap >/dev/null || { echo "mmdebstrap is not installed"; return; }
  command -v systemd-nspawn >/dev/null || { echo "systemd-nspawn (systemd-container) is not installed"; return; }
  [ -f /etc/apt/sources.list.d/debian.sources ] || [ -f /etc/apt/sources.list ] || { echo "no apt sources to build a root file system from"; return; }
  grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || { echo "no overlay file system"; return; }
}

# host_rootfs [PACKAGES]: prints the cached root file system's path, with
# HOST_PACKAGES and PACKAGES (comma-separated) installed, building it first
# when the package list or this recipe changed (about a minute).
host_rootfs() {
  local key dir sources packages="$HOST_PACKAGES${1:+,$1}"
  key=$( { echo "$HOST_SUITE $packages"; sed -n '/^host_rootfs()/,/^}/p' "${BASH_SOURCE[0]}"; } | sha256sum | cut -c1-16)
  dir=$HOST_CACHE/$key
  if [ ! -f "$dir/ready" ]; then
    rm -rf "$dir.new" && mkdir -p "$dir.new" || return 1
    sources=/etc/apt/sources.list.d/debian.sources
    [ -f "$sources" ] || sources=/etc/apt/sources.list
    echo "  building the host lab's root file system ($HOST_SUITE, mmdebstrap; cached in $dir)" >&2
    if ! mmdebstrap --quiet --variant=important --include="$packages" "$HOST_SUITE" "$dir.new/root" "$sources" > "$dir.new/mmdebstrap.log" 2>&1; then
      tail -n 15 "$dir.new/mmdebstrap.log" | sed 's/^/  mmdebstrap | /' >&2
      return 1
    fi
    # No login prompt on the console, no DHCP client on the lab's link (NetworkManager
    # gets its configuration from the test), a machine id made at each boot.
    systemctl --root="$dir.new/root" mask console-getty.service getty@tty1.service >/dev/null 2>&1
    : > "$dir.new/root/etc/machine-id"
    echo vpnctl-host > "$dir.new/root/etc/hostname"
    rm -rf "$dir" && mv "$dir.new" "$dir" && touch "$dir/ready" || return 1
    # Older caches are of no use any more.
    find "$HOST_CACHE" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
  fi
  echo "$dir/root"
}

# host_prepare DEB: an overlay of the cached root in $LAB_DIR/host (the
# container's /), with DEB copied to /var/tmp for host_install.
host_prepare() {
  # The .deb's Depends are installed as apt would have installed them
  # (host_install's dpkg -i runs offline).
  local depends; depends=$(dpkg-deb -f "$1" Depends | sed 's/ *([^)]*)//g; s/ //g')
  local root; root=$(host_rootfs "$depends") || return 1
  mkdir -p "$LAB_DIR/host/upper" "$LAB_DIR/host/work" "$LAB_DIR/host/root" || return 1
  need mount -t overlay overlay -o "lowerdir=$root,upperdir=$LAB_DIR/host/upper,workdir=$LAB_DIR/host/work" "$LAB_DIR/host/root" || return 1
  HOST_MERGED=$LAB_DIR/host/root
  cp "$1" "$HOST_MERGED/var/tmp/vpnctl.deb"
}

# host_offline CMD...: CMD in the container's file system, not booted (to install, as root).
host_offline() {
  systemd-nspawn --quiet --register=no --keep-unit --network-namespace-path="/run/netns/$NS_C" \
    -D "$HOST_MERGED" --setenv=DEBIAN_FRONTEND=noninteractive "$@" 2>&1 | grep -v 'we can.t allow that'
  return "${PIPESTATUS[0]}"
}

# host_boot: boots the container in $NS_C and waits for multi-user.
host_boot() {
  local cg
  # A cgroup of its own in every hierarchy that has systemd's name or is cgroup2.
  HOST_CGROUPS=()
  for cg in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified /sys/fs/cgroup; do
    [ -f "$cg/cgroup.procs" ] || continue
    mkdir -p "$cg/vpnctl-$LAB" 2>/dev/null && HOST_CGROUPS+=("$cg/vpnctl-$LAB")
  done
  ( for cg in "${HOST_CGROUPS[@]}"; do echo $BASHPID > "$cg/cgroup.procs" 2>/dev/null; done
    exec systemd-nspawn --quiet --register=no --keep-unit --network-namespace-path="/run/netns/$NS_C" \
      --bind=/dev/net/tun --capability=CAP_NET_ADMIN --resolv-conf=off --timezone=off \
      -D "$HOST_MERGED" -b ) < /dev/null > "$LAB_DIR/host/console.log" 2>&1 &
  HOST_PID=$!
  # Also in a file: host_down ends it even when this ran in a subshell.
  echo "$HOST_PID" >> "$LAB_DIR/host/nspawn.pids"
  wait_for "the container's systemd" 20 host_find_leader || return 1
  if ! wait_for "the container to reach multi-user" 60 hx systemctl is-system-running --wait; then
    hx systemctl --failed --no-legend | sed 's/^/  failed unit | /'
    tail -n 20 "$LAB_DIR/host/console.log" | sed 's/^/  console | /'
    return 1
  fi
}

host_find_leader() {
  HOST_LEADER=$(cat "/proc/$HOST_PID/task/$HOST_PID/children" 2>/dev/null | awk '{print $1}')
  [ -n "$HOST_LEADER" ] && [ "$(cat "/proc/$HOST_LEADER/comm" 2>/dev/null)" = systemd ]
}

# hx CMD...: CMD in the booted container as root (its namespaces, a clean environment).
hx() {
  nsenter -t "$HOST_LEADER" -m -u -i -n -p -C -- \
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root TERM=dumb "$@"
}
# hu USER CMD...: CMD in the container as USER (a login environment of theirs).
hu() { local u=$1; shift; hx runuser -u "$u" -- env HOME=/ "$@"; }

# host_reboot: `systemctl reboot` in the container, then boots it again on
# the same overlay (nspawn ends when its container reboots, as
# systemd-nspawn@.service's RestartForceExitStatus=133 expects).
host_reboot() {
  hx systemctl reboot >/dev/null 2>&1
  wait_for "the container to go down for the reboot" 60 gone "$HOST_PID" || return 1
  wait "$HOST_PID" 2>/dev/null
  host_boot
}

host_down() {
  local cg pid
  for pid in $(cat "$LAB_DIR/host/nspawn.pids" 2>/dev/null); do
    gone "$pid" && continue
    grep -qF "$LAB_DIR/host/root" "/proc/$pid/cmdline" 2>/dev/null || continue
    # nspawn turns SIGTERM into an orderly poweroff of the container.
    kill "$pid" 2>/dev/null
    wait_for "the container to power off" 30 gone "$pid" || kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  rm -f "$LAB_DIR/host/nspawn.pids"
  HOST_PID="" HOST_LEADER=""
  if [ -n "$HOST_MERGED" ]; then
    umount "$HOST_MERGED" 2>/dev/null || umount -l "$HOST_MERGED" 2>/dev/null
    HOST_MERGED=""
  fi
  # A container whose nspawn was killed before it had powered off lives on
  # with no nspawn: every process left in its cgroups is this lab's, ended by pid.
  local left
  for cg in "${HOST_CGROUPS[@]}"; do
    left=$(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null)
    [ -n "$left" ] && kill -KILL $left 2>/dev/null
  done
  [ -n "${left:-}" ] && sleep 1
  for cg in "${HOST_CGROUPS[@]}"; do
    # Children first: whatever the container's systemd left in its tree.
    find "$cg" -depth -mindepth 1 -type d -exec rmdir {} \; 2>/dev/null
    rmdir "$cg" 2>/dev/null
  done
  HOST_CGROUPS=()
  return 0
}
