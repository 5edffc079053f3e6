#!/bin/bash
# faults-gpu.sh: verification on the GPU (issue 44): the device reference against the CPU's
# (test_refdev), and the localized faults at the reference shape's full size, B=4 H=32 S=4096
# d=128 bf16: one block zeroed, the last key tile skipped in one block, one head wrong, each
# caught, with the time of the full check (test_faults_local test_reference_shape).
set -u
source .deps/unpack-debs.sh
export FABENCH_CACHE=$PWD/build/kcache
make -j16 all build/tests/test_refdev build/tests/test_faults_local >/dev/null 2>&1 || { make all 2>&1 | tail; exit 1; }
mkdir -p "${OUT:-/tmp/out}"
FABENCH_TEST_DEVICE=cuda:0 timeout 200 build/tests/test_refdev 2>&1 | tee "${OUT:-/tmp/out}/refdev.log" | tail -n 5
FABENCH_TEST_DEVICE=cuda:0 FABENCH_TEST_FILTER=test_reference_shape timeout 300 build/tests/test_faults_local 2>&1 |
    tee "${OUT:-/tmp/out}/faults-local.log" | tail -n 12
