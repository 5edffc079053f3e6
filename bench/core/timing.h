/* timing.h: the one timing protocol for device work, ours and the vendors' alike: warm-up,
 * then batches of runs back to back, timed by device events at the batch's ends, until a
 * time budget (and a minimum count) is met; a sample is a batch's time per run; median,
 * p20, p80 and min over the samples, and the host's enqueue time per run on the side. The
 * batch is a launch graph replayed by one call where the runtime has graphs (CUDA), else
 * runs enqueued behind a gate that holds the queue until the whole batch is in it: either
 * way the host's cost per launch never reaches the device's timeline. */
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
    double timeout_s; /* one run longer than this is a hang (a batch of n runs may take n times it) */
    double abandon_us; /* > 0: the first timed run alone, and no more when it is slower than this
                        * (a tuner's hopeless candidate: one honest sample instead of a full budget) */
    telemetry *tm;     /* NULL, or the GPU's clocks and power sampled over the timed repetitions */
    size_t l2_flush_bytes; /* > 0: that many bytes of device memory are overwritten before every
                            * run (warm-up and timed), outside the timed interval, so that no
                            * input is left in the cache by the run before (timing_flush_bytes) */
} timing_opts;

#define TELEMETRY_PERIOD_MS 10 /* one sample of the GPU's clocks and power every 10 ms */

/* How the batches are enqueued: a replayed launch graph (the default where the runtime has
 * them), runs behind the timing gate, or runs as the host enqueues them (host gaps can enter:
 * a runtime with neither). The L2 flush times each run between its own flushes and events,
 * gated. FABENCH_TIMER=graph|gated|queue asks for one (falling back as the runtime allows). */
typedef enum { TIMER_GRAPH, TIMER_GATED, TIMER_QUEUE, TIMER_INVALID } timing_mode;
timing_mode timing_mode_wanted(void);   /* FABENCH_TIMER, default graph; TIMER_INVALID if unknown */
const char *timing_mode_name(timing_mode m);

/* How the samples were taken: perf.csv's launch_us, batch_runs and timer columns. */
typedef struct {
    double launch_us; /* the host's time to enqueue one run (median over the warm-up's runs; NAN: not read) */
    int batch;        /* runs back to back in one sample (0: not timed) */
    char timer[16];   /* timing_mode_name of the mode the samples were taken in */
    long late;        /* gated batches whose gate gave up before the host opened it (left out) */
} timing_method;

/* The runs of one batch: with no L2 flush a sample is the whole batch's device time over
 * its runs (events at its two ends only), so the batch is as long as TIMING_BATCH_US allows
 * and at most TIMING_MAX_BATCH runs (within the queue depth a driver takes before it blocks
 * the host, which under a gate would wait for itself); with the flush every run is timed on
 * its own between its flushes, TIMING_MAX_FLUSHED of them a batch. */
#define TIMING_BATCH_US 1000.0
#define TIMING_MAX_BATCH 128
#define TIMING_MAX_FLUSHED 32
int timing_batch_size(double run_us, int flushed);
/* FABENCH_TIMING_BATCH=N fixes the runs a batch holds (1..TIMING_MAX_BATCH): a profiler that
 * slows the warm-up would otherwise size it to one (tools/crosscheck.sh gives it a row's
 * batch_runs). 0 when unset, -1 when not such a number. */
int timing_batch_forced(void);

void timing_defaults(timing_opts *o);
/* How much to overwrite to flush the device's cache: twice its size, at least 32 MiB (64 MiB
 * when the runtime does not say), at most a quarter of the largest buffer; a multiple of 4. */
size_t timing_flush_bytes(const rt_device_info *info);

/* Enqueues one run of the work being timed, asynchronously. When first is not NULL, *first
 * gets the event of the run's first launch; when last is not NULL, *last that of its last
 * launch (one event for both when the run is one launch: *first == *last). */
typedef int (*enqueue_fn)(void *arg, rt_event **first, rt_event **last, char *err, size_t errlen);

/* Times fn. Samples are in microseconds per run. With o->tm the repetitions (not the
 * warm-up) are watched and *tel (may be NULL) gets the summary; without it tel->samples is
 * 0. *how (may be NULL) says how the samples were taken. Returns 0, RT_ETIMEOUT or RT_ERR
 * (err filled). */
int time_device(const rt_runtime *rt, rt_ctx *ctx, enqueue_fn fn, void *arg, const timing_opts *o,
                stats_t *st, telemetry_summary *tel, timing_method *how, char *err, size_t errlen);

#endif
