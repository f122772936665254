# Hostile configuration profiles (.mobileconfig), signatures and secrets, through
# the real binary. Sourced by Tests/security/run.sh (see ovpn.sh for the contract).
# Helpers start with _smc_.

_smc_fixture() { echo "$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures/mobileconfig" && pwd)/$1"; }
_smc_fail() { echo "sec_mcfg: $*" >&2; return 1; }

# _smc_expect CODE PATTERN CMD...: CMD exits CODE and its stderr matches PATTERN.
_smc_expect() {
  local code=$1 pattern=$2 rc
  shift 2
  "$@" > "$WORK/out" 2> "$WORK/err"
  rc=$?
  [ "$rc" = "$code" ] || { _smc_fail "'$*' exited $rc, not $code: $(head -c 600 "$WORK/err")"; return 1; }
  grep -q -- "$pattern" "$WORK/err" || { _smc_fail "'$*': stderr lacks '$pattern': $(head -c 600 "$WORK/err")"; return 1; }
}

# Nothing of the store exists: no preferences, no secrets, no anchors.
_smc_untouched() {
  for f in preferences.json secrets trust; do
    [ -e "$VPNCTL_CONFIG_DIR/$f" ] && { _smc_fail "a refused import left $f behind"; return 1; }
  done
  return 0
}

# One payload runs a shell command (PostUp), another an OpenVPN 'up' script:
# the whole profile is refused, each payload named, and nothing is written.
sec_mcfg_hostile_payloads_refused_whole() {
  _smc_expect 5 "nothing was imported" "$BIN" import "$(_smc_fixture hostile.mobileconfig)" || return 1
  grep -q "com.example.vpn.wg-office.*PostUp runs a shell command" "$WORK/err" || { _smc_fail "the WireGuard payload is not named"; return 1; }
  grep -q "com.example.vpn.bad.*VendorConfig.up.*runs a program" "$WORK/err" || { _smc_fail "the OpenVPN payload is not named"; return 1; }
  _smc_untouched
}

# Binary plists built to exhaust the reader: shared objects doubling 60 times,
# a reference cycle, 10,000 levels, an offset table pointing past the file.
sec_mcfg_hostile_binary_plists_bounded() {
  python3 - "$WORK" <<'PY' || return 1
import struct, sys
def bplist(objects, top=0, ref=1, count=None, table_at=None):
    out = bytearray(b"bplist00"); offs = []
    for o in objects: offs.append(len(out)); out += o
    table = len(out)
    osz = 1 if len(out) < 256 else 2
    for off in offs: out += off.to_bytes(osz, "big")
    out += bytes(6) + bytes([osz, ref]) + struct.pack(">QQQ", count or len(objects), top, table_at if table_at is not None else table)
    return bytes(out)
d = sys.argv[1]
open(d + "/laughs.mobileconfig", "wb").write(bplist([bytes([0xA2, k + 1, k + 1]) for k in range(60)] + [b"\x09"]))
open(d + "/cycle.mobileconfig", "wb").write(bplist([b"\xA1\x01", b"\xD1\x02\x00", b"\x51A"]))
deep = [bytes([0xA1]) + (k + 1).to_bytes(2, "big") for k in range(10000)] + [b"\x09"]
open(d + "/deep.mobileconfig", "wb").write(bplist(deep, ref=2))
open(d + "/offsets.mobileconfig", "wb").write(bplist([b"\x09"], table_at=1 << 62))
PY
  local f start
  for f in laughs cycle deep offsets; do
    start=$(date +%s%N)
    _smc_expect 5 "binary property list" "$BIN" import "$WORK/$f.mobileconfig" || return 1
    [ $(( ($(date +%s%N) - start) / 1000000 )) -lt 5000 ] || { _smc_fail "$f took more than 5 s"; return 1; }
  done
  _smc_untouched
}

# A signed profile: the signer named; one changed byte refused; a wrong --ca refused.
sec_mcfg_signed_profile_checked() {
  command -v openssl >/dev/null || { echo "  skip: openssl is not installed"; return 2; }
  ( cd "$WORK" &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=Sec CA" &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout o.key -out other.pem -days 2 -subj "/CN=Other" &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout s.key -out s.csr -subj "/CN=Sec Signer" &&
    openssl x509 -req -in s.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out s.pem -days 2 &&
    openssl cms -sign -binary -nodetach -outform DER -in "$(_smc_fixture openvpn.mobileconfig)" -signer s.pem -inkey s.key -out signed.mobileconfig
  ) > /dev/null 2>&1 || { _smc_fail "openssl could not make the signed fixture"; return 1; }
  python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); i = b.index(b"ovpn-office"); b[i] ^= 1; open(sys.argv[2], "wb").write(b)' \
    "$WORK/signed.mobileconfig" "$WORK/tampered.mobileconfig"
  _smc_expect 5 "signature does not match the content" "$BIN" import "$WORK/tampered.mobileconfig" || return 1
  _smc_expect 5 "does not chain to the given CA" "$BIN" import "$WORK/signed.mobileconfig" --ca "$WORK/other.pem" || return 1
  _smc_untouched || return 1
  "$BIN" import "$WORK/signed.mobileconfig" --ca "$WORK/ca.pem" --json > "$WORK/out" 2> "$WORK/err" || { _smc_fail "the signed profile was refused: $(cat "$WORK/err")"; return 1; }
  grep -q '"subject":"CN=Sec Signer"' "$WORK/out" || { _smc_fail "the signer is not named: $(cat "$WORK/out")"; return 1; }
  # The password and the tls-crypt key went to 0600 secrets, nowhere else.
  if grep -rq "correct horse\|0123456789abcdef" "$WORK/out" "$WORK/err" "$VPNCTL_CONFIG_DIR/preferences.json"; then
    _smc_fail "a secret value reached the output or the preferences"; return 1
  fi
  [ -z "$(find "$VPNCTL_CONFIG_DIR/secrets" -type f ! -perm 0600)" ] || { _smc_fail "a secret file is not 0600"; return 1; }
}

# An encrypted profile is refused by name.
sec_mcfg_encrypted_refused_by_name() {
  _smc_expect 5 "encrypted profile (IsEncrypted)" "$BIN" import "$(_smc_fixture encrypted.mobileconfig)" || return 1
  _smc_untouched
}

# Only root may export secret values; anyone else gets exit 11 and no value.
sec_mcfg_export_secrets_needs_root() {
  need_user || return 2
  local dir=$WORK/u
  mkdir -m 700 "$dir" && chown "$SEC_USER" "$dir" "$WORK"
  cp "$(_smc_fixture wireguard.mobileconfig)" "$dir/wg.mobileconfig" && chown "$SEC_USER" "$dir/wg.mobileconfig"
  as_user "$BIN" --config-dir "$dir/etc" --run-dir "$dir/run" import "$dir/wg.mobileconfig" > /dev/null 2>&1 || { _smc_fail "the test user cannot import into its own dir"; return 1; }
  _smc_expect 11 "only root may" as_user "$BIN" --config-dir "$dir/etc" --run-dir "$dir/run" export wg-office --include-secrets --output "$dir/x" || return 1
  [ -e "$dir/x" ] && { _smc_fail "a refused export wrote a file"; return 1; }
  as_user "$BIN" --config-dir "$dir/etc" --run-dir "$dir/run" export wg-office > "$WORK/out" 2> "$WORK/err" || { _smc_fail "plain export failed: $(cat "$WORK/err")"; return 1; }
  grep -q "yAnz5TF" "$WORK/out" && { _smc_fail "export without --include-secrets printed the private key"; return 1; }
  grep -q "secrets left out" "$WORK/out" || { _smc_fail "the left-out secrets are not named"; return 1; }
}

# Issue 29 item 12: an 8-byte object reference of 2^63 or more (an array's
# element, a dictionary's key) crashed vpnctl (exit 132, a trap converting it);
# import and apply refuse it with exit 5, naming the reference's offset.
sec_mcfg_item12_bplist_reference_above_2_63() {
  python3 - "$WORK" <<'PY' || return 1
import struct, sys
def bplist(objects, ref):
    out = bytearray(b"bplist00"); offs = []
    for o in objects: offs.append(len(out)); out += o
    table = len(out)
    for off in offs: out += bytes([off])
    out += bytes(6) + bytes([1, ref]) + struct.pack(">QQQ", len(objects), 0, table)
    return bytes(out)
d = sys.argv[1]
open(d + "/array.mobileconfig", "wb").write(bplist([b"\xA1" + (1 << 63).to_bytes(8, "big")], 8))
open(d + "/dict.mobileconfig", "wb").write(bplist([b"\xD1" + (2 ** 64 - 1).to_bytes(8, "big") + (1).to_bytes(8, "big"), b"\x09"], 8))
import os; os.mkdir(d + "/fleet"); os.chmod(d + "/fleet", 0o755)
open(d + "/fleet/array.mobileconfig", "wb").write(open(d + "/array.mobileconfig", "rb").read()); os.chmod(d + "/fleet/array.mobileconfig", 0o644)
PY
  _smc_expect 5 "reference to object 9223372036854775808 at offset 9" "$BIN" import "$WORK/array.mobileconfig" || return 1
  _smc_expect 5 "reference to object 18446744073709551615 at offset 9" "$BIN" import "$WORK/dict.mobileconfig" || return 1
  _smc_expect 5 "reference to object 9223372036854775808 at offset 9" "$BIN" apply "$WORK/fleet" || return 1
  _smc_expect 5 "apply changed nothing" "$BIN" apply "$WORK/fleet/array.mobileconfig" || return 1
  _smc_untouched
}
