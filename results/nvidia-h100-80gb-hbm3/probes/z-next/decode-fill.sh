#!/bin/bash
# decode-fill.sh [COUNT]: does fit-fallback's tie rule (4afede9: among fills a rule's classes
# cannot tell apart, the one nearest its winners' own, not the lowest) make untuned decode
# shapes faster? One device call: COUNT (default 40) decode shapes of a development seed of
# tools/gen-shapes.py (never a reporting one), run --tuned twice, with the committed
# fallback.csv and with the one before the rule (decode-fill/fallback-before-<slug>.csv, the
# same tuning.csv beside each), and cuDNN, all under one run id; then, over the shapes whose
# configuration differs, the geomean of before's time over after's, and of cuDNN's over each.
# Run from the repo root on the device with .deps carried; $OUT gets decode-fill.tgz and
# summary.txt.
set -u
count=${1:-40}
here=$(cd "$(dirname "$0")" && pwd)
source "$(dirname "$0")/device-prologue.sh"
probe_start decode-fill
G=results/$slug
mkdir -p build/fb-before
[ -f "$here/decode-fill/fallback-before-$slug.csv" ] || { echo "no fallback-before-$slug.csv"; exit 2; }
cp "$G/tuning.csv" build/fb-before/tuning.csv
cp "$here/decode-fill/fallback-before-$slug.csv" build/fb-before/fallback.csv
python3 tools/gen-shapes.py --seed 3 --count "$count" --kinds decode 2>/dev/null >"$W/shapes.csv"
run() { # NAME [--tuning FILE]
    local name=$1; shift
    build/fabench run --device cuda:0 --shapes "$W/shapes.csv" --tuned "$@" --out "$W/$name.csv" --manifest "$W/manifest.csv" \
        >"build/decode-fill-$name.log" 2>&1
    echo "$name rc=$? t=$SECONDS"
}
run after
run before --tuning build/fb-before/tuning.csv
run_vendors decode-fill "$W" cudnn
python3 - "$W" <<'PY' | tee "$OUT/summary.txt"
import csv, math, sys
w = sys.argv[1]
def ok(p):
    try: return {r["name"]: r for r in csv.DictReader(open(p)) if r["status"] == "ok"}
    except OSError: return {}
a, b, v = ok(f"{w}/after.csv"), ok(f"{w}/before.csv"), ok(f"{w}/vendors.csv")
def gm(xs): return f"{math.exp(sum(map(math.log, xs)) / len(xs)):.3f} over {len(xs)}" if xs else "-"
diff = [n for n in a if n in b and a[n]["config"] != b[n]["config"]]
t = lambda r: float(r["median_us"])
print(f"{len(diff)} of {len(a)} shapes take another configuration after the tie rule")
for n in diff:
    cu = f"{t(v[n]):9.2f}" if n in v else "        -"
    print(f"  {n:40s} before {t(b[n]):9.2f} us  after {t(a[n]):9.2f} us  cudnn {cu} us")
print("before / after (above 1: the rule is faster):", gm([t(b[n]) / t(a[n]) for n in diff]))
print("cudnn / after:", gm([t(v[n]) / t(a[n]) for n in diff if n in v]), " cudnn / before:", gm([t(v[n]) / t(b[n]) for n in diff if n in v]))
print("all shapes, cudnn / after:", gm([t(v[n]) / t(a[n]) for n in a if n in v]))
PY
