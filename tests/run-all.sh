#!/usr/bin/env bash
# Runs each test program given on the command line (a .sh file through bash) and prints
# "N passed, N failed" (counting programs) as the last line; exits 1 when any failed.
# A program running longer than FABENCH_TEST_TIMEOUT seconds (default 1200; the slowest,
# test_nvrtc, takes about 3 minutes on 2 cores) is stopped and counted failed, so a hang
# fails the run instead of holding it.
set -u
limit=${FABENCH_TEST_TIMEOUT:-1200}
pass=0; fail=0; failed=()
for t in "$@"; do
    echo "=== $t"
    start=$(date +%s)
    case "$t" in
        *.sh) timeout "$limit" bash "$t"; rc=$? ;;
        *) timeout "$limit" "$t"; rc=$? ;;
    esac
    [ $rc -eq 124 ] && echo "=== $t: stopped after $limit s (FABENCH_TEST_TIMEOUT)"
    echo "=== $t: exit $rc after $(( $(date +%s) - start )) s"
    if [ $rc -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); failed+=("$t"); fi
done
[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
