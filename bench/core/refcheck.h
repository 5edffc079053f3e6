/* refcheck.h: the CPU reference (double precision), the plain in-precision implementation
 * and the one verification routine that every implementation, ours and the vendors', goes
 * through (verify.c); input generation and the 16-bit float conversions used on the host. */
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
#define FB_POISON_F16 0x7E5Au  /* and a 16-bit one's (quiet NaNs) */
#define FB_POISON_BF16 0x7FDAu
void fb_poison_f32(float *buf, size_t n);

/* Output row r (of shape_out_rows) as (batch, query head, query position): dense rows are
 * [B, Hq, Sq], ragged rows [Hq, total_q] with sequence b at cu_q[b]. */
void fb_row_coords(const shape_t *s, size_t r, int *b, int *h, int *i);
/* Uniform in [0, n) (n >= 1), unbiased, from a splitmix64 state: the same on every machine. */
uint64_t fb_rand_below(uint64_t *state, uint64_t n);

/* ---- the plain implementation and the rule ----
 *
 * A correct kernel in a 16-bit dtype is not exact: it rounds P and O to the dtype. How far
 * it may be is set the way FlashAttention's tests set it, by a plain implementation in the
 * same precision: an element o of row r passes iff
 *     |o - ref| <= FB_VERIFY_RATIO * plain_err(r) + floor(r),
 *     floor(r) = fb_floor_ulps(dt) * u(dt) * max |ref(r)|,
 * where plain_err(r) is the largest abs error of the plain implementation in row r against
 * the reference, u the dtype's unit roundoff (2^-24, 2^-11, 2^-8) and max |ref(r)| the
 * largest reference output of the row. Every quantity is per row, so a wrong region of
 * small outputs (long rows, |o| ~ 0.02) is not hidden by large ones elsewhere (a causal
 * first row is a V row, |o| up to 4). docs/method.md's section on verification has the numbers. */
#define FB_VERIFY_RATIO 2.0
double fb_floor_ulps(dtype_t dt);
double fb_unit_roundoff(dtype_t dt);
/* The bound every element of a row must meet, from its plain error and max |ref|. */
double fb_row_bound(dtype_t dt, double plain_err, double row_max);

/* One row of the plain implementation in p->dt (the one kernels/ref_attn.k runs on the
 * device): scores q.k accumulated in fp32 in key order, times the fp32 scale; the row max;
 * P = expf(s - max) rounded to dt; P V accumulated in fp32 and divided by the fp32 sum of
 * the unrounded P; rounded to dt. o[d] holds the rounded values (0 for a row with no key). */
void fb_plain_row(const attn_problem *p, const void *q, const void *k, const void *v, int b, int h, int i, float *o);

/* ---- the full reference of one problem on one set of inputs ---- */

/* Every output row's reference O (float), log-sum-exp, plain error and bound, computed once
 * per problem and inputs (on the device: refdev.h; else on the CPU) and kept: a tuner checks
 * every candidate of a class on the same inputs, each costing only the comparison. */
typedef struct {
    int valid;
    attn_problem p;    /* the problem it is the reference of */
    uint64_t seed;     /* the inputs' identity, as the caller names them */
    size_t rows;       /* shape_out_rows */
    float *o;          /* rows x d */
    float *lse;        /* rows; -inf for a row that sees no key */
    float *plain_err;  /* rows */
    float *bound;      /* rows: fb_row_bound of the row */
    int on_device;     /* 1: kernels/ref_attn.k (checked on sampled rows); 0: the CPU */
} fb_reference;

/* Allocates the tables of p (rows, d) in ref, invalid until filled. 0 or -1 (no memory). */
int fb_reference_alloc(fb_reference *ref, const attn_problem *p);
void fb_reference_free(fb_reference *ref);
/* 1 when ref holds the reference of this problem (every field the reference reads; a paged
 * shape's page size is not one) on the inputs called seed. */
int fb_reference_matches(const fb_reference *ref, const attn_problem *p, uint64_t seed);
/* Fills bound from o and plain_err and marks ref valid for seed (both builders end so). */
void fb_reference_finish(fb_reference *ref, uint64_t seed);
/* The reference of every row on the CPU, all cores: fb_ref_row in double, fb_plain_row for
 * plain_err. q, k, v as fb_ref_row reads them. 0, or -1 (no memory: ref freed). */
int fb_reference_cpu(const attn_problem *p, const void *q, const void *k, const void *v, uint64_t seed,
                     fb_reference *ref);
/* Checks a reference made elsewhere (the device) on a sample of rows against fb_ref_row and
 * fb_plain_row: max_rows rows chosen reproducibly from seed, always row 0 and the last
 * min(sq, 64) rows of the first and the last (b, h) (tails are where indexing bugs live;
 * every row when there are no more than max_rows). Agreement: O within tol_rel * max |ref|
 * of the row, LSE within tol_rel * (1 + |lse|), plain_err within a factor 2 of the CPU's,
 * give or take half the row's floor. 0 agree, 1 not (why says where), -1 no memory. */
int fb_reference_spot_check(const fb_reference *ref, const void *q, const void *k, const void *v, size_t max_rows,
                            uint64_t seed, double tol_rel, char *why, size_t whylen);
/* How many rows fb_reference_spot_check takes: a few hundred, fast on the CPU. */
#define FB_SPOT_ROWS 384

typedef struct {
    int pass;
    double max_abs_err;   /* over every element */
    double worst_ratio;   /* max |o - ref| / bound over every finite element: < 1 passes */
    double rel_l2_err;    /* ||o - ref|| / ||ref|| over every element */
    double lse_max_err;   /* max abs error of lse over every row (0 when not checked) */
    int lse_checked;      /* a log-sum-exp was given and compared */
    size_t nan_count;     /* NaN/inf outputs (not poison) */
    size_t unwritten;     /* elements still holding poison */
    size_t bad_elems;     /* elements beyond their row's bound */
    size_t rows_checked, rows_total; /* every row once compared (0 checked: not verified) */
    double l2_tol;        /* the relative L2 error allowed (fb_tolerances) */
    char reason[256];     /* why it failed, empty when pass */
} verify_result;

/* Coarse bounds for a dtype (the same for every implementation): l2_tol caps the relative
 * L2 error of a verified output; atol + rtol * |o| is the largest error a verified element
 * can show, which `check-results` holds a results file to without the reference. */
void fb_tolerances(dtype_t dt, double *atol, double *rtol, double *l2_tol);

/* Checks O (dtype ref->p.dt, [B, Hq, Sq, D]; ragged [Hq, total_q, D]) and optionally LSE
 * (float [B, Hq, Sq], may be NULL) element by element against the full reference: passes
 * when nothing is unwritten (poison), nothing is NaN/inf, every element is within its row's
 * bound, the relative L2 error is within l2_tol and every LSE within 1e-3 + 1e-5 |lse|.
 * The reason names the worst element (its ratio to the bound), how many failed, the L2 and
 * LSE errors. Runs on all cores. 0 (see res->pass), or -1 for an invalid reference or no
 * memory (pass = 0, reason says why). */
int fb_verify_full(const fb_reference *ref, const void *o, const float *lse, verify_result *res);

/* fb_verify_full against a CPU reference made for this call (tests, small problems). */
int fb_verify(const attn_problem *p, const void *q, const void *k, const void *v, const void *o, const float *lse,
              verify_result *res);

#endif
