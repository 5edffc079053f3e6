#!/bin/bash
# flex-autotune.sh [EVERY]: FlexAttention compiled with max-autotune (issue 44: the Triton
# autotuned peer, the closest installed thing to the paper's own method) beside ours and the
# other vendors, in one run of one call. Its autotuning takes 15-25 s a shape, so it gets
# its own folder, results/<gpu>/flex-autotune/ (perf.csv, manifest.csv, shapes.csv), on the
# ref suite's shapes and every EVERYth llm shape (default 6: ten), instead of replacing the
# llm run's rows of perf.csv. Run from the repo root on the device with .deps carried; $OUT
# gets flex-autotune.tgz and versus.txt.
set -u
every=${1:-6}
source "$(dirname "$0")/device-prologue.sh"
probe_start flex-autotune
{ cat bench/suites/ref.csv; awk -v n="$every" 'NR > 1 && (NR - 2) % n == 0' bench/suites/llm.csv; } |
    awk -F, 'NR == 1 || !seen[$1]++' >"$W/shapes.csv"
echo "flex-autotune: $(($(wc -l <"$W/shapes.csv") - 1)) shapes ($FABENCH_RUN_ID)"
build/fabench run --device cuda:0 --shapes "$W/shapes.csv" --tuned --out "$W/perf.csv" --manifest "$W/manifest.csv" \
    >build/flex-autotune-ours.log 2>&1
echo "ours rc=$? t=$SECONDS"
build/fabench vendors --device cuda:0 --shapes "$W/shapes.csv" --impl cudnn,flex,flex-autotune --out "$W/perf.csv" --append \
    --manifest "$W/manifest.csv" >build/flex-autotune-vendors.log 2>&1
echo "vendors rc=$? t=$SECONDS"
build/fabench versus "$W" 2>&1 | tee "$OUT/versus.txt" | tail -n 12
