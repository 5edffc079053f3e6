#!/usr/bin/env bash
# knob-table.sh [--check] [--doc FILE]
#
# docs/kernel.md's knob table is generated from bench/core/knobs.h, never typed: the block between
# <!-- knobs:begin --> and <!-- knobs:end --> is `fabench knobs --markdown`.
#   (no option)  rewrite the block in FILE (default docs/kernel.md)
#   --check      exit 1, with the difference, when the block is not what knobs.h gives
# FABENCH names the fabench binary (default: build/fabench; `make` builds it).
set -u
cd "$(dirname "$0")/.." || exit 2
mode=write doc=docs/kernel.md
usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --check) mode=check; shift ;;
        --doc) [ -n "${2:-}" ] || usage; doc=$2; shift 2 ;;
        -h|--help) usage ;;
        *) echo "knob-table.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
fab=${FABENCH:-build/fabench}
[ -x "$fab" ] || { echo "knob-table.sh: $fab is not built (make)" >&2; exit 2; }
begin='<!-- knobs:begin -->' end='<!-- knobs:end -->'
if [ "$(grep -cxF "$begin" "$doc" 2>/dev/null)" != 1 ] || [ "$(grep -cxF "$end" "$doc")" != 1 ]; then
    echo "knob-table.sh: $doc needs one line '$begin' and one '$end'" >&2
    exit 2
fi
table=$(mktemp) new=$(mktemp)
trap 'rm -f "$table" "$new"' EXIT
"$fab" knobs --markdown >"$table" || exit 2
awk -v b="$begin" -v e="$end" -v t="$table" '
    $0 == b { print; while ((getline l < t) > 0) print l; skip = 1; next }
    $0 == e { skip = 0 }
    !skip' "$doc" >"$new"
if [ $mode = check ]; then
    diff "$doc" "$new" >&2 && exit 0
    echo "knob-table.sh: $doc's knob table is not what bench/core/knobs.h gives; run tools/knob-table.sh" >&2
    exit 1
fi
cat "$new" >"$doc"
