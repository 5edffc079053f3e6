#!/usr/bin/env bash
# Checks `fabench loc` (exact counts on small fixtures) and `fabench compile --target`
# (offline NVRTC and HIPRTC compiles; skipped, saying so, where they are missing). Prints
# "N passed, N failed" last.
set -u
cd "$(dirname "$0")/.."
fab=build/fabench
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
pass=0; fail=0
check() { if eval "$2"; then echo "ok - $1"; pass=$((pass+1)); else echo "FAIL - $1"; fail=$((fail+1)); fi; }

mkdir -p "$T/src/.hidden"
printf 'int a; // c\n/* x\n y */ int b = 1; /* z */\n\n  // only\nchar *s = "/* not */";\n' > "$T/src/a.c"
printf '"""doc\nmore"""\nimport os  # c\n# only\n\ndef f():\n    """one"""\n    return 1\n' > "$T/src/b.py"
printf 'kernel void k() {}\n' > "$T/src/.hidden/skip.cl"
printf 'not code\n' > "$T/src/notes.txt"
out=$($fab loc --label fx --out "$T/loc.csv" "$T/src")
check "loc counts 3 C lines and 3 Python lines, skips hidden folders and text" \
      "printf '%s' \"\$out\" | grep -qE '2 files +3 C-family +3 Python +6 total'"
check "loc writes a row with label and totals" "grep -q '^fx,.*,2,3,3,6$' '$T/loc.csv'"
$fab loc /no/such/path >/dev/null 2>&1; check "loc on a missing path exits 2" "[ $? -eq 2 ]"

printf 'name,batch,hq,hkv,sq,skv,d,causal\nx,1,8,2,1,4096,128,1\ny,1,8,8,512,512,64,0\n' > "$T/s.csv"
$fab compile --target gfx_banana --shapes "$T/s.csv" --out "$T/bad" >/dev/null 2>"$T/err"; rc=$?
check "compile for an unknown target exits 2 and names it" "[ $rc -eq 2 ] && grep -q gfx_banana '$T/err'"
if $fab compile --target gfx90a --shapes "$T/s.csv" --out "$T/amd" >"$T/log" 2>&1; then
    check "compile --target gfx90a writes compiled.csv: two ok rows with VGPRs and LDS" \
          "[ \$(awk -F, 'NR > 1 && \$5 == \"ok\" && \$7 > 0 && \$9 > 0' '$T/amd/compiled.csv' | wc -l) -eq 2 ]"
    if grep -q "no ISA histograms" "$T/log"; then
        echo "skip - compile --target gfx90a: no llvm-objdump for the ISA histogram"
    else
        check "compile --target gfx90a writes codegen.csv with MFMA instructions" \
              "grep -q ',v_mfma_f32_16x16x16bf16_1k,' '$T/amd/codegen.csv'"
    fi
elif grep -q "HIPRTC" "$T/log"; then
    echo "skip - compile --target gfx90a: HIPRTC is not available here ($(head -c 200 "$T/log"))"
else
    check "compile --target gfx90a runs" "false"; cat "$T/log"
fi
if $fab compile --target sm_90 --shapes "$T/s.csv" --out "$T/cg" >"$T/log" 2>&1; then
    check "compile writes codegen.csv with tensor-core instructions" \
          "grep -q ',mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32,' '$T/cg/codegen.csv'"
    check "compile writes compiled.csv: two ok rows with registers" \
          "[ \$(awk -F, 'NR > 1 && \$5 == \"ok\" && \$7 > 0' '$T/cg/compiled.csv' | wc -l) -eq 2 ]"
    check "compile writes a manifest" "grep -q '^gpu,sm_90$' '$T/cg/manifest.csv'"
    # --out and --binaries are made with their parents; one under a file exits 2 naming it
    $fab compile --target sm_90 --shapes "$T/s.csv" --out "$T/nest/a/out" --binaries "$T/nest/b/bin" >/dev/null 2>&1; rc=$?
    check "compile makes --out and --binaries with their missing parents" \
          "[ $rc -eq 0 ] && [ -s '$T/nest/a/out/compiled.csv' ] && ls '$T/nest/b/bin/'*.cubin >/dev/null 2>&1"
    : > "$T/afile"
    $fab compile --target sm_90 --shapes "$T/s.csv" --out "$T/afile/out" >/dev/null 2>"$T/err"; rc=$?
    check "compile --out under a file exits 2 naming the path" "[ $rc -eq 2 ] && grep -q '$T/afile/out: cannot create directory' '$T/err'"
elif grep -q "NVRTC" "$T/log"; then
    echo "skip - compile --target sm_90: NVRTC is not available here ($(head -c 200 "$T/log"))"
else
    check "compile --target sm_90 runs" "false"; cat "$T/log"
fi
# test_nvrtc without a disassembler on PATH: no HGMMA count where no SASS was read (it
# printed '-1 HGMMA'); one wgmma case, through the program's test name filter
nv=build/tests/test_nvrtc
nodis=$(printf '%s' "$PATH" | tr ':' '\n' | while read -r p; do [ -e "$p/nvdisasm" ] || [ -e "$p/cuobjdump" ] || printf '%s:' "$p"; done)
if [ -x "$nv" ]; then
    PATH="${nodis%:}" FABENCH_TEST_WCASES='NUM_WARPS=4,BLOCK_M=64,BLOCK_N=128,STAGES=2' "$nv" test_kernel_wgmma >"$T/nv.log" 2>&1
    if grep -q "skipped:" "$T/nv.log"; then
        echo "skip - test_nvrtc without a disassembler: $(grep -m1 'skipped:' "$T/nv.log")"
    else
        check "test_nvrtc without a disassembler: no HGMMA count printed (no '-1 HGMMA')" \
              "grep -q 'bytes cubin' '$T/nv.log' && ! grep -q -- '-1 HGMMA' '$T/nv.log'"
    fi
else
    echo "skip - test_nvrtc without a disassembler: $nv is not built (make test builds it)"
fi
# tests/run-all.sh (make test, ./test.sh): its last line counts tests, passed, failed and
# skipped, over cmocka's, the scripts' and unittest's output, and each skip is listed with its
# reason (it counted programs, so a program whose tests all skipped counted as passed)
mkdir -p "$T/ra"
cat >"$T/ra/fake_cmocka.sh" <<'FAKE'
printf '[==========] Running 3 test(s).\n[ RUN      ] t_a\n[       OK ] t_a\n[ RUN      ] t_b\nskipped: no widget here\n'
printf '[  SKIPPED ] t_b\n[ RUN      ] t_c\n[  SKIPPED ] t_c\n[==========] 3 test(s) run.\n[  PASSED  ] 1 test(s).\n'
printf '[  SKIPPED ] 2 test(s), listed below:\n[  SKIPPED ] t_b\n[  SKIPPED ] t_c\n\n 2 SKIPPED TEST(S)\n'
FAKE
printf 'echo "ok - x"; echo "FAIL - y"; echo "skip - z: no gizmo"; echo "1 passed, 1 failed"; exit 1\n' >"$T/ra/fake_script.sh"
printf 'echo "test_q (m.C.test_q) ... ok"; echo "test_r (m.C.test_r) ... skipped '"'"'no torch'"'"'"; exit 0\n' >"$T/ra/fake_unittest.sh"
printf 'exit 139\n' >"$T/ra/fake_crash.sh"
bash tests/run-all.sh "$T"/ra/fake_cmocka.sh "$T"/ra/fake_script.sh "$T"/ra/fake_unittest.sh "$T"/ra/fake_crash.sh >"$T/ra.log" 2>&1; rc=$?
check "run-all.sh: the last line counts tests: passed, failed, skipped" \
      "[ $rc -eq 1 ] && [ \"\$(tail -n 1 '$T/ra.log')\" = '3 passed, 2 failed, 4 skipped (tests, in 4 programs)' ]"
check "run-all.sh: every skip listed with its reason, or that it gave none" \
      "grep -qx '  fake_cmocka.sh t_b: no widget here' '$T/ra.log' && grep -qx '  fake_cmocka.sh t_c: (no reason given)' '$T/ra.log' &&
       grep -qx '  fake_script.sh: z: no gizmo' '$T/ra.log' && grep -qx '  fake_unittest.sh: no torch' '$T/ra.log'"
if [ -x build/tests/test_wgmma_probe ] && [ -x build/tests/test_csvio ]; then
    bash tests/run-all.sh build/tests/test_wgmma_probe build/tests/test_csvio >"$T/ra2.log" 2>&1
    last=$(tail -n 1 "$T/ra2.log")
    check "run-all.sh on test_wgmma_probe and test_csvio: every test counted ($last)" \
          "[[ '$last' =~ ^[0-9]+\ passed,\ 0\ failed,\ [0-9]+\ skipped\ \(tests,\ in\ 2\ programs\)$ ]] && ! [[ '$last' =~ ^[0-9]+\ passed,\ 0\ failed,\ 0\ skipped ]]"
    check "run-all.sh: no C test skips without saying why" "! grep -q '(no reason given)' '$T/ra2.log'"
else
    echo "skip - run-all.sh on the C tests: build/tests/test_wgmma_probe or test_csvio is not built (make test builds them)"
fi
# run.sh --update: a second quick run measures the suite again into the same folder, rows
# replaced where they stand, nothing archived, the manifest noting the update
if ./run.sh --quick --results "$T/rs" >"$T/rs.log" 2>&1; then
    pf=$(ls "$T"/rs/*/perf.csv | head -1); d=$(dirname "$pf")
    n1=$(wc -l < "$pf"); names1=$(cut -d, -f5 "$pf")
    # one pass, one run id (run.sh-<UTC time>-<pid>): in every row, in the manifest, in the summary
    id1=$(awk -F, 'NR==1{for(i=1;i<=NF;i++) if($i=="run_id") c=i} NR>1{print $c}' "$pf" | sort -u)
    check "run.sh: one run id for the pass, in its rows, manifest and summary ($id1)" \
          "[[ '$id1' =~ ^run\.sh-[0-9]{8}T[0-9]{6}Z-[0-9]+$ ]] && grep -qx 'run_id,$id1' '$d/manifest.csv' && grep -q '^== .*, run $id1$' '$T/rs.log'"
    ./run.sh --quick --results "$T/rs" --update >"$T/rs2.log" 2>&1; rc=$?
    check "run.sh --update exits 0, archives nothing" "[ $rc -eq 0 ] && [ ! -d '$d/archive' ]"
    check "run.sh --update: the same rows, in the same order" "[ \$(wc -l < '$pf') -eq $n1 ] && [ \"\$(cut -d, -f5 '$pf')\" = \"$names1\" ]"
    check "run.sh --update: the manifest notes the update" "grep -q '^update\\.1\\.run\\.command,.*--update' '$d/manifest.csv'"
    date1=$(grep '^date,' "$d/manifest.csv")
    ./run.sh --suite smoke --tune 2 --budget 0.02 --results "$T/rs" --update >"$T/rs4.log" 2>&1; rc=$?
    check "run.sh --tune --update: tune --merge, noted under update.N., the run's own keys kept" \
          "[ $rc -eq 0 ] && grep -q '^update\\.[0-9]*\\.tune\\.command,.*--merge' '$d/manifest.csv' && [ \"\$(grep '^date,' '$d/manifest.csv')\" = '$date1' ] && ! grep -q '^tune\\.command,' '$d/manifest.csv'"
    # tune and run of that pass (two processes) share its run id, another than the first pass's
    ids=$(grep -E '^update\.[0-9]+\.(tune|run)\.run_id,' "$d/manifest.csv" | tail -n 2 | cut -d, -f2 | sort -u)
    check "run.sh --tune: tune and run of one pass share its run id ($ids)" \
          "[ \$(printf '%s\n' '$ids' | wc -l) -eq 1 ] && [[ '$ids' =~ ^run\.sh- ]] && [ '$ids' != '$id1' ]"
    ./run.sh --quick --results "$T/rs" >"$T/rs3.log" 2>&1
    check "run.sh without --update archives the earlier run" "ls '$d'/archive/*/perf.csv >/dev/null 2>&1"
else
    check "run.sh --quick runs" "false"; tail -20 "$T/rs.log"
fi
# run.sh when fabench run is stopped by a signal (a Slurm job's time limit): the signal's exit
# status, not 1 ("some rows did not pass"), and no vendors after it. The stand-in build folder
# holds the real objects and a fabench newer than them, so make leaves it be; its `run`
# (past the --dry-run check) kills itself with SIGTERM
if [ -x build/fabench ] && [ -d build/obj ]; then
    mkdir -p "$T/sigbuild" && cp -r build/obj "$T/sigbuild/" && cp build/fabench "$T/sigbuild/fabench.real"
    cat >"$T/sigbuild/fabench" <<'SIG'
#!/usr/bin/env bash
real=$(dirname "$0")/fabench.real
if [ "${1:-}" = run ] && [[ " $* " != *" --dry-run "* ]]; then kill -TERM $$; fi
[ "${1:-}" = vendors ] && echo vendors-ran >>"$(dirname "$0")/vendors.log"
exec "$real" "$@"
SIG
    chmod +x "$T/sigbuild/fabench"; touch "$T/sigbuild/fabench"
    FABENCH_BUILD="$T/sigbuild" ./run.sh --quick --results "$T/rsig" >"$T/rsig.log" 2>&1; rc=$?
    check "run.sh: fabench run stopped by SIGTERM exits 143 saying --resume goes on; nothing after it ran" \
          "[ $rc -eq 143 ] && grep -q 'was stopped (exit 143)' '$T/rsig.log' && [ ! -e '$T/sigbuild/vendors.log' ]"
fi
./run.sh --resume --update >"$T/ru.log" 2>&1; rc=$?
check "run.sh --resume --update exits 2 saying why" "[ $rc -eq 2 ] && grep -q 'one of them' '$T/ru.log'"
./run.sh --tune-strategy fastest >"$T/rts.log" 2>&1; rc=$?
check "run.sh --tune-strategy fastest exits 2 naming the strategies" \
      "[ $rc -eq 2 ] && grep -q 'tune-strategy needs one of exhaustive, random, bo, local, halving, staged' '$T/rts.log'"
# run.sh --tune-missing SECONDS: passed to fabench run, which refuses 0 in its --dry-run,
# before any folder is made
./run.sh --tune-missing abc >"$T/rtm.log" 2>&1; rc=$?
check "run.sh --tune-missing abc exits 2 naming the option" "[ $rc -eq 2 ] && grep -q 'tune-missing needs SECONDS' '$T/rtm.log'"
./run.sh --quick --tune-missing 0 --results "$T/rtm" >"$T/rtm.log" 2>&1; rc=$?
check "run.sh --tune-missing 0: fabench run's check, exit 2, nothing made" \
      "[ $rc -eq 2 ] && grep -q 'fabench run: --tune-missing: SECONDS' '$T/rtm.log' && [ ! -e '$T/rtm' ]"
# run.sh checks every input before it touches a result file: an unknown suite or a malformed
# tuning table exits 2 with the earlier run's files where they were (an unknown suite moved
# perf.csv and manifest.csv into archive/, then said 'some rows did not pass' and exited 1)
if [ -n "${d:-}" ] && [ -f "$d/perf.csv" ]; then
    tree() { find "$1" -printf '%P %s %T@\n' | sort; }
    tree "$d" >"$T/tree0"
    ./run.sh --suite nosuch --results "$T/rs" >"$T/rb.log" 2>&1; rc=$?
    tree "$d" >"$T/tree1"
    check "run.sh --suite nosuch exits 2 naming the suite; nothing moved or written" \
          "[ $rc -eq 2 ] && grep -q \"unknown suite 'nosuch'\" '$T/rb.log' && ! grep -q 'did not pass' '$T/rb.log' && cmp -s '$T/tree0' '$T/tree1'"
    cp "$d/tuning.csv" "$T/tuning.keep" 2>/dev/null ||
        echo "gpu,backend,shape_class,config,median_us,tflops,configs_explored,configs_in_space,shape,strategy,date" >"$T/tuning.keep"
    { cat "$T/tuning.keep"; echo "x,opencl,bf16-d64-c1-g1-q64-k64,BLOCK_M=7,1.0,1.0,1,1,x,random,2026-01-01T00:00:00Z"; } >"$d/tuning.csv"
    tree "$d" >"$T/tree0"
    ./run.sh --quick --results "$T/rs" >"$T/rb.log" 2>&1; rc=$?
    tree "$d" >"$T/tree1"
    check "run.sh with a malformed tuning.csv exits 2 naming its line; nothing moved or written" \
          "[ $rc -eq 2 ] && grep -q 'tuning.csv:[0-9]*: field .config.: bad value .7. for BLOCK_M' '$T/rb.log' && cmp -s '$T/tree0' '$T/tree1'"
    mv "$T/tuning.keep" "$d/tuning.csv"
fi
# a fresh copy of the tree (its files, no build/, empty kernel caches), as a newcomer runs it:
# ./run.sh --quick prints fewer than 40 lines, no warning, and ends with its summary (the
# figures' line, then check-results'); the committed folders' figures are not drawn again
if git ls-files --error-unmatch run.sh >/dev/null 2>&1; then
    fresh=$T/fresh
    mkdir -p "$fresh"
    git ls-files -z | xargs -0 cp --parents -t "$fresh" 2>/dev/null
    (cd "$fresh" && FABENCH_CACHE="$T/fresh-cache" POCL_CACHE_DIR="$T/fresh-pocl" ./run.sh --quick) >"$T/fresh.log" 2>&1; rc=$?
    n=$(wc -l <"$T/fresh.log")
    check "fresh ./run.sh --quick exits 0 in fewer than 40 lines ($n)" "[ $rc -eq 0 ] && [ $n -lt 40 ]"
    check "fresh ./run.sh --quick ends with its summary: figures, then check-results with 0 problems" \
          "tail -n 2 '$T/fresh.log' | head -n 1 | grep -q '^figures: ' && tail -n 1 '$T/fresh.log' | grep -q '^check-results: .* 0 problems'"
    check "fresh ./run.sh --quick prints no warning" "! grep -qi 'warning' '$T/fresh.log'"
    check "fresh ./run.sh --quick draws its own folder's figures only" \
          "[ \$(grep -c '^figures: ' '$T/fresh.log') -eq 1 ] && cmp -s results/nvidia-h200/plots/convergence.png '$fresh/results/nvidia-h200/plots/convergence.png'"
    [ $rc -eq 0 ] && [ "$n" -lt 40 ] || sed 's/^/#   /' "$T/fresh.log" | head -60
else
    echo "skip - fresh ./run.sh --quick: not a git checkout (git ls-files lists nothing)"
fi
# tools/refine.sh: a few free parameters tried around a class's tuned winner, the others held
# (one candidate tuned first: with more, the head-to-head may rightly pick another earlier row)
dev=$($fab devices --list 2>/dev/null | head -1 | cut -f1)
if [ -n "$dev" ]; then
    rt=${dev%%:*}
    printf 'name,batch,hq,hkv,sq,skv,d,causal,dtype\nrf,1,2,1,48,48,64,1,fp16\n' > "$T/rf.csv"
    $fab tune --device "$dev" --shapes "$T/rf.csv" --results "$T/rf" --strategy random --candidates 1 --rep-budget 0.01 --quiet >/dev/null 2>&1
    row=$(awk -F, 'NR == 2 { print $4 }' "$T/rf/tuning.csv")
    held=$(printf '%s' "$row" | tr ';' '\n' | grep -v '^KPAD=' | sort | tr '\n' ';')
    printf 'param,value,when\nKPAD,0,MMA=fma\nKPAD,1,\n' > "$T/free.csv"
    REFINE_BACKEND=$rt tools/refine.sh "$dev" "$T/rf.csv" "$T/rf" "$T/free.csv" --rep-budget 0.01 --quiet >"$T/rf.log" 2>&1; rc=$?
    new=$(awk -F, 'NR == 2 { print $4 }' "$T/rf/tuning.csv")
    check "refine.sh exits 0 and names the class it refined" "[ $rc -eq 0 ] && grep -q '^refine.sh: fp16-d64-' '$T/rf.log'"
    check "refine.sh: the winner's other parameters held" \
          "[ \"\$(printf '%s' '$new' | tr ';' '\n' | grep -v '^KPAD=' | sort | tr '\n' ';')\" = '$held' ]"
    check "refine.sh: both KPAD values explored around it" \
          "[ \$(grep -c \"\$(printf '%s' '$held' | cut -d';' -f1)\" '$T/rf/explored.csv') -ge 1 ] && grep -q 'KPAD=0' '$T/rf/explored.csv' && grep -q 'KPAD=1' '$T/rf/explored.csv'"
    check "refine.sh: tune --merge noted in the manifest" "grep -q '^update\\.[0-9]*\\.tune\\.command,.*--merge' '$T/rf/manifest.csv'"
    # REFINE_FROM: the winners from another table (another GPU's), the tune into a fresh folder
    REFINE_FROM="$T/rf/tuning.csv" REFINE_BACKEND=$rt tools/refine.sh "$dev" "$T/rf.csv" "$T/rf2" "$T/free.csv" \
        --rep-budget 0.01 --quiet >"$T/rf2.log" 2>&1; rc=$?
    new2=$(awk -F, 'NR == 2 { print $4 }' "$T/rf2/tuning.csv" 2>/dev/null)
    check "refine.sh: REFINE_FROM refines around another table's winner into RESULTS_DIR" \
          "[ $rc -eq 0 ] && [ \"\$(printf '%s' '$new2' | tr ';' '\n' | grep -v '^KPAD=' | sort | tr '\n' ';')\" = '$held' ] && [ \$(grep -c 'KPAD=' '$T/rf2/explored.csv') -ge 1 ]"
    # several FREE files, comma-separated: their rows joined (KPAD's two values from two files)
    printf 'param,value,when\nKPAD,0,MMA=fma\n' > "$T/free0.csv"; printf 'param,value,when\nKPAD,1,\n' > "$T/free1.csv"
    REFINE_FROM="$T/rf/tuning.csv" REFINE_BACKEND=$rt tools/refine.sh "$dev" "$T/rf.csv" "$T/rf3" "$T/free0.csv,$T/free1.csv" \
        --rep-budget 0.01 --quiet >"$T/rf3.log" 2>&1; rc=$?
    check "refine.sh: FREE files joined by commas explore the rows of both" \
          "[ $rc -eq 0 ] && grep -q 'KPAD=0' '$T/rf3/explored.csv' && grep -q 'KPAD=1' '$T/rf3/explored.csv'"
    # the shipped refine-free/pack-gqa.csv: its shape condition (gqa) and parameter conditions
    # joined; around a winner without Q/O tensor maps both PACK_GQA values are explored
    REFINE_FROM="$T/rf/tuning.csv" REFINE_BACKEND=$rt tools/refine.sh "$dev" "$T/rf.csv" "$T/rf4" tools/refine-free/pack-gqa.csv \
        --rep-budget 0.01 --quiet >"$T/rf4.log" 2>&1; rc=$?
    check "refine.sh: refine-free/pack-gqa.csv explores PACK_GQA 0 and 1 on a GQA class" \
          "[ $rc -eq 0 ] && grep -q 'PACK_GQA=0' '$T/rf4/explored.csv' && grep -q 'PACK_GQA=1' '$T/rf4/explored.csv'"
    # a FREE row past the space's conditions (SPLIT_KV=2 is declared for decode classes only):
    # not timed on this prefill class unless REFINE_OUTSIDE_SPACE=1
    printf 'param,value,when\nSPLIT_KV,1,\nSPLIT_KV,2,\n' > "$T/fsplit.csv"
    REFINE_FROM="$T/rf/tuning.csv" REFINE_BACKEND=$rt tools/refine.sh "$dev" "$T/rf.csv" "$T/rf5" "$T/fsplit.csv" \
        --rep-budget 0.01 >"$T/rf5.log" 2>&1; rc=$?
    check "refine.sh: a FREE value kernels/space.csv does not declare for the class is not timed" \
          "[ $rc -eq 0 ] && grep -q 'SPLIT_KV=1' '$T/rf5/explored.csv' && ! grep -q 'SPLIT_KV=2' '$T/rf5/explored.csv' && grep -q 'declared-only: 1 of the 2' '$T/rf5.log'"
    REFINE_OUTSIDE_SPACE=1 REFINE_FROM="$T/rf/tuning.csv" REFINE_BACKEND=$rt tools/refine.sh "$dev" "$T/rf.csv" "$T/rf6" "$T/fsplit.csv" \
        --rep-budget 0.01 --quiet >"$T/rf6.log" 2>&1; rc=$?
    check "refine.sh: REFINE_OUTSIDE_SPACE=1 times it too, and the table keeps a declared winner" \
          "[ $rc -eq 0 ] && grep -q 'SPLIT_KV=2' '$T/rf6/explored.csv' && grep -q 'SPLIT_KV=1' '$T/rf6/tuning.csv'"
    $fab tune --device "$dev" --shapes "$T/rf.csv" --results "$T/rf7" --declared-only >/dev/null 2>"$T/err"; rc=$?
    check "tune --declared-only without --merge and --space exits 2 saying why" "[ $rc -eq 2 ] && grep -q 'needs --merge and --space' '$T/err'"
    printf 'param,value\nKPAD,0\n' > "$T/badfree.csv"
    tools/refine.sh "$dev" "$T/rf.csv" "$T/rf" "$T/badfree.csv" >/dev/null 2>"$T/err"; rc=$?
    check "refine.sh: a FREE file without param,value,when exits 2 naming it" "[ $rc -eq 2 ] && grep -q 'badfree.csv:1' '$T/err'"
    tools/refine.sh "$dev" "$T/rf.csv" "$T/rf" "$T/free.csv,$T/badfree.csv" >/dev/null 2>"$T/err"; rc=$?
    check "refine.sh: a bad FREE file after a good one in the list exits 2 naming it" "[ $rc -eq 2 ] && grep -q 'badfree.csv:1' '$T/err'"
    printf 'name,batch,hq,hkv,sq,skv,d,causal\nother,1,2,1,48,48,64,1\n' > "$T/other.csv"
    REFINE_BACKEND=$rt tools/refine.sh "$dev" "$T/other.csv" "$T/rf" "$T/free.csv" >/dev/null 2>"$T/err"; rc=$?
    check "refine.sh: no tuning row for the shapes exits 2 saying so" "[ $rc -eq 2 ] && grep -q 'names a shape of' '$T/err'"
    tools/refine.sh "$dev" "$T/rf.csv" >/dev/null 2>&1
    check "refine.sh with too few arguments exits 2" "[ $? -eq 2 ]"
else
    echo "skip - refine.sh: no device (fabench devices --list is empty)"
fi
# tools/ab-kernels.sh: two kernel sources timed interleaved on one device (here B differs by
# a comment, then B does not compile: its rows fail, A's stay right)
if [ -n "$dev" ]; then
    printf 'name,batch,hq,hkv,sq,skv,d,causal\nab,1,2,1,48,48,64,1\n' > "$T/ab.csv"
    mkdir -p "$T/kb" && cp kernels/fma.k "$T/kb/" && printf '/* B */\n' >> "$T/kb/fma.k"
    ab_cfg=(--config MMA=fma,BLOCK_M=16,BLOCK_N=16,NUM_WARPS=1 --budget 0.02)
    tools/ab-kernels.sh "$dev" "$T/ab.csv" kernels "$T/kb" "$T/ab" 2 "${ab_cfg[@]}" >"$T/ab.log" 2>&1; rc=$?
    check "ab-kernels.sh: two rounds, each side verified and compared" \
          "[ $rc -eq 0 ] && [ \$(grep -c '^round [12]: geomean B/A (all) .* over 1:' '$T/ab.log') -eq 2 ] && grep -q ',ok,' '$T/ab/B-2.csv'"
    printf '#error "B is broken"\n' >> "$T/kb/fma.k"
    tools/ab-kernels.sh "$dev" "$T/ab.csv" kernels/fma.k "$T/kb/fma.k" "$T/ab2" 1 "${ab_cfg[@]}" >"$T/ab.log" 2>&1; rc=$?
    check "ab-kernels.sh: B's own source compiled (B fails, A right, exit 1)" \
          "[ $rc -eq 1 ] && grep -q ',ok,' '$T/ab2/A-1.csv' && grep -q ',compile_error,' '$T/ab2/B-1.csv'"
    tools/ab-kernels.sh "$dev" "$T/ab.csv" kernels "$T/none.k" "$T/ab3" >/dev/null 2>"$T/err"; rc=$?
    check "ab-kernels.sh: a missing kernel file exits 2 naming it" "[ $rc -eq 2 ] && grep -q none.k '$T/err'"
    cp kernels/fma.k "$T/other.k"
    tools/ab-kernels.sh "$dev" "$T/ab.csv" kernels "$T/other.k" "$T/ab4" >/dev/null 2>"$T/err"; rc=$?
    check "ab-kernels.sh: a file that is none of the kernel's exits 2 naming it" "[ $rc -eq 2 ] && grep -q other.k '$T/err'"
    tools/ab-kernels.sh "$dev" "$T/ab.csv" >/dev/null 2>&1
    check "ab-kernels.sh with too few arguments exits 2" "[ $? -eq 2 ]"
else
    echo "skip - ab-kernels.sh: no device (fabench devices --list is empty)"
fi
# tools/rounds.sh: ours and the vendors alternating; the summary's medians and the per-round
# vendor/portable ratio, checked against a stand-in fabench whose times are known (the
# vendor is 10% slower in round 1, 10% faster in round 2: median ratio 1.000)
cat > "$T/fakefab" <<'FAKE'
#!/usr/bin/env bash
cmd=$1; shift; out=; cfg=
echo "$cmd $*" >> "${FAKEFAB_LOG:-/dev/null}"
while [ $# -gt 0 ]; do case "$1" in --out) out=$2; shift 2 ;; --config) cfg=$2; shift 2 ;; *) shift ;; esac; done
[ -e "$out" ] || echo "impl,config,name,median_us,tflops,status,config_source,sm_mhz,run_id" > "$out"
row() { echo "$1,${FABENCH_RUN_ID:-}" >> "$out"; }  # the run it is told, as fabench's rows
n=$(grep -c '^cudnn,' "$out")
if [ "$cmd" = run ] && [ -z "$cfg" ]; then row "portable,T,s,100,2.0,ok,tuning.csv (exact class),1980"
elif [ "$cmd" = run ]; then row "portable,$cfg,s,200,1.0,ok,--config,1800"
else [ "$n" -eq 0 ] && row "cudnn,v,s,110,1.8,ok,,1700" || row "cudnn,v,s,90,2.2,ok,,1900"; fi
FAKE
chmod +x "$T/fakefab"
printf 'name,batch,hq,hkv,sq,skv,d,causal\ns,1,2,1,48,48,64,1\n' > "$T/rs.csv"
FABENCH="$T/fakefab" tools/rounds.sh cuda:0 "$T/rs.csv" 2 "$T/rd" --config X=1 >"$T/rd.log" 2>&1; rc=$?
check "rounds.sh: two rounds, tuned + --config + vendors each, summarised per shape and implementation" \
      "[ $rc -eq 0 ] && [ \$(grep -c . '$T/rd/rounds-perf.csv') -eq 7 ] && grep -q '^s,portable,2,2,2,2,1980,,$' '$T/rd/rounds.csv' && grep -q '^s,portable --config X=1,2,1,1,1,1800,,$' '$T/rd/rounds.csv'"
# in cycles: round 1 110 us x 1700 MHz over 100 x 1980 = 0.944, round 2 90 x 1900 / 198000 = 0.864
check "rounds.sh: the vendor's time over ours, per round, median 1.000; in SM cycles 0.904" "grep -q '^s,cudnn,2,2,1.8,2.2,1800,1.000,0.904$' '$T/rd/rounds.csv'"
# each round its own run: <base>-r<N>, ours and the vendors of a round sharing it, so that
# rounds-perf.csv's rows are unique per run id (base: rounds-<UTC time>-<pid>, or the caller's)
check "rounds.sh: each round's rows carry its own run id, rounds-...-r1 then -r2" \
      "[ \"\$(cut -d, -f9 '$T/rd/rounds-perf.csv' | sed 1d | sed -E 's/^rounds-[0-9]{8}T[0-9]{6}Z-[0-9]+-//' | tr '\n' ' ')\" = 'r1 r1 r1 r2 r2 r2 ' ]"
FABENCH_RUN_ID=probe-7 FABENCH="$T/fakefab" tools/rounds.sh cuda:0 "$T/rs.csv" 2 "$T/rdid" >/dev/null 2>&1
check "rounds.sh: a FABENCH_RUN_ID the caller set is the base: probe-7-r1, probe-7-r2" \
      "[ \"\$(cut -d, -f9 '$T/rdid/rounds-perf.csv' | sed 1d | sort -u | tr '\n' ' ')\" = 'probe-7-r1 probe-7-r2 ' ]"
FABENCH="$T/fakefab" tools/rounds.sh cuda:0 "$T/rs.csv" 2 "$T/rd" >/dev/null 2>"$T/err"; rc=$?
check "rounds.sh: an OUT_DIR that holds a rounds-perf.csv exits 2 (nothing mixed in)" "[ $rc -eq 2 ] && grep -q 'exists' '$T/err'"
cp "$T/rd/rounds.csv" "$T/rd/rounds.first"; rm "$T/rd/rounds.csv"
FABENCH=/nonexistent tools/rounds.sh - - 0 "$T/rd" --summary-only >/dev/null 2>&1; rc=$?
check "rounds.sh --summary-only: rounds.csv again from rounds-perf.csv, nothing run" "[ $rc -eq 0 ] && cmp -s '$T/rd/rounds.csv' '$T/rd/rounds.first'"
tools/rounds.sh - - 0 "$T/nord" --summary-only >/dev/null 2>&1
check "rounds.sh --summary-only without a rounds-perf.csv exits 2" "[ $? -eq 2 ]"
FABENCH="$T/fakefab" tools/rounds.sh cuda:0 "$T/rs.csv" 0 "$T/rd0" >/dev/null 2>&1
check "rounds.sh: zero rounds exits 2" "[ $? -eq 2 ]"
FAKEFAB_LOG="$T/fakefab.log" FABENCH="$T/fakefab" tools/rounds.sh cuda:0 "$T/rs.csv" 1 "$T/rdr" --rest 1.5 >/dev/null 2>&1; rc=$?
check "rounds.sh --rest: passed to ours and the vendors alike" \
      "[ $rc -eq 0 ] && grep -q '^run .*--rest 1.5' '$T/fakefab.log' && grep -q '^vendors .*--rest 1.5' '$T/fakefab.log'"
# tools/knob-table.sh: docs/kernel.md's knob table is bench/core/knobs.h's; an edit by hand fails --check
tools/knob-table.sh --check >"$T/knobs.log" 2>&1; rc=$?
check "knob-table.sh --check: docs/kernel.md's knob table is what bench/core/knobs.h gives" "[ $rc -eq 0 ]"
[ $rc -eq 0 ] || sed 's/^/#   /' "$T/knobs.log" | head -20
cp docs/kernel.md "$T/kernel.md"
sed -i 's/^| `KPAD` | 0 to 8 |/| `KPAD` | 0 to 9 |/' "$T/kernel.md"
tools/knob-table.sh --check --doc "$T/kernel.md" >/dev/null 2>&1; rc=$?
grep -q '^| `KPAD` | 0 to 9 |' "$T/kernel.md"; typed=$?
tools/knob-table.sh --doc "$T/kernel.md" && cmp -s docs/kernel.md "$T/kernel.md"; restored=$?
check "knob-table.sh: a value typed into the table fails --check; a rewrite restores the page" \
      "[ $typed -eq 0 ] && [ $rc -eq 1 ] && [ $restored -eq 0 ]"
# tools/readme-summary.sh: README's summary block is what the committed results give (its
# numbers cannot be typed by hand); a number typed into it fails --check; a rewrite restores it
tools/readme-summary.sh --check >"$T/rsum.log" 2>&1; rc=$?
check "readme-summary.sh --check: README's summary block is what the committed results give" "[ $rc -eq 0 ]"
[ $rc -eq 0 ] || sed 's/^/#   /' "$T/rsum.log" | head -30
cp README.md "$T/README.md"
sed -i '/<!-- summary:begin -->/,/<!-- summary:end -->/s/^| all | \([0-9]*\) | [0-9.]*x |/| all | \1 | 9.999x |/' "$T/README.md"
tools/readme-summary.sh --check --readme "$T/README.md" >"$T/rsum.log" 2>&1; rc=$?
check "readme-summary.sh --check: a number typed into the block fails, showing it and how to fix it" \
      "[ $rc -eq 1 ] && grep -q '^-| all | [0-9]* | 9.999x |' '$T/rsum.log' && grep -q 'make summary' '$T/rsum.log'"
tools/readme-summary.sh --readme "$T/README.md" && cmp -s README.md "$T/README.md"
check "readme-summary.sh rewrites the block, and nothing else" "[ $? -eq 0 ]"
# per folder: a perf.csv with run ids at any depth gets its table, one without run ids a line
mkdir -p "$T/sres/gpu-new/study" "$T/sres/gpu-old"
H=gpu,backend,impl,name,dtype,batch,hq,hkv,sq,skv,d,causal,median_us,p20_us,p80_us,status
R=G,cuda,portable,smoke-mha-s64-d64-causal,bf16,1,2,2,64,64,64,1,100,95,105,ok
V=G,cuda,cudnn,smoke-mha-s64-d64-causal,bf16,1,2,2,64,64,64,1,200,190,210,ok
printf '%s\n' "$H,run_id,utc" "$R,r1,2026-01-01T00:00:00Z" "$V,r1,2026-01-01T00:01:00Z" >"$T/sres/gpu-new/study/perf.csv"
printf '%s\n' "$H" "$R" "$V" >"$T/sres/gpu-old/perf.csv"
tools/readme-summary.sh --print --results "$T/sres" >"$T/rsum.out" 2>&1; rc=$?
check "readme-summary.sh: a study's table by suite, and one line for a folder from before run ids" \
      "[ $rc -eq 0 ] && grep -qF '**$T/sres/gpu-new/study**: G, run \`r1\`, 2026-01-01 00:00-00:01 UTC, commit unknown' '$T/rsum.out' &&
       grep -qxF '| smoke | 1 | 2.000x | 1 | 0 | 0 |' '$T/rsum.out' &&
       grep -qxF -- '- \`$T/sres/gpu-old/perf.csv\`: 2 rows from before run ids (no run_id column): not summarized' '$T/rsum.out'"
grep -v 'summary:end' README.md >"$T/nomark.md"
tools/readme-summary.sh --readme "$T/nomark.md" >/dev/null 2>"$T/err"; rc=$?
check "readme-summary.sh: a README without its markers exits 2 saying which" "[ $rc -eq 2 ] && grep -q 'summary:end' '$T/err'"
# a failed row of ours (round 1 times out) still takes its round: the vendor of round 2 is
# paired with ours of round 2 (75/80 and 95/100: median 0.944), not with round 3's
cat > "$T/fakefab2" <<'FAKE'
#!/usr/bin/env bash
cmd=$1; shift; out=
while [ $# -gt 0 ]; do case "$1" in --out) out=$2; shift 2 ;; *) shift ;; esac; done
[ -e "$out" ] || echo "impl,config,name,median_us,tflops,status,config_source,sm_mhz" > "$out"
p=$(grep -c '^portable,' "$out"); v=$(grep -c '^cudnn,' "$out")
if [ "$cmd" = run ]; then
    case $p in 0) echo "portable,T,s,,,timeout,tuned,";; 1) echo "portable,T,s,80,2.5,ok,tuned,1980";; *) echo "portable,T,s,100,2.0,ok,tuned,1500";; esac >> "$out"
else
    case $v in 0) echo "cudnn,v,s,100,2.0,ok,,1500";; 1) echo "cudnn,v,s,75,2.67,ok,,1980";; *) echo "cudnn,v,s,95,2.1,ok,,1500";; esac >> "$out"
fi
FAKE
chmod +x "$T/fakefab2"
FABENCH="$T/fakefab2" tools/rounds.sh cuda:0 "$T/rs.csv" 3 "$T/rf" >/dev/null 2>&1; rc=$?
check "rounds.sh: a failed row of ours keeps the rounds paired (vendor/ours 0.944, cycles 0.944)" \
      "[ $rc -eq 0 ] && grep -q '^s,cudnn,3,.*,0.944,0.944$' '$T/rf/rounds.csv'"
rm -f "$T/rf/rounds-marks.txt" "$T/rf/rounds.csv"
tools/rounds.sh - - 0 "$T/rf" --summary-only >/dev/null 2>&1
check "rounds.sh --summary-only of a folder without rounds-marks.txt: failed rows counted, the same pairing" \
      "grep -q '^s,cudnn,3,.*,0.944,0.944$' '$T/rf/rounds.csv'"
# run.sh --tune: the devices of one runtime and folder tune together (fabench tune --device
# A,B), each once; another runtime of the same GPU apart; the later ones of a group not again
{
    echo 'sels=(cuda:0 opencl:0 cuda:1 cuda:0 opencl:1); dirs=(r/h r/h r/h r/h r/x); suites=(llm llm llm llm llm)'
    sed -n '/^tune_group() {/,/^}/p' run.sh
    echo 'for i in 0 1 2 3 4; do printf "%s;" "$(tune_group $i)"; done'
} >"$T/tg.sh"
check "run.sh's tune groups: cuda:0,cuda:1 together, each OpenCL device alone, the rest tuned already" \
      "[ \"\$(bash '$T/tg.sh')\" = 'cuda:0,cuda:1;opencl:0;;;opencl:1;' ]"

# tools/cross-gpu.sh: the transfer table's sources on two made-up GPU folders. A's winners
# on B: c1 measured (B's portability.csv: 80%), c2 looked up in B's explored.csv (its
# parameters in another order; B's best 20 us over 40 us: 50%), c3 unknown (B did not tune
# it). B's on A: c1 unknown (not explored on A), c2 cannot run (A's row: compile_error).
X=$T/xg
mkdir -p "$X/gpu-a" "$X/gpu-b"
for g in a b; do printf 'key,value\ngpu,GPU %s\n' "$g" >"$X/gpu-$g/manifest.csv"; done
printf 'gpu,backend,shape_class,config,median_us\nGPU a,opencl,c1,K1=1;K2=1,5\nGPU a,opencl,c2,K1=2;K2=1,6\nGPU a,opencl,c3,K1=3,7\n' \
    >"$X/gpu-a/tuning.csv"
printf 'gpu,backend,shape_class,config,median_us\nGPU b,opencl,c1,K1=9,10\nGPU b,opencl,c2,K1=8,20\n' >"$X/gpu-b/tuning.csv"
printf 'gpu,backend,shape_class,config,status,median_us\nGPU b,opencl,c2,K2=1;K1=2,ok,40\nGPU b,opencl,c2,K1=8,ok,20\n' \
    >"$X/gpu-b/explored.csv"
printf 'gpu,backend,shape_class,config,status,median_us\nGPU a,opencl,c2,K1=8,compile_error,\n' >"$X/gpu-a/explored.csv"
printf 'from_gpu,from_backend,to_gpu,to_backend,class,pct,status,from_us,to_us,reason\nGPU a,opencl,GPU b,opencl,c1,80.0,ok,12.5,10,\n' \
    >"$X/gpu-b/portability.csv"
bash tools/cross-gpu.sh "$X" >"$T/xg.log" 2>&1; rc=$?
xrow() { awk -F, -v f="$1" -v t="$2" -v c="$3" '$1 == f && $3 == t && $5 == c { print $6 "," $7 }' "$X/cross-gpu/transfer.csv"; }
check "cross-gpu.sh: exit 0, transfer tables written, no speedup figure without perf.csv (said)" \
      "[ $rc -eq 0 ] && [ -s '$X/cross-gpu/transfer_summary.csv' ] && grep -q 'speedup_gpus: not drawn: no perf.csv' '$T/xg.log'"
check "cross-gpu.sh: a portability.csv row is measured (80.0)" "[ \"\$(xrow 'GPU a' 'GPU b' c1)\" = '80.0,measured' ]"
check "cross-gpu.sh: a winner among the other's explored rows (parameters in any order) is looked up (50.0)" \
      "[ \"\$(xrow 'GPU a' 'GPU b' c2)\" = '50.0,lookup' ]"
check "cross-gpu.sh: a class the other did not tune, or a winner it did not explore, is unknown" \
      "[ \"\$(xrow 'GPU a' 'GPU b' c3)\" = ',unknown' ] && [ \"\$(xrow 'GPU b' 'GPU a' c1)\" = ',unknown' ]"
check "cross-gpu.sh: a winner explored there with another status has no value, and it says so" \
      "[ \"\$(xrow 'GPU b' 'GPU a' c2)\" = ',lookup' ] && grep -q 'status compile_error' '$X/cross-gpu/transfer.csv'"
check "cross-gpu.sh: the summary: A on B from 1 measured, 1 lookup, 1 unknown, geomean 63.2 (of 80 and 50)" \
      "grep -qx 'GPU a,opencl,GPU b,opencl,3,1,1,0,1,0,63.2' '$X/cross-gpu/transfer_summary.csv' &&
       grep -qx 'GPU b,opencl,GPU a,opencl,2,0,0,1,1,0,' '$X/cross-gpu/transfer_summary.csv'"
$fab check-results "$X" >"$T/xg.ck" 2>&1
check "check-results notes cross-gpu/ instead of checking its files" \
      "grep -q 'cross-gpu: note: drawn from the GPU folders' '$T/xg.ck' && ! grep -q 'cross-gpu/transfer' '$T/xg.ck'"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
