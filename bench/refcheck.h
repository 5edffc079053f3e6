/* refcheck.h: the CPU reference (double precision) and the one verification routine that
 * every implementation, ours and the vendors', goes through; input generation and the
 * 16-bit float conversions used on the host. */
#ifndef FABENCH_REFCHECK_H
#define FABENCH_REFCHECK_H

#include "common.h"

/* Host-side conversions. float->16 bit rounds to nearest even; NaN stays NaN; fp16
 * overflows to inf; subnormals handled. */
uint16_t fb_f32_to_f16(float f);
float fb_f16_to_f32(uint16_t h);
uint16_t fb_f32_to_bf16(float f);
float fb_bf16_to_f32(uint16_t h);

/* Element i of a buffer of dtype dt, widened. */
double fb_load(const void *buf, size_t i, dtype_t dt);
void fb_store(void *buf, size_t i, dtype_t dt, double v);

/* Fills n elements with reproducible pseudo-random values (normal, mean 0, sd 1, clipped
 * to [-4, 4]) from seed, rounded to dt. Same seed, n and dt: same bits on every machine. */
void fb_fill_random(void *buf, size_t n, dtype_t dt, uint64_t seed);

/* The inputs of a shape, the same for every implementation: Q, K, V filled with
 * fb_fill_random from seeds derived from `seed` (inputs.c). */
void fb_fill_inputs(const shape_t *s, dtype_t dt, uint64_t seed, void *q, void *k, void *v);
/* A paged KV cache for shape s (page > 0): fb_page_table fills the block table bt [batch,
 * shape_pages_per_seq] with a seeded shuffle of the batch * pages_per_seq pages;
 * fb_page_scatter copies K or V from the host layout src (dense, or packed when ragged)
 * into dst, pages [batch * pages_per_seq, hkv, page, d], every byte it does not fill set to
 * fill (0xff: NaN in every dtype, which a kernel must never read). */
void fb_page_table(const shape_t *s, uint64_t seed, int32_t *bt);
void fb_page_scatter(const shape_t *s, size_t es, const int32_t *bt, const void *src, void *dst, int fill);

/* The problem the reference solves: shape, element type, softmax scale. */
typedef struct {
    shape_t s;
    dtype_t dt;
    double scale; /* usually 1/sqrt(d) */
} attn_problem;

/* Reference for one output row (batch b, query head h, query i): o[d] and the natural-log
 * log-sum-exp of the scaled, masked scores. Query head h reads KV head h / (hq / hkv).
 * Causal is bottom-right aligned: key j is visible iff j <= i + (skv - sq). A row that
 * sees no key gets o = 0 and lse = -inf. q, k, v are in p->dt, laid out [B, H, S, D];
 * for a ragged batch (shape_ragged) packed per head, [H, total, D], and i, the causal
 * diagonal and the keys are those of sequence b alone (shape_seq_lens). */
void fb_ref_row(const attn_problem *p, const void *q, const void *k, const void *v,
                int b, int h, int i, double *o, double *lse);

/* Poison: a bit pattern no kernel produces (a NaN with a distinctive payload), written
 * over an output before the run, so unwritten elements can be told from computed NaNs. */
void fb_poison(void *buf, size_t n, dtype_t dt);
/* The bits an unwritten f32 element holds: a quiet NaN no kernel computes. */
#define FB_POISON_F32 0x7FC0DEADu
void fb_poison_f32(float *buf, size_t n);

typedef struct {
    int pass;
    double max_abs_err;   /* over checked elements */
    double max_rel_err;   /* max |o - ref| / (|ref| + atol) over checked elements */
    double rel_l2_err;    /* ||o - ref|| / ||ref|| over checked elements */
    double lse_max_err;   /* max abs error of lse over checked rows (0 when not checked) */
    size_t nan_count;     /* NaN/inf outputs (not poison) over the whole output */
    size_t unwritten;     /* elements still holding poison, over the whole output */
    size_t bad_elems;     /* checked elements beyond atol + rtol*|ref| */
    size_t rows_checked, rows_total;
    double atol, rtol, l2_tol;
    char reason[256];     /* why it failed, empty when pass */
} verify_result;

/* Tolerances for a dtype (the same for every implementation). */
void fb_tolerances(dtype_t dt, double *atol, double *rtol, double *l2_tol);

/* Checks O (dtype p->dt, [B, Hq, Sq, D]) and optionally LSE (float [B, Hq, Sq], may be
 * NULL) against the reference (ragged: [Hq, total_q, D] and [Hq, total_q], every row a
 * real token). The whole output is scanned for poison and NaN/inf; the
 * reference is computed for every row when rows_total <= max_rows, else for max_rows
 * rows chosen reproducibly from seed, always including, for the first and the last (b, h),
 * row 0 and the last min(sq, 64) rows (tails are where indexing bugs live). Passes when nothing is
 * unwritten, nothing is NaN, every checked element is within atol + rtol*|ref| and the
 * relative L2 error is within l2_tol. The required rows are always checked, so
 * rows_checked can exceed max_rows (max_rows = 0: required rows only). Returns 0 (see
 * res->pass), or -1 for an invalid problem or no memory (pass = 0, reason says why). */
int fb_verify(const attn_problem *p, const void *q, const void *k, const void *v,
              const void *o, const float *lse, size_t max_rows, uint64_t seed,
              verify_result *res);

/* The reference rows of one problem on one set of inputs, kept between checks: a tuner
 * verifies every candidate of a class on the same inputs, and for a large shape the
 * reference costs more CPU time than timing a candidate costs GPU time. fb_verify_cached
 * is fb_verify with such a cache: it fills the cache on first use and reads it while the
 * problem, max_rows and seed are those it was filled for. The caller owns the inputs'
 * identity: fb_refcache_clear whenever q, k or v change. Start from all zeros. */
typedef struct {
    int valid;
    attn_problem p;
    size_t max_rows;
    uint64_t seed;
    size_t nrows;
    size_t *rows; /* the checked rows, ascending */
    double *o;    /* nrows x d reference outputs */
    double *lse;  /* nrows reference log-sum-exps */
} fb_refcache;

void fb_refcache_clear(fb_refcache *c);
int fb_verify_cached(const attn_problem *p, const void *q, const void *k, const void *v,
                     const void *o, const float *lse, size_t max_rows, uint64_t seed,
                     fb_refcache *cache, verify_result *res);

#endif
