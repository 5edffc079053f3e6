/* bandwidth.c: the copy-bandwidth probe (bandwidth.h): stream.k's two kernels compiled per
 * unroll depth, a source buffer of seeded words, and each variant launched, checked against
 * the host's copy of the words, timed, and checked again. */
#include "bandwidth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int unrolls[] = {1, 4};
#define BW_NUNROLL ((int)(sizeof unrolls / sizeof unrolls[0]))
#define BW_POISON 0xdeadbeefu /* what the outputs hold before a launch: one that wrote nothing fails */

struct bw_probe {
    rt_device dev;
    rt_ctx *ctx;
    telemetry *tm;
    rt_module *mod[BW_NUNROLL];
    rt_kernel *copy[BW_NUNROLL], *read[BW_NUNROLL];
    rt_buf *src, *dst, *out;
    uint32_t *host;   /* the source's words */
    uint32_t *back;   /* a download of dst or out */
    size_t bytes;     /* of src and dst */
    size_t out_words; /* the read kernel's outputs: one per work-item of the largest grid */
    uint32_t xor_all; /* of every source word: what the read kernel's outputs XOR to */
    int block;
};

const char *bw_kind_name(bw_kind k) { return k == BW_COPY ? "copy" : "read"; }
const int *bw_unrolls(int *n) { *n = BW_NUNROLL; return unrolls; }
int bw_block(const bw_probe *p) { return p->block; }
telemetry *bw_telemetry(bw_probe *p) { return p->tm; }

size_t bw_default_bytes(const rt_device_info *info)
{
    size_t n = info->l2_bytes ? 8 * info->l2_bytes : 0;
    if (n < ((size_t)256 << 20) || !info->is_gpu) n = (size_t)256 << 20; /* a CPU's "cache" may be its RAM */
    if (info->max_alloc_bytes && n > info->max_alloc_bytes / 4) n = info->max_alloc_bytes / 4;
    if (info->global_bytes && n > info->global_bytes / 8) n = info->global_bytes / 8;
    return n / 16 * 16;
}

static long words16(const bw_probe *p) { return (long)(p->bytes / 16); }

int bw_group_counts(const bw_probe *p, int unroll, long *out, int max)
{
    const long cus = p->dev.info.compute_units > 0 ? p->dev.info.compute_units : 1;
    const long most = p->dev.info.max_grid[0] ? (long)p->dev.info.max_grid[0] : 0x7fffffffL;
    const long flat = (words16(p) + (long)p->block * unroll - 1) / ((long)p->block * unroll);
    int n = 0;
    for (long per = 1; per <= 32 && n < max; per *= 2)
        if (cus * per < flat && cus * per <= most) out[n++] = cus * per;
    if (n < max && flat <= most) out[n++] = flat;
    return n;
}

/* stream.k compiled for each unroll depth; its two kernels taken from each module. The test
 * hook FABENCH_TEST_BW_FAULT=1 compiles kernels that leave the last word out. */
static int compile_all(bw_probe *p, char *err, size_t errlen)
{
    const rt_runtime *rt = p->dev.rt;
    char *src = NULL;
    if (fb_kernel_source(rt->name, "stream.k", &src, err, errlen) != 0) return -1;
    int rc = 0;
    for (int u = 0; u < BW_NUNROLL && rc == 0; u++) {
        char nt[32], un[32];
        snprintf(nt, sizeof nt, "NT=%d", p->block);
        snprintf(un, sizeof un, "UNROLL_N=%d", unrolls[u]);
        const char *fault = getenv("FABENCH_TEST_BW_FAULT");
        const char *defs[] = {nt, un, "BW_FAULT=1"};
        char *log = NULL;
        rc = rt->compile(p->ctx, src, defs, fault && !strcmp(fault, "1") ? 3 : 2, &p->mod[u], &log, err, errlen);
        if (rc == RT_ECOMPILE && log) snprintf(err, errlen, "stream.k did not compile: %.800s", log);
        free(log);
        if (rc == 0) rc = rt->get_kernel(p->mod[u], "stream_copy", &p->copy[u], NULL, err, errlen) ||
                          rt->get_kernel(p->mod[u], "stream_read", &p->read[u], NULL, err, errlen);
    }
    free(src);
    return rc == 0 ? 0 : -1;
}

/* the source's words from seed (xorshift64), kept on the host for the checks */
static void fill_words(bw_probe *p, uint64_t seed)
{
    uint64_t x = seed ? seed : 0x9e3779b97f4a7c15ull;
    p->xor_all = 0;
    for (size_t i = 0; i < p->bytes / 4; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p->host[i] = (uint32_t)(x >> 16);
        p->xor_all ^= p->host[i];
    }
}

static int alloc_all(bw_probe *p, uint64_t seed, char *err, size_t errlen)
{
    const rt_runtime *rt = p->dev.rt;
    long most = 0, g[16];
    for (int u = 0; u < BW_NUNROLL; u++) {
        const int n = bw_group_counts(p, unrolls[u], g, 16);
        for (int i = 0; i < n; i++) most = g[i] > most ? g[i] : most;
    }
    p->out_words = (size_t)most * (size_t)p->block;
    p->host = malloc(p->bytes);
    p->back = malloc(p->bytes > p->out_words * 4 ? p->bytes : p->out_words * 4);
    if (!p->host || !p->back) { snprintf(err, errlen, "out of memory (%zu bytes on the host)", 2 * p->bytes); return -1; }
    fill_words(p, seed);
    return rt->alloc(p->ctx, p->bytes, &p->src, err, errlen) || rt->alloc(p->ctx, p->bytes, &p->dst, err, errlen) ||
                   rt->alloc(p->ctx, p->out_words * 4, &p->out, err, errlen) ||
                   rt->upload(p->ctx, p->src, p->host, p->bytes, err, errlen)
               ? -1
               : 0;
}

int bw_open(const rt_device *dev, size_t buffer_bytes, uint64_t seed, bw_probe **out, char *err, size_t errlen)
{
    if (buffer_bytes < 16 || buffer_bytes % 16) {
        snprintf(err, errlen, "buffer of %zu bytes: must be a positive multiple of 16", buffer_bytes);
        return -1;
    }
    bw_probe *p = calloc(1, sizeof *p);
    if (!p) { snprintf(err, errlen, "out of memory"); return -1; }
    p->dev = *dev;
    p->bytes = buffer_bytes;
    p->block = dev->info.max_group_size && dev->info.max_group_size < BW_GROUP ? (int)dev->info.max_group_size : BW_GROUP;
    if (dev->rt->open(dev->index, &p->ctx, err, errlen) != 0) { free(p); return -1; }
    char why[256]; /* no telemetry is no error: the rows' sm_mhz stays empty */
    if (dev->info.is_gpu && telemetry_open(dev->info.pci, &p->tm, why, sizeof why) != 0) p->tm = NULL;
    if (compile_all(p, err, errlen) != 0 || alloc_all(p, seed, err, errlen) != 0) {
        bw_close(p);
        return -1;
    }
    *out = p;
    return 0;
}

void bw_close(bw_probe *p)
{
    if (!p) return;
    const rt_runtime *rt = p->dev.rt;
    telemetry_close(p->tm);
    rt_buf *bufs[] = {p->src, p->dst, p->out};
    for (int i = 0; i < 3; i++)
        if (bufs[i]) rt->buf_free(bufs[i]);
    for (int u = 0; u < BW_NUNROLL; u++) {
        if (p->copy[u]) rt->kernel_free(p->copy[u]);
        if (p->read[u]) rt->kernel_free(p->read[u]);
        if (p->mod[u]) rt->module_free(p->mod[u]);
    }
    if (p->ctx) rt->close(p->ctx);
    free(p->host);
    free(p->back);
    free(p);
}

/* one launch of a variant, the timer's enqueue_fn */
typedef struct {
    bw_probe *p;
    rt_kernel *k;
    rt_buf *to;
    size_t grid[3], block[3];
} bw_launch;

static int enqueue_stream(void *arg, rt_event **first, rt_event **last, char *err, size_t errlen)
{
    bw_launch *l = arg;
    const rt_arg args[] = {{RT_ARG_BUF, {.buf = l->p->src}}, {RT_ARG_BUF, {.buf = l->to}},
                           {RT_ARG_I64, {.i64 = words16(l->p)}}};
    int rc = l->p->dev.rt->launch(l->p->ctx, l->k, l->grid, l->block, 0, args, 3, first ? first : last, err, errlen);
    if (rc == 0 && first && last) *last = *first; /* one launch: one event for both ends */
    return rc;
}

/* Is the variant's output what its kernel must have written? NULL, or why not. */
static const char *check_output(bw_probe *p, bw_kind kind, size_t out_words, char *err, size_t errlen)
{
    const rt_runtime *rt = p->dev.rt;
    if (kind == BW_COPY) {
        if (rt->download(p->ctx, p->back, p->dst, p->bytes, err, errlen) != 0) return err;
        for (size_t i = 0; i < p->bytes / 4; i++)
            if (p->back[i] != p->host[i]) {
                snprintf(err, errlen, "copied word %zu is %08x, the source's is %08x", i, p->back[i], p->host[i]);
                return err;
            }
        return NULL;
    }
    if (rt->download(p->ctx, p->back, p->out, out_words * 4, err, errlen) != 0) return err;
    uint32_t x = 0;
    for (size_t i = 0; i < out_words; i++) x ^= p->back[i];
    if (x == p->xor_all) return NULL;
    snprintf(err, errlen, "the outputs XOR to %08x, the source's words to %08x", x, p->xor_all);
    return err;
}

static void set_status(bw_result *r, status_t st, const char *why)
{
    r->status = st;
    snprintf(r->reason, sizeof r->reason, "%s", why ? why : "");
}

/* the variant's output overwritten with BW_POISON (a launch that wrote nothing then fails
 * its check): 0, or -1 with err */
static int poison_output(const bw_launch *l, bw_kind kind, size_t out_words, char *err, size_t errlen)
{
    const rt_runtime *rt = l->p->dev.rt;
    const size_t bytes = kind == BW_COPY ? l->p->bytes : out_words * 4;
    return rt->fill && rt->fill(l->p->ctx, l->to, bytes, BW_POISON, err, errlen) != 0 ? -1 : 0;
}

/* poison the variant's output, launch once, wait: 0, or the status it failed with */
static status_t launch_checked(bw_launch *l, bw_kind kind, size_t out_words, const timing_opts *t, char *err,
                               size_t errlen)
{
    const rt_runtime *rt = l->p->dev.rt;
    if (poison_output(l, kind, out_words, err, errlen) != 0) return ST_LAUNCH_ERROR;
    int rc = enqueue_stream(l, NULL, NULL, err, errlen);
    if (rc == 0) rc = rt->finish(l->p->ctx, t->timeout_s, err, errlen);
    if (rc != 0) return rc == RT_ETIMEOUT ? ST_TIMEOUT : rc == RT_ERESOURCE ? ST_RESOURCE_LIMIT : ST_LAUNCH_ERROR;
    return check_output(l->p, kind, out_words, err, errlen) ? ST_WRONG_RESULT : ST_OK;
}

int bw_measure(bw_probe *p, bw_kind kind, long groups, int unroll, const timing_opts *t, bw_result *res, char *err,
               size_t errlen)
{
    int u = 0;
    while (u < BW_NUNROLL && unrolls[u] != unroll) u++;
    *res = (bw_result){.kind = kind, .groups = groups, .block = p->block, .unroll = unroll, .buffer_bytes = p->bytes,
                       .bytes_moved = (kind == BW_COPY ? 2.0 : 1.0) * (double)p->bytes};
    telemetry_none(&res->tel);
    if (u == BW_NUNROLL || groups < 1 || (size_t)groups * (size_t)p->block > p->out_words) {
        set_status(res, ST_UNSUPPORTED, "no such variant (unroll or grid out of the probe's range)");
        return 0;
    }
    const size_t out_words = (size_t)groups * (size_t)p->block;
    if (kind == BW_READ) res->bytes_moved += 4.0 * (double)out_words;
    bw_launch l = {p, kind == BW_COPY ? p->copy[u] : p->read[u], kind == BW_COPY ? p->dst : p->out,
                   {(size_t)groups, 1, 1}, {(size_t)p->block, 1, 1}};
    char why[FB_ERRLEN] = "";
    status_t st = launch_checked(&l, kind, out_words, t, why, sizeof why);
    if (st != ST_OK) { set_status(res, st, why); return st == ST_LAUNCH_ERROR || st == ST_TIMEOUT ? -1 : 0; }
    /* poisoned again: timed runs that wrote nothing would leave it, and the check below fails */
    if (poison_output(&l, kind, out_words, why, sizeof why) != 0) {
        set_status(res, ST_LAUNCH_ERROR, why);
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    timing_opts to = *t;
    to.tm = p->tm;
    int rc = time_device(p->dev.rt, p->ctx, enqueue_stream, &l, &to, &res->us, &res->tel, &res->how, why, sizeof why);
    if (rc != 0) {
        set_status(res, rc == RT_ETIMEOUT ? ST_TIMEOUT : ST_LAUNCH_ERROR, why);
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    if (check_output(p, kind, out_words, why, sizeof why)) { set_status(res, ST_WRONG_RESULT, why); return 0; }
    set_status(res, ST_OK, "");
    return 0;
}
