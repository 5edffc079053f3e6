#!/bin/bash
# split-gpu.sh: the first GPU run of the split kernel and the knob table (issue 46), one device
# call of at most ten minutes: every test_wgmma_probe and test_e2e case, each in its own
# process, eight at a time (their NVRTC compiles are most of the time), then faults-gpu.sh
# (issue 44: the device reference and the localized faults at full size). Run from the repo
# root on the device with .deps carried; $OUT gets split-gpu.tgz (one log per case and
# summary.txt) and the faults' logs.
set -u
source .deps/unpack-debs.sh
export FABENCH_CACHE=$PWD/build/kcache
out=build/split-gpu; mkdir -p "$out" "${OUT:=/tmp/out}"
make -j16 all build/tests/test_wgmma_probe build/tests/test_e2e build/tests/test_refdev \
    build/tests/test_faults_local >"$out/make.log" 2>&1 || { tail -n 30 "$out/make.log"; exit 1; }
echo "built t=$SECONDS"
cases() {   # test names of a cmocka main, prefixed by the binary
    sed -n 's/.*cmocka_unit_test(\(test_[A-Za-z0-9_]*\)).*/\1/p' "tests/$1.c" | sed "s/^/$1 /"
}
one() {     # BINARY CASE: one case in its own process; its status on one line
    if [ "$1" = test_e2e ]; then
        FABENCH_TEST_DEVICE=cuda:0 FABENCH_TEST_FILTER="$2" timeout "${CASE_TIMEOUT:-300}" build/tests/$1
    else
        FABENCH_TEST_DEVICE=cuda:0 timeout "${CASE_TIMEOUT:-300}" build/tests/$1 "$2"
    fi >"$out/$1-$2.log" 2>&1
    echo "$1 $2 exit $?"
}
export -f one; export out
{ cases test_wgmma_probe; cases test_e2e; } | xargs -P 8 -L 1 bash -c 'one "$@"' _ | sort >"$out/summary.txt"
cat "$out/summary.txt"
echo "cases: $(grep -c ' exit 0$' "$out/summary.txt") passed, $(grep -vc ' exit 0$' "$out/summary.txt") failed, t=$SECONDS"
tar czf "$OUT/split-gpu.tgz" "$out"
bash "$(dirname "$0")/faults-gpu.sh"
echo "faults t=$SECONDS"
