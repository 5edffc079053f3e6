#!/bin/bash
# Device probe 2 (issue 44): the graph-replay timer. tools/crosscheck.sh on p1's nine shapes
# (ours --tuned, torch and cuDNN; CUDA-graph replay; ncu on the first three), then ours with
# FABENCH_TIMER=gated on the same shapes for the A/B of graph and gate.
set -u
source .deps/unpack-debs.sh
W=${OUT:-/tmp/out}/p2; mkdir -p "$W"
export FABENCH_CACHE=$PWD/build/kcache PYTHONUNBUFFERED=1
make -j16 all >"$W/build.log" 2>&1 || { tail -n 20 "$W/build.log"; exit 1; }
S=$W/shapes.csv
{ head -n 1 tools/crosscheck/shapes.csv
  grep -E '^(user-b4|decode-h32kv8-b1-s512|llama3-8b-decode-b16-s1024|llama3.2-1b-decode-b16|ref-b4-h32-s4096-d128,|llama3-8b-prefill-b1|paper-h32kv32-b1-s16|ragged-tiny|llama3-8b-paged16-decode)' tools/crosscheck/shapes.csv
} >"$S"
IMPLS=torch-flash,torch-efficient,torch-cudnn,flex,cudnn NCU_SHAPES=3 NEED=1 timeout 420 bash tools/crosscheck.sh cuda:0 "$W/cc" "$S"
echo "crosscheck rc=$? t=$SECONDS"
FABENCH_TIMER=gated timeout 60 build/fabench run --device cuda:0 --shapes "$S" --tuned --out "$W/ours-gated.csv" >"$W/ours-gated.log" 2>&1
echo "gated rc=$? t=$SECONDS"
cut -d, -f1-9 "$W/cc/crosscheck.csv"
tar czf "${OUT:-/tmp/out}/p2.tgz" -C "${OUT:-/tmp/out}" p2 && rm -rf "$W"
echo "total t=$SECONDS"
