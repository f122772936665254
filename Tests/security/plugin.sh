# Provider plugins: the entitlement checks, end to end, before anything is
# spawned. Each case installs a manifest in its own config dir (and an empty
# package dir of its own), and expects exit 10 naming the identifier and the
# file, with no supervisor started. Sourced by run.sh.

SEC_PLUG_ID=org.vpnctl.test.sec
# plug_install [USER]: $WORK/plug (root's, 0755) with a copy of /bin/true and a
# manifest for it in the config dir; the profile 'pp' naming SEC_PLUG_ID.
plug_install() {
  export VPNCTL_PROVIDERS_DIR=$WORK/pkg
  mkdir -p -m 755 "$WORK/plug" "$VPNCTL_CONFIG_DIR/providers"
  chmod 700 "$VPNCTL_CONFIG_DIR"; chmod 755 "$VPNCTL_CONFIG_DIR/providers"
  install -m 0755 /bin/true "$WORK/plug/true"
  plug_manifest "$VPNCTL_CONFIG_DIR/providers/p.json" "$WORK/plug/true" "${1:-nobody}"
  python3 - "$VPNCTL_CONFIG_DIR/preferences.json" "${2:-$SEC_PLUG_ID}" <<'PY'
import json, os, sys
os.umask(0o077)
json.dump({"schemaVersion": 1, "profiles": [{"id": "3f1c2a9e-0d4b-4c8e-9a57-2b6f1e0c7d11", "name": "pp", "enabled": True,
  "revision": 1, "protocol": {"type": "provider", "providerIdentifier": sys.argv[2]}}]}, open(sys.argv[1], "w"))
PY
}
plug_manifest() {  # plug_manifest FILE EXECUTABLE USER
  printf '{"identifier": "%s", "executable": "%s", "capabilities": ["packet-tunnel"], "user": "%s"}\n' "$SEC_PLUG_ID" "$2" "$3" > "$1"
  chmod 644 "$1"
}
# plug_refused WHAT PATTERN: start exits 10 with the identifier and PATTERN in
# the message, and no supervisor ran.
plug_refused() {
  local err rc
  err=$(timeout 20 "$BIN" start pp --timeout 2 2>&1); rc=$?
  [ $rc = 10 ] || { echo "  $1: exit $rc: $err"; return 1; }
  grep -qF "provider plugin '$SEC_PLUG_ID' may not run" <<<"$err" && grep -qF -- "$2" <<<"$err" \
    || { echo "  $1: said: $err"; return 1; }
  [ -z "$(ls "$VPNCTL_RUN_DIR"/*.json 2>/dev/null)" ] || { echo "  $1: a supervisor was started"; return 1; }
}

sec_plugin_manifest_of_another_user_refused() {
  need_user || return 2
  plug_install || return 1
  chown "$SEC_USER" "$VPNCTL_CONFIG_DIR/providers/p.json"
  plug_refused "manifest owned by $SEC_USER" "$VPNCTL_CONFIG_DIR/providers/p.json: is owned by uid $(id -u "$SEC_USER"), not root"
}

sec_plugin_executable_of_another_user_refused() {
  need_user || return 2
  plug_install || return 1
  chown "$SEC_USER" "$WORK/plug/true"
  plug_refused "executable owned by $SEC_USER" "$WORK/plug/true: is owned by uid $(id -u "$SEC_USER"), not root"
}

sec_plugin_writable_executable_refused() {
  plug_install || return 1
  chmod 0775 "$WORK/plug/true"
  plug_refused "group-writable executable" "$WORK/plug/true: is writable by group or others (mode 775)" || return 1
  chmod 0757 "$WORK/plug/true"
  plug_refused "world-writable executable" "$WORK/plug/true: is writable by group or others (mode 757)"
}

sec_plugin_symlinks_refused() {
  plug_install || return 1
  ln -s "$WORK/plug/true" "$WORK/plug/link"
  plug_manifest "$VPNCTL_CONFIG_DIR/providers/p.json" "$WORK/plug/link" nobody
  plug_refused "symlinked executable" "$WORK/plug/link: is a symlink" || return 1
  # A symlinked manifest is never read: its identifier is not installed.
  plug_manifest "$WORK/plug/real.json" "$WORK/plug/true" nobody
  rm "$VPNCTL_CONFIG_DIR/providers/p.json"; ln -s "$WORK/plug/real.json" "$VPNCTL_CONFIG_DIR/providers/p.json"
  local err rc
  err=$(timeout 20 "$BIN" start pp 2>&1); rc=$?
  [ $rc = 10 ] && grep -qF "no provider plugin '$SEC_PLUG_ID' is installed" <<<"$err" \
    && grep -qF "$VPNCTL_CONFIG_DIR/providers/p.json" <<<"$err" || { echo "  symlinked manifest: exit $rc: $err"; return 1; }
}

sec_plugin_writable_directory_refused() {
  plug_install || return 1
  chmod 0777 "$VPNCTL_CONFIG_DIR/providers"
  local err rc
  err=$(timeout 20 "$BIN" start pp 2>&1); rc=$?
  [ $rc = 10 ] && grep -qF "$VPNCTL_CONFIG_DIR/providers: is writable by group or others (mode 777)" <<<"$err" \
    || { echo "  exit $rc: $err"; return 1; }
  "$BIN" providers | grep -qF "refused: $VPNCTL_CONFIG_DIR/providers: is writable" || { echo "  providers does not say why"; return 1; }
}

sec_plugin_root_user_refused() {
  plug_install root || return 1
  plug_refused "user root" "names the user 'root' (uid 0, gid 0)"
}

sec_plugin_identifier_must_be_an_identifier() {
  plug_install nobody "../../bin/sh" || return 1
  local err rc
  err=$(timeout 20 "$BIN" start pp 2>&1); rc=$?
  [ $rc = 5 ] && grep -qF "protocol.providerIdentifier: '../../bin/sh' is not an identifier" <<<"$err" \
    || { echo "  exit $rc: $err"; return 1; }
}

# A root-owned executable in a directory another user owns: that user could
# swap it between the check and the exec.
sec_plugin_executable_in_another_users_directory_refused() {
  need_user || return 2
  plug_install || return 1
  mkdir -m 755 "$WORK/udir" && install -m 0755 /bin/true "$WORK/udir/true" && chown "$SEC_USER" "$WORK/udir"
  plug_manifest "$VPNCTL_CONFIG_DIR/providers/p.json" "$WORK/udir/true" nobody
  plug_refused "executable in $SEC_USER's directory" "$WORK/udir/true: is in $WORK/udir, which is owned by uid $(id -u "$SEC_USER"), not root"
}
