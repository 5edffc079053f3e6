#!/bin/bash
# gpu-first.sh [SECONDS]: the most a short device call can tell when device time is scarce
# (stop 52 had 719 s left after an hour of failed starts), in order of need, each step only
# while the call's SECONDS (default 300) last:
#   1. the copy and read bandwidth (`fabench bandwidth`, issue 47) into this GPU's results
#      folder (bandwidth.csv, manifest updated);
#   2. the runtime layer and command drivers merged after fbd8084 on a GPU (issue 46): the
#      ref suite with --tuned, and cuDNN beside it, into a scratch folder, with versus;
#   3. every test_e2e case, each in its own process, eight at a time, cut at the deadline;
#   4. short-prefill.sh 12 (issue 45), if two minutes remain.
# Run from the repo root on the device with .deps carried; $OUT gets gpu-first.tgz, packed
# again after each step (a call cut short keeps what was done).
set -u
budget=${1:-300}
source .deps/unpack-debs.sh
export FABENCH_CACHE=$PWD/build/kcache PYTHONUNBUFFERED=1
export FABENCH_RUN_ID=${RUN_ID:-gpu-first-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "${OUT:=/tmp/out}" build/gpu-first
L=build/gpu-first
left() { echo $((budget - SECONDS)); }
pack() { tar czf "$OUT/gpu-first.tgz" "$L" "${G:-.}/bandwidth.csv" "${G:-.}/manifest.csv" 2>/dev/null; }
trap pack EXIT
make -j16 all build/tests/test_e2e >"$L/make.log" 2>&1 || { tail -n 30 "$L/make.log"; exit 1; }
echo "built t=$SECONDS"
slug=$(build/fabench devices --list | awk -F'\t' '$1=="cuda:0"{print $3}' | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\+/-/g; s/^-//; s/-$//')
G=results/$slug; mkdir -p "$G"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,memory.total --format=csv >"$L/nvidia-smi.txt" 2>&1
timeout 120 build/fabench bandwidth --device cuda:0 --out "$G/bandwidth.csv" --append --manifest "$G/manifest.csv" \
    >"$L/bandwidth.log" 2>&1
echo "bandwidth rc=$? t=$SECONDS"; pack; grep -E '^(copy|read):' "$L/bandwidth.log"
S=$L/scratch; mkdir -p "$S"
timeout 90 build/fabench run --device cuda:0 --suite ref --tuned --out "$S/perf.csv" --manifest "$S/manifest.csv" \
    >"$L/ref-run.log" 2>&1
echo "ref run rc=$? t=$SECONDS"
timeout 90 build/fabench vendors --device cuda:0 --suite ref --impl cudnn --out "$S/perf.csv" --append \
    --manifest "$S/manifest.csv" >"$L/ref-vendors.log" 2>&1
echo "ref cudnn rc=$? t=$SECONDS"; pack
build/fabench versus "$S" >"$L/ref-versus.txt" 2>&1; grep -E "^geomean|ref-" "$L/ref-versus.txt" | head -n 12
one() {     # CASE: one test_e2e case in its own process; its status on one line
    FABENCH_TEST_DEVICE=cuda:0 FABENCH_TEST_FILTER="$1" timeout "${CASE_TIMEOUT:-200}" build/tests/test_e2e >"$L/e2e-$1.log" 2>&1
    echo "test_e2e $1 exit $?"
}
export -f one; export L
if [ "$(left)" -gt 60 ]; then
    sed -n 's/.*cmocka_unit_test(\(test_[A-Za-z0-9_]*\)).*/\1/p' tests/test_e2e.c |
        timeout "$(($(left) - 30))" xargs -P 8 -L 1 bash -c 'one "$@"' _ | sort >"$L/e2e-summary.txt"
    echo "e2e: $(grep -c ' exit 0$' "$L/e2e-summary.txt") passed, $(grep -vc ' exit 0$' "$L/e2e-summary.txt") not, of $(grep -c 'cmocka_unit_test(' tests/test_e2e.c) t=$SECONDS"
    grep -v ' exit 0$' "$L/e2e-summary.txt"
fi
if [ "$(left)" -gt 120 ]; then
    timeout "$(($(left) - 10))" bash "$(dirname "$0")/short-prefill.sh" 12
    cp "$OUT/summary.txt" "$L/short-prefill-summary.txt" 2>/dev/null
fi
echo "done t=$SECONDS"
