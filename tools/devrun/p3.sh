#!/bin/bash
# Device run 3 (issue 44): the whole crosscheck, first part. tools/crosscheck.sh on the 25
# shapes of tools/crosscheck/shapes.csv: ours --tuned, torch-flash, torch-efficient,
# torch-cudnn, flex and cuDNN (every engine config searched) in one run; CUDA-graph replay of
# the torch ones; ncu on ours and cuDNN until 480 s. RESUME=1 goes on from a folder carried
# back (CCDIR=path).
set -u
source .deps/unpack-debs.sh
export FABENCH_CACHE=$PWD/build/kcache PYTHONUNBUFFERED=1
make -j16 all >/dev/null 2>&1 || { make all 2>&1 | tail -n 20; exit 1; }
CCDIR=${CCDIR:-build/cc3}
IMPLS=torch-flash,torch-efficient,torch-cudnn,flex,cudnn NCU_UNTIL=${NCU_UNTIL:-480} NCU_IMPLS=cudnn,portable \
    timeout 570 bash tools/crosscheck.sh cuda:0 "$CCDIR"
echo "crosscheck rc=$? t=$SECONDS"
tar czf "${OUT:-/tmp/out}/p3.tgz" -C "$(dirname "$CCDIR")" "$(basename "$CCDIR")"
echo "total t=$SECONDS"
