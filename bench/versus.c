/* versus.c: `fabench versus RESULTS`: within one results folder, the portable kernel against
 * every vendor and against the best vendor of each shape, with geometric means. */
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
    perf_side s;
    memset(&s, 0, sizeof s);
    char err[FB_ERRLEN];
    csv_table *names = NULL;
    int ncol = -1, rc = perf_load(arg, &s, 0, err, sizeof err);
    if (rc == 0 && shapes_path && shape_names(shapes_path, &names, &ncol, err, sizeof err) != 0) rc = FB_EXIT_BADINPUT;
    vend_mean *vm = rc == 0 ? calloc(s.n + 1, sizeof *vm) : NULL;
    if (rc == 0 && !vm) { snprintf(err, sizeof err, "out of memory"); rc = 1; }
    if (rc != 0) {
        fprintf(stderr, "fabench versus: %s\n", err);
        perf_side_free(&s);
        csvt_free(names);
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
    const int wn = perf_col_width(s.e, s.n, 0, "name", 20), ws = perf_col_width(s.e, s.n, 1, "shape", 20);
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
        const perf_entry *p = &s.e[i];
        if (strcmp(p->impl, "portable") || !p->ok) continue;
        if (names) {
            int named = 0;
            for (size_t r = 0; r < names->nrows && !named; r++) named = !strcmp(names->rows[r][ncol], p->name);
            if (!named) continue;
        }
        const perf_entry *best = NULL;
        char vlist[512] = "";
        size_t vl = 0;
        int mixed = 0; /* a vendor row timed another way (l2_flush) than ours */
        for (size_t j = 0; j < s.n; j++) {
            const perf_entry *v = &s.e[j];
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
    perf_side_free(&s);
    return ret;
}
