/* run_cmd.c: `fabench run`: verify and time the portable kernel on shapes, one perf.csv
 * row per shape (defaults, --config or the tuning table's configuration). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attn.h"
#include "commands.h"
#include "common.h"
#include "config.h"
#include "csvio.h"
#include "manifest.h"
#include "perf.h"
#include "rt.h"
#include "shapes.h"
#include "tune.h"
#include "tune_missing.h"
#include "measure_opts.h"

static void usage_run(FILE *f)
{
    char suites[512];
    shapes_list_suites(suites, sizeof suites);
    fprintf(f,
            "usage: fabench run --device SEL (--shapes FILE.csv | --suite NAME) --out FILE.csv [options]\n\n"
            "Runs the portable kernel on each shape: compile, verify every output element against\n"
            "the reference (double precision; on the device, spot-checked against the CPU), then\n"
            "time with device events. One perf.csv row per shape.\n\n"
            "  --device SEL       RUNTIME:INDEX as `fabench devices` lists it (opencl:0), or a\n"
            "                     case-insensitive part of the device name\n"
            "  --shapes FILE      CSV: name,batch,hq,hkv,sq,skv,d,causal[,dtype][,lens][,qlens][,page]\n"
            "  --suite NAME       a suite in bench/suites/ (%s)\n"
            "  --out FILE         perf.csv to write (atomically, rewritten after every shape)\n"
            "  --append           add rows to an existing --out file instead of replacing it\n"
            "  --update           --append, but a shape's row already there (this device, dtype)\n"
            "                     is replaced where it stands: measure a subset again into a\n"
            "                     finished perf.csv; --manifest then records the command under\n"
            "                     update.N. keys and leaves the run's own as they were\n"
            "  --resume           --append, skipping the shapes --out already has a row for (this\n"
            "                     device, dtype): the same command again goes on where it stopped\n"
            "  --config K=V,...   kernel parameters (`fabench knobs`, docs/kernel.md); unset ones get\n"
            "                     per-device, per-shape defaults:\n", suites);
    knobs_print_keys(f, "                     ", 92);
    fprintf(f,
            "  --tuned            take each shape's configuration from the tuning table (`fabench\n"
            "                     tune`): its class's row, else the rule of fallback.csv beside the\n"
            "                     table for the shape's regime and features (`fabench fit-fallback`),\n"
            "                     else the regime's default; perf.csv's config_source says which\n"
            "  --tuning FILE      the tuning table (default results/<gpu-slug>/tuning.csv)\n"
            "  --tune-missing SECONDS\n"
            "                     a shape whose class has no row in the tuning table gets one first:\n"
            "                     `fabench tune` searches that class for SECONDS of wall time (its\n"
            "                     --time; the head-to-head against what the run would take without\n"
            "                     the row comes after), appends to explored.csv and writes the\n"
            "                     winner to tuning.csv beside the table, then the shape is measured\n"
            "                     with it; classes with rows are left alone, a class is tuned once.\n"
            "                     Implies --tuned; without --tuning and without the default table,\n"
            "                     the table is made as tuning.csv beside --out\n"
            "  --dtype T          fp32, fp16 or bf16: overrides the shapes' dtype (default bf16)\n"
            "  --manifest FILE    also write the run's manifest.csv (device, versions, commit)\n"
            "  --verify-only      check correctness, do not time\n"
            "  --dry-run          check every input (shapes, device, tuning table, manifest, that --out\n"
            "                     and --manifest can be written) and exit: nothing is written or run\n"
            "  --budget S         seconds of timed repetitions per shape (default 0.3)\n"
            "  --warmup S         seconds of warm-up per shape (default 0.05)\n"
            "  --rest S           seconds the device idles before each shape's warm-up (default 0):\n"
            "                     each measurement then starts rested, for a GPU whose power cap\n"
            "                     lowers its clock under sustained work (fabench vendors takes it too)\n"
            "  --min-reps N       at least N timed samples, each a batch of back-to-back runs (default 5)\n"
            "  --l2-flush         overwrite twice the device's L2 (at least 32 MiB) before every run,\n"
            "                     outside the timed interval: no input stays cached from the run\n"
            "                     before (perf.csv's l2_flush column says which rows were)\n"
            "  --seed N           input seed (default 20250505)\n"
            "  --timeout S        a launch running longer is recorded as a timeout (default 60)\n"
            "  --quiet            no progress lines on stderr\n\n"
            "Exit status: 0 all rows ok; 1 some row failed (see status, reason); 2 bad input.\n");
}

/* --tune-missing SECONDS: seconds above 0, named so (--budget is seconds here but
 * candidates in tune) */
static int parse_tune_seconds(const char *v, double *out)
{
    if (measure_number("fabench run", "--tune-missing", v, 0, 1e15, out)) return -1;
    if (*out > 0) return 0;
    fprintf(stderr, "fabench run: --tune-missing: SECONDS of search per class must be more than 0, got '%s'\n", v);
    return -1;
}

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) { (void)sig; interrupted = 1; }

/* The configuration shape s runs with and where it came from (perf.csv's config_source):
 * --config alone, or with --tuned the tuning table's row for its class (else fallback.csv's
 * rule, else the regime's default: tune_lookup) with --config's keys over it. 0, or 2 with err when
 * the tuning table is bad input. */
static int shape_config(int tuned, const char *tuning_path, const rt_device *dev, const kconfig *user, const shape_t *s,
                        dtype_t dt, kconfig *out, char *source, size_t slen, char *err, size_t errlen)
{
    kconfig cfg = *user;
    kconfig shape_cfg = cfg;
    snprintf(source, slen, "%s", cfg.set ? "--config" : "default");
    if (tuned) {
        int lr = tune_lookup(tuning_path, dev, s, dt, &shape_cfg, source, slen, err, errlen);
        if (lr == 2) return 2;
        if (lr == 0) shape_cfg = cfg;
        else if (cfg.set) { /* the user's --config keys win over the tuned ones */
            kconfig_overlay(&shape_cfg, &cfg);
            size_t n = strlen(source);
            snprintf(source + n, slen - n, " + --config");
        }
        if (lr != 0 && shape_ragged(s)) { /* what ragged batches do not support goes (kconfig_fit) */
            char dropped[256];
            if (kconfig_fit(&shape_cfg, s, cfg.set, dropped, sizeof dropped)) {
                size_t n = strlen(source);
                snprintf(source + n, slen - n, " (ragged: %s)", dropped);
            }
        }
    }
    *out = shape_cfg;
    return 0;
}

/* shape_config, after `--tune-missing`'s tune of s's class where the table lacks it (tm NULL:
 * none), its note laid into source ("tuned CLASS (tuned on first sight, ...)"). 0; 2 with err
 * for a bad tuning table; 130 when the tune was interrupted (the run stops too). */
static int shape_config_tm(tune_missing *tm, int tuned, const char *tuning_path, const rt_device *dev,
                           const kconfig *user, const shape_t *s, dtype_t dt, kconfig *out, char *source, size_t slen,
                           char *err, size_t errlen)
{
    char note[128] = "";
    if (tm && tune_missing_visit(tm, dev, s, dt, note, sizeof note) == 130) return 130;
    const int rc = shape_config(tuned, tuning_path, dev, user, s, dt, out, source, slen, err, errlen);
    if (rc == 0 && note[0]) {
        char key[96];
        tune_class_key(s, dt, key, sizeof key);
        tune_missing_annotate(source, slen, key, note);
    }
    return rc;
}

/* Every shape's configuration compiled into the disk cache at once, on all cores, so the
 * loop only loads them (a fresh GPU machine has an empty cache: one NVRTC build after the
 * other held the GPU idle for minutes). Shapes whose configuration cannot be found are left
 * to the loop, which says why. */
static void precompile_run(attn_runner *runner, const shape_list_t *shapes, const measure_opts *mo, int tuned,
                           const char *tuning_path, const rt_device *dev, const kconfig *user, int write_lse,
                           const tune_missing *tm)
{
    shape_t *sv = malloc(sizeof *sv * (shapes->n ? shapes->n : 1));
    dtype_t *dv = malloc(sizeof *dv * (shapes->n ? shapes->n : 1));
    kconfig *cv = malloc(sizeof *cv * (shapes->n ? shapes->n : 1));
    long n = 0;
    for (size_t i = 0; sv && dv && cv && i < shapes->n; i++) {
        const shape_t *s = &shapes->v[i];
        dtype_t dt = shapes_dtype(s, mo->have_dtype, mo->dtype);
        char source[300], err[FB_ERRLEN];
        if (tm && tune_missing_lacks(tm, dev, s, dt)) continue; /* its configuration comes from the tune */
        if (shape_config(tuned, tuning_path, dev, user, s, dt, &cv[n], source, sizeof source, err, sizeof err) != 0)
            continue;
        sv[n] = *s;
        dv[n++] = dt;
    }
    if (n > 1) attn_precompile_shapes(runner, sv, dv, cv, n, write_lse);
    free(sv);
    free(dv);
    free(cv);
}

/* One line on stderr: the tuning table the run reads, or that it reads none. */
static void say_tuning_table(const char *path, const rt_device *dev, int config_given)
{
    const char *over = config_given ? ", with --config over them" : "";
    if (!path) {
        fprintf(stderr, "fabench run: no tuning table (no --tuned): the runtime's default configurations%s\n", over);
        return;
    }
    const long n = tune_table_classes(path, dev);
    if (n < 0)
        fprintf(stderr, "fabench run: no tuning table at %s: the runtime's default configurations%s\n", path, over);
    else if (n == 0)
        fprintf(stderr, "fabench run: tuning table %s has no class of this GPU and runtime: the runtime's default "
                        "configurations%s\n", path, over);
    else {
        char fb[2048];
        const char *slash = strrchr(path, '/');
        snprintf(fb, sizeof fb, "%.*s%sfallback.csv", slash ? (int)(slash - path) : 0, path, slash ? "/" : "");
        fprintf(stderr, "fabench run: tuning table %s, %ld class%s of this GPU and runtime (a shape takes its class's "
                        "row, else fallback.csv's rule for its regime, else the regime's default)%s%s\n", path, n, n == 1 ? "" : "es",
                over, access(fb, R_OK) == 0 ? "" : "; no fallback.csv beside it (`fabench fit-fallback` writes it)");
    }
}

/* Everything one `fabench run` holds from its command line to its exit status: each step
 * below takes the one struct, and run_free releases whatever the steps got to. */
typedef struct {
    measure_opts mo;         /* the options run shares with vendors */
    kconfig cfg;             /* --config (cfg.set 0: none) */
    int tuned, dry_run, verify_only;
    const char *tuning_path; /* the table --tuned reads: --tuning's until resolve_tuning */
    int tuning_given;        /* --tuning named it: it must exist (--tune-missing: may be made) */
    tune_missing tm;         /* --tune-missing (tm.table NULL: off) */
    char tuning_default[1200], tm_table[1200], tm_explored[1300]; /* tuning_path's and tm's */
    attn_opts ao;            /* the timing protocol, the inputs' seed, --verify-only */
    shape_list_t shapes;
    csv_table *table;        /* --out's rows, the file rewritten whole after every shape */
    rt_device dev;
    attn_runner *runner;
    /* the last error message: one buffer for the whole command, as it was, since a
     * failing perf_put writes none and the message printed is what was left here */
    char err[FB_ERRLEN];
} run_ctx;

/* "fabench run: MSG" on stderr; the exit status of bad input, for the steps to return */
static int run_bad(const char *msg)
{
    fprintf(stderr, "fabench run: %s\n", msg);
    return FB_EXIT_BADINPUT;
}

/* parse_run_args: the command goes on (any other value is its exit status) */
enum { GO_ON = -1 };

/* The command line into x: GO_ON, or the exit status to return at once, 0 after --help,
 * FB_EXIT_BADINPUT for a bad option (said on stderr) */
static int parse_run_args(int argc, char **argv, run_ctx *x)
{
    enum { O_CONFIG = 1, O_VERIFY_ONLY, O_TIMEOUT, O_HELP, O_TUNED, O_TUNING, O_DRYRUN, O_TUNE_MISSING };
    static const struct option opts[] = {
        MEASURE_LONG_OPTIONS,
        {"config", required_argument, 0, O_CONFIG}, {"verify-only", no_argument, 0, O_VERIFY_ONLY},
        {"timeout", required_argument, 0, O_TIMEOUT}, {"tuned", no_argument, 0, O_TUNED},
        {"tuning", required_argument, 0, O_TUNING}, {"help", no_argument, 0, O_HELP},
        {"dry-run", no_argument, 0, O_DRYRUN}, {"tune-missing", required_argument, 0, O_TUNE_MISSING}, {0, 0, 0, 0}};
    measure_opts_defaults(&x->mo);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        const int shared = measure_opt(c, optarg, &x->mo, "fabench run");
        if (shared < 0) return FB_EXIT_BADINPUT;
        if (shared) continue;
        switch (c) {
        case O_CONFIG:
            if (kconfig_parse(optarg, &x->cfg, x->err, sizeof x->err) != 0) {
                fprintf(stderr, "fabench run: --config: %s\n", x->err);
                return FB_EXIT_BADINPUT;
            }
            break;
        case O_VERIFY_ONLY: x->verify_only = 1; break;
        case O_DRYRUN: x->dry_run = 1; break;
        case O_TIMEOUT:
            if (measure_number("fabench run", "--timeout", optarg, 0.001, 1e15, &x->mo.timing.timeout_s)) return FB_EXIT_BADINPUT;
            break;
        case O_TUNED: x->tuned = 1; break;
        case O_TUNING: x->tuning_path = optarg; x->tuned = 1; break;
        case O_TUNE_MISSING:
            if (parse_tune_seconds(optarg, &x->tm.seconds)) return FB_EXIT_BADINPUT;
            x->tuned = 1; /* a table it reads and writes */
            break;
        case 'h':
        case O_HELP: usage_run(stdout); return 0;
        case ':': fprintf(stderr, "fabench run: %s needs a value\n", argv[optind - 1]); return FB_EXIT_BADINPUT;
        default: fprintf(stderr, "fabench run: unknown option '%s' (fabench run --help)\n", argv[optind - 1]); return FB_EXIT_BADINPUT;
        }
    }
    if (optind < argc) { fprintf(stderr, "fabench run: unexpected argument '%s'\n", argv[optind]); return FB_EXIT_BADINPUT; }
    if (x->tm.seconds > 0 && x->verify_only) {
        fprintf(stderr, "fabench run: --tune-missing times candidates, --verify-only times nothing: one of them\n");
        return FB_EXIT_BADINPUT;
    }
    if (measure_opts_check(&x->mo, "fabench run", usage_run) != 0) return FB_EXIT_BADINPUT;
    return GO_ON;
}

/* The shapes; --out claimed, and its table: the rows already there with --append, else
 * none; the device. 0, or FB_EXIT_BADINPUT said on stderr. */
static int open_run_inputs(run_ctx *x)
{
    const measure_opts *mo = &x->mo;
    if (shapes_load_file_or_suite(mo->shapes_file, mo->suite, &x->shapes, x->err, sizeof x->err) != 0) return run_bad(x->err);
    /* claimed before it is read: another writer's rows cannot be lost between the two */
    if (fb_check_writable(mo->out, x->err, sizeof x->err) != 0 || fb_claim_output(mo->out, x->err, sizeof x->err) != 0)
        return run_bad(x->err);
    int rc;
    if (mo->append) rc = perf_open_append(mo->out, &x->table, x->err, sizeof x->err);
    else {
        x->table = csvt_new(perf_header, perf_ncols);
        rc = x->table ? 0 : -1;
        snprintf(x->err, sizeof x->err, "out of memory");
    }
    if (rc != 0) return run_bad(x->err);
    if (rt_select(mo->device, &x->dev, x->err, sizeof x->err) != 0) return run_bad(x->err);
    return 0;
}

/* The kernel's options: the timing protocol (--l2-flush: twice this device's L2 overwritten
 * before every run), the inputs' seed, --verify-only */
static void set_attn_opts(run_ctx *x)
{
    attn_opts_defaults(&x->ao);
    x->ao.timing = x->mo.timing;
    x->ao.seed = x->mo.seed;
    x->ao.verify_only = x->verify_only;
    if (x->mo.l2_flush) x->ao.timing.l2_flush_bytes = timing_flush_bytes(&x->dev.info);
}

/* The table --tuned reads: --tuning's, else results/<gpu-slug>/tuning.csv. With
 * --tune-missing, the one it tunes into, which may not exist yet, and explored.csv beside it
 * (tm.table set: the loop tunes a class the table lacks before measuring its shape). */
static void resolve_tuning(run_ctx *x)
{
    const measure_opts *mo = &x->mo;
    x->tuning_given = x->tuning_path != NULL;
    if (x->tuned && !x->tuning_path) {
        char slug[256];
        fb_slug(x->dev.info.name, slug, sizeof slug);
        snprintf(x->tuning_default, sizeof x->tuning_default, "results/%s/tuning.csv", slug);
        x->tuning_path = x->tuning_default;
    }
    if (x->tm.seconds > 0) {
        x->tm = (tune_missing){.seconds = x->tm.seconds, .device = mo->device, .shapes_file = mo->shapes_file,
                               .suite = mo->suite, .have_dtype = mo->have_dtype, .dtype = mo->dtype, .quiet = mo->quiet};
        tune_missing_table(x->tuning_given ? x->tuning_path : NULL, x->tuning_path, mo->out, x->tm_table, sizeof x->tm_table);
        x->tuning_path = x->tm.table = x->tm_table;
        tune_missing_explored(x->tm_table, x->tm_explored, sizeof x->tm_explored);
    }
}

/* Bad input is found before any file is touched: another GPU's folder, an output that is
 * one of the inputs, a tuning table named but unreadable or malformed, a manifest that
 * cannot be written. 0, or FB_EXIT_BADINPUT said on stderr. */
static int check_run_inputs(run_ctx *x)
{
    const measure_opts *mo = &x->mo;
    const char *const files[] = {mo->out, mo->manifest, mo->shapes_file,
                                 x->tuning_given || x->tm.table ? x->tuning_path : NULL,
                                 x->tm.table ? x->tm_explored : NULL};
    const char *const names[] = {"--out", "--manifest", "--shapes", "--tuning", "explored.csv beside the tuning table"};
    if (fb_distinct_files(files, names, 2, 5, x->err, sizeof x->err) != 0) return run_bad(x->err);
    if (mo->manifest && manifest_check_path(mo->manifest, &x->dev, x->err, sizeof x->err) != 0) {
        fprintf(stderr, "fabench run: manifest: %s\n", x->err);
        return FB_EXIT_BADINPUT;
    }
    if (x->tm.table && tune_missing_check(&x->tm, &x->dev, x->err, sizeof x->err) != 0) return run_bad(x->err);
    if (x->tuning_given && !x->tm.table && access(x->tuning_path, R_OK) != 0) {
        fprintf(stderr, "fabench run: --tuning %s: %s\n", x->tuning_path, strerror(errno));
        return FB_EXIT_BADINPUT;
    }
    if (x->tuned && x->shapes.n) { /* a malformed table: looked up once, for the first shape */
        kconfig probe;
        char src[300];
        if (tune_lookup(x->tuning_path, &x->dev, &x->shapes.v[0], DT_BF16, &probe, src, sizeof src, x->err,
                        sizeof x->err) == 2)
            return run_bad(x->err);
    }
    if (mo->manifest && fb_check_writable(mo->manifest, x->err, sizeof x->err) != 0) return run_bad(x->err);
    return 0;
}

/* Nothing half-written: --out (empty, or as it was with --append) and the manifest are
 * written before any work, so a run that could not write them stops before it starts.
 * 0, or FB_EXIT_BADINPUT said on stderr. */
static int start_run_outputs(run_ctx *x, int argc, char **argv)
{
    if (csvt_write_atomic(x->table, x->mo.out, x->err, sizeof x->err) != 0) return run_bad(x->err);
    /* argc + 1, argv - 1: the command line from the program's path on */
    if (x->mo.manifest &&
        manifest_update(x->mo.manifest, &x->dev, argc + 1, argv - 1, x->mo.update, x->err, sizeof x->err) != 0) {
        fprintf(stderr, "fabench run: manifest: %s\n", x->err);
        return FB_EXIT_BADINPUT;
    }
    return 0;
}

/* The kernel's runner on the device: 0, or 1 said on stderr (the harness cannot run there,
 * which is not bad input) */
static int open_runner(run_ctx *x)
{
    if (attn_open(&x->dev, &x->runner, x->err, sizeof x->err) == 0) return 0;
    fprintf(stderr, "fabench run: %s\n", x->err);
    return 1;
}

/* Before the first shape, on stderr (not with --quiet): the shapes and the device, the
 * tuning table the configurations come from, and where --tune-missing writes */
static void say_run_start(const run_ctx *x)
{
    if (x->mo.quiet) return;
    fprintf(stderr, "fabench run: %zu shapes on %s:%d (%s)\n", x->shapes.n, x->dev.rt->name, x->dev.index, x->dev.info.name);
    say_tuning_table(x->tuned ? x->tuning_path : NULL, &x->dev, x->cfg.set != 0);
    if (x->tm.table)
        fprintf(stderr, "fabench run: --tune-missing: a class without a row there is tuned first (%g s of search), "
                        "into %s and explored.csv beside it\n", x->tm.seconds, x->tm.table);
}

/* What became of a shape in run_shape: a row, ok or not, or skipped by --resume; any other
 * value is the exit status the run stops with */
enum { ROW_OK = -1, ROW_FAILED = -2, ROW_RESUMED = -3 };

/* Shape i's row from its result, put into the table (--update: where its old row stands)
 * and the file rewritten whole, so that a run stopped at any point keeps every finished
 * row; then its progress line. ROW_OK, ROW_FAILED (not ok), or 1: --out cannot be written. */
static int write_run_row(run_ctx *x, size_t i, dtype_t dt, const attn_result *res, const char *source)
{
    const int ok = res->status == ST_OK;
    char cfgs[KCONFIG_STR_MAX];
    kconfig_str(&res->config, cfgs, sizeof cfgs);
    perf_row pr = {.gpu = x->dev.info.name, .backend = x->dev.rt->name, .impl = "portable", .config = cfgs,
                   .config_source = source, .shape = &x->shapes.v[i], .dt = dt, .status = res->status,
                   .reason = res->reason, .ver = &res->ver, .us = ok && !x->ao.verify_only ? &res->us : NULL,
                   .tel = &res->tel, .l2_flush = x->mo.l2_flush, .how = &res->how};
    if (perf_put(x->table, &pr, x->mo.update) != 0 || csvt_write_atomic(x->table, x->mo.out, x->err, sizeof x->err) != 0) {
        fprintf(stderr, "fabench run: %s\n", x->err);
        return 1;
    }
    if (!x->mo.quiet) perf_progress(stderr, i + 1, x->shapes.n, &pr);
    return ok ? ROW_OK : ROW_FAILED;
}

/* Shape i: skipped with --resume when --out has its row; else its configuration (with
 * --tune-missing, its class tuned first where the table lacks it), run, verified, timed and
 * written. ROW_*, or the exit status the run stops with, said on stderr: 130 (the tune was
 * interrupted), FB_EXIT_BADINPUT (a bad tuning table), 1 (the harness cannot go on). */
static int run_shape(run_ctx *x, size_t i)
{
    const shape_t *s = &x->shapes.v[i];
    const dtype_t dt = shapes_dtype(s, x->mo.have_dtype, x->mo.dtype);
    if (x->mo.resume && perf_has(x->table, x->dev.info.name, x->dev.rt->name, "portable", s->name, dt))
        return ROW_RESUMED;
    kconfig shape_cfg;
    char source[600];
    const int sc = shape_config_tm(x->tm.table ? &x->tm : NULL, x->tuned, x->tuning_path, &x->dev, &x->cfg, s, dt,
                                   &shape_cfg, source, sizeof source, x->err, sizeof x->err);
    if (sc == 130) return 130; /* the tune stopped on SIGINT: so does the run */
    if (sc != 0) return run_bad(x->err);
    attn_result res;
    if (attn_run(x->runner, s, dt, &shape_cfg, &x->ao, &res, x->err, sizeof x->err) != 0) {
        fprintf(stderr, "fabench run: %s: %s\n", s->name, x->err);
        return 1;
    }
    return write_run_row(x, i, dt, &res, source);
}

/* Every shape in turn, until the last, SIGINT (checked between shapes: a row is never cut
 * short) or an error the run cannot go on after; then what stopped it and what --resume
 * skipped. The exit status: 0 every row ok, 1 some row not ok or the harness broke,
 * FB_EXIT_BADINPUT a bad tuning table, 130 interrupted. */
static int measure_shapes(run_ctx *x)
{
    signal(SIGINT, on_sigint);
    int failures = 0, fatal = 0;
    size_t resumed = 0;
    for (size_t i = 0; i < x->shapes.n && !interrupted; i++) {
        const int rc = run_shape(x, i);
        if (rc == ROW_FAILED) failures++;
        else if (rc == ROW_RESUMED) resumed++;
        else if (rc == 130) { interrupted = 1; break; }
        else if (rc != ROW_OK) { fatal = rc; break; }
    }
    if (interrupted && !x->mo.quiet)
        fprintf(stderr, "fabench run: interrupted; %zu finished rows are in %s\n", x->table->nrows, x->mo.out);
    if (resumed && !x->mo.quiet) fprintf(stderr, "fabench run: --resume: %zu shapes already had rows in %s\n", resumed, x->mo.out);
    if (fatal) return fatal;
    if (interrupted) return 130;
    return failures ? 1 : 0;
}

/* Whatever the steps got to: the runner, the table, the shapes, --tune-missing's classes */
static void run_free(run_ctx *x)
{
    attn_close(x->runner);
    csvt_free(x->table);
    shapes_free(&x->shapes);
    tune_missing_free(&x->tm);
}

int cmd_run(int argc, char **argv)
{
    run_ctx x = {0};
    int rc = parse_run_args(argc, argv, &x);
    if (rc != GO_ON) return rc;
    rc = open_run_inputs(&x);
    if (rc == 0) {
        set_attn_opts(&x);
        resolve_tuning(&x);
        rc = check_run_inputs(&x);
    }
    if (rc == 0 && x.dry_run) { /* every input checked; nothing touched */
        if (!x.mo.quiet)
            fprintf(stderr, "fabench run: --dry-run: %zu shapes on %s:%d, every input checked\n", x.shapes.n,
                    x.dev.rt->name, x.dev.index);
        run_free(&x);
        return 0;
    }
    if (rc == 0) rc = start_run_outputs(&x, argc, argv);
    if (rc == 0) rc = open_runner(&x);
    if (rc == 0) {
        say_run_start(&x);
        precompile_run(x.runner, &x.shapes, &x.mo, x.tuned, x.tuning_path, &x.dev, &x.cfg, x.ao.write_lse,
                       x.tm.table ? &x.tm : NULL);
        rc = measure_shapes(&x);
    }
    run_free(&x);
    return rc;
}
