#!/usr/bin/env bash
# batches-check.sh [DEVICE] [OUTDIR]: ragged, mixed and paged batches on a GPU in one short
# run: first the end-to-end checks of those kernels on DEVICE, then every implementation on
# the ragged, mixed and paged suites, ours and the vendors', into one perf file.
# DEVICE defaults to cuda:0, OUTDIR to $OUT (the device runner's folder) or
# results/batches-check.
#   1. builds fabench and the tests when needed
#   2. tests/test_e2e's ragged and paged cases, and tests/test_wgmma_probe where it exists,
#      on DEVICE (FABENCH_TEST_DEVICE); logs in OUTDIR/e2e.log
#   3. `fabench run --tuned` on each suite (the class's row of the GPU's tuning table where
#      there is one, else fallback.csv's rule or the regime's default, as config_source says)
#   4. `fabench vendors` on each suite (cuDNN padded or paged, FlashAttention-2 varlen,
#      FlexAttention with a document mask, SDPA padded; unsupported rows say why)
#   5. a table: per shape, each implementation's median time, and the fastest
# Everything stays within $BATCHES_SECONDS (default 540) so it fits a 10-minute slot; a step
# that would start too late is skipped and says so. Every timed row is verified first.
# Outputs: batches.csv (perf.csv columns), configs.csv, manifest.csv, e2e.log, summary.txt.
set -u
cd "$(dirname "$0")/.." || exit 1
dev=${1:-cuda:0}
out=${2:-${OUT:-results/batches-check}}
mkdir -p "$out" || exit 2
FB=build/fabench
say() { printf '\n=== %s\n' "$*"; }
deadline=$((SECONDS + ${BATCHES_SECONDS:-540}))
# left CAP: seconds for the next step, at most CAP; 0 when under 20 remain
left() { local l=$((deadline - SECONDS)); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 20 ] && l=0; echo "$l"; }

say "build"
if ! make -s -j"$(nproc 2>/dev/null || echo 4)" all $(ls tests/test_e2e.c tests/test_wgmma_probe.c 2>/dev/null |
        sed 's|tests/\(.*\)\.c|build/tests/\1|') >"$out/build.log" 2>&1; then
    tail -n 30 "$out/build.log"
    exit 1
fi
"$FB" devices 2>&1 | tee "$out/devices.txt"

say "end-to-end checks on $dev"
: >"$out/e2e.log"
for t in test_e2e test_wgmma_probe; do
    [ -x "build/tests/$t" ] || continue
    s=$(left 150)
    if [ "$s" -eq 0 ]; then echo "skip $t: out of time"; continue; fi
    filter=""
    [ "$t" = test_e2e ] && filter='test_ragged:test_paged'
    for f in ${filter//:/ } ""; do
        [ -n "$filter" ] && [ -z "$f" ] && continue
        echo "--- $t ${f:-all}" >>"$out/e2e.log"
        FABENCH_TEST_DEVICE=$dev FABENCH_TEST_FILTER=$f timeout "$s" "build/tests/$t" >>"$out/e2e.log" 2>&1
        rc=$?
        echo "$t ${f:-all}: exit $rc"
    done
done
grep -E '^\[  (PASSED|FAILED) |cases verified|wrong_result|skip' "$out/e2e.log" | grep -v 'FAULT_' | head -40  # planted faults are meant to fail

for suite in paged mixed ragged; do  # smallest first: an H200 run at 380 s ran out of time inside ragged
    s=$(left 120)
    if [ "$s" -eq 0 ]; then say "$suite: skipped, out of time"; continue; fi
    say "$suite: the portable kernel (tuned class, else fallback.csv's rule, else the regime's default)"
    timeout "$s" "$FB" run --device "$dev" --suite "$suite" --tuned --out "$out/batches.csv" --append \
        --budget "${BATCHES_BUDGET:-0.2}" --manifest "$out/manifest.csv" --quiet
    echo "exit $?"
    s=$(left 150)
    if [ "$s" -eq 0 ]; then say "$suite vendors: skipped, out of time"; continue; fi
    say "$suite: the vendors"
    timeout "$s" "$FB" vendors --device "$dev" --suite "$suite" --out "$out/batches.csv" --append \
        --configs-out "$out/configs.csv" --budget "${BATCHES_BUDGET:-0.2}" --manifest "$out/manifest.csv" --quiet
    echo "exit $?"
done

say "summary"
if [ -s "$out/batches.csv" ]; then
    python3 - "$out/batches.csv" <<'PY' | tee "$out/summary.txt"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
shapes, by = [], {}
for r in rows:
    if r["name"] not in shapes:
        shapes.append(r["name"])
    by.setdefault(r["name"], []).append(r)
for name in shapes:
    ok = [r for r in by[name] if r["status"] == "ok" and r["median_us"]]
    best = min(ok, key=lambda r: float(r["median_us"])) if ok else None
    print(name + (": fastest %s" % best["impl"] if best else ": no verified row"))
    for r in by[name]:
        t = "%10.1f us" % float(r["median_us"]) if r["status"] == "ok" and r["median_us"] else "%13s" % r["status"]
        why = "" if r["status"] == "ok" else "  " + (r.get("reason") or "")[:110]
        print("  %-16s %s  %s%s" % (r["impl"], t, (r.get("config") or "")[:60], why))
PY
fi
