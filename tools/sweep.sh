#!/usr/bin/env bash
# sweep.sh DEVICE SHAPES OUT.csv CONFIG...: runs `fabench run` once per configuration on
# the same shapes, appending every row (verified first, like any run) to OUT.csv, then
# prints the best verified configuration per shape. A hand sweep until the autotuner lands.
set -u
dev=$1; shapes=$2; out=$3; shift 3
for cfg in "$@"; do
    build/fabench run --device "$dev" --shapes "$shapes" --config "$cfg" --out "$out" --append \
        --budget "${SWEEP_BUDGET:-0.2}" --quiet
done
python3 - "$out" <<'PY'
import csv, sys
best = {}
for r in csv.DictReader(open(sys.argv[1])):
    if r["status"] != "ok" or not r["median_us"]:
        continue
    key = (r["backend"], r["name"], r["dtype"])
    if key not in best or float(r["median_us"]) < float(best[key]["median_us"]):
        best[key] = r
for (be, name, dt), r in sorted(best.items()):
    print(f"{be:7} {name:34} {dt} {float(r['median_us']):10.1f} us {float(r['tflops']):8.1f} TFLOP/s {float(r['gbps']):8.1f} GB/s  {r['config']}")
PY
