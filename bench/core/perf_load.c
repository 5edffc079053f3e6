/* perf_load.c: perf.csv read back for compare and versus (perf_load.h). */
#define _GNU_SOURCE
#include "perf_load.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"

static const char *const need[] = {"impl", "backend", "dtype", "batch", "hq", "hkv", "sq", "skv", "d", "causal",
                                   "median_us", "p20_us", "p80_us", "status"};
#define NNEED (sizeof need / sizeof need[0])

int perf_col_width(const perf_entry *e, size_t n, int shape, const char *header, int min)
{
    size_t w = strlen(header);
    for (size_t i = 0; i < n; i++) {
        const size_t l = strlen(shape ? e[i].shape : e[i].name);
        if (l > w) w = l;
    }
    return w > (size_t)min ? (int)w : min;
}

/* An optional column's text in a row: "" where the file has no such column. */
static const char *opt(char **row, int col) { return col >= 0 ? row[col] : ""; }

/* The three times of an ok row: finite, > 0 and p20 <= median <= p80 (the spreads decide
 * the verdicts). 0, or FB_EXIT_BADINPUT with err. */
static int read_times(const perf_side *s, char **row, const int *col, perf_entry *e, char *err, size_t errlen)
{
    double *dst[3] = {&e->med, &e->p20, &e->p80};
    for (int k = 0; k < 3; k++) {
        char *end;
        const char *v = row[col[10 + k]];
        *dst[k] = strtod(v, &end);
        if (!*v || *end || !isfinite(*dst[k]) || *dst[k] <= 0) {
            snprintf(err, errlen, "%.900s:%d: %s: '%.40s' on an ok row is not a time > 0", s->path, e->line, need[10 + k],
                     v);
            return FB_EXIT_BADINPUT;
        }
    }
    if (!(e->p20 <= e->med && e->med <= e->p80)) {
        snprintf(err, errlen, "%.900s:%d: %s: p20 %g <= median %g <= p80 %g does not hold", s->path, e->line, need[11],
                 e->p20, e->med, e->p80);
        return FB_EXIT_BADINPUT;
    }
    return 0;
}

static int same_key(const perf_entry *a, const perf_entry *b, int by_run)
{
    return !strcmp(a->impl, b->impl) && !strcmp(a->backend, b->backend) && !strcmp(a->name, b->name) &&
           !strcmp(a->shape, b->shape) && (!by_run || !strcmp(a->run_id, b->run_id));
}

int perf_load(const char *arg, perf_side *s, int flags, char *err, size_t errlen)
{
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) snprintf(s->path, sizeof s->path, "%s/perf.csv", arg);
    else snprintf(s->path, sizeof s->path, "%s", arg);
    int rc = csvt_read(s->path, &s->t, err, errlen);
    if (rc != 0) return FB_EXIT_BADINPUT;
    int col[NNEED];
    for (size_t i = 0; i < NNEED; i++) {
        col[i] = csvt_col(s->t, need[i]);
        if (col[i] < 0) {
            snprintf(err, errlen, "%.900s:1: %s: required column missing (is this a perf.csv?)", s->path, need[i]);
            return FB_EXIT_BADINPUT;
        }
    }
    int cname = csvt_col(s->t, "name"), cmhz = csvt_col(s->t, "sm_mhz"), cwatts = csvt_col(s->t, "power_w"),
        cflush = csvt_col(s->t, "l2_flush"), cgpu = csvt_col(s->t, "gpu"), crun = csvt_col(s->t, "run_id"),
        cutc = csvt_col(s->t, "utc"), cgbps = csvt_col(s->t, "gbps"), cpage = csvt_col(s->t, "page");
    s->has_run_id = crun >= 0;
    s->e = calloc(s->t->nrows ? s->t->nrows : 1, sizeof *s->e);
    if (!s->e) { snprintf(err, errlen, "out of memory"); return -1; }
    for (size_t r = 0; r < s->t->nrows; r++) {
        char **row = s->t->rows[r];
        perf_entry *e = &s->e[s->n];
        e->impl = row[col[0]];
        e->backend = row[col[1]];
        e->dtype = row[col[2]];
        e->name = opt(row, cname);
        e->gpu = opt(row, cgpu);
        e->run_id = opt(row, crun);
        e->utc = opt(row, cutc);
        e->status = row[col[13]];
        e->line = s->t->row_line[r];
        for (int k = 3; k <= 9; k++) {
            char *end;
            errno = 0;
            long v = strtol(row[col[k]], &end, 10);
            if (!*row[col[k]] || *end || errno || v < 0) {
                snprintf(err, errlen, "%.900s:%d: %s: '%.40s' is not a count", s->path, e->line, need[k], row[col[k]]);
                return FB_EXIT_BADINPUT;
            }
        }
        e->d = atoi(row[col[8]]);
        e->batch = atol(row[col[3]]);
        e->sq = atol(row[col[6]]);
        e->skv = atol(row[col[7]]);
        e->paged = *opt(row, cpage) && strcmp(opt(row, cpage), "0");
        e->gbps = cgbps >= 0 && *row[cgbps] ? strtod(row[cgbps], NULL) : NAN;
        snprintf(e->shape, sizeof e->shape, "%s b%s h%s/%s q%s k%s d%s c%s", e->dtype, row[col[3]], row[col[4]],
                 row[col[5]], row[col[6]], row[col[7]], row[col[8]], row[col[9]]);
        e->ok = !strcmp(e->status, "ok") && *row[col[10]];
        e->mhz = cmhz >= 0 && *row[cmhz] ? strtod(row[cmhz], NULL) : NAN;
        e->watts = cwatts >= 0 && *row[cwatts] ? strtod(row[cwatts], NULL) : NAN;
        e->flush = cflush >= 0 && *row[cflush] ? !strcmp(row[cflush], "1") : -1;
        if (e->ok && (rc = read_times(s, row, col, e, err, errlen)) != 0) return rc;
        /* a later row of the same (impl, backend, name, shape[, run]) replaces an earlier one */
        size_t j = 0;
        while (j < s->n && !same_key(&s->e[j], e, flags & PERF_LOAD_BY_RUN)) j++;
        if (j < s->n) s->e[j] = *e;
        else s->n++;
    }
    return 0;
}

void perf_side_free(perf_side *s)
{
    csvt_free(s->t);
    free(s->e);
    s->t = NULL;
    s->e = NULL;
    s->n = 0;
}

spread_verdict spread_compare(const perf_entry *x, const perf_entry *y)
{
    if (x->p80 < y->p20) return SPREAD_FASTER;
    if (x->p20 > y->p80) return SPREAD_SLOWER;
    return SPREAD_TIE;
}

const char *spread_name(spread_verdict v)
{
    return v == SPREAD_FASTER ? "faster" : v == SPREAD_SLOWER ? "slower" : "tie";
}

int perf_runs(const perf_side *s, perf_run **out, size_t *n, long *no_id)
{
    perf_run *runs = calloc(s->n + 1, sizeof *runs);
    if (!runs) return -1;
    size_t nr = 0;
    long none = 0;
    for (size_t i = 0; i < s->n; i++) {
        const perf_entry *e = &s->e[i];
        if (!*e->run_id) { none++; continue; }
        size_t k = 0;
        while (k < nr && strcmp(runs[k].id, e->run_id)) k++;
        if (k == nr) runs[nr++] = (perf_run){.id = e->run_id, .first = "", .last = ""};
        runs[k].rows++;
        /* utc is YYYY-MM-DDTHH:MM:SSZ: the text orders as the time */
        if (*e->utc && (!*runs[k].first || strcmp(e->utc, runs[k].first) < 0)) runs[k].first = e->utc;
        if (*e->utc && strcmp(e->utc, runs[k].last) > 0) runs[k].last = e->utc;
    }
    *out = runs;
    *n = nr;
    *no_id = none;
    return 0;
}
