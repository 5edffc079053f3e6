#!/usr/bin/env bash
# cudnn.sh: the cuDNN vendor's checks that need a shell. (1) vendors/cudnn/cudnn_abi.h against
# a real cudnn_backend.h: tests/cudnn_abi_check.c must compile, its _Static_asserts holding
# every enum value and prototype equal to cuDNN's (skipped, saying why, with no header or no
# CUDA headers beside it). (2) tools/vendor-kernels.sh: counts on a stub cuobjdump, appends to
# an existing CSV, refuses another header, and fails clearly without cuobjdump.
# Prints "N passed, N failed" last.
set -u
cd "$(dirname "$0")/.." || exit 1
T=$(mktemp -d "${TMPDIR:-/tmp}/fabench-cudnn.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
pass=0; fail=0; skip=0
ok()    { pass=$((pass + 1)); echo "ok - $1"; }
bad()   { fail=$((fail + 1)); echo "FAIL - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
skipc() { skip=$((skip + 1)); echo "skip - $1"; }
CC=${CC:-cc}

# ---- (1) the ABI against cuDNN's header ----
hdr=""
for d in ${CUDNN_INCLUDE:-} /usr/local/cuda-13.0/include /usr/local/include ${CUDNN_HOME:+$CUDNN_HOME/include} \
         ${CUDA_HOME:+$CUDA_HOME/include} /usr/local/cuda/include /usr/include /usr/include/x86_64-linux-gnu; do
    if [ -f "$d/cudnn_backend.h" ]; then hdr=$d; break; fi
done
if [ -z "$hdr" ]; then
    skipc "cudnn_abi.h against cudnn_backend.h: no cudnn_backend.h installed (looked in \$CUDNN_INCLUDE, /usr/local/cuda-13.0/include, /usr/local/include, \$CUDNN_HOME/include, \$CUDA_HOME/include, /usr/local/cuda/include, /usr/include)"
else
    inc=(-I"$hdr")
    for d in ${CUDA_HOME:+$CUDA_HOME/include} /usr/local/cuda/include /usr/local/cuda-13.0/include; do
        [ -d "$d" ] && inc+=(-I"$d")
    done
    ver=$(awk '/#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) /{printf "%s%s", sep, $3; sep="."}' "$hdr/cudnn_version.h" 2>/dev/null)
    # the header alone first: a machine without CUDA's headers cannot check, which is no mismatch
    printf '#include <cudnn_backend.h>\n' >"$T/plain.c"
    if ! $CC -std=c11 -fsyntax-only "${inc[@]}" "$T/plain.c" 2>"$T/plain.err"; then
        skipc "cudnn_abi.h against $hdr/cudnn_backend.h: the header does not compile here ($(grep -m1 error "$T/plain.err"))"
    elif $CC -std=c11 -fsyntax-only -Wall -Wextra "${inc[@]}" -Ivendors tests/cudnn_abi_check.c 2>"$T/abi.err"; then
        nv=$(grep -c '^ *X(CUDNN_' vendors/cudnn/cudnn_abi.h); nf=$(grep -c '^ *X(cudnn' vendors/cudnn/cudnn_abi.h)
        ok "cudnn_abi.h: $nv values and $nf prototypes equal cuDNN ${ver:-?}'s ($hdr/cudnn_backend.h)"
    else
        bad "cudnn_abi.h differs from $hdr/cudnn_backend.h (cuDNN ${ver:-?})" "$(grep -E 'error' "$T/abi.err" | head -n 8)"
    fi
fi

# ---- (2) tools/vendor-kernels.sh ----
mkdir -p "$T/bin" "$T/lib/cudnn"
cat >"$T/bin/cuobjdump" <<'EOF'
#!/bin/sh
# a stand-in for cuobjdump -symbols: two architectures of PyTorch kernels, one of cuDNN's
elf() { printf '\nFatbin elf code:\n================\narch = %s\ncode version = [1,7]\nhost = linux\ncompile_size = 64bit\n\nsymbols:\n' "$1"; }
case "$2" in
*torch*)
    elf sm_80
    echo "STT_SECTION      STB_LOCAL  .text._ZN7pytorch_flash16flash_fwd_kernelI6TraitsLb1EEEv6Params"
    echo "STT_FUNC         STB_GLOBAL STO_ENTRY      _ZN7pytorch_flash16flash_fwd_kernelI6TraitsLb1EEEv6Params"
    echo "STT_FUNC         STB_GLOBAL STO_ENTRY      _ZN7pytorch_flash24flash_fwd_splitkv_kernelI6TraitsEEv6Params"
    echo "STT_FUNC         STB_GLOBAL STO_ENTRY      _ZN7pytorch_flash16flash_bwd_kernelI6TraitsEEv6Params"
    echo "STT_FUNC         STB_GLOBAL STO_ENTRY      _Z37fmha_cutlassF_f16_aligned_64x64_rf_sm80N14AttentionKernelE6Params"
    echo "STT_FUNC         STB_GLOBAL                _Z6helperv"
    elf sm_90
    echo "STT_FUNC         STB_GLOBAL STO_ENTRY      _ZN7pytorch_flash16flash_fwd_kernelI6TraitsLb1EEEv6Params"
    echo "STT_FUNC         STB_GLOBAL STO_ENTRY      _ZN7pytorch_flash16flash_fwd_kernelI6TraitsLb0EEEv6Params"
    ;;
*cudnn*)
    elf sm_90
    echo "STT_FUNC         STB_GLOBAL STO_ENTRY      cudnn_sm90_fmha_fprop_bf16_128x128_causal_kernel"
    echo "STT_FUNC         STB_GLOBAL STO_ENTRY      cudnn_sm90_fmha_bprop_dq_bf16_128x128_kernel"
    echo "STT_FUNC         STB_GLOBAL STO_ENTRY      sm90_xmma_gemm_bf16bf16_bf16f32_kernel"
    ;;
esac
EOF
chmod +x "$T/bin/cuobjdump"
: >"$T/lib/libtorch_cuda.so"
: >"$T/lib/cudnn/libcudnn_engines_precompiled.so.9"
vk() { PATH="$T/bin:$PATH" bash tools/vendor-kernels.sh "$@" >"$T/vk.out" 2>"$T/vk.err"; }
csv=$T/configs.csv
printf 'impl,scope,configs,method\ncudnn,ref-b4,5,cudnn heuristics mode A engine configs offered for this graph\n' >"$csv"
if vk "$csv" --torch-lib "$T/lib/libtorch_cuda.so" --cudnn-dir "$T/lib/cudnn"; then
    if grep -q '^cudnn,ref-b4,5,' "$csv" && grep -q '^torch-flash,kernels:all,3,"distinct FlashAttention' "$csv" &&
       grep -q '^torch-efficient,kernels:all,1,' "$csv" && grep -q '^cudnn,kernels:all,1,"distinct fused attention' "$csv" &&
       [ "$(wc -l <"$csv")" -eq 5 ]; then
        ok "vendor-kernels.sh appends distinct forward kernels per vendor (3 flash, 1 efficient, 1 cuDNN)"
    else
        bad "vendor-kernels.sh rows" "$(cat "$csv")"
    fi
else
    bad "vendor-kernels.sh on a stub cuobjdump exits 0" "$(cat "$T/vk.err")"
fi
if vk "$T/arch.csv" --arch sm_90 --torch-lib "$T/lib/libtorch_cuda.so" --cudnn-dir "$T/lib/cudnn" &&
   head -n 1 "$T/arch.csv" | grep -qx 'impl,scope,configs,method' && grep -q '^torch-flash,kernels:sm_90,2,' "$T/arch.csv" &&
   grep -q '^torch-efficient,kernels:sm_90,0,' "$T/arch.csv"; then
    ok "vendor-kernels.sh --arch counts one architecture's kernels into a new file with the header"
else
    bad "vendor-kernels.sh --arch sm_90" "$(cat "$T/arch.csv" "$T/vk.err" 2>/dev/null)"
fi
printf 'a,b\n' >"$T/other.csv"
if ! vk "$T/other.csv" --torch-lib "$T/lib/libtorch_cuda.so" && grep -q "has the header 'a,b'" "$T/vk.err" &&
   [ "$(cat "$T/other.csv")" = "a,b" ]; then
    ok "vendor-kernels.sh refuses a CSV with another header and leaves it alone"
else
    bad "vendor-kernels.sh on another schema" "$(cat "$T/vk.err")"
fi
if ! PATH=/usr/bin:/bin CUDA_HOME=/nonexistent CUOBJDUMP=no-such-cuobjdump bash tools/vendor-kernels.sh "$T/x.csv" \
        >/dev/null 2>"$T/vk.err" && grep -q "cuobjdump not found" "$T/vk.err" && [ ! -e "$T/x.csv" ]; then
    ok "vendor-kernels.sh without cuobjdump fails and says how to get it"
else
    bad "vendor-kernels.sh without cuobjdump" "$(cat "$T/vk.err")"
fi

echo "$pass passed, $fail failed${skip:+, $skip skipped}"
[ "$fail" -eq 0 ]
