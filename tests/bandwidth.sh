#!/usr/bin/env bash
# bandwidth.sh: `fabench bandwidth` on opencl:0 (PoCL): a row per variant, verified; a kernel
# that leaves a word out is refused (FABENCH_TEST_BW_FAULT=1); bad input exits 2 and writes
# nothing; --append keeps rows; the manifest records the command. Run from the repository
# root after `make`: bash tests/bandwidth.sh. One line per check, then "N passed, N failed".
set -u
cd "$(dirname "$0")/.." || exit 1
FB=${FABENCH:-$PWD/build/fabench}
T=$(mktemp -d "${TMPDIR:-/tmp}/fabench-bw.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
quick=(--device opencl:0 --mib 1 --budget 0.01 --warmup 0 --min-reps 2 --quiet)
# rows KEY=VALUE...: data rows of $T/bw.csv whose named fields all match
rows() {
    awk -F, -v want="$*" 'NR==1{for(i=1;i<=NF;i++) c[$i]=i; n=split(want,w," "); next}
        {m=1; for(j=1;j<=n;j++){split(w[j],kv,"="); if($c[kv[1]]!=kv[2]) m=0} s+=m} END{print s+0}' "$T/bw.csv"
}

FABENCH_RUN_ID=bw-1 "$FB" bandwidth "${quick[@]}" --out "$T/bw.csv" --manifest "$T/manifest.csv" >"$T/out" 2>"$T/err"
rc=$? total=$(($(wc -l <"$T/bw.csv") - 1)) okrows=$(rows status=ok run_id=bw-1)
if [ $rc -eq 0 ] && [ "$total" -ge 4 ] && [ "$okrows" -eq "$total" ] && [ "$(rows kernel=copy)" -ge 2 ] && [ "$(rows kernel=read)" -ge 2 ]; then
    ok "a row per variant, all ok, copy and read ($total rows)"
else bad "a row per variant, all ok" "rc=$rc rows=$total ok=$okrows" "$(cat "$T/err")"; fi
if grep -Eq '^copy: [0-9.]+ GB/s' "$T/out" && grep -Eq '^read: [0-9.]+ GB/s' "$T/out"; then ok "stdout: the best copy and read rates"
else bad "stdout: the best copy and read rates" "$(cat "$T/out")"; fi
# gbps is bytes_moved over the median (to its one decimal); a copy moves twice its buffer
if awk -F, 'NR==1{for(i=1;i<=NF;i++) c[$i]=i; next} {g=$c["bytes_moved"]/$c["median_us"]/1e3; e=g-$c["gbps"]; if (e < 0) e=-e; if (e > 0.06 + 0.01*g) exit 1;
        if ($c["kernel"]=="copy" && $c["bytes_moved"] != 2*$c["buffer_bytes"]) exit 1; if ($c["buffer_bytes"] != 1048576) exit 1}' "$T/bw.csv"; then
    ok "gbps = bytes_moved / median_us; a copy moves 2 x its 1 MiB buffer"
else bad "gbps and bytes_moved consistent" "$(head -3 "$T/bw.csv")"; fi
if grep -q '^gpu,' "$T/manifest.csv" && grep -q 'bandwidth' "$T/manifest.csv"; then ok "the manifest records the device and the command"
else bad "the manifest records the command" "$(cat "$T/manifest.csv")"; fi

mkdir -p "$T/res" && cp "$T/bw.csv" "$T/res/bandwidth.csv" && cp "$T/manifest.csv" "$T/res/"
if "$FB" check-results "$T/res" >"$T/ck" 2>&1 && grep -q '2 files in 1 results folder: 0 problems, 0 notes' "$T/ck"; then
    ok "check-results: bandwidth.csv and its manifest are clean"
else bad "check-results on the folder it wrote" "$(tail -3 "$T/ck")"; fi
awk -F, -v OFS=, 'NR==2{for(i=1;i<=NF;i++) if(h[i]=="gbps") $i=$i*3} NR==1{for(i=1;i<=NF;i++) h[i]=$i} 1' "$T/bw.csv" >"$T/x" && mkdir -p "$T/bad" &&
    mv "$T/x" "$T/bad/bandwidth.csv" && cp "$T/manifest.csv" "$T/bad/"
"$FB" check-results "$T/bad" >"$T/ck" 2>&1
if [ $? -ne 0 ] && grep -q 'bandwidth.csv:2: gbps: .*but bytes_moved / median_us is' "$T/ck"; then ok "check-results: a rate that is not bytes_moved / median_us is a problem"
else bad "check-results catches a wrong rate" "$(tail -3 "$T/ck")"; fi

before=$total
FABENCH_RUN_ID=bw-2 "$FB" bandwidth "${quick[@]}" --out "$T/bw.csv" --append >/dev/null 2>&1
if [ "$(rows run_id=bw-1)" -eq "$before" ] && [ "$(rows run_id=bw-2)" -eq "$before" ]; then ok "--append keeps the rows of the run before"
else bad "--append keeps rows" "bw-1 $(rows run_id=bw-1) bw-2 $(rows run_id=bw-2)"; fi

# a kernel that leaves the last word out: every variant wrong_result, exit 1
FABENCH_TEST_BW_FAULT=1 "$FB" bandwidth "${quick[@]}" --out "$T/bw.csv" >"$T/out" 2>/dev/null
rc=$? n=$(($(wc -l <"$T/bw.csv") - 1))
if [ $rc -eq 1 ] && [ "$n" -ge 4 ] && [ "$(rows status=wrong_result)" -eq "$n" ] && grep -q 'no variant ran correctly' "$T/out"; then
    ok "a kernel that drops a word: every row wrong_result, exit 1"
else bad "a dropped word is caught" "rc=$rc rows=$n wrong=$(rows status=wrong_result)" "$(cat "$T/out")"; fi

# bad input: exit 2, nothing written
for args in "--mib 1 --out $T/never.csv" "--device opencl:0 --mib zero --out $T/never.csv" "--device opencl:0 --append" \
            "--device opencl:0 --what --out $T/never.csv" "--device no-such-device --mib 1 --out $T/never.csv" \
            "--device opencl:0 --mib 1 --out $T/never.csv stray" "--device opencl:0 --mib 1 --out $T/no-dir/x.csv"; do
    # shellcheck disable=SC2086
    "$FB" bandwidth $args 2>"$T/err" >/dev/null
    rc=$?
    if [ $rc -eq 2 ] && [ ! -e "$T/never.csv" ] && [ -s "$T/err" ]; then ok "bad input '${args//$T\//}': exit 2, nothing written"
    else bad "bad input '${args//$T\//}'" "rc=$rc" "$(head -3 "$T/err")"; fi
done
printf 'not,a,bandwidth,file\n' >"$T/other.csv"
"$FB" bandwidth "${quick[@]}" --out "$T/other.csv" --append 2>"$T/err"
if [ $? -eq 2 ] && [ "$(cat "$T/other.csv")" = "not,a,bandwidth,file" ]; then ok "--append to another schema: exit 2, file untouched"
else bad "--append to another schema" "$(cat "$T/err")"; fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
