/* versus.c: `fabench versus RESULTS`: within one results folder, the portable kernel against
 * every vendor and against the best vendor of each shape, rows of one run paired, with
 * geometric means and counts of faster / tie / slower by the p20..p80 spreads. */
#include "versus.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "csvio.h"
#include "perf_load.h"

static void versus_usage(FILE *f)
{
    fprintf(f,
            "usage: fabench versus [--shapes FILE] [--run ID] [--any-run] [--csv FILE] [--bandwidth FILE] RESULTS\n"
            "       fabench versus [--shapes FILE] [--run ID] --markdown RESULTS\n\n"
            "RESULTS: a results folder (its perf.csv) or a perf.csv file. For every shape with an ok\n"
            "row of the portable kernel and at least one ok vendor row of the same backend, name,\n"
            "dimensions and run (run_id), the speedup of the portable kernel over each vendor (the\n"
            "vendor's median time over the portable one's: above 1 the portable kernel is faster)\n"
            "and over the best vendor of that shape, with a verdict: faster only when the portable\n"
            "row's p80 is below the vendor's p20, slower only when its p20 is above the vendor's\n"
            "p80, else a tie. Then the geometric means over the shapes, against the best vendor,\n"
            "against each vendor and per head dim, each with its counts of faster / tie / slower.\n"
            "Rows are paired only within one run (the vendors and the kernel measured back to back):\n"
            "a shape whose rows would pair only across runs, or lack a run id (files written before\n"
            "run ids), is left out, and stderr says how many.\n\n"
            "  --shapes FILE  only the shapes this shapes file names (its name column)\n"
            "  --run ID       only the portable kernel's rows of run ID (perf.csv's run_id)\n"
            "  --any-run      pair rows across runs, and rows without a run id, too; the output\n"
            "                 says how many shapes crossed runs\n"
            "  --csv FILE     also write the per-shape table as CSV (atomically), with each shape's\n"
            "                 verdict and run\n"
            "  --bandwidth F  also hold the memory-bound shapes (decode: at most 16 query rows a\n"
            "                 sequence) against the best copy rate F (a bandwidth.csv of `fabench\n"
            "                 bandwidth`) holds for the GPU: ours' and the best vendor's bytes moved\n"
            "                 over time as a share of it, and a summary over B >= 16, Skv >= 4096\n"
            "  --markdown     print only a Markdown summary of one run (--run ID, else the run\n"
            "                 with the most shapes paired): the run, GPU, dates and commit (from\n"
            "                 the manifest beside the file), then per suite of bench/suites/ (a\n"
            "                 shape in none: other) and in all: shapes, the geomean speedup over\n"
            "                 the best vendor, faster / tie / slower (tools/readme-summary.sh)\n\n"
            "Exit status: 0 compared, 1 no shape with both, 2 bad usage or input (FILE:LINE: field).\n");
}

/* the names in a shapes file's first column (after its header), or -1 with err */
static int shape_names(const char *path, csv_table **t, int *col, char *err, size_t errlen)
{
    if (csvt_read(path, t, err, errlen) != 0) return -1;
    *col = csvt_col(*t, "name");
    if (*col < 0) {
        snprintf(err, errlen, "%.900s:1: name: required column missing (is this a shapes file?)", path);
        return -1;
    }
    return 0;
}

/* ---------- pairing ---------- */

static int same_problem(const perf_entry *a, const perf_entry *b)
{
    return !strcmp(a->backend, b->backend) && !strcmp(a->name, b->name) && !strcmp(a->shape, b->shape);
}

/* rows of one run: both carry the same id (rows without one are of no known run) */
static int same_run(const perf_entry *a, const perf_entry *b) { return *a->run_id && !strcmp(a->run_id, b->run_id); }

int vs_pairable(const perf_entry *ours, const perf_entry *v, int any_run)
{
    return strcmp(v->impl, "portable") && v->ok && same_problem(ours, v) && (any_run || same_run(ours, v));
}

static int selected(const perf_entry *p, const vs_filter *f)
{
    if (strcmp(p->impl, "portable") || !p->ok) return 0;
    if (f->run && strcmp(p->run_id, f->run)) return 0;
    if (!f->names) return 1;
    for (size_t r = 0; r < f->names->nrows; r++)
        if (!strcmp(f->names->rows[r][f->ncol], p->name)) return 1;
    return 0;
}

/* The shapes among `lone` (our rows that pair only across runs) with no pair at all: a
 * shape of several runs paired in one of them is not left out. */
static long count_left_out(const perf_entry *const *lone, size_t nlone, const vs_pairs *got)
{
    long n = 0;
    for (size_t i = 0; i < nlone; i++) {
        int seen = 0;
        for (size_t j = 0; j < got->n && !seen; j++) seen = same_problem(lone[i], got->p[j].ours);
        for (size_t j = 0; j < i && !seen; j++) seen = same_problem(lone[i], lone[j]);
        n += !seen;
    }
    return n;
}

int vs_collect(const perf_side *s, const vs_filter *f, vs_pairs *out)
{
    memset(out, 0, sizeof *out);
    out->p = calloc(s->n + 1, sizeof *out->p);
    const perf_entry **lone = calloc(s->n + 1, sizeof *lone);
    if (!out->p || !lone) { free(lone); vs_pairs_free(out); return -1; }
    size_t nlone = 0;
    for (size_t i = 0; i < s->n; i++) {
        const perf_entry *p = &s->e[i];
        if (!selected(p, f)) continue;
        const perf_entry *best = NULL;
        int crossed = 0, elsewhere = 0;
        for (size_t j = 0; j < s->n; j++) {
            const perf_entry *v = &s->e[j];
            if (!vs_pairable(p, v, f->any_run)) {
                elsewhere |= vs_pairable(p, v, 1);
                continue;
            }
            if (!best || v->med < best->med) best = v;
            crossed |= !same_run(p, v);
        }
        if (!best) {
            if (elsewhere) lone[nlone++] = p;
            continue;
        }
        out->p[out->n++] = (vs_pair){.ours = p, .best = best, .speedup = best->med / p->med,
                                     .v = spread_compare(p, best), .crossed = crossed};
    }
    out->left_out = count_left_out(lone, nlone, out);
    free(lone);
    return 0;
}

void vs_pairs_free(vs_pairs *p)
{
    free(p->p);
    p->p = NULL;
    p->n = 0;
}

/* ---------- the per-shape table ---------- */

/* geometric mean and verdict counts over a set of pairs */
typedef struct {
    double lsum;
    long n, won[3]; /* indexed by spread_verdict */
} tally;

static void tally_add(tally *t, double speedup, spread_verdict v)
{
    t->lsum += log(speedup);
    t->n++;
    t->won[v]++;
}

static void print_tally(const tally *t)
{
    printf("%.3f over %ld shape%s: faster on %ld, tied on %ld, slower on %ld\n", exp(t->lsum / t->n), t->n,
           t->n == 1 ? "" : "s", t->won[SPREAD_FASTER], t->won[SPREAD_TIE], t->won[SPREAD_SLOWER]);
}

/* "pairs: ..." : which rows were paired, and per run how many shapes */
static void print_runs_line(const vs_pairs *ps, int any_run)
{
    if (any_run) {
        printf("pairs: rows of any run (--any-run)\n");
        return;
    }
    printf("pairs: rows of one run (run_id):");
    if (!ps->n) printf(" none");
    for (size_t i = 0; i < ps->n; i++) {
        const char *id = ps->p[i].ours->run_id;
        int first = 1;
        for (size_t j = 0; j < i && first; j++) first = strcmp(ps->p[j].ours->run_id, id) != 0;
        if (!first) continue;
        long n = 0;
        for (size_t j = i; j < ps->n; j++) n += !strcmp(ps->p[j].ours->run_id, id);
        printf("%s %s %ld shape%s", i ? "," : "", id, n, n == 1 ? "" : "s");
    }
    printf("\n");
}

static const char *const csv_header[] = {"backend", "name", "shape", "d", "portable_us", "best_vendor",
                                         "best_vendor_us", "speedup_vs_best", "vendors", "portable_mhz",
                                         "best_vendor_mhz", "portable_w", "best_vendor_w", "verdict", "run_id"};

/* "cudnn=2.000;torch-flash=4.000": every vendor paired with our row, its speedup */
static void vendor_list(const perf_side *s, const perf_entry *p, int any_run, char *out, size_t len)
{
    size_t o = 0;
    out[0] = 0;
    for (size_t j = 0; j < s->n && o < len; j++)
        if (vs_pairable(p, &s->e[j], any_run))
            o += (size_t)snprintf(out + o, len - o, "%s%s=%.3f", o ? ";" : "", s->e[j].impl, s->e[j].med / p->med);
}

static void add_csv_row(csv_table *out, const perf_side *s, const vs_pair *q, int any_run)
{
    const perf_entry *p = q->ours, *best = q->best;
    char f[8][32], vlist[512];
    snprintf(f[0], sizeof f[0], "%d", p->d);
    snprintf(f[1], sizeof f[1], "%.3f", p->med);
    snprintf(f[2], sizeof f[2], "%.3f", best->med);
    snprintf(f[3], sizeof f[3], "%.4f", q->speedup);
    const double rv[4] = {p->mhz, best->mhz, p->watts, best->watts};
    for (int k = 0; k < 4; k++) fb_fmt_num(f[4 + k], sizeof f[4 + k], rv[k], k < 2 ? "%.0f" : "%.1f");
    vendor_list(s, p, any_run, vlist, sizeof vlist);
    const char *row[] = {p->backend, p->name, p->shape, f[0], f[1], best->impl, f[2], f[3], vlist,
                         f[4], f[5], f[6], f[7], spread_name(q->v), p->run_id};
    csvt_add(out, row);
}

static void print_table(const perf_side *s, const vs_pairs *ps, int readings)
{
    const int wn = perf_col_width(s->e, s->n, 0, "name", 20), ws = perf_col_width(s->e, s->n, 1, "shape", 20);
    printf("%-8s %-*s %-*s %11s %-14s %11s %8s %-7s%s\n", "backend", wn, "name", ws, "shape", "portable us",
           "best vendor", "us", "speedup", "verdict", readings ? "   SM MHz (portable / vendor), W" : "");
    for (size_t i = 0; i < ps->n; i++) {
        const perf_entry *p = ps->p[i].ours, *best = ps->p[i].best;
        char clk[96] = "", rd[4][16];
        const double rv[4] = {p->mhz, best->mhz, p->watts, best->watts};
        for (int q = 0; q < 4; q++) { /* '-': not read on that row */
            if (isnan(rv[q])) snprintf(rd[q], sizeof rd[q], "-");
            else snprintf(rd[q], sizeof rd[q], "%.0f", rv[q]);
        }
        if (readings) snprintf(clk, sizeof clk, "   %5s / %-5s %4s / %s", rd[0], rd[1], rd[2], rd[3]);
        printf("%-8.8s %-*s %-*s %11.2f %-14.14s %11.2f %8.3f %-7s%s\n", p->backend, wn, p->name, ws, p->shape, p->med,
               best->impl, best->med, ps->p[i].speedup, spread_name(ps->p[i].v), clk);
    }
}

/* ---------- the geometric means ---------- */

typedef struct {
    const char *impl;
    tally t;
} vend_tally;

/* Per vendor, over the shapes it was paired on; and the shapes where it was timed another
 * way (l2_flush) than ours, returned. */
static long per_vendor(const perf_side *s, const vs_pairs *ps, int any_run, vend_tally *vt, int *nvt)
{
    long mixed = 0;
    for (size_t i = 0; i < ps->n; i++) {
        const perf_entry *p = ps->p[i].ours;
        int m = 0;
        for (size_t j = 0; j < s->n; j++) {
            const perf_entry *v = &s->e[j];
            if (!vs_pairable(p, v, any_run)) continue;
            m |= p->flush >= 0 && v->flush >= 0 && p->flush != v->flush;
            int k = 0;
            while (k < *nvt && strcmp(vt[k].impl, v->impl)) k++;
            if (k == *nvt) vt[(*nvt)++].impl = v->impl;
            tally_add(&vt[k].t, v->med / p->med, spread_compare(p, v));
        }
        mixed += m;
    }
    return mixed;
}

static void print_means(const perf_side *s, const vs_pairs *ps, int any_run, vend_tally *vt)
{
    tally all = {0}, dt[16] = {{0}};
    int dims[16], nd = 0, nvt = 0;
    double lclk = 0; /* the speedup per SM cycle (each side's time times its clock), where both were read */
    long nclk = 0, crossed = 0;
    for (size_t i = 0; i < ps->n; i++) {
        const vs_pair *q = &ps->p[i];
        tally_add(&all, q->speedup, q->v);
        crossed += q->crossed;
        int k = 0;
        while (k < nd && dims[k] != q->ours->d) k++;
        if (k == nd && nd < 16) dims[nd++] = q->ours->d;
        if (k < nd) tally_add(&dt[k], q->speedup, q->v);
        if (q->ours->mhz > 0 && q->best->mhz > 0) {
            lclk += log(q->best->med * q->best->mhz / (q->ours->med * q->ours->mhz));
            nclk++;
        }
    }
    const long mixed = per_vendor(s, ps, any_run, vt, &nvt);
    if (mixed)
        fprintf(stderr, "fabench versus: on %ld shape%s ours and a vendor were timed one with the L2 flushed and the "
                        "other warm (l2_flush): measure both the same way\n", mixed, mixed == 1 ? "" : "s");
    printf("\ngeomean speedup over the best vendor per shape: %.3f over %ld shape%s; the portable kernel faster on %ld, "
           "tied on %ld, slower on %ld\n", exp(all.lsum / all.n), all.n, all.n == 1 ? "" : "s", all.won[SPREAD_FASTER],
           all.won[SPREAD_TIE], all.won[SPREAD_SLOWER]);
    for (int k = 0; k < nvt; k++) {
        printf("geomean speedup over %-14s ", vt[k].impl);
        print_tally(&vt[k].t);
    }
    for (int k = 0; k < nd; k++) {
        printf("d=%-4d geomean speedup over the best vendor ", dims[k]);
        print_tally(&dt[k]);
    }
    if (nclk)
        printf("per SM cycle (each side's time times the SM clock it ran at): geomean %.3f over %ld shape%s\n",
               exp(lclk / nclk), nclk, nclk == 1 ? "" : "s");
    if (any_run)
        printf("--any-run: %ld of %ld shape%s paired rows of different runs (or without a run id)\n", crossed, all.n,
               all.n == 1 ? "" : "s");
}

/* ---------- the command ---------- */

/* --run ID must name a run of the file: else err lists the runs it holds. 0 or 2. */
static int check_run(const perf_side *s, const char *run, char *err, size_t errlen)
{
    perf_run *runs = NULL;
    size_t nr = 0;
    long none = 0;
    if (perf_runs(s, &runs, &nr, &none) != 0) { snprintf(err, errlen, "out of memory"); return -1; }
    int found = 0;
    size_t o = 0;
    char list[512] = "";
    for (size_t k = 0; k < nr; k++) {
        found |= !strcmp(runs[k].id, run);
        if (o < sizeof list) o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", k ? ", " : "", runs[k].id);
    }
    free(runs);
    if (found) return 0;
    snprintf(err, errlen, "--run %.60s: %.500s holds no row of that run (its runs: %.300s)", run, s->path,
             nr ? list : "none: its rows have no run id");
    return FB_EXIT_BADINPUT;
}

static int report(const perf_side *s, const vs_filter *f, const char *csv_out, const vs_ceiling *bw, char *err,
                  size_t errlen)
{
    vs_pairs ps;
    if (vs_collect(s, f, &ps) != 0) { snprintf(err, errlen, "out of memory"); return -1; }
    vend_tally *vt = calloc(s->n + 1, sizeof *vt);
    csv_table *out = csv_out ? csvt_new(csv_header, sizeof csv_header / sizeof csv_header[0]) : NULL;
    if (!vt || (csv_out && !out)) {
        free(vt);
        csvt_free(out);
        vs_pairs_free(&ps);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int readings = 0; /* the GPU's clocks were read on some row: they get columns */
    for (size_t i = 0; i < s->n && !readings; i++) readings = !isnan(s->e[i].mhz);
    printf("%s: the portable kernel's speedup over the vendors (vendor median / portable median: above 1 it is "
           "faster)\nverdict: faster or slower only where the two rows' p20..p80 spreads do not overlap, else a tie\n",
           s->path);
    print_runs_line(&ps, f->any_run);
    printf("\n");
    print_table(s, &ps, readings);
    for (size_t i = 0; out && i < ps.n; i++) add_csv_row(out, s, &ps.p[i], f->any_run);
    if (ps.left_out)
        fprintf(stderr, "fabench versus: %ld shape%s left out: ours and the vendors' rows are of different runs (run_id), "
                        "or have no run id; --any-run pairs them across runs\n", ps.left_out, ps.left_out == 1 ? "" : "s");
    int ret = 0;
    if (ps.n) {
        print_means(s, &ps, f->any_run, vt);
        if (bw) vs_print_bandwidth(&ps, bw, stdout);
    } else {
        fprintf(stderr, "fabench versus: no shape with an ok portable row and an ok vendor row%s in %s\n",
                f->any_run ? "" : " of the same run", s->path);
        ret = 1;
    }
    if (out && csvt_write_atomic(out, csv_out, err, errlen) != 0) {
        fprintf(stderr, "fabench versus: %s\n", err);
        ret = 1;
    }
    csvt_free(out);
    free(vt);
    vs_pairs_free(&ps);
    return ret;
}

int cmd_versus(int argc, char **argv)
{
    const char *arg = NULL, *csv_out = NULL, *shapes_path = NULL, *bw_path = NULL;
    vs_filter f = {0};
    int markdown = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { versus_usage(stdout); return 0; }
        if (!strcmp(argv[i], "--any-run")) { f.any_run = 1; continue; }
        if (!strcmp(argv[i], "--markdown")) { markdown = 1; continue; }
        if (!strcmp(argv[i], "--csv") || !strcmp(argv[i], "--shapes") || !strcmp(argv[i], "--run") ||
            !strcmp(argv[i], "--bandwidth")) {
            if (i + 1 >= argc || !argv[i + 1][0]) {
                fprintf(stderr, "fabench versus: %s needs a value\n", argv[i]);
                return FB_EXIT_BADINPUT;
            }
            const char **dst = !strcmp(argv[i], "--csv")         ? &csv_out
                               : !strcmp(argv[i], "--shapes")    ? &shapes_path
                               : !strcmp(argv[i], "--bandwidth") ? &bw_path
                                                                 : &f.run;
            *dst = argv[++i];
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "fabench versus: unknown option '%s'\n\n", argv[i]);
            versus_usage(stderr);
            return FB_EXIT_BADINPUT;
        }
        if (arg) { fprintf(stderr, "fabench versus: unexpected argument '%s'\n", argv[i]); return FB_EXIT_BADINPUT; }
        arg = argv[i];
    }
    if (!arg) {
        fprintf(stderr, "fabench versus: needs a results folder or a perf.csv file\n\n");
        versus_usage(stderr);
        return FB_EXIT_BADINPUT;
    }
    if (markdown && (f.any_run || csv_out || bw_path)) {
        fprintf(stderr, "fabench versus: --markdown summarises one run: without --any-run, --csv and --bandwidth\n");
        return FB_EXIT_BADINPUT;
    }
    perf_side s;
    memset(&s, 0, sizeof s);
    char err[FB_ERRLEN];
    csv_table *names = NULL;
    int rc = perf_load(arg, &s, f.any_run ? 0 : PERF_LOAD_BY_RUN, err, sizeof err);
    if (rc == 0 && shapes_path && shape_names(shapes_path, &names, &f.ncol, err, sizeof err) != 0) rc = FB_EXIT_BADINPUT;
    f.names = names;
    if (rc == 0 && f.run) rc = check_run(&s, f.run, err, sizeof err);
    vs_ceiling *bw = NULL;
    if (rc == 0 && bw_path) rc = vs_ceiling_load(bw_path, &bw, err, sizeof err);
    if (rc == 0)
        rc = markdown ? vs_markdown(arg, &s, &f, stdout, err, sizeof err) : report(&s, &f, csv_out, bw, err, sizeof err);
    vs_ceiling_free(bw);
    if (rc != 0 && (markdown || rc != 1)) fprintf(stderr, "fabench versus: %s\n", err);
    perf_side_free(&s);
    csvt_free(names);
    return rc == FB_EXIT_BADINPUT ? FB_EXIT_BADINPUT : rc ? 1 : 0;
}
