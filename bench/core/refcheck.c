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

uint64_t fb_rand_below(uint64_t *state, uint64_t n)
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

void fb_row_coords(const shape_t *s, size_t r, int *b, int *h, int *i)
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

void fb_poison_f32(float *buf, size_t n)
{
    uint32_t u = FB_POISON_F32;
    for (size_t i = 0; i < n; i++) memcpy(&buf[i], &u, sizeof u);
}

void fb_poison(void *buf, size_t n, dtype_t dt)
{
    if (dt == DT_FP32) { fb_poison_f32(buf, n); return; }
    uint16_t w = dt == DT_FP16 ? FB_POISON_F16 : FB_POISON_BF16;
    uint16_t *p = buf;
    for (size_t i = 0; i < n; i++) p[i] = w;
}

/* ---------------------------------------------------------------- tolerances */

/* The coarse bounds: no longer what a check holds an element to (fb_row_bound is), but
 * the envelope any verified output stays in. Inputs are N(0, 1) clipped to [-4, 4] and
 * the scale is 1/sqrt(d), so |o|, a convex combination of V rows, is at most 4; a
 * 16-bit kernel that passes fb_row_bound is within a few units of roundoff of |o| (fp16
 * u = 2^-11, bf16 2^-8), its rms error near u/2, well under l2_tol, while a skipped key
 * tile or a wrong mask moves the relative L2 error by percents. fp32: only accumulation
 * order differs (no P rounding), ~1e-6; 1e-4 leaves room for a fast exp but not for TF32
 * tensor-core products (~1e-3), which are not fp32. */
void fb_tolerances(dtype_t dt, double *atol, double *rtol, double *l2_tol)
{
    switch (dt) {
    case DT_FP16: *atol = 2e-3; *rtol = 1e-2; *l2_tol = 1.5e-3; return;
    case DT_BF16: *atol = 1.5e-2; *rtol = 2.5e-2; *l2_tol = 8e-3; return;
    case DT_FP32: break;
    }
    *atol = 1e-4; *rtol = 1e-4; *l2_tol = 1e-4;
}

double fb_unit_roundoff(dtype_t dt)
{
    switch (dt) {
    case DT_FP16: return 0x1.0p-11;
    case DT_BF16: return 0x1.0p-8;
    case DT_FP32: break;
    }
    return 0x1.0p-24;
}

/* The floor in units of roundoff at the row's largest output. 16-bit: FlashAttention's
 * (twice the dtype's rounding error at the output's size): a row whose plain error is
 * small by luck (a row of one key is a V row, exact) still allows the kernel's own output
 * rounding. fp32: a correct kernel differs from the plain one by accumulation order over
 * the keys, not by a final rounding, so its error is no multiple of plain_err; the floor
 * covers that noise (docs/method.md's section on verification has the measurements). */
double fb_floor_ulps(dtype_t dt)
{
    return dt == DT_FP32 ? 64.0 : 2.0;
}

double fb_row_bound(dtype_t dt, double plain_err, double row_max)
{
    return FB_VERIFY_RATIO * plain_err + fb_floor_ulps(dt) * fb_unit_roundoff(dt) * row_max;
}

/* ---------------------------------------------------------------- the plain implementation */

/* x rounded to dt, as a float. */
static float round_to(float x, dtype_t dt)
{
    switch (dt) {
    case DT_FP16: return fb_f16_to_f32(fb_f32_to_f16(x));
    case DT_BF16: return fb_bf16_to_f32(fb_f32_to_bf16(x));
    case DT_FP32: break;
    }
    return x;
}

/* The plain row in float arithmetic, one rounding per operation in this order, as
 * kernels/ref_attn.k computes it (ISO C: no multiply-add is contracted into an FMA). */
void fb_plain_row(const attn_problem *p, const void *q, const void *k, const void *v, int b, int h, int i, float *o)
{
    const shape_t *s = &p->s;
    const size_t d = (size_t)s->d;
    int sq, skv;
    size_t q0, k0;
    seq_info(s, b, &sq, &skv, &q0, &k0);
    const long nvis = visible_keys(sq, skv, s->causal, i);
    for (size_t x = 0; x < d; x++) o[x] = 0.0f;
    if (nvis <= 0) return;
    const int kh = h / (s->hq / s->hkv);
    size_t qoff, kvbase;
    if (shape_ragged(s)) {
        qoff = ((size_t)h * (size_t)shape_total_q(s) + q0 + (size_t)i) * d;
        kvbase = ((size_t)kh * (size_t)shape_total_kv(s) + k0) * d;
    } else {
        qoff = (((size_t)b * (size_t)s->hq + (size_t)h) * (size_t)s->sq + (size_t)i) * d;
        kvbase = ((size_t)b * (size_t)s->hkv + (size_t)kh) * (size_t)s->skv * d;
    }
    const float scale = (float)p->scale;
    float *qrow = malloc(d * sizeof *qrow), *sc = malloc((size_t)nvis * sizeof *sc);
    if (!qrow || !sc) { /* no memory: a row no kernel can match, never a quiet pass */
        for (size_t x = 0; x < d; x++) o[x] = NAN;
        free(qrow);
        free(sc);
        return;
    }
    for (size_t x = 0; x < d; x++) qrow[x] = (float)fb_load(q, qoff + x, p->dt);
    float m = -INFINITY;
    for (long j = 0; j < nvis; j++) {
        float dot = 0.0f;
        for (size_t x = 0; x < d; x++) dot += qrow[x] * (float)fb_load(k, kvbase + (size_t)j * d + x, p->dt);
        sc[j] = dot * scale;
        if (sc[j] > m) m = sc[j];
    }
    float l = 0.0f;
    for (long j = 0; j < nvis; j++) {
        const float pj = expf(sc[j] - m);
        const float pr = round_to(pj, p->dt);
        l += pj;
        for (size_t x = 0; x < d; x++) o[x] += pr * (float)fb_load(v, kvbase + (size_t)j * d + x, p->dt);
    }
    for (size_t x = 0; x < d; x++) o[x] = round_to(o[x] / l, p->dt);
    free(qrow);
    free(sc);
}
