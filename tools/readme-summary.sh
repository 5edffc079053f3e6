#!/usr/bin/env bash
# readme-summary.sh [--check | --print] [--results DIR] [--readme FILE]
#
# README.md's "The answer so far" is generated, never typed: the block between
# <!-- summary:begin --> and <!-- summary:end --> is rewritten from the results. For every
# results/<gpu>/ folder, each perf.csv in it (the GPU's own first, then studies at any depth
# such as crosscheck/shapes25/, one perf.csv a run; archive/, plots/ and probes/, a session's
# scratch, aside) that has run
# ids gets `fabench versus --markdown`'s table: one run (the one with the most shapes paired),
# per suite, ours against the best vendor of each shape in that run. A perf.csv without a
# run_id column gets one line: its rows predate run ids and are not summarized. In a git
# checkout only the perf.csv files git tracks count (the committed results: a run of your own
# left in results/ is not summarized until it is added); stderr names the ones left out.
#   (no option)    rewrite the block in FILE (make summary)
#   --check        exit 1, with the difference, when FILE's block is not what the results
#                  give (tests/tools.sh: the numbers cannot be typed by hand)
#   --print        write the block to stdout
#   --results DIR  the results folder (default: results)
#   --readme FILE  the README (default: README.md)
# FABENCH names the fabench binary (default: build/fabench; `make` builds it).
set -u
cd "$(dirname "$0")/.." || exit 2
mode=write; results=results; readme=README.md
usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --check) mode=check; shift ;;
        --print) mode=print; shift ;;
        --results) [ -n "${2:-}" ] || usage; results=$2; shift 2 ;;
        --readme) [ -n "${2:-}" ] || usage; readme=$2; shift 2 ;;
        -h|--help) usage ;;
        *) echo "readme-summary.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
fab=${FABENCH:-build/fabench}
[ -x "$fab" ] || { echo "readme-summary.sh: $fab is not built (make)" >&2; exit 2; }
[ -d "$results" ] || { echo "readme-summary.sh: $results: not a folder" >&2; exit 2; }
begin='<!-- summary:begin -->'
end='<!-- summary:end -->'
if [ "$mode" != print ]; then
    [ -r "$readme" ] || { echo "readme-summary.sh: $readme: cannot read" >&2; exit 2; }
    if [ "$(grep -cxF "$begin" "$readme")" -ne 1 ] || [ "$(grep -cxF "$end" "$readme")" -ne 1 ]; then
        echo "readme-summary.sh: $readme needs one line '$begin' and one '$end' (in that order)" >&2
        exit 2
    fi
fi

# the perf.csv files of one GPU's folder: its own first, then the deeper ones by path
perf_files() {
    find "$1" \( -name archive -o -name plots -o -name probes \) -prune -o -name perf.csv -type f -print |
        awk -F/ '{ print NF "\t" $0 }' | sort -t "$(printf '\t')" -k1,1n -k2 | cut -f2-
}

has_run_ids() { head -n 1 "$1" | tr -d '\r' | tr ',' '\n' | grep -qx run_id; }

# in a git checkout, only what git tracks is a result (an untracked file: said on stderr)
in_git=0
git -C "$results" rev-parse --is-inside-work-tree >/dev/null 2>&1 && in_git=1
counted() {
    [ $in_git -eq 0 ] && return 0
    git -C "$(dirname "$1")" ls-files --error-unmatch perf.csv >/dev/null 2>&1 && return 0
    echo "readme-summary.sh: $1 is not tracked by git: left out (git add it to summarize it)" >&2
    return 1
}

# block: the generated lines between the markers
block() {
    local old=() tables=0 dir out rc n
    echo '<!-- written by tools/readme-summary.sh (make summary) from each perf.csv under results/; do not edit by hand -->'
    echo 'Per results folder, one run: the portable kernel against the best vendor of each shape measured'
    echo 'in that same run (`fabench versus --markdown`). Speedup: the vendor'"'"'s median time over ours,'
    echo 'geometric mean over the shapes (above 1, ours is faster). Faster or slower: the two rows'"'"''
    echo 'p20..p80 spreads apart; where they overlap, a tie. A shape counts in every suite that lists it.'
    for g in "$results"/*/; do
        while IFS= read -r f; do
            [ -n "$f" ] && counted "$f" || continue
            dir=${f%/perf.csv}
            if ! has_run_ids "$f"; then
                n=$(awk 'END { print NR - 1 }' "$f")
                old+=("- \`$f\`: $n row$([ "$n" -eq 1 ] || echo s) from before run ids (no run_id column): not summarized")
                continue
            fi
            out=$("$fab" versus --markdown "$dir" 2>&1); rc=$?
            if [ $rc -eq 0 ]; then
                printf '\n%s\n' "$out"
                tables=$((tables + 1))
            elif [ $rc -eq 1 ]; then
                old+=("- \`$f\`: no run pairs the portable kernel with a vendor: not summarized")
            else
                echo "readme-summary.sh: $f: $out" >&2
                return 2
            fi
        done < <(perf_files "${g%/}")
    done
    [ $tables -gt 0 ] || printf '\nNo results folder has a run with both the portable kernel and a vendor yet.\n'
    if [ ${#old[@]} -gt 0 ]; then
        echo
        printf '%s\n' "${old[@]}"
    fi
}

T=$(mktemp -d "${TMPDIR:-/tmp}/readme-summary.XXXXXX") || exit 2
trap 'rm -rf "$T"' EXIT
block >"$T/block" || exit 2
if [ "$mode" = print ]; then cat "$T/block"; exit 0; fi
# the README with its block replaced: the lines up to the begin marker, the block, the end
# marker and what follows it
awk -v begin="$begin" -v end="$end" -v blockfile="$T/block" '
    $0 == begin { print; while ((getline line < blockfile) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }' "$readme" >"$T/readme"
if [ "$mode" = check ]; then
    if cmp -s "$readme" "$T/readme"; then exit 0; fi
    diff -u "$readme" "$T/readme" | sed -n '3,60p'
    echo "readme-summary.sh: $readme's summary block is not what the results give: tools/readme-summary.sh (make summary) writes it" >&2
    exit 1
fi
cmp -s "$readme" "$T/readme" || cat "$T/readme" >"$readme"
