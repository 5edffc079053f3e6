/* test_fallback.c: what `run --tuned` takes for a shape without a tuned class: the regimes,
 * the features, fallback.csv's conditions and rows (written, read back, the same picks),
 * the rules fitted to a small fixture (tests/data/fallback/) and to the committed H100 and
 * H200 tables (a decode shape never takes a prefill's rule), the per-regime defaults (valid
 * for generated shapes on every device the tests describe), the leave-one-class-out check
 * on the fixture, and the lookup chain: tuned class, rule, default. No device needed. */
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

#include "csvio.h"
#include "fallback.h"
#include "fallback_fit.h"
#include "shapes.h"
#include "test_shape.h"
#include "test_skip.h"
#include "tune.h"

static char tmpdir[256], root[1024];

/* the devices the tests describe (tests/test_tune.c's) */
static const rt_device_info hop = {.compute_units = 132, .max_group_size = 1024, .shared_bytes = 227 * 1024,
                                   .static_shared_bytes = 48 * 1024,
                                   .features = RT_FEAT_MMA_SYNC | RT_FEAT_WGMMA | RT_FEAT_TMA,
                                   .max_grid = {2147483647, 65535, 65535}};
static const rt_device_info hop_notma = {.compute_units = 132, .max_group_size = 1024, .shared_bytes = 227 * 1024,
                                         .static_shared_bytes = 48 * 1024, .features = RT_FEAT_MMA_SYNC | RT_FEAT_WGMMA};
static const rt_device_info a100 = {.compute_units = 108, .max_group_size = 1024, .shared_bytes = 163 * 1024,
                                    .static_shared_bytes = 48 * 1024, .features = RT_FEAT_MMA_SYNC};
static const rt_device_info small = {.compute_units = 46, .max_group_size = 1024, .shared_bytes = 99 * 1024,
                                     .static_shared_bytes = 48 * 1024, .features = RT_FEAT_MMA_SYNC};
static const rt_device_info amd = {.compute_units = 304, .max_group_size = 1024, .shared_bytes = 64 * 1024,
                                   .static_shared_bytes = 64 * 1024, .features = RT_FEAT_MFMA,
                                   .max_grid = {2147483647, 65535, 65535}};
static const rt_device_info cpu = {.compute_units = 2, .max_group_size = 4096, .shared_bytes = 512 * 1024,
                                   .static_shared_bytes = 512 * 1024};

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static shape_t paged(shape_t s, int page)
{
    s.page = page;
    return s;
}

static shape_t ragged(shape_t s)
{
    s.nlens = 2;
    s.lens[0] = 0.5;
    s.lens[1] = 1.0;
    return s;
}

/* tests/data/gen-shapes-dev.csv: tools/gen-shapes.py --seed 1 (a development seed) */
static shape_list_t dev_shapes(void)
{
    char p[1200], err[FB_ERRLEN];
    shape_list_t l;
    snprintf(p, sizeof p, "%s/tests/data/gen-shapes-dev.csv", root);
    int rc = shapes_load(p, &l, err, sizeof err);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, 0);
    assert_true(l.n >= 100);
    return l;
}

static void test_regimes(void **state)
{
    (void)state;
    const struct {
        shape_t s;
        fb_regime r;
        int dec;
    } cases[] = {
        {mk(16, 32, 8, 1, 4096, 128, 1), FB_REG_DECODE, 1},
        {mk(1, 16, 1, 16, 7777, 128, 0), FB_REG_DECODE, 1},       /* Sq up to 16: decode */
        {mk(1, 16, 1, 17, 7777, 128, 0), FB_REG_SHORT, 0},
        {mk(128, 32, 8, 256, 256, 128, 1), FB_REG_SHORT, 0},
        {mk(128, 32, 8, 257, 257, 128, 1), FB_REG_LONG, 0},
        {mk(1, 32, 8, 512, 8192, 128, 1), FB_REG_LONG, 0},         /* chunked prefill */
        {mk(4, 32, 32, 4096, 1000, 96, 0), FB_REG_LONG, 0},        /* Sq > Skv */
        {mk(1, 1, 1, 1, 1, 64, 0), FB_REG_DECODE, 1},              /* 1 x 1 */
        {paged(mk(64, 32, 8, 1, 4096, 128, 1), 16), FB_REG_PAGED, 1},
        {paged(mk(4, 32, 8, 4096, 4096, 128, 1), 64), FB_REG_PAGED, 0},
        {ragged(mk(8, 32, 8, 1024, 1024, 128, 1)), FB_REG_RAGGED, 0},
        {ragged(mk(8, 32, 8, 1, 4096, 128, 1)), FB_REG_RAGGED, 1},
        {paged(ragged(mk(8, 32, 8, 1024, 1024, 128, 1)), 16), FB_REG_PAGED, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (fallback_regime(&cases[i].s) != cases[i].r || fallback_decode_like(&cases[i].s) != cases[i].dec)
            fail_msg("case %zu: regime %s decode %d, want %s %d", i, fallback_regime_name(fallback_regime(&cases[i].s)),
                     fallback_decode_like(&cases[i].s), fallback_regime_name(cases[i].r), cases[i].dec);
        fb_regime back;
        assert_int_equal(fallback_regime_parse(fallback_regime_name(cases[i].r), &back), 0);
        assert_int_equal(back, cases[i].r);
    }
    /* a mixed batch: three of four sequences decode, so it counts as decoding */
    shape_t mixed = mk(8, 32, 8, 2048, 4096, 128, 1);
    mixed.nlens = 1;
    mixed.lens[0] = 1.0;
    mixed.nqlens = 4;
    double qp[4] = {1, 1e-4, 1e-4, 1e-4};
    memcpy(mixed.qlens, qp, sizeof qp);
    assert_int_equal(fallback_regime(&mixed), FB_REG_RAGGED);
    assert_int_equal(fallback_decode_like(&mixed), 1);
    fb_regime r;
    assert_int_equal(fallback_regime_parse("prefill", &r), -1);
}

static void test_features(void **state)
{
    (void)state;
    double f[FB_NFEAT];
    shape_t dec = mk(5, 16, 1, 1, 7777, 128, 0); /* the MQA decode */
    fallback_features(&dec, &hop, f);
    assert_true(f[FB_F_DECODE] == 1 && f[FB_F_D] == 128 && f[FB_F_GQA] == 16 && f[FB_F_CAUSAL] == 0);
    assert_true(f[FB_F_SQ] == 1 && f[FB_F_SKV] == 7777 && f[FB_F_KVQ] == 7777);
    assert_true(fabs(f[FB_F_FILL] - 5.0 / 132) < 1e-12); /* B x Hkv work-groups */
    shape_t pre = mk(2, 32, 8, 300, 300, 64, 1);
    fallback_features(&pre, &a100, f);
    assert_true(fabs(f[FB_F_FILL] - 2.0 * 32 * 3 / 108) < 1e-12); /* B x Hq x ceil(Sq / 128) */
    shape_t rag = ragged(mk(4, 8, 2, 256, 256, 64, 1));          /* sequences of 128, 256, 128, 256 */
    fallback_features(&rag, &cpu, f);
    assert_true(fabs(f[FB_F_FILL] - 8.0 * (1 + 2 + 1 + 2) / 2) < 1e-12);
    shape_t chunk = mk(1, 32, 8, 512, 8192, 128, 1);
    fallback_features(&chunk, &hop, f);
    assert_true(f[FB_F_KVQ] == 16);
}

static void test_conditions_text(void **state)
{
    (void)state;
    fb_rule r = {0};
    char err[FB_ERRLEN], text[512];
    assert_int_equal(fallback_conds_parse("decode=1 & d<=80 & fill>1.94", &r, err, sizeof err), 0);
    assert_int_equal(r.ncond, 3);
    assert_true(r.cond[0].feat == FB_F_DECODE && r.cond[0].gt == 1 && r.cond[0].thr == 0.5);
    assert_true(r.cond[1].feat == FB_F_D && r.cond[1].gt == 0 && r.cond[1].thr == 80);
    assert_true(r.cond[2].feat == FB_F_FILL && r.cond[2].gt == 1 && r.cond[2].thr == 1.94);
    fallback_conds_str(&r, text, sizeof text);
    assert_string_equal(text, "decode=1 & d<=80 & fill>1.94");
    double f[FB_NFEAT] = {[FB_F_DECODE] = 1, [FB_F_D] = 64, [FB_F_FILL] = 2};
    r.regime = FB_REG_PAGED;
    assert_true(fallback_rule_matches(&r, FB_REG_PAGED, f));
    assert_false(fallback_rule_matches(&r, FB_REG_DECODE, f)); /* another regime's rule */
    f[FB_F_FILL] = 1.94;
    assert_false(fallback_rule_matches(&r, FB_REG_PAGED, f));
    assert_int_equal(fallback_conds_parse("any", &r, err, sizeof err), 0);
    assert_int_equal(r.ncond, 0);
    fallback_conds_str(&r, text, sizeof text);
    assert_string_equal(text, "any");
    static const char *const bad[] = {"", "size<=3", "d<80", "d<=", "decode<=1", "causal=2", "d<=80 &", "d<=80 d>64", "fill>x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (fallback_conds_parse(bad[i], &r, err, sizeof err) == 0) fail_msg("'%s' parsed", bad[i]);
    fallback_split_str(0, text, sizeof text);
    assert_string_equal(text, "auto");
    fallback_split_str(3.88, text, sizeof text);
    assert_string_equal(text, "fill=3.88");
}

/* A rule's configuration made for a shape: SPLIT_KV from the fill target, PACK_GQA within
 * what the shape allows, what a ragged batch cannot do dropped, kconfig_check's verdict. */
static void test_instantiate(void **state)
{
    (void)state;
    kconfig c;
    char reason[512];
    const char *x = "MMA=mma;BLOCK_M=16;BLOCK_N=32;NUM_WARPS=2;WARP_M=1;STAGES=3;PACK_GQA=1;KPAD=1;KV_WARPS=2";
    shape_t w128 = mk(16, 32, 8, 1, 1024, 128, 1), mqa = mk(5, 16, 1, 1, 7777, 128, 0);
    assert_int_equal(fallback_instantiate(x, 0.97, &w128, DT_BF16, &hop, &c, reason, sizeof reason), 0);
    assert_int_equal(c.split_kv, 1); /* 128 work-groups already fill 0.97 x 132 */
    assert_int_equal(fallback_instantiate(x, 0.97, &mqa, DT_BF16, &hop, &c, reason, sizeof reason), 0);
    assert_int_equal(c.split_kv, 26); /* 5 work-groups: split to about 128 */
    assert_int_equal(c.pack_gqa, 1);
    /* every field is marked set: completing it again changes nothing */
    kconfig again = c;
    kconfig_complete(&again, &hop, &mqa, DT_BF16);
    char a[KCONFIG_STR_MAX], b[KCONFIG_STR_MAX];
    kconfig_str(&c, a, sizeof a);
    kconfig_str(&again, b, sizeof b);
    assert_string_equal(a, b);
    /* the split never passes the key tiles nor 32 */
    shape_t shortk = mk(1, 8, 1, 1, 300, 128, 0);
    assert_int_equal(fallback_instantiate(x, 32, &shortk, DT_BF16, &hop, &c, reason, sizeof reason), 0);
    assert_int_equal(c.split_kv, 5); /* 300 keys, 64 a step */
    /* one query head a KV head: nothing to pack */
    shape_t mha = mk(16, 16, 16, 1, 1024, 128, 1);
    assert_int_equal(fallback_instantiate(x, 1, &mha, DT_BF16, &hop, &c, reason, sizeof reason), 0);
    assert_int_equal(c.pack_gqa, 0);
    /* packed 64-row stripes need Sq % 64 = 0: unpacked otherwise */
    const char *p3 = "MMA=wgmma;BLOCK_M=192;BLOCK_N=128;NUM_WARPS=12;WARP_M=1;STAGES=2;PACK_GQA=3;KPAD=1;WG_SWIZZLE=1;WG_TMA=1;WG_WS=1";
    shape_t odd = mk(2, 32, 8, 1000, 1000, 128, 1);
    assert_int_equal(fallback_instantiate(p3, 0, &odd, DT_BF16, &hop, &c, reason, sizeof reason), 0);
    assert_int_equal(c.pack_gqa, 0);
    shape_t even = mk(2, 32, 8, 1024, 1024, 128, 1);
    assert_int_equal(fallback_instantiate(p3, 0, &even, DT_BF16, &hop, &c, reason, sizeof reason), 0);
    assert_int_equal(c.pack_gqa, 3);
    /* a rule learned on causal classes, for a shape that is not causal: the switches the
     * space offers causal shapes only are off; every such switch of kernels/space.csv is one
     * fallback_instantiate turns off */
    const char *cz = "MMA=wgmma;BLOCK_M=192;BLOCK_N=128;NUM_WARPS=12;WARP_M=1;STAGES=2;PACK_GQA=0;KPAD=1;WG_SWIZZLE=1;WG_TMA=1;"
                     "WG_WS=1;WG_SKIP=1;WG_HALF=2;MASK_BOUND=1;GRID_LPT=1";
    shape_t nc = mk(2, 32, 32, 2000, 2000, 96, 0), cs = mk(2, 32, 32, 2000, 2000, 96, 1);
    assert_int_equal(fallback_instantiate(cz, 0, &nc, DT_BF16, &hop, &c, reason, sizeof reason), 0);
    assert_true(c.wg_half == 0 && c.mask_bound == 0 && c.grid_lpt == 0 && c.wg_skip == 1);
    assert_int_equal(fallback_instantiate(cz, 0, &cs, DT_BF16, &hop, &c, reason, sizeof reason), 0);
    assert_true(c.wg_half == 2 && c.mask_bound == 1 && c.grid_lpt == 1);
    char sp[1200];
    snprintf(sp, sizeof sp, "%s/kernels/space.csv", root);
    FILE *f = fopen(sp, "r");
    assert_non_null(f);
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char *comma = strchr(line, ',');
        if (!comma || !strstr(comma, "causal")) continue;
        *comma = 0;
        int listed = 0;
        for (const char *const *k = fallback_causal_only; *k; k++) listed |= !strcmp(*k, line);
        if (!listed) fail_msg("kernels/space.csv offers %s to causal shapes only; fallback_causal_only lacks it", line);
    }
    fclose(f);
    /* a ragged batch: no split, no packing */
    shape_t rg = ragged(mk(8, 32, 8, 1, 4096, 128, 1));
    assert_int_equal(fallback_instantiate(x, 4, &rg, DT_BF16, &hop, &c, reason, sizeof reason), 0);
    assert_true(c.split_kv == 1 && c.pack_gqa == 0);
    /* what the device or the head dim cannot take is refused, with kconfig_check's reason */
    assert_int_equal(fallback_instantiate(p3, 0, &odd, DT_BF16, &a100, &c, reason, sizeof reason), ST_UNSUPPORTED);
    assert_non_null(strstr(reason, "sm_90"));
    shape_t d192 = mk(2, 32, 8, 1024, 1024, 192, 1);
    assert_int_equal(fallback_instantiate(p3, 0, &d192, DT_BF16, &hop, &c, reason, sizeof reason), ST_UNSUPPORTED);
    assert_non_null(strstr(reason, "head dims"));
    assert_int_equal(fallback_instantiate("BLOCK_M=17", 0, &odd, DT_BF16, &hop, &c, reason, sizeof reason), ST_UNSUPPORTED);
}

/* The per-regime defaults pass kconfig_check for every generated shape (and a few edges) on
 * every device the tests describe, in every dtype; a decode shape never gets a prefill tile. */
static void test_defaults_valid(void **state)
{
    (void)state;
    shape_list_t l = dev_shapes();
    const rt_device_info *devs[] = {&hop, &hop_notma, &a100, &small, &amd, &cpu};
    const char *names[] = {"hopper", "hopper-no-tma", "a100", "small", "amd", "cpu"};
    const dtype_t dts[] = {DT_BF16, DT_FP16, DT_FP32};
    shape_t extra[] = {mk(5, 16, 1, 1, 7777, 128, 0), mk(1, 1, 1, 1, 1, 32, 0),  mk(3, 48, 6, 4, 5000, 192, 1),
                       mk(2, 28, 4, 700, 700, 96, 0), mk(1, 8, 8, 4096, 1000, 80, 0), mk(64, 64, 8, 8, 3000, 256, 1)};
    int regimes[FB_NREG] = {0};
    long checked = 0;
    for (size_t di = 0; di < sizeof devs / sizeof devs[0]; di++)
        for (size_t ti = 0; ti < sizeof dts / sizeof dts[0]; ti++)
            for (size_t i = 0; i < l.n + sizeof extra / sizeof extra[0]; i++) {
                const shape_t *s = i < l.n ? &l.v[i] : &extra[i - l.n];
                kconfig c;
                char reason[512];
                fallback_default(s, dts[ti], devs[di], &c);
                if (kconfig_check(&c, devs[di], s, dts[ti], reason, sizeof reason) != ST_OK)
                    fail_msg("%s on %s in %s: %s", s->name, names[di], dtype_name(dts[ti]), reason);
                regimes[fallback_regime(s)]++;
                checked++;
                if (fallback_decode_like(s) && !shape_ragged(s) && (c.mma == MMA_WGMMA || c.block_m > 64))
                    fail_msg("%s on %s: a prefill tile for a decode shape (MMA %d, BLOCK_M %d)", s->name, names[di], c.mma, c.block_m);
            }
    for (int r = 0; r < FB_NREG; r++)
        if (!regimes[r]) fail_msg("no generated shape of regime %s", fallback_regime_name((fb_regime)r));
    print_message("%ld defaults checked (%zu shapes, 6 devices, 3 dtypes)\n", checked, l.n + sizeof extra / sizeof extra[0]);
    /* where the device has them: warp-specialised wgmma for long prefill, mma for decode */
    kconfig c;
    shape_t pre = mk(2, 32, 32, 2000, 2000, 96, 0);
    fallback_default(&pre, DT_BF16, &hop, &c);
    assert_true(c.mma == MMA_WGMMA && c.wg_tma && c.wg_ws);
    fallback_default(&pre, DT_BF16, &a100, &c);
    assert_int_equal(c.mma, MMA_SYNC);
    /* short prefill: the short-prefill probe's forms (fallback_default) */
    shape_t sp64 = mk(4, 16, 16, 239, 239, 64, 1), sp128 = mk(3, 32, 1, 256, 6918, 128, 1), sp32 = mk(2, 16, 4, 171, 171, 32, 0);
    assert_int_equal(fallback_regime(&sp64), FB_REG_SHORT);
    fallback_default(&sp64, DT_BF16, &hop, &c);
    assert_true(c.mma == MMA_WGMMA && c.block_m == 64 && c.wg_tma && !c.wg_ws);
    fallback_default(&sp128, DT_BF16, &hop, &c);
    assert_true(c.mma == MMA_WGMMA && c.block_m == 128 && c.wg_ws && c.wg_pingpong);
    fallback_default(&sp32, DT_BF16, &hop, &c);
    assert_true(c.mma == MMA_SYNC && c.block_m == 64 && c.block_n == 64 && c.num_warps == 4);
    fallback_default(&sp128, DT_BF16, &a100, &c);
    assert_true(c.mma == MMA_SYNC && c.block_m == 64 && c.block_n == 64);
    shape_t dec = mk(2, 32, 4, 4, 3000, 128, 1); /* 4 x 8 = 32 packed rows: two warps of 16 */
    fallback_default(&dec, DT_BF16, &hop, &c);
    assert_true(c.mma == MMA_SYNC && c.block_m == 32 && c.pack_gqa == 1);
    shapes_free(&l);
}

static fit_set *load_fixture(void)
{
    char dir[1200], err[FB_ERRLEN] = "";
    snprintf(dir, sizeof dir, "%s/tests/data/fallback", root);
    fit_set *fs = NULL;
    int rc = fit_load(dir, NULL, "cuda", NULL, 0, &fs, err, sizeof err);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, 0);
    return fs;
}

/* The fixture: three decode classes at B x Hkv = 128 won by two key warps unsplit, three at
 * 512 by one warp, three long prefills by one mma tile; a class whose shape no suite has. */
static void test_fit_fixture(void **state)
{
    (void)state;
    fit_set *fs = load_fixture();
    size_t ncls, nlive, nskip, ncand;
    fit_counts(fs, &ncls, &nlive, &nskip, &ncand);
    assert_int_equal(ncls, 9);
    assert_int_equal(nlive, 9);
    assert_int_equal(nskip, 1);
    char first[96];
    assert_int_equal(fit_unreproduced(fs, first, sizeof first), 0);
    assert_string_equal(fit_gpu(fs), "Fixture GPU");
    assert_int_equal(fit_device(fs)->compute_units, 132);
    fb_rules r;
    assert_int_equal(fit_rules(fs, &r), 0);
    assert_int_equal(r.n, 3);
    char conds[256];
    fallback_conds_str(&r.v[0], conds, sizeof conds);
    assert_string_equal(conds, "fill<=2");
    assert_non_null(strstr(r.v[0].config, "KV_WARPS=2"));
    assert_null(strstr(r.v[0].config, "SPLIT_KV"));
    assert_true(r.v[0].fill == 0.97); /* its own split: 128 work-groups over 132 compute units */
    fallback_conds_str(&r.v[1], conds, sizeof conds);
    assert_string_equal(conds, "fill>2");
    assert_true(r.v[1].regime == FB_REG_DECODE && r.v[1].fill == 3.88);
    assert_true(r.v[2].regime == FB_REG_LONG && r.v[2].ncond == 0 && r.v[2].fill == 0);
    for (size_t i = 0; i < r.n; i++) {
        assert_int_equal(r.v[i].id, (int)i + 1);
        assert_true(r.v[i].classes == 3 && r.v[i].within10 == 3 && r.v[i].untimed == 0 && r.v[i].geomean == 1.0);
        assert_non_null(strstr(r.v[i].why, "fitted on 3 classes"));
    }
    fallback_rules_free(&r);
    fit_free(fs);
}

/* fallback.csv written and read back picks the same configurations, with the same source,
 * for every generated shape: the fixture's rules, and the H100's committed tables' */
static void roundtrip(fit_set *fs, const rt_device_info *dev, const shape_list_t *l)
{
    fb_rules mem, back;
    char p[600], err[FB_ERRLEN];
    assert_int_equal(fit_rules(fs, &mem), 0);
    csv_table *t = csvt_new(fallback_header, fallback_ncols);
    assert_non_null(t);
    assert_int_equal(fallback_table_add(t, fit_gpu(fs), fit_backend(fs), &mem), 0);
    snprintf(p, sizeof p, "%s/fallback.csv", tmpdir);
    assert_int_equal(csvt_write_atomic(t, p, err, sizeof err), 0);
    csvt_free(t);
    int rc = fallback_read(p, fit_gpu(fs), fit_backend(fs), &back, err, sizeof err);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(back.n, mem.n);
    for (size_t i = 0; i < mem.n; i++) {
        assert_int_equal(back.v[i].id, mem.v[i].id);
        assert_int_equal(back.v[i].regime, mem.v[i].regime);
        assert_int_equal(back.v[i].ncond, mem.v[i].ncond);
        for (int k = 0; k < mem.v[i].ncond; k++)
            assert_true(back.v[i].cond[k].feat == mem.v[i].cond[k].feat && back.v[i].cond[k].gt == mem.v[i].cond[k].gt &&
                        back.v[i].cond[k].thr == mem.v[i].cond[k].thr);
        assert_string_equal(back.v[i].config, mem.v[i].config);
        assert_true(back.v[i].fill == mem.v[i].fill);
    }
    long rules_used = 0;
    for (size_t i = 0; i < l->n; i++) {
        kconfig a, b;
        char sa[600], sb[600], ta[KCONFIG_STR_MAX], tb[KCONFIG_STR_MAX];
        const dtype_t dt = l->v[i].has_dtype ? l->v[i].dtype : DT_BF16;
        long ka = fallback_pick(&mem, "fallback.csv", &l->v[i], dt, dev, NULL, &a, sa, sizeof sa);
        long kb = fallback_pick(&back, "fallback.csv", &l->v[i], dt, dev, NULL, &b, sb, sizeof sb);
        kconfig_str(&a, ta, sizeof ta);
        kconfig_str(&b, tb, sizeof tb);
        assert_int_equal(ka, kb);
        assert_string_equal(sa, sb);
        assert_string_equal(ta, tb);
        rules_used += ka >= 0;
    }
    print_message("%s: %zu rules, %ld of %zu shapes took one\n", fit_gpu(fs), mem.n, rules_used, l->n);
    assert_true(rules_used > 0);
    fallback_rules_free(&mem);
    fallback_rules_free(&back);
}

static fit_set *load_committed(const char *slug)
{
    char dir[1200], err[FB_ERRLEN] = "";
    snprintf(dir, sizeof dir, "%s/results/%s", root, slug);
    fit_set *fs = NULL;
    if (access(dir, R_OK) != 0) return NULL;
    int rc = fit_load(dir, NULL, "cuda", NULL, 0, &fs, err, sizeof err);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, 0);
    return fs;
}

static void test_fit_roundtrip(void **state)
{
    (void)state;
    shape_list_t l = dev_shapes();
    fit_set *fs = load_fixture();
    roundtrip(fs, fit_device(fs), &l);
    fit_free(fs);
    fs = load_committed("nvidia-h100-80gb-hbm3");
    if (!fs) {
        shapes_free(&l);
        SKIP_BECAUSE("results/nvidia-h100-80gb-hbm3 is not in this checkout");
    }
    roundtrip(fs, fit_device(fs), &l);
    fit_free(fs);
    shapes_free(&l);
}

/* With the rules fitted to the committed H100 and H200 tables, a decode shape takes a rule of
 * its own regime (in the paged and ragged regimes one that says decode=1) or the decode
 * default, never a prefill's; the MQA decode, which the nearest-class lookup gave a
 * q4096 prefill class's configuration, now splits its cache over the GPU. */
static void test_decode_never_prefill(void **state)
{
    (void)state;
    shape_list_t l = dev_shapes();
    const char *slugs[] = {"nvidia-h100-80gb-hbm3", "nvidia-h200"};
    int any = 0;
    for (size_t g = 0; g < 2; g++) {
        fit_set *fs = load_committed(slugs[g]);
        if (!fs) continue;
        any = 1;
        fb_rules r;
        assert_int_equal(fit_rules(fs, &r), 0);
        for (size_t i = 0; i < r.n; i++) { /* every rule says which kind of work it serves */
            int has = 0;
            for (int k = 0; k < r.v[i].ncond; k++) has |= r.v[i].cond[k].feat == FB_F_DECODE;
            if ((r.v[i].regime == FB_REG_PAGED || r.v[i].regime == FB_REG_RAGGED) && !has)
                fail_msg("%s rule %d (%s) does not say decode=0 or 1", slugs[g], r.v[i].id, fallback_regime_name(r.v[i].regime));
        }
        shape_t mqa = mk(5, 16, 1, 1, 7777, 128, 0);
        unsigned seed = 12345;
        for (size_t i = 0; i < l.n + 200; i++) {
            shape_t s;
            if (i < l.n) s = l.v[i];
            else { /* more decode shapes: random heads, lengths, batches; some paged */
                static const int hq[] = {8, 16, 32, 48, 64, 71}, ds[] = {32, 64, 80, 96, 128, 192, 256};
                seed = seed * 1103515245u + 12345u;
                const int h = hq[(seed >> 8) % 6], kv = (seed >> 12) % 3 == 0 ? 1 : (seed >> 12) % 3 == 1 ? h : (h % 8 ? h : 8);
                s = mk(1 + (int)((seed >> 16) % 64), h, kv, 1 + (int)((seed >> 4) % 8), 100 + (int)((seed >> 3) % 30000),
                       ds[(seed >> 20) % 7], (int)((seed >> 24) & 1));
                if ((seed >> 26) % 4 == 0) s.page = 16 << ((seed >> 28) % 3);
            }
            if (i == l.n) s = mqa;
            if (!fallback_decode_like(&s)) continue;
            kconfig c;
            char src[600];
            const long k = fallback_pick(&r, "fallback.csv", &s, DT_BF16, fit_device(fs), NULL, &c, src, sizeof src);
            if (k >= 0) {
                const fb_rule *ru = &r.v[k];
                int dec_ok = ru->regime == FB_REG_DECODE;
                for (int q = 0; q < ru->ncond; q++)
                    if (ru->cond[q].feat == FB_F_DECODE) dec_ok = ru->cond[q].gt == 1;
                if (ru->regime != fallback_regime(&s) || !dec_ok) fail_msg("%s: %s: %s", slugs[g], s.name, src);
            }
            /* (a mixed batch's prefilling sequences share its tile) */
            if (!shape_ragged(&s) && (c.mma == MMA_WGMMA || c.block_m > 64)) fail_msg("%s: %s: a prefill tile (%s)", slugs[g], s.name, src);
        }
        /* the shape: the nearest-class lookup took a prefill class's configuration */
        kconfig c;
        char src[600];
        csv_table *t;
        char p[1200], err[FB_ERRLEN];
        snprintf(p, sizeof p, "%s/results/%s/tuning.csv", root, slugs[g]);
        assert_int_equal(csvt_read(p, &t, err, sizeof err), 0);
        if (tune_lookup_nearest(t, fit_gpu(fs), "cuda", &mqa, DT_BF16, NULL, 0, &c, src, sizeof src) == 1 && g == 0) {
            assert_string_equal(src, "nearest bf16-d128-c0-g1-q4096-k4096");
            kconfig_complete(&c, fit_device(fs), &mqa, DT_BF16);
            assert_int_equal(c.mma, MMA_WGMMA);
        }
        csvt_free(t);
        assert_true(fallback_pick(&r, "fallback.csv", &mqa, DT_BF16, fit_device(fs), NULL, &c, src, sizeof src) >= 0);
        print_message("%s: the MQA decode takes %s: SPLIT_KV=%d\n", slugs[g], src, c.split_kv);
        assert_true(c.mma == MMA_SYNC && c.split_kv >= 8);
        assert_non_null(strstr(src, "(decode: "));
        fallback_rules_free(&r);
        fit_free(fs);
    }
    shapes_free(&l);
    if (!any) SKIP_BECAUSE("neither committed GPU folder is in this checkout");
}

/* fallback-fill/: two decode classes won by the same unsplit one-warp form (split in two 12%
 * slower), at B x Hkv = 2048 (listed first) and 512. Every fill up to about 4 work-groups per
 * compute unit leaves both unsplit, so their times cannot choose among those; the rule takes
 * the one nearest the fill its winners ran at (15.5 and 3.88), 4, not the lowest, 0.5, and
 * a batch of 64 work-groups is then split eight ways to that occupancy. */
static void test_fit_fill_nearest_winners(void **state)
{
    (void)state;
    char dir[1200], shapes[1300], err[FB_ERRLEN] = "";
    snprintf(dir, sizeof dir, "%s/tests/data/fallback-fill", root);
    snprintf(shapes, sizeof shapes, "%s/shapes.csv", dir);
    const char *files[] = {shapes};
    fit_set *fs = NULL;
    const int rc = fit_load(dir, NULL, "cuda", files, 1, &fs, err, sizeof err);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, 0);
    fb_rules r;
    assert_int_equal(fit_rules(fs, &r), 0);
    assert_int_equal(r.n, 1);
    assert_true(r.v[0].regime == FB_REG_DECODE && r.v[0].within10 == 2);
    assert_true(r.v[0].fill == 4);
    const shape_t small_batch = mk(8, 32, 8, 1, 1024, 128, 1);
    kconfig c;
    char src[600];
    assert_int_equal(fallback_pick(&r, "fallback.csv", &small_batch, DT_BF16, fit_device(fs), NULL, &c, src, sizeof src), 0);
    assert_int_equal(c.split_kv, 8);
    fallback_rules_free(&r);
    fit_free(fs);
}

/* fit_loo on the fixture, by hand: leaving one decode class out, the other two of its fill
 * keep their rule, whose fill target gives the held-out class its own unsplit winner (1.0);
 * the nearest-class lookup takes a neighbour's row with SPLIT_KV derived again, 2, timed at
 * 1.15 (B x Hkv = 128), 1.12 or 1.30 (512); the prefills agree; no default was ever timed. */
static void test_loo_fixture(void **state)
{
    (void)state;
    fit_set *fs = load_fixture();
    csv_table *rows = csvt_new(fit_loo_header, fit_loo_ncols), *sum = csvt_new(fit_loo_summary_header, fit_loo_summary_ncols);
    assert_true(rows && sum);
    assert_int_equal(fit_loo(fs, rows, sum), 0);
    assert_int_equal(rows->nrows, 9);
    const int cc = csvt_col(rows, "shape_class"), cr = csvt_col(rows, "rule_ratio"), cn = csvt_col(rows, "nearest_ratio"),
              cd = csvt_col(rows, "default_ratio"), cs = csvt_col(rows, "rule_source");
    for (size_t i = 0; i < rows->nrows; i++) {
        char *const *r = rows->rows[i];
        const int dec = strstr(r[cc], "-q1-") != NULL, w128 = strstr(r[cc], "-w128") != NULL;
        assert_string_equal(r[cr], "1.0000");
        assert_string_equal(r[cd], "");
        if (!dec) assert_string_equal(r[cn], "1.0000");
        else if (w128) assert_string_equal(r[cn], "1.1500");
        else assert_true(!strcmp(r[cn], "1.1200") || !strcmp(r[cn], "1.3000"));
        assert_non_null(strstr(r[cs], dec ? (w128 ? "(decode: fill<=2)" : "(decode: fill>2)") : "(long-prefill: any)"));
    }
    /* the summary: per regime and in all, each method */
    const struct { const char *regime, *method, *timed, *within, *untimed, *share; } want[] = {
        {"decode", "fitted rule", "6", "6", "0", "1.000"},
        {"decode", "regime default", "0", "0", "6", ""},
        {"decode", "nearest class (before)", "6", "0", "0", "0.000"},
        {"long-prefill", "fitted rule", "3", "3", "0", "1.000"},
        {"long-prefill", "nearest class (before)", "3", "3", "0", "1.000"},
        {"all", "fitted rule", "9", "9", "0", "1.000"},
        {"all", "nearest class (before)", "9", "3", "0", "0.333"},
    };
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        int found = 0;
        for (size_t i = 0; i < sum->nrows; i++) {
            char *const *r = sum->rows[i];
            if (strcmp(r[csvt_col(sum, "regime")], want[w].regime) || strcmp(r[csvt_col(sum, "method")], want[w].method)) continue;
            found = 1;
            assert_string_equal(r[csvt_col(sum, "timed")], want[w].timed);
            assert_string_equal(r[csvt_col(sum, "within_10pct")], want[w].within);
            assert_string_equal(r[csvt_col(sum, "untimed")], want[w].untimed);
            assert_string_equal(r[csvt_col(sum, "share_of_timed")], want[w].share);
        }
        if (!found) fail_msg("no summary row %s / %s", want[w].regime, want[w].method);
    }
    csvt_free(rows);
    csvt_free(sum);
    fit_free(fs);
}

/* run --tuned's lookup: the class's row, else fallback.csv's rule (beside the tuning table),
 * else the regime's default, each named in the source; a malformed fallback.csv is bad input */
static void test_lookup_chain(void **state)
{
    (void)state;
    char p[600], f[600], src[600], err[FB_ERRLEN];
    snprintf(p, sizeof p, "%s/tuning.csv", tmpdir);
    snprintf(f, sizeof f, "%s/fallback.csv", tmpdir);
    unlink(f);
    write_file(p, "gpu,backend,shape_class,config\n"
                  "G,opencl,bf16-d128-c1-g4-q1-k4096-w128,MMA=fma;BLOCK_M=16;BLOCK_N=32;NUM_WARPS=1;SPLIT_KV=8\n");
    rt_device dev = {.rt = rt_find("opencl"), .index = 0, .info = cpu};
    snprintf(dev.info.name, sizeof dev.info.name, "G");
    kconfig c;
    shape_t exact = mk(16, 32, 8, 1, 4096, 128, 1), dec = mk(5, 16, 1, 1, 7777, 128, 0), pre = mk(1, 8, 8, 1000, 1000, 64, 1);
    assert_int_equal(tune_lookup(p, &dev, &exact, DT_BF16, &c, src, sizeof src, err, sizeof err), 1);
    assert_string_equal(src, "tuned bf16-d128-c1-g4-q1-k4096-w128");
    assert_int_equal(c.split_kv, 8);
    assert_int_equal(tune_lookup(p, &dev, &dec, DT_BF16, &c, src, sizeof src, err, sizeof err), 1);
    assert_string_equal(src, "default for decode (no fallback.csv beside the tuning table)");
    write_file(f, "gpu,backend,rule,regime,conditions,config,split_kv,classes,within_10pct,untimed,geomean,why\n"
                  "Other,opencl,1,decode,any,MMA=fma;BLOCK_M=64,auto,1,1,0,1.000,another GPU's\n"
                  "G,opencl,1,decode,gqa>4 & fill<=4,MMA=fma;BLOCK_M=16;BLOCK_N=64;NUM_WARPS=2;WARP_M=1;STAGES=1;KPAD=1,fill=8,2,2,0,1.010,test\n"
                  "G,opencl,2,decode,gqa<=4,MMA=fma;BLOCK_M=16;BLOCK_N=16;NUM_WARPS=1;WARP_M=1;STAGES=1;KPAD=1,auto,2,2,0,1.000,test\n");
    assert_int_equal(tune_lookup(p, &dev, &dec, DT_BF16, &c, src, sizeof src, err, sizeof err), 1);
    assert_string_equal(src, "rule 1 of fallback.csv (decode: gqa>4 & fill<=4)");
    assert_true(c.block_n == 64 && c.num_warps == 2 && c.split_kv == 3); /* 5 work-groups x 3 ~ 8 per compute unit of 2 */
    assert_int_equal(tune_lookup(p, &dev, &pre, DT_BF16, &c, src, sizeof src, err, sizeof err), 1);
    assert_string_equal(src, "default for long-prefill (no rule of fallback.csv matches)");
    dev.info.name[0] = 'H'; /* another GPU: none of the table's rows are its */
    assert_int_equal(tune_lookup(p, &dev, &dec, DT_BF16, &c, src, sizeof src, err, sizeof err), 1);
    assert_string_equal(src, "default for decode (fallback.csv has no rules of this GPU and runtime)");
    dev.info.name[0] = 'G';
    /* a rule whose configuration does not fit the shape: the default, saying why */
    write_file(f, "gpu,backend,rule,regime,conditions,config,split_kv,classes,within_10pct,untimed,geomean,why\n"
                  "G,opencl,1,decode,any,MMA=mma;BLOCK_M=16;BLOCK_N=32;NUM_WARPS=1,auto,1,1,0,1.000,x\n");
    assert_int_equal(tune_lookup(p, &dev, &dec, DT_BF16, &c, src, sizeof src, err, sizeof err), 1);
    assert_non_null(strstr(src, "default for decode (rule 1 of fallback.csv does not fit: MMA=mma needs"));
    static const char *const bad[] = {
        "G,opencl,x,decode,any,MMA=fma,auto,1,1,0,1,w\n", "G,opencl,1,prefill,any,MMA=fma,auto,1,1,0,1,w\n",
        "G,opencl,1,decode,d<<3,MMA=fma,auto,1,1,0,1,w\n", "G,opencl,1,decode,any,BLOCK_M=17,auto,1,1,0,1,w\n",
        "G,opencl,1,decode,any,MMA=fma,fill=0,1,1,0,1,w\n", "G,opencl,1,decode,any,MMA=fma,auto,-1,1,0,1,w\n"};
    static const char *const field[] = {"'rule'", "'regime'", "'conditions'", "'config'", "'split_kv'", "'classes'"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[600];
        snprintf(text, sizeof text, "%s%s", "gpu,backend,rule,regime,conditions,config,split_kv,classes,within_10pct,untimed,geomean,why\n",
                 bad[i]);
        write_file(f, text);
        assert_int_equal(tune_lookup(p, &dev, &dec, DT_BF16, &c, src, sizeof src, err, sizeof err), 2);
        if (!strstr(err, ":2: field ") || !strstr(err, field[i]) || !strstr(err, f)) fail_msg("case %zu: '%s'", i, err);
    }
    unlink(f);
}

static int setup(void **state)
{
    (void)state;
    if (fb_root(root, sizeof root) != 0) {
        print_error("fb_root failed: run from build/tests/ under the project or set FABENCH_ROOT\n");
        return -1;
    }
    snprintf(tmpdir, sizeof tmpdir, "%s/fabench-fallback.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
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
        cmocka_unit_test(test_regimes),
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_conditions_text),
        cmocka_unit_test(test_instantiate),
        cmocka_unit_test(test_defaults_valid),
        cmocka_unit_test(test_fit_fixture),
        cmocka_unit_test(test_fit_roundtrip),
        cmocka_unit_test(test_fit_fill_nearest_winners),
        cmocka_unit_test(test_decode_never_prefill),
        cmocka_unit_test(test_loo_fixture),
        cmocka_unit_test(test_lookup_chain),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
