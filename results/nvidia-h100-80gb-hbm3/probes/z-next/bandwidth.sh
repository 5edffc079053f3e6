#!/bin/bash
# bandwidth.sh [SUITE K/N [IMPLS]]: the device's copy and read bandwidth (`fabench bandwidth`,
# issue 47's ceiling for decode and paged decode) appended to this GPU's results folder
# (bandwidth.csv, the manifest updated), then, given a suite part, remeasure.sh on it in the
# same call (decode or paged: the rows that ceiling is for). Run from the repo root on the
# device with .deps carried; $OUT gets bandwidth.tgz (bandwidth.csv, manifest.csv, the log and
# `versus --bandwidth` over the folder) and remeasure.sh's archive.
set -u
export FABENCH_RUN_ID=${RUN_ID:-bandwidth-$(date -u +%Y%m%dT%H%M%SZ)}
source "$(dirname "$0")/device-prologue.sh"
G=results/$slug; mkdir -p "$G" "${OUT:=/tmp/out}"
L=build/bandwidth.log
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,memory.total --format=csv >"$L" 2>&1
build/fabench bandwidth --device cuda:0 --out "$G/bandwidth.csv" --append --manifest "$G/manifest.csv" >>"$L" 2>&1
echo "bandwidth rc=$? t=$SECONDS"
grep -E '^(copy|read):' "$L"
if [ $# -ge 2 ]; then
    bash "$(dirname "$0")/remeasure.sh" "$@"
fi
build/fabench versus --bandwidth "$G/bandwidth.csv" "$G" >build/versus-bandwidth.txt 2>&1
sed -n '/^memory-bound/,$p' build/versus-bandwidth.txt | tail -n 40
tar czf "$OUT/bandwidth.tgz" "$G/bandwidth.csv" "$G/manifest.csv" "$L" build/versus-bandwidth.txt
