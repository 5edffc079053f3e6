#!/usr/bin/env bash
# ab-kernels.sh DEVICE SHAPES.csv A.k B.k OUTDIR [ROUNDS] [run options...]
#
# Times two versions of the kernel source (kernels/attn_fwd.k: A, say the last commit's
# from `git show REV:kernels/attn_fwd.k`, and B, the one under test) on the same shapes
# with the same configurations, interleaved: in each of ROUNDS rounds (default 3) one
# `fabench run` with A, then one with B, each a fresh process that verifies every row
# against the CPU reference before timing it. The rest of the tree is shared (the other
# kernels/ files through links, FABENCH_ROOT picks the tree). Writes OUTDIR/A-N.csv and
# OUTDIR/B-N.csv, then `fabench compare` of each round (B/A per shape with a verdict) to
# OUTDIR/compare-N.txt, and prints each round's geomean line. Options after ROUNDS go to
# `fabench run` (default: --tuned, each shape's tuned row; --config K=V,... for one).
set -u
if [ $# -lt 5 ]; then
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
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
# a tree per side: bench/ and the other kernel files linked, attn_fwd.k its own copy
for side in A B; do
    mkdir -p "$work/$side/kernels"
    ln -s "$root/bench" "$work/$side/bench"
    for f in "$root"/kernels/*; do
        [ "$(basename "$f")" = attn_fwd.k ] || ln -s "$f" "$work/$side/kernels/"
    done
done
cp "$ka" "$work/A/kernels/attn_fwd.k" && cp "$kb" "$work/B/kernels/attn_fwd.k" || exit 2
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
