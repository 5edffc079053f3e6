#!/usr/bin/env bash
# merge.sh: the last job of a Slurm run (merge.sbatch calls it): brings each GPU job's
# results/<gpu-slug>/ folders from its work folder into the results folder, checks them
# with fabench check-results and draws the cross-GPU outputs (tools/cross-gpu.sh).
#   merge.sh [--results DIR] WORK...
# A work folder merges only when its job finished (WORK/done, written by the job script):
# a half-measured folder never lands in results/. When results/<slug>/ exists already,
# its files that the incoming folder also has move to results/<slug>/archive/<time>/
# first, as run.sh does with an earlier run; NOTES.md and other folders stay. Two jobs
# that measured the same GPU (one slug) are refused: the second is named and not merged.
# Exit status: 0 all merged and clean, 1 a job unfinished, refused or check-results found
# problems (what was merged stays merged), 2 bad usage.
set -eu
cd "$(dirname "$0")/../.."
results=results
[ "${1:-}" != --results ] || { [ -n "${2:-}" ] || { echo "merge.sh: --results needs a folder" >&2; exit 2; }; results=$2; shift 2; }
[ $# -gt 0 ] || { echo "usage: tools/slurm/merge.sh [--results DIR] WORK..." >&2; exit 2; }

stamp=$(date -u +%Y%m%dT%H%M%SZ)
status=0
merged=()           # results/<slug> folders written by this merge
declare -A from=()  # slug -> the work folder it came from

# merge_one SRC DEST: SRC's files and folders (archive/ aside) into DEST, DEST's files of
# the same names archived first
merge_one() {
    local src=$1 dest=$2 f b old=()
    mkdir -p "$dest"
    for f in "$src"/*; do
        b=${f##*/}
        [ "$b" != archive ] || continue
        [ ! -e "$dest/$b" ] || old+=("$dest/$b")
    done
    if [ ${#old[@]} -gt 0 ]; then
        mkdir -p "$dest/archive/$stamp"
        mv "${old[@]}" "$dest/archive/$stamp/"
        echo "merge.sh: $dest: earlier $(printf '%s ' "${old[@]##*/}")moved to $dest/archive/$stamp/"
    fi
    for f in "$src"/*; do
        [ "${f##*/}" = archive ] || cp -R "$f" "$dest/"
    done
}

for work in "$@"; do
    name=${work%/}; name=${name##*/}
    if [ ! -f "$work/done" ]; then
        echo "merge.sh: $name: its job did not finish (no $work/done; its log is in the run folder's logs/):" \
             "tools/slurm/submit.sh --resubmit ${work%/work/*} finishes it" >&2
        status=1
        continue
    fi
    if [ -f "$work/merged" ] && [ ! "$work/done" -nt "$work/merged" ]; then
        echo "merge.sh: $name: merged earlier, unchanged since"
        for src in "$work"/results/*/; do [ ! -f "$src/manifest.csv" ] || { src=${src%/}; from[${src##*/}]=$name; }; done
        continue
    fi
    found=0
    for src in "$work"/results/*/; do
        [ -f "$src/manifest.csv" ] || continue
        src=${src%/}; slug=${src##*/}; found=1
        if [ -n "${from[$slug]:-}" ]; then
            echo "merge.sh: $name: $results/$slug was measured by ${from[$slug]} too (one GPU model, two jobs):" \
                 "not merged; its rows stay in $src" >&2
            status=1
            continue
        fi
        from[$slug]=$name
        merge_one "$src" "$results/$slug"
        merged+=("$results/$slug")
        echo "merge.sh: $name: $src -> $results/$slug"
    done
    [ $found -eq 1 ] || { echo "merge.sh: $name: finished, but $work/results/ holds no GPU folder" >&2; status=1; }
    touch "$work/merged"
done

build=${FABENCH_BUILD:-build}
export FABENCH_ROOT=${FABENCH_ROOT:-$PWD} # (a fabench built outside build/ is told where the tree is)
bash tools/ensure-deps.sh build || exit 2
make -s BUILD="$build" "$build/fabench"
if [ ${#merged[@]} -gt 0 ]; then
    "$build/fabench" check-results --quiet "${merged[@]}" || { echo "merge.sh: check-results found problems (above)" >&2; status=1; }
fi
bash tools/cross-gpu.sh "$results" || { echo "merge.sh: tools/cross-gpu.sh exited $?" >&2; status=1; }
exit $status
