#!/usr/bin/env bash
# submit.sh: the evaluation on a Slurm cluster (./run.sh --slurm calls it). From a config
# file of GPU types it writes plain job scripts into a run folder (job-<name>.sbatch, one per
# GPU type, and merge.sbatch), then submits them: each GPU job runs ./run.sh on its node
# into its own work folder, and the merge job, once they have all ended (whatever their
# end), copies their results/<gpu-slug>/ folders into results/, checks them and draws the
# cross-GPU figures (tools/slurm/merge.sh). The scripts are the whole mechanism: read them,
# edit them, and `--resubmit DIR` submits them again, skipping the GPU types that finished.
# docs/cluster.md is the guide. Bad input exits 2 with nothing written or submitted.
set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

usage() {
    cat <<'USAGE'
usage: tools/slurm/submit.sh [--dry-run] [--dir DIR] [--results DIR] CONFIG
       tools/slurm/submit.sh [--dry-run] --resubmit DIR
       (./run.sh --slurm ... is the same)

  CONFIG          one line per GPU type, fields separated by '|':
                      name | partition | gres | sbatch options | run.sh options
                  (the last two may be empty or left out; '#' starts a comment line).
                  A line named 'merge' sets the merge job's partition and sbatch
                  options (its gres and run.sh fields stay empty); by default it runs
                  on the first GPU type's partition. docs/cluster.md has an example.
  --dir DIR       the run folder for the job scripts, their logs and the jobs' work
                  folders (default slurm/<UTC time> in the checkout); it must not hold job scripts yet
  --results DIR   where the merge job puts the GPU folders (default the checkout's results)
  --resubmit DIR  submit DIR's scripts again (as they are, edits included) for the GPU
                  types whose job did not finish (they resume where they stopped:
                  ./run.sh --resume), then the merge job after them
  --dry-run       write the scripts, print the sbatch commands, submit nothing

Exit status: 0 submitted (or printed), 1 sbatch failed, 2 bad input.
USAGE
}

die() { echo "submit.sh: $*" >&2; exit 2; }
exec 3>&1 # the dry run's sbatch commands, from inside $(...)

dry=0; dir=""; results=$repo/results; config=""; resubmit=""
while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) dry=1; shift ;;
        --dir) [ -n "${2:-}" ] || die "--dir needs a folder"; dir=$2; shift 2 ;;
        --results) [ -n "${2:-}" ] || die "--results needs a folder"; results=$2; shift 2 ;;
        --resubmit) [ -n "${2:-}" ] || die "--resubmit needs a run folder"; resubmit=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "submit.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
        *) [ -z "$config" ] || die "one config file, got '$config' and '$1'"; config=$1; shift ;;
    esac
done

# abs PATH: PATH made absolute against the current folder (it need not exist yet); the
# scripts run on other nodes, from the checkout, so every path in them is absolute
abs() { case "$1" in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }

# ---------- the config file ----------
# Parsed into these arrays, one entry per GPU type; merge_* for the merge job
names=(); parts=(); gress=(); sflags=(); rargs=(); srcline=()
merge_part=""; merge_flags=""

# Text the scripts take literally: no quotes, no shell expansion or redirection, so what
# the config says is what the job runs
safe_chars='^[A-Za-z0-9_.,:=/+@%-]*$'

trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; s=${s%"${s##*[![:space:]]}"}; printf '%s' "$s"; }

# check_tokens FILE:LINE FIELD TEXT: every word of TEXT an option (starts with -) made of
# safe characters; sbatch options must be one word each (--time=02:00:00, not --time 02:00:00)
check_tokens() {
    local at=$1 field=$2 w words
    read -ra words <<<"$3" # (not $3 unquoted: a * would be globbed before it is checked)
    for w in "${words[@]}"; do
        [[ $w =~ $safe_chars ]] || die "$at: $field: '$w' has a character the job script would not take literally (quotes, \$, ;, |, spaces in a value)"
        if [ "$field" = "sbatch options" ]; then
            [[ $w == -* ]] || die "$at: $field: '$w' is not an option: write each as one word, --name=value"
            case "$w" in
                --partition*|-p|--gres*|--output*|-o|--dependency*|-d|--parsable|--job-name*|-J)
                    die "$at: $field: '$w' is set by the script itself (partition and gres have their own fields)" ;;
            esac
        fi
    done
    return 0
}

# check_run_args FILE:LINE TEXT: run.sh's options as a job runs them; the job decides where
# results go and whether to resume, so those are not the config's to give
check_run_args() {
    local at=$1 w words
    check_tokens "$at" "run.sh options" "$2"
    read -ra words <<<"$2"
    for w in "${words[@]}"; do
        case "$w" in
            --results|--resume|--update|--slurm) die "$at: run.sh options: '$w' is the job's to choose (each job writes its own work folder and resumes it when resubmitted)" ;;
            -h|--help) die "$at: run.sh options: '$w' would run nothing" ;;
        esac
    done
    return 0
}

parse_config() {
    local file=$1 n=0 line name part gres flags args nf at i
    [ -f "$file" ] && [ -r "$file" ] || die "$file: cannot read the config file"
    while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
        at="$file:$n"
        line=$(trim "$line")
        [ -n "$line" ] && [ "${line:0:1}" != "#" ] || continue
        nf=$(printf '%s' "$line" | awk -F'|' '{ print NF }')
        [ "$nf" -ge 3 ] && [ "$nf" -le 5 ] ||
            die "$at: line: $nf field(s); a GPU type is: name | partition | gres [| sbatch options [| run.sh options]]"
        IFS='|' read -r name part gres flags args <<<"$line"
        name=$(trim "$name"); part=$(trim "$part"); gres=$(trim "$gres")
        flags=$(trim "${flags:-}"); args=$(trim "${args:-}")
        [[ $name =~ ^[a-z0-9][a-z0-9_-]*$ ]] ||
            die "$at: name: '$name' must be lower-case letters, digits, - and _ (it names the job script)"
        [[ $part =~ ^[A-Za-z0-9_.-]+$ ]] || die "$at: partition: '$part' is not a partition name"
        [[ $gres =~ ^[A-Za-z0-9_.:,-]*$ ]] || die "$at: gres: '$gres' is not a gres (gpu:1, gpu:h100:1)"
        check_tokens "$at" "sbatch options" "$flags"
        if [ "$name" = merge ]; then
            [ -z "$merge_part" ] || die "$at: name: a second 'merge' line"
            [ -z "$gres" ] && [ -z "$args" ] || die "$at: gres: the merge job needs no GPU and runs no run.sh: leave gres and run.sh options empty"
            merge_part=$part; merge_flags=$flags
            continue
        fi
        check_run_args "$at" "$args"
        for i in "${!names[@]}"; do
            [ "${names[$i]}" != "$name" ] || die "$at: name: '$name' again (first at line ${srcline[$i]})"
        done
        names+=("$name"); parts+=("$part"); gress+=("$gres"); sflags+=("$flags"); rargs+=("$args"); srcline+=("$n")
    done <"$file"
    [ ${#names[@]} -gt 0 ] || die "$file: no GPU type (one line per type: name | partition | gres ...)"
    [ -n "$merge_part" ] || merge_part=${parts[0]}
}

# ---------- the job scripts ----------
# sbatch_lines FLAGS: one #SBATCH line per option
sbatch_lines() { local w words; read -ra words <<<"$1"; for w in "${words[@]}"; do printf '#SBATCH %s\n' "$w"; done; }

# write_job I: job-<name>.sbatch for GPU type I
write_job() {
    local i=$1 name=${names[$1]} f="$run/job-${names[$1]}.sbatch"
    {
        printf '#!/bin/bash\n'
        printf '#SBATCH --job-name=fabench-%s\n' "$name"
        printf '#SBATCH --partition=%s\n' "${parts[$i]}"
        [ -z "${gress[$i]}" ] || printf '#SBATCH --gres=%s\n' "${gress[$i]}"
        printf '#SBATCH --output=%s/logs/%s-%%j.out\n' "$run" "$name"
        sbatch_lines "${sflags[$i]}"
        cat <<EOF
# GPU type '$name' of $cfg_abs:${srcline[$i]}, written by tools/slurm/submit.sh
# on $(date -u +%Y-%m-%dT%H:%MZ). Edit it freely; tools/slurm/submit.sh --resubmit $run
# submits it again unless $work_root/$name/done exists.
set -eu
cd $repo
work=$work_root/$name
mkdir -p "\$work"
rm -f "\$work/done"
# a job cut short (time limit, cancelled, node lost) left rows behind: finish them
resume=()
if ls "\$work"/results/*/perf.csv >/dev/null 2>&1; then resume=(--resume); fi
# its own build folder, as jobs on other nodes share this checkout (unless the submitting
# shell set FABENCH_BUILD: sbatch passes the environment on)
export FABENCH_BUILD=\${FABENCH_BUILD:-\$work/build}
rc=0
./run.sh ${rargs[$i]} --results "\$work/results" "\${resume[@]}" || rc=\$?
# 1: measured, some rows did not pass (their status says why): finished all the same
if [ \$rc -le 1 ]; then echo "\$rc" >"\$work/done"; fi
exit \$rc
EOF
    } >"$f"
}

write_merge() {
    local f="$run/merge.sbatch" works="" name
    for name in "${names[@]}"; do works+=" $work_root/$name"; done
    {
        printf '#!/bin/bash\n#SBATCH --job-name=fabench-merge\n#SBATCH --partition=%s\n' "$merge_part"
        printf '#SBATCH --output=%s/logs/merge-%%j.out\n' "$run"
        sbatch_lines "$merge_flags"
        cat <<EOF
# Runs after the GPU jobs have ended, however they ended (afterany): copies each finished
# job's results/<gpu-slug>/ into $results_abs (an existing folder's files of the same names
# are archived first), checks them (fabench check-results) and draws the cross-GPU figures.
# A job that did not finish is named, and left for tools/slurm/submit.sh --resubmit $run.
set -eu
cd $repo
export FABENCH_BUILD=\${FABENCH_BUILD:-$work_root/merge-build}
exec bash tools/slurm/merge.sh --results $results_abs$works
EOF
    } >"$f"
}

# ---------- submitting ----------
# submit SCRIPT [DEPENDENCY]: sbatch --parsable; prints the job id (dry run: a placeholder)
submit() {
    local cmd=(sbatch --parsable)
    [ -z "${2:-}" ] || cmd+=("--dependency=afterany:$2")
    cmd+=("$1")
    if [ $dry -eq 1 ]; then
        echo "${cmd[*]}" >&3
        local b=${1##*/}; b=${b#job-}; b=${b%.sbatch}; echo "\$JOB_${b//-/_}"
        return 0
    fi
    local out
    out=$("${cmd[@]}") || {
        echo "submit.sh: ${cmd[*]} failed (above)" >&2
        # the jobs before it are queued: say which, so that they can be cancelled or left
        if [ "$(wc -l <"$run/submitted.txt")" -gt "$before" ]; then
            echo "submit.sh: submitted before it (scancel ID drops one):" >&2
            tail -n +$((before + 1)) "$run/submitted.txt" | sed 's/^/    /' >&2
        fi
        exit 1
    }
    out=${out%%;*} # --parsable: "id" or "id;cluster"
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $out ${cmd[*]}" >>"$run/submitted.txt"
    echo "submit.sh: ${cmd[*]} -> job $out" >&2
    echo "$out"
}

# submit_all: the GPU jobs whose work folder has no done marker, then the merge job after them
submit_all() {
    local s name ids="" id n=0
    touch "$run/submitted.txt"
    before=$(wc -l <"$run/submitted.txt") # (this call's lines follow; read by submit)
    for s in "$run"/job-*.sbatch; do
        name=${s##*/job-}; name=${name%.sbatch}
        if [ -f "$work_root/$name/done" ]; then
            echo "submit.sh: $name finished earlier ($work_root/$name/done); not submitted again" >&2
            continue
        fi
        id=$(submit "$s")
        ids+="${ids:+:}$id"; n=$((n + 1))
    done
    [ $n -gt 0 ] || echo "submit.sh: every GPU job of $run finished; the merge job runs alone" >&2
    id=$(submit "$run/merge.sbatch" "$ids")
    echo "submit.sh: $n GPU job(s) and the merge job (job $id); logs in $run/logs/, results in $results_abs/"
    [ $dry -eq 0 ] || echo "submit.sh: dry run: nothing submitted; the scripts are in $run/"
}

if [ $dry -eq 0 ] && ! command -v sbatch >/dev/null 2>&1; then
    die "sbatch is not on PATH (run this on a Slurm login node; --dry-run writes the scripts anyway)"
fi
if [ -n "$resubmit" ]; then
    [ -z "$config" ] && [ -z "$dir" ] || die "--resubmit DIR takes the scripts in DIR as they are: no CONFIG or --dir"
    run=$(cd "$resubmit" 2>/dev/null && pwd) || die "$resubmit: no such run folder"
    ls "$run"/job-*.sbatch >/dev/null 2>&1 && [ -f "$run/merge.sbatch" ] ||
        die "$run: no job-*.sbatch and merge.sbatch (written by submit.sh CONFIG)"
    work_root=$run/work
    results_abs=$(sed -n 's/^exec bash tools\/slurm\/merge.sh --results \([^ ]*\).*/\1/p' "$run/merge.sbatch")
    submit_all
    exit 0
fi

[ -n "$config" ] || { echo "submit.sh: needs a config file" >&2; usage >&2; exit 2; }
parse_config "$config"
cfg_abs=$(abs "$config")
[ -n "$dir" ] || dir=$repo/slurm/$(date -u +%Y%m%dT%H%M%SZ)
run=$(abs "$dir")
if ls "$run"/*.sbatch >/dev/null 2>&1; then
    die "$run: holds job scripts already: tools/slurm/submit.sh --resubmit $dir submits them again"
fi
results_abs=$(abs "$results")
for p in "$repo" "$run" "$results_abs"; do
    [[ $p =~ $safe_chars ]] || die "$p: the job scripts name this path unquoted: use one without spaces or quotes"
done
work_root=$run/work
mkdir -p "$run/logs" "$work_root"
for i in "${!names[@]}"; do write_job "$i"; done
write_merge
echo "submit.sh: wrote $(printf "$run/job-%s.sbatch " "${names[@]}")$run/merge.sbatch" >&2
submit_all
