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
        dtype_t dt = measure_dtype(mo, s);
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

int cmd_run(int argc, char **argv)
{
    enum { O_CONFIG = 1, O_VERIFY_ONLY, O_TIMEOUT, O_HELP, O_TUNED, O_TUNING, O_DRYRUN, O_TUNE_MISSING };
    static const struct option opts[] = {
        MEASURE_LONG_OPTIONS,
        {"config", required_argument, 0, O_CONFIG}, {"verify-only", no_argument, 0, O_VERIFY_ONLY},
        {"timeout", required_argument, 0, O_TIMEOUT}, {"tuned", no_argument, 0, O_TUNED},
        {"tuning", required_argument, 0, O_TUNING}, {"help", no_argument, 0, O_HELP},
        {"dry-run", no_argument, 0, O_DRYRUN}, {"tune-missing", required_argument, 0, O_TUNE_MISSING}, {0, 0, 0, 0}};
    measure_opts mo;
    measure_opts_defaults(&mo);
    const char *tuning_path = NULL;
    int tuned = 0, dry_run = 0, verify_only = 0;
    kconfig cfg = {0};
    tune_missing tm = {0};
    char err[FB_ERRLEN];
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        const int shared = measure_opt(c, optarg, &mo, "fabench run");
        if (shared < 0) return FB_EXIT_BADINPUT;
        if (shared) continue;
        switch (c) {
        case O_CONFIG:
            if (kconfig_parse(optarg, &cfg, err, sizeof err) != 0) {
                fprintf(stderr, "fabench run: --config: %s\n", err);
                return FB_EXIT_BADINPUT;
            }
            break;
        case O_VERIFY_ONLY: verify_only = 1; break;
        case O_DRYRUN: dry_run = 1; break;
        case O_TIMEOUT:
            if (measure_number("fabench run", "--timeout", optarg, 0.001, 1e15, &mo.timing.timeout_s)) return FB_EXIT_BADINPUT;
            break;
        case O_TUNED: tuned = 1; break;
        case O_TUNING: tuning_path = optarg; tuned = 1; break;
        case O_TUNE_MISSING:
            if (parse_tune_seconds(optarg, &tm.seconds)) return FB_EXIT_BADINPUT;
            tuned = 1; /* a table it reads and writes */
            break;
        case 'h':
        case O_HELP: usage_run(stdout); return 0;
        case ':': fprintf(stderr, "fabench run: %s needs a value\n", argv[optind - 1]); return FB_EXIT_BADINPUT;
        default: fprintf(stderr, "fabench run: unknown option '%s' (fabench run --help)\n", argv[optind - 1]); return FB_EXIT_BADINPUT;
        }
    }
    if (optind < argc) { fprintf(stderr, "fabench run: unexpected argument '%s'\n", argv[optind]); return FB_EXIT_BADINPUT; }
    if (tm.seconds > 0 && verify_only) {
        fprintf(stderr, "fabench run: --tune-missing times candidates, --verify-only times nothing: one of them\n");
        return FB_EXIT_BADINPUT;
    }
    if (measure_opts_check(&mo, "fabench run", usage_run) != 0) return FB_EXIT_BADINPUT;
    attn_opts ao;
    attn_opts_defaults(&ao);
    ao.timing = mo.timing;
    ao.seed = mo.seed;
    ao.verify_only = verify_only;

    shape_list_t shapes = {0};
    int rc = mo.shapes_file ? shapes_load(mo.shapes_file, &shapes, err, sizeof err)
                         : shapes_load_suite(mo.suite, &shapes, err, sizeof err);
    if (rc != 0) { fprintf(stderr, "fabench run: %s\n", err); return FB_EXIT_BADINPUT; }

    csv_table *table = NULL;
    /* claimed before it is read: another writer's rows cannot be lost between the two */
    if (fb_check_writable(mo.out, err, sizeof err) != 0 || fb_claim_output(mo.out, err, sizeof err) != 0) {
        fprintf(stderr, "fabench run: %s\n", err);
        shapes_free(&shapes);
        return FB_EXIT_BADINPUT;
    }
    if (mo.append) rc = perf_open_append(mo.out, &table, err, sizeof err);
    else { table = csvt_new(perf_header, perf_ncols); rc = table ? 0 : -1; snprintf(err, sizeof err, "out of memory"); }
    if (rc != 0) { fprintf(stderr, "fabench run: %s\n", err); shapes_free(&shapes); return FB_EXIT_BADINPUT; }

    rt_device dev;
    if (rt_select(mo.device, &dev, err, sizeof err) != 0) {
        fprintf(stderr, "fabench run: %s\n", err);
        csvt_free(table);
        shapes_free(&shapes);
        return FB_EXIT_BADINPUT;
    }
    if (mo.l2_flush) ao.timing.l2_flush_bytes = timing_flush_bytes(&dev.info);
    char tuning_default[1200];
    const int tuning_given = tuning_path != NULL;
    char tm_table[1200], tm_explored[1300];
    if (tuned && !tuning_path) {
        char slug[256];
        fb_slug(dev.info.name, slug, sizeof slug);
        snprintf(tuning_default, sizeof tuning_default, "results/%s/tuning.csv", slug);
        tuning_path = tuning_default;
    }
    if (tm.seconds > 0) { /* the table it tunes into, which may not exist yet */
        tm = (tune_missing){.seconds = tm.seconds, .device = mo.device, .shapes_file = mo.shapes_file, .suite = mo.suite,
                            .have_dtype = mo.have_dtype, .dtype = mo.dtype, .quiet = mo.quiet};
        tune_missing_table(tuning_given ? tuning_path : NULL, tuning_path, mo.out, tm_table, sizeof tm_table);
        tuning_path = tm.table = tm_table;
        tune_missing_explored(tm_table, tm_explored, sizeof tm_explored);
    }
    /* bad input is found before any file is touched: another GPU's folder, an output that
     * is one of the inputs, a tuning table named but unreadable or malformed */
    const char *const files[] = {mo.out, mo.manifest, mo.shapes_file, tuning_given || tm.table ? tuning_path : NULL,
                                 tm.table ? tm_explored : NULL};
    const char *const names[] = {"--out", "--manifest", "--shapes", "--tuning", "explored.csv beside the tuning table"};
    if (fb_distinct_files(files, names, 2, 5, err, sizeof err) != 0) {
        fprintf(stderr, "fabench run: %s\n", err);
        rc = FB_EXIT_BADINPUT;
    }
    if (!rc && mo.manifest && manifest_check_path(mo.manifest, &dev, err, sizeof err) != 0) {
        fprintf(stderr, "fabench run: manifest: %s\n", err);
        rc = FB_EXIT_BADINPUT;
    }
    if (!rc && tm.table && tune_missing_check(&tm, &dev, err, sizeof err) != 0) {
        fprintf(stderr, "fabench run: %s\n", err);
        rc = FB_EXIT_BADINPUT;
    }
    if (!rc && tuning_given && !tm.table && access(tuning_path, R_OK) != 0) {
        fprintf(stderr, "fabench run: --tuning %s: %s\n", tuning_path, strerror(errno));
        rc = FB_EXIT_BADINPUT;
    }
    if (!rc && tuned) { /* a malformed table is bad input: found before any work */
        kconfig probe;
        char src[300];
        if (shapes.n && tune_lookup(tuning_path, &dev, &shapes.v[0], DT_BF16, &probe, src, sizeof src, err, sizeof err) == 2) {
            fprintf(stderr, "fabench run: %s\n", err);
            rc = FB_EXIT_BADINPUT;
        }
    }
    if (!rc && mo.manifest && (rc = fb_check_writable(mo.manifest, err, sizeof err)) != 0) {
        fprintf(stderr, "fabench run: %s\n", err);
        rc = FB_EXIT_BADINPUT;
    }
    if (!rc && dry_run) { /* every input checked; nothing touched */
        if (!mo.quiet) fprintf(stderr, "fabench run: --dry-run: %zu shapes on %s:%d, every input checked\n", shapes.n,
                            dev.rt->name, dev.index);
        csvt_free(table);
        shapes_free(&shapes);
        return 0;
    }
    /* nothing half-written: prove the output can be written before any work */
    if (!rc && csvt_write_atomic(table, mo.out, err, sizeof err) != 0) {
        fprintf(stderr, "fabench run: %s\n", err);
        rc = FB_EXIT_BADINPUT;
    }
    if (!rc && mo.manifest && manifest_update(mo.manifest, &dev, argc + 1, argv - 1, mo.update, err, sizeof err) != 0) {
        fprintf(stderr, "fabench run: manifest: %s\n", err);
        rc = FB_EXIT_BADINPUT;
    }
    if (rc) {
        csvt_free(table);
        shapes_free(&shapes);
        return FB_EXIT_BADINPUT;
    }
    attn_runner *runner;
    if (attn_open(&dev, &runner, err, sizeof err) != 0) {
        fprintf(stderr, "fabench run: %s\n", err);
        csvt_free(table);
        shapes_free(&shapes);
        return 1;
    }
    if (!mo.quiet) {
        fprintf(stderr, "fabench run: %zu shapes on %s:%d (%s)\n", shapes.n, dev.rt->name, dev.index, dev.info.name);
        say_tuning_table(tuned ? tuning_path : NULL, &dev, cfg.set != 0);
        if (tm.table)
            fprintf(stderr, "fabench run: --tune-missing: a class without a row there is tuned first (%g s of search), "
                            "into %s and explored.csv beside it\n", tm.seconds, tm.table);
    }
    precompile_run(runner, &shapes, &mo, tuned, tuning_path, &dev, &cfg, ao.write_lse, tm.table ? &tm : NULL);
    signal(SIGINT, on_sigint);
    int failures = 0, fatal = 0;
    size_t resumed = 0;
    for (size_t i = 0; i < shapes.n && !interrupted; i++) {
        const shape_t *s = &shapes.v[i];
        dtype_t dt = measure_dtype(&mo, s);
        if (mo.resume && perf_has(table, dev.info.name, dev.rt->name, "portable", s->name, dt)) {
            resumed++;
            continue;
        }
        kconfig shape_cfg;
        char source[600];
        const int sc = shape_config_tm(tm.table ? &tm : NULL, tuned, tuning_path, &dev, &cfg, s, dt, &shape_cfg, source,
                                       sizeof source, err, sizeof err);
        if (sc == 130) { /* the tune stopped on SIGINT: so does the run */
            interrupted = 1;
            break;
        }
        if (sc != 0) {
            fprintf(stderr, "fabench run: %s\n", err);
            fatal = 2;
            break;
        }
        attn_result res;
        if (attn_run(runner, s, dt, &shape_cfg, &ao, &res, err, sizeof err) != 0) {
            fprintf(stderr, "fabench run: %s: %s\n", s->name, err);
            fatal = 1;
            break;
        }
        int ok = res.status == ST_OK;
        char cfgs[KCONFIG_STR_MAX];
        kconfig_str(&res.config, cfgs, sizeof cfgs);
        perf_row pr = {.gpu = dev.info.name, .backend = dev.rt->name, .impl = "portable", .config = cfgs,
                       .config_source = source, .shape = s, .dt = dt, .status = res.status, .reason = res.reason,
                       .ver = &res.ver, .us = ok && !ao.verify_only ? &res.us : NULL, .tel = &res.tel,
                       .l2_flush = mo.l2_flush, .how = &res.how};
        if (perf_put(table, &pr, mo.update) != 0 || csvt_write_atomic(table, mo.out, err, sizeof err) != 0) {
            fprintf(stderr, "fabench run: %s\n", err);
            fatal = 1;
            break;
        }
        if (!ok) failures++;
        if (!mo.quiet) perf_progress(stderr, i + 1, shapes.n, &pr);
    }
    if (interrupted && !mo.quiet) fprintf(stderr, "fabench run: interrupted; %zu finished rows are in %s\n", table->nrows, mo.out);
    if (resumed && !mo.quiet) fprintf(stderr, "fabench run: --resume: %zu shapes already had rows in %s\n", resumed, mo.out);
    attn_close(runner);
    csvt_free(table);
    shapes_free(&shapes);
    tune_missing_free(&tm);
    if (fatal) return fatal == 2 ? FB_EXIT_BADINPUT : 1;
    if (interrupted) return 130;
    return failures ? 1 : 0;
}

