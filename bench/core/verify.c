/* verify.c: the full reference of a problem (every row's O, LSE, plain error and bound),
 * built on the CPU or checked on sampled rows when the device built it, and the one check
 * every output goes through: every element against its row's bound (refcheck.h). */
#include "refcheck.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- chunks on all cores */

/* Work cut into fixed chunks that threads take in turn: each chunk writes only its own
 * results, so totals reduced in chunk order do not depend on how many threads ran. */
typedef struct {
    size_t nchunks, next;
    int (*fn)(void *ctx, size_t chunk); /* 0, or -1 (out of memory) */
    void *ctx;
    int failed;
    pthread_mutex_t lock;
} chunk_pool;

static void *chunk_worker(void *arg)
{
    chunk_pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        const size_t c = p->next++;
        pthread_mutex_unlock(&p->lock);
        if (c >= p->nchunks) return NULL;
        if (p->fn(p->ctx, c) != 0) {
            pthread_mutex_lock(&p->lock);
            p->failed = 1;
            pthread_mutex_unlock(&p->lock);
        }
    }
}

#define MAX_THREADS 64

/* Runs fn on chunks 0 .. nchunks-1, on every core when the work (multiply-adds, roughly)
 * is worth the threads. 0, or -1 when a chunk failed. */
static int run_chunks(size_t nchunks, double work, int (*fn)(void *, size_t), void *ctx)
{
    chunk_pool p = {.nchunks = nchunks, .fn = fn, .ctx = ctx};
    pthread_mutex_init(&p.lock, NULL);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nt = ncpu > 1 ? (size_t)ncpu : 1;
    if (nt > MAX_THREADS) nt = MAX_THREADS;
    if (work < 2e7) nt = 1; /* not worth a thread */
    if (nt > nchunks) nt = nchunks ? nchunks : 1;
    pthread_t tid[MAX_THREADS];
    size_t started = 0;
    for (size_t t = 1; t < nt; t++)
        if (pthread_create(&tid[started], NULL, chunk_worker, &p) == 0) started++;
    chunk_worker(&p); /* this thread too (alone when no thread could start) */
    for (size_t t = 0; t < started; t++) pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&p.lock);
    return p.failed ? -1 : 0;
}

/* ---------------------------------------------------------------- the reference table */

int fb_reference_alloc(fb_reference *ref, const attn_problem *p)
{
    fb_reference_free(ref);
    const size_t rows = shape_out_rows(&p->s), d = (size_t)p->s.d, n = rows ? rows : 1;
    ref->o = malloc(n * d * sizeof *ref->o);
    ref->lse = malloc(n * sizeof *ref->lse);
    ref->plain_err = malloc(n * sizeof *ref->plain_err);
    ref->bound = malloc(n * sizeof *ref->bound);
    if (!ref->o || !ref->lse || !ref->plain_err || !ref->bound) {
        fb_reference_free(ref);
        return -1;
    }
    ref->p = *p;
    ref->rows = rows;
    return 0;
}

void fb_reference_free(fb_reference *ref)
{
    free(ref->o);
    free(ref->lse);
    free(ref->plain_err);
    free(ref->bound);
    memset(ref, 0, sizeof *ref);
}

int fb_reference_matches(const fb_reference *ref, const attn_problem *p, uint64_t seed)
{
    const shape_t *a = &ref->p.s, *b = &p->s;
    return ref->valid && ref->seed == seed && ref->p.dt == p->dt && ref->p.scale == p->scale && a->batch == b->batch &&
           a->hq == b->hq && a->hkv == b->hkv && a->sq == b->sq && a->skv == b->skv && a->d == b->d &&
           a->causal == b->causal && a->nlens == b->nlens && a->nqlens == b->nqlens &&
           memcmp(a->lens, b->lens, sizeof a->lens) == 0 && memcmp(a->qlens, b->qlens, sizeof a->qlens) == 0;
}

void fb_reference_finish(fb_reference *ref, uint64_t seed)
{
    const size_t d = (size_t)ref->p.s.d;
    for (size_t r = 0; r < ref->rows; r++) {
        double mx = 0;
        for (size_t x = 0; x < d; x++) mx = fmax(mx, fabs((double)ref->o[r * d + x]));
        ref->bound[r] = (float)fb_row_bound(ref->p.dt, ref->plain_err[r], mx);
    }
    ref->seed = seed;
    ref->valid = 1;
}

/* ---------------------------------------------------------------- the CPU reference */

/* Rows per chunk of the CPU reference (rows cost up to skv * d each) and of the check. */
#define REF_CHUNK 16
#define CMP_CHUNK 256

typedef struct {
    const attn_problem *p;
    const void *q, *k, *v;
    fb_reference *ref;
} cpu_ref_job;

/* One row on the CPU: its reference in double and the plain row's worst error against it. */
static int cpu_row(const attn_problem *p, const void *q, const void *k, const void *v, size_t r, double *o, float *plain,
                   double *lse, double *plain_err)
{
    int b, h, i;
    fb_row_coords(&p->s, r, &b, &h, &i);
    fb_ref_row(p, q, k, v, b, h, i, o, lse);
    fb_plain_row(p, q, k, v, b, h, i, plain);
    double worst = 0;
    for (int x = 0; x < p->s.d; x++) {
        const double e = fabs((double)plain[x] - o[x]);
        if (!(e <= worst)) worst = e; /* a NaN (no memory in a row) stays */
    }
    *plain_err = worst;
    return isnan(worst) || isnan(*lse) ? -1 : 0;
}

static int cpu_ref_chunk(void *arg, size_t c)
{
    cpu_ref_job *j = arg;
    fb_reference *ref = j->ref;
    const size_t d = (size_t)j->p->s.d, r0 = c * REF_CHUNK, r1 = r0 + REF_CHUNK < ref->rows ? r0 + REF_CHUNK : ref->rows;
    double *o = malloc(d * sizeof *o);
    float *plain = malloc(d * sizeof *plain);
    int rc = o && plain ? 0 : -1;
    for (size_t r = r0; r < r1 && rc == 0; r++) {
        double lse, pe;
        rc = cpu_row(j->p, j->q, j->k, j->v, r, o, plain, &lse, &pe);
        for (size_t x = 0; x < d; x++) ref->o[r * d + x] = (float)o[x];
        ref->lse[r] = (float)lse;
        ref->plain_err[r] = (float)pe;
    }
    free(o);
    free(plain);
    return rc;
}

int fb_reference_cpu(const attn_problem *p, const void *q, const void *k, const void *v, uint64_t seed,
                     fb_reference *ref)
{
    if (fb_reference_alloc(ref, p) != 0) return -1;
    cpu_ref_job j = {.p = p, .q = q, .k = k, .v = v, .ref = ref};
    const double work = (double)ref->rows * (double)p->s.skv * (double)p->s.d;
    if (run_chunks((ref->rows + REF_CHUNK - 1) / REF_CHUNK, work, cpu_ref_chunk, &j) != 0) {
        fb_reference_free(ref);
        return -1;
    }
    ref->on_device = 0;
    fb_reference_finish(ref, seed);
    return 0;
}

/* ---------------------------------------------------------------- sampled rows */

static void bm_set(unsigned char *bm, size_t i) { bm[i >> 3] |= (unsigned char)(1u << (i & 7)); }
static void bm_clr(unsigned char *bm, size_t i) { bm[i >> 3] &= (unsigned char)~(1u << (i & 7)); }
static int bm_get(const unsigned char *bm, size_t i) { return (bm[i >> 3] >> (i & 7)) & 1; }

/* Picks the rows to check: all of them, or the mandatory ones (row 0 and the last
 * min(sq, 64) rows of the first and the last (b, h); ragged: of the first sequence of
 * head 0 and the last of head hq-1, with their own lengths) plus random distinct others
 * up to max_rows in total, from seed. Returns a malloc'd ascending list, or NULL. */
static size_t *select_rows(const shape_t *s, size_t rows_total, size_t max_rows, uint64_t seed, size_t *count)
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
            size_t r = (size_t)fb_rand_below(&state, rows_total);
            if (!bm_get(bm, r)) { bm_set(bm, r); chosen++; }
        }
    } else {
        for (size_t r = 0; r < rows_total; r++) bm_set(bm, r); /* remove random rows */
        chosen = rows_total;
        while (chosen > target) {
            size_t r = (size_t)fb_rand_below(&state, rows_total);
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

/* ---------------------------------------------------------------- the device reference, spot-checked */

typedef struct {
    const fb_reference *ref;
    const void *q, *k, *v;
    const size_t *rows;
    size_t nrows;
    double tol_rel;
    char (*why)[160]; /* per row: why it disagrees, "" when it agrees */
} spot_job;

/* Whether row list[n] of the reference agrees with the CPU's; why[n] says where not. */
static int spot_chunk(void *arg, size_t n)
{
    spot_job *j = arg;
    const fb_reference *ref = j->ref;
    const attn_problem *p = &ref->p;
    const size_t r = j->rows[n], d = (size_t)p->s.d;
    double *o = malloc(d * sizeof *o), lse, pe;
    float *plain = malloc(d * sizeof *plain);
    if (!o || !plain || cpu_row(p, j->q, j->k, j->v, r, o, plain, &lse, &pe) != 0) {
        free(o);
        free(plain);
        return -1;
    }
    double mx = 0;
    for (size_t x = 0; x < d; x++) mx = fmax(mx, fabs(o[x]));
    int b, h, i;
    fb_row_coords(&p->s, r, &b, &h, &i);
    j->why[n][0] = 0;
    for (size_t x = 0; x < d && !j->why[n][0]; x++) {
        const double got = ref->o[r * d + x];
        if (!(fabs(got - o[x]) <= j->tol_rel * mx))
            snprintf(j->why[n], sizeof j->why[n], "O at b=%d h=%d i=%d d=%zu is %.9g, the CPU's %.9g", b, h, i, x, got, o[x]);
    }
    const double dl = ref->lse[r];
    const int lse_ok = isinf(lse) ? isinf(dl) && dl < 0 : fabs(dl - lse) <= j->tol_rel * (1 + fabs(lse));
    if (!j->why[n][0] && !lse_ok)
        snprintf(j->why[n], sizeof j->why[n], "LSE at b=%d h=%d i=%d is %.9g, the CPU's %.9g", b, h, i, dl, lse);
    /* the plain error sets the row's bound: within a factor 2 of the CPU's (the device may
     * round an exp or a sum differently, flipping a few roundings of P), give or take half
     * the bound's floor (below which a difference does not move the bound much) */
    const double dp = ref->plain_err[r], slack = 0.5 * fb_row_bound(p->dt, 0, mx);
    if (!j->why[n][0] && !(dp <= 2 * pe + slack && pe <= 2 * dp + slack))
        snprintf(j->why[n], sizeof j->why[n], "plain error at b=%d h=%d i=%d is %.3g, the CPU's %.3g", b, h, i, dp, pe);
    free(o);
    free(plain);
    return 0;
}

int fb_reference_spot_check(const fb_reference *ref, const void *q, const void *k, const void *v, size_t max_rows,
                            uint64_t seed, double tol_rel, char *why, size_t whylen)
{
    size_t n = 0;
    size_t *rows = select_rows(&ref->p.s, ref->rows, max_rows, seed, &n);
    char(*whys)[160] = rows ? calloc(n ? n : 1, sizeof *whys) : NULL;
    if (!whys) { free(rows); snprintf(why, whylen, "out of memory"); return -1; }
    spot_job j = {.ref = ref, .q = q, .k = k, .v = v, .rows = rows, .nrows = n, .tol_rel = tol_rel, .why = whys};
    const double work = (double)n * (double)ref->p.s.skv * (double)ref->p.s.d;
    int rc = run_chunks(n, work, spot_chunk, &j) != 0 ? -1 : 0;
    if (rc != 0) snprintf(why, whylen, "out of memory");
    size_t bad = 0, first = 0;
    for (size_t x = 0; rc == 0 && x < n; x++)
        if (whys[x][0] && !bad++) first = x;
    if (bad) {
        snprintf(why, whylen, "%zu of %zu sampled rows disagree with the CPU; first: %s", bad, n, whys[first]);
        rc = 1;
    }
    free(whys);
    free(rows);
    return rc;
}

/* ---------------------------------------------------------------- the check */

/* LSE: the inputs are exact in every dtype, so its error is float accumulation only. */
#define LSE_ATOL 1e-3
#define LSE_RTOL 1e-5
/* A kernel may write a large negative finite value instead of -inf for an empty row. */
#define LSE_NEG_INF_CUTOFF (-1e30)
#define NONE ((size_t)-1)

/* What the check of one chunk of rows found. */
typedef struct {
    double max_abs, worst_ratio, sq_err, sq_ref;
    size_t worst; /* element of the worst ratio */
    double worst_got, worst_want;
    size_t bad, unwritten, first_unwritten, nans, first_nan;
    double lse_max;
    size_t lse_bad, lse_poison, lse_nan, lse_worst; /* the worst wrong LSE's row */
    double lse_worst_err, lse_got, lse_want;
} cmp_chunk;

typedef struct {
    const fb_reference *ref;
    const void *o;
    const float *lse;
    cmp_chunk *out;
} cmp_job;

/* Element e of the output: 0 a number (in *val), 1 poison, 2 NaN or inf. */
static int output_elem(const void *o, size_t e, dtype_t dt, float *val)
{
    if (dt == DT_FP32) {
        uint32_t u;
        memcpy(&u, (const unsigned char *)o + 4 * e, sizeof u); /* bits read with memcpy: no aliasing questions */
        if (u == FB_POISON_F32) return 1;
        if ((u & 0x7f800000u) == 0x7f800000u) return 2;
        memcpy(val, &u, sizeof *val);
        return 0;
    }
    const uint16_t h = ((const uint16_t *)o)[e];
    if (h == (dt == DT_FP16 ? FB_POISON_F16 : FB_POISON_BF16)) return 1;
    const uint16_t expmask = dt == DT_FP16 ? 0x7c00u : 0x7f80u;
    if ((h & expmask) == expmask) return 2;
    *val = dt == DT_FP16 ? fb_f16_to_f32(h) : fb_bf16_to_f32(h);
    return 0;
}

static void check_lse(const cmp_job *j, size_t r, cmp_chunk *c)
{
    const float got = j->lse[r];
    uint32_t u;
    memcpy(&u, &got, sizeof u);
    if (u == FB_POISON_F32) { c->lse_poison++; return; }
    if (isnan(got) || (isinf(got) && got > 0)) { c->lse_nan++; return; }
    const double want = j->ref->lse[r];
    double err;
    if (isinf(want)) /* no visible key: -inf, or a large negative stand-in */
        err = got < LSE_NEG_INF_CUTOFF ? 0 : INFINITY;
    else
        err = isfinite(got) ? fabs(got - want) : INFINITY;
    if (isfinite(err) && err > c->lse_max) c->lse_max = err;
    if (isinf(want) ? err > 0 : !(err <= LSE_ATOL + LSE_RTOL * fabs(want))) {
        c->lse_bad++;
        if (c->lse_worst == NONE || err > c->lse_worst_err) {
            c->lse_worst = r;
            c->lse_worst_err = err;
            c->lse_got = got;
            c->lse_want = want;
        }
    }
}

/* The tight loop: every element of rows c * CMP_CHUNK .. against the reference. */
static int cmp_rows(void *arg, size_t chunk)
{
    const cmp_job *j = arg;
    const fb_reference *ref = j->ref;
    const dtype_t dt = ref->p.dt;
    const size_t d = (size_t)ref->p.s.d, r0 = chunk * CMP_CHUNK;
    const size_t r1 = r0 + CMP_CHUNK < ref->rows ? r0 + CMP_CHUNK : ref->rows;
    cmp_chunk *c = &j->out[chunk];
    memset(c, 0, sizeof *c);
    c->first_unwritten = c->first_nan = c->worst = c->lse_worst = NONE;
    for (size_t r = r0; r < r1; r++) {
        const double bound = ref->bound[r];
        const float *want = ref->o + r * d;
        for (size_t x = 0; x < d; x++) {
            const size_t e = r * d + x;
            float got;
            const int kind = output_elem(j->o, e, dt, &got);
            if (kind) { /* counted by kind; a failure whatever its bound */
                if (kind == 1 && !c->unwritten++) c->first_unwritten = e;
                if (kind == 2 && !c->nans++) c->first_nan = e;
                c->bad++;
                continue;
            }
            const double err = fabs((double)got - (double)want[x]);
            const double ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0);
            if (err > bound) c->bad++;
            if (err > c->max_abs) c->max_abs = err;
            if (ratio > c->worst_ratio || c->worst == NONE) {
                c->worst_ratio = ratio;
                c->worst = e;
                c->worst_got = got;
                c->worst_want = want[x];
            }
            c->sq_err += err * err;
            c->sq_ref += (double)want[x] * want[x];
        }
        if (j->lse) check_lse(j, r, c);
    }
    return 0;
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
    fb_row_coords(s, elem / d, &b, &h, &i);
    snprintf(out, outlen, "b=%d h=%d i=%d d=%zu", b, h, i, elem % d);
}

/* The chunks' findings, reduced in chunk order, and the reason for a failure. */
static void reduce_chunks(const fb_reference *ref, const cmp_chunk *ch, size_t nch, int with_lse, verify_result *res)
{
    const shape_t *s = &ref->p.s;
    const size_t total = ref->rows * (size_t)s->d;
    double sq_err = 0, sq_ref = 0;
    const cmp_chunk *w = NULL, *lw = NULL;
    size_t first_un = NONE, first_nan = NONE, lse_bad = 0, lse_poison = 0, lse_nan = 0;
    res->lse_checked = with_lse;
    for (size_t n = 0; n < nch; n++) {
        const cmp_chunk *c = &ch[n];
        res->max_abs_err = fmax(res->max_abs_err, c->max_abs);
        res->lse_max_err = fmax(res->lse_max_err, c->lse_max);
        sq_err += c->sq_err;
        sq_ref += c->sq_ref;
        res->bad_elems += c->bad;
        res->unwritten += c->unwritten;
        res->nan_count += c->nans;
        if (first_un == NONE) first_un = c->first_unwritten;
        if (first_nan == NONE) first_nan = c->first_nan;
        if (c->worst != NONE && (!w || c->worst_ratio > w->worst_ratio)) w = c;
        lse_bad += c->lse_bad;
        lse_poison += c->lse_poison;
        lse_nan += c->lse_nan;
        if (c->lse_worst != NONE && (!lw || c->lse_worst_err > lw->lse_worst_err)) lw = c;
    }
    res->worst_ratio = w ? w->worst_ratio : 0;
    const double en = sqrt(sq_err), rn = sqrt(sq_ref);
    res->rel_l2_err = rn > 0 ? en / rn : (en > 0 ? INFINITY : 0.0);
    char msg[256], loc[96];
    if (res->unwritten) {
        where(s, first_un, loc, sizeof loc);
        snprintf(msg, sizeof msg, "%zu of %zu outputs unwritten (first at %s)", res->unwritten, total, loc);
        add_reason(res, msg);
    }
    if (res->nan_count) {
        where(s, first_nan, loc, sizeof loc);
        snprintf(msg, sizeof msg, "%zu NaN/inf outputs (first at %s)", res->nan_count, loc);
        add_reason(res, msg);
    }
    if (w && w->worst_ratio > 1.0) {
        const size_t r = w->worst / (size_t)s->d;
        where(s, w->worst, loc, sizeof loc);
        snprintf(msg, sizeof msg,
                 "err %.3g > tol %.3g (%.3gx) at %s (got %.6g, want %.6g); %zu of %zu outputs beyond tol, max abs err %.3g",
                 fabs(w->worst_got - w->worst_want), (double)ref->bound[r], w->worst_ratio, loc, w->worst_got,
                 w->worst_want, res->bad_elems - res->unwritten - res->nan_count, total, res->max_abs_err);
        add_reason(res, msg);
    }
    if (!(res->rel_l2_err <= res->l2_tol)) {
        snprintf(msg, sizeof msg, "rel L2 err %.3g > %.3g", res->rel_l2_err, res->l2_tol);
        add_reason(res, msg);
    }
    if (lse_poison) {
        snprintf(msg, sizeof msg, "%zu of %zu lse values unwritten", lse_poison, ref->rows);
        add_reason(res, msg);
    }
    if (lse_nan) {
        snprintf(msg, sizeof msg, "%zu lse values NaN/+inf", lse_nan);
        add_reason(res, msg);
    }
    if (lw) {
        int b, h, i;
        fb_row_coords(s, lw->lse_worst, &b, &h, &i);
        snprintf(msg, sizeof msg, "lse wrong in %zu of %zu rows, worst at b=%d h=%d i=%d (got %.6g, want %.6g)", lse_bad,
                 ref->rows, b, h, i, lw->lse_got, lw->lse_want);
        add_reason(res, msg);
    }
    res->pass = !res->bad_elems && res->rel_l2_err <= res->l2_tol &&
                (!with_lse || (!lse_bad && !lse_poison && !lse_nan));
    if (res->pass) res->reason[0] = '\0';
}

int fb_verify_full(const fb_reference *ref, const void *o, const float *lse, verify_result *res)
{
    memset(res, 0, sizeof *res);
    double atol, rtol;
    fb_tolerances(ref->p.dt, &atol, &rtol, &res->l2_tol);
    if (!ref->valid) {
        snprintf(res->reason, sizeof res->reason, "no reference to check against");
        return -1;
    }
    res->rows_total = ref->rows;
    const size_t nch = (ref->rows + CMP_CHUNK - 1) / CMP_CHUNK;
    cmp_chunk *ch = malloc((nch ? nch : 1) * sizeof *ch);
    if (!ch) {
        snprintf(res->reason, sizeof res->reason, "out of memory for the check");
        return -1;
    }
    cmp_job j = {.ref = ref, .o = o, .lse = lse, .out = ch};
    run_chunks(nch, (double)ref->rows * (double)ref->p.s.d * 8, cmp_rows, &j); /* (cmp_rows cannot fail) */
    res->rows_checked = ref->rows;
    reduce_chunks(ref, ch, nch, lse != NULL, res);
    free(ch);
    return 0;
}

/* A problem the reference can be made for (the rest of the harness checks shapes first;
 * this guards the library's own callers). */
static int problem_ok(const attn_problem *p, char *why, size_t len)
{
    const shape_t *s = &p->s;
    if (s->batch < 0 || s->hq < 0 || s->sq < 0 || s->skv < 0 || s->d <= 0 || s->hkv <= 0 || s->hq % s->hkv != 0 ||
        s->nlens < 0 || s->nlens > FB_MAX_LENS || s->nqlens < 0 || s->nqlens > FB_MAX_LENS) {
        snprintf(why, len, "invalid problem (batch=%d hq=%d hkv=%d sq=%d skv=%d d=%d nlens=%d nqlens=%d)", s->batch, s->hq,
                 s->hkv, s->sq, s->skv, s->d, s->nlens, s->nqlens);
        return 0;
    }
    for (int x = 0; x < s->nlens; x++)
        if (!(s->lens[x] > 0.0 && s->lens[x] <= 1.0)) {
            snprintf(why, len, "invalid problem (lens[%d]=%g)", x, s->lens[x]);
            return 0;
        }
    for (int x = 0; x < s->nqlens; x++)
        if (!(s->qlens[x] > 0.0 && s->qlens[x] <= 1.0)) {
            snprintf(why, len, "invalid problem (qlens[%d]=%g)", x, s->qlens[x]);
            return 0;
        }
    return 1;
}

int fb_verify(const attn_problem *p, const void *q, const void *k, const void *v, const void *o, const float *lse,
              verify_result *res)
{
    memset(res, 0, sizeof *res);
    if (!problem_ok(p, res->reason, sizeof res->reason)) return -1;
    fb_reference ref = {0};
    if (fb_reference_cpu(p, q, k, v, 0, &ref) != 0) {
        snprintf(res->reason, sizeof res->reason, "out of memory for the reference");
        return -1;
    }
    const int rc = fb_verify_full(&ref, o, lse, res);
    fb_reference_free(&ref);
    return rc;
}
