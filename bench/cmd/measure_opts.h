/* measure_opts.h: the options `fabench run` and `fabench vendors` share, parsed in one place:
 * what to measure (--device, --shapes or --suite, --dtype), where its rows go (--out,
 * --append, --resume, --update, --manifest), the timing protocol's settings (--budget,
 * --warmup, --rest, --min-reps, --l2-flush), the inputs' --seed, and --quiet. Each option
 * means the same in both: --budget is seconds of timed repetitions. */
#ifndef FABENCH_MEASURE_OPTS_H
#define FABENCH_MEASURE_OPTS_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "shapes.h"
#include "timing.h"

typedef struct {
    const char *device, *shapes_file, *suite, *out, *manifest;
    int append, resume, update, quiet, l2_flush;
    int have_dtype; /* --dtype given: it overrides the shapes' own */
    dtype_t dtype;
    timing_opts timing;
    uint64_t seed;
} measure_opts;

/* getopt_long codes of the shared options, apart from a command's own (which start at 1) */
enum { MO_DEVICE = 1000, MO_SHAPES, MO_SUITE, MO_OUT, MO_APPEND, MO_RESUME, MO_UPDATE, MO_MANIFEST, MO_DTYPE,
       MO_BUDGET, MO_WARMUP, MO_REST, MO_MINREPS, MO_FLUSH, MO_SEED, MO_QUIET };

/* The shared entries of a command's option table: { MEASURE_LONG_OPTIONS, its own..., {0} } */
#define MEASURE_LONG_OPTIONS                                                                                         \
    {"device", required_argument, 0, MO_DEVICE}, {"shapes", required_argument, 0, MO_SHAPES},                         \
        {"suite", required_argument, 0, MO_SUITE}, {"out", required_argument, 0, MO_OUT},                             \
        {"append", no_argument, 0, MO_APPEND}, {"resume", no_argument, 0, MO_RESUME},                                 \
        {"update", no_argument, 0, MO_UPDATE}, {"manifest", required_argument, 0, MO_MANIFEST},                       \
        {"dtype", required_argument, 0, MO_DTYPE}, {"budget", required_argument, 0, MO_BUDGET},                       \
        {"warmup", required_argument, 0, MO_WARMUP}, {"rest", required_argument, 0, MO_REST},                         \
        {"min-reps", required_argument, 0, MO_MINREPS}, {"l2-flush", no_argument, 0, MO_FLUSH},                       \
        {"seed", required_argument, 0, MO_SEED}, {"quiet", no_argument, 0, MO_QUIET}

void measure_opts_defaults(measure_opts *m);

/* A number option's value within [lo, hi]: 0, or -1 with the message on stderr naming the
 * command and the option */
int measure_number(const char *cmd, const char *opt, const char *v, double lo, double hi, double *out);

/* Option `code` with argument arg into *m: 1 taken, 0 not a shared option, -1 a bad value
 * (said on stderr, naming cmd: "fabench run") */
int measure_opt(int code, const char *arg, measure_opts *m, const char *cmd);



/* After parsing: not both --update and --resume; --device, --out and one of --shapes or
 * --suite given. 0, or FB_EXIT_BADINPUT with the reason on stderr (usage, when not NULL,
 * printed after a missing one) */
int measure_opts_check(const measure_opts *m, const char *cmd, void (*usage)(FILE *));

#endif
