/* cudnn.c: the cuDNN vendor: cuDNN's fused flash-attention forward (cudnn_graph.c) on the
 * harness's inputs, on the harness's own CUDA context and stream (rt "cuda" opens the device's
 * primary context, which cuDNN's runtime shares), so bench/core/timing.c times it as it times ours:
 * a captured launch graph replayed (gated batches where capture fails), events from rt->mark,
 * the L2 flush on the same stream. For each shape every
 * engine config cuDNN's heuristics offer (for graphs with the softmax statistics virtual and
 * real) is built, run once, verified by the harness and timed; the fastest verified one
 * (cudnn_search.c) is kept for the session. Device memory and copies go through the driver
 * API (libcuda.so.1, dlopen'd like bench/rt/cuda.c).
 * FABENCH_CUDNN_DEBUG=1 prints every cuDNN backend call, driver call and candidate on stderr;
 * FABENCH_CUDNN_MAX_CONFIGS (default 8) and FABENCH_CUDNN_SEARCH_S (default 30) bound a
 * shape's search; FABENCH_CUDNN_STATS=virtual|real keeps one graph only, and
 * FABENCH_CUDNN_ONLY=I the heuristics' config I alone (with STATS, one row's engine again:
 * tools/crosscheck.sh profiles that one). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../vendor.h"
#include "refcheck.h"
#include "cudnn_graph.h"
#include "cudnn_pad.h"
#include "cudnn_search.h"

/* ---- the driver API calls used here (values as in cuda.h) ---- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_ILLEGAL_ADDRESS 700
#define CUDA_ERROR_LAUNCH_TIMEOUT 702
#define CUDA_ERROR_ASSERT 710
#define CUDA_ERROR_HARDWARE_STACK_ERROR 714
#define CUDA_ERROR_LAUNCH_FAILED 719

#define DRV_API(X)                                                                                 \
    X(cuInit, "cuInit", (unsigned int), 1)                                                         \
    X(cuDriverGetVersion, "cuDriverGetVersion", (int *), 1)                                        \
    X(cuGetErrorName, "cuGetErrorName", (CUresult, const char **), 1)                              \
    X(cuGetErrorString, "cuGetErrorString", (CUresult, const char **), 1)                          \
    X(cuDeviceGet, "cuDeviceGet", (CUdevice *, int), 1)                                            \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *, CUdevice), 1)            \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice), 1)                    \
    X(cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext), 1)                                          \
    X(cuStreamSynchronize, "cuStreamSynchronize", (CUstream), 1)                                   \
    X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr *, size_t), 1)                                     \
    X(cuMemFree, "cuMemFree_v2", (CUdeviceptr), 1)                                                 \
    X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", (CUdeviceptr, const void *, size_t, CUstream), 1) \
    X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", (void *, CUdeviceptr, size_t, CUstream), 1)

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

#define MAX_GRAPHS 2 /* the softmax statistics virtual, and real */
enum { MODE_A, MODE_FALLBACK, NMODES };
static const int heur_mode[NMODES] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
static const char *const mode_name[NMODES] = {"a", "fallback"};

/* One graph of a shape and the engine configs the heuristics offered for it. */
typedef struct {
    fbdnn_graph g;             /* finalized; g.L is NULL when the graph could not be built */
    int stats_real;
    fbdnn_desc *cfgs[NMODES];  /* by heuristics mode (descriptors owned by g); NULL: none, or not asked */
    int ncfgs[NMODES];
} graph_slot;

/* One engine config of one graph: what the search builds, runs, verifies and times. */
typedef struct {
    int slot, mode, index;     /* graph, heuristics mode, position in that mode's list */
    int state;                 /* 0 not built yet, 1 built (pl), -1 refused (why) */
    fbdnn_plan pl;
    char why[320];
} candidate;

typedef struct plan_entry {
    int b, hq, hkv, sq, skv, d, causal, padded, page;
    dtype_t dt;
    status_t status;           /* ST_OK: there are candidates; else why there are none */
    char why[512];
    graph_slot gs[MAX_GRAPHS];
    int ngs;
    candidate *cand;           /* one heuristics mode's configs, the graphs' lists interleaved */
    int ncand, mode;
    long offered;              /* engine configs the heuristics offered, over the graphs and modes asked */
    int chosen;                /* the winner in cand (then cand holds it alone), -1 before a search won */
    char config[512];          /* the winner, the counts and caps, for perf.csv's config column */
    struct plan_entry *next;
} plan_entry;

struct vendor_session {
    const fbdnn_lib *L;
    const rt_runtime *rt;
    rt_ctx *ctx;               /* the harness's context on the device: its queue is cuDNN's stream */
    int debug;
    int hung;                  /* a run never finished: nothing may touch the device again */
    CUdevice dev;
    CUcontext cu;              /* the primary context (rt's and cuDNN's), current for driver calls */
    int retained;
    CUstream stream;           /* rt->native_queue(ctx): borrowed */
    fbdnn_handle h;
    CUdeviceptr ws;
    size_t ws_bytes;
    fbdnn_search_limits lim;
    int only;                  /* >= 0: the heuristics' config of this index alone (FABENCH_CUDNN_ONLY) */
    plan_entry *plans;
    const char *impls[2];
};

static const char CONFIGS_METHOD[] =
    "cudnn heuristics engine configs offered for the shape's graphs (stats virtual and real; mode A, fallback "
    "when none of A finalized)";

/* the search times candidates with at most this budget each; the row's own timing takes the caller's */
#define SEARCH_BUDGET_S 0.3
/* a candidate whose first timed run is this much slower than the best so far is not timed further */
#define SEARCH_ABANDON 1.5

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

static void graph_slot_free(graph_slot *gs)
{
    fbdnn_graph_free(&gs->g); /* the plans and configs with it */
    for (int m = 0; m < NMODES; m++) {
        free(gs->cfgs[m]);
        gs->cfgs[m] = NULL;
        gs->ncfgs[m] = 0;
    }
}

static void plan_free(plan_entry *e)
{
    for (int k = 0; k < e->ngs; k++) graph_slot_free(&e->gs[k]);
    free(e->cand);
    free(e);
}

static void cudnn_close(vendor_session *vs)
{
    if (!vs) return;
    /* a hung device keeps its memory and context: touching them would hang here too */
    if (!vs->hung && (!vs->retained || drv.cuCtxSetCurrent(vs->cu) == CUDA_SUCCESS)) {
        if (vs->stream) drv.cuStreamSynchronize(vs->stream);
        for (plan_entry *e = vs->plans, *n; e; e = n) { n = e->next; plan_free(e); }
        vs->plans = NULL;
        if (vs->h) vs->L->cudnnDestroy(vs->h);
        if (vs->ws) drv.cuMemFree(vs->ws);
        if (vs->ctx) vs->rt->close(vs->ctx);
        if (vs->retained) drv.cuDevicePrimaryCtxRelease(vs->dev);
    }
    free(vs);
}

/* A number from the environment in [lo, hi] (an integer when whole); def when unset. 0, or -1
 * with why. */
static int env_number(const char *name, double def, double lo, double hi, int whole, double *out, char *why,
                      size_t wlen)
{
    const char *e = getenv(name);
    *out = def;
    if (!e || !e[0]) return 0;
    char *end;
    double x = strtod(e, &end);
    if (*end || end == e || !(x >= lo && x <= hi) || (whole && x != floor(x))) {
        snprintf(why, wlen, "%s=%.40s: want %s from %g to %g", name, e, whole ? "an integer" : "a number", lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

static int search_limits(fbdnn_search_limits *lim, char *why, size_t wlen)
{
    double n, s;
    if (env_number("FABENCH_CUDNN_MAX_CONFIGS", 8, 0, 4096, 1, &n, why, wlen) != 0 ||
        env_number("FABENCH_CUDNN_SEARCH_S", 30, 0, 1e6, 0, &s, why, wlen) != 0)
        return -1;
    lim->max_configs = (int)n; /* 0: every config */
    lim->max_s = s;            /* 0: no time cap */
    return 0;
}

/* cuDNN's handle on the harness's stream. 0, or -1 with why. */
static int handle_create(vendor_session *vs, char *why, size_t wlen)
{
    const fbdnn_lib *L = vs->L;
    char d[256];
    const char *failed = "cudnnCreate";
    int st = L->cudnnCreate(&vs->h);
    if (st != CUDNN_STATUS_SUCCESS) vs->h = NULL;
    if (vs->debug) { fbdnn_describe(L, st, d, sizeof d); dbg(vs, "cudnnCreate -> %s", st ? d : "CUDNN_STATUS_SUCCESS"); }
    if (st == CUDNN_STATUS_SUCCESS) {
        failed = "cudnnSetStream";
        st = L->cudnnSetStream(vs->h, vs->stream);
        if (vs->debug) { fbdnn_describe(L, st, d, sizeof d); dbg(vs, "cudnnSetStream -> %s", st ? d : "CUDNN_STATUS_SUCCESS"); }
    }
    if (st == CUDNN_STATUS_SUCCESS) return 0;
    int drvv = 0;
    drv.cuDriverGetVersion(&drvv);
    fbdnn_describe(L, st, d, sizeof d);
    snprintf(why, wlen, "%s cannot start on this device (CUDA driver %d.%d): %s: %s", L->path, drvv / 1000,
             (drvv % 1000) / 10, failed, d);
    return -1;
}

/* For plans built without a GPU later: a record, never a failure. */
static void save_deviceprop(vendor_session *vs)
{
    const char *dp_out = getenv("FABENCH_CUDNN_DEVICEPROP_OUT");
    if (!dp_out || !dp_out[0]) return;
    char *json = NULL, e[512] = "";
    FILE *f = NULL;
    if (fbdnn_deviceprop_json(vs->L, vs->h, &json, e, sizeof e) == 0 && (f = fopen(dp_out, "w")) != NULL) {
        fputs(json, f);
        if (fclose(f) != 0) snprintf(e, sizeof e, "cannot write %s", dp_out);
    } else if (json) {
        snprintf(e, sizeof e, "cannot write %s", dp_out);
    }
    if (e[0]) fprintf(stderr, "fabench vendors: cudnn: device properties not saved: %s\n", e);
    else dbg(vs, "device properties saved to %s", dp_out);
    free(json);
}

static int cudnn_open(const rt_device *dev, vendor_session **out, char *versions, size_t vlen, char *why, size_t wlen)
{
    if (strcmp(dev->rt->name, "cuda") != 0) {
        snprintf(why, wlen, "cuDNN runs on NVIDIA GPUs through CUDA; pick the GPU's cuda device, not %s", dev->rt->name);
        return -1;
    }
    if (!dev->rt->native_queue || !dev->rt->mark) {
        snprintf(why, wlen, "the cuda runtime here cannot lend its stream and events (native_queue, mark) to time cuDNN");
        return -1;
    }
    const fbdnn_lib *L;
    if (drv_load(why, wlen) != 0 || fbdnn_load(&L, why, wlen) != 0) return -1;
    vendor_session *vs = calloc(1, sizeof *vs);
    if (!vs) { snprintf(why, wlen, "out of memory"); return -1; }
    vs->L = L;
    vs->rt = dev->rt;
    vs->debug = L->debug;
    vs->impls[0] = "cudnn";
    double only;
    if (search_limits(&vs->lim, why, wlen) != 0 ||
        env_number("FABENCH_CUDNN_ONLY", -1, -1, 4096, 1, &only, why, wlen) != 0) {
        free(vs);
        return -1;
    }
    vs->only = (int)only;
    char d[256], e[512];
    CUresult r;
    dbg(vs, "libcudnn %s, cudnnGetVersion %zu, device %s (%s:%d); search at most %d configs, %g s", L->path,
        L->version, dev->info.name, dev->rt->name, dev->index, vs->lim.max_configs, vs->lim.max_s);
    if ((r = DRV(vs, cuInit, 0)) != CUDA_SUCCESS || (r = DRV(vs, cuDeviceGet, &vs->dev, dev->index)) != CUDA_SUCCESS) {
        snprintf(why, wlen, "CUDA device %d: %s", dev->index, cu_str(r, d, sizeof d));
        free(vs);
        return -1;
    }
    if ((r = DRV(vs, cuDevicePrimaryCtxRetain, &vs->cu, vs->dev)) != CUDA_SUCCESS) {
        snprintf(why, wlen, "cuDevicePrimaryCtxRetain: %s", cu_str(r, d, sizeof d));
        free(vs);
        return -1;
    }
    vs->retained = 1;
    /* the harness's context and stream: cuDNN's work goes where time_device's gate and events are */
    if (dev->rt->open(dev->index, &vs->ctx, e, sizeof e) != 0) {
        vs->ctx = NULL;
        snprintf(why, wlen, "the harness's CUDA context on device %d: %s", dev->index, e);
        cudnn_close(vs);
        return -1;
    }
    vs->stream = (CUstream)dev->rt->native_queue(vs->ctx);
    if (!vs->stream) {
        snprintf(why, wlen, "the harness's CUDA context has no stream to lend");
        cudnn_close(vs);
        return -1;
    }
    if ((r = DRV(vs, cuCtxSetCurrent, vs->cu)) != CUDA_SUCCESS) {
        snprintf(why, wlen, "cuCtxSetCurrent: %s", cu_str(r, d, sizeof d));
        cudnn_close(vs);
        return -1;
    }
    if (handle_create(vs, why, wlen) != 0) {
        cudnn_close(vs);
        return -1;
    }
    save_deviceprop(vs);
    size_t v = L->version;
    size_t major = v / 10000, minor = (v % 10000) / 100, patch = v % 100;
    size_t rtv = L->cudnnGetCudartVersion ? L->cudnnGetCudartVersion() : 0;
    int o = snprintf(versions, vlen, "cudnn=%zu.%zu.%zu cudnn_version=%zu", major, minor, patch, v);
    if (rtv && o > 0 && (size_t)o < vlen) o += snprintf(versions + o, vlen - (size_t)o, " cudnn_cudart=%zu", rtv);
    if (o > 0 && (size_t)o < vlen && !strchr(L->path, ' ')) snprintf(versions + o, vlen - (size_t)o, " cudnn_lib=%s", L->path);
    *out = vs;
    return 0;
}

/* ---- graphs and candidates ---- */

static int stats_variants(int out[2])
{
    const char *e = getenv("FABENCH_CUDNN_STATS");
    if (e && !strcmp(e, "real")) { out[0] = 1; return 1; }
    if (e && !strcmp(e, "virtual")) { out[0] = 0; return 1; }
    out[0] = 0; /* inference: the statistics stay inside the kernel, as in cudnn-frontend */
    out[1] = 1; /* some engines want them written, and then the harness checks them too */
    return 2;
}

/* Builds and finalizes the graph of each statistics variant into e->gs; the ones cuDNN
 * refuses are left out. 0 when at least one graph stands, else -1 with e->status and e->why. */
static int graphs_build(vendor_session *vs, plan_entry *e, const shape_t *s, dtype_t dt)
{
    int variants[2];
    int nv = stats_variants(variants);
    char reasons[2][512] = {"", ""};
    status_t worst = ST_UNSUPPORTED;
    for (int i = 0; i < nv; i++) {
        fbdnn_sdpa p = {.b = s->batch, .hq = s->hq, .hkv = s->hkv, .sq = s->sq, .skv = s->skv, .d = s->d,
                        .causal = s->causal, .padded = e->padded, .page = s->page,
                        .npages = (int64_t)s->batch * shape_pages_per_seq(s),
                        .io_type = dt == DT_FP16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16,
                        .stats_real = variants[i], .scale = (float)(1.0 / sqrt((double)s->d))};
        graph_slot *gs = &e->gs[e->ngs];
        memset(gs, 0, sizeof *gs);
        gs->stats_real = variants[i];
        if (fbdnn_graph_build(vs->L, &p, &gs->g, reasons[i], sizeof reasons[i]) != 0) {
            worst = ST_LAUNCH_ERROR; /* a graph cuDNN refuses to describe is our fault, not a limit */
            fbdnn_graph_free(&gs->g);
            continue;
        }
        int st = fbdnn_graph_finalize(&gs->g, vs->h, reasons[i], sizeof reasons[i]);
        if (st != 0) {
            if (!fbdnn_not_supported(st)) worst = ST_LAUNCH_ERROR;
            fbdnn_graph_free(&gs->g);
            continue;
        }
        e->ngs++;
    }
    for (int i = 0; i < nv; i++)
        if (reasons[i][0]) dbg(vs, "%s: no stats-%s graph: %s", s->name, variants[i] ? "real" : "virtual", reasons[i]);
    if (e->ngs > 0) return 0;
    e->status = worst;
    if (nv == 2)
        snprintf(e->why, sizeof e->why, "stats virtual: %.240s | stats real: %.240s", reasons[0], reasons[1]);
    else
        snprintf(e->why, sizeof e->why, "%s", reasons[0]);
    return -1;
}

/* Asks heuristics mode m for each graph's engine configs and makes them e's candidates, the
 * graphs' lists interleaved (so that a cap keeps each graph's best). The number of candidates;
 * when 0, why says what the heuristics said and *fault whether that was more than cuDNN's
 * "cannot" (a heuristics call that failed, or memory). */
static int candidates_make(vendor_session *vs, plan_entry *e, int m, const shape_t *s, int *fault, char *why,
                           size_t wlen)
{
    int total = 0, most = 0;
    why[0] = 0;
    *fault = 0;
    for (int k = 0; k < e->ngs; k++) {
        graph_slot *gs = &e->gs[k];
        char w[400] = "";
        int rc = fbdnn_heur_configs(&gs->g, heur_mode[m], &gs->cfgs[m], &gs->ncfgs[m], w, sizeof w);
        if (rc != 0) {
            gs->ncfgs[m] = 0;
            *fault |= rc < 0;
            if (!why[0]) snprintf(why, wlen, "heuristics mode %s (stats %s): %s", mode_name[m],
                                  gs->stats_real ? "real" : "virtual", w);
        }
        dbg(vs, "%s: heuristics mode %s offered %d engine configs for the stats-%s graph", s->name, mode_name[m],
            gs->ncfgs[m], gs->stats_real ? "real" : "virtual");
        total += gs->ncfgs[m];
        if (gs->ncfgs[m] > most) most = gs->ncfgs[m];
    }
    e->offered += total;
    free(e->cand);
    e->cand = NULL;
    e->ncand = 0;
    e->mode = m;
    if (total == 0) {
        if (!why[0]) snprintf(why, wlen, "heuristics mode %s offered no engine config", mode_name[m]);
        return 0;
    }
    if (!(e->cand = calloc((size_t)total, sizeof *e->cand))) {
        snprintf(why, wlen, "out of memory");
        *fault = 1;
        return 0;
    }
    for (int r = 0; r < most; r++)
        for (int k = 0; k < e->ngs; k++)
            if (r < e->gs[k].ncfgs[m] && (vs->only < 0 || r == vs->only))
                e->cand[e->ncand++] = (candidate){.slot = k, .mode = m, .index = r};
    if (e->ncand == 0) snprintf(why, wlen, "FABENCH_CUDNN_ONLY=%d: heuristics mode %s offered fewer configs", vs->only,
                                mode_name[m]);
    return e->ncand;
}

/* The entry for (s, dt), its graphs and candidates made on first use: ST_OK with candidates,
 * or the status and reason why there are none. NULL when memory ran out. */
static plan_entry *plan_get(vendor_session *vs, const shape_t *s, dtype_t dt)
{
    const int padded = shape_ragged(s) || shape_paged(s); /* pages need each sequence's key count */
    for (plan_entry *e = vs->plans; e; e = e->next)
        if (e->b == s->batch && e->hq == s->hq && e->hkv == s->hkv && e->sq == s->sq && e->skv == s->skv &&
            e->d == s->d && e->causal == s->causal && e->padded == padded && e->page == s->page && e->dt == dt)
            return e;
    plan_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->b = s->batch; e->hq = s->hq; e->hkv = s->hkv; e->sq = s->sq; e->skv = s->skv; e->d = s->d;
    e->causal = s->causal;
    e->padded = padded;
    e->page = s->page;
    e->dt = dt;
    e->chosen = -1;
    e->next = vs->plans;
    vs->plans = e;
    if (graphs_build(vs, e, s, dt) != 0) {
        dbg(vs, "no plan for %s (%s): %s", s->name, status_name(e->status), e->why);
        return e;
    }
    char wa[512], wf[512] = "";
    int fa = 0, ff = 0;
    if (candidates_make(vs, e, MODE_A, s, &fa, wa, sizeof wa) == 0 &&
        candidates_make(vs, e, MODE_FALLBACK, s, &ff, wf, sizeof wf) == 0) {
        e->status = fa || ff ? ST_LAUNCH_ERROR : ST_UNSUPPORTED;
        snprintf(e->why, sizeof e->why, "no engine config offered: %.240s; %.240s", wa, wf);
        dbg(vs, "no plan for %s (%s): %s", s->name, status_name(e->status), e->why);
        return e;
    }
    e->status = ST_OK;
    return e;
}

/* "config a[1] (stats real)", or once built "engine 3 {k24=7} (a[1], stats real)": names a
 * candidate in reasons and traces. */
static void cand_name(const plan_entry *e, const candidate *c, char *buf, size_t len)
{
    const char *stats = e->gs[c->slot].stats_real ? "real" : "virtual";
    if (c->state == 1)
        snprintf(buf, len, "engine %" PRId64 " {%.80s} (%s[%d], stats %s)", c->pl.engine, c->pl.knobs,
                 mode_name[c->mode], c->index, stats);
    else
        snprintf(buf, len, "config %s[%d] (stats %s)", mode_name[c->mode], c->index, stats);
}

/* ---- a run: the shape's device buffers, one execution, a timing ---- */

enum { RUN_GOING, RUN_HUNG, RUN_UNUSABLE };

typedef struct {
    vendor_session *vs;
    plan_entry *e;
    const shape_t *s;
    dtype_t dt;
    const vendor_inputs *in;
    void *o;                   /* the caller's O: each run's output lands here */
    const timing_opts *t;
    fbdnn_padded pad;          /* a ragged or paged batch in cuDNN's layouts */
    void *host_o;              /* where O is poisoned from and copied back to: o, or pad.o */
    float *stats_h;            /* the dense statistics on the host, when a graph writes them */
    size_t nstats;
    CUdeviceptr buf[FBDNN_NDEV];
    size_t bytes[FBDNN_NDEV];
    fbdnn_desc vp[MAX_GRAPHS]; /* each graph's variant pack, made over the workspace vp_ws */
    CUdeviceptr vp_ws[MAX_GRAPHS];
    int stopped;               /* RUN_HUNG or RUN_UNUSABLE: no more work (err says why) */
    char err[512];
} run_ctx;

/* A failure that may have left the device hung or unusable: marks the run stopped and returns
 * -1 when it did (rc RT_ETIMEOUT, or msg with the sticky errors' words), else 0. */
static int stop_if_broken(run_ctx *r, int rc, const char *msg)
{
    if (rc == RT_ETIMEOUT) {
        r->vs->hung = 1;
        r->stopped = RUN_HUNG;
        snprintf(r->err, sizeof r->err, "cuDNN's kernel did not finish within %.1f s", r->t->timeout_s);
        return -1;
    }
    if (rc != 0 && msg && strstr(msg, RT_UNUSABLE)) {
        r->stopped = RUN_UNUSABLE;
        snprintf(r->err, sizeof r->err, "%s", msg);
        return -1;
    }
    return 0;
}

/* After a failed cuDNN call: waits for the queue (at most the timeout) to learn whether the
 * device still works. 0 it does, -1 the run is stopped. */
static int settle(run_ctx *r)
{
    char e[512] = "";
    int rc = r->vs->rt->finish(r->vs->ctx, r->t->timeout_s, e, sizeof e);
    return stop_if_broken(r, rc, e);
}

/* A failed driver call: why says what failed; -1 (stopped) when the error is sticky, else 1. */
static int cu_failed(run_ctx *r, CUresult cr, const char *what, char *why, size_t len)
{
    char d[256];
    snprintf(why, len, "%s: %s", what, cu_str(cr, d, sizeof d));
    if (!cu_sticky(cr)) return 1;
    r->stopped = RUN_UNUSABLE;
    snprintf(r->err, sizeof r->err, "%.300s; a kernel fault left CUDA unusable in this process: " RT_UNUSABLE, why);
    return -1;
}

static void run_free(run_ctx *r)
{
    vendor_session *vs = r->vs;
    if (!vs->hung) { /* after a hang the device may still read these */
        for (int k = 0; k < MAX_GRAPHS; k++)
            if (r->vp[k]) fbdnn_destroy(&r->e->gs[k].g, r->vp[k]);
        for (int i = 0; i < FBDNN_NDEV; i++)
            if (r->buf[i]) drv.cuMemFree(r->buf[i]);
    }
    fbdnn_pad_free(&r->pad);
    free(r->stats_h);
}

/* The inputs on the device (padded or paged where the graph wants that), O's and the
 * statistics' buffers. 0; 1 with res's status and reason; -1 stopped. */
static int run_setup(run_ctx *r, vendor_result *res)
{
    vendor_session *vs = r->vs;
    const shape_t *s = r->s;
    const plan_entry *e = r->e;
    const size_t es = dtype_size(r->dt);
    const size_t nq = (size_t)s->batch * s->hq * s->sq * s->d, nkv = (size_t)s->batch * s->hkv * s->skv * s->d;
    const void *host[FBDNN_NDEV] = {r->in->q, r->in->k, r->in->v, NULL, NULL, NULL, NULL, NULL};
    int stats = 0;
    for (int k = 0; k < e->ngs; k++) stats |= e->gs[k].g.L && e->gs[k].stats_real; /* (a freed loser: no) */
    res->status = ST_LAUNCH_ERROR;
    r->host_o = r->o;
    if (e->padded) {
        /* a ragged batch padded to [B, H, sq or skv, D], or K and V in pages, with each
         * sequence's lengths (and the block table) */
        if (fbdnn_pad_inputs(s, es, r->in, 1, &r->pad) != 0) {
            res->status = ST_RESOURCE_LIMIT;
            snprintf(res->reason, sizeof res->reason, "host memory for the padded or paged batch exhausted");
            return 1;
        }
        host[FBDNN_DEV_Q] = r->pad.q;
        host[FBDNN_DEV_K] = r->pad.k;
        host[FBDNN_DEV_V] = r->pad.v;
        host[FBDNN_DEV_SEQ_Q] = r->pad.seq_q;
        host[FBDNN_DEV_SEQ_KV] = r->pad.seq_kv;
        host[FBDNN_DEV_PAGE_TABLE] = r->pad.bt;
        r->host_o = r->pad.o;
    }
    r->nstats = stats ? (size_t)s->batch * s->hq * s->sq : 0;
    if (stats && !(r->stats_h = malloc(r->nstats * sizeof(float)))) {
        res->status = ST_RESOURCE_LIMIT;
        snprintf(res->reason, sizeof res->reason, "host memory for the softmax statistics exhausted");
        return 1;
    }
    const size_t kvb = e->padded ? r->pad.kv_bytes : nkv * es;
    const size_t bytes[FBDNN_NDEV] = {nq * es, kvb, kvb, nq * es, r->nstats * sizeof(float),
                                      e->padded ? (size_t)s->batch * sizeof(int32_t) : 0,
                                      e->padded ? (size_t)s->batch * sizeof(int32_t) : 0,
                                      r->pad.bt ? (size_t)s->batch * shape_pages_per_seq(s) * sizeof(int32_t) : 0};
    memcpy(r->bytes, bytes, sizeof bytes);
    CUresult cr;
    for (int i = 0; i < FBDNN_NDEV; i++) {
        if (!bytes[i]) continue;
        if ((cr = DRV(vs, cuMemAlloc, &r->buf[i], bytes[i])) != CUDA_SUCCESS) {
            r->buf[i] = 0;
            char what[64];
            snprintf(what, sizeof what, "cuMemAlloc(%zu bytes)", bytes[i]);
            res->status = cr == CUDA_ERROR_OUT_OF_MEMORY ? ST_RESOURCE_LIMIT : ST_LAUNCH_ERROR;
            return cu_failed(r, cr, what, res->reason, sizeof res->reason);
        }
    }
    cr = CUDA_SUCCESS;
    for (int i = 0; i < FBDNN_NDEV && cr == CUDA_SUCCESS; i++)
        if (host[i]) cr = DRV(vs, cuMemcpyHtoDAsync, r->buf[i], host[i], bytes[i], vs->stream);
    if (cr == CUDA_SUCCESS) cr = DRV(vs, cuStreamSynchronize, vs->stream);
    if (cr != CUDA_SUCCESS) return cu_failed(r, cr, "copying the inputs", res->reason, sizeof res->reason);
    return 0;
}

/* The session's workspace at least `need` bytes. 0; 1 (why); -1 stopped. */
static int ensure_ws(run_ctx *r, int64_t need, char *why, size_t len)
{
    vendor_session *vs = r->vs;
    if (need <= 0 || (size_t)need <= vs->ws_bytes) return 0;
    if (vs->ws) drv.cuMemFree(vs->ws); /* idle: every run is waited for before the next step */
    vs->ws = 0;
    vs->ws_bytes = 0;
    CUresult cr = DRV(vs, cuMemAlloc, &vs->ws, (size_t)need);
    if (cr != CUDA_SUCCESS) {
        vs->ws = 0;
        char what[96];
        snprintf(what, sizeof what, "cuMemAlloc(%" PRId64 " bytes of cuDNN workspace)", need);
        return cu_failed(r, cr, what, why, len);
    }
    vs->ws_bytes = (size_t)need;
    return 0;
}

/* Graph k's variant pack over the current buffers and workspace (made again when the
 * workspace moved). 0 with *vp, or -1 (why). */
static int pack_for(run_ctx *r, int k, fbdnn_desc *vp, char *why, size_t len)
{
    fbdnn_graph *g = &r->e->gs[k].g;
    if (r->vp[k] && r->vp_ws[k] == r->vs->ws) { *vp = r->vp[k]; return 0; }
    if (r->vp[k]) fbdnn_destroy(g, r->vp[k]);
    r->vp[k] = NULL;
    void *dev[FBDNN_NDEV];
    for (int i = 0; i < FBDNN_NDEV; i++) dev[i] = (void *)(uintptr_t)r->buf[i];
    if (fbdnn_variant_pack(g, dev, (void *)(uintptr_t)r->vs->ws, &r->vp[k], why, len) != 0) {
        r->vp[k] = NULL;
        return -1;
    }
    r->vp_ws[k] = r->vs->ws;
    *vp = r->vp[k];
    return 0;
}

/* Runs candidate c once from a poisoned O (and statistics), so that what cuDNN leaves
 * unwritten cannot pass for stale memory that matches, and copies the output back into the
 * caller's o and, when c's graph writes them, the statistics into in->lse (*has_lse).
 * 0; 1 it failed (why); -1 stopped. */
static int run_once(run_ctx *r, candidate *c, int *has_lse, char *why, size_t len)
{
    vendor_session *vs = r->vs;
    graph_slot *gs = &r->e->gs[c->slot];
    const size_t nq = (size_t)r->s->batch * r->s->hq * r->s->sq * r->s->d;
    const int stats = gs->stats_real && r->nstats;
    fbdnn_desc vp;
    int rc;
    *has_lse = 0;
    if ((rc = ensure_ws(r, c->pl.workspace, why, len)) != 0) return rc;
    if (pack_for(r, c->slot, &vp, why, len) != 0) return 1;
    fb_poison(r->host_o, nq, r->dt);
    CUresult cr = DRV(vs, cuMemcpyHtoDAsync, r->buf[FBDNN_DEV_O], r->host_o, r->bytes[FBDNN_DEV_O], vs->stream);
    if (cr == CUDA_SUCCESS && stats) {
        fb_poison_f32(r->stats_h, r->nstats);
        cr = DRV(vs, cuMemcpyHtoDAsync, r->buf[FBDNN_DEV_STATS], r->stats_h, r->bytes[FBDNN_DEV_STATS], vs->stream);
    }
    if (cr != CUDA_SUCCESS) return cu_failed(r, cr, "poisoning O", why, len);
    if (fbdnn_execute(&gs->g, vs->h, &c->pl, vp, why, len) != 0) return settle(r) < 0 ? -1 : 1;
    char e[512] = "";
    if ((rc = vs->rt->finish(vs->ctx, r->t->timeout_s, e, sizeof e)) != 0) {
        if (stop_if_broken(r, rc, e) < 0) return -1;
        snprintf(why, len, "%s", e);
        return 1;
    }
    cr = DRV(vs, cuMemcpyDtoHAsync, r->host_o, r->buf[FBDNN_DEV_O], r->bytes[FBDNN_DEV_O], vs->stream);
    if (cr == CUDA_SUCCESS && stats)
        cr = DRV(vs, cuMemcpyDtoHAsync, r->stats_h, r->buf[FBDNN_DEV_STATS], r->bytes[FBDNN_DEV_STATS], vs->stream);
    if (cr == CUDA_SUCCESS) cr = DRV(vs, cuStreamSynchronize, vs->stream);
    if (cr != CUDA_SUCCESS) return cu_failed(r, cr, "copying O back", why, len);
    if (r->e->padded) fbdnn_unpad_output(r->s, dtype_size(r->dt), &r->pad, r->o);
    /* cuDNN's statistics are the natural-log log-sum-exp of the scaled, masked scores, [b, hq,
     * sq, 1] float: the harness's LSE once the padded rows are dropped */
    if (stats && r->in->lse) {
        fbdnn_unpad_lse(r->s, r->stats_h, r->in->lse);
        *has_lse = 1;
    }
    return 0;
}

/* What time_device's enqueue callback executes: one plan on one variant pack. */
typedef struct {
    vendor_session *vs;
    fbdnn_graph *g;
    const fbdnn_plan *pl;
    fbdnn_desc vp;
} exec_arg;

/* enqueue_fn (bench/core/timing.h): one execution, between events of the harness's stream when asked. */
static int enqueue_exec(void *arg, rt_event **first, rt_event **last, char *err, size_t errlen)
{
    exec_arg *x = arg;
    const rt_runtime *rt = x->vs->rt;
    if (first && rt->mark(x->vs->ctx, first, err, errlen) != 0) {
        *first = NULL;
        return RT_ERR;
    }
    if (fbdnn_execute(x->g, x->vs->h, x->pl, x->vp, err, errlen) != 0 ||
        (last && rt->mark(x->vs->ctx, last, err, errlen) != 0)) {
        if (first && *first) rt->event_free(*first);
        if (first) *first = NULL;
        if (last) *last = NULL;
        return RT_ERR;
    }
    return 0;
}

/* Times candidate c with the harness's protocol. 0 with *st (and *tel, *how, which may be
 * NULL); 1 it failed (why); -1 stopped. */
static int time_plan(run_ctx *r, candidate *c, const timing_opts *o, stats_t *st, telemetry_summary *tel,
                     timing_method *how, char *why, size_t len)
{
    vendor_session *vs = r->vs;
    fbdnn_graph *g = &r->e->gs[c->slot].g;
    fbdnn_desc vp;
    int rc;
    if ((rc = ensure_ws(r, c->pl.workspace, why, len)) != 0) return rc;
    if (pack_for(r, c->slot, &vp, why, len) != 0) return 1;
    exec_arg x = {.vs = vs, .g = g, .pl = &c->pl, .vp = vp};
    const int log = g->log_calls;
    g->log_calls = 0; /* thousands of executions: the trace keeps the first one's */
    rc = time_device(vs->rt, vs->ctx, enqueue_exec, &x, o, st, tel, how, why, len);
    g->log_calls = log;
    if (rc == 0) return 0;
    if (stop_if_broken(r, rc, why) < 0 || settle(r) < 0) return -1;
    return 1;
}

/* ---- the search's callbacks (cudnn_search.h) over a run ---- */

static int op_build(void *arg, int i, char *why, size_t len)
{
    run_ctx *r = arg;
    plan_entry *e = r->e;
    candidate *c = &e->cand[i];
    if (c->state == 1) return 0;
    if (c->state == 0) {
        graph_slot *gs = &e->gs[c->slot];
        char m[512];
        int st = fbdnn_plan_make(&gs->g, r->vs->h, gs->cfgs[c->mode][c->index], mode_name[c->mode], c->index, &c->pl,
                                 m, sizeof m);
        char name[160];
        cand_name(e, c, name, sizeof name);
        if (st == 0) {
            c->state = 1;
            cand_name(e, c, name, sizeof name);
            dbg(r->vs, "%s: candidate %d/%d %s: built, workspace %" PRId64 " bytes", r->s->name, i + 1, e->ncand, name,
                c->pl.workspace);
            return 0;
        }
        c->state = -1;
        snprintf(c->why, sizeof c->why, "%.120s: %.190s", name, m);
        dbg(r->vs, "%s: candidate %d/%d refused: %s", r->s->name, i + 1, e->ncand, c->why);
    }
    snprintf(why, len, "%s", c->why);
    return 1;
}

static int op_check(void *arg, int i, char *why, size_t len)
{
    run_ctx *r = arg;
    candidate *c = &r->e->cand[i];
    char name[160], m[400];
    int has_lse = 0;
    cand_name(r->e, c, name, sizeof name);
    int rc = run_once(r, c, &has_lse, m, sizeof m);
    if (rc < 0) {
        snprintf(why, len, "%s", r->err);
        return -1;
    }
    if (rc > 0) {
        snprintf(why, len, "%.120s: %.270s", name, m);
        dbg(r->vs, "%s: candidate %d/%d failed to run: %s", r->s->name, i + 1, r->e->ncand, why);
        return 1;
    }
    if (!r->in->check) return 0;
    m[0] = 0;
    int v = r->in->check(r->in->check_arg, r->o, has_lse ? r->in->lse : NULL, m, sizeof m);
    dbg(r->vs, "%s: candidate %d/%d %s: %s%s%s", r->s->name, i + 1, r->e->ncand, name,
        v == 0 ? "verified" : v > 0 ? "wrong result: " : "not checked: ", m, has_lse && v == 0 ? " (with its LSE)" : "");
    if (v == 0) return 0;
    snprintf(why, len, "%.120s: %.270s", name, m);
    return v > 0 ? 2 : 3;
}

static int op_time(void *arg, int i, double best_us, double *us, char *why, size_t len)
{
    run_ctx *r = arg;
    candidate *c = &r->e->cand[i];
    timing_opts o = *r->t;
    o.rest_s = 0;   /* the row's own timing rests; choosing does not */
    o.tm = NULL;    /* nor is it watched */
    if (o.budget_s > SEARCH_BUDGET_S) o.budget_s = SEARCH_BUDGET_S;
    o.abandon_us = best_us > 0 ? SEARCH_ABANDON * best_us : 0;
    stats_t st;
    char name[160], m[400];
    cand_name(r->e, c, name, sizeof name);
    int rc = time_plan(r, c, &o, &st, NULL, NULL, m, sizeof m);
    if (rc < 0) {
        snprintf(why, len, "%s", r->err);
        return -1;
    }
    if (rc > 0) {
        snprintf(why, len, "%.120s: timing: %.260s", name, m);
        dbg(r->vs, "%s: candidate %d/%d %s", r->s->name, i + 1, r->e->ncand, why);
        return 1;
    }
    *us = st.median;
    dbg(r->vs, "%s: candidate %d/%d %s: median %.3f us over %zu samples%s", r->s->name, i + 1, r->e->ncand, name,
        st.median, st.n, o.abandon_us > 0 && st.n == 1 ? " (abandoned: slower than the best)" : "");
    return 0;
}

/* ---- the choice ---- */

/* The winner stays cached alone: the other graph (with the run's variant pack over it) and the
 * losing plans are freed. */
static void keep_winner(run_ctx *r, int best)
{
    plan_entry *e = r->e;
    candidate w = e->cand[best];
    for (int i = 0; i < e->ncand; i++)
        if (i != best && e->cand[i].state == 1 && e->cand[i].slot == w.slot)
            fbdnn_plan_drop(&e->gs[w.slot].g, &e->cand[i].pl);
    for (int k = 0; k < e->ngs; k++) {
        for (int m = 0; m < NMODES; m++) { /* the config descriptors stay with their graph */
            free(e->gs[k].cfgs[m]);
            e->gs[k].cfgs[m] = NULL;
        }
        if (k != w.slot) {
            r->vp[k] = NULL; /* a descriptor of that graph: freed with it */
            graph_slot_free(&e->gs[k]);
        }
    }
    e->cand[0] = w;
    e->ncand = 1;
    e->chosen = 0;
}

/* perf.csv's config column for the winner c, with the search's counts. */
static void describe_winner(plan_entry *e, const candidate *c, const fbdnn_search_result *sr,
                            const fbdnn_search_limits *lim)
{
    char counts[128];
    fbdnn_search_summary(sr, lim, counts, sizeof counts);
    const graph_slot *gs = &e->gs[c->slot];
    snprintf(e->config, sizeof e->config,
             "engine=%" PRId64 ";knobs=%.120s;heur=%s;cfg_index=%d;stats=%s;mask=%s%s;ws=%" PRId64 ";offered=%ld;%s",
             c->pl.engine, c->pl.knobs[0] ? c->pl.knobs : "none", mode_name[c->mode], c->index,
             gs->stats_real ? "real" : "virtual", gs->g.masked ? "bottom_right" : "none",
             e->page ? ";layout=paged,seq_len" : e->padded ? ";layout=padded,seq_len" : "", c->pl.workspace, e->offered,
             counts);
}

/* A stopped run as the row: a hang is a timeout row (the session then refuses the rest);
 * an unusable device breaks the adapter (-1, err). */
static int stopped_row(run_ctx *r, vendor_result *res, char *err, size_t errlen)
{
    if (r->stopped == RUN_HUNG) {
        res->status = ST_TIMEOUT;
        snprintf(res->reason, sizeof res->reason, "%s", r->err);
        return 0;
    }
    snprintf(err, errlen, "%s", r->err);
    return -1;
}

/* Searches e's candidates (mode A's, then fallback's when none of A finalized). 0 with
 * e->chosen set, or with res's status and reason when nothing won; -1 broke (err). */
static int search(run_ctx *r, vendor_result *res, char *err, size_t errlen)
{
    vendor_session *vs = r->vs;
    plan_entry *e = r->e;
    const fbdnn_search_ops ops = {.build = op_build, .check = op_check, .time = op_time};
    fbdnn_search_result sr, sa;
    dbg(vs, "%s: searching %d engine configs (heuristics mode %s)", r->s->name, e->ncand, mode_name[e->mode]);
    if (fbdnn_search(e->ncand, &ops, r, &vs->lim, &sr) != 0) return stopped_row(r, res, err, errlen);
    if (sr.status == ST_UNSUPPORTED && e->mode == MODE_A) { /* nothing of mode A finalized */
        char wf[512];
        int ff = 0;
        sa = sr;
        if (candidates_make(vs, e, MODE_FALLBACK, r->s, &ff, wf, sizeof wf) == 0) {
            res->status = e->status = ff ? ST_LAUNCH_ERROR : ST_UNSUPPORTED;
            snprintf(res->reason, sizeof res->reason, "%.300s; fallback: %.190s", sa.reason, wf);
            snprintf(e->why, sizeof e->why, "%s", res->reason);
            return 0;
        }
        dbg(vs, "%s: searching %d engine configs (heuristics mode fallback)", r->s->name, e->ncand);
        if (fbdnn_search(e->ncand, &ops, r, &vs->lim, &sr) != 0) return stopped_row(r, res, err, errlen);
        sr.tried += sa.tried; /* the summary counts both lists */
        if (sr.status == ST_UNSUPPORTED) {
            char both[512];
            snprintf(both, sizeof both, "mode A: %.240s; fallback: %.240s", sa.reason, sr.reason);
            snprintf(sr.reason, sizeof sr.reason, "%s", both);
        }
    }
    if (sr.status != ST_OK) {
        res->status = sr.status;
        snprintf(res->reason, sizeof res->reason, "%s", sr.reason);
        dbg(vs, "no plan for %s (%s): %s", r->s->name, status_name(sr.status), sr.reason);
        if (sr.status == ST_UNSUPPORTED) { /* no plan finalizes: the next row of the shape need not ask again */
            e->status = ST_UNSUPPORTED;
            snprintf(e->why, sizeof e->why, "%s", sr.reason);
        }
        return 0;
    }
    describe_winner(e, &e->cand[sr.best], &sr, &vs->lim);
    char name[160];
    cand_name(e, &e->cand[sr.best], name, sizeof name);
    if (sr.best_us > 0)
        dbg(vs, "chosen engine config for %s: %s, candidate %d of %d, median %.3f us in the search", r->s->name, name,
            sr.best + 1, e->ncand, sr.best_us);
    else
        dbg(vs, "chosen engine config for %s: %s, candidate %d of %d, the only one verified", r->s->name, name,
            sr.best + 1, e->ncand);
    dbg(vs, "plan for %s: %s", r->s->name, e->config);
    keep_winner(r, sr.best);
    return 0;
}

/* ---- running a shape ---- */

/* Shapes cuDNN's graph cannot express: ST_OK, or the status with res->reason filled. */
static status_t refuse_shape(const vendor_session *vs, const shape_t *s, dtype_t dt, vendor_result *res)
{
    if (dt != DT_FP16 && dt != DT_BF16) {
        snprintf(res->reason, sizeof res->reason, "cuDNN's fused flash attention takes fp16 or bf16, not %s", dtype_name(dt));
        return ST_UNSUPPORTED;
    }
    if (shape_paged(s) && vs->L->version < 90500) {
        snprintf(res->reason, sizeof res->reason, "cuDNN %zu has no paged cache load (9.5 or newer)", vs->L->version);
        return ST_UNSUPPORTED;
    }
    for (int b = 0; s->causal && shape_ragged(s) && b < s->batch; b++) {
        int lq, lk;
        shape_seq_lens(s, b, &lq, &lk);
        if (lq > lk) {
            snprintf(res->reason, sizeof res->reason,
                     "cuDNN's bottom-right causal mask needs each sequence's queries <= keys (sequence %d: %d > %d)", b, lq, lk);
            return ST_UNSUPPORTED;
        }
    }
    if (s->causal && s->sq > s->skv) {
        snprintf(res->reason, sizeof res->reason,
                 "cuDNN's bottom-right causal mask needs sq <= skv (here the first %d queries see no key)", s->sq - s->skv);
        return ST_UNSUPPORTED;
    }
    return ST_OK;
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
    if ((res->status = refuse_shape(vs, s, dt, res)) != ST_OK) return 0;
    char d[256];
    CUresult cr = DRV(vs, cuCtxSetCurrent, vs->cu);
    if (cr != CUDA_SUCCESS) { snprintf(err, errlen, "cuCtxSetCurrent: %s", cu_str(cr, d, sizeof d)); return -1; }
    plan_entry *e = plan_get(vs, s, dt);
    if (!e) { snprintf(err, errlen, "out of memory"); return -1; }
    res->configs_method = CONFIGS_METHOD;
    res->configs = e->offered;
    if (e->status != ST_OK) {
        res->status = e->status;
        snprintf(res->reason, sizeof res->reason, "%s", e->why);
        return 0;
    }

    run_ctx r = {.vs = vs, .e = e, .s = s, .dt = dt, .in = in, .o = o, .t = t};
    int rc = run_setup(&r, res);
    if (rc < 0) { rc = stopped_row(&r, res, err, errlen); goto out; }
    if (rc > 0) { rc = 0; goto out; }
    if (e->chosen < 0) { /* the first row of this shape: find the fastest verified engine config */
        if ((rc = search(&r, res, err, errlen)) != 0 || res->status == ST_TIMEOUT || e->chosen < 0) goto out;
    }
    res->configs = e->offered; /* a fallback list may have added to it */
    snprintf(res->config, sizeof res->config, "%s", e->config);
    /* the row: the winner's output from one run for the harness to verify, then its timing */
    candidate *w = &e->cand[e->chosen];
    int has_lse = 0;
    char m[512];
    res->status = ST_LAUNCH_ERROR;
    if ((rc = run_once(&r, w, &has_lse, m, sizeof m)) != 0) {
        if (rc < 0) { rc = stopped_row(&r, res, err, errlen); goto out; }
        snprintf(res->reason, sizeof res->reason, "%s", m);
        rc = 0;
        goto out;
    }
    if ((rc = time_plan(&r, w, t, &res->stats, &res->tel, &res->how, m, sizeof m)) != 0) {
        if (rc < 0) { rc = stopped_row(&r, res, err, errlen); goto out; }
        snprintf(res->reason, sizeof res->reason, "timing: %.480s", m);
        rc = 0;
        goto out;
    }
    res->has_stats = 1;
    res->has_lse = has_lse;
    res->status = ST_OK;
out:
    res->configs = e->offered;
    run_free(&r);
    return rc;
}

const vendor vendor_cudnn = {
    .name = "cudnn",
    .open = cudnn_open,
    .impls = cudnn_impls,
    .run = cudnn_run,
    .close = cudnn_close,
};
