#!/usr/bin/env bash
# Runs each test program given on the command line (a .sh file through bash), then lists the
# skipped tests with the reason each gave, and prints as its last line
#     N passed, N failed, N skipped (tests, in P programs)
# counting tests, not programs; exits 1 when any failed. It reads three kinds of output:
# cmocka's ("[  PASSED  ] N test(s)."; a skipped test says "skipped: REASON" before cmocka's
# "[  SKIPPED ] NAME", tests/test_skip.h), the shell scripts' ("ok - ", "FAIL - ", "skip -
# WHAT: WHY") and Python unittest's -v lines ("... ok", "... skipped 'WHY'", "... FAIL").
# A program that exits non-zero with no failed test counted (a crash) counts one failure.
# A program running longer than FABENCH_TEST_TIMEOUT seconds (default 1200; the slowest,
# test_nvrtc, takes about 3 minutes on 2 cores) is stopped and counted failed, so a hang
# fails the run instead of holding it. FABENCH_TEST_JOBS programs (default: the CPU count)
# run at a time, each into a file of its own; their outputs are printed whole, in the order
# given, as each one's turn comes, so that a log reads as if they had run one by one.
set -u
limit=${FABENCH_TEST_TIMEOUT:-1200}
jobs=${FABENCH_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
work=$(mktemp -d "${TMPDIR:-/tmp}/fabench-tests.XXXXXX") || exit 1
skips=$work/skips
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
: >"$skips"

# tally NAME < OUTPUT: "P F S" on the first line, then "skip<TAB>NAME<TAB>WHY" per skipped test
tally() {
    awk -v prog="$1" '
        function skipped(test, why) {
            if (why == "") why = "(no reason given)"
            printf "skip\t%s\t%s\n", (test == "" ? prog : prog " " test), why > "/dev/stderr"
        }
        /^\[ RUN      \] / { cur = $4; why = ""; next }
        /^skipped: / && cur != "" { why = substr($0, 10) }
        /^\[  SKIPPED \] / && $4 == cur && cur != "" { skipped(cur, why); cur = "" }
        /^\[       OK \] / { cur = "" }
        /^\[  PASSED  \] [0-9]+ test/ { p += $4 }
        /^\[  FAILED  \] [0-9]+ test/ { f += $4 }
        /^\[  SKIPPED \] [0-9]+ test/ { s += $4 }
        /^ok - / { p++ }
        /^FAIL - / { f++ }
        /^skip - / { s++; skipped("", substr($0, 8)) }
        / \.\.\. ok$/ { p++ }
        / \.\.\. (FAIL|ERROR|unexpected success)$/ { f++ }
        / \.\.\. skipped / { s++; w = $0; sub(/.* \.\.\. skipped /, "", w); gsub(/^'\''|'\''$/, "", w); skipped("", w) }
        END { printf "%d %d %d\n", p, f, s }'
}

# run_one I T: program T into $work/I.out; its exit status and seconds into $work/I.rc
run_one() {
    local start rc
    start=$(date +%s)
    case "$2" in
        *.sh) timeout "$limit" bash "$2" >"$work/$1.out" 2>&1 ;;
        *) timeout "$limit" "$2" >"$work/$1.out" 2>&1 ;;
    esac
    rc=$?
    echo "$rc $(( $(date +%s) - start ))" >"$work/$1.rc.tmp" && mv "$work/$1.rc.tmp" "$work/$1.rc"
}
progs=("$@")
started=0
start_more() { # keeps $jobs programs running while any is left
    while [ $started -lt ${#progs[@]} ] && [ "$(jobs -rp | wc -l)" -lt "$jobs" ]; do
        run_one $started "${progs[$started]}" &
        started=$((started + 1))
    done
}

pass=0; fail=0; skip=0; nprog=0; failed=()
for i in "${!progs[@]}"; do
    t=${progs[$i]}
    start_more
    while [ ! -f "$work/$i.rc" ]; do wait -n 2>/dev/null || sleep 0.2; start_more; done
    echo "=== $t"
    cat "$work/$i.out"
    read -r rc secs <"$work/$i.rc"
    [ $rc -eq 124 ] && echo "=== $t: stopped after $limit s (FABENCH_TEST_TIMEOUT)"
    read -r p f s < <(tally "${t##*/}" <"$work/$i.out" 2>>"$skips")
    # a program that failed with no failed test counted (a crash, a timeout) fails once
    [ $rc -eq 0 ] || [ "$f" -gt 0 ] || f=1
    echo "=== $t: exit $rc after $secs s: $p passed, $f failed, $s skipped"
    pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s)); nprog=$((nprog + 1))
    [ $rc -eq 0 ] && [ "$f" -eq 0 ] || failed+=("$t")
done
if [ -s "$skips" ]; then # one line per reason: the program, how many of its tests, which
    echo "skipped, and why:"
    awk -F'\t' '{ split($2, a, " "); key = a[1] "\t" $3; n[key]++; if (!(key in first)) { first[key] = $2; order[++k] = key } }
        END { for (i = 1; i <= k; i++) { key = order[i]; split(key, b, "\t")
                  printf "  %s: %s\n", (n[key] > 1 ? b[1] " (" n[key] " tests)" : first[key]), b[2] } }' "$skips"
fi
[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped (tests, in $nprog programs)"
[ "$fail" -eq 0 ] && [ ${#failed[@]} -eq 0 ]
