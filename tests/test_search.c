/* test_search.c: the searchers on a synthetic objective over the shipped search space:
 * every strategy asks each candidate once; bo, told the results, lands within 5% of the
 * exhaustive optimum while asking for at most a quarter of the candidates; local starts
 * where it is told, climbs one parameter at a time around the best so far, and from the
 * worst start reaches the optimum's 5% well inside a quarter of the candidates; halving
 * times its budget once, then the faster half again in rungs of 8, 4 and 2, and a timing
 * that flattered one candidate in the first rung does not make it the winner; staged times
 * one candidate of every tile form first (the first asked, then the one nearest it in each
 * other form), then only the three fastest forms until they are done, and reaches the
 * optimum there; with a budget and seeds, stage 1 is the first, the seeds, then the richest
 * MMA kind's forms, a third of the budget in all; stage 2's every step changes as few knob
 * groups as the form's unasked members allow; the finalists are the leading forms' bests. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "search.h"
#include "space.h"

static kconfig *cands;
static long ncand;

/* A smooth landscape with one best region and some failing configurations (NaN). */
static double objective(const kconfig *c)
{
    if (c->mma == MMA_SYNC && c->block_n == 128 && c->stages == 4) return NAN; /* "resource limit" */
    double t = 100.0;
    t *= 1 + 0.30 * pow(log2((double)c->block_m) - 7, 2);
    t *= 1 + 0.20 * pow(log2((double)c->block_n) - 6, 2);
    t *= 1 + 0.10 * pow(log2((double)c->num_warps) - 2, 2);
    t *= 1 + 0.15 * fabs((double)c->stages - 2);
    t *= c->mma == MMA_SYNC ? 1.0 : 8.0;
    t *= c->warp_m == 2 ? 0.93 : 1.0;
    return t;
}

/* A timing of candidate c in rung r: the objective times (1 + r) (longer timings read
 * slower, as on a GPU that warms up: only times of one rung compare), except that `lucky`
 * measures at lucky_us in rung 0 (a noisy short timing) and `flaky` fails once timed again. */
static double lucky_us;
static double timed(long c, int r, long lucky, long flaky)
{
    if (c == flaky && r > 0) return NAN;
    return c == lucky && r == 0 ? lucky_us : objective(&cands[c]) * (1 + r);
}

static void test_halving_rungs(void **state)
{
    (void)state;
    const long budget = 16;
    /* random's first 16 with the same seed: the same rung 0 */
    searcher *rnd = searcher_new("random", cands, ncand, 3);
    long first[16];
    for (long i = 0; i < budget; i++) first[i] = searcher_ask(rnd);
    searcher_free(rnd);
    /* lucky: the slowest verified of them; flaky: the truly fastest; the winner must be
     * the fastest of the others */
    long lucky = -1, flaky = -1, expect = -1;
    for (long i = 0; i < budget; i++) {
        const double t = objective(&cands[first[i]]);
        if (isnan(t)) continue;
        if (lucky < 0 || t > objective(&cands[lucky])) lucky = first[i];
        if (flaky < 0 || t < objective(&cands[flaky])) flaky = first[i];
    }
    for (long i = 0; i < budget; i++) {
        const double t = objective(&cands[first[i]]);
        if (!isnan(t) && first[i] != flaky && (expect < 0 || t < objective(&cands[expect]))) expect = first[i];
    }
    assert_true(lucky >= 0 && flaky >= 0 && expect >= 0 && lucky != expect);
    lucky_us = 0.5 * objective(&cands[flaky]); /* the fastest of rung 0 by far */

    searcher *se = searcher_new("halving", cands, ncand, 3);
    assert_non_null(se);
    searcher_budget(se, budget);
    char *seen = calloc((size_t)ncand, 1);
    long idx, per_rung[8] = {0};
    int last_rung = 0;
    while ((idx = searcher_ask(se)) >= 0) {
        const int r = searcher_rung(se);
        assert_true(r >= last_rung && r < 8);
        last_rung = r;
        per_rung[r]++;
        if (r == 0) {
            assert_int_equal(idx, first[per_rung[0] - 1]); /* rung 0: random's order */
            assert_false(seen[idx]);
            seen[idx] = 1;
        } else {
            assert_true(seen[idx]); /* later rungs: survivors only */
            seen[idx] = 2;
            assert_true(idx != lucky || r == 1); /* flattered once, then found out */
        }
        searcher_tell(se, idx, timed(idx, r, lucky, flaky));
    }
    double us;
    const long best = searcher_best(se, &us);
    print_message("halving over %ld: rungs of %ld, %ld, %ld, %ld; winner %.1f us in the last rung (%.1f in the model)\n",
                  budget, per_rung[0], per_rung[1], per_rung[2], per_rung[3], us, objective(&cands[expect]));
    assert_int_equal(per_rung[0], budget);
    assert_true(per_rung[1] >= 4 && per_rung[1] <= 8); /* half of the verified */
    assert_int_equal(per_rung[2], per_rung[1] / 2); /* flaky failed in rung 1 */
    assert_int_equal(per_rung[3], 2);
    assert_int_equal(per_rung[4], 0); /* the faster of the last two wins untimed again */
    assert_int_equal(best, expect);
    assert_true(best != lucky && best != flaky);
    assert_true(fabs(us - 4 * objective(&cands[expect])) < 1e-9); /* its rung-3 time */
    /* the test means something: a candidate dropped in rung 0 has a rung-0 time below the
     * winner's rung-3 time (so ranking latest times across rungs would pick it) */
    int below = 0;
    for (long i = 0; i < budget; i++)
        below |= seen[first[i]] == 1 && !isnan(timed(first[i], 0, lucky, flaky)) && timed(first[i], 0, lucky, flaky) < us;
    assert_true(below);
    free(seen);
    searcher_free(se);

    /* cut short in rung 2 after its first timing: every member is ranked by its rung-1
     * time, not the one member by its (slower) rung-2 time against the others' rung-1 */
    se = searcher_new("halving", cands, ncand, 3);
    searcher_budget(se, budget);
    long cut = -1;
    while ((idx = searcher_ask(se)) >= 0) {
        const int r = searcher_rung(se);
        searcher_tell(se, idx, timed(idx, r, lucky, flaky));
        if (r == 2) { cut = idx; break; }
    }
    assert_true(cut >= 0);
    const long b2 = searcher_best(se, &us);
    assert_int_equal(b2, expect);
    assert_true(fabs(us - 2 * objective(&cands[expect])) < 1e-9);
    searcher_free(se);

    /* cut short in rung 2 right after the rung-1 leader failed there (wrong, crashed): it is
     * out, though its rung-1 time is the best of the rung before */
    se = searcher_new("halving", cands, ncand, 3);
    searcher_budget(se, budget);
    cut = -1;
    while ((idx = searcher_ask(se)) >= 0) {
        const int r = searcher_rung(se);
        searcher_tell(se, idx, r == 2 && idx == expect ? NAN : timed(idx, r, lucky, flaky));
        if (r == 2 && idx == expect) { cut = idx; break; }
    }
    assert_true(cut >= 0);
    const long b3 = searcher_best(se, &us);
    assert_true(b3 >= 0 && b3 != expect && isfinite(us));
    searcher_free(se);

    /* random told the same first timings keeps the flattered one */
    rnd = searcher_new("random", cands, ncand, 3);
    for (long i = 0; i < budget; i++) {
        idx = searcher_ask(rnd);
        searcher_tell(rnd, idx, timed(idx, 0, lucky, flaky));
    }
    assert_int_equal(searcher_best(rnd, &us), lucky);
    searcher_free(rnd);
}

/* The tile form of a candidate, as staged groups them */
static int same_tile(const kconfig *a, const kconfig *b)
{
    return a->mma == b->mma && a->block_m == b->block_m && a->block_n == b->block_n && a->num_warps == b->num_warps;
}

static void test_staged_stages(void **state)
{
    (void)state;
    long nform = 0, *rep = malloc(sizeof(long) * (size_t)ncand);
    for (long i = 0; i < ncand; i++) {
        long f = 0;
        while (f < nform && !same_tile(&cands[rep[f]], &cands[i])) f++;
        if (f == nform) rep[nform++] = i;
    }
    double opt = INFINITY;
    for (long i = 0; i < ncand; i++)
        if (objective(&cands[i]) < opt) opt = objective(&cands[i]);
    const long first = ncand / 3;
    searcher *se = searcher_new("staged", cands, ncand, 1);
    assert_non_null(se);
    searcher_first(se, first);
    long *asked = malloc(sizeof(long) * (size_t)ncand), n = 0, idx, found = -1;
    while ((idx = searcher_ask(se)) >= 0) {
        asked[n++] = idx;
        const double t = objective(&cands[idx]);
        searcher_tell(se, idx, t);
        if (found < 0 && t <= 1.05 * opt) found = n;
    }
    assert_int_equal(n, ncand);
    /* stage 1: the first candidate, then one of each other form */
    assert_int_equal(asked[0], first);
    for (long i = 0; i < nform; i++)
        for (long j = 0; j < i; j++) assert_false(same_tile(&cands[asked[i]], &cands[asked[j]]));
    /* stage 2: the three forms fastest in stage 1, until one of them is done */
    long lead[3], nl = 0;
    for (long k = 0; k < 3; k++) {
        long b = -1;
        for (long i = 0; i < nform; i++) {
            int taken = 0;
            for (long u = 0; u < nl; u++) taken |= same_tile(&cands[asked[i]], &cands[lead[u]]);
            const double t = objective(&cands[asked[i]]);
            if (!taken && !isnan(t) && (b < 0 || t < objective(&cands[b]))) b = asked[i];
        }
        lead[nl++] = b;
    }
    /* each leader form's members not asked in stage 1; stage 2 stays among the three until
     * one of them is done (then the next form by stage-1 time joins) */
    long left[3] = {-1, -1, -1};
    for (long i = 0; i < ncand; i++)
        for (long u = 0; u < 3; u++) left[u] += same_tile(&cands[i], &cands[lead[u]]);
    long i = nform;
    for (; i < n && left[0] && left[1] && left[2]; i++) {
        long u = 0;
        while (u < 3 && !same_tile(&cands[asked[i]], &cands[lead[u]])) u++;
        assert_true(u < 3);
        left[u]--;
    }
    print_message("staged: stage 2 kept to the three leading forms for %ld asks\n", i - nform);
    assert_true(i > nform + 3);
    print_message("staged: %ld candidates in %ld forms; within 5%% of the optimum after %ld asks\n", ncand, nform, found);
    assert_true(found > 0 && found <= nform + ncand / 4);
    free(asked);
    free(rep);
    searcher_free(se);
}

/* How many knob groups (knobs.h) candidates a and b differ in, over the searcher's features */
static int groups_apart(const kconfig *a, const kconfig *b)
{
    double fa[KNOB_COUNT], fb[KNOB_COUNT];
    kconfig_features(a, fa);
    kconfig_features(b, fb);
    unsigned g = 0;
    for (int k = 0; k < KNOB_COUNT; k++)
        if (fa[k] != fb[k]) g |= 1u << knob((knob_id)k)->group;
    int n = 0;
    for (; g; g &= g - 1) n++;
    return n;
}

static void test_staged_budget_seeds_groups(void **state)
{
    (void)state;
    const long first = ncand / 3, budget = 30, coarse = budget / 3;
    /* two seeds in forms other than the first's and each other's, from the end of the list */
    long seeds[2], ns = 0;
    for (long i = ncand - 1; i >= 0 && ns < 2; i--) {
        int fresh = !same_tile(&cands[i], &cands[first]);
        for (long u = 0; u < ns; u++) fresh &= !same_tile(&cands[i], &cands[seeds[u]]);
        if (fresh) seeds[ns++] = i;
    }
    assert_int_equal(ns, 2);
    searcher *se = searcher_new("staged", cands, ncand, 1);
    assert_non_null(se);
    searcher_first(se, first);
    searcher_seed(se, seeds[0]);
    searcher_seed(se, seeds[1]);
    searcher_budget(se, budget);
    long *asked = malloc(sizeof(long) * (size_t)ncand), n = 0, idx;
    double *told = malloc(sizeof(double) * (size_t)ncand);
    long steps = 0, minimal = 0;
    while ((idx = searcher_ask(se)) >= 0) {
        if (n >= coarse) { /* stage 2: no unasked member of the form is fewer groups from its best */
            long best = -1;
            for (long i = 0; i < n; i++)
                if (same_tile(&cands[asked[i]], &cands[idx]) && !isnan(told[i]) && (best < 0 || told[i] < objective(&cands[best])))
                    best = asked[i];
            if (best >= 0) {
                int fewest = KNOB_COUNT;
                for (long c = 0; c < ncand; c++) {
                    int done = 0;
                    for (long i = 0; i < n && !done; i++) done = asked[i] == c;
                    if (!done && same_tile(&cands[c], &cands[best]) && groups_apart(&cands[c], &cands[best]) < fewest)
                        fewest = groups_apart(&cands[c], &cands[best]);
                }
                steps++;
                minimal += groups_apart(&cands[idx], &cands[best]) == fewest;
            }
        }
        told[n] = objective(&cands[idx]);
        asked[n++] = idx;
        searcher_tell(se, idx, told[n - 1]);
        if (n == budget) break;
    }
    assert_int_equal(n, budget);
    /* stage 1: the first, the seeds, then forms not seen yet, tensor cores before fma */
    assert_int_equal(asked[0], first);
    assert_int_equal(asked[1], seeds[0]);
    assert_int_equal(asked[2], seeds[1]);
    for (long i = 0; i < coarse; i++)
        for (long j = 0; j < i; j++) assert_false(same_tile(&cands[asked[i]], &cands[asked[j]]));
    for (long i = 4; i < coarse; i++) assert_true(cands[asked[i - 1]].mma >= cands[asked[i]].mma);
    /* then stage 2, in a form stage 1 timed */
    int seen = 0;
    for (long j = 0; j < coarse; j++) seen |= same_tile(&cands[asked[coarse]], &cands[asked[j]]);
    assert_true(seen);
    assert_true(steps > 0);
    assert_int_equal(minimal, steps);
    print_message("staged, budget %ld: stage 1 of %ld forms; %ld stage-2 steps, each as few groups away as it could be\n",
                  budget, coarse, steps);
    /* the finalists: the leading forms' bests, fastest first, the first the best of all */
    long fin[SEARCH_FINALISTS];
    const long nf = searcher_finalists(se, fin, SEARCH_FINALISTS);
    assert_int_equal(nf, SEARCH_FINALISTS);
    double us;
    assert_int_equal(fin[0], searcher_best(se, &us));
    for (long k = 1; k < nf; k++) {
        assert_true(objective(&cands[fin[k - 1]]) <= objective(&cands[fin[k]]));
        for (long j = 0; j < k; j++) assert_false(same_tile(&cands[fin[k]], &cands[fin[j]]));
    }
    searcher *rnd = searcher_new("random", cands, ncand, 1); /* no finalists but staged's */
    assert_int_equal(searcher_finalists(rnd, fin, SEARCH_FINALISTS), 0);
    searcher_free(rnd);
    free(asked);
    free(told);
    searcher_free(se);
}

/* Hand-made candidates: stage 1 takes the tensor-core forms before fma's, wherever the list
 * has them; stage 2 takes a step of two knobs of one group before one of a knob in each of
 * two groups, though the latter comes first in the list */
static void test_staged_kinds_and_group_steps(void **state)
{
    (void)state;
    static const char *const text[] = {
        "MMA=mma;BLOCK_M=64;NUM_WARPS=4;BLOCK_N=64;STAGES=2",              /* 0: the first */
        "MMA=fma;BLOCK_M=32;NUM_WARPS=4;BLOCK_N=32;STAGES=1",              /* 1, 2: fma forms */
        "MMA=fma;BLOCK_M=64;NUM_WARPS=4;BLOCK_N=32;STAGES=1",
        "MMA=mma;BLOCK_M=128;NUM_WARPS=8;BLOCK_N=64;STAGES=2",             /* 3, 4: mma forms */
        "MMA=mma;BLOCK_M=64;NUM_WARPS=4;BLOCK_N=32;STAGES=2",
        "MMA=mma;BLOCK_M=64;NUM_WARPS=4;BLOCK_N=64;STAGES=2;GRID_LPT=1;SPLIT_KV=2", /* 5: two groups */
        "MMA=mma;BLOCK_M=64;NUM_WARPS=4;BLOCK_N=64;STAGES=3;KPAD=8",       /* 6: one group (pipe) */
    };
    const long n = sizeof text / sizeof text[0];
    kconfig c[sizeof text / sizeof text[0]];
    char err[FB_ERRLEN];
    for (long i = 0; i < n; i++) {
        c[i] = (kconfig){0};
        assert_int_equal(kconfig_parse(text[i], &c[i], err, sizeof err), 0);
    }
    searcher *se = searcher_new("staged", c, n, 1);
    assert_non_null(se);
    long asked[8], m = 0, idx;
    while ((idx = searcher_ask(se)) >= 0 && m < 8) {
        asked[m++] = idx;
        searcher_tell(se, idx, idx == 0 ? 10.0 : 20.0 + (double)idx); /* the first's form leads */
    }
    assert_int_equal(m, n);
    static const long want[] = {0, 4, 3, 2, 1, 6, 5}; /* mma forms nearest the first first */
    for (long i = 0; i < n; i++) assert_int_equal(asked[i], want[i]);
    searcher_free(se);
}

static int setup(void **state)
{
    (void)state;
    space_t sp;
    char err[FB_ERRLEN];
    if (space_load_default(&sp, err, sizeof err) != 0) { fprintf(stderr, "setup: %s\n", err); return -1; }
    rt_device_info dev = {.compute_units = 132, .max_group_size = 1024, .shared_bytes = 227 * 1024,
                          .static_shared_bytes = 48 * 1024, .features = RT_FEAT_MMA_SYNC};
    shape_t s = {.batch = 4, .hq = 32, .hkv = 32, .sq = 4096, .skv = 4096, .d = 128, .causal = 0};
    long before;
    ncand = space_enumerate(&sp, &dev, &s, DT_BF16, &cands, &before);
    return ncand > 40 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(cands);
    return 0;
}

static void test_each_asked_once(void **state)
{
    (void)state;
    const char *strategies[] = {"exhaustive", "random", "bo", "local", "staged"};
    for (int k = 0; k < 5; k++) {
        searcher *se = searcher_new(strategies[k], cands, ncand, 5);
        assert_non_null(se);
        char *seen = calloc((size_t)ncand, 1);
        long idx, n = 0;
        while ((idx = searcher_ask(se)) >= 0) {
            assert_true(idx < ncand);
            assert_false(seen[idx]);
            seen[idx] = 1;
            if (k == 0) assert_int_equal(idx, n); /* exhaustive: in order */
            searcher_tell(se, idx, objective(&cands[idx]));
            n++;
        }
        assert_int_equal(n, ncand);
        free(seen);
        searcher_free(se);
    }
    assert_null(searcher_new("annealing", cands, ncand, 1));
}

static double best_after(const char *strategy, uint64_t seed, long budget)
{
    searcher *se = searcher_new(strategy, cands, ncand, seed);
    double best = INFINITY;
    for (long i = 0; i < budget; i++) {
        long idx = searcher_ask(se);
        if (idx < 0) break;
        double t = objective(&cands[idx]);
        searcher_tell(se, idx, t);
        if (t < best) best = t;
    }
    searcher_free(se);
    return best;
}

static void test_bo_converges(void **state)
{
    (void)state;
    double opt = INFINITY;
    for (long i = 0; i < ncand; i++) {
        double t = objective(&cands[i]);
        if (t < opt) opt = t;
    }
    long budget = ncand / 4;
    int bo_hits = 0, random_hits = 0;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        double b = best_after("bo", seed, budget), r = best_after("random", seed, budget);
        bo_hits += b <= 1.05 * opt;
        random_hits += r <= 1.05 * opt;
    }
    print_message("%ld candidates, budget %ld: within 5%% of the optimum in 10 seeds: bo %d, random %d\n", ncand,
                  budget, bo_hits, random_hits);
    assert_true(bo_hits >= 9);
    assert_true(bo_hits >= random_hits);
}

static void test_local_climbs(void **state)
{
    (void)state;
    double opt = INFINITY, worst = -INFINITY;
    long start = -1;
    for (long i = 0; i < ncand; i++) {
        double t = objective(&cands[i]);
        if (t < opt) opt = t;
        if (t > worst) { worst = t; start = i; }
    }
    searcher *se = searcher_new("local", cands, ncand, 1);
    assert_non_null(se);
    searcher_first(se, start);
    long preview[4];
    searcher_preview(se, preview, 4);
    assert_int_equal(preview[0], start);
    assert_int_equal(kconfig_distance(&cands[preview[1]], &cands[start]), 1);
    long idx = searcher_ask(se), best = idx, asked = 1, reached = -1, near = 0;
    assert_int_equal(idx, start);
    double best_t = objective(&cands[idx]);
    searcher_tell(se, idx, best_t);
    while ((idx = searcher_ask(se)) >= 0 && asked < ncand / 4) {
        asked++;
        if (reached < 0) near += kconfig_distance(&cands[idx], &cands[best]) <= 2; /* the climb, until it arrives */
        if (asked <= 4) assert_int_equal(kconfig_distance(&cands[idx], &cands[best]), 1); /* the start has many neighbours */
        const double t = objective(&cands[idx]);
        searcher_tell(se, idx, t);
        if (t < best_t) { best_t = t; best = idx; }
        if (reached < 0 && best_t <= 1.05 * opt) reached = asked;
    }
    searcher_free(se);
    print_message("local from the worst of %ld candidates (%.0fx the optimum): within 5%% after %ld asks; the %ld of %ld asks "
                  "before it within two parameters of the best so far\n", ncand, worst / opt, reached, near, reached - 1);
    assert_true(reached > 0 && reached <= ncand / 4);
    assert_int_equal(near, reached - 1);

    /* seeds: asked first, in the order given (a repeat ignored), then the climb from the
     * best of them */
    se = searcher_new("local", cands, ncand, 1);
    long seeds[3] = {start, ncand / 2, ncand - 1};
    for (int i = 0; i < 3; i++) searcher_seed(se, seeds[i]);
    searcher_seed(se, start);
    searcher_preview(se, preview, 4);
    for (int i = 0; i < 3; i++) assert_int_equal(preview[i], seeds[i]);
    best = -1;
    best_t = INFINITY;
    for (int i = 0; i < 3; i++) {
        idx = searcher_ask(se);
        assert_int_equal(idx, seeds[i]);
        const double t = objective(&cands[idx]);
        searcher_tell(se, idx, t);
        if (t < best_t) { best_t = t; best = idx; }
    }
    assert_true(best >= 0); /* these seeds all run on the synthetic objective */
    idx = searcher_ask(se);
    assert_int_equal(kconfig_distance(&cands[idx], &cands[best]), 1);
    searcher_free(se);
}

/* local's preview of a whole Hopper space (a time-limited tune with no --candidates previews
 * every candidate for the background compiler): each candidate once, the seed first, then
 * by distance from it (0 and 1 alike), the first in the searcher's order among equals (the
 * order local_next took them in). Before 2026-12-05 the preview cost n^3 steps: the H100's
 * causal d=128 space (10^5 candidates) never got past it in 200 s. */
static void test_local_preview_whole_space(void **state)
{
    (void)state;
    space_t sp;
    char err[FB_ERRLEN];
    assert_int_equal(space_load_default(&sp, err, sizeof err), 0);
    rt_device_info dev = {.compute_units = 132, .max_group_size = 1024, .shared_bytes = 227 * 1024,
                          .static_shared_bytes = 48 * 1024, .features = RT_FEAT_MMA_SYNC | RT_FEAT_WGMMA | RT_FEAT_TMA};
    shape_t s = {.batch = 1, .hq = 32, .hkv = 8, .sq = 1024, .skv = 1024, .d = 128, .causal = 1};
    kconfig *big;
    long before;
    const long n = space_enumerate(&sp, &dev, &s, DT_BF16, &big, &before);
    assert_true(n > 1000);
    searcher *se = searcher_new("local", big, n, 1);
    assert_non_null(se);
    /* the order: the default configuration (here the last) first, then the rest as
     * enumerated, so that "first in order" is not the same as "lowest index" */
    const long first = n - 1, start = n / 3;
    searcher_first(se, first);
    searcher_seed(se, start);
    long *out = malloc(sizeof *out * (size_t)n);
    char *seen = calloc((size_t)n, 1);
    assert_non_null(out);
    assert_non_null(seen);
    searcher_preview(se, out, n);
    assert_int_equal(out[0], start);
    seen[start] = 1;
    int prev_d = 1;
    long prev_rank = -1;
    for (long i = 1; i < n; i++) {
        const long c = out[i];
        assert_true(c >= 0 && c < n);
        assert_int_equal(seen[c], 0);
        seen[c] = 1;
        int d = kconfig_distance(&big[c], &big[start]); /* the features' distance: GRID_LPT is 0 or 1 here */
        if (d < 1) d = 1;
        const long rank = c == first ? 0 : c + 1; /* c's place in the searcher's order */
        assert_true(d > prev_d || (d == prev_d && rank > prev_rank));
        prev_d = d;
        prev_rank = rank;
    }
    /* a shorter preview is the same list's head */
    long head[50];
    searcher_preview(se, head, 50);
    for (int i = 0; i < 50; i++) assert_int_equal(head[i], out[i]);
    print_message("local preview of %ld candidates: each once, by distance from the seed, in order among equals\n", n);
    free(seen);
    free(out);
    searcher_free(se);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_asked_once),
        cmocka_unit_test(test_bo_converges),
        cmocka_unit_test(test_local_climbs),
        cmocka_unit_test(test_halving_rungs),
        cmocka_unit_test(test_local_preview_whole_space),
        cmocka_unit_test(test_staged_stages),
        cmocka_unit_test(test_staged_budget_seeds_groups),
        cmocka_unit_test(test_staged_kinds_and_group_steps),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
