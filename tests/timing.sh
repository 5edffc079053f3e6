#!/usr/bin/env bash
# timing.sh: the timing protocol as the command line sees it, on opencl:0 (PoCL): how a row
# was timed (timer, batch_runs, launch_us) and which run it came from (run_id, utc) are in
# perf.csv; FABENCH_RUN_ID is shared and checked; FABENCH_TIMER picks the mode and a bad one
# is refused; --timeout is per launch, not per batch. Run from the repository root after
# `make`: bash tests/timing.sh. One line per check, then "N passed, N failed".
set -u
cd "$(dirname "$0")/.." || exit 1
FB=${FABENCH:-$PWD/build/fabench}
T=$(mktemp -d "${TMPDIR:-/tmp}/fabench-timing.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; shift; for l in "$@"; do echo "#   $l"; done; }

# col FILE NAME ROW: field NAME of data row ROW (1-based) of a perf.csv without quoted commas
col() { awk -F, -v name="$2" -v row="$3" 'NR==1{for(i=1;i<=NF;i++) if($i==name) c=i} NR==row+1{print $c}' "$1"; }

cat >"$T/two.csv" <<'SHAPES'
name,batch,hq,hkv,sq,skv,d,causal
t-small,1,2,2,64,64,64,1
t-decode,2,4,1,1,300,64,1
SHAPES

FABENCH_RUN_ID=pass-1 "$FB" run --device opencl:0 --shapes "$T/two.csv" --out "$T/perf.csv" --budget 0.05 --quiet
rc=$?
for r in 1 2; do
    timer=$(col "$T/perf.csv" timer $r) runs=$(col "$T/perf.csv" batch_runs $r) launch=$(col "$T/perf.csv" launch_us $r)
    id=$(col "$T/perf.csv" run_id $r) utc=$(col "$T/perf.csv" utc $r)
    if [ $rc -eq 0 ] && [ "$timer" = gated ] && [ "${runs:-0}" -ge 1 ] && awk -v l="$launch" 'BEGIN{exit !(l > 0)}' &&
        [ "$id" = pass-1 ] && [[ "$utc" =~ ^20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-9:]{8}Z$ ]]; then
        ok "row $r: timer $timer, $runs runs a sample, launch_us $launch, run_id $id, utc $utc"
    else
        bad "row $r says how and when it was timed" "rc=$rc timer=$timer batch_runs=$runs launch_us=$launch run_id=$id utc=$utc"
    fi
done

# the manifest names the run too: run_id (versus --markdown finds a run's commit by it) and
# the command's own run.run_id
FABENCH_RUN_ID=pass-2 "$FB" run --device opencl:0 --shapes "$T/two.csv" --out "$T/m-perf.csv" --budget 0.02 --quiet \
    --manifest "$T/manifest.csv"
if grep -qx 'run_id,pass-2' "$T/manifest.csv" && grep -qx 'run\.run_id,pass-2' "$T/manifest.csv"; then
    ok "the manifest records the run id: run_id and run.run_id"
else bad "the manifest records the run id" "$(grep run_id "$T/manifest.csv")"; fi

# without FABENCH_RUN_ID every process names its own run
"$FB" run --device opencl:0 --shapes "$T/two.csv" --out "$T/a.csv" --budget 0.02 --quiet
"$FB" run --device opencl:0 --shapes "$T/two.csv" --out "$T/b.csv" --budget 0.02 --quiet
a=$(col "$T/a.csv" run_id 1) a2=$(col "$T/a.csv" run_id 2) b=$(col "$T/b.csv" run_id 1)
if [ -n "$a" ] && [ "$a" = "$a2" ] && [ "$a" != "$b" ]; then ok "one run id a process, another the next ($a, $b)"
else bad "one run id a process" "a=$a a2=$a2 b=$b"; fi

# FABENCH_TIMER=queue: no gate; the mode goes in the row
FABENCH_TIMER=queue "$FB" run --device opencl:0 --shapes "$T/two.csv" --out "$T/q.csv" --budget 0.02 --quiet
[ "$(col "$T/q.csv" timer 1)" = queue ] && ok "FABENCH_TIMER=queue: timer queue" || bad "FABENCH_TIMER=queue" "$(col "$T/q.csv" timer 1)"

# bad environment: exit 2 before any work, nothing written
for env in FABENCH_TIMER=sometimes "FABENCH_RUN_ID=two words" FABENCH_RUN_ID=; do
    env "$env" "$FB" run --device opencl:0 --shapes "$T/two.csv" --out "$T/never.csv" --quiet 2>"$T/err"
    rc=$?
    if [ $rc -eq 2 ] && [ ! -e "$T/never.csv" ] && grep -q "${env%%=*}" "$T/err"; then ok "$env: exit 2, named, nothing written"
    else bad "$env refused" "rc=$rc $(head -c 200 "$T/err")"; fi
done

# --timeout is per launch: a shape of about 0.2 s a launch on PoCL times fine with --timeout 1.2,
# where a batch of several launches held to one timeout would not
cat >"$T/slow.csv" <<'SHAPES'
name,batch,hq,hkv,sq,skv,d,causal
t-slow,1,4,4,512,512,128,0
SHAPES
"$FB" run --device opencl:0 --shapes "$T/slow.csv" --out "$T/slow-perf.csv" --timeout 1.2 --budget 0.1 --warmup 0.01 --quiet
rc=$? st=$(col "$T/slow-perf.csv" status 1) us=$(col "$T/slow-perf.csv" median_us 1)
if [ $rc -eq 0 ] && [ "$st" = ok ]; then ok "--timeout 1.2 on a ${us%.*}-us launch: ok"
else bad "--timeout is per launch" "rc=$rc status=$st median_us=$us $(col "$T/slow-perf.csv" reason 1)"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
