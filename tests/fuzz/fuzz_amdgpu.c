/* fuzz_amdgpu.c: AMDGPU code objects (bench/metrics/amdgpu.c): the ELF note walk and the msgpack
 * metadata reader, and the llvm-objdump listing parser, on any bytes. Neither may read
 * outside its input; a kernel found must have plausible fields (-1 or a non-negative
 * count) and a histogram only names that start with a lower-case letter. */
#include "fuzz_common.h"

#include "amdgpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* exactly the input, in its own allocation, so a read past the end is caught */
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    amdgpu_kernel_meta m;
    char err[256] = "";
    static const char *const names[] = {"attn_fwd", "k", ""};
    for (int k = 0; k < 3; k++) {
        if (amdgpu_kernel_meta_get(copy, size, names[k], &m, err, sizeof err) != 0) {
            if (!err[0]) fz_fail("amdgpu_kernel_meta_get failed without a reason");
            continue;
        }
        const long f[] = {m.sgprs, m.vgprs, m.agprs, m.sgpr_spills, m.vgpr_spills, m.lds_bytes, m.scratch_bytes,
                          m.max_flat_workgroup_size, m.wavefront_size, m.kernarg_bytes};
        for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
            if (f[i] < -1) fz_fail("field %zu is %ld", i, f[i]);
        if (memchr(m.target, 0, sizeof m.target) == NULL) fz_fail("target not terminated");
        (void)amdgpu_arch_vgprs(&m);
    }
    op_histogram h;
    if (amdgpu_objdump_histogram((const char *)copy, size, &h) == 0) {
        for (size_t i = 0; i < h.n; i++)
            if (!h.op[i][0] || h.op[i][0] < 'a' || h.op[i][0] > 'z' || h.count[i] < 1) fz_fail("bad histogram entry %zu", i);
        op_histogram_free(&h);
    }
    free(copy);
    return 0;
}
