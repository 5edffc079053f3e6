#!/bin/bash
# remeasure.sh SUITE [K/N] [IMPLS]: one device call of the re-measurement under the new protocol
# (issue 44): ours (--tuned) and the vendors on part K of N of bench/suites/SUITE.csv (every
# Nth shape from the Kth; default 1/1), one run id for the suite (RUN_ID, default SUITE-<UTC
# date>: give the same RUN_ID to every part), into this GPU's results folder with --update.
# IMPLS defaults to every vendor but flex-autotune (its autotuning takes 15-25 s a shape; give
# it a call of its own on fewer shapes). Run from the repo root on the device; $OUT gets
# remeasure-SUITE-K.tgz (the folder's perf.csv and manifest.csv, and the logs).
set -u
suite=$1 part=${2:-1/1} impls=${3:-torch-flash,torch-efficient,torch-cudnn,flex,cudnn}
k=${part%/*} n=${part#*/}
export FABENCH_RUN_ID=${RUN_ID:-$suite-$(date -u +%Y%m%d)}
source "$(dirname "$0")/device-prologue.sh"
G=results/$slug; mkdir -p "$G" "${OUT:-/tmp/out}"
S=build/part.csv
awk -v k="$k" -v n="$n" 'NR == 1 || (NR - 1 - k) % n == 0' "bench/suites/$suite.csv" >"$S"
echo "remeasure: $suite part $part: $(($(wc -l <"$S") - 1)) shapes into $G ($FABENCH_RUN_ID)"
L=build/remeasure-$suite-$k.log
build/fabench run --device cuda:0 --shapes "$S" --tuned --out "$G/perf.csv" --update --manifest "$G/manifest.csv" >"$L" 2>&1
echo "ours rc=$? t=$SECONDS"
build/fabench vendors --device cuda:0 --shapes "$S" --impl "$impls" --out "$G/perf.csv" --update \
    --manifest "$G/manifest.csv" >>"$L" 2>&1
echo "vendors rc=$? t=$SECONDS"
build/fabench versus "$G" 2>&1 | tail -n 12
tar czf "${OUT:-/tmp/out}/remeasure-$suite-$k.tgz" "$G/perf.csv" "$G/manifest.csv" "$L"
