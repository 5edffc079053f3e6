#!/usr/bin/env bash
# tune_multi.sh: `fabench tune --device A,B` (bench/tune/tune_multi.c) on PoCL, with two worker
# processes on the one OpenCL device: every class tuned once, by one worker, into one
# explored.csv and tuning.csv; run again, nothing lost or doubled; a folder of workers left
# by a cut-short run merged first; bad input exits 2 with nothing written. One line per
# check, then "N passed, N failed".
set -u
cd "$(dirname "$0")/.." || exit 1
FB=${FABENCH:-$PWD/build/fabench}
T=$(mktemp -d "${TMPDIR:-/tmp}/fabench-tunemulti.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
check() { if eval "$2"; then echo "ok - $1"; pass=$((pass+1)); else echo "FAIL - $1"; fail=$((fail+1)); fi; }
if ! "$FB" devices --list 2>/dev/null | grep -q '^opencl:0'; then
    echo "skip - tune --device A,B: no opencl:0 here (PoCL: pocl-opencl-icd)"
    echo "0 passed, 0 failed"; exit 0
fi

# four shape classes, two candidates each: the workers share them out
printf 'name,batch,hq,hkv,sq,skv,d,causal\na,1,2,2,64,64,64,1\nb,1,2,2,129,129,128,0\nc,1,4,1,1,257,64,1\nd,1,4,2,33,129,64,1\n' >"$T/s.csv"
tune() { "$FB" tune --shapes "$T/s.csv" --strategy random --candidates 2 "$@"; }
R=$T/r
tune --device opencl:0,opencl:0 --results "$R" >"$T/log" 2>&1; rc=$?
# class column of a CSV file, one line per row
classes() { awk -F, -v col="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next } { print $c }' "$1"; }
check "two workers on opencl:0: exit 0, each started" \
      "[ $rc -eq 0 ] && grep -q 'worker 0 on opencl:0' '$T/log' && grep -q 'worker 1 on opencl:0' '$T/log'"
[ $rc -eq 0 ] || tail -20 "$T/log"
n0=$(sed -n 's/.*worker 0 tuned \([0-9]*\) class.*/\1/p' "$T/log"); n1=$(sed -n 's/.*worker 1 tuned \([0-9]*\) class.*/\1/p' "$T/log")
check "the four classes shared out, each taken by one worker ($n0 + $n1)" "[ $(( ${n0:-0} + ${n1:-0} )) -eq 4 ]"
check "tuning.csv: one row for each of the four classes" \
      "[ \$(classes '$R/tuning.csv' shape_class | sort -u | wc -l) -eq 4 ] && [ \$(classes '$R/tuning.csv' shape_class | wc -l) -eq 4 ]"
check "explored.csv: every class's rows (at least the two candidates each), no row twice" \
      "[ \$(classes '$R/explored.csv' shape_class | sort | uniq -c | awk '\$1 >= 2' | wc -l) -eq 4 ] &&
       [ \$(sort '$R/explored.csv' | uniq -d | wc -l) -eq 0 ]"
check "the workers' folders are gone, the manifest records the command" \
      "[ ! -e '$R/tune-workers' ] && grep -q 'opencl:0,opencl:0' '$R/manifest.csv'"
"$FB" check-results --quiet "$R" >"$T/ck" 2>&1
check "check-results: clean" "grep -q ' 0 problems' '$T/ck'"
rows=$(wc -l <"$R/explored.csv")

tune --device opencl:0,opencl:0 --results "$R" >"$T/log2" 2>&1; rc=$?
check "the same command again: exit 0, resumed (no new candidates), explored.csv as long as before" \
      "[ $rc -eq 0 ] && [ \$(wc -l <'$R/explored.csv') -eq $rows ] && [ \$(classes '$R/tuning.csv' shape_class | wc -l) -eq 4 ]"

# a cut-short multi-device tune (its parent killed before the merge): worker 0's folder
# holds a row of one class more, claimed by it
mkdir -p "$R/tune-workers/w0"
cp "$R/explored.csv" "$R/tuning.csv" "$R/tune-workers/w0/"
cls=$(classes "$R/tuning.csv" shape_class | head -1)
gpu=$(classes "$R/tuning.csv" gpu | head -1)
awk -F, -v c="$cls" 'NR > 1 && $5 == c { print; exit }' "$R/explored.csv" | sed 's/;KPAD=1/;KPAD=1;LEFTOVER=1/' >>"$R/tune-workers/w0/explored.csv"
printf '0\t%s\topencl\t%s\n' "$gpu" "$cls" >"$R/tune-workers/claims"
tune --device opencl:0,opencl:0 --results "$R" >"$T/log3" 2>&1; rc=$?
check "a cut-short run's workers merged first: their extra row kept, the other classes' rows too" \
      "[ $rc -eq 0 ] && grep -q \"an earlier run's workers\" '$T/log3' && [ \$(grep -c 'LEFTOVER=1' '$R/explored.csv') -eq 1 ] &&
       [ \$(wc -l <'$R/explored.csv') -eq $((rows + 1)) ]"

# bad input: nothing written
tune --device opencl:0,opencl:0 --shapes "$T/none.csv" --results "$T/bad" >"$T/log4" 2>&1; rc=$?
check "a missing shapes file: exit 2, no folder left" "[ $rc -eq 2 ] && [ ! -e '$T/bad' ]"
tune --device opencl:0,nosuch:9 --results "$T/bad" >"$T/log5" 2>&1; rc=$?
check "an unknown device among them: exit 2 naming it, nothing written" \
      "[ $rc -eq 2 ] && grep -q \"nosuch:9\" '$T/log5' && [ ! -e '$T/bad' ]"
tune --device opencl:0,,opencl:0 --results "$T/bad" >"$T/log6" 2>&1; rc=$?
check "an empty selector: exit 2" "[ $rc -eq 2 ] && [ ! -e '$T/bad' ]"
if POCL_DEVICES="pthread basic" "$FB" devices --list 2>/dev/null | grep -q '^opencl:1'; then
    POCL_DEVICES="pthread basic" "$FB" tune --shapes "$T/s.csv" --device opencl:0,opencl:1 --results "$T/bad" >"$T/log7" 2>&1; rc=$?
    check "two device models: exit 2, one tune per GPU model" "[ $rc -eq 2 ] && grep -q 'one tune per GPU model' '$T/log7' && [ ! -e '$T/bad' ]"
else
    echo "skip - tune on two device models: PoCL offers no second device (POCL_DEVICES='pthread basic')"
fi
"$FB" tune --device opencl:0 --shapes "$T/s.csv" --worker-id 1 --results "$T/bad" >/dev/null 2>"$T/log8"; rc=$?
check "--worker-id without --worker-claims: exit 2" "[ $rc -eq 2 ] && grep -q 'go together' '$T/log8'"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
