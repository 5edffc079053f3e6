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

/* What the command line asks for. */
typedef struct {
    const char *device, *suite, *shapes_file, *own_path, *out; /* own_path, out: NULL for the defaults */
    from_table *from; /* the --from tables: MAX_FROM, calloc'd */
    int nfrom, quiet, have_dtype;
    dtype_t dtype;    /* --dtype: over the shapes' own */
    attn_opts ao;     /* the timing: --budget, --warmup, --seed */
} port_opts;

/* getopt's loop: each option into *o, checked as it comes. Returns -1 when all are read,
 * else the exit status (the message or the usage printed). */
static int read_options(int argc, char **argv, port_opts *o)
{
    enum { O_DEVICE = 1, O_SUITE, O_SHAPES, O_FROM, O_TUNING, O_OUT, O_DTYPE, O_BUDGET, O_WARMUP, O_SEED, O_QUIET, O_HELP };
    static const struct option opts[] = {
        {"device", required_argument, 0, O_DEVICE}, {"suite", required_argument, 0, O_SUITE},
        {"shapes", required_argument, 0, O_SHAPES}, {"from", required_argument, 0, O_FROM},
        {"tuning", required_argument, 0, O_TUNING}, {"out", required_argument, 0, O_OUT},
        {"dtype", required_argument, 0, O_DTYPE}, {"budget", required_argument, 0, O_BUDGET},
        {"warmup", required_argument, 0, O_WARMUP}, {"seed", required_argument, 0, O_SEED},
        {"quiet", no_argument, 0, O_QUIET}, {"help", no_argument, 0, O_HELP}, {0, 0, 0, 0}};
    char *end;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        double x;
        switch (c) {
        case O_DEVICE: o->device = optarg; break;
        case O_SUITE: o->suite = optarg; break;
        case O_SHAPES: o->shapes_file = optarg; break;
        case O_TUNING: o->own_path = optarg; break;
        case O_OUT: o->out = optarg; break;
        case O_QUIET: o->quiet = 1; break;
        case O_FROM:
            if (o->nfrom == MAX_FROM) { fprintf(stderr, "fabench portability: at most %d --from tables\n", MAX_FROM); return FB_EXIT_BADINPUT; }
            o->from[o->nfrom++].path = optarg;
            break;
        case O_DTYPE:
            if (dtype_parse(optarg, &o->dtype) != 0) {
                fprintf(stderr, "fabench portability: --dtype: unknown '%s' (known: fp32, fp16, bf16)\n", optarg);
                return FB_EXIT_BADINPUT;
            }
            o->have_dtype = 1;
            break;
        case O_BUDGET:
        case O_WARMUP:
            x = strtod(optarg, &end);
            if (*end || end == optarg || !(x >= 0) || x > 1e6) {
                fprintf(stderr, "fabench portability: %s: bad seconds '%s'\n", argv[optind - 1], optarg);
                return FB_EXIT_BADINPUT;
            }
            if (c == O_BUDGET) o->ao.timing.budget_s = x; else o->ao.timing.warmup_s = x;
            break;
        case O_SEED:
            o->ao.seed = strtoull(optarg, &end, 10);
            if (*end || end == optarg || optarg[0] == '-') {
                fprintf(stderr, "fabench portability: --seed: bad number '%s'\n", optarg);
                return FB_EXIT_BADINPUT;
            }
            break;
        case 'h':
        case O_HELP: usage(stdout); return 0;
        case ':': fprintf(stderr, "fabench portability: %s needs a value\n", argv[optind - 1]); return FB_EXIT_BADINPUT;
        default:
            fprintf(stderr, "fabench portability: unknown option '%s' (fabench portability --help)\n", argv[optind - 1]);
            return FB_EXIT_BADINPUT;
        }
    }
    return -1;
}

/* The options into *o, with the timing's defaults (a short budget: many runs, each only
 * compared with this device's own), and what must be there. Returns -1 to go on, else the
 * exit status (the message or the usage printed; o->from freed). */
static int parse_options(int argc, char **argv, port_opts *o)
{
    memset(o, 0, sizeof *o);
    o->dtype = DT_BF16;
    o->from = calloc(MAX_FROM, sizeof *o->from);
    attn_opts_defaults(&o->ao);
    o->ao.timing.budget_s = 0.3;
    o->ao.timing.warmup_s = 0.05;
    if (!o->from) { fprintf(stderr, "fabench portability: out of memory\n"); return 1; }
    int rc = read_options(argc, argv, o);
    if (rc < 0 && (optind < argc || !o->device || !o->nfrom || (!o->suite == !o->shapes_file))) {
        if (optind < argc) fprintf(stderr, "fabench portability: unexpected argument '%s'\n", argv[optind]);
        else fprintf(stderr, "fabench portability: needs --device, at least one --from and one of --suite or --shapes\n\n");
        usage(stderr);
        rc = FB_EXIT_BADINPUT;
    }
    if (rc >= 0) {
        free(o->from);
        o->from = NULL;
    }
    return rc;
}

/* The --from tables, the shapes and the device, read before any work: 0, or 2 with the
 * message printed (the shapes freed). */
static int open_inputs(port_opts *o, shape_list_t *shapes, rt_device *dev)
{
    char err[FB_ERRLEN];
    for (int i = 0; i < o->nfrom; i++)
        if (load_from(&o->from[i], err, sizeof err) != 0) {
            fprintf(stderr, "fabench portability: %s\n", err);
            return FB_EXIT_BADINPUT;
        }
    int rc = shapes_load_file_or_suite(o->shapes_file, o->suite, shapes, err, sizeof err);
    if (rc != 0) { fprintf(stderr, "fabench portability: %s\n", err); return FB_EXIT_BADINPUT; }
    if (rt_select(o->device, dev, err, sizeof err) != 0) {
        fprintf(stderr, "fabench portability: %s\n", err);
        shapes_free(shapes);
        return FB_EXIT_BADINPUT;
    }
    return 0;
}

/* The files beside --out: the defaults that o->out and o->own_path may point into. */
typedef struct {
    char own_default[1200], out_default[1200], man[1300];
} port_paths;

/* --out (default results/<gpu-slug>/portability.csv); the folder's manifest and this
 * device's own tuning table (unless --tuning) are beside it, where tune wrote them. */
static void resolve_paths(port_opts *o, const rt_device *dev, port_paths *p)
{
    char slug[256];
    fb_slug(dev->info.name, slug, sizeof slug);
    snprintf(p->out_default, sizeof p->out_default, "results/%s/portability.csv", slug);
    if (!o->out) o->out = p->out_default;
    const char *sl = strrchr(o->out, '/');
    const int dirlen = sl ? (int)(sl - o->out + 1) : 0;
    snprintf(p->man, sizeof p->man, "%.*smanifest.csv", dirlen, o->out);
    snprintf(p->own_default, sizeof p->own_default, "%.*stuning.csv", dirlen, o->out);
    if (!o->own_path) o->own_path = p->own_default;
}

/* Before any work: this device's own table must exist, portability.csv is read (its rows
 * kept) and written back, so that one that cannot be written fails now, and the manifest
 * notes the command. 0, or 2 with the message printed; *table: the rows to add to. */
static int open_outputs(const port_opts *o, const port_paths *p, const rt_device *dev, int argc, char **argv,
                        csv_table **table)
{
    char err[FB_ERRLEN];
    struct stat st;
    int rc = 0;
    if (stat(o->own_path, &st) != 0) {
        fprintf(stderr, "fabench portability: %s: no such tuning table (this device's own; tune first, or --tuning)\n", o->own_path);
        rc = FB_EXIT_BADINPUT;
    } else if ((rc = csvt_open_append(o->out, port_header, PORT_NCOLS, table, err, sizeof err)) != 0 ||
               (rc = csvt_write_atomic(*table, o->out, err, sizeof err)) != 0 ||
               (rc = note_manifest(p->man, dev, argc + 1, argv - 1, err, sizeof err)) != 0) {
        fprintf(stderr, "fabench portability: %s\n", err);
        rc = FB_EXIT_BADINPUT;
    }
    return rc;
}

/* The tables are read whole before any work, through the lookup the run makes: a
 * malformed one is bad input now, not after an hour of runs. 0, or 2 with the message printed. */
static int check_tables(const port_opts *o, const shape_list_t *shapes, const rt_device *dev)
{
    char err[FB_ERRLEN];
    for (int i = 0; i <= o->nfrom; i++) {
        kconfig probe;
        char src[300];
        const char *p = i < o->nfrom ? o->from[i].path : o->own_path;
        if (shapes->n && tune_lookup(p, dev, &shapes->v[0], DT_BF16, &probe, src, sizeof src, err, sizeof err) == 2) {
            fprintf(stderr, "fabench portability: %s\n", err);
            return FB_EXIT_BADINPUT;
        }
    }
    return 0;
}


/* One shape per class, the one with the most work (the tuner's representative too):
 * keys[i] the class, rep[i] its shape. Returns the count; 0 when rep or keys is NULL. */
static size_t pick_classes(const port_opts *o, const shape_list_t *shapes, size_t *rep, char (*keys)[96])
{
    size_t nclass = 0;
    for (size_t i = 0; rep && keys && i < shapes->n; i++) {
        char key[96];
        tune_class_key(&shapes->v[i], shapes_dtype(&shapes->v[i], o->have_dtype, o->dtype), key, sizeof key);
        size_t k = 0;
        while (k < nclass && strcmp(keys[k], key)) k++;
        if (k == nclass) { snprintf(keys[nclass], sizeof keys[0], "%s", key); rep[nclass++] = i; }
        else if (shape_flops(&shapes->v[i]) > shape_flops(&shapes->v[rep[k]])) rep[k] = i;
    }
    return nclass;
}

/* The run: what every measurement shares, and what they gather. */
typedef struct {
    const port_opts *o;
    const rt_device *dev;
    attn_runner *runner;
    csv_table *table;     /* portability.csv's rows, written after every one */
    long rows;            /* rows written */
    int fatal;            /* a run or a write failed: the run stops */
    char err[FB_ERRLEN];  /* the lookups', runs' and writes' messages */
} port_run;

/* This device's own best for a class, which every other winner is measured against. */
typedef struct {
    double median_us;
    char cs[KCONFIG_STR_MAX], us[32]; /* its configuration and median time as the rows write them */
} own_best;

/* Now in UTC, as the rows' date. */
static void utc_now(char *out, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Their winner (table ft's GPU and runtime k) for the class, timed on this device: a
 * portability.csv row against the own best (pct where it passed here), written at once.
 * Nothing when the table has no tuned row for the class. 0, or -1 when a run or the write
 * failed (said; r->fatal set). */
static int port_theirs(port_run *r, const shape_t *s, dtype_t dt, const char *key, const from_table *ft, int k,
                       const own_best *own)
{
    kconfig theirs;
    char src[300];
    if (tune_lookup_for(ft->path, ft->gpu[k], ft->backend[k], s, dt, &theirs, src, sizeof src, r->err, sizeof r->err) != 1 ||
        strncmp(src, "tuned ", 6))
        return 0;
    attn_result res;
    if (attn_run(r->runner, s, dt, &theirs, &r->o->ao, &res, r->err, sizeof r->err) != 0) {
        fprintf(stderr, "fabench portability: %s\n", r->err);
        r->fatal = 1;
        return -1;
    }
    char cs[KCONFIG_STR_MAX], us[32] = "", pct[32] = "", date[32];
    kconfig_str(theirs.set ? &theirs : &res.config, cs, sizeof cs);
    if (res.status == ST_OK) {
        kconfig_str(&res.config, cs, sizeof cs);
        snprintf(us, sizeof us, "%.3f", res.us.median);
        snprintf(pct, sizeof pct, "%.1f", 100.0 * own->median_us / res.us.median);
    }
    utc_now(date, sizeof date);
    const char *row[PORT_NCOLS] = {ft->gpu[k], ft->backend[k], r->dev->info.name, r->dev->rt->name, key, pct,
                                   s->name, cs, own->cs, us, own->us, status_name(res.status), res.reason, date};
    if (put_row(r->table, row) != 0 || csvt_write_atomic(r->table, r->o->out, r->err, sizeof r->err) != 0) {
        fprintf(stderr, "fabench portability: %s\n", r->err);
        r->fatal = 1;
        return -1;
    }
    r->rows++;
    if (!r->o->quiet)
        fprintf(stderr, "portability: %-30s %s/%s on %s/%s: %s%s%s\n", key, ft->gpu[k], ft->backend[k], r->dev->info.name,
                r->dev->rt->name, res.status == ST_OK ? pct : status_name(res.status),
                res.status == ST_OK ? "% of the own best" : ": ", res.status == ST_OK ? "" : res.reason);
    return 0;
}

/* One class on its shape: this device's own tuned winner timed, then the winner of every
 * GPU and runtime of each --from table. A class without a tuned row of its own, or whose
 * own winner does not pass here, is skipped (said): there is nothing to compare with. */
static void port_class(port_run *r, const shape_t *s, const char *key)
{
    const port_opts *o = r->o;
    const dtype_t dt = shapes_dtype(s, o->have_dtype, o->dtype);
    kconfig cfg;
    char src[300];
    int lr = tune_lookup(o->own_path, r->dev, s, dt, &cfg, src, sizeof src, r->err, sizeof r->err);
    if (lr != 1 || strncmp(src, "tuned ", 6)) {
        if (!o->quiet) fprintf(stderr, "portability: %s: no tuned row of its own for this class in %s: skipped\n", key, o->own_path);
        return;
    }
    attn_result mine;
    if (attn_run(r->runner, s, dt, &cfg, &o->ao, &mine, r->err, sizeof r->err) != 0) {
        fprintf(stderr, "fabench portability: %s\n", r->err);
        r->fatal = 1;
        return;
    }
    own_best own = {.median_us = mine.us.median};
    kconfig_str(&mine.config, own.cs, sizeof own.cs);
    if (mine.status != ST_OK) {
        fprintf(stderr, "portability: %s: this device's own winner %s did not pass here (%s: %s): skipped\n", key, own.cs,
                status_name(mine.status), mine.reason);
        return;
    }
    snprintf(own.us, sizeof own.us, "%.3f", mine.us.median);
    for (int fi = 0; fi < o->nfrom && !interrupted && !r->fatal; fi++)
        for (int k = 0; k < o->from[fi].n && !interrupted; k++)
            if (port_theirs(r, s, dt, key, &o->from[fi], k, &own) != 0) break;
}

/* Every class, on its shape with the most work, until done, interrupted or a failure. */
static void port_classes(port_run *r, const shape_list_t *shapes)
{
    size_t *rep = calloc(shapes->n + 1, sizeof *rep);
    char (*keys)[96] = calloc(shapes->n + 1, sizeof *keys);
    const size_t nclass = pick_classes(r->o, shapes, rep, keys);
    for (size_t ci = 0; ci < nclass && !interrupted && !r->fatal; ci++) port_class(r, &shapes->v[rep[ci]], keys[ci]);
    free(rep);
    free(keys);
}

int cmd_portability(int argc, char **argv)
{
    port_opts o;
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) return rc;
    shape_list_t shapes = {0};
    rt_device dev;
    if ((rc = open_inputs(&o, &shapes, &dev)) != 0) {
        free(o.from);
        return rc;
    }
    port_paths paths;
    resolve_paths(&o, &dev, &paths);
    port_run r = {.o = &o, .dev = &dev};
    rc = open_outputs(&o, &paths, &dev, argc, argv, &r.table);
    if (rc == 0) rc = check_tables(&o, &shapes, &dev);
    if (rc == 0 && attn_open(&dev, &r.runner, r.err, sizeof r.err) != 0) {
        fprintf(stderr, "fabench portability: %s\n", r.err);
        rc = 1;
    }
    if (rc == 0) {
        signal(SIGINT, on_sigint); /* a run stopped with Ctrl-C keeps the rows written */
        port_classes(&r, &shapes);
        if (!o.quiet) fprintf(stderr, "fabench portability: %ld rows in %s\n", r.rows, o.out);
        if (interrupted && !o.quiet) fprintf(stderr, "fabench portability: interrupted; finished rows kept\n");
        rc = interrupted ? 130 : r.fatal || r.rows == 0 ? 1 : 0;
        attn_close(r.runner);
    }
    csvt_free(r.table);
    shapes_free(&shapes);
    free(o.from);
    return rc;
}
