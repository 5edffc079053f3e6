/* versus_bw.c: `fabench versus --bandwidth FILE`: memory-bound shapes (decode: at most
 * VS_DECODE_SQ query rows a sequence) held against the device's measured bandwidth, the
 * best ok rates of `fabench bandwidth` (bandwidth.csv) on the same GPU: bytes moved over
 * time (perf.csv's gbps) as a share of it, ours and the best vendor's, and a summary over
 * the large decodes that issue 47's target names (B >= 16, Skv >= 4096). */
#include "versus.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define VS_DECODE_SQ 16   /* query rows a sequence up to which a shape is decode (memory-bound) */
#define VS_LARGE_B 16     /* the summary's large decodes: batch at least this */
#define VS_LARGE_SKV 4096 /* and keys a sequence at least this */
#define VS_TARGET 0.90    /* the share of the copy bandwidth the summary counts shapes at */

struct vs_ceiling {
    csv_table *t;
    char path[4200];
    int gpu, kernel, gbps, status, run;
};

void vs_ceiling_free(vs_ceiling *c)
{
    if (!c) return;
    csvt_free(c->t);
    free(c);
}

/* A rate column's value on an ok row: a number > 0. 0, or FB_EXIT_BADINPUT with err. */
static int check_rate(const vs_ceiling *c, size_t r, char *err, size_t errlen)
{
    const char *v = c->t->rows[r][c->gbps];
    char *end;
    const double x = strtod(v, &end);
    if (*v && !*end && isfinite(x) && x > 0) return 0;
    snprintf(err, errlen, "%.900s:%d: gbps: '%.40s' on an ok row is not a rate > 0", c->path, c->t->row_line[r], v);
    return FB_EXIT_BADINPUT;
}

int vs_ceiling_load(const char *path, vs_ceiling **out, char *err, size_t errlen)
{
    vs_ceiling *c = calloc(1, sizeof *c);
    if (!c) { snprintf(err, errlen, "out of memory"); return -1; }
    snprintf(c->path, sizeof c->path, "%s", path);
    if (csvt_read(path, &c->t, err, errlen) != 0) { free(c); return FB_EXIT_BADINPUT; }
    const char *const need[] = {"gpu", "kernel", "gbps", "status", "run_id"};
    int *cols[] = {&c->gpu, &c->kernel, &c->gbps, &c->status, &c->run};
    for (int k = 0; k < 5; k++)
        if ((*cols[k] = csvt_col(c->t, need[k])) < 0) {
            snprintf(err, errlen, "%.900s:1: %s: required column missing (is this a bandwidth.csv?)", path, need[k]);
            vs_ceiling_free(c);
            return FB_EXIT_BADINPUT;
        }
    for (size_t r = 0; r < c->t->nrows; r++)
        if (!strcmp(c->t->rows[r][c->status], "ok") && check_rate(c, r, err, errlen) != 0) {
            vs_ceiling_free(c);
            return FB_EXIT_BADINPUT;
        }
    *out = c;
    return 0;
}

/* The best ok rate of a kernel ("copy", "read") on gpu, and its run; 0 where there is none. */
static double best_rate(const vs_ceiling *c, const char *gpu, const char *kernel, const char **run)
{
    double best = 0;
    for (size_t r = 0; r < c->t->nrows; r++) {
        char **row = c->t->rows[r];
        if (strcmp(row[c->status], "ok") || strcmp(row[c->kernel], kernel) || strcmp(row[c->gpu], gpu)) continue;
        const double x = strtod(row[c->gbps], NULL);
        if (x > best) { best = x; *run = row[c->run]; }
    }
    return best;
}

static int memory_bound(const perf_entry *e) { return e->sq <= VS_DECODE_SQ && !isnan(e->gbps); }
static int large_decode(const perf_entry *e) { return e->batch >= VS_LARGE_B && e->skv >= VS_LARGE_SKV; }

/* a share of the copy rate, or "-" where the row said no rate */
static void share(char *out, size_t len, double gbps, double copy)
{
    if (isnan(gbps)) snprintf(out, len, "-");
    else snprintf(out, len, "%.0f%%", 100 * gbps / copy);
}

void vs_print_bandwidth(const vs_pairs *ps, const vs_ceiling *c, FILE *out)
{
    const char *gpu = ps->n ? ps->p[0].ours->gpu : "", *copy_run = "", *read_run = "";
    const double copy = best_rate(c, gpu, "copy", &copy_run), rd = best_rate(c, gpu, "read", &read_run);
    fprintf(out, "\nmemory-bound shapes (at most %d query rows a sequence): bytes moved over the median time, as a "
                 "share of the copy bandwidth", VS_DECODE_SQ);
    if (!(copy > 0)) {
        fprintf(out, ": %s has no ok copy row for %s (fabench bandwidth measures it)\n", c->path, gpu);
        return;
    }
    fprintf(out, " %.1f GB/s (read: %.1f GB/s; %s, run %s)\n", copy, rd, c->path, copy_run);
    int wn = 4;
    for (size_t i = 0; i < ps->n; i++)
        if (memory_bound(ps->p[i].ours) && (int)strlen(ps->p[i].ours->name) > wn) wn = (int)strlen(ps->p[i].ours->name);
    fprintf(out, "%-*s %-5s %10s %6s  %-14s %10s %6s\n", wn, "name", "paged", "ours GB/s", "share", "best vendor",
            "GB/s", "share");
    double lsum = 0, lo = INFINITY;
    long n = 0, at_target = 0;
    for (size_t i = 0; i < ps->n; i++) {
        const perf_entry *o = ps->p[i].ours, *b = ps->p[i].best;
        if (!memory_bound(o)) continue;
        char so[16], sb[16];
        share(so, sizeof so, o->gbps, copy);
        share(sb, sizeof sb, b->gbps, copy);
        fprintf(out, "%-*s %-5s %10.1f %6s  %-14s %10.1f %6s\n", wn, o->name, o->paged ? "yes" : "no", o->gbps, so,
                b->impl, b->gbps, sb);
        if (!large_decode(o)) continue;
        const double f = o->gbps / copy;
        lsum += log(f);
        lo = f < lo ? f : lo;
        n++;
        at_target += f >= VS_TARGET;
    }
    if (n)
        fprintf(out, "decodes with B >= %d and Skv >= %d: ours at %.1f%% of the copy bandwidth (geomean), lowest %.1f%%; "
                     "%ld of %ld at %.0f%% or more\n", VS_LARGE_B, VS_LARGE_SKV, 100 * exp(lsum / n), 100 * lo,
                at_target, n, 100 * VS_TARGET);
    else fprintf(out, "no decode with B >= %d and Skv >= %d among them\n", VS_LARGE_B, VS_LARGE_SKV);
}
