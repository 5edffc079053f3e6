#!/usr/bin/env bash
# codegen-equiv.sh [options] BEFORE_REF [AFTER_REF]
#
# Proof that a change to the kernel (or to how bench/core/attn.c assembles and configures it)
# left the generated code alone. Builds fabench at BEFORE_REF and at AFTER_REF (default:
# this working tree), then runs `fabench compile` on both for every target over the same
# configurations:
#   tuned     every distinct configuration of every committed results/**/*tuning.csv,
#             compiled for the shape its row was tuned on (bench/suites/), i.e. as a shape
#             of its class; every table row is compiled for every target (a configuration
#             that a target cannot build is compared as the compile error it gives)
#   default   the per-shape default configuration of every shape of every suite
# and compares compiled.csv (status, registers, spills, shared, private and binary bytes,
# instruction counts) and codegen.csv (the PTX/ISA instruction histograms) row by row.
# Compile errors are compared with file names and line numbers taken out. binary_hash is
# reported (how many binaries are byte-identical) but differs legitimately for any real
# edit; --strict makes a different binary a difference too.
# Exits 0 when everything compared is identical, 1 on a difference (printed), 2 on bad use.
# The full run (about 470 configurations a target, 1900 compiles a side) took 37 minutes
# here on 2 shared cores; --every 10 takes about 3.
#
#   --every N     fast mode: every Nth configuration and every Nth suite shape only
#   --targets "A B"   default "sm_80 sm_90 gfx90a gfx940" (sm_90 builds wgmma as sm_90a)
#   --jobs J      compiles in parallel (default: the CPU count), each under nice
#   --keep DIR    keep the compile outputs there (default: a temporary folder, removed)
#   --compare DIR compare the outputs an earlier run kept in DIR again (no refs, no compiles)
#   --ignore F,.. compiled.csv columns to leave out (say binary_bytes, for a change of the
#                 kernel's arguments: their metadata is in the binary)
#   --strict      a differing binary_hash is a difference
# Builds are cached per commit under $FABENCH_EQUIV_CACHE (default ~/.cache/fabench-equiv).
set -u
usage() { sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
# (all in main: the script is read whole before it runs, so editing it mid-run is harmless)
main() {
every=1 targets="sm_80 sm_90 gfx90a gfx940" jobs=$(nproc 2>/dev/null || echo 2) keep="" strict=0 compare="" ignore=""
while [ $# -gt 0 ]; do
    case $1 in
    --every) every=${2:-}; shift 2 ;;
    --targets) targets=${2:-}; shift 2 ;;
    --jobs) jobs=${2:-}; shift 2 ;;
    --keep) keep=${2:-}; shift 2 ;;
    --compare) compare=${2:-}; shift 2 ;;
    --ignore) ignore=${2:-}; shift 2 ;;
    --strict) strict=1; shift ;;
    -h|--help) usage ;;
    --*) echo "codegen-equiv.sh: unknown option $1" >&2; usage ;;
    *) break ;;
    esac
done
if [ -n "$compare" ]; then
    [ $# -eq 0 ] && [ -f "$compare/in/targets" ] || { echo "codegen-equiv.sh: --compare needs a folder --keep wrote, and no refs" >&2; exit 2; }
    compare_outputs "$compare" "$(cat "$compare/in/targets")" "$strict" "$ignore" 0
    exit
fi
[ $# -ge 1 ] && [ $# -le 2 ] || usage
[[ $every =~ ^[1-9][0-9]*$ ]] || { echo "codegen-equiv.sh: --every needs a positive count" >&2; exit 2; }
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "codegen-equiv.sh: --jobs needs a positive count" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${FABENCH_EQUIV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fabench-equiv}
mkdir -p "$cache" || exit 2
t0=$(date +%s)

# tree_of REF|"": the tree to build (a cached extract of the commit, or this working tree)
tree_of() {
    if [ -z "$1" ]; then echo "$root"; return 0; fi
    local sha
    sha=$(git -C "$root" rev-parse --verify -q "$1^{commit}") || { echo "codegen-equiv.sh: $1: not a commit" >&2; return 1; }
    local dir=$cache/tree-$sha
    if [ ! -d "$dir/kernels" ]; then
        rm -rf "$dir.tmp" && mkdir -p "$dir.tmp" && git -C "$root" archive "$sha" | tar -x -C "$dir.tmp" && mv "$dir.tmp" "$dir" ||
            { echo "codegen-equiv.sh: cannot extract $1" >&2; return 1; }
    fi
    echo "$dir"
}
build() {
    echo "codegen-equiv.sh: building $1" >&2
    local log=$cache/$(basename "$1").build.log
    nice make -C "$1" -j"$jobs" build/fabench >"$log" 2>&1 ||
        { echo "codegen-equiv.sh: the build in $1 failed:" >&2; tail -20 "$log" >&2; return 1; }
}
before=$(tree_of "$1") && after=$(tree_of "${2:-}") || exit 2
build "$before" && build "$after" || exit 2

if [ -n "$keep" ]; then work=$keep; rm -rf "$work"; mkdir -p "$work" || exit 2
else work=$(mktemp -d) || exit 2; trap 'rm -rf "$work"' EXIT; fi

# The units of work, from this tree's tables and suites (both sides read the same files):
# one shapes file (+ tuning file) per job
python3 - "$root" "$work/in" "$every" "$targets" <<'PY' || exit 2
import csv, glob, os, sys
root, out, every, targets = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split()
os.makedirs(out)
cols = ["name", "batch", "hq", "hkv", "sq", "skv", "d", "causal", "dtype", "lens", "qlens", "page"]
suites, shapes = {}, {}
for f in sorted(glob.glob(os.path.join(root, "bench/suites/*.csv"))):
    name = os.path.basename(f)[:-4]
    suites[name] = []
    for r in csv.DictReader(open(f)):
        row = {c: r.get(c) or "" for c in cols}
        row["dtype"] = row["dtype"] or "bf16"  # fabench compile's default
        suites[name].append(row)
        shapes.setdefault(row["name"], row)
def write_shapes(path, rows):
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, cols, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
# tuned: distinct (shape, class, config) rows of every committed table
tables = sorted(glob.glob(os.path.join(root, "results/**/*tuning.csv"), recursive=True))
rows, skipped, hdr = {}, set(), None
for t in tables:
    for r in csv.DictReader(open(t)):
        hdr = hdr or list(r.keys())
        if r.get("shape") not in shapes:
            skipped.add(r.get("shape"))
            continue
        rows.setdefault((r["shape"], r["shape_class"], r["config"]), r)
units = sorted(rows)[::every]
by_shape = {}
for u in units:
    by_shape.setdefault(u[0], []).append(rows[u])
# a few shapes a job (a row goes with the shape it was tuned on: its class is that shape's)
jobs, names = [], sorted(by_shape)
for i in range(0, len(names), 6):
    group = names[i:i + 6]
    write_shapes(f"{out}/tuned-{i}.shapes.csv", [shapes[n] for n in group])
    for tgt in targets:  # every row for every target: the backend column says the target's runtime
        with open(f"{out}/tuned-{i}.{tgt}.tuning.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, hdr, lineterminator="\n")
            w.writeheader()
            for n in group:
                for r in by_shape[n]:
                    w.writerow(dict(r, backend="hip" if tgt.startswith("gfx") else "cuda"))
    jobs.append(f"tuned-{i}")
# what the tuned runs must compile: a shape's rows of one configuration are one
open(f"{out}/tuned-expected", "w").write(f"{len({(u[0], u[2]) for u in units})}\n")
# default: every suite's shapes (every Nth), one job per suite
nshapes = 0
for name, rs in sorted(suites.items()):
    pick = rs[::every]
    if pick:
        write_shapes(f"{out}/default-{name}.shapes.csv", pick)
        jobs.append(f"default-{name}")
        nshapes += len(pick)
open(f"{out}/jobs", "w").write("\n".join(jobs) + "\n")
open(f"{out}/targets", "w").write(" ".join(targets) + "\n")
print(f"codegen-equiv.sh: {len(units)} tuned configurations of {len(tables)} tables ({len(by_shape)} shapes), "
      f"{nshapes} suite shapes for the defaults; targets {' '.join(targets)}"
      + (f"; every {every}th only" if every > 1 else ""), file=sys.stderr)
if skipped:
    print(f"codegen-equiv.sh: rows of shapes in no suite left out: {', '.join(sorted(map(str, skipped)))}", file=sys.stderr)
PY

# One compile per (side, target, job); the slowest (tuned, sm_90: wgmma) first
joblist=$work/joblist
: >"$joblist"
for t in $targets; do
    while read -r j; do
        for side in before after; do echo "$side $t $j"; done
    done <"$work/in/jobs"
done | sort -k2,2r -k3,3r >"$joblist"
echo "codegen-equiv.sh: $(wc -l <"$joblist") compile runs on $jobs cores" >&2
export before after work
xargs -P "$jobs" -L 1 bash -c '
    side=$0 t=$1 j=$2
    tree=$before; [ "$side" = after ] && tree=$after
    o=$work/$side/$t/$j
    mkdir -p "$o"
    extra=()
    [ -f "$work/in/$j.$t.tuning.csv" ] && extra=(--tuning "$work/in/$j.$t.tuning.csv")
    FABENCH_ROOT=$tree nice "$tree/build/fabench" compile --target "$t" --shapes "$work/in/$j.shapes.csv" "${extra[@]}" \
        --out "$o" >"$o/log" 2>&1
    [ -s "$o/compiled.csv" ] || { echo "codegen-equiv.sh: $side $t $j: no compiled.csv:" >&2; tail -5 "$o/log" >&2; exit 255; }
' <"$joblist" || { echo "codegen-equiv.sh: a compile run failed" >&2; exit 2; }

compare_outputs "$work" "$targets" "$strict" "$ignore" $(( $(date +%s) - t0 ))
}

# compare_outputs DIR TARGETS STRICT IGNORE SECONDS: the before/ and after/ outputs in DIR
compare_outputs() {
python3 - "$@" <<'PY'
import csv, glob, os, re, sys
work, targets, strict, secs = sys.argv[1], sys.argv[2].split(), sys.argv[3] == "1", int(sys.argv[5])
ignore = {"binary_hash"} | set(filter(None, sys.argv[4].split(",")))
# file names and line numbers in compiler messages: NVRTC "f.k(12): ", clang "f.k:12:3: "
loc = re.compile(r"[\w./+-]+\.(?:k|h|cu|hip|cl)(?:\(\d+\)|:\d+(?::\d+)?)")
def load(side, tgt):
    comp, hist = {}, {}
    for d in sorted(glob.glob(f"{work}/{side}/{tgt}/*")):
        kind = os.path.basename(d).split("-")[0]
        for r in csv.DictReader(open(f"{d}/compiled.csv")):
            key = (kind, r["shape_class"], r["config"])
            r["reason"] = loc.sub("FILE:LINE", r["reason"])
            comp.setdefault(key, r)  # (a class in two suites: the same configuration twice)
        for r in csv.DictReader(open(f"{d}/codegen.csv")):
            key = (kind, r["shape_class"], r["config"])
            h = hist.setdefault(key, {}).setdefault(d, {})
            h[(r["source"], r["instruction"])] = int(r["count"])
    # one histogram per key (the first job's)
    return comp, {k: v[min(v)] for k, v in hist.items()}
expected = int(open(f"{work}/in/tuned-expected").read())
ndiff = nsame = nbin = 0
for tgt in targets:
    bc, bh = load("before", tgt)
    ac, ah = load("after", tgt)
    tdiff = 0
    for key in sorted(set(bc) | set(ac)):
        what = " ".join(key)
        if key not in bc or key not in ac:
            print(f"DIFF {tgt} {what}: only {'after' if key in ac else 'before'}")
            tdiff += 1
            continue
        b, a = bc[key], ac[key]
        fields = [c for c in b if c not in ignore and b[c] != a.get(c)]
        if strict and b["binary_hash"] != a["binary_hash"]:
            fields.append("binary_hash")
        hb, ha = bh.get(key, {}), ah.get(key, {})
        ops = sorted(set(hb) | set(ha))
        dops = [(o, hb.get(o, 0), ha.get(o, 0)) for o in ops if hb.get(o, 0) != ha.get(o, 0)]
        if fields or dops:
            tdiff += 1
            print(f"DIFF {tgt} {what}")
            for c in fields:
                print(f"    {c}: {b[c]!r} -> {a.get(c)!r}")
            for (src, op), x, y in dops:
                print(f"    {src} {op}: {x} -> {y} ({y - x:+d})")
        else:
            nsame += 1
            nbin += b["binary_hash"] == a["binary_hash"] and b["status"] == "ok"
    ntuned = sum(k[0] == "tuned" for k in bc)
    if ntuned < expected:  # (more: a row of a class without its -w bucket matches several shapes of a job)
        print(f"codegen-equiv.sh: warning: {tgt}: {ntuned} tuned configurations compiled, {expected} expected "
              "(a table row whose class its shape no longer has is left out)", file=sys.stderr)
    nok = sum(r["status"] == "ok" for r in bc.values())
    print(f"{tgt}: {len(set(bc) | set(ac))} configurations compared ({nok} compiled, {len(bc) - nok} compile errors), "
          f"{tdiff} differ", file=sys.stderr)
    ndiff += tdiff
print(f"codegen-equiv.sh: {nsame} identical ({nbin} of them byte-identical binaries), {ndiff} different; {secs} s",
      file=sys.stderr)
sys.exit(1 if ndiff else 0)
PY
}

main "$@"
