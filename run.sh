#!/usr/bin/env bash
# run.sh: the full evaluation on whatever this machine has: installs what is missing,
# builds, finds the devices (every GPU; PoCL on the CPU when there is none), and measures
# the portable kernel on a suite (with --tune: tuned first; else a tuning table already
# there is used), then the vendors' kernels (absent ones are reported as absent), then the
# code metrics (compile of the tuned winners for NVIDIA targets, codegen-summary), checks the
# folder (check-results) and draws its figures, writing results/<gpu-slug>/; its summary
# (each folder's table, check-results' line, where the figures are) is the last thing it
# prints. Every input (options, suite, device, tuning table, manifest) is checked first: bad
# input exits 2 before any result file is touched. An earlier run's files (perf.csv,
# manifest.csv, code metrics, portability.csv, figures) are moved to
# results/<gpu-slug>/archive/<time>/, never overwritten; explored.csv and tuning.csv are the
# tuner's resumable records and stay where they are. Every row of one pass carries one run
# id (FABENCH_RUN_ID, run.sh-<UTC time>-<pid> unless the caller set one).
set -eu
# a cluster run (docs/cluster.md): its job scripts call run.sh again on each node; paths
# given to it are taken from where it was called, so it goes before the cd
if [ "${1:-}" = --slurm ]; then shift; exec bash "$(dirname "$0")/tools/slurm/submit.sh" "$@"; fi
cd "$(dirname "$0")"

usage() {
    cat <<'USAGE'
usage: ./run.sh [--device SEL]... [--suite NAME] [--quick] [--tune [N]] [--tune-strategy S] [--tune-missing SECONDS]
                [--budget S] [--results DIR] [--resume | --update]
       ./run.sh --slurm CONFIG [--dry-run] [--dir DIR] [--results DIR]   (tools/slurm/submit.sh --help)

  --device SEL   measure only this device (repeatable; see build/fabench devices)
  --suite NAME   suite from bench/suites (default: llm on a GPU, smoke on a CPU)
  --quick        the smoke suite with a short time budget, on every device
  --tune N       first tune each shape class (N timed candidates; bo on a GPU, random on a CPU; default 60),
                 then measure with the tuned configurations (several GPUs of one model and
                 runtime tune together, a worker each); without it, a tuning table
                 already in the results folder is used when there is one
  --tune-strategy S
                 the search --tune runs (fabench tune --strategy: bo, random, local, halving,
                 staged, exhaustive; default bo on a GPU, random on a CPU)
  --tune-missing SECONDS
                 a shape whose class has no row in the folder's tuning.csv (made there
                 when there is none) gets one first: fabench run --tune-missing tunes the
                 class for SECONDS of search (tune --time) and measures with its winner
  --budget S     seconds of timed repetitions per shape and implementation (default 0.5)
  --results DIR  where per-GPU folders go (default: results)
  --resume       go on with the run in the results folder instead of archiving it: shapes
                 perf.csv already has a row for (per implementation) are not run again, so
                 a run cut short (a time-limited GPU slot) is finished by the same command
                 (its rows carry this pass's run id: versus pairs rows of one run only)
  --update       measure the suite again into the results folder instead of archiving it:
                 each shape's rows are replaced where they stand (per implementation), the
                 manifest records the commands under update.N. keys, and --tune keeps a
                 class's tuning.csv row unless this tune beats it (--merge); the code metrics
                 (compiled.csv, codegen*.csv) are left as they were
  --slurm CONFIG one Slurm job per GPU type of CONFIG, then a job that merges their folders
                 into results/ (docs/cluster.md); the options after it are submit.sh's

  FABENCH_BUILD  the build folder (default build); each Slurm job builds into its own

Exit status: 0 every row passed; 1 some rows did not (their status says why); 2 bad input,
nothing moved; 128 + N when fabench run was stopped by signal N (the rows so far are kept:
--resume goes on), so a Slurm job cut by its time limit is not taken for a finished one.
USAGE
}

devices=(); suite=""; quick=0; results=results; tune=0; budget=0.5; resume=0; update=0; tune_missing=""; tune_strategy=""
# value OPTION VALUE...: OPTION's value, or exit 2 when there is none
value() { [ $# -ge 2 ] && [ -n "$2" ] || { echo "run.sh: $1 needs a value" >&2; usage >&2; exit 2; }; }
while [ $# -gt 0 ]; do
    case "$1" in
        --device) value "$@"; devices+=("$2"); shift 2 ;;
        --suite) value "$@"; suite=$2; shift 2 ;;
        --quick) quick=1; shift ;;
        --resume) resume=1; shift ;;
        --update) update=1; shift ;;
        --tune) if [[ ${2:-} =~ ^[0-9]+$ ]]; then tune=$2; shift 2; else tune=60; shift; fi ;;
        --results) value "$@"; results=$2; shift 2 ;;
        --tune-strategy) case ${2:-} in exhaustive|random|bo|local|halving|staged) tune_strategy=$2; shift 2 ;;
                         *) echo "run.sh: --tune-strategy needs one of exhaustive, random, bo, local, halving, staged; got '${2:-}'" >&2
                            exit 2 ;;
                         esac ;;
        --tune-missing) [[ ${2:-} =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "run.sh: --tune-missing needs SECONDS, got '${2:-}'" >&2; exit 2; }
                        tune_missing=$2; shift 2 ;; # more than 0: fabench run checks it (--dry-run below)
        --budget) [[ ${2:-} =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "run.sh: --budget needs seconds, got '${2:-}'" >&2; exit 2; }
                  budget=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --slurm) echo "run.sh: --slurm comes first (./run.sh --slurm CONFIG); a GPU type's options go in CONFIG" >&2; exit 2 ;;
        *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done

[ $((resume + update)) -le 1 ] || { echo "run.sh: --resume skips the shapes that have rows, --update measures them again: one of them" >&2; exit 2; }

# one pass, one run: tune, run and vendors of every device write rows (and manifest keys)
# with this id, so that versus pairs the kernel's rows with the vendors' of this pass and no
# other; an id the caller set (FABENCH_RUN_ID) is kept, and fabench checks it before any work
export FABENCH_RUN_ID=${FABENCH_RUN_ID-run.sh-$(date -u +%Y%m%dT%H%M%SZ)-$$}

bash tools/ensure-deps.sh run
# FABENCH_BUILD: Slurm jobs sharing one checkout on several nodes each build their own
build=${FABENCH_BUILD:-build}
# fabench finds kernels/ and the suites beside its binary's folder; one built elsewhere is told
export FABENCH_ROOT=${FABENCH_ROOT:-$PWD}
make -s -j"$(nproc 2>/dev/null || echo 2)" BUILD="$build" "$build/fabench"
fab=$build/fabench
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

# Each device's folder, suite and options, and its run's options (for the check and the run)
sels=(); kinds=(); names=(); dirs=(); suites=()
while IFS=$'\t' read -r sel kind name; do
    [ -n "$sel" ] || continue
    slug=$(printf '%s' "$name" | tr 'A-Z' 'a-z' | sed -E 's/[^a-z0-9]+/-/g; s/^-+//; s/-+$//')
    s=$suite
    [ -n "$s" ] || { [ "$kind" = gpu ] && s=llm || s=smoke; }
    [ $quick -eq 0 ] || s=smoke
    sels+=("$sel"); kinds+=("$kind"); names+=("$name"); dirs+=("$results/$slug"); suites+=("$s")
done <<< "$sel_lines"
args=(--budget "$budget")
[ $quick -eq 0 ] || args=(--budget 0.05 --warmup 0.01)
more=(--append); [ $resume -eq 0 ] || more=(--resume); [ $update -eq 0 ] || more=(--update)

# every input checked before any result file is touched: fabench run --dry-run reads the
# suite, the device, the folder's tuning table and manifest, and that both outputs can be
# written, as the run will (a folder not made yet is checked as an empty one)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/fabench-run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
for i in "${!sels[@]}"; do
    d=${dirs[$i]}
    [ -d "$d" ] || d=$scratch/new
    mkdir -p "$d"
    check=(--append); [ $resume -eq 0 ] && [ $update -eq 0 ] && check=() # (archived before the run)
    tuned=(); [ -f "$d/tuning.csv" ] && tuned=(--tuned --tuning "$d/tuning.csv")
    [ -z "$tune_missing" ] || tuned=(--tuning "$d/tuning.csv" --tune-missing "$tune_missing")
    rc=0
    $fab run --dry-run --quiet --device "${sels[$i]}" --suite "${suites[$i]}" --out "$d/perf.csv" "${check[@]}" \
        --manifest "$d/manifest.csv" "${args[@]}" "${tuned[@]}" || rc=$?
    [ $rc -eq 0 ] || { echo "run.sh: bad input (above); nothing was run, moved or written" >&2; exit 2; }
done

# tune_group I: the devices that tune together with device I, comma-separated: those of its
# runtime, suite and folder (several GPUs of one model: a tune worker each, fabench tune
# --device A,B, the classes shared out), each once; empty when an earlier device of the
# group tuned for it. Never two runtimes of one GPU at once: their timings would share it.
tune_group() {
    local i=$1 j g=""
    for j in "${!sels[@]}"; do
        [ "${dirs[$j]}" = "${dirs[$i]}" ] && [ "${sels[$j]%%:*}" = "${sels[$i]%%:*}" ] && [ "${suites[$j]}" = "${suites[$i]}" ] ||
            continue
        [ "$j" -ge "$i" ] || return 0
        [[ ,$g, == *,"${sels[$j]}",* ]] || g+="${g:+,}${sels[$j]}"
    done
    printf '%s' "$g"
}

stamp=$(date -u +%Y%m%dT%H%M%SZ)
declare -A archived=()
status=0
summary=() # per folder: its heading, table, figures' line, check-results' line (printed last)
for i in "${!sels[@]}"; do
    sel=${sels[$i]}; kind=${kinds[$i]}; name=${names[$i]}; dir=${dirs[$i]}; s=${suites[$i]}
    slug=${dir##*/}
    mkdir -p "$dir"
    if [ -z "${archived[$slug]:-}" ] && [ $resume -eq 0 ] && [ $update -eq 0 ]; then
        archived[$slug]=1
        old=$(ls -d "$dir"/perf.csv "$dir"/manifest.csv "$dir"/codegen.csv "$dir"/compiled.csv "$dir"/codegen_summary.csv \
                 "$dir"/codegen_distance.csv "$dir"/portability.csv "$dir"/plots 2>/dev/null || true)
        if [ -n "$old" ]; then
            mkdir -p "$dir/archive/$stamp"
            mv $old "$dir/archive/$stamp/"
            echo "run.sh: earlier results of $slug moved to $dir/archive/$stamp/"
        fi
    fi
    tuned=()
    group=$(tune_group "$i")
    if [ $tune -gt 0 ] && [ $quick -eq 0 ] && [ -z "$group" ]; then
        echo "run.sh: $sel ($name): tuned above, with the other devices of its runtime and folder"
    elif [ $tune -gt 0 ] && [ $quick -eq 0 ]; then
        echo "run.sh: $group ($name): tuning suite $s, $tune candidates per shape class"
        # bo on a GPU (it beat random search in replays of H200 tunes); random on a CPU, where
        # bo's wider precompile (4x the budget) costs more than it saves
        strat=random; [ "$kind" = gpu ] && strat=bo
        [ -z "$tune_strategy" ] || strat=$tune_strategy
        merge=(); [ $update -eq 0 ] || merge=(--merge)
        $fab tune --device "$group" --suite "$s" --results "$dir" --strategy $strat --candidates "$tune" "${merge[@]}" ||
            { echo "run.sh: $group: tuning stopped (exit $?); measuring with what it found" >&2; }
        # the rules run --tuned takes for a shape of no tuned class, fitted to the tables as they stand
        if [ "$kind" = gpu ]; then
            $fab fit-fallback --results "$dir" --quiet ||
                echo "run.sh: $sel: fit-fallback exited $?: shapes of no tuned class take their regime's default" >&2
        fi
    fi
    [ -f "$dir/tuning.csv" ] && tuned=(--tuned --tuning "$dir/tuning.csv")
    # classes the table lacks are tuned as the run meets them (the table is made if need be)
    [ -z "$tune_missing" ] || tuned=(--tuning "$dir/tuning.csv" --tune-missing "$tune_missing")
    echo "run.sh: $sel ($name): suite $s -> $dir/perf.csv"
    log=$scratch/run-$i.log # its progress lines, kept for the summary's table
    { $fab run --device "$sel" --suite "$s" --out "$dir/perf.csv" "${more[@]}" --manifest "$dir/manifest.csv" \
          "${args[@]}" "${tuned[@]}" 2>&1 >&3 3>&- | tee "$log" >&2 3>&-; rc=${PIPESTATUS[0]}; } 3>&1
    note=""
    if [ $rc -eq 2 ]; then note="run.sh: $sel: bad input (exit 2, above)"; status=2
    elif [ $rc -ge 128 ]; then # stopped by a signal (Ctrl-C, a job's time limit): not a finished run
        echo "run.sh: $sel: fabench run was stopped (exit $rc); its finished rows are in $dir/perf.csv," \
             "and ./run.sh --resume with the same options goes on" >&2
        exit $rc
    elif [ $rc -ne 0 ]; then note="run.sh: $sel: some rows did not pass (exit $rc); see the status column"; [ $status -ne 0 ] || status=1
    fi
    [ -z "$note" ] || echo "$note" >&2

    # the vendors' kernels on the same shapes, into the same perf.csv (absent ones: no rows)
    if [ "$kind" = gpu ]; then
        echo "run.sh: $sel ($name): vendors -> $dir/perf.csv"
        $fab vendors --device "$sel" --suite "$s" --out "$dir/perf.csv" "${more[@]}" --manifest "$dir/manifest.csv" \
            "${args[@]}" || echo "run.sh: $sel: vendors exited $? (see their rows' status)" >&2
    fi

    # code metrics: the configurations run here compiled offline for the device's NVIDIA arch
    # (PTX, and SASS where nvdisasm or cuobjdump is on PATH), then the code-diversity summary
    arch=$(awk -F, '$1 == "cuda.arch" { print $2 }' "$dir/manifest.csv" 2>/dev/null | head -1)
    if [ $update -eq 1 ]; then
        echo "run.sh: $sel: --update leaves the code metrics as they were (build/fabench compile --help)"
    elif [[ $arch =~ ^sm_[0-9]+$ ]]; then
        cg=(--target "$arch" --suite "$s" --out "$dir")
        if [ -f "$dir/tuning.csv" ] && grep -q ',cuda,' "$dir/tuning.csv"; then cg+=(--tuning "$dir/tuning.csv"); fi
        $fab compile "${cg[@]}" || echo "run.sh: $sel: compile for $arch exited $? (NVRTC missing?)" >&2
    fi
    if [ $update -eq 0 ] && { [ -f "$dir/compiled.csv" ] || [ -f "$dir/explored.csv" ]; }; then
        $fab codegen-summary "$dir" || echo "run.sh: $sel: codegen-summary exited $?" >&2
    fi

    # the folder's figures (make plots draws every folder's)
    if command -v gnuplot >/dev/null 2>&1; then
        figs=$(bash plots/render.sh --brief "$dir") || echo "run.sh: $dir: some figures failed (above)" >&2
    else
        figs="figures: none (gnuplot is missing: apt-get install gnuplot-nox, then make plots)"
    fi

    # the summary: the table (ours against the vendors where they ran, else the run's own
    # lines), check-results' line, where the figures are
    # (the run's own lines: not those of a class --tune-missing tuned, "[1/1] CLASS: N configurations ...")
    table=$($fab versus "$dir" 2>&1) || table=$(grep '^\[[0-9]*/[0-9]*\]' "$log" | grep -v ' configurations in the space, ' || true)
    checked=$($fab check-results --quiet "$dir" 2>&1) || checked+=$'\n'"run.sh: $dir: check-results found problems (above)"
    summary+=("== $dir: $sel ($name), suite $s, run $FABENCH_RUN_ID" "$table" "$figs" "$checked" "$note")
done

echo "run.sh: summary"
for line in "${summary[@]}"; do [ -z "$line" ] || printf '%s\n' "$line"; done
exit $status
