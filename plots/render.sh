#!/usr/bin/env bash
# render.sh: the figures of every results/<gpu>/ folder (and the folders under one, such as
# results/sm_90/space-d128-prefill/), as PNG and SVG in <folder>/plots/ (what `make plots`
# runs):
#   perf_prefill  TFLOP/s against sequence length, one panel per model family   (perf.csv)
#   perf_paper    the same for the paper suite's sweep (paper-* shapes)          (perf.csv)
#   perf_fa3      TFLOP/s against sequence length for the fa3 suite (FlashAttention-3's
#                 grid), one panel per head dim and mask                         (perf.csv)
#   perf_decode   effective GB/s against KV length, one panel per model family  (perf.csv)
#   ref           bars for the ref-* shapes (TFLOP/s prefill, GB/s decode)      (perf.csv)
#   batches       bars for ragged, mixed and paged batches (lens, qlens, page)  (perf.csv)
#   perf_other    bars for the shapes no figure above draws (Sq != Skv prefill)  (perf.csv)
#   speedup       per shape, the best vendor's median time / the portable kernel's, one
#                 panel per backend, with the speedup over FlashAttention-2 (perf.csv)
#   configs       configurations explored, ours by status against the vendors'
#                 (explored.csv, tuning.csv, vendor_configs.csv)
#   diversity     distributions of code metrics over every compiled configuration
#                 (compiled.csv, explored.csv)
#   portability   winners tuned on GPU/runtime A run on B, % of B's own best (portability.csv)
#   convergence   tuner's best-so-far against configurations timed, per strategy (explored.csv)
# and results/plots/loc.{png,svg}: kernel source size from results/loc.csv; with no folder
# named, results/cross-gpu/ too (tools/cross-gpu.sh: configuration transfer, speedup per GPU).
# Usage: plots/render.sh [--brief] [RESULTS_DIR...]   (default: every results folder with a known CSV)
# A figure without data in a folder is skipped with a message (its old files removed);
# --brief (run.sh) prints one line per folder instead: the figures drawn, and how many had no data.
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

brief=0
if [ "${1:-}" = --brief ]; then brief=1; shift; fi

known="perf.csv explored.csv tuning.csv compiled.csv codegen.csv portability.csv vendor_configs.csv"
has_data() {
    local f
    for f in $known; do [ -f "$1/$f" ] && return 0; done
    return 1
}
dirs=()
if [ "$#" -gt 0 ]; then
    for d in "$@"; do
        if [ ! -d "$d" ] || ! has_data "$d"; then
            echo "render.sh: $d: not a results folder (none of: $known)" >&2
            exit 2
        fi
        dirs+=("$d")
    done
else
    while IFS= read -r d; do
        has_data "$d" && dirs+=("$d")
    done < <(find "$root/results" -mindepth 1 -maxdepth 3 -type d \( -name archive -o -name plots \) -prune -o -type d -print | sort)
fi
if [ "${#dirs[@]}" -eq 0 ] && [ ! -f "$root/results/loc.csv" ]; then
    echo "render.sh: no results folder to plot"
    exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fabench-plots.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

failed=0
bad=0
n=0

# draw FIGURES_LIST OUT WORK: renders each "<figure> <script>" line, reports "skip" lines
# (--brief: counts them; drawn lists the figures drawn)
drawn=(); nskip=0
draw() {
    local list=$1 out=$2 work=$3 fig script rest
    drawn=(); nskip=0
    while read -r fig script rest; do
        if [ "$fig" = skip ]; then
            [ "$brief" -eq 1 ] || echo "   skip $script.{png,svg}: $rest"
            nskip=$((nskip + 1))
            rm -f "$out/$script.png" "$out/$script.svg"
            continue
        fi
        if gnuplot "$work/$fig/vars.gp" "$here/$script" >"$work/$fig.log" 2>&1; then
            drawn+=("$fig")
            [ "$brief" -eq 1 ] || echo "   $out/$fig.png, $fig.svg"
            # warnings, if any, are worth seeing
            if [ -s "$work/$fig.log" ]; then
                sed 's/^/     gnuplot: /' "$work/$fig.log"
            fi
        else
            echo "render.sh: gnuplot failed on $fig for $out:" >&2
            sed 's/^/    /' "$work/$fig.log" >&2
            failed=1
        fi
    done <"$list"
}

for d in "${dirs[@]}"; do
    d=${d%/}
    out="$d/plots"
    mkdir -p "$out"
    n=$((n + 1))
    work="$tmp/$n"
    mkdir -p "$work"
    [ "$brief" -eq 1 ] || echo "== $d"
    if [ -f "$d/perf.csv" ]; then
        if ! python3 "$here/prep.py" "$d/perf.csv" "$d/manifest.csv" "$out" "$work" >"$work/figures"; then
            echo "render.sh: $d/perf.csv: could not be read" >&2
            bad=1
            continue
        fi
    else
        printf 'skip %s no perf.csv\n' perf_prefill perf_paper perf_fa3 perf_decode ref batches perf_other speedup >"$work/figures"
    fi
    if ! python3 "$here/metrics.py" "$d" "$out" "$work" >>"$work/figures"; then
        echo "render.sh: $d: its CSV files could not be read" >&2
        bad=1
        continue
    fi
    draw "$work/figures" "$out" "$work"
    if [ "$brief" -eq 1 ]; then
        list=$(printf '%s, ' "${drawn[@]}"); list=${list%, }
        echo "figures: $out/: ${list:-none} (.png, .svg; $nskip more without data: plots/render.sh $d says which)"
    fi
done

# across GPUs: kernel source size
if [ "$#" -eq 0 ]; then
    n=$((n + 1))
    work="$tmp/$n"
    mkdir -p "$work" "$root/results/plots"
    echo "== $root/results (all GPUs)"
    if python3 "$here/metrics.py" --loc "$root/results/loc.csv" "$root/results/plots" "$work" >"$work/figures"; then
        draw "$work/figures" "$root/results/plots" "$work"
    else
        echo "render.sh: results/loc.csv could not be read" >&2
        bad=1
    fi
    # and what the GPU folders say together: results/cross-gpu/
    echo "== $root/results/cross-gpu (all GPUs)"
    rc=0
    bash "$root/tools/cross-gpu.sh" "$root/results" || rc=$?
    [ "$rc" -ne 2 ] || bad=1
    [ "$rc" -ne 1 ] || failed=1
fi
[ "$bad" -eq 0 ] || exit 2
exit "$failed"
