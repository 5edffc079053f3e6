#!/usr/bin/env bash
# refine.sh DEVICE SHAPES.csv RESULTS_DIR FREE.csv[,MORE.csv...] [tune options...]
#
# Tries a few parameters around each class's tuned winner: for every row of
# RESULTS_DIR/tuning.csv on this backend whose `shape` is a row of SHAPES.csv, writes a
# search space that holds each parameter of the winner fixed except those FREE.csv names
# (a kernels/space.csv-style file: param,value,when), adds FREE.csv's rows, and runs
# `fabench tune --strategy exhaustive --merge` over it for that one shape. A new key
# (WG_QPREFETCH, say) is so measured against every winner in a few candidates per class,
# where a climb through the whole space would spend its budget elsewhere. Every candidate
# is verified and recorded as any tune's; --merge keeps the row unless beaten by more than
# the head-to-head's margin. Several FREE files, comma-separated, act as one (their rows
# joined): a set of forms plus one more key. REFINE_BACKEND (default cuda) picks the rows.
# REFINE_FROM=TUNING.csv takes the winners to refine around from another table (another
# GPU's, say), matched by shape; the tune and its --merge still use RESULTS_DIR.
# Only candidates that kernels/space.csv declares for the class are timed (tune
# --declared-only): a FREE row is a parameter freed around the winner, not a way past the
# space's conditions (MASK_BOUND=1 on a non-causal class, say), whose configurations could
# not go to tuning.csv anyway. REFINE_OUTSIDE_SPACE=1 times them too, for a probe.
set -u
if [ $# -lt 4 ]; then
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
dev=$1; shapes=$2; results=$3; free=$4; shift 4
fab=${FABENCH:-build/fabench}
from=${REFINE_FROM:-$results/tuning.csv}
IFS=, read -ra frees <<<"$free"
for f in "$shapes" "$from" "${frees[@]}"; do
    [ -r "$f" ] || { echo "refine.sh: $f: cannot read" >&2; exit 2; }
done
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
# one line per class: shape name, then the space written for it under $work
python3 - "$shapes" "$from" "$work" "${REFINE_BACKEND:-cuda}" "${frees[@]}" <<'PY' >"$work/list" || exit 2
import csv, sys
shapes_path, tuning_path, work, backend = sys.argv[1:5]
with open(shapes_path, newline="") as f:
    rows = list(csv.reader(f))
head, shape_rows = rows[0], {r[0]: r for r in rows[1:] if r}
free = []
for path in sys.argv[5:]:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or set(rows[0].keys()) != {"param", "value", "when"}:
        sys.exit(f"refine.sh: {path}:1: header must be param,value,when")
    free += rows
free_params = {r["param"] for r in free}
n = 0
with open(tuning_path, newline="") as f:
    for line, r in enumerate(csv.DictReader(f), start=2):
        if r.get("backend") != backend or r.get("shape") not in shape_rows:
            continue
        n += 1
        with open(f"{work}/shape{n}.csv", "w", newline="") as o:
            w = csv.writer(o)
            w.writerow(head)
            w.writerow(shape_rows[r["shape"]])
        with open(f"{work}/space{n}.csv", "w", newline="") as o:
            w = csv.writer(o)
            w.writerow(["param", "value", "when"])
            for kv in r["config"].split(";"):
                if "=" not in kv:
                    sys.exit(f"refine.sh: {tuning_path}:{line}: field 'config': '{kv}' is not KEY=VALUE")
                k, v = kv.split("=", 1)
                if k not in free_params:
                    w.writerow([k, v, ""])
            for fr in free:
                w.writerow([fr["param"], fr["value"], fr["when"]])
        print(f"{r['shape_class']} {work}/shape{n}.csv {work}/space{n}.csv")
if n == 0:
    sys.exit(f"refine.sh: no {backend} row of {tuning_path} names a shape of {shapes_path}")
PY
rc=0
while read -r cls shape space; do
    echo "refine.sh: $cls"
    declared=(--declared-only); [ "${REFINE_OUTSIDE_SPACE:-0}" = 1 ] && declared=()
    "$fab" tune --device "$dev" --shapes "$shape" --results "$results" --space "$space" \
        --strategy exhaustive --merge "${declared[@]}" "$@" || rc=1
done <"$work/list"
exit $rc
