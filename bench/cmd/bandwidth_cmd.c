/* bandwidth_cmd.c: `fabench bandwidth`: the copy-bandwidth probe (core/bandwidth.h) over its
 * variants on one device, into bandwidth.csv (a row per variant, ok or not) and the
 * manifest, with the best copy and read rates on stdout. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bandwidth.h"
#include "commands.h"
#include "csvio.h"
#include "manifest.h"
#include "measure_opts.h"

static const char *const bw_header[] = {"gpu", "backend", "kernel", "buffer_bytes", "bytes_moved", "groups", "block",
                                        "unroll", "median_us", "p20_us", "p80_us", "min_us", "reps", "gbps",
                                        "status", "reason", "timer", "sm_mhz", "run_id", "utc"};
#define BW_NCOLS (sizeof bw_header / sizeof bw_header[0])

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fabench bandwidth --device D [--mib N] [--out FILE [--append]] [--manifest FILE]\n"
            "                         [--budget S] [--warmup S] [--rest S] [--min-reps N] [--seed N] [--quiet]\n\n"
            "The device's memory bandwidth as a streaming kernel sees it (kernels/stream.k, compiled and\n"
            "launched like the attention kernel): a copy (every byte read and written) and a read (every\n"
            "byte read), each over grid sizes of 1 to 32 work-groups per compute unit and one group per\n"
            "block of words, at two unroll depths. Every variant is timed by the protocol of `run` and\n"
            "`vendors` and its output checked word by word before and after. Prints the best rate of\n"
            "each kind (GB/s = bytes moved / median time): the ceiling `versus --bandwidth` holds\n"
            "memory-bound attention against.\n\n"
            "  --mib N        MiB in the buffer streamed (default: 8x the device's last-level cache, at\n"
            "                 least 256, within a quarter of the largest allocation)\n"
            "  --out FILE     write a row per variant (bandwidth.csv's columns), atomically; --append\n"
            "                 keeps the rows already there\n"
            "  --manifest F   record the device, versions and command line there (as run does)\n"
            "  --budget, --warmup, --rest, --min-reps, --seed, --quiet: as in `fabench run`\n\n"
            "Exit status: 0 measured (at least one ok variant of each kind), 1 none ok or the device\n"
            "failed, 2 bad usage or input.\n");
}

static int bad(const char *msg)
{
    fprintf(stderr, "fabench bandwidth: %s\n", msg);
    return FB_EXIT_BADINPUT;
}

typedef struct {
    measure_opts mo;
    double mib;
    rt_device dev;
    csv_table *table;
    char err[FB_ERRLEN];
} bw_ctx;

static int parse_args(int argc, char **argv, bw_ctx *x)
{
    static const struct option opts[] = {
        {"device", required_argument, 0, MO_DEVICE}, {"out", required_argument, 0, MO_OUT},
        {"append", no_argument, 0, MO_APPEND}, {"manifest", required_argument, 0, MO_MANIFEST},
        {"budget", required_argument, 0, MO_BUDGET}, {"warmup", required_argument, 0, MO_WARMUP},
        {"rest", required_argument, 0, MO_REST}, {"min-reps", required_argument, 0, MO_MINREPS},
        {"seed", required_argument, 0, MO_SEED}, {"quiet", no_argument, 0, MO_QUIET},
        {"mib", required_argument, 0, 'm'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    measure_opts_defaults(&x->mo);
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') { usage(stdout); return -1; }
        if (c == 'm') {
            if (measure_number("fabench bandwidth", "--mib", optarg, 1.0 / 1024, 1 << 20, &x->mib)) return FB_EXIT_BADINPUT;
            continue;
        }
        const int used = measure_opt(c, optarg, &x->mo, "fabench bandwidth");
        if (used < 0) return FB_EXIT_BADINPUT;
        if (used == 0) { usage(stderr); return FB_EXIT_BADINPUT; }
    }
    if (optind < argc) { fprintf(stderr, "fabench bandwidth: unexpected argument '%s'\n", argv[optind]); return FB_EXIT_BADINPUT; }
    if (!x->mo.device) { usage(stderr); return bad("needs --device"); }
    if (x->mo.append && !x->mo.out) return bad("--append needs --out");
    return 0;
}

/* --out claimed and its rows (with --append), the manifest checked, the device: 0, or 2 said */
static int open_inputs(bw_ctx *x)
{
    const measure_opts *mo = &x->mo;
    if (rt_select(mo->device, &x->dev, x->err, sizeof x->err) != 0) return bad(x->err);
    if (mo->out) {
        if (fb_check_writable(mo->out, x->err, sizeof x->err) != 0 || fb_claim_output(mo->out, x->err, sizeof x->err) != 0)
            return bad(x->err);
        int rc = mo->append ? csvt_open_append(mo->out, bw_header, BW_NCOLS, &x->table, x->err, sizeof x->err)
                            : ((x->table = csvt_new(bw_header, BW_NCOLS)) ? 0 : -1);
        if (rc != 0) return bad(x->table ? x->err : "out of memory");
    }
    if (mo->manifest && (manifest_check_path(mo->manifest, &x->dev, x->err, sizeof x->err) != 0 ||
                         fb_check_writable(mo->manifest, x->err, sizeof x->err) != 0))
        return bad(x->err);
    return 0;
}

/* the result as bandwidth.csv's row, added to the table */
static int add_row(bw_ctx *x, const bw_result *r)
{
    const int ok = r->status == ST_OK;
    char buf[12][48], utc[32];
    snprintf(buf[0], 48, "%zu", r->buffer_bytes);
    snprintf(buf[1], 48, "%.0f", r->bytes_moved);
    snprintf(buf[2], 48, "%ld", r->groups);
    snprintf(buf[3], 48, "%d", r->block);
    snprintf(buf[4], 48, "%d", r->unroll);
    fb_fmt_num(buf[5], 48, ok ? r->us.median : NAN, "%.3f");
    fb_fmt_num(buf[6], 48, ok ? r->us.p20 : NAN, "%.3f");
    fb_fmt_num(buf[7], 48, ok ? r->us.p80 : NAN, "%.3f");
    fb_fmt_num(buf[8], 48, ok ? r->us.min : NAN, "%.3f");
    snprintf(buf[9], 48, "%zu", ok ? r->us.n : 0);
    fb_fmt_num(buf[10], 48, ok ? r->bytes_moved / r->us.median / 1e3 : NAN, "%.1f");
    fb_fmt_num(buf[11], 48, r->tel.samples > 0 ? r->tel.sm_mhz : NAN, "%.0f");
    fb_utc_now(utc, sizeof utc);
    const char *row[] = {x->dev.info.name, x->dev.rt->name, bw_kind_name(r->kind), buf[0], buf[1], buf[2], buf[3], buf[4],
                         buf[5], buf[6], buf[7], buf[8], buf[9], buf[10], status_name(r->status), r->reason,
                         ok ? r->how.timer : "", buf[11], fb_run_id(), utc};
    return csvt_add(x->table, row);
}

static void say_row(const bw_ctx *x, const bw_result *r)
{
    if (x->mo.quiet) return;
    if (r->status == ST_OK)
        fprintf(stderr, "  %-4s groups %-7ld unroll %d  %9.1f us  %7.1f GB/s\n", bw_kind_name(r->kind), r->groups,
                r->unroll, r->us.median, r->bytes_moved / r->us.median / 1e3);
    else
        fprintf(stderr, "  %-4s groups %-7ld unroll %d  %s: %s\n", bw_kind_name(r->kind), r->groups, r->unroll,
                status_name(r->status), r->reason);
}

/* every variant of the probe, each a row; best[kind] the highest ok rate. 0, or 1 when the
 * device stopped working (the rows so far are kept) */
static int measure_variants(bw_ctx *x, bw_probe *p, bw_result best[2])
{
    int nu;
    const int *un = bw_unrolls(&nu);
    for (int k = BW_COPY; k <= BW_READ; k++)
        for (int u = 0; u < nu; u++) {
            long g[16];
            const int ng = bw_group_counts(p, un[u], g, 16);
            for (int i = 0; i < ng; i++) {
                bw_result r;
                const int rc = bw_measure(p, (bw_kind)k, g[i], un[u], &x->mo.timing, &r, x->err, sizeof x->err);
                say_row(x, &r);
                if (x->table && (add_row(x, &r) != 0 || csvt_write_atomic(x->table, x->mo.out, x->err, sizeof x->err) != 0)) {
                    fprintf(stderr, "fabench bandwidth: %s\n", x->err);
                    return 1;
                }
                if (rc != 0) { fprintf(stderr, "fabench bandwidth: the device failed: %s\n", x->err); return 1; }
                if (r.status == ST_OK && (best[k].status != ST_OK || r.us.median * best[k].bytes_moved <
                                                                          best[k].us.median * r.bytes_moved))
                    best[k] = r;
            }
        }
    return 0;
}

int cmd_bandwidth(int argc, char **argv)
{
    bw_ctx x = {0};
    int rc = parse_args(argc, argv, &x);
    if (rc != 0) return rc < 0 ? 0 : rc;
    if ((rc = open_inputs(&x)) != 0) { csvt_free(x.table); return rc; }
    const size_t bytes = x.mib > 0 ? (size_t)(x.mib * 1048576.0) / 16 * 16 : bw_default_bytes(&x.dev.info);
    if ((x.table && csvt_write_atomic(x.table, x.mo.out, x.err, sizeof x.err) != 0) ||
        (x.mo.manifest && manifest_update(x.mo.manifest, &x.dev, argc + 1, argv - 1, 1, x.err, sizeof x.err) != 0)) {
        csvt_free(x.table);
        return bad(x.err);
    }
    bw_probe *p;
    if (bw_open(&x.dev, bytes, x.mo.seed, &p, x.err, sizeof x.err) != 0) {
        fprintf(stderr, "fabench bandwidth: %s\n", x.err);
        csvt_free(x.table);
        return 1;
    }
    if (!x.mo.quiet)
        fprintf(stderr, "fabench bandwidth: %s:%d (%s), %zu MiB buffers, %d work-items a group\n", x.dev.rt->name,
                x.dev.index, x.dev.info.name, bytes >> 20, bw_block(p));
    bw_result best[2] = {{.status = ST__COUNT}, {.status = ST__COUNT}};
    rc = measure_variants(&x, p, best);
    bw_close(p);
    csvt_free(x.table);
    for (int k = BW_COPY; k <= BW_READ; k++) {
        if (best[k].status != ST_OK) { printf("%s: no variant ran correctly\n", bw_kind_name((bw_kind)k)); rc = 1; continue; }
        printf("%s: %.1f GB/s (%ld groups of %d, unroll %d, %.1f us for %.0f MB)\n", bw_kind_name((bw_kind)k),
               best[k].bytes_moved / best[k].us.median / 1e3, best[k].groups, best[k].block, best[k].unroll,
               best[k].us.median, best[k].bytes_moved / 1e6);
    }
    return rc;
}
