/* attn.h: runs the portable kernel on one device: builds the source for the device's
 * runtime, compiles a configuration (memoised per define set), launches, verifies, times. */
#ifndef FABENCH_ATTN_H
#define FABENCH_ATTN_H

#include "common.h"
#include "config.h"
#include "refcheck.h"
#include "rt.h"
#include "stats.h"
#include "timing.h"

typedef struct attn_runner attn_runner;

typedef struct {
    timing_opts timing;
    size_t verify_rows;  /* reference rows checked at most (all when the output is smaller) */
    uint64_t seed;       /* inputs and sampled rows */
    int write_lse;       /* also produce and check the log-sum-exp */
    int verify_only;     /* check correctness, do not time */
} attn_opts;

void attn_opts_defaults(attn_opts *o);

typedef struct {
    status_t status;
    char reason[512];
    kconfig config;       /* as completed and run */
    verify_result ver;
    stats_t us;           /* valid when status is ok and not verify_only */
    rt_kernel_attrs attrs;
    double compile_ms;    /* 0 when the module was already compiled */
} attn_result;

int attn_open(const rt_device *dev, attn_runner **out, char *err, size_t errlen);
void attn_close(attn_runner *r);

/* One shape, one configuration (fields not set are completed with defaults).
 * Returns 0 with res->status set (any failure of the configuration is a status, not an
 * error); -1 only when the harness itself cannot go on (err filled). */
int attn_run(attn_runner *r, const shape_t *s, dtype_t dt, const kconfig *cfg, const attn_opts *o,
             attn_result *res, char *err, size_t errlen);

#endif
