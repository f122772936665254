# The shell test library shared by Tests/cli, Tests/lab and Tests/security:
# results, assertions that say what they saw, bounded waits, JSON reads.
# Source it; it defines functions and the counters only.

passed=0 failed=0 skipped=0

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

# check NAME FN [ARGS...]: runs FN (when selected) and records the result.
check() {
  local name=$1; shift
  selected "$name" "$1" || return 0
  if "$@"; then pass "$name"; else fail "$name"; fi
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
