#!/bin/bash
# Device probe 1 (issue 44): the gated timer on a GPU. Builds; ours with and without the gate
# on a few shapes; the vendors (torch and cuDNN) and their CUDA-graph replay on the same
# shapes; ncu on three of them; FlexAttention with max-autotune on one shape, its compile timed.
# Run from the repo root on the device: bash tools/devrun/p1.sh  (results under $OUT)
set -u
source .deps/unpack-debs.sh
W=${OUT:-/tmp/out}/p1; mkdir -p "$W"
export FABENCH_CACHE=$PWD/build/kcache PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv >"$W/gpu.txt" 2>&1
make -j16 all >"$W/build.log" 2>&1 || { tail -n 20 "$W/build.log"; exit 1; }
echo "build done t=$SECONDS"
S=$W/shapes.csv
{ head -n 1 tools/crosscheck/shapes.csv
  grep -E '^(user-b4|decode-h32kv8-b1-s512|llama3-8b-decode-b16-s1024|llama3.2-1b-decode-b16|ref-b4-h32-s4096-d128,|llama3-8b-prefill-b1|paper-h32kv32-b1-s16|ragged-tiny|llama3-8b-paged16-decode)' tools/crosscheck/shapes.csv
} >"$S"
export FABENCH_RUN_ID=p1-$(date -u +%H%M%S)
timeout 200 build/fabench run --device cuda:0 --shapes "$S" --tuned --out "$W/ours.csv" >"$W/ours.log" 2>&1
echo "ours rc=$? t=$SECONDS"
FABENCH_NO_GATE=1 timeout 100 build/fabench run --device cuda:0 --shapes "$S" --tuned --out "$W/ours-nogate.csv" >"$W/ours-nogate.log" 2>&1
echo "ours-nogate rc=$? t=$SECONDS"
timeout 200 build/fabench vendors --device cuda:0 --shapes "$S" --impl torch-flash,torch-efficient,torch-cudnn,flex,cudnn --out "$W/vendors.csv" >"$W/vendors.log" 2>&1
echo "vendors rc=$? t=$SECONDS"
timeout 120 python3 tools/crosscheck.py graph "$S" "$W/graph.csv" --impl torch-flash,torch-efficient,torch-cudnn,flex >"$W/graph.log" 2>&1
echo "graph rc=$? t=$SECONDS"
python3 tools/crosscheck.py report "$W/ours.csv" "$W/vendors.csv" --check "$W/graph.csv" --out "$W/cc-graph.csv" --need 1 2>&1 | tail -n 8
if command -v ncu >/dev/null; then
  for n in decode-h32kv8-b1-s512 llama3-8b-decode-b16-s1024 ref-b4-h32-s4096-d128; do
    one=$W/$n.shape.csv; { head -n 1 "$S"; grep "^$n," "$S"; } >"$one"
    FABENCH_NO_GATE=1 timeout 60 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --print-units base -k 'regex:^attn_' --launch-count 60 build/fabench run --device cuda:0 --shapes "$one" --tuned --out "$W/scratch.csv" --budget 0.05 --quiet >"$W/portable@$n.ncu.csv" 2>"$W/ncu-$n.err"
    FABENCH_NO_GATE=1 timeout 60 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --print-units base --launch-count 60 build/fabench vendors --impl cudnn --device cuda:0 --shapes "$one" --out "$W/scratch.csv" --budget 0.05 --quiet >"$W/cudnn@$n.ncu.csv" 2>>"$W/ncu-$n.err"
  done
  python3 tools/crosscheck.py ncu "$W"/*.ncu.csv --out "$W/ncu.csv" 2>&1 | tail -n 3
  python3 tools/crosscheck.py report "$W/ours.csv" "$W/vendors.csv" --check "$W/ncu.csv" --out "$W/cc-ncu.csv" --need 1 2>&1 | tail -n 4
fi
echo "ncu t=$SECONDS"
one=$W/flexat.shape.csv; { head -n 1 "$S"; grep "^llama3-8b-decode-b16-s1024," "$S"; } >"$one"
/usr/bin/time -f "flex-autotune wall %e s" timeout 150 build/fabench vendors --device cuda:0 --shapes "$one" --impl flex,flex-autotune --out "$W/flexat.csv" >"$W/flexat.log" 2>&1
echo "flexat rc=$? t=$SECONDS"
cut -d, -f3,5,14,15,16,23,24,34,35,36 "$W/ours.csv" "$W/ours-nogate.csv" "$W/vendors.csv" "$W/flexat.csv" | column -s, -t | cut -c1-200
tar czf "${OUT:-/tmp/out}/p1.tgz" -C "${OUT:-/tmp/out}" p1
echo "total t=$SECONDS"
