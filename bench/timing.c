/* timing.c: warm-up, then gated batches of back-to-back runs timed by device events. */
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

int timing_batch_size(double run_us, int flushed)
{
    const int most = flushed ? TIMING_MAX_FLUSHED : TIMING_MAX_BATCH;
    if (!(run_us > 0)) return 1; /* unknown: one run, as slow as it may be */
    double n = floor(TIMING_BATCH_US / run_us);
    return n < 1 ? 1 : n > most ? most : (int)n;
}

/* What one timing needs besides the caller's options. */
typedef struct {
    const rt_runtime *rt;
    rt_ctx *ctx;
    enqueue_fn fn;
    void *arg;
    const timing_opts *o;
    rt_buf *flush;  /* the L2 flush buffer, or NULL */
    uint32_t runs;  /* runs enqueued so far: each flush writes another value */
    int gated;      /* the runtime's gate works here */
} timer;

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

/* One warm-up run, waited for; *run_us its device time (0 when the events say nothing). */
static int warm_run(timer *t, double *run_us, char *err, size_t errlen)
{
    rt_event *a = NULL, *b = NULL;
    int rc = enqueue_run(t, &a, &b, err, errlen);
    if (rc == 0) rc = t->rt->finish(t->ctx, t->o->timeout_s, err, errlen);
    double ms = 0;
    *run_us = rc == 0 && a && b && t->rt->elapsed_ms(t->ctx, a, b, &ms) == 0 ? ms * 1e3 : 0;
    free_pair(t->rt, a, b);
    return rc;
}

/* One batch of n runs behind the gate. Appends its samples to us (one per batch, or one per
 * run with the flush) and its host enqueue time per run to host_us; *late is set when the
 * gate gave up before the batch was enqueued (its samples are then left out). */
static int timed_batch(timer *t, int n, double *us, int *nus, double *host_us, int *late, char *err, size_t errlen)
{
    const rt_runtime *rt = t->rt;
    const int each = t->flush != NULL; /* flushes in between: every run has its own events */
    rt_event *first[TIMING_MAX_BATCH] = {0}, *last[TIMING_MAX_BATCH] = {0};
    *late = 0;
    long late0 = t->gated ? rt->gate_late(t->ctx) : 0;
    if (t->gated && rt->gate_hold(t->ctx, 1.0 + 1e-3 * n, err, errlen) != 0) {
        static int told; /* once a process: the reason is the same for every row */
        if (!told++) fprintf(stderr, "fabench: timing without a gate (host gaps can enter the times): %s\n", err);
        t->gated = 0;
        err[0] = 0;
    }
    int rc = 0, k = 0;
    const double h0 = fb_now();
    for (; k < n && rc == 0; k++)
        rc = enqueue_run(t, each || k == 0 ? &first[k] : NULL, each || k == n - 1 ? &last[k] : NULL, err, errlen);
    const double h1 = fb_now();
    if (t->gated) rt->gate_open(t->ctx);
    char e2[256];
    if (rc == 0) rc = rt->finish(t->ctx, t->o->timeout_s * n, err, errlen);
    else rt->finish(t->ctx, t->o->timeout_s * n, e2, sizeof e2); /* let what was enqueued end before freeing */
    if (rc == 0 && t->gated && rt->gate_late(t->ctx) != late0) *late = 1;
    for (int i = 0; i < k; i++) {
        double ms;
        const int timed = each ? 1 : i == 0;
        rt_event *a = first[i], *b = each ? last[i] : last[k - 1];
        if (rc == 0 && !*late && timed) {
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
    if (rc == 0 && !*late) *host_us = (h1 - h0) * 1e6 / n;
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
    /* FABENCH_NO_GATE=1: batches enqueued as the host goes (a profiler that serializes each
     * launch would otherwise wait on the gate it holds; also an A/B of the gate itself) */
    const char *nogate = getenv("FABENCH_NO_GATE");
    timer t = {.rt = rt, .ctx = ctx, .fn = fn, .arg = arg, .o = o,
               .gated = rt->gate_hold && rt->gate_open && rt->gate_late && !(nogate && !strcmp(nogate, "1"))};
    if (o->l2_flush_bytes) {
        if (!rt->fill) {
            snprintf(err, errlen, "the %s runtime cannot fill memory: no L2 flush", rt->name);
            return RT_ERR;
        }
        if ((rc = rt->alloc(ctx, o->l2_flush_bytes, &t.flush, err, errlen)) != 0) return rc;
    }
    fb_sleep(o->rest_s); /* the device idle (nothing of ours is queued before this) */
    double t0 = fb_now(), run_us = 0;
    do { /* warm-up: clocks up, caches and lazy module loading out of the way */
        if ((rc = warm_run(&t, &run_us, err, errlen)) != 0) goto out;
    } while (fb_now() - t0 < o->warmup_s);

    const int cap = o->max_reps > 0 ? o->max_reps : 1;
    const int batch = timing_batch_size(run_us, t.flush != NULL);
    double *us = malloc(sizeof(double) * (size_t)(cap + TIMING_MAX_FLUSHED));
    double *host = malloc(sizeof(double) * (size_t)(cap + TIMING_MAX_FLUSHED));
    if (!us || !host) { free(us); free(host); snprintf(err, errlen, "out of memory"); rc = RT_ERR; goto out; }
    int n = 0, nhost = 0, late_run = 0;
    telemetry_begin(o->tm, TELEMETRY_PERIOD_MS); /* (a window that cannot start reads as none) */
    t0 = fb_now();
    while (n < cap && (n < o->min_reps || fb_now() - t0 < o->budget_s)) {
        /* a tuner's hopeless candidate: one honest run first, and no more when it is too slow */
        const int k = n == 0 && o->abandon_us > 0 ? 1 : batch;
        int late = 0;
        double h = NAN;
        if ((rc = timed_batch(&t, k, us, &n, &h, &late, err, errlen)) != 0) break;
        if (late) {
            how->late++;
            if (++late_run >= 3) { /* the host cannot keep up with its own gate: time without it */
                fprintf(stderr, "fabench: the timing gate gave up %d times running; timing without it\n", late_run);
                t.gated = 0;
            }
            continue;
        }
        late_run = 0;
        host[nhost++] = h;
        if (n == 1 && o->abandon_us > 0 && us[0] > o->abandon_us) break;
    }
    telemetry_end(o->tm, tel);
    if (rc == 0) {
        rc = stats_compute_times(us, (size_t)n, st) == 0 ? 0 : RT_ERR;
        if (rc) snprintf(err, errlen, "no valid timing samples");
    }
    if (rc == 0) {
        how->launch_us = nhost ? stats_percentile(host, (size_t)nhost, 50) : NAN;
        how->batch = batch;
        snprintf(how->timer, sizeof how->timer, "%s", t.gated ? "gated" : "queue");
    }
    free(us);
    free(host);
out:
    /* (after a timeout the device may still run: the buffer is left to the context) */
    if (t.flush && rc != RT_ETIMEOUT) rt->buf_free(t.flush);
    return rc;
}
