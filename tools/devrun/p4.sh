#!/bin/bash
# Device run 4 (issue 44): the crosscheck finished. (1) p3's folder carried back as build/cc3:
# ncu again on ours and cuDNN, each with its row's batch of runs and cuDNN with its row's engine
# config (p3 sized the batch under the profiler, to one run). (2) ten more shapes without GQA
# (tools/crosscheck/shapes-mha.csv), so that torch-efficient, which takes no GQA, has twenty,
# measured and checked the same way into build/cc4. (3) the report over both.
set -u
source .deps/unpack-debs.sh
export FABENCH_CACHE=$PWD/build/kcache PYTHONUNBUFFERED=1
make -j16 all >/dev/null 2>&1 || { make all 2>&1 | tail -n 20; exit 1; }
rm -rf build/cc3/ncu build/cc3/ncu.csv
RESUME=1 IMPLS=torch-flash,torch-efficient,torch-cudnn,flex,cudnn NCU_UNTIL=230 NCU_IMPLS=cudnn,portable NEED=1 \
    timeout 290 bash tools/crosscheck.sh cuda:0 build/cc3 | tail -n 8
echo "cc3 t=$SECONDS"
IMPLS=torch-flash,torch-efficient,torch-cudnn,flex,cudnn NCU_UNTIL=$((540 - SECONDS)) NCU_IMPLS=cudnn,portable NEED=1 \
    timeout $((575 - SECONDS)) bash tools/crosscheck.sh cuda:0 build/cc4 tools/crosscheck/shapes-mha.csv | tail -n 8
echo "cc4 t=$SECONDS"
checks=(); for c in build/cc3/graph.csv build/cc3/ncu.csv build/cc4/graph.csv build/cc4/ncu.csv; do [ -s "$c" ] && checks+=(--check "$c"); done
python3 tools/crosscheck.py report build/cc3/perf.csv build/cc4/perf.csv "${checks[@]}" --out build/crosscheck.csv
cp build/crosscheck.csv build/cc4/both.csv
tar czf "${OUT:-/tmp/out}/p4.tgz" -C build cc3 cc4
echo "total t=$SECONDS"
