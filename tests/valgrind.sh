#!/usr/bin/env bash
# valgrind memcheck over a smoke run of fabench on the first OpenCL device: any invalid
# access, use of uninitialised memory or definite leak in fabench fails it.
set -u
fab=${1:-build/fabench}
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)"; exit 2; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
printf 'name,batch,hq,hkv,sq,skv,d,causal\na,1,4,1,7,40,32,1\nb,1,2,2,33,33,64,0\n' > "$T/s.csv"
valgrind --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite \
    --suppressions=tests/valgrind.supp --log-file="$T/vg.log" \
    "$fab" run --device opencl:0 --shapes "$T/s.csv" --budget 0.01 --warmup 0 --min-reps 1 --out "$T/p.csv" --quiet
rc=$?
grep -E "ERROR SUMMARY|definitely lost" "$T/vg.log"
if [ $rc -ne 0 ]; then cat "$T/vg.log"; echo "valgrind: errors (exit $rc)"; exit 1; fi
echo "valgrind: clean"
