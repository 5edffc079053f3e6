#!/bin/bash
# paged-tiles.sh: key tiles over several pages (2ebd8c0) on paged decode (issue 47: paged
# decode at 0.84-0.93x cuDNN on the H200, its 16-key pages holding mma to 16-key tiles). One
# device call: test_e2e's test_paged (the spanning cases verified on the GPU), then the
# paged suite's decode shapes with the committed table (--tuned) and with each candidate
# below given as --config (SPLIT_KV left to the per-shape default), and cuDNN, all under one
# run id; then cuDNN's time over each candidate's per shape and the geomean, and each
# shape's bytes moved against `fabench bandwidth`'s copy. Run from the repo root on the
# device with .deps carried; $OUT gets paged-tiles.tgz and summary.txt.
set -u
source "$(dirname "$0")/device-prologue.sh"
probe_start paged-tiles
make -j16 build/tests/test_e2e >/dev/null 2>&1
FABENCH_TEST_DEVICE=cuda:0 FABENCH_TEST_FILTER=test_paged timeout 150 build/tests/test_e2e >build/paged-tiles-e2e.log 2>&1
echo "test_paged rc=$? t=$SECONDS"
build/fabench bandwidth --device cuda:0 --out "$W/bandwidth.csv" --manifest "$W/manifest.csv" >build/paged-tiles-bandwidth.log 2>&1
awk -F, 'NR == 1 || $1 ~ /-decode-/' bench/suites/paged.csv >"$W/shapes.csv"
cands=(
    "tuned:"
    "mma16x64:MMA=mma,BLOCK_M=16,NUM_WARPS=1,BLOCK_N=64,STAGES=2,PACK_GQA=1"
    "mma16x32s3:MMA=mma,BLOCK_M=16,NUM_WARPS=1,BLOCK_N=32,STAGES=3,PACK_GQA=1"
    "kvw2x32:MMA=mma,BLOCK_M=16,NUM_WARPS=2,KV_WARPS=2,BLOCK_N=32,STAGES=2,PACK_GQA=1"
    "kvw4x16:MMA=mma,BLOCK_M=16,NUM_WARPS=4,KV_WARPS=4,BLOCK_N=16,STAGES=2,PACK_GQA=1"
    "kvw4x32:MMA=mma,BLOCK_M=16,NUM_WARPS=4,KV_WARPS=4,BLOCK_N=32,STAGES=2,PACK_GQA=1"
)
run_vendors paged-tiles "$W" cudnn
run_candidates paged-tiles "$W" "${cands[@]}"
python3 - "$W" "${cands[@]%%:*}" <<'PY' | tee "$OUT/summary.txt"
import csv, math, sys
w, names = sys.argv[1], sys.argv[2:]
def ok(p):
    try: return {r["name"]: r for r in csv.DictReader(open(p)) if r["status"] == "ok"}
    except OSError: return {}
bw = {}
try:
    for r in csv.DictReader(open(f"{w}/bandwidth.csv")):
        if r["status"] == "ok": bw[r["kernel"]] = max(bw.get(r["kernel"], 0.0), float(r["gbps"]))
except OSError:
    pass
ven = ok(f"{w}/vendors.csv")
print(f"copy bandwidth: {bw.get('copy', float('nan')):.1f} GB/s; per shape: cuDNN's time over the candidate's (above 1: faster), and GB/s")
rows = {n: ok(f"{w}/{n}.csv") for n in names}
for s in ven:
    cells = []
    for n in names:
        r = rows[n].get(s)
        cells.append(f"{n} {float(ven[s]['median_us']) / float(r['median_us']):.3f} {float(r['gbps']):.0f}" if r else f"{n} -")
    print(f"  {s:40s} cudnn {float(ven[s]['median_us']):8.1f} us {float(ven[s]['gbps']):.0f} GB/s | " + " | ".join(cells))
for n in names:
    v = [math.log(float(ven[s]["median_us"]) / float(r["median_us"])) for s, r in rows[n].items() if s in ven]
    print(f"{n:12s} geomean over cuDNN {math.exp(sum(v) / len(v)):.3f} ({len(v)} shapes)" if v else f"{n:12s} -")
PY
