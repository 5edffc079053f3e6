#!/usr/bin/env bash
# Injected faults, each run through the real binary on the first OpenCL device: a kernel
# that never finishes, one that writes out of bounds, one that fails to compile, one that is
# wrong in one block or one head only, a missing OpenCL driver, an unwritable or full
# results folder, SIGINT and SIGKILL in the middle of `tune` and `run`. Each must give a
# clear status, stop or go on cleanly, resume, and leave no results file truncated.
# tests/README.md lists them. Last line: "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
fab=$PWD/build/fabench
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
pass=0; fail=0
check() { if eval "$2"; then echo "ok - $1"; pass=$((pass+1)); else echo "FAIL - $1"; fail=$((fail+1)); fi; }
# a CSV file parses, every row has as many fields as the header, and it has at least N rows
csv_ok() { python3 - "$1" "$2" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
ok = len(rows) >= 1 and all(len(r) == len(rows[0]) for r in rows) and len(rows) - 1 >= int(sys.argv[2])
sys.exit(0 if ok else 1)
PY
}
col() { python3 -c "import csv,sys; print('\n'.join(r[sys.argv[2]] for r in csv.DictReader(open(sys.argv[1]))))" "$1" "$2" 2>/dev/null; }
pairs() { python3 -c "import csv,sys; print('\n'.join(r['shape_class'] + ' ' + r['config'] for r in csv.DictReader(open(sys.argv[1]))))" "$1"; }

printf 'name,batch,hq,hkv,sq,skv,d,causal\na,1,2,2,33,70,64,0\nb,1,2,1,7,40,32,1\n' > "$T/s.csv"
common=(--device opencl:0 --shapes "$T/s.csv" --budget 0.01 --warmup 0 --min-reps 1)

# 1. a kernel that never finishes: a timeout row, then the device is not trusted; the process ends
start=$(date +%s)
timeout 120 $fab run "${common[@]}" --config FAULT_HANG=1 --timeout 3 --out "$T/hang.csv" --quiet; rc=$?
check "hanging kernel: exit 1, not killed by the outer timeout" "[ $rc -eq 1 ]"
check "hanging kernel: the first row is a timeout with its reason" "[ \"\$(col $T/hang.csv status | head -1)\" = timeout ] && col $T/hang.csv reason | head -1 | grep -q 'did not finish within 3.0 s'"
check "hanging kernel: the next row says the device is unusable" "col $T/hang.csv reason | tail -1 | grep -q 'device unusable'"
check "hanging kernel: the run ended within a minute" "[ \$(( \$(date +%s) - start )) -lt 60 ]"

# 2. out-of-bounds writes are caught by the guard band after O
$fab run "${common[@]}" --config FAULT_OOB=1 --out "$T/oob.csv" --quiet; rc=$?
check "out-of-bounds kernel: exit 1" "[ $rc -eq 1 ]"
check "out-of-bounds kernel: wrong_result, 'wrote past the end of O'" "[ \"\$(col $T/oob.csv status | sort -u)\" = wrong_result ] && col $T/oob.csv reason | grep -q 'past the end of O'"

# 3. a kernel that does not compile: compile_error with the compiler's message
$fab run "${common[@]}" --config FAULT_COMPILE=1 --out "$T/cc.csv" --quiet; rc=$?
check "broken kernel source: exit 1, compile_error rows naming the #error" "[ $rc -eq 1 ] && [ \"\$(col $T/cc.csv status | sort -u)\" = compile_error ] && col $T/cc.csv reason | grep -q 'deliberately broken'"

# 4. a runtime whose driver is missing: reported absent with the reason; a run says so, exit 2
OCL_ICD_VENDORS=$T/none OCL_ICD_FILENAMES= $fab devices > "$T/dev.txt" 2>&1
check "no OpenCL driver: devices reports opencl absent with a reason" "grep -q 'opencl *absent: .*no OpenCL platform' $T/dev.txt"
OCL_ICD_VENDORS=$T/none OCL_ICD_FILENAMES= $fab run "${common[@]}" --out "$T/x.csv" 2> "$T/err"; rc=$?
check "no OpenCL driver: run exits 2 before any work, saying why" "[ $rc -eq 2 ] && grep -q 'absent' $T/err && [ ! -e $T/x.csv ]"

# 5. a results folder that cannot be written: exit 2 before any work
$fab run "${common[@]}" --out /proc/fabench-perf.csv 2> "$T/err"; rc=$?
check "unwritable results folder: exit 2 before any work, naming the file" "[ $rc -eq 2 ] && grep -q 'fabench-perf.csv' $T/err"

# 6. a full disk in the middle of a run: the file keeps every row written before the disk
#    filled, whole; no temp file stays
$fab run "${common[@]}" --out "$T/full.csv" --quiet
cp "$T/full.csv" "$T/full.before"
( trap '' XFSZ; ulimit -f 1; exec $fab run "${common[@]}" --out "$T/full.csv" --append --quiet ) 2> "$T/err"; rc=$?
check "disk full: the run fails" "[ $rc -ne 0 ]"
check "disk full: the results file is whole and keeps the earlier rows" "csv_ok $T/full.csv 2 && head -c \$(wc -c < $T/full.before) $T/full.csv | cmp -s - $T/full.before"
check "disk full: the error names the file and says it was not changed" "grep -q 'File too large (the file was not changed)' $T/err"
check "disk full: no temp file left behind" "[ -z \"\$(ls $T | grep tmp)\" ]"

# 7. SIGINT in the middle of tune: finished rows kept, exit 130, the same command resumes
tune=(tune --device opencl:0 --shapes "$T/s.csv" --results "$T/tr" --strategy random --candidates 12 --rep-budget 0.01 --seed 3 --quiet)
$fab "${tune[@]:0:${#tune[@]}-1}" 2> "$T/tune-int.err" & pid=$!  # without --quiet: its summary
for _ in $(seq 600); do [ -f "$T/tr/explored.csv" ] && [ "$(wc -l < "$T/tr/explored.csv")" -ge 3 ] && break; sleep 0.1; done
kill -INT $pid; wait $pid; rc=$?
n1=$(($(wc -l < "$T/tr/explored.csv") - 1))
check "SIGINT in tune: exit 130" "[ $rc -eq 130 ]"
check "SIGINT in tune: the summary counts the classes finished (N of 2)" "grep -q 'fabench tune: [01] of 2 classes in' $T/tune-int.err && grep -q 'interrupted' $T/tune-int.err"
check "SIGINT in tune: explored.csv whole, with the finished rows ($n1)" "csv_ok $T/tr/explored.csv 2"
$fab "${tune[@]}"; rc=$?
n2=$(($(wc -l < "$T/tr/explored.csv") - 1))
dups=$(pairs "$T/tr/explored.csv" | sort | uniq -d | wc -l)
check "SIGINT in tune: rerun resumes to 24 rows without repeating one" "[ $rc -eq 0 ] && [ $n2 -eq 24 ] && [ $dups -eq 0 ]"

# 8. SIGINT in the middle of run: the finished rows are kept, exit 130
$fab run --device opencl:0 --suite smoke --budget 0.2 --out "$T/i.csv" --quiet & pid=$!
for _ in $(seq 600); do [ -f "$T/i.csv" ] && [ "$(wc -l < "$T/i.csv")" -ge 2 ] && break; sleep 0.1; done
kill -INT $pid; wait $pid; rc=$?
check "SIGINT in run: exit 130 (or 0 if it had just finished)" "[ $rc -eq 130 ] || [ $rc -eq 0 ]"
check "SIGINT in run: perf.csv whole with the finished rows" "csv_ok $T/i.csv 1"

# 9. SIGKILL in the middle of run and tune: every file left behind is whole
$fab run --device opencl:0 --suite smoke --budget 0.2 --out "$T/k.csv" --quiet & pid=$!
for _ in $(seq 600); do [ -f "$T/k.csv" ] && [ "$(wc -l < "$T/k.csv")" -ge 2 ] && break; sleep 0.1; done
kill -KILL $pid; wait $pid 2>/dev/null
check "SIGKILL in run: perf.csv whole (every row complete)" "csv_ok $T/k.csv 1"
$fab tune --device opencl:0 --shapes "$T/s.csv" --results "$T/tk" --strategy random --candidates 12 --rep-budget 0.01 --quiet & pid=$!
for _ in $(seq 600); do [ -f "$T/tk/explored.csv" ] && [ "$(wc -l < "$T/tk/explored.csv")" -ge 3 ] && break; sleep 0.1; done
kill -KILL $pid; wait $pid 2>/dev/null
check "SIGKILL in tune: explored.csv whole" "csv_ok $T/tk/explored.csv 2"
$fab tune --device opencl:0 --shapes "$T/s.csv" --results "$T/tk" --strategy random --candidates 12 --rep-budget 0.01 --quiet; rc=$?
check "SIGKILL in tune: the same command resumes and finishes" "[ $rc -eq 0 ] && csv_ok $T/tk/explored.csv 24"

# 9. tune isolates candidates: one that crashes the process, one that hangs the device; each
# is recorded, tuning goes on in a fresh child process and finishes the class
printf 'name,batch,hq,hkv,sq,skv,d,causal\ntiny,1,2,2,33,65,64,0\n' > "$T/one.csv"
iso=(tune --device opencl:0 --shapes "$T/one.csv" --strategy random --candidates 6 --rep-budget 0.01 --seed 1 --quiet)
victim=$($fab "${iso[@]}" --results "$T/iso0" >/dev/null 2>&1; col "$T/iso0/explored.csv" config | sed -n 2p)
FABENCH_TEST_CRASH_CONFIG="$victim" timeout 300 $fab "${iso[@]}" --results "$T/iso1" 2> "$T/iso1.err"; rc=$?
check "tune, a candidate crashes the process: exit 0, all 6 rows" "[ $rc -eq 0 ] && csv_ok $T/iso1/explored.csv 6 && [ \$(($(wc -l < $T/iso1/explored.csv) - 1)) -eq 6 ]"
check "tune, a candidate crashes the process: its row is launch_error naming the signal" \
    "grep -F \"$victim\" $T/iso1/explored.csv | grep -q 'launch_error,the tuning process died (Segmentation fault)'"
check "tune, a candidate crashes the process: a winner in tuning.csv" "csv_ok $T/iso1/tuning.csv 1"
FABENCH_TEST_HANG_CONFIG="$victim" timeout 300 $fab "${iso[@]}" --timeout 2 --results "$T/iso2" 2> "$T/iso2.err"; rc=$?
check "tune, a candidate hangs the device: exit 0, all 6 rows" "[ $rc -eq 0 ] && [ \$(($(wc -l < $T/iso2/explored.csv) - 1)) -eq 6 ]"
check "tune, a candidate hangs the device: its row is a timeout, the others ok" \
    "[ \"\$(grep -F \"$victim\" $T/iso2/explored.csv | grep -c ',timeout,')\" = 1 ] && [ \"\$(col $T/iso2/explored.csv status | grep -c '^ok$')\" = 5 ]"
check "tune, a candidate hangs the device: the restart is reported" "grep -q 'the device hung, or a kernel fault left it unusable; tuning went on in a fresh process' $T/iso2.err"

# 10. a crash while halving times a survivor again: that row becomes the crash, its earlier
# timing gone (reps, sm_mhz cleared), its compile time kept; the folder stays valid
hv=(tune --device opencl:0 --shapes "$T/one.csv" --strategy halving --candidates 8 --rep-budget 0.01 --seed 1 --quiet)
FABENCH_TEST_CRASH_RETIME="$T/hv.crashed" timeout 300 $fab "${hv[@]}" --results "$T/hv1" 2> "$T/hv1.err"; rc=$?
check "halving, a crash while timing a survivor again: exit 0, one row is the crash with no timing left" \
    "[ -e $T/hv.crashed ] && [ $rc -eq 0 ] && python3 -c \"
import csv, sys
r = [x for x in csv.DictReader(open(sys.argv[1])) if x['status'] == 'launch_error']
ok = len(r) == 1 and 'Segmentation fault' in r[0]['reason'] and r[0]['median_us'] == r[0]['tflops'] == r[0]['reps'] == \\
     r[0]['sm_mhz'] == '' and r[0]['compile_ms'] != ''
sys.exit(0 if ok else 1)\" $T/hv1/explored.csv"
mkdir -p "$T/hvc/x" && cp "$T/hv1/explored.csv" "$T/hvc/x/"
check "halving, a crash while timing a survivor again: check-results finds nothing wrong in explored.csv" \
    "! $fab check-results $T/hvc/x 2>&1 | grep -q 'explored.csv:'"

# 11. the head-to-head of a tune that resumes an earlier run's rows (--merge): a contender
# that fails in any round is out, its row says why, and when none verifies nothing is
# written, and tuning.csv's row goes if its configuration failed (a wrong kernel never wins)
hh=(tune --device opencl:0 --shapes "$T/one.csv" --strategy random --candidates 12 --rep-budget 0.01 --seed 1 --merge --quiet)
won=$(col "$T/iso0/tuning.csv" config | head -n 1)
cp -r "$T/iso0" "$T/hh1"
FABENCH_TEST_WRONG_REMATCH="$won" FABENCH_TEST_WRONG_REMATCH_ROUND=1 $fab "${hh[@]}" --results "$T/hh1" 2> "$T/hh1.err"; rc=$?
check "head-to-head, the winner goes wrong in its second round: it loses, tuning.csv names another" \
    "[ $rc -eq 0 ] && [ \"\$(col $T/hh1/tuning.csv config | head -n 1)\" != \"$won\" ] && csv_ok $T/hh1/tuning.csv 1"
check "head-to-head, the winner goes wrong: its explored row is wrong_result, timed again" \
    "grep -F \"$won\" $T/hh1/explored.csv | grep -q 'wrong_result,\"timed again beside the other contenders: '"
cp -r "$T/iso0" "$T/hh2"
FABENCH_TEST_WRONG_REMATCH="MMA=" $fab "${hh[@]}" --results "$T/hh2" 2> "$T/hh2.err"; rc=$?
check "head-to-head, no contender verifies: nothing written for it, tuning.csv's failed row removed, said so" \
    "[ $rc -eq 0 ] && grep -q 'no contender verified when timed again' $T/hh2.err && grep -q 'its row is removed' $T/hh2.err && \
     ! grep -q 'bf16-d64' $T/hh2/tuning.csv"
mkdir -p "$T/hh2c" && cp "$T/hh2/tuning.csv" "$T/hh2/explored.csv" "$T/hh2c/"
check "head-to-head, no contender verifies: check-results finds no tuning row without an ok explored row" \
    "! $fab check-results $T/hh2c 2>&1 | grep -q 'tuning.csv:[0-9]'"

# 12. faults in one place (tests/test_faults_local.c sweeps seeds and tile paths): one block
# of rows written as zeros, one block's last key tile skipped, one head's scale wrong; the
# middle block (rows 256..319 of 512 at BLOCK_M=64) of the middle group (h=4 of 8). Every
# element is checked, so each is a wrong_result naming an element there; the same run
# without a hook is ok
printf 'name,batch,hq,hkv,sq,skv,d,causal,dtype\nloc,1,8,8,512,512,64,0,bf16\nlocc,1,8,2,512,512,64,1,bf16\n' > "$T/loc.csv"
loc=(run --device opencl:0 --shapes "$T/loc.csv" --verify-only --quiet)
$fab "${loc[@]}" --config MMA=fma,BLOCK_M=64 --out "$T/loc-ok.csv"; rc=$?
check "localized faults: the clean kernel passes both shapes" "[ $rc -eq 0 ] && [ \"\$(col $T/loc-ok.csv status | sort -u)\" = ok ]"
for hook in FAULT_ZERO_BLOCK FAULT_SKIP_BLOCK_TILE FAULT_HEAD_SCALE; do
    $fab "${loc[@]}" --config MMA=fma,BLOCK_M=64,$hook=1 --out "$T/loc-$hook.csv"; rc=$?
    check "localized faults: $hook is a wrong_result on both shapes, its worst element in head 4" \
        "[ $rc -eq 1 ] && [ \"\$(col $T/loc-$hook.csv status | sort -u)\" = wrong_result ] && \
         [ \"\$(col $T/loc-$hook.csv reason | grep -c ' at b=0 h=4 i=')\" = 2 ]"
done
check "localized faults: the zero block's worst element is a zero in rows 256..319" \
    "[ \"\$(col $T/loc-FAULT_ZERO_BLOCK.csv reason | grep -cE 'at b=0 h=4 i=(25[6-9]|2[6-9][0-9]|30[0-9]|31[0-9]) d=[0-9]+ \\(got 0,')\" = 2 ]"
check "localized faults: the skipped tile's worst element is in rows 256..319" \
    "[ \"\$(col $T/loc-FAULT_SKIP_BLOCK_TILE.csv reason | grep -cE 'at b=0 h=4 i=(25[6-9]|2[6-9][0-9]|30[0-9]|31[0-9]) ')\" = 2 ]"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
