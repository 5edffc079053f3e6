/* test_refcheck.c: the 16-bit conversions (exhaustively, and against a slow reference
 * on millions of floats), the random inputs, the double-precision reference on cases
 * that can be worked out by hand, the plain in-precision row, fb_verify's failure
 * detection, the spot check of a reference made elsewhere, and the rule, checked against
 * a simulated realistic 16-bit kernel (passes with margin) and simulated buggy ones (fail). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refcheck.h"

/* ------------------------------------------------------------------ helpers */

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static uint64_t test_rng(uint64_t *s) /* splitmix64, independent of the library's */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int f16_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
static int bf16_is_nan(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f); }

/* Exact value of a 16-bit pattern from its fields (not via the code under test). */
static double f16_value(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

static double bf16_value(uint16_t h)
{
    int e = (h >> 7) & 0xff, m = h & 0x7f;
    double v = e == 0 ? ldexp(m, -133) : e == 255 ? (m ? NAN : INFINITY) : ldexp(128 + m, e - 134);
    return (h & 0x8000) ? -v : v;
}

/* Slow reference rounding: the nearest of the sorted positive values (in double), ties
 * to the even pattern; inf stands in as the next value after the largest finite one
 * (2^16 for fp16, 2^128 for bf16), which is how IEEE rounding decides overflow. */
typedef struct { double *val; size_t n; } table16; /* val[i] = value of pattern i */

static table16 make_table(int bf)
{
    table16 t;
    t.n = bf ? 0x7f81 : 0x7c01;
    t.val = malloc(t.n * sizeof *t.val);
    for (size_t i = 0; i + 1 < t.n; i++) t.val[i] = bf ? bf16_value((uint16_t)i) : f16_value((uint16_t)i);
    t.val[t.n - 1] = bf ? ldexp(1, 128) : ldexp(1, 16);
    return t;
}

static uint16_t ref_round(const table16 *t, float f)
{
    uint16_t sign = (fbits(f) >> 16) & 0x8000;
    double a = fabs((double)f);
    if (a >= t->val[t->n - 1]) return sign | (uint16_t)(t->n - 1);
    size_t lo = 0, hi = t->n - 1; /* val[lo] <= a < val[hi] */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (t->val[mid] <= a) lo = mid; else hi = mid;
    }
    double dlo = a - t->val[lo], dhi = t->val[hi] - a;
    size_t r = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) ? hi : lo);
    return sign | (uint16_t)r;
}

static attn_problem problem(int batch, int hq, int hkv, int sq, int skv, int d, int causal,
                            dtype_t dt)
{
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.s.batch = batch; p.s.hq = hq; p.s.hkv = hkv; p.s.sq = sq; p.s.skv = skv; p.s.d = d;
    p.s.causal = causal;
    p.dt = dt;
    p.scale = 1.0 / sqrt((double)d);
    return p;
}

static size_t nq(const attn_problem *p) { return (size_t)p->s.batch * p->s.hq * p->s.sq * p->s.d; }
static size_t nkv(const attn_problem *p) { return (size_t)p->s.batch * p->s.hkv * p->s.skv * p->s.d; }
static size_t nrows(const attn_problem *p) { return (size_t)p->s.batch * p->s.hq * p->s.sq; }

typedef struct { attn_problem p; void *q, *k, *v, *o; float *lse; } case_t;

static case_t make_case(attn_problem p, uint64_t seed)
{
    case_t c;
    c.p = p;
    size_t es = dtype_size(p.dt);
    c.q = malloc(nq(&p) * es);
    c.k = malloc(nkv(&p) * es);
    c.v = malloc(nkv(&p) * es);
    c.o = malloc(nq(&p) * es);
    c.lse = malloc(nrows(&p) * sizeof *c.lse);
    assert_non_null(c.q); assert_non_null(c.k); assert_non_null(c.v);
    assert_non_null(c.o); assert_non_null(c.lse);
    fb_fill_random(c.q, nq(&p), p.dt, seed * 3 + 1);
    fb_fill_random(c.k, nkv(&p), p.dt, seed * 3 + 2);
    fb_fill_random(c.v, nkv(&p), p.dt, seed * 3 + 3);
    fb_poison(c.o, nq(&p), p.dt);
    fb_poison_f32(c.lse, nrows(&p));
    return c;
}

static void free_case(case_t *c) { free(c->q); free(c->k); free(c->v); free(c->o); free(c->lse); }

/* The exact answer, rounded to the dtype. */
static void exact_output(case_t *c)
{
    const shape_t *s = &c->p.s;
    double *o = malloc((size_t)s->d * sizeof *o), lse;
    size_t r = 0;
    for (int b = 0; b < s->batch; b++)
        for (int h = 0; h < s->hq; h++)
            for (int i = 0; i < s->sq; i++, r++) {
                fb_ref_row(&c->p, c->q, c->k, c->v, b, h, i, o, &lse);
                for (int x = 0; x < s->d; x++) fb_store(c->o, r * s->d + x, c->p.dt, o[x]);
                c->lse[r] = (float)lse;
            }
    free(o);
}

static size_t elem(const shape_t *s, int b, int h, int i, int x)
{
    return (((size_t)b * s->hq + h) * s->sq + i) * s->d + x;
}

/* ------------------------------------------------------------------ conversions */

static void test_f16_exhaustive_roundtrip(void **state)
{
    (void)state;
    for (uint32_t u = 0; u < 65536; u++) {
        uint16_t h = (uint16_t)u;
        float f = fb_f16_to_f32(h);
        double want = f16_value(h);
        uint16_t back = fb_f32_to_f16(f);
        if (f16_is_nan(h)) {
            assert_true(isnan(f));
            assert_true(f16_is_nan(back));
            assert_int_equal(fbits(f) & 0x400000u, 0x400000u);        /* quiet */
            assert_int_equal(back & 0x8000, h & 0x8000);               /* sign kept */
            if (h & 0x200) assert_int_equal(back, h);                  /* qNaN: exact */
            else assert_int_equal(back, h | 0x200);                    /* sNaN: quieted */
        } else {
            if ((double)f != want) { print_error("f16 %04x -> %g want %g\n", h, f, want); fail(); }
            assert_int_equal(signbit(f) != 0, (h & 0x8000) != 0);
            if (back != h) { print_error("f16 %04x -> %a -> %04x\n", h, f, back); fail(); }
        }
    }
}

static void test_bf16_exhaustive_roundtrip(void **state)
{
    (void)state;
    for (uint32_t u = 0; u < 65536; u++) {
        uint16_t h = (uint16_t)u;
        float f = fb_bf16_to_f32(h);
        uint16_t back = fb_f32_to_bf16(f);
        if (bf16_is_nan(h)) {
            assert_true(isnan(f));
            assert_int_equal(fbits(f) & 0x400000u, 0x400000u);        /* quiet */
            assert_int_equal(fbits(f) >> 16, h | 0x40);                /* payload, sign kept */
            assert_true(bf16_is_nan(back));
            assert_int_equal(back, h | 0x40);
        } else {
            if ((double)f != bf16_value(h)) { print_error("bf16 %04x -> %g\n", h, f); fail(); }
            if (back != h) { print_error("bf16 %04x -> %a -> %04x\n", h, f, back); fail(); }
        }
    }
}

static void test_f16_known_values(void **state)
{
    (void)state;
    assert_int_equal(fb_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(fb_f32_to_f16(-2.0f), 0xc000);
    assert_int_equal(fb_f32_to_f16(0.1f), 0x2e66);
    assert_int_equal(fb_f32_to_f16(-0.0f), 0x8000);
    assert_int_equal(fb_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);          /* tie -> even */
    assert_int_equal(fb_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);      /* tie -> even (up) */
    assert_int_equal(fb_f32_to_f16(nextafterf(1.0f + 0x1p-11f, 2)), 0x3c01);
    assert_int_equal(fb_f32_to_f16(65504.0f), 0x7bff);                 /* max */
    assert_int_equal(fb_f32_to_f16(65519.996f), 0x7bff);
    assert_int_equal(fb_f32_to_f16(65520.0f), 0x7c00);                 /* overflow tie */
    assert_int_equal(fb_f32_to_f16(-1e10f), 0xfc00);
    assert_int_equal(fb_f32_to_f16(INFINITY), 0x7c00);
    assert_int_equal(fb_f32_to_f16(FLT_MAX), 0x7c00);
    assert_int_equal(fb_f32_to_f16(0x1p-14f), 0x0400);                 /* smallest normal */
    assert_int_equal(fb_f32_to_f16(0x1p-24f), 0x0001);                 /* smallest subnormal */
    assert_int_equal(fb_f32_to_f16(-0x1p-24f), 0x8001);
    assert_int_equal(fb_f32_to_f16(0x1p-25f), 0x0000);                 /* tie -> 0 */
    assert_int_equal(fb_f32_to_f16(nextafterf(0x1p-25f, 1)), 0x0001);
    assert_int_equal(fb_f32_to_f16(1.5f * 0x1p-24f), 0x0002);          /* tie -> even */
    assert_int_equal(fb_f32_to_f16(2.5f * 0x1p-24f), 0x0002);
    assert_int_equal(fb_f32_to_f16(1023.5f * 0x1p-24f), 0x0400);       /* carry to normal */
    assert_int_equal(fb_f32_to_f16(FLT_TRUE_MIN), 0x0000);
    assert_true(f16_is_nan(fb_f32_to_f16(NAN)));
    assert_true(f16_is_nan(fb_f32_to_f16(bitsf(0x7f800001u))));        /* sNaN, low payload */
    assert_true(f16_is_nan(fb_f32_to_f16(bitsf(0xffc00000u))));
    assert_int_equal(fb_f32_to_f16(bitsf(0xffc00000u)) & 0x8000, 0x8000);
    assert_true(fb_f16_to_f32(0x0001) == 0x1p-24f);
    assert_true(fb_f16_to_f32(0x03ff) == 1023 * 0x1p-24f);
    assert_true(fb_f16_to_f32(0x7bff) == 65504.0f);
    assert_true(isinf(fb_f16_to_f32(0xfc00)) && fb_f16_to_f32(0xfc00) < 0);
}

static void test_bf16_known_values(void **state)
{
    (void)state;
    assert_int_equal(fb_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(fb_f32_to_bf16(-1.0f), 0xbf80);
    assert_int_equal(fb_f32_to_bf16(3.14159265f), 0x4049);
    assert_int_equal(fb_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);          /* tie -> even */
    assert_int_equal(fb_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
    assert_int_equal(fb_f32_to_bf16(FLT_MAX), 0x7f80);                 /* rounds to inf */
    assert_int_equal(fb_f32_to_bf16(bitsf(0x7f7f7fffu)), 0x7f7f);      /* largest finite */
    assert_int_equal(fb_f32_to_bf16(bitsf(0x7f7f8000u)), 0x7f80);      /* tie, odd -> inf */
    assert_int_equal(fb_f32_to_bf16(-INFINITY), 0xff80);
    assert_int_equal(fb_f32_to_bf16(FLT_TRUE_MIN), 0x0000);
    assert_int_equal(fb_f32_to_bf16(bitsf(0x00008000u)), 0x0000);      /* subnormal tie */
    assert_int_equal(fb_f32_to_bf16(bitsf(0x00018000u)), 0x0002);
    assert_int_equal(fb_f32_to_bf16(bitsf(0x00008001u)), 0x0001);
    assert_int_equal(fb_f32_to_bf16(-0.0f), 0x8000);
    assert_true(bf16_is_nan(fb_f32_to_bf16(NAN)));
    assert_true(bf16_is_nan(fb_f32_to_bf16(bitsf(0x7f800001u))));      /* payload only low */
    assert_true(bf16_is_nan(fb_f32_to_bf16(bitsf(0xff800001u))));
}

/* float -> 16 bit against the slow reference: all ties between neighbours (and the
 * floats either side of each), then millions of random floats. */
static void check_against_ref(int bf)
{
    table16 t = make_table(bf);
    uint16_t (*conv)(float) = bf ? fb_f32_to_bf16 : fb_f32_to_f16;
    size_t checked = 0;
    for (size_t i = 0; i + 1 < t.n; i++) {
        float mid = (float)((t.val[i] + t.val[i + 1]) / 2); /* exact: needs <= 12 bits */
        assert_true((double)mid == (t.val[i] + t.val[i + 1]) / 2);
        float cand[5] = {(float)t.val[i], mid, nextafterf(mid, 0), nextafterf(mid, INFINITY),
                         -mid};
        for (int c = 0; c < 5; c++, checked++) {
            uint16_t got = conv(cand[c]), want = ref_round(&t, cand[c]);
            if (got != want) {
                print_error("%s(%a) = %04x, want %04x\n", bf ? "bf16" : "f16", cand[c], got, want);
                fail();
            }
        }
    }
    uint64_t s = 12345 + (uint64_t)bf;
    for (int n = 0; n < 3000000; n++, checked++) {
        uint64_t r = test_rng(&s);
        float f;
        if (n & 1) {
            f = bitsf((uint32_t)r); /* any bit pattern */
        } else {                    /* magnitudes around the 16-bit range */
            int e = (int)((r >> 32) % (bf ? 280 : 50)) - (bf ? 140 : 30);
            f = ldexpf(1.0f + (float)(r & 0x7fffff) * 0x1p-23f, e);
            if (r >> 63) f = -f;
        }
        uint16_t got = conv(f);
        if (isnan(f)) {
            assert_true(bf ? bf16_is_nan(got) : f16_is_nan(got));
            continue;
        }
        uint16_t want = ref_round(&t, f);
        if (got != want) {
            print_error("%s(%a) = %04x, want %04x\n", bf ? "bf16" : "f16", f, got, want);
            fail();
        }
    }
    assert_true(checked > 3000000);
    free(t.val);
}

static void test_f16_vs_reference(void **state) { (void)state; check_against_ref(0); }
static void test_bf16_vs_reference(void **state) { (void)state; check_against_ref(1); }

static void test_load_store(void **state)
{
    (void)state;
    uint16_t h[2];
    float f[2];
    fb_store(h, 1, DT_FP16, 0.333333333);
    assert_int_equal(h[1], 0x3555);
    assert_true(fb_load(h, 1, DT_FP16) == (double)fb_f16_to_f32(0x3555));
    fb_store(h, 0, DT_BF16, -1.5);
    assert_int_equal(h[0], 0xbfc0);
    assert_true(fb_load(h, 0, DT_BF16) == -1.5);
    fb_store(f, 1, DT_FP32, 0.1);
    assert_true(f[1] == 0.1f);
    assert_true(fb_load(f, 1, DT_FP32) == (double)0.1f);
}

/* ------------------------------------------------------------------ random inputs */

/* An independent implementation of the documented generator (splitmix64 streams per
 * chunk of 65536 elements seeded from (seed, chunk), polar Box-Muller) with the libm log:
 * the library's portable log must agree with it. N spans several chunks. */
static void test_fill_random_matches_box_muller(void **state)
{
    (void)state;
    enum { N = 200000, CHUNK = 65536 };
    float *a = malloc(N * sizeof *a);
    fb_fill_random(a, N, DT_FP32, 7);
    uint64_t s = 0;
    size_t i = 0, differ = 0;
    while (i < N) {
        if (i % CHUNK == 0) {
            s = 7ull ^ (0x9E3779B97F4A7C15ull * (uint64_t)(i / CHUNK + 1));
            test_rng(&s);
        }
        double u, v, q;
        do {
            u = 2.0 * ((double)(test_rng(&s) >> 11) * 0x1p-53) - 1.0;
            v = 2.0 * ((double)(test_rng(&s) >> 11) * 0x1p-53) - 1.0;
            q = u * u + v * v;
        } while (q >= 1.0 || q == 0.0);
        double f = sqrt(-2.0 * log(q) / q);
        double z[2] = {u * f, v * f};
        for (int k = 0; k < 2 && i < N && (k == 0 || i % CHUNK != 0); k++, i++) {
            float want = (float)fmin(4.0, fmax(-4.0, z[k]));
            if (a[i] != want) {
                differ++;
                assert_true(fabsf(a[i] - want) <= 2 * (nextafterf(fabsf(want), INFINITY) - fabsf(want)));
            }
        }
    }
    assert_true(differ < N / 1000);
    free(a);
}

static void test_fill_random_properties(void **state)
{
    (void)state;
    enum { N = 1000000 };
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    fb_fill_random(a, N, DT_FP32, 42);
    fb_fill_random(b, N, DT_FP32, 42);
    assert_memory_equal(a, b, N * sizeof *a);          /* same seed, same bits */
    fb_fill_random(b, 11, DT_FP32, 42);
    assert_memory_equal(a, b, 11 * sizeof *a);         /* prefix independent of n */
    fb_fill_random(b, N, DT_FP32, 43);
    size_t same = 0;
    for (size_t i = 0; i < N; i++) same += a[i] == b[i];
    assert_true(same < 100);                           /* another seed, another stream */
    double sum = 0, sum2 = 0;
    size_t in1 = 0, clipped = 0;
    float lo = 0, hi = 0;
    for (size_t i = 0; i < N; i++) {
        sum += a[i]; sum2 += (double)a[i] * a[i];
        in1 += fabsf(a[i]) < 1;
        clipped += fabsf(a[i]) == 4;
        lo = fminf(lo, a[i]); hi = fmaxf(hi, a[i]);
    }
    double mean = sum / N, sd = sqrt(sum2 / N - mean * mean);
    assert_true(fabs(mean) < 0.005);
    assert_true(fabs(sd - 1.0) < 0.005);
    assert_true(fabs((double)in1 / N - 0.682689) < 0.003);
    assert_true(lo == -4.0f && hi == 4.0f);
    assert_true(clipped > 20 && clipped < 120);        /* P(|z| > 4) = 6.3e-5 */
    /* a pinned checksum: the same bits on every machine and every future build */
    uint64_t hsum = 1469598103934665603ull;
    for (size_t i = 0; i < 4096; i++) { hsum ^= fbits(a[i]); hsum *= 1099511628211ull; }
    print_message("fill_random(seed 42) checksum %016llx, a[0..2] = %a %a %a\n",
                  (unsigned long long)hsum, a[0], a[1], a[2]);
    assert_true(hsum == 0x50dd31b232989322ull);
    assert_true(a[0] == -0x1.47f4bp+0f && a[1] == -0x1.cd98e8p-1f && a[2] == -0x1.34295ap-1f);
    free(a); free(b);
}

static void test_fill_random_16bit(void **state)
{
    (void)state;
    enum { N = 100000 };
    float *f = malloc(N * sizeof *f);
    uint16_t *h = malloc(N * sizeof *h), *g = malloc(N * sizeof *g);
    fb_fill_random(f, N, DT_FP32, 9);
    fb_fill_random(h, N, DT_FP16, 9);
    fb_fill_random(g, N, DT_BF16, 9);
    for (size_t i = 0; i < N; i++) { /* the same stream, rounded to the dtype */
        assert_int_equal(h[i], fb_f32_to_f16(f[i]));
        assert_int_equal(g[i], fb_f32_to_bf16(f[i]));
    }
    free(f); free(h); free(g);
}

/* ------------------------------------------------------------------ reference */

static void test_ref_one_key(void **state)
{
    (void)state;
    attn_problem p = problem(1, 1, 1, 1, 1, 4, 0, DT_FP32);
    p.scale = 0.5;
    const float q[4] = {1, 2, 3, 4}, k[4] = {0.5f, -1, 2, 0.25f}, v[4] = {7, -3, 0.125f, 9};
    double o[4], lse;
    fb_ref_row(&p, q, k, v, 0, 0, 0, o, &lse);
    for (int x = 0; x < 4; x++) assert_true(o[x] == v[x]);
    assert_true(fabs(lse - 0.5 * (0.5 - 2 + 6 + 1)) < 1e-15); /* lse of one score = score */
}

static void test_ref_equal_scores_mean(void **state)
{
    (void)state;
    attn_problem p = problem(1, 1, 1, 1, 3, 2, 0, DT_FP32);
    const float q[2] = {1, -1};
    const float k[6] = {2, 1, 3, 2, -1, -2};  /* all three scores are 1 * scale */
    const float v[6] = {1, 10, 2, 20, 6, -3};
    double o[2], lse;
    fb_ref_row(&p, q, k, v, 0, 0, 0, o, &lse);
    assert_true(fabs(o[0] - 3.0) < 1e-15);
    assert_true(fabs(o[1] - 9.0) < 1e-14);
    assert_true(fabs(lse - (p.scale + log(3.0))) < 1e-15);
}

/* scale changes the weights: scores 0 and scale * 1 -> p = (1, e^scale) / (1 + e^scale) */
static void test_ref_scale(void **state)
{
    (void)state;
    attn_problem p = problem(1, 1, 1, 1, 2, 1, 0, DT_FP32);
    const float q[1] = {1}, k[2] = {0, 1}, v[2] = {0, 1};
    const double scales[] = {log(3.0), 1.0, 0.125, 4.0};
    for (int t = 0; t < 4; t++) {
        p.scale = scales[t];
        double o, lse, e = exp(scales[t]);
        fb_ref_row(&p, q, k, v, 0, 0, 0, &o, &lse);
        assert_true(fabs(o - e / (1 + e)) < 1e-15);
        assert_true(fabs(lse - log(1 + e)) < 1e-15);
    }
    p.scale = log(3.0);
    double o, lse;
    fb_ref_row(&p, q, k, v, 0, 0, 0, &o, &lse);
    assert_true(fabs(o - 0.75) < 1e-15 && fabs(lse - log(4.0)) < 1e-15);
}

/* Causal with sq > skv: bottom-right alignment masks the first sq - skv rows entirely. */
static void test_ref_causal_bottom_right(void **state)
{
    (void)state;
    attn_problem p = problem(1, 1, 1, 5, 3, 1, 1, DT_FP32);
    p.scale = 1.0;
    const float q[5] = {1, 1, 1, 1, 1}, k[3] = {0, 0, 0}, v[3] = {1, 2, 6};
    double o, lse;
    for (int i = 0; i < 2; i++) { /* row i sees keys j <= i - 2: none */
        o = 99;
        fb_ref_row(&p, q, k, v, 0, 0, i, &o, &lse);
        assert_true(o == 0.0);
        assert_true(isinf(lse) && lse < 0);
    }
    fb_ref_row(&p, q, k, v, 0, 0, 2, &o, &lse); /* key 0 */
    assert_true(o == 1.0 && lse == 0.0);
    fb_ref_row(&p, q, k, v, 0, 0, 3, &o, &lse); /* keys 0, 1 */
    assert_true(fabs(o - 1.5) < 1e-15 && fabs(lse - log(2.0)) < 1e-15);
    fb_ref_row(&p, q, k, v, 0, 0, 4, &o, &lse); /* all */
    assert_true(fabs(o - 3.0) < 1e-15 && fabs(lse - log(3.0)) < 1e-15);

    /* sq < skv (decode-like): sq = 1 sees the whole cache; sq = 2 of skv = 3: 2 then 3 */
    p = problem(1, 1, 1, 1, 3, 1, 1, DT_FP32);
    fb_ref_row(&p, q, k, v, 0, 0, 0, &o, &lse);
    assert_true(fabs(o - 3.0) < 1e-15);
    p.s.sq = 2;
    fb_ref_row(&p, q, k, v, 0, 0, 0, &o, &lse);
    assert_true(fabs(o - 1.5) < 1e-15);
    fb_ref_row(&p, q, k, v, 0, 0, 1, &o, &lse);
    assert_true(fabs(o - 3.0) < 1e-15);
    /* non-causal sq > skv: every row sees every key */
    p = problem(1, 1, 1, 5, 3, 1, 0, DT_FP32);
    fb_ref_row(&p, q, k, v, 0, 0, 0, &o, &lse);
    assert_true(fabs(o - 3.0) < 1e-15);
    /* skv = 0: nothing to see */
    p = problem(1, 1, 1, 1, 0, 1, 0, DT_FP32);
    fb_ref_row(&p, q, k, v, 0, 0, 0, &o, &lse);
    assert_true(o == 0.0 && isinf(lse) && lse < 0);
}

/* GQA: hq = 6, hkv = 2 (groups of 3), batch 2. Each (b, kv head) has constant V rows
 * 10*b + kvh + 1, so o tells which KV head was read. */
static void test_ref_gqa_mapping(void **state)
{
    (void)state;
    enum { B = 2, HQ = 6, HKV = 2, SKV = 4, D = 3 };
    attn_problem p = problem(B, HQ, HKV, 2, SKV, D, 0, DT_BF16);
    uint16_t q[B * HQ * 2 * D], k[B * HKV * SKV * D], v[B * HKV * SKV * D];
    fb_fill_random(q, B * HQ * 2 * D, DT_BF16, 1);
    fb_fill_random(k, B * HKV * SKV * D, DT_BF16, 2);
    for (int b = 0; b < B; b++)
        for (int g = 0; g < HKV; g++)
            for (int j = 0; j < SKV * D; j++)
                fb_store(v, ((size_t)b * HKV + g) * SKV * D + j, DT_BF16, 10 * b + g + 1);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++) {
            double o[D], lse;
            fb_ref_row(&p, q, k, v, b, h, 1, o, &lse);
            for (int x = 0; x < D; x++) assert_true(fabs(o[x] - (10 * b + h / 3 + 1)) < 1e-12);
        }
    /* MQA: every query head reads head 0 */
    p.s.hkv = 1;
    for (int h = 0; h < HQ; h++) {
        double o[D], lse;
        fb_ref_row(&p, q, k, v, 1, h, 0, o, &lse);
        /* with hkv = 1, batch 1's K/V start at (1 * 1) * SKV * D: the old head 1 of b=0 */
        for (int x = 0; x < D; x++) assert_true(fabs(o[x] - 2) < 1e-12);
    }
    /* the score side: K heads differ; the row's lse must come from the mapped head */
    p.s.hkv = HKV;
    double o[D], lse, lse_want;
    fb_ref_row(&p, q, k, v, 1, 4, 0, o, &lse); /* b=1, h=4 -> kv head 1 */
    double m = -INFINITY, sc[SKV], sum = 0;
    for (int j = 0; j < SKV; j++) {
        double dot = 0;
        for (int x = 0; x < D; x++)
            dot += fb_load(q, ((size_t)(1 * HQ + 4) * 2 + 0) * D + x, DT_BF16) *
                   fb_load(k, (((size_t)1 * HKV + 1) * SKV + j) * D + x, DT_BF16);
        sc[j] = dot / sqrt(3.0);
        m = fmax(m, sc[j]);
    }
    for (int j = 0; j < SKV; j++) sum += exp(sc[j] - m);
    lse_want = m + log(sum);
    assert_true(fabs(lse - lse_want) < 1e-12);
}

/* A general row against a direct evaluation of the formula in the test. */
static void test_ref_general_row(void **state)
{
    (void)state;
    attn_problem p = problem(2, 2, 1, 7, 9, 5, 1, DT_FP16);
    case_t c = make_case(p, 5);
    double o[5], lse;
    fb_ref_row(&c.p, c.q, c.k, c.v, 1, 1, 3, o, &lse);
    /* row 3 sees keys 0..5 (3 + 9 - 7 = 5) */
    double s[6], w = 0, want[5] = {0};
    for (int j = 0; j < 6; j++) {
        s[j] = 0;
        for (int x = 0; x < 5; x++)
            s[j] += fb_load(c.q, elem(&p.s, 1, 1, 3, x), DT_FP16) *
                    fb_load(c.k, ((size_t)1 * 9 + j) * 5 + x, DT_FP16);
        s[j] /= sqrt(5.0);
    }
    for (int j = 0; j < 6; j++) {
        w += exp(s[j]);
        for (int x = 0; x < 5; x++) want[x] += exp(s[j]) * fb_load(c.v, ((size_t)1 * 9 + j) * 5 + x, DT_FP16);
    }
    for (int x = 0; x < 5; x++) assert_true(fabs(o[x] - want[x] / w) < 1e-13);
    assert_true(fabs(lse - log(w)) < 1e-13);
    free_case(&c);
}

/* ------------------------------------------------------------------ the plain implementation */

/* The plain row on cases worked out by hand: one visible key gives that V row exactly (P is
 * 1), two keys the rounded mix, a row with no key zeros; fp16's P rounds into subnormals. */
static void test_plain_row(void **state)
{
    (void)state;
    const dtype_t dts[] = {DT_FP32, DT_FP16, DT_BF16};
    for (int t = 0; t < 3; t++) {
        attn_problem p = problem(1, 1, 1, 4, 2, 3, 1, dts[t]); /* causal, Sq > Skv: rows 0, 1 see no key */
        case_t c = make_case(p, 9 + t);
        float o[3];
        fb_plain_row(&c.p, c.q, c.k, c.v, 0, 0, 0, o);
        for (int x = 0; x < 3; x++) assert_true(o[x] == 0.0f);
        fb_plain_row(&c.p, c.q, c.k, c.v, 0, 0, 2, o); /* key 0 alone: V row 0 */
        for (int x = 0; x < 3; x++) assert_true(o[x] == (float)fb_load(c.v, (size_t)x, dts[t]));
        fb_plain_row(&c.p, c.q, c.k, c.v, 0, 0, 3, o); /* keys 0, 1, by hand in float */
        float sc[2];
        for (int j = 0; j < 2; j++) {
            float dot = 0.0f;
            for (int x = 0; x < 3; x++)
                dot += (float)fb_load(c.q, (size_t)(3 * 3 + x), dts[t]) * (float)fb_load(c.k, (size_t)(j * 3 + x), dts[t]);
            sc[j] = dot * (float)c.p.scale;
        }
        const float m = fmaxf(sc[0], sc[1]);
        float l = 0.0f, acc[3] = {0};
        for (int j = 0; j < 2; j++) {
            const float pj = expf(sc[j] - m);
            float rounded = pj;
            if (dts[t] == DT_FP16) rounded = fb_f16_to_f32(fb_f32_to_f16(pj));
            if (dts[t] == DT_BF16) rounded = fb_bf16_to_f32(fb_f32_to_bf16(pj));
            l += pj;
            for (int x = 0; x < 3; x++) acc[x] += rounded * (float)fb_load(c.v, (size_t)(j * 3 + x), dts[t]);
        }
        for (int x = 0; x < 3; x++) {
            float want = acc[x] / l;
            if (dts[t] == DT_FP16) want = fb_f16_to_f32(fb_f32_to_f16(want));
            if (dts[t] == DT_BF16) want = fb_bf16_to_f32(fb_f32_to_bf16(want));
            assert_true(o[x] == want);
        }
        free_case(&c);
    }
}

/* The rule's numbers: twice the plain error plus the floor at the row's largest output. */
static void test_row_bound(void **state)
{
    (void)state;
    assert_true(fb_unit_roundoff(DT_BF16) == ldexp(1, -8) && fb_unit_roundoff(DT_FP16) == ldexp(1, -11) &&
                fb_unit_roundoff(DT_FP32) == ldexp(1, -24));
    assert_true(FB_VERIFY_RATIO == 2.0);
    const dtype_t dts[] = {DT_FP32, DT_FP16, DT_BF16};
    for (int t = 0; t < 3; t++) {
        const double u = fb_unit_roundoff(dts[t]), f = fb_floor_ulps(dts[t]);
        assert_true(fb_row_bound(dts[t], 0, 0) == 0); /* a row with no key: exactly zero */
        assert_true(fabs(fb_row_bound(dts[t], 1e-3, 0.5) - (2e-3 + f * u * 0.5)) < 1e-15);
    }
}

/* ------------------------------------------------------------------ verify */

/* The bound of row r, from a CPU reference of the case. */
static double row_bound(const case_t *c, size_t r)
{
    fb_reference ref = {0};
    assert_int_equal(fb_reference_cpu(&c->p, c->q, c->k, c->v, 0, &ref), 0);
    const double b = ref.bound[r];
    fb_reference_free(&ref);
    return b;
}

static void test_verify_exact_passes(void **state)
{
    (void)state;
    const dtype_t dts[] = {DT_FP32, DT_FP16, DT_BF16};
    for (int t = 0; t < 3; t++) {
        attn_problem p = problem(2, 4, 2, 70, 90, 32, t != 1, dts[t]);
        case_t c = make_case(p, 11 + t);
        verify_result r;
        assert_int_equal(fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r), 0);
        assert_false(r.pass);              /* all poison */
        assert_int_equal(r.unwritten, nq(&p));
        exact_output(&c);
        assert_int_equal(fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r), 0);
        if (!r.pass) print_error("%s: %s\n", dtype_name(dts[t]), r.reason);
        assert_true(r.pass);
        assert_string_equal(r.reason, "");
        assert_int_equal(r.rows_total, nrows(&p));
        assert_int_equal(r.rows_checked, nrows(&p));
        assert_int_equal(r.unwritten, 0);
        assert_int_equal(r.nan_count, 0);
        assert_int_equal(r.bad_elems, 0);
        assert_true(r.worst_ratio <= 1);
        assert_true(r.lse_max_err < 1e-5);
        double atol, rtol, l2;
        fb_tolerances(dts[t], &atol, &rtol, &l2);
        assert_true(r.l2_tol == l2);
        if (dts[t] == DT_FP32) assert_true(r.max_abs_err < 1e-6);
        /* lse NULL: not checked */
        assert_int_equal(fb_verify(&c.p, c.q, c.k, c.v, c.o, NULL, &r), 0);
        assert_true(r.pass && r.lse_max_err == 0);
        free_case(&c);
    }
}

static void test_verify_unwritten(void **state)
{
    (void)state;
    attn_problem p = problem(1, 2, 2, 300, 40, 16, 0, DT_FP16);
    case_t c = make_case(p, 3);
    exact_output(&c);
    uint16_t *o = c.o;
    for (int x = 0; x < 12; x++) o[elem(&p.s, 0, 1, 299, x)] = 0x7E5A; /* the poison */
    verify_result r;
    fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
    assert_false(r.pass);
    assert_int_equal(r.unwritten, 12);
    assert_int_equal(r.nan_count, 0);
    assert_non_null(strstr(r.reason, "12 of 9600 outputs unwritten (first at b=0 h=1 i=299 d=0)"));
    /* fp32 poison is one exact NaN pattern; another NaN is "computed" */
    attn_problem p32 = problem(1, 1, 1, 8, 8, 4, 1, DT_FP32);
    case_t d = make_case(p32, 4);
    exact_output(&d);
    fb_poison_f32((float *)d.o + 5, 1);
    uint32_t bits;
    memcpy(&bits, (float *)d.o + 5, 4);
    assert_int_equal(bits, 0x7FC0DEADu);
    fb_verify(&d.p, d.q, d.k, d.v, d.o, d.lse, &r);
    assert_false(r.pass);
    assert_int_equal(r.unwritten, 1);
    assert_int_equal(r.nan_count, 0);
    ((float *)d.o)[5] = bitsf(0x7FC0DEAEu); /* near-poison NaN: a kernel's NaN */
    fb_verify(&d.p, d.q, d.k, d.v, d.o, d.lse, &r);
    assert_false(r.pass);
    assert_int_equal(r.unwritten, 0);
    assert_int_equal(r.nan_count, 1);
    /* unwritten lse */
    exact_output(&d);
    fb_poison_f32(d.lse + 7, 1);
    fb_verify(&d.p, d.q, d.k, d.v, d.o, d.lse, &r);
    assert_false(r.pass);
    assert_non_null(strstr(r.reason, "lse"));
    free_case(&c); free_case(&d);
}

static void test_verify_nan(void **state)
{
    (void)state;
    const dtype_t dts[] = {DT_FP32, DT_FP16, DT_BF16};
    for (int t = 0; t < 3; t++) {
        attn_problem p = problem(1, 2, 1, 33, 50, 32, 1, dts[t]);
        case_t c = make_case(p, 21);
        exact_output(&c);
        volatile double zero = 0;
        fb_store(c.o, 17, dts[t], zero / zero);
        fb_store(c.o, 500, dts[t], INFINITY);
        fb_store(c.o, 900, dts[t], -INFINITY);
        verify_result r;
        fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
        assert_false(r.pass);
        assert_int_equal(r.nan_count, 3);
        assert_int_equal(r.unwritten, 0);
        assert_non_null(strstr(r.reason, "3 NaN/inf outputs"));
        free_case(&c);
    }
}

/* One element off by twice its row's bound fails, and the reason names it; a quarter of
 * it passes (the dtype's own rounding of the stored value stays within half the bound). */
static void test_verify_small_error(void **state)
{
    (void)state;
    const dtype_t dts[] = {DT_FP32, DT_FP16, DT_BF16};
    for (int t = 0; t < 3; t++) {
        attn_problem p = problem(1, 2, 2, 64, 64, 64, 0, dts[t]);
        case_t c = make_case(p, 31);
        exact_output(&c);
        size_t e = elem(&p.s, 0, 1, 40, 7);
        double ref[64], lse;
        fb_ref_row(&c.p, c.q, c.k, c.v, 0, 1, 40, ref, &lse);
        const double want = (float)ref[7], tol = row_bound(&c, e / 64);
        fb_store(c.o, e, dts[t], want + 2 * tol);
        double err = fabs(fb_load(c.o, e, dts[t]) - want);
        assert_true(err > tol);
        verify_result r;
        fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
        assert_false(r.pass);
        assert_int_equal(r.bad_elems, 1);
        assert_true(fabs(r.max_abs_err - err) < 1e-12);
        assert_true(fabs(r.worst_ratio - err / tol) < 1e-3 * r.worst_ratio);
        assert_non_null(strstr(r.reason, "1 of 8192 outputs beyond tol"));
        assert_non_null(strstr(r.reason, "at b=0 h=1 i=40 d=7"));
        fb_store(c.o, e, dts[t], want + 0.25 * tol);
        fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
        if (!r.pass) print_error("%s: %s\n", dtype_name(dts[t]), r.reason);
        assert_true(r.pass);
        free_case(&c);
    }
}

static void test_verify_lse(void **state)
{
    (void)state;
    attn_problem p = problem(1, 2, 2, 20, 12, 16, 1, DT_FP16); /* rows 0..7 fully masked */
    case_t c = make_case(p, 41);
    exact_output(&c);
    verify_result r;
    fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
    assert_true(r.pass);
    for (int i = 0; i < 8; i++) {
        assert_true(isinf(c.lse[i]) && c.lse[i] < 0);
        for (int x = 0; x < 16; x++) assert_true(fb_load(c.o, elem(&p.s, 0, 0, i, x), DT_FP16) == 0);
    }
    float good = c.lse[20 + 15];
    c.lse[20 + 15] = good + 5e-4f;      /* within 1e-3 */
    fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
    assert_true(r.pass);
    assert_true(r.lse_max_err > 4e-4 && r.lse_max_err < 6e-4);
    c.lse[20 + 15] = good + 0.01f;      /* wrong */
    fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
    assert_false(r.pass);
    assert_true(fabs(r.lse_max_err - 0.01) < 1e-4);
    assert_non_null(strstr(r.reason, "lse wrong in 1 of 40 rows, worst at b=0 h=1 i=15"));
    c.lse[20 + 15] = good * 0.5f;       /* log2 instead of ln, say */
    fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
    assert_false(r.pass);
    c.lse[20 + 15] = good;
    c.lse[3] = -1e38f;                  /* a kernel's "minus infinity": accepted */
    fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
    assert_true(r.pass);
    c.lse[3] = 0.0f;                    /* empty row with a finite lse: wrong */
    fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
    assert_false(r.pass);
    c.lse[3] = -INFINITY;
    c.lse[30] = -INFINITY;              /* a visible row with -inf: wrong */
    fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
    assert_false(r.pass);
    free_case(&c);
}

/* The spot check of a reference made elsewhere: a wrong row among the mandatory ones (the
 * head and tail rows of the first and last (b, h)) is found for every seed; one outside
 * them for some seeds only, the same answer for the same seed; a wrong LSE or plain error
 * is found too; a right reference passes. */
static void test_spot_check(void **state)
{
    (void)state;
    attn_problem p = problem(2, 3, 3, 300, 64, 32, 0, DT_BF16);
    case_t c = make_case(p, 51);
    fb_reference ref = {0};
    assert_int_equal(fb_reference_cpu(&c.p, c.q, c.k, c.v, 0, &ref), 0);
    char why[256];
    assert_int_equal(fb_reference_spot_check(&ref, c.q, c.k, c.v, 200, 7, 1e-6, why, sizeof why), 0);
    const int must[][3] = {{0, 0, 0}, {0, 0, 299}, {0, 0, 236}, {1, 2, 0}, {1, 2, 299}, {1, 2, 236}};
    for (int m = 0; m < 6; m++) {
        const size_t e = elem(&p.s, must[m][0], must[m][1], must[m][2], 3);
        const float keep = ref.o[e];
        ref.o[e] = keep + 1e-3f;
        for (uint64_t seed = 0; seed < 20; seed++) {
            assert_int_equal(fb_reference_spot_check(&ref, c.q, c.k, c.v, 200, seed, 1e-6, why, sizeof why), 1);
            assert_non_null(strstr(why, "1 of 200 sampled rows disagree with the CPU"));
        }
        ref.o[e] = keep;
    }
    /* i = 235 is just before the tail */
    const size_t e = elem(&p.s, 1, 2, 235, 3);
    ref.o[e] += 1e-3f;
    int found = 0;
    for (uint64_t seed = 0; seed < 60; seed++) {
        const int a = fb_reference_spot_check(&ref, c.q, c.k, c.v, 600, seed, 1e-6, why, sizeof why);
        assert_int_equal(a, fb_reference_spot_check(&ref, c.q, c.k, c.v, 600, seed, 1e-6, why, sizeof why));
        found += a == 1;
    }
    assert_true(found > 0 && found < 60);
    ref.o[e] -= 1e-3f;
    /* a wrong LSE, a plain error far too large: refused */
    const size_t last = nrows(&p) - 1;
    ref.lse[last] += 1e-3f;
    assert_int_equal(fb_reference_spot_check(&ref, c.q, c.k, c.v, 0, 1, 1e-6, why, sizeof why), 1);
    assert_non_null(strstr(why, "LSE at b=1 h=2 i=299"));
    ref.lse[last] -= 1e-3f;
    ref.plain_err[last] = 4 * ref.bound[last];
    assert_int_equal(fb_reference_spot_check(&ref, c.q, c.k, c.v, 0, 1, 1e-6, why, sizeof why), 1);
    assert_non_null(strstr(why, "plain error at b=1 h=2 i=299"));
    fb_reference_free(&ref);
    free_case(&c);
}

/* ------------------------------------------------------------------ tolerances */

/* A simulated kernel, the way flash attention computes: fp32 scores and row statistics,
 * key blocks of 64 with online rescaling, P = exp(s - m) rounded to the dtype before
 * the P*V product, the row sum l from the unrounded P, output rounded to the dtype.
 * Faults: keys >= drop_from are skipped; the output is multiplied by mul and add is
 * added. */
static void sim_kernel(case_t *c, int round_p, int drop_from, double mul, double add)
{
    const shape_t *s = &c->p.s;
    dtype_t dt = c->p.dt;
    int d = s->d, group = s->hq / s->hkv;
    float *q = malloc((size_t)d * sizeof *q), *acc = malloc((size_t)d * sizeof *acc);
    float sc[64];
    size_t r = 0;
    for (int b = 0; b < s->batch; b++)
        for (int h = 0; h < s->hq; h++)
            for (int i = 0; i < s->sq; i++, r++) {
                for (int x = 0; x < d; x++) { q[x] = (float)fb_load(c->q, r * d + x, dt); acc[x] = 0; }
                long nvis = s->causal ? (long)i + s->skv - s->sq + 1 : s->skv;
                if (nvis > s->skv) nvis = s->skv;
                if (nvis > drop_from) nvis = drop_from;
                size_t kv = ((size_t)b * s->hkv + h / group) * s->skv;
                float m = -INFINITY, l = 0;
                for (long j0 = 0; j0 < nvis; j0 += 64) {
                    long n = nvis - j0 < 64 ? nvis - j0 : 64;
                    float bm = -INFINITY;
                    for (long j = 0; j < n; j++) {
                        float dot = 0;
                        for (int x = 0; x < d; x++) dot += q[x] * (float)fb_load(c->k, (kv + j0 + j) * d + x, dt);
                        sc[j] = dot * (float)c->p.scale;
                        bm = fmaxf(bm, sc[j]);
                    }
                    float mn = fmaxf(m, bm), alpha = expf(m - mn);
                    l *= alpha;
                    for (int x = 0; x < d; x++) acc[x] *= alpha;
                    for (long j = 0; j < n; j++) {
                        float pj = expf(sc[j] - mn);
                        l += pj;
                        float pr = !round_p ? pj : dt == DT_FP16 ? fb_f16_to_f32(fb_f32_to_f16(pj))
                                                                 : fb_bf16_to_f32(fb_f32_to_bf16(pj));
                        for (int x = 0; x < d; x++) acc[x] += pr * (float)fb_load(c->v, (kv + j0 + j) * d + x, dt);
                    }
                    m = mn;
                }
                for (int x = 0; x < d; x++) {
                    float ov = nvis > 0 ? acc[x] / l : 0.0f;
                    fb_store(c->o, r * d + x, dt, (double)ov * mul + add);
                }
                c->lse[r] = nvis > 0 ? m + logf(l) : -INFINITY;
            }
    free(q); free(acc);
}

static const int shapes[][7] = {
    /* batch, hq, hkv, sq, skv, d, causal */
    {1, 4, 2, 128, 300, 64, 0},
    {1, 2, 2, 160, 1024, 128, 1},
    {2, 2, 1, 48, 2048, 64, 0},
    {1, 4, 4, 1, 4096, 128, 0},
    {1, 2, 1, 77, 333, 96, 1},
    {1, 2, 2, 64, 64, 256, 0},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* The simulated flash kernel passes on every shape and dtype; its worst element's share of
 * the bound is the rule's margin (printed). */
static void test_tolerances_realistic_kernel_passes(void **state)
{
    (void)state;
    const dtype_t dts[] = {DT_FP32, DT_FP16, DT_BF16};
    for (int t = 0; t < 3; t++) {
        double worst_all = 0, l2_all = 0, lse_all = 0;
        for (size_t n = 0; n < NSHAPES; n++) {
            const int *sh = shapes[n];
            attn_problem p = problem(sh[0], sh[1], sh[2], sh[3], sh[4], sh[5], sh[6], dts[t]);
            case_t c = make_case(p, 100 + n);
            sim_kernel(&c, dts[t] != DT_FP32, INT32_MAX, 1.0, 0.0);
            verify_result r;
            fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
            if (!r.pass) print_error("%s shape %zu: %s\n", dtype_name(dts[t]), n, r.reason);
            assert_true(r.pass);
            worst_all = fmax(worst_all, r.worst_ratio);
            l2_all = fmax(l2_all, r.rel_l2_err / r.l2_tol);
            lse_all = fmax(lse_all, r.lse_max_err);
            free_case(&c);
        }
        print_message("%s realistic kernel: worst elem err/bound %.3f, rel L2/l2_tol %.3f, lse err %.2e\n",
                      dtype_name(dts[t]), worst_all, l2_all, lse_all);
        assert_true(worst_all < 0.8);
        assert_true(l2_all < 0.5);
        assert_true(lse_all < 1e-4);
    }
}

static void test_tolerances_buggy_kernels_fail(void **state)
{
    (void)state;
    const dtype_t dts[] = {DT_FP32, DT_FP16, DT_BF16};
    for (int t = 0; t < 3; t++) {
        attn_problem p = problem(1, 4, 2, 64, 300, 64, 0, dts[t]);
        case_t c = make_case(p, 7);
        int rp = dts[t] != DT_FP32;
        verify_result r;
        /* the last key tile of 16 (keys 288..299, a partial tile) skipped */
        sim_kernel(&c, rp, 288, 1.0, 0.0);
        fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
        print_message("%s drop keys 288..299: %s\n", dtype_name(dts[t]), r.reason);
        assert_false(r.pass);
        assert_true(r.worst_ratio > 4);
        /* 0.01 added everywhere */
        sim_kernel(&c, rp, INT32_MAX, 1.0, 0.01);
        fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
        print_message("%s +0.01: %s\n", dtype_name(dts[t]), r.reason);
        assert_false(r.pass);
        /* 1% too large everywhere: bf16's own rounding is 0.4% of |o|, so its row bounds
         * (about 3 units of roundoff at the row's largest output) let elements off by 1%
         * of a smaller |o| through, though not all */
        sim_kernel(&c, rp, INT32_MAX, 1.01, 0.0);
        fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
        print_message("%s x1.01: worst %.3gx its bound, %zu elements beyond %s\n", dtype_name(dts[t]), r.worst_ratio,
                      r.bad_elems, r.reason);
        assert_false(r.pass);
        /* 3% too large: everyone sees it */
        sim_kernel(&c, rp, INT32_MAX, 1.03, 0.0);
        fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r);
        assert_false(r.pass);
        /* the mask wrong: causal problem computed without the mask */
        attn_problem pc = problem(1, 2, 2, 100, 300, 64, 1, dts[t]);
        case_t cc = make_case(pc, 8);
        cc.p.s.causal = 0;
        sim_kernel(&cc, rp, INT32_MAX, 1.0, 0.0);
        cc.p.s.causal = 1;
        fb_verify(&cc.p, cc.q, cc.k, cc.v, cc.o, cc.lse, &r);
        assert_false(r.pass);
        free_case(&c); free_case(&cc);
    }
}

/* Large enough that the reference and the check run on several threads (on a machine with
 * 2 or more cores): the same result every time, and the totals equal, to the bit, a
 * serial pass in row order against the same (float) reference. */
static void test_verify_threads_deterministic(void **state)
{
    (void)state;
    attn_problem p = problem(1, 2, 2, 256, 1024, 128, 1, DT_BF16);
    case_t c = make_case(p, 61);
    sim_kernel(&c, 1, INT32_MAX, 1.0, 0.0);
    verify_result r1, r2;
    fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r1);
    fb_verify(&c.p, c.q, c.k, c.v, c.o, c.lse, &r2);
    assert_true(r1.pass);
    assert_memory_equal(&r1, &r2, sizeof r1);
    fb_reference ref = {0};
    assert_int_equal(fb_reference_cpu(&c.p, c.q, c.k, c.v, 0, &ref), 0);
    double max_abs = 0, lse_max = 0, worst = 0;
    for (size_t r = 0; r < nrows(&p); r++) {
        for (int x = 0; x < 128; x++) {
            const double e = fabs((double)(float)fb_load(c.o, r * 128 + x, DT_BF16) - (double)ref.o[r * 128 + x]);
            max_abs = fmax(max_abs, e);
            worst = fmax(worst, e / ref.bound[r]);
        }
        lse_max = fmax(lse_max, fabs((double)c.lse[r] - (double)ref.lse[r]));
    }
    assert_true(r1.max_abs_err == max_abs);
    assert_true(r1.worst_ratio == worst);
    assert_true(r1.lse_max_err == lse_max);
    fb_reference_free(&ref);
    free_case(&c);
}

/* A reference is kept for one problem and one set of inputs: another seed, causality, head
 * count, dtype or length pattern is another reference; a paged shape's page size is not. */
static void test_reference_matches(void **state)
{
    (void)state;
    attn_problem p = problem(1, 4, 2, 20, 30, 32, 0, DT_BF16);
    case_t c = make_case(p, 71);
    fb_reference ref = {0};
    assert_false(fb_reference_matches(&ref, &p, 5));
    assert_int_equal(fb_reference_cpu(&c.p, c.q, c.k, c.v, 5, &ref), 0);
    assert_true(fb_reference_matches(&ref, &p, 5));
    assert_false(fb_reference_matches(&ref, &p, 6));
    attn_problem q = p;
    q.s.causal = 1;
    assert_false(fb_reference_matches(&ref, &q, 5));
    q = p;
    q.s.hq = 8;
    assert_false(fb_reference_matches(&ref, &q, 5));
    q = p;
    q.dt = DT_FP16;
    assert_false(fb_reference_matches(&ref, &q, 5));
    q = p;
    q.s.nlens = 1;
    q.s.lens[0] = 0.5;
    assert_false(fb_reference_matches(&ref, &q, 5));
    q = p;
    q.s.page = 16;
    assert_true(fb_reference_matches(&ref, &q, 5));
    /* one reference checks many outputs */
    verify_result r;
    exact_output(&c);
    assert_int_equal(fb_verify_full(&ref, c.o, c.lse, &r), 0);
    assert_true(r.pass);
    fb_store(c.o, 77, DT_BF16, fb_load(c.o, 77, DT_BF16) + 0.1);
    assert_int_equal(fb_verify_full(&ref, c.o, c.lse, &r), 0);
    assert_false(r.pass);
    fb_reference_free(&ref);
    assert_false(ref.valid);
    assert_null(ref.o);
    assert_int_equal(fb_verify_full(&ref, c.o, c.lse, &r), -1); /* no reference: no verdict */
    free_case(&c);
}

/* A ragged problem (packed per head) with the given pattern. */
static attn_problem ragged_problem(int batch, int hq, int hkv, int sq, int skv, int d, int causal, dtype_t dt,
                                   const double *lens, int nlens)
{
    attn_problem p = problem(batch, hq, hkv, sq, skv, d, causal, dt);
    p.s.nlens = nlens;
    for (int i = 0; i < nlens; i++) p.s.lens[i] = lens[i];
    return p;
}

/* The reference on a ragged batch equals the reference on each sequence run alone as a
 * dense batch of one, bit for bit, and reads nothing of the other sequences (their K, V
 * and Q rows are NaN while it runs); fb_verify accepts the exact packed output, rejects
 * one wrong element of the last sequence's last row even with only the required rows
 * checked, and names the sequence. */
static void test_ref_ragged_vs_alone(void **state)
{
    (void)state;
    const double lens[] = {0.1, 0.5, 1.0, 0.3};
    for (int causal = 0; causal <= 1; causal++) {
        attn_problem p = ragged_problem(6, 4, 2, 40, 56, 32, causal, DT_FP32, lens, 4);
        const shape_t *s = &p.s;
        const size_t d = (size_t)s->d, tq = (size_t)shape_total_q(s), tk = (size_t)shape_total_kv(s);
        assert_int_equal(tq, 4 + 20 + 40 + 12 + 4 + 20);
        assert_int_equal(tk, 6 + 28 + 56 + 17 + 6 + 28);
        float *q = malloc(shape_q_elems(s) * 4), *k = malloc(shape_kv_elems(s) * 4), *v = malloc(shape_kv_elems(s) * 4);
        float *qn = malloc(shape_q_elems(s) * 4), *kn = malloc(shape_kv_elems(s) * 4), *vn = malloc(shape_kv_elems(s) * 4);
        assert_non_null(q); assert_non_null(k); assert_non_null(v);
        assert_non_null(qn); assert_non_null(kn); assert_non_null(vn);
        fb_fill_inputs(s, DT_FP32, 7 + (uint64_t)causal, q, k, v);
        int32_t cq[7], ck[7];
        shape_cu_seqlens(s, cq, ck);
        double *o1 = malloc(d * sizeof *o1), *o2 = malloc(d * sizeof *o2), *o3 = malloc(d * sizeof *o3);
        assert_non_null(o1); assert_non_null(o2); assert_non_null(o3);
        for (int b = 0; b < s->batch; b++) {
            int lq, lk;
            shape_seq_lens(s, b, &lq, &lk);
            assert_int_equal(cq[b + 1] - cq[b], lq);
            assert_int_equal(ck[b + 1] - ck[b], lk);
            /* this sequence alone, dense [1, H, S, D] */
            attn_problem a = problem(1, s->hq, s->hkv, lq, lk, s->d, causal, DT_FP32);
            float *aq = malloc((size_t)s->hq * lq * d * 4), *ak = malloc((size_t)s->hkv * lk * d * 4),
                  *av = malloc((size_t)s->hkv * lk * d * 4);
            assert_non_null(aq); assert_non_null(ak); assert_non_null(av);
            for (int h = 0; h < s->hq; h++)
                memcpy(aq + (size_t)h * lq * d, q + ((size_t)h * tq + (size_t)cq[b]) * d, (size_t)lq * d * 4);
            for (int h = 0; h < s->hkv; h++) {
                memcpy(ak + (size_t)h * lk * d, k + ((size_t)h * tk + (size_t)ck[b]) * d, (size_t)lk * d * 4);
                memcpy(av + (size_t)h * lk * d, v + ((size_t)h * tk + (size_t)ck[b]) * d, (size_t)lk * d * 4);
            }
            /* every other sequence's rows NaN */
            for (size_t x = 0; x < shape_q_elems(s); x++) {
                size_t t = (x / d) % tq;
                qn[x] = t >= (size_t)cq[b] && t < (size_t)cq[b + 1] ? q[x] : NAN;
            }
            for (size_t x = 0; x < shape_kv_elems(s); x++) {
                size_t t = (x / d) % tk;
                int in = t >= (size_t)ck[b] && t < (size_t)ck[b + 1];
                kn[x] = in ? k[x] : NAN;
                vn[x] = in ? v[x] : NAN;
            }
            for (int h = 0; h < s->hq; h++)
                for (int i = 0; i < lq; i++) {
                    double l1, l2, l3;
                    fb_ref_row(&p, q, k, v, b, h, i, o1, &l1);
                    fb_ref_row(&a, aq, ak, av, 0, h, i, o2, &l2);
                    fb_ref_row(&p, qn, kn, vn, b, h, i, o3, &l3);
                    assert_true(memcmp(o1, o2, d * sizeof *o1) == 0 && (l1 == l2 || (isinf(l1) && isinf(l2))));
                    assert_true(memcmp(o1, o3, d * sizeof *o1) == 0 && (l1 == l3 || (isinf(l1) && isinf(l3))));
                    if (causal && i == 0) /* the first query of a sequence sees skv_b - sq_b + 1 keys */
                        assert_true(lk - lq + 1 >= 1 && isfinite(l1));
                }
            free(aq); free(ak); free(av);
        }

        /* fb_verify on the packed output: rows are [Hq, total_q] */
        void *o = malloc(shape_q_elems(s) * 4);
        float *lse = malloc(shape_out_rows(s) * sizeof *lse);
        assert_non_null(o); assert_non_null(lse);
        verify_result r;
        fb_poison(o, shape_q_elems(s), DT_FP32);
        fb_poison_f32(lse, shape_out_rows(s));
        assert_int_equal(fb_verify(&p, q, k, v, o, lse, &r), 0);
        assert_false(r.pass);
        assert_int_equal(r.unwritten, shape_q_elems(s));
        for (int h = 0; h < s->hq; h++)
            for (int b = 0; b < s->batch; b++)
                for (int i = 0; i < cq[b + 1] - cq[b]; i++) {
                    size_t row = (size_t)h * tq + (size_t)cq[b] + (size_t)i;
                    double l1;
                    fb_ref_row(&p, q, k, v, b, h, i, o1, &l1);
                    for (size_t x = 0; x < d; x++) fb_store(o, row * d + x, DT_FP32, o1[x]);
                    lse[row] = (float)l1;
                }
        assert_int_equal(fb_verify(&p, q, k, v, o, lse, &r), 0);
        if (!r.pass) print_error("%s\n", r.reason);
        assert_true(r.pass);
        assert_int_equal(r.rows_total, shape_out_rows(s));
        assert_int_equal(r.rows_checked, shape_out_rows(s));
        /* the last row of the last sequence of the last head, wrong: caught and named */
        size_t last = (shape_out_rows(s) - 1) * d + 5;
        double keep = fb_load(o, last, DT_FP32);
        fb_store(o, last, DT_FP32, keep + 0.5);
        assert_int_equal(fb_verify(&p, q, k, v, o, lse, &r), 0);
        assert_false(r.pass);
        char want[64];
        snprintf(want, sizeof want, "b=5 h=3 i=%d d=5", cq[6] - cq[5] - 1);
        if (!strstr(r.reason, want)) print_error("'%s' lacks '%s'\n", r.reason, want);
        assert_non_null(strstr(r.reason, want));
        fb_store(o, last, DT_FP32, keep);
        /* and one in the middle of sequence 2, head 1, found with every row checked */
        size_t mid = ((size_t)1 * tq + (size_t)cq[2] + 7) * d + 3;
        fb_store(o, mid, DT_FP32, fb_load(o, mid, DT_FP32) - 0.25);
        assert_int_equal(fb_verify(&p, q, k, v, o, lse, &r), 0);
        assert_false(r.pass);
        assert_non_null(strstr(r.reason, "b=2 h=1 i=7 d=3"));
        free(o); free(lse);
        free(o1); free(o2); free(o3);
        free(q); free(k); free(v); free(qn); free(kn); free(vn);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_exhaustive_roundtrip),
        cmocka_unit_test(test_bf16_exhaustive_roundtrip),
        cmocka_unit_test(test_f16_known_values),
        cmocka_unit_test(test_bf16_known_values),
        cmocka_unit_test(test_f16_vs_reference),
        cmocka_unit_test(test_bf16_vs_reference),
        cmocka_unit_test(test_load_store),
        cmocka_unit_test(test_fill_random_matches_box_muller),
        cmocka_unit_test(test_fill_random_properties),
        cmocka_unit_test(test_fill_random_16bit),
        cmocka_unit_test(test_ref_one_key),
        cmocka_unit_test(test_ref_equal_scores_mean),
        cmocka_unit_test(test_ref_scale),
        cmocka_unit_test(test_ref_causal_bottom_right),
        cmocka_unit_test(test_ref_ragged_vs_alone),
        cmocka_unit_test(test_ref_gqa_mapping),
        cmocka_unit_test(test_ref_general_row),
        cmocka_unit_test(test_plain_row),
        cmocka_unit_test(test_row_bound),
        cmocka_unit_test(test_verify_exact_passes),
        cmocka_unit_test(test_verify_unwritten),
        cmocka_unit_test(test_verify_nan),
        cmocka_unit_test(test_verify_small_error),
        cmocka_unit_test(test_verify_lse),
        cmocka_unit_test(test_spot_check),
        cmocka_unit_test(test_reference_matches),
        cmocka_unit_test(test_tolerances_realistic_kernel_passes),
        cmocka_unit_test(test_tolerances_buggy_kernels_fail),
        cmocka_unit_test(test_verify_threads_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
