/* test_tune.c: the search space file, enumeration, shape-class keys, the tuning-table
 * lookup (exact, nearest, default), and `fabench tune` end to end on the first OpenCL
 * device: verified candidates, explored.csv and tuning.csv, and a resume that redoes nothing. */
#define _GNU_SOURCE
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "attn.h"
#include "cache.h"
#include "csvio.h"
#include "space.h"
#include "tune.h"
#include "tune_missing.h"

static char tmpdir[256];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static shape_t mk(int b, int hq, int hkv, int sq, int skv, int d, int causal)
{
    shape_t s = {.batch = b, .hq = hq, .hkv = hkv, .sq = sq, .skv = skv, .d = d, .causal = causal};
    snprintf(s.name, sizeof s.name, "t");
    return s;
}

static void test_space_errors(void **state)
{
    (void)state;
    char p[512], err[FB_ERRLEN];
    space_t sp;
    struct { const char *text, *want; } cases[] = {
        {"param,value,when\nBLOCK_Q,16,\n", "field 'param'"},
        {"param,value,when\nBLOCK_M,17,\n", "field 'value'"},
        {"param,value,when\nMMA,tcgen05,\n", "field 'value'"},
        {"param,value,when\nBLOCK_M,16,sometimes\n", "field 'when'"},
        {"param,value,when\nBLOCK_M,16,BLOCK_Q=1\n", "field 'when'"}, /* a condition on no parameter */
        {"param,value,when\nBLOCK_M,16,d<=\n", "field 'when'"},      /* a head-dim bound without a number */
        {"param,value,when\nBLOCK_M,16,d<=6x4\n", "field 'when'"},
        {"param,value\nBLOCK_M,16\n", ":1:"},
        {"param,value,when\n", "no parameters"},
    };
    snprintf(p, sizeof p, "%s/space.csv", tmpdir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(p, cases[i].text);
        assert_int_equal(space_load(p, &sp, err, sizeof err), FB_EXIT_BADINPUT);
        if (!strstr(err, cases[i].want) || !strstr(err, p)) fail_msg("case %zu: '%s' lacks '%s'", i, err, cases[i].want);
    }
    write_file(p, "param,value,when\nBLOCK_M,16,\nBLOCK_M,32,\nBLOCK_N,16,\n");
    assert_int_equal(space_load(p, &sp, err, sizeof err), 0);
    assert_int_equal(sp.nparams, 2);
    assert_int_equal(sp.p[0].nvalues, 2);
    /* a condition on another parameter's value: BLOCK_N=64 only with BLOCK_M=32 */
    write_file(p, "param,value,when\nBLOCK_M,16,\nBLOCK_M,32,\nBLOCK_N,16,\nBLOCK_N,64,BLOCK_M=32\n");
    assert_int_equal(space_load(p, &sp, err, sizeof err), 0);
    rt_device_info cpu = {.compute_units = 2, .max_group_size = 4096, .shared_bytes = 512 * 1024,
                          .static_shared_bytes = 512 * 1024};
    shape_t pre = mk(1, 2, 2, 256, 256, 64, 0);
    kconfig *c;
    long before, n = space_enumerate(&sp, &cpu, &pre, DT_FP32, &c, &before);
    assert_int_equal(before, 3);
    for (long i = 0; i < n; i++) assert_true(c[i].block_n == 16 || c[i].block_m == 32);
    free(c);
    /* conditions on later parameters, two values asking for different ones (BLOCK_M=32 wants
     * BLOCK_N=64, NUM_WARPS=2 wants BLOCK_N=16: never together), a parameter the space does
     * not have (no condition) and a value it does not list (never): by hand, 7 combinations */
    write_file(p, "param,value,when\nBLOCK_M,16,\nBLOCK_M,32,BLOCK_N=64\nNUM_WARPS,1,\nNUM_WARPS,2,BLOCK_N=16&STAGES=2\n"
                  "BLOCK_N,16,\nBLOCK_N,64,\nSTAGES,1,\nSTAGES,2,\nKPAD,0,WG_PIPE=1\nSPLIT_KV,1,\nSPLIT_KV,2,STAGES=3\n");
    assert_int_equal(space_load(p, &sp, err, sizeof err), 0);
    n = space_enumerate(&sp, &cpu, &pre, DT_FP32, &c, &before);
    assert_int_equal(before, 7);
    assert_true(n > 0 && n <= 7);
    for (long i = 0; i < n; i++) {
        assert_true(c[i].block_m == 16 || c[i].block_n == 64);
        assert_true(c[i].num_warps == 1 || (c[i].block_n == 16 && c[i].stages == 2));
        assert_int_equal(c[i].split_kv, 1);
    }
    free(c);
    /* a value listed twice under different conditions (BLOCK_N=16 for either BLOCK_M): a
     * condition naming it holds for both listings, so NUM_WARPS=2 joins both BLOCK_Ms */
    write_file(p, "param,value,when\nBLOCK_M,16,\nBLOCK_M,32,\nBLOCK_N,16,BLOCK_M=16\nBLOCK_N,16,BLOCK_M=32\n"
                  "NUM_WARPS,1,\nNUM_WARPS,2,BLOCK_N=16\n");
    assert_int_equal(space_load(p, &sp, err, sizeof err), 0);
    n = space_enumerate(&sp, &cpu, &pre, DT_FP32, &c, &before);
    assert_int_equal(before, 4);
    long nw2 = 0;
    for (long i = 0; i < n; i++) nw2 += c[i].num_warps == 2 && c[i].block_m == 32;
    assert_int_equal(nw2, 1);
    free(c);
    /* a bound on the head dim: NUM_WARPS=2 only where d <= 64 */
    write_file(p, "param,value,when\nBLOCK_M,16,\nNUM_WARPS,1,\nNUM_WARPS,2,d<=64\n");
    assert_int_equal(space_load(p, &sp, err, sizeof err), 0);
    for (int d = 64; d <= 128; d += 64) {
        shape_t sh = mk(1, 2, 2, 256, 256, d, 0);
        n = space_enumerate(&sp, &cpu, &sh, DT_FP32, &c, &before);
        assert_int_equal(before, d == 64 ? 2 : 1);
        for (long i = 0; i < n; i++) assert_true(d == 64 || c[i].num_warps == 1);
        free(c);
    }
}

/* The shipped space: at least the paper's 450 configurations before constraints for a d=128
 * bf16 class on a GPU with tensor cores; conditions respected; every candidate passes the
 * static checks and is unique. */
static void test_space_enumerate(void **state)
{
    (void)state;
    char err[FB_ERRLEN];
    space_t sp;
    int lrc = space_load_default(&sp, err, sizeof err);
    if (lrc) fprintf(stderr, "%s\n", err);
    assert_int_equal(lrc, 0);
    rt_device_info h200 = {.compute_units = 132, .max_group_size = 1024, .shared_bytes = 227 * 1024,
                           .static_shared_bytes = 48 * 1024, .features = RT_FEAT_MMA_SYNC};
    shape_t pre = mk(4, 32, 32, 4096, 4096, 128, 1);
    kconfig *c;
    long before;
    long n = space_enumerate(&sp, &h200, &pre, DT_BF16, &c, &before);
    print_message("d128 bf16 prefill on an sm_90-like device: %ld in the space, %ld fit\n", before, n);
    assert_true(before >= 450);
    assert_true(n > 50 && n <= before);
    int mma = 0;
    for (long i = 0; i < n; i++) {
        char reason[256], a[KCONFIG_STR_MAX], b[KCONFIG_STR_MAX];
        assert_int_equal(kconfig_check(&c[i], &h200, &pre, DT_BF16, reason, sizeof reason), ST_OK);
        assert_int_equal(c[i].split_kv, 1); /* SPLIT_KV > 1 is for decode only */
        assert_int_equal(c[i].pack_gqa, 0); /* no GQA here */
        mma += c[i].mma == MMA_SYNC;
        kconfig_str(&c[i], a, sizeof a);
        for (long j = 0; j < i; j++) {
            kconfig_str(&c[j], b, sizeof b);
            assert_string_not_equal(a, b);
        }
    }
    assert_true(mma > 0);
    free(c);
    /* the order: the device's default configuration first, the rest of its MMA kind, then
     * the other tensor-core kinds, fma last (what a search cut short by --time has tried) */
    rt_device_info hop = h200;
    hop.features |= RT_FEAT_WGMMA;
    const rt_device_info *devs[2] = {&h200, &hop};
    for (int k = 0; k < 2; k++) {
        n = space_enumerate(&sp, devs[k], &pre, DT_BF16, &c, &before);
        assert_true(n > 2);
        kconfig d = {0};
        kconfig_complete(&d, devs[k], &pre, DT_BF16);
        assert_int_equal(d.mma, k ? MMA_WGMMA : MMA_SYNC);
        char a[KCONFIG_STR_MAX], b[KCONFIG_STR_MAX];
        kconfig_str(&c[0], a, sizeof a);
        kconfig_str(&d, b, sizeof b);
        assert_string_equal(a, b);
        int rank_prev = 0;
        for (long i = 0; i < n; i++) {
            int rank = c[i].mma == d.mma ? 0 : c[i].mma != MMA_FMA ? 1 : 2;
            assert_true(rank >= rank_prev);
            rank_prev = rank;
        }
        assert_int_equal(c[n - 1].mma, MMA_FMA);
        free(c);
    }
    /* with the copy engine (an sm_90 driver that encodes tensor maps): wgmma candidates
     * with WG_TMA and with WG_WS, each passing the checks (WG_WS only over WG_TMA; with
     * WG_PIPE on two stages or more; WG_PINGPONG only beside WG_WS and two consumer
     * warpgroups); key tiles of 176 and 192 only with wgmma; without it, none of these */
    rt_device_info tma = hop;
    tma.features |= RT_FEAT_TMA;
    for (int k = 0; k < 2; k++) {
        n = space_enumerate(&sp, k ? &tma : &hop, &pre, DT_BF16, &c, &before);
        long ntma = 0, nws = 0, nwspipe = 0, npp = 0, nodd = 0, nlpt = 0;
        for (long i = 0; i < n; i++) {
            ntma += c[i].wg_tma;
            nws += c[i].wg_ws;
            nwspipe += c[i].wg_ws && c[i].wg_pipe;
            npp += c[i].wg_pingpong;
            nodd += c[i].block_n == 176 || c[i].block_n == 192;
            nlpt += c[i].grid_lpt;
            if (c[i].wg_ws) assert_true(c[i].wg_tma && c[i].mma == MMA_WGMMA && (!c[i].wg_pipe || c[i].stages >= 2));
            if (c[i].wg_pingpong) assert_true(c[i].wg_ws && (c[i].num_warps == 8 || c[i].num_warps == 12));
            if (c[i].num_warps == 12) assert_int_equal(c[i].block_m, 192); /* three consumer warpgroups */
            if (c[i].block_n == 176 || c[i].block_n == 192) assert_int_equal(c[i].mma, MMA_WGMMA);
        }
        print_message("%s: %ld of %ld fit, %ld WG_TMA, %ld WG_WS (%ld with WG_PIPE), %ld WG_PINGPONG, %ld with 176 or 192 keys\n",
                      k ? "with TMA" : "without TMA", n, before, ntma, nws, nwspipe, npp, nodd);
        if (k) assert_true(ntma > 10 && nws > 5 && nws < ntma && nwspipe > 0 && npp > 0 && npp < nws);
        else assert_true(ntma == 0 && nws == 0 && npp == 0);
        assert_true(nodd > 0);
        assert_true(nlpt > 0 && nlpt < n); /* a causal prefill class: both launch orders */
        free(c);
    }
    /* d = 64: three consumer warpgroups (NUM_WARPS=12, 192-row blocks) join, with and
     * without ping-pong among them, every one passing the checks */
    {
        shape_t d64 = mk(4, 32, 8, 4096, 4096, 64, 1);
        n = space_enumerate(&sp, &tma, &d64, DT_BF16, &c, &before);
        long n3 = 0, n3pp = 0;
        for (long i = 0; i < n; i++) {
            if (c[i].num_warps != 12) continue;
            char reason[256];
            assert_int_equal(c[i].mma, MMA_WGMMA);
            assert_int_equal(c[i].block_m, 192);
            assert_true(c[i].block_n <= 128); /* 176 or 192 keys would spill at 160 registers */
            assert_int_equal(kconfig_check(&c[i], &tma, &d64, DT_BF16, reason, sizeof reason), ST_OK);
            n3++;
            n3pp += c[i].wg_pingpong;
        }
        print_message("d64 bf16 causal GQA prefill with TMA: %ld of %ld fit, %ld with three consumer warpgroups (%ld ping-pong)\n",
                      n, before, n3, n3pp);
        assert_true(n3 > 0 && n3pp > 0 && n3pp < n3);
        free(c);
    }
    /* fp32 or no tensor cores: no mma candidates */
    rt_device_info cpu = {.compute_units = 2, .max_group_size = 4096, .shared_bytes = 512 * 1024,
                          .static_shared_bytes = 512 * 1024};
    shape_t dec = mk(8, 32, 8, 1, 4096, 128, 1);
    n = space_enumerate(&sp, &cpu, &dec, DT_BF16, &c, &before);
    int split = 0, pack = 0;
    for (long i = 0; i < n; i++) {
        assert_int_equal(c[i].mma, MMA_FMA);
        assert_int_equal(c[i].grid_lpt, 0); /* decode: one query block, no order to choose */
        split |= c[i].split_kv > 1;
        pack |= c[i].pack_gqa;
    }
    assert_true(split && pack);
    free(c);
}

/* The longest text a configuration has (every key set, the widest values) fits the buffers
 * sized KCONFIG_STR_MAX and reads back as the same configuration: a name cut short would be
 * recorded as another configuration (explored.csv once held "...;RED_" that way). */
static void test_config_text_longest(void **state)
{
    (void)state;
    const char *all = "MMA=wgmma;BLOCK_M=128;BLOCK_N=192;NUM_WARPS=32;WARP_M=1;STAGES=4;SPLIT_KV=256;PACK_GQA=1;KPAD=8;"
                      "WG_PIPE=1;WG_SWIZZLE=1;WG_TMA=1;WG_WS=1;WG_PINGPONG=1;WG_KVSPLIT=1;WG_PERSIST=1;WG_DEFER=1;"
                      "WG_PVTURN=1;WG_DYNAMIC=1;WG_QEARLY=1;WG_QPREFETCH=1;WG_HOLDPV=1;WG_SINFLIGHT=1;WG_OSTAGE=1;"
                      "WG_QTMA=1;WG_OTMA=1;WG_SKIP=1;WG_HALF=2;RED_SPLIT=1;MASK_BOUND=1;GRID_LPT=4096;SPLIT_FUSE=1;KV_WARPS=8";
    kconfig c = {0}, back = {0};
    char err[256], a[KCONFIG_STR_MAX], b[KCONFIG_STR_MAX];
    if (kconfig_parse(all, &c, err, sizeof err) != 0) fail_msg("%s", err);
    kconfig_str(&c, a, sizeof a);
    assert_true(strlen(a) > 256); /* longer than the buffers were */
    assert_true(strlen(a) < KCONFIG_STR_MAX - 64);
    assert_string_equal(a, all);
    assert_int_equal(kconfig_parse(a, &back, err, sizeof err), 0);
    kconfig_str(&back, b, sizeof b);
    assert_string_equal(a, b);
    assert_int_equal(kconfig_distance(&c, &back), 0);
    /* and its kernel defines: every switch there, none cut short, within the table */
    c.fault_skip_last_tile = 1;
    shape_t s = {.batch = 1, .hq = 8, .hkv = 2, .sq = 128, .skv = 128, .d = 128, .causal = 1};
    char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN];
    int nd = attn_defines(&s, DT_BF16, &c, 1, defs);
    assert_true(nd >= 35 && nd <= ATTN_MAX_DEFINES);
    const char *want[] = {"WG_QTMA=1", "WG_OTMA=1", "WG_SKIP=1", "WG_HALF=2", "MASK_BOUND=1", "WG_OSTAGE=1", "WG_SINFLIGHT=1", "RED_SPLIT=1", "GRID_LPT=4096",
                          "SPLIT_FUSE=1", "KV_WARPS=8", "FAULT_SKIP_LAST_TILE=1", "ARCH_SPECIFIC=1", "WG_SWIZZLE=1"};
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        int found = 0;
        for (int i = 0; i < nd; i++) found |= !strcmp(defs[i], want[w]);
        if (!found) fail_msg("%s missing from the defines", want[w]);
    }
}

/* The default SPLIT_KV (no tuned row): decode fills the device four times over; prefill
 * splits only a grid that leaves compute units idle, into at most one wave, and never
 * past the key tiles. */
/* KV_WARPS given alone is a --config like any other key: its CFG_ bit is set, and an
 * overlay onto a tuned row carries it (and leaves a row's own KV_WARPS where not given). */
static void test_kv_warps_overlay(void **state)
{
    (void)state;
    char err[256];
    kconfig user = {0}, row = {0}, other = {0};
    assert_int_equal(kconfig_parse("KV_WARPS=4", &user, err, sizeof err), 0);
    assert_true(user.set & CFG(KV_WARPS));
    assert_int_equal(kconfig_parse("MMA=mma;NUM_WARPS=1;BLOCK_M=16", &row, err, sizeof err), 0);
    kconfig_overlay(&row, &user);
    assert_int_equal(kconfig_kv_warps(&row), 4);
    assert_int_equal(row.num_warps, 1);
    assert_int_equal(kconfig_parse("NUM_WARPS=2", &other, err, sizeof err), 0);
    kconfig_overlay(&row, &other);
    assert_int_equal(kconfig_kv_warps(&row), 4);
    assert_int_equal(row.num_warps, 2);
}

static void test_fault_overlay(void **state)
{
    (void)state;
    char err[256];
    kconfig hook = {0}, row = {0};
    /* a --config of test hooks only is still a --config: run labels it so, and --tuned lays it over the row */
    assert_int_equal(kconfig_parse("FAULT_SKIP_LAST_TILE=1", &hook, err, sizeof err), 0);
    assert_true(hook.set & CFG_FAULT);
    assert_int_equal(kconfig_parse("MMA=mma;NUM_WARPS=1;BLOCK_M=16", &row, err, sizeof err), 0);
    assert_false(row.set & CFG_FAULT);
    kconfig_overlay(&row, &hook);
    assert_int_equal(row.fault_skip_last_tile, 1);
    assert_int_equal(row.num_warps, 1);
    char text[KCONFIG_STR_MAX];
    kconfig_str(&row, text, sizeof text);
    assert_non_null(strstr(text, "FAULT_SKIP_LAST_TILE=1"));
    /* the localized hooks: each its own key, printed back, and the one kernel define */
    const char *local[] = {"FAULT_ZERO_BLOCK", "FAULT_SKIP_BLOCK_TILE", "FAULT_HEAD_SCALE"};
    shape_t s = {.batch = 1, .hq = 8, .hkv = 2, .sq = 128, .skv = 128, .d = 64, .causal = 1};
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++) {
        char cfg[64], want[64], defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN];
        snprintf(cfg, sizeof cfg, "MMA=fma;%s=1", local[i]);
        kconfig c = {0};
        assert_int_equal(kconfig_parse(cfg, &c, err, sizeof err), 0);
        assert_true(c.set & CFG_FAULT);
        assert_string_equal(kconfig_fault(&c), local[i]);
        kconfig_str(&c, text, sizeof text);
        snprintf(want, sizeof want, ";%s=1", local[i]);
        assert_non_null(strstr(text, want));
        const int nd = attn_defines(&s, DT_BF16, &c, 1, defs);
        int found = 0;
        for (int d = 0; d < nd; d++) found += !strncmp(defs[d], "FAULT_", 6) && !strcmp(defs[d], want + 1);
        assert_int_equal(found, 1);
    }
}

static void test_default_split(void **state)
{
    (void)state;
    rt_device_info hop = {.compute_units = 132, .max_group_size = 1024, .shared_bytes = 227 * 1024,
                          .static_shared_bytes = 48 * 1024, .features = RT_FEAT_MMA_SYNC | RT_FEAT_WGMMA};
    const struct {
        shape_t s;
        int lo, hi;
    } cases[] = {
        {mk(1, 32, 8, 1024, 1024, 128, 1), 1, 1}, /* 8 blocks x 32 heads = 256 groups: no split */
        {mk(2, 32, 8, 1024, 1024, 128, 0), 1, 1},
        {mk(4, 32, 32, 4096, 4096, 128, 1), 1, 1},
        {mk(1, 8, 8, 1024, 1024, 128, 0), 2, 2},  /* 64 groups: split in two, within one wave */
        {mk(1, 16, 16, 1024, 1024, 256, 1), 1, 1}, /* 128 groups: 4 compute units idle, no split */
        {mk(1, 2, 2, 128, 8192, 64, 0), 32, 32},  /* a grid of 2-4 groups: up to the cap */
        {mk(1, 1, 1, 64, 64, 64, 0), 1, 1},       /* one key tile: nothing to split */
        {mk(8, 32, 8, 1, 4096, 128, 0), 2, 16},   /* decode: four waves' worth */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kconfig c = {0};
        kconfig_complete(&c, &hop, &cases[i].s, DT_BF16);
        if (c.split_kv < cases[i].lo || c.split_kv > cases[i].hi)
            fail_msg("case %zu: SPLIT_KV=%d, want %d..%d", i, c.split_kv, cases[i].lo, cases[i].hi);
        size_t grid[3];
        kconfig_grid(&c, &cases[i].s, grid);
        if (cases[i].s.sq > 16 && c.split_kv > 1) /* a prefill split stays within one wave */
            assert_true((long)(grid[0] * grid[1]) <= hop.compute_units);
    }
    /* KV_WARPS: the default tile shares the same keys a step out among the warps (BLOCK_N
     * 64 / 4 = 16 at d = 128, never below 16), one group of 16 rows takes four warps, a
     * split never outnumbers the steps of KV_WARPS * BLOCK_N keys, and the result fits */
    const struct {
        shape_t s;
        int kvw, block_n, num_warps, max_split;
    } kv[] = {
        {mk(3, 8, 2, 1, 300, 128, 1), 4, 16, 4, 5},    /* 300 keys: five steps of 64 */
        {mk(2, 32, 8, 1, 4096, 256, 0), 4, 16, 4, 64},
        {mk(1, 32, 8, 1, 1024, 64, 0), 2, 32, 2, 16},
        {mk(1, 8, 8, 1, 20000, 128, 0), 8, 16, 8, 32},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
        kconfig c = {.kv_warps = kv[i].kvw, .mma = MMA_SYNC, .set = CFG(MMA) | CFG(KV_WARPS)};
        kconfig_complete(&c, &hop, &kv[i].s, DT_BF16);
        if (c.block_n != kv[i].block_n || c.num_warps != kv[i].num_warps || c.block_m != 16 || c.split_kv > kv[i].max_split)
            fail_msg("KV_WARPS case %zu: BLOCK_N=%d NUM_WARPS=%d BLOCK_M=%d SPLIT_KV=%d", i, c.block_n, c.num_warps, c.block_m,
                     c.split_kv);
        char reason[256];
        if (kconfig_check(&c, &hop, &kv[i].s, DT_BF16, reason, sizeof reason) != ST_OK) fail_msg("KV_WARPS case %zu: %s", i, reason);
    }
}

/* The untuned mma default for decode up to d = 128: four key warps of 32 keys (64 at
 * d <= 64), three stages where they fit the device's shared memory (fewer, then shorter
 * tiles where not), split only while the groups' warps do not cover two a compute unit;
 * d = 256, paged caches, prefill and a user's own warp counts keep one warp per group. */
static void test_default_key_warps(void **state)
{
    (void)state;
    rt_device_info hop = {.compute_units = 132, .max_group_size = 1024, .shared_bytes = 227 * 1024,
                          .static_shared_bytes = 48 * 1024, .features = RT_FEAT_MMA_SYNC | RT_FEAT_WGMMA};
    rt_device_info a100 = hop, small = hop;
    a100.compute_units = 108, a100.shared_bytes = 163 * 1024, a100.features = RT_FEAT_MMA_SYNC;
    small.compute_units = 46, small.shared_bytes = 99 * 1024, small.features = RT_FEAT_MMA_SYNC;
    const struct {
        const rt_device_info *dev;
        shape_t s;
        int kvw, block_n, stages, split_lo, split_hi;
    } cases[] = {
        {&hop, mk(16, 32, 8, 1, 1024, 128, 1), 4, 32, 3, 1, 1},   /* 128 groups of 4 warps: no split */
        {&hop, mk(64, 64, 8, 1, 16384, 128, 1), 4, 32, 3, 1, 1},
        {&hop, mk(16, 32, 8, 1, 4096, 64, 1), 4, 64, 3, 1, 1},    /* d = 64: 64 keys a warp */
        {&hop, mk(1, 32, 8, 1, 4096, 128, 1), 4, 32, 3, 8, 9},    /* 8 groups: split to 66 */
        {&hop, mk(16, 32, 32, 1, 2048, 80, 1), 4, 32, 3, 1, 1},   /* phi-2: 512 unpacked heads */
        {&a100, mk(16, 32, 8, 1, 4096, 128, 1), 4, 32, 2, 1, 1},  /* 163 KiB: two stages */
        {&small, mk(16, 32, 8, 1, 4096, 128, 1), 4, 16, 2, 1, 1}, /* 99 KiB: 16-key tiles too */
        {&hop, mk(16, 16, 16, 1, 4096, 256, 1), 1, 32, 2, 1, 16}, /* d = 256: one warp */
        {&hop, mk(4, 32, 8, 1024, 1024, 128, 1), 1, 64, 2, 1, 1}, /* prefill */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kconfig c = {.mma = MMA_SYNC, .set = CFG(MMA)};
        kconfig_complete(&c, cases[i].dev, &cases[i].s, DT_BF16);
        if (kconfig_kv_warps(&c) != cases[i].kvw || c.block_n != cases[i].block_n || c.stages != cases[i].stages ||
            c.split_kv < cases[i].split_lo || c.split_kv > cases[i].split_hi)
            fail_msg("case %zu: KV_WARPS=%d BLOCK_N=%d STAGES=%d SPLIT_KV=%d", i, kconfig_kv_warps(&c), c.block_n, c.stages,
                     c.split_kv);
        char reason[256];
        if (kconfig_check(&c, cases[i].dev, &cases[i].s, DT_BF16, reason, sizeof reason) != ST_OK)
            fail_msg("case %zu: %s", i, reason);
        if (cases[i].kvw > 1 && (c.num_warps != 4 || c.block_m != 16 || kconfig_shared_bytes(&c, cases[i].s.d) > cases[i].dev->shared_bytes))
            fail_msg("case %zu: NUM_WARPS=%d BLOCK_M=%d", i, c.num_warps, c.block_m);
    }
    /* a paged cache, or warps the user counted, keep the one-warp form */
    shape_t pg = mk(16, 32, 8, 1, 4096, 128, 1);
    pg.page = 64;
    kconfig c = {.mma = MMA_SYNC, .set = CFG(MMA)};
    kconfig_complete(&c, &hop, &pg, DT_BF16);
    assert_int_equal(kconfig_kv_warps(&c), 1);
    char err[256];
    kconfig u = {0};
    assert_int_equal(kconfig_parse("MMA=mma;NUM_WARPS=2", &u, err, sizeof err), 0);
    kconfig_complete(&u, &hop, &cases[0].s, DT_BF16);
    assert_int_equal(kconfig_kv_warps(&u), 1);
    assert_int_equal(u.num_warps, 2);
}

/* The class key of shape s in type dt is want. */
static void key_is(shape_t s, dtype_t dt, const char *want)
{
    char k[96];
    tune_class_key(&s, dt, k, sizeof k);
    assert_string_equal(k, want);
    tune_class c; /* every key written parses back to the shape's parts */
    assert_int_equal(tune_class_parse(k, &c), 0);
    assert_int_equal(c.dt, dt);
    assert_int_equal(c.d, s.d);
    assert_int_equal(c.c, s.causal);
    assert_int_equal(c.g, s.hq / s.hkv);
    assert_int_equal(c.p, s.page);
}

/* Defaults and checks at the edges: an AMD GPU's paged shapes take fma (mfma has no
 * paged tiles), a persistent grid is not held to the B x H grid limit, and keys beyond
 * 2^31 are refused (the kernel counts them in 32 bits). */
static void test_default_edges(void **state)
{
    (void)state;
    char reason[512];
    rt_device_info amd = {.compute_units = 304, .max_group_size = 1024, .shared_bytes = 64 * 1024,
                          .features = RT_FEAT_MFMA, .max_grid = {2147483647, 65535, 65535}};
    shape_t pg = mk(4, 32, 8, 1, 4096, 128, 1);
    pg.page = 16;
    kconfig c = {0};
    kconfig_complete(&c, &amd, &pg, DT_BF16);
    assert_int_equal(c.mma, MMA_FMA);
    if (kconfig_check(&c, &amd, &pg, DT_BF16, reason, sizeof reason) != ST_OK) fail_msg("paged on mfma: %s", reason);
    shape_t dense = mk(4, 32, 8, 1, 4096, 128, 1);
    c = (kconfig){0};
    kconfig_complete(&c, &amd, &dense, DT_BF16);
    assert_int_equal(c.mma, MMA_MFMA); /* dense decode keeps mfma */

    rt_device_info hop = {.compute_units = 132, .max_group_size = 1024, .shared_bytes = 227 * 1024,
                          .static_shared_bytes = 48 * 1024, .features = RT_FEAT_MMA_SYNC | RT_FEAT_WGMMA | RT_FEAT_TMA,
                          .max_grid = {2147483647, 65535, 65535}};
    shape_t wide = mk(1024, 128, 128, 128, 128, 128, 0); /* 131072 heads: past grid dimension 1 */
    kconfig p = {0};
    assert_int_equal(kconfig_parse("MMA=wgmma;WG_TMA=1;WG_WS=1;WG_PERSIST=1", &p, reason, sizeof reason), 0);
    kconfig_complete(&p, &hop, &wide, DT_BF16);
    if (kconfig_check(&p, &hop, &wide, DT_BF16, reason, sizeof reason) != ST_OK) fail_msg("persistent, wide: %s", reason);
    kconfig np = {0};
    assert_int_equal(kconfig_parse("MMA=wgmma;WG_TMA=1;WG_WS=1", &np, reason, sizeof reason), 0);
    kconfig_complete(&np, &hop, &wide, DT_BF16);
    assert_int_equal(kconfig_check(&np, &hop, &wide, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    assert_non_null(strstr(reason, "grid dimension 1"));

    shape_t longk = mk(1, 1, 1, 1, 2147483600, 64, 0);
    kconfig k = {0};
    kconfig_complete(&k, &hop, &longk, DT_BF16);
    assert_int_equal(kconfig_check(&k, &hop, &longk, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
    assert_non_null(strstr(reason, "2^31 keys"));
}

/* What no tuning row may hold as its class (tune and check-results refuse it). */
static void test_class_parse_refuses(void **state)
{
    (void)state;
    static const char *const bad[] = {"garbage", "bf16", "bf16-d128-c1-g4-q4096", "bf16-d128-c1-g4-q4096-k4096x",
                                      "bf32-d128-c1-g4-q64-k64", "BF16-d128-c1-g4-q64-k64", "bf16-d100-c1-g4-q64-k64",
                                      "bf16-d128-c2-g4-q64-k64", "bf16-d128-c1-g0-q64-k64", "bf16-d128-c1-g-1-q64-k64",
                                      "bf16-d128-c1-g4-q0-k64", "bf16-d128-c1-g4-q48-k64", "bf16-d128-c1-g4-q64-k100",
                                      "bf16-d128-c1-g4-q1-k64-w3", "bf16-d128-c1-g4-q1-k64-w0", "bf16-d128-c1-g4-q64-k64-v30",
                                      "bf16-d128-c1-g4-q64-k64-p8", "bf16-d128-c1-g4-q64-k64-p24", "bf16-d128-c1-g4-q64-k64-p16-w2"};
    tune_class c;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (tune_class_parse(bad[i], &c) == 0) fail_msg("'%s' parsed as a class", bad[i]);
    }
    assert_int_equal(tune_class_parse("fp16-d64-c0-g1-q1-k512-w8-v25-p16", &c), 0);
    assert_int_equal(c.w, 8);
    assert_int_equal(c.v, 25);
    assert_int_equal(c.p, 16);
}

static void test_class_key(void **state)
{
    (void)state;
    key_is(mk(4, 32, 8, 3000, 4096, 128, 1), DT_BF16, "bf16-d128-c1-g4-q4096-k4096");
    key_is(mk(1, 8, 8, 1, 300, 64, 0), DT_FP16, "fp16-d64-c0-g1-q1-k512-w8");
    /* decode classes split by B * Hkv (rounded up to a power of two); large prefill ones do not */
    key_is(mk(16, 32, 8, 1, 4096, 128, 1), DT_BF16, "bf16-d128-c1-g4-q1-k4096-w128");
    key_is(mk(64, 32, 8, 1, 4096, 128, 1), DT_BF16, "bf16-d128-c1-g4-q1-k4096-w512");
    key_is(mk(64, 32, 8, 16, 4096, 128, 1), DT_BF16, "bf16-d128-c1-g4-q16-k4096-w512");
    key_is(mk(64, 32, 8, 17, 4096, 128, 1), DT_BF16, "bf16-d128-c1-g4-q32-k4096");
    /* a paged KV cache is another kernel: its page size ends the key */
    shape_t pg = mk(64, 32, 8, 1, 4096, 128, 1);
    pg.page = 16;
    key_is(pg, DT_BF16, "bf16-d128-c1-g4-q1-k4096-w512-p16");
    pg = mk(4, 32, 8, 4096, 4096, 128, 1);
    pg.page = 64;
    key_is(pg, DT_BF16, "bf16-d128-c1-g4-q4096-k4096-p64");
    /* a small dense prefill grid (B * Hq * Sq up to 32768 rows) keys on B * Hq; a larger one,
     * a paged one and a ragged one do not */
    key_is(mk(1, 32, 8, 1024, 1024, 128, 1), DT_BF16, "bf16-d128-c1-g4-q1024-k1024-w32");
    key_is(mk(1, 16, 16, 1000, 1000, 256, 1), DT_BF16, "bf16-d256-c1-g1-q1024-k1024-w16");
    key_is(mk(3, 5, 5, 100, 100, 64, 0), DT_BF16, "bf16-d64-c0-g1-q128-k128-w16");
    key_is(mk(1, 64, 8, 1024, 1024, 128, 1), DT_BF16, "bf16-d128-c1-g8-q1024-k1024");
    key_is(mk(4, 32, 8, 1024, 1024, 128, 1), DT_BF16, "bf16-d128-c1-g4-q1024-k1024");
    pg = mk(1, 32, 8, 1024, 1024, 128, 1);
    pg.page = 64;
    key_is(pg, DT_BF16, "bf16-d128-c1-g4-q1024-k1024-p64");
    shape_t rag = mk(2, 4, 4, 100, 100, 64, 0);
    rag.nlens = 2;
    rag.lens[0] = 0.5;
    rag.lens[1] = 1.0;
    key_is(rag, DT_BF16, "bf16-d64-c0-g1-q128-k128-v0");
}

/* Ragged and mixed batches: the share of decoding sequences keys their classes, and in the
 * nearest-class lookup (tune_lookup_for) a dense row serves them only when no ragged row
 * exists. */
static void test_ragged_classes(void **state)
{
    (void)state;
    char k[96], p[512], src[300], err[FB_ERRLEN];
    shape_t varied = mk(8, 32, 8, 1024, 1024, 128, 1);
    varied.nlens = 5;
    double pat[5] = {0.1, 0.4, 0.5, 1.0, 0.2};
    memcpy(varied.lens, pat, sizeof pat);
    assert_int_equal(tune_decode_share(&varied), 0);
    tune_class_key(&varied, DT_BF16, k, sizeof k);
    assert_string_equal(k, "bf16-d128-c1-g4-q1024-k1024-v0");
    /* 2 of 8 prefill (qlens 1, 1e-4, 1e-4, 1e-4 repeated): 75% decode */
    shape_t mixed = mk(8, 32, 8, 2048, 4096, 128, 1);
    mixed.nlens = 1;
    mixed.lens[0] = 1.0;
    mixed.nqlens = 4;
    double qp[4] = {1, 1e-4, 1e-4, 1e-4};
    memcpy(mixed.qlens, qp, sizeof qp);
    assert_int_equal(tune_decode_share(&mixed), 75);
    tune_class_key(&mixed, DT_BF16, k, sizeof k);
    assert_string_equal(k, "bf16-d128-c1-g4-q2048-k4096-v75");
    mixed.page = 16;
    tune_class_key(&mixed, DT_BF16, k, sizeof k);
    assert_string_equal(k, "bf16-d128-c1-g4-q2048-k4096-v75-p16");
    mixed.page = 0;
    shape_t rdec = mk(32, 32, 8, 1, 4096, 128, 1); /* ragged decode: work bucket and share */
    rdec.nlens = 2;
    rdec.lens[0] = 0.5;
    rdec.lens[1] = 1.0;
    tune_class_key(&rdec, DT_BF16, k, sizeof k);
    assert_string_equal(k, "bf16-d128-c1-g4-q1-k4096-w256-v100");

    snprintf(p, sizeof p, "%s/tuning_v.csv", tmpdir);
    write_file(p, "gpu,backend,shape_class,config\n"
                  "G,opencl,bf16-d128-c1-g4-q2048-k4096,MMA=fma;BLOCK_M=64;BLOCK_N=64;NUM_WARPS=4\n"
                  "G,opencl,bf16-d128-c1-g4-q2048-k4096-v0,MMA=fma;BLOCK_M=32;BLOCK_N=32;NUM_WARPS=4\n"
                  "G,opencl,bf16-d128-c1-g4-q2048-k4096-v100,MMA=fma;BLOCK_M=16;BLOCK_N=64;NUM_WARPS=1\n");
    rt_device dev = {.rt = rt_find("opencl"), .index = 0};
    snprintf(dev.info.name, sizeof dev.info.name, "G");
    kconfig c;
    assert_int_equal(tune_lookup_for(p, dev.info.name, dev.rt->name, &mixed, DT_BF16, &c, src, sizeof src, err, sizeof err), 1);
    assert_int_equal(c.block_m, 16); /* 75% decode is nearest the all-decode class */
    assert_non_null(strstr(src, "nearest bf16-d128-c1-g4-q2048-k4096-v100"));
    shape_t dense = mk(8, 32, 8, 2048, 4096, 128, 1);
    assert_int_equal(tune_lookup_for(p, dev.info.name, dev.rt->name, &dense, DT_BF16, &c, src, sizeof src, err, sizeof err), 1);
    assert_int_equal(c.block_m, 64); /* the dense class, not a ragged one */
    assert_non_null(strstr(src, "tuned bf16-d128-c1-g4-q2048-k4096"));
    write_file(p, "gpu,backend,shape_class,config\n"
                  "G,opencl,bf16-d128-c1-g4-q2048-k4096,MMA=fma;BLOCK_M=64;BLOCK_N=64;NUM_WARPS=4\n");
    assert_int_equal(tune_lookup_for(p, dev.info.name, dev.rt->name, &mixed, DT_BF16, &c, src, sizeof src, err, sizeof err), 1);
    assert_int_equal(c.block_m, 64); /* no ragged row: the dense one, as the nearest */
    assert_non_null(strstr(src, "nearest"));
}

/* Decode rows with the work bucket, in the nearest-class lookup (tune_lookup_for): the
 * nearest bucket wins; a row without one (a table from before the bucket) still serves every
 * batch size as the nearest. */
/* The configuration tune_lookup_for finds in table p for s, whose source must contain want. */
static kconfig lookup_from(const char *p, const rt_device *dev, const shape_t *s, const char *want)
{
    char src[300], err[FB_ERRLEN];
    kconfig c;
    assert_int_equal(tune_lookup_for(p, dev->info.name, dev->rt->name, s, DT_BF16, &c, src, sizeof src, err, sizeof err), 1);
    if (!strstr(src, want)) fail_msg("%s: source '%s', wanted '%s'", s->name, src, want);
    return c;
}

static void test_lookup_work_bucket(void **state)
{
    (void)state;
    char p[512], src[300], err[FB_ERRLEN];
    snprintf(p, sizeof p, "%s/tuning_w.csv", tmpdir);
    write_file(p, "gpu,backend,shape_class,config\n"
                  "G,opencl,bf16-d128-c1-g4-q1-k4096-w128,MMA=fma;BLOCK_M=16;BLOCK_N=32;NUM_WARPS=1;SPLIT_KV=8\n"
                  "G,opencl,bf16-d128-c1-g4-q1-k4096-w512,MMA=fma;BLOCK_M=16;BLOCK_N=64;NUM_WARPS=1;SPLIT_KV=2\n"
                  "G,opencl,bf16-d64-c1-g4-q1-k4096,MMA=fma;BLOCK_M=16;BLOCK_N=16;NUM_WARPS=1;SPLIT_KV=4\n"
                  "G,opencl,bf16-d128-c1-g4-q1-k1024,MMA=fma;BLOCK_M=16;BLOCK_N=16;NUM_WARPS=2;SPLIT_KV=3\n"
                  "G,opencl,bf16-d128-c1-g4-q1-k1024-w128,MMA=fma;BLOCK_M=16;BLOCK_N=32;NUM_WARPS=4;SPLIT_KV=6\n");
    rt_device dev = {.rt = rt_find("opencl"), .index = 0};
    snprintf(dev.info.name, sizeof dev.info.name, "G");
    shape_t b16 = mk(16, 32, 8, 1, 4096, 128, 1), b64 = mk(64, 32, 8, 1, 4096, 128, 1), b32 = mk(32, 32, 8, 1, 4096, 128, 1);
    assert_int_equal(lookup_from(p, &dev, &b16, "tuned bf16-d128-c1-g4-q1-k4096-w128").split_kv, 8);
    assert_int_equal(lookup_from(p, &dev, &b64, "tuned bf16-d128-c1-g4-q1-k4096-w512").split_kv, 2);
    (void)lookup_from(p, &dev, &b32, "nearest"); /* w256: a tie, never exact */
    kconfig c;
    shape_t paged = mk(16, 32, 8, 1, 4096, 128, 1);
    paged.page = 32; /* only dense rows for d=128: none of them serves a paged cache */
    assert_int_equal(tune_lookup_for(p, dev.info.name, dev.rt->name, &paged, DT_BF16, &c, src, sizeof src, err, sizeof err), 0);
    assert_non_null(strstr(src, "default"));
    /* a row of an older table (no work bucket) still serves a decode shape, as the nearest
     * (tuned at another batch size: SPLIT_KV derived again, not its 4) */
    shape_t old = mk(8, 32, 8, 1, 4096, 64, 1);
    assert_int_equal(lookup_from(p, &dev, &old, "nearest bf16-d64-c1-g4-q1-k4096").block_n, 16);
    /* beside a row of the shape's own bucket, the older row loses; in another bucket it wins */
    shape_t b16k1 = mk(16, 32, 8, 1, 1024, 128, 1), b64k1 = mk(64, 32, 8, 1, 1024, 128, 1);
    assert_int_equal(lookup_from(p, &dev, &b16k1, "tuned bf16-d128-c1-g4-q1-k1024-w128").split_kv, 6);
    assert_int_equal(lookup_from(p, &dev, &b64k1, "nearest bf16-d128-c1-g4-q1-k1024").num_warps, 2);
    /* prefill: a small grid takes its own bucket's row; without one, the class's row of an
     * older table as the nearest (PACK_GQA and SPLIT_KV derived again); a large grid never
     * takes a small one's row over its own */
    write_file(p, "gpu,backend,shape_class,config\n"
                  "G,opencl,bf16-d128-c1-g4-q1024-k1024,MMA=fma;BLOCK_M=64;BLOCK_N=32;NUM_WARPS=4;PACK_GQA=1\n"
                  "G,opencl,bf16-d128-c1-g4-q1024-k1024-w32,MMA=fma;BLOCK_M=32;BLOCK_N=16;NUM_WARPS=2;PACK_GQA=0\n"
                  "G,opencl,bf16-d64-c1-g4-q1024-k1024,MMA=fma;BLOCK_M=16;BLOCK_N=64;NUM_WARPS=4;PACK_GQA=1\n");
    shape_t p1 = mk(1, 32, 8, 1024, 1024, 128, 1), p4 = mk(4, 32, 8, 1024, 1024, 128, 1), q1 = mk(1, 32, 8, 1024, 1024, 64, 1);
    assert_int_equal(lookup_from(p, &dev, &p1, "tuned bf16-d128-c1-g4-q1024-k1024-w32").block_m, 32);
    assert_int_equal(lookup_from(p, &dev, &p4, "tuned bf16-d128-c1-g4-q1024-k1024").block_m, 64);
    kconfig n1 = lookup_from(p, &dev, &q1, "nearest bf16-d64-c1-g4-q1024-k1024");
    assert_int_equal(n1.block_n, 64);
    assert_int_equal(n1.set & (CFG(PACK_GQA) | CFG(SPLIT_KV)), 0);
}

static void test_lookup(void **state)
{
    (void)state;
    char p[512], src[300], err[FB_ERRLEN];
    snprintf(p, sizeof p, "%s/tuning.csv", tmpdir);
    write_file(p, "gpu,backend,shape_class,config,median_us,tflops,configs_explored,configs_in_space,shape,strategy,date\n"
                  "G,opencl,bf16-d128-c1-g4-q4096-k4096,MMA=fma;BLOCK_M=32;BLOCK_N=16;NUM_WARPS=2;SPLIT_KV=1,1,1,1,1,x,exhaustive,now\n"
                  "G,opencl,bf16-d128-c1-g4-q1-k4096,MMA=fma;BLOCK_M=16;BLOCK_N=64;NUM_WARPS=1;SPLIT_KV=4,1,1,1,1,x,exhaustive,now\n"
                  "Other,opencl,bf16-d64-c1-g4-q64-k64,MMA=fma;BLOCK_M=128,1,1,1,1,x,exhaustive,now\n");
    rt_device dev = {.rt = rt_find("opencl"), .index = 0};
    snprintf(dev.info.name, sizeof dev.info.name, "G");
    kconfig c;
    shape_t exact = mk(1, 32, 8, 4000, 4000, 128, 1);
    assert_int_equal(tune_lookup(p, &dev, &exact, DT_BF16, &c, src, sizeof src, err, sizeof err), 1);
    assert_int_equal(c.block_m, 32);
    assert_int_equal(c.num_warps, 2);
    assert_non_null(strstr(src, "tuned"));
    shape_t near = mk(1, 32, 8, 2, 3000, 128, 1); /* q2 is nearest to q1 */
    assert_int_equal(tune_lookup_for(p, dev.info.name, dev.rt->name, &near, DT_BF16, &c, src, sizeof src, err, sizeof err), 1);
    assert_int_equal(c.block_n, 64);
    assert_non_null(strstr(src, "nearest bf16-d128-c1-g4-q1-k4096"));
    assert_false(c.set & CFG(SPLIT_KV)); /* re-derived for the shape */
    /* run --tuned's own lookup takes no nearest class: its regime's default, without
     * fallback.csv beside the table (tests/test_fallback.c has the rules) */
    assert_int_equal(tune_lookup(p, &dev, &near, DT_BF16, &c, src, sizeof src, err, sizeof err), 1);
    assert_non_null(strstr(src, "default for decode (no fallback.csv beside the tuning table)"));
    shape_t other_d = mk(1, 32, 8, 64, 64, 64, 1); /* only another GPU has d=64 */
    assert_int_equal(tune_lookup_for(p, dev.info.name, dev.rt->name, &other_d, DT_BF16, &c, src, sizeof src, err, sizeof err), 0);
    assert_non_null(strstr(src, "default"));
    write_file(p, "gpu,backend,shape_class,config\nG,opencl,bf16-d128-c1-g4-q4096-k4096,BLOCK_M=17\n");
    assert_int_equal(tune_lookup(p, &dev, &exact, DT_BF16, &c, src, sizeof src, err, sizeof err), 2);
    assert_non_null(strstr(err, ":2: field 'config'"));
}

/* Entries round-trip; a truncated or altered entry is a miss and is removed. */
static void test_cache(void **state)
{
    (void)state;
    char dir[400], path[600];
    snprintf(dir, sizeof dir, "%s/cache", tmpdir);
    setenv("FABENCH_CACHE", dir, 1);
    const char *parts1[] = {"src", "HEAD_DIM=64"}, *parts2[] = {"src", "HEAD_DIM=6", "4"};
    char k1[33], k2[33];
    cache_key(parts1, 2, k1);
    cache_key(parts2, 3, k2);
    assert_string_not_equal(k1, k2);
    const char bin[] = "\x7f" "ELF binary with \0 inside";
    assert_int_equal(cache_put(k1, bin, sizeof bin, "ptxas info: 0 bytes spill stores"), 0);
    void *b;
    size_t n;
    char *log;
    assert_int_equal(cache_get(k1, &b, &n, &log), 1);
    assert_int_equal(n, sizeof bin);
    assert_memory_equal(b, bin, sizeof bin);
    assert_string_equal(log, "ptxas info: 0 bytes spill stores");
    free(b);
    free(log);
    assert_int_equal(cache_get(k2, &b, &n, &log), 0);
    /* truncate the entry: a miss, and the file is gone */
    snprintf(path, sizeof path, "%s/%s.bin", dir, k1);
    assert_int_equal(truncate(path, 40), 0);
    assert_int_equal(cache_get(k1, &b, &n, &log), 0);
    assert_int_not_equal(access(path, F_OK), 0);
    /* flip one byte of the binary */
    assert_int_equal(cache_put(k1, bin, sizeof bin, NULL), 0);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, -3, SEEK_END);
    fputc('#', f);
    fclose(f);
    assert_int_equal(cache_get(k1, &b, &n, &log), 0);
    unsetenv("FABENCH_CACHE");
}

static int count_rows(const char *path)
{
    csv_table *t;
    char err[FB_ERRLEN];
    if (csvt_read(path, &t, err, sizeof err) != 0) return -1;
    int n = (int)t->nrows;
    csvt_free(t);
    return n;
}

static int count_in(const char *dir, const char *file)
{
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    return count_rows(p);
}

/* `fabench tune` through the real binary on PoCL: rows for every candidate, a tuning row
 * per class whose configuration verified, and a second run that adds nothing. */
static void test_tune_end_to_end(void **state)
{
    (void)state;
    char shapes[512], res[512], cmd[2048], p[600];
    snprintf(shapes, sizeof shapes, "%s/shapes.csv", tmpdir);
    snprintf(res, sizeof res, "%s/res", tmpdir);
    write_file(shapes, "name,batch,hq,hkv,sq,skv,d,causal\na,1,2,1,33,40,32,1\nb,1,2,2,1,70,32,0\n");
    const char *fab = getenv("FABENCH_BIN") ? getenv("FABENCH_BIN") : "build/fabench";
    snprintf(cmd, sizeof cmd, "%s tune --device opencl:0 --shapes %s --results %s --strategy random --candidates 3 "
             "--rep-budget 0.01 --seed 7 --quiet", fab, shapes, res);
    assert_int_equal(system(cmd), 0);
    snprintf(p, sizeof p, "%s/explored.csv", res);
    assert_int_equal(count_rows(p), 6);
    snprintf(p, sizeof p, "%s/tuning.csv", res);
    csv_table *t;
    char err[FB_ERRLEN];
    assert_int_equal(csvt_read(p, &t, err, sizeof err), 0);
    assert_int_equal(t->nrows, 2);
    int cc = csvt_col(t, "config"), ce = csvt_col(t, "configs_explored");
    for (size_t i = 0; i < t->nrows; i++) {
        kconfig c = {0};
        assert_int_equal(kconfig_parse(t->rows[i][cc], &c, err, sizeof err), 0);
        assert_string_equal(t->rows[i][ce], "3");
    }
    csvt_free(t);
    assert_int_equal(system(cmd), 0); /* resume: nothing new */
    snprintf(p, sizeof p, "%s/explored.csv", res);
    assert_int_equal(count_rows(p), 6);
    /* a fresh results folder with a warm disk cache: everything runs again, nothing compiles */
    char log[600];
    snprintf(log, sizeof log, "%s/tune.log", tmpdir);
    for (int round = 2; round <= 3; round++) {
        snprintf(cmd, sizeof cmd, "FABENCH_CACHE=%s/kc %s tune --device opencl:0 --shapes %s --results %s/res%d "
                 "--strategy random --candidates 3 --rep-budget 0.01 --seed 7 2>%s", tmpdir, fab, shapes, tmpdir, round, log);
        assert_int_equal(system(cmd), 0);
    }
    char *text;
    size_t len;
    assert_int_equal(fb_read_file(log, &text, &len, p, sizeof p), 0);
    if (!strstr(text, " 0 binaries compiled, 6 loaded from the cache")) fail_msg("second tune compiled again:\n%s", text);
    if (!strstr(text, "2 classes in ")) fail_msg("no wall time in the summary:\n%s", text);
    free(text);
    snprintf(p, sizeof p, "%s/manifest.csv", res);
    assert_true(count_rows(p) > 5);
    assert_int_equal(fb_read_file(p, &text, &len, err, sizeof err), 0); /* the wall time beside the command */
    if (!strstr(text, "opencl.tune.wall_s,")) fail_msg("%s has no opencl.tune.wall_s:\n%s", p, text);
    /* a --merge tune records its wall time in its own update.N. record: the folder's first
     * tune keeps its own (a refine once overwrote it) */
    char first[80] = "";
    const char *w = strstr(text, "\nopencl.tune.wall_s,");
    assert_non_null(w);
    snprintf(first, sizeof first, "%.*s", (int)strcspn(w + 1, "\n"), w + 1);
    free(text);
    snprintf(cmd, sizeof cmd, "%s tune --device opencl:0 --shapes %s --results %s --strategy random --candidates 1 "
             "--rep-budget 0.01 --seed 9 --merge --quiet", fab, shapes, res);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(fb_read_file(p, &text, &len, err, sizeof err), 0);
    if (!strstr(text, first)) fail_msg("the first tune's '%s' changed:\n%s", first, text);
    if (!strstr(text, "\nupdate.1.opencl.tune.wall_s,")) fail_msg("no update.1.opencl.tune.wall_s:\n%s", text);
    free(text);
    /* --time shorter than anything can take: each class still gets its default tried, and a
     * tuning row when that verifies (on the H200 a cold compile once took all of a short --time) */
    snprintf(res, sizeof res, "%s/tres", tmpdir);
    snprintf(cmd, sizeof cmd, "%s tune --device opencl:0 --shapes %s --results %s --time 0.000001 --quiet", fab, shapes, res);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(count_in(res, "tuning.csv"), 2);
    int n = count_in(res, "explored.csv");
    assert_true(n >= 2 && n <= 2 * (1 + 3)); /* at most TUNE_LATE_TRIES (3) more per class */
}

/* tune --merge on part of the space: the class's recorded row (an earlier run's time) and
 * this run's best are timed again in this run, and the faster there wins; without --merge
 * the row goes to this run's best or, where that is not faster, to the runtime's default,
 * which contends in every head-to-head (it has an explored row from the first run on) */
static const char *tuned_config(const char *res, char *buf, size_t n, double *us)
{
    char p[600], err[FB_ERRLEN];
    csv_table *t;
    snprintf(p, sizeof p, "%s/tuning.csv", res);
    if (csvt_read(p, &t, err, sizeof err) != 0 || t->nrows != 1) fail_msg("%s: one tuning row expected", p);
    snprintf(buf, n, "%s", t->rows[0][csvt_col(t, "config")]);
    if (us) *us = atof(t->rows[0][csvt_col(t, "median_us")]);
    csvt_free(t);
    return buf;
}

/* tuning.csv's one row with a field replaced: an earlier run's claim */
static void plant_field(const char *res, const char *col, const char *value)
{
    char p[600], err[FB_ERRLEN];
    csv_table *t;
    snprintf(p, sizeof p, "%s/tuning.csv", res);
    assert_int_equal(csvt_read(p, &t, err, sizeof err), 0);
    int c = csvt_col(t, col);
    assert_true(c >= 0);
    free(t->rows[0][c]);
    t->rows[0][c] = strdup(value);
    assert_int_equal(csvt_write_atomic(t, p, err, sizeof err), 0);
    csvt_free(t);
}

/* the recorded row's time replaced by an impossible one */
static void plant_time(const char *res, const char *us) { plant_field(res, "median_us", us); }

static void test_tune_merge(void **state)
{
    (void)state;
    char shapes[512], res[512], sp[2][512], log[512], cmd[2048], p[600], err[FB_ERRLEN];
    snprintf(shapes, sizeof shapes, "%s/mshapes.csv", tmpdir);
    snprintf(res, sizeof res, "%s/mres", tmpdir);
    snprintf(log, sizeof log, "%s/merge.log", tmpdir);
    write_file(shapes, "name,batch,hq,hkv,sq,skv,d,causal\nm,1,2,2,64,64,64,0\n");
    const char *fixed = "NUM_WARPS,1,\nWARP_M,1,\nSTAGES,1,\nKPAD,1,\nSPLIT_KV,1,\nPACK_GQA,0,\n";
    const char *tiles[2] = {"BLOCK_M,32,\nBLOCK_N,32,\n", "BLOCK_M,16,\nBLOCK_N,16,\n"};
    for (int i = 0; i < 2; i++) {
        char text[512];
        snprintf(sp[i], sizeof sp[i], "%s/space%d.csv", tmpdir, i);
        snprintf(text, sizeof text, "param,value,when\nMMA,fma,\n%s%s", tiles[i], fixed);
        write_file(sp[i], text);
    }
    const char *fab = getenv("FABENCH_BIN") ? getenv("FABENCH_BIN") : "build/fabench";
    char got[3][256];
    double us[3];
    for (int run = 0; run < 3; run++) {
        if (run == 1) plant_time(res, "0.001");
        snprintf(cmd, sizeof cmd, "%s tune --device opencl:0 --shapes %s --results %s --space %s --rep-budget 0.01%s 2>%s",
                 fab, shapes, res, sp[run ? 1 : 0], run == 1 ? " --merge --rematch-budget 0.02" : " --quiet", log);
        assert_int_equal(system(cmd), 0);
        tuned_config(res, got[run], sizeof got[run], &us[run]);
        if (run == 1) { /* both were timed again: the planted time is gone, whichever won */
            char *text = NULL;
            size_t len = 0;
            FILE *f = fopen(log, "r");
            assert_non_null(f);
            assert_int_equal(getdelim(&text, &len, 0, f) > 0, 1);
            fclose(f);
            assert_non_null(strstr(text, "timed again"));
            assert_non_null(strstr(text, "contenders timed again, 0.02 s of repetitions each")); /* --rematch-budget */
            assert_true(strstr(text, "an earlier run's row") || strstr(text, "tuning.csv's row"));
            assert_non_null(strstr(text, ", the winner"));
            free(text);
            assert_true(us[1] > 0.01);
            /* --merge: the manifest keeps the first run's command and notes this one apart */
            char mp[600], *man = NULL, e2[FB_ERRLEN];
            size_t ml = 0;
            snprintf(mp, sizeof mp, "%s/manifest.csv", res);
            assert_int_equal(fb_read_file(mp, &man, &ml, e2, sizeof e2), 0);
            const char *plain = strstr(man, "\ntune.command,"), *upd = strstr(man, "\nupdate.1.tune.command,");
            const char *plain_end = plain ? strchr(plain + 1, '\n') : NULL, *merge_at = plain ? strstr(plain, "--merge") : NULL;
            const int plain_merged = merge_at && (!plain_end || merge_at < plain_end);
            if (!plain || !upd || plain_merged || !strstr(upd, "--merge")) fail_msg("manifest after a --merge tune:\n%s", man);
            free(man);
        }
    }
    csv_table *t;
    snprintf(p, sizeof p, "%s/explored.csv", res);
    assert_int_equal(csvt_read(p, &t, err, sizeof err), 0);
    assert_int_equal(t->nrows, 3); /* space 0's, the default's (first timed beside it), space 1's */
    int cc = csvt_col(t, "config");
    const char *dflt = t->rows[1][cc];
    assert_non_null(strstr(t->rows[1][csvt_col(t, "reason")], "what the run takes without the class's row"));
    assert_true(!strcmp(got[0], t->rows[0][cc]) || !strcmp(got[0], dflt));
    assert_true(!strcmp(got[1], t->rows[0][cc]) || !strcmp(got[1], dflt) || !strcmp(got[1], t->rows[2][cc]));
    assert_true(!strcmp(got[2], t->rows[2][cc]) || !strcmp(got[2], dflt));
    csvt_free(t);
}

/* The config column of explored.csv's row i in res. */
static void explored_config(const char *res, size_t i, char *buf, size_t n)
{
    char p[600], err[FB_ERRLEN];
    csv_table *t;
    snprintf(p, sizeof p, "%s/explored.csv", res);
    assert_int_equal(csvt_read(p, &t, err, sizeof err), 0);
    if (i >= t->nrows) fail_msg("%s: %zu rows, row %zu asked for", p, t->nrows, i);
    snprintf(buf, n, "%s", t->rows[i][csvt_col(t, "config")]);
    csvt_free(t);
}

/* The head-to-head keeps tuning.csv's row unless another contender beats it by more than
 * TUNE_KEEP_MARGIN; a failed contender never wins. */
static void test_rematch_pick(void **state)
{
    (void)state;
    const double us[] = {100.0, 100.0 * (1 + TUNE_KEEP_MARGIN / 2), 100.0 * (1 + 2 * TUNE_KEEP_MARGIN), INFINITY};
    assert_int_equal(tune_rematch_pick(us, 4, -1), 0);    /* no recorded row: the fastest */
    assert_int_equal(tune_rematch_pick(us, 4, 1), 1);     /* recorded, within the margin: kept */
    assert_int_equal(tune_rematch_pick(us, 4, 2), 0);     /* recorded, beaten by more: replaced */
    assert_int_equal(tune_rematch_pick(us, 4, 3), 0);     /* recorded, failed: replaced */
    assert_int_equal(tune_rematch_pick(us + 3, 1, 0), -1); /* nothing verified */
    const double tie[] = {INFINITY, 50.0, 50.0};
    assert_int_equal(tune_rematch_pick(tie, 3, -1), 1);   /* the first of equals */
}

/* One non-causal d=64 shape (class Sq = Skv = 64) and a space of four fma configurations
 * (BLOCK_N 16/32 x NUM_WARPS 1/2), in files named after tag under tmpdir. */
static void four_config_fixture(const char *tag, char *shapes, char *sp, size_t n)
{
    snprintf(shapes, n, "%s/%sshapes.csv", tmpdir, tag);
    snprintf(sp, n, "%s/%sspace.csv", tmpdir, tag);
    write_file(shapes, "name,batch,hq,hkv,sq,skv,d,causal\nl,1,2,2,64,64,64,0\n");
    write_file(sp, "param,value,when\nMMA,fma,\nBLOCK_M,32,\nBLOCK_N,16,\nBLOCK_N,32,\nNUM_WARPS,1,\nNUM_WARPS,2,\n"
                   "WARP_M,1,\nSTAGES,1,\nKPAD,1,\nSPLIT_KV,1,\nPACK_GQA,0,\n");
}

/* --strategy local starts its climb at the class's tuning.csv row, or, where the space does
 * not hold that row, at the candidate nearest to it; a class with no row starts at its
 * nearest class's row. */
static void test_tune_local_start(void **state)
{
    (void)state;
    char shapes[512], res[512], res2[512], sp[512], cmd[2048], got[256], first[256];
    four_config_fixture("l", shapes, sp, sizeof shapes);
    snprintf(res, sizeof res, "%s/lres", tmpdir);
    snprintf(res2, sizeof res2, "%s/lres2", tmpdir);
    const char *fab = getenv("FABENCH_BIN") ? getenv("FABENCH_BIN") : "build/fabench";
    const char *fmt = "%s tune --device opencl:0 --shapes %s --results %s --space %s --strategy %s --candidates 1 "
                      "--rep-budget 0.01 --quiet";
    snprintf(cmd, sizeof cmd, fmt, fab, shapes, res, sp, "exhaustive");
    assert_int_equal(system(cmd), 0);
    explored_config(res, 0, first, sizeof first);
    /* a recorded row the space holds, other than the one explored: the climb's first step */
    const char *a = "MMA=fma;BLOCK_M=32;BLOCK_N=32;NUM_WARPS=2;WARP_M=1;STAGES=1;SPLIT_KV=1;PACK_GQA=0;KPAD=1";
    const char *b = "MMA=fma;BLOCK_M=32;BLOCK_N=16;NUM_WARPS=1;WARP_M=1;STAGES=1;SPLIT_KV=1;PACK_GQA=0;KPAD=1";
    const char *start = strcmp(first, a) ? a : b;
    plant_field(res, "config", start);
    snprintf(cmd, sizeof cmd, fmt, fab, shapes, res, sp, "local");
    int before = count_in(res, "explored.csv"); /* (the default's row too, timed beside the best) */
    assert_int_equal(system(cmd), 0);
    explored_config(res, (size_t)before, got, sizeof got);
    assert_string_equal(got, start);
    /* a recorded row the space does not hold (64-row blocks): the nearest candidate */
    char src[600], dst[600], *text;
    size_t len;
    snprintf(src, sizeof src, "%s/tuning.csv", res);
    snprintf(dst, sizeof dst, "mkdir -p %s", res2);
    assert_int_equal(system(dst), 0);
    snprintf(dst, sizeof dst, "%s/tuning.csv", res2);
    assert_int_equal(fb_read_file(src, &text, &len, got, sizeof got), 0);
    write_file(dst, text);
    free(text);
    const char *away = strcmp(start, a) ? "MMA=fma;BLOCK_M=64;BLOCK_N=32;NUM_WARPS=2;WARP_M=1;STAGES=1;SPLIT_KV=1;PACK_GQA=0;KPAD=1"
                                        : "MMA=fma;BLOCK_M=64;BLOCK_N=16;NUM_WARPS=1;WARP_M=1;STAGES=1;SPLIT_KV=1;PACK_GQA=0;KPAD=1";
    const char *near = strcmp(start, a) ? a : b;
    plant_field(res2, "config", away);
    snprintf(cmd, sizeof cmd, fmt, fab, shapes, res2, sp, "local");
    assert_int_equal(system(cmd), 0);
    explored_config(res2, 0, got, sizeof got);
    assert_string_equal(got, near);
    /* a class with no row of its own (Sq = 128, another class) starts where its nearest
     * neighbour's row is: res's one row, set to the start above (not what an exhaustive
     * order asks first) */
    char shapes2[512];
    plant_field(res, "config", start);
    snprintf(shapes2, sizeof shapes2, "%s/lshapes2.csv", tmpdir);
    write_file(shapes2, "name,batch,hq,hkv,sq,skv,d,causal\nl2,1,2,2,128,64,64,0\n");
    snprintf(cmd, sizeof cmd, fmt, fab, shapes2, res, sp, "local");
    before = count_in(res, "explored.csv");
    assert_int_equal(system(cmd), 0);
    explored_config(res, (size_t)before, got, sizeof got);
    assert_string_equal(got, start);
}

/* --strategy halving on PoCL: one explored row per candidate (a survivor's row takes its
 * longer timing) and one for the runtime's default, timed beside the winner; the faster half
 * of four timed again in rung 1 and nothing after, the winner the faster of them there (or
 * the default, where it was not slower); the same command again resumes with no rung
 * timed again. */
static void test_tune_halving(void **state)
{
    (void)state;
    char shapes[512], res[512], sp[512], cmd[3072], errp[600], p[600], rung1_best[256] = "";
    four_config_fixture("h", shapes, sp, sizeof shapes);
    snprintf(res, sizeof res, "%s/hres", tmpdir);
    snprintf(errp, sizeof errp, "%s/hres.err", tmpdir);
    const char *fab = getenv("FABENCH_BIN") ? getenv("FABENCH_BIN") : "build/fabench";
    snprintf(cmd, sizeof cmd, "%s tune --device opencl:0 --shapes %s --results %s --space %s --strategy halving "
             "--candidates 4 --rep-budget 0.01 --seed 2 2> %s", fab, shapes, res, sp, errp);
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(system(cmd), 0);
        assert_int_equal(count_in(res, "explored.csv"), 5);
        char *text, e2[FB_ERRLEN];
        size_t len;
        assert_int_equal(fb_read_file(errp, &text, &len, e2, sizeof e2), 0);
        int rung1 = 0;
        double fastest = INFINITY;
        for (const char *q = text; (q = strstr(q, ": rung 1: ")); q++) {
            rung1++;
            const char *gap = strchr(q + 10, ' '); /* CONFIG TIME us */
            if (gap && pass == 0 && atof(gap + 1) > 0 && atof(gap + 1) < fastest) {
                fastest = atof(gap + 1);
                snprintf(rung1_best, sizeof rung1_best, "%.*s", (int)(gap - (q + 10)), q + 10);
            }
        }
        if (pass == 0 && (rung1 != 2 || strstr(text, ": rung 2: "))) fail_msg("rung 1 should time 2 again, rung 2 none:\n%s", text);
        if (pass == 1 && rung1 != 0) fail_msg("a resumed halving timed again:\n%s", text);
        free(text);
        if (pass == 0) { /* the fresh run's winner: the faster in the longer timing. (The resumed
                          * run's head-to-head times the earlier rows again, so its pick is noise's.) */
            csv_table *t0;
            snprintf(p, sizeof p, "%s/tuning.csv", res);
            assert_int_equal(csvt_read(p, &t0, e2, sizeof e2), 0);
            assert_int_equal(t0->nrows, 1);
            const char *won = t0->rows[0][csvt_col(t0, "config")];
            char dflt[256];
            explored_config(res, 4, dflt, sizeof dflt); /* the default's row, after the search's */
            if (strcmp(won, rung1_best) && strcmp(won, dflt))
                fail_msg("fresh halving's winner %s is neither rung 1's fastest %s nor the default %s", won, rung1_best, dflt);
            csvt_free(t0);
        }
    }
    csv_table *e, *t;
    char err[FB_ERRLEN];
    snprintf(p, sizeof p, "%s/explored.csv", res);
    assert_int_equal(csvt_read(p, &e, err, sizeof err), 0);
    snprintf(p, sizeof p, "%s/tuning.csv", res);
    assert_int_equal(csvt_read(p, &t, err, sizeof err), 0);
    assert_int_equal(t->nrows, 1);
    const char *win = t->rows[0][csvt_col(t, "config")];
    /* every row is halving's, timed, and the resumed run's winner is one of them */
    int cu = csvt_col(e, "median_us"), cf = csvt_col(e, "config"), cs = csvt_col(e, "strategy"), found = 0;
    for (size_t i = 0; i < e->nrows; i++) {
        assert_string_equal(e->rows[i][cs], "halving");
        assert_true(atof(e->rows[i][cu]) > 0);
        found += !strcmp(e->rows[i][cf], win);
    }
    assert_int_equal(found, 1);
    assert_string_equal(t->rows[0][csvt_col(t, "strategy")], "halving");
    csvt_free(e);
    csvt_free(t);
}

/* A row the declared space (kernels/space.csv) no longer holds, as a probe or a dropped
 * switch leaves in explored.csv and tuning.csv, never enters the head-to-head, however fast
 * its recorded time: under --merge the class's row is replaced by a declared configuration. */
static void test_tune_undeclared(void **state)
{
    (void)state;
    char shapes[512], res[512], sp[512], log[512], cmd[4096], p[600], err[FB_ERRLEN];
    snprintf(shapes, sizeof shapes, "%s/ushapes.csv", tmpdir);
    snprintf(res, sizeof res, "%s/ures", tmpdir);
    snprintf(sp, sizeof sp, "%s/uspace.csv", tmpdir);
    snprintf(log, sizeof log, "%s/undeclared.log", tmpdir);
    write_file(shapes, "name,batch,hq,hkv,sq,skv,d,causal\nu,1,2,2,64,64,64,0\n");
    write_file(sp, "param,value,when\nMMA,fma,\nBLOCK_M,32,\nBLOCK_N,32,\nNUM_WARPS,1,\nWARP_M,1,\nSTAGES,1,\n"
                   "KPAD,1,\nSPLIT_KV,1,\nPACK_GQA,0,\n");
    const char *fab = getenv("FABENCH_BIN") ? getenv("FABENCH_BIN") : "build/fabench";
    snprintf(cmd, sizeof cmd, "%s tune --device opencl:0 --shapes %s --results %s --space %s --rep-budget 0.01 --quiet", fab,
             shapes, res, sp);
    assert_int_equal(system(cmd), 0);
    /* BLOCK_M=256 is declared for MMA=mma only */
    const char *bad = "MMA=fma;BLOCK_M=256;BLOCK_N=16;NUM_WARPS=1;WARP_M=1;STAGES=1;SPLIT_KV=1;PACK_GQA=0;KPAD=1";
    csv_table *t;
    snprintf(p, sizeof p, "%s/explored.csv", res);
    assert_int_equal(csvt_read(p, &t, err, sizeof err), 0);
    assert_int_equal(t->nrows, 2); /* the candidate's and the default's, timed beside it */
    const char *row[64];
    int cc = csvt_col(t, "config"), cu = csvt_col(t, "median_us");
    assert_true(t->ncols <= 64);
    for (size_t k = 0; k < t->ncols; k++) row[k] = t->rows[0][k];
    row[cc] = bad;
    row[cu] = "0.001";
    assert_int_equal(csvt_add(t, row), 0);
    assert_int_equal(csvt_write_atomic(t, p, err, sizeof err), 0);
    csvt_free(t);
    plant_field(res, "config", bad);
    plant_time(res, "0.001");
    /* again with BLOCK_N=16 as well: a new row, so the earlier ones are stale */
    write_file(sp, "param,value,when\nMMA,fma,\nBLOCK_M,32,\nBLOCK_N,16,\nNUM_WARPS,1,\nWARP_M,1,\nSTAGES,1,\n"
                   "KPAD,1,\nSPLIT_KV,1,\nPACK_GQA,0,\n");
    snprintf(cmd, sizeof cmd, "%s tune --device opencl:0 --shapes %s --results %s --space %s --rep-budget 0.01 --merge 2>%s",
             fab, shapes, res, sp, log);
    assert_int_equal(system(cmd), 0);
    char *text;
    size_t len;
    assert_int_equal(fb_read_file(log, &text, &len, p, sizeof p), 0);
    if (!strstr(text, "not in ") || !strstr(text, "any more; replaced")) fail_msg("no word of the undeclared row:\n%s", text);
    char line[512];
    snprintf(line, sizeof line, "timed again %s", bad);
    if (strstr(text, line)) fail_msg("the undeclared row was timed again:\n%s", text);
    if (!strstr(text, "timed again")) fail_msg("the declared earlier row was not timed again:\n%s", text);
    free(text);
    double us;
    char got[256];
    tuned_config(res, got, sizeof got, &us);
    assert_string_not_equal(got, bad);
    assert_true(us > 0.01);
    /* the same command again explores nothing new: the earlier rows are timed again among
     * themselves, and the undeclared one is still neither among them nor kept */
    plant_field(res, "config", bad);
    plant_time(res, "0.001");
    assert_int_equal(system(cmd), 0);
    assert_int_equal(fb_read_file(log, &text, &len, p, sizeof p), 0);
    if (strstr(text, line) || !strstr(text, "timed again") || !strstr(text, "any more; replaced"))
        fail_msg("a resumed run:\n%s", text);
    free(text);
    tuned_config(res, got, sizeof got, &us);
    assert_string_not_equal(got, bad);
    assert_true(us > 0.01);
    /* no earlier rows at all (explored.csv gone): the undeclared recorded row, however fast,
     * is replaced by this run's best or the default all the same */
    plant_field(res, "config", bad);
    plant_time(res, "0.001");
    snprintf(p, sizeof p, "%s/explored.csv", res);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(system(cmd), 0);
    tuned_config(res, got, sizeof got, &us);
    assert_string_not_equal(got, bad);
    assert_true(us > 0.01);
    /* a probe's --space under --merge that holds only the undeclared configuration, no
     * earlier rows, and tuning.csv's declared row claiming to be slow: the probe is explored
     * (a row of its own) but never timed against it, and the class keeps a declared
     * winner, timed again by itself */
    write_file(sp, "param,value,when\nMMA,fma,\nBLOCK_M,256,\nBLOCK_N,16,\nNUM_WARPS,1,\nWARP_M,1,\nSTAGES,1,\n"
                   "KPAD,1,\nSPLIT_KV,1,\nPACK_GQA,0,\n");
    assert_int_equal(unlink(p), 0);
    plant_time(res, "1000000000");
    assert_int_equal(system(cmd), 0);
    snprintf(p, sizeof p, "%s/explored.csv", res);
    assert_int_equal(csvt_read(p, &t, err, sizeof err), 0);
    int probed = 0;
    for (size_t i = 0; i < t->nrows; i++)
        probed |= !strcmp(t->rows[i][csvt_col(t, "config")], bad) && !strcmp(t->rows[i][csvt_col(t, "status")], "ok");
    csvt_free(t);
    assert_true(probed);
    assert_int_equal(fb_read_file(log, &text, &len, err, sizeof err), 0);
    if (strstr(text, line)) fail_msg("the probe's undeclared best was timed again:\n%s", text);
    if (!strstr(text, "this run's best is not in ")) fail_msg("no word that the probe's best cannot win:\n%s", text);
    free(text);
    tuned_config(res, got, sizeof got, &us);
    assert_string_not_equal(got, bad);
    assert_true(us > 0.01 && us < 1e8);
}

/* run --tune-missing: where its note goes in a config_source (after "tuned CLASS", before
 * what --config or a ragged batch add; at the end of a fallback's), and which table it
 * tunes into (--tuning's, else the default where it exists, else beside --out) */
static void test_tune_missing_text(void **state)
{
    (void)state;
    const char *note = " (tuned on first sight, 3 candidates, 1.5 s)";
    char src[200] = "tuned bf16-d64-c1-g2-q32-k64-w2 + --config";
    tune_missing_annotate(src, sizeof src, "bf16-d64-c1-g2-q32-k64-w2", note);
    assert_string_equal(src, "tuned bf16-d64-c1-g2-q32-k64-w2 (tuned on first sight, 3 candidates, 1.5 s) + --config");
    snprintf(src, sizeof src, "tuned bf16-d64-c1-g2-q32-k64-w2");
    tune_missing_annotate(src, sizeof src, "bf16-d64-c1-g2-q32-k64-w2", note);
    assert_string_equal(src, "tuned bf16-d64-c1-g2-q32-k64-w2 (tuned on first sight, 3 candidates, 1.5 s)");
    /* a longer class key that begins with the shape's is another class: the note goes last */
    snprintf(src, sizeof src, "default for short-prefill (no fallback.csv beside the tuning table)");
    tune_missing_annotate(src, sizeof src, "bf16-d64-c1-g2-q32-k64", " (tuning on first sight verified nothing in 2.0 s)");
    assert_string_equal(src, "default for short-prefill (no fallback.csv beside the tuning table) (tuning on first sight "
                             "verified nothing in 2.0 s)");
    char small[40] = "tuned bf16-d64-c1-g2-q32-k64-w2";
    tune_missing_annotate(small, sizeof small, "bf16-d64-c1-g2-q32-k64-w2", note); /* no room: left whole */
    assert_string_equal(small, "tuned bf16-d64-c1-g2-q32-k64-w2");

    char path[300], dflt[300];
    tune_missing_table("given/tuning.csv", "nowhere/tuning.csv", "o/perf.csv", path, sizeof path);
    assert_string_equal(path, "given/tuning.csv");
    tune_missing_table(NULL, "no/such/dir/tuning.csv", "out/dir/perf.csv", path, sizeof path);
    assert_string_equal(path, "out/dir/tuning.csv");
    tune_missing_table(NULL, "no/such/dir/tuning.csv", "perf.csv", path, sizeof path);
    assert_string_equal(path, "tuning.csv");
    snprintf(dflt, sizeof dflt, "%s/tuning.csv", tmpdir);
    FILE *f = fopen(dflt, "w");
    assert_non_null(f);
    fclose(f);
    tune_missing_table(NULL, dflt, "out/dir/perf.csv", path, sizeof path);
    assert_string_equal(path, dflt);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/fabench-test-tune-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_space_errors),
        cmocka_unit_test(test_space_enumerate),
        cmocka_unit_test(test_config_text_longest),
        cmocka_unit_test(test_default_split),
        cmocka_unit_test(test_kv_warps_overlay),
        cmocka_unit_test(test_class_parse_refuses),
        cmocka_unit_test(test_default_edges),
        cmocka_unit_test(test_fault_overlay),
        cmocka_unit_test(test_default_key_warps),
        cmocka_unit_test(test_class_key),
        cmocka_unit_test(test_lookup_work_bucket),
        cmocka_unit_test(test_ragged_classes),
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_tune_end_to_end),
        cmocka_unit_test(test_tune_merge),
        cmocka_unit_test(test_tune_undeclared),
        cmocka_unit_test(test_tune_local_start),
        cmocka_unit_test(test_tune_halving),
        cmocka_unit_test(test_rematch_pick),
        cmocka_unit_test(test_tune_missing_text),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
