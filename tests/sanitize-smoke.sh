#!/usr/bin/env bash
# Under `make sanitize`: the sanitizer build of fabench verifies the smoke suite on the
# first OpenCL device, tunes one class for a few candidates and looks a table up.
set -u
cd "$(dirname "$0")/.."
fab=${FABENCH_BIN:-build/asan/fabench}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
$fab run --device opencl:0 --suite smoke --verify-only --out "$T/p.csv" --quiet || exit 1
printf 'name,batch,hq,hkv,sq,skv,d,causal\na,1,4,1,33,70,64,1\n' > "$T/s.csv"
$fab tune --device opencl:0 --shapes "$T/s.csv" --results "$T/r" --strategy bo --candidates 3 --rep-budget 0.01 --quiet || exit 1
$fab run --device opencl:0 --shapes "$T/s.csv" --tuned --tuning "$T/r/tuning.csv" --out "$T/q.csv" --budget 0.01 --quiet || exit 1
echo "sanitizer smoke: ok"
