/* timing.c: warm-up, then batches of back-to-back runs (a replayed launch graph where the
 * runtime has one, else gated) timed by device events at their ends. */
#include "timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

void timing_defaults(timing_opts *o)
{
    o->rest_s = 0;
    o->warmup_s = 0.05;
    o->budget_s = 0.3;
    o->min_reps = 5;
    o->max_reps = 1000;
    o->timeout_s = 60;
    o->abandon_us = 0;
    o->tm = NULL;
    o->l2_flush_bytes = 0;
}

size_t timing_flush_bytes(const rt_device_info *info)
{
    size_t n = info->l2_bytes ? 2 * info->l2_bytes : (size_t)64 << 20;
    if (n < ((size_t)32 << 20)) n = (size_t)32 << 20;
    if (info->max_alloc_bytes && n > info->max_alloc_bytes / 4) n = info->max_alloc_bytes / 4;
    return n / 4 * 4;
}

int timing_batch_forced(void)
{
    const char *v = getenv("FABENCH_TIMING_BATCH");
    if (!v || !*v) return 0;
    char *end;
    long n = strtol(v, &end, 10);
    return *end || n < 1 || n > TIMING_MAX_BATCH ? -1 : (int)n;
}

int timing_batch_size(double run_us, int flushed)
{
    const int most = flushed ? TIMING_MAX_FLUSHED : TIMING_MAX_BATCH;
    const int forced = timing_batch_forced();
    if (forced > 0) return forced < most ? forced : most;
    if (!(run_us > 0)) return 1; /* unknown: one run, as slow as it may be */
    double n = floor(TIMING_BATCH_US / run_us);
    return n < 1 ? 1 : n > most ? most : (int)n;
}

timing_mode timing_mode_wanted(void)
{
    const char *v = getenv("FABENCH_TIMER");
    if (!v || !*v || !strcmp(v, "graph")) return TIMER_GRAPH;
    if (!strcmp(v, "gated")) return TIMER_GATED;
    if (!strcmp(v, "queue")) return TIMER_QUEUE;
    return TIMER_INVALID;
}

const char *timing_mode_name(timing_mode m)
{
    return m == TIMER_GRAPH ? "graph" : m == TIMER_GATED ? "gated" : m == TIMER_QUEUE ? "queue" : "?";
}

/* What one timing needs besides the caller's options. */
typedef struct {
    const rt_runtime *rt;
    rt_ctx *ctx;
    enqueue_fn fn;
    void *arg;
    const timing_opts *o;
    rt_buf *flush;    /* the L2 flush buffer, or NULL */
    uint32_t runs;    /* runs enqueued so far: each flush writes another value */
    timing_mode mode; /* how the timed batches are enqueued (falls back as things fail) */
    rt_graph *graph;  /* TIMER_GRAPH: the batch, captured */
} timer;

/* Says once a process why the timer fell back (the reason is the same for every row);
 * why NULL: the runtime has no such thing, which is no news. */
static void fall_back(timer *t, timing_mode to, const char *why)
{
    static int told[3];
    if (why && !told[t->mode]++)
        fprintf(stderr, "fabench: timing with %s batches instead of %s ones: %s\n", timing_mode_name(to),
                timing_mode_name(t->mode), why);
    t->mode = to;
}

/* With the flush: overwrite the flush buffer, then enqueue the run. */
static int enqueue_run(timer *t, rt_event **first, rt_event **last, char *err, size_t errlen)
{
    if (t->flush) {
        int rc = t->rt->fill(t->ctx, t->flush, t->o->l2_flush_bytes, 0x9e3779b9u * (t->runs + 1), err, errlen);
        if (rc != 0) return rc;
    }
    t->runs++;
    return t->fn(t->arg, first, last, err, errlen);
}

static void free_pair(const rt_runtime *rt, rt_event *first, rt_event *last)
{
    if (last && last != first) rt->event_free(last);
    if (first) rt->event_free(first);
}

/* One warm-up run, waited for: *host_us the host's time to enqueue it and, with run_us,
 * *run_us its device time (0 when the events say nothing; without run_us no events are
 * made, so that the host's time is the launch's alone). */
static int warm_run(timer *t, double *run_us, double *host_us, char *err, size_t errlen)
{
    rt_event *a = NULL, *b = NULL;
    const double h0 = fb_now();
    int rc = enqueue_run(t, run_us ? &a : NULL, run_us ? &b : NULL, err, errlen);
    *host_us = (fb_now() - h0) * 1e6;
    if (rc == 0) rc = t->rt->finish(t->ctx, t->o->timeout_s, err, errlen);
    double ms = 0;
    if (run_us) *run_us = rc == 0 && a && b && t->rt->elapsed_ms(t->ctx, a, b, &ms) == 0 ? ms * 1e3 : 0;
    free_pair(t->rt, a, b);
    return rc;
}

/* TIMER_GRAPH: n runs captured into one graph and replayed once to check it. A capture that
 * fails leaves the timer on gated batches. Returns nonzero only for a failure of the device. */
static int capture_batch(timer *t, int n, char *err, size_t errlen)
{
    const rt_runtime *rt = t->rt;
    char why[FB_ERRLEN] = "";
    if (!rt->capture_begin || !rt->capture_end || !rt->graph_launch || !rt->mark) {
        fall_back(t, TIMER_GATED, NULL); /* (OpenCL, HIP) */
        return 0;
    }
    if (rt->capture_begin(t->ctx, why, sizeof why) != 0) {
        fall_back(t, TIMER_GATED, why);
        return 0;
    }
    int rc = 0;
    for (int k = 0; k < n && rc == 0; k++) rc = t->fn(t->arg, NULL, NULL, why, sizeof why);
    char e2[FB_ERRLEN] = "";
    if (rt->capture_end(t->ctx, &t->graph, e2, sizeof e2) != 0 || rc != 0) {
        if (t->graph) rt->graph_free(t->graph);
        t->graph = NULL;
        fall_back(t, TIMER_GATED, rc != 0 ? why : e2);
        return 0;
    }
    t->runs += (uint32_t)n;
    if ((rc = rt->graph_launch(t->ctx, t->graph, err, errlen)) == 0) rc = rt->finish(t->ctx, t->o->timeout_s * n, err, errlen);
    return rc;
}

/* One sample of a replayed graph of n runs: its device time over n. */
static int graph_sample(timer *t, int n, double *us, int *nus, char *err, size_t errlen)
{
    const rt_runtime *rt = t->rt;
    rt_event *a = NULL, *b = NULL;
    int rc = rt->mark(t->ctx, &a, err, errlen);
    if (rc == 0) rc = rt->graph_launch(t->ctx, t->graph, err, errlen);
    if (rc == 0) rc = rt->mark(t->ctx, &b, err, errlen);
    if (rc == 0) rc = rt->finish(t->ctx, t->o->timeout_s * n, err, errlen);
    double ms;
    if (rc == 0 && rt->elapsed_ms(t->ctx, a, b, &ms) != 0) {
        snprintf(err, errlen, "reading event times failed");
        rc = RT_ERR;
    }
    if (rc == 0) us[(*nus)++] = ms * 1e3 / n;
    if (a) rt->event_free(a);
    if (b) rt->event_free(b);
    return rc;
}

/* One batch of n runs enqueued back to back, behind the gate (TIMER_GATED) or not
 * (TIMER_QUEUE). Appends one sample (the batch's time over n), or one per run with the
 * flush, whose runs are timed each between its own events; *late is set when the gate gave
 * up before the batch was enqueued (its samples are then left out). */
static int enqueued_batch(timer *t, int n, double *us, int *nus, int *late, char *err, size_t errlen)
{
    const rt_runtime *rt = t->rt;
    const int each = t->flush != NULL; /* flushes in between: every run has its own events */
    rt_event *first[TIMING_MAX_BATCH] = {0}, *last[TIMING_MAX_BATCH] = {0};
    *late = 0;
    if (t->mode == TIMER_GATED && (!rt->gate_hold || !rt->gate_open || !rt->gate_late))
        fall_back(t, TIMER_QUEUE, NULL);
    const int gated = t->mode == TIMER_GATED;
    long late0 = gated ? rt->gate_late(t->ctx) : 0;
    char why[FB_ERRLEN];
    if (gated && rt->gate_hold(t->ctx, 1.0 + 1e-3 * n, why, sizeof why) != 0) {
        fall_back(t, TIMER_QUEUE, why);
        return enqueued_batch(t, n, us, nus, late, err, errlen);
    }
    int rc = 0, k = 0;
    for (; k < n && rc == 0; k++)
        rc = enqueue_run(t, each || k == 0 ? &first[k] : NULL, each || k == n - 1 ? &last[k] : NULL, err, errlen);
    if (gated) rt->gate_open(t->ctx);
    char e2[256];
    if (rc == 0) rc = rt->finish(t->ctx, t->o->timeout_s * n, err, errlen);
    else rt->finish(t->ctx, t->o->timeout_s * n, e2, sizeof e2); /* let what was enqueued end before freeing */
    if (rc == 0 && gated && rt->gate_late(t->ctx) != late0) *late = 1;
    for (int i = 0; i < k; i++) {
        double ms;
        rt_event *a = first[i], *b = each ? last[i] : last[k - 1];
        if (rc == 0 && !*late && (each || i == 0)) {
            if (rt->elapsed_ms(t->ctx, a, b, &ms) != 0) {
                snprintf(err, errlen, "reading event times failed");
                rc = RT_ERR;
            } else {
                us[(*nus)++] = ms * 1e3 / (each ? 1 : n);
            }
        }
        free_pair(rt, first[i], each ? last[i] : NULL);
    }
    if (!each && k > 0 && last[k - 1] && last[k - 1] != first[0]) rt->event_free(last[k - 1]);
    return rc;
}

/* One timed sample (or several, flushed) of k runs in the timer's mode. */
static int timed_sample(timer *t, int k, double *us, int *nus, long *late_total, int *late_run, char *err,
                        size_t errlen)
{
    if (t->mode == TIMER_GRAPH) return graph_sample(t, k, us, nus, err, errlen);
    int late = 0;
    int rc = enqueued_batch(t, k, us, nus, &late, err, errlen);
    if (rc == 0 && late) {
        ++*late_total;
        if (++*late_run >= 3) fall_back(t, TIMER_QUEUE, "the gate gave up three batches running");
    } else {
        *late_run = 0;
    }
    return rc;
}

int time_device(const rt_runtime *rt, rt_ctx *ctx, enqueue_fn fn, void *arg, const timing_opts *o,
                stats_t *st, telemetry_summary *tel, timing_method *how, char *err, size_t errlen)
{
    int rc;
    telemetry_summary none;
    timing_method unused;
    if (!tel) tel = &none;
    if (!how) how = &unused;
    telemetry_none(tel);
    how->launch_us = NAN;
    how->batch = 0;
    how->late = 0;
    timer t = {.rt = rt, .ctx = ctx, .fn = fn, .arg = arg, .o = o, .mode = timing_mode_wanted()};
    if (t.mode == TIMER_INVALID) {
        snprintf(err, errlen, "FABENCH_TIMER='%s': graph, gated or queue", getenv("FABENCH_TIMER"));
        return RT_ERR;
    }
    if (o->l2_flush_bytes) {
        if (!rt->fill) {
            snprintf(err, errlen, "the %s runtime cannot fill memory: no L2 flush", rt->name);
            return RT_ERR;
        }
        if ((rc = rt->alloc(ctx, o->l2_flush_bytes, &t.flush, err, errlen)) != 0) return rc;
        if (t.mode == TIMER_GRAPH) t.mode = TIMER_GATED; /* each run between its own flushes and events */
    }
    fb_sleep(o->rest_s); /* the device idle (nothing of ours is queued before this) */
    const int cap = o->max_reps > 0 ? o->max_reps : 1;
    double *us = malloc(sizeof(double) * (size_t)(cap + TIMING_MAX_FLUSHED));
    double *host = malloc(sizeof(double) * (size_t)(cap + 1));
    int n = 0, nhost = 0, batch = 1;
    if (!us || !host) { snprintf(err, errlen, "out of memory"); rc = RT_ERR; goto out; }
    double t0 = fb_now(), run_us = 0, h;
    do { /* warm-up: clocks up, caches and lazy module loading out of the way; the host's
          * enqueue time per run is read here, once the module is loaded */
        if ((rc = warm_run(&t, NULL, &host[nhost], err, errlen)) != 0) goto out;
        if (nhost < cap) nhost++;
    } while (fb_now() - t0 < o->warmup_s);
    if ((rc = warm_run(&t, &run_us, &h, err, errlen)) != 0) goto out; /* a warm run's device time */
    batch = timing_batch_size(run_us, t.flush != NULL);
    if (t.mode == TIMER_GRAPH && (rc = capture_batch(&t, batch, err, errlen)) != 0) goto out;

    long late = 0;
    int late_run = 0;
    telemetry_begin(o->tm, TELEMETRY_PERIOD_MS); /* (a window that cannot start reads as none) */
    t0 = fb_now();
    while (n < cap && (n < o->min_reps || fb_now() - t0 < o->budget_s)) {
        /* a tuner's hopeless candidate: one honest run first, and no more when it is too slow */
        const int first_alone = n == 0 && o->abandon_us > 0 && t.mode != TIMER_GRAPH;
        if ((rc = timed_sample(&t, first_alone ? 1 : batch, us, &n, &late, &late_run, err, errlen)) != 0) break;
        if (n == 1 && o->abandon_us > 0 && us[0] > o->abandon_us) break;
    }
    telemetry_end(o->tm, tel);
    how->late = late;
    if (rc == 0) {
        rc = stats_compute_times(us, (size_t)n, st) == 0 ? 0 : RT_ERR;
        if (rc) snprintf(err, errlen, "no valid timing samples");
    }
    if (rc == 0) {
        /* the warm-up's first run loads and settles; the rest say what a launch costs the host */
        how->launch_us = stats_percentile(host + (nhost > 1), (size_t)(nhost - (nhost > 1)), 50);
        how->batch = batch;
        snprintf(how->timer, sizeof how->timer, "%s", timing_mode_name(t.mode));
    }
out:
    free(us);
    free(host);
    /* (after a timeout the device may still run: the graph and the buffer are left to the context) */
    if (t.graph && rc != RT_ETIMEOUT) rt->graph_free(t.graph);
    if (t.flush && rc != RT_ETIMEOUT) rt->buf_free(t.flush);
    return rc;
}
