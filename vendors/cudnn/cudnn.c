/* cudnn.c: the cuDNN vendor: cuDNN's fused flash-attention forward (cudnn_graph.c) on the
 * harness's inputs, with device memory, a stream and event timing through the CUDA driver API
 * (libcuda.so.1, dlopen'd like bench/rt/cuda.c) on the device's primary context, which
 * cuDNN's runtime then shares. One execution plan per shape and dtype, cached for the session.
 * FABENCH_CUDNN_DEBUG=1 prints every cuDNN backend call and driver call on stderr. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../vendor.h"
#include "refcheck.h"
#include "cudnn_graph.h"
#include "cudnn_pad.h"

/* ---- the driver API calls used here (values as in cuda.h) ---- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_ILLEGAL_ADDRESS 700
#define CUDA_ERROR_LAUNCH_TIMEOUT 702
#define CUDA_ERROR_ASSERT 710
#define CUDA_ERROR_HARDWARE_STACK_ERROR 714
#define CUDA_ERROR_LAUNCH_FAILED 719
#define CU_STREAM_NON_BLOCKING 1
#define CU_EVENT_DEFAULT 0

#define DRV_API(X)                                                                                 \
    X(cuInit, "cuInit", (unsigned int), 1)                                                         \
    X(cuDriverGetVersion, "cuDriverGetVersion", (int *), 1)                                        \
    X(cuGetErrorName, "cuGetErrorName", (CUresult, const char **), 1)                              \
    X(cuGetErrorString, "cuGetErrorString", (CUresult, const char **), 1)                          \
    X(cuDeviceGet, "cuDeviceGet", (CUdevice *, int), 1)                                            \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *, CUdevice), 1)            \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice), 1)                    \
    X(cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext), 1)                                          \
    X(cuStreamCreate, "cuStreamCreate", (CUstream *, unsigned int), 1)                             \
    X(cuStreamDestroy, "cuStreamDestroy_v2", (CUstream), 1)                                        \
    X(cuStreamQuery, "cuStreamQuery", (CUstream), 1)                                               \
    X(cuStreamSynchronize, "cuStreamSynchronize", (CUstream), 1)                                   \
    X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr *, size_t), 1)                                     \
    X(cuMemFree, "cuMemFree_v2", (CUdeviceptr), 1)                                                 \
    X(cuMemsetD32Async, "cuMemsetD32Async", (CUdeviceptr, unsigned int, size_t, CUstream), 0)     \
    X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", (CUdeviceptr, const void *, size_t, CUstream), 1) \
    X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", (void *, CUdeviceptr, size_t, CUstream), 1)       \
    X(cuEventCreate, "cuEventCreate", (CUevent *, unsigned int), 1)                                \
    X(cuEventRecord, "cuEventRecord", (CUevent, CUstream), 1)                                      \
    X(cuEventDestroy, "cuEventDestroy_v2", (CUevent), 1)                                           \
    X(cuEventElapsedTime_v2, "cuEventElapsedTime_v2", (float *, CUevent, CUevent), 0)              \
    X(cuEventElapsedTime, "cuEventElapsedTime", (float *, CUevent, CUevent), 0)

#define X_TYPEDEF(m, sym, params, req) typedef CUresult(*m##_fn) params;
DRV_API(X_TYPEDEF)
#undef X_TYPEDEF

/* the driver's entry points: filled on the first open, read-only afterwards */
static struct {
    int tried, ok;
    char why[384];
    void *lib;
#define X_MEMBER(m, sym, params, req) m##_fn m;
    DRV_API(X_MEMBER)
#undef X_MEMBER
} drv;

static int drv_load(char *why, size_t wlen)
{
    if (!drv.tried) {
        drv.tried = 1;
        const char *names[] = {"libcuda.so.1", "libcuda.so"};
        char dlerr[256] = "";
        for (int i = 0; i < 2 && !drv.lib; i++) {
            drv.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
            if (!drv.lib && !dlerr[0]) snprintf(dlerr, sizeof dlerr, "%s", dlerror());
        }
        if (!drv.lib) {
            snprintf(drv.why, sizeof drv.why, "libcuda.so.1 not found (no NVIDIA driver): %s", dlerr);
        } else {
            drv.ok = 1;
#define X_LOAD(m, sym, params, req)                                                             \
    drv.m = (m##_fn)dlsym(drv.lib, sym);                                                        \
    if (!drv.m && req && drv.ok) {                                                              \
        snprintf(drv.why, sizeof drv.why, "libcuda.so.1 lacks %s (driver older than CUDA 11?)", sym); \
        drv.ok = 0;                                                                             \
    }
            DRV_API(X_LOAD)
#undef X_LOAD
            if (drv.ok && !drv.cuEventElapsedTime_v2 && !drv.cuEventElapsedTime) {
                snprintf(drv.why, sizeof drv.why, "libcuda.so.1 has no cuEventElapsedTime");
                drv.ok = 0;
            }
        }
    }
    if (!drv.ok) snprintf(why, wlen, "%s", drv.why);
    return drv.ok ? 0 : -1;
}

static const char *cu_str(CUresult r, char *buf, size_t len)
{
    const char *name = NULL, *s = NULL;
    if (drv.cuGetErrorName && drv.cuGetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
    if (drv.cuGetErrorString && drv.cuGetErrorString(r, &s) != CUDA_SUCCESS) s = NULL;
    if (name && s) snprintf(buf, len, "%s (%s)", name, s);
    else snprintf(buf, len, "CUDA error %d", r);
    return buf;
}

/* errors after which this process cannot use the device again */
static int cu_sticky(CUresult r)
{
    return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_TIMEOUT || r == CUDA_ERROR_ASSERT ||
           (r >= CUDA_ERROR_HARDWARE_STACK_ERROR && r <= CUDA_ERROR_LAUNCH_FAILED);
}

/* ---- the session ---- */

typedef struct plan_entry {
    int b, hq, hkv, sq, skv, d, causal, padded, page;
    dtype_t dt;
    status_t status;          /* ST_OK, or why there is no plan */
    char why[512];
    fbdnn_graph g;
    fbdnn_plan pl;
    int heur_configs, fallback_configs; /* offered by heuristics mode A, fallback (-1: not asked) */
    char config[384]; /* the plan's description: its longest form fits (knobs are cut at 120) */
    long configs;
    struct plan_entry *next;
} plan_entry;

struct vendor_session {
    const fbdnn_lib *L;
    int debug, hung;
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    fbdnn_handle h;
    CUdeviceptr ws;
    size_t ws_bytes;
    plan_entry *plans;
    const char *impls[2];
};

static const char CONFIGS_METHOD[] = "cudnn heuristics mode A engine configs offered for this graph";

static void dbg(const vendor_session *vs, const char *fmt, ...)
{
    if (!vs->debug) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("[cudnn] ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Runs a driver call; in debug mode prints it. Evaluates to its CUresult. */
#define DRV(vs, call, ...)                                                                          \
    drv_logged((vs), #call, drv.call(__VA_ARGS__))
static CUresult drv_logged(const vendor_session *vs, const char *what, CUresult r)
{
    if (vs && vs->debug) {
        char d[256];
        fprintf(stderr, "[cudnn] driver %s -> %s\n", what, r == CUDA_SUCCESS ? "CUDA_SUCCESS" : cu_str(r, d, sizeof d));
    }
    return r;
}

static const char *const *cudnn_impls(vendor_session *vs) { return vs->impls; }

static void plan_free(vendor_session *vs, plan_entry *e)
{
    (void)vs;
    fbdnn_graph_free(&e->g);
    free(e);
}

static void cudnn_close(vendor_session *vs)
{
    if (!vs) return;
    if (!vs->hung && drv.cuCtxSetCurrent(vs->ctx) == CUDA_SUCCESS) {
        drv.cuStreamSynchronize(vs->stream);
        for (plan_entry *e = vs->plans, *n; e; e = n) { n = e->next; plan_free(vs, e); }
        vs->plans = NULL;
        if (vs->h) vs->L->cudnnDestroy(vs->h);
        if (vs->ws) drv.cuMemFree(vs->ws);
        drv.cuStreamDestroy(vs->stream);
        drv.cuDevicePrimaryCtxRelease(vs->dev);
    }
    /* a hung device keeps its memory and context: touching them would hang here too */
    free(vs);
}

static int cudnn_open(const rt_device *dev, vendor_session **out, char *versions, size_t vlen, char *why, size_t wlen)
{
    if (strcmp(dev->rt->name, "cuda") != 0) {
        snprintf(why, wlen, "cuDNN runs on NVIDIA GPUs through CUDA; pick the GPU's cuda device, not %s", dev->rt->name);
        return -1;
    }
    const fbdnn_lib *L;
    if (drv_load(why, wlen) != 0 || fbdnn_load(&L, why, wlen) != 0) return -1;
    vendor_session *vs = calloc(1, sizeof *vs);
    if (!vs) { snprintf(why, wlen, "out of memory"); return -1; }
    vs->L = L;
    vs->debug = L->debug;
    vs->impls[0] = "cudnn";
    char d[256];
    CUresult r;
    dbg(vs, "libcudnn %s, cudnnGetVersion %zu, device %s (%s:%d)", L->path, L->version, dev->info.name, dev->rt->name,
        dev->index);
    if ((r = DRV(vs, cuInit, 0)) != CUDA_SUCCESS || (r = DRV(vs, cuDeviceGet, &vs->dev, dev->index)) != CUDA_SUCCESS) {
        snprintf(why, wlen, "CUDA device %d: %s", dev->index, cu_str(r, d, sizeof d));
        free(vs);
        return -1;
    }
    if ((r = DRV(vs, cuDevicePrimaryCtxRetain, &vs->ctx, vs->dev)) != CUDA_SUCCESS) {
        snprintf(why, wlen, "cuDevicePrimaryCtxRetain: %s", cu_str(r, d, sizeof d));
        free(vs);
        return -1;
    }
    if ((r = DRV(vs, cuCtxSetCurrent, vs->ctx)) != CUDA_SUCCESS ||
        (r = DRV(vs, cuStreamCreate, &vs->stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
        snprintf(why, wlen, "cuCtxSetCurrent/cuStreamCreate: %s", cu_str(r, d, sizeof d));
        drv.cuDevicePrimaryCtxRelease(vs->dev);
        free(vs);
        return -1;
    }
    const char *failed = "cudnnCreate";
    int st = L->cudnnCreate(&vs->h);
    if (st != CUDNN_STATUS_SUCCESS) vs->h = NULL;
    if (vs->debug) { fbdnn_describe(L, st, d, sizeof d); dbg(vs, "cudnnCreate -> %s", st ? d : "CUDNN_STATUS_SUCCESS"); }
    if (st == CUDNN_STATUS_SUCCESS) {
        failed = "cudnnSetStream";
        st = L->cudnnSetStream(vs->h, vs->stream);
        if (vs->debug) { fbdnn_describe(L, st, d, sizeof d); dbg(vs, "cudnnSetStream -> %s", st ? d : "CUDNN_STATUS_SUCCESS"); }
    }
    if (st != CUDNN_STATUS_SUCCESS) {
        int drvv = 0;
        drv.cuDriverGetVersion(&drvv);
        fbdnn_describe(L, st, d, sizeof d);
        snprintf(why, wlen, "%s cannot start on this device (CUDA driver %d.%d): %s: %s", L->path, drvv / 1000,
                 (drvv % 1000) / 10, failed, d);
        cudnn_close(vs);
        return -1;
    }
    const char *dp_out = getenv("FABENCH_CUDNN_DEVICEPROP_OUT");
    if (dp_out && dp_out[0]) { /* for plans built without a GPU later: a record, never a failure */
        char *json = NULL, e[512] = "";
        FILE *f = NULL;
        if (fbdnn_deviceprop_json(L, vs->h, &json, e, sizeof e) == 0 && (f = fopen(dp_out, "w")) != NULL) {
            fputs(json, f);
            if (fclose(f) != 0) snprintf(e, sizeof e, "cannot write %s", dp_out);
        } else if (json) {
            snprintf(e, sizeof e, "cannot write %s", dp_out);
        }
        if (e[0]) fprintf(stderr, "fabench vendors: cudnn: device properties not saved: %s\n", e);
        else dbg(vs, "device properties saved to %s", dp_out);
        free(json);
    }
    size_t v = L->version;
    size_t major = v / 10000, minor = (v % 10000) / 100, patch = v % 100;
    size_t rtv = L->cudnnGetCudartVersion ? L->cudnnGetCudartVersion() : 0;
    int o = snprintf(versions, vlen, "cudnn=%zu.%zu.%zu cudnn_version=%zu", major, minor, patch, v);
    if (rtv && o > 0 && (size_t)o < vlen) o += snprintf(versions + o, vlen - (size_t)o, " cudnn_cudart=%zu", rtv);
    if (o > 0 && (size_t)o < vlen && !strchr(L->path, ' ')) snprintf(versions + o, vlen - (size_t)o, " cudnn_lib=%s", L->path);
    *out = vs;
    return 0;
}

/* ---- plans ---- */

static int stats_variants(int out[2])
{
    const char *e = getenv("FABENCH_CUDNN_STATS");
    if (e && !strcmp(e, "real")) { out[0] = 1; return 1; }
    if (e && !strcmp(e, "virtual")) { out[0] = 0; return 1; }
    out[0] = 0; /* inference: the statistics stay inside the kernel, as in cudnn-frontend */
    out[1] = 1; /* some engines want them written */
    return 2;
}

/* The first engine config of heuristics mode A, then of fallback mode, that finalizes into a
 * plan: 0 with pl; 1 when none does (why); -1 on other failures (why). *heur and *fallback get
 * the counts offered (*fallback -1 when not asked). */
static int plan_first(fbdnn_graph *g, fbdnn_handle h, fbdnn_plan *pl, int *heur, int *fallback, char *why, size_t wlen)
{
    static const int modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
    static const char *const names[2] = {"a", "fallback"};
    char last[2][400] = {"", ""};
    *heur = 0;
    *fallback = -1;
    for (int m = 0; m < 2; m++) {
        fbdnn_desc *cfgs = NULL;
        int n = 0;
        int rc = fbdnn_heur_configs(g, modes[m], &cfgs, &n, last[m], sizeof last[m]);
        if (rc < 0) {
            snprintf(why, wlen, "%.399s", last[m]);
            return -1;
        }
        if (m == 0) *heur = n;
        else *fallback = n;
        for (int i = 0; i < n; i++)
            if (fbdnn_plan_make(g, h, cfgs[i], names[m], i, pl, last[m], sizeof last[m]) == 0) {
                free(cfgs);
                return 0;
            }
        free(cfgs);
    }
    snprintf(why, wlen, "no engine config finalized (heuristics mode A offered %d%s%.200s; fallback offered %d%s%.200s)",
             *heur, last[0][0] ? ", last: " : "", last[0], *fallback, last[1][0] ? ", last: " : "", last[1]);
    return 1;
}

/* The entry for (s, dt), built on first use: ST_OK with a plan, or the status and reason why not. */
static plan_entry *plan_get(vendor_session *vs, const shape_t *s, dtype_t dt)
{
    for (plan_entry *e = vs->plans; e; e = e->next)
        if (e->b == s->batch && e->hq == s->hq && e->hkv == s->hkv && e->sq == s->sq && e->skv == s->skv &&
            e->d == s->d && e->causal == s->causal && e->padded == (shape_ragged(s) || shape_paged(s)) &&
            e->page == s->page && e->dt == dt)
            return e;
    plan_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->b = s->batch; e->hq = s->hq; e->hkv = s->hkv; e->sq = s->sq; e->skv = s->skv; e->d = s->d;
    e->causal = s->causal;
    e->padded = shape_ragged(s) || shape_paged(s); /* pages need each sequence's key count */
    e->page = s->page;
    e->dt = dt;
    e->next = vs->plans;
    vs->plans = e;

    int variants[2];
    int nv = stats_variants(variants);
    char reasons[2][512] = {"", ""};
    e->status = ST_UNSUPPORTED;
    for (int i = 0; i < nv; i++) {
        fbdnn_sdpa p = {.b = s->batch, .hq = s->hq, .hkv = s->hkv, .sq = s->sq, .skv = s->skv, .d = s->d,
                        .causal = s->causal, .padded = e->padded, .page = s->page,
                        .npages = (int64_t)s->batch * shape_pages_per_seq(s),
                        .io_type = dt == DT_FP16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16,
                        .stats_real = variants[i], .scale = (float)(1.0 / sqrt((double)s->d))};
        char *why = reasons[i];
        const size_t wl = sizeof reasons[i];
        fbdnn_graph_free(&e->g);
        if (fbdnn_graph_build(vs->L, &p, &e->g, why, wl) != 0) {
            e->status = ST_LAUNCH_ERROR; /* a graph cuDNN refuses to describe is our fault, not a limit */
            continue;
        }
        int st = fbdnn_graph_finalize(&e->g, vs->h, why, wl);
        if (st != 0) {
            e->status = fbdnn_not_supported(st) ? ST_UNSUPPORTED : ST_LAUNCH_ERROR;
            continue;
        }
        int rc = plan_first(&e->g, vs->h, &e->pl, &e->heur_configs, &e->fallback_configs, why, wl);
        if (e->configs == 0 || rc == 0) e->configs = e->heur_configs;
        if (rc == 0) {
            e->status = ST_OK;
            char fb[32] = "";
            if (e->fallback_configs >= 0) snprintf(fb, sizeof fb, ";fallback_configs=%d", e->fallback_configs);
            snprintf(e->config, sizeof e->config,
                     "engine=%" PRId64 ";knobs=%.120s;heur=%s;cfg_index=%d;heur_configs=%d%s;stats=%s;mask=%s%s;ws=%" PRId64,
                     e->pl.engine, e->pl.knobs[0] ? e->pl.knobs : "none", e->pl.mode, e->pl.index, e->heur_configs, fb,
                     variants[i] ? "real" : "virtual", e->g.masked ? "bottom_right" : "none",
                     e->page ? ";layout=paged,seq_len" : e->padded ? ";layout=padded,seq_len" : "", e->pl.workspace);
            dbg(vs, "plan for %s: %s", s->name, e->config);
            return e;
        }
        e->status = rc == 1 ? ST_UNSUPPORTED : ST_LAUNCH_ERROR;
    }
    if (nv == 2)
        snprintf(e->why, sizeof e->why, "stats virtual: %.240s | stats real: %.240s", reasons[0], reasons[1]);
    else
        snprintf(e->why, sizeof e->why, "%s", reasons[0]);
    fbdnn_graph_free(&e->g);
    dbg(vs, "no plan for %s (%s): %s", s->name, status_name(e->status), e->why);
    return e;
}

/* ---- running ---- */

/* Waits for the stream, at most timeout_s: 0, 1 (timed out) or the CUDA error. */
static CUresult wait_stream(vendor_session *vs, double timeout_s, int *timed_out)
{
    *timed_out = 0;
    double t0 = fb_now();
    for (;;) {
        CUresult r = drv.cuStreamQuery(vs->stream);
        if (r != CUDA_ERROR_NOT_READY) return r;
        double dt = fb_now() - t0;
        if (timeout_s > 0 && dt > timeout_s) { *timed_out = 1; return CUDA_SUCCESS; }
        struct timespec nap = {0, dt < 0.01 ? 100000 : 1000000};
        nanosleep(&nap, NULL);
    }
}

typedef struct {
    CUdeviceptr buf[FBDNN_NDEV]; /* by FBDNN_DEV_*: Q, K, V, O, stats, seq_len_q, seq_len_kv, page table */
    fbdnn_desc vp;
    CUevent ev[16];
} run_state;

static void run_free(vendor_session *vs, plan_entry *e, run_state *rs)
{
    for (int i = 0; i < 16; i++)
        if (rs->ev[i]) drv.cuEventDestroy(rs->ev[i]);
    for (int i = 0; i < FBDNN_NDEV; i++)
        if (rs->buf[i]) drv.cuMemFree(rs->buf[i]);
    if (rs->vp) fbdnn_destroy(&e->g, rs->vp);
    (void)vs;
}

#define BATCH 8

/* Returns 0 with res filled, or -1 when the device is unusable (err). */
/* With t->l2_flush_bytes, the flush buffer is overwritten before every execution (as
 * time_device does for ours): outside the events, in the same stream. */
#define FLUSH_BEFORE(i)                                                                                    \
    if (flush && (r = drv.cuMemsetD32Async(flush, 0x9e3779b9u * (unsigned)((i) + 1), t->l2_flush_bytes / 4, \
                                           vs->stream)) != CUDA_SUCCESS)

static int timed_runs(vendor_session *vs, plan_entry *e, run_state *rs, const timing_opts *t, CUdeviceptr flush,
                      vendor_result *res, char *err, size_t errlen)
{
    char m[512], d[256];
    int to = 0;
    unsigned runs = 0;
    CUresult r = CUDA_SUCCESS;
    e->g.log_calls = vs->debug; /* the first execution is logged, repetitions are not */
    fb_sleep(t->rest_s); /* as time_device: the device idle before the warm-up */
    double t0 = fb_now();
    do {
        FLUSH_BEFORE(runs++) goto cuda_error;
        int st = fbdnn_execute(&e->g, vs->h, &e->pl, rs->vp, m, sizeof m);
        e->g.log_calls = 0;
        if (st != 0) {
            res->status = ST_LAUNCH_ERROR;
            snprintf(res->reason, sizeof res->reason, "%s", m);
            r = drv.cuStreamSynchronize(vs->stream);
            if (cu_sticky(r)) { snprintf(err, errlen, "after cudnnBackendExecute: %s", cu_str(r, d, sizeof d)); return -1; }
            return 0;
        }
        r = wait_stream(vs, t->timeout_s, &to);
        if (to) goto timeout;
        if (r != CUDA_SUCCESS) goto cuda_error;
    } while (fb_now() - t0 < t->warmup_s);

    int cap = t->max_reps > 0 ? t->max_reps : 1, n = 0;
    double *us = malloc(sizeof(double) * (size_t)cap);
    if (!us) { res->status = ST_LAUNCH_ERROR; snprintf(res->reason, sizeof res->reason, "out of memory"); return 0; }
    telemetry_begin(t->tm, TELEMETRY_PERIOD_MS); /* ended on every way out below */
    t0 = fb_now();
    while (n < cap && (n < t->min_reps || fb_now() - t0 < t->budget_s)) {
        int k = 0;
        for (; k < BATCH && n + k < cap; k++) {
            FLUSH_BEFORE(runs++) break;
            if ((r = drv.cuEventRecord(rs->ev[2 * k], vs->stream)) != CUDA_SUCCESS) break;
            int st = fbdnn_execute(&e->g, vs->h, &e->pl, rs->vp, m, sizeof m);
            if (st != 0) {
                telemetry_end(t->tm, &res->tel);
                free(us);
                res->status = ST_LAUNCH_ERROR;
                snprintf(res->reason, sizeof res->reason, "%.480s (repetition %d)", m, n + k + 1);
                drv.cuStreamSynchronize(vs->stream);
                return 0;
            }
            if ((r = drv.cuEventRecord(rs->ev[2 * k + 1], vs->stream)) != CUDA_SUCCESS) break;
        }
        if (r != CUDA_SUCCESS) { free(us); goto cuda_error; }
        r = wait_stream(vs, t->timeout_s, &to);
        if (to) { free(us); goto timeout; }
        if (r != CUDA_SUCCESS) { free(us); goto cuda_error; }
        for (int i = 0; i < k; i++) {
            float ms = 0;
            r = drv.cuEventElapsedTime_v2 ? drv.cuEventElapsedTime_v2(&ms, rs->ev[2 * i], rs->ev[2 * i + 1])
                                          : drv.cuEventElapsedTime(&ms, rs->ev[2 * i], rs->ev[2 * i + 1]);
            if (r != CUDA_SUCCESS) { free(us); goto cuda_error; }
            us[n++] = (double)ms * 1e3;
        }
    }
    telemetry_end(t->tm, &res->tel);
    res->samples_us = us;
    res->nsamples = (size_t)n;
    res->status = ST_OK;
    return 0;

timeout:
    telemetry_end(t->tm, &res->tel); /* (a no-op when the warm-up timed out: no window is open) */
    vs->hung = 1;
    res->status = ST_TIMEOUT;
    snprintf(res->reason, sizeof res->reason, "cuDNN's kernel did not finish within %.1f s", t->timeout_s);
    return 0;
cuda_error:
    telemetry_end(t->tm, &res->tel);
    drv.cuStreamSynchronize(vs->stream);
    if (cu_sticky(r)) { snprintf(err, errlen, "cuDNN's kernel failed: %s", cu_str(r, d, sizeof d)); return -1; }
    res->status = ST_LAUNCH_ERROR;
    snprintf(res->reason, sizeof res->reason, "CUDA: %s", cu_str(r, d, sizeof d));
    return 0;
}

static int cudnn_run(vendor_session *vs, const char *impl, const shape_t *s, dtype_t dt, const vendor_inputs *in,
                     void *o, const timing_opts *t, vendor_result *res, char *err, size_t errlen)
{
    (void)impl;
    memset(res, 0, sizeof *res);
    if (vs->hung) {
        res->status = ST_TIMEOUT;
        snprintf(res->reason, sizeof res->reason, "device unusable: an earlier cuDNN run never finished");
        return 0;
    }
    if (dt != DT_FP16 && dt != DT_BF16) {
        res->status = ST_UNSUPPORTED;
        snprintf(res->reason, sizeof res->reason, "cuDNN's fused flash attention takes fp16 or bf16, not %s", dtype_name(dt));
        return 0;
    }
    if (shape_paged(s) && vs->L->version < 90500) {
        res->status = ST_UNSUPPORTED;
        snprintf(res->reason, sizeof res->reason, "cuDNN %zu has no paged cache load (9.5 or newer)", vs->L->version);
        return 0;
    }
    for (int b = 0; s->causal && shape_ragged(s) && b < s->batch; b++) {
        int lq, lk;
        shape_seq_lens(s, b, &lq, &lk);
        if (lq > lk) {
            res->status = ST_UNSUPPORTED;
            snprintf(res->reason, sizeof res->reason,
                     "cuDNN's bottom-right causal mask needs each sequence's queries <= keys (sequence %d: %d > %d)", b, lq, lk);
            return 0;
        }
    }
    if (s->causal && s->sq > s->skv) {
        res->status = ST_UNSUPPORTED;
        snprintf(res->reason, sizeof res->reason,
                 "cuDNN's bottom-right causal mask needs sq <= skv (here the first %d queries see no key)", s->sq - s->skv);
        return 0;
    }
    char d[256];
    CUresult r = DRV(vs, cuCtxSetCurrent, vs->ctx);
    if (r != CUDA_SUCCESS) { snprintf(err, errlen, "cuCtxSetCurrent: %s", cu_str(r, d, sizeof d)); return -1; }
    plan_entry *e = plan_get(vs, s, dt);
    if (!e) { snprintf(err, errlen, "out of memory"); return -1; }
    res->configs_method = CONFIGS_METHOD;
    res->configs = e->configs;
    if (e->status != ST_OK) {
        res->status = e->status;
        snprintf(res->reason, sizeof res->reason, "%s", e->why);
        return 0;
    }
    snprintf(res->config, sizeof res->config, "%s", e->config);

    const size_t es = dtype_size(dt);
    const size_t nq = (size_t)s->batch * s->hq * s->sq * s->d, nkv = (size_t)s->batch * s->hkv * s->skv * s->d;
    run_state rs = {0};
    int rc = 0;
    fbdnn_padded pad = {0};
    /* O starts poisoned on the device (the caller's poisoned o, or the padded copy's), so
     * what cuDNN leaves unwritten cannot pass for stale memory that matches */
    const void *host[FBDNN_NDEV] = {in->q, in->k, in->v, o, NULL, NULL, NULL, NULL};
    res->status = ST_LAUNCH_ERROR;
    /* a ragged batch padded to [B, H, sq or skv, D], or K and V in pages, with each sequence's
     * lengths (and the block table) */
    if (e->padded && fbdnn_pad_inputs(s, es, in, 1, &pad) != 0) {
        snprintf(res->reason, sizeof res->reason, "host memory for the padded or paged batch exhausted");
        goto out;
    }
    if (e->padded) {
        host[FBDNN_DEV_Q] = pad.q;
        host[FBDNN_DEV_K] = pad.k;
        host[FBDNN_DEV_V] = pad.v;
        host[FBDNN_DEV_SEQ_Q] = pad.seq_q;
        host[FBDNN_DEV_SEQ_KV] = pad.seq_kv;
        host[FBDNN_DEV_PAGE_TABLE] = pad.bt;
        fb_poison(pad.o, nq, dt);
        host[FBDNN_DEV_O] = pad.o;
    }
    const size_t kvb = e->padded ? pad.kv_bytes : nkv * es;
    const size_t bytes[FBDNN_NDEV] = {nq * es, kvb, kvb, nq * es,
                                      e->g.p.stats_real ? (size_t)s->batch * s->hq * s->sq * sizeof(float) : 0,
                                      e->padded ? (size_t)s->batch * sizeof(int32_t) : 0,
                                      e->padded ? (size_t)s->batch * sizeof(int32_t) : 0,
                                      pad.bt ? (size_t)s->batch * shape_pages_per_seq(s) * sizeof(int32_t) : 0};
    for (int i = 0; i < FBDNN_NDEV; i++) {
        if (!bytes[i]) continue;
        if ((r = DRV(vs, cuMemAlloc, &rs.buf[i], bytes[i])) != CUDA_SUCCESS) {
            res->status = r == CUDA_ERROR_OUT_OF_MEMORY ? ST_RESOURCE_LIMIT : ST_LAUNCH_ERROR;
            snprintf(res->reason, sizeof res->reason, "cuMemAlloc(%zu bytes): %s", bytes[i], cu_str(r, d, sizeof d));
            goto out;
        }
    }
    if ((size_t)e->pl.workspace > vs->ws_bytes) {
        if (vs->ws) drv.cuMemFree(vs->ws);
        vs->ws = 0;
        vs->ws_bytes = 0;
        if ((r = DRV(vs, cuMemAlloc, &vs->ws, (size_t)e->pl.workspace)) != CUDA_SUCCESS) {
            vs->ws = 0;
            res->status = r == CUDA_ERROR_OUT_OF_MEMORY ? ST_RESOURCE_LIMIT : ST_LAUNCH_ERROR;
            snprintf(res->reason, sizeof res->reason, "cuMemAlloc(%" PRId64 " bytes of cuDNN workspace): %s",
                     e->pl.workspace, cu_str(r, d, sizeof d));
            goto out;
        }
        vs->ws_bytes = (size_t)e->pl.workspace;
    }
    for (int i = 0; i < FBDNN_NDEV; i++)
        if (host[i] && (r = DRV(vs, cuMemcpyHtoDAsync, rs.buf[i], host[i], bytes[i], vs->stream)) != CUDA_SUCCESS) break;
    if (r == CUDA_SUCCESS) r = DRV(vs, cuStreamSynchronize, vs->stream);
    if (r != CUDA_SUCCESS) {
        snprintf(res->reason, sizeof res->reason, "copying the inputs: %s", cu_str(r, d, sizeof d));
        if (cu_sticky(r)) { snprintf(err, errlen, "%s", res->reason); rc = -1; }
        goto out;
    }
    for (int i = 0; i < 16; i++)
        if ((r = drv.cuEventCreate(&rs.ev[i], CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
            rs.ev[i] = NULL;
            snprintf(res->reason, sizeof res->reason, "cuEventCreate: %s", cu_str(r, d, sizeof d));
            goto out;
        }
    void *dev[FBDNN_NDEV];
    for (int i = 0; i < FBDNN_NDEV; i++) dev[i] = (void *)(uintptr_t)rs.buf[i];
    e->g.log_calls = 1;
    if (fbdnn_variant_pack(&e->g, dev, (void *)(uintptr_t)vs->ws, &rs.vp, res->reason, sizeof res->reason) != 0) {
        rs.vp = NULL;
        goto out;
    }
    CUdeviceptr flush = 0;
    if (t->l2_flush_bytes && !drv.cuMemsetD32Async) {
        snprintf(res->reason, sizeof res->reason, "libcuda.so.1 lacks cuMemsetD32Async: no L2 flush");
        goto out;
    }
    if (t->l2_flush_bytes && (r = drv.cuMemAlloc(&flush, t->l2_flush_bytes)) != CUDA_SUCCESS) {
        res->status = r == CUDA_ERROR_OUT_OF_MEMORY ? ST_RESOURCE_LIMIT : ST_LAUNCH_ERROR;
        snprintf(res->reason, sizeof res->reason, "cuMemAlloc(%zu bytes to flush the L2): %s", t->l2_flush_bytes,
                 cu_str(r, d, sizeof d));
        goto out;
    }
    rc = timed_runs(vs, e, &rs, t, flush, res, err, errlen);
    if (flush && !vs->hung) drv.cuMemFree(flush);
    if (rc != 0 || res->status != ST_OK || vs->hung) goto out;
    r = DRV(vs, cuMemcpyDtoHAsync, e->padded ? pad.o : o, rs.buf[3], bytes[3], vs->stream);
    if (r == CUDA_SUCCESS) r = DRV(vs, cuStreamSynchronize, vs->stream);
    if (r == CUDA_SUCCESS && e->padded) fbdnn_unpad_output(s, es, &pad, o);
    if (r != CUDA_SUCCESS) {
        free(res->samples_us);
        res->samples_us = NULL;
        res->nsamples = 0;
        res->status = ST_LAUNCH_ERROR;
        snprintf(res->reason, sizeof res->reason, "copying O back: %s", cu_str(r, d, sizeof d));
        if (cu_sticky(r)) { snprintf(err, errlen, "%s", res->reason); rc = -1; }
    }
out:
    if (!vs->hung) run_free(vs, e, &rs);
    fbdnn_pad_free(&pad);
    e->g.log_calls = 1;
    return rc;
}

const vendor vendor_cudnn = {
    .name = "cudnn",
    .open = cudnn_open,
    .impls = cudnn_impls,
    .run = cudnn_run,
    .close = cudnn_close,
};
