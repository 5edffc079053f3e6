#!/bin/bash
# generalize.sh [SEED] [COUNT] [IMPLS]: issue 45's first target in one device call: COUNT
# shapes (default 30) that no suite names, from tools/gen-shapes.py with a seed kept for
# reported measurements (default 20270102: 20270101 is spent), ours from the committed table
# alone (--tuned: the class's row, else fallback.csv's rules, else the regime default) beside
# every vendor in one run, into results/<gpu>/generalize-SEED/ (shapes.csv, perf.csv,
# manifest.csv), then `fabench versus` on it. Run from the repo root on the device with .deps
# carried; $OUT gets generalize-SEED.tgz and versus.txt.
set -u
seed=${1:-20270102} count=${2:-30} impls=${3:-torch-flash,torch-efficient,torch-cudnn,flex,cudnn}
export FABENCH_RUN_ID=${RUN_ID:-generalize-$seed-$(date -u +%Y%m%d)}
mkdir -p "${OUT:=/tmp/out}"
source "$(dirname "$0")/device-prologue.sh"
G=results/$slug/generalize-$seed; mkdir -p "$G"
python3 tools/gen-shapes.py --seed "$seed" --count "$count" --out "$G/shapes.csv" || exit 1
L=build/generalize-$seed.log
pack() { build/fabench versus "$G" >"$OUT/versus.txt" 2>&1; tar czf "$OUT/generalize-$seed.tgz" "$G" "$L"; }
trap pack EXIT
echo "generalize: $count shapes of seed $seed into $G ($FABENCH_RUN_ID)"
build/fabench run --device cuda:0 --shapes "$G/shapes.csv" --tuned --out "$G/perf.csv" --update \
    --manifest "$G/manifest.csv" >"$L" 2>&1
echo "ours rc=$? t=$SECONDS"
build/fabench vendors --device cuda:0 --shapes "$G/shapes.csv" --impl "$impls" --out "$G/perf.csv" --update \
    --manifest "$G/manifest.csv" >>"$L" 2>&1
echo "vendors rc=$? t=$SECONDS"
pack; trap - EXIT
tail -n 25 "$OUT/versus.txt"
