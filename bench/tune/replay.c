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
            "  --out FILE         convergence.csv (best so far after each step)\n\n"
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

int cmd_tune_replay(int argc, char **argv)
{
    enum { O_STRAT = 1, O_SEEDS, O_FRAC, O_TOL, O_MIN, O_OUT, O_FIRST, O_HELP };
    static const struct option opts[] = {
        {"strategy", required_argument, 0, O_STRAT}, {"seeds", required_argument, 0, O_SEEDS},
        {"budget-frac", required_argument, 0, O_FRAC}, {"tolerance", required_argument, 0, O_TOL},
        {"min-configs", required_argument, 0, O_MIN}, {"out", required_argument, 0, O_OUT},
        {"first", required_argument, 0, O_FIRST},
        {"help", no_argument, 0, O_HELP}, {0, 0, 0, 0}};
    const char *strategies = "random,bo", *out = NULL, *first = NULL;
    long seeds = 20, min_configs = 16;
    double frac = 0.25, tol = 0.05;
    int o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end = NULL;
        switch (o) {
        case O_STRAT: strategies = optarg; break;
        case O_SEEDS:
            seeds = strtol(optarg, &end, 10);
            if (*end || end == optarg || seeds < 1 || seeds > 100000) { fprintf(stderr, "fabench tune-replay: --seeds: bad count '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            break;
        case O_FRAC:
            frac = strtod(optarg, &end);
            if (*end || end == optarg || !(frac > 0 && frac <= 1)) { fprintf(stderr, "fabench tune-replay: --budget-frac: want 0 < F <= 1, got '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            break;
        case O_TOL:
            tol = strtod(optarg, &end);
            if (*end || end == optarg || !(tol >= 0 && tol < 10)) { fprintf(stderr, "fabench tune-replay: --tolerance: bad value '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            break;
        case O_MIN:
            min_configs = strtol(optarg, &end, 10);
            if (*end || end == optarg || min_configs < 1 || min_configs > 1000000) { fprintf(stderr, "fabench tune-replay: --min-configs: bad count '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            break;
        case O_OUT: out = optarg; break;
        case O_FIRST: first = optarg; break;
        case O_HELP: usage(stdout); return 0;
        default: usage(stderr); return FB_EXIT_BADINPUT;
        }
    }
    if (optind != argc - 1) { usage(stderr); return FB_EXIT_BADINPUT; }
    const char *path = argv[optind];
    /* --first: the parameters it sets; a candidate matches when it has the same values */
    kconfig fk;
    memset(&fk, 0, sizeof fk);
    if (first) {
        char ferr[256];
        if (kconfig_parse(first, &fk, ferr, sizeof ferr) != 0) {
            fprintf(stderr, "fabench tune-replay: --first: %s\n", ferr);
            return FB_EXIT_BADINPUT;
        }
    }
    /* the strategies, checked before any work */
    char slist[256];
    snprintf(slist, sizeof slist, "%s", strategies);
    const char *strat[8];
    int nstrat = 0;
    char *save = NULL;
    for (char *tok = strtok_r(slist, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!search_strategy_known(tok) || nstrat == 8) {
            fprintf(stderr, "fabench tune-replay: --strategy: unknown or too many: '%s' (known: " SEARCH_STRATEGIES ")\n",
                    tok);
            return FB_EXIT_BADINPUT;
        }
        strat[nstrat++] = tok;
    }
    if (!nstrat) { fprintf(stderr, "fabench tune-replay: --strategy: empty list\n"); return FB_EXIT_BADINPUT; }

    char err[FB_ERRLEN];
    csv_table *ex;
    int rc = csvt_read(path, &ex, err, sizeof err);
    if (rc) { fprintf(stderr, "fabench tune-replay: %s\n", err); return rc == 2 ? FB_EXIT_BADINPUT : 1; }
    const char *need[] = {"gpu", "backend", "shape_class", "config", "status", "median_us"};
    int col[6];
    for (int i = 0; i < 6; i++)
        if ((col[i] = csvt_col(ex, need[i])) < 0) {
            fprintf(stderr, "fabench tune-replay: %s:1: no column '%s' (not an explored.csv)\n", path, need[i]);
            csvt_free(ex);
            return FB_EXIT_BADINPUT;
        }

    rclass *cls = NULL;
    size_t ncls = 0;
    int fail = 0;
    for (size_t r = 0; r < ex->nrows && !fail; r++) {
        char **row = ex->rows[r];
        size_t k = 0;
        while (k < ncls && (strcmp(cls[k].gpu, row[col[0]]) || strcmp(cls[k].backend, row[col[1]]) ||
                            strcmp(cls[k].cls, row[col[2]])))
            k++;
        if (k == ncls) {
            rclass *nc = realloc(cls, sizeof *nc * (ncls + 1));
            if (!nc) { fail = 1; break; }
            cls = nc;
            memset(&cls[ncls], 0, sizeof cls[0]);
            snprintf(cls[ncls].gpu, sizeof cls[0].gpu, "%s", row[col[0]]);
            snprintf(cls[ncls].backend, sizeof cls[0].backend, "%s", row[col[1]]);
            snprintf(cls[ncls].cls, sizeof cls[0].cls, "%s", row[col[2]]);
            ncls++;
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
        int a = add_cand(&cls[k], row[col[3]], us, err, sizeof err);
        if (a == 2) {
            fprintf(stderr, "fabench tune-replay: %s:%d: config: %s\n", path, ex->row_line[r], err);
            fail = 2;
        } else if (a) fail = 1;
    }
    csv_table *conv = out ? csvt_new(conv_header, CONV_NCOLS) : NULL;
    if (out && !conv) fail = 1;

    /* per strategy: runs, runs within tolerance at the budget, steps-to-tolerance list */
    long runs[8] = {0}, hits[8] = {0};
    double ratio_log[8] = {0};
    long *steps[8] = {0};
    size_t nsteps[8] = {0};
    size_t used = 0;
    for (size_t k = 0; k < ncls && !fail; k++) {
        rclass *c = &cls[k];
        double opt = INFINITY;
        for (long i = 0; i < c->n; i++)
            if (!isnan(c->us[i]) && c->us[i] < opt) opt = c->us[i];
        if (c->n < min_configs || !isfinite(opt)) continue;
        used++;
        const long budget = (long)ceil(frac * (double)c->n);
        long first_idx = -1;
        for (long i = 0; first && i < c->n && first_idx < 0; i++) {
            kconfig m = c->cands[i];
            char a[KCONFIG_STR_MAX], b[KCONFIG_STR_MAX];
            kconfig_overlay(&m, &fk);
            kconfig_str(&m, a, sizeof a);
            kconfig_str(&c->cands[i], b, sizeof b);
            if (!strcmp(a, b)) first_idx = i;
        }
        printf("%s %s %s: %ld configurations, best %.2f us%s\n", c->gpu, c->backend, c->cls, c->n, opt,
               !first ? "" : first_idx >= 0 ? "; --first asked first" : "; --first not among them");
        for (int si = 0; si < nstrat && !fail; si++) {
            /* exhaustive and staged follow the file's order: one run tells all */
            const long ns = strcmp(strat[si], "exhaustive") && strcmp(strat[si], "staged") ? seeds : 1;
            long class_hits = 0;
            for (long seed = 1; seed <= ns && !fail; seed++) {
                searcher *se = searcher_new(strat[si], c->cands, c->n, (uint64_t)seed);
                if (!se) { fail = 1; break; }
                if (first_idx >= 0) searcher_first(se, first_idx);
                replay_seeds(se, cls, ncls, k); /* local only; the others ignore seeds */
                searcher_budget(se, budget);    /* halving only: its first rung */
                double best = INFINITY, at_budget = INFINITY;
                long step = 0, found = -1, idx;
                while ((idx = searcher_ask(se)) >= 0) {
                    if (searcher_rung(se) > 0) { /* halving timing a survivor again: the same record */
                        searcher_tell(se, idx, c->us[idx]);
                        continue;
                    }
                    step++;
                    searcher_tell(se, idx, c->us[idx]);
                    if (!isnan(c->us[idx]) && c->us[idx] < best) best = c->us[idx];
                    if (step == budget) at_budget = best;
                    if (found < 0 && best <= opt * (1 + tol)) found = step;
                    if (conv) {
                        char f[5][48];
                        snprintf(f[0], 48, "%ld", seed);
                        snprintf(f[1], 48, "%ld", step);
                        if (isnan(c->us[idx])) f[2][0] = 0; else snprintf(f[2], 48, "%.3f", c->us[idx]);
                        if (isfinite(best)) snprintf(f[3], 48, "%.3f", best); else f[3][0] = 0;
                        snprintf(f[4], 48, "%.3f", opt);
                        const char *row[CONV_NCOLS] = {c->gpu, c->backend, c->cls, strat[si], f[0], f[1],
                                                       c->cfg[idx], f[2], f[3], f[4]};
                        if (csvt_add(conv, row)) fail = 1;
                    }
                }
                searcher_free(se);
                runs[si]++;
                if (at_budget <= opt * (1 + tol)) { hits[si]++; class_hits++; }
                ratio_log[si] += log(isfinite(at_budget) ? at_budget / opt : 1e3);
                long *ns2 = realloc(steps[si], sizeof *ns2 * (nsteps[si] + 1));
                if (!ns2) { fail = 1; break; }
                steps[si] = ns2;
                steps[si][nsteps[si]++] = found;
            }
            printf("  %-10s within %.0f%% after %ld timed: %ld of %ld runs\n", strat[si], tol * 100, budget,
                   class_hits, ns);
        }
    }
    if (!fail && !used) {
        fprintf(stderr, "fabench tune-replay: %s: no class has %ld or more recorded configurations with a verified time\n",
                path, min_configs);
        fail = 2;
    }
    if (!fail) {
        printf("summary over %zu classes (budget: %.0f%% of each class's space; tolerance %.0f%%):\n", used, frac * 100,
               tol * 100);
        for (int si = 0; si < nstrat; si++) {
            /* a run that never got there sorts last */
            for (size_t i = 0; i < nsteps[si]; i++)
                if (steps[si][i] < 0) steps[si][i] = LONG_MAX;
            qsort(steps[si], nsteps[si], sizeof steps[si][0], cmp_long);
            long med = nsteps[si] ? steps[si][nsteps[si] / 2] : LONG_MAX;
            if (med == LONG_MAX) med = -1;
            printf("  %-10s %ld of %ld runs within tolerance at the budget; geomean best/optimum %.3f; median configurations timed to reach it: %s%ld\n",
                   strat[si], hits[si], runs[si], runs[si] ? exp(ratio_log[si] / (double)runs[si]) : NAN,
                   med < 0 ? "not reached in most runs " : "", med < 0 ? 0 : med);
        }
    }
    if (!fail && conv && csvt_write_atomic(conv, out, err, sizeof err) != 0) {
        fprintf(stderr, "fabench tune-replay: %s\n", err);
        fail = 1;
    }
    for (int si = 0; si < nstrat; si++) free(steps[si]);
    for (size_t k = 0; k < ncls; k++) {
        free(cls[k].cands);
        free(cls[k].cfg);
        free(cls[k].us);
    }
    free(cls);
    csvt_free(conv);
    csvt_free(ex);
    if (fail == 1) fprintf(stderr, "fabench tune-replay: out of memory\n");
    return fail == 2 ? FB_EXIT_BADINPUT : fail;
}
