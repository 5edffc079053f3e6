/* test_nvrtc.c: the CUDA runtime's offline compiles (NVRTC alone, no GPU or driver):
 * CUBIN for sm_80 and sm_90 with ptxas' resource report, PTX for compute_80, compile errors
 * with their log, an unknown architecture; the Hopper wgmma kernel (MMA=wgmma) for sm_90a,
 * with HGMMA in its SASS where a disassembler is on PATH and wgmma.mma_async in its PTX, and
 * rejected with a reason for sm_80, plain sm_90 and by the configuration checks; and that
 * an absent driver is reported, not a crash.
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

#include "test_skip.h"

#include "attn.h"
#include "codegen.h"
#include "shapes.h"
#include "config.h"
#include "rt.h"
#include "test_toy_kernel.h"
#include "sass.h"

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
        SKIP_BECAUSE("NVRTC cannot be loaded: %s", err);
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
    {"MMA=mma,NUM_WARPS=1,BLOCK_M=16,BLOCK_N=16,STAGES=2,PACK_GQA=1,SPLIT_KV=4,SPLIT_FUSE=1,RED_SPLIT=1", 128, DT_BF16, 1, 1},
    {"MMA=fma,BLOCK_M=16,BLOCK_N=16,NUM_WARPS=4,SPLIT_KV=3,SPLIT_FUSE=1", 64, DT_FP16, 1, 1},
    {"MMA=mma,NUM_WARPS=4,KV_WARPS=4,BLOCK_M=16,BLOCK_N=16,STAGES=2,PACK_GQA=1", 128, DT_BF16, 1, 1},
    {"MMA=mma,NUM_WARPS=4,KV_WARPS=2,BLOCK_M=32,BLOCK_N=32,STAGES=2,SPLIT_KV=2,SPLIT_FUSE=1", 64, DT_FP16, 0, 1},
    {"MMA=mma,NUM_WARPS=2,KV_WARPS=2,BLOCK_M=16,BLOCK_N=16,STAGES=2,PACK_GQA=1", 256, DT_BF16, 1, 1},
    {"MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=32,STAGES=3", 80, DT_FP16, 0, 1024},
    {"MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=32,STAGES=1", 256, DT_BF16, 1, 1024},
    {"MMA=mma,NUM_WARPS=2,WARP_M=2,BLOCK_M=64,BLOCK_N=64,STAGES=4", 64, DT_BF16, 0, 1024},
    /* the row maxima and sums in four chains (RED_SPLIT), and with fewer score tiles than four */
    {"MMA=mma,NUM_WARPS=4,WARP_M=2,BLOCK_M=128,BLOCK_N=64,STAGES=2,RED_SPLIT=1", 128, DT_BF16, 1, 4096},
    {"MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=16,STAGES=2,RED_SPLIT=1", 64, DT_FP16, 0, 1024},
};

/* The attention kernel compiled for arch with configuration cfg on shape s, as the harness
 * would on a device with features; the binary freed, its attributes in *a */
static void compile_case(const char *arch, const char *src, const shape_t *s, const char *cfg, dtype_t dt, unsigned features,
                         kconfig *c, rt_kernel_attrs *a, char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN], const char **dp, int *nd)
{
    char err[FB_ERRLEN] = "", reason[FB_ERRLEN] = "";
    *c = (kconfig){0};
    assert_int_equal(kconfig_parse(cfg, c, err, sizeof err), 0);
    rt_device_info dev = {.compute_units = 132, .max_group_size = 1024, .shared_bytes = 227 * 1024,
                          .static_shared_bytes = 48 * 1024, .features = features};
    kconfig_complete(c, &dev, s, dt);
    if (kconfig_check(c, &dev, s, dt, reason, sizeof reason) != ST_OK) fail_msg("%s %s: %s", arch, cfg, reason);
    *nd = attn_defines(s, dt, c, 1, defs);
    for (int j = 0; j < *nd; j++) dp[j] = defs[j];
    void *bin = NULL;
    size_t len = 0;
    char *log = NULL;
    const int rc = cuda()->compile_offline(arch, src, dp, *nd, "attn_fwd", &bin, &len, a, &log, err, sizeof err);
    if (rc != 0) fail_msg("%s %s: rc %d: %s\n%s", arch, cfg, rc, err, log ? log : "");
    print_message("%s %-62s d=%3d %s: %ld registers, %ld spill bytes, %ld bytes cubin\n", arch, cfg, s->d, dtype_name(dt),
                  a->registers, a->spill_bytes, (long)len);
    assert_true(len > 0);
    assert_true(a->registers > 0 && a->registers <= 255);
    assert_true(a->spill_bytes >= 0); /* ptxas reported it */
    free(bin);
    free(log);
}

static void compile_kernel_for(const char *arch)
{
    need_nvrtc();
    const rt_runtime *rt = cuda();
    char *src = NULL, err[FB_ERRLEN] = "";
    assert_int_equal(attn_source("cuda", &src, err, sizeof err), 0);
    for (size_t i = 0; i < sizeof kcases / sizeof kcases[0]; i++) {
        const kcase *kc = &kcases[i];
        shape_t s = {.batch = 1, .hq = 8, .hkv = 2, .sq = kc->sq, .skv = 4096, .d = kc->d, .causal = kc->causal};
        kconfig c;
        char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN];
        const char *dp[ATTN_MAX_DEFINES];
        int nd;
        rt_kernel_attrs a;
        compile_case(arch, src, &s, kc->cfg, kc->dt, RT_FEAT_MMA_SYNC, &c, &a, defs, dp, &nd);
        if (i == 3) assert_int_equal(a.spill_bytes, 0); /* one warp tile per warp, d=128: fits in registers */
        if (c.mma == MMA_SYNC) { /* the tensor-core path really issues tensor-core instructions */
            void *bin = NULL;
            size_t len = 0;
            char *log = NULL, ptx_arch[16];
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

/* A paged cache's key tiles over several pages (mma, key warps, wgmma): the rule, and the
 * page-by-page load compiled without spills; fma reads one page a tile, and no tile spans
 * more than 8 pages */
static void test_paged_spanning_tiles(void **state)
{
    (void)state;
    need_nvrtc();
    char *src = NULL, err[FB_ERRLEN] = "", reason[FB_ERRLEN];
    assert_int_equal(attn_source("cuda", &src, err, sizeof err), 0);
    shape_t dec = {.batch = 16, .hq = 32, .hkv = 8, .sq = 1, .skv = 4096, .d = 128, .causal = 1, .page = 16};
    shape_t pre = dec;
    pre.sq = 4096;
    const struct { const char *arch, *cfg; const shape_t *s; } ok[] = {
        {"sm_80", "MMA=mma,NUM_WARPS=1,BLOCK_M=16,BLOCK_N=64,STAGES=2", &dec},
        {"sm_90", "MMA=mma,NUM_WARPS=2,KV_WARPS=2,BLOCK_M=16,BLOCK_N=32,STAGES=2", &dec},
        {"sm_90", "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=128,STAGES=2", &pre},
        {"sm_90", "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2", &pre},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        kconfig c;
        char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN];
        const char *dp[ATTN_MAX_DEFINES];
        int nd;
        rt_kernel_attrs a;
        compile_case(ok[i].arch, src, ok[i].s, ok[i].cfg, DT_BF16, RT_FEAT_MMA_SYNC | RT_FEAT_WGMMA, &c, &a, defs, dp, &nd);
        assert_int_equal(a.spill_bytes, 0);
    }
    const rt_device_info h100 = {.compute_units = 132, .max_group_size = 1024, .shared_bytes = 227 * 1024,
                                 .static_shared_bytes = 48 * 1024, .features = RT_FEAT_MMA_SYNC | RT_FEAT_WGMMA};
    const char *refused[] = {"MMA=fma,BLOCK_M=16,BLOCK_N=32,NUM_WARPS=2", "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=256,STAGES=1"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        kconfig c = {0};
        assert_int_equal(kconfig_parse(refused[i], &c, err, sizeof err), 0);
        kconfig_complete(&c, &h100, &dec, DT_BF16);
        assert_int_equal(kconfig_check(&c, &h100, &dec, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
        assert_non_null(strstr(reason, "paged KV cache"));
    }
    free(src);
}

static void test_kernel_sm80(void **state) { (void)state; compile_kernel_for("sm_80"); }
static void test_kernel_sm90(void **state) { (void)state; compile_kernel_for("sm_90"); }

/* MMA=wgmma (Hopper, sm_90a): a sample of configurations, compiled the way the harness does
 * (its defines carry ARCH_SPECIFIC=1, which makes the runtime turn sm_90 into sm_90a). Each
 * must compile, spill nothing where marked, and issue HGMMA (SASS, where nvdisasm or
 * cuobjdump is on PATH) and wgmma.mma_async (PTX). */
typedef struct { const char *cfg; int d; dtype_t dt; int causal, sq, no_spill; } wcase;
static const wcase wcases[] = {
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2", 128, DT_BF16, 0, 4096, 1}, /* the default for d=128 prefill */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2", 128, DT_FP16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=128,STAGES=2", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3", 128, DT_FP16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2", 64, DT_BF16, 1, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2", 64, DT_FP16, 0, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=128,STAGES=1", 64, DT_BF16, 0, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,PACK_GQA=1,SPLIT_KV=4", 128, DT_BF16, 1, 1, 1}, /* decode */
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,PACK_GQA=1,SPLIT_KV=4,SPLIT_FUSE=1", 128, DT_BF16, 1, 1, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2", 256, DT_BF16, 1, 4096, 0},
    /* the unswizzled layout, and P V pipelined behind the next tile's S (WG_PIPE) */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_SWIZZLE=0", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=4,WG_PIPE=1,WG_SWIZZLE=0", 64, DT_FP16, 0, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3,WG_PIPE=1", 256, DT_BF16, 1, 4096, 0},
    /* K and V by the bulk tensor copy engine (WG_TMA): one and several stages, with WG_PIPE */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_TMA=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=1,WG_TMA=1", 64, DT_FP16, 1, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=3,WG_TMA=1,WG_PIPE=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1", 256, DT_BF16, 1, 4096, 0},
    /* and a producer warp issuing them (WG_WS): one stage and several, decode */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=1,WG_TMA=1,WG_WS=1", 64, DT_FP16, 0, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3,WG_TMA=1,WG_WS=1,PACK_GQA=1,SPLIT_KV=4", 128, DT_BF16, 1, 1, 1},
    /* the producer warpgroup with P V behind the next tile's S (WG_PIPE: a stage is
     * released once its P V is done), and the consumers taking turns (WG_PINGPONG). (With
     * one consumer warpgroup, or at d=64 with 64-key tiles, ptxas 13.0 serialises WG_WS +
     * WG_PIPE's wgmmas, its C7520 note: a speed matter the tuner measures, not a case here.) */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1", 64, DT_FP16, 0, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1", 256, DT_FP16, 1, 4096, 1},
    /* key tiles of 176 and 192 (wgmma n176, n192: the sizes that are not powers of two);
     * two stages suffice for WG_PIPE beside a producer warpgroup */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=176,STAGES=2,WG_TMA=1,WG_WS=1,WG_PIPE=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=192,STAGES=2,WG_TMA=1,WG_WS=1", 128, DT_FP16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=176,STAGES=2", 64, DT_BF16, 1, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PIPE=1", 128, DT_BF16, 0, 4096, 1},
    /* head dims 80 and 96: swizzled rows padded to 128 elements (cp.async), and unswizzled */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2", 80, DT_BF16, 1, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1", 96, DT_FP16, 0, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,WG_SWIZZLE=0", 80, DT_BF16, 0, 2048, 1},
    /* the launch order read longest first (GRID_LPT) */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,GRID_LPT=1", 128, DT_BF16, 1, 4096, 1},
    /* the copy engine at head dims 80 and 96: a last box partly past the row (zeros) */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1", 80, DT_BF16, 1, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1", 96, DT_FP16, 0, 2048, 1},
    /* K and V on barriers of their own (WG_KVSPLIT): two stages for WG_PIPE, 176-key tiles
     * (non-causal: with the causal mask 176-key WG_PIPE tiles spill 88 bytes, split or not) */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=176,STAGES=2,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_KVSPLIT=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_KVSPLIT=1", 256, DT_FP16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3,WG_TMA=1,WG_WS=1,WG_KVSPLIT=1,PACK_GQA=1,SPLIT_KV=4", 128, DT_BF16, 1, 1, 1},
    /* one work-group per SM walking many query blocks (WG_PERSIST) */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_PERSIST=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PERSIST=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PERSIST=1", 64, DT_FP16, 1, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_PERSIST=1", 256, DT_BF16, 1, 4096, 1},
    /* FlashAttention-3's order: O's rescale beside the next S (WG_DEFER), the ping-pong turn
     * covering the previous tile's P V too (WG_PVTURN) */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_PVTURN=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_DEFER=1,WG_PVTURN=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_DEFER=1", 64, DT_FP16, 1, 2048, 1},
    /* persistent work-groups scheduled by a global counter (WG_DYNAMIC) */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_PERSIST=1,WG_DYNAMIC=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,WG_PERSIST=1,WG_DYNAMIC=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PERSIST=1,WG_DYNAMIC=1", 64, DT_FP16, 1, 2048, 1},
    /* the producer starting before Q has landed (WG_QEARLY) */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,WG_QEARLY=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1,GRID_LPT=1,WG_QEARLY=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_QEARLY=1,PACK_GQA=1,SPLIT_KV=4", 128, DT_BF16, 1, 1, 1},
    /* a persistent warpgroup fetching its next block's Q rows early (WG_QPREFETCH) */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,WG_PERSIST=1,WG_QPREFETCH=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PERSIST=1,WG_QPREFETCH=1", 64, DT_FP16, 1, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1", 256, DT_BF16, 1, 4096, 1},    /* the row maxima and sums in four chains (RED_SPLIT) */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=176,STAGES=2,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1,RED_SPLIT=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,RED_SPLIT=1", 256, DT_FP16, 1, 4096, 1},
    /* O stored through shared memory in 16-byte chunks (WG_OSTAGE) */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,WG_OSTAGE=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_KVSPLIT=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_OSTAGE=1", 80, DT_FP16, 1, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,WG_OSTAGE=1", 64, DT_BF16, 1, 1024, 1},
    /* Q by the copy engine, issued by the producer thread before K and V (WG_QTMA): d = 64 to
     * 256 (80: a box half outside the row), both types, causal or not, the reference winner */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,WG_OSTAGE=1,PACK_GQA=0,WG_QTMA=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,GRID_LPT=1,PACK_GQA=0,WG_QTMA=1", 128, DT_FP16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_DEFER=1,PACK_GQA=0,WG_QTMA=1", 256, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_KVSPLIT=1,PACK_GQA=0,WG_QTMA=1", 80, DT_BF16, 0, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,PACK_GQA=0,WG_QTMA=1", 64, DT_FP16, 1, 2048, 1},
    /* O stored by the copy engine from WG_OSTAGE's rows (WG_OTMA), with and without the
     * producer warpgroup, persistent, with WG_QTMA */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,WG_OSTAGE=1,PACK_GQA=0,WG_QTMA=1,WG_OTMA=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_PIPE=1,WG_OSTAGE=1,PACK_GQA=0,SPLIT_KV=1,WG_OTMA=1", 80, DT_FP16, 0, 2048, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_OSTAGE=1,PACK_GQA=0,WG_OTMA=1", 256, DT_BF16, 1, 4096, 1},
    /* O's deferred rescale with this tile's S left in flight (WG_SINFLIGHT) */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,WG_HOLDPV=1,WG_SINFLIGHT=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_DEFER=1,WG_SINFLIGHT=1", 256, DT_BF16, 1, 4096, 1},
    /* the wait for the previous tile's P V held behind the softmax (WG_HOLDPV) */
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,WG_HOLDPV=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_HOLDPV=1", 80, DT_FP16, 1, 2048, 1},
    /* three consumer warpgroups (192-row blocks; 160 registers a consumer thread beside the
     * producer): alone, in a ping-pong ring, FlashAttention-3's order where it fits d = 64
     * non-causal, persistent and counter-fed, with O staged and stored by the copy engine and
     * Q loaded by it; without the producer (no register hand-over) */
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1", 64, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1", 64, DT_FP16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1", 64, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1", 64, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_OSTAGE=1,WG_OTMA=1,WG_QTMA=1,PACK_GQA=0", 64, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=64,STAGES=2,WG_TMA=1", 64, DT_BF16, 1, 4096, 1},
    /* a warpgroup's tiles that none of its rows sees only taken turns on (WG_SKIP): the
     * reference winner's form (a 192-row tail past the last row), causal 192-row blocks
     * (tiles past a warpgroup's diagonal) counter-fed with Q prefetched, d = 256 with 64-key
     * tiles and split barriers; none may make ptxas serialize the wgmmas */
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_OSTAGE=1,PACK_GQA=0,WG_QTMA=1,WG_SKIP=1", 128, DT_BF16, 0, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,GRID_LPT=1,WG_SKIP=1", 64, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,PACK_GQA=1,WG_SKIP=1", 64, DT_FP16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_SKIP=1", 256, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_OSTAGE=1,PACK_GQA=0,WG_QTMA=1,WG_SKIP=1", 128, DT_BF16, 1, 4096, 0},
    /* the causal mask as one bound per row (MASK_BOUND): three warpgroups at d = 128 causal
     * no longer spill (96-124 bytes without it), persistent and counter-fed too; mma.sync */
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_OSTAGE=1,PACK_GQA=0,WG_QTMA=1,WG_OTMA=1,WG_SKIP=1,RED_SPLIT=1,GRID_LPT=1,MASK_BOUND=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_SKIP=1,MASK_BOUND=1", 128, DT_FP16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_KVSPLIT=1,WG_PERSIST=1,WG_DYNAMIC=1,PACK_GQA=1,MASK_BOUND=1", 80, DT_BF16, 1, 2048, 1},
    /* half a key tile's P V (WG_HALF=1), or its S and P V (2), where a warpgroup's rows see
     * only its first half: the causal reference winner's form, persistent and counter-fed
     * with split barriers, 2 warpgroups at d = 64, 192-key tiles at d = 64 (a 96-wide S),
     * non-causal (a sequence's last tile); each arm a whole wgmma stage, none serialized */
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_OSTAGE=1,PACK_GQA=0,WG_QTMA=1,WG_OTMA=1,WG_SKIP=1,WG_HALF=1,RED_SPLIT=1,GRID_LPT=1,MASK_BOUND=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_OSTAGE=1,PACK_GQA=0,WG_QTMA=1,WG_OTMA=1,WG_SKIP=1,WG_HALF=2,RED_SPLIT=1,GRID_LPT=1,MASK_BOUND=1", 128, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_SKIP=1,WG_HALF=1,MASK_BOUND=1", 128, DT_FP16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_SKIP=1,WG_HALF=2", 64, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_SKIP=1,WG_HALF=1", 256, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=192,STAGES=2,WG_TMA=1,WG_WS=1,WG_SKIP=1,WG_HALF=2,MASK_BOUND=1", 64, DT_BF16, 1, 4096, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_SKIP=1,WG_HALF=2", 128, DT_BF16, 0, 4096, 1},
    /* a KV head's query heads in 64-row stripes (PACK_GQA=2, 3 descending): the H100's
     * S = 1024 causal winner's form, persistent and counter-fed, and the non-persistent
     * ping-pong one */
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_SKIP=1,WG_HALF=2,RED_SPLIT=1,MASK_BOUND=1,PACK_GQA=2", 128, DT_BF16, 1, 1024, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_OSTAGE=1,WG_SKIP=1,WG_HALF=1,MASK_BOUND=1,GRID_LPT=1,PACK_GQA=2", 128, DT_BF16, 1, 1024, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_SKIP=1,WG_HALF=2,RED_SPLIT=1,MASK_BOUND=1,PACK_GQA=3", 128, DT_BF16, 1, 1024, 1},
    {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_OSTAGE=1,WG_SKIP=1,WG_HALF=1,MASK_BOUND=1,GRID_LPT=1,PACK_GQA=3", 128, DT_BF16, 1, 1024, 1},
};
/* ragged batches (VARLEN, four sequences of these length fractions): cp.async, and the
 * copy engine from each sequence's first key */
static const struct { wcase w; const char *lens; } rcases[] = {
    {{"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2", 128, DT_FP16, 1, 1024, 1}, "0.3;1;0.6"},
    {{"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1", 128, DT_FP16, 1, 1024, 1}, "0.3;1;0.6"},
    {{"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_TMA=1", 64, DT_BF16, 0, 1024, 1}, "0.5;1"},
    {{"MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_KVSPLIT=1", 256, DT_BF16, 1, 1024, 1}, "0.5;1"},
    {{"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_SKIP=1", 64, DT_BF16, 1, 1024, 1}, "0.3;1;0.6"},
};

static rt_device_info hopper(void)
{
    rt_device_info dev = {.compute_units = 132, .max_group_size = 1024, .shared_bytes = 227 * 1024,
                          .static_shared_bytes = 48 * 1024, .features = RT_FEAT_MMA_SYNC | RT_FEAT_WGMMA | RT_FEAT_TMA};
    snprintf(dev.arch, sizeof dev.arch, "sm_90");
    return dev;
}

/* The harness's defines for a wgmma case (configuration completed and checked for an H200). */
static int wgmma_defines(const wcase *wc, const char *lens, kconfig *c, char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN],
                         const char **dp)
{
    char err[FB_ERRLEN] = "", reason[512] = "";
    shape_t s = {.batch = 1, .hq = 8, .hkv = 2, .sq = wc->sq, .skv = 4096, .d = wc->d, .causal = wc->causal};
    if (lens) {
        s.batch = 4;
        s.skv = wc->sq;
        if (shapes_parse_lens("wcase", 0, lens, &s, err, sizeof err)) fail_msg("%s: %s", lens, err);
    }
    memset(c, 0, sizeof *c);
    assert_int_equal(kconfig_parse(wc->cfg, c, err, sizeof err), 0);
    rt_device_info dev = hopper();
    kconfig_complete(c, &dev, &s, wc->dt);
    assert_int_equal(c->mma, MMA_WGMMA);
    status_t st = kconfig_check(c, &dev, &s, wc->dt, reason, sizeof reason);
    if (st != ST_OK) fail_msg("%s d=%d: %s", wc->cfg, wc->d, reason);
    int nd = attn_defines(&s, wc->dt, c, 1, defs);
    int arch_specific = 0;
    for (int j = 0; j < nd; j++) {
        dp[j] = defs[j];
        arch_specific |= !strcmp(defs[j], "ARCH_SPECIFIC=1");
    }
    assert_true(arch_specific);
    return nd;
}

static long hist_count_prefix(const op_histogram *h, const char *prefix)
{
    long n = 0;
    for (size_t k = 0; k < h->n; k++)
        if (!strncmp(h->op[k], prefix, strlen(prefix))) n += h->count[k];
    return n;
}

/* WG_SKIP's tiles that no row of a warpgroup sees run in a second loop with no MMA: its
 * SASS has exactly the HGMMAs of the same configuration without it (the live tiles keep
 * the one loop; a branch around the wgmmas would have made ptxas serialize them, which
 * test_kernel_wgmma's "serialized" check also catches), non-causal and causal. */
static void test_wgmma_skip_sass(void **state)
{
    (void)state;
    need_nvrtc();
    char tool[1024];
    if (!sass_tool(tool, sizeof tool)) SKIP_BECAUSE("no nvdisasm or cuobjdump on PATH to read the SASS");
    const rt_runtime *rt = cuda();
    char *src = NULL, err[FB_ERRLEN] = "";
    assert_int_equal(attn_source("cuda", &src, err, sizeof err), 0);
    const char *base[] = {"MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_OSTAGE=1,PACK_GQA=0,WG_QTMA=1",
                          "MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,GRID_LPT=1"};
    const int dims[] = {128, 64};
    for (int k = 0; k < 2; k++) {
        long hg[2];
        for (int on = 0; on < 2; on++) {
            char cfg[KCONFIG_STR_MAX];
            snprintf(cfg, sizeof cfg, "%s,WG_SKIP=%d", base[k], on);
            const wcase wc = {cfg, dims[k], DT_BF16, k, 4096, 1};
            kconfig c;
            char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN];
            const char *dp[ATTN_MAX_DEFINES];
            const int nd = wgmma_defines(&wc, NULL, &c, defs, dp);
            void *bin = NULL;
            size_t len = 0;
            char *log = NULL;
            rt_kernel_attrs a;
            if (rt->compile_offline("sm_90", src, dp, nd, "attn_fwd", &bin, &len, &a, &log, err, sizeof err) != 0)
                fail_msg("%s: %s\n%s", cfg, err, log ? log : "");
            op_histogram h = {0};
            char serr[512] = "";
            if (sass_disassemble(bin, len, &h, serr, sizeof serr) != 0) fail_msg("%s: disassembling: %s", cfg, serr);
            hg[on] = hist_count_prefix(&h, "HGMMA");
            print_message("%s d=%d c%d: %ld HGMMA, %ld spill bytes\n", cfg, wc.d, wc.causal, hg[on], a.spill_bytes);
            assert_null(strstr(log ? log : "", "serialized"));
            op_histogram_free(&h);
            free(bin);
            free(log);
        }
        assert_true(hg[0] > 0);
        assert_int_equal(hg[1], hg[0]);
    }
    free(src);
}

#define QUICK_STRIDE 4

static void test_kernel_wgmma(void **state)
{
    (void)state;
    need_nvrtc();
    const rt_runtime *rt = cuda();
    char *src = NULL, err[FB_ERRLEN] = "";
    assert_int_equal(attn_source("cuda", &src, err, sizeof err), 0);
    char tool[1024];
    const int have_sass = sass_tool(tool, sizeof tool);
    if (!have_sass) print_message("no nvdisasm or cuobjdump on PATH: HGMMA checked in PTX only (wgmma.mma_async)\n");
    const size_t nw = sizeof wcases / sizeof wcases[0], nr = sizeof rcases / sizeof rcases[0];
    /* the quick test command compiles every QUICK_STRIDE-th case (each a few seconds of NVRTC);
     * FABENCH_TEST_LONG=1 (make test-long, CI) compiles them all */
    const char *longrun = getenv("FABENCH_TEST_LONG");
    const size_t stride = longrun && !strcmp(longrun, "1") ? 1 : QUICK_STRIDE;
    if (stride > 1)
        print_message("quick: every %zuth of the %zu wgmma cases (FABENCH_TEST_LONG=1 compiles all)\n", stride, nw + nr);
    for (size_t i = 0; i < nw + nr; i++) {
        const wcase *wc = i < nw ? &wcases[i] : &rcases[i - nw].w;
        const char *lens = i < nw ? NULL : rcases[i - nw].lens;
        /* FABENCH_TEST_WCASES=TEXT: only the cases whose configuration contains TEXT
         * (=ragged: the ragged batches) */
        const char *only = getenv("FABENCH_TEST_WCASES");
        if (only && *only && !strstr(wc->cfg, only) && !(lens && !strcmp(only, "ragged"))) continue;
        if (!(only && *only) && i % stride != 0 && i != nw) continue; /* (the first ragged case always) */
        kconfig c;
        char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN];
        const char *dp[ATTN_MAX_DEFINES];
        int nd = wgmma_defines(wc, lens, &c, defs, dp);
        void *bin = NULL;
        size_t len = 0;
        char *log = NULL;
        rt_kernel_attrs a;
        /* as the harness compiles for an H200 (sm_90; ARCH_SPECIFIC=1 makes it sm_90a) and,
         * for the first case, naming sm_90a outright */
        const char *arch = i == 0 ? "sm_90a" : "sm_90";
        int rc = rt->compile_offline(arch, src, dp, nd, "attn_fwd", &bin, &len, &a, &log, err, sizeof err);
        if (rc != 0) fail_msg("%s %s d=%d: rc %d: %s\n%s", arch, wc->cfg, wc->d, rc, err, log ? log : "");
        long hgmma = -1;
        if (have_sass) {
            op_histogram h = {0};
            char serr[512] = "";
            int sr = sass_disassemble(bin, len, &h, serr, sizeof serr);
            if (sr < 0) fail_msg("%s: disassembling: %s", wc->cfg, serr);
            if (sr == 0) hgmma = hist_count_prefix(&h, "HGMMA");
            /* WG_TMA: the copies are the copy engine's (UTMALDG), not cp.async's (LDGSTS) */
            if (sr == 0 && c.wg_tma) assert_true(hist_count_prefix(&h, "UTMALDG") >= 2 * (wc->d / 64));
            /* WG_QTMA: Q's boxes too, and no cp.async left in the kernel */
            if (sr == 0 && c.wg_otma) assert_true(hist_count_prefix(&h, "UTMASTG") >= (wc->d + 63) / 64);
            if (sr == 0 && c.wg_qtma) {
                assert_true(hist_count_prefix(&h, "UTMALDG") >= 3 * ((wc->d + 63) / 64));
                assert_int_equal(hist_count_prefix(&h, "LDGSTS"), 0);
            }
            op_histogram_free(&h);
        }
        char cs[KCONFIG_STR_MAX], hg[32] = ""; /* HGMMAs counted only where the SASS was read */
        kconfig_str(&c, cs, sizeof cs);
        if (hgmma >= 0) snprintf(hg, sizeof hg, "%ld HGMMA, ", hgmma);
        print_message("%s %-62s d=%3d %s c%d%s: %ld registers, %ld spill bytes, %zu shared bytes, %s%ld bytes cubin\n",
                      arch, wc->cfg, wc->d, dtype_name(wc->dt), wc->causal, lens ? " ragged" : "", a.registers, a.spill_bytes,
                      kconfig_shared_bytes(&c, wc->d), hg, (long)len);
        assert_true(len > 0);
        assert_memory_equal(bin, "\x7f" "ELF", 4);
        assert_true(a.registers > 0 && a.registers <= 255);
        assert_true(a.spill_bytes >= 0);
        if (wc->no_spill) assert_int_equal(a.spill_bytes, 0);
        if (strstr(log, "serialized")) { /* ptxas' note, its line */
            const char *hit = strstr(log, "serialized"), *line = hit;
            while (line > log && line[-1] != '\n') line--;
            print_message("%.300s\n", line);
        }
        assert_null(strstr(log, "serialized")); /* ptxas would warn when it cannot run the wgmmas asynchronously */
        /* one HGMMA per 16 of the head dimension (S) and per 16 keys (P V), each tile */
        if (have_sass) assert_true(hgmma >= wc->d / 16 + c.block_n / 16);
        free(bin);
        free(log);
        /* the PTX (compute_90 becomes compute_90a the same way) */
        assert_int_equal(rt->compile_offline("compute_90", src, dp, nd, "attn_fwd", &bin, &len, NULL, &log, err, sizeof err), 0);
        char *ptx = malloc(len + 1);
        memcpy(ptx, bin, len);
        ptx[len] = 0;
        assert_non_null(strstr(ptx, ".target sm_90a"));
        assert_non_null(strstr(ptx, "wgmma.mma_async.sync.aligned.m64n"));
        assert_non_null(strstr(ptx, "wgmma.fence.sync.aligned"));
        assert_non_null(strstr(ptx, "wgmma.commit_group.sync.aligned"));
        assert_non_null(strstr(ptx, "wgmma.wait_group.sync.aligned"));
        if (!c.wg_qtma) { /* Q by cp.async, made visible to wgmma's proxy */
            assert_non_null(strstr(ptx, "fence.proxy.async.shared::cta"));
            assert_non_null(strstr(ptx, "cp.async.cg.shared.global"));
        } else {
            assert_null(strstr(ptx, "cp.async.cg.shared.global"));
        }
        char want[96];
        snprintf(want, sizeof want, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s", c.block_n, wc->dt == DT_BF16 ? "bf16" : "f16");
        assert_non_null(strstr(ptx, want));
        if (c.wg_tma) {
            assert_non_null(strstr(ptx, "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"));
            assert_non_null(strstr(ptx, "mbarrier.try_wait.parity.shared::cta.b64"));
            assert_non_null(strstr(ptx, "mbarrier.arrive.expect_tx.shared::cta.b64"));
        }
        /* WG_WS: the consumers release stages by arrivals, not by a CTA barrier in the loop */
        if (c.wg_ws) assert_non_null(strstr(ptx, "mbarrier.arrive.shared::cta.b64"));
        else assert_null(strstr(ptx, "mbarrier.arrive.shared::cta.b64"));
        /* WG_PINGPONG: the turns are named barriers 1 and 2 of the 256 consumer threads */
        if (c.wg_pingpong) assert_non_null(strstr(ptx, "bar.arrive"));
        else assert_null(strstr(ptx, "bar.arrive"));
        free(ptx);
        free(bin);
        free(log);
    }
    free(src);
}

/* A wgmma switch refused without what it needs (the reason says so), accepted once `fix` is
 * added, and printed as `printed` in the configuration's text; the accepted one in *out. */
static void switch_needs(const rt_device_info *dev, const shape_t *s, const char *cfg, const char *why, const char *fix,
                         const char *printed, kconfig *out)
{
    char err[FB_ERRLEN], reason[512], cs[KCONFIG_STR_MAX];
    kconfig c = {0};
    assert_int_equal(kconfig_parse(cfg, &c, err, sizeof err), 0);
    kconfig_complete(&c, dev, s, DT_BF16);
    assert_int_equal(kconfig_check(&c, dev, s, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    if (!strstr(reason, why)) fail_msg("%s: reason '%s', expected '%s'", cfg, reason, why);
    assert_int_equal(kconfig_parse(fix, &c, err, sizeof err), 0);
    if (kconfig_check(&c, dev, s, DT_BF16, reason, sizeof reason) != ST_OK) fail_msg("%s + %s: %s", cfg, fix, reason);
    kconfig_str(&c, cs, sizeof cs);
    assert_non_null(strstr(cs, printed));
    *out = c;
}

/* MMA=wgmma anywhere but sm_90a is refused with a reason: by the kernel (sm_80, or plain
 * sm_90 when nothing asks for the architecture-specific target) and by the configuration
 * checks (a device without the feature, fp32, shapes the tile loop does not cover). */
static void test_wgmma_rejected(void **state)
{
    (void)state;
    char err[FB_ERRLEN] = "", reason[512];
    /* configuration checks need no NVRTC */
    shape_t s = {.batch = 1, .hq = 8, .hkv = 2, .sq = 1024, .skv = 1024, .d = 128, .causal = 1};
    kconfig c = {0};
    assert_int_equal(kconfig_parse("MMA=wgmma", &c, err, sizeof err), 0);
    assert_int_equal(c.mma, MMA_WGMMA);
    rt_device_info h100 = hopper(), a100 = hopper();
    a100.features = RT_FEAT_MMA_SYNC;
    snprintf(a100.arch, sizeof a100.arch, "sm_80");
    kconfig_complete(&c, &h100, &s, DT_BF16);
    assert_int_equal(c.block_m, 16 * c.num_warps);
    assert_int_equal(c.num_warps % 4, 0);
    assert_int_equal(kconfig_check(&c, &h100, &s, DT_BF16, reason, sizeof reason), ST_OK);
    assert_int_equal(kconfig_dynamic_shared(&c, 128), kconfig_shared_bytes(&c, 128));
    assert_int_equal(kconfig_shared_bytes(&c, 128), 2u * 128u * (size_t)(c.block_m + 2 * c.stages * c.block_n) + 1024u);
    assert_int_equal(kconfig_check(&c, &a100, &s, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    assert_non_null(strstr(reason, "Hopper"));
    assert_int_equal(kconfig_check(&c, &h100, &s, DT_FP32, reason, sizeof reason), ST_UNSUPPORTED);
    assert_non_null(strstr(reason, "fp16 or bf16"));
    kconfig bad = c;
    bad.block_m = 96;
    assert_int_equal(kconfig_check(&bad, &h100, &s, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    assert_non_null(strstr(reason, "warpgroup"));
    bad = c;
    bad.block_n = 32;
    assert_int_equal(kconfig_check(&bad, &h100, &s, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    shape_t d80 = s, d72 = s;
    d80.d = 80;
    d72.d = 72;
    assert_int_equal(kconfig_check(&c, &h100, &d72, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    assert_non_null(strstr(reason, "head dims"));
    /* d = 80 runs wgmma with padded swizzled rows, through the copy engine too (its last
     * box partly past the row); unswizzled rows it cannot write */
    assert_int_equal(kconfig_check(&c, &h100, &d80, DT_BF16, reason, sizeof reason), ST_OK);
    assert_int_equal(kconfig_shared_bytes(&c, 80), kconfig_shared_bytes(&c, 128));
    bad = c;
    bad.wg_tma = 1;
    assert_int_equal(kconfig_check(&bad, &h100, &d80, DT_BF16, reason, sizeof reason), ST_OK);
    bad.wg_swizzle = 0;
    assert_int_equal(kconfig_check(&bad, &h100, &d80, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    assert_non_null(strstr(reason, "WG_SWIZZLE=1"));
    /* the defaults: wgmma for dense prefill on Hopper; mma for decode, d=80, ragged, small
     * pages, and anywhere without the feature */
    struct { shape_t sh; int ragged_page; mma_kind want; } dflt[] = {
        {s, 0, MMA_WGMMA}, {d80, 0, MMA_SYNC}, {s, 16, MMA_SYNC}, {s, 64, MMA_WGMMA}, {s, -1, MMA_SYNC},
    };
    dflt[4].sh.sq = 1;
    for (size_t i = 0; i < sizeof dflt / sizeof dflt[0]; i++) {
        kconfig k = {0};
        if (dflt[i].ragged_page > 0) dflt[i].sh.page = dflt[i].ragged_page;
        kconfig_complete(&k, &h100, &dflt[i].sh, DT_BF16);
        assert_int_equal(k.mma, dflt[i].want);
        assert_int_equal(kconfig_check(&k, &h100, &dflt[i].sh, DT_BF16, reason, sizeof reason), ST_OK);
        kconfig a = {0};
        kconfig_complete(&a, &a100, &dflt[i].sh, DT_BF16);
        assert_int_equal(a.mma, MMA_SYNC);
    }
    /* WG_TMA: printed only when 1 (older strings keep their meaning), wgmma with the swizzle
     * on K and V that are not paged (dense or ragged), and only where the copy engine's
     * tensor maps can be made */
    char cs[KCONFIG_STR_MAX];
    kconfig_str(&c, cs, sizeof cs);
    assert_null(strstr(cs, "WG_TMA"));
    kconfig tma = c;
    assert_int_equal(kconfig_parse("WG_TMA=1", &tma, err, sizeof err), 0);
    kconfig_str(&tma, cs, sizeof cs);
    assert_non_null(strstr(cs, ";WG_TMA=1"));
    assert_int_equal(kconfig_check(&tma, &h100, &s, DT_BF16, reason, sizeof reason), ST_OK);
    rt_device_info no_tma = h100;
    no_tma.features &= ~RT_FEAT_TMA;
    assert_int_equal(kconfig_check(&tma, &no_tma, &s, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    shape_t paged = s;
    paged.page = 128;
    assert_int_equal(kconfig_check(&tma, &h100, &paged, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    assert_non_null(strstr(reason, "not paged"));
    shape_t ragged = s;
    ragged.batch = 3;
    assert_int_equal(shapes_parse_lens("t", 0, "0.3;1;0.6", &ragged, err, sizeof err), 0);
    kconfig rtma = {0};
    assert_int_equal(kconfig_parse("MMA=wgmma,WG_TMA=1,WG_WS=1", &rtma, err, sizeof err), 0);
    kconfig_complete(&rtma, &h100, &ragged, DT_BF16);
    if (kconfig_check(&rtma, &h100, &ragged, DT_BF16, reason, sizeof reason) != ST_OK) fail_msg("ragged + WG_TMA: %s", reason);
    /* WG_QEARLY: with the producer warpgroup, not with WG_PERSIST (which loads Q that way
     * already); WG_QPREFETCH: persistent work-groups only */
    kconfig qe;
    switch_needs(&h100, &s, "MMA=wgmma,WG_TMA=1,WG_QEARLY=1", "WG_QEARLY=1 needs WG_WS=1", "WG_WS=1", ";WG_QEARLY=1", &qe);
    assert_int_equal(kconfig_parse("WG_PERSIST=1,SPLIT_KV=1", &qe, err, sizeof err), 0);
    assert_int_equal(kconfig_check(&qe, &h100, &s, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    switch_needs(&h100, &s, "MMA=wgmma,WG_TMA=1,WG_WS=1,WG_QPREFETCH=1", "WG_QPREFETCH=1 needs WG_PERSIST=1", "WG_PERSIST=1,SPLIT_KV=1",
                 ";WG_PERSIST=1;WG_QPREFETCH=1", &qe);
    switch_needs(&h100, &s, "MMA=wgmma,WG_SINFLIGHT=1", "WG_SINFLIGHT=1 needs WG_DEFER=1", "WG_PIPE=1,STAGES=3,WG_DEFER=1",
                 ";WG_DEFER=1;WG_SINFLIGHT=1", &qe);
    switch_needs(&h100, &s, "MMA=wgmma,WG_TMA=1,WG_WS=1,WG_PERSIST=1,WG_QPREFETCH=1,WG_OSTAGE=1", "WG_OSTAGE=1 needs SPLIT_KV=1 and no WG_QPREFETCH",
                 "WG_QPREFETCH=0", ";WG_PERSIST=1;WG_OSTAGE=1", &qe);
    /* WG_QTMA: the producer thread loads Q, from a dense, unpacked Q (its tensor map) */
    switch_needs(&h100, &s, "MMA=wgmma,WG_TMA=1,PACK_GQA=0,WG_QTMA=1", "WG_QTMA=1 needs WG_TMA=1 and WG_WS=1", "WG_WS=1",
                 ";WG_WS=1;WG_QTMA=1", &qe);
    switch_needs(&h100, &s, "MMA=wgmma,WG_TMA=1,WG_WS=1,PACK_GQA=1,WG_QTMA=1", "PACK_GQA=0", "PACK_GQA=0", ";WG_QTMA=1", &qe);
    switch_needs(&h100, &s, "MMA=wgmma,WG_TMA=1,WG_WS=1,PACK_GQA=0,WG_QEARLY=1,WG_QTMA=1", "no WG_PERSIST or WG_QEARLY", "WG_QEARLY=0",
                 ";WG_QTMA=1", &qe);
    switch_needs(&h100, &s, "MMA=wgmma,WG_TMA=1,PACK_GQA=0,WG_OTMA=1", "WG_OTMA=1 needs WG_OSTAGE=1", "WG_OSTAGE=1,SPLIT_KV=1",
                 ";WG_OSTAGE=1;WG_OTMA=1", &qe);
    switch_needs(&h100, &s, "MMA=wgmma,WG_TMA=1,WG_OSTAGE=1,SPLIT_KV=1,PACK_GQA=1,WG_OTMA=1", "WG_OTMA=1 needs", "PACK_GQA=0",
                 ";WG_OTMA=1", &qe);
    kconfig rq = {0};
    assert_int_equal(kconfig_parse("MMA=wgmma,WG_TMA=1,WG_WS=1,PACK_GQA=0,WG_QTMA=1", &rq, err, sizeof err), 0);
    kconfig_complete(&rq, &h100, &ragged, DT_BF16);
    assert_int_equal(kconfig_check(&rq, &h100, &ragged, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    if (!strstr(reason, "WG_QTMA=1 needs")) fail_msg("ragged + WG_QTMA: %s", reason);
    /* RED_SPLIT: the mma and wgmma softmax only */
    switch_needs(&h100, &s, "MMA=fma,RED_SPLIT=1", "RED_SPLIT=1 applies to MMA=mma and MMA=wgmma only", "MMA=mma,BLOCK_M=64",
                 ";KPAD=1;RED_SPLIT=1", &qe);
    switch_needs(&h100, &s, "MMA=wgmma,WG_HOLDPV=1", "WG_HOLDPV=1 needs WG_PIPE=1", "WG_PIPE=1,STAGES=3", ";WG_PIPE=1;WG_SWIZZLE=1;WG_HOLDPV=1", &qe);
    switch_needs(&h100, &s, "MMA=wgmma,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_SKIP=1", "WG_SKIP=1 needs WG_WS=1 and no WG_PIPE", "WG_PIPE=0",
                 ";WG_WS=1;WG_SKIP=1", &qe);
    switch_needs(&h100, &s, "MMA=wgmma,WG_SKIP=1", "WG_SKIP=1 needs WG_WS=1", "WG_TMA=1,WG_WS=1", ";WG_TMA=1;WG_WS=1;WG_SKIP=1", &qe);
    switch_needs(&h100, &s, "MMA=wgmma,WG_TMA=1,WG_WS=1,BLOCK_N=128,WG_HALF=1", "WG_HALF=1 needs WG_SKIP=1", "WG_SKIP=1",
                 ";WG_SKIP=1;WG_HALF=1", &qe);
    switch_needs(&h100, &s, "MMA=wgmma,WG_TMA=1,WG_WS=1,WG_SKIP=1,BLOCK_N=64,WG_HALF=2", "BLOCK_N = 128, 192 or 256", "BLOCK_N=128",
                 ";WG_SKIP=1;WG_HALF=2", &qe);
    switch_needs(&h100, &s, "MMA=mma,BLOCK_M=64,WG_HALF=1", "WG_HALF=1 applies to MMA=wgmma only", "MMA=wgmma,WG_SWIZZLE=1,WG_TMA=1,WG_WS=1,WG_SKIP=1",
                 ";WG_SKIP=1;WG_HALF=1", &qe);
    switch_needs(&h100, &s, "MMA=fma,MASK_BOUND=1", "MASK_BOUND=1 applies to MMA=mma and MMA=wgmma only", "MMA=mma,BLOCK_M=64",
                 ";MASK_BOUND=1", &qe);
    /* persistent work-groups walk dense query blocks only */
    assert_int_equal(kconfig_parse("WG_PERSIST=1", &rtma, err, sizeof err), 0);
    assert_int_equal(kconfig_check(&rtma, &h100, &ragged, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    assert_non_null(strstr(reason, "dense batch"));
    tma.wg_swizzle = 0;
    assert_int_equal(kconfig_check(&tma, &h100, &s, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    kconfig mtma = {0};
    assert_int_equal(kconfig_parse("MMA=mma,WG_TMA=1", &mtma, err, sizeof err), 0);
    kconfig_complete(&mtma, &h100, &s, DT_BF16);
    assert_int_equal(kconfig_check(&mtma, &h100, &s, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    assert_non_null(strstr(reason, "WG_TMA=1 applies to MMA=wgmma only"));
    /* WG_WS: a producer warp beside the NUM_WARPS consumers, over the copy engine only */
    kconfig ws = c;
    assert_int_equal(kconfig_parse("WG_TMA=1,WG_WS=1", &ws, err, sizeof err), 0);
    assert_int_equal(kconfig_check(&ws, &h100, &s, DT_BF16, reason, sizeof reason), ST_OK);
    assert_int_equal(kconfig_threads(&ws), ws.num_warps * 32 + 128);
    assert_int_equal(kconfig_threads(&c), c.num_warps * 32);
    kconfig_str(&ws, cs, sizeof cs);
    assert_non_null(strstr(cs, ";WG_TMA=1;WG_WS=1"));
    ws.wg_tma = 0;
    assert_int_equal(kconfig_check(&ws, &h100, &s, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    assert_non_null(strstr(reason, "WG_WS=1 needs WG_TMA=1"));
    ws.wg_tma = ws.wg_pipe = 1; /* P V behind the next S: the stage is released after it */
    ws.stages = 3;
    assert_int_equal(kconfig_check(&ws, &h100, &s, DT_BF16, reason, sizeof reason), ST_OK);
    kconfig pp = c;
    assert_int_equal(kconfig_parse("WG_TMA=1,WG_WS=1,WG_PINGPONG=1", &pp, err, sizeof err), 0);
    assert_int_equal(pp.num_warps, 8);
    assert_int_equal(kconfig_check(&pp, &h100, &s, DT_BF16, reason, sizeof reason), ST_OK);
    kconfig_str(&pp, cs, sizeof cs);
    assert_non_null(strstr(cs, ";WG_WS=1;WG_PINGPONG=1"));
    pp.wg_ws = 0;
    assert_int_equal(kconfig_check(&pp, &h100, &s, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    assert_non_null(strstr(reason, "WG_PINGPONG=1 needs WG_WS=1"));
    bad = c;
    bad.stages = 4;
    bad.block_n = 256;
    assert_int_equal(kconfig_check(&bad, &h100, &s, DT_BF16, reason, sizeof reason), ST_RESOURCE_LIMIT);

    need_nvrtc();
    const rt_runtime *rt = cuda();
    char *src = NULL;
    assert_int_equal(attn_source("cuda", &src, err, sizeof err), 0);
    kconfig wc;
    char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN];
    const char *dp[ATTN_MAX_DEFINES];
    int nd = wgmma_defines(&wcases[0], NULL, &wc, defs, dp);
    const char *nodp[ATTN_MAX_DEFINES]; /* the same without ARCH_SPECIFIC=1 */
    int nn = 0;
    for (int j = 0; j < nd; j++)
        if (strcmp(dp[j], "ARCH_SPECIFIC=1")) nodp[nn++] = dp[j];
    struct { const char *arch; const char *const *d; int n; } rej[] = {
        {"sm_80", dp, nd}, {"compute_80", dp, nd}, {"sm_90", nodp, nn}, {"compute_90", nodp, nn}};
    for (size_t i = 0; i < sizeof rej / sizeof rej[0]; i++) {
        void *bin = NULL;
        size_t len = 0;
        char *log = NULL;
        rt_kernel_attrs a;
        int rc = rt->compile_offline(rej[i].arch, src, rej[i].d, rej[i].n, "attn_fwd", &bin, &len, &a, &log, err, sizeof err);
        assert_int_equal(rc, RT_ECOMPILE);
        assert_null(bin);
        assert_non_null(log);
        assert_non_null(strstr(log, "MMA=3 (wgmma) needs an NVIDIA sm_90a target"));
        print_message("%s%s: rejected: %s\n", rej[i].arch, rej[i].d == dp ? "" : " without ARCH_SPECIFIC", "MMA=3 (wgmma) needs an NVIDIA sm_90a target");
        free(log);
    }
    free(src);
}

/* The reference kernel (kernels/ref_attn.k) for sm_80 and sm_90 in every dtype: it builds,
 * with double arithmetic in the PTX (its sums) and no FMA in the plain fp32 path's
 * multiplies and adds (__fmul_rn, __fadd_rn: mul.rn.f32, add.rn.f32). */
static void test_ref_kernel(void **state)
{
    (void)state;
    need_nvrtc();
    const rt_runtime *rt = cuda();
    char *src = NULL, err[FB_ERRLEN] = "";
    assert_int_equal(fb_kernel_source("cuda", "ref_attn.k", &src, err, sizeof err), 0);
    const char *arch[] = {"sm_80", "sm_90", "compute_80"};
    for (int a = 0; a < 3; a++)
        for (int dt = 0; dt < 3; dt++) {
            char def[16];
            snprintf(def, sizeof def, "DTYPE=%d", dt);
            const char *defs[] = {def};
            void *bin = NULL;
            size_t len = 0;
            char *log = NULL;
            rt_kernel_attrs at;
            const int rc = rt->compile_offline(arch[a], src, defs, 1, "ref_attn", &bin, &len, a < 2 ? &at : NULL, &log, err,
                                               sizeof err);
            if (rc != 0) fprintf(stderr, "%s DTYPE=%d: rc %d: %s\n%s\n", arch[a], dt, rc, err, log ? log : "(no log)");
            assert_int_equal(rc, 0);
            if (a == 2) { /* the PTX */
                const char *ptx = bin;
                assert_non_null(strstr(ptx, ".f64"));
                assert_non_null(strstr(ptx, "mul.rn.f32"));
                assert_non_null(strstr(ptx, "add.rn.f32"));
            }
            free(bin);
            free(log);
        }
    free(src);
}

/* The bandwidth probe (kernels/stream.k) builds for sm_80 and sm_90 at both unroll depths,
 * both kernels, with 128-bit loads and stores in the PTX (the 16-byte words stay whole). */
static void test_stream_kernel(void **state)
{
    (void)state;
    need_nvrtc();
    const rt_runtime *rt = cuda();
    char *src = NULL, err[FB_ERRLEN] = "";
    assert_int_equal(fb_kernel_source("cuda", "stream.k", &src, err, sizeof err), 0);
    const char *arch[] = {"sm_80", "sm_90", "compute_90"}, *kern[] = {"stream_copy", "stream_read"};
    for (int a = 0; a < 3; a++)
        for (int u = 1; u <= 4; u += 3)
            for (int k = 0; k < 2; k++) {
                char un[16];
                snprintf(un, sizeof un, "UNROLL_N=%d", u);
                const char *defs[] = {"NT=256", un};
                void *bin = NULL;
                size_t len = 0;
                char *log = NULL;
                const int rc = rt->compile_offline(arch[a], src, defs, 2, kern[k], &bin, &len, NULL, &log, err, sizeof err);
                if (rc != 0) fprintf(stderr, "%s %s %s: rc %d: %s\n%s\n", arch[a], un, kern[k], rc, err, log ? log : "");
                assert_int_equal(rc, 0);
                if (a == 2) assert_non_null(strstr((const char *)bin, "ld.global.nc.v4.u32"));
                if (a == 2 && k == 0) assert_non_null(strstr((const char *)bin, "st.global.v4.u32"));
                free(bin);
                free(log);
            }
    free(src);
}

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

int main(int argc, char **argv)
{
    if (argc > 1) cmocka_set_test_filter(argv[1]); /* a test name pattern: that test alone */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_sm80),
        cmocka_unit_test(test_sm90),
        cmocka_unit_test(test_ptx),
        cmocka_unit_test(test_compile_error),
        cmocka_unit_test(test_unknown_arch),
        cmocka_unit_test(test_kernel_sm80),
        cmocka_unit_test(test_kernel_sm90),
        cmocka_unit_test(test_paged_spanning_tiles),
        cmocka_unit_test(test_ref_kernel),
        cmocka_unit_test(test_stream_kernel),
        cmocka_unit_test(test_kernel_wgmma),
        cmocka_unit_test(test_wgmma_rejected),
        cmocka_unit_test(test_wgmma_skip_sass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
