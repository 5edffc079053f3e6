/* perf_load.h: perf.csv read back for the comparisons (compare, versus): one entry per row
 * with its shape, times, spread, readings and run; the spread rule behind every verdict. */
#ifndef FABENCH_PERF_LOAD_H
#define FABENCH_PERF_LOAD_H

#include <stddef.h>

#include "csvio.h"

typedef struct {
    const char *impl, *backend, *name, *dtype, *gpu;
    const char *run_id; /* the run the row came from; "" where the row or its file has none */
    const char *utc;    /* when it was measured; "" where not said */
    char shape[160];    /* dtype and the dimensions: what makes two rows the same problem */
    int ok, line, matched, d;
    long batch, sq, skv;
    int paged;         /* the keys and values are read through a page table (page column) */
    double med, p20, p80;
    double gbps;       /* bytes moved over the median time (perf.csv's gbps); NAN: not said */
    double mhz, watts; /* the GPU's median SM clock and mean power while timed; NAN: not read */
    int flush;         /* 1: timed with the L2 flushed before every run; 0: warm; -1: not said */
    const char *status;
} perf_entry;

typedef struct {
    char path[4200];
    csv_table *t;
    perf_entry *e;
    size_t n;
    int has_run_id; /* the file has a run_id column (written since run ids exist) */
} perf_side;

/* perf_load's flags */
enum {
    PERF_LOAD_BY_RUN = 1 /* rows of different runs are kept apart: a later row replaces an
                            earlier one only within its run */
};

/* Reads a results folder's perf.csv (or the perf.csv file given) into s. A later row of the
 * same (impl, backend, name, shape) replaces an earlier one (with PERF_LOAD_BY_RUN: of the
 * same run too). 0, FB_EXIT_BADINPUT with err "FILE:LINE: column: ..." or -1; s is
 * released with perf_side_free either way. */
int perf_load(const char *arg, perf_side *s, int flags, char *err, size_t errlen);
void perf_side_free(perf_side *s);

/* The width of a text column of n entries: the header's or the longest name (shape = 0)
 * or shape (shape = 1), at least min. Never cut: a wide shape lost its causality to a
 * fixed width. */
int perf_col_width(const perf_entry *e, size_t n, int shape, const char *header, int min);

typedef enum { SPREAD_FASTER, SPREAD_TIE, SPREAD_SLOWER } spread_verdict;

/* x against y by their p20..p80 spreads: faster only when x's p80 is below y's p20, slower
 * only when x's p20 is above y's p80; spreads that overlap are a tie. */
spread_verdict spread_compare(const perf_entry *x, const perf_entry *y);
const char *spread_name(spread_verdict v);

/* One run among a side's rows: its id, its rows, and the first and last utc of them. */
typedef struct {
    const char *id;
    long rows;
    const char *first, *last; /* "" when no row said */
} perf_run;

/* The distinct non-empty run ids of s's entries, in the order first seen (*out malloc'd,
 * *n of them), and how many entries have none. 0 or -1 (out of memory). */
int perf_runs(const perf_side *s, perf_run **out, size_t *n, long *no_id);

#endif
