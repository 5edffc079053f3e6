/* versus.h: the pairing behind `fabench versus` (versus.c) and its Markdown summary
 * (versus_md.c): ours against the vendors' rows of the same shape, of the same run unless told. */
#ifndef FABENCH_VERSUS_H
#define FABENCH_VERSUS_H

#include <stdio.h>

#include "csvio.h"
#include "perf_load.h"

typedef struct {
    int any_run;           /* --any-run: a vendor row of another run (or without an id) pairs too */
    const char *run;       /* --run ID: only our rows of this run; NULL: every run's */
    const csv_table *names; /* --shapes: only the shapes its `ncol` column names; NULL: all */
    int ncol;
} vs_filter;

typedef struct {
    const perf_entry *ours, *best; /* best: the vendor row with the lowest median that pairs */
    double speedup;                /* best's median over ours: above 1, ours is faster */
    spread_verdict v;              /* ours against best, by their p20..p80 spreads */
    int crossed;                   /* some vendor row paired is of another run or has no id */
} vs_pair;

typedef struct {
    vs_pair *p;
    size_t n;
    long left_out; /* shapes whose rows pair only across runs (without --any-run) */
} vs_pairs;

/* Does vendor row v pair with our row? Another implementation's ok row of the same backend,
 * name and shape, of our run (any run, or none, with any_run). */
int vs_pairable(const perf_entry *ours, const perf_entry *v, int any_run);

/* Every ok row of ours that f selects, with the best vendor row that pairs with it, in the
 * file's order. 0 or -1 (out of memory). */
int vs_collect(const perf_side *s, const vs_filter *f, vs_pairs *out);
void vs_pairs_free(vs_pairs *p);

/* The Markdown summary of one run of s (f->run, or the run with the most shapes paired):
 * a heading line (where, the GPU, the run, when, the commit from the manifest beside the
 * file) and a table per suite of bench/suites/ (a shape in none: `other`), then `all`:
 * shapes, the geomean speedup over the best vendor, faster / tie / slower. arg: the folder
 * or file as the user named it. 0; 1 with err when no run pairs ours with a vendor; -1. */
int vs_markdown(const char *arg, const perf_side *s, const vs_filter *f, FILE *out, char *err, size_t errlen);

/* A bandwidth.csv (`fabench bandwidth`) read for --bandwidth: 0, or FB_EXIT_BADINPUT with err
 * "FILE:LINE: column: ..." (a required column missing, an ok row's gbps not a rate), or -1. */
typedef struct vs_ceiling vs_ceiling;
int vs_ceiling_load(const char *path, vs_ceiling **out, char *err, size_t errlen);
void vs_ceiling_free(vs_ceiling *c);
/* The memory-bound shapes among the pairs (decode), ours and the best vendor's bytes moved
 * over time as a share of the best copy rate c holds for our rows' GPU; then the summary
 * over the large decodes. */
void vs_print_bandwidth(const vs_pairs *ps, const vs_ceiling *c, FILE *out);

#endif
