#!/usr/bin/env bash
# vendor-kernels.sh OUT.csv [--arch sm_90] [--torch-lib FILE] [--cudnn-dir DIR]...
#
# Counts the attention forward kernels the vendors ship precompiled, as the vendors' side of
# "configurations explored": the distinct kernel instantiations (entry symbols, by mangled
# name, so one template instance built for several architectures counts once) that
# `cuobjdump -symbols` lists in
#   - PyTorch's libtorch_cuda.so: FlashAttention-2 forward (flash_fwd*: the main, split-KV and
#     combine kernels) as impl torch-flash, and the memory-efficient forward (fmha_cutlassF*)
#     as impl torch-efficient;
#   - cuDNN's libcudnn_engines_precompiled*.so: fused attention forward kernels (names matching
#     $CUDNN_KERNEL_RE, not $CUDNN_EXCLUDE_RE) as impl cudnn (a system cuDNN) or torch-cudnn
#     (the one PyTorch bundles).
# It appends rows impl,scope,configs,method to OUT.csv (the file `fabench vendors
# --configs-out` writes; created with its header if missing), atomically (temp file + rename).
# scope is kernels:ARCH with --arch (only that architecture's code), else kernels:all.
# PyTorch is found with python3 (import torch); --torch-lib and --cudnn-dir name the files
# instead. Needs cuobjdump (CUDA toolkit); c++filt, where present, shows sample names.
set -u
prog=vendor-kernels.sh
die() { echo "$prog: $*" >&2; exit 2; }

out=""; arch=""; torch_lib=""; cudnn_dirs=()
while [ $# -gt 0 ]; do
    case "$1" in
        --arch) [ $# -ge 2 ] || die "--arch needs a value (sm_90)"; arch=$2; shift 2 ;;
        --torch-lib) [ $# -ge 2 ] || die "--torch-lib needs a file"; torch_lib=$2; shift 2 ;;
        --cudnn-dir) [ $# -ge 2 ] || die "--cudnn-dir needs a folder"; cudnn_dirs+=("$2"); shift 2 ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option $1" ;;
        *) [ -z "$out" ] || die "one OUT.csv only"; out=$1; shift ;;
    esac
done
[ -n "$out" ] || die "usage: $prog OUT.csv [--arch sm_90] [--torch-lib FILE] [--cudnn-dir DIR]"
given_dirs=${#cudnn_dirs[@]}

CUOBJDUMP=${CUOBJDUMP:-cuobjdump}
if ! command -v "$CUOBJDUMP" >/dev/null 2>&1; then
    for d in "${CUDA_HOME:-}" /usr/local/cuda; do
        if [ -n "$d" ] && [ -x "$d/bin/cuobjdump" ]; then CUOBJDUMP=$d/bin/cuobjdump; break; fi
    done
fi
command -v "$CUOBJDUMP" >/dev/null 2>&1 ||
    die "cuobjdump not found (not on PATH, \$CUDA_HOME/bin or /usr/local/cuda/bin): install the CUDA toolkit's cuobjdump (e.g. the cuda-cuobjdump package) or set CUOBJDUMP=/path/to/cuobjdump"

header="impl,scope,configs,method"
if [ -e "$out" ]; then
    first=$(head -n 1 "$out" | tr -d '\r')
    [ "$first" = "$header" ] || die "$out has the header '$first', not '$header'"
fi
scope="kernels:${arch:-all}"
T=$(mktemp -d "${TMPDIR:-/tmp}/vendor-kernels.XXXXXX") || die "cannot make a temporary folder"
trap 'rm -rf "$T"' EXIT
rows=()

# entries FILE: the distinct entry-kernel names in FILE's embedded CUDA code (of $arch only,
# when given), one per line, sorted
entries() {
    "$CUOBJDUMP" -symbols "$1" 2>"$T/cuobjdump.err" | awk -v want="$arch" '
        /^arch = / { cur = $3; next }
        /^STT_FUNC/ {
            if (want != "" && cur != want) next
            name = $NF
            if ($0 ~ /STO_ENTRY/) entry[name] = 1
            else if ($0 ~ /STB_GLOBAL/) global[name] = 1
        }
        END {
            n = 0; for (k in entry) { print k; n++ }
            if (n == 0) for (k in global) print k   # no entry marks in this cuobjdump: global functions
        }' | sort -u
}

# count IMPL FILE INCLUDE_RE EXCLUDE_RE WHAT: appends one row
count() {
    local impl=$1 file=$2 inc=$3 exc=$4 what=$5 n
    entries "$file" >"$T/all"
    if [ ! -s "$T/all" ] && [ -s "$T/cuobjdump.err" ]; then
        echo "$prog: cuobjdump -symbols $file: $(head -c 300 "$T/cuobjdump.err")" >&2
    fi
    grep -Ei -- "$inc" "$T/all" | { if [ -n "$exc" ]; then grep -Eiv -- "$exc"; else cat; fi; } >"$T/hit" || true
    n=$(wc -l <"$T/hit" | tr -d ' ')
    echo "$prog: $impl: $n $what in $file (of $(wc -l <"$T/all" | tr -d ' ') entry kernels${arch:+ for $arch})" >&2
    if [ "$n" -gt 0 ]; then
        head -n 3 "$T/hit" | { if command -v c++filt >/dev/null 2>&1; then c++filt; else cat; fi; } |
            cut -c1-160 | sed "s/^/$prog:   e.g. /" >&2
    fi
    local method
    method="distinct $what (entry symbols by mangled name matching /$inc/${exc:+ not /$exc/}) in $(basename "$file") by cuobjdump -symbols"
    method=${method//\"/\'}
    rows+=("$impl,$scope,$n,\"$method\"")
}

# PyTorch
if [ -z "$torch_lib" ] && command -v python3 >/dev/null 2>&1; then
    tdir=$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))' 2>"$T/py.err") || tdir=""
    if [ -n "$tdir" ] && [ -e "$tdir/lib/libtorch_cuda.so" ]; then
        torch_lib=$tdir/lib/libtorch_cuda.so
    elif [ -n "$tdir" ]; then
        echo "$prog: PyTorch at $tdir has no lib/libtorch_cuda.so (a CPU or ROCm build?); no torch rows" >&2
    else
        echo "$prog: PyTorch is not importable ($(tail -n 1 "$T/py.err")); no torch rows" >&2
    fi
    # the cuDNN that PyTorch bundles (pip's nvidia-cudnn-cu*), or ships in torch/lib
    if [ "$given_dirs" -eq 0 ]; then
        nd=$(python3 -c 'import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null) || nd=""
        [ -n "$nd" ] && ls "$nd"/libcudnn_engines_precompiled*.so* >/dev/null 2>&1 && cudnn_dirs+=("$nd")
        [ -n "$tdir" ] && ls "$tdir"/lib/libcudnn_engines_precompiled*.so* >/dev/null 2>&1 && cudnn_dirs+=("$tdir/lib")
    fi
fi
if [ -n "$torch_lib" ]; then
    [ -r "$torch_lib" ] || die "cannot read $torch_lib"
    count torch-flash "$torch_lib" 'flash_fwd' '' "FlashAttention forward kernel instantiations"
    count torch-efficient "$torch_lib" 'fmha_cutlassF' '' "memory-efficient attention forward kernel instantiations"
fi

# cuDNN: named folders, else the ones above plus the system's (ldconfig, CUDA, $CUDNN_HOME)
if [ "$given_dirs" -eq 0 ]; then
    for d in "${CUDNN_HOME:-}/lib64" "${CUDNN_HOME:-}/lib" "${CUDA_HOME:-/usr/local/cuda}/lib64" \
             "${CUDA_HOME:-/usr/local/cuda}/lib" /usr/lib/x86_64-linux-gnu \
             $(ldconfig -p 2>/dev/null | awk '/libcudnn_engines_precompiled/ { sub(/\/[^\/]*$/, "", $NF); print $NF }'); do
        case "$d" in /lib64|/lib) continue ;; esac
        ls "$d"/libcudnn_engines_precompiled*.so* >/dev/null 2>&1 && cudnn_dirs+=("$d")
    done
fi
CUDNN_KERNEL_RE=${CUDNN_KERNEL_RE:-fmha|flash|sdpa|attention|_mha_|mha_fprop|fprop_mha}
CUDNN_EXCLUDE_RE=${CUDNN_EXCLUDE_RE:-bwd|backward|bprop|dgrad|wgrad|dq_|dkdv|_dk_|_dv_}
seen=""
for d in "${cudnn_dirs[@]}"; do
    real=$(cd "$d" 2>/dev/null && pwd -P) || continue
    case " $seen " in *" $real "*) continue ;; esac
    seen="$seen $real"
    case "$real" in */nvidia/cudnn/lib|*/torch/lib) impl=torch-cudnn ;; *) impl=cudnn ;; esac
    # the versioned file, once (libcudnn_engines_precompiled.so.9 and its links are one library)
    lib=$(find -L "$real" -maxdepth 1 -name 'libcudnn_engines_precompiled*.so*' 2>/dev/null | sort | tail -n 1)
    [ -n "$lib" ] && count "$impl" "$lib" "$CUDNN_KERNEL_RE" "$CUDNN_EXCLUDE_RE" "fused attention forward kernels"
done

[ ${#rows[@]} -gt 0 ] || die "found neither PyTorch's libtorch_cuda.so nor cuDNN's libcudnn_engines_precompiled*.so (use --torch-lib FILE, --cudnn-dir DIR)"
tmp="$out.tmp.$$"
if ! { if [ -e "$out" ]; then cat "$out"; else echo "$header"; fi; printf '%s\n' "${rows[@]}"; } >"$tmp" ||
   ! mv -f "$tmp" "$out"; then
    rm -f "$tmp"
    die "cannot write $out"
fi
echo "$prog: ${#rows[@]} row(s) appended to $out" >&2
