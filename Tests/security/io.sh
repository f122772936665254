# Hostile input, end to end through the built binary (issue 10, items 5, 6, 7,
# 9 and the smaller ones). Sourced by Tests/security/run.sh, which calls every
# sec_io_* function with $BIN (the built vpnctl) and $WORK (a fresh private
# directory). Each function runs in a subshell with its own config and run
# directories under $WORK (its environment changes stay inside), and bounds
# every command with `timeout`, so a hang fails instead of hanging. Each
# returns 0 (pass) or 1 (fail) and says why on failure.

_IO_T=10

# A fresh config dir with one imported WireGuard profile named 'p'.
# Sets IO_DIR, IO_CFG and IO_RUN; exports the two for the commands that follow.
_io_fresh() {
  IO_DIR="$WORK/io-$1" IO_CFG="$WORK/io-$1/etc" IO_RUN="$WORK/io-$1/run"
  mkdir -p "$IO_DIR"
  export VPNCTL_CONFIG_DIR="$IO_CFG" VPNCTL_RUN_DIR="$IO_RUN"
  if [ "${2:-}" != empty ]; then
    wg_conf > "$WORK/io-$1/p.conf"
    timeout $_IO_T "$BIN" import "$WORK/io-$1/p.conf" --name p >/dev/null 2>&1 || { echo "  setup: import failed"; return 1; }
  fi
}

# _io_expect NAME RC WANTED_RC STDERR_FILE TEXT: the exit code and a phrase of the message.
_io_expect() {
  local what=$1 rc=$2 want=$3 err=$4 text=$5
  if [ "$rc" = 124 ]; then echo "  $what: timed out (hang)"; return 1; fi
  if [ "$rc" != "$want" ]; then echo "  $what: exit $rc, expected $want: $(head -c 300 "$err")"; return 1; fi
  if [ -n "$text" ] && ! grep -qF -- "$text" "$err"; then echo "  $what: message lacks '$text': $(head -c 300 "$err")"; return 1; fi
  return 0
}

sec_io_import_dev_zero() (
  _io_fresh import-dev-zero empty || return 1
  timeout $_IO_T "$BIN" import /dev/zero 2>"$IO_DIR/err" >/dev/null
  _io_expect "import /dev/zero" $? 1 "$IO_DIR/err" "/dev/zero is a character device, not a regular file"
)

sec_io_import_endless_stdin() (
  _io_fresh import-yes empty || return 1
  yes | timeout $_IO_T "$BIN" import - 2>"$IO_DIR/err" >/dev/null
  _io_expect "yes | import -" "${PIPESTATUS[1]}" 5 "$IO_DIR/err" "standard input is larger than 1 MiB"
)

sec_io_import_process_substitution_works() (
  _io_fresh import-procsub empty || return 1
  timeout $_IO_T "$BIN" import <(wg_conf) --name ps 2>"$IO_DIR/err" >/dev/null
  _io_expect "import <(...)" $? 0 "$IO_DIR/err" ""
)

sec_io_import_fifo() (
  _io_fresh import-fifo empty || return 1
  mkfifo "$WORK/io-import-fifo/f.conf"
  timeout $_IO_T "$BIN" import "$WORK/io-import-fifo/f.conf" 2>"$IO_DIR/err" >/dev/null
  _io_expect "import FIFO" $? 1 "$IO_DIR/err" "f.conf is a FIFO, not a regular file"
)

sec_io_ovpn_referenced_special_files() (
  _io_fresh ovpn-ca empty || return 1
  local d="$WORK/io-ovpn-ca" rc
  mkfifo "$d/ca.pem"
  for ca in /dev/zero "$d/ca.pem"; do
    printf 'client\ndev tun\nremote 198.18.0.1 1194 udp\nca %s\nauth-user-pass\n' "$ca" > "$d/x.ovpn"
    timeout $_IO_T "$BIN" import "$d/x.ovpn" --username u 2>"$IO_DIR/err" >/dev/null
    rc=$?
    [ $rc = 124 ] && { echo "  ca $ca: hang"; return 1; }
    [ $rc = 0 ] && { echo "  ca $ca: imported"; return 1; }
    grep -qE "not a regular file" "$IO_DIR/err" || { echo "  ca $ca: $(head -c 300 "$IO_DIR/err")"; return 1; }
  done
)

sec_io_secret_endless_stdin() (
  _io_fresh secret-zero || return 1
  timeout $_IO_T "$BIN" secret set p password --force < /dev/zero 2>"$IO_DIR/err" >/dev/null
  _io_expect "secret set < /dev/zero" $? 2 "$IO_DIR/err" "larger than 64 KiB, the limit for a secret"
)

sec_io_secret_line_break_or_nul() (
  _io_fresh secret-lines || return 1
  printf 'pass\nword\n' | timeout $_IO_T "$BIN" secret set p password --force 2>"$IO_DIR/err" >/dev/null
  _io_expect "secret with a line break" "${PIPESTATUS[1]}" 5 "$IO_DIR/err" "contains a line break" || return 1
  printf 'pass\0word' | timeout $_IO_T "$BIN" secret set p password --force 2>"$IO_DIR/err" >/dev/null
  _io_expect "secret with a NUL" "${PIPESTATUS[1]}" 5 "$IO_DIR/err" "contains a NUL byte"
)

sec_io_fifo_preferences() (
  _io_fresh prefs-fifo empty || return 1
  mkdir -m 700 -p "$IO_CFG"
  mkfifo "$IO_CFG/preferences.json"
  timeout $_IO_T "$BIN" list 2>"$IO_DIR/err" >/dev/null
  _io_expect "list with a FIFO preferences.json" $? 11 "$IO_DIR/err" "preferences.json is not a regular file"
)

sec_io_fifo_editor_result() (
  _io_fresh edit-fifo || return 1
  EDITOR='f() { rm -f "$1"; mkfifo "$1"; }; f' timeout $_IO_T "$BIN" edit p 2>"$IO_DIR/err" >/dev/null
  _io_expect "edit, editor leaves a FIFO" $? 1 "$IO_DIR/err" "is a FIFO, not a regular file"
)

sec_io_huge_revision() (
  _io_fresh revision || return 1
  sed -i 's/"revision" : 1\(,\?\)$/"revision" : 9223372036854775807\1/' "$IO_CFG/preferences.json"
  grep -q 9223372036854775807 "$IO_CFG/preferences.json" || { echo "  setup: revision not edited"; return 1; }
  timeout $_IO_T "$BIN" disable p 2>"$IO_DIR/err" >/dev/null
  _io_expect "disable at revision Int.max" $? 8 "$IO_DIR/err" "is at the highest revision" || return 1
  sed -i 's/9223372036854775807/92233720368547758070/' "$IO_CFG/preferences.json"
  timeout $_IO_T "$BIN" list 2>"$IO_DIR/err" >/dev/null
  _io_expect "list with a revision past Int.max" $? 8 "$IO_DIR/err" "is out of range"
)

sec_io_list_dev_full() (
  _io_fresh full || return 1
  timeout $_IO_T "$BIN" list > /dev/full 2>"$IO_DIR/err"
  _io_expect "list > /dev/full" $? 1 "$IO_DIR/err" "vpnctl: write error: No space left on device"
)

sec_io_show_closed_stdout() (
  _io_fresh closed || return 1
  timeout $_IO_T "$BIN" show p >&- 2>"$IO_DIR/err"
  _io_expect "show p >&-" $? 1 "$IO_DIR/err" "vpnctl: write error: Bad file descriptor"
)

# A reader that went away: SIGPIPE ends vpnctl quietly (status 141 / -13);
# with SIGPIPE ignored, EPIPE is exit 1 without a message.
sec_io_closed_pipe_is_quiet() (
  _io_fresh pipe || return 1
  timeout $_IO_T python3 - "$BIN" <<'PY'
import os, subprocess, sys
for restore, want in ((True, -13), (False, 1)):
    r, w = os.pipe()
    os.close(r)
    p = subprocess.run([sys.argv[1], "list"], stdout=w, stderr=subprocess.PIPE, restore_signals=restore, timeout=8)
    os.close(w)
    if p.returncode != want or p.stderr:
        print(f"  SIGPIPE {'default' if restore else 'ignored'}: exit {p.returncode}, stderr {p.stderr[:200]!r}")
        sys.exit(1)
PY
)

sec_io_status_watch_closed_stdout() (
  _io_fresh watch || return 1
  timeout $_IO_T "$BIN" status --watch >&- 2>/dev/null
  local rc=$?
  [ $rc = 124 ] && { echo "  status --watch >&- did not exit"; return 1; }
  [ $rc = 1 ] || { echo "  status --watch >&-: exit $rc"; return 1; }
  timeout $_IO_T "$BIN" status --watch 2>/dev/null | true
  rc=${PIPESTATUS[0]}
  [ $rc = 124 ] && { echo "  status --watch | true did not exit"; return 1; }
  [ $rc = 1 ] || { echo "  status --watch | true: exit $rc"; return 1; }
  timeout $_IO_T "$BIN" stats --watch >&- 2>/dev/null
  rc=$?
  [ $rc = 124 ] && { echo "  stats --watch >&- did not exit"; return 1; }
  [ $rc = 1 ] || { echo "  stats --watch >&-: exit $rc"; return 1; }
)

sec_io_bidi_name_refused() (
  _io_fresh bidi empty || return 1
  wg_conf > "$WORK/io-bidi/p.conf"
  timeout $_IO_T "$BIN" import "$WORK/io-bidi/p.conf" --name $'office\u202efdp' 2>"$IO_DIR/err" >/dev/null
  _io_expect "bidi name" $? 2 "$IO_DIR/err" "invisible formatting character (U+202E" || return 1
  ! grep -q $'\u202e' "$IO_DIR/err" || { echo "  the bidi control reached stderr raw"; return 1; }
)

sec_io_escape_in_stored_strings() (
  _io_fresh escape || return 1
  sed -i 's/"name" : "p"/"name" : "p\\u001b]0;owned\\u0007"/' "$IO_CFG/preferences.json"
  timeout $_IO_T "$BIN" list >"$IO_DIR/out" 2>"$IO_DIR/err"
  _io_expect "list with ESC in a stored name" $? 8 "$IO_DIR/err" 'invalid name '"'"'p\u{1B}]0;owned\u{7}'"'" || return 1
  if grep -q $'\e' "$IO_DIR/out" "$IO_DIR/err"; then echo "  a raw ESC reached the terminal"; return 1; fi
  sed -i 's/"p\\u001b]0;owned\\u0007"/"p"/; s/"198.18.0.1:51820"/"198.18.0.1:51820\\u001b[2J\\u009b"/' "$IO_CFG/preferences.json"
  timeout $_IO_T "$BIN" show p >"$IO_DIR/out" 2>"$IO_DIR/err" || { echo "  show: $(head -c 300 "$IO_DIR/err")"; return 1; }
  grep -qF '198.18.0.1:51820\u{1B}[2J\u{9B}' "$IO_DIR/out" || { echo "  show: not escaped: $(grep endpoint "$IO_DIR/out")"; return 1; }
  if grep -q $'\e' "$IO_DIR/out"; then echo "  show: a raw ESC reached the terminal"; return 1; fi
)

sec_io_cfglink_dot() (
  _io_fresh cfglink || return 1
  ln -s "$IO_CFG" "$WORK/io-cfglink/cfglink"
  local dir
  for dir in cfglink cfglink/. cfglink/./ cfglink//.; do
    VPNCTL_CONFIG_DIR="$WORK/io-cfglink/$dir" timeout $_IO_T "$BIN" disable p 2>"$IO_DIR/err" >/dev/null
    _io_expect "--config-dir $dir" $? 11 "$IO_DIR/err" "is a symlink" || return 1
  done
)

sec_io_symlinked_preferences() (
  _io_fresh prefs-link || return 1
  mv "$IO_CFG/preferences.json" "$WORK/io-prefs-link/elsewhere.json"
  ln -s "$WORK/io-prefs-link/elsewhere.json" "$IO_CFG/preferences.json"
  timeout $_IO_T "$BIN" list 2>"$IO_DIR/err" >/dev/null
  _io_expect "symlinked preferences.json" $? 11 "$IO_DIR/err" "preferences.json is a symlink (vpnctl refuses symlinks" || return 1
  ! grep -qi "too many levels" "$IO_DIR/err" || { echo "  ELOOP's text leaked"; return 1; }
)

sec_io_long_values_give_short_messages() (
  _io_fresh long || return 1
  local big rc
  big=$(head -c 100000 /dev/zero | tr '\0' x)
  for args in "show $big" "$big" "list --$big"; do
    # shellcheck disable=SC2086
    timeout $_IO_T "$BIN" $args 2>"$IO_DIR/err" >/dev/null
    rc=$?
    [ $rc = 124 ] && { echo "  hang"; return 1; }
    [ "$(wc -c < "$IO_DIR/err")" -lt 1000 ] || { echo "  ${args:0:12}...: $(wc -c < "$IO_DIR/err") bytes of stderr"; return 1; }
  done
  { echo "[Interface]"; printf 'Address = '; head -c 1000000 /dev/zero | tr '\0' 1; echo; } > "$WORK/io-long/big.conf"
  timeout $_IO_T "$BIN" import "$WORK/io-long/big.conf" 2>"$IO_DIR/err" >/dev/null
  rc=$?
  [ $rc = 5 ] || { echo "  import of a 1 MB value: exit $rc"; return 1; }
  [ "$(wc -c < "$IO_DIR/err")" -lt 2000 ] || { echo "  import of a 1 MB value: $(wc -c < "$IO_DIR/err") bytes of stderr"; return 1; }
)

sec_io_double_dash_json_is_text() (
  _io_fresh dashdash || return 1
  timeout $_IO_T "$BIN" list -- --json >"$IO_DIR/out" 2>"$IO_DIR/err"
  _io_expect "list -- --json" $? 2 "$IO_DIR/err" "Unexpected argument '--json'" || return 1
  [ ! -s "$IO_DIR/out" ] || { echo "  printed to stdout: $(head -c 200 "$IO_DIR/out")"; return 1; }
)

# Ctrl-C (and kill) at the secret prompt puts echo back.
sec_io_secret_prompt_restores_echo() (
  _io_fresh prompt || return 1
  timeout $_IO_T python3 - "$BIN" <<'PY'
import os, pty, signal, subprocess, sys, termios, time
for sig in (signal.SIGINT, signal.SIGTERM):
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.argv[1], "secret", "set", "p", "password", "--force"], stdin=slave, stdout=slave, stderr=slave,
                         start_new_session=True)
    seen = b""
    deadline = time.time() + 5
    while b"value for secret" not in seen and time.time() < deadline:
        seen += os.read(master, 1024)
    time.sleep(0.2)
    if termios.tcgetattr(slave)[3] & termios.ECHO:
        print("  echo was not off at the prompt"); sys.exit(1)
    p.send_signal(sig)
    p.wait(timeout=5)
    if not termios.tcgetattr(slave)[3] & termios.ECHO:
        print(f"  echo still off after signal {sig}"); sys.exit(1)
    if p.returncode != -sig:
        print(f"  exit {p.returncode}, expected death by signal {sig}"); sys.exit(1)
    os.close(master); os.close(slave)
PY
)

# Issue 29 item 14: apply trusted any file in the fleet directory. The fleet
# directory and each file in it are held to the config dir's rules (no
# symlinks, owned by root or the caller, writable by nobody else): a file the
# test user owns, a 0666 file, a symlinked file and a symlinked directory are
# each refused with exit 11 naming the path, and nothing is applied.
_io_fleet() {  # _io_fleet NAME: a fresh empty config and a good fleet dir $IO_DIR/fleet with one file
  _io_fresh "$1" empty || return 1
  mkdir -m 755 "$IO_DIR/fleet" && chmod 755 "$IO_DIR"
  wg_conf > "$IO_DIR/fleet/office.conf" && chmod 644 "$IO_DIR/fleet/office.conf"
}
_io_nothing_applied() {
  [ -e "$IO_CFG/preferences.json" ] && grep -q '"name"' "$IO_CFG/preferences.json" && { echo "  a refused apply saved a profile"; return 1; }
  return 0
}

sec_io_item14_apply_fleet_file_owned_by_user() (
  need_user || return 2
  _io_fleet fleet-owner || return 1
  chown "$SEC_USER" "$IO_DIR/fleet/office.conf"
  timeout $_IO_T "$BIN" apply "$IO_DIR/fleet" 2>"$IO_DIR/err" >/dev/null
  _io_expect "apply, a file the test user owns" $? 11 "$IO_DIR/err" "$IO_DIR/fleet/office.conf is owned by uid $(id -u "$SEC_USER")" || return 1
  grep -qF "hint: chown root:root $IO_DIR/fleet/office.conf" "$IO_DIR/err" || { echo "  no fix named: $(cat "$IO_DIR/err")"; return 1; }
  timeout $_IO_T "$BIN" apply "$IO_DIR/fleet/office.conf" 2>"$IO_DIR/err" >/dev/null
  _io_expect "apply of that file itself" $? 11 "$IO_DIR/err" "$IO_DIR/fleet/office.conf is owned by uid" || return 1
  # The directory itself owned by the user: refused the same way.
  chown root "$IO_DIR/fleet/office.conf" && chown "$SEC_USER" "$IO_DIR/fleet"
  timeout $_IO_T "$BIN" apply "$IO_DIR/fleet" 2>"$IO_DIR/err" >/dev/null
  _io_expect "apply, a directory the test user owns" $? 11 "$IO_DIR/err" "$IO_DIR/fleet is owned by uid" || return 1
  _io_nothing_applied
)

sec_io_item14_apply_fleet_file_mode_0666() (
  _io_fleet fleet-0666 || return 1
  chmod 0666 "$IO_DIR/fleet/office.conf"
  timeout $_IO_T "$BIN" apply "$IO_DIR/fleet" 2>"$IO_DIR/err" >/dev/null
  _io_expect "apply, a 0666 file" $? 11 "$IO_DIR/err" "$IO_DIR/fleet/office.conf is writable by group or others (mode 666)" || return 1
  grep -qF "hint: chmod go-w $IO_DIR/fleet/office.conf" "$IO_DIR/err" || { echo "  no fix named: $(cat "$IO_DIR/err")"; return 1; }
  # A writable directory: anyone could add a file.
  chmod 644 "$IO_DIR/fleet/office.conf" && chmod 0777 "$IO_DIR/fleet"
  timeout $_IO_T "$BIN" apply "$IO_DIR/fleet" 2>"$IO_DIR/err" >/dev/null
  _io_expect "apply, a 0777 directory" $? 11 "$IO_DIR/err" "$IO_DIR/fleet is writable by group or others (mode 777)" || return 1
  _io_nothing_applied
)

sec_io_item14_apply_fleet_symlinked_file() (
  _io_fleet fleet-link || return 1
  mv "$IO_DIR/fleet/office.conf" "$IO_DIR/office.conf" && ln -s "$IO_DIR/office.conf" "$IO_DIR/fleet/office.conf"
  timeout $_IO_T "$BIN" apply "$IO_DIR/fleet" 2>"$IO_DIR/err" >/dev/null
  _io_expect "apply, a symlinked file" $? 11 "$IO_DIR/err" "$IO_DIR/fleet/office.conf is a symlink" || return 1
  timeout $_IO_T "$BIN" apply "$IO_DIR/fleet/office.conf" 2>"$IO_DIR/err" >/dev/null
  _io_expect "apply of the symlink itself" $? 11 "$IO_DIR/err" "$IO_DIR/fleet/office.conf is a symlink" || return 1
  _io_nothing_applied
)

sec_io_item14_apply_fleet_symlinked_directory() (
  _io_fleet fleet-dirlink || return 1
  ln -s "$IO_DIR/fleet" "$IO_DIR/fleet.d"
  local p
  for p in "$IO_DIR/fleet.d" "$IO_DIR/fleet.d/" "$IO_DIR/fleet.d/."; do
    timeout $_IO_T "$BIN" apply "$p" 2>"$IO_DIR/err" >/dev/null
    _io_expect "apply $p" $? 11 "$IO_DIR/err" "$IO_DIR/fleet.d is a symlink" || return 1
  done
  _io_nothing_applied || return 1
  # The real directory, as the rules ask: applied.
  timeout $_IO_T "$BIN" apply "$IO_DIR/fleet" 2>"$IO_DIR/err" >"$IO_DIR/out"
  _io_expect "apply of the real directory" $? 0 "$IO_DIR/err" "" || return 1
  grep -q "created 'office'" "$IO_DIR/out" || { echo "  not applied: $(cat "$IO_DIR/out")"; return 1; }
)
