/* vendor.h: the interface every vendor adapter implements (vendors/<name>/): open on a
 * device or say why it is absent, list the implementations it measures, run one shape on
 * the harness's inputs and hand back the output and the timing samples (or, timed in this
 * process by bench/core/timing.c, their summary). The harness verifies the output itself (and,
 * through vendor_inputs.check, each candidate a vendor chooses among) and writes the same
 * perf.csv rows as for the portable kernel. */
#ifndef FABENCH_VENDOR_H
#define FABENCH_VENDOR_H

#include <stddef.h>

#include "common.h"
#include "rt.h"
#include "timing.h"

typedef struct vendor_session vendor_session;

/* The harness's verification of one candidate output, for a vendor that chooses among several
 * (cuDNN's engine configs): o as the vendor fills O (dtype and layout of vendor.run's o), lse
 * NULL or as vendor_inputs.lse. 0 passes; 1 fails (why says how); -1 no verdict was possible
 * (the reference could not run; why). */
typedef int (*vendor_check_fn)(void *arg, const void *o, const float *lse, char *why, size_t len);

/* The inputs of one shape, in host memory and, for adapters in other processes, in files. */
typedef struct {
    const void *q, *k, *v;
    const char *qpath, *kpath, *vpath; /* raw [B, H, S, D] arrays of the dtype */
    const char *opath;                 /* where an out-of-process adapter writes O */
    float *lse;          /* NULL, or where the vendor puts its log-sum-exp ([B, Hq, Sq] float,
                          * natural log; packed [Hq, total_q] when ragged) if it returns one */
    const char *lsepath; /* where an out-of-process adapter writes it */
    vendor_check_fn check; /* NULL: the vendor cannot check its candidates (each that runs counts
                            * as verified; the harness still verifies the final output) */
    void *check_arg;
} vendor_inputs;

typedef struct {
    status_t status;       /* ok, unsupported (the vendor's reason), launch_error */
    char reason[512];
    double *samples_us;    /* malloc'd timing samples (status ok), or: */
    size_t nsamples;
    int has_stats;         /* the vendor timed with time_device (bench/core/timing.h) in this process:
                            * stats is its summary and samples_us stays NULL */
    stats_t stats;
    char config[512];      /* what the vendor chose (engine, knobs), for perf.csv's config column */
    long configs;          /* configurations the vendor's own selection offered for this shape */
    const char *configs_method; /* how configs was counted (a static string); NULL: not reported */
    telemetry_summary tel; /* the GPU's clocks and power over the timed runs (timing_opts.tm); samples 0: none */
    timing_method how;     /* how the samples were taken (batch 0: not said) */
    int has_lse;           /* the vendor wrote its log-sum-exp to vendor_inputs.lse */
} vendor_result;

typedef struct vendor {
    const char *name;
    /* 0 and a session, or -1 with the reason the vendor is absent in why. versions gets
     * "key=value" pairs separated by spaces for the manifest. */
    int (*open)(const rt_device *dev, vendor_session **out, char *versions, size_t vlen, char *why, size_t wlen);
    /* The implementations (perf.csv impl names), NULL-terminated. */
    const char *const *(*impls)(vendor_session *vs);
    /* Runs impl on the shape: O (dtype dt, [B, Hq, Sq, D]) into o. o arrives poisoned
     * (fb_poison), and a vendor that can starts its device output from that, so elements
     * the library leaves unwritten read back as poison. 0 with res filled, or -1 when the
     * adapter itself broke (err says why; the session is unusable). */
    int (*run)(vendor_session *vs, const char *impl, const shape_t *s, dtype_t dt, const vendor_inputs *in, void *o,
               const timing_opts *t, vendor_result *res, char *err, size_t errlen);
    void (*close)(vendor_session *vs);
} vendor;

extern const vendor vendor_torch;
extern const vendor vendor_cudnn;

#endif
