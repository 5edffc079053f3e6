/* refdev.c: kernels/ref_attn.k on the device through the runtime table (one module per
 * dtype, kept and cached on disk like the kernel's), and the choice between its reference
 * and the CPU's (refdev.h). */
#include "refdev.h"

#include "cache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REF_NT 64 /* work-items per group: kernels/ref_attn.k's NT */

struct fb_refdev {
    rt_device dev;
    rt_ctx *ctx;
    char *source;
    rt_module *mod[3];  /* per dtype, compiled on first use */
    rt_kernel *kern[3];
    char failed[3][256]; /* why a dtype's module could not be had: not tried again */
    int warned;          /* the CPU took over once already: said on stderr */
};

int fb_refdev_open(const rt_device *dev, rt_ctx *ctx, fb_refdev **out, char *err, size_t errlen)
{
    fb_refdev *rd = calloc(1, sizeof *rd);
    if (!rd) { snprintf(err, errlen, "out of memory"); return -1; }
    rd->dev = *dev;
    rd->ctx = ctx;
    if (fb_kernel_source(dev->rt->name, "ref_attn.k", &rd->source, err, errlen) != 0) {
        free(rd);
        return -1;
    }
    *out = rd;
    return 0;
}

void fb_refdev_close(fb_refdev *rd, int device_usable)
{
    if (!rd) return;
    for (int i = 0; i < 3 && device_usable; i++) {
        if (rd->kern[i]) rd->dev.rt->kernel_free(rd->kern[i]);
        if (rd->mod[i]) rd->dev.rt->module_free(rd->mod[i]);
    }
    free(rd->source);
    free(rd);
}

/* 1 when the environment variable is set to 1 (the test hooks below). */
static int env_on(const char *name)
{
    const char *v = getenv(name);
    return v && !strcmp(v, "1");
}

/* The reference kernel for dt: from the runner's memory, the disk cache or the compiler.
 * Test hooks, read when a module is built: FABENCH_TEST_REF_FAULT=1 builds one whose last
 * row is wrong (the spot check must refuse it), FABENCH_TEST_REF_FLOAT=1 one that sums in
 * float (as on a device without fp64). NULL when it cannot be had (err says why). */
static rt_kernel *ref_kernel(fb_refdev *rd, dtype_t dt, char *err, size_t errlen)
{
    const int i = (int)dt;
    if (rd->kern[i]) return rd->kern[i];
    if (rd->failed[i][0]) { snprintf(err, errlen, "%s", rd->failed[i]); return NULL; }
    const rt_runtime *rt = rd->dev.rt;
    const rt_device_info *in = &rd->dev.info;
    char defs[3][32];
    const char *dp[3] = {defs[0], defs[1], defs[2]};
    int nd = 0;
    snprintf(defs[nd++], sizeof defs[0], "DTYPE=%d", i);
    if (env_on("FABENCH_TEST_REF_FAULT")) snprintf(defs[nd++], sizeof defs[0], "REF_FAULT=1");
    if (env_on("FABENCH_TEST_REF_FLOAT")) snprintf(defs[nd++], sizeof defs[0], "REF_FORCE_FLOAT=1");
    char key[128] = "", ckey[33];
    for (int d = 0; d < nd; d++) snprintf(key + strlen(key), sizeof key - strlen(key), "%s ", defs[d]);
    const char *parts[] = {rd->source, key, rt->name, in->name, in->arch, in->driver, in->runtime_version, in->compiler,
                           in->platform};
    cache_key(parts, (int)(sizeof parts / sizeof parts[0]), ckey);
    void *bin;
    size_t len;
    char *log = NULL, e[FB_ERRLEN] = "";
    int rc = -1;
    if (rt->load_binary && cache_get(ckey, &bin, &len, &log)) {
        rc = rt->load_binary(rd->ctx, bin, len, log, &rd->mod[i], e, sizeof e);
        free(bin);
        free(log);
        log = NULL;
    }
    if (rc != 0) {
        rc = rt->compile(rd->ctx, rd->source, dp, nd, &rd->mod[i], &log, e, sizeof e);
        if (rc == 0 && rt->binary(rd->mod[i], &bin, &len) == 0) {
            cache_put(ckey, bin, len, log);
            free(bin);
        }
        if (rc == RT_ECOMPILE && log) snprintf(e, sizeof e, "%.900s", log);
        free(log);
    }
    if (rc == 0 && rt->get_kernel(rd->mod[i], "ref_attn", &rd->kern[i], NULL, e, sizeof e) != 0) rc = -1;
    if (rc != 0) {
        snprintf(rd->failed[i], sizeof rd->failed[i], "the reference kernel did not build: %.200s", e);
        snprintf(err, errlen, "%s", rd->failed[i]);
        if (rd->mod[i]) rt->module_free(rd->mod[i]);
        rd->mod[i] = NULL;
        return NULL;
    }
    return rd->kern[i];
}

/* The device buffers of one reference run: outputs, sequence offsets, the precision flag. */
typedef struct {
    rt_buf *o, *lse, *err, *cu_q, *cu_k, *info;
} ref_bufs;

static void bufs_free(const rt_runtime *rt, ref_bufs *b)
{
    rt_buf *all[] = {b->o, b->lse, b->err, b->cu_q, b->cu_k, b->info};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) rt->buf_free(all[i]);
    memset(b, 0, sizeof *b);
}

/* Allocates the run's buffers and uploads the sequence offsets (ragged) or a word for each
 * (dense: the kernel never reads them). 0 or -1 (err). */
static int bufs_alloc(fb_refdev *rd, const attn_problem *p, size_t rows, ref_bufs *b, char *err, size_t errlen)
{
    const rt_runtime *rt = rd->dev.rt;
    const shape_t *s = &p->s;
    const size_t ncu = shape_ragged(s) ? (size_t)s->batch + 1 : 1;
    int32_t *cu = calloc(2 * ncu, sizeof *cu);
    if (!cu) { snprintf(err, errlen, "out of memory"); return -1; }
    if (shape_ragged(s)) shape_cu_seqlens(s, cu, cu + ncu);
    int rc = rt->alloc(rd->ctx, rows * (size_t)s->d * sizeof(float), &b->o, err, errlen) ||
             rt->alloc(rd->ctx, rows * sizeof(float), &b->lse, err, errlen) ||
             rt->alloc(rd->ctx, rows * sizeof(float), &b->err, err, errlen) ||
             rt->alloc(rd->ctx, ncu * sizeof *cu, &b->cu_q, err, errlen) ||
             rt->alloc(rd->ctx, ncu * sizeof *cu, &b->cu_k, err, errlen) ||
             rt->alloc(rd->ctx, sizeof(int32_t), &b->info, err, errlen) ||
             rt->upload(rd->ctx, b->cu_q, cu, ncu * sizeof *cu, err, errlen) ||
             rt->upload(rd->ctx, b->cu_k, cu + ncu, ncu * sizeof *cu, err, errlen)
                 ? -1
                 : 0;
    free(cu);
    if (rc != 0) bufs_free(rt, b);
    return rc;
}

int fb_refdev_compute(fb_refdev *rd, const attn_problem *p, rt_buf *q, rt_buf *k, rt_buf *v, double timeout_s,
                      fb_reference *ref, int *fp64, char *err, size_t errlen)
{
    const rt_runtime *rt = rd->dev.rt;
    const shape_t *s = &p->s;
    *fp64 = 0;
    if (fb_reference_alloc(ref, p) != 0) { snprintf(err, errlen, "out of host memory for the reference"); return -1; }
    rt_kernel *kern = ref_kernel(rd, p->dt, err, errlen);
    if (!kern) { fb_reference_free(ref); return -1; }
    const size_t rows = ref->rows;
    if (!rows) return 0;
    ref_bufs b = {0};
    if (bufs_alloc(rd, p, rows, &b, err, errlen) != 0) { fb_reference_free(ref); return -1; }
    const int ragged = shape_ragged(s);
    const float hi = (float)p->scale, lo = (float)(p->scale - (double)hi);
    rt_arg a[20];
    rt_buf *bufs[9] = {q, k, v, b.o, b.lse, b.err, b.cu_q, b.cu_k, b.info};
    int n = 0;
    for (int i = 0; i < 9; i++) a[n++] = (rt_arg){.kind = RT_ARG_BUF, .v.buf = bufs[i]};
    a[n++] = (rt_arg){.kind = RT_ARG_I64, .v.i64 = (int64_t)rows};
    const int32_t ints[] = {s->d, s->batch, s->hq, s->hkv, ragged ? (int32_t)shape_total_q(s) : s->sq,
                            ragged ? (int32_t)shape_total_kv(s) : s->skv, s->causal ? 1 : 0, ragged};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) a[n++] = (rt_arg){.kind = RT_ARG_I32, .v.i32 = ints[i]};
    a[n++] = (rt_arg){.kind = RT_ARG_F32, .v.f32 = hi};
    a[n++] = (rt_arg){.kind = RT_ARG_F32, .v.f32 = lo};
    const size_t grid[3] = {(rows + REF_NT - 1) / REF_NT, 1, 1}, block[3] = {REF_NT, 1, 1};
    int rc = rt->launch(rd->ctx, kern, grid, block, 0, a, n, NULL, err, errlen);
    if (rc == 0) rc = rt->finish(rd->ctx, timeout_s, err, errlen);
    if (rc == RT_ETIMEOUT) { /* the device may still write them: left to the context */
        fb_reference_free(ref);
        return RT_ETIMEOUT;
    }
    int32_t info = 0;
    if (rc == 0)
        rc = rt->download(rd->ctx, ref->o, b.o, rows * (size_t)s->d * sizeof(float), err, errlen) ||
                     rt->download(rd->ctx, ref->lse, b.lse, rows * sizeof(float), err, errlen) ||
                     rt->download(rd->ctx, ref->plain_err, b.err, rows * sizeof(float), err, errlen) ||
                     rt->download(rd->ctx, &info, b.info, sizeof info, err, errlen)
                 ? -1
                 : 0;
    bufs_free(rt, &b);
    if (rc != 0) { fb_reference_free(ref); return -1; }
    *fp64 = info == 1;
    return 0;
}

/* The device's reference of p, spot-checked: 0 and ref valid; 1 it cannot be used (why);
 * RT_ETIMEOUT; -1 no memory (err). */
static int device_reference(fb_refdev *rd, const attn_problem *p, const void *q, const void *k, const void *v,
                            rt_buf *dq, rt_buf *dk, rt_buf *dv, uint64_t seed, double timeout_s, fb_reference *ref,
                            char *why, size_t whylen)
{
    const rt_runtime *rt = rd->dev.rt;
    const size_t es = dtype_size(p->dt), bytes[3] = {shape_q_elems(&p->s) * es, shape_kv_elems(&p->s) * es,
                                                    shape_kv_elems(&p->s) * es};
    const void *host[3] = {q, k, v};
    rt_buf *mine[3] = {0}, *use[3] = {dq, dk, dv};
    int rc = 0;
    for (int i = 0; i < 3 && rc == 0; i++) {
        if (use[i]) continue;
        if (rt->alloc(rd->ctx, bytes[i] ? bytes[i] : 4, &mine[i], why, whylen) != 0 ||
            (bytes[i] && rt->upload(rd->ctx, mine[i], host[i], bytes[i], why, whylen) != 0))
            rc = 1;
        use[i] = mine[i];
    }
    int fp64 = 0;
    if (rc == 0) {
        rc = fb_refdev_compute(rd, p, use[0], use[1], use[2], timeout_s, ref, &fp64, why, whylen);
        if (rc == -1) rc = 1;
    }
    if (rc != RT_ETIMEOUT)
        for (int i = 0; i < 3; i++)
            if (mine[i]) rt->buf_free(mine[i]);
    if (rc != 0) return rc;
    if (!fp64 && p->dt == DT_FP32) { /* its own error would be a fair share of fp32's bounds */
        snprintf(why, whylen, "the device sums in float (no fp64), too coarse to check fp32 outputs");
        fb_reference_free(ref);
        return 1;
    }
    /* the device's rows must be much closer to the CPU's than any bound: a sixteenth of the
     * rule's floor at the row's size, at most */
    const double tol = fmin(fp64 ? FB_REFDEV_TOL_FP64 : FB_REFDEV_TOL_FP32, fb_row_bound(p->dt, 0, 1) / 16);
    char what[200];
    const int spot = fb_reference_spot_check(ref, q, k, v, FB_SPOT_ROWS, seed, tol, what, sizeof what);
    if (spot != 0) {
        snprintf(why, whylen, "%s", what);
        fb_reference_free(ref);
        return spot < 0 ? -1 : 1;
    }
    ref->on_device = 1;
    fb_reference_finish(ref, seed);
    return 0;
}

int fb_reference_get(fb_refdev *rd, const attn_problem *p, const void *q, const void *k, const void *v, rt_buf *dq,
                     rt_buf *dk, rt_buf *dv, uint64_t seed, double timeout_s, fb_reference *ref, char *err,
                     size_t errlen)
{
    if (fb_reference_matches(ref, p, seed)) return 0;
    fb_reference_free(ref);
    if (rd && shape_out_rows(&p->s) > FB_SPOT_ROWS) {
        char why[FB_ERRLEN] = "";
        const int rc = device_reference(rd, p, q, k, v, dq, dk, dv, seed, timeout_s, ref, why, sizeof why);
        if (rc == 0 || rc == RT_ETIMEOUT) return rc;
        if (rc < 0) { snprintf(err, errlen, "out of memory for the reference"); return -1; }
        if (!rd->warned)
            fprintf(stderr, "fabench: the reference on %s:%d could not be used (%s); every row is computed on the CPU "
                            "instead (slower, as exact)\n", rd->dev.rt->name, rd->dev.index, why);
        rd->warned = 1;
    }
    if (fb_reference_cpu(p, q, k, v, seed, ref) != 0) {
        snprintf(err, errlen, "out of memory for the reference");
        return -1;
    }
    return 0;
}
