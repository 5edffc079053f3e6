/* timing.c: warm-up and event-timed repetitions of one piece of device work. */
#include "timing.h"

#include <stdio.h>
#include <stdlib.h>

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

/* With o->l2_flush_bytes: the flush before run number `n`, then the run. */
static int run_once(const rt_runtime *rt, rt_ctx *ctx, enqueue_fn fn, void *arg, const timing_opts *o, rt_buf *flush,
                    uint32_t n, rt_event **first, rt_event **last, char *err, size_t errlen)
{
    if (flush) {
        int rc = rt->fill(ctx, flush, o->l2_flush_bytes, 0x9e3779b9u * (n + 1), err, errlen);
        if (rc != 0) return rc;
    }
    return fn(arg, first, last, err, errlen);
}

#define BATCH 8

int time_device(const rt_runtime *rt, rt_ctx *ctx, enqueue_fn fn, void *arg, const timing_opts *o,
                stats_t *st, telemetry_summary *tel, char *err, size_t errlen)
{
    int rc;
    telemetry_summary none;
    if (!tel) tel = &none;
    telemetry_none(tel);
    rt_buf *flush = NULL;
    uint32_t runs = 0;
    if (o->l2_flush_bytes) {
        if (!rt->fill) {
            snprintf(err, errlen, "the %s runtime cannot fill memory: no L2 flush", rt->name);
            return RT_ERR;
        }
        if ((rc = rt->alloc(ctx, o->l2_flush_bytes, &flush, err, errlen)) != 0) return rc;
    }
    fb_sleep(o->rest_s); /* the device idle (nothing of ours is queued before this) */
    double t0 = fb_now();
    do { /* warm-up: clocks up, caches and lazy module loading out of the way */
        rt_event *a = NULL, *b = NULL;
        if ((rc = run_once(rt, ctx, fn, arg, o, flush, runs++, &a, &b, err, errlen)) != 0) goto out;
        rc = rt->finish(ctx, o->timeout_s, err, errlen);
        if (a != b) rt->event_free(b);
        rt->event_free(a);
        if (rc != 0) goto out;
    } while (fb_now() - t0 < o->warmup_s);

    int cap = o->max_reps > 0 ? o->max_reps : 1;
    double *us = malloc(sizeof(double) * (size_t)cap);
    if (!us) { snprintf(err, errlen, "out of memory"); rc = RT_ERR; goto out; }
    int n = 0;
    telemetry_begin(o->tm, TELEMETRY_PERIOD_MS); /* (a window that cannot start reads as none) */
    t0 = fb_now();
    while (n < cap && (n < o->min_reps || fb_now() - t0 < o->budget_s)) {
        rt_event *first[BATCH] = {0}, *last[BATCH] = {0};
        int k = 0;
        rc = 0;
        const int batch = n == 0 && o->abandon_us > 0 ? 1 : BATCH;
        for (; k < batch && n + k < cap; k++)
            if ((rc = run_once(rt, ctx, fn, arg, o, flush, runs++, &first[k], &last[k], err, errlen)) != 0) break;
        if (rc == 0) rc = rt->finish(ctx, o->timeout_s, err, errlen);
        else if (k > 0) {
            char e2[256]; /* a launch failed mid-batch: let the earlier ones finish before freeing */
            rt->finish(ctx, o->timeout_s, e2, sizeof e2);
        }
        for (int i = 0; i < k; i++) {
            double ms;
            if (rc == 0 && rt->elapsed_ms(ctx, first[i], last[i], &ms) != 0) {
                snprintf(err, errlen, "reading event times failed");
                rc = RT_ERR;
            }
            if (rc == 0) us[n++] = ms * 1e3;
            if (last[i] != first[i]) rt->event_free(last[i]);
            rt->event_free(first[i]);
        }
        if (rc != 0) {
            telemetry_end(o->tm, tel);
            free(us);
            goto out;
        }
        if (n == 1 && o->abandon_us > 0 && us[0] > o->abandon_us) break;
    }
    telemetry_end(o->tm, tel);
    rc = stats_compute_times(us, (size_t)n, st) == 0 ? 0 : RT_ERR;
    if (rc) snprintf(err, errlen, "no valid timing samples");
    free(us);
out:
    /* (after a timeout the device may still run: the buffer is left to the context) */
    if (flush && rc != RT_ETIMEOUT) rt->buf_free(flush);
    return rc;
}
