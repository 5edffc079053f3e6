#!/usr/bin/env bash
# metrics.sh: `fabench check-results` on a good results folder (tests/data/results/, made by
# fabench on PoCL) and on deliberately broken copies (exit 1, FILE:LINE: field messages), bad
# usage (exit 2); `fabench compare`; `fabench codegen-summary`; the figures of plots/render.sh
# made or skipped. No device work. Prints "N passed, N failed" last.
set -u
cd "$(dirname "$0")/.." || exit 1
FB=${FABENCH:-$PWD/build/fabench}
GOOD=tests/data/results/pthread-haswell-amd-epyc
T=$(mktemp -d "${TMPDIR:-/tmp}/fabench-metrics.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
run() { "$FB" "$@" >"$T/out" 2>"$T/err"; RC=$?; }
# expect NAME RC PATTERN...: after run, exit status RC and each fixed string in stdout+stderr
expect() {
    local name=$1 want=$2 why=(); shift 2
    [ "$RC" -eq "$want" ] || why+=("exit $RC, expected $want")
    for p in "$@"; do grep -qF -- "$p" "$T/out" "$T/err" || why+=("missing '$p'"); done
    if [ ${#why[@]} -eq 0 ]; then ok "$name"; else bad "$name" "${why[@]}" "$(head -c 600 "$T/out")" "$(head -c 300 "$T/err")"; fi
}

# ---------- check-results ----------
run check-results "$GOOD";               expect "check-results: the good folder is clean" 0 "0 problems"
run check-results results;               expect "check-results: every committed results folder is clean" 0 "0 problems"
run check-results;                       expect "check-results without a folder exits 2" 2 "needs a results folder"
run check-results "$T/nope";             expect "check-results on a missing folder exits 2" 2 "is not a folder"
run check-results --bogus "$GOOD";       expect "check-results with an unknown option exits 2" 2 "--bogus"

# broken NAME FILE SED-SCRIPT PATTERN...: a copy of the good folder (named by its GPU slug)
# with FILE edited; check-results must exit 1 and print each PATTERN
broken() {
    local name=$1 file=$2 script=$3; shift 3
    local d="$T/$name/pthread-haswell-amd-epyc"
    rm -rf "$T/$name"; mkdir -p "$T/$name"; cp -r "$GOOD" "$d"
    sed -i "$script" "$d/$file"
    run check-results "$d"
    local pats=(); for p in "$@"; do pats+=("${p//@D@/$d}"); done
    expect "check-results: $name" 1 "${pats[@]}"
}
broken perf-bad-number      perf.csv     '2s/,64,64,64,0,/,64,6x4,64,0,/'         "@D@/perf.csv:2: skv: '6x4' is not an integer"
broken perf-median-nan      perf.csv     '2s/,ok,/,ok,/; 2s/,1,2,2,64,64,64,0,[0-9.]*,/,1,2,2,64,64,64,0,nan,/' "@D@/perf.csv:2: median_us"
broken perf-tflops-edited   perf.csv     '2s/\(,[0-9]*,\)\([0-9.]*\)\(,[0-9.]*,[0-9.e-]*,[0-9.e-]*,ok\)/\10.9999\3/' "@D@/perf.csv:2: tflops"
broken perf-err-too-big     perf.csv     '3s/,\([0-9.e-]*\),\([0-9.e-]*\),ok,/,0.5,\2,ok,/' "@D@/perf.csv:3: max_abs_err: 0.5 exceeds the bf16 tolerance"
broken perf-failed-but-timed perf.csv    '2s/,ok,/,wrong_result,/'                "@D@/perf.csv:2: median_us: a time on a row with status wrong_result" "@D@/perf.csv:2: reason"
broken perf-missing-column  perf.csv     '1s/,status,/,state,/'                    "@D@/perf.csv:1: status: required column missing"
broken perf-duplicate-row   perf.csv     '2p'                                      "@D@/perf.csv:3: gpu: the same"
# a ragged row's lens (the pattern) enters its FLOPs and bytes; a bad pattern is named
broken perf-lens-changes-flops perf.csv '1s/$/,lens/; 2,$s/$/,/; 2s/,$/,0.5/'   "@D@/perf.csv:2: tflops" "@D@/perf.csv:2: gbps"
broken perf-bad-lens        perf.csv     '1s/$/,lens/; 2,$s/$/,/; 3s/,$/,0.2;1.5/' "@D@/perf.csv:3: lens: entry 2, '1.5', is outside (0, 1]"
# the GPU's readings (perf.csv's last columns): NVML's event names, only on timed rows
TEL='1s/$/,sm_mhz,power_w,temp_c,clock_events/; 2,$s/$/,1605,688.3,63,sw_power_cap/'
d="$T/readings/pthread-haswell-amd-epyc"; mkdir -p "$T/readings"; cp -r "$GOOD" "$d"; sed -i "$TEL" "$d/perf.csv"
run check-results "$d";                  expect "check-results: readings of the GPU on timed rows pass" 0 "0 problems"
broken perf-bad-clock-event perf.csv     "$TEL; 2s/,sw_power_cap\$/,sw_power_cap;warm/" "@D@/perf.csv:2: clock_events: 'warm' is not a clock event reason"
broken perf-zero-clock      perf.csv     "$TEL; 3s/,1605,688.3,/,0,688.3,/"      "@D@/perf.csv:3: sm_mhz"
broken perf-reading-untimed perf.csv     "$TEL; 2s/,ok,/,wrong_result,/; 2s/,,default,/,bad,default,/" "@D@/perf.csv:2: sm_mhz: a value on a row that was not timed"
broken explored-bad-class   explored.csv '2s/bf16-d64-c0-g1-q64-k64/bf16-d64-c0-g1-q60-k64/' "@D@/explored.csv:2: shape_class"
broken explored-bad-status  explored.csv '2s/,ok,/,fine,/'                         "@D@/explored.csv:2: status: unknown status 'fine'"
broken tuning-not-explored  tuning.csv   '2s/BLOCK_M=[0-9]*/BLOCK_M=256/'          "@D@/tuning.csv:2: config"
broken codegen-zero-count   codegen.csv  '2s/,[0-9]*,\(ptx\|sass\)$/,0,\1/'        "@D@/codegen.csv:2: count: 0 is below 1"
broken codegen-bad-source   codegen.csv  '3s/,ptx$/,asm/'                          "@D@/codegen.csv:3: source: unknown source 'asm'"
broken compiled-bad-hash    compiled.csv '2s/,[0-9a-f]*$/,XYZ/'                    "@D@/compiled.csv:2: binary_hash"
broken vendor-bad-count     vendor_configs.csv '2s/,3,/,three,/'                   "@D@/vendor_configs.csv:2: configs: 'three' is not an integer"
broken portability-bad-pct  portability.csv '3s/,\([0-9.]*\),\([a-z-]*\),MMA/,150.0,\2,MMA/' "@D@/portability.csv:3: pct"
broken manifest-no-date     manifest.csv '/^date,/d'                               "@D@/manifest.csv:1: date: required key missing"
broken manifest-bad-commit  manifest.csv 's/^git_commit,.*/git_commit,12345/'      "manifest.csv:" "git_commit: '12345' is not a commit of 7 to 40 hex digits"
broken manifest-wrong-gpu   perf.csv     '2s/^pthread-haswell-AMD EPYC,/another gpu,/' "@D@/perf.csv:2: gpu: 'another gpu' is not this folder's GPU"
broken csv-malformed        perf.csv     '2s/^/"/'                                  "@D@/perf.csv:" "csv:"
d="$T/no-manifest/pthread-haswell-amd-epyc"; mkdir -p "$T/no-manifest"; cp -r "$GOOD" "$d"; rm "$d/manifest.csv"
run check-results "$d";                  expect "check-results: a folder without its manifest, saying how to write one" 1 \
    "$d/manifest.csv: manifest: missing" "fabench run --manifest DIR/manifest.csv"
# a user's own run (fabench run --out /tmp/nu/perf.csv --manifest ...) may be named anything;
# under results/ a folder is named by its GPU's slug, and the message says so
mkdir -p "$T/own" "$T/results"; cp -r "$GOOD" "$T/own/nu"; cp -r "$GOOD" "$T/results/nu"
run check-results "$T/own/nu";           expect "check-results: a folder outside results/ with any name is clean" 0 "0 problems"
run check-results "$T/results/nu";       expect "check-results: under results/, a folder not named by its slug says how to name it" 1 \
    "gpu_slug: 'pthread-haswell-amd-epyc' does not name the folder 'results/nu'" "results/pthread-haswell-amd-epyc/"
# a study inside a GPU's folder (results/<slug>/crosscheck/part1) is that GPU's, at any depth;
# a trailing slash names the same folder
s="$T/results/pthread-haswell-amd-epyc/crosscheck/part1"; mkdir -p "$s"; cp -r "$GOOD"/. "$s"
run check-results "$s";                  expect "check-results: a study two folders inside the GPU's folder is clean" 0 "0 problems"
run check-results "$T/results/pthread-haswell-amd-epyc/"; expect "check-results: a trailing slash is the same folder" 0 "0 problems"
run check-results "$T/results/nu/";      expect "check-results: a trailing slash does not hide a misnamed folder" 1 \
    "does not name the folder 'results/nu'"

# tools/rounds.sh's rounds-perf.csv (rows once per round, each round its own run id) is
# checked as a perf.csv against rounds-manifest.csv beside it; repeats only across runs
# rounds_dir NAME SED-SCRIPT: a folder with two rounds of the good rows (run ids r1, r2),
# its rounds-manifest.csv, and SED-SCRIPT applied to its rounds-perf.csv
rounds_dir() {
    local d="$T/$1/pthread-haswell-amd-epyc"
    rm -rf "$T/$1"; mkdir -p "$d"
    { sed 's/\r$//; 1s/$/,run_id/; 2,$s/$/,r1/' "$GOOD/perf.csv"; sed 's/\r$//; 1d; s/$/,r2/' "$GOOD/perf.csv"; } >"$d/rounds-perf.csv"
    cp "$GOOD/manifest.csv" "$d/rounds-manifest.csv"
    sed -i "$2" "$d/rounds-perf.csv"
    run check-results "$d"
    D=$d
}
rounds_dir rounds-good ''
expect "check-results: rounds-perf.csv of two rounds, each its own run, is clean" 0 "0 problems" "2 files in 1 results folder"
if grep -q "rounds-perf.csv: note: not a known" "$T/out"; then bad "check-results: rounds-perf.csv is a known file"; else ok "check-results: rounds-perf.csv is a known file"; fi
rounds_dir rounds-repeat '2p'
expect "check-results: a row repeated within one round's run is a problem" 1 "$D/rounds-perf.csv:3: gpu: the same (gpu, backend, impl, config, name, dtype, batch, run_id) as line 2"
rounds_dir rounds-tflops '4s/\(,[0-9]*,\)\([0-9.]*\)\(,[0-9.]*,[0-9.e-]*,[0-9.e-]*,ok\)/\10.9999\3/'
expect "check-results: rounds-perf.csv's rows by perf.csv's rules (tflops against the shape)" 1 "$D/rounds-perf.csv:4: tflops"
rounds_dir rounds-gpu '5s/^pthread-haswell-AMD EPYC,/another gpu,/'
expect "check-results: rounds-perf.csv's GPU against rounds-manifest.csv's" 1 "$D/rounds-perf.csv:5: gpu: 'another gpu' is not this folder's GPU"
rounds_dir rounds-nomanifest ''; rm "$D/rounds-manifest.csv"; run check-results "$D"
expect "check-results: rounds-perf.csv without rounds-manifest.csv is a problem" 1 "$D/rounds-manifest.csv: manifest: missing"
rounds_dir rounds-old 's/,r[12]$//; 1s/,run_id$//'
expect "check-results: a rounds-perf.csv from before run ids: repeats not checked, a note says so" 0 "0 problems" \
    "no run_id column (written before run ids)"

# ---------- compare ----------
run compare "$GOOD" "$GOOD/perf.csv";    expect "compare: a folder with itself: all same within noise, geomean 1" 0 \
    "1.000 over 2: 0 faster, 0 slower, 2 same within noise"
# rewrite_perf SRC DST: DST is SRC's perf.csv remade by the Python snippet on stdin, which
# sees `rows` (SRC's rows as dicts), `emit(row)` and `scaled(row, k)` (its times times k); a
# column an emitted row adds (run_id) is appended to the header, empty in the rows without it
rewrite_perf() {
    python3 -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
out = []
emit = out.append
def scaled(r, k):
    return dict(r, **{c: "%.3f" % (k * float(r[c])) for c in ("median_us", "p20_us", "p80_us", "min_us")})
exec(sys.stdin.read())
cols = list(rows[0].keys())
for r in out:
    cols += [c for c in r if c not in cols]
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols, restval="", lineterminator="\n")
    w.writeheader()
    w.writerows(out)
' "$1" "$2"
}
mkdir -p "$T/cmp"
# B: the same shapes, each 2x slower
rewrite_perf "$GOOD/perf.csv" "$T/cmp/perf.csv" <<'PY'
for r in rows:
    emit(scaled(r, 2))
PY
run compare "$GOOD" "$T/cmp" --csv "$T/cmp/cmp.csv"
expect "compare: B twice as slow is 'slower', geomean 2.000" 0 "slower" "2.000 over 2: 0 faster, 2 slower"
run compare "$T/cmp" "$GOOD";            expect "compare: the other way round is 'faster', geomean 0.500" 0 "faster" "0.500 over 2: 2 faster"
if [ -f "$T/cmp/cmp.csv" ] && [ "$(grep -c ',slower$' "$T/cmp/cmp.csv")" -eq 2 ]; then ok "compare --csv writes the table"; else bad "compare --csv writes the table"; fi
run compare "$GOOD";                     expect "compare with one argument exits 2" 2 "needs two results"
run compare "$GOOD" "$T/none.csv";       expect "compare with a missing file exits 2 naming it" 2 "$T/none.csv"
printf 'impl,x\nportable,1\n' >"$T/notperf.csv"
run compare "$GOOD" "$T/notperf.csv";    expect "compare with a CSV that is not perf.csv exits 2 naming FILE:1 and the column" 2 "$T/notperf.csv:1: backend: required column missing"

# ---------- versus ----------
run versus "$GOOD";                      expect "versus: a folder with no vendor rows exits 1" 1 "no shape with an ok portable row and an ok vendor row"
mkdir -p "$T/vs"
# vendors beside the portable rows: cudnn 2x the portable time on fx-prefill and 0.5x on
# fx-decode, torch-flash 4x on both, and a failed row that must not count
# (all of one run, run-A; the spreads apart: ours faster than cudnn on fx-prefill, slower on fx-decode)
rewrite_perf "$GOOD/perf.csv" "$T/vs/perf.csv" <<'PY'
for r in rows:
    r = dict(r, run_id="run-A")
    emit(r)
    emit(dict(scaled(r, 2.0 if r["name"] == "fx-prefill" else 0.5), impl="cudnn", config=""))
    emit(dict(scaled(r, 4.0), impl="torch-flash", config=""))
    emit(dict(r, impl="flex", config="", status="wrong", median_us="", p20_us="", p80_us="", min_us=""))
PY
run versus "$T/vs" --csv "$T/vs/vs.csv"
expect "versus: the best vendor per shape, geomeans per vendor, faster / tie / slower beyond the spreads" 0 \
    "geomean speedup over the best vendor per shape: 1.000 over 2 shapes; the portable kernel faster on 1, tied on 0, slower on 1" \
    "geomean speedup over cudnn          1.000 over 2 shapes: faster on 1, tied on 0, slower on 1" \
    "geomean speedup over torch-flash    4.000 over 2 shapes: faster on 2, tied on 0, slower on 0" \
    "pairs: rows of one run (run_id): run-A 2 shapes"
if grep -q "flex" "$T/out"; then bad "versus: a failed vendor row does not count"; else ok "versus: a failed vendor row does not count"; fi
if grep -q "fastest" "$T/out"; then bad "versus: no 'fastest' count (wins need the spreads apart)"; else ok "versus: no 'fastest' count (wins need the spreads apart)"; fi
if [ -f "$T/vs/vs.csv" ] && grep -q "^opencl,fx-prefill,.*,cudnn,.*,2.0000,cudnn=2.000;torch-flash=4.000,,,,,faster,run-A$" "$T/vs/vs.csv"; then
    ok "versus --csv writes the per-shape table, its verdict and run"; else bad "versus --csv writes the per-shape table, its verdict and run" "$(cat "$T/vs/vs.csv" 2>/dev/null)"; fi
# --bandwidth: the decode shapes held against the best ok copy rate of the same GPU; a failed
# row and another GPU's rows do not count. fx-decode made a large decode (B=16, Skv=4096):
# ours 2700 GB/s, cudnn's 2900, against a copy rate of 3000 (90% and 97%)
mkdir -p "$T/vb"
rewrite_perf "$GOOD/perf.csv" "$T/vb/perf.csv" <<'PY'
for r in rows:
    r = dict(r, run_id="run-A")
    if r["name"] == "fx-decode":
        r = dict(r, batch="16", skv="4096", gbps="2700.0")
    emit(r)
    emit(dict(scaled(r, 0.9), impl="cudnn", config="", gbps="2900.0" if r["name"] == "fx-decode" else r["gbps"]))
PY
gpu=$(awk -F, 'NR==2{print $1}' "$GOOD/perf.csv")
cat >"$T/vb/bandwidth.csv" <<CSV
gpu,backend,kernel,gbps,status,run_id
$gpu,opencl,copy,2500.0,ok,bw-1
$gpu,opencl,copy,3000.0,ok,bw-2
$gpu,opencl,copy,3500.0,wrong_result,bw-2
$gpu,opencl,read,3200.0,ok,bw-2
another GPU,opencl,copy,5000.0,ok,bw-3
CSV
run versus "$T/vb" --bandwidth "$T/vb/bandwidth.csv"
expect "versus --bandwidth: decode shapes as a share of the best ok copy rate of the GPU" 0 \
    "share of the copy bandwidth 3000.0 GB/s (read: 3200.0 GB/s;" "run bw-2)" \
    "fx-decode no        2700.0    90%  cudnn              2900.0    97%" \
    "decodes with B >= 16 and Skv >= 4096: ours at 90.0% of the copy bandwidth (geomean), lowest 90.0%; 1 of 1 at 90% or more"
if grep -q "^fx-prefill" <<<"$(sed -n '/memory-bound/,$p' "$T/out")"; then bad "versus --bandwidth: a prefill is not memory-bound"
else ok "versus --bandwidth: a prefill is not listed as memory-bound"; fi
printf 'gpu,backend,kernel,gbps,status,run_id\n%s,opencl,copy,fast,ok,bw-1\n' "$gpu" >"$T/vb/bad-bw.csv"
run versus "$T/vb" --bandwidth "$T/vb/bad-bw.csv"
expect "versus --bandwidth: an ok row whose gbps is not a rate exits 2 naming file, line and field" 2 "bad-bw.csv:2: gbps: 'fast'"
run versus "$T/vb" --bandwidth "$T/vb/perf.csv"
expect "versus --bandwidth: a file without bandwidth.csv's columns exits 2" 2 "perf.csv:1: kernel: required column missing"
run versus --markdown "$T/vb" --bandwidth "$T/vb/bandwidth.csv"
expect "versus --markdown with --bandwidth exits 2" 2 "without --any-run, --csv and --bandwidth"
# a tie: the best vendor's median 5% above ours, the spreads overlapping: 'faster' needs ours'
# p80 below the vendor's p20 (the old count called speedup >= 1 the fastest)
mkdir -p "$T/vt"
rewrite_perf "$GOOD/perf.csv" "$T/vt/perf.csv" <<'PY'
for r in rows:
    r = dict(r, run_id="run-A")
    emit(r)
    emit(dict(scaled(r, 1.05), impl="cudnn", config=""))
PY
run versus "$T/vt"
expect "versus: overlapping spreads are a tie, not a win" 0 \
    "1.050 over 2 shapes; the portable kernel faster on 0, tied on 2, slower on 0" " tie"
# rows of different runs: fx-prefill's cudnn row is of run-A as ours, fx-decode's of run-B
mkdir -p "$T/vx"
rewrite_perf "$GOOD/perf.csv" "$T/vx/perf.csv" <<'PY'
for r in rows:
    emit(dict(r, run_id="run-A"))
    emit(dict(scaled(r, 2.0), impl="cudnn", config="", run_id="run-A" if r["name"] == "fx-prefill" else "run-B"))
PY
run versus "$T/vx"
expect "versus: only rows of one run pair; the shape that would pair across runs is left out, saying how to include it" 0 \
    "2.000 over 1 shape;" "fabench versus: 1 shape left out: ours and the vendors' rows are of different runs" "--any-run"
if grep -q "fx-decode" "$T/out"; then bad "versus: the cross-run shape is not in the table"; else ok "versus: the cross-run shape is not in the table"; fi
run versus --any-run "$T/vx"
expect "versus --any-run: pairs across runs and says how many crossed" 0 \
    "2.000 over 2 shapes;" "--any-run: 1 of 2 shapes paired rows of different runs (or without a run id)"
# compare pairs two results (two runs by nature) and says which runs each side holds
run compare "$T/vx" "$T/vs"
expect "compare: each side's run ids, and a warning for a side of several runs" 0 \
    "   run ids: run-A (3 rows), run-B (1 row)" "   run ids: run-A (8 rows)" \
    "fabench compare: A holds rows of 2 runs (run-A, run-B): they were not all measured together"
if grep -q "B holds" "$T/err"; then bad "compare: no warning for a side of one run"; else ok "compare: no warning for a side of one run"; fi
run compare "$GOOD" "$T/vs"
expect "compare: a side without run ids says so" 0 "   run ids: none (its rows predate run ids)"
# a perf.csv from before run ids (no run_id column): nothing pairs unless --any-run
mkdir -p "$T/vo"; cut -d, -f1-25 "$T/vs/perf.csv" >"$T/vo/perf.csv"
run versus "$T/vo"
expect "versus: rows without run ids do not pair; exit 1 saying --any-run would" 1 "2 shapes left out" "--any-run"
run versus --any-run "$T/vo"
expect "versus --any-run: rows without run ids pair, and are counted as crossing" 0 "1.000 over 2 shapes;" "2 of 2 shapes paired rows of different runs"
# rounds: ours and cudnn in run r1, then again in run r2 (each pairs in its own run); --run picks one
mkdir -p "$T/vr"
rewrite_perf "$GOOD/perf.csv" "$T/vr/perf.csv" <<'PY'
for k, run in ((2.0, "r1"), (0.5, "r2")):
    for r in rows:
        emit(dict(r, run_id=run))
        emit(dict(scaled(r, k), impl="cudnn", config="", run_id=run))
PY
run versus "$T/vr"
expect "versus: rows of two runs each pair within their run" 0 "1.000 over 4 shapes;" "r1 2 shapes, r2 2 shapes" "faster on 2, tied on 0, slower on 2"
run versus --run r2 "$T/vr"
expect "versus --run: only that run's rows" 0 "0.500 over 2 shapes;" "faster on 0, tied on 0, slower on 2"
run versus --run nosuch "$T/vr"
expect "versus --run with a run the file does not hold exits 2 naming its runs" 2 "nosuch" "r1, r2"
# rows with the GPU's readings: the clocks and power of both sides beside each shape
mkdir -p "$T/vsr"; sed "s/\r\$//; $TEL; /,cudnn,/s/,1605,688.3,/,1710,640.5,/" "$T/vs/perf.csv" >"$T/vsr/perf.csv"
run versus "$T/vsr" --csv "$T/vsr/vs.csv"
expect "versus: the SM clocks and power of the portable row and the best vendor's" 0 "SM MHz (portable / vendor), W" \
    " 1605 / 1710   688 / 640" "per SM cycle (each side's time times the SM clock it ran at): geomean 1.065 over 2 shapes"
if grep -q "^opencl,fx-prefill,.*;torch-flash=4.000,1605,1710,688.3,640.5,faster,run-A$" "$T/vsr/vs.csv"; then
    ok "versus --csv: the readings' columns"; else bad "versus --csv: the readings' columns" "$(cat "$T/vsr/vs.csv")"; fi
# a vendor row without readings (an older run's): '-' where a reading would be
mkdir -p "$T/vsn"; sed '/,cudnn,/s/,1710,640.5,63,sw_power_cap$/,,,,/' "$T/vsr/perf.csv" >"$T/vsn/perf.csv"
run versus "$T/vsn"
expect "versus: '-' for the side whose clocks were not read" 0 " 1605 / -      688 / -"
if grep -q "nan" "$T/out"; then bad "versus: no nan printed"; else ok "versus: no nan printed"; fi
# a portable row timed with the L2 flushed against vendor rows timed warm: said on stderr
mkdir -p "$T/vsf"; sed 's/\r$//; 1s/$/,l2_flush/; 2,$s/$/,0/; /,portable,/s/,0$/,1/' "$T/vs/perf.csv" >"$T/vsf/perf.csv"
run versus "$T/vsf"
expect "versus: sides timed with and without the L2 flush are named" 0 "on 2 shapes ours and a vendor were timed one with the L2 flushed and the other warm"
run versus "$T/vsr"
if grep -q "L2 flushed" "$T/err"; then bad "versus: no flush warning when the sides agree"; else ok "versus: no flush warning when the sides agree"; fi
# a vendor that is not the best one, timed another way than ours: said too (its geomean mixes them)
mkdir -p "$T/vsf2"; sed 's/\r$//; 1s/$/,l2_flush/; 2,$s/$/,0/; /,torch-flash,/s/,0$/,1/' "$T/vs/perf.csv" >"$T/vsf2/perf.csv"
run versus "$T/vsf2"
expect "versus: any vendor timed with the L2 flushed against ours warm is named" 0 "were timed one with the L2 flushed and the other warm"
run compare "$T/vsf/perf.csv" "$T/vsf2/perf.csv"
expect "compare: pairs timed with and without the L2 flush are named" 0 "timed with the L2 flushed on one side and warm on the other"
# the spreads decide compare's verdicts: a row whose p20 is above its median is bad input
mkdir -p "$T/cmpp"; python3 - "$T/vs/perf.csv" "$T/cmpp/perf.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
r = next(x for x in rows if x["status"] == "ok")
r["p20_us"] = str(float(r["median_us"]) * 2)
w = csv.DictWriter(open(sys.argv[2], "w", newline=""), fieldnames=list(rows[0].keys()), lineterminator="\n")
w.writeheader(); w.writerows(rows)
PY
run compare "$T/vs/perf.csv" "$T/cmpp/perf.csv"
expect "compare: p20 above the median exits 2 naming the file and field" 2 "$T/cmpp/perf.csv:" "p20_us"
printf 'name,batch,hq,hkv,sq,skv,d,causal\nfx-decode,1,1,1,1,1,64,0\n' >"$T/vs/one.csv"
run versus --shapes "$T/vs/one.csv" "$T/vs"
expect "versus --shapes: only the named shapes" 0 "the best vendor per shape: 0.500 over 1 shape; the portable kernel faster on 0, tied on 0, slower on 1"
run versus --shapes "$T/notperf.csv" "$T/vs"; expect "versus --shapes with a file without a name column exits 2 naming FILE:1" 2 "$T/notperf.csv:1: name: required column missing"
# wide shapes and long names are printed whole (the shape column cut 'c1' to 'c')
mkdir -p "$T/vsw"
rewrite_perf "$T/vs/perf.csv" "$T/vsw/perf.csv" <<'PY'
for r in rows:
    emit(dict(r, name=r["name"] + "-llama3-70b-instruct-b128-s16384", batch="128", hq="64", hkv="8", sq="4096", skv="16384"))
PY
run versus "$T/vsw"
expect "versus: a wide shape and a long name are not cut" 0 "fx-decode-llama3-70b-instruct-b128-s16384 " "bf16 b128 h64/8 q4096 k16384 d64 c1 "
run compare "$T/vsw" "$T/vsw"
expect "compare: a wide shape and a long name are not cut" 0 "fx-decode-llama3-70b-instruct-b128-s16384 " "bf16 b128 h64/8 q4096 k16384 d64 c1 "
# --markdown: one run (the one with the most shapes paired, or --run), per suite of
# bench/suites/ (a shape of two suites in both, one of none under 'other'), the manifest's
# GPU and commit (an --update command's own keys for its run), the rows' dates
mkdir -p "$T/md"
cat >"$T/md/perf.csv" <<'CSV'
gpu,backend,impl,name,dtype,batch,hq,hkv,sq,skv,d,causal,median_us,p20_us,p80_us,status,run_id,utc
Test GPU,cuda,portable,smoke-mha-s64-d64-causal,bf16,1,2,2,64,64,64,1,100,95,105,ok,run-A,2026-01-01T08:00:00Z
Test GPU,cuda,cudnn,smoke-mha-s64-d64-causal,bf16,1,2,2,64,64,64,1,400,390,410,ok,run-A,2026-01-01T08:00:10Z
Test GPU,cuda,portable,smoke-mha-s64-d64-causal,bf16,1,2,2,64,64,64,1,100,95,105,ok,run-B,2026-01-02T10:00:00Z
Test GPU,cuda,portable,ref-b4-h32-s4096-d128,bf16,4,32,32,4096,4096,128,0,100,90,110,ok,run-B,2026-01-02T10:01:00Z
Test GPU,cuda,portable,fx-other,bf16,1,2,2,64,64,64,0,100,95,105,ok,run-B,2026-01-02T10:02:00Z
Test GPU,cuda,cudnn,smoke-mha-s64-d64-causal,bf16,1,2,2,64,64,64,1,200,190,210,ok,run-B,2026-01-02T10:03:00Z
Test GPU,cuda,cudnn,ref-b4-h32-s4096-d128,bf16,4,32,32,4096,4096,128,0,105,100,110,ok,run-B,2026-01-02T10:04:00Z
Test GPU,cuda,cudnn,fx-other,bf16,1,2,2,64,64,64,0,50,45,55,ok,run-B,2026-01-02T10:05:30Z
CSV
printf 'key,value\ngpu,Test GPU\ngit_commit,0123456789abcdef0123456789abcdef01234567\ngit_dirty,no\ndate,2026-01-02T10:05:31Z\nrun_id,run-B\nupdate.1.git_commit,fedcba9876543210fedcba9876543210fedcba98\nupdate.1.git_dirty,yes\nupdate.1.run_id,run-A\n' >"$T/md/manifest.csv"
cat >"$T/md/want" <<MD
**$T/md**: Test GPU, run \`run-B\` (of the 2 runs in the file, the one with the most shapes paired), 2026-01-02 10:00-10:05 UTC, commit 0123456

| suite | shapes | speedup over the best vendor (geomean) | faster | tie | slower |
| --- | ---: | ---: | ---: | ---: | ---: |
| llm | 1 | 1.050x | 0 | 1 | 0 |
| ref | 1 | 1.050x | 0 | 1 | 0 |
| smoke | 1 | 2.000x | 1 | 0 | 0 |
| other | 1 | 0.500x | 0 | 0 | 1 |
| all | 3 | 1.016x | 1 | 1 | 1 |
MD
run versus --markdown "$T/md/"
if [ "$RC" -eq 0 ] && diff "$T/md/want" "$T/out" >"$T/diff"; then ok "versus --markdown: the busiest run per suite, with its GPU, dates and commit"
else bad "versus --markdown: the busiest run per suite, with its GPU, dates and commit" "exit $RC" "$(cat "$T/diff" "$T/err")"; fi
run versus --markdown --run run-A "$T/md"
expect "versus --markdown --run: that run, the commit of the --update that made it" 0 \
    "run \`run-A\`, 2026-01-01 08:00 UTC, commit fedcba9 with uncommitted changes" "| smoke | 1 | 4.000x | 1 | 0 | 0 |" "| all | 1 | 4.000x | 1 | 0 | 0 |"
run versus --markdown "$T/vo"
expect "versus --markdown: a file from before run ids exits 1 saying so" 1 "predate run ids"
run versus --markdown --any-run "$T/md"
expect "versus --markdown --any-run exits 2: a summary is of one run" 2 "--markdown summarises one run"
run versus "$T/none.csv";                expect "versus with a missing file exits 2 naming it" 2 "$T/none.csv"
run versus;                              expect "versus without results exits 2" 2 "needs a results folder"

# ---------- codegen-summary ----------
S="$T/sum/pthread-haswell-amd-epyc"; mkdir -p "$T/sum"; cp -r "$GOOD" "$S"
run codegen-summary "$S"
expect "codegen-summary: ptx, sass and runtime rows" 0 "codegen_summary.csv: 3 rows"
if grep -q '^sm_90,cuda,sass,2,0,2,binary_hash,' "$S/codegen_summary.csv" && grep -q '^sm_90,cuda,ptx,2,0,2,binary_hash,' "$S/codegen_summary.csv"; then
    ok "codegen-summary: 2 configurations, 2 distinct binaries by hash, for ptx and sass"
else bad "codegen-summary: 2 configurations, 2 distinct binaries by hash, for ptx and sass" "$(cat "$S/codegen_summary.csv")"; fi
run check-results "$S";              expect "codegen-summary's files pass check-results" 0 "0 problems"
run codegen-summary results/sm_80 results/sm_90 --out "$T"
expect "codegen-summary over two GPUs: distances across GPUs" 0 "pairs of 54 default configurations"
if grep -q ',gpu+class+config,\|,gpu,' "$T/codegen_distance.csv"; then ok "codegen-summary: pairs that differ by GPU"; else bad "codegen-summary: pairs that differ by GPU"; fi
run codegen-summary "$T/nope";           expect "codegen-summary on a missing folder exits 2" 2 "is not a folder"

# ---------- figures ----------
if command -v gnuplot >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1; then
    cp -r "$GOOD" "$T/fig"
    if bash plots/render.sh "$T/fig" >"$T/render.log" 2>&1; then
        miss=()
        for f in perf_prefill configs diversity portability convergence; do
            for e in png svg; do [ -s "$T/fig/plots/$f.$e" ] || miss+=("$f.$e"); done
        done
        if [ ${#miss[@]} -eq 0 ]; then ok "render.sh draws the figures of a folder with data"; else bad "render.sh draws the figures" "missing: ${miss[*]}" "$(cat "$T/render.log")"; fi
        if grep -q "skip ref.{png,svg}: no rows named ref-" "$T/render.log"; then ok "render.sh says why it skips a figure"; else bad "render.sh says why it skips a figure" "$(cat "$T/render.log")"; fi
    else
        bad "render.sh on the good folder" "$(cat "$T/render.log")"
    fi
    if grep -q "skip speedup.{png,svg}: no vendor rows with status ok" "$T/render.log"; then ok "render.sh skips speedup without vendor rows"; else bad "render.sh skips speedup without vendor rows" "$(cat "$T/render.log")"; fi
    # a CPU's smoke run: the y tick labels given and the left margin wide enough for them
    # (0.0015 was cut to '.0015'), the decode panel named by its shape (it was 'smoke'), and
    # every shape in some figure (the two prefill shapes with Sq != Skv were in none)
    mkdir -p "$T/smk"; cp "$GOOD/manifest.csv" "$T/smk/"
    rewrite_perf "$GOOD/perf.csv" "$T/smk/perf.csv" <<'PY'
shapes = (("smoke-mha-s64-d64-causal", 1, 2, 2, 64, 64, 64, 1), ("smoke-mha-s129-d128", 1, 2, 2, 129, 129, 128, 0),
          ("smoke-gqa4to1-sq33-skv129-d64-causal", 2, 4, 1, 33, 129, 64, 1),
          ("smoke-gqa4to2-sq129-skv33-d96", 1, 4, 2, 129, 33, 96, 0),
          ("smoke-gqa4to2-sq7-skv200-d80-causal", 1, 4, 2, 7, 200, 80, 1),
          ("smoke-decode-gqa4to1-skv257-d128", 2, 4, 1, 1, 257, 128, 1), ("smoke-mha-s7-d80", 1, 1, 1, 7, 7, 80, 0))
for i, (n, b, hq, hkv, sq, skv, d, c) in enumerate(shapes):
    emit(dict(rows[0], name=n, batch=b, hq=hq, hkv=hkv, sq=sq, skv=skv, d=d, causal=c, median_us=600 + i,
              p20_us=580, p80_us=700, tflops="%.4f" % (0.0019 + 0.0001 * i), gbps="%.2f" % (0.05 + 0.02 * i)))
PY
    if python3 plots/prep.py "$T/smk/perf.csv" "$T/smk/manifest.csv" "$T/smk/plots" "$T/smk/work" >"$T/smk/figures"; then
        why=$(python3 - "$T/smk/work" <<'PY'
import re, sys
w = sys.argv[1]
def var(fig, name):  # a variable's or array's value as vars.gp sets it (quotes unescaped)
    m = re.search(r"^(?:array )?%s(?:\[\d+\])? = (.*)$" % name, open("%s/%s/vars.gp" % (w, fig)).read(), re.M)
    return m.group(1).replace('\\"', '"') if m else ""
for fig in ("perf_prefill", "perf_decode"):
    labels = re.findall(r'"([^"]*)" [0-9.e-]+', var(fig, "ytics_cmd"))
    if not labels or float(var(fig, "lmarg") or 0) < max(len(x) for x in labels) + 4:
        print("%s: y tick labels %s, left margin %s" % (fig, labels, var(fig, "lmarg")))
titles = var("perf_decode", "P_title")
if "smoke-decode-gqa4to1-skv257-d128" not in titles or "{/:Bold smoke}" in titles:
    print("decode panels: %s" % titles)
tics = open("%s/perf_other/tics1.dat" % w).read()
if "Sq=33 Skv=129" not in tics or "Sq=129 Skv=33" not in tics:
    print("perf_other's shapes: %s" % tics)
PY
)
    else why="prep.py failed"; fi
    if [ -z "$why" ]; then ok "figures of a CPU's run: y labels that fit, panels named by shape, every shape drawn"
    else bad "figures of a CPU's run: y labels that fit, panels named by shape, every shape drawn" "$why"; fi
    if bash plots/render.sh "$T/smk" >"$T/render8.log" 2>&1 && [ -s "$T/smk/plots/perf_other.png" ] && ! grep -q warning "$T/render8.log"
    then ok "render.sh draws perf_other for the shapes no other figure has"
    else bad "render.sh draws perf_other for the shapes no other figure has" "$(cat "$T/render8.log")"; fi
    # convergence with two panels (two runtimes' explored rows): no gnuplot warning (one
    # placeholder file per curve and other panel made 454 of a quick run's 577 lines)
    mkdir -p "$T/conv2"; cp "$GOOD/manifest.csv" "$GOOD/perf.csv" "$T/conv2/"
    { cat "$GOOD/explored.csv"; sed -n '2,$p' "$GOOD/explored.csv" | sed 's/,opencl,/,cuda,/'; } >"$T/conv2/explored.csv"
    if bash plots/render.sh "$T/conv2" >"$T/render6.log" 2>&1 && [ -s "$T/conv2/plots/convergence.png" ] &&
        ! grep -q "warning" "$T/render6.log"; then
        ok "render.sh draws a two-panel convergence figure without a gnuplot warning"
    else bad "render.sh draws a two-panel convergence figure without a gnuplot warning" "$(head -c 600 "$T/render6.log")"; fi
    # --brief (run.sh): one line per folder, the figures drawn and how many had no data
    if bash plots/render.sh --brief "$T/conv2" >"$T/render7.log" 2>&1 && [ "$(wc -l <"$T/render7.log")" -eq 1 ] &&
        grep -q "^figures: $T/conv2/plots/: perf_prefill, .*convergence (.png, .svg; [0-9]* more without data" "$T/render7.log"; then
        ok "render.sh --brief: one line naming the figures drawn"
    else bad "render.sh --brief: one line naming the figures drawn" "$(cat "$T/render7.log")"; fi
    # a vendor row per shape, twice the portable kernel's time: speedup drawn
    mkdir -p "$T/vend"; cp "$GOOD/manifest.csv" "$T/vend/"
    python3 - "$GOOD/perf.csv" "$T/vend/perf.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    for r in rows:
        w.writerow(r)
        v = dict(r, impl="torch-flash", config="")
        for c in ("median_us", "p20_us", "p80_us", "min_us"):
            v[c] = "%.3f" % (2 * float(r[c]))
        w.writerow(v)
PY
    if bash plots/render.sh "$T/vend" >"$T/render3.log" 2>&1 && [ -s "$T/vend/plots/speedup.png" ] && [ -s "$T/vend/plots/speedup.svg" ]; then
        ok "render.sh draws speedup when a vendor shares a shape"
    else bad "render.sh draws speedup when a vendor shares a shape" "$(cat "$T/render3.log")"; fi
    # speedup counts a win only beyond the spreads, as versus does: ours faster (disjoint), a
    # tie (5% apart, the spreads overlapping) and slower; a tie's bar is grey; and its note says
    # how many shapes paired rows of different runs (fx-decode's vendor row is of another run)
    mkdir -p "$T/vtie"; cp "$GOOD/manifest.csv" "$T/vtie/"
    rewrite_perf "$GOOD/perf.csv" "$T/vtie/perf.csv" <<'PY'
for r in rows:
    emit(dict(r, run_id="run-A"))
    emit(dict(r, name="fx-tie", run_id="run-A"))
    emit(dict(scaled(r, 2.0 if r["name"] == "fx-prefill" else 0.5), impl="cudnn", config="",
              run_id="run-A" if r["name"] == "fx-prefill" else "run-B"))
    emit(dict(scaled(r, 1.05), name="fx-tie", impl="cudnn", config="", run_id="run-A"))
PY
    if python3 plots/prep.py "$T/vtie/perf.csv" "$T/vtie/manifest.csv" "$T/vtie/plots" "$T/vtie/work" >/dev/null; then
        why=$(python3 - "$T/vtie/work/speedup" <<'PY'
import re, sys
d = sys.argv[1]
vars_gp = open(d + "/vars.gp").read()
if "faster on 1, tied on 2, slower on 1 of 4 shapes" not in vars_gp:  # fx-tie: one shape per dims
    print("title: %s" % re.findall(r"P_title\[1\] = (.*)", vars_gp))
colors = {int(l.split()[0]): int(l.split()[2]) for l in open(d + "/sp1.dat") if not l.startswith("#")}
if sorted(set(colors.values())) != sorted({0x009E73, 0xD55E00, 0x999999}):
    print("bar colors: %s" % colors)
if "1 shape pairs rows of different runs" not in vars_gp:
    print("note: %s" % re.findall(r"^note = (.*)", vars_gp, re.M))
PY
)
    else why="prep.py failed"; fi
    if [ -z "$why" ]; then ok "speedup figure: faster / tie / slower beyond the spreads, ties grey, runs crossed noted"
    else bad "speedup figure: faster / tie / slower beyond the spreads, ties grey, runs crossed noted" "$why"; fi
    # ragged, mixed and paged rows: their own bars figure, and out of the dense line figures
    mkdir -p "$T/batch"; cp "$GOOD/manifest.csv" "$T/batch/"
    python3 - "$GOOD/perf.csv" "$T/batch/perf.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()) + ["lens", "page", "qlens"])
    w.writeheader()
    for r in rows:
        for name, lens, page, qlens in (("rg-" + r["name"], "0.1;1", "", ""), ("pg-" + r["name"], "", "16", ""),
                                        ("mx-" + r["name"], "1", "", "1;0.001")):
            w.writerow(dict(r, name=name, lens=lens, page=page, qlens=qlens))
PY
    if bash plots/render.sh "$T/batch" >"$T/render4.log" 2>&1 && [ -s "$T/batch/plots/batches.png" ] &&
        [ -s "$T/batch/plots/batches.svg" ] && grep -q "skip perf_prefill" "$T/render4.log" &&
        grep -q "skip perf_decode" "$T/render4.log"; then
        ok "render.sh draws ragged, mixed and paged rows as the batches figure, not as lines"
    else bad "render.sh draws the batches figure" "$(cat "$T/render4.log")"; fi
    # the paper suite's rows: their own line figure, out of perf_prefill
    mkdir -p "$T/paper"; cp "$GOOD/manifest.csv" "$T/paper/"
    python3 - "$GOOD/perf.csv" "$T/paper/perf.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    for r in rows:
        w.writerow(dict(r, name="paper-" + r["name"]))
PY
    if bash plots/render.sh "$T/paper" >"$T/render5.log" 2>&1 && [ -s "$T/paper/plots/perf_paper.png" ] &&
        grep -q "skip perf_prefill" "$T/render5.log"; then
        ok "render.sh draws paper-* rows as perf_paper, not in perf_prefill"
    else bad "render.sh draws perf_paper" "$(cat "$T/render5.log")"; fi
    # the fa3 suite's rows: a panel per head dim and mask, the batch not splitting a series
    mkdir -p "$T/fa3"; cp "$GOOD/manifest.csv" "$T/fa3/"
    python3 - "$GOOD/perf.csv" "$T/fa3/perf.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1], newline="")) if r["sq"] == r["skv"] and int(r["sq"]) > 16]
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    for s, b in ((512, 32), (1024, 16), (2048, 8)):
        for c in ("0", "1"):
            for r in rows:
                w.writerow(dict(r, name="fa3-bf16-d64-%s-s%d" % ("c" if c == "1" else "nc", s), sq=s, skv=s, batch=b, causal=c))
PY
    mkdir -p "$T/fa3-prep"
    python3 plots/prep.py "$T/fa3/perf.csv" "$T/fa3/manifest.csv" "$T/fa3/plots" "$T/fa3-prep" >/dev/null
    fv="$T/fa3-prep/perf_fa3/vars.gp"
    if bash plots/render.sh "$T/fa3" >"$T/render6.log" 2>&1 && [ -s "$T/fa3/plots/perf_fa3.png" ] &&
        grep -q "skip perf_prefill" "$T/render6.log" && grep -q 'd=64 non-causal' "$fv" && grep -q 'd=64 causal' "$fv" &&
        grep -qx 'npanels = 2' "$fv" && grep -qx 'nseries = 2' "$fv"; then
        ok "render.sh draws fa3-* rows as perf_fa3 (a panel per mask, one series across batches), not in perf_prefill"
    else bad "render.sh draws perf_fa3" "$(cat "$T/render6.log")" "$(grep -E 'npanels|nseries|P_title' "$fv")"; fi
    if grep -q "skip batches.{png,svg}: no ragged, mixed or paged rows" "$T/render.log"; then
        ok "render.sh skips batches without ragged rows"
    else bad "render.sh skips batches without ragged rows" "$(cat "$T/render.log")"; fi
    mkdir -p "$T/only-compiled"; cp "$GOOD/compiled.csv" "$GOOD/manifest.csv" "$T/only-compiled/"
    if bash plots/render.sh "$T/only-compiled" >"$T/render2.log" 2>&1 && [ -s "$T/only-compiled/plots/diversity.png" ] &&
        grep -q "skip portability" "$T/render2.log" && grep -q "skip perf_prefill.{png,svg}: no perf.csv" "$T/render2.log" &&
        grep -q "skip speedup.{png,svg}: no perf.csv" "$T/render2.log"; then
        ok "render.sh on a compile-only folder: diversity drawn, the rest skipped with a message"
    else bad "render.sh on a compile-only folder" "$(cat "$T/render2.log")"; fi
else
    echo "skip - figures: gnuplot or python3 missing"
fi

# ---------- WG_HOLDPV and WG_SINFLIGHT in the SASS ----------
# compiled offline for sm_90a (NVRTC) and disassembled (FlashAttention-3's order, 128-key
# tiles). WG_HOLDPV=1: every exp2 of the softmax (64 per thread) comes before the wait for
# the previous tile's P V; without it ptxas hoists that wait to the softmax's top. Counted:
# MUFU.EX2 since the last HGMMA or WARPGROUP instruction, at each WARPGROUP.DEPBAR that
# waits for every group. WG_SINFLIGHT=1: no wait for every group between the end of S's
# issue and P V's first wgmma (ptxas injects one before O's rescale otherwise). What ptxas
# does without the keys is printed, not asserted: that is its choice, not ours.
DIS=$(command -v nvdisasm || true)
printf 'name,batch,hq,hkv,sq,skv,d,causal\nref,4,32,32,4096,4096,128,0\n' >"$T/ref.csv"
fa3_cfg="MMA=wgmma,BLOCK_M=128,BLOCK_N=128,NUM_WARPS=8,STAGES=3,WG_PIPE=1,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"
[ -n "$DIS" ] && run compile --target sm_90 --shapes "$T/ref.csv" --config "$fa3_cfg" --out "$T/k0" --binaries "$T/k0/bin"
if [ -n "$DIS" ] && ! grep -q "NVRTC not found" "$T/out" "$T/err"; then
    exps=(); waits=()
    for k in 0 1 2; do
        extra=""; [ $k -eq 1 ] && extra=",WG_HOLDPV=1"; [ $k -eq 2 ] && extra=",WG_SINFLIGHT=1"
        run compile --target sm_90 --shapes "$T/ref.csv" --config "$fa3_cfg$extra" --out "$T/k$k" --binaries "$T/k$k/bin"
        cub=$(ls "$T/k$k/bin/"*.cubin 2>/dev/null | head -n 1)
        if [ "$RC" -ne 0 ] || [ -z "$cub" ]; then exps+=(-1); waits+=(-1); continue; fi
        "$DIS" "$cub" >"$T/k$k.sass"
        exps+=("$(awk '/HGMMA|WARPGROUP\.ARRIVE|WARPGROUP\.DEPBAR\.LE gsb0, 0x1/ { n = 0 }
            /MUFU\.EX2/ { n++ } /WARPGROUP\.DEPBAR\.LE gsb0, 0x0/ { if (n > m) m = n; n = 0 } END { print m + 0 }' "$T/k$k.sass")")
        waits+=("$(awk '/HGMMA.*tnspB/ { if (in_s) { print w + 0; found = 1; exit } }
            /HGMMA.*gsb0 ;/ && !/tnspB/ { in_s = 1; w = 0 } in_s && /WARPGROUP\.DEPBAR\.LE gsb0, 0x0/ { w++ }
            END { if (!found) print -1 }' "$T/k$k.sass")")
    done
    if [ "${exps[1]}" -ge 64 ]; then ok "WG_HOLDPV=1: the P V wait after all ${exps[1]} exp2 of the softmax (without it: after ${exps[0]})"
    else bad "WG_HOLDPV=1: the P V wait after the softmax's exp2" "exp2 before the wait: ${exps[1]} with WG_HOLDPV=1, ${exps[0]} without"; fi
    if [ "${waits[2]}" -eq 0 ]; then ok "WG_SINFLIGHT=1: P V issued with S in flight (waits for every group before it without the key: ${waits[0]})"
    else bad "WG_SINFLIGHT=1: P V issued with S in flight" "waits for every group between S and P V: ${waits[2]} with it, ${waits[0]} without"; fi
else
    echo "skip - WG_HOLDPV and WG_SINFLIGHT in the SASS: no nvdisasm on PATH, or NVRTC not found"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
