#!/usr/bin/env bash
# The package and what it installs, as a user meets them: the .deb built from
# this binary, lintian, an install into a scratch root (never this machine's
# own dpkg database) and a purge that leaves nothing; the installed
# completions found and driven by each shell with live names; the man pages
# rendered without a warning; make install / uninstall.
# Usage: Tests/packaging/run.sh path/to/vpnctl   (make test-packaging)
set -uo pipefail
BIN=$(realpath "${1:?usage: run.sh path/to/vpnctl}")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d /tmp/vpnctl-pkg.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
source "$HERE/../lib/testlib.sh"
unset VPNCTL_CONFIG_DIR VPNCTL_RUN_DIR VPNCTL_PROC_NET_DEV NO_COLOR VPNCTL_LOCALEDIR LANGUAGE LC_MESSAGES
export LC_ALL=C

VERSION=$("$BIN" --version | sed -n 's/^vpnctl //p')
ARCH=$(dpkg --print-architecture)
mkdir -p "$WORK/completions"
"$BIN" completion bash > "$WORK/completions/vpnctl.bash"
"$BIN" completion zsh > "$WORK/completions/_vpnctl"
"$BIN" completion fish > "$WORK/completions/vpnctl.fish"
LANGS="vi zh_Hans ru"
for l in $LANGS; do
  mkdir -p "$WORK/locale/$l/LC_MESSAGES" && msgfmt -o "$WORK/locale/$l/LC_MESSAGES/vpnctl.mo" "$ROOT/po/$l.po" \
    || { echo "FAIL - msgfmt po/$l.po"; exit 1; }
done
DEB=$(bash "$ROOT/packaging/build-deb.sh" "$BIN" "$WORK/completions" "$WORK/out" "$WORK/locale") || { echo "FAIL - build-deb.sh"; exit 1; }
R="$WORK/root"   # the scratch root the package goes into

# A store with two profiles, one with a space in its name.
wg_quick_conf 10.0.0.2/32 0.0.0.0/0 198.18.0.1:51820 \
  yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk= xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg= > "$WORK/p.conf"
STORE="$WORK/store"
"$BIN" --config-dir "$STORE" import "$WORK/p.conf" --name office >/dev/null
"$BIN" --config-dir "$STORE" import "$WORK/p.conf" --name "my home" >/dev/null
printf ' face |bytes packets\n x |y\n    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n utun3: 2 2 0 0 0 0 0 0 2 2 0 0 0 0 0 0\n' > "$WORK/dev"

# bash_complete BIN WORD...: COMPREPLY for the words (the last is being completed), '|'-joined.
bash_complete() {
  local script=${SCRIPT:-$WORK/completions/vpnctl.bash}
  bash --norc --noprofile -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=(); _vpnctl
    (IFS="|"; echo "${COMPREPLY[*]}")' bash "$script" "$@"
}

# --- The package's name, fields and files -----------------------------------
test_package_fields() {
  expect_eq "file name" "vpnctl_${VERSION}_${ARCH}.deb" "$(basename "$DEB")" || return 1
  expect_eq "Version" "$VERSION" "$(dpkg-deb -f "$DEB" Version)" || return 1
  expect_eq "Architecture" "$ARCH" "$(dpkg-deb -f "$DEB" Architecture)" || return 1
  local depends; depends=$(dpkg-deb -f "$DEB" Depends)
  # libnl is a Depends only when a binary loads it at run time (vpnctl is
  # static; vpnctl-dbus loads the shared libnl).
  # (read whole before grep: under pipefail an early grep -q or ldd's exit 1 for the
  # static vpnctl would read as "not loaded")
  local needed; needed=$( { readelf -d "$BIN"; readelf -d "$(dirname "$BIN")/vpnctl-dbus"; } 2>/dev/null)
  if grep -q 'NEEDED.*libnl-route-3' <<<"$needed"; then
    expect_contains "Depends (dynamic libnl)" "libnl-route-3-200" "$depends" || return 1
  else
    ! grep -q libnl <<<"$depends" || { echo "  Depends names libnl, but neither binary loads it: $depends"; return 1; }
  fi
  # vpnctl-dbus loads libdbus-1.
  expect_contains "Depends (vpnctl-dbus)" "libdbus-1-3 (>= " "$depends" || return 1
  expect_contains "Recommends" "wireguard-go" "$(dpkg-deb -f "$DEB" Recommends)" || return 1
  expect_contains "Suggests" "strongswan" "$(dpkg-deb -f "$DEB" Suggests)" || return 1
  local files; files=$(dpkg-deb -c "$DEB" | awk '{print $1, $2, $NF}')
  local f
  for f in "-rwxr-xr-x root/root ./usr/bin/vpnctl" \
           "-rwxr-xr-x root/root ./usr/bin/vpnctl-dbus" \
           "-rw-r--r-- root/root ./usr/share/man/man8/vpnctl-dbus.8.gz" \
           "-rw-r--r-- root/root ./usr/share/dbus-1/system.d/org.vpnctl.VPN1.conf" \
           "-rw-r--r-- root/root ./usr/share/dbus-1/system-services/org.vpnctl.VPN1.service" \
           "-rw-r--r-- root/root ./usr/share/dbus-1/interfaces/org.vpnctl.VPN1.xml" \
           "-rw-r--r-- root/root ./usr/share/polkit-1/actions/org.vpnctl.policy" \
           "-rw-r--r-- root/root ./usr/lib/systemd/system/vpnctl-dbus.service" \
           "-rw-r--r-- root/root ./usr/share/man/man1/vpnctl.1.gz" \
           "-rw-r--r-- root/root ./usr/share/man/man5/vpnctl-profile.5.gz" \
           "-rw-r--r-- root/root ./usr/share/man/man7/vpnctl-provider.7.gz" \
           "-rw-r--r-- root/root ./usr/share/bash-completion/completions/vpnctl" \
           "-rw-r--r-- root/root ./usr/share/zsh/vendor-completions/_vpnctl" \
           "-rw-r--r-- root/root ./usr/share/fish/vendor_completions.d/vpnctl.fish" \
           "-rw-r--r-- root/root ./usr/share/doc/vpnctl/copyright" \
           "-rw-r--r-- root/root ./usr/share/locale/vi/LC_MESSAGES/vpnctl.mo" \
           "-rw-r--r-- root/root ./usr/share/locale/zh_Hans/LC_MESSAGES/vpnctl.mo" \
           "-rw-r--r-- root/root ./usr/share/locale/ru/LC_MESSAGES/vpnctl.mo"; do
    grep -qxF -- "$f" <<<"$files" || { echo "  not in the package: $f"; echo "$files" | sed 's/^/    /'; return 1; }
  done
}
check "the .deb: name, version, arch, relations and files" test_package_fields

test_lintian() {
  command -v lintian >/dev/null || { echo "  lintian is not installed"; return 2; }
  local out rc
  out=$(lintian --pedantic --display-info --fail-on error,warning,info,pedantic "$DEB" 2>&1); rc=$?
  out=$(grep -v 'running with root privileges' <<<"$out")
  [ "$rc" = 0 ] && [ -z "$out" ] || { echo "  lintian (exit $rc):"; echo "$out" | sed 's/^/    /'; return 1; }
}
if command -v lintian >/dev/null; then check "lintian --pedantic finds nothing (overrides explained in packaging/debian)" test_lintian
else skip "lintian: not installed (make test-packaging installs it)"; fi

# --- Install into a scratch root, use it, purge it ---------------------------
snapshot() { (cd "$R" && find . -path ./var/lib/dpkg -prune -o -path ./var/log -prune -o -print | sort); }

test_install_use_purge() {
  mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers" "$R/var/log"
  : > "$R/var/lib/dpkg/status"
  local before; before=$(snapshot)
  # Dependencies are this machine's business, not the scratch root's; its maintainer
  # scripts run outside it with DPKG_ROOT set (they then leave systemd alone).
  local out; out=$(dpkg --root="$R" --log="$R/var/log/dpkg.log" --force-depends --force-script-chrootless --install "$DEB" 2>&1) \
    || { echo "  dpkg --install: $out"; return 1; }
  expect_eq "status" "install ok installed" "$(dpkg --root="$R" -s vpnctl 2>/dev/null | sed -n 's/^Status: //p')" || return 1
  local listed; listed=$(dpkg --root="$R" -L vpnctl)
  local f
  for f in /usr/bin/vpnctl /usr/share/man/man1/vpnctl.1.gz /usr/share/man/man5/vpnctl-profile.5.gz \
           /usr/share/bash-completion/completions/vpnctl /usr/share/zsh/vendor-completions/_vpnctl \
           /usr/share/fish/vendor_completions.d/vpnctl.fish /usr/share/man/man8/vpnctl-agent.8.gz \
           /usr/lib/systemd/system/vpnctl-agent.socket /usr/lib/systemd/system/vpnctl-agent.service \
           /usr/lib/systemd/system/vpnctl@.service /usr/lib/systemd/system/vpnctl-block@.service /usr/lib/NetworkManager/conf.d/90-vpnctl.conf \
           /usr/lib/udev/rules.d/85-vpnctl.rules; do
    grep -qxF "$f" <<<"$listed" && [ -f "$R$f" ] || { echo "  $f not installed"; return 1; }
  done
  grep -qx "ExecStart=/usr/bin/vpnctl agent" "$R/usr/lib/systemd/system/vpnctl-agent.service" \
    || { echo "  the packaged agent unit does not run /usr/bin/vpnctl"; return 1; }
  grep -qx "Exec=/usr/bin/vpnctl-dbus" "$R/usr/share/dbus-1/system-services/org.vpnctl.VPN1.service" \
    && grep -qx "ExecStart=/usr/bin/vpnctl-dbus" "$R/usr/lib/systemd/system/vpnctl-dbus.service" \
    || { echo "  the packaged D-Bus activation does not run /usr/bin/vpnctl-dbus"; return 1; }
  expect_eq "installed --version" "vpnctl $VERSION" "$("$R/usr/bin/vpnctl" --version)" || return 1
  cmp -s "$R/usr/share/bash-completion/completions/vpnctl" "$WORK/completions/vpnctl.bash" || { echo "  installed bash script differs"; return 1; }
  # The installed binary finds the installed catalogs (/usr/bin/../share/locale).
  expect_contains "installed, LANGUAGE=vi" "CÁCH DÙNG:" "$(LC_ALL= LANGUAGE=vi "$R/usr/bin/vpnctl" help list)" || return 1
  expect_contains "installed, LANG=ru_RU.UTF-8" "ИСПОЛЬЗОВАНИЕ:" "$(LC_ALL= LANG=ru_RU.UTF-8 "$R/usr/bin/vpnctl" help list)" || return 1
  # Each installed page renders without a warning at 80 columns.
  local page warn
  for page in "$R/usr/share/man/man1/vpnctl.1.gz" "$R/usr/share/man/man5/vpnctl-profile.5.gz" "$R/usr/share/man/man7/vpnctl-provider.7.gz" \
              "$R/usr/share/man/man8/vpnctl-dbus.8.gz"; do
    if command -v man >/dev/null; then
      warn=$(MANWIDTH=80 man -l "$page" 2>&1 >/dev/null)
      [ -z "$warn" ] || { echo "  man -l $(basename "$page"): $warn"; return 1; }
    fi
  done
  installed_completions_work || return 1

  out=$(dpkg --root="$R" --log="$R/var/log/dpkg.log" --force-script-chrootless --purge vpnctl 2>&1) || { echo "  dpkg --purge: $out"; return 1; }
  local after; after=$(snapshot)
  [ "$before" = "$after" ] || { echo "  left behind:"; diff <(echo "$before") <(echo "$after") | sed 's/^/    /'; return 1; }
  ! ls "$R/var/lib/dpkg/info" | grep -q '^vpnctl\.' || { echo "  dpkg info files left: $(ls "$R/var/lib/dpkg/info")"; return 1; }
  [ -z "$(dpkg --root="$R" -l 2>/dev/null | grep vpnctl)" ] || { echo "  still known to the scratch dpkg"; return 1; }
}

# The shells find the installed scripts where they look, and complete live names.
installed_completions_work() {
  local bc=/usr/share/bash-completion/bash_completion
  if [ -f "$bc" ]; then
    # bash-completion's loader finds completions/vpnctl under XDG_DATA_DIRS.
    local loaded
    loaded=$(XDG_DATA_DIRS="$R/usr/share" BASH_COMPLETION_USER_DIR="$WORK/none" bash --norc --noprofile -c \
      "source $bc; __load_completion vpnctl; complete -p vpnctl" 2>&1)
    expect_eq "bash-completion's loader" "complete -F _vpnctl vpnctl" "$loaded" || return 1
  else
    echo "  (bash-completion is not installed: its loader is not tried)"
  fi
  local got
  got=$(bash_complete "$R/usr/bin/vpnctl" --config-dir "$STORE" start '')
  expect_eq "bash: start <profile> (live)" "office|my\\ home" "$got" || return 1
  got=$(bash_complete "$R/usr/bin/vpnctl" --config-dir "$STORE" secret set 'my\ home' '')
  expect_eq "bash: secret set <profile> <secret> (live)" "private-key" "$got" || return 1
  if command -v zsh >/dev/null; then
    got=$(zsh -f -c "fpath=($R/usr/share/zsh/vendor-completions \$fpath); autoload -Uz compinit; compinit -u -d $WORK/zcd; print -r -- \${_comps[vpnctl]}" 2>&1)
    expect_eq "zsh finds _vpnctl on its fpath" "_vpnctl" "$got" || return 1
    # zsh's completion run for real in a pty (Tests/packaging/zsh-complete.zsh).
    local zdir="$WORK/zsh"; mkdir -p "$zdir"; cp "$R/usr/share/zsh/vendor-completions/_vpnctl" "$zdir/"
    zsh_complete() { PATH="$R/usr/bin:$PATH" timeout 30 zsh -f "$HERE/zsh-complete.zsh" "$zdir" "$1" | paste -sd'|'; }
    expect_eq "zsh: vpnctl st" "start|stats|status|stop" "$(zsh_complete 'vpnctl st')" || return 1
    expect_eq "zsh: --color=" "always|auto|never" "$(zsh_complete 'vpnctl --color=')" || return 1
    expect_eq "zsh: start <profile> (live)" "my home|office" "$(zsh_complete "vpnctl --config-dir $STORE start ")" || return 1
    expect_eq "zsh: secret set <profile> <secret> (live)" "private-key" \
      "$(zsh_complete "vpnctl --config-dir=$STORE secret set my\\ home ")" || return 1
  fi
  if command -v fish >/dev/null; then
    got=$(HOME="$WORK/fishhome" XDG_CONFIG_HOME="$WORK/fishhome" XDG_DATA_HOME="$WORK/fishhome" PATH="$R/usr/bin:/usr/bin:/bin" \
      fish --no-config -c "set -p fish_complete_path $R/usr/share/fish/vendor_completions.d
        complete -C 'vpnctl --config-dir $STORE start ' | string join '|'" 2>&1)
    expect_eq "fish loads vpnctl.fish and completes live names" "my home|office" "$got" || return 1
  fi
}
check "dpkg --root: installs, the shells and man use it, --purge leaves nothing" test_install_use_purge

# --- bash completion through the real binary ---------------------------------
test_bash_live() {
  local got
  got=$(VPNCTL_CONFIG_DIR="$STORE" bash_complete "$BIN" show m)
  expect_eq "show m (VPNCTL_CONFIG_DIR)" "my\\ home" "$got" || return 1
  got=$(bash_complete "$BIN" --config-dir "$STORE" stats --profile o)
  expect_eq "--config-dir DIR ... --profile o" "office" "$got" || return 1
  got=$(bash_complete "$BIN" --config-dir = "$STORE" toggle '')
  expect_eq "--config-dir=DIR split at '='" "office|my\\ home" "$got" || return 1
  got=$(bash_complete "$BIN" --config-dir "$WORK/empty" start '')
  expect_eq "an empty store" "" "$got" || return 1
  got=$(VPNCTL_PROC_NET_DEV="$WORK/dev" bash_complete "$BIN" stats lo '')
  expect_eq "stats <interface> ... (live, repeated)" "lo|utun3" "$got" || return 1
  got=$(bash_complete "$BIN" --config-dir "$STORE" import "$WORK/p.c")
  expect_eq "import <file>" "$WORK/p.conf" "$got" || return 1
  got=$(bash_complete "$BIN" --run-dir "$WORK/")
  expect_contains "--run-dir <dir>" "$WORK/store" "$got" || return 1
}
check "bash: live profile, secret and interface names; files and dirs" test_bash_live

# The hidden entry point is cheap: it runs on every Tab.
test_complete_is_fast() {
  local n=200 i start end
  start=$(date +%s%N)
  for ((i = 0; i < n; i++)); do "$BIN" __complete --config-dir "$STORE" profiles >/dev/null; done
  end=$(date +%s%N)
  local us=$(( (end - start) / n / 1000 ))
  echo "  vpnctl __complete profiles: ${us} us a call (mean of $n, 2 profiles)"
  [ "$us" -lt 50000 ] || { echo "  slower than 50 ms a call"; return 1; }
}
check "__complete profiles answers in well under a keystroke" test_complete_is_fast

# --- make install / uninstall: the pages and the scripts too ---------------
test_make_install() {
  local dest="$WORK/dest" prefix=/opt/vpnctl
  make -C "$ROOT" -s install DESTDIR="$dest" PREFIX=$prefix >/dev/null || return 1
  local f
  for f in bin/vpnctl share/man/man1/vpnctl.1 share/man/man5/vpnctl-profile.5 share/bash-completion/completions/vpnctl \
           share/zsh/site-functions/_vpnctl share/fish/vendor_completions.d/vpnctl.fish share/man/man8/vpnctl-agent.8 \
           lib/systemd/system/vpnctl-agent.socket lib/systemd/system/vpnctl-agent.service lib/systemd/system/vpnctl@.service lib/systemd/system/vpnctl-block@.service \
           share/locale/vi/LC_MESSAGES/vpnctl.mo share/locale/zh_Hans/LC_MESSAGES/vpnctl.mo share/locale/ru/LC_MESSAGES/vpnctl.mo \
           bin/vpnctl-dbus share/man/man8/vpnctl-dbus.8 share/dbus-1/system.d/org.vpnctl.VPN1.conf share/dbus-1/interfaces/org.vpnctl.VPN1.xml \
           share/dbus-1/system-services/org.vpnctl.VPN1.service lib/systemd/system/vpnctl-dbus.service share/polkit-1/actions/org.vpnctl.policy; do
    [ -f "$dest$prefix/$f" ] || { echo "  not installed: $prefix/$f"; return 1; }
  done
  grep -qx "ExecStart=$prefix/bin/vpnctl agent" "$dest$prefix/lib/systemd/system/vpnctl-agent.service" \
    || { echo "  the agent's unit does not run $prefix/bin/vpnctl"; return 1; }
  grep -qx "Exec=$prefix/bin/vpnctl-dbus" "$dest$prefix/share/dbus-1/system-services/org.vpnctl.VPN1.service" \
    || { echo "  the D-Bus activation file does not run $prefix/bin/vpnctl-dbus"; return 1; }
  make -C "$ROOT" -s uninstall DESTDIR="$dest" PREFIX=$prefix >/dev/null || return 1
  local left; left=$(find "$dest" -type f)
  [ -z "$left" ] || { echo "  left after uninstall: $left"; return 1; }
}
check "make install / uninstall: binaries, the pages, three completion scripts, the systemd units, the catalogs, the D-Bus policy, interfaces and activation file" test_make_install

summary packaging
