# Hostile .ovpn files and edits, through the real binary. Sourced by
# Tests/security/run.sh, which calls every sec_ovpn_* function with $BIN (the
# vpnctl under test), $WORK (a fresh private dir) and VPNCTL_CONFIG_DIR /
# VPNCTL_RUN_DIR exported inside $WORK. Each returns 0 (pass) or 1 (fail) and
# says why on stderr when it fails. Helpers start with _sovpn_.

_sovpn_fixture() {  # _sovpn_fixture NAME: path of Tests/fixtures/ovpn/NAME
  echo "$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures/ovpn" && pwd)/$1"
}

_sovpn_fail() { echo "sec_ovpn: $*" >&2; return 1; }

# _sovpn_expect CODE PATTERN CMD...: CMD exits CODE and its stderr matches PATTERN.
_sovpn_expect() {
  local code=$1 pattern=$2 rc
  shift 2
  "$@" > "$WORK/out" 2> "$WORK/err"
  rc=$?
  [ "$rc" = "$code" ] || { _sovpn_fail "'$*' exited $rc, not $code: $(head -c 600 "$WORK/err")"; return 1; }
  grep -q -- "$pattern" "$WORK/err" || { _sovpn_fail "'$*': stderr lacks '$pattern': $(head -c 600 "$WORK/err")"; return 1; }
}

_sovpn_trust_count() {  # number of files in trust/ (0 when it does not exist)
  if [ -d "$VPNCTL_CONFIG_DIR/trust" ]; then find "$VPNCTL_CONFIG_DIR/trust" -type f | wc -l; else echo 0; fi
}

# _sovpn_json_field PROFILE EXPR: python3 expression over p (the profile's protocol).
_sovpn_protocol() {
  "$BIN" show "$1" --json | python3 -c "import json,sys; p=json.load(sys.stdin)['profile']['protocol']; print($2)"
}

# _sovpn_edit PROFILE PYTHON: runs 'vpnctl edit' with an editor that applies
# PYTHON to the profile's JSON (as d) and writes it back.
_sovpn_edit() {
  local profile=$1
  printf '%s\n' "$2" > "$WORK/edit.py"
  cat > "$WORK/editor" <<'EDITOR'
#!/bin/sh
exec python3 -c '
import json, sys
path = sys.argv[1]
d = json.load(open(path))
exec(open(sys.argv[2]).read())
json.dump(d, open(path, "w"))
' "$1" "$SOVPN_EDIT"
EDITOR
  chmod 700 "$WORK/editor"
  EDITOR="$WORK/editor" VISUAL="" TMPDIR="$WORK" SOVPN_EDIT="$WORK/edit.py" "$BIN" edit "$profile"
}

# openvpn reads 'setenv opt up ...' as 'up ...': import refuses it by name,
# saves nothing and installs no anchor.
sec_ovpn_setenv_opt_import_refused() {
  _sovpn_expect 5 "'setenv opt up' runs a program" "$BIN" import "$(_sovpn_fixture setenv-opt.ovpn)" --name hostile || return 1
  grep -q "'setenv opt script-security 2' allows running programs" "$WORK/err" || { _sovpn_fail "script-security not named"; return 1; }
  grep -q "'setenv opt plugin'" "$WORK/err" || { _sovpn_fail "plugin not named"; return 1; }
  "$BIN" show hostile > /dev/null 2>&1 && { _sovpn_fail "the refused profile was saved"; return 1; }
  [ "$(_sovpn_trust_count)" = 0 ] || { _sovpn_fail "a refused import installed trust anchors"; return 1; }
}

# What 'vpnctl edit' adds to protocol.options gets the import rules: wrapped
# programs, wrappers and directives off the allow-list are refused.
sec_ovpn_edit_smuggled_directives_refused() {
  "$BIN" import "$(_sovpn_fixture one-ca.ovpn)" --name office > /dev/null 2>&1 || { _sovpn_fail "one-ca.ovpn does not import"; return 1; }
  local before option
  before=$(_sovpn_protocol office "p['options']")
  for option in "setenv opt script-security 2" "setenv opt up '/bin/sh -c id'" "setenv opt plugin /x.so" \
                "setenv opt writepid /etc/passwd" "config /etc/openvpn/x.conf" "ignore-unknown-option up" \
                "SETENV opt log /etc/shadow" "--up /bin/sh" "key-direction /etc/passwd"; do
    _sovpn_expect 5 "protocol.options\[1\]" _sovpn_edit office "d['protocol']['options'].append($(printf '%s' "$option" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'))" \
      || { _sovpn_fail "edit adding '$option' was not refused"; return 1; }
  done
  _sovpn_expect 5 "'setenv opt' makes openvpn read" _sovpn_edit office "d['protocol']['options'].append('setenv opt script-security 2')" || return 1
  [ "$(_sovpn_protocol office "p['options']")" = "$before" ] || { _sovpn_fail "a refused edit changed the options"; return 1; }
}

# A <ca> of two CAs gives two anchors, one certificate per file named by its
# SHA-256; a later profile that brings one of them trusts that one only.
sec_ovpn_two_ca_anchors_stay_apart() {
  "$BIN" import "$(_sovpn_fixture two-ca.ovpn)" --name two > /dev/null 2>&1 || { _sovpn_fail "two-ca.ovpn does not import"; return 1; }
  "$BIN" import "$(_sovpn_fixture one-ca.ovpn)" --name one > /dev/null 2>&1 || { _sovpn_fail "one-ca.ovpn does not import"; return 1; }
  [ "$(_sovpn_trust_count)" = 2 ] || { _sovpn_fail "trust/ holds $(_sovpn_trust_count) files, not 2"; return 1; }
  local f name
  for f in "$VPNCTL_CONFIG_DIR"/trust/*.pem; do
    [ "$(grep -c -- '-----BEGIN' "$f")" = 1 ] || { _sovpn_fail "$f holds more than one PEM block"; return 1; }
    name=$(basename "$f" .pem)
    [ "$(openssl x509 -in "$f" -outform DER | sha256sum | cut -d' ' -f1)" = "$name" ] \
      || { _sovpn_fail "$f does not hold the certificate its name stands for"; return 1; }
  done
  local ca1=63bd5318ac8671a64551617edcfaba65fcd4304490402302b41e812786764b48
  local ca2=4aa4ddca2218b6454a55c5b5ecb053d168bb44cdcc7b988c8472549e2dcc94ef
  [ "$(_sovpn_protocol two "' '.join(p['caFingerprints'])")" = "$ca1 $ca2" ] || { _sovpn_fail "two: wrong caFingerprints"; return 1; }
  [ "$(_sovpn_protocol one "' '.join(p['caFingerprints'])")" = "$ca1" ] || { _sovpn_fail "one: trusts more than its own CA"; return 1; }
}

# A private key inside <ca> is refused by name and never copied into trust/.
sec_ovpn_private_key_in_ca_refused() {
  _sovpn_expect 5 "<ca>: it holds a private key" "$BIN" import "$(_sovpn_fixture ca-with-key.ovpn)" --name keyed || return 1
  [ "$(_sovpn_trust_count)" = 0 ] || { _sovpn_fail "trust/ got files from a refused <ca>"; return 1; }
  if [ -d "$VPNCTL_CONFIG_DIR" ] && grep -rq "PRIVATE KEY" "$VPNCTL_CONFIG_DIR" 2>/dev/null; then
    _sovpn_fail "the key landed under the config dir"; return 1
  fi
}

# Windows-only options wrapped in setenv opt, setenv of variables and writepid
# are left out (and listed); a wrapped allowed directive is kept unwrapped.
sec_ovpn_harmless_wrappers_dropped() {
  "$BIN" import "$(_sovpn_fixture wrapped-harmless.ovpn)" --name panel > "$WORK/out" 2> "$WORK/err" \
    || { _sovpn_fail "wrapped-harmless.ovpn does not import: $(head -c 600 "$WORK/err")"; return 1; }
  grep -q "not passed to openvpn.*'writepid'" "$WORK/err" || { _sovpn_fail "dropped directives not listed"; return 1; }
  # A Windows-only directive, wrapped or not, is listed as having no effect on Linux.
  grep -q "no effect on Linux.*'setenv opt block-outside-dns'" "$WORK/err" || { _sovpn_fail "the no-effect directive not listed"; return 1; }
  local options
  options=$(_sovpn_protocol panel "'\n'.join(p['options'])")
  echo "$options" | grep -qE "^(setenv|writepid|block-outside-dns)" && { _sovpn_fail "a wrapper was kept: $options"; return 1; }
  # ignore-unknown-option naming a directive that runs nothing is carried (Nyr's files need it).
  echo "$options" | grep -qx "ignore-unknown-option block-outside-dns" || { _sovpn_fail "ignore-unknown-option was lost: $options"; return 1; }
  echo "$options" | grep -qx "cipher AES-256-GCM" || { _sovpn_fail "the wrapped cipher was lost: $options"; return 1; }
  echo "$options" | grep -qx "verify-x509-name \"O'Brien\" name" || { _sovpn_fail "verify-x509-name lost its quoting: $options"; return 1; }
}

# --username on a file without auth-user-pass is a usage error, not ignored.
sec_ovpn_username_without_auth_user_pass() {
  _sovpn_expect 2 "without --username" "$BIN" import "$(_sovpn_fixture one-ca.ovpn)" --name u --username alice || return 1
  "$BIN" show u > /dev/null 2>&1 && { _sovpn_fail "the profile was saved"; return 1; }
  return 0
}

# An fwmark that is not off, a number or 0x-hex is refused by edit.
sec_ovpn_edit_refuses_junk_fwmark() {
  wg_conf > "$WORK/wg.conf"
  "$BIN" import "$WORK/wg.conf" --name wg > /dev/null 2>&1 || { _sovpn_fail "wg.conf does not import"; return 1; }
  _sovpn_expect 5 "protocol.fwmark: 'junk'" _sovpn_edit wg "d['protocol']['fwmark'] = 'junk'" || return 1
  _sovpn_edit wg "d['protocol']['fwmark'] = '0xca6c'" > /dev/null 2>&1 || { _sovpn_fail "fwmark 0xca6c was refused"; return 1; }
}

# An anchor file that is not exactly the one certificate its name stands for
# (here: what vpnctl used to store, the whole <ca> under the first CA's name)
# is refused at start with its path. PATH holds no openvpn, so nothing could
# start even if the check were missing.
sec_ovpn_start_refuses_tampered_anchor() {
  "$BIN" import "$(_sovpn_fixture one-ca.ovpn)" --name office > /dev/null 2>&1 || { _sovpn_fail "one-ca.ovpn does not import"; return 1; }
  local anchor=$VPNCTL_CONFIG_DIR/trust/63bd5318ac8671a64551617edcfaba65fcd4304490402302b41e812786764b48.pem
  sed -n '/^<ca>$/,/^<\/ca>$/p' "$(_sovpn_fixture two-ca.ovpn)" | sed '1d;$d' > "$anchor.new" && mv "$anchor.new" "$anchor"
  mkdir -p "$WORK/empty-path"
  _sovpn_expect 5 "$anchor holds 2 certificates" env PATH="$WORK/empty-path" "$BIN" start office --no-wait || return 1
  [ ! -e "$VPNCTL_RUN_DIR" ] || [ -z "$(ls -A "$VPNCTL_RUN_DIR" 2>/dev/null | grep -v '^logs$')" ] || { _sovpn_fail "start left run files"; return 1; }
}
