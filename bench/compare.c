/* compare.c: `fabench compare A B`: for every (impl, shape) measured in both results, the
 * ratio B/A of the median times and a verdict from the p20..p80 spreads (faster, slower,
 * same within noise), with the geometric mean of the ratios per implementation and overall.
 * `fabench versus RESULTS`: within one results folder, the portable kernel against every
 * vendor and against the best vendor of each shape, with geometric means. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "common.h"
#include "csvio.h"

typedef struct {
    const char *impl, *backend, *name, *dtype;
    char shape[160];   /* dtype and the dimensions: what makes two rows the same problem */
    int ok, line, matched, d;
    double med, p20, p80;
    double mhz, watts; /* the GPU's median SM clock and mean power while timed; NAN: not read */
    int flush;         /* 1: timed with the L2 flushed before every run; 0: warm; -1: not said */
    const char *status;
} entry;

typedef struct {
    char path[4200];
    csv_table *t;
    entry *e;
    size_t n;
} side;

static const char *const need[] = {"impl", "backend", "dtype", "batch", "hq", "hkv", "sq", "skv", "d", "causal",
                                   "median_us", "p20_us", "p80_us", "status"};
#define NNEED (sizeof need / sizeof need[0])

/* The width of a text column: its header's, or its longest entry's (never cut: a wide
 * shape lost its causality to a fixed width), at least min. */
static int col_width(const entry *e, size_t n, int shape, const char *header, int min)
{
    size_t w = strlen(header);
    for (size_t i = 0; i < n; i++) {
        const size_t l = strlen(shape ? e[i].shape : e[i].name);
        if (l > w) w = l;
    }
    return w > (size_t)min ? (int)w : min;
}

static int load_side(const char *arg, side *s, char *err, size_t errlen)
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
        cflush = csvt_col(s->t, "l2_flush");
    s->e = calloc(s->t->nrows ? s->t->nrows : 1, sizeof *s->e);
    if (!s->e) { snprintf(err, errlen, "out of memory"); return -1; }
    for (size_t r = 0; r < s->t->nrows; r++) {
        char **row = s->t->rows[r];
        entry *e = &s->e[s->n];
        e->impl = row[col[0]];
        e->backend = row[col[1]];
        e->dtype = row[col[2]];
        e->name = cname >= 0 ? row[cname] : "";
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
        snprintf(e->shape, sizeof e->shape, "%s b%s h%s/%s q%s k%s d%s c%s", e->dtype, row[col[3]], row[col[4]],
                 row[col[5]], row[col[6]], row[col[7]], row[col[8]], row[col[9]]);
        e->ok = !strcmp(e->status, "ok") && *row[col[10]];
        e->mhz = cmhz >= 0 && *row[cmhz] ? strtod(row[cmhz], NULL) : NAN;
        e->watts = cwatts >= 0 && *row[cwatts] ? strtod(row[cwatts], NULL) : NAN;
        e->flush = cflush >= 0 && *row[cflush] ? !strcmp(row[cflush], "1") : -1;
        if (e->ok) {
            double *dst[3] = {&e->med, &e->p20, &e->p80};
            for (int k = 0; k < 3; k++) {
                char *end;
                const char *v = row[col[10 + k]];
                *dst[k] = strtod(v, &end);
                if (!*v || *end || !isfinite(*dst[k]) || *dst[k] <= 0) {
                    snprintf(err, errlen, "%.900s:%d: %s: '%.40s' on an ok row is not a time > 0", s->path, e->line,
                             need[10 + k], v);
                    return FB_EXIT_BADINPUT;
                }
            }
            if (!(e->p20 <= e->med && e->med <= e->p80)) { /* the spreads decide the verdicts */
                snprintf(err, errlen, "%.900s:%d: %s: p20 %g <= median %g <= p80 %g does not hold", s->path, e->line, need[11],
                         e->p20, e->med, e->p80);
                return FB_EXIT_BADINPUT;
            }
        }
        /* a later row of the same (impl, backend, name, shape) replaces an earlier one */
        size_t j = 0;
        while (j < s->n && !(strcmp(s->e[j].impl, e->impl) == 0 && strcmp(s->e[j].backend, e->backend) == 0 &&
                             strcmp(s->e[j].name, e->name) == 0 && strcmp(s->e[j].shape, e->shape) == 0))
            j++;
        if (j < s->n) s->e[j] = *e;
        else s->n++;
    }
    return 0;
}

typedef struct {
    entry *a, *b;
} pair;

static const char *verdict(const entry *a, const entry *b)
{
    if (b->p80 < a->p20) return "faster";
    if (b->p20 > a->p80) return "slower";
    return "same-within-noise";
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fabench compare [--csv FILE] A B\n\n"
            "A and B: results folders (their perf.csv) or perf.csv files. For every (impl, shape)\n"
            "in both (matched on backend too where both have it, else on impl and shape alone), the\n"
            "ratio B/A of the median times: below 1, B is faster. The verdict uses the spreads:\n"
            "faster when B's p80 is below A's p20, slower when B's p20 is above A's p80, else\n"
            "same-within-noise. Then the geometric mean of B/A per implementation and overall.\n"
            "Rows that are not ok on either side are listed as not comparable.\n\n"
            "  --csv FILE   also write the table as CSV (atomically)\n\n"
            "Exit status: 0 compared, 1 nothing in common, 2 bad usage or input (FILE:LINE: field).\n");
}

int cmd_compare(int argc, char **argv)
{
    const char *args[2] = {NULL, NULL}, *csv_out = NULL;
    int na = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "--csv")) {
            if (i + 1 >= argc) { fprintf(stderr, "fabench compare: --csv needs a value\n"); return FB_EXIT_BADINPUT; }
            csv_out = argv[++i];
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "fabench compare: unknown option '%s'\n\n", argv[i]);
            usage(stderr);
            return FB_EXIT_BADINPUT;
        }
        if (na == 2) { fprintf(stderr, "fabench compare: unexpected argument '%s'\n", argv[i]); return FB_EXIT_BADINPUT; }
        args[na++] = argv[i];
    }
    if (na != 2) {
        fprintf(stderr, "fabench compare: needs two results (folders or perf.csv files)\n\n");
        usage(stderr);
        return FB_EXIT_BADINPUT;
    }
    side s[2];
    memset(s, 0, sizeof s);
    char err[FB_ERRLEN];
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++)
        if ((rc = load_side(args[k], &s[k], err, sizeof err)) != 0) fprintf(stderr, "fabench compare: %s\n", err);
    pair *pairs = NULL;
    size_t np = 0;
    if (rc == 0) {
        pairs = calloc(s[0].n + 1, sizeof *pairs);
        if (!pairs) { fprintf(stderr, "fabench compare: out of memory\n"); rc = 1; }
    }
    if (rc != 0) {
        for (int k = 0; k < 2; k++) { csvt_free(s[k].t); free(s[k].e); }
        return rc == FB_EXIT_BADINPUT ? FB_EXIT_BADINPUT : 1;
    }
    /* pass 1: same impl, backend, name and shape; pass 2: same impl and shape where each
     * side has exactly one unmatched row of it (one GPU's cuda against another's hip) */
    for (int pass = 1; pass <= 2; pass++)
        for (size_t i = 0; i < s[0].n; i++) {
            entry *a = &s[0].e[i];
            if (a->matched) continue;
            entry *hit = NULL;
            int count = 0;
            for (size_t j = 0; j < s[1].n; j++) {
                entry *b = &s[1].e[j];
                if (b->matched || strcmp(a->impl, b->impl) || strcmp(a->shape, b->shape) || strcmp(a->name, b->name)) continue;
                if (pass == 1 && strcmp(a->backend, b->backend)) continue;
                count++;
                hit = b;
            }
            if (pass == 2) {
                int acount = 0;
                for (size_t j = 0; j < s[0].n; j++) {
                    entry *x = &s[0].e[j];
                    acount += !x->matched && !strcmp(x->impl, a->impl) && !strcmp(x->shape, a->shape) && !strcmp(x->name, a->name);
                }
                if (count != 1 || acount != 1) continue;
            }
            if (!hit) continue;
            a->matched = hit->matched = 1;
            pairs[np].a = a;
            pairs[np++].b = hit;
        }

    static const char *const hdr[] = {"impl", "backend_a", "backend_b", "name", "shape", "a_median_us", "a_p20_us",
                                      "a_p80_us", "b_median_us", "b_p20_us", "b_p80_us", "ratio", "verdict"};
    csv_table *out = csv_out ? csvt_new(hdr, sizeof hdr / sizeof hdr[0]) : NULL;
    printf("A: %s\nB: %s\nB/A of the median time: below 1, B is faster (verdict from the p20..p80 spreads)\n\n",
           s[0].path, s[1].path);
    const int wn = col_width(s[0].e, s[0].n, 0, "name", 20), ws = col_width(s[0].e, s[0].n, 1, "shape", 20);
    printf("%-16s %-15s %-*s %-*s %11s %11s %7s  %s\n", "impl", "backend", wn, "name", ws, "shape", "A us", "B us", "B/A",
           "verdict");
    double lsum = 0;
    long nok = 0, nfaster = 0, nslower = 0, nsame = 0, nbad = 0, nmixed = 0; /* nmixed: pairs whose l2_flush differs */
    for (size_t i = 0; i < np; i++) {
        entry *a = pairs[i].a, *b = pairs[i].b;
        char be[64];
        if (strcmp(a->backend, b->backend)) snprintf(be, sizeof be, "%.28s>%.28s", a->backend, b->backend);
        else snprintf(be, sizeof be, "%s", a->backend);
        if (!a->ok || !b->ok) {
            nbad++;
            printf("%-16.16s %-15.15s %-*s %-*s %11s %11s %7s  not comparable (A %s, B %s)\n", a->impl, be, wn, a->name,
                   ws, a->shape, a->ok ? "" : "-", b->ok ? "" : "-", "", a->ok ? "ok" : a->status, b->ok ? "ok" : b->status);
            continue;
        }
        double ratio = b->med / a->med;
        const char *v = verdict(a, b);
        nok++;
        nmixed += a->flush >= 0 && b->flush >= 0 && a->flush != b->flush;
        lsum += log(ratio);
        nfaster += !strcmp(v, "faster");
        nslower += !strcmp(v, "slower");
        nsame += !strcmp(v, "same-within-noise");
        printf("%-16.16s %-15.15s %-*s %-*s %11.2f %11.2f %7.3f  %s\n", a->impl, be, wn, a->name, ws, a->shape, a->med,
               b->med, ratio, v);
        if (out) {
            char f[7][32], rs[32];
            double x[6] = {a->med, a->p20, a->p80, b->med, b->p20, b->p80};
            for (int k = 0; k < 6; k++) snprintf(f[k], sizeof f[k], "%.3f", x[k]);
            snprintf(rs, sizeof rs, "%.4f", ratio);
            const char *row[] = {a->impl, a->backend, b->backend, a->name, a->shape, f[0], f[1], f[2], f[3], f[4], f[5], rs, v};
            csvt_add(out, row);
        }
    }
    if (nmixed)
        fprintf(stderr, "fabench compare: %ld pair%s timed with the L2 flushed on one side and warm on the other "
                        "(l2_flush): measure both the same way\n", nmixed, nmixed == 1 ? " was" : "s were");
    size_t only_a = 0, only_b = 0;
    for (size_t i = 0; i < s[0].n; i++) only_a += !s[0].e[i].matched;
    for (size_t i = 0; i < s[1].n; i++) only_b += !s[1].e[i].matched;
    printf("\n");
    /* per implementation */
    for (size_t i = 0; i < np; i++) {
        entry *a = pairs[i].a;
        int first = 1;
        for (size_t j = 0; j < i; j++) first &= strcmp(pairs[j].a->impl, a->impl) != 0;
        if (!first) continue;
        double ls = 0;
        long n = 0;
        for (size_t j = i; j < np; j++)
            if (!strcmp(pairs[j].a->impl, a->impl) && pairs[j].a->ok && pairs[j].b->ok) {
                ls += log(pairs[j].b->med / pairs[j].a->med);
                n++;
            }
        if (n) printf("geomean B/A %-16s %.3f over %ld shape%s\n", a->impl, exp(ls / n), n, n == 1 ? "" : "s");
    }
    if (nok)
        printf("geomean B/A %-16s %.3f over %ld: %ld faster, %ld slower, %ld same within noise\n", "(all)",
               exp(lsum / nok), nok, nfaster, nslower, nsame);
    printf("%ld not comparable (a status other than ok); %zu only in A, %zu only in B\n", nbad, only_a, only_b);
    int ret = nok ? 0 : 1;
    if (!nok) fprintf(stderr, "fabench compare: no (impl, shape) measured ok in both\n");
    if (out && csvt_write_atomic(out, csv_out, err, sizeof err) != 0) {
        fprintf(stderr, "fabench compare: %s\n", err);
        ret = 1;
    }
    csvt_free(out);
    free(pairs);
    for (int k = 0; k < 2; k++) { csvt_free(s[k].t); free(s[k].e); }
    return ret;
}

/* ---------- versus ---------- */

static void versus_usage(FILE *f)
{
    fprintf(f,
            "usage: fabench versus [--shapes FILE] [--csv FILE] RESULTS\n\n"
            "RESULTS: a results folder (its perf.csv) or a perf.csv file. For every shape with an ok\n"
            "row of the portable kernel and at least one ok vendor row of the same backend, name and\n"
            "dimensions, the speedup of the portable kernel over each vendor (the vendor's median\n"
            "time over the portable one's: above 1 the portable kernel is faster) and over the best\n"
            "vendor of that shape; then the geometric means over the shapes, against the best vendor,\n"
            "against each vendor and per head dim, and the shapes where the portable kernel is the\n"
            "fastest. Compare rows of one run: the vendors and the kernel measured back to back.\n\n"
            "  --shapes FILE  only the shapes this shapes file names (its name column)\n"
            "  --csv FILE     also write the per-shape table as CSV (atomically)\n\n"
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

typedef struct {
    const char *impl;
    double lsum;
    long n;
} vend_mean;

int cmd_versus(int argc, char **argv)
{
    const char *arg = NULL, *csv_out = NULL, *shapes_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { versus_usage(stdout); return 0; }
        if (!strcmp(argv[i], "--csv") || !strcmp(argv[i], "--shapes")) {
            if (i + 1 >= argc) { fprintf(stderr, "fabench versus: %s needs a value\n", argv[i]); return FB_EXIT_BADINPUT; }
            *(!strcmp(argv[i], "--csv") ? &csv_out : &shapes_path) = argv[i + 1];
            i++;
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
    side s;
    memset(&s, 0, sizeof s);
    char err[FB_ERRLEN];
    csv_table *names = NULL;
    int ncol = -1, rc = load_side(arg, &s, err, sizeof err);
    if (rc == 0 && shapes_path && shape_names(shapes_path, &names, &ncol, err, sizeof err) != 0) rc = FB_EXIT_BADINPUT;
    vend_mean *vm = rc == 0 ? calloc(s.n + 1, sizeof *vm) : NULL;
    if (rc == 0 && !vm) { snprintf(err, sizeof err, "out of memory"); rc = 1; }
    if (rc != 0) {
        fprintf(stderr, "fabench versus: %s\n", err);
        csvt_free(s.t);
        csvt_free(names);
        free(s.e);
        return rc == FB_EXIT_BADINPUT ? FB_EXIT_BADINPUT : 1;
    }
    static const char *const hdr[] = {"backend", "name", "shape", "d", "portable_us", "best_vendor", "best_vendor_us",
                                      "speedup_vs_best", "vendors", "portable_mhz", "best_vendor_mhz", "portable_w",
                                      "best_vendor_w"};
    int readings = 0; /* the GPU's clocks were read on some row: they get columns */
    for (size_t i = 0; i < s.n && !readings; i++) readings = !isnan(s.e[i].mhz);
    csv_table *out = csv_out ? csvt_new(hdr, sizeof hdr / sizeof hdr[0]) : NULL;
    printf("%s: the portable kernel's speedup over the vendors (vendor median / portable median: above 1 it is faster)\n\n",
           s.path);
    const int wn = col_width(s.e, s.n, 0, "name", 20), ws = col_width(s.e, s.n, 1, "shape", 20);
    printf("%-8s %-*s %-*s %11s %-14s %11s %8s%s\n", "backend", wn, "name", ws, "shape", "portable us", "best vendor", "us",
           "speedup", readings ? "   SM MHz (portable / vendor), W" : "");
    double lbest = 0;
    long nshape = 0, nfastest = 0, nmixed = 0; /* nmixed: shapes whose two sides differ in l2_flush */
    double lclk = 0; /* the speedup per SM cycle (each side's time times its clock), where both were read */
    long nclk = 0;
    int dims[16];
    double dsum[16];
    long dn[16];
    int nd = 0, nvm = 0;
    for (size_t i = 0; i < s.n; i++) {
        const entry *p = &s.e[i];
        if (strcmp(p->impl, "portable") || !p->ok) continue;
        if (names) {
            int named = 0;
            for (size_t r = 0; r < names->nrows && !named; r++) named = !strcmp(names->rows[r][ncol], p->name);
            if (!named) continue;
        }
        const entry *best = NULL;
        char vlist[512] = "";
        size_t vl = 0;
        int mixed = 0; /* a vendor row timed another way (l2_flush) than ours */
        for (size_t j = 0; j < s.n; j++) {
            const entry *v = &s.e[j];
            if (!strcmp(v->impl, "portable") || !v->ok || strcmp(v->backend, p->backend) || strcmp(v->name, p->name) ||
                strcmp(v->shape, p->shape))
                continue;
            if (!best || v->med < best->med) best = v;
            mixed |= p->flush >= 0 && v->flush >= 0 && p->flush != v->flush;
            int k = 0;
            while (k < nvm && strcmp(vm[k].impl, v->impl)) k++;
            if (k == nvm) vm[nvm++].impl = v->impl;
            vm[k].lsum += log(v->med / p->med);
            vm[k].n++;
            if (vl < sizeof vlist)
                vl += (size_t)snprintf(vlist + vl, sizeof vlist - vl, "%s%s=%.3f", vl ? ";" : "", v->impl, v->med / p->med);
        }
        if (!best) continue;
        const double sp = best->med / p->med;
        nshape++;
        nmixed += mixed;
        if (p->mhz > 0 && best->mhz > 0) {
            lclk += log(best->med * best->mhz / (p->med * p->mhz));
            nclk++;
        }
        lbest += log(sp);
        nfastest += sp >= 1.0;
        int k = 0;
        while (k < nd && dims[k] != p->d) k++;
        if (k == nd && nd < 16) { dims[nd] = p->d; dsum[nd] = 0; dn[nd++] = 0; }
        if (k < nd) { dsum[k] += log(sp); dn[k]++; }
        char clk[96] = "", rd[4][16];
        const double rv[4] = {p->mhz, best->mhz, p->watts, best->watts};
        for (int q = 0; q < 4; q++) { /* '-': not read on that row */
            if (isnan(rv[q])) snprintf(rd[q], sizeof rd[q], "-");
            else snprintf(rd[q], sizeof rd[q], "%.0f", rv[q]);
        }
        if (readings) snprintf(clk, sizeof clk, "   %5s / %-5s %4s / %s", rd[0], rd[1], rd[2], rd[3]);
        printf("%-8.8s %-*s %-*s %11.2f %-14.14s %11.2f %8.3f%s\n", p->backend, wn, p->name, ws, p->shape, p->med,
               best->impl, best->med, sp, clk);
        if (out) {
            char f[8][32];
            snprintf(f[0], sizeof f[0], "%d", p->d);
            snprintf(f[1], sizeof f[1], "%.3f", p->med);
            snprintf(f[2], sizeof f[2], "%.3f", best->med);
            snprintf(f[3], sizeof f[3], "%.4f", sp);
            for (int q = 0; q < 4; q++) fb_fmt_num(f[4 + q], sizeof f[4 + q], rv[q], q < 2 ? "%.0f" : "%.1f");
            const char *row[] = {p->backend, p->name, p->shape, f[0], f[1], best->impl, f[2], f[3], vlist,
                                 f[4], f[5], f[6], f[7]};
            csvt_add(out, row);
        }
    }
    int ret = 0;
    if (nmixed)
        fprintf(stderr, "fabench versus: on %ld shape%s ours and a vendor were timed one with the L2 flushed and the "
                        "other warm (l2_flush): measure both the same way\n", nmixed, nmixed == 1 ? "" : "s");
    if (nshape) {
        printf("\ngeomean speedup over the best vendor per shape: %.3f over %ld shape%s; the portable kernel fastest on %ld\n",
               exp(lbest / nshape), nshape, nshape == 1 ? "" : "s", nfastest);
        for (int k = 0; k < nvm; k++)
            printf("geomean speedup over %-14s %.3f over %ld shape%s\n", vm[k].impl, exp(vm[k].lsum / vm[k].n), vm[k].n,
                   vm[k].n == 1 ? "" : "s");
        for (int k = 0; k < nd; k++)
            printf("d=%-4d geomean speedup over the best vendor %.3f over %ld shape%s\n", dims[k], exp(dsum[k] / dn[k]), dn[k],
                   dn[k] == 1 ? "" : "s");
        if (nclk)
            printf("per SM cycle (each side's time times the SM clock it ran at): geomean %.3f over %ld shape%s\n",
                   exp(lclk / nclk), nclk, nclk == 1 ? "" : "s");
    } else {
        fprintf(stderr, "fabench versus: no shape with an ok portable row and an ok vendor row in %s\n", s.path);
        ret = 1;
    }
    if (out && csvt_write_atomic(out, csv_out, err, sizeof err) != 0) {
        fprintf(stderr, "fabench versus: %s\n", err);
        ret = 1;
    }
    csvt_free(out);
    csvt_free(names);
    free(vm);
    csvt_free(s.t);
    free(s.e);
    return ret;
}
