/* test_wgmma_probe.c: the Hopper wgmma kernel (MMA=wgmma) end to end on a GPU of compute
 * capability 9.0 ($FABENCH_TEST_DEVICE, default cuda:0), through the harness's own path
 * (attn_run: compile, launch, verify against the CPU reference): one and two warpgroups,
 * head dims 64, 128 and 256, BLOCK_N 64 and 128, STAGES 1 to 3, causal or not, bf16 and
 * fp16, odd lengths, Sq != Skv, GQA, decode with GQA packing and split-KV, ragged, mixed and
 * paged batches; then one timing of the reference shape beside MMA=mma. When the first,
 * simplest case is wrong it rebuilds the kernel with the descriptor diagnosis hooks
 * (WG_K_SWAP, WG_V_SWAP) and says which layout reading the hardware wants; it also checks
 * both shared-memory layouts (WG_SWIZZLE=0 and 1) with and without WG_PIPE and times them,
 * and the copy-engine loads (WG_TMA=1) the same way. Without such a
 * GPU every test skips, saying why (never a failure). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_skip.h"

#include "test_shape.h"

#include "attn.h"
#include "rt.h"
#include "shapes.h"

static attn_runner *runner;
static rt_device dev;
static attn_opts opts;
static char skip_why[768];

static int setup(void **state)
{
    (void)state;
    char err[FB_ERRLEN];
    const char *sel = getenv("FABENCH_TEST_DEVICE");
    if (!sel) sel = "cuda:0";
    if (rt_select(sel, &dev, err, sizeof err) != 0) {
        snprintf(skip_why, sizeof skip_why, "no device %s: %.600s", sel, err);
        return 0;
    }
    if (!(dev.info.features & RT_FEAT_WGMMA)) {
        snprintf(skip_why, sizeof skip_why, "%s is %.200s (%s), not an NVIDIA GPU of compute capability 9.0 through cuda",
                 sel, dev.info.name, dev.info.arch);
        return 0;
    }
    if (attn_open(&dev, &runner, err, sizeof err) != 0) {
        snprintf(skip_why, sizeof skip_why, "attn_open: %.600s", err);
        return 0;
    }
    attn_opts_defaults(&opts);
    opts.verify_only = 1;
    opts.write_lse = 1;
    opts.timing.timeout_s = 30;
    fprintf(stderr, "wgmma probe on %s:%d (%s, %s)\n", dev.rt->name, dev.index, dev.info.name, dev.info.arch);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (runner) attn_close(runner);
    return 0;
}

static void need_hopper(void)
{
    if (!skip_why[0]) return;
    SKIP_BECAUSE("%s", skip_why);
}

/* One case through attn_run on runner r; prints it (with the error) and returns its status. */
static status_t run_on(attn_runner *r, const shape_t *s, dtype_t dt, const char *config, const attn_opts *o, attn_result *res)
{
    kconfig c = {0};
    char err[FB_ERRLEN];
    if (kconfig_parse(config, &c, err, sizeof err) != 0) fail_msg("bad test config %s: %s", config, err);
    if (attn_run(r, s, dt, &c, o, res, err, sizeof err) != 0) fail_msg("%s: harness error: %s", s->name, err);
    char cs[KCONFIG_STR_MAX];
    kconfig_str(&res->config, cs, sizeof cs);
    printf("  %-28s %s [%s]: %s, max abs err %.3g, %ld registers, %ld spill bytes%s%s\n", s->name, dtype_name(dt), cs,
           status_name(res->status), res->ver.max_abs_err, res->attrs.registers, res->attrs.spill_bytes,
           res->status != ST_OK ? ": " : "", res->status != ST_OK ? res->reason : "");
    return res->status;
}

static status_t run_case(const shape_t *s, dtype_t dt, const char *config)
{
    attn_result res;
    return run_on(runner, s, dt, config, &opts, &res);
}

/* A copy of the fabench tree's kernels whose prelude starts with `defines`, for
 * FABENCH_ROOT: the same kernel with a diagnosis hook switched on. 0 or -1. */
static int hooked_root(const char *root, const char *defines, char *out, size_t outlen)
{
    snprintf(out, outlen, "/tmp/fabench-wgmma-probe-XXXXXX");
    if (!mkdtemp(out)) return -1;
    const char *dirs[] = {"kernels", "bench", "bench/suites"}; /* what fb_root recognises as a tree */
    for (int i = 0; i < 3; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", out, dirs[i]);
        if (mkdir(p, 0777)) return -1;
    }
    /* the prelude (with the defines), what fb_root looks for, and the kernel's files */
    const char *first[] = {"prelude_cuda.h", "space.csv"};
    for (int i = 0; i < 2 || attn_kernel_files[i - 2]; i++) {
        const char *name = i < 2 ? first[i] : attn_kernel_files[i - 2];
        char src[4200], dst[4200], err[256];
        snprintf(src, sizeof src, "%s/kernels/%s", root, name);
        snprintf(dst, sizeof dst, "%s/kernels/%s", out, name);
        char *text = NULL;
        size_t len = 0;
        if (fb_read_file(src, &text, &len, err, sizeof err) != 0) return -1;
        FILE *f = fopen(dst, "w");
        if (!f) { free(text); return -1; }
        if (i == 0) fputs(defines, f);
        fwrite(text, 1, len, f);
        free(text);
        if (fclose(f)) return -1;
    }
    return 0;
}

/* The simplest case: one warpgroup, 64 x 64 tiles, one tile of keys. When it is wrong, the
 * same case with each reading of the descriptors' LBO/SBO (the parts of the layout least
 * sure blind), so the report says which one the hardware wants. */
static void test_simplest(void **state)
{
    (void)state;
    need_hopper();
    shape_t one = mk(1, 1, 1, 64, 64, 64, 0), two = mk(1, 2, 2, 128, 128, 64, 0);
    const char *cfg = "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2";
    status_t a = run_case(&one, DT_BF16, cfg), b = run_case(&two, DT_FP16, cfg);
    if (a == ST_OK && b == ST_OK) return;
    char root[4096];
    if (fb_root(root, sizeof root) != 0) fail_msg("wgmma wrong and the fabench tree not found for the diagnosis");
    const char *hooks[] = {"#define WG_V_SWAP 1\n", "#define WG_K_SWAP 1\n", "#define WG_K_SWAP 1\n#define WG_V_SWAP 1\n"};
    const char *old = getenv("FABENCH_ROOT");
    char *saved = old ? strdup(old) : NULL;
    for (int h = 0; h < 3; h++) {
        char dir[256], err[FB_ERRLEN];
        if (hooked_root(root, hooks[h], dir, sizeof dir) != 0) { printf("diagnosis: cannot write %s\n", dir); break; }
        setenv("FABENCH_ROOT", dir, 1);
        attn_runner *r = NULL;
        if (attn_open(&dev, &r, err, sizeof err) != 0) { printf("diagnosis: attn_open: %s\n", err); continue; }
        attn_result res;
        printf("diagnosis with %s", hooks[h]);
        status_t ha = run_on(r, &one, DT_BF16, cfg, &opts, &res), hb = run_on(r, &two, DT_FP16, cfg, &opts, &res);
        printf("diagnosis: %s -> %s\n", hooks[h], ha == ST_OK && hb == ST_OK ? "RIGHT: make this the default in wgmma.k" : "still wrong");
        attn_close(r);
    }
    if (saved) { setenv("FABENCH_ROOT", saved, 1); free(saved); } else unsetenv("FABENCH_ROOT");
    fail_msg("MMA=wgmma computes wrong results on the simplest case (see the diagnosis above)");
}

/* Tile shapes x warpgroups x head dims, each on a causal and a non-causal shape with odd
 * lengths (partial tiles), GQA, Sq != Skv, alternating dtypes. */
static void test_tiles(void **state)
{
    (void)state;
    need_hopper();
    int bad = 0, n = 0;
    const int ds[] = {64, 128}, bns[] = {64, 128}, wgs[] = {1, 2};
    for (int di = 0; di < 2; di++)
        for (int bi = 0; bi < 2; bi++)
            for (int wi = 0; wi < 2; wi++) {
                const int d = ds[di], bn = bns[bi], wg = wgs[wi];
                char cfg[160];
                snprintf(cfg, sizeof cfg, "MMA=wgmma,NUM_WARPS=%d,BLOCK_M=%d,BLOCK_N=%d,STAGES=%d", 4 * wg, 64 * wg, bn,
                         1 + (di + bi + wi) % 3);
                shape_t c = mk(2, 4, 2, 200, 333, d, 1), nc = mk(1, 4, 1, 77, 200, d, 0);
                bad += run_case(&c, (di + wi) % 2 ? DT_FP16 : DT_BF16, cfg) != ST_OK;
                bad += run_case(&nc, (di + wi) % 2 ? DT_BF16 : DT_FP16, cfg) != ST_OK;
                n += 2;
            }
    /* d = 256, a square causal block diagonal, Sq > Skv (rows that see no key) */
    shape_t big = mk(1, 2, 2, 300, 300, 256, 1), sq = mk(1, 2, 2, 256, 256, 128, 1), gt = mk(1, 2, 1, 150, 40, 64, 1);
    bad += run_case(&big, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2") != ST_OK;
    bad += run_case(&sq, DT_FP16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2") != ST_OK;
    bad += run_case(&gt, DT_BF16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2") != ST_OK;
    n += 3;
    printf("%d of %d cases wrong\n", bad, n);
    assert_int_equal(bad, 0);
}

/* Decode (GQA packing, split-KV), ragged and mixed batches, a paged KV cache. */
static void test_decode_ragged_paged(void **state)
{
    (void)state;
    need_hopper();
    int bad = 0;
    shape_t dec = mk(3, 8, 2, 1, 1000, 128, 1), dec4 = mk(2, 32, 8, 4, 700, 64, 0);
    bad += run_case(&dec, DT_BF16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,PACK_GQA=1,SPLIT_KV=4") != ST_OK;
    bad += run_case(&dec4, DT_FP16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=128,PACK_GQA=1,SPLIT_KV=2") != ST_OK;
    bad += run_case(&dec, DT_BF16, "MMA=wgmma") != ST_OK; /* the defaults */
    char err[FB_ERRLEN];
    shape_t rag = mk(5, 4, 2, 300, 300, 128, 1), mix = mk(4, 4, 2, 100, 300, 64, 1);
    if (shapes_parse_lens("probe", 0, "0.1;0.4;0.5;1.0;0.2", &rag, err, sizeof err) ||
        shapes_parse_lens("probe", 0, "1;0.5;0.2", &mix, err, sizeof err) ||
        shapes_parse_qlens("probe", 0, "0.001;1;0.3", &mix, err, sizeof err))
        fail_msg("bad lens: %s", err);
    bad += run_case(&rag, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128") != ST_OK;
    bad += run_case(&mix, DT_FP16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64") != ST_OK;
    shape_t pdec = mk(3, 8, 2, 1, 500, 128, 1), ppre = mk(2, 4, 2, 150, 260, 64, 1);
    pdec.page = 64;
    ppre.page = 128;
    bad += run_case(&pdec, DT_BF16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,PACK_GQA=1,SPLIT_KV=3") != ST_OK;
    bad += run_case(&ppre, DT_FP16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128") != ST_OK;
    assert_int_equal(bad, 0);
}

/* Options for a brief timing of the reference shape (every element verified first). */
static attn_opts timed_opts(void)
{
    attn_opts t = opts;
    t.verify_only = 0;
    t.timing.budget_s = 0.5;
    return t;
}

/* The reference prefill shape, timed briefly beside MMA=mma: a number for the report, not
 * a pass/fail threshold (both must verify). */
static void test_reference_speed(void **state)
{
    (void)state;
    need_hopper();
    shape_t s = mk(4, 32, 32, 4096, 4096, 128, 0);
    attn_opts t = timed_opts();
    const char *cfgs[] = {"MMA=wgmma", "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=3",
                          "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=128,STAGES=2", "MMA=mma"};
    int bad = 0;
    for (int causal = 0; causal < 2; causal++)
        for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
            s.causal = causal;
            snprintf(s.name, sizeof s.name, "ref-b4-h32-s4096-d128-c%d", causal);
            attn_result res;
            status_t st = run_on(runner, &s, DT_BF16, cfgs[i], &t, &res);
            if (st == ST_OK)
                printf("    %s %s: median %.1f us, %.1f TFLOP/s\n", s.name, cfgs[i], res.us.median,
                       shape_flops(&s) / (res.us.median * 1e-6) / 1e12);
            bad += st != ST_OK && st != ST_RESOURCE_LIMIT;
        }
    assert_int_equal(bad, 0);
}

/* One probe case: a shape, a dtype and a configuration (after a prefix the test adds). */
typedef struct {
    shape_t *s;
    dtype_t dt;
    const char *cfg;
} probe_case;

/* The small shapes the switch probes check their cases on: partial tiles with GQA (c128,
 * d80), a non-causal row count below a tile (nc), d = 256 (big), more blocks than SMs
 * (many), a ragged batch of five sequences (rag) and a split-KV decode batch (dec). */
typedef struct {
    shape_t c128, nc, big, d80, many, rag, dec;
} switch_shapes;

static switch_shapes probe_shapes(void)
{
    char err[FB_ERRLEN];
    switch_shapes p = {mk(2, 4, 2, 200, 333, 128, 1), mk(1, 4, 1, 77, 200, 64, 0), mk(1, 2, 2, 300, 300, 256, 1),
                       mk(2, 4, 2, 200, 333, 80, 1),  mk(4, 16, 4, 1000, 1000, 128, 1), mk(5, 4, 2, 300, 300, 128, 1),
                       mk(8, 32, 8, 1, 1000, 128, 1)};
    if (shapes_parse_lens("probe", 0, "0.1;0.4;0.5;1.0;0.2", &p.rag, err, sizeof err)) fail_msg("bad lens: %s", err);
    return p;
}

/* One timed configuration on a shape, printed as "    LABEL, CONFIG: N TFLOP/s" (or its
 * status and reason): the probes' timings, each in the same run as those it is set beside. */
static void time_one(const char *label, const shape_t *s, const char *config, const attn_opts *t)
{
    attn_result res;
    if (run_on(runner, s, DT_BF16, config, t, &res) == ST_OK)
        printf("    %s, %s: %.1f TFLOP/s (SPLIT_KV=%d)\n", label, config, shape_flops(s) / (res.us.median * 1e-6) / 1e12,
               res.config.split_kv);
    else
        printf("    %s, %s: %s: %s\n", label, config, status_name(res.status), res.reason);
}

/* Each shape timed with base + each variant (GRID_LPT variants on causal shapes only; a
 * GQA shape with PACK_GQA=1 appended where pack_gqa asks). */
static void time_variants(const shape_t *shapes, size_t ns, const char *base, const char *const *variants, size_t nv,
                          int pack_gqa)
{
    attn_opts t = timed_opts();
    char cfg[KCONFIG_STR_MAX];
    for (size_t k = 0; k < ns; k++)
        for (size_t i = 0; i < nv; i++) {
            const shape_t *s = &shapes[k];
            if (!s->causal && strstr(variants[i], "GRID_LPT")) continue;
            snprintf(cfg, sizeof cfg, "%s%s%s", base, variants[i], pack_gqa && s->hq != s->hkv ? ",PACK_GQA=1" : "");
            time_one(s->name, s, cfg, &t);
        }
}

/* time_variants on the shapes where a query block's start is a large share of its work
 * (llama3-8b and -70b at S=1024, B=4 and B=1, causal and not) and on the two reference
 * shapes: the set the block start-up switches (persistent, dynamic, Q early or prefetched)
 * are judged on. */
static void time_startup_variants(const char *base, const char *const *variants, size_t nv, int pack_gqa)
{
    const shape_t shapes[] = {mk(4, 32, 8, 1024, 1024, 128, 1), mk(4, 64, 8, 1024, 1024, 128, 1),
                              mk(1, 32, 8, 1024, 1024, 128, 1), mk(4, 32, 8, 1024, 1024, 128, 0),
                              mk(4, 32, 32, 4096, 4096, 128, 1), mk(4, 32, 32, 4096, 4096, 128, 0)};
    time_variants(shapes, sizeof shapes / sizeof shapes[0], base, variants, nv, pack_gqa);
}

/* Runs each case as "prefix,cfg" and returns how many were not right (each printed). */
static int run_probe_cases(const char *prefix, const probe_case *cases, size_t n)
{
    int bad = 0;
    attn_result res;
    char cfg[KCONFIG_STR_MAX];
    for (size_t i = 0; i < n; i++) {
        snprintf(cfg, sizeof cfg, "%s,%s", prefix, cases[i].cfg);
        status_t st = run_on(runner, cases[i].s, cases[i].dt, cfg, &opts, &res);
        if (st != ST_OK) printf("    WRONG or failed: %s on %s: %s\n", cfg, cases[i].s->name, res.reason);
        bad += st != ST_OK;
    }
    return bad;
}

/* The persistent work-groups' cases (rounds fewer and more than the SMs, rows with no
 * keys, L2 sections, GQA packing, d = 64 to 256, FlashAttention-3's order, split barriers)
 * run as "prefix,case"; returns how many were not right. */
static int run_persist_cases(const char *prefix)
{
    shape_t few = mk(2, 4, 2, 200, 333, 128, 1), many = mk(4, 16, 4, 1000, 1000, 128, 1), nc = mk(3, 8, 8, 700, 650, 64, 0);
    shape_t tall = mk(2, 4, 4, 900, 300, 128, 1), sec = mk(1, 22, 2, 384, 8192, 128, 1), big = mk(2, 6, 2, 500, 500, 256, 1);
    const probe_case cases[] = {
        {&few, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2"},
        {&many, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PINGPONG=1"},
        {&many, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,PACK_GQA=1,WG_PINGPONG=1"},
        {&many, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"},
        {&nc, DT_FP16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2"},
        {&nc, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=176,STAGES=2,WG_PIPE=1"},
        {&tall, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1"},
        {&sec, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PINGPONG=1"},
        {&sec, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,PACK_GQA=1"},
        {&big, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_PINGPONG=1"},
        {&big, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_PINGPONG=1,WG_KVSPLIT=1"},
    };
    return run_probe_cases(prefix, cases, sizeof cases / sizeof cases[0]);
}

/* Both shared-memory layouts (WG_SWIZZLE=0 and 1; the host picks 1 unless told) right on a
 * few cases, with and without WG_PIPE, and their speed on the reference shape. */
static void test_swizzle(void **state)
{
    (void)state;
    need_hopper();
    shape_t one = mk(1, 1, 1, 64, 64, 64, 0), c128 = mk(2, 4, 2, 200, 333, 128, 1), nc = mk(1, 4, 1, 77, 200, 64, 0);
    shape_t big = mk(1, 2, 2, 300, 300, 256, 1), d80 = mk(2, 4, 2, 200, 333, 80, 1), d96 = mk(1, 4, 4, 150, 150, 96, 0);
    const probe_case cases[] = {
        {&one, DT_BF16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2"},
        {&c128, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2"},
        /* head dims 80 and 96 (swizzled rows padded to 128 elements) */
        {&d80, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2"},
        {&d80, DT_FP16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3,WG_PIPE=1"},
        {&d96, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2"},
        {&c128, DT_FP16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3,WG_PIPE=1"},
        {&nc, DT_FP16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=128,STAGES=1"},
        {&big, DT_BF16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3,WG_PIPE=1"}, /* 230400 B of shared memory */
    };
    int bad = run_probe_cases("WG_SWIZZLE=0", cases, sizeof cases / sizeof cases[0]);
    bad += run_probe_cases("WG_SWIZZLE=1", cases, sizeof cases / sizeof cases[0]);
    printf("swizzle: %s\n", bad ? "wrong results" : "both layouts right on every case");
    shape_t ref = mk(4, 32, 32, 4096, 4096, 128, 0);
    attn_opts t = timed_opts();
    const char *timed[] = {"MMA=wgmma,WG_SWIZZLE=0", "MMA=wgmma,WG_SWIZZLE=1",
                           "MMA=wgmma,BLOCK_N=64,STAGES=3,WG_PIPE=1,WG_SWIZZLE=1",
                           "MMA=wgmma,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_SWIZZLE=1"};
    for (size_t i = 0; i < sizeof timed / sizeof timed[0]; i++) time_one("ref non-causal", &ref, timed[i], &t);
    /* the copy engine at d = 80 and 96 (a last box partly past the row), with a producer
     * warpgroup too */
    const char *tmac[] = {"NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2", "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3,WG_PIPE=1",
                          "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1",
                          "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_WS=1"};
    probe_case tcases[2 * sizeof tmac / sizeof tmac[0]];
    for (size_t i = 0; i < sizeof tcases / sizeof tcases[0]; i++) /* each on d = 80 and 96, the dtypes alternating */
        tcases[i] = (probe_case){i % 2 ? &d96 : &d80, (i / 2 + i % 2) % 2 ? DT_FP16 : DT_BF16, tmac[i / 2]};
    bad += run_probe_cases("MMA=wgmma,WG_TMA=1", tcases, sizeof tcases / sizeof tcases[0]);
    printf("d80/d96 with the copy engine: %s\n", bad ? "wrong results (see above)" : "right on every case");
    /* phi-2's prefill (d = 80, causal): wgmma beside the mma tiles */
    shape_t phi = mk(4, 32, 32, 2048, 2048, 80, 1);
    const char *phic[] = {"MMA=mma", "MMA=wgmma", "MMA=wgmma,STAGES=3,WG_PIPE=1", "MMA=wgmma,BLOCK_N=64,STAGES=3",
                          "MMA=wgmma,WG_TMA=1", "MMA=wgmma,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1",
                          "MMA=wgmma,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1",
                          "MMA=wgmma,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1"};
    for (size_t i = 0; i < sizeof phic / sizeof phic[0]; i++) time_one("d80 causal", &phi, phic[i], &t);
    assert_int_equal(bad, 0);
}

/* K and V by the bulk tensor copy engine (WG_TMA=1): right on partial last tiles, one to
 * three stages, with WG_PIPE, GQA and split-KV decode, refused on ragged and paged batches;
 * then its speed on the reference shape beside the cp.async loads (a number, not a pass
 * threshold). */
static void test_tma(void **state)
{
    (void)state;
    need_hopper();
    shape_t one = mk(1, 1, 1, 64, 64, 64, 0), c128 = mk(2, 4, 2, 200, 333, 128, 1), nc = mk(1, 4, 1, 77, 200, 64, 0);
    shape_t big = mk(1, 2, 2, 300, 300, 256, 1), dec = mk(8, 32, 8, 1, 1000, 128, 1);
    /* ws_only: a configuration only a producer warpgroup allows (WG_PIPE on two stages) */
    struct { shape_t *s; dtype_t dt; const char *cfg; int ws_only; } cases[] = {
        {&one, DT_BF16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2", 0},
        {&c128, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2", 0},
        {&c128, DT_FP16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3,WG_PIPE=1", 0},
        {&nc, DT_FP16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=128,STAGES=1", 0},
        {&big, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2", 0},
        {&dec, DT_BF16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,PACK_GQA=1,SPLIT_KV=4", 0},
        {&c128, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=176,STAGES=2", 0},
        {&nc, DT_FP16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=192,STAGES=2", 0},
        {&c128, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=176,STAGES=2,WG_PIPE=1", 1},
        {&c128, DT_FP16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_PIPE=1", 1},
    };
    int bad = 0;
    attn_result res;
    char cfg[KCONFIG_STR_MAX];
    /* each case with the copy engine, then with a producer warpgroup too */
    /* ws 2: and the two consumer warpgroups taking turns (NUM_WARPS=8 cases) */
    for (int ws = 0; ws < 4; ws++) /* ws 3: ws 2 with the launch order read longest first */
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if ((ws >= 2 && !strstr(cases[i].cfg, "NUM_WARPS=8")) || (ws == 0 && cases[i].ws_only)) continue;
            snprintf(cfg, sizeof cfg, "%s,WG_TMA=1%s", cases[i].cfg,
                     ws == 3 ? ",WG_WS=1,WG_PINGPONG=1,GRID_LPT=1" : ws == 2 ? ",WG_WS=1,WG_PINGPONG=1" : ws ? ",WG_WS=1" : "");
            status_t st = run_on(runner, cases[i].s, cases[i].dt, cfg, &opts, &res);
            if (st != ST_OK) printf("    WRONG or failed: %s on %s: %s\n", cfg, cases[i].s->name, res.reason);
            bad += st != ST_OK;
        }
    char err[FB_ERRLEN];
    shape_t rag = mk(3, 4, 2, 100, 100, 128, 1), pag = mk(2, 4, 2, 150, 260, 64, 1);
    if (shapes_parse_lens("probe", 0, "0.3;1;0.6", &rag, err, sizeof err)) fail_msg("bad lens: %s", err);
    pag.page = 128;
    /* a ragged batch runs on the copy engine (its maps are [HKV] planes of the total keys) and
     * its output is checked like any other; a paged one is refused */
    assert_int_equal(run_on(runner, &rag, DT_BF16, "MMA=wgmma,WG_TMA=1", &opts, &res), ST_OK);
    assert_int_equal(run_on(runner, &pag, DT_BF16, "MMA=wgmma,WG_TMA=1", &opts, &res), ST_UNSUPPORTED);
    printf("tma: %s\n", bad ? "wrong results" : "right on every case");
    shape_t ref = mk(4, 32, 32, 4096, 4096, 128, 0);
    attn_opts t = timed_opts();
    const char *timed[] = {"MMA=wgmma", "MMA=wgmma,WG_TMA=1", "MMA=wgmma,STAGES=3,BLOCK_N=64,WG_TMA=1",
                           "MMA=wgmma,STAGES=3,BLOCK_N=64,WG_TMA=1,WG_PIPE=1", "MMA=wgmma,WG_TMA=1,WG_WS=1",
                           "MMA=wgmma,STAGES=3,WG_TMA=1,WG_WS=1", "MMA=wgmma,BLOCK_N=64,WG_TMA=1,WG_WS=1",
                           "MMA=wgmma,BLOCK_N=64,STAGES=4,WG_TMA=1,WG_WS=1", "MMA=wgmma,WG_TMA=1,WG_WS=1,WG_PINGPONG=1",
                           "MMA=wgmma,BLOCK_N=64,WG_TMA=1,WG_WS=1,WG_PINGPONG=1", "MMA=wgmma,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1",
                           "MMA=wgmma,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1",
                           "MMA=wgmma,STAGES=2,WG_TMA=1,WG_WS=1,WG_PIPE=1", "MMA=wgmma,BLOCK_N=176,WG_TMA=1,WG_WS=1",
                           "MMA=wgmma,BLOCK_N=192,WG_TMA=1,WG_WS=1", "MMA=wgmma,BLOCK_N=176,WG_TMA=1,WG_WS=1,WG_PIPE=1",
                           "MMA=wgmma,BLOCK_N=176,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1",
                           "MMA=wgmma,BLOCK_N=192,WG_TMA=1,WG_WS=1,WG_PIPE=1",
                           "MMA=wgmma,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,GRID_LPT=1",
                           "MMA=wgmma,BLOCK_N=64,WG_TMA=1,GRID_LPT=1"};
    for (int causal = 0; causal < 2; causal++)
        for (size_t i = 0; i < sizeof timed / sizeof timed[0]; i++) {
            ref.causal = causal;
            time_one(causal ? "ref c1" : "ref c0", &ref, timed[i], &t);
        }
    assert_int_equal(bad, 0);
}

/* One work-group per SM walking many query blocks (WG_PERSIST): fewer blocks than SMs and
 * several rounds (odd and even, the snake order), causal rows with no keys (Sq > Skv),
 * sections of 4 groups with a short last one (Skv = 8192 at d = 128: 4 MiB of K and V a
 * group), GQA packed and not, every head dim the copy engine takes, both 16-bit types;
 * then the reference shapes and two llm classes timed with and without it in one run. */
static void test_persist(void **state)
{
    (void)state;
    need_hopper();
    const int bad = run_persist_cases("MMA=wgmma,WG_TMA=1,WG_WS=1,WG_PERSIST=1");
    printf("persist: %s\n", bad ? "wrong results" : "right on every case");
    shape_t timed_shapes[] = {mk(4, 32, 32, 4096, 4096, 128, 0), mk(4, 32, 32, 4096, 4096, 128, 1),
                              mk(4, 32, 8, 4096, 4096, 128, 1), mk(4, 16, 16, 4096, 4096, 256, 1)};
    const char *timed[] = {"MMA=wgmma,BLOCK_N=64,WG_TMA=1", "MMA=wgmma,BLOCK_N=64,WG_TMA=1,GRID_LPT=1",
                           "MMA=wgmma,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1",
                           "MMA=wgmma,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,GRID_LPT=1",
                           "MMA=wgmma,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_PERSIST=1",
                           "MMA=wgmma,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PERSIST=1",
                           "MMA=wgmma,STAGES=2,WG_TMA=1,WG_WS=1,WG_PERSIST=1",
                           "MMA=wgmma,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_PERSIST=1",
                           "MMA=wgmma,BLOCK_N=176,STAGES=2,WG_TMA=1,WG_WS=1,WG_PERSIST=1",
                           "MMA=wgmma,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1",
                           "MMA=wgmma,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_PERSIST=1",
                           "MMA=wgmma,BLOCK_N=64,STAGES=4,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_PERSIST=1"};
    attn_opts t = timed_opts();
    for (size_t k = 0; k < sizeof timed_shapes / sizeof timed_shapes[0]; k++)
        for (size_t i = 0; i < sizeof timed / sizeof timed[0]; i++) {
            shape_t *s = &timed_shapes[k];
            if (s->d == 256 && !strstr(timed[i], "BLOCK_N=64")) continue; /* d=256: 64-key tiles only */
            if (!s->causal && strstr(timed[i], "GRID_LPT")) continue;
            char c2[256];
            snprintf(c2, sizeof c2, "%s%s", timed[i], s->hq != s->hkv ? ",PACK_GQA=1" : "");
            time_one(s->name, s, c2, &t);
        }
    assert_int_equal(bad, 0);
}

/* K and V of a stage on barriers of their own (WG_KVSPLIT: K released once its S is done,
 * V once its P V is): right on partial tiles, GQA, d = 64 to 256, two and three stages,
 * WG_PIPE, ping-pong, 176-key tiles, decode, persistent work-groups; then timed beside the
 * shared barrier on the reference shapes in one run. */
static void test_kvsplit(void **state)
{
    (void)state;
    need_hopper();
    shape_t c128 = mk(2, 4, 2, 200, 333, 128, 1), nc = mk(1, 4, 1, 77, 200, 64, 0), big = mk(1, 2, 2, 300, 300, 256, 1);
    shape_t dec = mk(8, 32, 8, 1, 1000, 128, 1), many = mk(4, 16, 4, 1000, 1000, 128, 1), d80 = mk(2, 4, 2, 200, 333, 80, 1);
    const probe_case cases[] = {
        {&c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2"},
        {&c128, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_PIPE=1,WG_PINGPONG=1"},
        {&c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1"},
        {&c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=176,STAGES=2,WG_PIPE=1"},
        {&nc, DT_FP16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,WG_PIPE=1"},
        {&nc, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=192,STAGES=2,WG_PINGPONG=1"},
        {&big, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_PINGPONG=1"},
        {&dec, DT_BF16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3,PACK_GQA=1,SPLIT_KV=4"},
        {&many, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_PIPE=1,WG_PINGPONG=1,WG_PERSIST=1"},
        {&many, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=1,WG_PERSIST=1"},
        {&d80, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PERSIST=1"},
        {&d80, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_PIPE=1"},
    };
    const int bad = run_probe_cases("MMA=wgmma,WG_TMA=1,WG_WS=1,WG_KVSPLIT=1", cases, sizeof cases / sizeof cases[0]);
    char cfg[KCONFIG_STR_MAX];
    printf("kvsplit: %s\n", bad ? "wrong results" : "right on every case");
    shape_t ref[] = {mk(4, 32, 32, 4096, 4096, 128, 0), mk(4, 32, 32, 4096, 4096, 128, 1)};
    const char *timed[] = {"STAGES=3,WG_PIPE=1,WG_PINGPONG=1", "STAGES=3,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1",
                           "STAGES=2,WG_PIPE=1,WG_PINGPONG=1", "STAGES=2,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1",
                           "STAGES=2,WG_PIPE=1,WG_KVSPLIT=1", "BLOCK_N=176,STAGES=2,WG_PIPE=1,WG_KVSPLIT=1",
                           "BLOCK_N=176,STAGES=2,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1",
                           "BLOCK_N=192,STAGES=2,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1"};
    attn_opts t = timed_opts();
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < sizeof timed / sizeof timed[0]; i++) {
            if (ref[k].causal && strstr(timed[i], "BLOCK_N=1")) continue; /* 176/192-key tiles: non-causal */
            snprintf(cfg, sizeof cfg, "MMA=wgmma,WG_TMA=1,WG_WS=1,%s", timed[i]);
            time_one(ref[k].causal ? "ref c1" : "ref c0", &ref[k], cfg, &t);
        }
    assert_int_equal(bad, 0);
}

/* Persistent work-groups that take their next query block from a global counter as they
 * free up (WG_DYNAMIC): right on the persistent cases (each run twice by the harness, so
 * the counters' reset for the next launch is checked too); then timed beside the static
 * share and the plain grid on small grids, where a block's start-up is a large share, and
 * on the reference shapes. */
static void test_dynamic(void **state)
{
    (void)state;
    need_hopper();
    const int bad = run_persist_cases("MMA=wgmma,WG_TMA=1,WG_WS=1,WG_PERSIST=1,WG_DYNAMIC=1");
    printf("dynamic: %s\n", bad ? "wrong results" : "right on every case");
    const char *base = "MMA=wgmma,BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1";
    const char *timed[] = {"", ",GRID_LPT=1", ",WG_PERSIST=1", ",WG_PERSIST=1,WG_DYNAMIC=1",
                           ",WG_DEFER=1,WG_PVTURN=1", ",WG_DEFER=1,WG_PVTURN=1,WG_PERSIST=1,WG_DYNAMIC=1"};
    time_startup_variants(base, timed, sizeof timed / sizeof timed[0], 1);
    assert_int_equal(bad, 0);
}

/* Persistent warpgroups fetching their next block's Q rows as soon as this block's last S is
 * done (WG_QPREFETCH): right on the persistent cases (rounds fewer and more than the SMs,
 * rows with no keys, L2 sections, GQA packing, d = 64 to 256, FlashAttention-3's order),
 * static and counter-fed; then timed beside the same configurations without it. */
static void test_qprefetch(void **state)
{
    (void)state;
    need_hopper();
    int bad = run_persist_cases("MMA=wgmma,WG_TMA=1,WG_WS=1,WG_PERSIST=1,WG_QPREFETCH=1");
    bad += run_persist_cases("MMA=wgmma,WG_TMA=1,WG_WS=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1");
    /* blocks with no key tiles among more blocks than SMs (each work-group walks several,
     * some of them empty: the next Q rows are then taken after the stores) */
    shape_t empty = mk(4, 32, 8, 2048, 512, 128, 1);
    const probe_case more[] = {
        {&empty, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PINGPONG=1"},
        {&empty, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PINGPONG=1,WG_DYNAMIC=1"},
        {&empty, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,PACK_GQA=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_DYNAMIC=1"},
    };
    bad += run_probe_cases("MMA=wgmma,WG_TMA=1,WG_WS=1,WG_PERSIST=1,WG_QPREFETCH=1", more, sizeof more / sizeof more[0]);
    printf("qprefetch: %s\n", bad ? "wrong results" : "right on every case");
    const char *base = "MMA=wgmma,BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_PERSIST=1";
    const char *timed[] = {"", ",WG_QPREFETCH=1", ",WG_DYNAMIC=1", ",WG_DYNAMIC=1,WG_QPREFETCH=1", ",WG_DYNAMIC=1,WG_KVSPLIT=1",
                           ",WG_DYNAMIC=1,WG_KVSPLIT=1,WG_QPREFETCH=1", ",WG_DYNAMIC=1,WG_DEFER=1,WG_PVTURN=1",
                           ",WG_DYNAMIC=1,WG_DEFER=1,WG_PVTURN=1,WG_QPREFETCH=1"};
    time_startup_variants(base, timed, sizeof timed / sizeof timed[0], 1);
    assert_int_equal(bad, 0);
}

/* The producer warpgroup starting on K and V before Q has landed (WG_QEARLY; each consumer
 * warpgroup loads its own Q rows, as WG_PERSIST's do): right on odd lengths, GQA (packed
 * and not), causal, d = 64 to 256, fp16, one and two consumer warpgroups, split barriers,
 * FlashAttention-3's order, decode with split-KV and a ragged batch; then timed beside the
 * same configuration without it on the reference shapes and the llm suite's weakest S=1024
 * shapes (each block's start is a larger share of its work there). */
static void test_qearly(void **state)
{
    (void)state;
    need_hopper();
    char err[FB_ERRLEN];
    shape_t c128 = mk(2, 4, 2, 200, 333, 128, 1), nc = mk(1, 4, 1, 77, 200, 64, 0), big = mk(1, 2, 2, 300, 300, 256, 1);
    shape_t d80 = mk(2, 4, 2, 200, 333, 80, 1), dec = mk(3, 8, 2, 1, 1000, 128, 1), rag = mk(5, 4, 2, 300, 300, 128, 1);
    if (shapes_parse_lens("probe", 0, "0.1;0.4;0.5;1.0;0.2", &rag, err, sizeof err)) fail_msg("bad lens: %s", err);
    const probe_case cases[] = {
        {&c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PINGPONG=1"},
        {&c128, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"},
        {&c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,PACK_GQA=1,WG_PINGPONG=1,WG_KVSPLIT=1"},
        {&c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PINGPONG=1,GRID_LPT=1"},
        {&nc, DT_FP16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2"},
        {&nc, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=176,STAGES=2,WG_PIPE=1"},
        {&big, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_PINGPONG=1"},
        {&d80, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PINGPONG=1"},
        {&dec, DT_BF16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3,PACK_GQA=1,SPLIT_KV=4"},
        {&rag, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PINGPONG=1"},
    };
    const int bad = run_probe_cases("MMA=wgmma,WG_TMA=1,WG_WS=1,WG_QEARLY=1", cases, sizeof cases / sizeof cases[0]);
    printf("qearly: %s\n", bad ? "wrong results" : "right on every case");
    const char *base = "MMA=wgmma,BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=3,SPLIT_KV=1,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1";
    const char *timed[] = {"", ",WG_QEARLY=1", ",WG_DEFER=1,WG_PVTURN=1", ",WG_DEFER=1,WG_PVTURN=1,WG_QEARLY=1",
                           ",WG_KVSPLIT=1,GRID_LPT=1", ",WG_KVSPLIT=1,GRID_LPT=1,WG_QEARLY=1", ",WG_PERSIST=1,WG_DYNAMIC=1"};
    time_startup_variants(base, timed, sizeof timed / sizeof timed[0], 0);
    assert_int_equal(bad, 0);
}

/* The wait for tile j-1's P V held behind tile j's softmax by a CTA fence (WG_HOLDPV):
 * right with and without the producer warpgroup, ping-pong, FlashAttention-3's order (both
 * rescale places), split barriers, persistent and counter-fed work-groups, d = 64 to 256,
 * both 16-bit types, causal, GQA packed, a ragged batch; then timed beside the same
 * configurations without it on the reference shapes, the S=1024 shapes and d = 256. */
static void test_holdpv(void **state)
{
    (void)state;
    need_hopper();
    switch_shapes sh = probe_shapes();
    const probe_case cases[] = {
        {&sh.c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PINGPONG=1"},
        {&sh.c128, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"},
        {&sh.c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PINGPONG=1,WG_PVTURN=1,PACK_GQA=1"},
        {&sh.c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_WS=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_DEFER=1"},
        {&sh.c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3"},
        {&sh.nc, DT_FP16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,WG_WS=1"},
        {&sh.nc, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=176,STAGES=2,WG_WS=1,WG_DEFER=1"},
        {&sh.big, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_WS=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"},
        {&sh.d80, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PINGPONG=1"},
        {&sh.many, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PINGPONG=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,PACK_GQA=1"},
        {&sh.many, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,WG_PERSIST=1"},
        {&sh.rag, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"},
    };
    const int bad = run_probe_cases("MMA=wgmma,WG_TMA=1,WG_PIPE=1,WG_HOLDPV=1", cases, sizeof cases / sizeof cases[0]);
    printf("holdpv: %s\n", bad ? "wrong results" : "right on every case");
    const char *base = "MMA=wgmma,BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=3,SPLIT_KV=1,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1";
    const char *timed[] = {",WG_PVTURN=1", ",WG_PVTURN=1,WG_HOLDPV=1", ",WG_DEFER=1,WG_PVTURN=1",
                           ",WG_DEFER=1,WG_PVTURN=1,WG_HOLDPV=1", ",WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_PVTURN=1",
                           ",WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_PVTURN=1,WG_HOLDPV=1"};
    time_startup_variants(base, timed, sizeof timed / sizeof timed[0], 1);
    const shape_t d256[] = {mk(4, 16, 16, 4096, 4096, 256, 1), mk(4, 16, 16, 1024, 1024, 256, 1)};
    const char *base256 = "MMA=wgmma,BLOCK_M=128,NUM_WARPS=8,BLOCK_N=64,STAGES=2,SPLIT_KV=1,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1";
    const char *timed256[] = {",WG_DEFER=1,WG_PVTURN=1", ",WG_DEFER=1,WG_PVTURN=1,WG_HOLDPV=1"};
    time_variants(d256, 2, base256, timed256, sizeof timed256 / sizeof timed256[0], 0);
    assert_int_equal(bad, 0);
}

/* O stored through the warpgroup's Q rows of shared memory in whole 16-byte chunks
 * (WG_OSTAGE): right on partial tiles and GQA (rows past the end skipped), packed GQA,
 * d = 64 to 256 (d = 80's ten chunks a row), one and two consumer warpgroups, with and
 * without the producer, persistent and counter-fed work-groups (the next block's Q rows
 * land where O was), a ragged batch; then timed beside the same configurations without it. */
static void test_ostage(void **state)
{
    (void)state;
    need_hopper();
    switch_shapes sh = probe_shapes();
    const probe_case cases[] = {
        {&sh.c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"},
        {&sh.c128, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_WS=1,WG_PINGPONG=1,WG_KVSPLIT=1,PACK_GQA=1"},
        {&sh.c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1"},
        {&sh.nc, DT_FP16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2"},
        {&sh.nc, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=176,STAGES=2,WG_WS=1,WG_PIPE=1,WG_KVSPLIT=1"},
        {&sh.big, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_DEFER=1"},
        {&sh.d80, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_WS=1,WG_KVSPLIT=1,WG_PERSIST=1,WG_DYNAMIC=1"},
        {&sh.many, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_PERSIST=1,PACK_GQA=1"},
        {&sh.many, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_DEFER=1,WG_PVTURN=1"},
        {&sh.rag, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1"},
    };
    const int bad = run_probe_cases("MMA=wgmma,WG_TMA=1,SPLIT_KV=1,WG_OSTAGE=1", cases, sizeof cases / sizeof cases[0]);
    printf("ostage: %s\n", bad ? "wrong results" : "right on every case");
    const char *base = "MMA=wgmma,BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=3,SPLIT_KV=1,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1";
    const char *timed[] = {"", ",WG_OSTAGE=1", ",WG_SINFLIGHT=1,WG_HOLDPV=1", ",WG_SINFLIGHT=1,WG_HOLDPV=1,WG_OSTAGE=1",
                           ",WG_PERSIST=1,WG_DYNAMIC=1", ",WG_PERSIST=1,WG_DYNAMIC=1,WG_OSTAGE=1"};
    time_startup_variants(base, timed, sizeof timed / sizeof timed[0], 1);
    assert_int_equal(bad, 0);
}

/* Q and O by the copy engine. WG_QTMA: the producer thread issues Q's boxes on a barrier of
 * their own before the first K and V, the consumers load nothing; right with ping-pong or
 * not, FlashAttention-3's order, split barriers, O staged, d = 64 to 256 (80: half a box
 * past the row), both 16-bit types, causal or not, GQA unpacked, rows past SQ (Q's map
 * zero-fills them). WG_OTMA: a thread per warpgroup stores the O rows WG_OSTAGE staged;
 * right with and without the producer warpgroup, persistent and counter-fed, with WG_QTMA,
 * rows past SQ (clipped: O is poisoned before each run, so a row stored twice or not at all
 * shows). Then timed beside the same configuration without them, with WG_QEARLY (the
 * consumers' own Q loads beside the producer's K and V) and WG_OSTAGE. */
static void test_qtma(void **state)
{
    (void)state;
    need_hopper();
    switch_shapes sh = probe_shapes();
    const probe_case cases[] = {
        {&sh.c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"},
        {&sh.c128, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,WG_OSTAGE=1,SPLIT_KV=1"},
        {&sh.c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,WG_KVSPLIT=1,SPLIT_KV=3"},
        {&sh.nc, DT_FP16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2"},
        {&sh.nc, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=176,STAGES=2,WG_PIPE=1,WG_KVSPLIT=1"},
        {&sh.big, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_DEFER=1"},
        {&sh.d80, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_KVSPLIT=1,GRID_LPT=1"},
        {&sh.many, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PINGPONG=1,WG_HOLDPV=1,GRID_LPT=1"},
        {&sh.many, DT_FP16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=128,STAGES=2,WG_PIPE=1"},
    };
    const probe_case ocases[] = {
        {&sh.c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,WG_QTMA=1"},
        {&sh.c128, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1"},
        {&sh.nc, DT_BF16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,WG_WS=1"},
        {&sh.big, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_DEFER=1,WG_QTMA=1"},
        {&sh.d80, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_WS=1,WG_KVSPLIT=1,WG_PERSIST=1,WG_DYNAMIC=1"},
        {&sh.many, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_PERSIST=1"},
        {&sh.many, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,GRID_LPT=1,WG_QTMA=1"},
    };
    const int bad = run_probe_cases("MMA=wgmma,WG_TMA=1,WG_WS=1,PACK_GQA=0,WG_QTMA=1", cases, sizeof cases / sizeof cases[0]) +
                    run_probe_cases("MMA=wgmma,WG_TMA=1,PACK_GQA=0,SPLIT_KV=1,WG_OSTAGE=1,WG_OTMA=1", ocases, sizeof ocases / sizeof ocases[0]);
    printf("qtma, otma: %s\n", bad ? "wrong results" : "right on every case");
    const char *base = "MMA=wgmma,BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=3,SPLIT_KV=1,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,PACK_GQA=0";
    const char *timed[] = {"", ",WG_QTMA=1", ",WG_QEARLY=1", ",WG_OSTAGE=1", ",WG_OSTAGE=1,WG_QTMA=1", ",WG_OSTAGE=1,WG_OTMA=1",
                           ",WG_OSTAGE=1,WG_QTMA=1,WG_OTMA=1"};
    time_startup_variants(base, timed, sizeof timed / sizeof timed[0], 0);
    assert_int_equal(bad, 0);
}

/* Three consumer warpgroups (NUM_WARPS=12, 192-row blocks, 160 registers a consumer thread
 * beside the producer): right alone, in a three-way ping-pong ring, with FlashAttention-3's
 * order (d = 64 non-causal), persistent and counter-fed, with split barriers, Q and O through
 * the copy engine, without the producer, GQA packed, causal and not, both 16-bit types,
 * d = 64 to 128, a ragged batch; then timed on the d = 64 prefill shapes (llama3.2-1b) beside
 * their tuned winner and two warpgroups in FlashAttention-3's order, and on the reference
 * shapes beside the tuned d = 128 form. */
static void test_wg3(void **state)
{
    (void)state;
    need_hopper();
    switch_shapes sh = probe_shapes();
    shape_t nc64 = mk(3, 8, 8, 700, 650, 64, 0), c64 = mk(2, 8, 2, 500, 777, 64, 1);
    const probe_case cases[] = {
        {&c64, DT_BF16, "BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1"},
        {&c64, DT_FP16, "BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,PACK_GQA=1"},
        {&c64, DT_BF16, "BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_KVSPLIT=1,GRID_LPT=1"},
        {&nc64, DT_BF16, "BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"},
        {&nc64, DT_FP16, "BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1"},
        {&sh.nc, DT_BF16, "BLOCK_N=64,STAGES=2"},
        {&sh.nc, DT_FP16, "BLOCK_N=128,STAGES=2,WG_TMA=1"},
        {&sh.c128, DT_BF16, "BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1"},
        {&sh.d80, DT_BF16, "BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,PACK_GQA=1"},
        {&sh.many, DT_BF16, "BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_PERSIST=1"},
        {&sh.many, DT_FP16, "BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1"},
        {&c64, DT_BF16, "BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_OSTAGE=1,WG_OTMA=1,WG_QTMA=1,PACK_GQA=0"},
        {&nc64, DT_BF16, "BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_OSTAGE=1,SPLIT_KV=1"},
        {&sh.rag, DT_BF16, "BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1"},
    };
    const int bad = run_probe_cases("MMA=wgmma,NUM_WARPS=12,BLOCK_M=192", cases, sizeof cases / sizeof cases[0]);
    printf("three consumer warpgroups: %s\n", bad ? "wrong results" : "right on every case");
    const shape_t d64[] = {mk(4, 32, 8, 4096, 4096, 64, 1), mk(1, 32, 8, 4096, 4096, 64, 1), mk(4, 32, 8, 1024, 1024, 64, 1),
                           mk(4, 32, 32, 4096, 4096, 64, 0)};
    const char *base64 = "MMA=wgmma,SPLIT_KV=1,WG_TMA=1";
    const char *timed64[] = {
        ",BLOCK_M=64,NUM_WARPS=4,BLOCK_N=128,STAGES=1", /* the S=4096 classes' tuned winner */
        ",BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1",
        ",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=2,WG_WS=1",
        ",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=2,WG_WS=1,WG_PINGPONG=1",
        ",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PINGPONG=1",
        ",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=2,WG_WS=1,WG_PINGPONG=1,WG_PIPE=1,WG_DEFER=1,WG_PVTURN=1",
        ",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=64,STAGES=2,WG_WS=1,WG_PINGPONG=1",
        ",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=2,WG_WS=1,WG_PINGPONG=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1",
    };
    time_variants(d64, sizeof d64 / sizeof d64[0], base64, timed64, sizeof timed64 / sizeof timed64[0], 0);
    const shape_t ref[] = {mk(4, 32, 32, 4096, 4096, 128, 0), mk(4, 32, 32, 4096, 4096, 128, 1)};
    const char *base128 = "MMA=wgmma,SPLIT_KV=1,WG_TMA=1,WG_WS=1";
    const char *timed128[] = {",BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,WG_OSTAGE=1",
                              ",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=2,WG_PINGPONG=1",
                              ",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,WG_OSTAGE=1"};
    time_variants(ref, 2, base128, timed128, 3, 0);
    assert_int_equal(bad, 0);
}

/* WG_SKIP (a warpgroup takes no MMA for tiles none of its rows sees): right on 192-row
 * blocks whose last warpgroups lie past the last row (S = 700, 77, 3968: the
 * tail block's third warpgroup or more), causal tiles past a warpgroup's diagonal (192-row blocks over 128-key
 * tiles; 128-row blocks over 64-key tiles at d = 256), packed GQA, split barriers,
 * persistent and counter-fed blocks with Q prefetched, ragged batches, fp16; then timed
 * beside the same configurations without it. */
static void test_skip(void **state)
{
    (void)state;
    need_hopper();
    switch_shapes sh = probe_shapes();
    shape_t nc64 = mk(3, 8, 8, 700, 650, 64, 0), c64 = mk(2, 8, 2, 500, 777, 64, 1), nc128 = mk(1, 4, 4, 4096 - 128, 333, 128, 0);
    const probe_case cases[] = {
        {&nc64, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1"},
        {&nc128, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,WG_OSTAGE=1,WG_QTMA=1,PACK_GQA=0"},
        {&nc128, DT_FP16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_OSTAGE=1,WG_OTMA=1,PACK_GQA=0"},
        {&sh.nc, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=64,STAGES=2,WG_PINGPONG=1"},
        {&c64, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,PACK_GQA=1"},
        {&c64, DT_FP16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=3,WG_PINGPONG=1,WG_KVSPLIT=1,GRID_LPT=1"},
        {&sh.c128, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,WG_OSTAGE=1,WG_QTMA=1,PACK_GQA=0"},
        {&sh.c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=3,WG_PINGPONG=1,RED_SPLIT=1"},
        {&sh.big, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_PINGPONG=1,WG_KVSPLIT=1"},
        {&sh.d80, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,PACK_GQA=1"},
        {&sh.many, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1"},
        {&sh.many, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=3,WG_PINGPONG=1,WG_PERSIST=1,WG_QPREFETCH=1,PACK_GQA=1"},
        {&sh.rag, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1"},
        {&sh.rag, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_PINGPONG=1,WG_OSTAGE=1"},
    };
    const int bad = run_probe_cases("MMA=wgmma,WG_TMA=1,WG_WS=1,SPLIT_KV=1,WG_SKIP=1", cases, sizeof cases / sizeof cases[0]);
    printf("WG_SKIP: %s\n", bad ? "wrong results" : "right on every case");
    const shape_t ref[] = {mk(4, 32, 32, 4096, 4096, 128, 0), mk(4, 32, 32, 4096, 4096, 128, 1), mk(4, 32, 8, 1024, 1024, 128, 1),
                           mk(4, 32, 8, 1024, 1024, 128, 0), mk(4, 8, 1, 4096, 4096, 256, 1)};
    const char *base = "MMA=wgmma,SPLIT_KV=1,WG_TMA=1,WG_WS=1,WG_PINGPONG=1";
    const char *timed[] = {",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=2,WG_OSTAGE=1,WG_QTMA=1",
                           ",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=2,WG_OSTAGE=1,WG_QTMA=1,WG_SKIP=1",
                           ",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=2,WG_OSTAGE=1,WG_QTMA=1,WG_SKIP=1,GRID_LPT=1",
                           ",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=2,WG_OSTAGE=1,WG_QTMA=1,WG_OTMA=1,WG_SKIP=1,GRID_LPT=1",
                           ",BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_DEFER=1,WG_PVTURN=1,WG_OSTAGE=1,WG_QTMA=1,WG_OTMA=1,RED_SPLIT=1,GRID_LPT=1"};
    time_variants(ref, 4, base, timed, sizeof timed / sizeof timed[0], 0);
    const char *timed256[] = {",BLOCK_M=128,NUM_WARPS=8,BLOCK_N=64,STAGES=2,WG_KVSPLIT=1", ",BLOCK_M=128,NUM_WARPS=8,BLOCK_N=64,STAGES=2,WG_KVSPLIT=1,WG_SKIP=1"};
    time_variants(&ref[4], 1, base, timed256, 2, 1);
    assert_int_equal(bad, 0);
}

/* MASK_BOUND (a masked tile's scores against one bound per row): right on causal tiles
 * with Sq < Skv and Sq > Skv (bottom-right diagonals), partial last tiles, packed GQA,
 * ragged batches, three warpgroups with WG_SKIP, persistent, d = 80 to 256, fp16, and on
 * MMA=mma; then timed beside the same configurations without it (three warpgroups spilled
 * 96-124 bytes at d = 128 causal without it, none with it). */
static void test_mask_bound(void **state)
{
    (void)state;
    need_hopper();
    switch_shapes sh = probe_shapes();
    shape_t skew = mk(2, 4, 2, 300, 777, 128, 1), tall = mk(2, 4, 4, 640, 200, 64, 1);
    const probe_case cases[] = {
        {&sh.c128, DT_BF16, "MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_SKIP=1"},
        {&sh.c128, DT_FP16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1,PACK_GQA=1"},
        {&skew, DT_BF16, "MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_OSTAGE=1,WG_QTMA=1,PACK_GQA=0,WG_SKIP=1,GRID_LPT=1"},
        {&tall, DT_BF16, "MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_SKIP=1"},
        {&sh.big, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_KVSPLIT=1"},
        {&sh.d80, DT_BF16, "MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_KVSPLIT=1,WG_PERSIST=1,WG_DYNAMIC=1,PACK_GQA=1"},
        {&sh.many, DT_BF16, "MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_SKIP=1"},
        {&sh.rag, DT_BF16, "MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_SKIP=1"},
        {&sh.nc, DT_BF16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,WG_TMA=1"},
        {&skew, DT_BF16, "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2"},
        {&sh.rag, DT_FP16, "MMA=mma,NUM_WARPS=4,WARP_M=2,BLOCK_M=128,BLOCK_N=64,STAGES=2"},
    };
    const int bad = run_probe_cases("SPLIT_KV=1,MASK_BOUND=1", cases, sizeof cases / sizeof cases[0]);
    printf("MASK_BOUND: %s\n", bad ? "wrong results" : "right on every case");
    const shape_t ref[] = {mk(4, 32, 32, 4096, 4096, 128, 1), mk(4, 32, 8, 4096, 4096, 128, 1), mk(4, 32, 8, 1024, 1024, 128, 1)};
    const char *base = "MMA=wgmma,SPLIT_KV=1,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,PACK_GQA=0";
    const char *timed[] = {
        ",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=2,WG_OSTAGE=1,WG_QTMA=1,WG_OTMA=1,WG_SKIP=1,RED_SPLIT=1,GRID_LPT=1",
        ",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=2,WG_OSTAGE=1,WG_QTMA=1,WG_OTMA=1,WG_SKIP=1,RED_SPLIT=1,GRID_LPT=1,MASK_BOUND=1",
        ",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=2,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_SKIP=1",
        ",BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=2,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_SKIP=1,MASK_BOUND=1",
        ",BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_DEFER=1,WG_PVTURN=1,WG_OSTAGE=1,WG_QTMA=1,WG_OTMA=1,RED_SPLIT=1,GRID_LPT=1",
        ",BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_DEFER=1,WG_PVTURN=1,WG_OSTAGE=1,WG_QTMA=1,WG_OTMA=1,RED_SPLIT=1,GRID_LPT=1,MASK_BOUND=1"};
    time_variants(ref, sizeof ref / sizeof ref[0], base, timed, sizeof timed / sizeof timed[0], 0);
    assert_int_equal(bad, 0);
}

/* WG_HALF (P V, or S and P V, over the first half of a tile whose second half none of a
 * warpgroup's rows sees; 1 and 2 alternate over the cases): right on causal tiles across a warpgroup's diagonal with Sq < Skv
 * and Sq > Skv, both mask forms, packed GQA, split barriers, persistent and counter-fed
 * blocks with Q prefetched, ragged batches, d = 64 to 256, 192-key tiles (a 96-wide half),
 * fp16, and a non-causal sequence whose last tile holds under half its keys; then timed
 * beside the same configurations without it. */
static void test_half(void **state)
{
    (void)state;
    need_hopper();
    switch_shapes sh = probe_shapes();
    shape_t c64 = mk(2, 8, 2, 500, 777, 64, 1), skew = mk(2, 4, 2, 300, 777, 128, 1), tall = mk(2, 4, 4, 640, 200, 64, 1),
            tail = mk(1, 4, 4, 4096 - 128, 300, 128, 0);
    const probe_case cases[] = {
        {&sh.c128, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,MASK_BOUND=1"},
        {&sh.c128, DT_FP16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,WG_HALF=2"},
        {&sh.c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PINGPONG=1,RED_SPLIT=1,MASK_BOUND=1"},
        {&c64, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,PACK_GQA=1,MASK_BOUND=1,WG_HALF=2"},
        {&c64, DT_FP16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=3,WG_PINGPONG=1,WG_KVSPLIT=1,GRID_LPT=1"},
        {&c64, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=192,STAGES=2,MASK_BOUND=1,WG_HALF=2"},
        {&skew, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,WG_OSTAGE=1,WG_QTMA=1,WG_OTMA=1,PACK_GQA=0,GRID_LPT=1,MASK_BOUND=1"},
        {&tall, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,MASK_BOUND=1,WG_HALF=2"},
        {&tail, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,WG_OSTAGE=1,WG_QTMA=1,PACK_GQA=0"},
        {&sh.d80, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,PACK_GQA=1,MASK_BOUND=1,WG_HALF=2"},
        {&sh.many, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,MASK_BOUND=1"},
        {&sh.many, DT_FP16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,WG_KVSPLIT=1,WG_PERSIST=1,WG_DYNAMIC=1,PACK_GQA=1,WG_HALF=2"},
        {&sh.rag, DT_BF16, "NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,MASK_BOUND=1"},
        {&sh.rag, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PINGPONG=1,WG_HALF=2"},
        {&sh.big, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_PINGPONG=1,WG_KVSPLIT=1"},
    };
    const int bad = run_probe_cases("MMA=wgmma,WG_TMA=1,WG_WS=1,SPLIT_KV=1,WG_SKIP=1,WG_HALF=1", cases, sizeof cases / sizeof cases[0]);
    printf("WG_HALF: %s\n", bad ? "wrong results" : "right on every case");
    const shape_t ref[] = {mk(4, 32, 32, 4096, 4096, 128, 1), mk(4, 32, 8, 4096, 4096, 128, 1), mk(4, 64, 8, 4096, 4096, 128, 1),
                           mk(4, 32, 8, 1024, 1024, 128, 1), mk(1, 32, 8, 1024, 1024, 128, 1)};
    const char *base = "MMA=wgmma,SPLIT_KV=1,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,PACK_GQA=0,BLOCK_N=128,WG_SKIP=1,MASK_BOUND=1";
    const char *timed[] = {
        ",BLOCK_M=192,NUM_WARPS=12,STAGES=2,WG_OSTAGE=1,WG_QTMA=1,WG_OTMA=1,RED_SPLIT=1,GRID_LPT=1",
        ",BLOCK_M=192,NUM_WARPS=12,STAGES=2,WG_OSTAGE=1,WG_QTMA=1,WG_OTMA=1,RED_SPLIT=1,GRID_LPT=1,WG_HALF=1",
        ",BLOCK_M=192,NUM_WARPS=12,STAGES=2,WG_OSTAGE=1,WG_QTMA=1,WG_OTMA=1,RED_SPLIT=1,GRID_LPT=1,WG_HALF=2",
        ",BLOCK_M=192,NUM_WARPS=12,STAGES=2,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1",
        ",BLOCK_M=192,NUM_WARPS=12,STAGES=2,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_HALF=1",
        ",BLOCK_M=192,NUM_WARPS=12,STAGES=2,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_HALF=2",
        ",BLOCK_M=128,NUM_WARPS=8,STAGES=3,RED_SPLIT=1",
        ",BLOCK_M=128,NUM_WARPS=8,STAGES=3,RED_SPLIT=1,WG_HALF=1",
        ",BLOCK_M=128,NUM_WARPS=8,STAGES=3,RED_SPLIT=1,WG_HALF=2"};
    time_variants(ref, sizeof ref / sizeof ref[0], base, timed, sizeof timed / sizeof timed[0], 0);
    assert_int_equal(bad, 0);
}

/* WG_DEFER's rescale of O with this tile's S left in flight (WG_SINFLIGHT: a wait for all
 * but the newest group before it, so that ptxas does not wait for S there): right with and
 * without the producer warpgroup, ping-pong, P V turns, split barriers, persistent and
 * counter-fed work-groups, d = 64 to 256, both 16-bit types, causal, GQA packed, ragged;
 * then FlashAttention-3's order timed with and without it (and with WG_HOLDPV). */
static void test_sinflight(void **state)
{
    (void)state;
    need_hopper();
    switch_shapes sh = probe_shapes();
    const probe_case cases[] = {
        {&sh.c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PINGPONG=1,WG_PVTURN=1"},
        {&sh.c128, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PINGPONG=1,WG_PVTURN=1,WG_HOLDPV=1,PACK_GQA=1"},
        {&sh.c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_WS=1,WG_PINGPONG=1,WG_KVSPLIT=1"},
        {&sh.c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3"},
        {&sh.nc, DT_FP16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3,WG_WS=1"},
        {&sh.nc, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=176,STAGES=2,WG_WS=1,WG_KVSPLIT=1"},
        {&sh.big, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_WS=1,WG_PINGPONG=1,WG_PVTURN=1,WG_KVSPLIT=1"},
        {&sh.d80, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PINGPONG=1,WG_PVTURN=1"},
        {&sh.many, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PINGPONG=1,WG_PVTURN=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,PACK_GQA=1"},
        {&sh.many, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PINGPONG=1,WG_PERSIST=1"},
        {&sh.rag, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PINGPONG=1,WG_PVTURN=1"},
    };
    const int bad = run_probe_cases("MMA=wgmma,WG_TMA=1,WG_PIPE=1,WG_DEFER=1,WG_SINFLIGHT=1", cases, sizeof cases / sizeof cases[0]);
    printf("sinflight: %s\n", bad ? "wrong results" : "right on every case");
    const char *base = "MMA=wgmma,BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=3,SPLIT_KV=1,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1";
    const char *timed[] = {"", ",WG_SINFLIGHT=1", ",WG_SINFLIGHT=1,WG_HOLDPV=1", ",WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1",
                           ",WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_SINFLIGHT=1,WG_HOLDPV=1"};
    time_startup_variants(base, timed, sizeof timed / sizeof timed[0], 1);
    const shape_t d256[] = {mk(4, 16, 16, 4096, 4096, 256, 1)};
    const char *base256 = "MMA=wgmma,BLOCK_M=128,NUM_WARPS=8,BLOCK_N=64,STAGES=2,SPLIT_KV=1,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_DEFER=1";
    const char *timed256[] = {"", ",WG_SINFLIGHT=1", ",WG_HOLDPV=1", ",WG_HOLDPV=1,WG_SINFLIGHT=1"};
    time_variants(d256, 1, base256, timed256, 4, 0);
    assert_int_equal(bad, 0);
}

/* The score tile's row maxima and sums in four independent chains per row (RED_SPLIT):
 * right on mma.sync tiles of 16 to 128 keys (fewer score tiles than chains included) and
 * wgmma tiles of 64 to 192, d = 64 to 256, both 16-bit types, causal and not, partial tiles, GQA packed,
 * split-KV decode, persistent work-groups, a ragged batch; then timed beside the same
 * configurations without it (the tuned forms of the reference shapes, the S=1024 shapes,
 * d = 256 and MMA=mma). */
static void test_red_split(void **state)
{
    (void)state;
    need_hopper();
    switch_shapes sh = probe_shapes();
    const probe_case cases[] = {
        {&sh.c128, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"},
        {&sh.c128, DT_FP16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=176,STAGES=2,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_KVSPLIT=1,PACK_GQA=1"},
        {&sh.nc, DT_BF16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2"},
        {&sh.nc, DT_FP16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=192,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1"},
        {&sh.big, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_HOLDPV=1"},
        {&sh.d80, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_KVSPLIT=1,WG_PERSIST=1,WG_DYNAMIC=1"},
        {&sh.many, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_PERSIST=1,WG_QPREFETCH=1,PACK_GQA=1"},
        {&sh.rag, DT_FP16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1"},
        {&sh.dec, DT_BF16, "MMA=wgmma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3,PACK_GQA=1,SPLIT_KV=4"},
        {&sh.c128, DT_BF16, "MMA=mma,NUM_WARPS=4,WARP_M=2,BLOCK_M=128,BLOCK_N=64,STAGES=2"},
        {&sh.nc, DT_FP16, "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=16,STAGES=3"},
        {&sh.big, DT_BF16, "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=32,STAGES=1"},
        {&sh.dec, DT_FP16, "MMA=mma,NUM_WARPS=1,BLOCK_M=16,BLOCK_N=128,STAGES=1,PACK_GQA=1,SPLIT_KV=3"},
    };
    const int bad = run_probe_cases("RED_SPLIT=1", cases, sizeof cases / sizeof cases[0]);
    printf("red_split: %s\n", bad ? "wrong results" : "right on every case");
    const char *base = "MMA=wgmma,BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=3,SPLIT_KV=1,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1";
    const char *timed[] = {",WG_DEFER=1,WG_PVTURN=1", ",WG_DEFER=1,WG_PVTURN=1,RED_SPLIT=1",
                           ",WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_PVTURN=1",
                           ",WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_PVTURN=1,RED_SPLIT=1"};
    time_startup_variants(base, timed, sizeof timed / sizeof timed[0], 1);
    const shape_t d256[] = {mk(4, 16, 16, 4096, 4096, 256, 1), mk(1, 16, 16, 1024, 1024, 256, 1)};
    const char *base256 = "MMA=wgmma,BLOCK_M=128,NUM_WARPS=8,BLOCK_N=64,STAGES=2,SPLIT_KV=1,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_DEFER=1";
    const char *timed256[] = {"", ",RED_SPLIT=1"};
    time_variants(d256, 2, base256, timed256, 2, 0);
    const shape_t mmas[] = {mk(4, 32, 32, 4096, 4096, 128, 0)};
    const char *timed_mma[] = {"", ",RED_SPLIT=1"};
    time_variants(mmas, 1, "MMA=mma,NUM_WARPS=4,WARP_M=2,BLOCK_M=128,BLOCK_N=64,STAGES=2", timed_mma, 2, 0);
    assert_int_equal(bad, 0);
}

/* A ragged batch through the copy engine (WG_TMA with VARLEN: each sequence's tiles from
 * its first key of the [HKV] [total keys, d] maps): right on varied and uniform lengths,
 * causal and not, a mixed batch (query lengths of their own), d = 64 to 256, with and
 * without the producer warpgroup; then a ragged batch of the ragged suite's size timed
 * beside its cp.async and MMA=mma forms. */
static void test_ragged_tma(void **state)
{
    (void)state;
    need_hopper();
    char err[FB_ERRLEN];
    shape_t rag = mk(5, 4, 2, 300, 300, 128, 1), uni = mk(3, 4, 4, 257, 257, 64, 0), mix = mk(4, 4, 2, 100, 300, 64, 1);
    shape_t r80 = mk(3, 4, 2, 200, 200, 80, 1), r256 = mk(4, 2, 1, 333, 333, 256, 1);
    if (shapes_parse_lens("probe", 0, "0.1;0.4;0.5;1.0;0.2", &rag, err, sizeof err) ||
        shapes_parse_lens("probe", 0, "1.0", &uni, err, sizeof err) ||
        shapes_parse_lens("probe", 0, "1;0.5;0.2", &mix, err, sizeof err) ||
        shapes_parse_qlens("probe", 0, "0.001;1;0.3", &mix, err, sizeof err) ||
        shapes_parse_lens("probe", 0, "0.3;1;0.6", &r80, err, sizeof err) ||
        shapes_parse_lens("probe", 0, "0.7;0.05;1", &r256, err, sizeof err))
        fail_msg("bad lens: %s", err);
    const probe_case cases[] = {
        {&rag, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2"},
        {&rag, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1"},
        {&rag, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"},
        {&rag, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_WS=1,WG_PIPE=1,WG_KVSPLIT=1"},
        {&uni, DT_FP16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,WG_WS=1"},
        {&uni, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_WS=1,WG_PINGPONG=1"},
        {&mix, DT_FP16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3,WG_WS=1,WG_PIPE=1"},
        {&mix, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=1"},
        {&r80, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1"},
        {&r256, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_WS=1,WG_PINGPONG=1"},
    };
    const int bad = run_probe_cases("MMA=wgmma,WG_TMA=1", cases, sizeof cases / sizeof cases[0]);
    printf("ragged through the copy engine: %s\n", bad ? "wrong results" : "right on every case");
    shape_t timed_shapes[] = {mk(8, 32, 32, 1024, 1024, 128, 1), mk(8, 32, 32, 1024, 1024, 128, 1), mk(8, 32, 32, 4096, 4096, 128, 1)};
    if (shapes_parse_lens("probe", 0, "1.0", &timed_shapes[0], err, sizeof err) ||
        shapes_parse_lens("probe", 0, "0.1;0.4;0.5;1.0;0.2;0.7;0.3;0.9", &timed_shapes[1], err, sizeof err) ||
        shapes_parse_lens("probe", 0, "0.1;0.4;0.5;1.0;0.2;0.7;0.3;0.9", &timed_shapes[2], err, sizeof err))
        fail_msg("bad lens: %s", err);
    const char *names[] = {"ragged-uniform-b8-h32-s1024-c1", "ragged-varied-b8-h32-s1024-c1", "ragged-varied-b8-h32-s4096-c1"};
    for (size_t k = 0; k < 3; k++) snprintf(timed_shapes[k].name, sizeof timed_shapes[k].name, "%s", names[k]);
    const char *timed[] = {"MMA=mma", "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2",
                           "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1",
                           "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"};
    attn_opts t = timed_opts();
    for (size_t k = 0; k < sizeof timed_shapes / sizeof timed_shapes[0]; k++)
        for (size_t i = 0; i < sizeof timed / sizeof timed[0]; i++) time_one(timed_shapes[k].name, &timed_shapes[k], timed[i], &t);
    assert_int_equal(bad, 0);
}

/* Timings only: llama3-8b B=1 S=1024 causal (GQA 4) in test_dynamic's plain grid ran at 80
 * TFLOP/s packed, 285 with WG_PERSIST, and its tuned rows (not packed) at 241-296 (stop 22).
 * That plain grid left SPLIT_KV to the default, which splits a grid of fewer than 4 x SMs
 * work-groups (3 at B=1, 2 at B=2; WG_PERSIST forces 1): each switch here on its own, SPLIT_KV
 * pinned to 1 except where a variant says otherwise, so the loss can be put on one of them. */
static void test_packed_small(void **state)
{
    (void)state;
    need_hopper();
    shape_t timed_shapes[] = {mk(1, 32, 8, 1024, 1024, 128, 1), mk(1, 32, 8, 1024, 1024, 128, 0), mk(2, 32, 8, 1024, 1024, 128, 1),
                              mk(4, 32, 8, 1024, 1024, 128, 1)};
    const char *base = "MMA=wgmma,BLOCK_M=128,NUM_WARPS=8,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1";
    const char *timed[] = {",SPLIT_KV=1,PACK_GQA=0", ",SPLIT_KV=1,PACK_GQA=1", ",PACK_GQA=0", ",PACK_GQA=1",
                           ",WG_PIPE=1,WG_PINGPONG=1,SPLIT_KV=1,PACK_GQA=0", ",WG_PIPE=1,WG_PINGPONG=1,SPLIT_KV=1,PACK_GQA=1",
                           ",WG_PIPE=1,WG_PINGPONG=1,PACK_GQA=1", ",WG_PIPE=1,SPLIT_KV=1,PACK_GQA=1",
                           ",WG_PINGPONG=1,SPLIT_KV=1,PACK_GQA=1", ",WG_PIPE=1,WG_PINGPONG=1,SPLIT_KV=1,PACK_GQA=1,GRID_LPT=1",
                           ",WG_PIPE=1,WG_PINGPONG=1,PACK_GQA=1,WG_PERSIST=1"};
    time_variants(timed_shapes, sizeof timed_shapes / sizeof timed_shapes[0], base, timed, sizeof timed / sizeof timed[0], 0);
}

/* FlashAttention-3's order of a tile's work: O's rescale for tile j-1 beside tile j's S
 * (WG_DEFER), the ping-pong turn covering the previous tile's P V too (WG_PVTURN); right on
 * odd lengths, GQA, causal, d 64/80/128/256, fp16, split barriers, persistent blocks and
 * without the producer warpgroup; then timed beside the reference winner. */
static void test_defer(void **state)
{
    (void)state;
    need_hopper();
    shape_t c128 = mk(2, 4, 2, 200, 333, 128, 1), nc = mk(1, 4, 1, 77, 200, 64, 0), big = mk(1, 2, 2, 300, 300, 256, 1);
    shape_t many = mk(4, 16, 4, 1000, 1000, 128, 1), d80 = mk(2, 4, 2, 200, 333, 80, 1), sq = mk(1, 4, 4, 1, 517, 128, 0);
    const probe_case ws[] = {
        {&c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PINGPONG=1,WG_DEFER=1"},
        {&c128, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PINGPONG=1,WG_PVTURN=1"},
        {&c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"},
        {&c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=2,WG_PINGPONG=1,WG_KVSPLIT=1,WG_DEFER=1,WG_PVTURN=1"},
        {&c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=176,STAGES=2,WG_KVSPLIT=1,WG_DEFER=1"},
        {&nc, DT_FP16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,WG_DEFER=1"},
        {&nc, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=3,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"},
        {&big, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"},
        {&sq, DT_BF16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3,WG_DEFER=1"},
        {&many, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PINGPONG=1,WG_PERSIST=1,WG_DEFER=1,WG_PVTURN=1"},
        {&d80, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"},
    };
    const probe_case plain[] = {
        {&c128, DT_BF16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_DEFER=1"},
        {&nc, DT_FP16, "NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_DEFER=1"},
        {&big, DT_BF16, "NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=3,WG_DEFER=1,WG_TMA=1"},
    };
    const int bad = run_probe_cases("MMA=wgmma,WG_TMA=1,WG_WS=1,WG_PIPE=1", ws, sizeof ws / sizeof ws[0]) +
                    run_probe_cases("MMA=wgmma,WG_PIPE=1", plain, sizeof plain / sizeof plain[0]);
    printf("defer/pvturn: %s\n", bad ? "wrong results" : "right on every case");
    shape_t ref[] = {mk(4, 32, 32, 4096, 4096, 128, 0), mk(4, 32, 32, 4096, 4096, 128, 1)};
    const char *timed[] = {"", ",WG_DEFER=1", ",WG_PVTURN=1", ",WG_DEFER=1,WG_PVTURN=1"};
    attn_opts t = timed_opts();
    char cfg[KCONFIG_STR_MAX];
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < sizeof timed / sizeof timed[0]; i++) {
            snprintf(cfg, sizeof cfg, "MMA=wgmma,WG_TMA=1,WG_WS=1,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_PIPE=1,WG_PINGPONG=1%s", timed[i]);
            time_one(ref[k].causal ? "ref c1" : "ref c0", &ref[k], cfg, &t);
        }
    assert_int_equal(bad, 0);
}

/* PACK_GQA=2 and 3 (a KV head's G query heads in 64-row stripes, one head's consecutive
 * positions per warpgroup; 3 with the stripes' positions descending): each right on causal and non-causal GQA with Sq < Skv and Sq > Skv (rows with no
 * visible key), MQA, three and two warpgroups, persistent and counter-fed blocks with Q
 * prefetched, WG_SKIP, WG_HALF, MASK_BOUND, d = 64 / 80 / 256, fp16, and on MMA=mma; then the
 * S = 1024 causal winners' forms timed unpacked and packed by stripes (2, 3): 1024 rows leave
 * a 192-row block's last warpgroup alone once per query head unpacked, once per KV head
 * packed, and with 3 that warpgroup holds the head's first positions, the fewest keys. */
static void test_stripes(void **state)
{
    (void)state;
    need_hopper();
    shape_t c128 = mk(2, 8, 2, 1024, 1024, 128, 1), skew = mk(1, 8, 1, 320, 777, 128, 1), tall = mk(2, 4, 2, 640, 200, 64, 1),
            nc = mk(1, 8, 2, 256, 300, 128, 0), d80 = mk(2, 8, 2, 576, 576, 80, 1), d256 = mk(1, 4, 2, 384, 384, 256, 1);
    const probe_case cases[] = {
        {&c128, DT_BF16, "MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_SKIP=1,WG_HALF=2,RED_SPLIT=1,MASK_BOUND=1"},
        {&c128, DT_FP16, "MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_SKIP=1,WG_HALF=2,MASK_BOUND=1"},
        {&c128, DT_BF16, "MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_OSTAGE=1,WG_SKIP=1,WG_HALF=1,MASK_BOUND=1,GRID_LPT=1"},
        {&skew, DT_BF16, "MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_SKIP=1,MASK_BOUND=1"},
        {&tall, DT_BF16, "MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_SKIP=1,WG_HALF=2"},
        {&nc, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_DEFER=1,WG_PVTURN=1"},
        {&c128, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=128,STAGES=3,WG_TMA=1,WG_WS=1,WG_PIPE=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_PERSIST=1,WG_DEFER=1,WG_PVTURN=1,WG_DYNAMIC=1,WG_QPREFETCH=1,RED_SPLIT=1,MASK_BOUND=1"},
        {&d80, DT_BF16, "MMA=wgmma,NUM_WARPS=12,BLOCK_M=192,BLOCK_N=128,STAGES=2,WG_TMA=1,WG_WS=1,WG_KVSPLIT=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_SKIP=1,MASK_BOUND=1"},
        {&d256, DT_BF16, "MMA=wgmma,NUM_WARPS=8,BLOCK_M=128,BLOCK_N=64,STAGES=2,WG_TMA=1,WG_WS=1,WG_PINGPONG=1,WG_KVSPLIT=1,WG_PERSIST=1,WG_DYNAMIC=1,WG_QPREFETCH=1,WG_SKIP=1"},
        {&skew, DT_FP16, "MMA=mma,NUM_WARPS=4,BLOCK_M=64,BLOCK_N=64,STAGES=2,MASK_BOUND=1"},
        {&c128, DT_BF16, "MMA=mma,NUM_WARPS=4,WARP_M=2,BLOCK_M=128,BLOCK_N=64,STAGES=2"},
    };
    int bad = 0;
    for (int pack = 2; pack <= 3; pack++) {
        char common[40];
        snprintf(common, sizeof common, "SPLIT_KV=1,PACK_GQA=%d", pack);
        const int b = run_probe_cases(common, cases, sizeof cases / sizeof cases[0]);
        printf("PACK_GQA=%d: %s\n", pack, b ? "wrong results" : "right on every case");
        bad += b;
    }
    shape_t ref[] = {mk(4, 32, 8, 1024, 1024, 128, 1), mk(4, 64, 8, 1024, 1024, 128, 1), mk(1, 64, 8, 1024, 1024, 128, 1),
                     mk(4, 32, 8, 4096, 4096, 128, 1)};
    const char *names[] = {"llama3-8b-b4-s1024-c1", "llama3-70b-b4-s1024-c1", "llama3-70b-b1-s1024-c1", "llama3-8b-b4-s4096-c1"};
    for (size_t k = 0; k < 4; k++) snprintf(ref[k].name, sizeof ref[k].name, "%s", names[k]);
    const char *base = "MMA=wgmma,SPLIT_KV=1,WG_TMA=1,WG_WS=1,BLOCK_M=192,NUM_WARPS=12,BLOCK_N=128,STAGES=2,WG_PERSIST=1,WG_DYNAMIC=1,"
                       "WG_QPREFETCH=1,WG_SKIP=1,WG_HALF=2,MASK_BOUND=1";
    const char *timed[] = {",PACK_GQA=0", ",PACK_GQA=2", ",PACK_GQA=3", ",PACK_GQA=0,WG_PINGPONG=1", ",PACK_GQA=2,WG_PINGPONG=1",
                           ",PACK_GQA=3,WG_PINGPONG=1", ",PACK_GQA=0,RED_SPLIT=1", ",PACK_GQA=2,RED_SPLIT=1", ",PACK_GQA=3,RED_SPLIT=1"};
    time_variants(ref, sizeof ref / sizeof ref[0], base, timed, sizeof timed / sizeof timed[0], 0);
    assert_int_equal(bad, 0);
}

/* an argument picks tests by name (a cmocka pattern: test_tma, test_*) */
int main(int argc, char **argv)
{
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simplest),
        cmocka_unit_test(test_tiles),
        cmocka_unit_test(test_decode_ragged_paged),
        cmocka_unit_test(test_reference_speed),
        cmocka_unit_test(test_swizzle),
        cmocka_unit_test(test_tma),
        cmocka_unit_test(test_persist),
        cmocka_unit_test(test_kvsplit),
        cmocka_unit_test(test_defer),
        cmocka_unit_test(test_dynamic),
        cmocka_unit_test(test_qprefetch),
        cmocka_unit_test(test_qearly),
        cmocka_unit_test(test_holdpv),
        cmocka_unit_test(test_red_split),
        cmocka_unit_test(test_sinflight),
        cmocka_unit_test(test_ostage),
        cmocka_unit_test(test_qtma),
        cmocka_unit_test(test_wg3),
        cmocka_unit_test(test_skip),
        cmocka_unit_test(test_mask_bound),
        cmocka_unit_test(test_half),
        cmocka_unit_test(test_ragged_tma),
        cmocka_unit_test(test_packed_small),
        cmocka_unit_test(test_stripes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
