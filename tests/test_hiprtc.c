/* test_hiprtc.c: the HIP runtime's offline compiles (HIPRTC, or hipcc for targets HIPRTC does
 * not know; no GPU or driver): code objects for gfx90a and gfx940 with their metadata note,
 * the portable kernel with MMA=fma and MMA=mfma in bf16 and fp16 (MFMA instructions in the
 * disassembly), compile errors with their log, unknown targets; the code-object reader on
 * hand-made and broken input; and that a machine without an AMD GPU reports the runtime
 * absent. Skips, saying why, where HIPRTC (or, for gfx940, hipcc) is missing, unless
 * FABENCH_REQUIRE_HIPRTC is set. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_skip.h"

#include "amdgpu.h"
#include "attn.h"
#include "config.h"
#include "rt.h"
#include "test_toy_kernel.h"

static const rt_runtime *hip(void)
{
    const rt_runtime *rt = rt_find("hip");
    assert_non_null(rt);
    assert_non_null(rt->compile_offline);
    return rt;
}

/* Skips (saying why) when arch cannot be compiled for here; otherwise returns. */
static void need_compiler(const char *arch)
{
    void *bin = NULL;
    size_t len = 0;
    char *log = NULL, err[512] = "";
    const char *defs[] = {"N=1"};
    int rc = hip()->compile_offline(arch, kernel_src, defs, 1, "scale", &bin, &len, NULL, &log, err, sizeof err);
    free(bin);
    free(log);
    if (rc == RT_ERR) {
        if (getenv("FABENCH_REQUIRE_HIPRTC")) fail_msg("HIPRTC/hipcc for %s is required but unusable: %s", arch, err);
        SKIP_BECAUSE("no compiler for %s here: %s", arch, err);
    }
}

static void compile_small(const char *arch)
{
    need_compiler(arch);
    void *bin = NULL;
    size_t len = 0;
    char *log = NULL, err[512] = "";
    rt_kernel_attrs a;
    memset(&a, 0x55, sizeof a);
    const char *defs[] = {"N=4", "UNUSED=1"};
    int rc = hip()->compile_offline(arch, kernel_src, defs, 2, "scale", &bin, &len, &a, &log, err, sizeof err);
    if (rc != 0) fprintf(stderr, "%s: rc %d: %s\n%s\n", arch, rc, err, log ? log : "(no log)");
    assert_int_equal(rc, 0);
    assert_true(len > 64);
    assert_memory_equal(bin, "\x7f" "ELF", 4);
    assert_true(a.registers > 0);
    assert_int_equal(a.spill_bytes, 0);
    assert_int_equal(a.shared_bytes, 256 * 4 * 4);
    assert_true(a.private_bytes >= 0);
    assert_int_equal(a.max_threads, -1);
    assert_int_equal(a.binary_bytes, (long)len);
    amdgpu_kernel_meta m;
    assert_int_equal(amdgpu_kernel_meta_get(bin, len, "scale", &m, err, sizeof err), 0);
    assert_non_null(strstr(m.target, arch));
    assert_int_equal(m.wavefront_size, 64);
    assert_int_equal(m.lds_bytes, 256 * 4 * 4);
    assert_true(m.sgprs > 0 && m.vgprs > 0 && m.agprs >= 0);
    assert_true(m.kernarg_bytes >= 20);
    /* the reader never reads past what it is given */
    for (size_t cut = 0; cut < len; cut += len / 97 + 1) {
        amdgpu_kernel_meta t;
        (void)amdgpu_kernel_meta_get(bin, cut, "scale", &t, err, sizeof err);
    }
    assert_int_equal(amdgpu_kernel_meta_get(bin, len, "nope", &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "nope"));
    printf("%s: %zu bytes, %ld VGPRs, %ld SGPRs, %ld LDS, %ld scratch\n", arch, len, m.vgprs, m.sgprs, m.lds_bytes,
           m.scratch_bytes);
    free(bin);
    free(log);
}

static void test_small_gfx90a(void **state) { (void)state; compile_small("gfx90a"); }
static void test_small_gfx940(void **state) { (void)state; compile_small("gfx940"); }

/* The portable kernel: a sample of configurations of both tile implementations. */
typedef struct { const char *cfg; int d; dtype_t dt; int causal, sq; } kcase;
static const kcase kcases[] = {
    {"MMA=fma,BLOCK_M=32,BLOCK_N=32,NUM_WARPS=4", 128, DT_BF16, 1, 512},
    {"MMA=fma,BLOCK_M=16,BLOCK_N=16,NUM_WARPS=4,SPLIT_KV=4,PACK_GQA=1", 64, DT_FP16, 1, 1},
    {"MMA=mfma,NUM_WARPS=8,WARP_M=1,BLOCK_M=64,BLOCK_N=64,STAGES=1", 128, DT_BF16, 1, 4096},
    {"MMA=mfma,NUM_WARPS=4,WARP_M=2,BLOCK_M=64,BLOCK_N=32,STAGES=2", 128, DT_FP16, 0, 1024},
    {"MMA=mfma,NUM_WARPS=2,BLOCK_M=16,BLOCK_N=32,STAGES=2,PACK_GQA=1,SPLIT_KV=2", 128, DT_BF16, 1, 1},
    {"MMA=mfma,NUM_WARPS=2,BLOCK_M=16,BLOCK_N=32,STAGES=2,PACK_GQA=1,SPLIT_KV=4,SPLIT_FUSE=1", 128, DT_BF16, 1, 1},
    {"MMA=fma,BLOCK_M=16,BLOCK_N=16,NUM_WARPS=4,SPLIT_KV=3,SPLIT_FUSE=1", 80, DT_FP16, 1, 1},
    {"MMA=mfma,NUM_WARPS=8,BLOCK_M=64,BLOCK_N=32,STAGES=1", 80, DT_FP16, 1, 1024},
};

static void compile_kernel_for(const char *arch)
{
    need_compiler(arch);
    const rt_runtime *rt = hip();
    char *src = NULL, err[FB_ERRLEN] = "";
    assert_int_equal(attn_source("hip", &src, err, sizeof err), 0);
    int disasm = 1;
    for (size_t i = 0; i < sizeof kcases / sizeof kcases[0]; i++) {
        const kcase *kc = &kcases[i];
        shape_t s = {.batch = 1, .hq = 8, .hkv = 2, .sq = kc->sq, .skv = 4096, .d = kc->d, .causal = kc->causal};
        kconfig c = {0};
        assert_int_equal(kconfig_parse(kc->cfg, &c, err, sizeof err), 0);
        rt_device_info dev = {.compute_units = 110, .max_group_size = 1024, .shared_bytes = 65536,
                              .static_shared_bytes = 65536, .warp_size = 64, .features = RT_FEAT_MFMA};
        kconfig_complete(&c, &dev, &s, kc->dt);
        char reason[256];
        assert_int_equal(kconfig_check(&c, &dev, &s, kc->dt, reason, sizeof reason), ST_OK);
        char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN];
        const char *dp[ATTN_MAX_DEFINES];
        int nd = attn_defines(&s, kc->dt, &c, 1, defs);
        for (int j = 0; j < nd; j++) dp[j] = defs[j];
        void *bin = NULL;
        size_t len = 0;
        char *log = NULL;
        rt_kernel_attrs a;
        int rc = rt->compile_offline(arch, src, dp, nd, "attn_fwd", &bin, &len, &a, &log, err, sizeof err);
        if (rc != 0) fail_msg("%s %s: rc %d: %s\n%s", arch, kc->cfg, rc, err, log ? log : "");
        amdgpu_kernel_meta m;
        assert_int_equal(amdgpu_kernel_meta_get(bin, len, "attn_fwd", &m, err, sizeof err), 0);
        assert_true(m.vgprs > 0 && m.vgprs <= 512 && m.sgprs > 0);
        assert_int_equal(a.registers, m.vgprs);
        assert_int_equal(m.vgpr_spills, 0);
        assert_int_equal(m.max_flat_workgroup_size, c.num_warps * 32); /* __launch_bounds__(NT) */
        assert_true((size_t)m.lds_bytes <= 65536);
        if (c.mma == MMA_MFMA) assert_int_equal(m.lds_bytes, (long)kconfig_shared_bytes(&c, s.d));
        amdgpu_kernel_meta cm;
        assert_int_equal(amdgpu_kernel_meta_get(bin, len, "attn_combine", &cm, err, sizeof err), 0);
        op_histogram h;
        char tool[512];
        long mfma = 0;
        if (disasm && amdgpu_isa_histogram(bin, len, arch, &h, tool, sizeof tool, err, sizeof err) == 0) {
            for (size_t k = 0; k < h.n; k++)
                if (!strncmp(h.op[k], "v_mfma_f32_16x16x16", 19)) mfma += h.count[k];
            op_histogram_free(&h);
            /* S and P V: (d / 16) * (BLOCK_N / 16) MFMAs each per 16-row tile */
            if (c.mma == MMA_MFMA) assert_true(mfma >= 2L * (s.d / 16) * (c.block_n / 16) * c.warp_m);
            else assert_int_equal(mfma, 0);
        } else if (disasm) {
            printf("skipped the disassembly checks: %s\n", err);
            disasm = 0;
        }
        print_message("%s %-66s d=%3d %s: %ld VGPRs (%ld AGPRs), %ld SGPRs, %ld B LDS, %ld MFMA, %zu B\n", arch, kc->cfg,
                      kc->d, dtype_name(kc->dt), a.registers, m.agprs, m.sgprs, a.shared_bytes, mfma, len);
        free(bin);
        free(log);
    }
    free(src);
}

/* The reference kernel (kernels/ref_attn.k) builds for gfx90a in every dtype. */
static void test_ref_kernel(void **state)
{
    (void)state;
    need_compiler("gfx90a");
    char *src = NULL, err[FB_ERRLEN] = "";
    assert_int_equal(fb_kernel_source("hip", "ref_attn.k", &src, err, sizeof err), 0);
    for (int dt = 0; dt < 3; dt++) {
        char def[16];
        snprintf(def, sizeof def, "DTYPE=%d", dt);
        const char *defs[] = {def};
        void *bin = NULL;
        size_t len = 0;
        char *log = NULL;
        const int rc = hip()->compile_offline("gfx90a", src, defs, 1, "ref_attn", &bin, &len, NULL, &log, err, sizeof err);
        if (rc != 0) fprintf(stderr, "DTYPE=%d: rc %d: %s\n%s\n", dt, rc, err, log ? log : "(no log)");
        assert_int_equal(rc, 0);
        free(bin);
        free(log);
    }
    free(src);
}

/* The bandwidth probe (kernels/stream.k) builds for gfx90a at both unroll depths. */
static void test_stream_kernel(void **state)
{
    (void)state;
    need_compiler("gfx90a");
    char *src = NULL, err[FB_ERRLEN] = "";
    assert_int_equal(fb_kernel_source("hip", "stream.k", &src, err, sizeof err), 0);
    const char *kern[] = {"stream_copy", "stream_read"};
    for (int u = 1; u <= 4; u += 3)
        for (int k = 0; k < 2; k++) {
            char un[16];
            snprintf(un, sizeof un, "UNROLL_N=%d", u);
            const char *defs[] = {"NT=256", un};
            void *bin = NULL;
            size_t len = 0;
            char *log = NULL;
            const int rc = hip()->compile_offline("gfx90a", src, defs, 2, kern[k], &bin, &len, NULL, &log, err, sizeof err);
            if (rc != 0) fprintf(stderr, "%s %s: rc %d: %s\n%s\n", un, kern[k], rc, err, log ? log : "(no log)");
            assert_int_equal(rc, 0);
            free(bin);
            free(log);
        }
    free(src);
}

static void test_kernel_gfx90a(void **state) { (void)state; compile_kernel_for("gfx90a"); }
static void test_kernel_gfx940(void **state) { (void)state; compile_kernel_for("gfx940"); }

static void test_compile_error(void **state)
{
    (void)state;
    need_compiler("gfx90a");
    void *bin = NULL;
    size_t len = 0;
    char *log = NULL, err[512] = "";
    rt_kernel_attrs a;
    const char *bad = "extern \"C\" __global__ void scale(float *out) { out[0] = undeclared_thing; }\n";
    int rc = hip()->compile_offline("gfx90a", bad, NULL, 0, "scale", &bin, &len, &a, &log, err, sizeof err);
    assert_int_equal(rc, RT_ECOMPILE);
    assert_null(bin);
    assert_non_null(log);
    assert_non_null(strstr(log, "error"));
    assert_non_null(strstr(log, "undeclared_thing"));
    assert_int_equal(a.registers, -1);
    free(log);
    /* MMA=mfma for a target without MFMA is refused by the kernel itself */
    char *src = NULL, e2[FB_ERRLEN];
    assert_int_equal(attn_source("hip", &src, e2, sizeof e2), 0);
    const char *defs[] = {"HEAD_DIM=64", "DTYPE=2", "MMA=2", "BLOCK_M=16", "NUM_WARPS=2", "BLOCK_N=16"};
    rc = hip()->compile_offline("gfx1030", src, defs, 6, "attn_fwd", &bin, &len, NULL, &log, err, sizeof err);
    assert_int_equal(rc, RT_ECOMPILE);
    assert_non_null(log);
    assert_non_null(strstr(log, "needs an AMD CDNA GPU with MFMA"));
    free(log);
    free(src);
}

static void test_unknown_target(void **state)
{
    (void)state;
    const char *archs[] = {"sm_80", "gfx", "gfx_banana", "gfx90a;rm -rf", ""};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        void *bin = NULL;
        size_t len = 0;
        char *log = NULL, err[512] = "";
        const char *defs[] = {"N=1"};
        int rc = hip()->compile_offline(archs[i], kernel_src, defs, 1, "scale", &bin, &len, NULL, &log, err, sizeof err);
        assert_int_equal(rc, RT_ECOMPILE);
        assert_null(bin);
        assert_non_null(log);
        assert_non_null(strstr(log, "error"));
        free(log);
    }
}

/* ---- the code-object reader on hand-made input ---- */

static size_t put(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
    return (size_t)n;
}

/* A minimal AMDGPU ELF: header, one SHT_NOTE section holding an NT_AMDGPU_METADATA note
 * with msgpack desc[0..dlen), and the section header table. Returns its length. */
static size_t make_elf(unsigned char *e, size_t cap, const unsigned char *desc, size_t dlen)
{
    memset(e, 0, cap);
    size_t note = 64, nlen = 12 + 8 + ((dlen + 3) & ~(size_t)3), sh = note + nlen;
    assert_true(sh + 2 * 64 <= cap);
    memcpy(e, "\x7f" "ELF\x02\x01\x01\x40", 8);
    put(e + 16, 3, 2);            /* ET_DYN */
    put(e + 18, 224, 2);          /* EM_AMDGPU */
    put(e + 0x28, sh, 8);         /* e_shoff */
    put(e + 0x34, 64, 2);         /* e_ehsize */
    put(e + 0x3a, 64, 2);         /* e_shentsize */
    put(e + 0x3c, 2, 2);          /* e_shnum */
    put(e + note, 7, 4);
    put(e + note + 4, dlen, 4);
    put(e + note + 8, 32, 4);
    memcpy(e + note + 12, "AMDGPU\0", 8);
    memcpy(e + note + 20, desc, dlen);
    unsigned char *s1 = e + sh + 64;
    put(s1 + 4, 7, 4);            /* SHT_NOTE */
    put(s1 + 0x18, note, 8);
    put(s1 + 0x20, nlen, 8);
    return sh + 128;
}

static size_t mp_str(unsigned char *p, const char *s)
{
    size_t n = strlen(s);
    p[0] = (unsigned char)(0xa0 | n);
    memcpy(p + 1, s, n);
    return n + 1;
}

static void test_meta_reader(void **state)
{
    (void)state;
    unsigned char d[512], e[1024];
    size_t o = 0;
    d[o++] = 0x83; /* {amdhsa.version: [1, 2], amdhsa.kernels: [{...}, {...}], amdhsa.target: "..."} */
    o += mp_str(d + o, "amdhsa.version");
    d[o++] = 0x92; d[o++] = 1; d[o++] = 2;
    o += mp_str(d + o, "amdhsa.kernels");
    d[o++] = 0x92;
    d[o++] = 0x82; o += mp_str(d + o, ".name"); o += mp_str(d + o, "other");
    o += mp_str(d + o, ".vgpr_count"); d[o++] = 7;
    d[o++] = 0x87; o += mp_str(d + o, ".args"); d[o++] = 0x91; d[o++] = 0x81; o += mp_str(d + o, ".size"); d[o++] = 8;
    o += mp_str(d + o, ".vgpr_count"); d[o++] = 0xcc; d[o++] = 200;                      /* uint8 */
    o += mp_str(d + o, ".agpr_count"); d[o++] = 0xcd; d[o++] = 0; d[o++] = 40;            /* uint16 */
    o += mp_str(d + o, ".group_segment_fixed_size"); d[o++] = 0xce; d[o++] = 0; d[o++] = 1; d[o++] = 0; d[o++] = 0;
    o += mp_str(d + o, ".sgpr_count"); d[o++] = 0xd0; d[o++] = 33;                        /* int8 */
    o += mp_str(d + o, ".uses_dynamic_stack"); d[o++] = 0xc2;
    o += mp_str(d + o, ".name"); o += mp_str(d + o, "attn_fwd");
    o += mp_str(d + o, "amdhsa.target"); o += mp_str(d + o, "amdgcn-amd-amdhsa--gfx90a");
    size_t n = make_elf(e, sizeof e, d, o);
    amdgpu_kernel_meta m;
    char err[256];
    assert_int_equal(amdgpu_kernel_meta_get(e, n, "attn_fwd", &m, err, sizeof err), 0);
    assert_int_equal(m.vgprs, 200);
    assert_int_equal(m.agprs, 40);
    assert_int_equal(m.lds_bytes, 65536);
    assert_int_equal(m.sgprs, 33);
    assert_int_equal(m.scratch_bytes, -1);
    assert_string_equal(m.target, "amdgcn-amd-amdhsa--gfx90a");
    assert_int_equal(amdgpu_arch_vgprs(&m), 160);
    assert_int_equal(amdgpu_kernel_meta_get(e, n, "other", &m, err, sizeof err), 0);
    assert_int_equal(m.vgprs, 7);
    /* every truncation of the document and of the file fails cleanly */
    for (size_t k = 0; k < o; k++) {
        size_t nn = make_elf(e, sizeof e, d, k);
        assert_int_equal(amdgpu_kernel_meta_get(e, nn, "attn_fwd", &m, err, sizeof err), -1);
    }
    n = make_elf(e, sizeof e, d, o);
    for (size_t k = 0; k < n; k++) assert_int_equal(amdgpu_kernel_meta_get(e, k, "attn_fwd", &m, err, sizeof err), -1);
    /* a huge declared map with nothing behind it */
    unsigned char huge[] = {0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'x'};
    n = make_elf(e, sizeof e, huge, sizeof huge);
    assert_int_equal(amdgpu_kernel_meta_get(e, n, "attn_fwd", &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "malformed"));
    e[18] = 62; /* x86-64 */
    assert_int_equal(amdgpu_kernel_meta_get(e, n, "attn_fwd", &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "AMDGPU"));
}

static void test_objdump_parse(void **state)
{
    (void)state;
    const char *text =
        "\nk.co:\tfile format elf64-amdgpu\n\nDisassembly of section .text:\n\n"
        "0000000000001600 <k>:\n"
        "\ts_load_dwordx4 s[0:3], s[0:1], 0x0 // 000000001600: C00A0000\n"
        "\tv_mfma_f32_16x16x16bf16_1k a[0:3], v[8:9], v[6:7], a[0:3]\n"
        "\ts_cbranch_scc1 BB0_2\n"
        "\ts_endpgm\n"
        "\tv_mfma_f32_16x16x16bf16_1k a[0:3], v[8:9], v[6:7], a[0:3]\n"
        "\ts_endpgm\n"
        "\ts_nop 0\n\ts_nop 0\n"
        "0000000000001700 <j>:\n"
        "\ts_nop 1\n\ts_endpgm\n\ts_nop 0\n"
        "\nDisassembly of section .rodata:\n\n\ts_nop 0\n\ts_endpgm\n";
    op_histogram h;
    assert_int_equal(amdgpu_objdump_histogram(text, strlen(text), &h), 0);
    long nop = 0, end = 0, mf = 0, total = 0;
    for (size_t k = 0; k < h.n; k++) {
        total += h.count[k];
        if (!strcmp(h.op[k], "s_nop")) nop = h.count[k];
        if (!strcmp(h.op[k], "s_endpgm")) end = h.count[k];
        if (!strcmp(h.op[k], "v_mfma_f32_16x16x16bf16_1k")) mf = h.count[k];
    }
    assert_int_equal(nop, 1);
    assert_int_equal(end, 3);
    assert_int_equal(mf, 2);
    assert_int_equal(total, 8);
    op_histogram_free(&h);
}

/* On a machine without an AMD GPU, the runtime is absent and says why. */
static void test_status(void **state)
{
    (void)state;
    int idx = -1;
    for (int i = 0; i < rt_count(); i++)
        if (rt_get(i) == hip()) idx = i;
    assert_true(idx >= 0);
    const char *why = NULL;
    int rc = rt_status(idx, &why);
    assert_non_null(why);
    if (rc == 0) {
        assert_true(hip()->device_count() > 0);
        rt_device_info info;
        assert_int_equal(hip()->device_info(0, &info), 0);
        printf("hip present: %s (%s, %s, %s)\n", info.name, info.arch, info.driver, info.compiler);
        assert_int_equal(strncmp(info.arch, "gfx", 3), 0);
        assert_int_equal(info.is_gpu, 1);
        return;
    }
    printf("hip absent: %s\n", why);
    assert_true(strstr(why, "libamdhip64") || strstr(why, "hipInit") || strstr(why, "no AMD GPUs") ||
                strstr(why, "HIPRTC"));
    assert_int_equal(hip()->device_count(), 0);
    const char *why2 = NULL;
    assert_int_equal(rt_status(idx, &why2), -1);
    assert_string_equal(why, why2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_meta_reader),
        cmocka_unit_test(test_objdump_parse),
        cmocka_unit_test(test_unknown_target),
        cmocka_unit_test(test_small_gfx90a),
        cmocka_unit_test(test_small_gfx940),
        cmocka_unit_test(test_compile_error),
        cmocka_unit_test(test_kernel_gfx90a),
        cmocka_unit_test(test_kernel_gfx940),
        cmocka_unit_test(test_ref_kernel),
        cmocka_unit_test(test_stream_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
