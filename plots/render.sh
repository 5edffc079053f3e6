#!/usr/bin/env bash
# render.sh: the figures of every results/<gpu>/ folder that has a perf.csv, as PNG and
# SVG in results/<gpu>/plots/ (what `make plots` runs):
#   perf_prefill  TFLOP/s against sequence length, one panel per model family
#   perf_decode   effective GB/s against KV length, one panel per model family
#   ref           bars for the ref-* shapes (TFLOP/s prefill, GB/s decode)
# Usage: plots/render.sh [RESULTS_DIR...]   (default: every results/*/ with a perf.csv)
# A figure without data in a folder is skipped with a message (its old files removed).
# Exit status: 0 done, 1 a figure failed to render, 2 a tool is missing or bad input.
set -eu
set -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

if ! command -v gnuplot >/dev/null 2>&1; then
    echo "render.sh: gnuplot is missing; install it with:" >&2
    echo "    apt-get install -y gnuplot-nox" >&2
    exit 2
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "render.sh: python3 is missing; install it with:" >&2
    echo "    apt-get install -y python3" >&2
    exit 2
fi
if ! gnuplot -e 'set terminal' 2>&1 | grep -qw pngcairo; then
    echo "render.sh: this gnuplot has no pngcairo terminal; install it with:" >&2
    echo "    apt-get install -y gnuplot-nox" >&2
    exit 2
fi

dirs=()
if [ "$#" -gt 0 ]; then
    for d in "$@"; do
        if [ ! -f "$d/perf.csv" ]; then
            echo "render.sh: $d/perf.csv: no such file" >&2
            exit 2
        fi
        dirs+=("$d")
    done
else
    for f in "$root"/results/*/perf.csv; do
        [ -f "$f" ] && dirs+=("$(dirname "$f")")
    done
fi
if [ "${#dirs[@]}" -eq 0 ]; then
    echo "render.sh: no results/*/perf.csv to plot"
    exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fabench-plots.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

failed=0
bad=0
n=0
for d in "${dirs[@]}"; do
    d=${d%/}
    out="$d/plots"
    mkdir -p "$out"
    n=$((n + 1))
    work="$tmp/$n"
    mkdir -p "$work"
    echo "== $d"
    if ! python3 "$here/prep.py" "$d/perf.csv" "$d/manifest.csv" "$out" "$work" >"$work/figures"; then
        echo "render.sh: $d/perf.csv: could not be read" >&2
        bad=1
        continue
    fi
    while read -r fig script rest; do
        if [ "$fig" = skip ]; then
            echo "   skip $script.{png,svg}: $rest"
            rm -f "$out/$script.png" "$out/$script.svg"
            continue
        fi
        if gnuplot "$work/$fig/vars.gp" "$here/$script" >"$work/$fig.log" 2>&1; then
            echo "   $out/$fig.png, $fig.svg"
            # warnings, if any, are worth seeing
            if [ -s "$work/$fig.log" ]; then
                sed 's/^/     gnuplot: /' "$work/$fig.log"
            fi
        else
            echo "render.sh: gnuplot failed on $fig for $d:" >&2
            sed 's/^/    /' "$work/$fig.log" >&2
            failed=1
        fi
    done <"$work/figures"
done
[ "$bad" -eq 0 ] || exit 2
exit "$failed"
