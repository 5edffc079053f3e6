/* compare.c: `fabench compare A B`: for every (impl, shape) measured in both results, the
 * ratio B/A of the median times and a verdict from the p20..p80 spreads (faster, slower,
 * same within noise), with the geometric mean of the ratios per implementation and overall.
 * (`fabench versus`, within one folder, is versus.c.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "csvio.h"
#include "perf_load.h"

typedef struct {
    perf_entry *a, *b;
} pair;

/* B against A by the spreads; a tie reads same-within-noise here */
static const char *verdict(const perf_entry *a, const perf_entry *b)
{
    const spread_verdict v = spread_compare(b, a);
    return v == SPREAD_TIE ? "same-within-noise" : spread_name(v);
}

/* "   run ids: A (3 rows), B (1 row); 2 rows without one" under a side's path; and on stderr,
 * when the side mixes runs, that its rows were not all measured together. 0 or -1. */
static int describe_runs(const perf_side *s, const char *label)
{
    perf_run *runs = NULL;
    size_t nr = 0;
    long none = 0;
    if (perf_runs(s, &runs, &nr, &none) != 0) return -1;
    printf("   run ids:");
    if (!nr) printf(" none (its rows %s)", s->has_run_id ? "have no run id" : "predate run ids");
    char list[512] = "";
    size_t o = 0;
    for (size_t k = 0; k < nr; k++) {
        printf("%s %s (%ld row%s)", k ? "," : "", runs[k].id, runs[k].rows, runs[k].rows == 1 ? "" : "s");
        if (o < sizeof list) o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", k ? ", " : "", runs[k].id);
    }
    if (nr && none) printf("; %ld row%s without one", none, none == 1 ? "" : "s");
    printf("\n");
    if (nr + (nr && none) > 1)
        fprintf(stderr, "fabench compare: %s holds rows of %zu runs (%s%s): they were not all measured together\n", label,
                nr + (none > 0), list, none ? ", and rows without a run id" : "");
    free(runs);
    return 0;
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
            "Rows that are not ok on either side are listed as not comparable. A and B are two\n"
            "results, two runs by nature: the run ids (run_id) each side holds are listed under\n"
            "its name, and stderr warns when a side mixes several runs.\n\n"
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
    perf_side s[2];
    memset(s, 0, sizeof s);
    char err[FB_ERRLEN];
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++)
        if ((rc = perf_load(args[k], &s[k], 0, err, sizeof err)) != 0) fprintf(stderr, "fabench compare: %s\n", err);
    pair *pairs = NULL;
    size_t np = 0;
    if (rc == 0) {
        pairs = calloc(s[0].n + 1, sizeof *pairs);
        if (!pairs) { fprintf(stderr, "fabench compare: out of memory\n"); rc = 1; }
    }
    if (rc != 0) {
        for (int k = 0; k < 2; k++) perf_side_free(&s[k]);
        return rc == FB_EXIT_BADINPUT ? FB_EXIT_BADINPUT : 1;
    }
    /* pass 1: same impl, backend, name and shape; pass 2: same impl and shape where each
     * side has exactly one unmatched row of it (one GPU's cuda against another's hip) */
    for (int pass = 1; pass <= 2; pass++)
        for (size_t i = 0; i < s[0].n; i++) {
            perf_entry *a = &s[0].e[i];
            if (a->matched) continue;
            perf_entry *hit = NULL;
            int count = 0;
            for (size_t j = 0; j < s[1].n; j++) {
                perf_entry *b = &s[1].e[j];
                if (b->matched || strcmp(a->impl, b->impl) || strcmp(a->shape, b->shape) || strcmp(a->name, b->name)) continue;
                if (pass == 1 && strcmp(a->backend, b->backend)) continue;
                count++;
                hit = b;
            }
            if (pass == 2) {
                int acount = 0;
                for (size_t j = 0; j < s[0].n; j++) {
                    perf_entry *x = &s[0].e[j];
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
    for (int k = 0; k < 2; k++) {
        printf("%s: %s\n", k ? "B" : "A", s[k].path);
        describe_runs(&s[k], k ? "B" : "A");
    }
    printf("B/A of the median time: below 1, B is faster (verdict from the p20..p80 spreads)\n\n");
    const int wn = perf_col_width(s[0].e, s[0].n, 0, "name", 20), ws = perf_col_width(s[0].e, s[0].n, 1, "shape", 20);
    printf("%-16s %-15s %-*s %-*s %11s %11s %7s  %s\n", "impl", "backend", wn, "name", ws, "shape", "A us", "B us", "B/A",
           "verdict");
    double lsum = 0;
    long nok = 0, nfaster = 0, nslower = 0, nsame = 0, nbad = 0, nmixed = 0; /* nmixed: pairs whose l2_flush differs */
    for (size_t i = 0; i < np; i++) {
        perf_entry *a = pairs[i].a, *b = pairs[i].b;
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
        perf_entry *a = pairs[i].a;
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
    for (int k = 0; k < 2; k++) perf_side_free(&s[k]);
    return ret;
}
