/* test_e2e.c: the portable kernel against the CPU reference on a device: the first
 * OpenCL device (PoCL in CI) or $FABENCH_TEST_DEVICE (cuda:0 on a GPU machine): odd
 * lengths, every head dim and dtype, causal and not, GQA/MQA, Sq != Skv, split-KV,
 * several thread mappings of both tile implementations, ragged batches (lens), and a
 * deliberately wrong kernel. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_skip.h"

#include "test_shape.h"

#include "attn.h"
#include "rt.h"
#include "shapes.h"

/* Cases that ran to a verdict, and cases the device could not hold (a GPU's OpenCL has
 * 48 KiB of shared memory where PoCL has megabytes): those count as neither. */
static int cases_run, cases_skipped;
/* Per dtype, the largest share of its bound any element of a passing case took: the
 * verification rule's margin on correct kernels (printed at the end). */
static double worst_ok[3];
static const char *worst_case[3];
static char worst_name[3][200];

static attn_runner *runner;
static rt_device dev;
static attn_opts opts;

static int setup(void **state)
{
    (void)state;
    char err[FB_ERRLEN];
    const char *sel = getenv("FABENCH_TEST_DEVICE");
    if (rt_select(sel ? sel : "opencl:0", &dev, err, sizeof err) != 0) {
        fprintf(stderr, "no OpenCL device for the end-to-end tests: %s\n", err);
        return -1;
    }
    if (attn_open(&dev, &runner, err, sizeof err) != 0) {
        fprintf(stderr, "attn_open: %s\n", err);
        return -1;
    }
    attn_opts_defaults(&opts);
    opts.verify_only = 1;
    opts.write_lse = 1;
    opts.timing.timeout_s = 120;
    fprintf(stderr, "end-to-end on %s:%d (%s)\n", dev.rt->name, dev.index, dev.info.name);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fprintf(stderr, "%d cases verified, %d skipped as beyond the device's resources\n", cases_run, cases_skipped);
    for (int t = DT_FP32; t <= DT_BF16; t++)
        if (worst_case[t])
            fprintf(stderr, "%s: the worst element of a passing case took %.3f of its bound (%s)\n", dtype_name((dtype_t)t),
                    worst_ok[t], worst_case[t]);
    attn_close(runner);
    return 0;
}

/* Runs one case and returns its status; prints the case when it is not ok. A
 * configuration that exceeds the device's resources is reported as ST_OK (skipped). */
static status_t run_case(const shape_t *s, dtype_t dt, const char *config)
{
    kconfig c = {0};
    char err[FB_ERRLEN];
    if (config && kconfig_parse(config, &c, err, sizeof err) != 0) fail_msg("bad test config %s: %s", config, err);
    attn_result res;
    if (attn_run(runner, s, dt, &c, &opts, &res, err, sizeof err) != 0) fail_msg("%s: harness error: %s", s->name, err);
    if (res.status != ST_OK) {
        char cs[KCONFIG_STR_MAX];
        kconfig_str(&res.config, cs, sizeof cs);
        fprintf(stderr, "  %s %s [%s]: %s: %s\n", s->name, dtype_name(dt), cs, status_name(res.status), res.reason);
    }
    if (res.status == ST_OK && res.ver.rows_checked && res.ver.worst_ratio > worst_ok[dt]) {
        worst_ok[dt] = res.ver.worst_ratio;
        snprintf(worst_name[dt], sizeof worst_name[dt], "%s %s", s->name, config ? config : "(default)");
        worst_case[dt] = worst_name[dt];
    }
    if (res.status == ST_RESOURCE_LIMIT && config && !strstr(config, "FAULT")) {
        cases_skipped++;
        return ST_OK;
    }
    cases_run++;
    return res.status;
}

/* A ragged batch: mk's shape with a length pattern ("0.1;0.4;1"). */
static shape_t mk_ragged(int b, int hq, int hkv, int sq, int skv, int d, int causal, const char *pattern)
{
    shape_t s = mk(b, hq, hkv, sq, skv, d, causal);
    char err[FB_ERRLEN];
    if (shapes_parse_lens("test", 0, pattern, &s, err, sizeof err) != 0) fail_msg("bad pattern %s: %s", pattern, err);
    snprintf(s.name, sizeof s.name, "ragged-b%d-h%d/%d-q%d-k%d-d%d-c%d", b, hq, hkv, sq, skv, d, causal);
    return s;
}

/* Ragged batches (VARLEN, packed per head): the paper's patterns, prefill and decode,
 * Sq != Skv, GQA, causal and not, several thread mappings, head dims and dtypes; a
 * kernel that skips each sequence's last key tile is caught; SPLIT_KV, PACK_GQA and the
 * tensor-core paths are declined as unsupported, not run wrong. */
static void test_ragged(void **state)
{
    (void)state;
    int bad = 0;
    const char *varied = "0.1;0.4;0.5;1.0;0.2";
    shape_t pre = mk_ragged(5, 4, 2, 70, 70, 64, 1, varied);
    shape_t pre_nc = mk_ragged(6, 2, 2, 45, 45, 64, 0, varied);
    shape_t uni = mk_ragged(3, 4, 1, 33, 33, 128, 1, "1.0");
    shape_t dec = mk_ragged(5, 8, 2, 1, 300, 128, 1, varied);
    shape_t lt = mk_ragged(4, 4, 4, 20, 90, 96, 1, "0.3;1;0.05");
    shape_t gt = mk_ragged(4, 2, 1, 90, 20, 32, 1, "0.3;1;0.05");
    const shape_t *all[] = {&pre, &pre_nc, &uni, &dec, &lt, &gt};
    const char *cfgs[] = {NULL, "MMA=fma,BLOCK_M=16,BLOCK_N=16", "MMA=fma,BLOCK_M=64,BLOCK_N=8,NUM_WARPS=1"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++)
            bad += run_case(all[i], i % 2 ? DT_FP16 : DT_BF16, cfgs[c]) != ST_OK;
    for (int dt = DT_FP32; dt <= DT_BF16; dt++) {
        bad += run_case(&pre_nc, (dtype_t)dt, "MMA=fma,BLOCK_M=32,BLOCK_N=32") != ST_OK;
        bad += run_case(&dec, (dtype_t)dt, "MMA=fma,BLOCK_M=16,BLOCK_N=32") != ST_OK;
    }
    assert_int_equal(bad, 0);
    /* mixed batches (qlens): decoding and prefilling sequences in one launch, chunked
     * prefill (fewer queries than keys), on the scalar and, where present, the tensor cores */
    shape_t mix = mk_ragged(6, 4, 2, 100, 300, 64, 1, "1;0.5;0.2"), chunk = mk_ragged(4, 8, 2, 40, 90, 128, 1, "1;0.7");
    char qerr[FB_ERRLEN];
    if (shapes_parse_qlens("test", 0, "0.001;1;0.3", &mix, qerr, sizeof qerr) ||
        shapes_parse_qlens("test", 0, "0.5;0.001;1;0.001", &chunk, qerr, sizeof qerr))
        fail_msg("bad qlens: %s", qerr);
    const char *mcfgs[] = {NULL, "MMA=fma,BLOCK_M=16,BLOCK_N=16", "MMA=fma,BLOCK_M=32,BLOCK_N=8,NUM_WARPS=1"};
    for (size_t c = 0; c < sizeof mcfgs / sizeof mcfgs[0]; c++) {
        bad += run_case(&mix, DT_BF16, mcfgs[c]) != ST_OK;
        bad += run_case(&chunk, c ? DT_FP16 : DT_FP32, mcfgs[c]) != ST_OK;
    }
    if (dev.info.features & RT_FEAT_MMA_SYNC) {
        bad += run_case(&mix, DT_BF16, "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2") != ST_OK;
        bad += run_case(&chunk, DT_FP16, "MMA=mma,NUM_WARPS=4,WARP_M=2,BLOCK_M=128,BLOCK_N=32,STAGES=3") != ST_OK;
    }
    assert_int_equal(bad, 0);
    assert_int_equal(run_case(&mix, DT_FP16, "MMA=fma,BLOCK_N=16,FAULT_SKIP_LAST_TILE=1"), ST_WRONG_RESULT);
    assert_int_equal(run_case(&pre, DT_FP32, "MMA=fma,BLOCK_N=16,FAULT_SKIP_LAST_TILE=1"), ST_WRONG_RESULT);
    assert_int_equal(run_case(&dec, DT_FP16, "MMA=fma,BLOCK_N=32,FAULT_SKIP_LAST_TILE=1"), ST_WRONG_RESULT);
    assert_int_equal(run_case(&pre, DT_FP16, "MMA=mfma"), ST_UNSUPPORTED);
    assert_int_equal(run_case(&dec, DT_FP16, "SPLIT_KV=2"), ST_UNSUPPORTED);
    assert_int_equal(run_case(&dec, DT_FP16, "PACK_GQA=1"), ST_UNSUPPORTED);
    if (!(dev.info.features & RT_FEAT_MMA_SYNC)) /* where it exists, mma runs ragged batches too */
        assert_int_equal(run_case(&pre, DT_FP16, "MMA=mma"), ST_UNSUPPORTED);
}

/* A paged KV cache (PAGED): pages shuffled by the harness and named by a block table,
 * the tail of each sequence's last page NaN; decode and prefill, GQA, causal and not,
 * split-KV and GQA packing over pages, tiles smaller than a page, ragged and mixed
 * batches over pages; a kernel that ignores the block table is caught; tiles wider than
 * a page are declined. */
/* Paged shapes whose key tiles span whole pages (tensor cores load them page by page): each
 * shape with every configuration whose tile is over 2 to 8 of its pages; a last tile cut by
 * the sequence's end, split-KV, packed GQA, key warps, wgmma where the GPU has it. */
static void paged_spanning_tiles(const shape_t *const *all, size_t n, int *bad)
{
    const char *cfgs[] = {"MMA=mma,NUM_WARPS=1,BLOCK_M=16,BLOCK_N=64,STAGES=2,PACK_GQA=1,SPLIT_KV=3",
                          "MMA=mma,NUM_WARPS=2,KV_WARPS=2,BLOCK_M=16,BLOCK_N=32,STAGES=2,PACK_GQA=1",
                          "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3",
                          "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,WG_SWIZZLE=1",
                          "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_SWIZZLE=1,SPLIT_KV=2"};
    int ran = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
            kconfig kc = {0};
            char kerr[FB_ERRLEN];
            assert_int_equal(kconfig_parse(cfgs[c], &kc, kerr, sizeof kerr), 0);
            const int d = all[i]->d, tile_n = kc.block_n * kconfig_kv_warps(&kc);
            const int wgmma_d = d == 64 || d == 80 || d == 96 || d == 128 || d == 256;
            if (tile_n <= all[i]->page || (kc.mma == MMA_WGMMA && (!(dev.info.features & RT_FEAT_WGMMA) || !wgmma_d))) continue;
            *bad += run_case(all[i], DT_BF16, cfgs[c]) != ST_OK;
            ran++;
        }
    assert_true(ran >= 4);
}

static void test_paged(void **state)
{
    (void)state;
    int bad = 0;
    shape_t dec = mk(3, 8, 2, 1, 300, 64, 1), dec2 = mk(4, 4, 4, 1, 77, 128, 0);
    shape_t pre = mk(2, 4, 2, 150, 200, 64, 1), pre2 = mk(1, 2, 1, 33, 47, 32, 0), pre3 = mk(2, 2, 2, 90, 40, 96, 1);
    dec.page = 16; dec2.page = 32; pre.page = 64; pre2.page = 16; pre3.page = 32;
    const shape_t *all[] = {&dec, &dec2, &pre, &pre2, &pre3};
    const char *cfgs[] = {NULL, "MMA=fma,BLOCK_M=16,BLOCK_N=16,SPLIT_KV=3", "MMA=fma,BLOCK_M=32,BLOCK_N=8,PACK_GQA=1,SPLIT_KV=2"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++)
            bad += run_case(all[i], i % 2 ? DT_FP16 : DT_BF16, cfgs[c]) != ST_OK;
    bad += run_case(&pre, DT_FP32, "MMA=fma,BLOCK_M=16,BLOCK_N=16") != ST_OK;
    if (dev.info.features & RT_FEAT_MMA_SYNC) {
        const char *mcfgs[] = {"MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=16,STAGES=2",
                               "MMA=mma,NUM_WARPS=4,WARP_M=2,BLOCK_M=128,BLOCK_N=32,STAGES=3",
                               "MMA=mma,NUM_WARPS=1,BLOCK_M=16,BLOCK_N=16,STAGES=3,PACK_GQA=1,SPLIT_KV=4"};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            for (size_t c = 0; c < sizeof mcfgs / sizeof mcfgs[0]; c++) bad += run_case(all[i], DT_BF16, mcfgs[c]) != ST_OK;
        paged_spanning_tiles(all, sizeof all / sizeof all[0], &bad);
    }
    assert_int_equal(bad, 0);
    /* 3 x 19 pages: a shuffle that leaves every sequence in order is not a real chance */
    assert_int_equal(run_case(&dec, DT_FP16, "MMA=fma,BLOCK_N=16,FAULT_LINEAR_PAGES=1"), ST_WRONG_RESULT);
    if (dev.info.features & RT_FEAT_MMA_SYNC) /* the page-by-page load reads the table too */
        assert_int_equal(run_case(&dec, DT_FP16, "MMA=mma,NUM_WARPS=1,BLOCK_M=16,BLOCK_N=64,FAULT_LINEAR_PAGES=1"), ST_WRONG_RESULT);
    /* fma reads BLOCK_N contiguous rows: a tile must lie in one page */
    assert_int_equal(run_case(&pre, DT_BF16, "MMA=fma,BLOCK_N=128"), ST_UNSUPPORTED);
    /* ragged and mixed batches over pages: each sequence's own key count, its own pages */
    shape_t rag = mk_ragged(5, 4, 2, 70, 300, 64, 1, "0.1;0.4;0.5;1.0;0.2"), mixp = mk_ragged(6, 8, 2, 100, 300, 128, 1, "1;0.5;0.2");
    char qerr[FB_ERRLEN];
    if (shapes_parse_qlens("test", 0, "0.001;1;0.3", &mixp, qerr, sizeof qerr)) fail_msg("bad qlens: %s", qerr);
    rag.page = 16;
    mixp.page = 32;
    const char *rcfgs[] = {NULL, "MMA=fma,BLOCK_M=16,BLOCK_N=16", "MMA=fma,BLOCK_M=32,BLOCK_N=8,NUM_WARPS=1"};
    for (size_t c = 0; c < sizeof rcfgs / sizeof rcfgs[0]; c++) {
        bad += run_case(&rag, DT_FP16, rcfgs[c]) != ST_OK;
        bad += run_case(&mixp, DT_BF16, rcfgs[c]) != ST_OK;
    }
    if (dev.info.features & RT_FEAT_MMA_SYNC) {
        bad += run_case(&rag, DT_BF16, "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=16,STAGES=2") != ST_OK;
        bad += run_case(&mixp, DT_FP16, "MMA=mma,NUM_WARPS=4,WARP_M=2,BLOCK_M=128,BLOCK_N=32,STAGES=3") != ST_OK;
        /* key tiles over several of a sequence's pages */
        bad += run_case(&rag, DT_BF16, "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2") != ST_OK;
        bad += run_case(&mixp, DT_BF16, "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=128,STAGES=2") != ST_OK;
    }
    if (dev.info.features & RT_FEAT_WGMMA)
        bad += run_case(&mixp, DT_BF16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=128,STAGES=2,WG_SWIZZLE=1") != ST_OK;
    assert_int_equal(bad, 0);
    assert_int_equal(run_case(&mixp, DT_FP16, "MMA=fma,BLOCK_N=16,FAULT_LINEAR_PAGES=1"), ST_WRONG_RESULT);
}

static const int lens[] = {1, 7, 33, 129, 300};
#define NLENS (sizeof lens / sizeof lens[0])

/* Every (Sq, Skv) pair of odd lengths, causal and not, GQA 4:1. */
static void test_odd_lengths(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < NLENS; i++)
        for (size_t j = 0; j < NLENS; j++)
            for (int causal = 0; causal <= 1; causal++) {
                shape_t s = mk(1, 4, 1, lens[i], lens[j], 64, causal);
                bad += run_case(&s, DT_BF16, NULL) != ST_OK;
            }
    assert_int_equal(bad, 0);
}

/* Every head dim with every dtype, causal Sq < Skv and non-causal Sq > Skv. */
static void test_head_dims_and_dtypes(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t k = 0; k < fb_n_supported_d; k++)
        for (int dt = DT_FP32; dt <= DT_BF16; dt++) {
            shape_t a = mk(2, 2, 2, 33, 129, fb_supported_d[k], 1);
            shape_t b = mk(1, 2, 1, 129, 33, fb_supported_d[k], 0);
            bad += run_case(&a, (dtype_t)dt, NULL) != ST_OK;
            bad += run_case(&b, (dtype_t)dt, NULL) != ST_OK;
        }
    assert_int_equal(bad, 0);
}

/* GQA 8:1, MQA and MHA, causal with Sq != Skv in both directions (rows with no
 * visible key when Sq > Skv must come out as O = 0, LSE = -inf). */
static void test_gqa_mqa(void **state)
{
    (void)state;
    int bad = 0;
    const int heads[][2] = {{8, 1}, {8, 8}, {16, 2}, {6, 3}};
    for (size_t h = 0; h < 4; h++)
        for (int causal = 0; causal <= 1; causal++) {
            shape_t a = mk(2, heads[h][0], heads[h][1], 7, 300, 128, causal);
            shape_t b = mk(1, heads[h][0], heads[h][1], 300, 33, 128, causal);
            bad += run_case(&a, DT_FP16, NULL) != ST_OK;
            bad += run_case(&b, DT_FP16, NULL) != ST_OK;
            /* one work-group per KV head (PACK_GQA), with and without split-KV */
            bad += run_case(&a, DT_BF16, "PACK_GQA=1") != ST_OK;
            bad += run_case(&b, DT_FP32, "PACK_GQA=1,BLOCK_N=32") != ST_OK;
            bad += run_case(&a, DT_FP16, "PACK_GQA=1,SPLIT_KV=3,BLOCK_N=32") != ST_OK;
        }
    assert_int_equal(bad, 0);
}

/* PACK_GQA=2 and 3 (64-row stripes of a KV head's query heads, positions ascending or
 * descending): causal with Sq < Skv and Sq > Skv, non-causal, GQA 4:1 and MQA, split-KV, both
 * block heights they allow, the longest-first launch order, mma_sync where the device has it;
 * refused (not run) where Sq or BLOCK_M is not a multiple of 64. */
static void test_pack_stripes(void **state)
{
    (void)state;
    int bad = 0;
    const int heads[][2] = {{8, 2}, {8, 1}, {6, 3}};
    const char *cfgs[] = {"MMA=fma,BLOCK_M=64,BLOCK_N=32", "MMA=fma,BLOCK_M=128,BLOCK_N=16,SPLIT_KV=3,GRID_LPT=1",
                          "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2"};
    for (int pack = 2; pack <= 3; pack++)
        for (size_t h = 0; h < 3; h++)
            for (int causal = 0; causal <= 1; causal++)
                for (size_t c = 0; c < 3; c++) {
                    if (c == 2 && !(dev.info.features & RT_FEAT_MMA_SYNC)) continue;
                    char cfg[160];
                    snprintf(cfg, sizeof cfg, "PACK_GQA=%d,%s", pack, cfgs[c]);
                    shape_t a = mk(2, heads[h][0], heads[h][1], 192, 300, 64, causal);
                    shape_t b = mk(1, heads[h][0], heads[h][1], 320, 100, 128, causal);
                    bad += run_case(&a, c == 2 ? DT_BF16 : DT_FP32, cfg) != ST_OK;
                    bad += run_case(&b, DT_FP16, cfg) != ST_OK;
                }
    assert_int_equal(bad, 0);
    shape_t odd = mk(1, 8, 2, 100, 100, 64, 1), ok = mk(1, 8, 2, 128, 128, 64, 1);
    assert_int_equal(run_case(&odd, DT_FP32, "PACK_GQA=2,MMA=fma,BLOCK_M=64"), ST_UNSUPPORTED);
    assert_int_equal(run_case(&odd, DT_FP32, "PACK_GQA=3,MMA=fma,BLOCK_M=64"), ST_UNSUPPORTED);
    assert_int_equal(run_case(&ok, DT_FP32, "PACK_GQA=2,MMA=fma,BLOCK_M=32"), ST_UNSUPPORTED);
    /* a packed block that skips its last key tile must be caught, in either order */
    assert_int_equal(run_case(&ok, DT_FP32, "PACK_GQA=2,MMA=fma,BLOCK_M=64,BLOCK_N=16,FAULT_SKIP_LAST_TILE=1"), ST_WRONG_RESULT);
    assert_int_equal(run_case(&ok, DT_FP32, "PACK_GQA=3,MMA=fma,BLOCK_M=128,BLOCK_N=16,FAULT_SKIP_LAST_TILE=1"), ST_WRONG_RESULT);
}

/* SPLIT_FUSE: the last split of each query block merges the partial rows in the same
 * launch. Decode (packed GQA, several query rows, MHA), short causal prefill with splits
 * that see no key, a paged cache, every dtype, fma and (where the device has it) mma, and
 * split counts above the tile count. The repeated, timed launches must merge too: one
 * whose counts are never reset (FAULT_FUSE_KEEP) merges only in its first launch and is
 * caught by the check after the timed runs, which start from a poisoned O. Without a
 * split there is nothing to merge. */
static void test_split_fuse(void **state)
{
    (void)state;
    int bad = 0;
    shape_t dec = mk(3, 8, 2, 1, 300, 128, 1), dec4 = mk(2, 8, 2, 4, 520, 80, 1), mha = mk(2, 4, 4, 1, 333, 64, 0);
    shape_t pre = mk(1, 4, 4, 33, 300, 64, 1), pg = mk(3, 8, 2, 1, 300, 64, 1);
    pg.page = 32;
    const shape_t *all[] = {&dec, &dec4, &mha, &pre, &pg};
    const char *cfgs[] = {"SPLIT_FUSE=1,SPLIT_KV=2,BLOCK_N=32", "SPLIT_FUSE=1,SPLIT_KV=3,BLOCK_N=16,BLOCK_M=16",
                          "SPLIT_FUSE=1,SPLIT_KV=12,BLOCK_N=32,MMA=fma"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++)
            bad += run_case(all[i], (dtype_t)((i + c) % 3), cfgs[c]) != ST_OK;
    if (dev.info.features & RT_FEAT_MMA_SYNC) {
        const char *mcfgs[] = {"MMA=mma,NUM_WARPS=1,BLOCK_M=16,BLOCK_N=16,STAGES=2,PACK_GQA=1,SPLIT_KV=4,SPLIT_FUSE=1",
                               "MMA=mma,NUM_WARPS=1,BLOCK_M=16,BLOCK_N=32,STAGES=3,SPLIT_KV=6,SPLIT_FUSE=1,RED_SPLIT=1"};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            for (size_t c = 0; c < sizeof mcfgs / sizeof mcfgs[0]; c++) bad += run_case(all[i], DT_BF16, mcfgs[c]) != ST_OK;
    }
    assert_int_equal(bad, 0);
    assert_int_equal(run_case(&dec, DT_BF16, "SPLIT_FUSE=1,SPLIT_KV=1"), ST_UNSUPPORTED);
    /* timed: the repeated launches are compared with the verified one */
    const attn_opts keep = opts;
    opts.verify_only = 0;
    opts.timing.warmup_s = 0;
    opts.timing.budget_s = 0.001;
    opts.timing.min_reps = 3;
    const status_t good = run_case(&dec, DT_FP16, "SPLIT_FUSE=1,SPLIT_KV=3,BLOCK_N=32");
    const status_t kept = run_case(&dec, DT_FP16, "SPLIT_FUSE=1,SPLIT_KV=3,BLOCK_N=32,FAULT_FUSE_KEEP=1");
    opts = keep;
    assert_int_equal(good, ST_OK);
    assert_int_equal(kept, ST_WRONG_RESULT);
}

/* KV_WARPS (mma only): several warps share a group of query rows, each taking its own
 * BLOCK_N keys of every tile, and merge through shared memory. Decode (packed GQA, several
 * query rows, MHA), causal prefill whose last tile leaves some warps no key, non-causal
 * with Sq past a block, ragged batches, WARP_M = 2, split-KV with the fuse, and the untuned
 * default (four key warps for decode up to d = 128); elsewhere it is declined. */
static void test_kv_warps(void **state)
{
    (void)state;
    shape_t dec = mk(3, 8, 2, 1, 300, 128, 1);
    assert_int_equal(run_case(&dec, DT_BF16, "MMA=fma,KV_WARPS=2"), ST_UNSUPPORTED);
    if (!(dev.info.features & RT_FEAT_MMA_SYNC)) {
        fprintf(stderr, "  KV_WARPS runs on mma only: no tensor cores on this device\n");
        return;
    }
    int bad = 0;
    shape_t dec4 = mk(2, 8, 2, 4, 520, 80, 1), mha = mk(2, 4, 4, 1, 333, 64, 0), pre = mk(1, 4, 4, 33, 300, 64, 1);
    shape_t nc = mk(1, 2, 1, 129, 300, 96, 0), big = mk(1, 4, 1, 1, 4100, 256, 1);
    shape_t rag = mk_ragged(5, 4, 2, 70, 70, 64, 1, "0.1;0.4;1");
    const shape_t *all[] = {&dec, &dec4, &mha, &pre, &nc, &big, &rag};
    const char *cfgs[] = {"MMA=mma,NUM_WARPS=4,KV_WARPS=4,BLOCK_M=16,BLOCK_N=16,STAGES=2",
                          "MMA=mma,NUM_WARPS=4,KV_WARPS=2,BLOCK_M=32,BLOCK_N=32,STAGES=2,RED_SPLIT=1",
                          "MMA=mma,NUM_WARPS=2,KV_WARPS=2,WARP_M=2,BLOCK_M=32,BLOCK_N=32,STAGES=2,MASK_BOUND=1",
                          "MMA=mma,NUM_WARPS=4,KV_WARPS=4,BLOCK_M=16,BLOCK_N=16,STAGES=3,SPLIT_KV=3,SPLIT_FUSE=1",
                          "MMA=mma"}; /* the untuned default: key warps for decode up to d = 128 */
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
            if (shape_ragged(all[i]) && strstr(cfgs[c], "SPLIT_KV=3")) continue; /* ragged: no split */
            bad += run_case(all[i], (dtype_t)(1 + (i + c) % 2), cfgs[c]) != ST_OK;
        }
    assert_int_equal(bad, 0);
    shape_t pg = dec;
    pg.page = 32;
    assert_int_equal(run_case(&pg, DT_BF16, "MMA=mma,NUM_WARPS=2,KV_WARPS=2,BLOCK_M=16,BLOCK_N=16"), ST_UNSUPPORTED);
}

/* Split-KV (flash-decoding) with several split counts, decode and short prefill. */
static void test_split_kv(void **state)
{
    (void)state;
    int bad = 0;
    const char *cfgs[] = {"SPLIT_KV=1,BLOCK_N=32", "SPLIT_KV=2,BLOCK_N=32", "SPLIT_KV=3,BLOCK_N=32",
                          "SPLIT_KV=10,BLOCK_N=32", "SPLIT_KV=5,BLOCK_N=16,BLOCK_M=16"};
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++)
        for (int dt = DT_FP32; dt <= DT_BF16; dt++) {
            shape_t dec = mk(3, 8, 2, 1, 300, 128, 1);
            shape_t pre = mk(1, 4, 4, 33, 300, 64, 1);
            shape_t nc = mk(1, 2, 1, 129, 300, 96, 0);
            bad += run_case(&dec, (dtype_t)dt, cfgs[c]) != ST_OK;
            bad += run_case(&pre, (dtype_t)dt, cfgs[c]) != ST_OK;
            bad += run_case(&nc, (dtype_t)dt, cfgs[c]) != ST_OK;
        }
    assert_int_equal(bad, 0);
}

/* GRID_LPT=1 (the launch order read longest first): every query block of every head is
 * computed exactly once, whatever the grid's shape: causal and not, GQA packing,
 * split-KV, a block count that does not divide evenly, decode; the tensor-core path where
 * the device has one. Every output element is checked.
 * Ragged and paged batches decline it. */
static void test_grid_lpt(void **state)
{
    (void)state;
    int bad = 0;
    shape_t a = mk(2, 4, 2, 200, 200, 64, 1), b = mk(1, 6, 3, 77, 300, 128, 1), c = mk(3, 2, 2, 150, 90, 32, 0);
    shape_t dec = mk(4, 8, 2, 1, 300, 128, 1);
    const char *cfgs[] = {"GRID_LPT=1,MMA=fma,BLOCK_M=16,BLOCK_N=32", "GRID_LPT=1,MMA=fma,BLOCK_M=32,BLOCK_N=16,PACK_GQA=1",
                          "GRID_LPT=1,MMA=fma,BLOCK_M=16,BLOCK_N=32,SPLIT_KV=3",
                          /* sections of 3 groups: 8 groups end in a short one, 6 in two whole ones */
                          "GRID_LPT=3,MMA=fma,BLOCK_M=16,BLOCK_N=32", "GRID_LPT=5,MMA=fma,BLOCK_M=32,BLOCK_N=16,SPLIT_KV=2",
                          "GRID_LPT=1,MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2"};
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        if (strstr(cfgs[i], "MMA=mma") && !(dev.info.features & RT_FEAT_MMA_SYNC)) continue;
        const dtype_t dt = strstr(cfgs[i], "MMA=mma") ? DT_BF16 : DT_FP32;
        bad += run_case(&a, dt, cfgs[i]) != ST_OK;
        bad += run_case(&b, dt, cfgs[i]) != ST_OK;
        bad += run_case(&c, dt, cfgs[i]) != ST_OK;
        bad += run_case(&dec, dt, cfgs[i]) != ST_OK;
    }
    assert_int_equal(bad, 0);
    shape_t rag = mk_ragged(3, 2, 1, 100, 100, 64, 1, "0.3;1;0.6");
    assert_int_equal(run_case(&rag, DT_FP32, "GRID_LPT=1,MMA=fma"), ST_UNSUPPORTED);
    cases_run--; /* declined, not verified */
}

/* Thread mappings: several threads per row, one row per thread, several rows per thread. */
static void test_thread_mappings(void **state)
{
    (void)state;
    int bad = 0;
    const char *cfgs[] = {"MMA=fma,BLOCK_M=16,BLOCK_N=16,NUM_WARPS=1", "MMA=fma,BLOCK_M=128,BLOCK_N=16,NUM_WARPS=2",
                          "MMA=fma,BLOCK_M=32,BLOCK_N=128,NUM_WARPS=8", "MMA=fma,BLOCK_M=64,BLOCK_N=8,NUM_WARPS=4,KPAD=0",
                          "MMA=fma,BLOCK_M=1,BLOCK_N=64,NUM_WARPS=1"};
    int before = cases_run;
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        shape_t a = mk(1, 2, 1, 129, 129, 80, 1);
        shape_t b = mk(1, 2, 2, 300, 7, 32, 0);
        bad += run_case(&a, DT_BF16, cfgs[c]) != ST_OK;
        bad += run_case(&b, DT_FP32, cfgs[c]) != ST_OK;
    }
    assert_int_equal(bad, 0);
    assert_true(cases_run - before >= 6); /* most mappings fit any device */
}

/* Tensor-core tiles (MMA=mma) where the device has them: warps, tile widths, pipeline
 * depths, every head dim, both 16-bit types, split-KV, causal tails. */
static void test_mma_sync(void **state)
{
    (void)state;
    if (!(dev.info.features & RT_FEAT_MMA_SYNC))
        SKIP_BECAUSE("%s:%d (%s) has no tensor-core tiles (mma.sync; an NVIDIA GPU from sm_80 on has)", dev.rt->name,
                     dev.index, dev.info.name);
    int bad = 0, before = cases_run;
    const char *cfgs[] = {"MMA=mma,NUM_WARPS=1,BLOCK_M=16,BLOCK_N=16,STAGES=1",
                          "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2",
                          "MMA=mma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=32,STAGES=3",
                          "MMA=mma,NUM_WARPS=2,BLOCK_M=32,BLOCK_N=128,STAGES=2",
                          "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=32,STAGES=4,SPLIT_KV=3",
                          "MMA=mma,NUM_WARPS=4,WARP_M=2,BLOCK_M=128,BLOCK_N=32,STAGES=2",
                          "MMA=mma,NUM_WARPS=2,WARP_M=2,BLOCK_M=64,BLOCK_N=64,STAGES=3,PACK_GQA=1",
                          "MMA=mma,NUM_WARPS=4,WARP_M=2,BLOCK_M=128,BLOCK_N=64,STAGES=2",
                          "MMA=mma,NUM_WARPS=8,WARP_M=1,BLOCK_M=128,BLOCK_N=128,STAGES=2"};
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++)
        for (size_t k = 0; k < fb_n_supported_d; k++)
            for (int dt = DT_FP16; dt <= DT_BF16; dt++) {
                shape_t a = mk(1, 4, 2, 129, 300, fb_supported_d[k], (int)((c + k) & 1));
                shape_t b = mk(2, 2, 1, 300, 33, fb_supported_d[k], 1);
                bad += run_case(&a, (dtype_t)dt, cfgs[c]) != ST_OK;
                bad += run_case(&b, (dtype_t)dt, cfgs[c]) != ST_OK;
            }
    for (size_t i = 0; i < NLENS; i++)
        for (size_t j = 0; j < NLENS; j++) {
            shape_t s = mk(1, 8, 1, lens[i], lens[j], 128, (int)((i + j) & 1));
            bad += run_case(&s, DT_BF16, "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2") != ST_OK;
            bad += run_case(&s, DT_FP16, "MMA=mma,NUM_WARPS=1,BLOCK_M=16,BLOCK_N=64,STAGES=2,PACK_GQA=1,SPLIT_KV=4") != ST_OK;
        }
    assert_int_equal(bad, 0);
    assert_true(cases_run - before >= 60);
    /* ragged batches (VARLEN) on the tensor cores */
    const char *varied = "0.1;0.4;0.5;1.0;0.2";
    shape_t rp = mk_ragged(5, 4, 2, 200, 200, 128, 1, varied), rd = mk_ragged(5, 8, 2, 1, 300, 64, 1, varied);
    shape_t rn = mk_ragged(4, 2, 1, 90, 150, 96, 0, "0.3;1;0.05");
    bad += run_case(&rp, DT_FP16, "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2") != ST_OK;
    bad += run_case(&rp, DT_BF16, "MMA=mma,NUM_WARPS=4,WARP_M=2,BLOCK_M=128,BLOCK_N=32,STAGES=3") != ST_OK;
    bad += run_case(&rd, DT_BF16, "MMA=mma,NUM_WARPS=1,BLOCK_M=16,BLOCK_N=64,STAGES=2") != ST_OK;
    bad += run_case(&rn, DT_FP16, "MMA=mma,NUM_WARPS=2,BLOCK_M=32,BLOCK_N=16,STAGES=1") != ST_OK;
    assert_int_equal(bad, 0);
    assert_int_equal(run_case(&rp, DT_FP16, "MMA=mma,FAULT_SKIP_LAST_TILE=1,BLOCK_N=32"), ST_WRONG_RESULT);
    /* and a wrong tensor-core kernel is caught too */
    shape_t w = mk(1, 2, 2, 33, 300, 128, 0);
    assert_int_equal(run_case(&w, DT_BF16, "MMA=mma,FAULT_SKIP_LAST_TILE=1,BLOCK_N=32"), ST_WRONG_RESULT);
}

/* A kernel that skips the last key tile must be caught, with and without split-KV. */
static void test_wrong_kernel_is_caught(void **state)
{
    (void)state;
    shape_t a = mk(1, 2, 2, 33, 300, 64, 0);
    assert_int_equal(run_case(&a, DT_BF16, "FAULT_SKIP_LAST_TILE=1,BLOCK_N=32"), ST_WRONG_RESULT);
    shape_t b = mk(2, 4, 1, 1, 300, 128, 1);
    assert_int_equal(run_case(&b, DT_FP16, "FAULT_SKIP_LAST_TILE=1,BLOCK_N=32,SPLIT_KV=3"), ST_WRONG_RESULT);
    shape_t c = mk(1, 1, 1, 7, 7, 32, 0); /* the only tile: nothing written but zeros */
    assert_int_equal(run_case(&c, DT_FP32, "FAULT_SKIP_LAST_TILE=1"), ST_WRONG_RESULT);
    /* and the same shapes pass without the fault */
    assert_int_equal(run_case(&a, DT_BF16, "BLOCK_N=32"), ST_OK);
    assert_int_equal(run_case(&b, DT_FP16, "BLOCK_N=32,SPLIT_KV=3"), ST_OK);
}

/* A configuration the device cannot hold is recorded, not crashed on. */
static void test_resource_limit_recorded(void **state)
{
    (void)state;
    shape_t s = mk(1, 1, 1, 16, 16, 256, 0);
    kconfig c = {0};
    char err[FB_ERRLEN];
    assert_int_equal(kconfig_parse("NUM_WARPS=32", &c, err, sizeof err), 0);
    attn_result res;
    /* 1024 threads: allowed on PoCL; 4096 surely not: */
    c.num_warps = 256;
    c.set |= CFG(NUM_WARPS);
    assert_int_equal(attn_run(runner, &s, DT_FP32, &c, &opts, &res, err, sizeof err), 0);
    assert_true(res.status == ST_RESOURCE_LIMIT || res.status == ST_UNSUPPORTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrong_kernel_is_caught),
        cmocka_unit_test(test_odd_lengths),
        cmocka_unit_test(test_head_dims_and_dtypes),
        cmocka_unit_test(test_gqa_mqa),
        cmocka_unit_test(test_pack_stripes),
        cmocka_unit_test(test_split_kv),
        cmocka_unit_test(test_split_fuse),
        cmocka_unit_test(test_kv_warps),
        cmocka_unit_test(test_thread_mappings),
        cmocka_unit_test(test_grid_lpt),
        cmocka_unit_test(test_mma_sync),
        cmocka_unit_test(test_resource_limit_recorded),
        cmocka_unit_test(test_ragged),
        cmocka_unit_test(test_paged),
    };
    /* FABENCH_TEST_FILTER: run only the tests whose names match (a cmocka glob) */
    const char *filter = getenv("FABENCH_TEST_FILTER");
    if (filter && *filter) cmocka_set_test_filter(filter);
    return cmocka_run_group_tests(tests, setup, teardown);
}
