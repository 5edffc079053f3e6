#!/usr/bin/env bash
# crosscheck.sh DEVICE OUTDIR [SHAPES.csv]: fabench's times against second paths that do not
# go through its timer. fabench measures ours (--tuned) and every vendor into OUTDIR/perf.csv
# (one run id); then the PyTorch implementations are timed again by CUDA-graph replay
# (tools/crosscheck.py graph), and, where Nsight Compute is on PATH, ours and cuDNN by ncu's
# durations and SM cycles of the same replayed graphs (--graph-profiling graph, --clock-control
# none --cache-control none: natural clocks and warm caches, as fabench's rows; each graph
# alone, so at the clock an idle board gives it, which is why they are compared in cycles,
# fabench's time times the SM clock NVML read over its samples). OUTDIR/crosscheck.csv pairs them; the summary says, per
# implementation, on how many shapes the two agree within 5% (or 1 us). Shapes default to
# tools/crosscheck/shapes.csv (the smallest shape of every suite and a spread of the rest).
# Environment: IMPLS (the vendors' implementations, default all), NCU_SHAPES (profile the
# first N shapes only), NCU_IMPLS (whose runs ncu profiles: portable,cudnn), NCU_UNTIL
# (start no ncu process after this many seconds of the script), NEED (agreeing shapes
# required per implementation, default 20), FABENCH_BIN (default build/fabench),
# RESUME=1 (keep what OUTDIR already has: perf.csv, graph.csv, profiled shapes; a device
# call too short for all of it is followed by another).
set -u
[ $# -ge 2 ] || { echo "usage: tools/crosscheck.sh DEVICE OUTDIR [SHAPES.csv]" >&2; exit 2; }
dev=$1; out=$2; shapes=${3:-tools/crosscheck/shapes.csv}
fab=${FABENCH_BIN:-build/fabench}
[ -f "$shapes" ] || { echo "crosscheck: $shapes: no such file" >&2; exit 2; }
mkdir -p "$out/ncu" || exit 2
export FABENCH_RUN_ID=${FABENCH_RUN_ID:-crosscheck-$(date -u +%Y%m%dT%H%M%SZ)}
log=$out/crosscheck.log
say() { echo "crosscheck: $*" | tee -a "$log" >&2; }

kept() { [ "${RESUME:-0}" = 1 ] && [ -s "$1" ]; }
if kept "$out/perf.csv"; then
    say "fabench: keeping $out/perf.csv"
else
    say "fabench: ours and the vendors on $(($(wc -l <"$shapes") - 1)) shapes ($FABENCH_RUN_ID)"
    "$fab" run --device "$dev" --shapes "$shapes" --tuned --out "$out/perf.csv" --manifest "$out/manifest.csv" \
        --quiet >>"$log" 2>&1
    "$fab" vendors --device "$dev" --shapes "$shapes" --out "$out/perf.csv" --append --manifest "$out/manifest.csv" \
        ${IMPLS:+--impl "$IMPLS"} --quiet >>"$log" 2>&1
fi

torch_impls=$(echo "${IMPLS:-torch-flash,torch-efficient,torch-cudnn,flex,flex-autotune}" | tr ',' '\n' |
    grep -E '^(torch-|flex)' | paste -sd, -)
checks=()
if kept "$out/graph.csv"; then
    checks+=(--check "$out/graph.csv")
elif [ -n "$torch_impls" ]; then
    say "CUDA-graph replay of $torch_impls"
    python3 tools/crosscheck.py graph "$shapes" "$out/graph.csv" --impl "$torch_impls" --device "${dev#cuda:}" >>"$log" 2>&1 &&
        checks+=(--check "$out/graph.csv")
fi

# ncu profiles one shape a process: fabench's replayed graphs of that shape, each graph one
# workload (--graph-profiling graph), after the warm-up's single kernels; a graph's time over
# its runs (perf.csv's batch_runs) is the check
ncu_run() { # IMPL NAME COMMAND...
    local impl=$1 name=$2
    shift 2
    timeout 180 ncu --clock-control none --cache-control none --graph-profiling graph \
        --metrics gpu__time_duration.sum,sm__cycles_elapsed.max \
        --csv --print-units base --launch-count 400 "$@" >"$out/ncu/$impl@$name.ncu.csv" 2>>"$log"
}
if command -v ncu >/dev/null; then
    say "ncu kernel durations of ours and cuDNN"
    wanted() { case ",${NCU_IMPLS:-portable,cudnn}," in *,"$1",*) return 0 ;; esac; return 1; }
    tail -n +2 "$shapes" | head -n "${NCU_SHAPES:-100000}" | while IFS= read -r line; do
        [ -n "${NCU_UNTIL:-}" ] && [ "$SECONDS" -ge "$NCU_UNTIL" ] && { say "ncu: out of time at $SECONDS s"; break; }
        name=${line%%,*}
        one=$out/ncu/$name.shape.csv
        { head -n 1 "$shapes"; echo "$line"; } >"$one"
        # each with the row's batch of runs; cuDNN with the engine config the row chose, alone
        # (its search would time every candidate)
        pin=$(python3 tools/crosscheck.py pin "$out/perf.csv" portable "$name")
        [ -n "$pin" ] && wanted portable && ! kept "$out/ncu/portable@$name.ncu.csv" &&
            (export $pin; ncu_run portable "$name" "$fab" run --device "$dev" --shapes "$one" --tuned \
                --out "$out/ncu/scratch.csv" --budget 0.05 --quiet)
        pin=$(python3 tools/crosscheck.py pin "$out/perf.csv" cudnn "$name")
        case ",${IMPLS:-cudnn}," in *,cudnn,*)
            [ -n "$pin" ] && wanted cudnn && ! kept "$out/ncu/cudnn@$name.ncu.csv" &&
                (export $pin; ncu_run cudnn "$name" "$fab" vendors --impl cudnn \
                --device "$dev" --shapes "$one" --out "$out/ncu/scratch.csv" --budget 0.05 --quiet) ;;
        esac
        rm -f "$one" "$out/ncu/scratch.csv"
    done
    python3 tools/crosscheck.py ncu --graphs "$out"/ncu/*.ncu.csv --out "$out/ncu.csv" >>"$log" 2>&1 && checks+=(--check "$out/ncu.csv")
else
    say "no ncu on PATH: ours and cuDNN have no second path here"
fi
[ ${#checks[@]} -gt 0 ] || { say "no second path ran"; exit 1; }
python3 tools/crosscheck.py report "$out/perf.csv" "${checks[@]}" --out "$out/crosscheck.csv" --need "${NEED:-20}" |
    tee -a "$log"
exit "${PIPESTATUS[0]}"
