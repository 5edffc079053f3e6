#!/usr/bin/env bash
# e2e-parallel.sh [DEVICE] [JOBS] [OUTDIR]: tests/test_e2e on DEVICE (default cuda:0), each
# of its tests in its own process, JOBS at a time (default: the CPU count), so that their
# compiles (NVRTC, a cold cache: most of the suite's time on a GPU machine) use every core.
# Logs go to OUTDIR/<test>.log (default $OUT or /tmp/e2e-parallel); OUTDIR/summary.txt has
# one line per test with its exit status. $E2E_FILTER (a grep -E pattern) picks tests;
# $E2E_TIMEOUT (seconds, default 570) bounds each one. Exit status: 0 when every test passed.
set -u
cd "$(dirname "$0")/.." || exit 2
dev=${1:-cuda:0}
jobs=${2:-$(nproc 2>/dev/null || echo 4)}
out=${3:-${OUT:-/tmp/e2e-parallel}}
mkdir -p "$out" || exit 2
make -s build/tests/test_e2e || exit 2
names=$(sed -n 's/.*cmocka_unit_test(\(test_[A-Za-z0-9_]*\)).*/\1/p' tests/test_e2e.c | grep -E "${E2E_FILTER:-.}")
[ -n "$names" ] || { echo "e2e-parallel: no test matches '${E2E_FILTER:-}'" >&2; exit 2; }
# each test in its own process; its status on one line
printf '%s\n' $names | xargs -P "$jobs" -I{} sh -c \
    'FABENCH_TEST_DEVICE="$1" FABENCH_TEST_FILTER="$3" timeout "$4" build/tests/test_e2e >"$2/$3.log" 2>&1
     echo "$3 exit $?"' sh "$dev" "$out" {} "${E2E_TIMEOUT:-570}" | sort >"$out/summary.txt"
cat "$out/summary.txt"
failed=$(grep -vc ' exit 0$' "$out/summary.txt")
echo "e2e-parallel: $(grep -c ' exit 0$' "$out/summary.txt") passed, $failed failed on $dev"
[ "$failed" -eq 0 ]
