# The shell test library shared by Tests/cli, Tests/lab and Tests/security:
# results, assertions that say what they saw, bounded waits, JSON reads.
# Source it; it defines functions and the counters only.

passed=0 failed=0 skipped=0

# The suites match vpnctl's English messages, whatever language the person
# running them reads: no catalog is found under a directory that does not
# exist. The i18n checks point VPNCTL_LOCALEDIR at real catalogs themselves.
export VPNCTL_LOCALEDIR=/nonexistent/vpnctl-locale

pass() { passed=$((passed + 1)); echo "ok   - $1"; }
fail() { failed=$((failed + 1)); echo "FAIL - $1"; }
skip() { skipped=$((skipped + 1)); echo "skip - $1"; }

# selected TITLE FN: whether a check runs. With TEST_ONLY (or E2E_ONLY) set to
# "word ...", only checks whose FN or title contains one of the words run.
selected() {
  local only=${TEST_ONLY:-${E2E_ONLY:-}} w
  [ -z "$only" ] && return 0
  for w in $only; do [[ $2 == *"$w"* || $1 == *"$w"* ]] && return 0; done
  return 1
}

# check NAME FN [ARGS...]: runs FN (when selected) and records the result;
# then runs the teardown steps FN (or whoever set it up) registered with
# defer, whether FN passed or not.
check() {
  local name=$1; shift
  selected "$name" "$1" || return 0
  if "$@"; then pass "$name"; else fail "$name"; fi
  run_deferred
}

# defer CMD...: a teardown step, run by check (or run_deferred) after the
# test, last registered first.
DEFERRED=()
defer() {
  local q; printf -v q '%q ' "$@"
  DEFERRED+=("$q")
}

# run_deferred: runs the registered teardown steps, newest first, and forgets them.
run_deferred() {
  local i
  for ((i = ${#DEFERRED[@]} - 1; i >= 0; i--)); do eval "${DEFERRED[i]}"; done
  DEFERRED=()
}

# Skips fail the run under CI (CI=true) or when asked (VPNCTL_REQUIRE_LAB=1):
# there, a green run must mean that everything ran.
skips_are_failures() { [ "${CI:-}" = true ] || [ "${VPNCTL_REQUIRE_LAB:-}" = 1 ]; }

# summary LABEL: prints the counts; returns non-zero on a failure, or on a
# skip where skips are failures.
summary() {
  echo "$1: $passed passed, $failed failed, $skipped skipped"
  if [ "$skipped" -gt 0 ] && skips_are_failures; then
    echo "$1: $skipped skipped, and skips count as failures here (CI=true or VPNCTL_REQUIRE_LAB=1)"
    return 1
  fi
  [ "$failed" = 0 ]
}

# expect_eq WHAT EXPECTED ACTUAL: equal, or says what it saw.
expect_eq() {
  [ "$2" = "$3" ] && return 0
  echo "  $1: expected '$2', got '$3'"
  return 1
}

# expect_ne WHAT UNEXPECTED ACTUAL: not equal, or says what it saw.
expect_ne() {
  [ "$2" != "$3" ] && return 0
  echo "  $1: expected anything but '$2', got it"
  return 1
}

# expect_exit WHAT EXPECTED ACTUAL [OUTPUT]: an exit status, with the output on failure.
expect_exit() {
  [ "$2" = "$3" ] && return 0
  echo "  $1: expected exit $2, got $3${4:+: $4}"
  return 1
}

# expect_contains WHAT NEEDLE TEXT: TEXT contains NEEDLE (fixed string).
expect_contains() {
  grep -qF -- "$2" <<<"$3" && return 0
  echo "  $1: expected to contain '$2', got: $3"
  return 1
}

# expect_not_contains WHAT NEEDLE TEXT: TEXT does not contain NEEDLE (fixed string).
expect_not_contains() {
  grep -qF -- "$2" <<<"$3" || return 0
  echo "  $1: expected no '$2', got: $3"
  return 1
}

# expect_match WHAT REGEX TEXT: TEXT matches the extended REGEX (grep -E).
expect_match() {
  grep -qE -- "$2" <<<"$3" && return 0
  echo "  $1: expected to match /$2/, got: $3"
  return 1
}

# expect_nonempty WHAT VALUE: VALUE is not empty.
expect_nonempty() {
  [ -n "$2" ] && return 0
  echo "  $1: expected a value, got nothing"
  return 1
}

# expect_run WHAT STATUS CMD...: runs CMD (stdout and stderr into $OUT) and
# expects exit STATUS ("0", "4", or "nonzero"); on a mismatch it says the
# command, the expected and the actual exit and the output.
OUT=
expect_run() {
  local what=$1 want=$2 rc; shift 2
  OUT=$("$@" 2>&1); rc=$?
  if [ "$want" = nonzero ]; then [ "$rc" != 0 ] && return 0
  else [ "$rc" = "$want" ] && return 0; fi
  echo "  $what: \`$*\` expected exit $want, got $rc${OUT:+: $OUT}"
  return 1
}

# expect_ok WHAT CMD...: expect_run WHAT 0 CMD...
expect_ok() { local what=$1; shift; expect_run "$what" 0 "$@"; }

# expect_absent WHAT NEEDLE FILE...: no FILE (or file under a directory)
# holds NEEDLE. Says which files do, never the needle (it may be a secret).
expect_absent() {
  local what=$1 needle=$2 hits; shift 2
  hits=$(grep -rlF -- "$needle" "$@" 2>/dev/null) || return 0
  echo "  $what: found in $(echo $hits)"
  return 1
}

# gone PID: the process has exited (no such process, or a zombie not yet reaped).
gone() {
  local st
  st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || return 0
  [ "${st%% *}" = Z ]
}

# stop_pid PID: ends a process this test started (SIGCONT first, in case a
# test stopped it), reaping it when it is our child; bounded.
stop_pid() {
  kill -CONT "$1" 2>/dev/null; kill "$1" 2>/dev/null
  wait_for "pid $1 to exit" 5 gone "$1" || kill -KILL "$1" 2>/dev/null
  wait "$1" 2>/dev/null
  return 0
}

# wait_for WHAT SECONDS CMD...: runs CMD every 50 ms until it succeeds; after
# SECONDS it fails, saying what it waited for.
wait_for() {
  local what=$1 seconds=$2; shift 2
  local end=$(( $(date +%s%N) / 1000000 + seconds * 1000 ))
  while :; do
    "$@" >/dev/null 2>&1 && return 0
    [ $(( $(date +%s%N) / 1000000 )) -ge $end ] && break
    sleep 0.05
  done
  echo "  timed out after $seconds s waiting for: $what"
  return 1
}

# json_get KEY.PATH: one field of the JSON on stdin ("" for null or missing);
# numeric path parts index lists.
json_get() {
  python3 -c 'import json,sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    if isinstance(v, list): v = v[int(k)] if k.isdigit() and int(k) < len(v) else None
    elif isinstance(v, dict): v = v.get(k)
    else: v = None
print("" if v is None else v)' "$1"
}

# wg_quick_conf ADDRESS ALLOWED ENDPOINT PRIVATE-KEY PEER-PUBLIC-KEY: one wg-quick file.
wg_quick_conf() {
  cat <<CONF
[Interface]
PrivateKey = $4
Address = $1

[Peer]
PublicKey = $5
AllowedIPs = $2
Endpoint = $3
CONF
}
