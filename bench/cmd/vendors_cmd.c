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

/* Everything one `fabench vendors` holds from its command line to its exit status: each
 * step below, and every implementation's row (measure_impl), takes the one struct, and
 * vendors_free releases the tables and shapes whatever step the command stopped at. */
typedef struct {
    measure_opts mo;               /* the options vendors shares with run */
    const char *impls;             /* --impl (NULL: every implementation) */
    const char *configs_out;       /* --configs-out (NULL: none) */
    shape_list_t shapes;
    rt_device dev;
    csv_table *table, *ctab;       /* perf.csv, and --configs-out's table (NULL: none) */
    csv_table *man;                /* the manifest until the vendors' versions are in it (NULL: none) */
    char mprefix[32];              /* --update: this command's manifest keys go under update.N. */
    vendor_session *vs[NVENDORS];  /* NULL: absent, or closed when its adapter broke */
    int any;                       /* some vendor is present (and the inputs' folder was made) */
    rt_ctx *rctx;                  /* the reference's own context on the device */
    fb_refdev *refdev;             /* the reference kernel on the device (NULL: the CPU) */
    char tmpl[sizeof "/tmp/fabench-vendors-XXXXXX"], *tdir; /* the inputs' folder (NULL: none) */
    char qp[128], kp[128], vp[128];  /* the inputs an out-of-process adapter reads, */
    char op[128], lp[128];           /* and where it writes O and the LSE */
    /* the last error message: one buffer for the whole command, as it was, since a
     * failing manifest_fill writes none (the message is then this one, else "out of memory") */
    char err[FB_ERRLEN];
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
    const int broke = all_vendors[vi]->run(x->vs[vi], im, s, dt, in, o, &x->mo.timing, &vr, err, sizeof err) != 0;
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
    perf_row pr = {.gpu = x->dev.info.name, .backend = x->dev.rt->name, .impl = im, .config = vr.config,
                   .config_source = "vendor", .shape = s, .dt = dt, .status = status, .reason = reason,
                   .ver = &ver, .us = status == ST_OK ? &st : NULL, .tel = &vr.tel,
                   .l2_flush = x->mo.l2_flush, .how = &vr.how};
    if (perf_put(x->table, &pr, x->mo.update) != 0 || csvt_write_atomic(x->table, x->mo.out, err, sizeof err) != 0) {
        fprintf(stderr, "fabench vendors: %s\n", err);
        *fatal = 1;
    }
    if (x->ctab && vr.configs_method) {
        char n[32];
        snprintf(n, sizeof n, "%ld", vr.configs);
        const char *row[4] = {im, s->name, n, vr.configs_method};
        long at = -1; /* --update: this (impl, shape)'s row, replaced where it stands */
        for (size_t r = 0; x->mo.update && r < x->ctab->nrows && at < 0; r++)
            if (!strcmp(x->ctab->rows[r][0], im) && !strcmp(x->ctab->rows[r][1], s->name)) at = (long)r;
        if ((at >= 0 ? csvt_replace(x->ctab, (size_t)at, row) : csvt_add(x->ctab, row)) != 0 ||
            csvt_write_atomic(x->ctab, x->configs_out, err, sizeof err) != 0) {
            fprintf(stderr, "fabench vendors: --configs-out: %s\n", err);
            *fatal = 1;
        }
    }
    if (!x->mo.quiet) perf_progress(stderr, shape_no, x->shapes.n, &pr);
    *failures += status != ST_OK && status != ST_UNSUPPORTED;
    free(vr.samples_us);
    return broke;
}

/* "fabench vendors: WHATMSG" on stderr; the exit status of bad input, for the steps to return */
static int vendors_bad(const char *what, const char *msg)
{
    fprintf(stderr, "fabench vendors: %s%s\n", what, msg);
    return FB_EXIT_BADINPUT;
}

/* parse_vendors_args: the command goes on (any other value is its exit status) */
enum { GO_ON = -1 };

/* The command line into x: GO_ON, or the exit status to return at once, 0 after --help,
 * FB_EXIT_BADINPUT for a bad option (said on stderr) */
static int parse_vendors_args(int argc, char **argv, vendors_ctx *x)
{
    enum { O_IMPL = 1, O_HELP, O_CONFIGS };
    static const struct option opts[] = {
        MEASURE_LONG_OPTIONS,
        {"impl", required_argument, 0, O_IMPL}, {"help", no_argument, 0, O_HELP},
        {"configs-out", required_argument, 0, O_CONFIGS}, {0, 0, 0, 0}};
    measure_opts_defaults(&x->mo);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        const int shared = measure_opt(c, optarg, &x->mo, "fabench vendors");
        if (shared < 0) return FB_EXIT_BADINPUT;
        if (shared) continue;
        switch (c) {
        case O_IMPL: x->impls = optarg; break;
        case O_CONFIGS: x->configs_out = optarg; break;
        case 'h':
        case O_HELP: usage(stdout); return 0;
        case ':': fprintf(stderr, "fabench vendors: %s needs a value\n", argv[optind - 1]); return FB_EXIT_BADINPUT;
        default: fprintf(stderr, "fabench vendors: unknown option '%s'\n", argv[optind - 1]); return FB_EXIT_BADINPUT;
        }
    }
    if (optind < argc) { fprintf(stderr, "fabench vendors: unexpected argument '%s'\n", argv[optind]); return FB_EXIT_BADINPUT; }
    if (measure_opts_check(&x->mo, "fabench vendors", usage) != 0) return FB_EXIT_BADINPUT;
    return GO_ON;
}

/* The shapes, and what is found before the device is touched: no two of the files named
 * are one, --configs-out can be written. 0, or FB_EXIT_BADINPUT said on stderr. */
static int load_vendor_shapes(vendors_ctx *x)
{
    const measure_opts *mo = &x->mo;
    if (shapes_load_file_or_suite(mo->shapes_file, mo->suite, &x->shapes, x->err, sizeof x->err) != 0) return vendors_bad("", x->err);
    /* two of the files named, each written or read whole, must not be one file */
    const char *const files[] = {mo->out, x->configs_out, mo->manifest, mo->shapes_file};
    const char *const names[] = {"--out", "--configs-out", "--manifest", "--shapes"};
    if (fb_distinct_files(files, names, 3, 4, x->err, sizeof x->err) != 0) return vendors_bad("", x->err);
    if (x->configs_out && fb_check_writable(x->configs_out, x->err, sizeof x->err) != 0)
        return vendors_bad("--configs-out: ", x->err);
    return 0;
}

/* The device; --out claimed and its table (--append: the rows already there), the
 * manifest's path checked, --configs-out's table; both outputs written before any work,
 * so that nothing is left half-written. 0, or FB_EXIT_BADINPUT said on stderr. */
static int open_vendor_outputs(vendors_ctx *x)
{
    const measure_opts *mo = &x->mo;
    char *const err = x->err;
    const size_t elen = sizeof x->err;
    if (rt_select(mo->device, &x->dev, err, elen) != 0 ||
        fb_check_writable(mo->out, err, elen) != 0 || fb_claim_output(mo->out, err, elen) != 0 ||
        (mo->manifest && fb_check_writable(mo->manifest, err, elen) != 0) ||
        (mo->manifest && manifest_check_path(mo->manifest, &x->dev, err, elen) != 0) ||
        (mo->append ? perf_open_append(mo->out, &x->table, err, elen)
                    : ((x->table = csvt_new(perf_header, perf_ncols)) ? 0 : (snprintf(err, elen, "out of memory"), -1))) != 0)
        return vendors_bad("", err);
    /* the vendors' own configuration counts: read (--append) before either output is written */
    static const char *const configs_header[4] = {"impl", "scope", "configs", "method"};
    if (x->configs_out && (mo->append ? csvt_open_append(x->configs_out, configs_header, 4, &x->ctab, err, elen)
                                      : ((x->ctab = csvt_new(configs_header, 4)) ? 0 : (snprintf(err, elen, "out of memory"), -1))) != 0)
        return vendors_bad("--configs-out: ", err);
    /* nothing half-written: both outputs proved writable before any work */
    if (csvt_write_atomic(x->table, mo->out, err, elen) != 0 ||
        (x->configs_out && csvt_write_atomic(x->ctab, x->configs_out, err, elen) != 0))
        return vendors_bad("", err);
    return 0;
}

/* --manifest's table: the device, the versions and the command (--update: under update.N.);
 * open_vendors adds each vendor's versions, write_manifest writes it. 0, or FB_EXIT_BADINPUT
 * said on stderr. */
static int open_manifest(vendors_ctx *x, int argc, char **argv)
{
    static const char *const mh[2] = {"key", "value"};
    /* argc + 1, argv - 1: the command line from the program's path on */
    if (x->mo.manifest && (csvt_open_append(x->mo.manifest, mh, 2, &x->man, x->err, sizeof x->err) != 0 ||
                           (x->mo.update ? manifest_fill_update(x->man, &x->dev, argc + 1, argv - 1, x->mprefix, sizeof x->mprefix)
                                         : manifest_fill(x->man, &x->dev, argc + 1, argv - 1)) != 0))
        return vendors_bad("manifest: ", x->err[0] ? x->err : "out of memory");
    return 0;
}

/* The manifest with the vendors' versions in it, written; a failure is said, and the rows
 * are measured all the same */
static void write_manifest(vendors_ctx *x)
{
    if (x->man && csvt_write_atomic(x->man, x->mo.manifest, x->err, sizeof x->err) != 0)
        fprintf(stderr, "fabench vendors: manifest: %s\n", x->err);
    csvt_free(x->man);
    x->man = NULL;
}

/* The timing protocol as the portable kernel's: --l2-flush sized by the device's L2, and
 * the GPU's clocks and power read over each vendor's timed runs, as over ours (none: the
 * manifest says why) */
static void set_vendor_timing(vendors_ctx *x)
{
    if (x->mo.l2_flush) x->mo.timing.l2_flush_bytes = timing_flush_bytes(&x->dev.info);
    char why[256];
    if (!x->dev.info.is_gpu || telemetry_open(x->dev.info.pci, &x->mo.timing.tm, why, sizeof why) != 0)
        x->mo.timing.tm = NULL;
}

/* The reference of every output on the device (spot-checked against the CPU), through a
 * context of our own: on CUDA the device's primary context, which the vendors share.
 * Where it cannot run there (said on stderr), every reference is computed on the CPU. */
static void open_reference(vendors_ctx *x)
{
    char why[FB_ERRLEN] = "";
    if (x->dev.rt->open(x->dev.index, &x->rctx, why, sizeof why) != 0) x->rctx = NULL;
    else if (fb_refdev_open(&x->dev, x->rctx, &x->refdev, why, sizeof why) != 0) x->refdev = NULL;
    if (!x->refdev)
        fprintf(stderr, "fabench vendors: the reference cannot run on %s (%s); every row is computed on the CPU\n",
                x->mo.device, why);
}

/* The folder of the files an out-of-process adapter reads (Q, K, V) and writes (O, LSE).
 * Without it no vendor can run: x->any is cleared (said on stderr). */
static void make_inputs_folder(vendors_ctx *x)
{
    snprintf(x->tmpl, sizeof x->tmpl, "/tmp/fabench-vendors-XXXXXX");
    x->tdir = mkdtemp(x->tmpl);
    if (!x->tdir) {
        fprintf(stderr, "fabench vendors: cannot make a temporary folder\n");
        x->any = 0;
        return;
    }
    snprintf(x->qp, sizeof x->qp, "%s/q.bin", x->tdir);
    snprintf(x->kp, sizeof x->kp, "%s/k.bin", x->tdir);
    snprintf(x->vp, sizeof x->vp, "%s/v.bin", x->tdir);
    snprintf(x->op, sizeof x->op, "%s/o.bin", x->tdir);
    snprintf(x->lp, sizeof x->lp, "%s/lse.bin", x->tdir);
}

/* --resume: 1 when some wanted implementation of a present vendor has no row for s yet */
static int shape_todo(const vendors_ctx *x, const shape_t *s, dtype_t dt)
{
    int todo = 0;
    for (size_t vi = 0; vi < NVENDORS && !todo; vi++)
        if (x->vs[vi])
            for (const char *const *im = all_vendors[vi]->impls(x->vs[vi]); *im && !todo; im++)
                todo = wanted(*im, x->impls) && !perf_has(x->table, x->dev.info.name, x->dev.rt->name, *im, s->name, dt);
    return todo;
}

/* One shape's buffers on the host: its inputs, a vendor's output and its log-sum-exp
 * (where it returns one) */
typedef struct {
    void *q, *k, *v, *o;
    float *lse;
} shape_bufs;

static void shape_bufs_free(shape_bufs *b)
{
    free(b->q); free(b->k); free(b->v); free(b->o); free(b->lse);
}

/* b for shape s: 0, or -1 with none held (the host is out of memory for this shape) */
static int shape_bufs_alloc(const shape_t *s, dtype_t dt, shape_bufs *b)
{
    const size_t es = dtype_size(dt), nq = shape_q_elems(s), nkv = shape_kv_elems(s);
    b->q = malloc(nq * es);
    b->k = malloc(nkv * es);
    b->v = malloc(nkv * es);
    b->o = malloc(nq * es);
    b->lse = malloc(shape_out_rows(s) * sizeof *b->lse);
    if (b->q && b->k && b->v && b->o && b->lse) return 0;
    shape_bufs_free(b);
    return -1;
}

/* s's inputs, the portable kernel's (the same seed), into b and into the files an
 * out-of-process adapter reads. 0, or 1 said on stderr: they cannot be written. */
static int write_inputs(const vendors_ctx *x, const shape_t *s, dtype_t dt, const shape_bufs *b)
{
    const size_t es = dtype_size(dt), nq = shape_q_elems(s), nkv = shape_kv_elems(s);
    fb_fill_inputs(s, dt, x->mo.seed, b->q, b->k, b->v);
    if (write_raw(x->qp, b->q, nq * es) || write_raw(x->kp, b->k, nkv * es) || write_raw(x->vp, b->v, nkv * es)) {
        fprintf(stderr, "fabench vendors: cannot write the inputs to %s\n", x->tdir);
        return 1;
    }
    return 0;
}

/* The reference of s's output, computed once for all the vendors of the shape, before any
 * of them runs; on the device, unless its kernel did not finish there (then the CPU, from
 * this shape on). Where it cannot be computed, the shape's rows are not verified (said). */
static void shape_reference(vendors_ctx *x, const shape_t *s, dtype_t dt, const shape_bufs *b, fb_reference *ref)
{
    attn_problem prob = {.s = *s, .dt = dt, .scale = 1.0 / sqrt((double)s->d)};
    const double ref_timeout = 20 * x->mo.timing.timeout_s;
    int rrc = fb_reference_get(x->refdev, &prob, b->q, b->k, b->v, NULL, NULL, NULL, x->mo.seed, ref_timeout, ref, x->err,
                               sizeof x->err);
    if (rrc == RT_ETIMEOUT) { /* the device still runs it: the CPU from now on */
        fprintf(stderr, "fabench vendors: %s: the reference kernel did not finish within %.0f s; the CPU "
                        "computes it from now on\n", s->name, ref_timeout);
        fb_refdev_close(x->refdev, 0);
        x->refdev = NULL;
        rrc = fb_reference_get(NULL, &prob, b->q, b->k, b->v, NULL, NULL, NULL, x->mo.seed, ref_timeout, ref, x->err,
                               sizeof x->err);
    }
    if (rrc != 0) fprintf(stderr, "fabench vendors: %s: %s; its rows are not verified\n", s->name, x->err);
}

/* Every wanted implementation of every present vendor on shape i (--resume: those without
 * its row), until SIGINT, or until an output cannot be written (checked between vendors).
 * A vendor whose adapter broke is closed, its other implementations skipped. */
static void measure_vendors(vendors_ctx *x, size_t i, dtype_t dt, vendor_inputs *in, const shape_bufs *b,
                            fb_reference *ref, int *failures, int *fatal)
{
    const shape_t *s = &x->shapes.v[i];
    for (size_t vi = 0; vi < NVENDORS && !*fatal && !interrupted; vi++) {
        if (!x->vs[vi]) continue;
        for (const char *const *im = all_vendors[vi]->impls(x->vs[vi]); *im && !interrupted; im++) {
            if (!wanted(*im, x->impls)) continue;
            if (x->mo.resume && perf_has(x->table, x->dev.info.name, x->dev.rt->name, *im, s->name, dt)) continue;
            if (measure_impl(x, vi, *im, s, dt, i + 1, in, b->o, b->lse, ref, failures, fatal)) {
                all_vendors[vi]->close(x->vs[vi]);
                x->vs[vi] = NULL;
                break;
            }
        }
    }
}

/* Shape i: 1 when --resume skips it (every wanted implementation has its row); else 0,
 * after its inputs are made and written, its reference computed, and the vendors measured
 * on it. *failures counts rows that did not pass, *fatal an output that cannot be written.
 * A shape the host has no memory for is said and left (no rows). */
static int measure_shape(vendors_ctx *x, size_t i, int *failures, int *fatal)
{
    const shape_t *s = &x->shapes.v[i];
    const dtype_t dt = shapes_dtype(s, x->mo.have_dtype, x->mo.dtype);
    if (x->mo.resume && !shape_todo(x, s, dt)) return 1;
    shape_bufs b;
    if (shape_bufs_alloc(s, dt, &b) != 0) {
        fprintf(stderr, "fabench vendors: %s: host memory exhausted\n", s->name);
        return 0;
    }
    if (write_inputs(x, s, dt, &b)) *fatal = 1;
    fb_reference ref = {0};
    if (!*fatal) shape_reference(x, s, dt, &b, &ref);
    /* a vendor choosing among its configurations checks each the same way (vendor_check) */
    vendor_inputs in = {.q = b.q, .k = b.k, .v = b.v, .qpath = x->qp, .kpath = x->kp, .vpath = x->vp, .opath = x->op,
                        .lse = b.lse, .lsepath = x->lp, .check = vendor_check, .check_arg = &ref};
    measure_vendors(x, i, dt, &in, &b, &ref, failures, fatal);
    fb_reference_free(&ref);
    shape_bufs_free(&b);
    return 0;
}

/* After the last shape: the vendors closed, the reference's kernel and context, the
 * telemetry, the inputs' folder removed */
static void close_vendors_run(vendors_ctx *x)
{
    for (size_t vi = 0; vi < NVENDORS; vi++)
        if (x->vs[vi]) all_vendors[vi]->close(x->vs[vi]);
    fb_refdev_close(x->refdev, 1);
    if (x->rctx) x->dev.rt->close(x->rctx);
    telemetry_close(x->mo.timing.tm);
    if (x->tdir) { unlink(x->qp); unlink(x->kp); unlink(x->vp); unlink(x->op); unlink(x->lp); rmdir(x->tdir); }
}

/* The tables and the shapes, whichever step the command stopped at */
static void vendors_free(vendors_ctx *x)
{
    csvt_free(x->man);
    csvt_free(x->ctab);
    csvt_free(x->table);
    shapes_free(&x->shapes);
}

int cmd_vendors(int argc, char **argv)
{
    vendors_ctx x = {0};
    int rc = parse_vendors_args(argc, argv, &x);
    if (rc != GO_ON) return rc;
    rc = load_vendor_shapes(&x);
    if (rc == 0) rc = open_vendor_outputs(&x);
    if (rc == 0) rc = open_manifest(&x, argc, argv);
    if (rc != 0) {
        vendors_free(&x);
        return rc;
    }
    set_vendor_timing(&x);
    x.any = open_vendors(&x.dev, x.vs, x.man, x.mprefix);
    write_manifest(&x);
    if (x.any) open_reference(&x);
    if (x.any) make_inputs_folder(&x);
    signal(SIGINT, on_sigint);
    int failures = 0, fatal = 0;
    size_t resumed = 0;
    for (size_t i = 0; x.any && i < x.shapes.n && !interrupted && !fatal; i++)
        resumed += (size_t)measure_shape(&x, i, &failures, &fatal);
    close_vendors_run(&x);
    if (!x.any && !x.mo.quiet) fprintf(stderr, "fabench vendors: no vendor library is available here; %s has no rows\n", x.mo.out);
    if (resumed && !x.mo.quiet) fprintf(stderr, "fabench vendors: --resume: %zu shapes already had rows in %s\n", resumed, x.mo.out);
    vendors_free(&x);
    if (fatal) return 1;
    if (interrupted) return 130;
    return failures ? 1 : 0;
}
