/* vendors_cmd.c: `fabench vendors`: the vendors' attention kernels on the same shapes and
 * inputs as the portable kernel, through the same verification, written as perf.csv rows. */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "csvio.h"
#include "manifest.h"
#include "perf.h"
#include "refcheck.h"
#include "refdev.h"
#include "shapes.h"
#include "stats.h"
#include "timing.h"
#include "vendor.h"
#include "measure_opts.h"

static const vendor *const all_vendors[] = {&vendor_torch, &vendor_cudnn};
#define NVENDORS (sizeof all_vendors / sizeof all_vendors[0])

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) { (void)sig; interrupted = 1; }

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fabench vendors --device SEL (--suite NAME | --shapes FILE) --out FILE.csv [options]\n\n"
            "Measures the vendors' attention kernels on the shapes, with the inputs the portable\n"
            "kernel gets (same seed), verifies every element of each output against the same\n"
            "reference by the same rule, and times them with the same protocol. A vendor that is not installed\n"
            "is reported as absent; a shape a vendor cannot do is a row with status unsupported and\n"
            "the vendor's reason. Vendors: torch (SDPA flash, efficient, cudnn; FlexAttention),\n"
            "cudnn (cuDNN's fused flash attention through its backend graph API).\n\n"
            "  --device SEL       the GPU, as `fabench devices` lists it (cuda:0)\n"
            "  --impl LIST        only these implementations (torch-flash,torch-efficient,torch-cudnn,flex,flex-autotune,cudnn)\n"
            "  --configs-out FILE.csv  also write how many configurations each vendor's own selection\n"
            "                     offered per shape (impl,scope,configs,method)\n"
            "  --append, --update, --resume, --manifest FILE, --dtype T, --budget S, --warmup S, --rest S,\n"
            "  --min-reps N, --seed N, --quiet: as for `fabench run` (--update and\n"
            "  --resume: per implementation)\n");
}

/* Writes n bytes to path; 0 or -1. */
static int write_raw(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, n, f) == n;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

/* vendor_inputs.check: a candidate output a vendor chooses among goes through the same full
 * check as every row, against the shape's reference. */
static int vendor_check(void *arg, const void *o, const float *lse, char *why, size_t len)
{
    const fb_reference *ref = arg;
    verify_result ver = {0};
    const int rc = fb_verify_full(ref, o, lse, &ver);
    if (rc == 0 && ver.pass) return 0;
    snprintf(why, len, "%s", ver.reason);
    return rc < 0 ? -1 : 1;
}

static int wanted(const char *impl, const char *list)
{
    if (!list) return 1;
    size_t n = strlen(impl);
    for (const char *p = list; (p = strstr(p, impl)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}

/* What every implementation's row needs: the device, the vendors' sessions, the outputs
 * and the options (--out, --update, --quiet, --l2-flush, the timing protocol's settings) */
typedef struct {
    const rt_device *dev;
    vendor_session **vs;
    const measure_opts *mo;
    csv_table *table, *ctab;   /* perf.csv, and --configs-out's table (NULL: none) */
    const char *configs_out;
    const char *op, *lp;       /* where an out-of-process adapter writes O and the LSE */
    size_t nshapes;
} vendors_ctx;

/* Opens every vendor on dev into vs (NULL where absent, said on stderr), and notes each
 * one's versions, or its absence, in the manifest table man (NULL: none) under prefix.
 * 1 when any vendor is present */
static int open_vendors(const rt_device *dev, vendor_session **vs, csv_table *man, const char *mprefix)
{
    int any = 0;
    for (size_t i = 0; i < NVENDORS; i++) {
        char versions[512] = "", why[512] = "";
        if (all_vendors[i]->open(dev, &vs[i], versions, sizeof versions, why, sizeof why) != 0) {
            fprintf(stderr, "fabench vendors: %s is absent: %s\n", all_vendors[i]->name, why);
            vs[i] = NULL;
            if (man) {
                char k[128];
                snprintf(k, sizeof k, "%svendor.%s", mprefix, all_vendors[i]->name);
                manifest_set(man, k, "absent");
            }
            continue;
        }
        any = 1;
        if (man) {
            char copy[512], *save = NULL;
            snprintf(copy, sizeof copy, "%s", versions);
            for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
                char *eq = strchr(tok, '=');
                if (!eq) continue;
                *eq = 0;
                char k[128];
                snprintf(k, sizeof k, "%svendor.%s.%s", mprefix, all_vendors[i]->name, tok);
                manifest_set(man, k, eq + 1);
            }
        }
    }
    return any;
}

/* Implementation im of vendor vi on shape s (the shape_no'th): run on the inputs in, its
 * output O (and LSE, where it returns one) verified element by element against ref, timed
 * by its adapter under the one protocol, and its perf.csv row (and --configs-out's) written.
 * *failures counts a row that did not pass, *fatal an output that could not be written.
 * Returns 1 when the adapter itself broke (the caller closes the vendor) */
static int measure_impl(vendors_ctx *x, size_t vi, const char *im, const shape_t *s, dtype_t dt, size_t shape_no,
                        vendor_inputs *in, void *o, float *lse, fb_reference *ref, int *failures, int *fatal)
{
    char err[FB_ERRLEN] = "";
    const size_t nq = shape_q_elems(s);
    fb_poison(o, nq, dt);
    fb_poison_f32(lse, shape_out_rows(s));
    unlink(x->op);
    unlink(x->lp);
    vendor_result vr = {0};
    /* the adapter itself broke: a launch_error row says so (a failure, not a gap),
     * and the vendor's session is closed, its other implementations skipped */
    const int broke = all_vendors[vi]->run(x->vs[vi], im, s, dt, in, o, &x->mo->timing, &vr, err, sizeof err) != 0;
    if (broke) {
        fprintf(stderr, "fabench vendors: %s: %s\n", all_vendors[vi]->name, err);
        free(vr.samples_us);
        vr = (vendor_result){.status = ST_LAUNCH_ERROR};
        snprintf(vr.reason, sizeof vr.reason, "the %s adapter broke: %.400s", all_vendors[vi]->name, err);
    }
    verify_result ver = {0};
    stats_t st;
    status_t status = vr.status;
    const char *reason = vr.reason;
    if (status == ST_OK && fb_verify_full(ref, o, vr.has_lse ? lse : NULL, &ver) != 0) {
        status = ST_RESOURCE_LIMIT; /* no reference: no verdict */
        reason = "out of memory for the reference";
    } else if (status == ST_OK) {
        if (!ver.pass) { status = ST_WRONG_RESULT; reason = ver.reason; }
        else if (vr.has_stats) st = vr.stats; /* timed here by time_device */
        else if (stats_compute_times(vr.samples_us, vr.nsamples, &st) != 0) { status = ST_LAUNCH_ERROR; reason = "no valid timing samples"; }
    }
    perf_row pr = {.gpu = x->dev->info.name, .backend = x->dev->rt->name, .impl = im, .config = vr.config,
                   .config_source = "vendor", .shape = s, .dt = dt, .status = status, .reason = reason,
                   .ver = &ver, .us = status == ST_OK ? &st : NULL, .tel = &vr.tel,
                   .l2_flush = x->mo->l2_flush, .how = &vr.how};
    if (perf_put(x->table, &pr, x->mo->update) != 0 || csvt_write_atomic(x->table, x->mo->out, err, sizeof err) != 0) {
        fprintf(stderr, "fabench vendors: %s\n", err);
        *fatal = 1;
    }
    if (x->ctab && vr.configs_method) {
        char n[32];
        snprintf(n, sizeof n, "%ld", vr.configs);
        const char *row[4] = {im, s->name, n, vr.configs_method};
        long at = -1; /* --update: this (impl, shape)'s row, replaced where it stands */
        for (size_t r = 0; x->mo->update && r < x->ctab->nrows && at < 0; r++)
            if (!strcmp(x->ctab->rows[r][0], im) && !strcmp(x->ctab->rows[r][1], s->name)) at = (long)r;
        if ((at >= 0 ? csvt_replace(x->ctab, (size_t)at, row) : csvt_add(x->ctab, row)) != 0 ||
            csvt_write_atomic(x->ctab, x->configs_out, err, sizeof err) != 0) {
            fprintf(stderr, "fabench vendors: --configs-out: %s\n", err);
            *fatal = 1;
        }
    }
    if (!x->mo->quiet) perf_progress(stderr, shape_no, x->nshapes, &pr);
    *failures += status != ST_OK && status != ST_UNSUPPORTED;
    free(vr.samples_us);
    return broke;
}

int cmd_vendors(int argc, char **argv)
{
    enum { O_IMPL = 1, O_HELP, O_CONFIGS };
    static const struct option opts[] = {
        MEASURE_LONG_OPTIONS,
        {"impl", required_argument, 0, O_IMPL}, {"help", no_argument, 0, O_HELP},
        {"configs-out", required_argument, 0, O_CONFIGS}, {0, 0, 0, 0}};
    measure_opts mo;
    measure_opts_defaults(&mo);
    const char *impls = NULL, *configs_out = NULL;
    char err[FB_ERRLEN] = "";
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        const int shared = measure_opt(c, optarg, &mo, "fabench vendors");
        if (shared < 0) return FB_EXIT_BADINPUT;
        if (shared) continue;
        switch (c) {
        case O_IMPL: impls = optarg; break;
        case O_CONFIGS: configs_out = optarg; break;
        case 'h':
        case O_HELP: usage(stdout); return 0;
        case ':': fprintf(stderr, "fabench vendors: %s needs a value\n", argv[optind - 1]); return FB_EXIT_BADINPUT;
        default: fprintf(stderr, "fabench vendors: unknown option '%s'\n", argv[optind - 1]); return FB_EXIT_BADINPUT;
        }
    }
    if (optind < argc) { fprintf(stderr, "fabench vendors: unexpected argument '%s'\n", argv[optind]); return FB_EXIT_BADINPUT; }
    if (measure_opts_check(&mo, "fabench vendors", usage) != 0) return FB_EXIT_BADINPUT;
    shape_list_t shapes = {0};
    int rc = mo.shapes_file ? shapes_load(mo.shapes_file, &shapes, err, sizeof err) : shapes_load_suite(mo.suite, &shapes, err, sizeof err);
    if (rc != 0) { fprintf(stderr, "fabench vendors: %s\n", err); return FB_EXIT_BADINPUT; }
    /* two of the files named, each written or read whole, must not be one file */
    const char *const files[] = {mo.out, configs_out, mo.manifest, mo.shapes_file};
    const char *const names[] = {"--out", "--configs-out", "--manifest", "--shapes"};
    if (fb_distinct_files(files, names, 3, 4, err, sizeof err) != 0) {
        fprintf(stderr, "fabench vendors: %s\n", err);
        shapes_free(&shapes);
        return FB_EXIT_BADINPUT;
    }
    if (configs_out && fb_check_writable(configs_out, err, sizeof err) != 0) {
        fprintf(stderr, "fabench vendors: --configs-out: %s\n", err);
        shapes_free(&shapes);
        return FB_EXIT_BADINPUT;
    }
    rt_device dev;
    csv_table *table = NULL;
    if (rt_select(mo.device, &dev, err, sizeof err) != 0 ||
        fb_check_writable(mo.out, err, sizeof err) != 0 || fb_claim_output(mo.out, err, sizeof err) != 0 ||
        (mo.manifest && fb_check_writable(mo.manifest, err, sizeof err) != 0) ||
        (mo.manifest && manifest_check_path(mo.manifest, &dev, err, sizeof err) != 0) ||
        (mo.append ? perf_open_append(mo.out, &table, err, sizeof err)
                : ((table = csvt_new(perf_header, perf_ncols)) ? 0 : (snprintf(err, sizeof err, "out of memory"), -1))) != 0) {
        fprintf(stderr, "fabench vendors: %s\n", err);
        csvt_free(table);
        shapes_free(&shapes);
        return FB_EXIT_BADINPUT;
    }

    /* the vendors' own configuration counts: read (--append) before either output is written */
    static const char *const configs_header[4] = {"impl", "scope", "configs", "method"};
    csv_table *ctab = NULL;
    if (configs_out && (mo.append ? csvt_open_append(configs_out, configs_header, 4, &ctab, err, sizeof err)
                               : ((ctab = csvt_new(configs_header, 4)) ? 0 : (snprintf(err, sizeof err, "out of memory"), -1))) != 0) {
        fprintf(stderr, "fabench vendors: --configs-out: %s\n", err);
        csvt_free(ctab);
        csvt_free(table);
        shapes_free(&shapes);
        return FB_EXIT_BADINPUT;
    }
    /* nothing half-written: both outputs proved writable before any work */
    if (csvt_write_atomic(table, mo.out, err, sizeof err) != 0 ||
        (configs_out && csvt_write_atomic(ctab, configs_out, err, sizeof err) != 0)) {
        fprintf(stderr, "fabench vendors: %s\n", err);
        csvt_free(ctab);
        csvt_free(table);
        shapes_free(&shapes);
        return FB_EXIT_BADINPUT;
    }

    vendor_session *vs[NVENDORS] = {0};
    csv_table *man = NULL;
    static const char *const mh[2] = {"key", "value"};
    char mprefix[32] = ""; /* --update: this command's keys go under update.N. */
    if (mo.manifest && (csvt_open_append(mo.manifest, mh, 2, &man, err, sizeof err) != 0 ||
                          (mo.update ? manifest_fill_update(man, &dev, argc + 1, argv - 1, mprefix, sizeof mprefix)
                                  : manifest_fill(man, &dev, argc + 1, argv - 1)) != 0)) {
        fprintf(stderr, "fabench vendors: manifest: %s\n", err[0] ? err : "out of memory");
        csvt_free(man);
        csvt_free(ctab);
        csvt_free(table);
        shapes_free(&shapes);
        return FB_EXIT_BADINPUT;
    }
    if (mo.l2_flush) mo.timing.l2_flush_bytes = timing_flush_bytes(&dev.info);
    { /* the GPU's clocks and power over each vendor's timed runs, as over ours (none: the manifest says why) */
        char why[256];
        if (!dev.info.is_gpu || telemetry_open(dev.info.pci, &mo.timing.tm, why, sizeof why) != 0) mo.timing.tm = NULL;
    }
    int any = open_vendors(&dev, vs, man, mprefix);
    if (man && csvt_write_atomic(man, mo.manifest, err, sizeof err) != 0) fprintf(stderr, "fabench vendors: manifest: %s\n", err);
    csvt_free(man);

    /* the reference of every output on the device (spot-checked against the CPU), through a
     * context of our own: on CUDA the device's primary context, which the vendors share */
    rt_ctx *rctx = NULL;
    fb_refdev *refdev = NULL;
    if (any) {
        char why[FB_ERRLEN] = "";
        if (dev.rt->open(dev.index, &rctx, why, sizeof why) != 0) rctx = NULL;
        else if (fb_refdev_open(&dev, rctx, &refdev, why, sizeof why) != 0) refdev = NULL;
        if (!refdev)
            fprintf(stderr, "fabench vendors: the reference cannot run on %s (%s); every row is computed on the CPU\n",
                    mo.device, why);
    }

    char tmpl[] = "/tmp/fabench-vendors-XXXXXX";
    char *tdir = any ? mkdtemp(tmpl) : NULL;
    if (any && !tdir) { fprintf(stderr, "fabench vendors: cannot make a temporary folder\n"); any = 0; }
    char qp[128], kp[128], vp[128], op[128], lp[128];
    if (tdir) {
        snprintf(qp, sizeof qp, "%s/q.bin", tdir);
        snprintf(kp, sizeof kp, "%s/k.bin", tdir);
        snprintf(vp, sizeof vp, "%s/v.bin", tdir);
        snprintf(op, sizeof op, "%s/o.bin", tdir);
        snprintf(lp, sizeof lp, "%s/lse.bin", tdir);
    }
    vendors_ctx vx = {.dev = &dev, .vs = vs, .mo = &mo, .table = table, .ctab = ctab, .configs_out = configs_out,
                      .op = op, .lp = lp, .nshapes = shapes.n};
    signal(SIGINT, on_sigint);
    int failures = 0, fatal = 0;
    size_t resumed = 0;
    for (size_t i = 0; any && i < shapes.n && !interrupted && !fatal; i++) {
        const shape_t *s = &shapes.v[i];
        dtype_t dt = measure_dtype(&mo, s);
        if (mo.resume) { /* a shape every wanted implementation of the present vendors has a row for */
            int todo = 0;
            for (size_t vi = 0; vi < NVENDORS && !todo; vi++)
                if (vs[vi])
                    for (const char *const *im = all_vendors[vi]->impls(vs[vi]); *im && !todo; im++)
                        todo = wanted(*im, impls) && !perf_has(table, dev.info.name, dev.rt->name, *im, s->name, dt);
            if (!todo) { resumed++; continue; }
        }
        size_t es = dtype_size(dt), nq = shape_q_elems(s), nkv = shape_kv_elems(s);
        void *q = malloc(nq * es), *k = malloc(nkv * es), *v = malloc(nkv * es), *o = malloc(nq * es);
        float *lse = malloc(shape_out_rows(s) * sizeof *lse); /* a vendor's log-sum-exp, where it returns one */
        if (!q || !k || !v || !o || !lse) {
            fprintf(stderr, "fabench vendors: %s: host memory exhausted\n", s->name);
            free(q); free(k); free(v); free(o); free(lse);
            continue;
        }
        fb_fill_inputs(s, dt, mo.seed, q, k, v);
        if (write_raw(qp, q, nq * es) || write_raw(kp, k, nkv * es) || write_raw(vp, v, nkv * es)) {
            fprintf(stderr, "fabench vendors: cannot write the inputs to %s\n", tdir);
            fatal = 1;
        }
        vendor_inputs in = {.q = q, .k = k, .v = v, .qpath = qp, .kpath = kp, .vpath = vp, .opath = op,
                            .lse = lse, .lsepath = lp};
        attn_problem prob = {.s = *s, .dt = dt, .scale = 1.0 / sqrt((double)s->d)};
        /* the reference, computed once for all the vendors of the shape, before any of them runs */
        fb_reference ref = {0};
        if (!fatal) {
            const double ref_timeout = 20 * mo.timing.timeout_s;
            int rrc = fb_reference_get(refdev, &prob, q, k, v, NULL, NULL, NULL, mo.seed, ref_timeout, &ref, err, sizeof err);
            if (rrc == RT_ETIMEOUT) { /* the device still runs it: the CPU from now on */
                fprintf(stderr, "fabench vendors: %s: the reference kernel did not finish within %.0f s; the CPU "
                                "computes it from now on\n", s->name, ref_timeout);
                fb_refdev_close(refdev, 0);
                refdev = NULL;
                rrc = fb_reference_get(NULL, &prob, q, k, v, NULL, NULL, NULL, mo.seed, ref_timeout, &ref, err, sizeof err);
            }
            if (rrc != 0) fprintf(stderr, "fabench vendors: %s: %s; its rows are not verified\n", s->name, err);
        }
        in.check = vendor_check; /* a vendor choosing among its configurations checks each the same way */
        in.check_arg = &ref;
        for (size_t vi = 0; vi < NVENDORS && !fatal && !interrupted; vi++) {
            if (!vs[vi]) continue;
            for (const char *const *im = all_vendors[vi]->impls(vs[vi]); *im && !interrupted; im++) {
                if (!wanted(*im, impls)) continue;
                if (mo.resume && perf_has(table, dev.info.name, dev.rt->name, *im, s->name, dt)) continue;
                const int broke = measure_impl(&vx, vi, *im, s, dt, i + 1, &in, o, lse, &ref, &failures, &fatal);
                if (broke) {
                    all_vendors[vi]->close(vs[vi]);
                    vs[vi] = NULL;
                    break;
                }
            }
        }
        fb_reference_free(&ref);
        free(q); free(k); free(v); free(o); free(lse);
    }
    for (size_t vi = 0; vi < NVENDORS; vi++)
        if (vs[vi]) all_vendors[vi]->close(vs[vi]);
    fb_refdev_close(refdev, 1);
    if (rctx) dev.rt->close(rctx);
    telemetry_close(mo.timing.tm);
    if (tdir) { unlink(qp); unlink(kp); unlink(vp); unlink(op); unlink(lp); rmdir(tdir); }
    if (!any && !mo.quiet) fprintf(stderr, "fabench vendors: no vendor library is available here; %s has no rows\n", mo.out);
    if (resumed && !mo.quiet) fprintf(stderr, "fabench vendors: --resume: %zu shapes already had rows in %s\n", resumed, mo.out);
    csvt_free(ctab);
    csvt_free(table);
    shapes_free(&shapes);
    if (fatal) return 1;
    if (interrupted) return 130;
    return failures ? 1 : 0;
}
