#!/usr/bin/env bash
# cli.sh: checks fabench's command line: help and usage, exit statuses, messages for bad
# input (shape files, devices, suites, options), and a small real run on opencl:0 (PoCL).
# Run from the repository root after `make`: bash tests/cli.sh. One line per check, then
# "N passed, N failed"; exits 1 when any check failed.
set -u
cd "$(dirname "$0")/.." || exit 1

FB=${FABENCH:-$PWD/build/fabench}
DATA=$PWD/tests/data
if [ ! -x "$FB" ]; then
    echo "FAIL - $FB is missing: run make first"
    echo "0 passed, 1 failed"
    exit 1
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/fabench-cli.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

pass=0; fail=0; skip=0
ok()    { pass=$((pass + 1)); echo "ok - $1"; }
bad()   { fail=$((fail + 1)); echo "FAIL - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
skipc() { skip=$((skip + 1)); echo "skip - $1"; }

HAVE_PY=0
if command -v python3 >/dev/null 2>&1; then HAVE_PY=1; fi

# run CMD...: runs fabench with the given arguments; sets RC, OUT (stdout), ERR (stderr).
run() {
    "$FB" "$@" >"$T/stdout" 2>"$T/stderr"
    RC=$?
    OUT=$(cat "$T/stdout")
    ERR=$(cat "$T/stderr")
}

# check NAME WANT_RC [STREAM PATTERN]...: after `run`, the exit status is WANT_RC and each
# fixed-string PATTERN is found in STREAM (out or err). A STREAM of !out / !err asserts
# the pattern is absent.
check() {
    local name=$1 want=$2; shift 2
    local why=()
    [ "$RC" -eq "$want" ] || why+=("exit status $RC, expected $want")
    while [ $# -ge 2 ]; do
        local stream=$1 pat=$2 text; shift 2
        case "$stream" in out|!out) text=$OUT ;; *) text=$ERR ;; esac
        case "$stream" in
            !*) if grep -qF -- "$pat" <<<"$text"; then why+=("${stream#!}: unexpected '$pat'"); fi ;;
            *)  if ! grep -qF -- "$pat" <<<"$text"; then why+=("$stream: missing '$pat'"); fi ;;
        esac
    done
    if [ ${#why[@]} -eq 0 ]; then ok "$name"; else
        bad "$name" "${why[@]}" "stdout: $(head -c 400 <<<"$OUT")" "stderr: $(head -c 600 <<<"$ERR")"
    fi
}

# absent NAME PATH: PATH does not exist (nothing written before failing).
absent() {
    if [ -e "$2" ]; then bad "$1" "$2 exists"; else ok "$1"; fi
}

# no_tmp NAME DIR: no temporary file of an atomic write is left in DIR.
no_tmp() {
    local left
    left=$(find "$2" -maxdepth 1 -name '*.tmp.*' | head -5)
    if [ -n "$left" ]; then bad "$1" "left: $left"; else ok "$1"; fi
}

HDR=name,batch,hq,hkv,sq,skv,d,causal
TINY=(--budget 0.02 --warmup 0.01 --quiet)
printf '%s\n%s\n%s\n' "$HDR" "tiny-mha,1,2,2,16,16,64,0" "tiny-gqa-causal,1,2,1,8,16,64,1" >"$T/two.csv"
printf '%s\n%s\n' "$HDR" "tiny-skv300,1,1,1,16,300,64,0" >"$T/skv300.csv"

# ---------- help and usage ----------
run --help;          check "fabench --help exits 0 with usage" 0 out "usage: fabench COMMAND" out "devices" out "run"
run help;            check "fabench help exits 0 with usage" 0 out "usage: fabench COMMAND"
run run --help;      check "fabench run --help exits 0 with usage" 0 out "usage: fabench run" out "--shapes" out "--out" out "smoke"
run devices --help;  check "fabench devices --help exits 0 with usage" 0 out "usage: fabench devices"
run;                 check "fabench alone exits 2 with usage on stderr" 2 err "usage: fabench COMMAND"
run frobnicate;      check "unknown command exits 2 naming it" 2 err "unknown command 'frobnicate'" err "usage: fabench COMMAND"

# ---------- devices ----------
run devices;         check "fabench devices lists an opencl device" 0 out "opencl" out "opencl:0"
run devices --list;  check "fabench devices --list has a tab-separated opencl:0 line" 0 out "$(printf 'opencl:0\t')"
run devices --bogus; check "fabench devices with an unknown argument exits 2" 2 err "--bogus"

# ---------- malformed shape files: exit 2, FILE:LINE and field, no output, no work ----------
# bad_shapes NAME LINE FIELD CONTENT: writes CONTENT to a shape file and expects exit 2
# with "FILE:LINE" and FIELD in stderr, no progress line (no work) and no --out file.
bad_shapes() {
    local name=$1 line=$2 field=$3 content=$4 f="$T/bad-$1.csv"
    printf '%b' "$content" >"$f"
    rm -f "$T/bad.out.csv"
    run run --device opencl:0 --shapes "$f" --out "$T/bad.out.csv" "${TINY[@]}"
    check "shapes: $name exits 2 naming FILE:$line and field '$field'" 2 err "$f:$line" err "'$field'" !err "shapes on"
    absent "shapes: $name leaves --out uncreated" "$T/bad.out.csv"
}
bad_shapes missing-hkv     1 hkv    'name,batch,hq,sq,skv,d,causal\na,1,2,16,16,64,0\n'
bad_shapes not-a-number    2 batch  "$HDR\na,12x,2,2,16,16,64,0\n"
bad_shapes unsupported-d   2 d      "$HDR\na,1,2,2,16,16,100,0\n"
bad_shapes hq-not-multiple 2 hq     "$HDR\na,1,3,2,16,16,64,0\n"
bad_shapes zero-batch      2 batch  "$HDR\na,0,2,2,16,16,64,0\n"
bad_shapes negative-sq     2 sq     "$HDR\na,1,2,2,-3,16,64,0\n"
bad_shapes bad-causal      3 causal "$HDR\nok,1,2,2,16,16,64,0\na,1,2,2,16,16,64,yes\n"
bad_shapes unknown-dtype   2 dtype  "$HDR,dtype\na,1,2,2,16,16,64,0,fp8\n"
bad_shapes unknown-column  1 foo    "$HDR,foo\na,1,2,2,16,16,64,0,1\n"
bad_shapes lens-zero       2 lens   "$HDR,lens\na,2,2,2,16,16,64,1,0.5;0\n"
bad_shapes lens-above-one  3 lens   "$HDR,lens\nok,2,2,2,16,16,64,1,\na,2,2,2,16,16,64,1,1.2\n"
bad_shapes lens-not-number 2 lens   "$HDR,lens\na,2,2,2,16,16,64,1,0.1;x\n"
bad_shapes lens-empty-item 2 lens   "$HDR,lens\na,2,2,2,16,16,64,1,0.1;;0.5\n"
bad_shapes duplicate-name  3 name   "$HDR\na,1,2,2,16,16,64,0\na,1,2,2,16,16,64,1\n"

# an empty file has no line to name: the file and "empty" must be named
: >"$T/empty.csv"
run run --device opencl:0 --shapes "$T/empty.csv" --out "$T/bad.out.csv" "${TINY[@]}"
check "shapes: empty file exits 2 naming the file" 2 err "$T/empty.csv" err "empty" !err "shapes on"
absent "shapes: empty file leaves --out uncreated" "$T/bad.out.csv"

run run --device opencl:0 --shapes "$T/no-such-file.csv" --out "$T/bad.out.csv" "${TINY[@]}"
check "shapes: missing file exits 2 naming it" 2 err "$T/no-such-file.csv"
absent "shapes: missing file leaves --out uncreated" "$T/bad.out.csv"

# ---------- devices, suites, options ----------
for dev in nosuchgpu opencl:99; do
    run run --device "$dev" --shapes "$T/two.csv" --out "$T/bad.out.csv" "${TINY[@]}"
    check "--device $dev exits 2 and lists the available devices" 2 err "$dev" err "opencl:0"
    absent "--device $dev leaves --out uncreated" "$T/bad.out.csv"
done
# the list has a device, so it must not also say there are none
run run --device nosuchgpu --shapes "$T/two.csv" --out "$T/bad.out.csv" "${TINY[@]}"
check "--device nosuchgpu: a non-empty device list does not also say '(none'" 2 err "opencl:0" !err "(none"

run run --device opencl:0 --suite nosuchsuite --out "$T/bad.out.csv"
check "unknown suite exits 2 and lists the suites" 2 err "nosuchsuite" err "smoke"
absent "unknown suite leaves --out uncreated" "$T/bad.out.csv"

run run --device opencl:0 --shapes "$T/two.csv" --out "$T/bad.out.csv" --config NOSUCHKEY=1
check "--config unknown key exits 2 naming the key" 2 err "NOSUCHKEY"
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/bad.out.csv" --config BLOCK_M=3
check "--config bad value exits 2 naming key, value and the values allowed" 2 \
    err "bad value '3' for BLOCK_M (allowed: a power of two or a multiple of 16, 1 to 1024)" !err "config: config:"
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/bad.out.csv" --config NUM_WARPS=0
check "--config NUM_WARPS=0 names the values allowed" 2 err "bad value '0' for NUM_WARPS (allowed: 1 to 32)"
# a table's bad configuration: named once, with its file and line (it said 'config: config:')
printf 'gpu,backend,shape_class,config\nx,opencl,bf16-d64-c1-g1-q64-k64,BLOCK_M=7\n' >"$T/bad-bm.csv"
run portability --device opencl:0 --suite smoke --from "$T/bad-bm.csv" --out "$T/port.csv"
check "a tuning table's BLOCK_M=7 names the file, line, key, value and the values allowed" 2 \
    err "$T/bad-bm.csv:2: config: bad value '7' for BLOCK_M (allowed: a power of two" !err "config: config:"
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/bad.out.csv" --config BLOCK_M
check "--config without =VALUE exits 2" 2 err "BLOCK_M"
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/bad.out.csv" --dtype fp8
check "--dtype fp8 exits 2 naming the dtypes" 2 err "fp8" err "bf16"
run run --device opencl:0 --shapes "$T/two.csv"
check "missing --out exits 2" 2 err "--out"
run run --shapes "$T/two.csv" --out "$T/bad.out.csv"
check "missing --device exits 2" 2 err "--device"
run run --device opencl:0 --shapes "$T/two.csv" --suite smoke --out "$T/bad.out.csv"
check "--shapes together with --suite exits 2" 2 err "--shapes"
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/bad.out.csv" --no-such-option
check "unknown option exits 2 naming it" 2 err "--no-such-option"
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/bad.out.csv" --budget abc
check "--budget abc exits 2" 2 err "--budget"
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/bad.out.csv" stray-arg
check "a stray argument exits 2 naming it" 2 err "stray-arg"
run run --device opencl:0 --shapes "$T/two.csv" --out
check "--out without a value exits 2" 2 err "--out"
absent "bad options leave --out uncreated" "$T/bad.out.csv"

run run --device opencl:0 --shapes "$T/two.csv" --out "$T/no/such/dir/p.csv" "${TINY[@]}"
check "--out in a missing directory exits 2 naming the path, before any work" 2 \
    err "$T/no/such/dir/p.csv" !err "shapes on" !err "[1/"

# ---------- a real run ----------
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/p.csv" --manifest "$T/m.csv" \
    --budget 0.02 --warmup 0.01
check "real run on opencl:0 exits 0 with progress lines" 0 err "[1/2]" err "[2/2]"
no_tmp "real run leaves no *.tmp.* file" "$T"

# csv_py NAME PY ARGS...: runs a python3 check (csv module) with sys.argv[1:] = ARGS;
# it prints problems, one a line; no output means the check passed.
csv_py() {
    local name=$1 prog=$2; shift 2
    if [ "$HAVE_PY" -eq 0 ]; then skipc "$name (no python3)"; return; fi
    local res
    res=$(python3 -c "$prog" "$@" 2>&1)
    if [ -z "$res" ]; then ok "$name"; else
        local lines=(); while IFS= read -r l; do lines+=("$l"); done <<<"$res"
        bad "$name" "${lines[@]}"
    fi
}

PERF_COLS=gpu,backend,impl,config,dtype,batch,hq,hkv,sq,skv,d,causal,median_us,p20_us,p80_us,tflops,gbps,max_abs_err,status

# args: FILE COLS NROWS MODE (timed | verify); prints problems.
PY_PERF='
import csv, sys
path, cols, nrows, mode = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4]
try:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
except OSError as e:
    print(e); sys.exit()
if not rows:
    print("empty file"); sys.exit()
hdr, data = rows[0], rows[1:]
for c in cols:
    if c not in hdr: print("header lacks column %r" % c)
if len(data) != nrows: print("%d data rows, expected %d" % (len(data), nrows))
if any(c not in hdr for c in ("status", "median_us", "p20_us", "p80_us")): sys.exit()
ix = {c: hdr.index(c) for c in hdr}
def num(r, c):
    try: return float(r[ix[c]])
    except (ValueError, IndexError): return None
for i, r in enumerate(data, 2):
    if len(r) != len(hdr): print("line %d: %d fields, header has %d" % (i, len(r), len(hdr))); continue
    if r[ix["status"]] != "ok": print("line %d: status %r" % (i, r[ix["status"]]))
    if r[ix["backend"]] != "opencl": print("line %d: backend %r" % (i, r[ix["backend"]]))
    if r[ix["impl"]] != "portable": print("line %d: impl %r" % (i, r[ix["impl"]]))
    if mode == "verify":
        for c in ("median_us", "p20_us", "p80_us"):
            if r[ix[c]] != "": print("line %d: %s is %r, expected empty with --verify-only" % (i, c, r[ix[c]]))
        if num(r, "max_abs_err") is None: print("line %d: max_abs_err %r not a number" % (i, r[ix["max_abs_err"]]))
    else:
        m, lo, hi = num(r, "median_us"), num(r, "p20_us"), num(r, "p80_us")
        if m is None or not m > 0: print("line %d: median_us %r not a positive number" % (i, r[ix["median_us"]])); continue
        if lo is None or hi is None: print("line %d: p20_us/p80_us not numbers" % i); continue
        if not lo <= m <= hi: print("line %d: not p20 %s <= median %s <= p80 %s" % (i, lo, m, hi))
        for c in ("tflops", "gbps"):
            v = num(r, c)
            if v is None or v < 0: print("line %d: %s %r" % (i, c, r[ix[c]]))
'
csv_py "real run: p.csv has the perf columns, 2 ok rows, p20 <= median <= p80" \
    "$PY_PERF" "$T/p.csv" "$PERF_COLS" 2 timed

# manifest: key,value rows. Runtime-specific facts may be namespaced as RUNTIME.KEY
# (opencl.driver); "backend" is satisfied by a key naming the backend that way.
PY_MANIFEST='
import csv, sys
path, keys, backend = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
try:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
except OSError as e:
    print(e); sys.exit()
if not rows or rows[0][:2] != ["key", "value"]:
    print("header %r, expected key,value" % (rows[0] if rows else None)); sys.exit()
kv = {r[0]: (r[1] if len(r) > 1 else "") for r in rows[1:] if r}
for k in keys:
    if k == "backend":
        if "backend" not in kv and not any(x.startswith(backend + ".") for x in kv):
            print("no key backend (nor %s.*)" % backend)
        continue
    v = kv.get(k, kv.get(backend + "." + k))
    if v is None: print("no key %s (nor %s.%s); keys: %s" % (k, backend, k, ",".join(kv)))
    elif v == "" and k != "git_commit": print("key %s is empty" % k)
'
csv_py "real run: m.csv has gpu, backend, driver, date, command, git_commit" \
    "$PY_MANIFEST" "$T/m.csv" gpu,backend,driver,date,command,git_commit opencl

# ---------- --rest: the device idle before each shape's warm-up ----------
t_rest0=$(date +%s.%N)
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/rest.csv" --budget 0.02 --warmup 0.01 --quiet --rest 0.6
t_rest=$(python3 -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t_rest0" "$(date +%s.%N)" 2>/dev/null || echo 0)
check "--rest 0.6 on opencl:0 exits 0" 0
if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 1.2 else 1)" "$t_rest" 2>/dev/null; then
    ok "--rest 0.6: two shapes took at least 1.2 s ($t_rest s)"
else
    bad "--rest 0.6: two shapes took at least 1.2 s" "took $t_rest s"
fi
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/rest.bad.csv" --rest -1
check "--rest -1 exits 2 naming the option" 2 err "--rest"
absent "--rest -1 writes nothing" "$T/rest.bad.csv"
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/rest.bad.csv" --rest 61
check "--rest 61 exits 2: at most 60 seconds" 2 err "at most 60"
run vendors --device opencl:0 --shapes "$T/two.csv" --out "$T/rest.bad.csv" --rest soon
check "vendors --rest soon exits 2 naming it" 2 err "--rest" err "soon"

# ---------- --l2-flush: the cache overwritten before every run, said per row ----------
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/fl.csv" --budget 0.02 --warmup 0.01 --quiet --l2-flush
check "--l2-flush on opencl:0 exits 0" 0
csv_py "--l2-flush: 2 ok rows" "$PY_PERF" "$T/fl.csv" "$PERF_COLS" 2 timed
csv_py "l2_flush is 1 on --l2-flush rows, 0 on the plain run's; no GPU readings on PoCL" '
import csv, sys
for path, want in ((sys.argv[1], "1"), (sys.argv[2], "0")):
    for r in csv.DictReader(open(path, newline="")):
        if r.get("l2_flush") != want: print("%s: l2_flush %r, expected %s" % (path, r.get("l2_flush"), want))
        for c in ("sm_mhz", "power_w", "temp_c", "clock_events"):
            if r.get(c, None) != "": print("%s: %s is %r, expected empty (no NVML for a CPU)" % (path, c, r.get(c)))
' "$T/fl.csv" "$T/p.csv"

# ---------- compiler warnings: their text, or nothing ----------
# compiled afresh (empty kernel caches): the fused split-KV merge once made PoCL's clang print
# a bare "1 warning generated." for every configuration, its text lost in the build log
printf '%s\n%s\n' "$HDR" "fuse,1,4,1,1,64,64,1" >"$T/fuse.csv"
FABENCH_CACHE="$T/wc1" POCL_CACHE_DIR="$T/wp1" "$FB" run --device opencl:0 --shapes "$T/fuse.csv" --out "$T/fuse.out.csv" \
    --config MMA=fma,BLOCK_M=16,BLOCK_N=16,NUM_WARPS=1,SPLIT_KV=2,SPLIT_FUSE=1 "${TINY[@]}" >/dev/null 2>"$T/werr"; RC=$?
OUT=""; ERR=$(cat "$T/werr")
check "a fresh compile of the fused split-KV kernel warns of nothing" 0 !err "warning"
# a kernel source with a warning of its own (a copy of the tree): its text, once for two shapes
mkdir -p "$T/wroot/bench"; cp -r kernels "$T/wroot/"; cp -r bench/suites "$T/wroot/bench/"
printf '#warning "a test warning"\n' >>"$T/wroot/kernels/common.k"
FABENCH_ROOT="$T/wroot" FABENCH_CACHE="$T/wc2" POCL_CACHE_DIR="$T/wp2" "$FB" run --device opencl:0 --shapes "$T/two.csv" \
    --out "$T/w2.out.csv" "${TINY[@]}" >/dev/null 2>"$T/werr"; RC=$?
OUT=""; ERR=$(cat "$T/werr")
check "a compiler warning is shown with its text" 0 err "fabench: opencl compiler: " err "a test warning"
n=$(grep -c "a test warning" "$T/werr")
if [ "$n" -eq 1 ]; then ok "a compiler warning is shown once however many compiles give it"; else bad "a compiler warning is shown once" "shown $n times" "$ERR"; fi

# ---------- --verify-only ----------
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/v.csv" --verify-only --quiet
check "--verify-only exits 0" 0
csv_py "--verify-only: 2 ok rows with empty timings" "$PY_PERF" "$T/v.csv" "$PERF_COLS" 2 verify

# a ragged batch (lens) runs, verified against the reference per sequence
printf '%s\n%s\n%s\n' "$HDR,lens" "rg-varied,5,2,1,24,40,64,1,0.1;0.4;0.5;1.0;0.2" "rg-dense,2,2,2,16,16,64,0," >"$T/ragged.csv"
run run --device opencl:0 --shapes "$T/ragged.csv" --out "$T/ragged.out.csv" --verify-only --quiet
check "shapes: a lens column runs ragged and dense rows, all ok" 0
csv_py "shapes: ragged perf.csv rows are ok" "$PY_PERF" "$T/ragged.out.csv" "$PERF_COLS" 2 verify
# --tuned: a ragged batch whose class's row holds what ragged batches cannot do (split-KV and
# its fused merge, GQA packing, the longest-first order, persistence) runs without them
gpu=$(head -n 2 "$T/ragged.out.csv" | python3 -c 'import csv, sys; print(list(csv.reader(sys.stdin))[1][0])' 2>/dev/null)
printf '%s\n"%s",opencl,bf16-d64-c1-g2-q32-k64-v75,MMA=fma;BLOCK_M=16;BLOCK_N=16;NUM_WARPS=1;WARP_M=1;STAGES=1;SPLIT_KV=2;PACK_GQA=1;KPAD=1;GRID_LPT=1;WG_PERSIST=1;SPLIT_FUSE=1,1.0,1.0,1,1,x,exhaustive,2026-01-01T00:00:00Z\n' \
    "gpu,backend,shape_class,config,median_us,tflops,configs_explored,configs_in_space,shape,strategy,date" "$gpu" >"$T/rtune.csv"
head -n 2 "$T/ragged.csv" >"$T/ragged1.csv"
run run --device opencl:0 --shapes "$T/ragged1.csv" --out "$T/rtuned.csv" --tuned --tuning "$T/rtune.csv" --verify-only --quiet
check "--tuned: a ragged batch drops its row's SPLIT_KV, PACK_GQA, GRID_LPT, WG_PERSIST, SPLIT_FUSE and runs" 0
if grep -q 'ragged: SPLIT_KV=1, PACK_GQA=0, WG_PERSIST=0, GRID_LPT=0, SPLIT_FUSE=0' "$T/rtuned.csv" && grep -q ',ok,' "$T/rtuned.csv"
then ok "--tuned: the row's config_source names what was dropped"
else bad "--tuned: the row's config_source names what was dropped" "$(tail -1 "$T/rtuned.csv")"; fi

# run says which tuning table it reads, or that it reads none (one line on stderr)
run run --device opencl:0 --shapes "$T/ragged1.csv" --out "$T/rtuned.csv" --tuned --tuning "$T/rtune.csv" --verify-only
check "run --tuned names the tuning table it reads and its classes for this device" 0 \
    err "fabench run: tuning table $T/rtune.csv, 1 class of this GPU and runtime"
run run --device opencl:0 --shapes "$T/ragged1.csv" --out "$T/rtuned.csv" --verify-only
check "run without --tuned says it reads no tuning table" 0 err "fabench run: no tuning table (no --tuned): the runtime's default configurations"

# --tuned without a row of the shape's class: fallback.csv's rule for its regime and features
# (beside the tuning table), else the regime's default; config_source says which
mkdir -p "$T/fb"
printf '%s\n"%s",opencl,bf16-d64-c1-g2-q32-k64-w2,MMA=fma;BLOCK_M=16;BLOCK_N=16;NUM_WARPS=1;WARP_M=1;STAGES=1;SPLIT_KV=1;PACK_GQA=0;KPAD=1,1.0,1.0,1,1,x,exhaustive,2026-01-01T00:00:00Z\n' \
    "gpu,backend,shape_class,config,median_us,tflops,configs_explored,configs_in_space,shape,strategy,date" "$gpu" >"$T/fb/tuning.csv"
printf '%s\n%s\n%s\n%s\n' "$HDR" "fb-decode,2,4,1,1,100,64,1" "fb-short,1,2,2,40,40,32,0" "fb-tuned,1,2,1,32,64,64,1" >"$T/fb.csv"
run run --device opencl:0 --shapes "$T/fb.csv" --out "$T/fb.out.csv" --tuned --tuning "$T/fb/tuning.csv" --verify-only
check "run --tuned without fallback.csv: the regime's default, and stderr says fallback.csv is missing" 0 \
    err "no fallback.csv beside it (\`fabench fit-fallback\` writes it)"
printf '%s\n"%s",opencl,1,decode,gqa>2 & fill<=8,MMA=fma;BLOCK_M=16;BLOCK_N=32;NUM_WARPS=2;WARP_M=1;STAGES=1;KPAD=1,fill=4,2,2,0,1.000,a test rule\n' \
    "gpu,backend,rule,regime,conditions,config,split_kv,classes,within_10pct,untimed,geomean,why" "$gpu" >"$T/fb/fallback.csv"
run run --device opencl:0 --shapes "$T/fb.csv" --out "$T/fb.out.csv" --tuned --tuning "$T/fb/tuning.csv" --verify-only --quiet
check "run --tuned with fallback.csv: every shape runs" 0
csv_py "run --tuned: config_source names the tuned class, the rule (its regime and conditions) or the regime's default" '
import csv, sys
rows = {r["name"]: r for r in csv.DictReader(open(sys.argv[1]))}
want = {"fb-decode": "rule 1 of fallback.csv (decode: gqa>2 & fill<=8)",
        "fb-short": "default for short-prefill (no rule of fallback.csv matches)",
        "fb-tuned": "tuned bf16-d64-c1-g2-q32-k64-w2"}
for n, w in want.items():
    r = rows.get(n)
    if not r or r["config_source"] != w or r["status"] != "ok": print("%s: %r" % (n, r and (r["config_source"], r["status"])))
# the rule: B x Hkv = 2 work-groups on 2 compute units, split to about 4 a compute unit
if "SPLIT_KV=4;" not in rows["fb-decode"]["config"] or "BLOCK_N=32;NUM_WARPS=2" not in rows["fb-decode"]["config"]:
    print("fb-decode config %r" % rows["fb-decode"]["config"])
' "$T/fb.out.csv"
printf 'gpu,backend,rule\n"%s",opencl,x\n' "$gpu" >"$T/fb/fallback.csv"
run run --device opencl:0 --shapes "$T/fb.csv" --out "$T/fb.out.csv" --tuned --tuning "$T/fb/tuning.csv" --dry-run
check "run --tuned: a malformed fallback.csv is bad input, named" 2 err "$T/fb/fallback.csv:1: not a fallback table"

# fit-fallback: the rules fitted to a results folder (the fixture: tests/data/fallback), and
# --loo's check, leaving one class out at a time
run fit-fallback
check "fit-fallback without --results exits 2" 2 err "--results DIR is required"
run fit-fallback --results "$T/no-such-dir"
check "fit-fallback: a folder without tables exits 2 naming the file" 2 err "$T/no-such-dir/tuning.csv"
mkdir -p "$T/fx"
cp "$DATA/fallback/tuning.csv" "$DATA/fallback/explored.csv" "$DATA/fallback/manifest.csv" "$T/fx/"
run fit-fallback --results "$T/fx" --loo
check "fit-fallback --loo: rules and the per-regime check, with the nearest-class lookup beside them" 0 \
    out "Fixture GPU / cuda: 9 classes (9 of today's keys; 1 without a shape left out)" out "3 rules" \
    out "leave one class out (9 classes)" out "fitted rule" out "nearest class (before)"
csv_py "fit-fallback: fallback.csv, fallback_loo.csv and its summary, as the fixture was built" '
import csv, sys
d = sys.argv[1]
rules = list(csv.DictReader(open(d + "/fallback.csv")))
got = [(r["rule"], r["regime"], r["conditions"], r["split_kv"]) for r in rules]
want = [("1", "decode", "fill<=2", "fill=0.97"), ("2", "decode", "fill>2", "fill=3.88"), ("3", "long-prefill", "any", "auto")]
if got != want: print("rules %r" % got)
loo = list(csv.DictReader(open(d + "/fallback_loo.csv")))
if len(loo) != 9 or any(r["rule_ratio"] != "1.0000" for r in loo): print("loo %r" % [(r["shape_class"], r["rule_ratio"]) for r in loo])
s = {(r["regime"], r["method"]): r for r in csv.DictReader(open(d + "/fallback_loo_summary.csv"))}
a, n = s[("all", "fitted rule")], s[("all", "nearest class (before)")]
if (a["within_10pct"], a["untimed"], n["within_10pct"], n["untimed"]) != ("9", "0", "3", "0"): print("summary %r %r" % (a, n))
' "$T/fx"
run fit-fallback --results "$T/fx" --backend opencl
check "fit-fallback --backend without its device in the manifest exits 2 saying so" 2 err "no opencl.arch"

# tools/gen-shapes.py: random realistic shapes, checked by fabench run --dry-run, and a few
# at the CPU's scale run --tuned with the fixture's rules (verified)
if [ "$HAVE_PY" -eq 1 ]; then
    python3 tools/gen-shapes.py --seed 1 --count 40 --kinds decode,prefill,chunked,cross,tiny,paged,ragged,mixed \
        --out "$T/gen.csv" 2>"$T/gen.err"
    if grep -q "seed 1 is a development seed" "$T/gen.err" && [ "$(wc -l <"$T/gen.csv")" -eq 41 ]; then
        ok "gen-shapes.py: 40 shapes, and seed 1 is named a development seed"
    else bad "gen-shapes.py: 40 shapes, and seed 1 is named a development seed" "$(cat "$T/gen.err")"; fi
    run run --device opencl:0 --shapes "$T/gen.csv" --out "$T/gen.out.csv" --dry-run
    check "gen-shapes.py: its shapes pass fabench run --dry-run" 0 err "40 shapes on opencl:0, every input checked"
    python3 tools/gen-shapes.py --seed 1 --count 40 --kinds decode,prefill,chunked,cross,tiny,paged,ragged,mixed --out "$T/gen2.csv" 2>/dev/null
    if cmp -s "$T/gen.csv" "$T/gen2.csv"; then ok "gen-shapes.py: the same seed gives the same file"
    else bad "gen-shapes.py: the same seed gives the same file"; fi
    python3 tools/gen-shapes.py --seed 2 --count 6 --tiny --kinds decode,chunked,cross,tiny,paged,mixed --out "$T/gent.csv" 2>/dev/null
    rm -f "$T/fb/fallback.csv"
    run run --device opencl:0 --shapes "$T/gent.csv" --out "$T/gent.out.csv" --tuned --tuning "$T/fb/tuning.csv" --verify-only --quiet
    check "gen-shapes.py --tiny: six shapes of six kinds verify on PoCL with their regimes' defaults" 0
    if python3 tools/gen-shapes.py --seed 1 --count 3 --kinds decode,bogus >/dev/null 2>"$T/gen.err"; then
        bad "gen-shapes.py: an unknown kind fails"
    elif grep -q "unknown kind bogus" "$T/gen.err"; then ok "gen-shapes.py: an unknown kind fails, naming it"
    else bad "gen-shapes.py: an unknown kind fails, naming it" "$(cat "$T/gen.err")"; fi
else
    skipc "gen-shapes.py: python3 is missing"
fi

# tune: what the run would take without the class's row (run --tuned's fallback: here the rule
# of fallback.csv in the results folder; and the runtime's default) always contends in the
# class's head-to-head, so the row written is never slower there. The space holds one
# candidate, neither of them. (A shallow tune wrote a row that made the next run slower:
# nothing but the search's short timings decided.)
printf '%s\n%s\n' "$HDR" "hh,1,2,1,48,48,64,1" >"$T/hh.csv"
printf 'param,value,when\nMMA,fma,\nBLOCK_M,16,\nBLOCK_N,16,\nNUM_WARPS,1,\nSTAGES,1,\nWARP_M,1,\nKPAD,0,\n' >"$T/hh-space.csv"
mkdir -p "$T/hh"
printf '%s\n"%s",opencl,bf16-d64-c1-g2-q128-k128-w2,MMA=fma;BLOCK_M=32;BLOCK_N=32;NUM_WARPS=2;WARP_M=1;STAGES=1;SPLIT_KV=1;PACK_GQA=0;KPAD=1,1.0,1.0,1,1,x,random,2026-01-01T00:00:00Z\n' \
    "gpu,backend,shape_class,config,median_us,tflops,configs_explored,configs_in_space,shape,strategy,date" "$gpu" >"$T/hh/tuning.csv"
printf '%s\n"%s",opencl,1,short-prefill,any,MMA=fma;BLOCK_M=32;BLOCK_N=32;NUM_WARPS=2;WARP_M=1;STAGES=1;PACK_GQA=0;KPAD=1,auto,1,1,0,1.000,planted\n' \
    "gpu,backend,rule,regime,conditions,config,split_kv,classes,within_10pct,untimed,geomean,why" "$gpu" >"$T/hh/fallback.csv"
run tune --device opencl:0 --shapes "$T/hh.csv" --results "$T/hh" --space "$T/hh-space.csv" --strategy random --candidates 1 --rep-budget 0.01
check "tune: the runtime's default and run --tuned's fallback contend beside the search's best" 0 \
    err "(this run's best)" err "(the runtime's default)" err "(run --tuned without the row: rule 1 of fallback.csv (short-prefill: any))"
# the row written: the head-to-head's winner, never slower there than the default
python3 - "$T/hh/tuning.csv" "$T/stderr" >"$T/hh.why" <<'PY'
import csv, re, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["shape_class"] != "bf16-d64-c1-g2-q128-k128-w2"]
times = {m.group(1): (float(m.group(2)), m.group(3))
         for m in re.finditer(r"timed again (\S+): ([0-9.]+) us \(([^)]*)\)", open(sys.argv[2]).read())}
dflt = [t for t, src in times.values() if src == "the runtime's default"]
if len(rows) != 1 or rows[0]["config"] not in times or not dflt or times[rows[0]["config"]][0] > dflt[0]:
    print("row %s, times %s" % ([r["config"] for r in rows], times))
PY
if [ ! -s "$T/hh.why" ]; then ok "tune: the row written is the head-to-head's winner, not slower there than the default"
else bad "tune: the row written is the head-to-head's winner" "$(cat "$T/hh.why")"; fi
run check-results "$T/hh"
check "tune: the fallbacks' explored rows make a clean folder" 0 out "0 problems"
# fit-fallback's files (the fixture's, as if this GPU's) in a results folder: checked
for f in fallback.csv fallback_loo.csv fallback_loo_summary.csv; do sed "s|Fixture GPU|$gpu|" "$T/fx/$f" >"$T/hh/$f"; done
run check-results --quiet "$T/hh"
check "check-results: fit-fallback's three files pass" 0 out "0 problems"
sed -i '2s/fill<=2/fill<<2/' "$T/hh/fallback.csv"
run check-results --quiet "$T/hh"
check "check-results: a fallback.csv rule whose conditions do not parse is named by file, line and column" 1 \
    out "fallback.csv:2: conditions"
rm -f "$T/hh/fallback.csv" "$T/hh/fallback_loo.csv" "$T/hh/fallback_loo_summary.csv"

# ---------- a deliberately wrong kernel is caught ----------
run run --device opencl:0 --shapes "$T/skv300.csv" --out "$T/fault.csv" --config FAULT_SKIP_LAST_TILE=1 "${TINY[@]}"
check "FAULT_SKIP_LAST_TILE=1 on skv=300 exits 1" 1
csv_py "FAULT_SKIP_LAST_TILE=1: the row's status is wrong_result" '
import csv, sys
try:
    rows = list(csv.DictReader(open(sys.argv[1], newline="")))
except OSError as e:
    print(e); sys.exit()
if len(rows) != 1: print("%d rows, expected 1" % len(rows))
for r in rows:
    if r.get("status") != "wrong_result": print("status %r, expected wrong_result" % r.get("status"))
    if r.get("median_us"): print("median_us %r on a wrong result" % r.get("median_us"))
    if r.get("config_source") != "--config": print("config_source %r, expected --config (a hook alone is a --config)" % r.get("config_source"))
' "$T/fault.csv"

# ---------- --append ----------
rm -f "$T/a.csv"
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/a.csv" --append --verify-only --quiet
rc1=$RC
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/a.csv" --append --verify-only --quiet
check "--append twice exits 0 both times" 0
[ "$rc1" -eq 0 ] || bad "--append: first run exit $rc1, expected 0"
csv_py "--append twice: one header, 4 rows" "$PY_PERF" "$T/a.csv" "$PERF_COLS" 4 verify
if [ -f "$T/a.csv" ]; then
    nh=$(grep -c '^gpu,backend,' "$T/a.csv")
    if [ "$nh" -eq 1 ]; then ok "--append twice: header line appears once"; else bad "--append twice: header line appears once" "found $nh"; fi
else
    bad "--append twice: header line appears once" "$T/a.csv missing"
fi

# --resume: a run cut short (here: one of the two rows kept) goes on with the shape it lacks
head -n 2 "$T/a.csv" >"$T/r.csv"
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/r.csv" --resume --verify-only
check "--resume runs only the shape the file lacks" 0 err "--resume: 1 shapes already had rows"
csv_py "--resume: the kept row and the missing one, 2 rows" "$PY_PERF" "$T/r.csv" "$PERF_COLS" 2 verify
if [ "$(cut -d, -f5 "$T/r.csv" | sort | uniq -d)" = "" ]; then ok "--resume: no shape twice"
else bad "--resume: no shape twice" "$(cut -d, -f5 "$T/r.csv")"; fi
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/r.csv" --resume --verify-only
check "--resume on a finished file runs nothing" 0 err "--resume: 2 shapes already had rows" !err "[1/2]"

# a copy of the tree with another commit's .git (a remote GPU machine) names its commit
# and state through FABENCH_GIT_COMMIT and FABENCH_GIT_DIRTY (both values: one of them is
# not this tree's own state); without FABENCH_GIT_DIRTY the state is unknown
for dirty in yes no ""; do
    FABENCH_GIT_COMMIT=0123abc FABENCH_GIT_DIRTY=$dirty run run --device opencl:0 --shapes "$T/two.csv" --out "$T/g.csv" \
        --verify-only --quiet --config BLOCK_N=16 --manifest "$T/g.man.csv"
    want=${dirty:-unknown}
    if grep -qx 'git_commit,0123abc' "$T/g.man.csv" && grep -qx "git_dirty,$want" "$T/g.man.csv"
    then ok "FABENCH_GIT_COMMIT with FABENCH_GIT_DIRTY='$dirty': the manifest says 0123abc, $want"
    else bad "FABENCH_GIT_COMMIT with FABENCH_GIT_DIRTY='$dirty': the manifest says 0123abc, $want" "$(grep '^git_' "$T/g.man.csv")"; fi
    rm -f "$T/g.csv" "$T/g.man.csv"
done

# --update: the shapes measured again replace their rows where they stand; the manifest
# keeps the first run's keys and records the update under update.1.
rm -f "$T/u.csv" "$T/u.man.csv"
printf '%s\n%s\n' "$HDR" "tiny-third,1,2,2,16,32,64,1" >"$T/third.csv"
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/u.csv" --verify-only --quiet --config BLOCK_N=16 --manifest "$T/u.man.csv"
run run --device opencl:0 --shapes "$T/third.csv" --out "$T/u.csv" --append --verify-only --quiet
cp "$T/u.man.csv" "$T/u.man.orig"
printf '%s\n%s\n' "$HDR" "tiny-mha,1,2,2,16,16,64,0" >"$T/first.csv"
run run --device opencl:0 --shapes "$T/first.csv" --out "$T/u.csv" --update --verify-only --quiet --config BLOCK_N=32 --manifest "$T/u.man.csv"
check "--update exits 0" 0
if [ "$(cut -d, -f5 "$T/u.csv" | tr '\n' ' ')" = "name tiny-mha tiny-gqa-causal tiny-third " ]; then ok "--update: the row replaced where it stood, no shape twice"
else bad "--update: the row replaced where it stood, no shape twice" "$(cut -d, -f4,5 "$T/u.csv")"; fi
if grep -q '^[^,]*,[^,]*,portable,[^,]*BLOCK_N=32[^,]*,tiny-mha,' "$T/u.csv" && grep -q 'BLOCK_N=16[^,]*,tiny-gqa-causal,' "$T/u.csv"
then ok "--update: the updated shape has the new run's row, the others theirs"
else bad "--update: the updated shape has the new run's row, the others theirs" "$(cut -d, -f4,5 "$T/u.csv")"; fi
if grep -q '^update\.1\.run\.command,.*--update' "$T/u.man.csv" && grep -q '^update\.1\.git_commit,' "$T/u.man.csv" &&
    [ "$(grep '^run\.command,' "$T/u.man.csv")" = "$(grep '^run\.command,' "$T/u.man.orig")" ] &&
    [ "$(grep '^date,' "$T/u.man.csv")" = "$(grep '^date,' "$T/u.man.orig")" ]
then ok "--update: the manifest records the update under update.1. and keeps the run's own keys"
else bad "--update: the manifest records the update under update.1. and keeps the run's own keys" "$(diff "$T/u.man.orig" "$T/u.man.csv" | head -8)"; fi
run run --device opencl:0 --shapes "$T/first.csv" --out "$T/u.csv" --update --verify-only --quiet --manifest "$T/u.man.csv"
if grep -q '^update\.2\.run\.command,' "$T/u.man.csv"; then ok "--update again: update.2."
else bad "--update again: update.2." "$(grep '^update' "$T/u.man.csv" | cut -c1-60)"; fi
run vendors --device opencl:0 --shapes "$T/first.csv" --out "$T/u.csv" --update --manifest "$T/u.man.csv"
if grep -q '^update\.3\.vendors\.command,.*--update' "$T/u.man.csv" && grep -q '^update\.3\.vendor\.' "$T/u.man.csv" &&
    [ "$(grep '^date,' "$T/u.man.csv")" = "$(grep '^date,' "$T/u.man.orig")" ]
then ok "vendors --update: the manifest notes the command and the vendors under update.3."
else bad "vendors --update: the manifest notes the command and the vendors under update.3." "$(grep '^update\.3' "$T/u.man.csv" | cut -c1-80)"; fi
# one folder per GPU: a manifest naming another GPU stops run, vendors and tune before any
# work, naming the file, the line of its gpu key and both GPUs; nothing is written
mkdir -p "$T/other" && sed 's/^gpu,.*/gpu,Some Other GPU/' "$T/u.man.csv" >"$T/other/manifest.csv"
gline=$(grep -n '^gpu,' "$T/other/manifest.csv" | cut -d: -f1)
cp "$T/u.csv" "$T/other/perf.csv"; cp "$T/other/manifest.csv" "$T/other/m.orig"; cp "$T/u.csv" "$T/other/p.orig"
for cmd in run vendors; do
    for mode in --update ""; do # a fresh run too: refused before its empty perf.csv replaces theirs
        run $cmd --device opencl:0 --shapes "$T/first.csv" --out "$T/other/perf.csv" $mode --manifest "$T/other/manifest.csv"
        check "$cmd ${mode:-(fresh)}: a manifest of another GPU exits 2 naming file, line and both GPUs" 2 \
            err "$T/other/manifest.csv:$gline: field 'value' of key 'gpu'" err "Some Other GPU" err "one folder per GPU"
    done
done
run tune --device opencl:0 --shapes "$T/first.csv" --results "$T/other" --candidates 1
check "tune: a results folder of another GPU exits 2" 2 err "$T/other/manifest.csv:$gline" err "Some Other GPU"
if cmp -s "$T/other/manifest.csv" "$T/other/m.orig" && cmp -s "$T/other/perf.csv" "$T/other/p.orig" && [ ! -s "$T/other/tuning.csv" ] &&
    [ ! -e "$T/other/explored.csv" ]
then ok "another GPU's folder: manifest and perf.csv untouched, no tuning rows, no explored.csv written"
else bad "another GPU's folder: manifest and perf.csv untouched, no tuning rows, no explored.csv written" "$(ls -l "$T/other")"; fi
# vendors --append with a malformed --configs-out: perf.csv not written again either
printf 'impl,scope\nx\n' >"$T/badcfg.csv"
ino=$(stat -c %i "$T/u.csv")
run vendors --device opencl:0 --shapes "$T/first.csv" --out "$T/u.csv" --append --configs-out "$T/badcfg.csv"
check "vendors --append: a malformed --configs-out exits 2 naming it" 2 err "--configs-out: " err "$T/badcfg.csv"
if [ "$(stat -c %i "$T/u.csv")" = "$ino" ]; then ok "vendors: perf.csv not written when --configs-out is bad input"
else bad "vendors: perf.csv not written when --configs-out is bad input"; fi
# bad input is found before any output is touched: a malformed tuning table, a tuning
# table named but missing, a manifest in a missing folder, an output that is an input
cp "$T/u.csv" "$T/keep.csv"
TUNING_HDR="gpu,backend,shape_class,config,median_us,tflops,configs_explored,configs_in_space,shape,strategy,date"
printf '%s\nx,opencl,bf16-d64-c0-g1-q64-k64,BLOCK_M=abc,1,1,1,1,t,exhaustive,2026-01-01T00:00:00Z\n' "$TUNING_HDR" >"$T/tbadcfg.csv"
printf '%s\nx,opencl,garbage,MMA=fma,1,1,1,1,t,exhaustive,2026-01-01T00:00:00Z\n' "$TUNING_HDR" >"$T/tbadcls.csv"
run run --device opencl:0 --shapes "$T/first.csv" --out "$T/keep.csv" --tuning "$T/tbadcfg.csv"
check "--tuning with a bad config exits 2 naming file, line and field" 2 err "$T/tbadcfg.csv:2: field 'config'"
run run --device opencl:0 --shapes "$T/first.csv" --out "$T/keep.csv" --tuning "$T/tbadcls.csv"
check "--tuning with a row whose class is no class exits 2 naming file, line and field" 2 err "$T/tbadcls.csv:2: field 'shape_class'"
run run --device opencl:0 --shapes "$T/first.csv" --out "$T/keep.csv" --tuning "$T/no-such-tuning.csv"
check "--tuning naming a missing file exits 2" 2 err "--tuning $T/no-such-tuning.csv"
run run --device opencl:0 --shapes "$T/first.csv" --out "$T/keep.csv" --manifest "$T/no-such-dir/m.csv"
check "--manifest in a missing folder exits 2" 2 err "$T/no-such-dir"
if cmp -s "$T/u.csv" "$T/keep.csv"; then ok "bad input: the existing --out file untouched"
else bad "bad input: the existing --out file untouched" "$(head -c 200 "$T/keep.csv")"; fi
cp "$T/first.csv" "$T/first.keep"
run run --device opencl:0 --shapes "$T/first.csv" --out "$T/first.csv"
check "run --out naming the --shapes file exits 2" 2 err "is the --shapes file"
run vendors --device opencl:0 --shapes "$T/first.csv" --out "$T/first.csv"
check "vendors --out naming the --shapes file exits 2" 2 err "is the --shapes file"
run run --device opencl:0 --shapes "$T/first.csv" --out "$T/new-m.csv" --manifest "$T/./new-m.csv"
check "--out and --manifest naming one file not there yet exits 2" 2 err "is the --manifest file"
if [ -e "$T/new-m.csv" ]; then bad "--out and --manifest naming one new file: nothing written"; else ok "--out and --manifest naming one new file: nothing written"; fi
if cmp -s "$T/first.csv" "$T/first.keep"; then ok "--out naming the shapes file: the shapes untouched"
else bad "--out naming the shapes file: the shapes untouched"; fi
# two processes rewriting one results file would lose each other's rows: the second is refused
"$FB" run --device opencl:0 --shapes "$T/first.csv" --out "$T/busy.csv" --rest 30 --quiet & bpid=$! # busy resting
for _ in $(seq 300); do [ -s "$T/busy.csv" ] && break; sleep 0.1; done
run run --device opencl:0 --shapes "$T/first.csv" --out "$T/busy.csv" --append
check "a second writer of one --out exits 2 naming the file" 2 err "$T/busy.csv: another fabench process"
run vendors --device opencl:0 --shapes "$T/first.csv" --out "$T/busy.csv" --append
check "vendors as the second writer of one --out exits 2" 2 err "is writing it"
kill $bpid 2>/dev/null; wait $bpid 2>/dev/null
run run --device opencl:0 --shapes "$T/first.csv" --out "$T/u.csv" --update --resume
check "--update with --resume exits 2 saying why" 2 err "--update" err "--resume"
run vendors --device opencl:0 --shapes "$T/first.csv" --out "$T/u.csv" --update --resume
check "vendors --update with --resume exits 2" 2 err "--update"

printf 'foo,bar\n1,2\n' >"$T/other.csv"
cp "$T/other.csv" "$T/other.orig"
run run --device opencl:0 --shapes "$T/two.csv" --out "$T/other.csv" --append "${TINY[@]}"
check "--append to a CSV with another header exits 2 naming the file" 2 err "$T/other.csv" err "header" !err "shapes on"
if cmp -s "$T/other.csv" "$T/other.orig"; then ok "--append to another header leaves the file unchanged"
else bad "--append to another header leaves the file unchanged" "$(head -3 "$T/other.csv")"; fi
no_tmp "--append refusal leaves no *.tmp.* file" "$T"

# ---------- tune's whole story: pruned.csv (rules and counts), explored rows' utc ----------
printf 'name,batch,hq,hkv,sq,skv,d,causal\npr-dec,2,8,2,1,300,64,1\n' >"$T/pr.csv"
run tune --device opencl:0 --shapes "$T/pr.csv" --results "$T/pr" --candidates 2 --quiet
story=$(python3 - "$T/pr" <<'PY'
import csv, sys
d = sys.argv[1]
pr = list(csv.DictReader(open(d + "/pruned.csv")))
tu = list(csv.DictReader(open(d + "/tuning.csv")))
ex = list(csv.DictReader(open(d + "/explored.csv")))
space = int(tu[0]["configs_in_space"])
dropped = sum(int(r["configs"]) for r in pr)
fill = any(r["rule"].startswith("fill: ") for r in pr)
keys = {(r["shape_class"], r["rule"]) for r in pr}
utc = all(len(r["utc"]) == 20 and r["utc"].endswith("Z") for r in ex)
print("ok" if 0 < dropped < space and fill and len(keys) == len(pr) and utc and
      all(r["shape_class"] == tu[0]["shape_class"] for r in pr) else
      "dropped %d of %d, fill %s, unique %s, utc %s" % (dropped, space, fill, len(keys) == len(pr), utc))
PY
)
if [ "$RC" -eq 0 ] && [ "$story" = ok ]; then ok "tune: pruned.csv counts the combinations each rule dropped; explored rows carry utc"
else bad "tune: pruned.csv and explored utc" "rc=$RC $story" "$ERR"; fi
cp "$T/pr/pruned.csv" "$T/pr-first.csv"
run tune --device opencl:0 --shapes "$T/pr.csv" --results "$T/pr" --candidates 2 --quiet
if [ "$RC" -eq 0 ] && cmp -s <(cut -d, -f1-7 "$T/pr-first.csv") <(cut -d, -f1-7 "$T/pr/pruned.csv"); then
    ok "tune again: the class's pruned rows replaced, not added twice"
else bad "tune again: pruned rows not duplicated" "$(diff <(cut -d, -f1-7 "$T/pr-first.csv") <(cut -d, -f1-7 "$T/pr/pruned.csv") | head -5)"; fi
run check-results "$T/pr"
check "check-results: pruned.csv and explored.csv's utc are clean" 0 out " 0 problems"

# ---------- tune --strategy staged: stage 1 by tile form, the leading forms' bests in the head-to-head ----------
printf 'name,batch,hq,hkv,sq,skv,d,causal\nst-pre,1,1,1,64,64,32,1\n' >"$T/st.csv"
run tune --device opencl:0 --shapes "$T/st.csv" --results "$T/st" --strategy staged --candidates 9 --rep-budget 0.01
staged=$(python3 - "$T/st" <<'PY'
import csv, sys
ex = [r for r in csv.DictReader(open(sys.argv[1] + "/explored.csv")) if r["strategy"] == "staged"]
form = lambda c: tuple(kv for kv in c.split(";") if kv.split("=")[0] in ("MMA", "BLOCK_M", "BLOCK_N", "NUM_WARPS"))
first8 = [form(r["config"]) for r in ex[:8]]
print("ok" if len(ex) >= 9 and len(set(first8)) == 8 else "rows %d, forms in the first 8: %d" % (len(ex), len(set(first8))))
PY
)
finals=$(grep -c "timed again MMA=.*(this run's" "$T/stderr")
if [ "$RC" -eq 0 ] && [ "$staged" = ok ] && [ "$finals" -ge 2 ] && [ -s "$T/st/tuning.csv" ]; then
    ok "tune --strategy staged: eight tile forms first, the leading forms' bests timed again"
else bad "tune --strategy staged" "rc=$RC $staged finalists=$finals" "$(tail -5 "$T/stderr")"; fi

# ---------- fixtures kept in tests/data ----------
if [ -d "$DATA" ]; then
    for f in "$DATA"/bad-*.csv; do
        [ -e "$f" ] || continue
        rm -f "$T/bad.out.csv"
        run run --device opencl:0 --shapes "$f" --out "$T/bad.out.csv" "${TINY[@]}"
        check "tests/data/$(basename "$f") exits 2 naming the file" 2 err "$f:" !err "shapes on"
        absent "tests/data/$(basename "$f") leaves --out uncreated" "$T/bad.out.csv"
    done
fi

# tune --class KEY[,KEY]: only those classes' shapes; a key that is not a class, or no
# shape's, exits 2 before anything is written
run tune --device opencl:0 --shapes "$T/fb.csv" --results "$T/tcls" --class bf16-d32-c0
check "tune --class: not a class key exits 2 naming it" 2 err "--class: 'bf16-d32-c0' is not a shape class"
run tune --device opencl:0 --shapes "$T/fb.csv" --results "$T/tcls" --class "bf16-d64-c1-g2-q32-k64-w2,bf16-d128-c0-g1-q32-k64"
check "tune --class: a class no shape has exits 2 naming it" 2 err "no shape of the shapes is of class bf16-d128-c0-g1-q32-k64"
absent "tune --class: nothing written on bad input" "$T/tcls"
run tune --device opencl:0 --shapes "$T/fb.csv" --results "$T/tcls" --space "$T/hh-space.csv" --class bf16-d64-c1-g2-q32-k64-w2 \
    --candidates 1 --rep-budget 0.01 --quiet
check "tune --class: tunes the class named" 0
if [ "$(cut -d, -f3 "$T/tcls/tuning.csv" | sort -u | tr '\n' ' ')" = "bf16-d64-c1-g2-q32-k64-w2 shape_class " ] &&
    [ "$(tail -n +2 "$T/tcls/explored.csv" | grep -vc ',bf16-d64-c1-g2-q32-k64-w2,')" -eq 0 ]
then ok "tune --class: tuning.csv and explored.csv hold that class alone"
else bad "tune --class: tuning.csv and explored.csv hold that class alone" "$(cat "$T/tcls/tuning.csv")"; fi

# ---------- run --tune-missing: a class without a tuning.csv row, tuned on first sight ----------
# A copy of the tree whose space holds four candidates (fma, 16-row tiles, 16 or 32 keys, one
# or two warps) keeps each tune to seconds. Shapes: one of a class the table has (its row
# planted), two of one class it lacks (tm-new has the more work: the tune's representative).
mkdir -p "$T/tmroot/bench"; cp -r kernels "$T/tmroot/"; cp -r bench/suites "$T/tmroot/bench/"
printf 'param,value,when\nMMA,fma,\nBLOCK_M,16,\nBLOCK_N,16,\nBLOCK_N,32,\nNUM_WARPS,1,\nNUM_WARPS,2,\nSTAGES,1,\nWARP_M,1,\nKPAD,0,\n' \
    >"$T/tmroot/kernels/space.csv"
printf '%s\n%s\n%s\n%s\n' "$HDR" "tm-have,1,2,1,32,64,64,1" "tm-new,1,2,2,24,40,32,0" "tm-new2,1,2,2,20,36,32,0" >"$T/tm.csv"
mkdir -p "$T/tm" "$T/tmbad"
printf '%s\n"%s",opencl,bf16-d64-c1-g2-q32-k64-w2,MMA=fma;BLOCK_M=16;BLOCK_N=16;NUM_WARPS=1;WARP_M=1;STAGES=1;SPLIT_KV=1;PACK_GQA=0;KPAD=1,1.0,1.0,1,1,x,exhaustive,2026-01-01T00:00:00Z\n' \
    "gpu,backend,shape_class,config,median_us,tflops,configs_explored,configs_in_space,shape,strategy,date" "$gpu" >"$T/tm/tuning.csv"
cp "$T/tm/tuning.csv" "$T/tm.planted"
TM=(run --device opencl:0 --shapes "$T/tm.csv" --out "$T/tm/perf.csv" --tuning "$T/tm/tuning.csv" --budget 0.02 --warmup 0.01)
NEWCLS=bf16-d32-c0-g1-q32-k64-w2
# bad SECONDS: exit 2 naming the option, nothing written
for v in 0 -1 abc nan inf ""; do
    run run --device opencl:0 --shapes "$T/tm.csv" --out "$T/tmbad/perf.csv" --tune-missing "$v"
    check "run --tune-missing '$v': exit 2 naming the option" 2 err "--tune-missing"
done
run run --device opencl:0 --shapes "$T/tm.csv" --out "$T/tmbad/perf.csv" --tune-missing 5 --verify-only
check "run --tune-missing with --verify-only: exit 2, one of them" 2 err "one of them"
run run --device opencl:0 --shapes "$T/tm.csv" --out "$T/tmbad/perf.csv" --tune-missing 5 --tuning "$T/tmbad/table.csv"
check "run --tune-missing: a table not named tuning.csv exits 2 naming it" 2 err "must be a folder's tuning.csv" err "$T/tmbad/table.csv"
# an explored.csv of another schema beside the table: tune would refuse it mid-run, so the run
# refuses it before any work (its --out not made)
mkdir -p "$T/tmbadx"; printf 'gpu,backend,what\n' >"$T/tmbadx/explored.csv"
run run --device opencl:0 --shapes "$T/tm.csv" --out "$T/tmbad/perf.csv" --tune-missing 5 --tuning "$T/tmbadx/tuning.csv"
check "run --tune-missing: a malformed explored.csv beside the table exits 2 naming it" 2 err "$T/tmbadx/explored.csv"
if [ -z "$(ls -A "$T/tmbad")" ]; then ok "run --tune-missing: nothing written on bad input"
else bad "run --tune-missing: nothing written on bad input" "$(ls -A "$T/tmbad")"; fi

# SIGINT while the missing class is tuned (after its first candidate's row): the run stops
# (130) and every table is whole; the class has no row (a cut search never met the
# head-to-head), its explored rows stay
FABENCH_ROOT="$T/tmroot" "$FB" "${TM[@]}" --tune-missing 60 >/dev/null 2>"$T/tmint.err" & tmpid=$!
for _ in $(seq 600); do grep -qs ",$NEWCLS," "$T/tm/explored.csv" && break; sleep 0.05; done
kill -INT $tmpid; wait $tmpid; RC=$?
OUT=""; ERR=$(cat "$T/tmint.err")
check "run --tune-missing: SIGINT during the tune stops the run, exit 130" 130 err "tuning it"
cp "$T/tm/explored.csv" "$T/tm.explored.int" 2>/dev/null
csv_py "run --tune-missing: after SIGINT the tables are whole, the class has no row, the planted row unchanged" '
import csv, sys
d, planted, cls = sys.argv[1], sys.argv[2], sys.argv[3]
if open(d + "/tuning.csv").read() != open(planted).read(): print("tuning.csv changed: %r" % open(d + "/tuning.csv").read())
ex = [r for r in csv.DictReader(open(d + "/explored.csv")) if r["shape_class"] == cls]
if not ex: print("no explored row of %s" % cls)
perf = list(csv.DictReader(open(d + "/perf.csv")))
if any(r["name"] != "tm-have" for r in perf): print("perf rows %r" % [r["name"] for r in perf])
' "$T/tm" "$T/tm.planted" "$NEWCLS"

# the same command again: the class is tuned (its explored rows resumed) and measured with
# its new row; the present class is left alone
FABENCH_ROOT="$T/tmroot" run "${TM[@]}" --tune-missing 60
check "run --tune-missing: the missing class tuned once, then measured" 0 err "class $NEWCLS has no row"
n=$(grep -c "has no row in" "$T/stderr")
if [ "$n" -eq 1 ]; then ok "run --tune-missing: two shapes of one missing class tune it once"
else bad "run --tune-missing: two shapes of one missing class tune it once" "tuned $n times"; fi
csv_py "run --tune-missing: one new tuning.csv row, its explored rows, perf.csv says which source" '
import csv, re, sys
d, planted, cls, before = sys.argv[1:5]
rows = list(csv.DictReader(open(d + "/tuning.csv")))
lines = list(csv.reader(open(d + "/tuning.csv")))
if lines[:2] != list(csv.reader(open(planted))): print("the planted row changed: %r" % lines[:2])
new = [r for r in rows if r["shape_class"] == cls]
if len(rows) != 2 or len(new) != 1: print("tuning.csv classes %r" % [r["shape_class"] for r in rows])
new = new[0] if new else {}
ex = [r for r in csv.DictReader(open(d + "/explored.csv"))]
if any(r["shape_class"] != cls for r in ex): print("explored rows of another class")
mine = [r for r in ex if r["shape_class"] == cls and r["status"] == "ok"]
if new.get("config") not in [r["config"] for r in mine]: print("the row %r is no explored ok row" % new.get("config"))
if new.get("shape") != "tm-new" or new.get("strategy") != "exhaustive": print("row %r" % new)
n = int(new.get("configs_explored", "-1"))
if not 1 <= n <= 4 or sum(r["strategy"] == "exhaustive" and "timed beside" not in r["reason"] for r in ex) < n: print("configs_explored %d" % n)
if not open(d + "/explored.csv").read().startswith(open(before).read()): print("the interrupted run'"'"'s explored rows were not kept as they were")
src = {r["name"]: (r["config_source"], r["config"], r["status"]) for r in csv.DictReader(open(d + "/perf.csv"))}
if src.get("tm-have", ("",))[0] != "tuned bf16-d64-c1-g2-q32-k64-w2": print("tm-have %r" % (src.get("tm-have"),))
for name in ("tm-new", "tm-new2"):
    s, c, st = src.get(name, ("", "", ""))
    m = re.fullmatch(r"tuned %s \(tuned on first sight, (\d+) candidates?, [0-9.]+ s\)" % cls, s)
    if not m or int(m.group(1)) != n or c != new.get("config") or st != "ok": print("%s: %r" % (name, (s, c, st)))
' "$T/tm" "$T/tm.planted" "$NEWCLS" "$T/tm.explored.int"
cp "$T/tm/tuning.csv" "$T/tm.tuned"; cp "$T/tm/explored.csv" "$T/tm.explored"
FABENCH_ROOT="$T/tmroot" run "${TM[@]}" --tune-missing 60
check "run --tune-missing again: nothing to tune" 0 !err "has no row in"
if cmp -s "$T/tm/tuning.csv" "$T/tm.tuned" && cmp -s "$T/tm/explored.csv" "$T/tm.explored" && ! grep -q "first sight" "$T/tm/perf.csv"
then ok "run --tune-missing again: tuning.csv and explored.csv unchanged, no shape tuned on first sight"
else bad "run --tune-missing again: tuning.csv and explored.csv unchanged" "$(diff "$T/tm/tuning.csv" "$T/tm.tuned")"; fi
# without a table: made beside --out (run from a folder without results/, so the default
# table results/<gpu-slug>/tuning.csv does not exist)
mkdir -p "$T/tmfresh"; head -n 2 "$T/tm.csv" >"$T/tm1.csv"
(cd "$T" && FABENCH_ROOT="$T/tmroot" "$FB" run --device opencl:0 --shapes "$T/tm1.csv" --out "$T/tmfresh/perf.csv" \
    --tune-missing 60 --budget 0.02 --warmup 0.01 --quiet); RC=$?; OUT=""; ERR=""
check "run --tune-missing without a table: exit 0" 0
if [ -s "$T/tmfresh/tuning.csv" ] && grep -q ",bf16-d64-c1-g2-q32-k64-w2," "$T/tmfresh/tuning.csv" && [ -s "$T/tmfresh/explored.csv" ] \
    && grep -q "tuned on first sight" "$T/tmfresh/perf.csv"
then ok "run --tune-missing without a table makes tuning.csv and explored.csv beside --out"
else bad "run --tune-missing without a table makes tuning.csv beside --out" "$(ls "$T/tmfresh")"; fi
run check-results "$T/tm"
check "run --tune-missing: its folder passes check-results" 0 out "0 problems"

# ---- tune --rematch-budget: a number of seconds, more than 0 and at most 60; nothing written
printf 'name,batch,hq,hkv,sq,skv,d,causal\nm,1,2,2,64,64,64,0\n' >"$T/rm.csv"
for v in 0 -1 61 abc; do
    run tune --device opencl:0 --shapes "$T/rm.csv" --results "$T/rm" --rematch-budget "$v"
    check "tune --rematch-budget $v: exit 2 naming the option" 2 err "--rematch-budget: bad seconds '$v'"
done
absent "tune --rematch-budget: nothing written on bad input" "$T/rm"
# ---- one option, one meaning: --budget is seconds of timing in run and vendors, so tune,
# which counts candidates with --candidates, refuses it, naming the option to use
run tune --device opencl:0 --shapes "$T/rm.csv" --results "$T/rb" --budget 3
check "tune --budget 3: exit 2 saying it counts --candidates" 2 err "tune counts candidates: --candidates 3"
absent "tune --budget: nothing written" "$T/rb"
run tune --device opencl:0 --shapes "$T/rm.csv" --results "$T/rb" --candidates 0
check "tune --candidates 0: exit 2 naming the option" 2 err "--candidates: bad count '0'"

# ---- tune-replay: the searchers over recorded times (a synthetic explored.csv built from
# the committed sm_90 space listing; the times are a made-up smooth function of the
# configuration, with every seventh configuration failed) ----
SPACE=results/sm_90/space-d128-prefill/compiled.csv
if [ -f "$SPACE" ]; then
    awk -F, 'NR == 1 { print "gpu,backend,kernel,config,shape_class,shape,status,reason,compile_ms,median_us,tflops,registers,spill_bytes,shared_bytes,private_bytes,binary_bytes,max_abs_err,strategy,step"; next }
             { split($3, kv, ";"); t = 1000; for (i in kv) { split(kv[i], p, "=");
                 if (p[1] == "BLOCK_M") t *= (1 + (log(p[2]) / log(2) - 6.5) ^ 2 / 4);
                 if (p[1] == "BLOCK_N") t *= (1 + (log(p[2]) / log(2) - 6) ^ 2 / 3);
                 if (p[1] == "NUM_WARPS") t *= (1 + (p[2] - 4) ^ 2 / 20);
                 if (p[1] == "MMA" && p[2] == "fma") t *= 8; }
               st = (NR % 7 == 0) ? "wrong_result" : "ok";
               printf "GPU X,cuda,attn_fwd,%s,%s,s,%s,,1,%s,,,,,,,,exhaustive,%d\n", $3, $4, st, st == "ok" ? sprintf("%.3f", t) : "", NR - 1 }' \
        "$SPACE" > "$T/explored.csv"
    nspace=$(($(wc -l < "$SPACE") - 1)) # configurations in the listing
    run tune-replay "$T/explored.csv" --seeds 5 --out "$T/conv.csv"
    check "tune-replay: replays random and bo over a recorded class and prints a summary" 0 \
        out "$nspace configurations" out "summary over 1 classes" out "random" out "bo"
    if [ -f "$T/conv.csv" ] && [ "$(($(wc -l < "$T/conv.csv") - 1))" -eq $((nspace * 10)) ]; then
        ok "tune-replay: convergence.csv has one row per configuration asked, per strategy and seed"
    else
        bad "tune-replay: convergence.csv rows" "$(wc -l < "$T/conv.csv" 2>/dev/null)"
    fi
    C=$T/nvidia-h200 # a committed manifest, so that the folder is otherwise valid
    mkdir -p "$C" && cp "$T/conv.csv" "$C/convergence.csv" && cp results/nvidia-h200/manifest.csv "$C/"
    run check-results "$C"
    check "check-results: tune-replay's convergence.csv passes" 0 out "0 problems"
    sed '3s/^\([^,]*,[^,]*,[^,]*,[^,]*\),[0-9]*,/\1,zero,/' "$T/conv.csv" > "$C/convergence.csv"
    run check-results "$C"
    check "check-results: a bad seed in convergence.csv is named by file, line and column" 1 out "convergence.csv:3" out "seed"
    run tune-replay "$T/explored.csv" --strategy exhaustive --seeds 3 --budget-frac 1
    check "tune-replay: exhaustive replays once, in file order, and finds the best with the whole space" 0 out "exhaustive" out "1 of 1 runs"
    best=$(awk -F, 'NR > 1 && $7 == "ok" && (b == "" || $10 + 0 < bt) { b = $4; bt = $10 + 0 } END { print b }' "$T/explored.csv" | tr ';' ',')
    run tune-replay "$T/explored.csv" --strategy exhaustive --budget-frac 0.01 --tolerance 0
    check "tune-replay: exhaustive in file order misses the best at a 1% budget" 0 out "0 of 1 runs"
    run tune-replay "$T/explored.csv" --strategy exhaustive --budget-frac 0.01 --tolerance 0 --first "$best"
    check "tune-replay: --first asks that configuration first, as tune does with the default" 0 \
        out "asked first" out "1 of 1 runs"
    # local: seeded with the nearest other class's fastest configuration (here a copy of the
    # class at Sq = 2048 with the same times), it lands on the best at once; alone it starts
    # in file order as exhaustive does and misses it at a 1% budget
    run tune-replay "$T/explored.csv" --strategy local --seeds 1 --budget-frac 0.01 --tolerance 0
    check "tune-replay: local with no other class to learn from misses the best at a 1% budget" 0 out "local" out "0 of 1 runs"
    { cat "$T/explored.csv"; tail -n +2 "$T/explored.csv" | sed 's/-q4096-k4096,/-q2048-k4096,/'; } > "$T/explored2.csv"
    run tune-replay "$T/explored2.csv" --strategy local --seeds 1 --budget-frac 0.01 --tolerance 0
    check "tune-replay: local seeded by the nearest class finds the best at a 1% budget in both classes" 0 \
        out "summary over 2 classes" out "2 of 2 runs within tolerance"
    { cat "$T/explored.csv"; tail -n +2 "$T/explored.csv" | sed 's/-c0-g1-q4096-k4096,/-c1-g1-q4096-k4096,/'; } > "$T/explored3.csv"
    run tune-replay "$T/explored3.csv" --strategy local --seeds 1 --budget-frac 0.01 --tolerance 0
    check "tune-replay: local borrows from the other causality when no class of its own is near" 0 \
        out "summary over 2 classes" out "2 of 2 runs within tolerance"
    run tune-replay "$T/explored.csv" --first "BLOCK_M=7"
    check "tune-replay: a bad --first exits 2" 2 err "--first"
    run tune-replay "$T/explored.csv" --strategy annealing
    check "tune-replay: an unknown strategy exits 2 naming it" 2 err "annealing"
    head -1 "$T/explored.csv" | sed 's/median_us/med/' > "$T/nocol.csv"
    run tune-replay "$T/nocol.csv"
    check "tune-replay: a file without median_us exits 2 naming the file and column" 2 err "$T/nocol.csv:1" err "median_us"
    sed '5s/,ok,,1,[0-9.]*,/,ok,,1,fast,/' "$T/explored.csv" > "$T/badtime.csv"
    run tune-replay "$T/badtime.csv"
    check "tune-replay: a bad time exits 2 naming file, line and field" 2 err "$T/badtime.csv:5: median_us"
    run tune-replay "$T/explored.csv" --min-configs 500
    check "tune-replay: too small a space is an error, not an empty summary" 2 err "no class has 500"
else
    skipc "tune-replay: $SPACE is missing"
fi

[ "$skip" -eq 0 ] || echo "$skip skipped"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
