#!/bin/sh
# run.sh BUILD SECONDS TARGET... - runs libFuzzer targets two at a time.
#
# Each target first replays its corpus in tests/fuzz/corpus/TARGET (the
# seeds and one regression input per fixed defect), then fuzzes for SECONDS
# with new inputs kept in BUILD/corpus/TARGET (outside the source tree). A
# crash leaves its input in BUILD/crash-* and fails the run. Figures (runs,
# coverage, time) go to BUILD/fuzz-TARGET.log; the last line of each log is
# printed. FUZZ_TIMEOUT (default 10) is the wall-clock seconds one input may
# take before it counts as a hang; long runs beside other work at a low
# priority need more.
set -u
build=$1 seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
one() {
  t=$1
  mkdir -p "$build/corpus/$t"
  dict=""
  case $t in
    parse|eval) dict="-dict=$here/syslab.dict" ;;
    notebook|markdown) dict="-dict=$here/notebook.dict" ;;
    journal) dict="-dict=$here/journal.dict" ;;
    inline) dict="-dict=$here/inline.dict" ;;
  esac
  log="$build/fuzz-$t.log"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  if ! "$build/fuzz_$t" -runs=0 $dict "$here/corpus/$t" > "$log.replay" 2>&1; then
    echo "fuzz_$t: replaying the corpus failed:"; tail -30 "$log.replay"; return 1
  fi
  start=$(date +%s)
  if ! "$build/fuzz_$t" $dict -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -max_len=8192 \
      -artifact_prefix="$build/crash-$t-" -print_final_stats=1 "$build/corpus/$t" "$here/corpus/$t" > "$log" 2>&1; then
    echo "fuzz_$t: FAILED after $(( $(date +%s) - start )) s:"; grep -A30 "ERROR\|runtime error\|timeout\|out-of-memory" "$log" | head -40
    return 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  echo "fuzz_$t: $runs executions in $(( $(date +%s) - start )) s, $cov, no crash"
}
status=0
pids=""
running=0
for t in "$@"; do
  ( one "$t" ) &
  pids="$pids $!"
  running=$((running + 1))
  if [ $running -ge 2 ]; then
    for p in $pids; do wait "$p" || status=1; done
    pids="" running=0
  fi
done
for p in $pids; do wait "$p" || status=1; done
exit $status
