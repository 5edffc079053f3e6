#!/usr/bin/env bash
# cross-gpu.sh [RESULTS_DIR]: the outputs across the GPU folders of a results folder
# (default results), into RESULTS_DIR/cross-gpu/: transfer.csv and transfer_summary.csv
# (each GPU's tuned winners on every other GPU: measured by fabench portability, looked up
# in the other's explored.csv, or unknown; drawn as transfer.{png,svg}) and
# speedup_gpus.{png,svg} (the portable kernel
# against each GPU's own best vendor, a panel per GPU; needs gnuplot). plots/cross_gpu.py
# says what each column means. The folder is derived, drawn again from the GPU folders on
# every call; check-results leaves it out. The merge job of a Slurm run calls it.
# Exit status: 0, 1 gnuplot failed, 2 bad input or a tool missing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
results=${1:-results}
[ -d "$results" ] || { echo "cross-gpu.sh: $results: not a folder" >&2; exit 2; }
command -v python3 >/dev/null 2>&1 || { echo "cross-gpu.sh: python3 is missing (apt-get install -y python3)" >&2; exit 2; }
out=$results/cross-gpu
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fabench-cross.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
python3 "$here/../plots/cross_gpu.py" "$results" "$out" "$tmp" >"$tmp/figures" || exit 2
drawn=(); status=0
while read -r fig script rest; do
    if [ "$fig" = skip ]; then
        rm -f "$out/$script.png" "$out/$script.svg"
        echo "cross-gpu.sh: $out/$script: not drawn: $rest"
    elif ! command -v gnuplot >/dev/null 2>&1; then
        echo "cross-gpu.sh: $out/$fig: not drawn: gnuplot is missing (apt-get install -y gnuplot-nox)"
    elif gnuplot "$tmp/$fig/vars.gp" "$here/../plots/$script" >"$tmp/gnuplot.log" 2>&1; then
        drawn+=("$fig.png" "$fig.svg")
    else
        echo "cross-gpu.sh: gnuplot failed on $fig:" >&2; sed 's/^/    /' "$tmp/gnuplot.log" >&2
        status=1
    fi
done <"$tmp/figures"
echo "cross-gpu.sh: $out/: transfer.csv, transfer_summary.csv${drawn[*]:+, }$(printf '%s, ' "${drawn[@]}" | sed 's/, $//')"
exit $status
