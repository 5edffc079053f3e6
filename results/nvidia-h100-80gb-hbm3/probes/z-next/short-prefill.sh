#!/bin/bash
# short-prefill.sh [COUNT]: data for the short-prefill default (issue 45). Short prefill
# (16 < Sq <= 256) has no fallback rule on the H100 and falls to the regime default (mma.sync,
# 64 x 32 tiles), which lost 0.43x to cuDNN on a generated chunked prefill (stop 51). One
# device call: COUNT (default 28) short-prefill shapes from a development seed of
# tools/gen-shapes.py (never a reporting one), each candidate configuration below given as
# --config to every shape, and cuDNN and torch's cuDNN, all under one run id; then the
# geomean of cuDNN's time over each candidate's per candidate and head dim. Run from the repo
# root on the device with .deps carried; $OUT gets short-prefill.tgz and summary.txt.
set -u
count=${1:-28}
source "$(dirname "$0")/device-prologue.sh"
probe_start short-prefill
python3 tools/gen-shapes.py --seed 2 --count 400 --kinds prefill,chunked,cross 2>/dev/null |
    awk -F, 'NR == 1 || ($5 > 16 && $5 <= 256)' | head -n $((count + 1)) >"$W/shapes.csv"
cands=(
    "default:"
    "wg128:MMA=wgmma,BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=2,WG_SWIZZLE=1,WG_TMA=1"
    "wg64:MMA=wgmma,BLOCK_M=64,NUM_WARPS=4,BLOCK_N=128,STAGES=2,WG_SWIZZLE=1,WG_TMA=1"
    "wg128ws:MMA=wgmma,BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=2,WG_SWIZZLE=1,WG_TMA=1,WG_WS=1,WG_PINGPONG=1"
    "mma64x64:MMA=mma,BLOCK_M=64,NUM_WARPS=4,WARP_M=1,BLOCK_N=64,STAGES=2"
)
run_vendors short-prefill "$W" cudnn,torch-cudnn
run_candidates short-prefill "$W" "${cands[@]}"
python3 - "$W" "${cands[@]%%:*}" <<'PY' | tee "$OUT/summary.txt"
import csv, math, sys
w, names = sys.argv[1], sys.argv[2:]
def rows(p):
    try: return list(csv.DictReader(open(p)))
    except OSError: return []
ven = {}
for r in rows(f"{w}/vendors.csv"):
    if r["status"] == "ok":
        k = (r["name"], r["dtype"])
        ven[k] = min(ven.get(k, 1e30), float(r["median_us"]))
print("geomean of the best of cuDNN and torch's cuDNN over the candidate (above 1: faster), per head dim")
for n in names:
    by_d = {}
    for r in rows(f"{w}/{n}.csv"):
        k = (r["name"], r["dtype"])
        if r["status"] == "ok" and k in ven:
            by_d.setdefault(r["d"], []).append(math.log(ven[k] / float(r["median_us"])))
    allv = [v for vs in by_d.values() for v in vs]
    g = lambda v: f"{math.exp(sum(v) / len(v)):.3f} ({len(v)})" if v else "-"
    print(f"{n:10s} all {g(allv)}  " + "  ".join(f"d={d}: {g(v)}" for d, v in sorted(by_d.items(), key=lambda x: int(x[0]))))
PY
