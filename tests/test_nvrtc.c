/* test_nvrtc.c: the CUDA runtime's offline compiles (NVRTC alone, no GPU or driver):
 * CUBIN for sm_80 and sm_90 with ptxas' resource report, PTX for compute_80, compile errors
 * with their log, an unknown architecture; and that an absent driver is reported, not a crash.
 * Skips the compile tests, saying why, where NVRTC cannot be loaded (unless
 * FABENCH_REQUIRE_NVRTC is set). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn.h"
#include "config.h"
#include "rt.h"

static const char *const kernel_src =
    "extern \"C\" __global__ void scale(float *out, const float *in, int n)\n"
    "{\n"
    "    __shared__ float tile[256 * N];\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    float acc[N];\n"
    "    for (int j = 0; j < N; j++) acc[j] = i < n ? in[i] * (float)(j + 1) : 0.0f;\n"
    "    for (int j = 0; j < N; j++) tile[threadIdx.x * N + j] = acc[j];\n"
    "    __syncthreads();\n"
    "    float s = 0.0f;\n"
    "    for (int j = 0; j < N; j++) s += tile[((threadIdx.x + 1) % blockDim.x) * N + j];\n"
    "    if (i < n) out[i] = s;\n"
    "}\n";

static const rt_runtime *cuda(void)
{
    const rt_runtime *rt = rt_find("cuda");
    assert_non_null(rt);
    return rt;
}

/* Skips (saying why) when this machine has no NVRTC; otherwise returns. */
static void need_nvrtc(void)
{
    const rt_runtime *rt = cuda();
    assert_non_null(rt->compile_offline);
    void *bin = NULL;
    size_t len = 0;
    char *log = NULL;
    char err[512] = "";
    const char *defs[] = {"N=1"};
    int rc = rt->compile_offline("sm_80", kernel_src, defs, 1, "scale", &bin, &len, NULL, &log, err, sizeof err);
    free(bin);
    free(log);
    if (rc == RT_ERR && strstr(err, "NVRTC")) {
        /* FABENCH_REQUIRE_NVRTC=1 (a machine with the toolkit) makes this a failure */
        if (getenv("FABENCH_REQUIRE_NVRTC")) fail_msg("NVRTC is required but unusable: %s", err);
        printf("skipped: NVRTC cannot be loaded: %s\n", err);
        skip();
    }
}

static void compile_for(const char *arch)
{
    need_nvrtc();
    const rt_runtime *rt = cuda();
    void *bin = NULL;
    size_t len = 0;
    char *log = NULL;
    char err[512] = "";
    rt_kernel_attrs a;
    memset(&a, 0x55, sizeof a);
    const char *defs[] = {"N=4", "UNUSED=1"};
    int rc = rt->compile_offline(arch, kernel_src, defs, 2, "scale", &bin, &len, &a, &log, err, sizeof err);
    if (rc != 0) fprintf(stderr, "%s: rc %d: %s\n%s\n", arch, rc, err, log ? log : "(no log)");
    assert_int_equal(rc, 0);
    assert_non_null(bin);
    assert_true(len > 0);
    /* an ELF CUBIN */
    assert_memory_equal(bin, "\x7f" "ELF", 4);
    assert_non_null(log);
    assert_non_null(strstr(log, "ptxas"));
    assert_true(a.registers > 0);
    assert_true(a.spill_bytes >= 0);
    assert_int_equal(a.shared_bytes, 256 * 4 * 4);
    assert_true(a.private_bytes >= 0);
    assert_int_equal(a.max_threads, -1);
    assert_int_equal(a.binary_bytes, (long)len);
    printf("%s: %zu bytes, %ld registers, %ld spill bytes, %ld shared, %ld stack\n", arch, len, a.registers,
           a.spill_bytes, a.shared_bytes, a.private_bytes);
    free(bin);
    free(log);
}

/* The portable kernel itself, compiled offline for sm_80 and sm_90: a sample of
 * configurations of both tile implementations. Every one must compile; the tensor-core
 * ones must hold mma.sync in their PTX and, for the swept default, spill nothing. */
typedef struct { const char *cfg; int d; dtype_t dt; int causal, sq; } kcase;
static const kcase kcases[] = {
    {"MMA=fma,BLOCK_M=32,BLOCK_N=32,NUM_WARPS=4", 128, DT_FP32, 1, 512},
    {"MMA=fma,BLOCK_M=16,BLOCK_N=16,NUM_WARPS=4,SPLIT_KV=4,PACK_GQA=1", 256, DT_BF16, 1, 1},
    {"MMA=mma,NUM_WARPS=4,WARP_M=2,BLOCK_M=128,BLOCK_N=64,STAGES=2", 128, DT_BF16, 0, 4096},
    {"MMA=mma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2", 128, DT_FP16, 1, 4096},
    {"MMA=mma,NUM_WARPS=1,BLOCK_M=16,BLOCK_N=64,STAGES=2,PACK_GQA=1,SPLIT_KV=2", 128, DT_BF16, 1, 1},
    {"MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=32,STAGES=3", 80, DT_FP16, 0, 1024},
    {"MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=32,STAGES=1", 256, DT_BF16, 1, 1024},
    {"MMA=mma,NUM_WARPS=2,WARP_M=2,BLOCK_M=64,BLOCK_N=64,STAGES=4", 64, DT_BF16, 0, 1024},
};

static void compile_kernel_for(const char *arch)
{
    need_nvrtc();
    const rt_runtime *rt = cuda();
    char *src = NULL, err[FB_ERRLEN] = "";
    assert_int_equal(attn_source("cuda", &src, err, sizeof err), 0);
    for (size_t i = 0; i < sizeof kcases / sizeof kcases[0]; i++) {
        const kcase *kc = &kcases[i];
        shape_t s = {.batch = 1, .hq = 8, .hkv = 2, .sq = kc->sq, .skv = 4096, .d = kc->d, .causal = kc->causal};
        kconfig c = {0};
        assert_int_equal(kconfig_parse(kc->cfg, &c, err, sizeof err), 0);
        rt_device_info dev = {.compute_units = 132, .max_group_size = 1024, .shared_bytes = 227 * 1024,
                              .static_shared_bytes = 48 * 1024, .features = RT_FEAT_MMA_SYNC};
        kconfig_complete(&c, &dev, &s, kc->dt);
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
        print_message("%s %-62s d=%3d %s: %ld registers, %ld spill bytes, %ld bytes cubin\n", arch, kc->cfg, kc->d,
                      dtype_name(kc->dt), a.registers, a.spill_bytes, (long)len);
        assert_true(len > 0);
        assert_true(a.registers > 0 && a.registers <= 255);
        assert_true(a.spill_bytes >= 0); /* ptxas reported it */
        if (i == 3) assert_int_equal(a.spill_bytes, 0); /* one warp tile per warp, d=128: fits in registers */
        free(bin);
        free(log);
        if (c.mma == MMA_SYNC) { /* the tensor-core path really issues tensor-core instructions */
            char ptx_arch[16];
            snprintf(ptx_arch, sizeof ptx_arch, "compute_%s", arch + 3);
            assert_int_equal(rt->compile_offline(ptx_arch, src, dp, nd, "attn_fwd", &bin, &len, NULL, &log, err, sizeof err), 0);
            char *ptx = malloc(len + 1);
            memcpy(ptx, bin, len);
            ptx[len] = 0;
            assert_non_null(strstr(ptx, "mma.sync.aligned.m16n8k16.row.col.f32"));
            assert_non_null(strstr(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans"));
            assert_non_null(strstr(ptx, "cp.async.cg.shared.global"));
            free(ptx);
            free(bin);
            free(log);
        }
    }
    free(src);
}

static void test_kernel_sm80(void **state) { (void)state; compile_kernel_for("sm_80"); }
static void test_kernel_sm90(void **state) { (void)state; compile_kernel_for("sm_90"); }

static void test_sm80(void **state) { (void)state; compile_for("sm_80"); }
static void test_sm90(void **state) { (void)state; compile_for("sm_90"); }

static void test_ptx(void **state)
{
    (void)state;
    need_nvrtc();
    void *bin = NULL;
    size_t len = 0;
    char *log = NULL;
    char err[512] = "";
    rt_kernel_attrs a;
    const char *defs[] = {"N=2"};
    int rc = cuda()->compile_offline("compute_80", kernel_src, defs, 1, "scale", &bin, &len, &a, &log, err, sizeof err);
    if (rc != 0) fprintf(stderr, "compute_80: %s\n%s\n", err, log ? log : "");
    assert_int_equal(rc, 0);
    assert_true(len > 0);
    assert_non_null(memmem(bin, len, ".entry scale", 12));
    assert_int_equal(a.registers, -1); /* no ptxas ran */
    assert_int_equal(a.binary_bytes, (long)len);
    free(bin);
    free(log);
}

static void test_compile_error(void **state)
{
    (void)state;
    need_nvrtc();
    void *bin = NULL;
    size_t len = 0;
    char *log = NULL;
    char err[512] = "";
    rt_kernel_attrs a;
    const char *bad = "extern \"C\" __global__ void scale(float *out) { out[0] = undeclared_thing; }\n";
    int rc = cuda()->compile_offline("sm_80", bad, NULL, 0, "scale", &bin, &len, &a, &log, err, sizeof err);
    assert_int_equal(rc, RT_ECOMPILE);
    assert_null(bin);
    assert_non_null(log);
    assert_non_null(strstr(log, "error"));
    assert_non_null(strstr(log, "undeclared_thing"));
    assert_int_equal(a.registers, -1);
    free(log);

    /* a missing define is a compile error too */
    rc = cuda()->compile_offline("sm_80", kernel_src, NULL, 0, "scale", &bin, &len, &a, &log, err, sizeof err);
    assert_int_equal(rc, RT_ECOMPILE);
    assert_non_null(log);
    assert_non_null(strstr(log, "error"));
    free(log);
}

static void test_unknown_arch(void **state)
{
    (void)state;
    need_nvrtc();
    const char *archs[] = {"sm_1", "sm_banana", "gfx90a"};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        void *bin = NULL;
        size_t len = 0;
        char *log = NULL;
        char err[512] = "";
        const char *defs[] = {"N=1"};
        int rc = cuda()->compile_offline(archs[i], kernel_src, defs, 1, "scale", &bin, &len, NULL, &log, err, sizeof err);
        assert_int_equal(rc, RT_ECOMPILE);
        assert_null(bin);
        assert_non_null(log);
        assert_non_null(strstr(log, "error"));
        free(log);
    }
}

/* On a machine without an NVIDIA driver or GPU, the runtime is absent and says why. */
static void test_status(void **state)
{
    (void)state;
    int idx = -1;
    for (int i = 0; i < rt_count(); i++)
        if (rt_get(i) == cuda()) idx = i;
    assert_true(idx >= 0);
    const char *why = NULL;
    int rc = rt_status(idx, &why);
    assert_non_null(why);
    if (rc == 0) {
        const rt_runtime *rt = cuda();
        assert_true(rt->device_count() > 0);
        rt_device_info info;
        assert_int_equal(rt->device_info(0, &info), 0);
        printf("cuda present: %s (%s, %s, %s)\n", info.name, info.arch, info.driver, info.compiler);
        assert_int_equal(strncmp(info.arch, "sm_", 3), 0);
        assert_int_equal(info.is_gpu, 1);
        return;
    }
    printf("cuda absent: %s\n", why);
    assert_true(strstr(why, "libcuda") || strstr(why, "driver") || strstr(why, "NO_DEVICE") ||
                strstr(why, "no CUDA devices") || strstr(why, "NVRTC"));
    assert_int_equal(cuda()->device_count(), 0);
    /* asking again gives the same answer */
    const char *why2 = NULL;
    assert_int_equal(rt_status(idx, &why2), -1);
    assert_string_equal(why, why2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_sm80),
        cmocka_unit_test(test_sm90),
        cmocka_unit_test(test_ptx),
        cmocka_unit_test(test_compile_error),
        cmocka_unit_test(test_unknown_arch),
        cmocka_unit_test(test_kernel_sm80),
        cmocka_unit_test(test_kernel_sm90),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
