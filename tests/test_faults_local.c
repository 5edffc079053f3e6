/* test_faults_local.c: faults in one place of the output, which a check of sampled rows
 * misses: one block of rows written as zeros (FAULT_ZERO_BLOCK), one block's last key tile
 * skipped (FAULT_SKIP_BLOCK_TILE), one head computed with a wrong scale (FAULT_HEAD_SCALE).
 * Each must be caught for every seed of the inputs, on every tile path the device has, while
 * the same configurations without the hook pass; by the element check alone (no LSE). On
 * the first OpenCL device (PoCL in CI) at B=1 H=8 S=1024 d=64, causal and not; on a GPU
 * ($FABENCH_TEST_DEVICE=cuda:0) also at the reference shape B=4 H=32 S=4096 d=128 bf16,
 * with the time a full check takes there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "test_shape.h"

#include "attn.h"
#include "rt.h"

static attn_runner *runner;
static rt_device dev;
static attn_opts opts;

static const char *const hooks[] = {"FAULT_ZERO_BLOCK=1", "FAULT_SKIP_BLOCK_TILE=1", "FAULT_HEAD_SCALE=1"};
#define NHOOKS (sizeof hooks / sizeof hooks[0])

static int setup(void **state)
{
    (void)state;
    char err[FB_ERRLEN];
    const char *sel = getenv("FABENCH_TEST_DEVICE");
    if (rt_select(sel ? sel : "opencl:0", &dev, err, sizeof err) != 0) {
        fprintf(stderr, "no device for the fault tests: %s\n", err);
        return -1;
    }
    if (attn_open(&dev, &runner, err, sizeof err) != 0) {
        fprintf(stderr, "attn_open: %s\n", err);
        return -1;
    }
    attn_opts_defaults(&opts);
    opts.verify_only = 1;
    opts.write_lse = 0; /* the element check alone: a zeroed or cut block's LSE would tell too */
    opts.timing.timeout_s = 120;
    fprintf(stderr, "localized faults on %s:%d (%s)\n", dev.rt->name, dev.index, dev.info.name);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    attn_close(runner);
    return 0;
}

/* The tile paths the device has, as configurations (their defaults otherwise). */
static size_t tile_paths(const char *out[4])
{
    size_t n = 0;
    out[n++] = "MMA=fma";
    if (dev.info.features & RT_FEAT_MMA_SYNC) out[n++] = "MMA=mma";
    if (dev.info.features & RT_FEAT_WGMMA) out[n++] = "MMA=wgmma";
    if (dev.info.features & RT_FEAT_MFMA) out[n++] = "MMA=mfma";
    return n;
}

/* The margins seen: per dtype the largest share of its bound an element of a clean run
 * took, and per hook the smallest worst-element ratio of a faulty run (how clearly caught). */
typedef struct {
    double clean[3], caught[NHOOKS];
} margins;

/* One run: its status; its worst element's share of the bound goes to m. */
static status_t run_one(const shape_t *s, dtype_t dt, const char *path, int hook, uint64_t seed, margins *m)
{
    char cfg[128], err[FB_ERRLEN];
    snprintf(cfg, sizeof cfg, "%s%s%s", path, hook >= 0 ? "," : "", hook >= 0 ? hooks[hook] : "");
    kconfig c = {0};
    if (kconfig_parse(cfg, &c, err, sizeof err) != 0) fail_msg("bad config %s: %s", cfg, err);
    attn_opts o = opts;
    o.seed = seed;
    attn_result res;
    if (attn_run(runner, s, dt, &c, &o, &res, err, sizeof err) != 0) fail_msg("%s: harness error: %s", s->name, err);
    if (res.status == ST_OK) m->clean[dt] = fmax(m->clean[dt], res.ver.worst_ratio);
    if (res.status == ST_WRONG_RESULT && hook >= 0) m->caught[hook] = fmin(m->caught[hook], res.ver.worst_ratio);
    const int want_wrong = hook >= 0, declined = res.status == ST_UNSUPPORTED || res.status == ST_RESOURCE_LIMIT;
    if ((res.status == ST_WRONG_RESULT) != want_wrong && !(declined && !want_wrong))
        fprintf(stderr, "  %s %s [%s] seed %llu: %s: %s\n", s->name, dtype_name(dt), cfg, (unsigned long long)seed,
                status_name(res.status), res.reason);
    if (want_wrong && res.status == ST_WRONG_RESULT) assert_true(res.ver.bad_elems > 0); /* the elements said so */
    return res.status;
}

/* Every hook on every path is wrong_result for each of nseeds seeds, and the paths without
 * a hook are ok: the number of misses (hooks that passed, clean runs that failed). A path
 * that declines the shape or dtype (mma in fp32, wgmma at d = 32) is left out. */
static int sweep(const shape_t *s, dtype_t dt, uint64_t first_seed, int nseeds, margins *m)
{
    const char *paths[4];
    const size_t np = tile_paths(paths);
    int misses = 0;
    for (int k = 0; k < nseeds; k++) /* the seed outermost: one reference serves its runs */
        for (size_t p = 0; p < np; p++) {
            const status_t clean = run_one(s, dt, paths[p], -1, first_seed + (uint64_t)k, m);
            if (clean == ST_UNSUPPORTED || clean == ST_RESOURCE_LIMIT) continue;
            misses += clean != ST_OK;
            for (int h = 0; h < (int)NHOOKS; h++)
                misses += run_one(s, dt, paths[p], h, first_seed + (uint64_t)k, m) != ST_WRONG_RESULT;
        }
    return misses;
}

static margins no_margins(void)
{
    margins m = {{0, 0, 0}, {INFINITY, INFINITY, INFINITY}};
    return m;
}

static void print_margins(const char *what, const margins *m)
{
    print_message("%s: clean runs at most fp32 %.3f, fp16 %.3f, bf16 %.3f of their bounds; the faults at least "
                  "%.3gx (zero block), %.3gx (skipped tile), %.3gx (head scale)\n",
                  what, m->clean[0], m->clean[1], m->clean[2], m->caught[0], m->caught[1], m->caught[2]);
}

/* CI's size: B=1 H=8 S=1024 d=64 in bf16, the widest bounds, non-causal and causal with
 * GQA, a few seeds (each costs a reference and four kernel runs on PoCL). */
static void test_ci_size(void **state)
{
    (void)state;
    const shape_t shapes[] = {mk(1, 8, 8, 1024, 1024, 64, 0), mk(1, 8, 2, 1024, 1024, 64, 1)};
    int misses = 0;
    margins m = no_margins();
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) misses += sweep(&shapes[i], DT_BF16, 100, 3, &m);
    print_margins("B=1 H=8 S=1024 d=64 bf16, 3 seeds", &m);
    assert_int_equal(misses, 0);
}

/* Smaller shapes, more seeds, every dtype: Sq < Skv causal, Sq > Skv, an odd length
 * causal with MQA. */
static void test_small_shapes(void **state)
{
    (void)state;
    const shape_t shapes[] = {mk(2, 4, 2, 200, 300, 64, 1), mk(1, 6, 3, 300, 129, 128, 0), mk(1, 4, 1, 257, 257, 32, 1)};
    int misses = 0;
    margins m = no_margins();
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int dt = DT_FP32; dt <= DT_BF16; dt++) misses += sweep(&shapes[i], (dtype_t)dt, 200 + 10 * i, 8, &m);
    print_margins("3 small shapes x 3 dtypes, 8 seeds", &m);
    assert_int_equal(misses, 0);
}

/* The reference shape on a GPU: every fault caught on every path for a few seeds, the
 * clean runs pass, and the time of one full check (the reference, then the comparison). */
static void test_reference_shape(void **state)
{
    (void)state;
    if (!dev.info.is_gpu) {
        print_message("skipped: the reference shape (B=4 H=32 S=4096 d=128) needs a GPU; this device is %s "
                      "(set FABENCH_TEST_DEVICE=cuda:0 on a GPU machine)\n", dev.info.name);
        skip();
    }
    const shape_t s = mk(4, 32, 32, 4096, 4096, 128, 0), sc = mk(4, 32, 32, 4096, 4096, 128, 1);
    const char *paths[4];
    const char *fast = paths[tile_paths(paths) - 1]; /* the device's own tiles: the kernel's time is small */
    margins m = no_margins();
    double t0 = fb_now();
    assert_int_equal(run_one(&s, DT_BF16, fast, -1, 1, &m), ST_OK); /* the reference made here */
    const double first = fb_now() - t0;
    t0 = fb_now();
    assert_int_equal(run_one(&s, DT_BF16, fast, -1, 1, &m), ST_OK); /* kept: the comparison alone */
    const double again = fb_now() - t0;
    print_message("reference shape, %s: a run with the reference made and a full check %.2f s; with the reference kept "
                  "%.2f s\n", fast, first, again);
    const int misses = sweep(&s, DT_BF16, 1, 3, &m) + sweep(&sc, DT_BF16, 1, 3, &m);
    print_margins("reference shape bf16, 3 seeds", &m);
    assert_int_equal(misses, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ci_size),
        cmocka_unit_test(test_small_shapes),
        cmocka_unit_test(test_reference_shape),
    };
    const char *filter = getenv("FABENCH_TEST_FILTER");
    if (filter && *filter) cmocka_set_test_filter(filter);
    return cmocka_run_group_tests(tests, setup, teardown);
}
