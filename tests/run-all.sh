#!/usr/bin/env bash
# Runs each test program given on the command line (a .sh file through bash) and prints
# "N passed, N failed" (counting programs) as the last line; exits 1 when any failed.
set -u
pass=0; fail=0; failed=()
for t in "$@"; do
    echo "=== $t"
    start=$(date +%s)
    case "$t" in
        *.sh) bash "$t"; rc=$? ;;
        *) "$t"; rc=$? ;;
    esac
    echo "=== $t: exit $rc after $(( $(date +%s) - start )) s"
    if [ $rc -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); failed+=("$t"); fi
done
[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
