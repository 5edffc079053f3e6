/* portability.c: `fabench portability`: the configurations other GPUs and runtimes tuned
 * (their tuning.csv) run on this device, each as a percentage of this device's own tuned
 * best for the same shape class, both timed in the same run: portability.csv. */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "attn.h"
#include "commands.h"
#include "common.h"
#include "config.h"
#include "csvio.h"
#include "manifest.h"
#include "shapes.h"
#include "tune.h"

static const char *const port_header[] = {"from_gpu", "from_backend", "to_gpu", "to_backend", "class", "pct", "shape",
                                          "from_config", "to_config", "from_us", "to_us", "status", "reason", "date"};
#define PORT_NCOLS (sizeof port_header / sizeof port_header[0])

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) { (void)sig; interrupted = 1; }

#define MAX_FROM 16

typedef struct {
    const char *path;
    char gpu[64][256], backend[64][32];
    int n;
} from_table;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fabench portability --device SEL (--suite NAME | --shapes FILE) --from FILE... [options]\n\n"
            "How well tuned configurations travel. For each shape class of the shapes (one shape\n"
            "per class, the one with the most work) that this device's own tuning table has, it\n"
            "times this device's own winner, then the winner of every GPU and runtime that each\n"
            "--from table (another machine's tuning.csv) has for the class, on the same shape and\n"
            "inputs. pct = 100 * own median / their median: 100 means as fast as tuning here; a\n"
            "configuration that cannot run here is a row with its status and no pct.\n\n"
            "  --device SEL      the device to run on (fabench devices)\n"
            "  --from FILE       a tuning.csv tuned elsewhere (repeatable; this device's own table\n"
            "                    too gives the 100%% diagonal)\n"
            "  --tuning FILE     this device's own table (default: tuning.csv beside --out)\n"
            "  --out FILE        default results/<gpu-slug>/portability.csv; rows of the same\n"
            "                    (from, to, class) are replaced, others kept\n"
            "  --dtype T, --budget S (default 0.3), --warmup S (default 0.05), --seed N, --quiet\n\n"
            "Exit status: 0, 1 a run failed or nothing was comparable, 2 bad input.\n");
}

/* the distinct (gpu, backend) pairs of a tuning table; 0 or 2 with err */
static int load_from(from_table *ft, char *err, size_t errlen)
{
    csv_table *t;
    int rc = csvt_read(ft->path, &t, err, errlen);
    if (rc != 0) return FB_EXIT_BADINPUT;
    int cg = csvt_col(t, "gpu"), cb = csvt_col(t, "backend"), cc = csvt_col(t, "shape_class"), cf = csvt_col(t, "config");
    if (cg < 0 || cb < 0 || cc < 0 || cf < 0) {
        snprintf(err, errlen, "%.900s:1: not a tuning table (needs gpu, backend, shape_class, config)", ft->path);
        csvt_free(t);
        return FB_EXIT_BADINPUT;
    }
    for (size_t r = 0; r < t->nrows; r++) {
        kconfig c = {0};
        char perr[FB_ERRLEN];
        if (kconfig_parse(t->rows[r][cf], &c, perr, sizeof perr) != 0) {
            snprintf(err, errlen, "%.300s:%d: config: %.600s", ft->path, t->row_line[r], perr);
            csvt_free(t);
            return FB_EXIT_BADINPUT;
        }
        int k = 0;
        while (k < ft->n && (strcmp(ft->gpu[k], t->rows[r][cg]) || strcmp(ft->backend[k], t->rows[r][cb]))) k++;
        if (k == ft->n && ft->n < 64) {
            snprintf(ft->gpu[k], sizeof ft->gpu[k], "%s", t->rows[r][cg]);
            snprintf(ft->backend[k], sizeof ft->backend[k], "%s", t->rows[r][cb]);
            ft->n++;
        }
    }
    csvt_free(t);
    return 0;
}

/* adds a row, replacing one of the same (from, to, class) */
static int put_row(csv_table *t, const char *const *row)
{
    for (size_t r = 0; r < t->nrows; r++) {
        int same = 1;
        for (int k = 0; k < 5 && same; k++) same = !strcmp(t->rows[r][k], row[k]);
        if (!same) continue;
        return csvt_replace(t, r, row);
    }
    return csvt_add(t, row);
}

/* portability.command and .date in the folder's manifest, the run's own keys kept */
static int note_manifest(const char *path, const rt_device *dev, int argc, char **argv, char *err, size_t errlen)
{
    static const char *const header[2] = {"key", "value"};
    csv_table *t;
    int rc = csvt_open_append(path, header, 2, &t, err, errlen);
    if (rc != 0) return rc;
    if (t->nrows == 0) manifest_fill(t, dev, argc, argv);
    manifest_note_command(t, "portability", argc, argv);
    rc = csvt_write_atomic(t, path, err, errlen);
    csvt_free(t);
    return rc;
}

int cmd_portability(int argc, char **argv)
{
    enum { O_DEVICE = 1, O_SUITE, O_SHAPES, O_FROM, O_TUNING, O_OUT, O_DTYPE, O_BUDGET, O_WARMUP, O_SEED, O_QUIET, O_HELP };
    static const struct option opts[] = {
        {"device", required_argument, 0, O_DEVICE}, {"suite", required_argument, 0, O_SUITE},
        {"shapes", required_argument, 0, O_SHAPES}, {"from", required_argument, 0, O_FROM},
        {"tuning", required_argument, 0, O_TUNING}, {"out", required_argument, 0, O_OUT},
        {"dtype", required_argument, 0, O_DTYPE}, {"budget", required_argument, 0, O_BUDGET},
        {"warmup", required_argument, 0, O_WARMUP}, {"seed", required_argument, 0, O_SEED},
        {"quiet", no_argument, 0, O_QUIET}, {"help", no_argument, 0, O_HELP}, {0, 0, 0, 0}};
    const char *device = NULL, *suite = NULL, *shapes_file = NULL, *own_path = NULL, *out = NULL;
    from_table *from = calloc(MAX_FROM, sizeof *from);
    int nfrom = 0, quiet = 0, have_dtype = 0;
    dtype_t dtype = DT_BF16;
    attn_opts ao;
    attn_opts_defaults(&ao);
    ao.timing.budget_s = 0.3;
    ao.timing.warmup_s = 0.05;
    char err[FB_ERRLEN], *end;
    if (!from) { fprintf(stderr, "fabench portability: out of memory\n"); return 1; }
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        double x;
        switch (c) {
        case O_DEVICE: device = optarg; break;
        case O_SUITE: suite = optarg; break;
        case O_SHAPES: shapes_file = optarg; break;
        case O_TUNING: own_path = optarg; break;
        case O_OUT: out = optarg; break;
        case O_QUIET: quiet = 1; break;
        case O_FROM:
            if (nfrom == MAX_FROM) { fprintf(stderr, "fabench portability: at most %d --from tables\n", MAX_FROM); free(from); return FB_EXIT_BADINPUT; }
            from[nfrom++].path = optarg;
            break;
        case O_DTYPE:
            if (dtype_parse(optarg, &dtype) != 0) {
                fprintf(stderr, "fabench portability: --dtype: unknown '%s' (known: fp32, fp16, bf16)\n", optarg);
                free(from);
                return FB_EXIT_BADINPUT;
            }
            have_dtype = 1;
            break;
        case O_BUDGET:
        case O_WARMUP:
            x = strtod(optarg, &end);
            if (*end || end == optarg || !(x >= 0) || x > 1e6) {
                fprintf(stderr, "fabench portability: %s: bad seconds '%s'\n", argv[optind - 1], optarg);
                free(from);
                return FB_EXIT_BADINPUT;
            }
            if (c == O_BUDGET) ao.timing.budget_s = x; else ao.timing.warmup_s = x;
            break;
        case O_SEED:
            ao.seed = strtoull(optarg, &end, 10);
            if (*end || end == optarg || optarg[0] == '-') {
                fprintf(stderr, "fabench portability: --seed: bad number '%s'\n", optarg);
                free(from);
                return FB_EXIT_BADINPUT;
            }
            break;
        case 'h':
        case O_HELP: usage(stdout); free(from); return 0;
        case ':': fprintf(stderr, "fabench portability: %s needs a value\n", argv[optind - 1]); free(from); return FB_EXIT_BADINPUT;
        default:
            fprintf(stderr, "fabench portability: unknown option '%s' (fabench portability --help)\n", argv[optind - 1]);
            free(from);
            return FB_EXIT_BADINPUT;
        }
    }
    if (optind < argc || !device || !nfrom || (!suite == !shapes_file)) {
        if (optind < argc) fprintf(stderr, "fabench portability: unexpected argument '%s'\n", argv[optind]);
        else fprintf(stderr, "fabench portability: needs --device, at least one --from and one of --suite or --shapes\n\n");
        usage(stderr);
        free(from);
        return FB_EXIT_BADINPUT;
    }
    for (int i = 0; i < nfrom; i++)
        if (load_from(&from[i], err, sizeof err) != 0) {
            fprintf(stderr, "fabench portability: %s\n", err);
            free(from);
            return FB_EXIT_BADINPUT;
        }
    shape_list_t shapes = {0};
    int rc = shapes_file ? shapes_load(shapes_file, &shapes, err, sizeof err) : shapes_load_suite(suite, &shapes, err, sizeof err);
    if (rc != 0) { fprintf(stderr, "fabench portability: %s\n", err); free(from); return FB_EXIT_BADINPUT; }
    rt_device dev;
    if (rt_select(device, &dev, err, sizeof err) != 0) {
        fprintf(stderr, "fabench portability: %s\n", err);
        shapes_free(&shapes);
        free(from);
        return FB_EXIT_BADINPUT;
    }
    char slug[256], own_default[1200], out_default[1200], man[1300];
    fb_slug(dev.info.name, slug, sizeof slug);
    snprintf(own_default, sizeof own_default, "results/%s/tuning.csv", slug);
    snprintf(out_default, sizeof out_default, "results/%s/portability.csv", slug);
    if (!out) out = out_default;
    {
        const char *sl = strrchr(out, '/');
        snprintf(man, sizeof man, "%.*smanifest.csv", sl ? (int)(sl - out + 1) : 0, out);
        snprintf(own_default, sizeof own_default, "%.*stuning.csv", sl ? (int)(sl - out + 1) : 0, out);
    }
    if (!own_path) own_path = own_default;
    csv_table *table = NULL;
    struct stat st;
    if (stat(own_path, &st) != 0) {
        fprintf(stderr, "fabench portability: %s: no such tuning table (this device's own; tune first, or --tuning)\n", own_path);
        rc = FB_EXIT_BADINPUT;
    } else if ((rc = csvt_open_append(out, port_header, PORT_NCOLS, &table, err, sizeof err)) != 0 ||
               (rc = csvt_write_atomic(table, out, err, sizeof err)) != 0 ||
               (rc = note_manifest(man, &dev, argc + 1, argv - 1, err, sizeof err)) != 0) {
        fprintf(stderr, "fabench portability: %s\n", err);
        rc = FB_EXIT_BADINPUT;
    }
    /* the tables are read whole before any work: a malformed one is bad input now */
    for (int i = 0; rc == 0 && i <= nfrom; i++) {
        kconfig probe;
        char src[300];
        const char *p = i < nfrom ? from[i].path : own_path;
        if (shapes.n && tune_lookup(p, &dev, &shapes.v[0], DT_BF16, &probe, src, sizeof src, err, sizeof err) == 2) {
            fprintf(stderr, "fabench portability: %s\n", err);
            rc = FB_EXIT_BADINPUT;
        }
    }
    attn_runner *runner = NULL;
    if (rc == 0 && attn_open(&dev, &runner, err, sizeof err) != 0) {
        fprintf(stderr, "fabench portability: %s\n", err);
        rc = 1;
    }
    if (rc != 0) {
        csvt_free(table);
        shapes_free(&shapes);
        free(from);
        return rc;
    }
    signal(SIGINT, on_sigint);
    /* one shape per class: the one with the most work */
    size_t *rep = calloc(shapes.n + 1, sizeof *rep);
    char (*keys)[96] = calloc(shapes.n + 1, sizeof *keys);
    size_t nclass = 0;
    for (size_t i = 0; rep && keys && i < shapes.n; i++) {
        dtype_t dt = have_dtype ? dtype : shapes.v[i].has_dtype ? shapes.v[i].dtype : DT_BF16;
        char key[96];
        tune_class_key(&shapes.v[i], dt, key, sizeof key);
        size_t k = 0;
        while (k < nclass && strcmp(keys[k], key)) k++;
        if (k == nclass) { snprintf(keys[nclass], sizeof keys[0], "%s", key); rep[nclass++] = i; }
        else if (shape_flops(&shapes.v[i]) > shape_flops(&shapes.v[rep[k]])) rep[k] = i;
    }
    long rows = 0, fatal = 0;
    for (size_t ci = 0; ci < nclass && !interrupted && !fatal; ci++) {
        const shape_t *s = &shapes.v[rep[ci]];
        dtype_t dt = have_dtype ? dtype : s->has_dtype ? s->dtype : DT_BF16;
        kconfig own;
        char src[300];
        int lr = tune_lookup(own_path, &dev, s, dt, &own, src, sizeof src, err, sizeof err);
        if (lr != 1 || strncmp(src, "tuned ", 6)) {
            if (!quiet) fprintf(stderr, "portability: %s: no tuned row of its own for this class in %s: skipped\n", keys[ci], own_path);
            continue;
        }
        attn_result mine;
        if (attn_run(runner, s, dt, &own, &ao, &mine, err, sizeof err) != 0) { fprintf(stderr, "fabench portability: %s\n", err); fatal = 1; break; }
        char own_cs[KCONFIG_STR_MAX], own_us[32];
        kconfig_str(&mine.config, own_cs, sizeof own_cs);
        if (mine.status != ST_OK) {
            fprintf(stderr, "portability: %s: this device's own winner %s did not pass here (%s: %s): skipped\n", keys[ci],
                    own_cs, status_name(mine.status), mine.reason);
            continue;
        }
        snprintf(own_us, sizeof own_us, "%.3f", mine.us.median);
        for (int fi = 0; fi < nfrom && !interrupted && !fatal; fi++)
            for (int k = 0; k < from[fi].n && !interrupted; k++) {
                kconfig theirs;
                if (tune_lookup_for(from[fi].path, from[fi].gpu[k], from[fi].backend[k], s, dt, &theirs, src, sizeof src, err,
                                    sizeof err) != 1 ||
                    strncmp(src, "tuned ", 6))
                    continue;
                attn_result res;
                if (attn_run(runner, s, dt, &theirs, &ao, &res, err, sizeof err) != 0) {
                    fprintf(stderr, "fabench portability: %s\n", err);
                    fatal = 1;
                    break;
                }
                char cs[KCONFIG_STR_MAX], us[32] = "", pct[32] = "", date[32];
                kconfig_str(theirs.set ? &theirs : &res.config, cs, sizeof cs);
                if (res.status == ST_OK) {
                    kconfig_str(&res.config, cs, sizeof cs);
                    snprintf(us, sizeof us, "%.3f", res.us.median);
                    snprintf(pct, sizeof pct, "%.1f", 100.0 * mine.us.median / res.us.median);
                }
                time_t now = time(NULL);
                struct tm tm;
                gmtime_r(&now, &tm);
                strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
                const char *row[PORT_NCOLS] = {from[fi].gpu[k], from[fi].backend[k], dev.info.name, dev.rt->name, keys[ci], pct,
                                               s->name, cs, own_cs, us, own_us, status_name(res.status), res.reason, date};
                if (put_row(table, row) != 0 || csvt_write_atomic(table, out, err, sizeof err) != 0) {
                    fprintf(stderr, "fabench portability: %s\n", err);
                    fatal = 1;
                    break;
                }
                rows++;
                if (!quiet)
                    fprintf(stderr, "portability: %-30s %s/%s on %s/%s: %s%s%s\n", keys[ci], from[fi].gpu[k], from[fi].backend[k],
                            dev.info.name, dev.rt->name, res.status == ST_OK ? pct : status_name(res.status),
                            res.status == ST_OK ? "% of the own best" : ": ", res.status == ST_OK ? "" : res.reason);
            }
    }
    if (!quiet) fprintf(stderr, "fabench portability: %ld rows in %s\n", rows, out);
    if (interrupted && !quiet) fprintf(stderr, "fabench portability: interrupted; finished rows kept\n");
    attn_close(runner);
    free(rep);
    free(keys);
    csvt_free(table);
    shapes_free(&shapes);
    free(from);
    if (interrupted) return 130;
    return fatal || rows == 0 ? 1 : 0;
}
