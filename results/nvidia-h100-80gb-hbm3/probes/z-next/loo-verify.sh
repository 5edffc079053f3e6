#!/bin/bash
# loo-verify.sh [SECONDS]: the leave-one-class-out picks that no explored.csv row timed, timed
# (issue 45: fit-fallback --loo calls a pick that its class never timed unknown, and counted
# as a miss that held the share within 10% of the winner to 68% on the H100 and 59% on the
# H200). One device call: for every class of this GPU's fallback_loo.csv whose fitted-rule
# pick is untimed, its shape run with the pick and with the class's winner back to back under
# one run id (each pair in the same minute), until SECONDS (default 420) are spent; then per
# regime how many picks are within 10% of the winner, these measured ones beside the ones
# explored.csv already timed. Run from the repo root on the device with .deps carried; $OUT
# gets loo-verify.tgz and summary.txt.
set -u
budget=${1:-420}
source "$(dirname "$0")/device-prologue.sh"
probe_start loo-verify
G=results/$slug
mkdir -p build/loo
# one line per untimed pick: index, shape, winner, pick (the shape's row to build/loo/I.csv)
python3 - "$G/fallback_loo.csv" <<'PY' >build/loo/list.tsv
import csv, glob, sys
shapes = {}
for f in sorted(glob.glob("bench/suites/*.csv")):
    rows = list(csv.reader(open(f)))
    for r in rows[1:]:
        shapes.setdefault(r[0], (rows[0], r))
for i, r in enumerate(csv.DictReader(open(sys.argv[1]))):
    if r["rule_us"] or not r["rule_config"] or r["shape"] not in shapes:
        continue
    head, row = shapes[r["shape"]]
    with open(f"build/loo/{i}.csv", "w") as f:
        csv.writer(f).writerows([head, row])
    print(f"{i}\t{r['shape']}\t{r['regime']}\t{r['winner']}\t{r['rule_config']}")
PY
echo "loo-verify: $(wc -l <build/loo/list.tsv) untimed picks ($FABENCH_RUN_ID)"
while IFS=$'\t' read -r i shape regime winner pick; do
    [ "$SECONDS" -lt "$budget" ] || { echo "out of time at $shape"; break; }
    for side in winner pick; do
        cfg=$winner; [ "$side" = pick ] && cfg=$pick
        build/fabench run --device cuda:0 --shapes "build/loo/$i.csv" --config "$cfg" --out "$W/$side.csv" --append \
            --manifest "$W/manifest.csv" --quiet >>build/loo-verify-runs.log 2>&1
    done
done <build/loo/list.tsv
echo "runs done t=$SECONDS"
python3 - "$W" "$G/fallback_loo.csv" <<'PY' | tee "$OUT/summary.txt"
import csv, sys
w, loo = sys.argv[1], sys.argv[2]
def ok(p):
    try: return {r["name"]: float(r["median_us"]) for r in csv.DictReader(open(p)) if r["status"] == "ok"}
    except OSError: return {}
win, pick = ok(f"{w}/winner.csv"), ok(f"{w}/pick.csv")
per = {}
for r in csv.DictReader(open(loo)):
    reg = per.setdefault(r["regime"], [0, 0, 0, 0])  # classes, within 10% (explored), within 10% (measured), unknown
    reg[0] += 1
    if r["rule_us"]:
        reg[1] += float(r["rule_ratio"]) <= 1.10
    elif r["shape"] in win and r["shape"] in pick:
        ratio = pick[r["shape"]] / win[r["shape"]]
        reg[2] += ratio <= 1.10
        print(f"  {r['shape_class']:40s} pick / winner {ratio:.3f} ({pick[r['shape']]:.1f} / {win[r['shape']]:.1f} us)")
    else:
        reg[3] += 1
tot = [sum(v[i] for v in per.values()) for i in range(4)]
for name, v in sorted(per.items()) + [("all", tot)]:
    print(f"{name:14s} {v[0]:3d} classes: within 10% {v[1] + v[2]} ({v[1]} by explored.csv, {v[2]} measured here), "
          f"{v[3]} still unknown: {(v[1] + v[2]) / v[0]:.1%} of all")
PY
