#!/usr/bin/env bash
# run.sh SECONDS NAME...: runs each libFuzzer target build/fuzz/fuzz_NAME for SECONDS on a
# fresh copy of its seed corpus (tests/fuzz/corpus/NAME/ -> build/fuzz/work/NAME/; the
# seeds are never written), after replaying the reproducers in tests/fuzz/crashes/NAME/
# (read only: a bug that comes back fails at once). tests/fuzz/NAME.dict is its
# dictionary and tests/fuzz/NAME.options (one line) extra libFuzzer flags, where present.
# One line per target (executions, coverage), the crashing input and the sanitizer's
# verdict for a target that failed, the log in build/fuzz/logs/NAME.log, and
# "N passed, N failed" last; exits 1 when any target failed. Every target runs, so one
# crash hides no other.
set -u
secs=${1:?usage: run.sh SECONDS NAME...}
shift
root=$(pwd)
pass=0; fail=0; failed=()
mkdir -p build/fuzz/logs
# the targets' temporary files (fuzz_common.h), in memory where possible; a crashing
# target cannot clean up after itself, so the whole folder goes at the end
base=/dev/shm; [ -w "$base" ] || base=${TMPDIR:-/tmp}
FUZZ_TMPDIR=$(mktemp -d "$base/fabench-fuzz-run.XXXXXX") || exit 2
export FUZZ_TMPDIR
trap 'rm -rf "$FUZZ_TMPDIR"' EXIT
for t in "$@"; do
    bin=build/fuzz/fuzz_$t work=build/fuzz/work/$t art=build/fuzz/artifacts/$t log=build/fuzz/logs/$t.log
    rm -rf "$work" "$art"
    mkdir -p "$work" "$art"
    [ -d "tests/fuzz/corpus/$t" ] && cp -R "tests/fuzz/corpus/$t/." "$work/"
    dict=()
    [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="$root/tests/fuzz/$t.dict")
    extra=()
    seeds=()
    [ -d "tests/fuzz/crashes/$t" ] && seeds=("$root/tests/fuzz/crashes/$t")
    [ -f "tests/fuzz/$t.options" ] && read -r -a extra < "tests/fuzz/$t.options"
    if [ ! -x "$bin" ]; then
        echo "$t: FAILED: $bin is not built"
        fail=$((fail + 1)); failed+=("$t"); continue
    fi
    # stdout and stderr of the code under test are closed (-close_fd_mask=3); libFuzzer
    # and the sanitizers still report on a copy of stderr, into the log.
    start=$SECONDS
    "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=25 -close_fd_mask=3 -print_final_stats=1 \
        -artifact_prefix="$root/$art/" "${dict[@]}" "${extra[@]}" "$root/$work" "${seeds[@]}" </dev/null >"$log" 2>&1
    rc=$?
    took=$((SECONDS - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    corp=$(find "$work" -type f | wc -l)
    stats="${execs:-?} execs in ${took}s, cov ${cov:-?}, features ${ft:-?}, corpus $corp"
    if [ $rc -eq 0 ]; then
        echo "$t: ok: $stats"
        pass=$((pass + 1))
        continue
    fi
    fail=$((fail + 1)); failed+=("$t")
    crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    echo "$t: FAILED (exit $rc): $stats"
    echo "  crashing input: ${crash:-(none written; see the log)}"
    grep -aE '^(FUZZ INVARIANT BROKEN|SUMMARY:|==[0-9]+== ?ERROR:)|runtime error:|ALARM|out-of-memory|deadly signal' "$log" |
        head -5 | sed 's/^/  /'
    echo "  log: $log; reproduce: $bin ${crash:-CRASH_FILE}"
done
[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
