#!/usr/bin/env bash
# rounds.sh DEVICE SHAPES.csv ROUNDS OUT_DIR [options]
#
# The portable kernel and the vendors on the same shapes, alternating, ROUNDS times in
# one command: each round runs `fabench run` (the tuned configuration, and each --config
# as a variant), then `fabench vendors`, appending every verified row to
# OUT_DIR/rounds-perf.csv (its manifest: rounds-manifest.csv; names check-results leaves
# alone, as the rows repeat once per round). On a GPU whose clock moves from run to run
# (the H200 under its power cap moves between 1.7 and 1.98 GHz even in 0.05 s runs), one
# round is not a verdict: OUT_DIR/rounds.csv then holds, per shape and implementation,
# the median, min and max TFLOP/s over the rounds and the median SM clock, and per shape
# and vendor the median over rounds of that round's vendor time / portable time (a ratio
# within each round, so that rounds at different clocks do not mix), and the same ratio in
# SM cycles (each side's time times the SM clock it ran at; empty without clock readings):
# above 1 the portable kernel needs fewer cycles. Options:
#   --budget S        seconds of timed repetitions per run (default 0.05: full clocks)
#   --rest S          seconds the device idles before each run's warm-up, ours and the
#                     vendors' alike (fabench --rest; default 0): every run then starts
#                     from a rested power state, not from the run before it
#   --impl LIST       vendors (default cudnn,torch-cudnn)
#   --tuning FILE     the tuning table for the tuned runs (default: fabench's own default)
#   --config CFG      also time this configuration each round (repeatable; label: its text)
#   --l2-flush        flush L2 before every run, the vendors' too
#   --summary-only    no runs: summarise OUT_DIR's rounds-perf.csv into rounds.csv again
#                     (DEVICE and SHAPES are not read)
# Each round is a run of its own: its rows carry the run id <base>-r<N> (base: FABENCH_RUN_ID
# when set, else rounds-<UTC time>-<pid>), so rounds-perf.csv's rows are unique per run_id.
set -u
if [ $# -lt 4 ]; then
    sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
dev=$1; shapes=$2; rounds=$3; out=$4; shift 4
fab=${FABENCH:-build/fabench}
budget=0.05; impl=cudnn,torch-cudnn; tuning=(); configs=(); flush=(); rest=(); only=0
while [ $# -gt 0 ]; do
    case "$1" in
        --budget) budget=${2:-}; shift 2 ;;
        --rest) rest=(--rest "${2:-}"); shift 2 ;;
        --impl) impl=${2:-}; shift 2 ;;
        --tuning) tuning=(--tuning "${2:-}"); shift 2 ;;
        --config) configs+=("${2:-}"); shift 2 ;;
        --l2-flush) flush=(--l2-flush); shift ;;
        --summary-only) only=1; shift ;;
        *) echo "rounds.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
case "$rounds" in ''|*[!0-9]*) echo "rounds.sh: ROUNDS: '$rounds' is not a count" >&2; exit 2 ;; esac
if [ "$only" -eq 0 ] && { [ "$rounds" -lt 1 ] || [ "$rounds" -gt 100 ]; }; then
    echo "rounds.sh: ROUNDS: $rounds is not between 1 and 100" >&2; exit 2
fi
if [ "$only" -eq 1 ]; then
    [ -r "$out/rounds-perf.csv" ] || { echo "rounds.sh: --summary-only: $out/rounds-perf.csv: cannot read" >&2; exit 2; }
    rounds=0
else
    [ -r "$shapes" ] || { echo "rounds.sh: $shapes: cannot read" >&2; exit 2; }
    [ -e "$out/rounds-perf.csv" ] && { echo "rounds.sh: $out/rounds-perf.csv exists: pick a new OUT_DIR" >&2; exit 2; }
fi
mkdir -p "$out" || exit 2
log=$out/rounds.log
common=(--device "$dev" --shapes "$shapes" --budget "$budget" "${rest[@]}" "${flush[@]}" --out "$out/rounds-perf.csv" --append
        --manifest "$out/rounds-manifest.csv")
[ "$only" -eq 1 ] || : >"$out/rounds-marks.txt"  # this run's marks only
# <base>-r<N> fits fabench's 64 characters: the base is cut to 58
base=${FABENCH_RUN_ID:-rounds-$(date -u +%Y%m%dT%H%M%SZ)-$$}
base=${base:0:58}
for r in $(seq 1 "$rounds"); do  # none with --summary-only
    echo "== round $r" >>"$log"
    export FABENCH_RUN_ID=$base-r$r  # ours and the vendors of this round: one run
    # every row of a round carries its number in the log; rounds-perf.csv rows keep their order
    "$fab" run "${common[@]}" --tuned "${tuning[@]}" >>"$log" 2>&1
    rc=$?; [ $rc -le 1 ] || { echo "rounds.sh: fabench run failed (exit $rc); see $log" >&2; exit $rc; }
    for c in "${configs[@]}"; do
        "$fab" run "${common[@]}" --config "$c" >>"$log" 2>&1
        rc=$?; [ $rc -le 1 ] || { echo "rounds.sh: fabench run --config $c failed (exit $rc); see $log" >&2; exit $rc; }
    done
    "$fab" vendors "${common[@]}" --impl "$impl" >>"$log" 2>&1
    rc=$?; [ $rc -le 1 ] || { echo "rounds.sh: fabench vendors failed (exit $rc); see $log" >&2; exit $rc; }
    # where each round ends in rounds-perf.csv (its row count), so a row missing from one
    # round (a vendor that broke) cannot shift the later rounds' pairing
    python3 -c 'import csv, sys; print(sum(1 for _ in csv.DictReader(open(sys.argv[1], newline=""))))' \
        "$out/rounds-perf.csv" >>"$out/rounds-marks.txt" 2>>"$log"
    echo "rounds.sh: round $r of $rounds done" >&2
done
python3 - "$out/rounds-perf.csv" "$out/rounds.csv" "$out/rounds-marks.txt" <<'PY' || exit 2
import bisect, csv, os, statistics as st, sys
perf, dst, marks_path = sys.argv[1], sys.argv[2], sys.argv[3]
rows = list(csv.DictReader(open(perf, newline=""))) if os.path.exists(perf) else []
# rows come in rounds: each round's portable runs (tuned, then each --config), then its
# vendors. rounds-marks.txt holds the row count at each round's end; a folder without it
# (older runs) takes a shape's k-th row of a label, ok or not, as round k's
try:
    marks = [int(x) for x in open(marks_path).read().split()]
except (OSError, ValueError):
    marks = []
def label(r):
    if r["impl"] != "portable":
        return r["impl"]
    src = r.get("config_source", "")
    if src == "--config":
        return "portable --config " + r["config"]
    # --tuned that found no row (no table, no class): the default configuration, which the
    # vendors' ratios are not taken against
    return "portable (untuned)" if src.startswith(("no tuning table", "default")) else "portable"
count, per = {}, {}
for i, r in enumerate(rows):
    key = (r["name"], label(r))
    k = bisect.bisect_right(marks, i) if marks else count.get(key, 0)
    count[key] = count.get(key, 0) + 1
    if r["status"] != "ok":  # a failed row still takes its round
        continue
    per.setdefault(key, []).append((k, float(r["median_us"]), float(r["tflops"]), r.get("sm_mhz", "")))
out = []
for (name, lab), v in sorted(per.items()):
    tf = [x[2] for x in v]
    mhz = [float(x[3]) for x in v if x[3]]
    out.append({"shape": name, "impl": lab, "rounds": len(v), "tflops_median": "%.4g" % st.median(tf),
                "tflops_min": "%.4g" % min(tf), "tflops_max": "%.4g" % max(tf),
                "sm_mhz_median": "%.0f" % st.median(mhz) if mhz else "", "vs_portable_median": "",
                "vs_portable_cycles_median": ""})
# vendor time / the tuned portable time of the same round, per shape; the same in SM
# cycles (time x clock) where both rows of the round have a clock reading
for o in out:
    if o["impl"].startswith("portable"):
        continue
    ours = {k: (us, m) for k, us, _, m in per.get((o["shape"], "portable"), []) if us > 0}
    pairs = [(us, m, ours[k]) for k, us, _, m in per[(o["shape"], o["impl"])] if k in ours]
    ratios = [us / o_us for us, _, (o_us, _) in pairs]
    cyc = [us * float(m) / (o_us * float(o_m)) for us, m, (o_us, o_m) in pairs if m and o_m and float(o_m) > 0]
    if ratios:
        o["vs_portable_median"] = "%.3f" % st.median(ratios)
    if cyc:
        o["vs_portable_cycles_median"] = "%.3f" % st.median(cyc)
tmp = dst + ".tmp"
with open(tmp, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["shape", "impl", "rounds", "tflops_median", "tflops_min", "tflops_max",
                                      "sm_mhz_median", "vs_portable_median", "vs_portable_cycles_median"],
                       lineterminator="\n")
    w.writeheader()
    w.writerows(out)
os.replace(tmp, dst)
for o in out:
    extra = "  vendor/portable time %s" % o["vs_portable_median"] if o["vs_portable_median"] else ""
    if o["vs_portable_cycles_median"]:
        extra += ", cycles %s" % o["vs_portable_cycles_median"]
    print("%-36s %-44.44s %2d rounds  median %7s TFLOP/s (%s-%s) at %s MHz%s" % (
        o["shape"], o["impl"], o["rounds"], o["tflops_median"], o["tflops_min"], o["tflops_max"], o["sm_mhz_median"] or "?", extra))
PY
