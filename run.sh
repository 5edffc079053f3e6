#!/usr/bin/env bash
# run.sh: the full evaluation on whatever this machine has: installs what is missing,
# builds, finds the devices (every GPU; PoCL on the CPU when there is none), and measures
# the portable kernel on a suite, writing results/<gpu-slug>/perf.csv and manifest.csv.
# An earlier run's files are moved to results/<gpu-slug>/archive/<time>/, never overwritten.
set -eu
cd "$(dirname "$0")"

usage() {
    cat <<'USAGE'
usage: ./run.sh [--device SEL]... [--suite NAME] [--quick] [--results DIR]

  --device SEL   measure only this device (repeatable; see build/fabench devices)
  --suite NAME   suite from bench/suites (default: llm on a GPU, smoke on a CPU)
  --quick        the smoke suite with a short time budget, on every device
  --results DIR  where per-GPU folders go (default: results)
USAGE
}

devices=(); suite=""; quick=0; results=results
while [ $# -gt 0 ]; do
    case "$1" in
        --device) devices+=("$2"); shift 2 ;;
        --suite) suite=$2; shift 2 ;;
        --quick) quick=1; shift ;;
        --results) results=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done

bash tools/ensure-deps.sh run
make -s -j"$(nproc 2>/dev/null || echo 2)" all
fab=build/fabench
$fab devices

# selector <TAB> gpu|cpu <TAB> name, for the devices to measure
list=$($fab devices --list)
if [ ${#devices[@]} -gt 0 ]; then
    sel_lines=""
    for d in "${devices[@]}"; do
        line=$(printf '%s\n' "$list" | awk -F'\t' -v d="$d" '$1 == d' | head -1)
        [ -n "$line" ] || line=$(printf '%s\n' "$list" | awk -F'\t' -v d="$d" 'index(tolower($3), tolower(d))' | head -1)
        [ -n "$line" ] || { echo "run.sh: no device matches '$d'" >&2; exit 2; }
        sel_lines+="$line"$'\n'
    done
else
    sel_lines=$(printf '%s\n' "$list" | awk -F'\t' '$2 == "gpu"')
    [ -n "$sel_lines" ] || sel_lines=$(printf '%s\n' "$list" | head -1)
fi
[ -n "$sel_lines" ] || { echo "run.sh: no OpenCL device at all (see build/fabench devices)" >&2; exit 1; }

stamp=$(date -u +%Y%m%dT%H%M%SZ)
declare -A archived=()
status=0
while IFS=$'\t' read -r sel kind name; do
    [ -n "$sel" ] || continue
    slug=$(printf '%s' "$name" | tr 'A-Z' 'a-z' | sed -E 's/[^a-z0-9]+/-/g; s/^-+//; s/-+$//')
    dir=$results/$slug
    mkdir -p "$dir"
    if [ -z "${archived[$slug]:-}" ]; then
        archived[$slug]=1
        if ls "$dir"/*.csv >/dev/null 2>&1; then
            mkdir -p "$dir/archive/$stamp"
            mv "$dir"/*.csv "$dir/archive/$stamp/"
            echo "run.sh: earlier results of $slug moved to $dir/archive/$stamp/"
        fi
    fi
    s=$suite
    [ -n "$s" ] || { [ "$kind" = gpu ] && s=llm || s=smoke; }
    args=(--budget 0.5)
    [ $quick -eq 0 ] || { s=smoke; args=(--budget 0.05 --warmup 0.01); }
    echo "run.sh: $sel ($name): suite $s -> $dir/perf.csv"
    rc=0
    $fab run --device "$sel" --suite "$s" --out "$dir/perf.csv" --append \
        --manifest "$dir/manifest.csv" "${args[@]}" || rc=$?
    [ $rc -eq 0 ] || { echo "run.sh: $sel: some rows did not pass (exit $rc); see the status column" >&2; status=1; }
done <<< "$sel_lines"
exit $status
