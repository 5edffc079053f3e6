/* measure_opts.c: the options run and vendors share (measure_opts.h). */
#define _GNU_SOURCE
#include "measure_opts.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void measure_opts_defaults(measure_opts *m)
{
    memset(m, 0, sizeof *m);
    m->dtype = DT_BF16;
    timing_defaults(&m->timing);
    m->seed = 20250505;
}

int measure_number(const char *cmd, const char *opt, const char *v, double lo, double hi, double *out)
{
    char *end;
    const double x = strtod(v, &end);
    if (end == v || *end || !(x >= lo) || !isfinite(x)) {
        fprintf(stderr, "%s: %s: bad number '%s'\n", cmd, opt, v);
        return -1;
    }
    if (x > hi) {
        fprintf(stderr, "%s: %s: at most %g, got '%s'\n", cmd, opt, hi, v);
        return -1;
    }
    *out = x;
    return 0;
}

/* --seed: a whole number that fits 64 bits */
static int parse_seed(const char *cmd, const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    const unsigned long long x = strtoull(v, &end, 10);
    if (end == v || *end || errno || v[0] == '-') {
        fprintf(stderr, "%s: --seed: bad number '%s'\n", cmd, v);
        return -1;
    }
    *out = (uint64_t)x;
    return 0;
}

int measure_opt(int code, const char *arg, measure_opts *m, const char *cmd)
{
    double x;
    timing_opts *t = &m->timing;
    switch (code) {
    case MO_DEVICE: m->device = arg; return 1;
    case MO_SHAPES: m->shapes_file = arg; return 1;
    case MO_SUITE: m->suite = arg; return 1;
    case MO_OUT: m->out = arg; return 1;
    case MO_APPEND: m->append = 1; return 1;
    case MO_RESUME: m->append = m->resume = 1; return 1;
    case MO_UPDATE: m->append = m->update = 1; return 1;
    case MO_MANIFEST: m->manifest = arg; return 1;
    case MO_QUIET: m->quiet = 1; return 1;
    case MO_FLUSH: m->l2_flush = 1; return 1;
    case MO_DTYPE:
        if (dtype_parse(arg, &m->dtype) != 0) {
            fprintf(stderr, "%s: --dtype: unknown '%s' (known: fp32, fp16, bf16)\n", cmd, arg);
            return -1;
        }
        m->have_dtype = 1;
        return 1;
    case MO_BUDGET: return measure_number(cmd, "--budget", arg, 0, 1e6, &t->budget_s) ? -1 : 1;
    case MO_WARMUP: return measure_number(cmd, "--warmup", arg, 0, 1e6, &t->warmup_s) ? -1 : 1;
    case MO_REST: return measure_number(cmd, "--rest", arg, 0, 60, &t->rest_s) ? -1 : 1; /* at most a minute */
    case MO_MINREPS:
        if (measure_number(cmd, "--min-reps", arg, 1, 100000, &x)) return -1;
        t->min_reps = (int)x;
        if (t->max_reps < t->min_reps) t->max_reps = t->min_reps;
        return 1;
    case MO_SEED: return parse_seed(cmd, arg, &m->seed) ? -1 : 1;
    }
    return 0;
}

int measure_opts_check(const measure_opts *m, const char *cmd, void (*usage)(FILE *))
{
    if (m->update && m->resume) {
        fprintf(stderr, "%s: --update measures the shapes again, --resume skips those with rows: one of them\n", cmd);
        return FB_EXIT_BADINPUT;
    }
    if (!m->device || !m->out || (!m->shapes_file == !m->suite)) {
        fprintf(stderr, "%s: needs --device, --out and one of --shapes or --suite\n\n", cmd);
        if (usage) usage(stderr);
        return FB_EXIT_BADINPUT;
    }
    return 0;
}

