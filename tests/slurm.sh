#!/usr/bin/env bash
# Checks the Slurm path of run.sh (tools/slurm/submit.sh, merge.sh) without a GPU:
#  - the config file's errors (exit 2, FILE:LINE: FIELD named, nothing written),
#  - --dry-run's scripts and sbatch commands, and --resubmit's choice of jobs,
#  - a generated job script run directly (no Slurm): its results, and a cut-short run
#    finished by running it again (--resume: only the missing rows measured),
#  - merge.sh: unfinished jobs named, archiving, one GPU measured by two jobs refused,
#  - then, where slurmctld, slurmd and munged are installed (tools/ensure-deps.sh slurm),
#    a private one-node cluster in a temporary folder (two partitions as two GPU types,
#    ports of its own): ./run.sh --slurm, a job cancelled before it ran, the merge job
#    naming it, --resubmit finishing it. Otherwise "skip - slurm: WHY".
# The evaluation is the smoke suite on PoCL (./run.sh --quick).
set -u
cd "$(dirname "$0")/.."
repo=$PWD
T=$(mktemp -d "${TMPDIR:-/tmp}/fabench-slurm.XXXXXX")
daemons=()
cleanup() {
    local p
    for p in "${daemons[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${daemons[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
pass=0; fail=0
check() { if eval "$2"; then echo "ok - $1"; pass=$((pass+1)); else echo "FAIL - $1"; fail=$((fail+1)); fi; }
submit=tools/slurm/submit.sh

# ---------- the config file ----------
# bad_config NAME TEXT WANT: TEXT as a config exits 2 with WANT on stderr, writing nothing
bad_config() {
    printf '%s\n' "$2" >"$T/bad.conf"
    bash $submit --dry-run --dir "$T/bad-run" "$T/bad.conf" >"$T/out" 2>"$T/err"; local rc=$?
    want=$3 # (read by check's eval)
    check "config: $1: exit 2, '$3', nothing written" \
          "[ $rc -eq 2 ] && grep -qF -- \"\$want\" '$T/err' && [ ! -e '$T/bad-run' ] && [ ! -s '$T/out' ]"
    [ $rc -eq 2 ] || cat "$T/err"
}
bad_config "too few fields" 'h100 | gpu' "$T/bad.conf:1: line: 2 field(s)"
bad_config "a bad name, line counted past comments" $'# types\n\nH100 | gpu | gpu:1' "$T/bad.conf:3: name: 'H100'"
bad_config "a bad partition" 'a | p q | gpu:1' "$T/bad.conf:1: partition: 'p q'"
bad_config "a bad gres" 'a | p | gpu 1' "$T/bad.conf:1: gres: 'gpu 1'"
bad_config "an sbatch option in two words" 'a | p | | --time 01:00:00' "$T/bad.conf:1: sbatch options: '01:00:00' is not an option"
bad_config "an sbatch option the script sets" 'a | p | | --gres=gpu:2' "$T/bad.conf:1: sbatch options: '--gres=gpu:2' is set by the script"
bad_config "run.sh's --results" 'a | p | | | --quick --results x' "$T/bad.conf:1: run.sh options: '--results' is the job's to choose"
bad_config "a shell expansion" 'a | p | | | --suite $(id)' "$T/bad.conf:1: run.sh options: '\$(id)'"
bad_config "a glob" 'a | p | | | *' "$T/bad.conf:1: run.sh options: '*'"
bad_config "a name twice" $'a | p | g\na | q | g' "$T/bad.conf:2: name: 'a' again (first at line 1)"
bad_config "a merge line with a gres" 'merge | p | gpu:1' "$T/bad.conf:1: gres: the merge job needs no GPU"
bad_config "no GPU type" '# nothing' "$T/bad.conf: no GPU type"
bash $submit --dry-run --dir "$T/bad-run" "$T/none.conf" >/dev/null 2>"$T/err"; rc=$?
check "config: a missing file: exit 2, named" "[ $rc -eq 2 ] && grep -qF '$T/none.conf: cannot read' '$T/err'"
bash run.sh --quick --slurm x >/dev/null 2>"$T/err"; rc=$?
check "run.sh: --slurm after other options: exit 2, says it comes first" "[ $rc -eq 2 ] && grep -q 'comes first' '$T/err'"

# ---------- --dry-run ----------
cat >"$T/types.conf" <<'EOF'
# two GPU types and the merge job's partition
h100 | gpu-h100 | gpu:h100:1 | --time=02:00:00 --account=proj | --tune 60 --suite llm
h200-nvl | gpu-h200 | gpu:1
merge | cpu | | --time=00:20:00
EOF
run=$T/dry
bash run.sh --slurm "$T/types.conf" --dry-run --dir "$run" --results "$T/res" >"$T/out" 2>"$T/err"; rc=$?
check "dry run: exit 0, three scripts written" \
      "[ $rc -eq 0 ] && [ -f '$run/job-h100.sbatch' ] && [ -f '$run/job-h200-nvl.sbatch' ] && [ -f '$run/merge.sbatch' ]"
check "dry run: prints the two GPU jobs' sbatch commands" \
      "grep -qx 'sbatch --parsable $run/job-h100.sbatch' '$T/out' && grep -qx 'sbatch --parsable $run/job-h200-nvl.sbatch' '$T/out'"
check "dry run: the merge job after both, whatever their end (afterany)" \
      "grep -qx 'sbatch --parsable --dependency=afterany:\$JOB_h100:\$JOB_h200_nvl $run/merge.sbatch' '$T/out'"
check "dry run: partition, gres, log and each sbatch option on #SBATCH lines" \
      "grep -qx '#SBATCH --partition=gpu-h100' '$run/job-h100.sbatch' && grep -qx '#SBATCH --gres=gpu:h100:1' '$run/job-h100.sbatch' &&
       grep -qx '#SBATCH --time=02:00:00' '$run/job-h100.sbatch' && grep -qx '#SBATCH --account=proj' '$run/job-h100.sbatch' &&
       grep -qx '#SBATCH --output=$run/logs/h100-%j.out' '$run/job-h100.sbatch'"
check "dry run: the job runs run.sh with the config's options into its work folder" \
      "grep -qF './run.sh --tune 60 --suite llm --results \"\$work/results\"' '$run/job-h100.sbatch' &&
       grep -qx 'work=$run/work/h100' '$run/job-h100.sbatch'"
check "dry run: the merge job on the merge line's partition, merging both work folders into --results" \
      "grep -qx '#SBATCH --partition=cpu' '$run/merge.sbatch' && grep -qx '#SBATCH --time=00:20:00' '$run/merge.sbatch' &&
       grep -qF 'merge.sh --results $T/res $run/work/h100 $run/work/h200-nvl' '$run/merge.sbatch'"
check "dry run: the second type's gres; none for the merge job" \
      "grep -qx '#SBATCH --gres=gpu:1' '$run/job-h200-nvl.sbatch' && ! grep -q -- '--gres' '$run/merge.sbatch'"
check "dry run: the scripts are valid bash" "bash -n '$run/job-h100.sbatch' && bash -n '$run/merge.sbatch'"
bash $submit --dry-run --dir "$run" "$T/types.conf" >/dev/null 2>"$T/err"; rc=$?
check "a run folder with scripts is not written over: exit 2, points to --resubmit" \
      "[ $rc -eq 2 ] && grep -q -- '--resubmit' '$T/err'"
mkdir -p "$run/work/h100" && echo 0 >"$run/work/h100/done"
bash $submit --dry-run --resubmit "$run" >"$T/out" 2>"$T/err"; rc=$?
check "--resubmit: a finished type is not submitted again, the other and the merge are" \
      "[ $rc -eq 0 ] && ! grep -q job-h100 '$T/out' && grep -qx 'sbatch --parsable $run/job-h200-nvl.sbatch' '$T/out' &&
       grep -qx 'sbatch --parsable --dependency=afterany:\$JOB_h200_nvl $run/merge.sbatch' '$T/out'"

# ---------- submitting, through a stand-in sbatch (job ids 101, 102, ...; FAIL_AT=N fails call N) ----------
mkdir -p "$T/bin"
cat >"$T/bin/sbatch" <<'EOF'
#!/usr/bin/env bash
n=$(( $(cat "$SB_COUNT" 2>/dev/null || echo 0) + 1 )); echo $n >"$SB_COUNT"
echo "$*" >>"$SB_COUNT.args"
[ "$n" != "${FAIL_AT:-}" ] || { echo "sbatch: error: Batch job submission failed: Invalid partition" >&2; exit 1; }
echo "$((100 + n));cluster"
EOF
chmod +x "$T/bin/sbatch"
export SB_COUNT=$T/sb
PATH=$T/bin:$PATH bash $submit --dir "$T/sub" "$T/types.conf" >"$T/out" 2>&1; rc=$?
check "submit: the GPU jobs' ids (cluster name cut off) in the merge job's dependency" \
      "[ $rc -eq 0 ] && grep -qx -- '--parsable --dependency=afterany:101:102 $T/sub/merge.sbatch' '$T/sb.args' &&
       [ \$(wc -l <'$T/sub/submitted.txt') -eq 3 ]"
rm -f "$T/sb" "$T/sb.args"
FAIL_AT=2 PATH=$T/bin:$PATH bash $submit --dir "$T/sub2" "$T/types.conf" >"$T/out" 2>&1; rc=$?
check "submit: sbatch failing part way: exit 1, the job queued before it named, no merge job" \
      "[ $rc -eq 1 ] && grep -q 'submitted before it' '$T/out' && grep -q ' 101 sbatch --parsable $T/sub2/job-h100.sbatch' '$T/out' &&
       [ \$(wc -l <'$T/sb.args') -eq 2 ]"
unset SB_COUNT

# ---------- a job script run by hand: the work folder, and a cut-short run resumed ----------
printf 'cpu | debug | | | --quick\n' >"$T/cpu.conf"
run=$T/hand
bash $submit --dry-run --dir "$run" --results "$T/results" "$T/cpu.conf" >/dev/null 2>&1
# without FABENCH_BUILD: the job builds into its own folder, as on a cluster
(unset FABENCH_BUILD; bash "$run/job-cpu.sbatch") >"$T/job1.log" 2>&1; rc=$?
perf=$(ls "$run"/work/cpu/results/*/perf.csv 2>/dev/null | head -1)
check "job script: exit 0, done written, one perf.csv with the smoke suite's 7 rows" \
      "[ $rc -eq 0 ] && [ -f '$run/work/cpu/done' ] && [ -n '$perf' ] && [ \$(tail -n +2 '$perf' | wc -l) -eq 7 ]"
check "job script: built in its own folder" "[ -x '$run/work/cpu/build/fabench' ]"
[ $rc -eq 0 ] || tail -20 "$T/job1.log"
export FABENCH_BUILD=$repo/build # from here on the tree's build: saves a build per job
if [ -n "$perf" ]; then
    # a job cut short: no done, the last three rows not written
    rm -f "$run/work/cpu/done"
    head -n 5 "$perf" >"$T/cut.csv" && cp "$T/cut.csv" "$perf"
    bash "$run/job-cpu.sbatch" >"$T/job2.log" 2>&1; rc=$?
    check "job script again after a cut-short run: --resume, 3 shapes measured, 7 rows again" \
          "[ $rc -eq 0 ] && [ -f '$run/work/cpu/done' ] && grep -q 'fabench run: --resume: 4 shapes already had rows' '$T/job2.log' &&
           [ \$(tail -n +2 '$perf' | wc -l) -eq 7 ] && [ \$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[\$i] = i; next }
               { print \$c[\"name\"] }' '$perf' | sort | uniq -d | wc -l) -eq 0 ]"
    [ $rc -eq 0 ] || tail -20 "$T/job2.log"
fi

# ---------- merge.sh ----------
slug=$(basename "$(dirname "${perf:-x/x}")")
mkdir -p "$T/undone/results"
bash tools/slurm/merge.sh --results "$T/results" "$run/work/cpu" "$T/undone" >"$T/m1.log" 2>&1; rc=$?
check "merge: an unfinished job named with the resubmit command, exit 1" \
      "[ $rc -eq 1 ] && grep -q 'undone: its job did not finish' '$T/m1.log' && grep -q 'submit.sh --resubmit' '$T/m1.log'"
check "merge: the finished job's folder in results/, check-results clean" \
      "[ -f '$T/results/$slug/perf.csv' ] && grep -q 'check-results: .* 0 problems' '$T/m1.log'"
check "merge: results/cross-gpu written" "[ -f '$T/results/cross-gpu/transfer.csv' ]"
bash tools/slurm/merge.sh --results "$T/results" "$run/work/cpu" >"$T/m2.log" 2>&1; rc=$?
check "merge again, the job unchanged: nothing moved" \
      "[ $rc -eq 0 ] && grep -q 'merged earlier' '$T/m2.log' && [ ! -d '$T/results/$slug/archive' ]"
touch "$run/work/cpu/done"
echo "a note of ours" >"$T/results/$slug/NOTES.md"
bash tools/slurm/merge.sh --results "$T/results" "$run/work/cpu" >"$T/m3.log" 2>&1; rc=$?
check "merge of a newer run: the earlier files archived, NOTES.md kept" \
      "[ $rc -eq 0 ] && [ -f '$T/results/$slug/perf.csv' ] && ls '$T/results/$slug'/archive/*/perf.csv >/dev/null 2>&1 &&
       [ -f '$T/results/$slug/NOTES.md' ]"
mkdir -p "$T/twin" && cp -R "$run/work/cpu/results" "$T/twin/" && echo 0 >"$T/twin/done"
touch "$run/work/cpu/done"
bash tools/slurm/merge.sh --results "$T/results2" "$run/work/cpu" "$T/twin" >"$T/m4.log" 2>&1; rc=$?
check "merge: one GPU measured by two jobs: the second refused, named, exit 1" \
      "[ $rc -eq 1 ] && grep -q 'twin: .*measured by cpu too' '$T/m4.log' && [ ! -d '$T/results2/$slug/archive' ]"

# ---------- a real Slurm cluster of one node ----------
skip_slurm() { echo "skip - slurm: $*"; echo "$pass passed, $fail failed"; [ $fail -eq 0 ]; exit; }
PATH=$PATH:/usr/sbin:/sbin
if ! command -v slurmctld >/dev/null 2>&1 || ! command -v slurmd >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
    # installed as the other tests' packages are: apt-get when root, else the command is named
    bash tools/ensure-deps.sh slurm >"$T/deps.log" 2>&1 ||
        skip_slurm "slurmctld, slurmd or munged missing, not installed: $(tail -n 1 "$T/deps.log")"
fi
for c in slurmctld slurmd munged mungekey sbatch squeue scancel scontrol sinfo; do
    command -v $c >/dev/null 2>&1 || skip_slurm "$c is not installed (bash tools/ensure-deps.sh slurm installs it)"
done
[ "$(id -u)" = 0 ] || skip_slurm "the private cluster runs its daemons as root (SlurmUser=root); not root here"

S=$T/cluster; mkdir -p "$S/state" "$S/spool" "$S/munge"; chmod 700 "$S/munge"
mungekey --create --keyfile="$S/munge/key" >/dev/null 2>&1 || skip_slurm "mungekey could not create a key"
munged -F -f --socket="$S/munge/sock" --key-file="$S/munge/key" --log-file="$S/munge/log" \
    --pid-file="$S/munge/pid" --seed-file="$S/munge/seed" >/dev/null 2>&1 &
daemons+=($!)
port=$((20000 + $$ % 20000)) # ports of its own, so that another cluster here does not answer
host=$(hostname -s)
cat >"$S/slurm.conf" <<EOF
ClusterName=fabtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$S/munge/sock
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=type-a Nodes=$host Default=YES MaxTime=INFINITE State=UP
PartitionName=type-b Nodes=$host MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$S/slurm.conf
sleep 1
slurmctld -D -f "$SLURM_CONF" >"$S/ctld.out" 2>&1 & daemons+=($!)
slurmd -D -f "$SLURM_CONF" >"$S/d.out" 2>&1 & daemons+=($!)
up=0
for _ in $(seq 30); do
    if sinfo -h -o '%t' 2>/dev/null | grep -q idle; then up=1; break; fi
    sleep 1
done
[ $up -eq 1 ] || { tail -5 "$S/ctld.out" "$S/d.out" "$S/slurmctld.log" "$S/slurmd.log" 2>/dev/null; skip_slurm "the private cluster did not come up in 30 s (its logs above)"; }

# wait_jobs SECONDS: until squeue lists no job (0) or SECONDS pass (1)
wait_jobs() {
    local i
    for i in $(seq "$1"); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && return 0; sleep 1; done
    return 1
}
# Two GPU types on the one PoCL device; b held (--hold) so that it can be cancelled before
# it runs, as a job lost to a time limit or scancel would be
printf 'a | type-a | | | --quick\nb | type-b | | --hold | --quick\n' >"$T/cluster.conf"
run=$T/crun
./run.sh --slurm "$T/cluster.conf" --dir "$run" --results "$T/cres" >"$T/s1.log" 2>&1; rc=$?
check "slurm: ./run.sh --slurm submits 3 jobs" "[ $rc -eq 0 ] && [ \$(wc -l <'$run/submitted.txt') -eq 3 ]"
idb=$(awk '/job-b.sbatch/ { print $2 }' "$run/submitted.txt")
for _ in $(seq 120); do [ -f "$run/work/a/done" ] && break; sleep 1; done
scancel "$idb" 2>/dev/null
wait_jobs 120; rc=$?
mlog=$(ls "$run"/logs/merge-*.out 2>/dev/null | head -1)
check "slurm: job a ran, b was cancelled, the merge job ran after them" \
      "[ $rc -eq 0 ] && [ -f '$run/work/a/done' ] && [ ! -f '$run/work/b/done' ] && [ -n '$mlog' ]"
check "slurm: the merge job merged a, named b as unfinished, check-results clean" \
      "grep -q \"a: .* -> $T/cres/\" '$mlog' && grep -q 'b: its job did not finish' '$mlog' &&
       grep -q 'check-results: .* 0 problems' '$mlog' && [ -f '$T/cres/cross-gpu/transfer.csv' ]"
[ -n "$mlog" ] && grep -q 'check-results: .* 0 problems' "$mlog" || cat "$T/s1.log" "$run"/logs/*.out 2>/dev/null | tail -30
./run.sh --slurm --resubmit "$run" >"$T/s2.log" 2>&1; rc=$?
check "slurm: --resubmit submits b and the merge, not a" \
      "[ $rc -eq 0 ] && grep -q 'a finished earlier' '$T/s2.log' && [ \$(wc -l <'$run/submitted.txt') -eq 5 ]"
idb=$(awk '/job-b.sbatch/ { id = $2 } END { print id }' "$run/submitted.txt")
scontrol release "$idb" 2>/dev/null
wait_jobs 150; rc=$?
mlog=$(ls -t "$run"/logs/merge-*.out 2>/dev/null | head -1)
# one PoCL device here: b measured the GPU a did, so the merge refuses it, leaving a's
check "slurm: after the resubmit b finished, and the merge refused it as a's GPU again" \
      "[ $rc -eq 0 ] && [ -f '$run/work/b/done' ] && grep -q 'a: merged earlier' '$mlog' && grep -q 'b: .*measured by a too' '$mlog'"
[ -f "$run/work/b/done" ] || tail -20 "$run"/logs/b-*.out 2>/dev/null
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
