#!/bin/bash
# staged-vs-bo.sh [SHAPES] [SECONDS] [STRATEGIES]: the GPU check that docs/notes-staged-search.md
# asks for before `--strategy staged` becomes ./run.sh --tune's default (issue 45). In one
# device call: SHAPES llm-suite shapes (default 4: every 14th row, so prefill, long prefill
# and decode classes), each class tuned from an empty table by each strategy (default
# staged,bo) for SECONDS of wall time a class (default 40), then one run of every table's
# winners and the committed table's beside each other under one run id; the summary gives,
# per strategy, the geomean of the committed table's time over the strategy's (1.0: as fast
# as the hand-refined winners). Run from the repo root on the device with .deps carried;
# $OUT gets staged-vs-bo.tgz and summary.txt.
set -u
nshapes=${1:-4} secs=${2:-40} strategies=${3:-staged,bo}
export FABENCH_RUN_ID=${RUN_ID:-staged-vs-bo-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "${OUT:=/tmp/out}"
source "$(dirname "$0")/device-prologue.sh"
W=results/$slug/staged-vs-bo; rm -rf "$W"; mkdir -p "$W"
awk -F, -v n="$nshapes" 'NR == 1 || ((NR - 2) % 14 == 0 && c++ < n)' bench/suites/llm.csv >"$W/shapes.csv"
pack() { tar czf "$OUT/staged-vs-bo.tgz" "$W" build/staged-vs-bo-*.log 2>/dev/null; }
trap pack EXIT
IFS=, read -ra strats <<<"$strategies"
for s in "${strats[@]}"; do
    build/fabench tune --device cuda:0 --shapes "$W/shapes.csv" --results "$W/$s" --strategy "$s" --time "$secs" \
        >"build/staged-vs-bo-tune-$s.log" 2>&1
    echo "tune $s rc=$? t=$SECONDS"
done
for t in committed "${strats[@]}"; do
    table=$W/$t/tuning.csv
    [ "$t" = committed ] && table=results/$slug/tuning.csv
    build/fabench run --device cuda:0 --shapes "$W/shapes.csv" --tuned --tuning "$table" --out "$W/run-$t.csv" \
        --manifest "$W/manifest.csv" >"build/staged-vs-bo-run-$t.log" 2>&1
    echo "run $t rc=$? t=$SECONDS"
done
python3 - "$W" "${strats[@]}" <<'PY' | tee "$OUT/summary.txt"
import csv, math, sys
w, strats = sys.argv[1], sys.argv[2:]
def times(name):
    try: rows = list(csv.DictReader(open(f"{w}/run-{name}.csv")))
    except OSError: return {}
    return {r["name"]: float(r["median_us"]) for r in rows if r["status"] == "ok"}
ref = times("committed")
print("geomean of the committed table's time over each strategy's (1.0: as fast; above: faster)")
for s in strats:
    mine = times(s)
    logs = [math.log(ref[k] / mine[k]) for k in ref if k in mine]
    worst = min(((ref[k] / mine[k], k) for k in ref if k in mine), default=None)
    g = f"{math.exp(sum(logs) / len(logs)):.3f} over {len(logs)} shapes" if logs else "-"
    print(f"{s:8s} {g}; lowest {worst[0]:.3f} ({worst[1]})" if worst else f"{s:8s} {g}")
    try:
        ex = [r for r in csv.DictReader(open(f"{w}/{s}/explored.csv"))]
        print(f"         {len(ex)} candidates timed, {sum(r['status'] != 'ok' for r in ex)} failed")
    except OSError: pass
PY
