# device-prologue.sh: sourced by this folder's scripts on the device, from the repo root: the
# carried packages unpacked, the kernel cache kept in build/, fabench built, and $slug set:
# the results folder's name for cuda:0, its device name in lower case with every run of
# other characters made one '-'.
source .deps/unpack-debs.sh
export FABENCH_CACHE=$PWD/build/kcache PYTHONUNBUFFERED=1
make -j16 all >/dev/null 2>&1 || { make all 2>&1 | tail -n 20; exit 1; }
slug=$(build/fabench devices --list | awk -F'\t' '$1=="cuda:0"{print $3}' | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\+/-/g; s/^-//; s/-$//')

# run_vendors TAG DIR IMPLS: `fabench vendors --impl IMPLS` on DIR/shapes.csv into
# DIR/vendors.csv with DIR/manifest.csv, its log build/TAG-vendors.log
run_vendors() {
    build/fabench vendors --device cuda:0 --shapes "$2/shapes.csv" --impl "$3" --out "$2/vendors.csv" \
        --manifest "$2/manifest.csv" >"build/$1-vendors.log" 2>&1
    echo "vendors rc=$? t=$SECONDS"
}

# run_candidates TAG DIR NAME:CONFIG...: `fabench run` on DIR/shapes.csv once per candidate,
# into DIR/NAME.csv with DIR/manifest.csv, its log build/TAG-NAME.log; an empty CONFIG runs
# --tuned (the committed table), any other is given as --config
run_candidates() {
    local tag=$1 dir=$2 c name cfg
    shift 2
    for c in "$@"; do
        name=${c%%:*} cfg=${c#*:}
        local how=(--tuned)
        [ -n "$cfg" ] && how=(--config "$cfg")
        build/fabench run --device cuda:0 --shapes "$dir/shapes.csv" "${how[@]}" --out "$dir/$name.csv" \
            --manifest "$dir/manifest.csv" >"build/$tag-$name.log" 2>&1
        echo "$name rc=$? t=$SECONDS"
    done
}

# probe_start NAME: this probe's folder, W=results/$slug/NAME, and run id (FABENCH_RUN_ID:
# RUN_ID, default NAME-<UTC time>); on exit, whole or cut short, $OUT/NAME.tgz packs the
# folder and the logs build/NAME-*.log
probe_start() {
    probe=$1
    export FABENCH_RUN_ID=${RUN_ID:-$probe-$(date -u +%Y%m%dT%H%M%SZ)}
    W=results/$slug/$probe
    mkdir -p "$W" "${OUT:=/tmp/out}"
    trap 'tar czf "$OUT/$probe.tgz" "$W" build/"$probe"-*.log 2>/dev/null' EXIT
}
