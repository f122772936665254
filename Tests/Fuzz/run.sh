#!/usr/bin/env bash
# Runs every fuzz target for FUZZ_SECONDS (default 60) each, after replaying
# the saved regressions (inputs that once crashed). Prints executions and
# coverage per target; exits non-zero if any target crashed.
# FUZZ_TARGETS="management ovpn" limits the run to those targets.
# FUZZ_JOBS=N fuzzes N targets at once (default 1; each target is one process).
# FUZZ_REPLAY=1 only replays the committed corpus and regressions, each input
# once, deterministically (what `make test` runs); nothing is generated.
# Usage: Tests/Fuzz/run.sh [build-dir]
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-$ROOT/.build/fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-60}
JOBS=${FUZZ_JOBS:-1}
mkdir -p "$OUT/crashes"

# The unit tests' fixtures seed the corpus too (kept once, in Tests/fixtures).
fixtures_of() { case $1 in wgquick) echo "$ROOT/Tests/fixtures/wg" ;; *) echo "$ROOT/Tests/fixtures/$1" ;; esac; }

# fuzz_one NAME: replays the regressions, fuzzes, prints one result line
# (the first word is ok or FAIL).
fuzz_one() {
  local name=$1 bin="$OUT/fuzz-$1" work="$OUT/corpus-$1" rc execs cov
  mkdir -p "$work"
  cp -n "$HERE/corpus/$name"/* "$(fixtures_of "$name")"/* "$work"/ 2>/dev/null
  if [ -d "$HERE/regressions/$name" ] && ls "$HERE/regressions/$name"/* >/dev/null 2>&1; then
    if ! "$bin" "$HERE/regressions/$name"/* > "$OUT/$name.regressions.log" 2>&1; then
      echo "FAIL - $name: a saved regression crashes again (see $OUT/$name.regressions.log)"
      return
    fi
  fi
  if [ "${FUZZ_REPLAY:-}" = 1 ]; then
    local inputs=("$HERE/corpus/$name"/* "$(fixtures_of "$name")"/* "$HERE/regressions/$name"/*)
    # Regular files only: libFuzzer reads every argument as a corpus
    # directory once one of them is a directory (Tests/fixtures/nm/certs).
    local f files=()
    for f in "${inputs[@]}"; do [ -f "$f" ] && files+=("$f"); done
    inputs=("${files[@]}")
    if [ ${#inputs[@]} = 0 ]; then echo "FAIL - fuzz $name: no committed corpus to replay"; return; fi
    if "$bin" "${inputs[@]}" > "$OUT/$name.replay.log" 2>&1; then
      echo "ok   - fuzz $name: replayed ${#inputs[@]} committed inputs"
    else
      echo "FAIL - fuzz $name: a committed input crashes (see $OUT/$name.replay.log)"
      grep -m1 -E "Fatal error|Program crashed|==ERROR|deadly signal|Running: " "$OUT/$name.replay.log" | sed 's/^ */       /'
    fi
    return
  fi
  "$bin" -max_total_time="$SECONDS_EACH" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$OUT/crashes/$name-" "$work" > "$OUT/$name.log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$OUT/$name.log" | awk '{print $2}')
  cov=$(grep -oE 'cov: [0-9]+' "$OUT/$name.log" | tail -1 | awk '{print $2}')
  if [ $rc = 0 ]; then
    echo "ok   - fuzz $name: ${execs:-?} execs, coverage ${cov:-?} edges, ${SECONDS_EACH} s"
  else
    echo "FAIL - fuzz $name crashed after ${execs:-?} execs; input saved under $OUT/crashes/ (log: $OUT/$name.log)"
    # A Swift trap shows as "Program crashed" with the product's frame under it
    # (ASan may then also complain about the backtracer's own reads: not the cause).
    { grep -m1 -E "Fatal error|Program crashed|==ERROR|deadly signal" "$OUT/$name.log"
      grep -m1 -E " at /.*/Sources/.*\.swift:[0-9]+" "$OUT/$name.log"; } | sed 's/^ */       /'
  fi
}

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
running=0
for bin in "$OUT"/fuzz-*; do
  name=${bin##*/fuzz-}
  if [ -n "${FUZZ_TARGETS:-}" ] && [[ " $FUZZ_TARGETS " != *" $name "* ]]; then continue; fi
  if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
  { fuzz_one "$name" > "$results/$name"; cat "$results/$name"; } &
  running=$((running + 1))
done
wait
passed=$(cat "$results"/* 2>/dev/null | grep -c '^ok ')
failed=$(cat "$results"/* 2>/dev/null | grep -c '^FAIL')
echo "fuzz: $passed passed, $failed failed"
[ "$failed" = 0 ]
