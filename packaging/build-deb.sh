#!/usr/bin/env bash
# Builds vpnctl_<version>_<arch>.deb from a release binary, its man pages and
# the completion scripts, with dpkg-deb. `make deb` calls it.
# Usage: packaging/build-deb.sh BINARY COMPLETIONS_DIR OUT_DIR [LOCALE_DIR]
# LOCALE_DIR holds <lang>/LC_MESSAGES/vpnctl.mo (make's build/locale).
set -euo pipefail
BIN=$(realpath "${1:?usage: build-deb.sh BINARY COMPLETIONS_DIR OUT_DIR}")
COMPLETIONS=$(realpath "${2:?}")
OUT=$(realpath "${3:?}")
LOCALES=${4:+$(realpath "$4")}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

# One version: the binary's own. The man pages must agree (a unit test
# checks the same in the source tree).
VERSION=$("$BIN" --version | sed -n 's/^vpnctl //p')
[ -n "$VERSION" ] || { echo "build-deb: cannot read the version from $BIN" >&2; exit 1; }
for page in "$ROOT"/man/*.[1-8]; do
  grep -q "^\.TH .*\"vpnctl $VERSION\"" "$page" || { echo "build-deb: $page is not for vpnctl $VERSION" >&2; exit 1; }
done
ARCH=$(dpkg --print-architecture)
# Who answers for the package: DEBFULLNAME and DEBEMAIL, as dch reads them.
# The default is a placeholder on a reserved domain (RFC 2606).
MAINTAINER="${DEBFULLNAME:-vpnctl developers} <${DEBEMAIL:-vpnctl@example.org}>"
DEB="$OUT/vpnctl_${VERSION}_${ARCH}.deb"

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/vpnctl-deb.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
PKG="$STAGE/vpnctl"
# The build host's umask must not leak into the package.
umask 022
install -d "$PKG/DEBIAN" "$PKG/usr/bin" "$PKG/usr/share/man/man1" "$PKG/usr/share/man/man5" \
  "$PKG/usr/share/doc/vpnctl" "$PKG/usr/share/bash-completion/completions" \
  "$PKG/usr/share/zsh/vendor-completions" "$PKG/usr/share/fish/vendor_completions.d" \
  "$PKG/usr/share/lintian/overrides" "$PKG/usr/share/man/man8" "$PKG/usr/lib/systemd/system"

# Stripped as dh_strip would (27 MB with debug info, 16 MB without).
strip --strip-unneeded --remove-section=.comment --remove-section=.note -o "$PKG/usr/bin/vpnctl" "$BIN"
chmod 0755 "$PKG/usr/bin/vpnctl"
# vpnctl-dbus, built beside vpnctl (make build), links the shared libdbus-1.
DBUS_BIN=$(dirname "$BIN")/vpnctl-dbus
[ -x "$DBUS_BIN" ] || { echo "build-deb: no vpnctl-dbus beside $BIN (make build makes both)" >&2; exit 1; }
strip --strip-unneeded --remove-section=.comment --remove-section=.note -o "$PKG/usr/bin/vpnctl-dbus" "$DBUS_BIN"
chmod 0755 "$PKG/usr/bin/vpnctl-dbus"
gzip -9n < "$ROOT/man/vpnctl-dbus.8" > "$PKG/usr/share/man/man8/vpnctl-dbus.8.gz"
install -D -m 0644 "$ROOT/dbus/org.vpnctl.VPN1.conf" "$PKG/usr/share/dbus-1/system.d/org.vpnctl.VPN1.conf"
install -D -m 0644 "$ROOT/dbus/org.vpnctl.VPN1.xml" "$PKG/usr/share/dbus-1/interfaces/org.vpnctl.VPN1.xml"
install -D -m 0644 "$ROOT/dbus/org.vpnctl.policy" "$PKG/usr/share/polkit-1/actions/org.vpnctl.policy"
install -d "$PKG/usr/share/dbus-1/system-services"
sed 's|@BINDIR@|/usr/bin|g' "$ROOT/dbus/org.vpnctl.VPN1.service" > "$PKG/usr/share/dbus-1/system-services/org.vpnctl.VPN1.service"
chmod 0644 "$PKG/usr/share/dbus-1/system-services/org.vpnctl.VPN1.service"
gzip -9n < "$ROOT/man/vpnctl.1" > "$PKG/usr/share/man/man1/vpnctl.1.gz"
gzip -9n < "$ROOT/man/vpnctl-profile.5" > "$PKG/usr/share/man/man5/vpnctl-profile.5.gz"
gzip -9n < "$ROOT/man/vpnctl-agent.8" > "$PKG/usr/share/man/man8/vpnctl-agent.8.gz"
for unit in vpnctl-agent.socket vpnctl-agent.service vpnctl@.service vpnctl-block@.service vpnctl-dbus.service; do
  sed 's|@BINDIR@|/usr/bin|g' "$HERE/systemd/$unit" > "$PKG/usr/lib/systemd/system/$unit"
  chmod 0644 "$PKG/usr/lib/systemd/system/$unit"
done
# NetworkManager leaves vpnctl's utunN alone: a conf.d drop-in (read by
# NetworkManager whether or not udev runs) and a udev property.
install -D -m 0644 "$HERE/networkmanager/90-vpnctl.conf" "$PKG/usr/lib/NetworkManager/conf.d/90-vpnctl.conf"
install -D -m 0644 "$HERE/udev/85-vpnctl.rules" "$PKG/usr/lib/udev/rules.d/85-vpnctl.rules"
install -d "$PKG/usr/share/man/man7"
gzip -9n < "$ROOT/man/vpnctl-provider.7" > "$PKG/usr/share/man/man7/vpnctl-provider.7.gz"
install -m 0644 "$COMPLETIONS/vpnctl.bash" "$PKG/usr/share/bash-completion/completions/vpnctl"
install -m 0644 "$COMPLETIONS/_vpnctl" "$PKG/usr/share/zsh/vendor-completions/_vpnctl"
install -m 0644 "$COMPLETIONS/vpnctl.fish" "$PKG/usr/share/fish/vendor_completions.d/vpnctl.fish"
install -m 0644 "$HERE/debian/copyright" "$PKG/usr/share/doc/vpnctl/copyright"
if [ -n "$LOCALES" ]; then
  for mo in "$LOCALES"/*/LC_MESSAGES/vpnctl.mo; do
    [ -f "$mo" ] || continue
    lang=$(basename "$(dirname "$(dirname "$mo")")")
    install -d "$PKG/usr/share/locale/$lang/LC_MESSAGES"
    install -m 0644 "$mo" "$PKG/usr/share/locale/$lang/LC_MESSAGES/vpnctl.mo"
  done
fi
install -m 0644 "$HERE/debian/lintian-overrides" "$PKG/usr/share/lintian/overrides/vpnctl"
# A native package's changelog, dated by the last commit so that two builds
# of one tree are the same (SOURCE_DATE_EPOCH wins when set).
EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)}
sed -e "s/@VERSION@/$VERSION/" -e "s|@MAINTAINER@|$MAINTAINER|" -e "s/@DATE@/$(date -u -R -d "@$EPOCH")/" "$HERE/debian/changelog.in" \
  | gzip -9n > "$PKG/usr/share/doc/vpnctl/changelog.gz"
chmod 0644 "$PKG/usr/share/doc/vpnctl/changelog.gz" "$PKG"/usr/share/man/man*/*.gz

# vpnctl is a static executable: no shlibs to compute; glibc's NSS modules
# are loaded at run time, hence libc6 (>= the version it was linked with).
# vpnctl-dbus loads libdbus-1, libnl, libcrypto and the C++ runtime: its
# dependencies as dh_shlibdeps computes them (dpkg-shlibdeps, which reads a
# debian/control: a minimal one in the stage).
LIBC=$(dpkg-query -W -f='${Version}' libc6 | sed 's/-.*//')
install -d "$STAGE/src/debian"
printf 'Source: vpnctl\n\nPackage: vpnctl\nArchitecture: any\n' > "$STAGE/src/debian/control"
SHLIBS=$(cd "$STAGE/src" && dpkg-shlibdeps -O -xlibc6 -e"$PKG/usr/bin/vpnctl-dbus" 2>"$STAGE/shlibdeps.log" | sed -n 's/^shlibs:Depends=//p')
[ -n "$SHLIBS" ] || { echo "build-deb: dpkg-shlibdeps found no libraries for vpnctl-dbus:" >&2; cat "$STAGE/shlibdeps.log" >&2; exit 1; }
SIZE=$(du -sk --exclude=DEBIAN "$PKG" | cut -f1)
sed -e "s/@VERSION@/$VERSION/" -e "s|@MAINTAINER@|$MAINTAINER|" -e "s/@ARCH@/$ARCH/" -e "s/@SIZE@/$SIZE/" -e "s/@LIBC@/$LIBC/" -e "s/@SHLIBS@/$SHLIBS/" \
  "$HERE/debian/control.in" > "$PKG/DEBIAN/control"
(cd "$PKG" && find usr -type f -print0 | sort -z | xargs -0 md5sum) > "$PKG/DEBIAN/md5sums"
chmod 0644 "$PKG/DEBIAN/control" "$PKG/DEBIAN/md5sums"
# The maintainer scripts: the agent's socket enabled on install, stopped and
# cleaned on removal (packaging/debian/postinst, prerm, postrm).
for script in postinst prerm postrm; do install -m 0755 "$HERE/debian/$script" "$PKG/DEBIAN/$script"; done
find "$PKG" -exec touch -h -d "@$EPOCH" {} +

mkdir -p "$OUT"
SOURCE_DATE_EPOCH=$EPOCH dpkg-deb --root-owner-group -Zxz --build "$PKG" "$DEB" >/dev/null
echo "$DEB"
