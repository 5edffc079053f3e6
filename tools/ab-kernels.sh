#!/usr/bin/env bash
# ab-kernels.sh DEVICE SHAPES.csv A B OUTDIR [ROUNDS] [run options...]
#
# Times two versions of the kernel source (A, say the last commit's, and B, the one under
# test) on the same shapes with the same configurations, interleaved: in each of ROUNDS
# rounds (default 3) one `fabench run` with A, then one with B, each a fresh process that
# verifies every row against the CPU reference before timing it. A and B are each a folder
# of kernel files (`git archive REV kernels | tar -x -C DIR` puts REV's in DIR/kernels) or
# one kernel file: its files replace those of the same name in kernels/, the rest of the
# tree is shared (linked; FABENCH_ROOT picks the tree). Writes OUTDIR/A-N.csv and
# OUTDIR/B-N.csv, then `fabench compare` of each round (B/A per shape with a verdict) to
# OUTDIR/compare-N.txt, and prints each round's geomean line. Options after ROUNDS go to
# `fabench run` (default: --tuned, each shape's tuned row; --config K=V,... for one).
set -u
if [ $# -lt 5 ]; then
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
dev=$1; shapes=$2; ka=$3; kb=$4; out=$5; shift 5
rounds=3
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then rounds=$1; shift; fi
[ "$rounds" -ge 1 ] || { echo "ab-kernels.sh: ROUNDS must be at least 1" >&2; exit 2; }
[ $# -gt 0 ] || set -- --tuned
root=$(cd "$(dirname "$0")/.." && pwd)
fab=${FABENCH:-$root/build/fabench}
for f in "$shapes" "$ka" "$kb"; do
    [ -r "$f" ] || { echo "ab-kernels.sh: $f: cannot read" >&2; exit 2; }
done
mkdir -p "$out" || exit 2
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
# a tree per side: bench/ and kernels/ linked, the side's own kernel files copied over them
for side in A B; do
    mkdir -p "$work/$side/kernels"
    ln -s "$root/bench" "$work/$side/bench"
    for f in "$root"/kernels/*; do ln -s "$f" "$work/$side/kernels/"; done
    src=$ka; [ $side = B ] && src=$kb
    if [ -d "$src" ]; then files=("$src"/*); else files=("$src"); fi
    for f in "${files[@]}"; do
        [ -f "$f" ] || continue
        n=$(basename "$f")
        if [ ! -e "$root/kernels/$n" ]; then
            echo "ab-kernels.sh: $f: kernels/ has no file $n to replace" >&2
            exit 2
        fi
        rm -f "$work/$side/kernels/$n" && cp "$f" "$work/$side/kernels/$n" || exit 2
    done
done
rc=0
for r in $(seq 1 "$rounds"); do
    for side in A B; do
        if ! FABENCH_ROOT="$work/$side" "$fab" run --device "$dev" --shapes "$shapes" --out "$out/$side-$r.csv" --quiet "$@" \
            >"$out/$side-$r.log" 2>&1; then
            echo "ab-kernels.sh: round $r, $side: fabench run failed (rows it could not verify or time are in $out/$side-$r.csv; log $out/$side-$r.log)" >&2
            rc=1
        fi
    done
    if [ -s "$out/A-$r.csv" ] && [ -s "$out/B-$r.csv" ]; then
        "$fab" compare "$out/A-$r.csv" "$out/B-$r.csv" >"$out/compare-$r.txt" 2>&1
        echo "round $r: $(grep '^geomean B/A (all)' "$out/compare-$r.txt" || echo 'nothing compared')"
    fi
done
exit $rc
