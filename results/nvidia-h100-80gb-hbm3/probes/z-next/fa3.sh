#!/bin/bash
# fa3.sh K/N [SECONDS]: issue 47's fa3 suite (FlashAttention-3's grid: 16k tokens, heads x d =
# 2048, seqlen 512..16k, d 64/128/256, causal and not, bf16 and fp16; bench/suites/fa3.csv)
# in one device call: part K of N of it (every Nth shape from the Kth) tuned by the local
# search (which starts from the nearest tuned classes' rows) for at most SECONDS per class
# (default 20), with --merge into this GPU's tuning.csv; then ours and the vendors
# (torch-efficient aside, for time) measured on that part under one run id (RUN_ID, default
# fa3-<UTC date>: give every part the same).
# Six parts (fa3.sh 1/6 .. 6/6) fit six calls of ten minutes on an H100. Run from the repo
# root on the device with .deps carried; $OUT gets fa3-K.tgz (the folder's tuning.csv,
# explored.csv, perf.csv, manifest.csv and the log) and the part's versus lines.
set -u
part=${1:-1/6} secs=${2:-20}
k=${part%/*} n=${part#*/}
export FABENCH_RUN_ID=${RUN_ID:-fa3-$(date -u +%Y%m%d)}
mkdir -p "${OUT:=/tmp/out}"
source "$(dirname "$0")/device-prologue.sh"
G=results/$slug; mkdir -p "$G"
S=build/fa3-part.csv L=build/fa3-$k.log
awk -v k="$k" -v n="$n" 'NR == 1 || (NR - 1 - k) % n == 0' bench/suites/fa3.csv >"$S"
pack() { tar czf "$OUT/fa3-$k.tgz" "$G/tuning.csv" "$G/explored.csv" "$G/perf.csv" "$G/manifest.csv" "$L" 2>/dev/null; }
trap pack EXIT
echo "fa3: part $part, $(($(wc -l <"$S") - 1)) shapes, $secs s a class, into $G ($FABENCH_RUN_ID)"
build/fabench tune --device cuda:0 --shapes "$S" --results "$G" --strategy local --time "$secs" --merge --quiet >"$L" 2>&1
echo "tune rc=$? t=$SECONDS"
build/fabench run --device cuda:0 --shapes "$S" --tuned --out "$G/perf.csv" --update --manifest "$G/manifest.csv" >>"$L" 2>&1
echo "ours rc=$? t=$SECONDS"
build/fabench vendors --device cuda:0 --shapes "$S" --impl torch-flash,torch-cudnn,flex,cudnn --out "$G/perf.csv" --update \
    --manifest "$G/manifest.csv" >>"$L" 2>&1
echo "vendors rc=$? t=$SECONDS"
build/fabench versus --shapes "$S" --run "$FABENCH_RUN_ID" "$G" 2>&1 | tee "$OUT/versus-$k.txt" | tail -n 8
