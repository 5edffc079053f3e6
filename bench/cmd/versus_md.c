/* versus_md.c: `fabench versus --markdown`: one run's comparison as a Markdown table per
 * suite, the table README's "The answer so far" is generated from (tools/readme-summary.sh). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "csvio.h"
#include "shapes.h"
#include "versus.h"

typedef struct {
    char name[64];
    shape_list_t shapes;
} suite;

static void free_suites(suite *su, size_t n)
{
    for (size_t i = 0; i < n; i++) shapes_free(&su[i].shapes);
    free(su);
}

/* Every suite of bench/suites/, in name order. 0, or -1 with err. */
static int load_suites(suite **out, size_t *n, char *err, size_t errlen)
{
    char list[2048];
    shapes_list_suites(list, sizeof list);
    size_t cap = 1;
    for (const char *c = list; *c; c++) cap += *c == ',';
    suite *su = calloc(cap, sizeof *su);
    if (!su) { snprintf(err, errlen, "out of memory"); return -1; }
    size_t k = 0;
    for (char *tok = strtok(list, ", "); tok && k < cap; tok = strtok(NULL, ", ")) {
        snprintf(su[k].name, sizeof su[k].name, "%s", tok);
        if (shapes_load_suite(tok, &su[k].shapes, err, errlen) != 0) {
            free_suites(su, k);
            return -1;
        }
        k++;
    }
    *out = su;
    *n = k;
    return 0;
}

/* Is e's shape one of the suite's: the same name and dimensions (perf_entry.shape without
 * its dtype, which a suite may leave to the command)? */
static int in_suite(const suite *su, const perf_entry *e)
{
    const char *dims = strchr(e->shape, ' ');
    if (!dims) return 0;
    for (size_t i = 0; i < su->shapes.n; i++) {
        const shape_t *s = &su->shapes.v[i];
        char mine[160];
        snprintf(mine, sizeof mine, " b%d h%d/%d q%d k%d d%d c%d", s->batch, s->hq, s->hkv, s->sq, s->skv, s->d,
                 s->causal);
        if (!strcmp(s->name, e->name) && !strcmp(mine, dims)) return 1;
    }
    return 0;
}

/* The run with the most shapes paired (a tie: the one measured last, then the greater id),
 * its count, and how many runs paired any. NULL when none did. */
static const char *busiest_run(const vs_pairs *ps, const perf_side *s, long *paired, int *nruns)
{
    perf_run *runs = NULL;
    size_t nr = 0;
    long none = 0;
    *paired = 0;
    *nruns = 0;
    if (perf_runs(s, &runs, &nr, &none) != 0) return NULL;
    const char *best = NULL, *best_last = "";
    for (size_t k = 0; k < nr; k++) {
        long n = 0;
        for (size_t i = 0; i < ps->n; i++) n += !strcmp(ps->p[i].ours->run_id, runs[k].id);
        if (!n) continue;
        (*nruns)++;
        const int later = strcmp(runs[k].last, best_last);
        if (!best || n > *paired || (n == *paired && (later > 0 || (later == 0 && strcmp(runs[k].id, best) > 0)))) {
            best = runs[k].id;
            best_last = runs[k].last;
            *paired = n;
        }
    }
    free(runs);
    return best;
}

/* The manifest beside the file: DIR/manifest.csv, or X-manifest.csv for X-perf.csv (as
 * tools/rounds.sh names them). NULL when there is none. */
static csv_table *load_manifest(const perf_side *s)
{
    char path[4300], err[FB_ERRLEN];
    const char *slash = strrchr(s->path, '/');
    const char *base = slash ? slash + 1 : s->path;
    const int dirlen = slash ? (int)(slash - s->path) : 1;
    const char *dir = slash ? s->path : ".";
    const size_t bl = strlen(base);
    if (bl > 9 && !strcmp(base + bl - 9, "-perf.csv"))
        snprintf(path, sizeof path, "%.*s/%.*s-manifest.csv", dirlen, dir, (int)(bl - 9), base);
    else snprintf(path, sizeof path, "%.*s/manifest.csv", dirlen, dir);
    csv_table *m = NULL;
    if (csvt_read(path, &m, err, sizeof err) != 0) return NULL;
    if (m->ncols < 2) { csvt_free(m); return NULL; }
    return m;
}

/* The manifest's value of prefix+key, or "" */
static const char *mget(const csv_table *m, const char *prefix, const char *key)
{
    char k[256];
    snprintf(k, sizeof k, "%s%s", prefix, key);
    for (size_t r = 0; m && r < m->nrows; r++)
        if (!strcmp(m->rows[r][0], k)) return m->rows[r][1];
    return "";
}

/* The manifest's keys of this run: "update.N." when an --update command of the run wrote
 * them (its update.N.run_id), else "" (the folder's own keys). */
static void run_prefix(const csv_table *m, const char *run, char *out, size_t len)
{
    out[0] = 0;
    for (size_t r = 0; m && r < m->nrows; r++) {
        const char *k = m->rows[r][0];
        const size_t digits = strncmp(k, "update.", 7) ? 0 : strspn(k + 7, "0123456789");
        if (!digits || strcmp(k + 7 + digits, ".run_id") || strcmp(m->rows[r][1], run)) continue;
        snprintf(out, len, "%.*s", (int)(7 + digits + 1), k);
        return;
    }
}

/* "2026-12-07 09:21-09:22 UTC" from the run's first and last row (utc), else the manifest's
 * date */
static void run_dates(const char *first, const char *last, const char *date, char *out, size_t len)
{
    if (!*first) {
        if (strlen(date) >= 16) snprintf(out, len, "%.10s %.5s UTC (the manifest's date)", date, date + 11);
        else snprintf(out, len, "undated");
    } else if (strlen(first) < 16 || strlen(last) < 16) {
        snprintf(out, len, "%s", first);
    } else if (strncmp(first, last, 10)) {
        snprintf(out, len, "%.10s %.5s to %.10s %.5s UTC", first, first + 11, last, last + 11);
    } else if (strncmp(first, last, 16)) {
        snprintf(out, len, "%.10s %.5s-%.5s UTC", first, first + 11, last + 11);
    } else {
        snprintf(out, len, "%.10s %.5s UTC", first, first + 11);
    }
}

static void print_heading(FILE *out, const char *arg, const perf_side *s, const vs_pairs *ps, const char *run,
                          int nruns)
{
    csv_table *m = load_manifest(s);
    char prefix[64], when[96], label[4200];
    run_prefix(m, run, prefix, sizeof prefix);
    perf_run *runs = NULL;
    size_t nr = 0;
    long none = 0;
    const char *first = "", *last = "";
    if (perf_runs(s, &runs, &nr, &none) == 0)
        for (size_t k = 0; k < nr; k++)
            if (!strcmp(runs[k].id, run)) { first = runs[k].first; last = runs[k].last; }
    run_dates(first, last, *mget(m, prefix, "date") ? mget(m, prefix, "date") : mget(m, "", "date"), when, sizeof when);
    free(runs);
    const char *gpu = *mget(m, "", "gpu") ? mget(m, "", "gpu") : *ps->p[0].ours->gpu ? ps->p[0].ours->gpu : "GPU not named";
    const char *commit = *mget(m, prefix, "git_commit") ? mget(m, prefix, "git_commit") : mget(m, "", "git_commit");
    const char *dirty = *mget(m, prefix, "git_commit") ? mget(m, prefix, "git_dirty") : mget(m, "", "git_dirty");
    snprintf(label, sizeof label, "%s", arg);
    for (size_t l = strlen(label); l > 1 && label[l - 1] == '/'; l--) label[l - 1] = 0;
    fprintf(out, "**%s**: %s, run `%s`", label, gpu, run);
    if (nruns > 1) fprintf(out, " (of the %d runs in the file, the one with the most shapes paired)", nruns);
    fprintf(out, ", %s, commit %.7s%s\n\n", when, *commit ? commit : "unknown",
            !strcmp(dirty, "yes") ? " with uncommitted changes" : "");
    csvt_free(m);
}

typedef struct {
    long n, won[3];
    double lsum;
} md_tally;

static void md_row(FILE *out, const char *name, const md_tally *t)
{
    if (!t->n) return;
    fprintf(out, "| %s | %ld | %.3fx | %ld | %ld | %ld |\n", name, t->n, exp(t->lsum / t->n), t->won[SPREAD_FASTER],
            t->won[SPREAD_TIE], t->won[SPREAD_SLOWER]);
}

static void md_add(md_tally *t, const vs_pair *q)
{
    t->n++;
    t->won[q->v]++;
    t->lsum += log(q->speedup);
}

static void print_suites(FILE *out, const vs_pairs *ps, const suite *su, size_t nsu)
{
    fprintf(out, "| suite | shapes | speedup over the best vendor (geomean) | faster | tie | slower |\n"
                 "| --- | ---: | ---: | ---: | ---: | ---: |\n");
    md_tally other = {0}, all = {0};
    for (size_t k = 0; k < nsu; k++) {
        md_tally t = {0};
        for (size_t i = 0; i < ps->n; i++)
            if (in_suite(&su[k], ps->p[i].ours)) md_add(&t, &ps->p[i]);
        md_row(out, su[k].name, &t);
    }
    for (size_t i = 0; i < ps->n; i++) {
        int named = 0;
        for (size_t k = 0; k < nsu && !named; k++) named = in_suite(&su[k], ps->p[i].ours);
        if (!named) md_add(&other, &ps->p[i]);
        md_add(&all, &ps->p[i]);
    }
    md_row(out, "other", &other);
    md_row(out, "all", &all);
}

int vs_markdown(const char *arg, const perf_side *s, const vs_filter *f, FILE *out, char *err, size_t errlen)
{
    vs_pairs ps;
    if (vs_collect(s, f, &ps) != 0) { snprintf(err, errlen, "out of memory"); return -1; }
    long paired = 0;
    int nruns = 0;
    const char *run = busiest_run(&ps, s, &paired, &nruns);
    if (!run) {
        if (!s->has_run_id)
            snprintf(err, errlen, "%.900s: its rows predate run ids (no run_id column): no run to summarise", s->path);
        else
            snprintf(err, errlen, "%.900s: no run%s%.80s has an ok portable row and an ok vendor row of the same shape",
                     s->path, f->run ? " " : "", f->run ? f->run : "");
        vs_pairs_free(&ps);
        return 1;
    }
    vs_filter one = *f;
    one.run = run;
    vs_pairs mine;
    suite *su = NULL;
    size_t nsu = 0;
    int rc = vs_collect(s, &one, &mine) != 0 ? (snprintf(err, errlen, "out of memory"), -1) : 0;
    if (rc == 0 && (rc = load_suites(&su, &nsu, err, errlen)) != 0) vs_pairs_free(&mine);
    if (rc == 0) {
        print_heading(out, arg, s, &mine, run, f->run ? 1 : nruns);
        print_suites(out, &mine, su, nsu);
        free_suites(su, nsu);
        vs_pairs_free(&mine);
    }
    vs_pairs_free(&ps);
    return rc;
}
