/* replay.c: `fabench tune-replay`: how the searchers would have done, replayed over the
 * times an exhaustive tune measured. Every configuration of a class was timed once on the
 * GPU (explored.csv); each searcher asks for configurations in its own order and is told
 * the recorded time, so many seeds cost no device time. Writes the best-so-far curve of
 * every (class, strategy, seed) to convergence.csv and prints, per strategy, how often it
 * came within the tolerance of the exhaustive best with at most a quarter of the space. */
#define _GNU_SOURCE
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "config.h"
#include "csvio.h"
#include "search.h"
#include "stats.h"
#include "tune.h"

static const char *const conv_header[] = {"gpu", "backend", "shape_class", "strategy", "seed", "step",
                                          "config", "median_us", "best_us", "optimum_us"};
#define CONV_NCOLS (sizeof conv_header / sizeof conv_header[0])

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fabench tune-replay EXPLORED.csv [options]\n\n"
            "Replays the searchers over the times recorded in explored.csv: for every (gpu,\n"
            "backend, shape class), the configurations with a row form the space, a failed row\n"
            "counts as a failed candidate, and each searcher is told the recorded median time of\n"
            "what it asks for. Meaningful where the class was tuned exhaustively. Prints, per\n"
            "strategy, the share of (class, seed) runs whose best after the budget lies within the\n"
            "tolerance of the class's best, and the median number of configurations timed to get there.\n\n"
            "  --strategy LIST    searchers to replay (default random,bo; exhaustive takes the file's order)\n"
            "  --seeds N          seeds per randomised searcher (default 20)\n"
            "  --budget-frac F    share of each class's space the budget allows (default 0.25)\n"
            "  --tolerance F      how close to the best counts as found (default 0.05)\n"
            "  --min-configs N    skip classes with fewer recorded configurations (default 16)\n"
            "  --first CONFIG     ask this configuration first in every class that has it, as\n"
            "                     `fabench tune` does with the runtime's default (K=V,...)\n"
            "  --out FILE         convergence.csv (best so far after each step)\n"
            "  --no-borrow        local and staged start without the nearest classes' winners, as a\n"
            "                     tune from an empty tuning.csv does\n\n"
            "halving replays as random over its first rung: with one recorded time per configuration\n"
            "its later rungs, which time the survivors again for longer, cannot change the order.\n");
}

typedef struct {
    char gpu[128], backend[32], cls[96];
    kconfig *cands;
    char (*cfg)[KCONFIG_STR_MAX];
    double *us;
    long n, cap;
} rclass;

static int add_cand(rclass *c, const char *cfg, double us, char *err, size_t errlen)
{
    for (long i = 0; i < c->n; i++)
        if (!strcmp(c->cfg[i], cfg)) { /* a repeat: keep the faster verified time */
            if (!isnan(us) && (isnan(c->us[i]) || us < c->us[i])) c->us[i] = us;
            return 0;
        }
    if (c->n == c->cap) {
        long nc = c->cap ? 2 * c->cap : 64;
        kconfig *k = realloc(c->cands, sizeof *k * (size_t)nc);
        if (!k) return -1;
        c->cands = k;
        char(*s)[KCONFIG_STR_MAX] = realloc(c->cfg, sizeof *s * (size_t)nc);
        if (!s) return -1;
        c->cfg = s;
        double *u = realloc(c->us, sizeof *u * (size_t)nc);
        if (!u) return -1;
        c->us = u;
        c->cap = nc;
    }
    memset(&c->cands[c->n], 0, sizeof c->cands[0]);
    if (kconfig_parse(cfg, &c->cands[c->n], err, errlen) != 0) return 2;
    snprintf(c->cfg[c->n], sizeof c->cfg[0], "%s", cfg);
    c->us[c->n++] = us;
    return 0;
}

/* local: the seeds `fabench tune` would give class k, from this file alone. Its own best is
 * what the replay is after, so only the TUNE_LOCAL_BORROW nearest other classes of the same
 * GPU and runtime lend theirs (their fastest verified configuration). */
static void replay_seeds(searcher *se, const rclass *cls, size_t ncls, size_t k)
{
    const char **keys = malloc(sizeof *keys * (ncls ? ncls : 1));
    if (!keys) return;
    for (size_t o = 0; o < ncls; o++) /* the other classes of this GPU and runtime */
        keys[o] = o == k || strcmp(cls[o].gpu, cls[k].gpu) || strcmp(cls[o].backend, cls[k].backend) ? NULL : cls[o].cls;
    size_t lend[TUNE_LOCAL_BORROW];
    const int m = tune_borrow_classes(cls[k].cls, keys, ncls, lend);
    free(keys);
    for (int b = 0; b < m; b++) {
        const rclass *o = &cls[lend[b]];
        long fastest = -1;
        for (long i = 0; i < o->n; i++)
            if (!isnan(o->us[i]) && (fastest < 0 || o->us[i] < o->us[fastest])) fastest = i;
        int dist;
        if (fastest >= 0) searcher_seed(se, kconfig_nearest(cls[k].cands, cls[k].n, &o->cands[fastest], &dist));
    }
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* What the command line asks for. */
typedef struct {
    const char *path, *out, *first; /* explored.csv; --out; --first as given */
    long seeds, min_configs;
    int no_borrow;     /* --no-borrow: no searcher_seed from the neighbouring classes */
    double frac, tol;
    kconfig fk;        /* --first: the parameters it sets; a candidate matches when it has the same values */
    char slist[256];   /* --strategy's list, cut up: strat points into it */
    const char *strat[8];
    int nstrat;
} replay_opts;

/* --strategy's list into o->strat, every name checked before any work: at most 8 known
 * searchers. Returns -1 to go on, else the exit status (the message printed). */
static int split_strategies(replay_opts *o, const char *list)
{
    snprintf(o->slist, sizeof o->slist, "%s", list);
    char *save = NULL;
    for (char *tok = strtok_r(o->slist, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!search_strategy_known(tok) || o->nstrat == 8) {
            fprintf(stderr, "fabench tune-replay: --strategy: unknown or too many: '%s' (known: " SEARCH_STRATEGIES ")\n",
                    tok);
            return FB_EXIT_BADINPUT;
        }
        o->strat[o->nstrat++] = tok;
    }
    if (!o->nstrat) { fprintf(stderr, "fabench tune-replay: --strategy: empty list\n"); return FB_EXIT_BADINPUT; }
    return -1;
}

/* The options, then --first and --strategy checked before any work. Returns -1 to go on,
 * else the exit status (usage or the message printed). */
static int parse_options(int argc, char **argv, replay_opts *o)
{
    enum { O_STRAT = 1, O_SEEDS, O_FRAC, O_TOL, O_MIN, O_OUT, O_FIRST, O_NO_BORROW, O_HELP };
    static const struct option opts[] = {
        {"strategy", required_argument, 0, O_STRAT}, {"seeds", required_argument, 0, O_SEEDS},
        {"budget-frac", required_argument, 0, O_FRAC}, {"tolerance", required_argument, 0, O_TOL},
        {"min-configs", required_argument, 0, O_MIN}, {"out", required_argument, 0, O_OUT},
        {"first", required_argument, 0, O_FIRST}, {"no-borrow", no_argument, 0, O_NO_BORROW},
        {"help", no_argument, 0, O_HELP}, {0, 0, 0, 0}};
    const char *strategies = "random,bo";
    memset(o, 0, sizeof *o);
    o->seeds = 20;
    o->min_configs = 16;
    o->frac = 0.25;
    o->tol = 0.05;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case O_STRAT: strategies = optarg; break;
        case O_SEEDS:
            o->seeds = strtol(optarg, &end, 10);
            if (*end || end == optarg || o->seeds < 1 || o->seeds > 100000) { fprintf(stderr, "fabench tune-replay: --seeds: bad count '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            break;
        case O_FRAC:
            o->frac = strtod(optarg, &end);
            if (*end || end == optarg || !(o->frac > 0 && o->frac <= 1)) { fprintf(stderr, "fabench tune-replay: --budget-frac: want 0 < F <= 1, got '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            break;
        case O_TOL:
            o->tol = strtod(optarg, &end);
            if (*end || end == optarg || !(o->tol >= 0 && o->tol < 10)) { fprintf(stderr, "fabench tune-replay: --tolerance: bad value '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            break;
        case O_MIN:
            o->min_configs = strtol(optarg, &end, 10);
            if (*end || end == optarg || o->min_configs < 1 || o->min_configs > 1000000) { fprintf(stderr, "fabench tune-replay: --min-configs: bad count '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            break;
        case O_OUT: o->out = optarg; break;
        case O_FIRST: o->first = optarg; break;
        case O_NO_BORROW: o->no_borrow = 1; break;
        case O_HELP: usage(stdout); return 0;
        default: usage(stderr); return FB_EXIT_BADINPUT;
        }
    }
    if (optind != argc - 1) { usage(stderr); return FB_EXIT_BADINPUT; }
    o->path = argv[optind];
    if (o->first) {
        char ferr[256];
        if (kconfig_parse(o->first, &o->fk, ferr, sizeof ferr) != 0) {
            fprintf(stderr, "fabench tune-replay: --first: %s\n", ferr);
            return FB_EXIT_BADINPUT;
        }
    }
    return split_strategies(o, strategies);
}

/* The explored.csv to replay, read whole, and the columns the replay reads (col, in the
 * order of `need`). 0, or the exit status with the message printed. */
static int read_explored(const char *path, csv_table **ex, int col[6])
{
    static const char *const need[] = {"gpu", "backend", "shape_class", "config", "status", "median_us"};
    char err[FB_ERRLEN];
    int rc = csvt_read(path, ex, err, sizeof err);
    if (rc) { fprintf(stderr, "fabench tune-replay: %s\n", err); return rc == 2 ? FB_EXIT_BADINPUT : 1; }
    for (int i = 0; i < 6; i++)
        if ((col[i] = csvt_col(*ex, need[i])) < 0) {
            fprintf(stderr, "fabench tune-replay: %s:1: no column '%s' (not an explored.csv)\n", path, need[i]);
            csvt_free(*ex);
            return FB_EXIT_BADINPUT;
        }
    return 0;
}

/* The rows grouped into classes by (gpu, backend, shape class), in the file's order: each
 * class's space is the configurations it has a row of, a failed row a candidate without a
 * time. 0, 1 out of memory, 2 a bad row (said). *cls holds what was grouped, even on failure. */
static int group_classes(const csv_table *ex, const int col[6], const char *path, rclass **cls, size_t *ncls)
{
    char err[FB_ERRLEN];
    int fail = 0;
    for (size_t r = 0; r < ex->nrows && !fail; r++) {
        char **row = ex->rows[r];
        size_t k = 0;
        while (k < *ncls && (strcmp((*cls)[k].gpu, row[col[0]]) || strcmp((*cls)[k].backend, row[col[1]]) ||
                             strcmp((*cls)[k].cls, row[col[2]])))
            k++;
        if (k == *ncls) {
            rclass *nc = realloc(*cls, sizeof *nc * (*ncls + 1));
            if (!nc) { fail = 1; break; }
            *cls = nc;
            rclass *c = &nc[*ncls];
            memset(c, 0, sizeof *c);
            snprintf(c->gpu, sizeof c->gpu, "%s", row[col[0]]);
            snprintf(c->backend, sizeof c->backend, "%s", row[col[1]]);
            snprintf(c->cls, sizeof c->cls, "%s", row[col[2]]);
            (*ncls)++;
        }
        double us = NAN;
        if (!strcmp(row[col[4]], "ok")) {
            char *end;
            us = strtod(row[col[5]], &end);
            if (end == row[col[5]] || *end || !(us > 0) || !isfinite(us)) {
                fprintf(stderr, "fabench tune-replay: %s:%d: median_us: not a positive time: '%s'\n", path,
                        ex->row_line[r], row[col[5]]);
                fail = 2;
                break;
            }
        }
        int a = add_cand(&(*cls)[k], row[col[3]], us, err, sizeof err);
        if (a == 2) {
            fprintf(stderr, "fabench tune-replay: %s:%d: config: %s\n", path, ex->row_line[r], err);
            fail = 2;
        } else if (a) fail = 1;
    }
    return fail;
}

/* Per strategy, over every run: for the summary. */
typedef struct {
    long runs, hits;  /* runs; runs within tolerance at the budget */
    double ratio_log; /* sum of log(best at the budget / optimum) */
    long *steps;      /* per run, the step that came within tolerance (-1: never) */
    size_t nsteps;
} tally;

/* The replay's state: the options, the classes, convergence.csv's rows, the tallies. */
typedef struct {
    const replay_opts *o;
    rclass *cls;
    size_t ncls;
    csv_table *conv; /* NULL without --out */
    tally t[8];      /* per strategy of o->strat */
    size_t used;     /* classes replayed: big enough, with a verified time */
} replay_state;

/* What every run over one class shares. */
typedef struct {
    size_t k;       /* the class: st->cls[k] */
    double opt;     /* its best recorded time */
    long budget;    /* steps that count: frac of its space, rounded up */
    long first_idx; /* --first's candidate, -1 none */
} class_run;

/* The class's fastest verified time; INFINITY when it has none. */
static double class_best(const rclass *c)
{
    double opt = INFINITY;
    for (long i = 0; i < c->n; i++)
        if (!isnan(c->us[i]) && c->us[i] < opt) opt = c->us[i];
    return opt;
}

/* --first's candidate in class c: the first one that --first's parameters, laid over it,
 * leave as it is; -1 when none. */
static long first_candidate(const rclass *c, const kconfig *fk)
{
    for (long i = 0; i < c->n; i++) {
        kconfig m = c->cands[i];
        char a[KCONFIG_STR_MAX], b[KCONFIG_STR_MAX];
        kconfig_overlay(&m, fk);
        kconfig_str(&m, a, sizeof a);
        kconfig_str(&c->cands[i], b, sizeof b);
        if (!strcmp(a, b)) return i;
    }
    return -1;
}

/* One step of a run as a convergence.csv row: the time asked for (empty when it failed),
 * the best so far (empty before any verified time) and the class's optimum. 0, or 1 out of memory. */
static int conv_add(csv_table *conv, const rclass *c, const char *strat, long seed, long step, long idx, double best,
                    double opt)
{
    char f[5][48];
    snprintf(f[0], 48, "%ld", seed);
    snprintf(f[1], 48, "%ld", step);
    if (isnan(c->us[idx])) f[2][0] = 0; else snprintf(f[2], 48, "%.3f", c->us[idx]);
    if (isfinite(best)) snprintf(f[3], 48, "%.3f", best); else f[3][0] = 0;
    snprintf(f[4], 48, "%.3f", opt);
    const char *row[CONV_NCOLS] = {c->gpu, c->backend, c->cls, strat, f[0], f[1], c->cfg[idx], f[2], f[3], f[4]};
    return csvt_add(conv, row) ? 1 : 0;
}

/* One run of searcher se (strategy si, seed) over a class, told the recorded times until
 * it stops asking. *at_budget: the best after cr->budget steps (INFINITY: none verified by
 * then); *found: the step whose best came within tolerance of the optimum, -1 never. 0, or
 * 1 when a convergence row failed (out of memory; the run still finishes). */
static int replay_run(const replay_state *st, const class_run *cr, int si, searcher *se, long seed, double *at_budget,
                      long *found)
{
    const rclass *c = &st->cls[cr->k];
    int fail = 0;
    if (cr->first_idx >= 0) searcher_first(se, cr->first_idx);
    if (!st->o->no_borrow) replay_seeds(se, st->cls, st->ncls, cr->k); /* local and staged; the others ignore seeds */
    searcher_budget(se, cr->budget);             /* halving only: its first rung */
    double best = INFINITY;
    long step = 0, idx;
    *at_budget = INFINITY;
    *found = -1;
    while ((idx = searcher_ask(se)) >= 0) {
        if (searcher_rung(se) > 0) { /* halving timing a survivor again: the same record */
            searcher_tell(se, idx, c->us[idx]);
            continue;
        }
        step++;
        searcher_tell(se, idx, c->us[idx]);
        if (!isnan(c->us[idx]) && c->us[idx] < best) best = c->us[idx];
        if (step == cr->budget) *at_budget = best;
        if (*found < 0 && best <= cr->opt * (1 + st->o->tol)) *found = step;
        if (st->conv && conv_add(st->conv, c, st->o->strat[si], seed, step, idx, best, cr->opt)) fail = 1;
    }
    return fail;
}

/* Counts one run in its strategy's tally: 0, or -1 out of memory. */
static int tally_add(tally *t, int hit, double at_budget, double opt, long found)
{
    t->runs++;
    t->hits += hit;
    t->ratio_log += log(isfinite(at_budget) ? at_budget / opt : 1e3);
    long *grown = realloc(t->steps, sizeof *grown * (t->nsteps + 1));
    if (!grown) return -1;
    t->steps = grown;
    t->steps[t->nsteps++] = found;
    return 0;
}

/* Strategy si over one class, once per seed, and its line: how many runs came within
 * tolerance at the budget. 0, or 1 out of memory (the line is printed still). */
static int replay_strategy(replay_state *st, const class_run *cr, int si)
{
    const rclass *c = &st->cls[cr->k];
    const char *name = st->o->strat[si];
    /* exhaustive and staged follow the file's order: one run tells all */
    const long ns = strcmp(name, "exhaustive") && strcmp(name, "staged") ? st->o->seeds : 1;
    long class_hits = 0;
    int fail = 0;
    for (long seed = 1; seed <= ns && !fail; seed++) {
        searcher *se = searcher_new(name, c->cands, c->n, (uint64_t)seed);
        if (!se) { fail = 1; break; }
        double at_budget;
        long found;
        fail = replay_run(st, cr, si, se, seed, &at_budget, &found);
        searcher_free(se);
        const int hit = at_budget <= cr->opt * (1 + st->o->tol);
        class_hits += hit;
        if (tally_add(&st->t[si], hit, at_budget, cr->opt, found) != 0) { fail = 1; break; }
    }
    printf("  %-10s within %.0f%% after %ld timed: %ld of %ld runs\n", name, st->o->tol * 100, cr->budget, class_hits, ns);
    return fail;
}

/* Class k under every strategy, after its line; a class smaller than --min-configs or
 * without a verified time is left out. 0, or 1 out of memory. */
static int replay_class(replay_state *st, size_t k)
{
    const rclass *c = &st->cls[k];
    const replay_opts *o = st->o;
    class_run cr = {.k = k, .opt = class_best(c), .first_idx = -1};
    if (c->n < o->min_configs || !isfinite(cr.opt)) return 0;
    st->used++;
    cr.budget = (long)ceil(o->frac * (double)c->n);
    if (o->first) cr.first_idx = first_candidate(c, &o->fk);
    printf("%s %s %s: %ld configurations, best %.2f us%s\n", c->gpu, c->backend, c->cls, c->n, cr.opt,
           !o->first ? "" : cr.first_idx >= 0 ? "; --first asked first" : "; --first not among them");
    int fail = 0;
    for (int si = 0; si < o->nstrat && !fail; si++) fail = replay_strategy(st, &cr, si);
    return fail;
}

/* Per strategy over all classes: runs within tolerance at the budget, the geometric mean
 * of best / optimum, and the median steps to come within tolerance. */
static void print_summary(replay_state *st)
{
    const replay_opts *o = st->o;
    printf("summary over %zu classes (budget: %.0f%% of each class's space; tolerance %.0f%%):\n", st->used, o->frac * 100,
           o->tol * 100);
    for (int si = 0; si < o->nstrat; si++) {
        tally *t = &st->t[si];
        /* a run that never got there sorts last */
        for (size_t i = 0; i < t->nsteps; i++)
            if (t->steps[i] < 0) t->steps[i] = LONG_MAX;
        qsort(t->steps, t->nsteps, sizeof t->steps[0], cmp_long);
        long med = t->nsteps ? t->steps[t->nsteps / 2] : LONG_MAX;
        if (med == LONG_MAX) med = -1;
        printf("  %-10s %ld of %ld runs within tolerance at the budget; geomean best/optimum %.3f; median configurations timed to reach it: %s%ld\n",
               o->strat[si], t->hits, t->runs, t->runs ? exp(t->ratio_log / (double)t->runs) : NAN,
               med < 0 ? "not reached in most runs " : "", med < 0 ? 0 : med);
    }
}

static void state_free(replay_state *st)
{
    for (int si = 0; si < st->o->nstrat; si++) free(st->t[si].steps);
    for (size_t k = 0; k < st->ncls; k++) {
        free(st->cls[k].cands);
        free(st->cls[k].cfg);
        free(st->cls[k].us);
    }
    free(st->cls);
    csvt_free(st->conv);
}

int cmd_tune_replay(int argc, char **argv)
{
    replay_opts o;
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) return rc;
    csv_table *ex;
    int col[6];
    if ((rc = read_explored(o.path, &ex, col)) != 0) return rc;

    replay_state st = {.o = &o};
    int fail = group_classes(ex, col, o.path, &st.cls, &st.ncls); /* 0, 1 out of memory, 2 bad input */
    st.conv = o.out ? csvt_new(conv_header, CONV_NCOLS) : NULL;
    if (o.out && !st.conv) fail = 1;
    for (size_t k = 0; k < st.ncls && !fail; k++) fail = replay_class(&st, k);
    if (!fail && !st.used) {
        fprintf(stderr, "fabench tune-replay: %s: no class has %ld or more recorded configurations with a verified time\n",
                o.path, o.min_configs);
        fail = 2;
    }
    if (!fail) print_summary(&st);
    char err[FB_ERRLEN];
    if (!fail && st.conv && csvt_write_atomic(st.conv, o.out, err, sizeof err) != 0) {
        fprintf(stderr, "fabench tune-replay: %s\n", err);
        fail = 1;
    }
    state_free(&st);
    csvt_free(ex);
    if (fail == 1) fprintf(stderr, "fabench tune-replay: out of memory\n");
    return fail == 2 ? FB_EXIT_BADINPUT : fail;
}
