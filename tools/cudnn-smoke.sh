#!/usr/bin/env bash
# cudnn-smoke.sh [DEVICE] [OUTDIR]: one short run that validates the cuDNN vendor on a GPU and
# leaves enough behind to pin down any failure. DEVICE defaults to cuda:0, OUTDIR to $OUT (the
# device runner's folder) or results/cudnn-smoke.
#   1. builds fabench when needed; prints the GPU, driver and the libcudnn that will load
#   2. the smoke suite (odd lengths, GQA/MQA, bottom-right causal, decode) in bf16 with
#      FABENCH_CUDNN_DEBUG=1 and cuDNN's own error log: every backend call is traced into
#      OUTDIR/smoke-debug.log; failed calls and chosen engines are echoed here
#   3. the reference suite (B4 H32 S4096 D128, causal, decode) for cudnn and, where PyTorch
#      is installed, torch-cudnn and torch-flash beside it
#   4. the smoke suite again in fp16 (traced too)
#   5. tools/vendor-kernels.sh, where cuobjdump is installed
# The whole run stays within $SMOKE_SECONDS (default 540) so it fits a 10-minute slot.
# Every row is verified against the harness's CPU reference. Outputs: smoke.csv, ref.csv,
# configs.csv (impl,scope,configs,method), manifest.csv, smoke-debug.log, and deviceprop.json (the
# GPU's properties as cuDNN 9.8+ serializes them, for building plans without the GPU later).
set -u
cd "$(dirname "$0")/.." || exit 1
dev=${1:-cuda:0}
out=${2:-${OUT:-results/cudnn-smoke}}
mkdir -p "$out" || exit 2
FB=build/fabench
say() { printf '\n=== %s\n' "$*"; }
deadline=$((SECONDS + ${SMOKE_SECONDS:-540}))
# left CAP: seconds for the next step, at most CAP, at least 10
left() { local l=$((deadline - SECONDS)); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 10 ] && l=10; echo "$l"; }

say "build"
if ! make -s -j"$(nproc 2>/dev/null || echo 4)" >"$out/build.log" 2>&1; then
    tail -n 30 "$out/build.log"
    echo "cudnn-smoke: the build failed (bash tools/ensure-deps.sh build says what is missing)"
    exit 2
fi
echo "built $FB"

say "machine"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader
ldconfig -p 2>/dev/null | grep -E 'libcudnn\.so|libcuda\.so\.1' | sed 's/^/  ldconfig: /'
if [ -z "${FABENCH_CUDNN_LIB:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcudnn\.so\.9 ' &&
   ! ls /usr/local/cuda/lib64/libcudnn.so.9 /usr/local/cuda/lib/libcudnn.so.9 >/dev/null 2>&1; then
    # no system cuDNN: use the one PyTorch's wheels bring (nvidia-cudnn-cu*)
    nd=$(python3 -c 'import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
    if [ -n "$nd" ] && [ -e "$nd/libcudnn.so.9" ]; then
        export FABENCH_CUDNN_LIB=$nd/libcudnn.so.9 LD_LIBRARY_PATH=$nd${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        echo "  no system cuDNN; using PyTorch's: $FABENCH_CUDNN_LIB"
    fi
fi
$FB devices 2>&1 | sed 's/^/  /'

# smoke DTYPE CAP: the smoke suite in DTYPE, traced into smoke-debug.log
smoke() {
    FABENCH_CUDNN_DEBUG=1 CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=stderr FABENCH_CUDNN_DEVICEPROP_OUT="$out/deviceprop.json" \
        timeout "$(left "$2")" $FB vendors --device "$dev" --impl cudnn --suite smoke --dtype "$1" --out "$out/smoke.csv" \
        --append --configs-out "$out/configs.csv" --manifest "$out/manifest.csv" --budget 0.05 --warmup 0.02 \
        >>"$out/smoke-debug.log" 2>&1
    echo "smoke $1: exit $? (124: timed out)"
}
report() {
    echo "--- progress lines"
    grep -E '^\[[0-9]+/[0-9]+\]|fabench vendors:' "$out/smoke-debug.log" | cut -c1-400
    echo "--- engine configs tried, chosen engines and plans"
    grep -E 'chosen engine config|^\[cudnn\] plan for|no plan for|engines for this operation graph|: candidate [0-9]+/[0-9]+|heuristics mode .* offered' \
        "$out/smoke-debug.log" | sort | uniq -c | cut -c1-400 | head -n 80
    echo "--- failed backend and driver calls (first 40)"
    grep -E '^\[cudnn\] .* -> ' "$out/smoke-debug.log" | grep -vE -- '-> (CUDNN_STATUS_SUCCESS|CUDA_SUCCESS)$' |
        cut -c1-600 | head -n 40
    echo "--- cuDNN's own log: errors and warnings (first 20)"
    grep -vE '^\[cudnn\]|^\[[0-9]+/' "$out/smoke-debug.log" | grep -iE 'error|warn|E!|W!' | cut -c1-400 | head -n 20
}

say "smoke suite, bf16, FABENCH_CUDNN_DEBUG=1 (trace: $out/smoke-debug.log)"
rm -f "$out/smoke.csv" "$out/configs.csv" "$out/ref.csv"
: >"$out/smoke-debug.log"
smoke bf16 180
report

say "reference suite: cudnn beside torch-cudnn and torch-flash"
timeout "$(left 240)" $FB vendors --device "$dev" --impl cudnn,torch-cudnn,torch-flash --suite ref --out "$out/ref.csv" \
    --configs-out "$out/configs.csv" --append --manifest "$out/manifest.csv" 2>&1 | cut -c1-400
echo "ref: exit ${PIPESTATUS[0]} (124: timed out)"

say "smoke suite, fp16"
smoke fp16 120
grep -E '^\[[0-9]+/[0-9]+\].* fp16 ' "$out/smoke-debug.log" | cut -c1-400

say "vendor kernels (tools/vendor-kernels.sh)"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
timeout "$(left 90)" bash tools/vendor-kernels.sh "$out/configs.csv" ${arch:+--arch sm_$arch} 2>&1 | cut -c1-300

say "results"
for f in smoke ref; do
    [ -e "$out/$f.csv" ] || continue
    echo "--- $f.csv: name dtype impl status median_us tflops max_abs_err | config | reason"
    python3 - "$out/$f.csv" <<'PY' 2>/dev/null || cat "$out/$f.csv"
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(f"{r['name']:38} {r['dtype']} {r['impl']:11} {r['status']:13} {r['median_us']:>10} {r['tflops']:>8} "
          f"{r['max_abs_err']:>8} | {r['config'][:110]} | {r['reason'][:220]}")
PY
done
echo "--- configs.csv"
cat "$out/configs.csv" 2>/dev/null
echo "--- manifest (vendor keys)"
grep -E '^vendor\.' "$out/manifest.csv" 2>/dev/null
