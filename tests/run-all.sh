#!/usr/bin/env bash
# Runs each test program given on the command line and prints "N passed, N failed"
# (counting test programs) as the last line; exits 1 when any failed.
set -u
pass=0; fail=0; failed=()
for t in "$@"; do
    echo "=== $t"
    if "$t"; then pass=$((pass + 1)); else fail=$((fail + 1)); failed+=("$t"); fi
done
[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
