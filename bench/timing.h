/* timing.h: the one timing protocol for device work: warm-up, then repetitions timed with
 * device events until a time budget (and a minimum count) is met; median/p20/p80/min. */
#ifndef FABENCH_TIMING_H
#define FABENCH_TIMING_H

#include "rt.h"
#include "stats.h"
#include "telemetry.h"

typedef struct {
    double rest_s;    /* > 0: the device idles this long before the warm-up, so that every
                       * measurement starts from the same rested power state (a GPU under a
                       * power cap lowers its clock after sustained work; --rest) */
    double warmup_s;  /* wall time spent warming up (at least one run) */
    double budget_s;  /* wall time for timed repetitions */
    int min_reps, max_reps;
    double timeout_s; /* one batch of runs longer than this is a hang */
    double abandon_us; /* > 0: the first timed run alone, and no more when it is slower than this
                        * (a tuner's hopeless candidate: one honest sample instead of a full budget) */
    telemetry *tm;     /* NULL, or the GPU's clocks and power sampled over the timed repetitions */
    size_t l2_flush_bytes; /* > 0: that many bytes of device memory are overwritten before every
                            * run (warm-up and timed), outside the timed interval, so that no
                            * input is left in the cache by the run before (timing_flush_bytes) */
} timing_opts;

#define TELEMETRY_PERIOD_MS 10 /* one sample of the GPU's clocks and power every 10 ms */

void timing_defaults(timing_opts *o);
/* How much to overwrite to flush the device's cache: twice its size, at least 32 MiB (64 MiB
 * when the runtime does not say), at most a quarter of the largest buffer; a multiple of 4. */
size_t timing_flush_bytes(const rt_device_info *info);

/* Enqueues one run of the work being timed; sets *first and *last to the events of its
 * first and last launch (the same event for one launch). */
typedef int (*enqueue_fn)(void *arg, rt_event **first, rt_event **last, char *err, size_t errlen);

/* Times fn. Samples are in microseconds. With o->tm the repetitions (not the warm-up) are
 * watched and *tel (may be NULL) gets the summary; without it tel->samples is 0.
 * Returns 0, RT_ETIMEOUT or RT_ERR (err filled). */
int time_device(const rt_runtime *rt, rt_ctx *ctx, enqueue_fn fn, void *arg, const timing_opts *o,
                stats_t *st, telemetry_summary *tel, char *err, size_t errlen);

#endif
