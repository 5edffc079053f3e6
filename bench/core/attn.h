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
    uint64_t seed;       /* the inputs (and the rows the reference is spot-checked on) */
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
    telemetry_summary tel; /* the GPU's clocks and power over the timed runs (tel.samples 0: none) */
    timing_method how;    /* launches a sample, the gate, the host's enqueue time (timed rows) */
    rt_kernel_attrs attrs;
    double compile_ms;    /* 0 when the module was already compiled or came from the disk cache */
} attn_result;

/* The kernel's files in kernels/, in the order attn_source joins them (NULL-terminated). */
extern const char *const attn_kernel_files[];
/* The kernel source for a runtime: kernels/prelude_<runtime>.h followed by the
 * attn_kernel_files, malloc'd. 0 or -1 (err says which file is missing). */
int attn_source(const char *runtime, char **out, char *err, size_t errlen);

/* The -D defines ("NAME=VALUE") that select one configuration of the kernel for a shape
 * class; returns how many were written (at most ATTN_MAX_DEFINES). */
#define ATTN_MAX_DEFINES 48 /* HEAD_DIM, DTYPE, CAUSAL, the knobs (33), WRITE_LSE, ARCH_SPECIFIC, VARLEN, PAGED, PAGE, a FAULT_: 42 at most */
#define ATTN_DEFINE_LEN 48
#define ATTN_KEY_LEN (ATTN_MAX_DEFINES * ATTN_DEFINE_LEN + 1) /* the define set joined by spaces */
int attn_defines(const shape_t *s, dtype_t dt, const kconfig *c, int write_lse,
                 char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN]);

int attn_open(const rt_device *dev, attn_runner **out, char *err, size_t errlen);
void attn_close(attn_runner *r);

/* Compiles, on all CPU cores, the candidates whose binaries are not yet in the disk
 * cache, so that attn_run later only loads them. Returns how many it built. */
long attn_precompile(attn_runner *r, const shape_t *s, dtype_t dt, const kconfig *cands, long n, int write_lse,
                     double deadline, const volatile int *stop);
/* The same in the background where the runtime can compile without its context
 * (compile_offline: nothing touches the GPU while the caller times candidates); elsewhere
 * it compiles before returning. attn_run finds what is done in the disk cache and compiles
 * the rest itself. attn_precompile_wait joins (cancel: starts nothing more) and frees the
 * job; it returns how many binaries the job built. NULL when out of memory. */
typedef struct attn_precompile_job attn_precompile_job;
attn_precompile_job *attn_precompile_start(attn_runner *r, const shape_t *s, dtype_t dt, const kconfig *cands, long n,
                                           int write_lse, double deadline, const volatile int *stop);
long attn_precompile_wait(attn_precompile_job *j, int cancel);
/* The same, on all CPU cores before returning, for n (shape, dtype, configuration) triples:
 * a run's shapes compiled together rather than one at a time as they come. */
long attn_precompile_shapes(attn_runner *r, const shape_t *shapes, const dtype_t *dts, const kconfig *cfgs, long n,
                            int write_lse);
/* Binaries this runner compiled, and loaded from the disk cache, so far. */
void attn_counts(const attn_runner *r, long *compiled, long *cached);
/* 1 once a launch hung or a kernel fault left the device unusable for this process: every
 * later attn_run says so in its row (timeout, launch_error) without touching the device. */
int attn_unusable(const attn_runner *r);

/* One shape, one configuration (fields not set are completed with defaults).
 * Returns 0 with res->status set (any failure of the configuration is a status, not an
 * error); -1 only when the harness itself cannot go on (err filled). */
int attn_run(attn_runner *r, const shape_t *s, dtype_t dt, const kconfig *cfg, const attn_opts *o,
             attn_result *res, char *err, size_t errlen);

#endif
