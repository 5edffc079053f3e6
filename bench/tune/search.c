/* search.c: exhaustive, random, Gaussian-process (bo), hill-climbing (local), successive-
 * halving (halving) and staged (staged) searchers. */
#include "search.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NFEAT KNOB_COUNT
#define BO_INIT 8          /* random probes before the model steers */
#define BO_LENGTH 0.45     /* RBF length scale in the normalised feature space, before fitting */
#define BO_NOISE 1e-2      /* observation noise (standardised log time) */
#define BO_MAX_OBS 512
#define BO_FIT_MAX 48      /* past this many observations the length scales are refitted only */
#define BO_REFIT 16        /* every this many more (each fit factorises K ~160 times) */
#define STAGED_LEADERS SEARCH_FINALISTS /* staged: tile forms whose neighbourhoods are searched at once */
#define STAGED_COARSE_PART 3 /* staged: with a budget, stage 1 takes at most this part of it, */
#define STAGED_MIN_COARSE 8  /* but at least this many forms */

struct searcher {
    int bo, local, halving, staged;
    long *form;          /* staged: each candidate's tile form (index into the arrays below) */
    long nform;
    long *form_rep;      /* staged: the form's representative (stage 1) */
    long *form_best;     /* staged: the form's fastest candidate told (-1: none) */
    long *form_rank;     /* staged: the forms by their stage-1 time, fastest first */
    long *coarse;        /* staged: stage 1's candidates, in the order asked */
    long *form_plan;     /* staged: the forms in stage 1's order (form_before) */
    long *seed_at;       /* staged: the first seed in each form (SEARCH_MAX_SEEDS: none) */
    long ncoarse, stage1; /* staged: how many; how many asked so far (ncoarse + 1: ranked) */
    long rr;             /* staged: the round-robin turn among the leading forms */
    int group_of[NFEAT]; /* staged: each feature's knob group (knobs.h) */
    long rung_n0;        /* halving: candidates in rung 0 (the budget; 0: all) */
    long n0_asked;       /* halving: how many rung 0 has asked */
    int rung;            /* halving: the rung of the last ask (0: first timing) */
    long *members;       /* halving: the current rung's candidates (rungs above 0) */
    long nmem, cur;
    double *last_us;     /* halving: each candidate's latest time (NaN: failed or never told) */
    double *prev_us;     /* halving: the time before it (the rung that promoted it) */
    int *told_rung;      /* halving: the rung of its latest time */
    long seed[SEARCH_MAX_SEEDS]; /* local: asked first, in this order */
    int nseed;
    long best_idx;       /* the fastest candidate told so far (-1: none) */
    double best_us;
    long n, next;        /* exhaustive/random: position in order */
    long *order;         /* the exhaustive or random order */
    char *asked;
    double (*feat)[NFEAT];
    long nobs;
    long obs_idx[BO_MAX_OBS];
    double obs_us[BO_MAX_OBS];
    double ls[NFEAT];    /* per-feature RBF length scales (fitted by marginal likelihood) */
    int varies[NFEAT];   /* the feature takes more than one value over the candidates */
};

static void staged_plan(searcher *se);

static uint64_t mix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int search_strategy_known(const char *s)
{
    return !strcmp(s, "exhaustive") || !strcmp(s, "random") || !strcmp(s, "bo") || !strcmp(s, "local") ||
           !strcmp(s, "halving") || !strcmp(s, "staged");
}

/* Each knob mapped to about [0, 1] (knobs.h's feat column). */
static void features(const kconfig *c, double *f) { kconfig_features(c, f); }

searcher *searcher_new(const char *strategy, const kconfig *cands, long n, uint64_t seed)
{
    if (!search_strategy_known(strategy)) return NULL;
    searcher *se = calloc(1, sizeof *se);
    if (!se) return NULL;
    se->n = n;
    se->bo = !strcmp(strategy, "bo");
    se->local = !strcmp(strategy, "local");
    se->halving = !strcmp(strategy, "halving");
    se->staged = !strcmp(strategy, "staged");
    se->best_idx = -1;
    se->best_us = INFINITY;
    se->order = malloc(sizeof(long) * (size_t)(n ? n : 1));
    se->asked = calloc((size_t)(n ? n : 1), 1);
    se->feat = malloc(sizeof *se->feat * (size_t)(n ? n : 1));
    se->members = malloc(sizeof(long) * (size_t)(n ? n : 1));
    se->last_us = malloc(sizeof(double) * (size_t)(n ? n : 1));
    se->prev_us = malloc(sizeof(double) * (size_t)(n ? n : 1));
    se->told_rung = calloc((size_t)(n ? n : 1), sizeof(int));
    if (se->staged) {
        se->form = malloc(sizeof(long) * (size_t)(n ? n : 1));
        se->form_rep = malloc(sizeof(long) * (size_t)(n ? n : 1));
        se->form_best = malloc(sizeof(long) * (size_t)(n ? n : 1));
        se->form_rank = malloc(sizeof(long) * (size_t)(n ? n : 1));
        se->coarse = malloc(sizeof(long) * (size_t)(n ? n : 1));
        se->form_plan = malloc(sizeof(long) * (size_t)(n ? n : 1));
        se->seed_at = malloc(sizeof(long) * (size_t)(n ? n : 1));
        for (int f = 0; f < NFEAT; f++) se->group_of[f] = (int)knob((knob_id)f)->group;
    }
    if (!se->order || !se->asked || !se->feat || !se->members || !se->last_us || !se->prev_us || !se->told_rung ||
        (se->staged && (!se->form || !se->form_rep || !se->form_best || !se->form_rank || !se->coarse || !se->form_plan ||
                        !se->seed_at))) {
        searcher_free(se);
        return NULL;
    }
    for (long i = 0; i < n; i++) {
        se->last_us[i] = se->prev_us[i] = NAN;
        se->order[i] = i;
        features(&cands[i], se->feat[i]);
    }
    for (int f = 0; f < NFEAT; f++) {
        se->ls[f] = BO_LENGTH;
        for (long i = 1; i < n && !se->varies[f]; i++) se->varies[f] = se->feat[i][f] != se->feat[0][f];
    }
    if (strcmp(strategy, "exhaustive") && !se->local && !se->staged)
        for (long i = n - 1; i > 0; i--) { /* Fisher-Yates, reproducible from the seed */
            long j = (long)(mix64(&seed) % (uint64_t)(i + 1));
            long t = se->order[i];
            se->order[i] = se->order[j];
            se->order[j] = t;
        }
    if (se->staged) staged_plan(se);
    return se;
}

void searcher_first(searcher *se, long idx)
{
    long p = 0;
    while (p < se->n && se->order[p] != idx) p++;
    if (p == se->n) return;
    memmove(&se->order[1], &se->order[0], sizeof se->order[0] * (size_t)p);
    se->order[0] = idx;
    if (se->staged) staged_plan(se); /* the representatives are chosen near the first */
}

void searcher_seed(searcher *se, long idx)
{
    if (!(se->local || se->staged) || idx < 0 || idx >= se->n || se->nseed == SEARCH_MAX_SEEDS) return;
    for (int i = 0; i < se->nseed; i++)
        if (se->seed[i] == idx) return;
    se->seed[se->nseed++] = idx;
    if (se->staged) staged_plan(se); /* the seeds' forms come first */
}

/* How many features of candidates a and b differ. */
static int feat_distance(const searcher *se, long a, long b)
{
    int d = 0;
    for (int f = 0; f < NFEAT; f++) d += se->feat[a][f] != se->feat[b][f];
    return d;
}

/* local: the candidate not yet asked (nor in taken[0..nt)) with the fewest features
 * different from candidate from, the first in order among equals; -1 if none is left. */
static long local_next(const searcher *se, long from, const long *taken, long nt)
{
    long pick = -1;
    int pd = NFEAT + 1;
    for (long p = 0; p < se->n && pd > 1; p++) {
        const long c = se->order[p];
        if (se->asked[c]) continue;
        const int d = feat_distance(se, from, c);
        if (d >= pd) continue;
        long t = 0;
        while (t < nt && taken[t] != c) t++;
        if (t == nt) { pick = c; pd = d; }
    }
    return pick;
}

void searcher_preview(const searcher *se, long *out, long k)
{
    if (se->local && se->n > 0) { /* the seeds (else the first in order), then the candidates
                                   * nearest the first of them: local_next's order, taken by
                                   * distance from one start, so sorted by it once. (Calling
                                   * local_next k times costs n * k * k: with --time and no
                                   * --candidates, k is the whole space, and a d=128 causal
                                   * class's thousands of candidates took longer than the
                                   * tune's timeout before its first run.) */
        long m = 0;
        for (int i = 0; i < se->nseed && m < k; i++) out[m++] = se->seed[i];
        if (m == 0) out[m++] = se->order[0];
        const long start = out[0];
        /* each candidate's distance from the start, -1 if taken or asked; local_next takes
         * the first (in order) of the nearest, a distance of 0 counting as 1 (it stops at
         * the first within one feature): a counting sort by distance */
        signed char *dist = malloc((size_t)se->n);
        if (!dist) { /* no memory for the sort: the slow way */
            for (long c; m < k && (c = local_next(se, start, out, m)) >= 0;) out[m++] = c;
            return;
        }
        for (long c = 0; c < se->n; c++) {
            const int d = se->asked[c] ? -1 : feat_distance(se, start, c);
            dist[c] = (signed char)(d < 0 ? -1 : d > 1 ? d : 1);
        }
        for (long i = 0; i < m; i++) dist[out[i]] = -1;
        long at[NFEAT + 2] = {0}; /* where each distance's run starts in out */
        for (long c = 0; c < se->n; c++)
            if (dist[c] > 0) at[dist[c] + 1]++;
        at[1] = m;
        for (int d = 2; d <= NFEAT + 1; d++) at[d] += at[d - 1];
        for (long p = 0; p < se->n; p++) {
            const long c = se->order[p];
            if (dist[c] > 0 && at[dist[c]] < k) out[at[dist[c]]++] = c;
        }
        free(dist);
        return;
    }
    if (se->staged) { /* stage 1, then the rest in order (the leaders are not known before
                       * stage 1 is timed) */
        long m = 0;
        char *taken = calloc((size_t)se->n, 1);
        if (!taken) { for (long i = 0; i < k && i < se->n; i++) out[i] = se->order[i]; return; }
        for (long i = 0; i < se->ncoarse && m < k; i++) taken[out[m++] = se->coarse[i]] = 1;
        for (long p = 0; p < se->n && m < k; p++)
            if (!taken[se->order[p]]) out[m++] = se->order[p];
        free(taken);
        return;
    }
    for (long i = 0; i < k && i < se->n; i++) out[i] = se->order[i];
}

/* Squared-exponential kernel with one length scale per feature (ARD). */
static double kern(const double *ls, const double *a, const double *b)
{
    double d2 = 0;
    for (int i = 0; i < NFEAT; i++) {
        const double t = (a[i] - b[i]) / ls[i];
        d2 += t * t;
    }
    return exp(-0.5 * d2);
}

/* Cholesky factor L of K + noise I over the m observations, with length scales ls; the
 * log marginal likelihood of the standardised targets y when alpha is given (alpha = K^-1 y
 * is filled), else 0. */
static double gp_factor(const searcher *se, const double *ls, const double *y, long m, double *L, double *alpha)
{
    for (long i = 0; i < m; i++)
        for (long j = 0; j <= i; j++) {
            double s = kern(ls, se->feat[se->obs_idx[i]], se->feat[se->obs_idx[j]]) + (i == j ? BO_NOISE : 0);
            for (long k = 0; k < j; k++) s -= L[i * m + k] * L[j * m + k];
            if (i == j) L[i * m + i] = sqrt(s > 1e-12 ? s : 1e-12);
            else L[i * m + j] = s / L[j * m + j];
        }
    if (!alpha) return 0;
    /* alpha = K^-1 y by two triangular solves; on the way, y^T K^-1 y = |L^-1 y|^2 */
    double quad = 0, logdet = 0;
    for (long i = 0; i < m; i++) {
        double s = y[i];
        for (long k = 0; k < i; k++) s -= L[i * m + k] * alpha[k];
        alpha[i] = s / L[i * m + i];
        quad += alpha[i] * alpha[i];
        logdet += log(L[i * m + i]);
    }
    for (long i = m - 1; i >= 0; i--) {
        double s = alpha[i];
        for (long k = i + 1; k < m; k++) s -= L[k * m + i] * alpha[k];
        alpha[i] = s / L[i * m + i];
    }
    return -0.5 * quad - logdet;
}

/* Type-II maximum likelihood for the length scales: coordinate ascent over a grid, one
 * feature at a time, twice over; features that never vary keep theirs. */
static void gp_fit(searcher *se, const double *y, long m, double *L, double *alpha)
{
    static const double grid[] = {0.1, 0.18, 0.3, 0.45, 0.7, 1.1, 1.8, 3.0, 6.0};
    const int ng = (int)(sizeof grid / sizeof grid[0]);
    double ls[NFEAT];
    memcpy(ls, se->ls, sizeof ls);
    double best = gp_factor(se, ls, y, m, L, alpha);
    for (int pass = 0; pass < 2; pass++)
        for (int f = 0; f < NFEAT; f++) {
            if (!se->varies[f]) continue;
            double keep = ls[f];
            for (int g = 0; g < ng; g++) {
                if (grid[g] == keep) continue;
                ls[f] = grid[g];
                double ll = gp_factor(se, ls, y, m, L, alpha);
                if (ll > best + 1e-9) { best = ll; keep = grid[g]; }
            }
            ls[f] = keep;
        }
    memcpy(se->ls, ls, sizeof ls);
}

/* The unasked candidate with the largest expected improvement of standardised log time. */
static long bo_pick(searcher *se)
{
    long m = se->nobs;
    double *y = malloc(sizeof(double) * (size_t)m), *L = malloc(sizeof(double) * (size_t)(m * m));
    double *alpha = malloc(sizeof(double) * (size_t)m), *v = malloc(sizeof(double) * (size_t)m);
    long pick = -1;
    if (!y || !L || !alpha || !v) goto out;
    /* targets: log time; a failed candidate counts as clearly worse than the worst success */
    double worst = -INFINITY;
    for (long i = 0; i < m; i++)
        if (isfinite(se->obs_us[i])) worst = fmax(worst, log(se->obs_us[i]));
    if (!isfinite(worst)) worst = 0;
    double mean = 0, sd = 0;
    for (long i = 0; i < m; i++) {
        y[i] = isfinite(se->obs_us[i]) ? log(se->obs_us[i]) : worst + 1.0;
        mean += y[i];
    }
    mean /= (double)m;
    for (long i = 0; i < m; i++) sd += (y[i] - mean) * (y[i] - mean);
    sd = sqrt(sd / (double)m);
    if (!(sd > 1e-9)) sd = 1;
    double best = INFINITY;
    for (long i = 0; i < m; i++) {
        y[i] = (y[i] - mean) / sd;
        best = fmin(best, y[i]);
    }
    if (m <= BO_FIT_MAX || m % BO_REFIT == 0) gp_fit(se, y, m, L, alpha);
    gp_factor(se, se->ls, y, m, L, alpha);
    double best_ei = -1;
    for (long c = 0; c < se->n; c++) {
        if (se->asked[c]) continue;
        double mu = 0;
        for (long i = 0; i < m; i++) {
            v[i] = kern(se->ls, se->feat[c], se->feat[se->obs_idx[i]]);
            mu += v[i] * alpha[i];
        }
        for (long i = 0; i < m; i++) { /* v = L^-1 k* */
            double s = v[i];
            for (long k = 0; k < i; k++) s -= L[i * m + k] * v[k];
            v[i] = s / L[i * m + i];
        }
        double var = 1.0;
        for (long i = 0; i < m; i++) var -= v[i] * v[i];
        double s = sqrt(var > 1e-12 ? var : 1e-12);
        double imp = best - mu - 0.01, z = imp / s;
        double ei = imp * 0.5 * erfc(-z / sqrt(2.0)) + s * exp(-0.5 * z * z) / 2.5066282746310002; /* sqrt(2 pi) */
        if (ei > best_ei) { best_ei = ei; pick = c; }
    }
out:
    free(y); free(L); free(alpha); free(v);
    return pick;
}

void searcher_budget(searcher *se, long budget)
{
    se->rung_n0 = budget > 0 ? budget : 0;
    if (se->staged) staged_plan(se); /* stage 1 fits the budget */
}

int searcher_rung(const searcher *se)
{
    return se->rung;
}

/* Sorts idx[0..n) by t[idx] ascending, failures (NaN) last; stable (n is at most the budget). */
static void sort_by_time(long *idx, long n, const double *t)
{
    for (long i = 1; i < n; i++) {
        const long c = idx[i];
        long j = i;
        while (j > 0 && (isnan(t[idx[j - 1]]) ? !isnan(t[c]) : !isnan(t[c]) && t[c] < t[idx[j - 1]])) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = c;
    }
}

/* halving: the next candidate of the current rung, promoting the faster half of a finished
 * rung to the next one (each of its candidates timed twice as long); -1 once a finished
 * rung has two or fewer verified (the faster of them wins). */
static long halving_ask(searcher *se)
{
    if (se->rung == 0 && (se->rung_n0 == 0 || se->n0_asked < se->rung_n0)) {
        while (se->next < se->n) {
            long c = se->order[se->next++];
            if (!se->asked[c]) {
                se->n0_asked++;
                return c;
            }
        }
    }
    if (se->rung > 0 && se->cur < se->nmem) return se->members[se->cur++];
    /* the rung is done: its members are rung 0's asked candidates, or members[] */
    if (se->rung == 0) {
        se->nmem = 0;
        for (long c = 0; c < se->n; c++)
            if (se->asked[c]) se->members[se->nmem++] = c;
    }
    long ok = 0;
    for (long i = 0; i < se->nmem; i++) ok += !isnan(se->last_us[se->members[i]]);
    sort_by_time(se->members, se->nmem, se->last_us);
    if (ok <= 2) { /* one survivor: the winner (if any) stays in members[0] */
        se->nmem = ok > 0;
        se->cur = se->nmem;
        return -1;
    }
    se->nmem = (ok + 1) / 2;
    se->rung++;
    se->cur = 0;
    return se->members[se->cur++];
}

long searcher_best(const searcher *se, double *us)
{
    if (se->halving && se->rung > 0) {
        /* the fastest of the rung reached; if it was cut short (--time, Ctrl-C), every member
         * by the time of the rung before, which all of them have, so that no timing length
         * is ranked against another */
        int done = 1;
        for (long i = 0; i < se->nmem; i++) done &= se->told_rung[se->members[i]] == se->rung;
        long b = -1;
        double bt = INFINITY;
        for (long i = 0; i < se->nmem; i++) {
            const long c = se->members[i];
            /* a member that failed when this rung timed it again is out, whatever it did before */
            if (se->told_rung[c] == se->rung && isnan(se->last_us[c])) continue;
            const double t = done || se->told_rung[c] != se->rung ? se->last_us[c] : se->prev_us[c];
            if (!isnan(t) && t < bt) { b = c; bt = t; }
        }
        if (us) *us = bt;
        return b;
    }
    if (us) *us = se->best_us;
    return se->best_idx;
}

/* staged: whether candidates a and b share a tile form (the knobs of GROUP_FORM: MMA kind,
 * BLOCK_M, BLOCK_N, NUM_WARPS), what decides the work split and the instruction mix; the
 * other groups tune the pipeline within a form */
static int same_form(const searcher *se, long a, long b)
{
    for (int f = 0; f < NFEAT; f++)
        if (se->group_of[f] == GROUP_FORM && se->feat[a][f] != se->feat[b][f]) return 0;
    return 1;
}

/* staged: how many knob groups (knobs.h) and how many features candidates a and b differ
 * in, as one key: fewer groups first, then fewer features. A move inside one group is a
 * step the kernel's rules allow (WG_DEFER with WG_PIPE, WG_PERSIST with WG_DYNAMIC), where
 * the fewest features alone would as soon change two unrelated knobs. */
static int group_distance(const searcher *se, long a, long b)
{
    unsigned groups = 0;
    int d = 0;
    for (int f = 0; f < NFEAT; f++)
        if (se->feat[a][f] != se->feat[b][f]) { groups |= 1u << se->group_of[f]; d++; }
    int ng = 0;
    for (; groups; groups &= groups - 1) ng++;
    return ng * (NFEAT + 1) + d;
}

/* staged: how far form f's representative is from the first candidate's form (the
 * GROUP_FORM features' differences, summed) */
static double form_distance(const searcher *se, long f)
{
    double d = 0;
    for (int k = 0; k < NFEAT; k++)
        if (se->group_of[k] == GROUP_FORM) d += fabs(se->feat[se->form_rep[f]][k] - se->feat[se->order[0]][k]);
    return d;
}

/* staged: whether form f comes before form g in stage 1: a seed's form (in seed order), then
 * the first candidate's, then the richest MMA kind (the device's tensor cores before fma),
 * then the nearest the first candidate's tile, then plan order */
static int form_before(const searcher *se, long f, long g)
{
    if (se->seed_at[f] != se->seed_at[g]) return se->seed_at[f] < se->seed_at[g];
    const long f0 = se->form[se->order[0]];
    if ((f == f0) != (g == f0)) return f == f0;
    const double kf = se->feat[se->form_rep[f]][KNOB_MMA], kg = se->feat[se->form_rep[g]][KNOB_MMA];
    if (kf != kg) return kf > kg;
    const double df = form_distance(se, f), dg = form_distance(se, g);
    return df != dg ? df < dg : f < g;
}

/* staged: the forms (candidates alike in the tile knobs, knobs.h's GROUP_FORM), each with
 * its representative (the member with the fewest features different from the first
 * candidate, the runtime's default, so that a form is first timed with the default's
 * pipeline settings as far as it allows; a seed, the winner of this class or of a
 * neighbouring one, stands for its own form), and stage 1's list: the first candidate, the
 * seeds, then one representative of each other form by form_before, at most a
 * STAGED_COARSE_PART of the budget (STAGED_MIN_COARSE at least) where one is set. Made again
 * by whatever changes it (searcher_first, _seed, _budget). */
static void staged_plan(searcher *se)
{
    se->nform = 0;
    for (long p = 0; p < se->n; p++) {
        const long c = se->order[p];
        long f = 0;
        while (f < se->nform && !same_form(se, se->form_rep[f], c)) f++;
        se->form[c] = f;
        if (f == se->nform) {
            se->form_rep[se->nform] = c;
            se->form_best[se->nform++] = -1;
        } else if (feat_distance(se, se->order[0], c) < feat_distance(se, se->order[0], se->form_rep[f]))
            se->form_rep[f] = c;
    }
    se->ncoarse = se->stage1 = 0;
    if (se->n == 0) return;
    for (long f = 0; f < se->nform; f++) se->seed_at[f] = SEARCH_MAX_SEEDS;
    for (int i = se->nseed - 1; i >= 0; i--) {
        se->seed_at[se->form[se->seed[i]]] = i;
        se->form_rep[se->form[se->seed[i]]] = se->seed[i];
    }
    se->form_rep[se->form[se->order[0]]] = se->order[0];
    long *plan = se->form_plan;
    for (long i = 0; i < se->nform; i++) { /* insertion sort: the forms are few */
        long j = i;
        for (; j > 0 && form_before(se, i, plan[j - 1]); j--) plan[j] = plan[j - 1];
        plan[j] = i;
    }
    long cap = se->nform;
    if (se->rung_n0 > 0 && se->rung_n0 / STAGED_COARSE_PART < cap)
        cap = se->rung_n0 / STAGED_COARSE_PART > STAGED_MIN_COARSE ? se->rung_n0 / STAGED_COARSE_PART : STAGED_MIN_COARSE;
    se->coarse[se->ncoarse++] = se->order[0];
    for (int i = 0; i < se->nseed; i++)
        if (se->seed[i] != se->order[0]) se->coarse[se->ncoarse++] = se->seed[i];
    for (long i = 0; i < se->nform && se->ncoarse < cap; i++) {
        const long f = plan[i];
        if (se->seed_at[f] == SEARCH_MAX_SEEDS && f != se->form[se->order[0]]) se->coarse[se->ncoarse++] = se->form_rep[f];
    }
}

/* staged: the forms ranked by their fastest time so far (failed and untimed forms last, then
 * in plan order), into form_rank; called once, when stage 1 is done */
static void staged_rank(searcher *se)
{
    for (long f = 0; f < se->nform; f++) se->form_rank[f] = f;
    for (long i = 1; i < se->nform; i++) { /* stable insertion sort: the forms are few */
        const long f = se->form_rank[i];
        const double t = se->form_best[f] >= 0 ? se->last_us[se->form_best[f]] : INFINITY;
        long j = i;
        for (; j > 0; j--) {
            const long g = se->form_rank[j - 1];
            if (!(t < (se->form_best[g] >= 0 ? se->last_us[se->form_best[g]] : INFINITY))) break;
            se->form_rank[j] = g;
        }
        se->form_rank[j] = f;
    }
}

/* staged: the unasked member of form f nearest its fastest candidate (its representative
 * while none verified) by group_distance; -1 when the form is done */
static long staged_next_in(const searcher *se, long f)
{
    const long from = se->form_best[f] >= 0 ? se->form_best[f] : se->form_rep[f];
    long pick = -1;
    int pd = INT_MAX;
    for (long p = 0; p < se->n && pd > NFEAT + 2; p++) { /* NFEAT + 2: one feature of one group */
        const long c = se->order[p];
        if (se->asked[c] || se->form[c] != f) continue;
        const int d = group_distance(se, from, c);
        if (d < pd) { pick = c; pd = d; }
    }
    return pick;
}

/* staged: stage 1 times its list (staged_plan); stage 2 climbs, in turn, in the
 * STAGED_LEADERS fastest forms not yet done (each from its own best so far, one knob group
 * at a time where it can), the next form by rank joining as one is exhausted, so the whole
 * space is asked in the end; stage 3, the head-to-head of each leading form's best at
 * run-length timings (searcher_finalists), is the tuner's (tune.c) */
static long staged_ask(searcher *se)
{
    while (se->stage1 < se->ncoarse) {
        const long c = se->coarse[se->stage1++];
        if (!se->asked[c]) return c;
    }
    if (se->stage1 == se->ncoarse) {
        staged_rank(se);
        se->stage1++;
    }
    for (long tries = 0; tries < se->nform; tries++) {
        /* the leading forms: the first STAGED_LEADERS in rank order with members left */
        long lead[STAGED_LEADERS], nl = 0;
        for (long r = 0; r < se->nform && nl < STAGED_LEADERS; r++)
            if (staged_next_in(se, se->form_rank[r]) >= 0) lead[nl++] = se->form_rank[r];
        if (nl == 0) return -1;
        const long c = staged_next_in(se, lead[se->rr++ % nl]);
        if (c >= 0) return c;
    }
    return -1;
}

long searcher_finalists(const searcher *se, long *out, long k)
{
    if (!se->staged) return 0;
    long m = 0;
    for (long f = 0; f < se->nform; f++) { /* the k fastest forms' bests, fastest first */
        const long b = se->form_best[f];
        if (b < 0 || isnan(se->last_us[b])) continue;
        long j = m < k ? m++ : k;
        for (; j > 0 && se->last_us[b] < se->last_us[out[j - 1]]; j--)
            if (j < k) out[j] = out[j - 1];
        if (j < k) out[j] = b;
    }
    return m;
}

long searcher_ask(searcher *se)
{
    if (se->halving) return halving_ask(se);
    long idx = -1;
    if (se->staged) {
        idx = staged_ask(se);
        if (idx >= 0) se->asked[idx] = 1;
        return idx;
    }
    if (se->bo && se->nobs >= BO_INIT && se->nobs < BO_MAX_OBS) idx = bo_pick(se);
    for (int i = 0; se->local && idx < 0 && i < se->nseed; i++) /* the seeds not asked yet */
        if (!se->asked[se->seed[i]]) idx = se->seed[i];
    if (se->local && idx < 0 && se->best_idx >= 0) /* the climb: nearest the best so far */
        idx = local_next(se, se->best_idx, NULL, 0);
    while (idx < 0 && se->next < se->n) {
        long c = se->order[se->next++];
        if (!se->asked[c]) idx = c;
    }
    if (idx >= 0) se->asked[idx] = 1;
    return idx;
}

void searcher_tell(searcher *se, long idx, double us)
{
    if (idx < 0 || idx >= se->n) return;
    se->asked[idx] = 1;
    se->prev_us[idx] = se->last_us[idx];
    se->last_us[idx] = us;
    se->told_rung[idx] = se->rung;
    if (us < se->best_us) { /* NaN (failed) never is */
        se->best_us = us;
        se->best_idx = idx;
    }
    if (se->staged) {
        const long f = se->form[idx];
        if (us < (se->form_best[f] >= 0 ? se->last_us[se->form_best[f]] : INFINITY)) se->form_best[f] = idx;
    }
    if (se->nobs >= BO_MAX_OBS) return;
    se->obs_idx[se->nobs] = idx;
    se->obs_us[se->nobs] = us;
    se->nobs++;
}

void searcher_free(searcher *se)
{
    if (!se) return;
    free(se->order);
    free(se->asked);
    free(se->feat);
    free(se->members);
    free(se->last_us);
    free(se->prev_us);
    free(se->told_rung);
    free(se->form);
    free(se->form_rep);
    free(se->form_best);
    free(se->form_rank);
    free(se->coarse);
    free(se->form_plan);
    free(se->seed_at);
    free(se);
}
