/* refcheck.c: the double-precision CPU reference for attention, the one verification
 * routine every implementation goes through (refcheck.h), reproducible inputs and the
 * host-side fp16/bf16 conversions (written out by hand, round to nearest even). */
#include "refcheck.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- conversions */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t fb_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    x &= 0x7fffffffu;
    if (x > 0x7f800000u) /* NaN: keep the top payload bits, force the quiet bit */
        return (uint16_t)(sign | 0x7e00u | ((x >> 13) & 0x3ffu));
    /* 65520 = 65504 + half an ulp rounds (to even) to 2^16, i.e. overflows to inf. */
    if (x >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (x >= 0x38800000u) { /* normal half (>= 2^-14): rebias exponent 127 -> 15 */
        uint32_t h = (x - 0x38000000u) >> 13;
        uint32_t rem = x & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* carries into exp */
        return (uint16_t)(sign | h);
    }
    if (x <= 0x33000000u) return sign; /* <= 2^-25: rounds to (signed) zero */
    /* Subnormal half: value = m * 2^(e-150); in units of 2^-24 that is m >> (126 - e). */
    uint32_t e = x >> 23, m = (x & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e; /* 14 .. 24 */
    uint32_t h = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (h & 1u))) h++; /* 0x3ff + 1 = smallest normal */
    return (uint16_t)(sign | h);
}

float fb_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) /* inf, or NaN made quiet with its payload kept */
        return bits_f32(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
    if (e == 0) {
        if (m == 0) return bits_f32(sign);
        /* subnormal: m * 2^-24; normalise so the leading 1 is at bit 10 */
        uint32_t exp = 113; /* 127 - 14 */
        while (!(m & 0x400u)) { m <<= 1; exp--; }
        return bits_f32(sign | (exp << 23) | ((m & 0x3ffu) << 13));
    }
    return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

uint16_t fb_f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    /* round to nearest even on the low 16 bits; overflow carries into inf naturally */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float fb_bf16_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    if ((x & 0x7fffffffu) > 0x7f800000u) x |= 0x400000u; /* quiet NaN */
    return bits_f32(x);
}

double fb_load(const void *buf, size_t i, dtype_t dt)
{
    switch (dt) {
    case DT_FP32: return ((const float *)buf)[i];
    case DT_FP16: return fb_f16_to_f32(((const uint16_t *)buf)[i]);
    case DT_BF16: return fb_bf16_to_f32(((const uint16_t *)buf)[i]);
    }
    return NAN;
}

/* The double is rounded to float first, then to 16 bits: a double rounding that can
 * differ from direct rounding only at exact ties of the float, irrelevant here. */
void fb_store(void *buf, size_t i, dtype_t dt, double v)
{
    switch (dt) {
    case DT_FP32: ((float *)buf)[i] = (float)v; break;
    case DT_FP16: ((uint16_t *)buf)[i] = fb_f32_to_f16((float)v); break;
    case DT_BF16: ((uint16_t *)buf)[i] = fb_f32_to_bf16((float)v); break;
    }
}

/* Loads n consecutive elements starting at element off into doubles. */
static void load_row(const void *buf, size_t off, size_t n, dtype_t dt, double *out)
{
    switch (dt) {
    case DT_FP32: {
        const float *p = (const float *)buf + off;
        for (size_t i = 0; i < n; i++) out[i] = p[i];
        break;
    }
    case DT_FP16: {
        const uint16_t *p = (const uint16_t *)buf + off;
        for (size_t i = 0; i < n; i++) out[i] = fb_f16_to_f32(p[i]);
        break;
    }
    case DT_BF16: {
        const uint16_t *p = (const uint16_t *)buf + off;
        for (size_t i = 0; i < n; i++) out[i] = fb_bf16_to_f32(p[i]);
        break;
    }
    }
}

/* ---------------------------------------------------------------- random inputs */

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), unbiased (rejection), n >= 1. */
static uint64_t rand_below(uint64_t *state, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do r = splitmix64(state); while (r >= limit);
    return r % n;
}

/* Natural log of x > 0 (finite, normal) from + - * / only, so the inputs do not depend
 * on the libm at hand: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(t),
 * t = (m - 1) / (m + 1), |t| < 0.172, series to t^29 (error < 1e-22). One operation per
 * statement, so no compiler contracts a multiply and an add into an FMA. */
static double portable_log(double x)
{
    int e;
    double m = frexp(x, &e); /* exact; m in [0.5, 1) */
    if (m < 0.70710678118654752440) { m = m * 2.0; e -= 1; }
    double num = m - 1.0, den = m + 1.0;
    double t = num / den;
    double t2 = t * t;
    /* 1/29, 1/27, ..., 1/1 as constants: correctly rounded, as the divisions were, so the
     * same bits, without 15 divisions per value */
    static const double inv_odd[15] = {1.0 / 29, 1.0 / 27, 1.0 / 25, 1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15,
                                       1.0 / 13, 1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3,  1.0 / 1};
    double sum = 0.0;
    for (int k = 0; k < 15; k++) {
        double term = sum * t2;
        sum = term + inv_odd[k];
    }
    double lnm = 2.0 * t;
    lnm = lnm * sum;
    /* ln 2 split in a high part with few bits (exact product with e) and a low part */
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    double hi = (double)e * ln2_hi;
    double lo = (double)e * ln2_lo;
    double r = lo + lnm;
    return hi + r;
}

/* Box-Muller in its polar form (Marsaglia): two independent N(0, 1) values per accepted
 * pair, using only sqrt (correctly rounded by IEEE 754) and portable_log, so the same
 * seed gives the same bits on every machine. Elements come in chunks of FILL_CHUNK, each
 * with its own stream derived from (seed, chunk index), so large inputs fill on all
 * cores and the bits do not depend on the number of threads. */
#define FILL_CHUNK ((size_t)1 << 16)

static void fill_chunk(void *buf, size_t begin, size_t end, dtype_t dt, uint64_t seed, size_t chunk)
{
    uint64_t state = seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(chunk + 1));
    splitmix64(&state);
    size_t i = begin;
    while (i < end) {
        double u, v, s;
        do {
            u = (double)(splitmix64(&state) >> 11) * 0x1.0p-53; /* [0, 1) */
            v = (double)(splitmix64(&state) >> 11) * 0x1.0p-53;
            u = 2.0 * u - 1.0; /* exact */
            v = 2.0 * v - 1.0;
            double uu = u * u, vv = v * v;
            s = uu + vv;
        } while (s >= 1.0 || s == 0.0);
        double l = portable_log(s);
        double ratio = (-2.0 * l) / s;
        double f = sqrt(ratio);
        double z[2] = {u * f, v * f};
        for (int k = 0; k < 2 && i < end; k++, i++) {
            double x = z[k] < -4.0 ? -4.0 : z[k] > 4.0 ? 4.0 : z[k];
            fb_store(buf, i, dt, x);
        }
    }
}

typedef struct {
    void *buf;
    size_t n, nchunks, first, step;
    dtype_t dt;
    uint64_t seed;
} fill_job;

static void *fill_worker(void *arg)
{
    const fill_job *j = arg;
    for (size_t c = j->first; c < j->nchunks; c += j->step) {
        size_t b = c * FILL_CHUNK, e = b + FILL_CHUNK < j->n ? b + FILL_CHUNK : j->n;
        fill_chunk(j->buf, b, e, j->dt, j->seed, c);
    }
    return NULL;
}

void fb_fill_random(void *buf, size_t n, dtype_t dt, uint64_t seed)
{
    size_t nchunks = (n + FILL_CHUNK - 1) / FILL_CHUNK;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nth = ncpu > 1 ? (size_t)ncpu : 1;
    if (nth > 64) nth = 64;
    if (nth > nchunks) nth = nchunks ? nchunks : 1;
    fill_job jobs[64];
    pthread_t tids[64];
    size_t started = 0;
    for (size_t t = 0; t < nth; t++) {
        jobs[t] = (fill_job){.buf = buf, .n = n, .nchunks = nchunks, .first = t, .step = nth, .dt = dt, .seed = seed};
        if (t > 0 && pthread_create(&tids[t], NULL, fill_worker, &jobs[t]) == 0) started |= (size_t)1 << t;
    }
    fill_worker(&jobs[0]);
    for (size_t t = 1; t < nth; t++) {
        if (started & ((size_t)1 << t)) pthread_join(tids[t], NULL);
        else fill_worker(&jobs[t]); /* thread creation failed: do its share here */
    }
}

/* ---------------------------------------------------------------- reference */

/* Number of keys row i of a sequence of sq queries and skv keys sees: keys 0 .. nvis-1
 * (bottom-right causal alignment). */
static long visible_keys(long sq, long skv, int causal, int i)
{
    if (!causal) return skv;
    long n = (long)i + (skv - sq) + 1;
    if (n > skv) n = skv;
    return n < 0 ? 0 : n;
}

/* Sequence b of a shape: its lengths and, for a ragged batch, its first rows in the packed
 * Q and K/V tensors (cu_seqlens[b]); 0 for a dense shape. */
static void seq_info(const shape_t *s, int b, int *sq, int *skv, size_t *q0, size_t *k0)
{
    size_t q = 0, k = 0;
    if (shape_ragged(s))
        for (int x = 0; x < b; x++) {
            int lq, lk;
            shape_seq_lens(s, x, &lq, &lk);
            q += (size_t)lq;
            k += (size_t)lk;
        }
    shape_seq_lens(s, b, sq, skv);
    *q0 = q;
    *k0 = k;
}

/* Output row r (of shape_out_rows) as (batch, head, query position). Dense rows are
 * [B, Hq, Sq]; ragged rows are [Hq, total_q] with sequence b at cu_q[b]. */
static void row_coords(const shape_t *s, size_t r, int *b, int *h, int *i)
{
    if (!shape_ragged(s)) {
        *i = (int)(r % (size_t)s->sq);
        *h = (int)((r / (size_t)s->sq) % (size_t)s->hq);
        *b = (int)(r / ((size_t)s->sq * (size_t)s->hq));
        return;
    }
    size_t total = (size_t)shape_total_q(s), t = r % total;
    *h = (int)(r / total);
    size_t q0 = 0;
    for (int x = 0; x < s->batch; x++) {
        int lq, lk;
        shape_seq_lens(s, x, &lq, &lk);
        if (t < q0 + (size_t)lq || x == s->batch - 1) { *b = x; *i = (int)(t - q0); return; }
        q0 += (size_t)lq;
    }
    *b = 0;
    *i = (int)t;
}

void fb_ref_row(const attn_problem *p, const void *q, const void *k, const void *v,
                int b, int h, int i, double *o, double *lse)
{
    const shape_t *s = &p->s;
    size_t d = (size_t)s->d;
    int sq, skv;
    size_t q0, k0;
    seq_info(s, b, &sq, &skv, &q0, &k0);
    long nvis = visible_keys(sq, skv, s->causal, i);
    for (size_t x = 0; x < d; x++) o[x] = 0.0;
    if (nvis <= 0) { *lse = -INFINITY; return; }

    int group = s->hkv > 0 && s->hq >= s->hkv ? s->hq / s->hkv : 1;
    int kh = h / group;
    size_t qoff, kvbase;
    if (shape_ragged(s)) { /* packed per head: [Hq, total_q, D], [Hkv, total_kv, D] */
        qoff = ((size_t)h * (size_t)shape_total_q(s) + q0 + (size_t)i) * d;
        kvbase = ((size_t)kh * (size_t)shape_total_kv(s) + k0) * d;
    } else {
        qoff = (((size_t)b * (size_t)s->hq + (size_t)h) * (size_t)s->sq + (size_t)i) * d;
        kvbase = ((size_t)b * (size_t)s->hkv + (size_t)kh) * (size_t)s->skv * d;
    }

    /* qrow, a scratch row for K/V, and the scores; the scores are recomputed when the
     * allocation for them fails (slower, same result). */
    double *buf = malloc((2 * d + (size_t)nvis) * sizeof *buf);
    double qstack[256], rstack[256];
    double *qrow = buf ? buf : qstack, *row = buf ? buf + d : rstack;
    double *sc = buf ? buf + 2 * d : NULL;
    if (!buf && d > 256) { *lse = NAN; for (size_t x = 0; x < d; x++) o[x] = NAN; return; }
    load_row(q, qoff, d, p->dt, qrow);

    double m = -INFINITY;
    for (long j = 0; j < nvis; j++) {
        load_row(k, kvbase + (size_t)j * d, d, p->dt, row);
        double dot = 0.0;
        for (size_t x = 0; x < d; x++) dot += qrow[x] * row[x];
        double sj = p->scale * dot;
        if (sc) sc[j] = sj;
        if (sj > m) m = sj;
    }
    double sum = 0.0;
    for (long j = 0; j < nvis; j++) {
        double sj;
        if (sc) {
            sj = sc[j];
        } else {
            load_row(k, kvbase + (size_t)j * d, d, p->dt, row);
            double dot = 0.0;
            for (size_t x = 0; x < d; x++) dot += qrow[x] * row[x];
            sj = p->scale * dot;
        }
        double pj = exp(sj - m);
        sum += pj;
        load_row(v, kvbase + (size_t)j * d, d, p->dt, row);
        for (size_t x = 0; x < d; x++) o[x] += pj * row[x];
    }
    for (size_t x = 0; x < d; x++) o[x] /= sum;
    *lse = m + log(sum);
    free(buf);
}

/* ---------------------------------------------------------------- poison */

#define POISON_F16 0x7E5Au
#define POISON_BF16 0x7FDAu

void fb_poison_f32(float *buf, size_t n)
{
    uint32_t u = FB_POISON_F32;
    for (size_t i = 0; i < n; i++) memcpy(&buf[i], &u, sizeof u);
}

void fb_poison(void *buf, size_t n, dtype_t dt)
{
    if (dt == DT_FP32) { fb_poison_f32(buf, n); return; }
    uint16_t w = dt == DT_FP16 ? POISON_F16 : POISON_BF16;
    uint16_t *p = buf;
    for (size_t i = 0; i < n; i++) p[i] = w;
}

/* ---------------------------------------------------------------- tolerances */

/* Why these numbers. Inputs are N(0, 1) clipped to [-4, 4] and the scale is 1/sqrt(d),
 * so scores have sd about 1 and |o|, a convex combination of V rows, is mostly < 1.
 * The reference sees the same (already rounded) inputs, so the error of a correct
 * kernel comes from
 *   - the output rounded to the dtype: up to u |o| (u = 2^-11 fp16, 2^-8 bf16);
 *   - P = exp(s - m) rounded to the dtype before the P*V product on tensor cores while
 *     the row sum l stays in fp32: o gets sum_j p_j d_j v_j / l with |d_j| <= u,
 *     random-signed, i.e. about u * |o| in size, again relative;
 *   - fp32 accumulation of QK^T and PV over d and skv terms: ~1e-6, negligible.
 * So a correct 16-bit kernel is within about 2u relative, plus an absolute floor for
 * outputs near zero (cancellation in sum p_j v_j): fp16 2u ~ 1e-3 against rtol 1e-2,
 * bf16 2u ~ 8e-3 against rtol 2.5e-2; its rms error is near u/2, well under l2_tol,
 * while a skipped key tile or a wrong mask moves the relative L2 error by percents.
 * tests/test_refcheck.c simulates such a kernel (fp32 scores, online softmax in key
 * blocks, P rounded to the dtype, output rounded) on six shapes: its worst element
 * reaches 5% (fp16) and 10% (bf16) of the tolerance, its relative L2 error 10% and 15%
 * of l2_tol; a kernel that skips the last 12 keys of 300 is at 13x l2_tol.
 * fp32: only accumulation order differs (no P rounding), ~1e-6; 1e-4 leaves room for a
 * fast exp but not for TF32 tensor-core products (~1e-3), which are not fp32. */
void fb_tolerances(dtype_t dt, double *atol, double *rtol, double *l2_tol)
{
    switch (dt) {
    case DT_FP16: *atol = 2e-3; *rtol = 1e-2; *l2_tol = 1.5e-3; return;
    case DT_BF16: *atol = 1.5e-2; *rtol = 2.5e-2; *l2_tol = 8e-3; return;
    case DT_FP32: break;
    }
    *atol = 1e-4; *rtol = 1e-4; *l2_tol = 1e-4;
}

/* LSE: inputs are exact in every dtype, so the error is float accumulation only. */
#define LSE_ATOL 1e-3
#define LSE_RTOL 1e-5
/* A kernel may write a large negative finite value instead of -inf for an empty row. */
#define LSE_NEG_INF_CUTOFF (-1e30)

/* ---------------------------------------------------------------- verification */

/* What the check of one row found; rows are reduced in order afterwards, so the
 * totals do not depend on how many threads computed them. */
typedef struct {
    size_t row;
    double max_abs, max_rel, sq_err, sq_ref;
    double worst_ratio; /* max |o - ref| / (atol + rtol |ref|) over finite outputs */
    int worst_d;
    double worst_got, worst_want;
    size_t bad;
    double lse_err; /* INFINITY when the kernel's lse is unusable */
    double lse_got, lse_want;
    int lse_bad;
} row_check;

typedef struct {
    const attn_problem *p;
    const void *q, *k, *v, *o;
    const float *lse;
    double atol, rtol;
    row_check *rows;
    size_t nrows, first, stride;
    const double *ref_in, *lse_in; /* cached reference rows: read instead of computed */
    double *ref_out, *lse_out;     /* or where the computed ones are kept */
    int failed; /* out of memory */
} worker_arg;

static void check_row(const worker_arg *w, size_t n, double *buf)
{
    const shape_t *s = &w->p->s;
    row_check *rc = &w->rows[n];
    size_t r = rc->row, d = (size_t)s->d;
    const double *ref = buf;
    double ref_lse;
    if (w->ref_in) {
        ref = w->ref_in + n * d;
        ref_lse = w->lse_in[n];
    } else {
        int b, h, i;
        row_coords(s, r, &b, &h, &i);
        fb_ref_row(w->p, w->q, w->k, w->v, b, h, i, buf, &ref_lse);
        if (w->ref_out) {
            memcpy(w->ref_out + n * d, buf, d * sizeof *buf);
            w->lse_out[n] = ref_lse;
        }
    }
    for (size_t x = 0; x < d; x++) {
        double got = fb_load(w->o, r * d + x, w->p->dt), want = ref[x];
        double tol = w->atol + w->rtol * fabs(want);
        if (!isfinite(got)) { rc->bad++; continue; } /* counted by the scan */
        double err = fabs(got - want);
        if (err > tol) rc->bad++;
        if (err > rc->max_abs) rc->max_abs = err;
        double rel = err / (fabs(want) + w->atol);
        if (rel > rc->max_rel) rc->max_rel = rel;
        double ratio = err / tol;
        if (ratio > rc->worst_ratio) {
            rc->worst_ratio = ratio;
            rc->worst_d = (int)x;
            rc->worst_got = got;
            rc->worst_want = want;
        }
        rc->sq_err += err * err;
        rc->sq_ref += want * want;
    }
    if (!w->lse) return;
    double got = w->lse[r];
    rc->lse_got = got;
    rc->lse_want = ref_lse;
    if (isinf(ref_lse)) { /* no visible key */
        if (!((isinf(got) && got < 0) || got < LSE_NEG_INF_CUTOFF)) {
            rc->lse_bad = 1;
            rc->lse_err = INFINITY;
        }
        return;
    }
    if (!isfinite(got)) { rc->lse_bad = 1; rc->lse_err = INFINITY; return; }
    rc->lse_err = fabs(got - ref_lse);
    if (rc->lse_err > LSE_ATOL + LSE_RTOL * fabs(ref_lse)) rc->lse_bad = 1;
}

static void *worker(void *argp)
{
    worker_arg *w = argp;
    double *ref = malloc((size_t)w->p->s.d * sizeof *ref);
    if (!ref) { w->failed = 1; return NULL; }
    for (size_t n = w->first; n < w->nrows; n += w->stride) check_row(w, n, ref);
    free(ref);
    return NULL;
}

#define MAX_THREADS 16

static int run_checks(worker_arg *proto, double work)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nt = ncpu > 1 ? (size_t)ncpu : 1;
    if (nt > MAX_THREADS) nt = MAX_THREADS;
    if (work < 2e7) nt = 1; /* not worth a thread */
    if (nt > proto->nrows) nt = proto->nrows ? proto->nrows : 1;
    worker_arg args[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (size_t t = 0; t < nt; t++) {
        args[t] = *proto;
        args[t].first = t;
        args[t].stride = nt;
        if (t > 0) started[t] = pthread_create(&tid[t], NULL, worker, &args[t]) == 0;
    }
    worker(&args[0]);
    int failed = args[0].failed;
    for (size_t t = 1; t < nt; t++) {
        if (started[t]) pthread_join(tid[t], NULL);
        else worker(&args[t]); /* no thread: do its share here */
        failed |= args[t].failed;
    }
    return failed ? -1 : 0;
}

static void bm_set(unsigned char *bm, size_t i) { bm[i >> 3] |= (unsigned char)(1u << (i & 7)); }
static void bm_clr(unsigned char *bm, size_t i) { bm[i >> 3] &= (unsigned char)~(1u << (i & 7)); }
static int bm_get(const unsigned char *bm, size_t i) { return (bm[i >> 3] >> (i & 7)) & 1; }

/* Picks the rows to check: all of them, or the mandatory ones (row 0 and the last
 * min(sq, 64) rows of the first and the last (b, h); ragged: of the first sequence of
 * head 0 and the last of head hq-1, with their own lengths) plus random distinct others
 * up to max_rows in total, from seed. Returns a malloc'd ascending list, or NULL. */
static size_t *select_rows(const shape_t *s, size_t rows_total, size_t max_rows,
                           uint64_t seed, size_t *count)
{
    size_t *list;
    if (rows_total <= max_rows) {
        list = malloc((rows_total ? rows_total : 1) * sizeof *list);
        if (!list) return NULL;
        for (size_t r = 0; r < rows_total; r++) list[r] = r;
        *count = rows_total;
        return list;
    }
    unsigned char *bm = calloc(rows_total / 8 + 1, 1);
    unsigned char *must = calloc(rows_total / 8 + 1, 1);
    if (!bm || !must) { free(bm); free(must); return NULL; }
    size_t nmust = 0;
    size_t lens[2] = {(size_t)s->sq, (size_t)s->sq};
    size_t bases[2] = {0, rows_total - (size_t)s->sq};
    if (shape_ragged(s)) {
        int l0, llast, lk;
        shape_seq_lens(s, 0, &l0, &lk);
        shape_seq_lens(s, s->batch - 1, &llast, &lk);
        lens[0] = (size_t)l0;
        lens[1] = (size_t)llast;
        bases[1] = rows_total - (size_t)llast;
    }
    for (int k = 0; k < 2; k++) {
        size_t rows[65];
        size_t nr = 0, sq = lens[k], tail = sq < 64 ? sq : 64;
        rows[nr++] = bases[k];
        for (size_t t = 0; t < tail; t++) rows[nr++] = bases[k] + sq - tail + t;
        for (size_t n = 0; n < nr; n++)
            if (!bm_get(must, rows[n])) { bm_set(must, rows[n]); nmust++; }
    }
    memcpy(bm, must, rows_total / 8 + 1);
    size_t chosen = nmust;
    size_t target = max_rows > nmust ? max_rows : nmust; /* mandatory rows always count */
    uint64_t state = seed ^ 0x5eed0f5e1ec7ed5ull;
    if (target - nmust <= (rows_total - nmust) / 2) {
        while (chosen < target) { /* add random rows */
            size_t r = (size_t)rand_below(&state, rows_total);
            if (!bm_get(bm, r)) { bm_set(bm, r); chosen++; }
        }
    } else {
        for (size_t r = 0; r < rows_total; r++) bm_set(bm, r); /* remove random rows */
        chosen = rows_total;
        while (chosen > target) {
            size_t r = (size_t)rand_below(&state, rows_total);
            if (bm_get(bm, r) && !bm_get(must, r)) { bm_clr(bm, r); chosen--; }
        }
    }
    free(must);
    list = malloc(chosen * sizeof *list);
    if (!list) { free(bm); return NULL; }
    size_t n = 0;
    for (size_t r = 0; r < rows_total; r++)
        if (bm_get(bm, r)) list[n++] = r;
    free(bm);
    *count = n;
    return list;
}

/* Appends "; msg" (or msg when empty) to reason, truncating quietly. */
static void add_reason(verify_result *res, const char *msg)
{
    size_t len = strlen(res->reason), cap = sizeof res->reason - 1;
    if (len && len + 2 < cap) { memcpy(res->reason + len, "; ", 2); len += 2; }
    size_t n = strlen(msg);
    if (n > cap - len) n = cap - len;
    memcpy(res->reason + len, msg, n);
    res->reason[len + n] = '\0';
}

static void where(const shape_t *s, size_t elem, char *out, size_t outlen)
{
    size_t d = (size_t)s->d;
    int b, h, i;
    row_coords(s, elem / d, &b, &h, &i);
    snprintf(out, outlen, "b=%d h=%d i=%d d=%zu", b, h, i, elem % d);
}

/* Scans the whole output for poison and NaN/inf; first_* = (size_t)-1 when none. */
static void scan_output(const void *o, size_t n, dtype_t dt, size_t *unwritten,
                        size_t *first_unwritten, size_t *nans, size_t *first_nan)
{
    size_t un = 0, nn = 0, fu = (size_t)-1, fn = (size_t)-1;
    if (dt == DT_FP32) {
        const unsigned char *c = o; /* bits read with memcpy: no aliasing questions */
        for (size_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, c + 4 * i, sizeof u);
            if (u == FB_POISON_F32) { if (!un++) fu = i; }
            else if ((u & 0x7f800000u) == 0x7f800000u) { if (!nn++) fn = i; }
        }
    } else {
        const uint16_t *p = o;
        uint16_t poison = dt == DT_FP16 ? POISON_F16 : POISON_BF16;
        uint16_t expmask = dt == DT_FP16 ? 0x7c00u : 0x7f80u;
        for (size_t i = 0; i < n; i++) {
            if (p[i] == poison) { if (!un++) fu = i; }
            else if ((p[i] & expmask) == expmask) { if (!nn++) fn = i; }
        }
    }
    *unwritten = un; *first_unwritten = fu; *nans = nn; *first_nan = fn;
}

void fb_refcache_clear(fb_refcache *c)
{
    free(c->rows);
    free(c->o);
    free(c->lse);
    memset(c, 0, sizeof *c);
}

/* Whether the cache holds the reference of this problem (every field the reference reads;
 * a paged shape's page size is not one of them) for these rows. */
static int refcache_matches(const fb_refcache *c, const attn_problem *p, size_t max_rows, uint64_t seed)
{
    const shape_t *a = &c->p.s, *b = &p->s;
    return c->valid && c->max_rows == max_rows && c->seed == seed && c->p.dt == p->dt && c->p.scale == p->scale &&
           a->batch == b->batch && a->hq == b->hq && a->hkv == b->hkv && a->sq == b->sq && a->skv == b->skv &&
           a->d == b->d && a->causal == b->causal && a->nlens == b->nlens && a->nqlens == b->nqlens &&
           memcmp(a->lens, b->lens, sizeof a->lens) == 0 && memcmp(a->qlens, b->qlens, sizeof a->qlens) == 0;
}

int fb_verify(const attn_problem *p, const void *q, const void *k, const void *v,
              const void *o, const float *lse, size_t max_rows, uint64_t seed,
              verify_result *res)
{
    return fb_verify_cached(p, q, k, v, o, lse, max_rows, seed, NULL, res);
}

int fb_verify_cached(const attn_problem *p, const void *q, const void *k, const void *v,
                     const void *o, const float *lse, size_t max_rows, uint64_t seed,
                     fb_refcache *cache, verify_result *res)
{
    memset(res, 0, sizeof *res);
    const shape_t *s = &p->s;
    fb_tolerances(p->dt, &res->atol, &res->rtol, &res->l2_tol);
    char msg[256], loc[96];
    if (s->batch < 0 || s->hq < 0 || s->sq < 0 || s->skv < 0 || s->d <= 0 || s->hkv <= 0 ||
        s->hq % s->hkv != 0) {
        snprintf(res->reason, sizeof res->reason,
                 "invalid problem (batch=%d hq=%d hkv=%d sq=%d skv=%d d=%d)", s->batch,
                 s->hq, s->hkv, s->sq, s->skv, s->d);
        return -1;
    }
    size_t d = (size_t)s->d;
    if (s->nlens < 0 || s->nlens > FB_MAX_LENS) {
        snprintf(res->reason, sizeof res->reason, "invalid problem (nlens=%d)", s->nlens);
        return -1;
    }
    if (s->nqlens < 0 || s->nqlens > FB_MAX_LENS) {
        snprintf(res->reason, sizeof res->reason, "invalid problem (nqlens=%d)", s->nqlens);
        return -1;
    }
    for (int x = 0; x < s->nqlens; x++)
        if (!(s->qlens[x] > 0.0 && s->qlens[x] <= 1.0)) {
            snprintf(res->reason, sizeof res->reason, "invalid problem (qlens[%d]=%g)", x, s->qlens[x]);
            return -1;
        }
    for (int x = 0; x < s->nlens; x++)
        if (!(s->lens[x] > 0.0 && s->lens[x] <= 1.0)) {
            snprintf(res->reason, sizeof res->reason, "invalid problem (lens[%d]=%g)", x, s->lens[x]);
            return -1;
        }
    size_t rows_total = shape_out_rows(s);
    res->rows_total = rows_total;

    /* 1. the whole output: poison and NaN/inf */
    size_t first_un, first_nan;
    scan_output(o, rows_total * d, p->dt, &res->unwritten, &first_un, &res->nan_count,
                &first_nan);
    if (res->unwritten) {
        where(s, first_un, loc, sizeof loc);
        snprintf(msg, sizeof msg, "%zu of %zu outputs unwritten (first at %s)", res->unwritten,
                 rows_total * d, loc);
        add_reason(res, msg);
    }
    if (res->nan_count) {
        where(s, first_nan, loc, sizeof loc);
        snprintf(msg, sizeof msg, "%zu NaN/inf outputs (first at %s)", res->nan_count, loc);
        add_reason(res, msg);
    }
    size_t lse_poison = 0, lse_nan = 0;
    if (lse) { /* the whole LSE: poison, NaN and +inf (-inf is an empty row) */
        for (size_t r = 0; r < rows_total; r++) {
            uint32_t u;
            memcpy(&u, &lse[r], sizeof u);
            if (u == FB_POISON_F32) lse_poison++;
            else if (isnan(lse[r]) || (isinf(lse[r]) && lse[r] > 0)) lse_nan++;
        }
        if (lse_poison) {
            snprintf(msg, sizeof msg, "%zu of %zu lse values unwritten", lse_poison, rows_total);
            add_reason(res, msg);
        }
        if (lse_nan) {
            snprintf(msg, sizeof msg, "%zu lse values NaN/+inf", lse_nan);
            add_reason(res, msg);
        }
    }

    /* 2. the reference on the selected rows: from the cache when it holds them, else
     * computed (and kept in the cache when there is one) */
    const int hit = cache && refcache_matches(cache, p, max_rows, seed);
    size_t nrows = hit ? cache->nrows : 0;
    size_t *list = hit ? cache->rows : NULL;
    if (cache && !hit) { /* a miss: the cache takes this check's rows and reference */
        fb_refcache_clear(cache);
        list = cache->rows = select_rows(s, rows_total, max_rows, seed, &cache->nrows);
        nrows = cache->nrows;
        cache->o = malloc((nrows ? nrows : 1) * d * sizeof *cache->o);
        cache->lse = malloc((nrows ? nrows : 1) * sizeof *cache->lse);
        if (list && (!cache->o || !cache->lse)) { /* no room to keep them: check without */
            cache->rows = NULL;
            fb_refcache_clear(cache);
            cache = NULL;
        }
    } else if (!cache) {
        list = select_rows(s, rows_total, max_rows, seed, &nrows);
    }
    row_check *rows = list ? calloc(nrows ? nrows : 1, sizeof *rows) : NULL;
    if (!rows) {
        if (cache) fb_refcache_clear(cache); else free(list);
        res->pass = 0;
        add_reason(res, "out of memory for the reference");
        return -1;
    }
    for (size_t n = 0; n < nrows; n++) rows[n].row = list[n];
    worker_arg proto = {.p = p, .q = q, .k = k, .v = v, .o = o, .lse = lse,
                        .atol = res->atol, .rtol = res->rtol, .rows = rows, .nrows = nrows};
    if (hit) {
        proto.ref_in = cache->o;
        proto.lse_in = cache->lse;
    } else if (cache) {
        proto.ref_out = cache->o;
        proto.lse_out = cache->lse;
    }
    double work = (double)nrows * (hit ? 1.0 : (double)s->skv) * (double)d;
    const int failed = run_checks(&proto, work) != 0;
    if (cache && !hit && !failed) { /* valid from now on for this problem, rows and seed */
        cache->p = *p;
        cache->max_rows = max_rows;
        cache->seed = seed;
        cache->valid = 1;
    }
    if (failed && cache) fb_refcache_clear(cache); /* a miss may have written part of it */
    if (!cache) free(list);
    if (failed) {
        free(rows);
        res->pass = 0;
        add_reason(res, "out of memory for the reference");
        return -1;
    }
    res->rows_checked = nrows;

    /* 3. reduce in row order */
    double sq_err = 0, sq_ref = 0, worst = 0;
    size_t lse_bad = 0;
    const row_check *wr = NULL, *lw = NULL; /* worst element's row, worst lse row */
    for (size_t n = 0; n < nrows; n++) {
        const row_check *rc = &rows[n];
        if (rc->max_abs > res->max_abs_err) res->max_abs_err = rc->max_abs;
        if (rc->max_rel > res->max_rel_err) res->max_rel_err = rc->max_rel;
        sq_err += rc->sq_err;
        sq_ref += rc->sq_ref;
        res->bad_elems += rc->bad;
        if (rc->worst_ratio > worst) { worst = rc->worst_ratio; wr = rc; }
        if (rc->lse_err > res->lse_max_err) res->lse_max_err = rc->lse_err;
        if (rc->lse_bad) {
            lse_bad++;
            if (!lw || rc->lse_err > lw->lse_err) lw = rc;
        }
    }
    double err_norm = sqrt(sq_err), ref_norm = sqrt(sq_ref);
    res->rel_l2_err = ref_norm > 0 ? err_norm / ref_norm : (err_norm > 0 ? INFINITY : 0.0);

    if (wr && worst > 1.0) {
        where(s, wr->row * d + (size_t)wr->worst_d, loc, sizeof loc);
        snprintf(msg, sizeof msg,
                 "err %.3g > tol %.3g at %s (got %.6g, want %.6g); %zu of %zu checked "
                 "outputs beyond tol, max abs err %.3g",
                 fabs(wr->worst_got - wr->worst_want),
                 res->atol + res->rtol * fabs(wr->worst_want), loc, wr->worst_got,
                 wr->worst_want, res->bad_elems, nrows * d, res->max_abs_err);
        add_reason(res, msg);
    } else if (res->bad_elems && !res->unwritten && !res->nan_count) {
        snprintf(msg, sizeof msg, "%zu checked outputs beyond tol", res->bad_elems);
        add_reason(res, msg);
    }
    if (!(res->rel_l2_err <= res->l2_tol)) {
        snprintf(msg, sizeof msg, "rel L2 err %.3g > %.3g", res->rel_l2_err, res->l2_tol);
        add_reason(res, msg);
    }
    if (lw) {
        int lb, lh, li;
        row_coords(s, lw->row, &lb, &lh, &li);
        snprintf(loc, sizeof loc, "b=%d h=%d i=%d", lb, lh, li);
        snprintf(msg, sizeof msg, "lse wrong in %zu of %zu checked rows, worst at %s (got %.6g, "
                 "want %.6g)", lse_bad, nrows, loc, lw->lse_got, lw->lse_want);
        add_reason(res, msg);
    }
    res->pass = !res->unwritten && !res->nan_count && !res->bad_elems &&
                res->rel_l2_err <= res->l2_tol && !lse_bad && !lse_poison && !lse_nan;
    if (res->pass) res->reason[0] = '\0';
    free(rows);
    return 0;
}
