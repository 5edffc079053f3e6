/* test_cudnn.c: the cuDNN vendor without a GPU: the attention graph's tensor and operation
 * descriptors built and finalized by the real libcudnn (skipped, saying why, without one),
 * the softmax statistics' layout, the debug trace of backend calls, the operation graph, the
 * heuristics' engine configs and plans as far as the library goes without a device, a variant
 * pack; the search among engine configs on fake callbacks; and `fabench vendors --configs-out`
 * option handling. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_skip.h"

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "common.h"
#include "cudnn/cudnn_graph.h"
#include "cudnn/cudnn_pad.h"
#include "cudnn/cudnn_search.h"
#include "refcheck.h"
#include "rt.h"
#include "vendor.h"

static char tmpdir[512];
static const fbdnn_lib *lib;
static char lib_why[512];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "%s/fabench-cudnn-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) return -1;
    if (fbdnn_load(&lib, lib_why, sizeof lib_why) != 0) {
        lib = NULL;
        printf("# libcudnn is absent, graph tests skip: %s\n", lib_why);
    } else {
        printf("# %s, cuDNN %zu\n", lib->path, lib->version);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static fbdnn_sdpa problem(int b, int hq, int hkv, int sq, int skv, int d, int causal, int io, int stats_real)
{
    fbdnn_sdpa p = {.b = b, .hq = hq, .hkv = hkv, .sq = sq, .skv = skv, .d = d, .causal = causal, .io_type = io,
                    .stats_real = stats_real, .scale = 0.125f};
    return p;
}

static int has_uid(const fbdnn_graph *g, int64_t uid)
{
    for (int i = 0; i < g->nuids; i++)
        if (g->uids[i] == uid) return 1;
    return 0;
}

/* The operation graph (newer cuDNN finalizes it without a handle, older ones want one) and
 * a variant pack over made-up addresses; then every descriptor is freed. */
static void finalize_pack_free(fbdnn_graph *g, size_t i)
{
    char err[1024] = "";
    if (fbdnn_graph_finalize(g, NULL, err, sizeof err) == 0) {
        assert_non_null(g->opgraph);
        void *dev[FBDNN_NDEV] = {(void *)0x10000, (void *)0x20000, (void *)0x30000, (void *)0x40000, (void *)0x50000,
                                 (void *)0x70000, (void *)0x80000};
        fbdnn_desc vp = NULL;
        if (fbdnn_variant_pack(g, dev, (void *)0x60000, &vp, err, sizeof err) != 0) fail_msg("case %zu: %s", i, err);
        fbdnn_destroy(g, vp);
    } else {
        printf("# case %zu: the operation graph needs a handle here (%s)\n", i, err);
    }
    fbdnn_graph_free(g);
    assert_int_equal(g->ndesc, 0);
}

/* Every descriptor of the graph finalizes; the operation count, mask and the caller's tensors
 * follow the shape. */
static void test_graph_descriptors(void **state)
{
    (void)state;
    if (!lib) SKIP_BECAUSE("libcudnn is absent: %s", lib_why);
    const struct { fbdnn_sdpa p; int masked; } cases[] = {
        {problem(1, 2, 2, 64, 64, 64, 0, CUDNN_DATA_BFLOAT16, 0), 0},    /* MHA */
        {problem(1, 2, 2, 64, 64, 64, 1, CUDNN_DATA_HALF, 0), 1},        /* causal, square */
        {problem(2, 4, 1, 33, 129, 64, 1, CUDNN_DATA_BFLOAT16, 1), 1},   /* MQA, bottom-right, stats out */
        {problem(1, 4, 2, 129, 33, 96, 0, CUDNN_DATA_HALF, 0), 0},       /* GQA, sq > skv */
        {problem(2, 4, 1, 1, 257, 128, 1, CUDNN_DATA_BFLOAT16, 0), 0},   /* decode: the mask hides nothing */
        {problem(4, 32, 8, 4096, 4096, 128, 1, CUDNN_DATA_HALF, 1), 1},  /* a reference-suite size */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fbdnn_graph g;
        char err[1024] = "";
        int rc = fbdnn_graph_build(lib, &cases[i].p, &g, err, sizeof err);
        if (rc != 0) fail_msg("case %zu: %s", i, err);
        assert_int_equal(g.masked, cases[i].masked);
        /* bmm1, scale, max, sub, exp, sum, log, stats, div, bmm2 (+ 6 for the mask) */
        assert_int_equal(g.nops, 10 + 6 * cases[i].masked);
        assert_true(has_uid(&g, FBDNN_UID_Q) && has_uid(&g, FBDNN_UID_K) && has_uid(&g, FBDNN_UID_V) &&
                    has_uid(&g, FBDNN_UID_O) && has_uid(&g, FBDNN_UID_SCALE));
        assert_int_equal(has_uid(&g, FBDNN_UID_STATS), cases[i].p.stats_real);
        assert_int_equal(has_uid(&g, FBDNN_UID_SKV), cases[i].masked);
        assert_int_equal(has_uid(&g, FBDNN_UID_SQ), cases[i].masked);
        assert_int_equal(has_uid(&g, FBDNN_UID_NEG_INF), cases[i].masked);
        assert_int_equal(g.nuids, 5 + cases[i].p.stats_real + 3 * cases[i].masked);
        assert_true(g.skv32 == cases[i].p.skv && g.sq32 == cases[i].p.sq);
        finalize_pack_free(&g, i);
    }
}

/* A padded ragged batch: per-sequence lengths cut the matmuls short (GEMM M/N/K overrides)
 * and a padding mask (6 more operations) precedes the causal one, whose diagonal then comes
 * from the same length tensors instead of the by-value sq and skv. */
static void test_graph_padded(void **state)
{
    (void)state;
    if (!lib) SKIP_BECAUSE("libcudnn is absent: %s", lib_why);
    const struct { fbdnn_sdpa p; int masked; } cases[] = {
        {problem(5, 2, 2, 70, 70, 64, 1, CUDNN_DATA_HALF, 0), 1},        /* varied prefill, causal */
        {problem(8, 32, 8, 2048, 4096, 128, 1, CUDNN_DATA_BFLOAT16, 1), 1}, /* mixed, stats out */
        {problem(32, 32, 32, 1, 4096, 128, 1, CUDNN_DATA_HALF, 0), 0},   /* ragged decode: padding only */
        {problem(3, 4, 2, 33, 33, 64, 0, CUDNN_DATA_HALF, 0), 0},        /* non-causal */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fbdnn_sdpa p = cases[i].p;
        p.padded = 1;
        fbdnn_graph g;
        char err[1024] = "";
        if (fbdnn_graph_build(lib, &p, &g, err, sizeof err) != 0) fail_msg("case %zu: %s", i, err);
        assert_int_equal(g.masked, cases[i].masked);
        assert_int_equal(g.nops, 10 + 6 + 6 * cases[i].masked);
        assert_true(has_uid(&g, FBDNN_UID_SEQ_Q) && has_uid(&g, FBDNN_UID_SEQ_KV) && has_uid(&g, FBDNN_UID_NEG_INF));
        assert_false(has_uid(&g, FBDNN_UID_SKV) || has_uid(&g, FBDNN_UID_SQ)); /* per sequence, not by value */
        assert_int_equal(g.nuids, 5 + p.stats_real + 3);
        finalize_pack_free(&g, i);
        /* the same over a paged K/V cache: two paged cache loads, two page tables */
        p.page = 16;
        p.npages = p.b * ((p.skv + 15) / 16);
        if (fbdnn_graph_build(lib, &p, &g, err, sizeof err) != 0) {
            if (lib->version < 90500 && strstr(err, "paged cache load")) { fbdnn_graph_free(&g); continue; }
            fail_msg("paged case %zu: %s", i, err);
        }
        assert_int_equal(g.nops, 10 + 6 + 6 * cases[i].masked + 2);
        assert_true(has_uid(&g, FBDNN_UID_PAGE_TABLE_K) && has_uid(&g, FBDNN_UID_PAGE_TABLE_V) &&
                    has_uid(&g, FBDNN_UID_K) && has_uid(&g, FBDNN_UID_V));
        assert_int_equal(g.nuids, 5 + p.stats_real + 3 + 2);
        finalize_pack_free(&g, i);
    }
    /* pages too few for the batch: refused before cuDNN sees it */
    fbdnn_sdpa bad = problem(2, 2, 2, 1, 64, 64, 1, CUDNN_DATA_HALF, 0);
    bad.padded = 1;
    bad.page = 16;
    bad.npages = 7;
    fbdnn_graph g;
    char err[256];
    assert_int_equal(fbdnn_graph_build(lib, &bad, &g, err, sizeof err), -1);
    fbdnn_graph_free(&g);
}

/* Padding a packed ragged batch for cuDNN: every real row lands in its sequence's slot of
 * the dense layout, the rest is zero, the lengths are each sequence's, and unpadding a dense
 * output gives back exactly the packed rows (needs no cuDNN). */
static void test_pad_round_trip(void **state)
{
    (void)state;
    shape_t s = {.batch = 4, .hq = 4, .hkv = 2, .sq = 64, .skv = 128, .d = 8, .causal = 1, .nlens = 4, .nqlens = 4};
    const double kl[4] = {0.5, 1, 0.75, 0.1}, ql[4] = {1, 0.001, 0.5, 0.2};
    memcpy(s.lens, kl, sizeof kl);
    memcpy(s.qlens, ql, sizeof ql);
    const size_t nq = shape_q_elems(&s), nkv = shape_kv_elems(&s);
    uint16_t *q = malloc(nq * 2), *k = malloc(nkv * 2), *v = malloc(nkv * 2), *o = malloc(nq * 2);
    assert_true(q && k && v && o);
    for (size_t i = 0; i < nq; i++) q[i] = (uint16_t)(i % 60000 + 1);
    for (size_t i = 0; i < nkv; i++) { k[i] = (uint16_t)(i % 50000 + 1); v[i] = (uint16_t)(i % 40000 + 2); }
    vendor_inputs in = {.q = q, .k = k, .v = v};
    fbdnn_padded p;
    assert_int_equal(fbdnn_pad_inputs(&s, 2, &in, 1, &p), 0);
    assert_null(p.bt);
    int32_t cuq[5], cukv[5];
    shape_cu_seqlens(&s, cuq, cukv);
    const long long tq = shape_total_q(&s), tkv = shape_total_kv(&s);
    const uint16_t *pq = p.q, *pk = p.k, *pv = p.v;
    for (int b = 0; b < 4; b++) {
        assert_int_equal(p.seq_q[b], cuq[b + 1] - cuq[b]);
        assert_int_equal(p.seq_kv[b], cukv[b + 1] - cukv[b]);
        for (int h = 0; h < 4; h++)
            for (int r = 0; r < 64; r++)
                for (int c = 0; c < 8; c++) {
                    uint16_t got = pq[(((size_t)b * 4 + h) * 64 + r) * 8 + c];
                    uint16_t want = r < p.seq_q[b] ? q[((size_t)h * tq + cuq[b] + r) * 8 + c] : 0;
                    if (got != want) fail_msg("Q b=%d h=%d r=%d c=%d: %u, not %u", b, h, r, c, got, want);
                }
        for (int h = 0; h < 2; h++)
            for (int r = 0; r < 128; r++)
                for (int c = 0; c < 8; c++) {
                    size_t di = (((size_t)b * 2 + h) * 128 + r) * 8 + c, si = ((size_t)h * tkv + cukv[b] + r) * 8 + c;
                    assert_int_equal(pk[di], r < p.seq_kv[b] ? k[si] : 0);
                    assert_int_equal(pv[di], r < p.seq_kv[b] ? v[si] : 0);
                }
    }
    memcpy(p.o, p.q, nq ? (size_t)4 * 4 * 64 * 8 * 2 : 0); /* a dense "output": the padded Q */
    memset(o, 0xff, nq * 2);
    fbdnn_unpad_output(&s, 2, &p, o);
    assert_memory_equal(o, q, nq * 2);
    fbdnn_pad_free(&p);

    /* paged: K and V land in the pages the block table names, row by row; tails are zero */
    s.page = 16;
    assert_int_equal(fbdnn_pad_inputs(&s, 2, &in, 1, &p), 0);
    const int maxp = shape_pages_per_seq(&s);
    assert_non_null(p.bt);
    assert_int_equal(p.kv_bytes, (size_t)4 * maxp * 2 * 16 * 8 * 2);
    pk = p.k;
    pv = p.v;
    size_t filled = 0, nonzero = 0;
    for (int b = 0; b < 4; b++)
        for (int h = 0; h < 2; h++)
            for (int r = 0; r < p.seq_kv[b]; r++)
                for (int c = 0; c < 8; c++) {
                    size_t di = (((size_t)p.bt[b * maxp + r / 16] * 2 + h) * 16 + r % 16) * 8 + c;
                    size_t si = ((size_t)h * tkv + cukv[b] + r) * 8 + c;
                    assert_int_equal(pk[di], k[si]);
                    assert_int_equal(pv[di], v[si]);
                    filled++;
                }
    for (size_t i = 0; i < p.kv_bytes / 2; i++) nonzero += pk[i] != 0;
    assert_int_equal(nonzero, filled); /* k holds no zero of its own: every other slot is a zero tail */
    fbdnn_pad_free(&p);
    free(q); free(k); free(v); free(o);
}

/* A descriptor of g by the start of its label ("tensor:stats"); NULL when there is none. */
static fbdnn_desc desc_labelled(const fbdnn_graph *g, const char *prefix)
{
    for (int i = 0; i < g->ndesc; i++)
        if (!strncmp(g->labels[i], prefix, strlen(prefix))) return g->descs[i];
    return NULL;
}

/* The statistics the vendor hands the harness as its log-sum-exp: with stats_real a float
 * output [b, hq, sq, 1], packed (strides hq*sq, sq, 1, 1), as fbdnn_unpad_lse reads it; for a
 * padded batch too (sq is then the longest sequence); virtual otherwise. */
static void test_stats_layout(void **state)
{
    (void)state;
    if (!lib) SKIP_BECAUSE("libcudnn is absent: %s", lib_why);
    for (int padded = 0; padded < 2; padded++)
        for (int real = 0; real < 2; real++) {
            fbdnn_sdpa p = problem(2, 4, 2, 33, 64, 64, 1, CUDNN_DATA_HALF, real);
            p.padded = padded;
            fbdnn_graph g;
            char err[1024];
            if (fbdnn_graph_build(lib, &p, &g, err, sizeof err) != 0) fail_msg("padded=%d real=%d: %s", padded, real, err);
            fbdnn_desc t = desc_labelled(&g, "tensor:stats");
            assert_non_null(t);
            int64_t dim[4] = {0}, str[4] = {0}, n = 0, uid = 0;
            int32_t type = -1;
            bool virt = 0;
            assert_int_equal(lib->cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, &n, dim), 0);
            assert_int_equal(n, 4);
            assert_true(dim[0] == 2 && dim[1] == 4 && dim[2] == 33 && dim[3] == 1);
            assert_int_equal(lib->cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, &n, str), 0);
            assert_true(str[0] == 4 * 33 && str[1] == 33 && str[2] == 1);
            assert_int_equal(lib->cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &n, &type), 0);
            assert_int_equal(type, CUDNN_DATA_FLOAT);
            assert_int_equal(lib->cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &n, &virt), 0);
            assert_int_equal(virt, !real);
            assert_int_equal(lib->cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &n, &uid), 0);
            assert_int_equal(uid == FBDNN_UID_STATS, real);
            fbdnn_graph_free(&g);
        }
}

/* The heuristics' engine configs and a plan for each, as far as the library goes without a
 * device: every config listed is a descriptor of the graph (announced ones cuDNN did not fill
 * in are not kept), a plan that does not finalize leaves nothing behind, and a graph that is
 * not finalized is refused before cuDNN is asked. */
static void test_engine_configs(void **state)
{
    (void)state;
    if (!lib) SKIP_BECAUSE("libcudnn is absent: %s", lib_why);
    for (int real = 0; real < 2; real++) {
        fbdnn_sdpa p = problem(1, 2, 2, 64, 64, 64, 1, CUDNN_DATA_BFLOAT16, real);
        fbdnn_graph g;
        char err[1024] = "";
        fbdnn_desc *cfgs = (fbdnn_desc *)1;
        int n = -1;
        if (fbdnn_graph_build(lib, &p, &g, err, sizeof err) != 0) fail_msg("%s", err);
        assert_int_equal(fbdnn_heur_configs(&g, CUDNN_HEUR_MODE_A, &cfgs, &n, err, sizeof err), -1);
        assert_non_null(strstr(err, "not finalized"));
        assert_null(cfgs);
        assert_int_equal(n, 0);
        if (fbdnn_graph_finalize(&g, NULL, err, sizeof err) != 0) {
            printf("# the operation graph needs a handle here (%s)\n", err);
            fbdnn_graph_free(&g);
            continue;
        }
        const int modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
        for (int m = 0; m < 2; m++) {
            const int before = g.ndesc;
            err[0] = 0;
            int rc = fbdnn_heur_configs(&g, modes[m], &cfgs, &n, err, sizeof err);
            if (rc != 0) {
                assert_int_equal(rc, 1); /* cuDNN's "cannot", never a fault of ours */
                assert_true(err[0] != 0);
                assert_int_equal(n, 0);
                printf("# stats %d mode %d: %s\n", real, modes[m], err);
                continue;
            }
            assert_true(n >= 0);
            assert_true((n == 0) == (cfgs == NULL));
            assert_int_equal(g.ndesc, before + 1 + n); /* the heuristics descriptor and the configs */
            printf("# stats %s, heuristics mode %s: %d engine configs without a GPU\n", real ? "real" : "virtual",
                   m ? "fallback" : "a", n);
            for (int i = 0; i < n; i++) {
                const int have = g.ndesc;
                fbdnn_plan pl;
                int st = fbdnn_plan_make(&g, NULL, cfgs[i], m ? "fallback" : "a", i, &pl, err, sizeof err);
                if (st == 0) { /* a library that builds plans without a device: dropped again */
                    assert_non_null(pl.plan);
                    fbdnn_plan_drop(&g, &pl);
                    assert_null(pl.plan);
                } else {
                    assert_non_null(strstr(err, "cudnnBackend"));
                    assert_null(pl.plan);
                }
                assert_int_equal(g.ndesc, have);
            }
            free(cfgs);
        }
        fbdnn_graph_free(&g);
        assert_int_equal(g.ndesc, 0);
    }
}

/* cuDNN's dense statistics [b, hq, sq] to the harness's LSE: the same array for a dense
 * batch, each sequence's real rows packed per head ([hq, total_q]) for a ragged one. */
static void test_unpad_lse(void **state)
{
    (void)state;
    shape_t s = {.batch = 3, .hq = 2, .hkv = 1, .sq = 8, .skv = 16, .d = 4, .nlens = 3, .nqlens = 3};
    const double kl[3] = {1, 0.5, 0.25}, ql[3] = {0.5, 1, 0.125};
    float stats[3 * 2 * 8], lse[3 * 2 * 8];
    for (size_t i = 0; i < 48; i++) stats[i] = (float)i;
    shape_t dense = s;
    dense.nlens = dense.nqlens = 0;
    fbdnn_unpad_lse(&dense, stats, lse);
    assert_memory_equal(lse, stats, sizeof stats);

    memcpy(s.lens, kl, sizeof kl);
    memcpy(s.qlens, ql, sizeof ql);
    int32_t cuq[4];
    shape_cu_seqlens(&s, cuq, NULL);
    const long long tq = shape_total_q(&s);
    assert_int_equal(shape_out_rows(&s), (size_t)(2 * tq));
    fb_poison_f32(lse, 48);
    fbdnn_unpad_lse(&s, stats, lse);
    for (int b = 0; b < 3; b++)
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < cuq[b + 1] - cuq[b]; i++) {
                float want = stats[(b * 2 + h) * 8 + i], got = lse[h * tq + cuq[b] + i];
                if (got != want) fail_msg("b=%d h=%d i=%d: %g, not %g", b, h, i, (double)got, (double)want);
            }
    uint32_t bits;
    memcpy(&bits, &lse[2 * tq], sizeof bits); /* nothing past the packed rows */
    assert_int_equal(bits, FB_POISON_F32);
}

/* ---- the search among engine configs, on fake callbacks ---- */

enum { FAKE_MAX = 16 };
/* What each fake candidate does: build 0/1, check 0..3, time 0/1 with its median. */
typedef struct {
    int build[FAKE_MAX], check[FAKE_MAX], time[FAKE_MAX];
    double us[FAKE_MAX];
    int stop_at;                  /* the build of this candidate returns -1 (stop); -1: never */
    int built[FAKE_MAX], checked[FAKE_MAX], timed[FAKE_MAX];
    double best_hint[FAKE_MAX];   /* the best_us each time call was given */
} fake_cands;

static double fake_clock;
static double fake_now(void) { return fake_clock; }

static int fake_build(void *arg, int i, char *why, size_t len)
{
    fake_cands *f = arg;
    f->built[i]++;
    fake_clock += 10; /* every step takes 10 fake seconds */
    if (i == f->stop_at) { snprintf(why, len, "device unusable at %d", i); return -1; }
    if (f->build[i]) snprintf(why, len, "refused %d", i);
    return f->build[i];
}

static int fake_check(void *arg, int i, char *why, size_t len)
{
    fake_cands *f = arg;
    f->checked[i]++;
    fake_clock += 10;
    if (f->check[i]) snprintf(why, len, "check %d says %d", i, f->check[i]);
    return f->check[i];
}

static int fake_time(void *arg, int i, double best_us, double *us, char *why, size_t len)
{
    fake_cands *f = arg;
    f->timed[i]++;
    f->best_hint[i] = best_us;
    fake_clock += 10;
    if (f->time[i]) { snprintf(why, len, "timing %d failed", i); return 1; }
    *us = f->us[i];
    return 0;
}

static const fbdnn_search_ops fake_ops = {.build = fake_build, .check = fake_check, .time = fake_time, .now = fake_now};

static fake_cands fakes(void)
{
    fake_cands f;
    memset(&f, 0, sizeof f);
    f.stop_at = -1;
    for (int i = 0; i < FAKE_MAX; i++) f.us[i] = 100 + i;
    return f;
}

/* The fastest verified candidate wins; a refused, failed or wrong one is never timed and
 * cannot win however fast it would be; the counts say what happened. */
static void test_search_fastest_verified(void **state)
{
    (void)state;
    fake_cands f = fakes();
    f.build[0] = 1;                  /* refused */
    f.check[1] = 2; f.us[1] = 1;     /* wrong, and fastest */
    f.us[2] = 30;
    f.us[3] = 20;                    /* the winner */
    f.check[4] = 1;                  /* failed to run */
    f.us[5] = 25;
    fbdnn_search_limits lim = {0};
    fbdnn_search_result r;
    fake_clock = 0;
    assert_int_equal(fbdnn_search(6, &fake_ops, &f, &lim, &r), 0);
    assert_int_equal(r.status, ST_OK);
    assert_int_equal(r.best, 3);
    assert_true(r.best_us == 20);
    assert_true(r.offered == 6 && r.tried == 6 && r.ok == 4 && r.verified == 3 && r.timed == 3);
    assert_int_equal(r.capped, FBDNN_CAP_NONE);
    for (int i = 0; i < 6; i++) assert_int_equal(f.timed[i], i == 2 || i == 3 || i == 5);
    assert_int_equal(f.checked[0], 0);
    /* each time call knows the best so far (a hopeless candidate may stop early) */
    assert_true(f.best_hint[2] == 0 && f.best_hint[3] == 30 && f.best_hint[5] == 20);
    char sum[128];
    fbdnn_search_summary(&r, &lim, sum, sizeof sum);
    assert_string_equal(sum, "tried=6;ok=4;verified=3;timed=3");
}

/* One verified candidate is the winner without a timing; a timing that fails leaves the
 * candidate out; none timed is a launch error naming the first failure. */
static void test_search_timing(void **state)
{
    (void)state;
    fake_cands f = fakes();
    f.check[0] = 2;
    fbdnn_search_limits lim = {0};
    fbdnn_search_result r;
    assert_int_equal(fbdnn_search(2, &fake_ops, &f, &lim, &r), 0);
    assert_true(r.status == ST_OK && r.best == 1 && r.best_us == 0 && r.timed == 0);
    assert_int_equal(f.timed[1], 0);

    f = fakes();
    f.time[0] = 1; f.us[0] = 1;
    f.us[1] = 50;
    assert_int_equal(fbdnn_search(2, &fake_ops, &f, &lim, &r), 0);
    assert_true(r.status == ST_OK && r.best == 1 && r.timed == 1 && r.verified == 2);

    f = fakes();
    f.time[0] = f.time[1] = 1;
    assert_int_equal(fbdnn_search(2, &fake_ops, &f, &lim, &r), 0);
    assert_int_equal(r.status, ST_LAUNCH_ERROR);
    assert_int_equal(r.best, -1);
    assert_non_null(strstr(r.reason, "timing 0 failed"));
}

/* No winner: wrong results make the row wrong_result with the first one's reason, even
 * beside runs that failed; nothing that ran is a launch error; nothing built (or nothing
 * offered) is unsupported. */
static void test_search_no_winner(void **state)
{
    (void)state;
    fbdnn_search_limits lim = {0};
    fbdnn_search_result r;
    fake_cands f = fakes();
    f.check[0] = 1;
    f.check[1] = 2;
    f.check[2] = 2;
    assert_int_equal(fbdnn_search(3, &fake_ops, &f, &lim, &r), 0);
    assert_int_equal(r.status, ST_WRONG_RESULT);
    assert_non_null(strstr(r.reason, "check 1 says 2"));
    assert_non_null(strstr(r.reason, "tried=3;ok=2;verified=0"));
    assert_int_equal(f.timed[1] + f.timed[2], 0);

    f = fakes();
    f.build[0] = 1;
    f.check[1] = 1;
    assert_int_equal(fbdnn_search(2, &fake_ops, &f, &lim, &r), 0);
    assert_int_equal(r.status, ST_LAUNCH_ERROR);
    assert_non_null(strstr(r.reason, "check 1 says 1"));

    f = fakes();
    f.build[0] = f.build[1] = 1;
    assert_int_equal(fbdnn_search(2, &fake_ops, &f, &lim, &r), 0);
    assert_int_equal(r.status, ST_UNSUPPORTED);
    assert_non_null(strstr(r.reason, "refused 0"));
    assert_int_equal(f.checked[0] + f.checked[1], 0);

    assert_int_equal(fbdnn_search(0, &fake_ops, &f, &lim, &r), 0);
    assert_int_equal(r.status, ST_UNSUPPORTED);
    assert_int_equal(r.offered, 0);
}

/* The caps: at most max_configs tried and no new step after max_s, but only once something
 * is verified (until then every candidate is tried); the summary says which cap cut. */
static void test_search_caps(void **state)
{
    (void)state;
    fbdnn_search_limits lim = {.max_configs = 8};
    fbdnn_search_result r;
    char sum[128];
    fake_cands f = fakes();
    fake_clock = 0;
    assert_int_equal(fbdnn_search(12, &fake_ops, &f, &lim, &r), 0);
    assert_true(r.status == ST_OK && r.tried == 8 && r.verified == 8 && r.best == 0);
    assert_int_equal(r.capped, FBDNN_CAP_CONFIGS);
    assert_int_equal(f.built[8], 0);
    fbdnn_search_summary(&r, &lim, sum, sizeof sum);
    assert_string_equal(sum, "tried=8;ok=8;verified=8;timed=8;cap=configs:8");

    f = fakes(); /* the first eight all fail: the ninth is still tried, and wins */
    for (int i = 0; i < 8; i++) f.check[i] = 1;
    assert_int_equal(fbdnn_search(12, &fake_ops, &f, &lim, &r), 0);
    assert_true(r.status == ST_OK && r.best == 8 && r.tried == 9 && r.capped == FBDNN_CAP_CONFIGS);

    lim = (fbdnn_search_limits){.max_s = 45}; /* each build and check takes 10 fake seconds */
    f = fakes();
    f.us[1] = 1;
    fake_clock = 0;
    assert_int_equal(fbdnn_search(12, &fake_ops, &f, &lim, &r), 0);
    assert_int_equal(r.capped, FBDNN_CAP_TIME);
    assert_true(r.tried == 3 && r.verified == 3); /* 60 s in after three: no fourth */
    assert_true(r.timed == 1 && r.best == 0);     /* one timed, then the clock is past the cap */
    fbdnn_search_summary(&r, &lim, sum, sizeof sum);
    assert_string_equal(sum, "tried=3;ok=3;verified=3;timed=1;cap=time:45s");

    lim = (fbdnn_search_limits){.max_s = 1}; /* nothing verified yet: the cap waits */
    f = fakes();
    for (int i = 0; i < 4; i++) f.build[i] = 1;
    fake_clock = 0;
    assert_int_equal(fbdnn_search(6, &fake_ops, &f, &lim, &r), 0);
    assert_true(r.status == ST_OK && r.best == 4 && r.tried == 5);
}

/* A check that cannot run stops the search without blaming the candidates; a callback that
 * stops it (a hung or unusable device) makes the search return -1 with its reason. */
static void test_search_stops(void **state)
{
    (void)state;
    fbdnn_search_limits lim = {0};
    fbdnn_search_result r;
    fake_cands f = fakes();
    f.check[1] = 3;
    assert_int_equal(fbdnn_search(4, &fake_ops, &f, &lim, &r), 0);
    assert_int_equal(r.status, ST_RESOURCE_LIMIT);
    assert_non_null(strstr(r.reason, "check 1 says 3"));
    assert_int_equal(f.built[2], 0);

    f = fakes();
    f.stop_at = 2;
    assert_int_equal(fbdnn_search(4, &fake_ops, &f, &lim, &r), -1);
    assert_string_equal(r.reason, "device unusable at 2");
    assert_int_equal(f.built[3], 0);
    assert_int_equal(f.timed[0] + f.timed[1], 0);
}

static void test_graph_rejects(void **state)
{
    (void)state;
    if (!lib) SKIP_BECAUSE("libcudnn is absent: %s", lib_why);
    fbdnn_graph g;
    char err[512];
    fbdnn_sdpa p = problem(1, 2, 2, 8, 8, 64, 0, CUDNN_DATA_FLOAT, 0);
    assert_int_equal(fbdnn_graph_build(lib, &p, &g, err, sizeof err), -1);
    assert_non_null(strstr(err, "fp16 or bf16"));
    fbdnn_graph_free(&g);
    p = problem(1, 3, 2, 8, 8, 64, 0, CUDNN_DATA_HALF, 0); /* hq not a multiple of hkv */
    assert_int_equal(fbdnn_graph_build(lib, &p, &g, err, sizeof err), -1);
    fbdnn_graph_free(&g);
}

/* FABENCH_CUDNN_DEBUG's trace: each call with its descriptor, attribute, values and status. */
static void test_debug_trace(void **state)
{
    (void)state;
    if (!lib) SKIP_BECAUSE("libcudnn is absent: %s", lib_why);
    fbdnn_lib dbg = *lib;
    dbg.debug = 1;
    char path[600];
    snprintf(path, sizeof path, "%s/trace.txt", tmpdir);
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    fbdnn_graph g;
    char err[512];
    fbdnn_sdpa p = problem(1, 2, 2, 64, 64, 64, 1, CUDNN_DATA_BFLOAT16, 0);
    int rc = fbdnn_graph_build(&dbg, &p, &g, err, sizeof err);
    fbdnn_graph_free(&g);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_int_equal(rc, 0);
    char *trace = NULL, e2[256];
    assert_int_equal(fb_read_file(path, &trace, NULL, e2, sizeof e2), 0);
    const char *want[] = {
        "[cudnn] CreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR) tensor:Q#1 -> CUDNN_STATUS_SUCCESS",
        "SetAttribute tensor:Q#1.CUDNN_ATTR_TENSOR_DIMENSIONS CUDNN_TYPE_INT64[4]={1,2,64,64} -> CUDNN_STATUS_SUCCESS",
        "SetAttribute tensor:K^T#2.CUDNN_ATTR_TENSOR_STRIDES CUDNN_TYPE_INT64[4]={8192,4096,1,64}",
        "SetAttribute pw:gen_row_index.CUDNN_ATTR_POINTWISE_MODE CUDNN_TYPE_POINTWISE_MODE[1]={CUDNN_POINTWISE_GEN_INDEX}",
        "SetAttribute op:causal_select.CUDNN_ATTR_OPERATION_POINTWISE_TDESC CUDNN_TYPE_BACKEND_DESCRIPTOR[1]={tensor:row>=col#",
        "Finalize op:bmm2 P*V -> CUDNN_STATUS_SUCCESS",
        "DestroyDescriptor tensor:Q#1 -> CUDNN_STATUS_SUCCESS",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(trace, want[i])) fail_msg("trace lacks '%s'", want[i]);
    free(trace);
}

/* A refused attribute names the call, the descriptor, the attribute and cuDNN's status. */
static void test_error_message(void **state)
{
    (void)state;
    if (!lib) SKIP_BECAUSE("libcudnn is absent: %s", lib_why);
    fbdnn_graph g;
    char err[512];
    fbdnn_sdpa p = problem(1, 2, 2, 8, 8, 64, 0, CUDNN_DATA_HALF, 0);
    assert_int_equal(fbdnn_graph_build(lib, &p, &g, err, sizeof err), 0);
    /* a variant pack without data pointers is incomplete */
    g.nuids = 0;
    void *dev[FBDNN_NDEV] = {0};
    fbdnn_desc vp = NULL;
    int rc = fbdnn_variant_pack(&g, dev, NULL, &vp, err, sizeof err);
    if (rc != 0) {
        assert_non_null(strstr(err, "variant_pack"));
        assert_non_null(strstr(err, "CUDNN_STATUS_"));
    }
    fbdnn_graph_free(&g);
}

/* Device properties need a handle (a GPU): without one, an error and no JSON. */
static void test_deviceprop_without_gpu(void **state)
{
    (void)state;
    if (!lib) SKIP_BECAUSE("libcudnn is absent: %s", lib_why);
    char *json = (char *)1, err[512] = "";
    assert_int_equal(fbdnn_deviceprop_json(lib, NULL, &json, err, sizeof err), -1);
    assert_null(json);
    assert_true(err[0] != 0);
    printf("# %s\n", err);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(fbdnn_attr_name(CUDNN_ATTR_TENSOR_DIMENSIONS), "CUDNN_ATTR_TENSOR_DIMENSIONS");
    assert_string_equal(fbdnn_desc_type_name(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR),
                        "CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR");
    assert_string_equal(fbdnn_attr_type_name(CUDNN_TYPE_HEUR_MODE), "CUDNN_TYPE_HEUR_MODE");
    assert_null(fbdnn_attr_name(123456));
    assert_true(fbdnn_not_supported(3000) && fbdnn_not_supported(3001) && !fbdnn_not_supported(2000) &&
                !fbdnn_not_supported(0));
}

/* The vendor on a device it cannot use, or without a driver: absent with a reason, no session. */
static void test_open_absent(void **state)
{
    (void)state;
    rt_device dev = {0};
    vendor_session *vs = NULL;
    char versions[256] = "", why[512] = "";
    dev.rt = rt_find("opencl");
    if (dev.rt) {
        assert_int_equal(vendor_cudnn.open(&dev, &vs, versions, sizeof versions, why, sizeof why), -1);
        assert_non_null(strstr(why, "pick the GPU's cuda device"));
        assert_null(vs);
    }
    dev.rt = rt_find("cuda");
    if (!dev.rt) SKIP_BECAUSE("this build has no cuda runtime");
    int cuda_present = 0;
    for (int i = 0; i < rt_count(); i++)
        if (rt_get(i) == dev.rt) cuda_present = rt_status(i, NULL) == 0;
    if (cuda_present) {
        printf("# a CUDA driver is present here; the no-driver path is not exercised\n");
        return;
    }
    why[0] = 0;
    assert_int_equal(vendor_cudnn.open(&dev, &vs, versions, sizeof versions, why, sizeof why), -1);
    assert_null(vs);
    assert_true(why[0] != 0);
    printf("# absent: %s\n", why);
}

/* ---- fabench vendors --configs-out ---- */

/* Runs cmd_vendors with the arguments (NULL-terminated) and stderr captured into *errout. */
static int vendors(char **errout, ...)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = "vendors";
    va_list ap;
    va_start(ap, errout);
    for (char *a; argc < 31 && (a = va_arg(ap, char *)) != NULL;) argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    char path[600];
    snprintf(path, sizeof path, "%s/stderr.txt", tmpdir);
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    int rc = cmd_vendors(argc, argv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char e[256];
    *errout = NULL;
    assert_int_equal(fb_read_file(path, errout, NULL, e, sizeof e), 0);
    return rc;
}

static void test_configs_out_options(void **state)
{
    (void)state;
    char perf[600], cfg[600], bad[600], *err = NULL;
    snprintf(perf, sizeof perf, "%s/perf.csv", tmpdir);
    snprintf(cfg, sizeof cfg, "%s/configs.csv", tmpdir);
    snprintf(bad, sizeof bad, "%s/no/such/dir/configs.csv", tmpdir);

    /* a missing value */
    assert_int_equal(vendors(&err, "--device", "opencl:0", "--suite", "smoke", "--out", perf, "--configs-out", NULL),
                     FB_EXIT_BADINPUT);
    assert_non_null(strstr(err, "--configs-out needs a value"));
    free(err);

    /* the device must exist for anything else; PoCL's opencl:0 stands in for one */
    int rc = vendors(&err, "--device", "opencl:0", "--suite", "smoke", "--out", perf, "--configs-out", bad, "--quiet",
                     NULL);
    if (strstr(err, "opencl")) {
        char why[256];
        snprintf(why, sizeof why, "%.200s", err);
        free(err);
        SKIP_BECAUSE("no opencl:0 here to stand in for a device: %s", why);
    }
    assert_int_equal(rc, FB_EXIT_BADINPUT);
    assert_non_null(strstr(err, "--configs-out:"));
    free(err);

    /* written before any work, with the header (no vendor runs on an OpenCL device) */
    rc = vendors(&err, "--device", "opencl:0", "--suite", "smoke", "--out", perf, "--configs-out", cfg, "--impl",
                 "cudnn", "--quiet", NULL);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(err, "cudnn is absent: cuDNN runs on NVIDIA GPUs through CUDA"));
    free(err);
    char *text = NULL, e[256];
    assert_int_equal(fb_read_file(cfg, &text, NULL, e, sizeof e), 0);
    assert_string_equal(text, "impl,scope,configs,method\n");
    free(text);

    /* --append keeps rows and refuses a file of another schema */
    FILE *f = fopen(cfg, "w");
    assert_non_null(f);
    fputs("impl,scope,configs,method\ncudnn,s1,3,cudnn heuristics\n", f);
    fclose(f);
    rc = vendors(&err, "--device", "opencl:0", "--suite", "smoke", "--out", perf, "--append", "--configs-out", cfg,
                 "--quiet", NULL);
    free(err);
    assert_int_equal(rc, 0);
    assert_int_equal(fb_read_file(cfg, &text, NULL, e, sizeof e), 0);
    assert_non_null(strstr(text, "cudnn,s1,3,cudnn heuristics"));
    free(text);
    f = fopen(cfg, "w");
    assert_non_null(f);
    fputs("a,b\n1,2\n", f);
    fclose(f);
    rc = vendors(&err, "--device", "opencl:0", "--suite", "smoke", "--out", perf, "--append", "--configs-out", cfg,
                 "--quiet", NULL);
    assert_int_equal(rc, FB_EXIT_BADINPUT);
    assert_non_null(strstr(err, "--configs-out:"));
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_graph_descriptors),
        cmocka_unit_test(test_graph_padded),
        cmocka_unit_test(test_pad_round_trip),
        cmocka_unit_test(test_stats_layout),
        cmocka_unit_test(test_engine_configs),
        cmocka_unit_test(test_unpad_lse),
        cmocka_unit_test(test_search_fastest_verified),
        cmocka_unit_test(test_search_timing),
        cmocka_unit_test(test_search_no_winner),
        cmocka_unit_test(test_search_caps),
        cmocka_unit_test(test_search_stops),
        cmocka_unit_test(test_graph_rejects),
        cmocka_unit_test(test_debug_trace),
        cmocka_unit_test(test_error_message),
        cmocka_unit_test(test_open_absent),
        cmocka_unit_test(test_deviceprop_without_gpu),
        cmocka_unit_test(test_configs_out_options),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
