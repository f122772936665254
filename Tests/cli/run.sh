#!/usr/bin/env bash
# Process-level tests of the built binary: what in-process tests cannot show
# (several processes at once, a crash mid-write, install).
# Usage: Tests/cli/run.sh path/to/vpnctl
set -uo pipefail
BIN=$(realpath "${1:?usage: run.sh path/to/vpnctl}")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d /tmp/vpnctl-cli.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
unset VPNCTL_TEST_FAULT
# A debug build reads VPNCTL_TEST_FAULT; the release build must not.
DEBUG_BIN=${VPNCTL_DEBUG_BIN:-$ROOT/.build/debug/vpnctl}
source "$HERE/../lib/testlib.sh"

wg_quick_conf 10.0.0.2/32 0.0.0.0/0 198.18.0.1:51820 \
  yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk= xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg= > "$WORK/p.conf"

# fresh_store NAME: every test gets its own config and run dirs.
fresh_store() { export VPNCTL_CONFIG_DIR="$WORK/$1/etc" VPNCTL_RUN_DIR="$WORK/$1/run"; mkdir -p "$WORK/$1"; }
# eight_profiles: w1..w8, as the concurrency test leaves them.
eight_profiles() {
  local p
  for p in 1 2 3 4 5 6 7 8; do "$BIN" import "$WORK/p.conf" --name "w$p" >/dev/null || return 1; done
}

# --- Concurrent writers: 8 processes x 50 saves each lose nothing ---------
# Each process imports its own profile, then saves it 49 more times
# (disable/enable). Lost updates would show as a missing profile or a
# revision below 50.
test_concurrent_writers() {
  fresh_store writers
  local pids=() p
  for p in 1 2 3 4 5 6 7 8; do
    (
      "$BIN" import "$WORK/p.conf" --name "w$p" >/dev/null || exit 1
      for i in $(seq 1 49); do
        if (( i % 2 )); then "$BIN" disable "w$p" >/dev/null || exit 1
        else "$BIN" enable "w$p" >/dev/null || exit 1; fi
      done
    ) &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ $rc = 0 ] || { echo "  a writer failed"; return 1; }
  local json; json=$("$BIN" list --json)
  python3 - "$json" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
revs = {p["name"]: p["revision"] for p in d["profiles"]}
want = {f"w{i}": 50 for i in range(1, 9)}
if revs != want:
    print("  got", revs); sys.exit(1)
PY
}
check "8 processes x 50 saves: every profile present at revision 50" test_concurrent_writers

# --- A crash between the temp write and the rename --------------------------
test_crash_before_rename() {
  fresh_store crash
  eight_profiles || { echo "  set-up: import failed"; return 1; }
  local before after rc
  before=$(sha256sum < "$VPNCTL_CONFIG_DIR/preferences.json")
  VPNCTL_TEST_FAULT=crash-before-rename "$DEBUG_BIN" import "$WORK/p.conf" --name crashed >/dev/null 2>&1
  rc=$?
  expect_exit "the injected crash" 86 $rc || return 1
  after=$(sha256sum < "$VPNCTL_CONFIG_DIR/preferences.json")
  [ "$before" = "$after" ] || { echo "  preferences changed"; return 1; }
  "$BIN" list --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["profiles"])==8' || return 1
  # The next writer removes the abandoned temp file under the lock.
  "$BIN" disable w1 >/dev/null || { echo "  the next save failed"; return 1; }
  ! ls -A "$VPNCTL_CONFIG_DIR" | grep -q 'tmp-' || { echo "  temp file left: $(ls -A "$VPNCTL_CONFIG_DIR")"; return 1; }
}
if [ -x "$DEBUG_BIN" ]; then
  check "crash before rename leaves the old file valid and byte-identical" test_crash_before_rename
else
  skip "crash before rename: no debug build at $DEBUG_BIN (swift build --product vpnctl)"
fi

# --- The release build has no test-only behaviour ---------------------------
test_release_ignores_test_fault() {
  fresh_store nofault
  VPNCTL_TEST_FAULT=crash-before-rename "$BIN" import "$WORK/p.conf" --name fine >/dev/null 2>&1
  expect_exit "import with VPNCTL_TEST_FAULT set" 0 $? || return 1
  ! grep -qa VPNCTL_TEST_FAULT "$BIN" || { echo "  the release binary names VPNCTL_TEST_FAULT"; return 1; }
}
check "the release build ignores VPNCTL_TEST_FAULT" test_release_ignores_test_fault

# --- A malformed file: exit 8, never rewritten ------------------------------
test_malformed() {
  local dir="$WORK/bad"; mkdir -m 700 "$dir"
  printf '{\n  "schemaVersion": 1,\n  "profiles": [\n    }\n' > "$dir/preferences.json"
  local sum; sum=$(sha256sum < "$dir/preferences.json")
  local err rc
  err=$("$BIN" --config-dir "$dir" import "$WORK/p.conf" 2>&1 >/dev/null); rc=$?
  [ $rc = 8 ] || { echo "  exit $rc"; return 1; }
  [[ $err == "vpnctl: $dir/preferences.json:4:5: malformed JSON"* ]] || { echo "  $err"; return 1; }
  [ "$sum" = "$(sha256sum < "$dir/preferences.json")" ]
}
check "malformed preferences: exit 8 with line:column, file unchanged" test_malformed

# --- Secrets come from stdin and stay out of files and output --------------
test_secret_stdin() {
  fresh_store secret
  "$BIN" import "$WORK/p.conf" --name w2 >/dev/null || { echo "  set-up: import failed"; return 1; }
  local secret="s3cr3t-$RANDOM-value" out rc cmd
  out=$(printf '%s\n' "$secret" | "$BIN" secret set w2 password --force 2>&1) || { echo "  secret set: $out"; return 1; }
  # Every command must succeed: a leak test over failed commands proves nothing.
  for cmd in "show w2 --json" "show w2" "secret list w2 --json" "list"; do
    # shellcheck disable=SC2086
    out+=$("$BIN" $cmd 2>&1); rc=$?
    expect_exit "vpnctl $cmd" 0 $rc || return 1
  done
  if grep -q "$secret" <<<"$out"; then echo "  secret in output"; return 1; fi
  if grep -rq --exclude-dir=secrets "$secret" "$VPNCTL_CONFIG_DIR"; then echo "  secret in a file"; return 1; fi
  local f; f=$(grep -rl "$secret" "$VPNCTL_CONFIG_DIR/secrets")
  [ "$(stat -c %a "$f")" = 600 ] || { echo "  mode $(stat -c %a "$f")"; return 1; }
  [ "$(stat -c %a "$(dirname "$f")")" = 700 ]
}
check "secret set reads stdin; the value is only in a 0600 file" test_secret_stdin

# --- Exit codes through the real binary -------------------------------------
test_exit_codes() {
  fresh_store codes
  local rc
  "$BIN" bogus >/dev/null 2>&1; rc=$?; [ $rc = 2 ] || { echo "  unknown command: $rc"; return 1; }
  "$BIN" show nope >/dev/null 2>&1; rc=$?; [ $rc = 9 ] || { echo "  unknown profile: $rc"; return 1; }
  "$BIN" help >/dev/null 2>&1; rc=$?; [ $rc = 0 ] || return 1
  [ -z "$("$BIN" help 2>&1 >/dev/null)" ] || { echo "  help wrote to stderr"; return 1; }
  [ -z "$("$BIN" bogus 2>/dev/null)" ] || { echo "  error wrote to stdout"; return 1; }
}
check "exit codes and streams of the real binary" test_exit_codes

# --- Issue 36 items 7 and 8: genkey/pubkey against wg, logs of an unknown profile
test_item7_pubkey_equals_wg_pubkey() {
  local i key ours theirs
  for i in 1 2 3 4 5 6 7 8; do
    key=$("$BIN" genkey) || { echo "  genkey failed"; return 1; }
    ours=$(printf '%s\n' "$key" | "$BIN" pubkey) || { echo "  pubkey failed for $key"; return 1; }
    theirs=$(printf '%s\n' "$key" | wg pubkey) || { echo "  wg pubkey refused vpnctl's key $key"; return 1; }
    [ "$ours" = "$theirs" ] || { echo "  vpnctl pubkey $ours, wg pubkey $theirs"; return 1; }
    key=$(wg genkey)
    [ "$(printf '%s\n' "$key" | "$BIN" pubkey)" = "$(printf '%s\n' "$key" | wg pubkey)" ] || { echo "  differs for wg's key"; return 1; }
  done
  local rc out
  out=$(echo "not a key" | "$BIN" pubkey 2>/dev/null); rc=$?
  expect_exit "pubkey of a non-key" 5 $rc || return 1
  [ -z "$out" ] || { echo "  pubkey printed '$out' for a non-key"; return 1; }
}
if command -v wg >/dev/null; then
  check "vpnctl pubkey equals wg pubkey for vpnctl genkey's and wg genkey's keys" test_item7_pubkey_equals_wg_pubkey
else
  skip "pubkey vs wg pubkey: wg (wireguard-tools) is not installed"
fi

test_item8_logs_unknown_profile() {
  fresh_store logs
  local rc err
  err=$("$BIN" logs nope 2>&1 >/dev/null); rc=$?
  expect_exit "logs of an unknown profile" 9 $rc "$err" || return 1
  expect_contains "logs of an unknown profile" "vpnctl: no profile named 'nope'" "$err" || return 1
  "$BIN" import "$WORK/p.conf" --name office >/dev/null || return 1
  err=$("$BIN" logs office --since yesterday 2>&1 >/dev/null); rc=$?
  expect_exit "logs --since yesterday" 2 $rc "$err" || return 1
  err=$("$BIN" logs office 2>&1); rc=$?
  expect_exit "logs of a profile that never ran" 0 $rc "$err" || return 1
  expect_contains "logs of a profile that never ran" "'office' has no log yet" "$err" || return 1
}
check "logs: an unknown profile is exit 9, a bad --since exit 2, no log yet says so" test_item8_logs_unknown_profile

# --- Issue 36 item 5: the stale-edit loop, across processes -----------------
# The editor (a script) sets the MTU while another vpnctl process saves the
# profile (disable): the edit fails stale and is kept; --from alone fails the
# same way (the loop), and --from --rebase applies it on the current revision.
test_item5_stale_edit_rebase() {
  fresh_store rebase
  "$BIN" import "$WORK/p.conf" --name office >/dev/null || return 1
  local tmp="$WORK/rebase/tmp" editor="$WORK/rebase/editor" out rc kept
  mkdir -p "$tmp"
  printf '%s\n' '#!/bin/sh' \
    "python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); p[\"protocol\"][\"mtu\"] = 1400; json.dump(p, open(sys.argv[1], \"w\"), indent=2)' \"\$1\"" \
    "\"$BIN\" disable office >/dev/null" > "$editor"
  chmod +x "$editor"
  out=$(TMPDIR="$tmp" EDITOR="$editor" "$BIN" edit office 2>&1); rc=$?
  expect_exit "edit while another process saves" 7 $rc "$out" || return 1
  kept=$(grep -o "$tmp/vpnctl-edit-[A-Za-z0-9]*/office.json" <<<"$out" | head -1)
  [ -n "$kept" ] && [ -f "$kept" ] && [ -f "$kept.base" ] || { echo "  no kept file and base in: $out"; return 1; }
  expect_contains "the stale hint" "--from $kept --rebase" "$out" || return 1
  out=$(TMPDIR="$tmp" "$BIN" edit office --from "$kept" 2>&1); rc=$?
  expect_exit "--from alone: still stale" 7 $rc "$out" || return 1
  expect_contains "--from alone names --rebase" "--from $kept --rebase" "$out" || return 1
  out=$(TMPDIR="$tmp" "$BIN" edit office --from "$kept" --rebase 2>&1); rc=$?
  expect_exit "--from --rebase" 0 $rc "$out" || return 1
  expect_contains "--from --rebase" "saved 'office' (revision 3)" "$out" || return 1
  "$BIN" show office --json | python3 -c '
import json, sys
p = json.load(sys.stdin)["profile"]
sys.exit(0 if p["enabled"] is False and p["protocol"].get("mtu") == 1400 else "  merged profile: %r" % p)' || return 1
}
check "item 5: an edit made stale by another process is kept and applied with --from --rebase" test_item5_stale_edit_rebase

# --- Refuse a config dir others can write -----------------------------------
test_untrusted_dir() {
  local dir="$WORK/open"; mkdir "$dir"; chmod 777 "$dir"
  local rc err; err=$("$BIN" --config-dir "$dir" import "$WORK/p.conf" 2>&1 >/dev/null); rc=$?
  expect_exit "import into a 0777 dir" 11 $rc "$err"
}
check "a world-writable config dir is refused (exit 11)" test_untrusted_dir

# --- The release binary carries its Swift runtime ---------------------------
test_static_runtime() {
  # ldd says "not a dynamic executable" (exit 1) for a static binary; any
  # other failure of ldd proves nothing either way.
  local out rc
  out=$(ldd "$BIN" 2>&1); rc=$?
  if [ $rc != 0 ]; then expect_contains "ldd $BIN" "not a dynamic executable" "$out"; return; fi
  ! grep -q libswiftCore <<<"$out" || { echo "  links libswiftCore dynamically: $out"; return 1; }
}
check "release binary links the Swift runtime statically" test_static_runtime

# --- make install / uninstall honour PREFIX and DESTDIR ---------------------
test_install() {
  local dest="$WORK/dest"
  make -C "$ROOT" -s install DESTDIR="$dest" PREFIX=/opt/vpnctl >/dev/null || return 1
  [ -x "$dest/opt/vpnctl/bin/vpnctl" ] && [ -f "$dest/opt/vpnctl/share/man/man1/vpnctl.1" ] || return 1
  "$dest/opt/vpnctl/bin/vpnctl" --version | grep -q '^vpnctl ' || return 1
  make -C "$ROOT" -s uninstall DESTDIR="$dest" PREFIX=/opt/vpnctl >/dev/null || return 1
  [ ! -e "$dest/opt/vpnctl/bin/vpnctl" ] && [ ! -e "$dest/opt/vpnctl/share/man/man1/vpnctl.1" ]
}
check "make install / uninstall with DESTDIR and PREFIX" test_install

# --- Messages in the user's language; JSON and exit codes never change -------
# The catalogs compiled from po/ here, so the check does not depend on make.
test_languages() {
  fresh_store i18n
  local loc="$WORK/locale" l
  for l in vi zh_Hans ru; do
    mkdir -p "$loc/$l/LC_MESSAGES" && msgfmt -o "$loc/$l/LC_MESSAGES/vpnctl.mo" "$ROOT/po/$l.po" || { echo "  msgfmt po/$l.po"; return 1; }
  done
  # speak ENV... -- ARGS: vpnctl with only these locale variables, and the catalogs.
  speak() {
    local env=(env -u LANGUAGE -u LC_ALL -u LC_MESSAGES -u LANG VPNCTL_LOCALEDIR="$loc")
    while [ "$1" != "--" ]; do env+=("$1"); shift; done
    shift
    "${env[@]}" "$BIN" "$@"
  }
  local out rc
  # Empty store: the note of status, in each language.
  out=$(speak LANGUAGE=vi -- status 2>&1)
  expect_contains "LANGUAGE=vi status" "chưa có hồ sơ nào; thêm một hồ sơ bằng: vpnctl import FILE" "$out" || return 1
  "$BIN" import "$WORK/p.conf" --name office >/dev/null || return 1
  out=$(speak LANGUAGE=vi -- help list)
  expect_contains "LANGUAGE=vi help" "CÁCH DÙNG: vpnctl list" "$out" || return 1
  expect_contains "LANGUAGE=vi help" "Liệt kê các hồ sơ đã lưu." "$out" || return 1
  # Multi-line help text (the extractor's msgid must be the literal Swift builds, a "\\" line included).
  expect_contains "LANGUAGE=vi help stop" "Chờ tới khi đường hầm tắt" "$(speak LANGUAGE=vi -- help stop)" || return 1
  expect_contains "LANGUAGE=ru help create" "--auth psk читает общий ключ" "$(speak LANGUAGE=ru -- help create)" || return 1
  expect_contains "LANGUAGE=zh_CN help verify" "检查 (1) 接口存在且已启用" "$(speak LANGUAGE=zh_CN -- help verify)" || return 1
  out=$(speak LANGUAGE=vi -- statsu 2>&1); rc=$?
  expect_exit "LANGUAGE=vi unknown command" 2 $rc || return 1
  expect_contains "LANGUAGE=vi unknown command" "vpnctl: Lệnh không xác định 'statsu'" "$out" || return 1
  out=$(speak LANG=zh_CN.UTF-8 -- list)
  expect_contains "LANG=zh_CN list" "名称" "$out" || return 1
  expect_contains "LANG=zh_CN list" "office" "$out" || return 1
  out=$(speak LANG=zh_CN.UTF-8 -- show nope 2>&1); rc=$?
  expect_exit "LANG=zh_CN show nope" 9 $rc || return 1
  expect_contains "LANG=zh_CN show nope" "没有名为 'nope' 的配置" "$out" || return 1
  # The property list reader's own problems, not only the import's wording of them.
  printf '<?xml version="1.0"?>\n<plist version="1.0"><dict><key>a</key></dict></plist>\n' > "$WORK/bad.mobileconfig"
  out=$(speak LANGUAGE=vi -- import "$WORK/bad.mobileconfig" 2>&1); rc=$?
  expect_exit "LANGUAGE=vi import of a broken plist" 5 $rc || return 1
  expect_contains "LANGUAGE=vi import of a broken plist" "property list XML, dòng 2, cột 47: khóa 'a' không có giá trị" "$out" || return 1
  out=$(speak LC_ALL=ru_RU.UTF-8 -- status)
  expect_contains "LC_ALL=ru status" "ИМЯ" "$out" || return 1
  expect_contains "LC_ALL=ru status" "отключён" "$out" || return 1
  out=$(speak LC_ALL=ru_RU.UTF-8 -- start office --wait --no-wait 2>&1); rc=$?
  expect_exit "LC_ALL=ru usage error" 2 $rc || return 1
  expect_contains "LC_ALL=ru usage error" "'--wait' и '--no-wait' нельзя использовать вместе" "$out" || return 1
  # Messages of the core (export) and of a command's own checks (completion).
  out=$(speak LANG=zh_CN.UTF-8 -- export office --format ovpn 2>&1); rc=$?
  expect_exit "LANG=zh_CN export --format ovpn of a wireguard profile" 2 $rc || return 1
  expect_contains "LANG=zh_CN export --format ovpn of a wireguard profile" "“office”是 wireguard 配置；--format ovpn 用于 openvpn 配置" "$out" || return 1
  expect_contains "LANG=zh_CN export --format ovpn of a wireguard profile" "请使用 --format wg-quick、mobileconfig 或 json" "$out" || return 1
  out=$(speak LANGUAGE=vi -- completion tcsh 2>&1); rc=$?
  expect_exit "LANGUAGE=vi completion tcsh" 2 $rc || return 1
  expect_contains "LANGUAGE=vi completion tcsh" "Shell không xác định 'tcsh'; cần bash, zsh hoặc fish" "$out" || return 1
  expect_contains "LANGUAGE=vi completion tcsh" "Xem 'vpnctl help completion'." "$out" || return 1
  # C and POSIX are English whatever LANGUAGE says; so is a language without a catalog.
  expect_contains "LC_ALL=C LANGUAGE=vi" "USAGE: vpnctl list" "$(speak LC_ALL=C LANGUAGE=vi -- help list)" || return 1
  expect_contains "LANG=de_DE" "USAGE: vpnctl list" "$(speak LANG=de_DE.UTF-8 -- help list)" || return 1
  # --json: stdout, stderr and the exit code byte for byte the same as in English.
  local args english got
  for args in "list --json" "status --json" "show office --json" "show nope --json" "help list --json" \
              "statsu --json" "start office --wait --no-wait --json" "is-connected office --json" "--version --json" \
              "export office --format ovpn --json"; do
    # shellcheck disable=SC2086
    english=$(speak LC_ALL=C -- $args 2>"$WORK/en.err"; echo "exit $?")
    for l in LANGUAGE=vi LANG=zh_CN.UTF-8 LC_ALL=ru_RU.UTF-8; do
      # shellcheck disable=SC2086
      got=$(speak "$l" -- $args 2>"$WORK/l.err"; echo "exit $?")
      [ "$got" = "$english" ] || { echo "  $l vpnctl $args: stdout or exit code differ:"; diff <(echo "$english") <(echo "$got") | sed 's/^/    /'; return 1; }
      cmp -s "$WORK/en.err" "$WORK/l.err" || { echo "  $l vpnctl $args: stderr differs:"; diff "$WORK/en.err" "$WORK/l.err" | sed 's/^/    /'; return 1; }
    done
  done
}
check "messages in vi, zh_Hans and ru (LANGUAGE, LANG, LC_ALL); --json output and exit codes identical to English" test_languages

summary cli
