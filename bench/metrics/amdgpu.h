/* amdgpu.h: AMDGPU code objects (the ELF files HIPRTC and hipcc produce): a kernel's
 * resource usage from the NT_AMDGPU_METADATA note (msgpack), and an ISA instruction
 * histogram by disassembling with llvm-objdump. */
#ifndef FABENCH_AMDGPU_H
#define FABENCH_AMDGPU_H

#include <stddef.h>

#include "op_histogram.h"

/* What the compiler recorded for one kernel; -1 where the note says nothing. */
typedef struct {
    char target[96];     /* amdhsa.target, e.g. amdgcn-amd-amdhsa--gfx90a */
    long sgprs;          /* .sgpr_count */
    long vgprs;          /* .vgpr_count: on gfx90a/gfx94x the unified file (architectural + AGPRs) */
    long agprs;          /* .agpr_count (accumulation registers; 0 before gfx908) */
    long sgpr_spills, vgpr_spills; /* registers spilled (.sgpr_spill_count, .vgpr_spill_count) */
    long lds_bytes;      /* .group_segment_fixed_size: static LDS */
    long scratch_bytes;  /* .private_segment_fixed_size: per-lane stack */
    long max_flat_workgroup_size, wavefront_size, kernarg_bytes;
} amdgpu_kernel_meta;

/* The metadata of kernel `kernel` (its .name) in the code object elf[0..len). 0, or -1
 * with err saying why (not an AMDGPU ELF, no metadata note, malformed msgpack, no such
 * kernel). Reads only inside the buffer, whatever it holds. */
int amdgpu_kernel_meta_get(const void *elf, size_t len, const char *kernel, amdgpu_kernel_meta *out,
                           char *err, size_t errlen);

/* Architectural VGPRs of a kernel: on targets with a unified register file (gfx90a,
 * gfx94x) .vgpr_count includes the AGPRs (after rounding the architectural part up to 4). */
long amdgpu_arch_vgprs(const amdgpu_kernel_meta *m);

/* Counts the instructions of the code object's .text by mnemonic (s_nop padding after a
 * function's last s_endpgm is left out), disassembling for mcpu ("gfx90a") with the
 * newest llvm-objdump found ($FABENCH_LLVM_OBJDUMP, $ROCM_PATH/llvm/bin, /opt/rocm/llvm/bin,
 * llvm-objdump-N, llvm-objdump on PATH) that knows mcpu. 0, or -1 with err (no usable
 * llvm-objdump: the caller may go on without a histogram). */
int amdgpu_isa_histogram(const void *elf, size_t len, const char *mcpu, op_histogram *h, char *tool, size_t toollen,
                         char *err, size_t errlen);

/* Counts instructions in llvm-objdump -d output (the parsing half of the above). */
int amdgpu_objdump_histogram(const char *text, size_t len, op_histogram *h);

#endif
