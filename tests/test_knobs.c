/* test_knobs.c: walks bench/core/knobs.h's table. Every knob parses over its whole range and
 * refuses the values past it naming what it allows, survives kconfig_str and a parse back,
 * reaches the kernel as its define when shown, is copied by kconfig_overlay, counts in the
 * distance, gives the search an ordered feature, is refused on a tile kind that does not
 * take it, is read by the kernel's source and offered by kernels/space.csv (or says why not), and has
 * its row in the documentation's table. And kconfig_fit, which the rules' fixes drive. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "common.h"
#include "config.h"

static const rt_device_info h100 = {.compute_units = 132, .max_group_size = 1024, .warp_size = 32,
                                    .shared_bytes = 227 * 1024, .static_shared_bytes = 48 * 1024, .is_gpu = 1,
                                    .features = 15};

/* The values of k the table allows, lo first: lo, hi and one between where ok allows them */
static int allowed_values(const knob_info *kn, int v[3])
{
    int n = 0;
    const int probe[3] = {kn->lo, (kn->lo + kn->hi) / 2, kn->hi};
    for (int i = 0; i < 3; i++)
        if (!kn->ok || kn->ok(probe[i])) v[n++] = probe[i];
    return n;
}

/* k=v as --config text, the MMA kind given first so that a knob's own kind takes it */
static void knob_config(knob_id k, int v, char *out, size_t len)
{
    const knob_info *kn = knob(k);
    int kind = MMA_WGMMA;
    while (!(kn->kinds >> kind & 1)) kind--;
    if (k == KNOB_MMA) kind = v;
    snprintf(out, len, "MMA=%d;%s=%d", kind, kn->key, v);
}

static void test_keys_unique_and_documented(void **state)
{
    (void)state;
    for (int k = 0; k < KNOB_COUNT; k++) {
        const knob_info *kn = knob((knob_id)k);
        assert_non_null(kn->key);
        assert_true(kn->lo <= kn->hi);
        assert_true(kn->allowed[0] && kn->values_doc[0] && kn->doc[0]);
        assert_true(kn->kinds != 0 && kn->kinds <= KINDS_ALL);
        /* the tile form (staged's stage 1) is exactly the MMA kind, the tile and the warps */
        assert_true(kn->group >= GROUP_FORM && kn->group < GROUP_COUNT);
        assert_int_equal(kn->group == GROUP_FORM,
                         k == KNOB_MMA || k == KNOB_BLOCK_M || k == KNOB_BLOCK_N || k == KNOB_NUM_WARPS);
        for (int j = 0; j < k; j++) assert_string_not_equal(kn->key, knob((knob_id)j)->key);
    }
}

static void test_parse_range_and_round_trip(void **state)
{
    (void)state;
    const shape_t s = {.batch = 1, .hq = 2, .hkv = 2, .sq = 128, .skv = 128, .d = 64};
    for (int k = 0; k < KNOB_COUNT; k++) {
        const knob_info *kn = knob((knob_id)k);
        int v[3];
        const int n = allowed_values(kn, v);
        assert_true(n > 0);
        for (int i = 0; i < n; i++) {
            char text[128], err[512] = "", canon[KCONFIG_STR_MAX];
            knob_config((knob_id)k, v[i], text, sizeof text);
            kconfig c = {0}, back = {0};
            if (kconfig_parse(text, &c, err, sizeof err) != 0) fail_msg("%s: %s", text, err);
            assert_int_equal(kconfig_get(&c, (knob_id)k), v[i]);
            assert_true(c.set & (UINT64_C(1) << k));
            c = (kconfig){.mma = c.mma, .set = CFG(MMA)}; /* the rest as a run would have them */
            kconfig_complete(&c, &h100, &s, DT_BF16);
            kconfig_set(&c, (knob_id)k, v[i]);
            kconfig_str(&c, canon, sizeof canon);
            if (kconfig_parse(canon, &back, err, sizeof err) != 0) fail_msg("%s: %s", canon, err);
            assert_int_equal(kconfig_value(&back, (knob_id)k), kconfig_value(&c, (knob_id)k));
            assert_int_equal(kconfig_distance(&c, &back), 0);
        }
        char text[128], err[512] = "";
        snprintf(text, sizeof text, "%s=%d", kn->key, kn->hi + 1);
        kconfig c = {0};
        assert_int_equal(kconfig_parse(text, &c, err, sizeof err), FB_EXIT_BADINPUT);
        if (!strstr(err, kn->allowed) || !strstr(err, kn->key)) fail_msg("%s: '%s' names no key or values", text, err);
    }
}

/* A knob set away from `off` is written by kconfig_str, defined for the kernel, copied by
 * kconfig_overlay and counted by kconfig_distance */
static void test_shown_defined_overlaid_counted(void **state)
{
    (void)state;
    const shape_t s = {.batch = 1, .hq = 2, .hkv = 2, .sq = 128, .skv = 128, .d = 64};
    for (int k = 0; k < KNOB_COUNT; k++) {
        const knob_info *kn = knob((knob_id)k);
        const int on = kn->hi != kn->off ? kn->hi : kn->lo;
        char text[128], err[512] = "", canon[KCONFIG_STR_MAX], want[64];
        knob_config((knob_id)k, on, text, sizeof text);
        kconfig c = {0};
        if (kconfig_parse(text, &c, err, sizeof err) != 0) fail_msg("%s: %s", text, err);
        assert_true(kconfig_shows(&c, (knob_id)k));
        kconfig_str(&c, canon, sizeof canon);
        snprintf(want, sizeof want, "%s=", kn->key);
        if (!strstr(canon, want)) fail_msg("%s: kconfig_str wrote '%s'", text, canon);

        char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN];
        const int nd = attn_defines(&s, DT_BF16, &c, 0, defs);
        snprintf(want, sizeof want, "%s=%d", kn->key, on);
        int found = 0;
        for (int i = 0; i < nd; i++) found |= !strcmp(defs[i], want);
        if (!found) fail_msg("%s: no define %s", text, want);

        kconfig dst = {0};
        kconfig_overlay(&dst, &c);
        assert_int_equal(kconfig_get(&dst, (knob_id)k), on);
        kconfig other = c;
        kconfig_set(&other, (knob_id)k, on == kn->lo ? kn->hi : kn->lo);
        if (kn->show != SHOW_ON || kconfig_value(&other, (knob_id)k) != kconfig_value(&c, (knob_id)k))
            assert_int_equal(kconfig_distance(&c, &other), 1);
    }
}

/* The search's feature: finite, not negative, and never smaller for a larger value */
static void test_features_ordered(void **state)
{
    (void)state;
    for (int k = 0; k < KNOB_COUNT; k++) {
        const knob_info *kn = knob((knob_id)k);
        int v[3];
        const int n = allowed_values(kn, v);
        double prev = 0;
        for (int i = 0; i < n; i++) {
            kconfig c = {0};
            kconfig_set(&c, (knob_id)k, v[i]);
            double f[KNOB_COUNT];
            kconfig_features(&c, f);
            if (!(isfinite(f[k]) && f[k] >= prev)) fail_msg("%s=%d: feature %g after %g", kn->key, v[i], f[k], prev);
            prev = f[k];
        }
    }
}

/* On every tile kind its row leaves out, a knob away from `off` is refused, naming it */
static void test_kinds_refused(void **state)
{
    (void)state;
    const shape_t s = {.batch = 1, .hq = 2, .hkv = 2, .sq = 128, .skv = 128, .d = 64};
    rt_device_info dev = h100;
    for (int k = 0; k < KNOB_COUNT; k++) {
        const knob_info *kn = knob((knob_id)k);
        const int on = kn->hi != kn->off ? kn->hi : kn->lo;
        for (int m = MMA_FMA; m <= MMA_WGMMA; m++) {
            if (kn->kinds >> m & 1) continue;
            kconfig c = {.mma = (mma_kind)m, .set = CFG(MMA)};
            kconfig_complete(&c, &dev, &s, DT_BF16);
            kconfig_set(&c, (knob_id)k, on);
            char reason[512] = "";
            assert_int_equal(kconfig_check(&c, &dev, &s, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
            if (!strstr(reason, kn->key)) fail_msg("%s=%d on MMA=%d: refused for '%s'", kn->key, on, m, reason);
        }
    }
}

/* kconfig_fit: a dense batch's tuned rows fitted to a ragged batch pass kconfig_check, the
 * dropped keys named in the knobs' order; a key the user gave stays (and is refused) */
static void test_fit_ragged(void **state)
{
    (void)state;
    const shape_t s = {.batch = 4, .hq = 8, .hkv = 2, .sq = 512, .skv = 512, .d = 128, .causal = 1, .nlens = 2, .lens = {1, 0.5}};
    const struct { const char *cfg, *dropped; } rows[] = {
        {"MMA=wgmma;BLOCK_M=128;BLOCK_N=128;NUM_WARPS=8;STAGES=2;SPLIT_KV=1;PACK_GQA=0;WG_SWIZZLE=1;WG_TMA=1;WG_WS=1;"
         "WG_PERSIST=1;WG_DYNAMIC=1;WG_QPREFETCH=1",
         "WG_PERSIST=0, WG_DYNAMIC=0, WG_QPREFETCH=0"},
        {"MMA=mma;BLOCK_M=64;BLOCK_N=64;NUM_WARPS=4;WARP_M=1;STAGES=2;SPLIT_KV=4;SPLIT_FUSE=1;PACK_GQA=1;GRID_LPT=1",
         "SPLIT_KV=1, PACK_GQA=0, GRID_LPT=0, SPLIT_FUSE=0"},
        {"MMA=wgmma;BLOCK_M=128;BLOCK_N=128;NUM_WARPS=8;STAGES=2;SPLIT_KV=1;PACK_GQA=0;WG_SWIZZLE=1;WG_TMA=1;WG_WS=1;WG_QTMA=1",
         "WG_QTMA=0"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        kconfig c = {0};
        char err[512] = "", dropped[256], reason[512] = "";
        if (kconfig_parse(rows[i].cfg, &c, err, sizeof err) != 0) fail_msg("%s: %s", rows[i].cfg, err);
        kconfig_complete(&c, &h100, &s, DT_BF16);
        kconfig kept = c;
        assert_int_equal(kconfig_check(&c, &h100, &s, DT_BF16, reason, sizeof reason), ST_UNSUPPORTED);
        assert_int_equal(kconfig_fit(&c, &s, 0, dropped, sizeof dropped), 1);
        assert_string_equal(dropped, rows[i].dropped);
        if (kconfig_check(&c, &h100, &s, DT_BF16, reason, sizeof reason) != ST_OK) fail_msg("%s: still %s", rows[i].cfg, reason);
        assert_int_equal(kconfig_fit(&c, &s, 0, dropped, sizeof dropped), 0); /* nothing left to fit */
        assert_int_equal(kconfig_fit(&kept, &s, kept.set, dropped, sizeof dropped), 0); /* the user's keys stay */
    }
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) == (size_t)n) b[n] = 0;
    fclose(f);
    return b;
}

/* The kernel reads every knob's define; kernels/space.csv offers every knob to the tuner
 * unless its documentation says it is not there */
static void test_kernel_and_space_know_every_knob(void **state)
{
    (void)state;
    char root[4096], path[4200], err[512];
    assert_int_equal(fb_root(root, sizeof root), 0);
    char *src = NULL;
    assert_int_equal(attn_source("opencl", &src, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/kernels/space.csv", root);
    char *space = slurp(path);
    assert_non_null(space);
    for (int k = 0; k < KNOB_COUNT; k++) {
        const knob_info *kn = knob((knob_id)k);
        char line[64];
        if (!strstr(src, kn->key)) fail_msg("%s: the kernel's source never reads it", kn->key);
        snprintf(line, sizeof line, "\n%s,", kn->key);
        if (!strstr(space, line) && !strstr(kn->doc, "Not in `kernels/space.csv`"))
            fail_msg("%s: not in kernels/space.csv, and its doc does not say why", kn->key);
    }
    free(space);
    free(src);
}

static void test_markdown_row_per_knob(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    knobs_print_markdown(f);
    fclose(f);
    int rows = 0;
    for (const char *p = buf; (p = strstr(p, "\n| `")); p++) rows++;
    assert_int_equal(rows, KNOB_COUNT);
    for (int k = 0; k < KNOB_COUNT; k++) {
        char cell[64];
        snprintf(cell, sizeof cell, "| `%s` |", knob((knob_id)k)->key);
        assert_non_null(strstr(buf, cell));
    }
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys_unique_and_documented),
        cmocka_unit_test(test_parse_range_and_round_trip),
        cmocka_unit_test(test_shown_defined_overlaid_counted),
        cmocka_unit_test(test_features_ordered),
        cmocka_unit_test(test_kinds_refused),
        cmocka_unit_test(test_fit_ragged),
        cmocka_unit_test(test_kernel_and_space_know_every_knob),
        cmocka_unit_test(test_markdown_row_per_knob),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
