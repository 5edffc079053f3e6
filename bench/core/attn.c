/* attn.c: the portable kernel on one device: source assembly (prelude + body), compiled
 * modules memoised per define set, inputs, launch, verification, timing. */
#include "attn.h"

#include "cache.h"
#include "refdev.h"

#include <math.h>
#include <pthread.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MODULES 128

typedef struct {
    char key[ATTN_KEY_LEN]; /* the define set */
    status_t status;      /* ok, compile_error, resource_limit */
    char reason[512];
    rt_module *mod;
    rt_kernel *fwd, *combine;
    rt_kernel_attrs attrs;
    double compile_ms;
    int from_cache;
} module_entry;

/* The inputs of the last shape run, on the host and on the device: a tuner times many
 * configurations of one shape, and regenerating and uploading Q, K and V for each would
 * cost more than timing them. Dropped after any run that did not end ok. */
typedef struct {
    int valid;
    int batch, hq, hkv, sq, skv, d;
    int nlens, nqlens;
    double lens[FB_MAX_LENS], qlens[FB_MAX_LENS];
    dtype_t dt;
    uint64_t seed;
    void *h[3];
    rt_buf *b[3];
} input_cache;

/* PoCL's clang prints only "N warning(s) generated." on stderr, the warnings' text goes to
 * the build log: each distinct warning line of a log is shown once, the first few of them. */
#define WARN_SHOWN_MAX 8

struct attn_runner {
    rt_device dev;
    input_cache in;
    rt_ctx *ctx;
    fb_refdev *refdev;     /* the reference kernel on this device */
    fb_reference ref;      /* the full reference of the last problem, kept across candidates (its
                            * inputs are a function of the problem and seed: it outlives them) */
    char *source;
    module_entry mods[MAX_MODULES];
    int nmods;
    long compiled, cached; /* binaries built here, binaries loaded from the disk cache */
    int broken;            /* 1: a launch timed out, the device still runs it, nothing more is trusted;
                            * 2: a kernel fault left the context unusable (CUDA's, HIP's sticky errors) */
    char broken_why[256];
    telemetry *tm;         /* the GPU's clocks and power while timing (NULL: no NVML, not a GPU) */
    /* the compilers' warnings shown so far (compiles run on several threads) */
    pthread_mutex_t warn_lock;
    char *warned[WARN_SHOWN_MAX];
    int nwarned, warned_more;
};

int attn_unusable(const attn_runner *r) { return r->broken != 0; }

/* 1 for a line of a compile log that is a warning (clang's and PoCL's "warning:",
 * NVRTC's "warning #"), not its notes or the "N warnings generated." count. */
static int is_warning_line(const char *p, size_t n)
{
    for (size_t i = 0; i + 8 < n; i++)
        if (!memcmp(p + i, "warning", 7) && (p[i + 7] == ':' || (p[i + 7] == ' ' && p[i + 8] == '#'))) return 1;
    return 0;
}

/* Shows the warnings of a fresh compile's log on stderr, each distinct line once per runner
 * and at most WARN_SHOWN_MAX of them (then one line saying more were left out). */
static void show_warnings(attn_runner *r, const char *log)
{
    if (!log) return;
    pthread_mutex_lock(&r->warn_lock);
    for (const char *p = log; *p;) {
        const char *e = strchr(p, '\n');
        const size_t n = e ? (size_t)(e - p) : strlen(p);
        int seen = !is_warning_line(p, n);
        for (int i = 0; i < r->nwarned && !seen; i++) seen = strlen(r->warned[i]) == n && !memcmp(r->warned[i], p, n);
        if (!seen && r->nwarned < WARN_SHOWN_MAX && (r->warned[r->nwarned] = strndup(p, n))) {
            r->nwarned++;
            fprintf(stderr, "fabench: %s compiler: %.*s\n", r->dev.rt->name, (int)n, p);
        } else if (!seen && !r->warned_more) {
            r->warned_more = 1;
            fprintf(stderr, "fabench: %s compiler: more warnings, not shown\n", r->dev.rt->name);
        }
        p += n + (e != NULL);
    }
    pthread_mutex_unlock(&r->warn_lock);
}

void attn_counts(const attn_runner *r, long *compiled, long *cached)
{
    *compiled = r->compiled;
    *cached = r->cached;
}

/* The disk-cache key of one configuration's binary on this runner's device. */
static void module_cache_key(const attn_runner *r, const char *defines_key, char out[33])
{
    const rt_device_info *i = &r->dev.info;
    const char *parts[] = {r->source, defines_key, r->dev.rt->name, i->name, i->arch, i->driver,
                           i->runtime_version, i->compiler, i->platform};
    cache_key(parts, (int)(sizeof parts / sizeof parts[0]), out);
}

void attn_opts_defaults(attn_opts *o)
{
    timing_defaults(&o->timing);
    o->seed = 20250505;
    o->write_lse = 1;
    o->verify_only = 0;
}

/* The kernel, split by family and role (FlashAttention-3's hopper/ split): what every
 * family shares, the split-KV merge, the wgmma keys every family checks, then one family
 * of tile primitives and kernel per MMA value (each file compiles to nothing for the
 * others): wgmma's scheduler, producer, consumer and epilogue, the tensor-core kernel;
 * and attn_combine. */
const char *const attn_kernel_files[] = {"common.k", "fuse.k", "wgmma_keys.k", "mfma.k", "fma.k", "mma.k", "wgmma.k",
                                         "wgmma_sched.k", "wgmma_produce.k", "wgmma_consume.k", "wgmma_epilogue.k", "mma_fwd.k",
                                         "combine.k", NULL};

int attn_source(const char *runtime, char **out, char *err, size_t errlen)
{
    return fb_kernel_source_files(runtime, attn_kernel_files, out, err, errlen);
}

int attn_open(const rt_device *dev, attn_runner **out, char *err, size_t errlen)
{
    attn_runner *r = calloc(1, sizeof *r);
    if (!r) { snprintf(err, errlen, "out of memory"); return -1; }
    r->dev = *dev;
    if (attn_source(dev->rt->name, &r->source, err, errlen) != 0) { free(r); return -1; }
    if (dev->rt->open(dev->index, &r->ctx, err, errlen) != 0) {
        free(r->source);
        free(r);
        return -1;
    }
    if (fb_refdev_open(dev, r->ctx, &r->refdev, err, errlen) != 0) {
        dev->rt->close(r->ctx);
        free(r->source);
        free(r);
        return -1;
    }
    pthread_mutex_init(&r->warn_lock, NULL);
    char why[256]; /* no telemetry is no error: the manifest says why */
    if (dev->info.is_gpu && telemetry_open(dev->info.pci, &r->tm, why, sizeof why) != 0) r->tm = NULL;
    *out = r;
    return 0;
}

static void inputs_drop(attn_runner *r, int free_device)
{
    input_cache *c = &r->in;
    for (int i = 0; i < 3; i++) {
        if (free_device && c->b[i]) r->dev.rt->buf_free(c->b[i]);
        free(c->h[i]);
    }
    memset(c, 0, sizeof *c);
}

/* The split partials (b[5] rows, b[6] log-sum-exps) start poisoned, as O does: a split
 * that writes none of its rows must not pass on what an earlier configuration left in a
 * reused allocation (their layout does not depend on the tile sizes). Enqueued in order
 * with the launches; nothing without split-KV or a fill. 0 or -1 (err). */
static int poison_partials(attn_runner *r, size_t split, rt_buf *const *b, const size_t *bytes, char *err, size_t errlen)
{
    const rt_runtime *rt = r->dev.rt;
    if (split < 2 || !rt->fill) return 0;
    return rt->fill(r->ctx, b[5], bytes[5], FB_POISON_F32, err, errlen) || rt->fill(r->ctx, b[6], bytes[6], FB_POISON_F32, err, errlen)
               ? -1
               : 0;
}

/* Q, K and V of the shape (host copies and device buffers), generated and uploaded only
 * when the last run's differ. 0, RT_ERESOURCE (reason says why) or -1 (err). */
static int inputs_get(attn_runner *r, const shape_t *s, dtype_t dt, uint64_t seed, const size_t bytes[3],
                      char *reason, size_t rlen, char *err, size_t errlen)
{
    input_cache *c = &r->in;
    if (c->valid && c->batch == s->batch && c->hq == s->hq && c->hkv == s->hkv && c->sq == s->sq && c->skv == s->skv &&
        c->d == s->d && c->dt == dt && c->seed == seed && c->nlens == s->nlens &&
        memcmp(c->lens, s->lens, sizeof c->lens) == 0 && c->nqlens == s->nqlens &&
        memcmp(c->qlens, s->qlens, sizeof c->qlens) == 0)
        return 0;
    inputs_drop(r, 1);
    const rt_runtime *rt = r->dev.rt;
    for (int i = 0; i < 3; i++)
        if (!(c->h[i] = malloc(bytes[i]))) {
            snprintf(reason, rlen, "host memory exhausted for inputs");
            inputs_drop(r, 1);
            return RT_ERESOURCE;
        }
    fb_fill_inputs(s, dt, seed, c->h[0], c->h[1], c->h[2]);
    for (int i = 0; i < 3; i++)
        if (rt->alloc(r->ctx, bytes[i], &c->b[i], reason, rlen) != 0) {
            inputs_drop(r, 1);
            return RT_ERESOURCE;
        }
    for (int i = 0; i < 3; i++)
        if (rt->upload(r->ctx, c->b[i], c->h[i], bytes[i], err, errlen)) {
            inputs_drop(r, 1);
            return -1;
        }
    c->valid = 1;
    c->batch = s->batch; c->hq = s->hq; c->hkv = s->hkv; c->sq = s->sq; c->skv = s->skv; c->d = s->d;
    c->nlens = s->nlens;
    memcpy(c->lens, s->lens, sizeof c->lens);
    c->nqlens = s->nqlens;
    memcpy(c->qlens, s->qlens, sizeof c->qlens);
    c->dt = dt;
    c->seed = seed;
    return 0;
}

static void warnings_free(attn_runner *r)
{
    for (int i = 0; i < r->nwarned; i++) free(r->warned[i]);
    pthread_mutex_destroy(&r->warn_lock);
}

void attn_close(attn_runner *r)
{
    if (!r) return;
    telemetry_close(r->tm);
    fb_reference_free(&r->ref);
    if (r->broken) { /* a kernel may still run: releasing the context could wait for it forever */
        inputs_drop(r, 0);
        warnings_free(r);
        fb_refdev_close(r->refdev, 0);
        free(r->source);
        free(r);
        return;
    }
    const rt_runtime *rt = r->dev.rt;
    inputs_drop(r, 1);
    for (int i = 0; i < r->nmods; i++) {
        if (r->mods[i].fwd) rt->kernel_free(r->mods[i].fwd);
        if (r->mods[i].combine) rt->kernel_free(r->mods[i].combine);
        if (r->mods[i].mod) rt->module_free(r->mods[i].mod);
    }
    fb_refdev_close(r->refdev, 1);
    rt->close(r->ctx);
    free(r->source);
    warnings_free(r);
    free(r);
}

/* First line of a compiler log that mentions an error, for the reason column. */
/* A paged shape's K and V as the kernel reads them: pages [batch * pages_per_seq, hkv, page,
 * d] in a seeded random order, a block table [batch, pages_per_seq] naming each sequence's
 * pages, and the tail of the last page of every sequence filled with NaN (the kernel must
 * never use it). hk, hv: the dense [batch, hkv, skv, d] inputs the reference reads.
 * pg[0], pg[1]: K and V; pg[2]: the table. 0, RT_ERESOURCE (reason) or -1 (err). */
static int paged_upload(attn_runner *r, const shape_t *s, size_t es, const void *hk, const void *hv, uint64_t seed,
                        rt_buf *pg[3], char *reason, size_t rlen, char *err, size_t errlen)
{
    const rt_runtime *rt = r->dev.rt;
    const int maxp = shape_pages_per_seq(s);
    const size_t npages = (size_t)s->batch * (size_t)maxp, row = (size_t)s->d * es;
    const size_t bytes = npages * (size_t)s->hkv * (size_t)s->page * row, tb = npages * sizeof(int32_t);
    if (r->dev.info.max_alloc_bytes && bytes > r->dev.info.max_alloc_bytes) {
        snprintf(reason, rlen, "the paged K/V cache (%zu bytes) exceeds the device's largest allocation (%zu)", bytes,
                 r->dev.info.max_alloc_bytes);
        return RT_ERESOURCE;
    }
    unsigned char *buf = malloc(bytes);
    int32_t *bt = malloc(tb);
    int rc = 0;
    if (!buf || !bt) {
        snprintf(reason, rlen, "host memory exhausted for the paged K/V cache");
        rc = RT_ERESOURCE;
        goto out;
    }
    fb_page_table(s, seed, bt);
    for (int kv = 0; kv < 2 && rc == 0; kv++) {
        fb_page_scatter(s, es, bt, kv ? hv : hk, buf, 0xff); /* tails NaN */
        if (rt->alloc(r->ctx, bytes, &pg[kv], reason, rlen) != 0) rc = RT_ERESOURCE;
        else if (rt->upload(r->ctx, pg[kv], buf, bytes, err, errlen) != 0) rc = -1;
    }
    if (rc == 0) {
        if (rt->alloc(r->ctx, tb, &pg[2], reason, rlen) != 0) rc = RT_ERESOURCE;
        else if (rt->upload(r->ctx, pg[2], bt, tb, err, errlen) != 0) rc = -1;
    }
out:
    free(buf);
    free(bt);
    return rc;
}

/* A 3-d tensor map of `planes` [rows, d] matrices of 16-bit elements, boxes of 64 columns
 * x box_rows rows (the 128-byte swizzle), encoded into out. 0, or 1 with reason. */
static int plane_map(const rt_runtime *rt, rt_buf *buf, const shape_t *s, dtype_t dt, uint64_t rows, uint64_t planes,
                     int box_rows, unsigned char *out, char *reason, size_t rlen)
{
    const uint64_t row_bytes = (uint64_t)s->d * dtype_size(dt);
    rt_tensor_map_desc d = {.rank = 3,
                            .dims = {(uint64_t)s->d, rows, planes},
                            .strides = {row_bytes, rows * row_bytes},
                            .box = {64, (uint32_t)box_rows, 1},
                            .bf16 = dt == DT_BF16};
    return rt->tensor_map(buf, &d, out, reason, rlen) != 0;
}

/* WG_TMA: the tensor maps the kernel's TMAPS argument holds (fb_tmaps), 128 bytes each, encoded by the
 * runtime and uploaded into *tm: K's and V's (dense [batch * hkv] planes of [skv, d], ragged
 * [hkv] planes of [total keys, d]: the kernel adds the sequence's first key to the row;
 * boxes of BLOCK_N rows), then with WG_QTMA (q not NULL) Q's ([batch * hq] planes of [sq, d],
 * boxes of BLOCK_M rows) and with WG_OTMA (o not NULL) O's (the same planes, boxes of a
 * warpgroup's 64 rows). Q and O are dense only (kconfig_check), so the maps' bounds are
 * each head's SQ rows. 0; 1 the runtime has no encoder or refused these tensors (reason);
 * RT_ERESOURCE (reason) or -1 (err). */
static int tma_upload(attn_runner *r, const shape_t *s, dtype_t dt, const kconfig *c, rt_buf *q, rt_buf *k, rt_buf *v,
                      rt_buf *o, rt_buf **tm, char *reason, size_t rlen, char *err, size_t errlen)
{
    const rt_runtime *rt = r->dev.rt;
    if (!rt->tensor_map) {
        snprintf(reason, rlen, "WG_TMA=1: the %s runtime encodes no tensor maps", rt->name);
        return 1;
    }
    const uint64_t rows = shape_ragged(s) ? (uint64_t)shape_total_kv(s) : (uint64_t)s->skv;
    const uint64_t planes = shape_ragged(s) ? (uint64_t)s->hkv : (uint64_t)s->batch * (uint64_t)s->hkv;
    const uint64_t qplanes = (uint64_t)s->batch * (uint64_t)s->hq;
    /* the kernel's fb_tmaps (kernels/common.k); the unused maps uploaded as zeros */
    struct { _Alignas(64) unsigned char k[128], v[128], q[128], o[128]; } maps;
    memset(&maps, 0, sizeof maps);
    if (plane_map(rt, k, s, dt, rows, planes, c->block_n, maps.k, reason, rlen) ||
        plane_map(rt, v, s, dt, rows, planes, c->block_n, maps.v, reason, rlen) ||
        (q && plane_map(rt, q, s, dt, (uint64_t)s->sq, qplanes, c->block_m, maps.q, reason, rlen)) ||
        (o && plane_map(rt, o, s, dt, (uint64_t)s->sq, qplanes, 64, maps.o, reason, rlen)))
        return 1;
    if (rt->alloc(r->ctx, sizeof maps, tm, reason, rlen) != 0) return RT_ERESOURCE;
    return rt->upload(r->ctx, *tm, &maps, sizeof maps, err, errlen) != 0 ? -1 : 0;
}

static void log_reason(const char *log, const char *fallback, char *out, size_t len)
{
    const char *p = log ? strstr(log, "error") : NULL;
    if (!p) { snprintf(out, len, "%.*s", len > 1 ? (int)(len - 1) : 0, fallback); return; } /* cut to fit */
    const char *b = p;
    while (b > log && b[-1] != '\n') b--;
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - b) : strlen(b);
    if (n >= len) n = len - 1;
    memcpy(out, b, n);
    out[n] = 0;
}

/* Appends one -D define to defs (nd of them so far); the table is sized for every define
 * attn_defines can write at once, so running out is a programming error, as is a define
 * cut short. */
static void add_define(char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN], int *nd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = *nd < ATTN_MAX_DEFINES ? vsnprintf(defs[*nd], ATTN_DEFINE_LEN, fmt, ap) : -1;
    va_end(ap);
    if (n < 0 || n >= ATTN_DEFINE_LEN) {
        fprintf(stderr, "fabench: internal error: kernel define %d does not fit (%d defines of %d bytes)\n", *nd,
                ATTN_MAX_DEFINES, ATTN_DEFINE_LEN);
        abort();
    }
    (*nd)++;
}

int attn_defines(const shape_t *s, dtype_t dt, const kconfig *c, int write_lse,
                 char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN])
{
    int nd = 0;
    add_define(defs, &nd, "HEAD_DIM=%d", s->d);
    add_define(defs, &nd, "DTYPE=%d", (int)dt);
    add_define(defs, &nd, "CAUSAL=%d", s->causal ? 1 : 0);
    for (int k = 0; k < KNOB_COUNT; k++) /* the knobs as kconfig_str shows them, by number */
        if (kconfig_shows(c, (knob_id)k)) add_define(defs, &nd, "%s=%d", knob((knob_id)k)->key, kconfig_get(c, (knob_id)k));
    add_define(defs, &nd, "WRITE_LSE=%d", write_lse ? 1 : 0);
    /* wgmma exists only on the architecture-specific target (sm_90a): the runtime compiles for it */
    if (c->mma == MMA_WGMMA) add_define(defs, &nd, "ARCH_SPECIFIC=1");
    if (shape_ragged(s)) add_define(defs, &nd, "VARLEN=1");
    if (shape_paged(s)) {
        add_define(defs, &nd, "PAGED=1");
        add_define(defs, &nd, "PAGE=%d", s->page);
    }
    if (kconfig_fault(c)) add_define(defs, &nd, "%s=1", kconfig_fault(c)); /* a test hook: one at a time */
    return nd;
}

/* The define set as one string, each define followed by a space: a module's name in the
 * runner and, hashed, in the binary cache. Every define is shorter than ATTN_DEFINE_LEN, so
 * ATTN_KEY_LEN holds them all. */
static void defines_key(char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN], int nd, char key[ATTN_KEY_LEN])
{
    size_t o = 0;
    key[0] = 0;
    for (int i = 0; i < nd; i++) {
        size_t n = strlen(defs[i]);
        memcpy(key + o, defs[i], n);
        key[o + n] = ' ';
        o += n + 1;
    }
    key[o] = 0;
}

static module_entry *get_module(attn_runner *r, const shape_t *s, dtype_t dt, const kconfig *c, int write_lse)
{
    char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN];
    int nd = attn_defines(s, dt, c, write_lse, defs);

    char key[ATTN_KEY_LEN];
    defines_key(defs, nd, key);
    for (int i = 0; i < r->nmods; i++)
        if (!strcmp(r->mods[i].key, key)) {
            r->mods[i].compile_ms = 0;
            return &r->mods[i];
        }
    if (r->nmods == MAX_MODULES) { /* forget the oldest */
        module_entry *old = &r->mods[0];
        const rt_runtime *rt = r->dev.rt;
        if (old->fwd) rt->kernel_free(old->fwd);
        if (old->combine) rt->kernel_free(old->combine);
        if (old->mod) rt->module_free(old->mod);
        memmove(&r->mods[0], &r->mods[1], sizeof r->mods[0] * (MAX_MODULES - 1));
        r->nmods--;
    }
    module_entry *m = &r->mods[r->nmods++];
    memset(m, 0, sizeof *m);
    snprintf(m->key, sizeof m->key, "%s", key);

    const char *dp[ATTN_MAX_DEFINES];
    for (int i = 0; i < nd; i++) dp[i] = defs[i];
    char *log = NULL, err[FB_ERRLEN] = "";
    const rt_runtime *rt = r->dev.rt;
    char ckey[33];
    module_cache_key(r, key, ckey);
    void *cbin;
    size_t clen;
    char *clog = NULL;
    int rc = -1;
    if (rt->load_binary && cache_get(ckey, &cbin, &clen, &clog)) {
        rc = rt->load_binary(r->ctx, cbin, clen, clog, &m->mod, err, sizeof err);
        free(cbin);
        free(clog);
        if (rc == 0) {
            m->from_cache = 1;
            r->cached++;
        }
    }
    double t0 = fb_now();
    if (rc != 0) {
        rc = rt->compile(r->ctx, r->source, dp, nd, &m->mod, &log, err, sizeof err);
        m->compile_ms = (fb_now() - t0) * 1e3;
        if (rc == 0) show_warnings(r, log); /* a failed compile's log is its reason */
        r->compiled++;
        void *bin;
        size_t blen;
        if (rc == 0 && rt->binary(m->mod, &bin, &blen) == 0) {
            cache_put(ckey, bin, blen, log);
            free(bin);
        }
    }
    if (rc != 0) {
        m->status = rc == RT_ERESOURCE ? ST_RESOURCE_LIMIT : ST_COMPILE_ERROR;
        log_reason(log, err, m->reason, sizeof m->reason);
        free(log);
        return m;
    }
    free(log);
    if (rt->get_kernel(m->mod, "attn_fwd", &m->fwd, &m->attrs, err, sizeof err) != 0 ||
        (c->split_kv > 1 && rt->get_kernel(m->mod, "attn_combine", &m->combine, NULL, err, sizeof err) != 0)) {
        m->status = ST_COMPILE_ERROR;
        snprintf(m->reason, sizeof m->reason, "%.500s", err);
        return m;
    }
    long nt = kconfig_threads(c);
    if (m->attrs.max_threads > 0 && m->attrs.max_threads < nt) {
        m->status = ST_RESOURCE_LIMIT;
        snprintf(m->reason, sizeof m->reason, "compiled kernel allows %ld threads per group, config needs %ld",
                 m->attrs.max_threads, nt);
    } else if (m->attrs.shared_bytes >= 0 && r->dev.info.shared_bytes &&
               (size_t)m->attrs.shared_bytes + kconfig_dynamic_shared(c, s->d) > r->dev.info.shared_bytes) {
        m->status = ST_RESOURCE_LIMIT;
        snprintf(m->reason, sizeof m->reason, "kernel uses %zu bytes of shared memory > %zu",
                 (size_t)m->attrs.shared_bytes + kconfig_dynamic_shared(c, s->d), r->dev.info.shared_bytes);
    } else {
        m->status = ST_OK;
    }
    return m;
}

/* ---- parallel compilation into the disk cache ---- */

struct attn_precompile_job {
    attn_runner *r;
    shape_t *s;               /* n shapes, or one for every candidate (ns = 1) */
    dtype_t *dt;
    long ns;
    kconfig *cands;           /* a copy: the caller's array may go */
    long n, next;
    int write_lse;
    long built;
    double deadline;          /* fb_now() after which nothing new starts; 0: none */
    const volatile int *stop; /* set by a signal handler: stop starting compiles */
    int offline;              /* compile_offline for the device's arch: no context, so it can
                               * run beside timing without touching the GPU */
    pthread_mutex_t lock;
    pthread_t tid[64];
    int nthreads;
};
typedef struct attn_precompile_job precompile_job;

static void *precompile_worker(void *arg)
{
    precompile_job *j = arg;
    const rt_runtime *rt = j->r->dev.rt;
    for (;;) {
        pthread_mutex_lock(&j->lock);
        long i = j->next++;
        pthread_mutex_unlock(&j->lock);
        if (i >= j->n || (j->stop && *j->stop) || (j->deadline > 0 && fb_now() > j->deadline)) break;
        char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN], key[ATTN_KEY_LEN], ckey[33];
        const char *dp[ATTN_MAX_DEFINES];
        const long si = j->ns == 1 ? 0 : i;
        int nd = attn_defines(&j->s[si], j->dt[si], &j->cands[i], j->write_lse, defs);
        for (int k = 0; k < nd; k++) dp[k] = defs[k];
        defines_key(defs, nd, key);
        module_cache_key(j->r, key, ckey);
        void *bin;
        size_t len;
        if (cache_get(ckey, &bin, &len, NULL)) { free(bin); continue; }
        rt_module *mod = NULL;
        char *log = NULL, err[FB_ERRLEN];
        if (j->offline) {
            /* the same compiler and options as compile, without loading the module */
            if (rt->compile_offline(j->r->dev.info.arch, j->r->source, dp, nd, "attn_fwd", &bin, &len, NULL, &log, err,
                                    sizeof err) == 0) {
                show_warnings(j->r, log);
                cache_put(ckey, bin, len, log);
                free(bin);
                pthread_mutex_lock(&j->lock);
                j->built++;
                pthread_mutex_unlock(&j->lock);
            }
        } else if (rt->compile(j->r->ctx, j->r->source, dp, nd, &mod, &log, err, sizeof err) == 0) {
            show_warnings(j->r, log);
            if (rt->binary(mod, &bin, &len) == 0) {
                cache_put(ckey, bin, len, log);
                free(bin);
            }
            rt->module_free(mod);
            pthread_mutex_lock(&j->lock);
            j->built++;
            pthread_mutex_unlock(&j->lock);
        }
        free(log); /* a failed compile is compiled again, and recorded, when it is run */
    }
    return NULL;
}

static void precompile_free(precompile_job *j)
{
    free(j->cands);
    free(j->s);
    free(j->dt);
    free(j);
}

/* A job over n candidates of ns shapes (1: one shape for all), copied. */
static precompile_job *precompile_job_new(const shape_t *s, const dtype_t *dt, long ns, const kconfig *cands, long n)
{
    precompile_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    const size_t nn = (size_t)(n > 0 ? n : 1), nsh = (size_t)(ns > 0 ? ns : 1);
    j->cands = malloc(sizeof *cands * nn);
    j->s = malloc(sizeof *s * nsh);
    j->dt = malloc(sizeof *dt * nsh);
    if (!j->cands || !j->s || !j->dt) { precompile_free(j); return NULL; }
    memcpy(j->cands, cands, sizeof *cands * (size_t)(n > 0 ? n : 0));
    memcpy(j->s, s, sizeof *s * nsh);
    memcpy(j->dt, dt, sizeof *dt * nsh);
    j->ns = ns;
    j->n = n;
    return j;
}

attn_precompile_job *attn_precompile_start(attn_runner *r, const shape_t *s, dtype_t dt, const kconfig *cands, long n,
                                           int write_lse, double deadline, const volatile int *stop)
{
    precompile_job *j = precompile_job_new(s, &dt, 1, cands, n);
    if (!j) return NULL;
    j->r = r;
    j->write_lse = write_lse;
    j->deadline = deadline;
    j->stop = stop;
    /* FABENCH_PRECOMPILE_SYNC=1: the old way, everything compiled before timing starts */
    const char *sync = getenv("FABENCH_PRECOMPILE_SYNC");
    j->offline = r->dev.rt->compile_offline != NULL && r->dev.info.arch[0] && !(sync && *sync && strcmp(sync, "0"));
    pthread_mutex_init(&j->lock, NULL);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nth = ncpu > 1 ? (int)(ncpu > 64 ? 64 : ncpu) : 1;
    /* in the background, one core is left to the caller's verification and launches */
    int bg = j->offline ? nth - 1 : 0;
    for (int t = 0; t < bg; t++)
        if (pthread_create(&j->tid[j->nthreads], NULL, precompile_worker, j) == 0) j->nthreads++;
    if (!j->nthreads) { /* no background compiler: all cores now, before the caller goes on */
        for (int t = 1; t < nth; t++)
            if (pthread_create(&j->tid[j->nthreads], NULL, precompile_worker, j) == 0) j->nthreads++;
        precompile_worker(j);
        for (int t = 0; t < j->nthreads; t++) pthread_join(j->tid[t], NULL);
        j->nthreads = 0;
    }
    return j;
}

long attn_precompile_wait(attn_precompile_job *j, int cancel)
{
    if (!j) return 0;
    if (cancel) {
        pthread_mutex_lock(&j->lock);
        j->next = j->n; /* nothing new starts; compiles under way finish */
        pthread_mutex_unlock(&j->lock);
    }
    for (int t = 0; t < j->nthreads; t++) pthread_join(j->tid[t], NULL);
    pthread_mutex_destroy(&j->lock);
    long built = j->built;
    j->r->compiled += built;
    precompile_free(j);
    return built;
}

long attn_precompile_shapes(attn_runner *r, const shape_t *shapes, const dtype_t *dts, const kconfig *cfgs, long n,
                            int write_lse)
{
    precompile_job *j = precompile_job_new(shapes, dts, n, cfgs, n);
    if (!j) return 0;
    j->r = r;
    j->write_lse = write_lse;
    for (long i = 0; i < n; i++) kconfig_complete(&j->cands[i], &r->dev.info, &j->s[i], j->dt[i]);
    pthread_mutex_init(&j->lock, NULL);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nth = ncpu > 1 ? (int)(ncpu > 64 ? 64 : ncpu) : 1;
    j->offline = r->dev.rt->compile_offline != NULL && r->dev.info.arch[0];
    for (int t = 1; t < nth; t++)
        if (pthread_create(&j->tid[j->nthreads], NULL, precompile_worker, j) == 0) j->nthreads++;
    precompile_worker(j);
    return attn_precompile_wait(j, 0);
}

long attn_precompile(attn_runner *r, const shape_t *s, dtype_t dt, const kconfig *cands, long n, int write_lse,
                     double deadline, const volatile int *stop)
{
    return attn_precompile_wait(attn_precompile_start(r, s, dt, cands, n, write_lse, deadline, stop), 0);
}

/* The forward kernel's arguments, in its order (kernels/common.k, ATTN_ARGS): every one is
 * passed in every configuration, those it does not read as NULL or 0. */
typedef struct {
    rt_buf *q, *k, *v, *o, *lse, *opart, *lsepart;
    int32_t hq, hkv, sq, skv; /* sq, skv: rows per (batch, head); ragged: of the packed tensors */
    float scale;
    rt_buf *cu_q, *cu_k;      /* VARLEN: cumulative sequence lengths */
    rt_buf *bt;               /* PAGED: the block table, maxp pages per sequence */
    int32_t maxp;
    rt_buf *tmaps;            /* WG_TMA: the tensor maps (tma_upload) */
    int32_t ngrp;             /* WG_PERSIST: the (batch, head) groups */
    rt_buf *sched, *fuse_cnt; /* WG_DYNAMIC's and SPLIT_FUSE's counters */
} fwd_args;
#define FWD_NARGS 20

static void fwd_args_pack(const fwd_args *a, rt_arg out[FWD_NARGS])
{
    rt_buf *const bufs[] = {a->q, a->k, a->v, a->o, a->lse, a->opart, a->lsepart};
    for (int i = 0; i < 7; i++) out[i] = (rt_arg){.kind = RT_ARG_BUF, .v.buf = bufs[i]};
    const int32_t ints[] = {a->hq, a->hkv, a->sq, a->skv};
    for (int i = 0; i < 4; i++) out[7 + i] = (rt_arg){.kind = RT_ARG_I32, .v.i32 = ints[i]};
    out[11] = (rt_arg){.kind = RT_ARG_F32, .v.f32 = a->scale};
    out[12] = (rt_arg){.kind = RT_ARG_BUF, .v.buf = a->cu_q};
    out[13] = (rt_arg){.kind = RT_ARG_BUF, .v.buf = a->cu_k};
    out[14] = (rt_arg){.kind = RT_ARG_BUF, .v.buf = a->bt};
    out[15] = (rt_arg){.kind = RT_ARG_I32, .v.i32 = a->maxp};
    out[16] = (rt_arg){.kind = RT_ARG_BUF, .v.buf = a->tmaps};
    out[17] = (rt_arg){.kind = RT_ARG_I32, .v.i32 = a->ngrp};
    out[18] = (rt_arg){.kind = RT_ARG_BUF, .v.buf = a->sched};
    out[19] = (rt_arg){.kind = RT_ARG_BUF, .v.buf = a->fuse_cnt};
}

/* Everything one launch sequence needs; the enqueue callback of the timer. */
typedef struct {
    attn_runner *r;
    module_entry *m;
    size_t grid[3], block[3], cgrid[3], dyn_shared;
    rt_arg args[FWD_NARGS], cargs[5];
    int split;
} launch_plan;

/* The timer's enqueue_fn: the forward launch, and attn_combine's after it for a split. */
static int enqueue_plan(void *arg, rt_event **first, rt_event **last, char *err, size_t errlen)
{
    launch_plan *p = arg;
    const rt_runtime *rt = p->r->dev.rt;
    const int two = p->split > 1;
    rt_event **fwd_ev = first ? first : two ? NULL : last; /* one launch: one event for both ends */
    int rc = rt->launch(p->r->ctx, p->m->fwd, p->grid, p->block, p->dyn_shared, p->args, FWD_NARGS, fwd_ev, err, errlen);
    if (rc != 0) return rc;
    if (two) {
        rc = rt->launch(p->r->ctx, p->m->combine, p->cgrid, p->block, 0, p->cargs, 5, last, err, errlen);
        if (rc != 0 && first) { rt->event_free(*first); *first = NULL; }
        return rc;
    }
    if (first && last) *last = *first;
    return 0;
}

static void set_status(attn_result *res, status_t st, const char *reason)
{
    res->status = st;
    snprintf(res->reason, sizeof res->reason, "%s", reason);
}

/* n int32 counters on the device, zeroed: 0, RT_ERESOURCE (reason: no room) or -1 (err). */
static int zeroed_counters(attn_runner *r, size_t n, rt_buf **out, char *reason, size_t rlen, char *err, size_t errlen)
{
    const rt_runtime *rt = r->dev.rt;
    int32_t *zero = calloc(n ? n : 1, sizeof *zero);
    if (!zero) { snprintf(err, errlen, "out of host memory"); return -1; }
    int rc = rt->alloc(r->ctx, n * sizeof *zero, out, reason, rlen) != 0 ? RT_ERESOURCE
             : rt->upload(r->ctx, *out, zero, n * sizeof *zero, err, errlen) != 0 ? -1 : 0;
    free(zero);
    return rc;
}

/* O carries a guard band after its end, poisoned like O: a kernel that writes past the
 * end is caught even where the device does not fault */
#define O_GUARD ((size_t)65536)

/* One attn_run, from its buffers' sizes to its result: each step below takes it, and
 * attn_call_end frees what the steps allocated (or leaves it to a kernel still running). */
typedef struct {
    attn_runner *r;
    const shape_t *s;
    dtype_t dt;
    const kconfig *c;     /* the configuration as completed: res->config */
    const attn_opts *o;
    attn_result *res;
    char *err;            /* the caller's: why the harness cannot go on (attn_run's -1) */
    size_t errlen;
    char reason[512];     /* what a status says: one buffer for all the steps, as it was */
    module_entry *m;
    size_t es, nq, rows, split;
    size_t bytes[7];      /* Q, K, V, O with its guard band, LSE, the split partials' rows and LSEs */
    void *ho, *ho2;       /* O as the checked run left it, and as the timed runs did */
    float *hl;            /* the LSE as the checked run left it */
    int32_t *hcu;         /* ragged: cu_seqlens of Q, then of K/V, on the host */
    rt_buf *b[7];         /* Q, K, V (the runner's input cache), O, LSE, split partials */
    rt_buf *cu[2];        /* ragged: cu_seqlens of Q and of K/V */
    rt_buf *pg[3];        /* paged: K and V in pages, the block table */
    rt_buf *tm;           /* WG_TMA: the tensor maps of K and V */
    rt_buf *sched;        /* WG_DYNAMIC: the scheduler's two counters */
    rt_buf *fuse;         /* SPLIT_FUSE: the arrivals at each query block */
    launch_plan p;        /* the launches, as the check and the timer enqueue them */
} attn_call;

/* A step's outcome: go on to the next; or stop, res holding the row's status. -1: the
 * harness cannot go on (err). */
enum { STEP_GO = 0, STEP_DONE = 1 };

/* A helper's 0, RT_ERESOURCE (a->reason) or -1 (a->err) as a step's: a resource_limit row
 * for what did not fit, -1 for the rest */
static int helper_step(attn_call *a, int rc)
{
    if (rc == RT_ERESOURCE) {
        set_status(a->res, ST_RESOURCE_LIMIT, a->reason);
        return STEP_DONE;
    }
    return rc != 0 ? -1 : STEP_GO;
}

/* res as a run starts it: no status, no readings, registers unknown, and the configuration
 * completed with the device's and the shape's defaults (what the row names) */
static void result_start(const attn_runner *r, const shape_t *s, dtype_t dt, const kconfig *cfg, attn_result *res)
{
    memset(res, 0, sizeof *res);
    telemetry_none(&res->tel);
    res->attrs.registers = res->attrs.spill_bytes = -1;
    res->config = *cfg;
    kconfig_complete(&res->config, &r->dev.info, s, dt);
}

/* The configuration checked against the device and the shape, and its module compiled or
 * found: a configuration that cannot run is a status (unsupported, compile_error, ...) */
static int config_module(attn_call *a)
{
    status_t st = kconfig_check(a->c, &a->r->dev.info, a->s, a->dt, a->reason, sizeof a->reason);
    if (st != ST_OK) { set_status(a->res, st, a->reason); return STEP_DONE; }
    a->m = get_module(a->r, a->s, a->dt, a->c, a->o->write_lse);
    a->res->compile_ms = a->m->compile_ms;
    a->res->attrs = a->m->attrs;
    if (a->m->status != ST_OK) { set_status(a->res, a->m->status, a->m->reason); return STEP_DONE; }
    return STEP_GO;
}

/* The buffers' sizes; one larger than the device's largest allocation is a resource_limit
 * row, found before anything is allocated */
static int size_buffers(attn_call *a)
{
    const shape_t *s = a->s;
    const size_t max = a->r->dev.info.max_alloc_bytes;
    a->es = dtype_size(a->dt);
    a->nq = shape_q_elems(s); /* ragged batches: packed per head, real tokens only */
    a->rows = shape_out_rows(s);
    a->split = (size_t)a->c->split_kv;
    const size_t nkv = shape_kv_elems(s), es = a->es, rows = a->rows, split = a->split;
    const size_t bytes[7] = {a->nq * es, nkv * es, nkv * es, a->nq * es + O_GUARD, rows * 4,
                             split > 1 ? rows * split * (size_t)s->d * 4 : 4, split > 1 ? rows * split * 4 : 4};
    memcpy(a->bytes, bytes, sizeof bytes);
    for (int i = 0; i < 7; i++)
        if (max && bytes[i] > max) {
            snprintf(a->reason, sizeof a->reason, "a %zu-byte buffer exceeds the device's largest allocation (%zu)",
                     bytes[i], max);
            set_status(a->res, ST_RESOURCE_LIMIT, a->reason);
            return STEP_DONE;
        }
    return STEP_GO;
}

/* The host's copies of O (one for the checked run, one for the timed runs: compared after)
 * and of the LSE, and a ragged batch's cu_seqlens */
static int host_buffers(attn_call *a)
{
    const int ragged = shape_ragged(a->s);
    a->ho = malloc(a->bytes[3]);
    a->ho2 = malloc(a->bytes[3]);
    a->hl = malloc(a->bytes[4]);
    if (ragged) a->hcu = malloc(2 * ((size_t)a->s->batch + 1) * sizeof *a->hcu);
    if (!a->ho || !a->ho2 || !a->hl || (ragged && !a->hcu)) {
        set_status(a->res, ST_RESOURCE_LIMIT, "host memory exhausted for outputs");
        return STEP_DONE;
    }
    return STEP_GO;
}

/* Q, K and V on the host and the device: the runner's own when the last run's were these */
static int get_inputs(attn_call *a)
{
    const int rc = inputs_get(a->r, a->s, a->dt, a->o->seed, a->bytes, a->reason, sizeof a->reason, a->err, a->errlen);
    if (rc == 0)
        for (int i = 0; i < 3; i++) a->b[i] = a->r->in.b[i];
    return helper_step(a, rc);
}

/* The reference of every row, before this configuration runs on the inputs (kept for the
 * next configurations of the problem). A reference kernel that never finishes is a
 * timeout, as a hang of ours is (attn_call_end: the device is not trusted again). */
static int get_reference(attn_call *a)
{
    attn_runner *r = a->r;
    attn_problem prob = {.s = *a->s, .dt = a->dt, .scale = 1.0 / sqrt((double)a->s->d)};
    const double ref_timeout = 20 * a->o->timing.timeout_s; /* a plain kernel: much slower than ours */
    const int rc = fb_reference_get(r->refdev, &prob, r->in.h[0], r->in.h[1], r->in.h[2], a->b[0], a->b[1], a->b[2],
                                    a->o->seed, ref_timeout, &r->ref, a->reason, sizeof a->reason);
    if (rc == RT_ETIMEOUT) {
        snprintf(a->res->reason, sizeof a->res->reason, "the reference kernel did not finish within %.0f s", ref_timeout);
        a->res->status = ST_TIMEOUT;
        return STEP_DONE;
    }
    if (rc != 0) { set_status(a->res, ST_RESOURCE_LIMIT, a->reason); return STEP_DONE; } /* not a verdict */
    return STEP_GO;
}

/* A paged shape's K and V in pages and its block table, as the kernel reads them */
static int upload_pages(attn_call *a)
{
    if (!shape_paged(a->s)) return STEP_GO;
    const int rc = paged_upload(a->r, a->s, a->es, a->r->in.h[1], a->r->in.h[2], a->o->seed, a->pg, a->reason,
                                sizeof a->reason, a->err, a->errlen);
    if (rc == 0) { /* the kernel reads the pages; the reference the dense inputs */
        a->b[1] = a->pg[0];
        a->b[2] = a->pg[1];
    }
    return helper_step(a, rc);
}

/* O (with its guard band), the LSE and the split partials on the device */
static int alloc_outputs(attn_call *a)
{
    for (int i = 3; i < 7; i++)
        if (a->r->dev.rt->alloc(a->r->ctx, a->bytes[i], &a->b[i], a->reason, sizeof a->reason) != 0) {
            set_status(a->res, ST_RESOURCE_LIMIT, a->reason);
            return STEP_DONE;
        }
    return STEP_GO;
}

/* A ragged batch's cumulative sequence lengths of Q and of K/V on the device: where each
 * sequence starts in the packed tensors */
static int upload_cu_seqlens(attn_call *a)
{
    if (!shape_ragged(a->s)) return STEP_GO;
    const rt_runtime *rt = a->r->dev.rt;
    const int batch = a->s->batch;
    const size_t cb = ((size_t)batch + 1) * sizeof *a->hcu;
    shape_cu_seqlens(a->s, a->hcu, a->hcu + batch + 1);
    for (int i = 0; i < 2; i++)
        if (rt->alloc(a->r->ctx, cb, &a->cu[i], a->reason, sizeof a->reason) != 0) {
            set_status(a->res, ST_RESOURCE_LIMIT, a->reason);
            return STEP_DONE;
        }
    if (rt->upload(a->r->ctx, a->cu[0], a->hcu, cb, a->err, a->errlen) ||
        rt->upload(a->r->ctx, a->cu[1], a->hcu + batch + 1, cb, a->err, a->errlen))
        return -1;
    return STEP_GO;
}

/* O, the LSE and the split partials poisoned on the device before the checked run: what
 * the kernel leaves unwritten reads back as poison, not as a reused allocation's values */
static int poison_outputs(attn_call *a)
{
    const rt_runtime *rt = a->r->dev.rt;
    fb_poison(a->ho, a->bytes[3] / a->es, a->dt);
    fb_poison_f32(a->hl, a->rows);
    if (rt->upload(a->r->ctx, a->b[3], a->ho, a->bytes[3], a->err, a->errlen) ||
        rt->upload(a->r->ctx, a->b[4], a->hl, a->bytes[4], a->err, a->errlen) ||
        poison_partials(a->r, a->split, a->b, a->bytes, a->err, a->errlen))
        return -1;
    return STEP_GO;
}

/* WG_TMA: K's and V's tensor maps on the device (Q's with WG_QTMA, O's with WG_OTMA), into
 * fa; a runtime that cannot encode them is a launch_error row */
static int upload_tma_maps(attn_call *a, fwd_args *fa)
{
    const kconfig *c = a->c;
    if (!c->wg_tma) return STEP_GO;
    const int rc = tma_upload(a->r, a->s, a->dt, c, c->wg_qtma ? a->b[0] : NULL, a->b[1], a->b[2], c->wg_otma ? a->b[3] : NULL,
                              &a->tm, a->reason, sizeof a->reason, a->err, a->errlen);
    if (rc == 1) { set_status(a->res, ST_LAUNCH_ERROR, a->reason); return STEP_DONE; }
    if (rc == 0) fa->tmaps = a->tm;
    return helper_step(a, rc);
}

/* Counters the kernel's launches share, zero here; each launch leaves them zero again.
 * SCHED (WG_DYNAMIC): the scheduler's two. FUSE_CNT (SPLIT_FUSE): one per query block of
 * the grid (as WG_PERSIST left it). Into fa. */
static int zero_counters(attn_call *a, fwd_args *fa)
{
    const launch_plan *p = &a->p;
    struct { int on; size_t n; rt_buf **buf; } counters[] = {{a->c->wg_dynamic, 2, &a->sched},
                                                             {a->c->split_fuse, p->grid[0] * p->grid[1], &a->fuse}};
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++) {
        if (!counters[i].on) continue;
        const int rc = helper_step(a, zeroed_counters(a->r, counters[i].n, counters[i].buf, a->reason, sizeof a->reason,
                                                      a->err, a->errlen));
        if (rc != STEP_GO) return rc;
    }
    fa->sched = a->sched;
    fa->fuse_cnt = a->fuse;
    return STEP_GO;
}

/* The launches as the check and the timer enqueue them (a->p): the forward kernel's grid,
 * block and arguments, with what the configuration's features need on the device first,
 * and attn_combine's grid and arguments for a split */
static int plan_launch(attn_call *a)
{
    const kconfig *c = a->c;
    const shape_t *s = a->s;
    launch_plan *p = &a->p;
    rt_buf *const *b = a->b;
    const int ragged = shape_ragged(s);
    /* SPLIT_FUSE: the splits merge their rows themselves, no attn_combine launch */
    *p = (launch_plan){.r = a->r, .m = a->m, .split = c->split_fuse ? 1 : (int)a->split,
                       .dyn_shared = kconfig_dynamic_shared(c, s->d)};
    kconfig_grid(c, s, p->grid);
    p->block[0] = (size_t)kconfig_threads(c);
    p->block[1] = p->block[2] = 1;
    fwd_args fa = {.q = b[0], .k = b[1], .v = b[2], .o = b[3], .lse = b[4], .opart = b[5], .lsepart = b[6],
                   .hq = s->hq, .hkv = s->hkv,
                   .sq = ragged ? (int32_t)shape_total_q(s) : s->sq, .skv = ragged ? (int32_t)shape_total_kv(s) : s->skv,
                   .scale = (float)(1.0 / sqrt((double)s->d)), .cu_q = a->cu[0], .cu_k = a->cu[1]};
    if (shape_paged(s)) {
        fa.bt = a->pg[2];
        fa.maxp = shape_pages_per_seq(s);
    }
    int rc = upload_tma_maps(a, &fa);
    if (rc != STEP_GO) return rc;
    if (c->wg_persist) { /* one row of work-groups, one per SM, walks all the query blocks */
        const size_t items = p->grid[0] * p->grid[1];
        const size_t sms = a->r->dev.info.compute_units > 0 ? (size_t)a->r->dev.info.compute_units : 1;
        fa.ngrp = (int32_t)p->grid[1];
        p->grid[0] = items < sms ? items : sms;
        p->grid[1] = 1;
    }
    if ((rc = zero_counters(a, &fa)) != STEP_GO) return rc;
    fwd_args_pack(&fa, p->args);
    p->cgrid[0] = a->rows;
    p->cgrid[1] = p->cgrid[2] = 1;
    p->cargs[0] = (rt_arg){.kind = RT_ARG_BUF, .v.buf = b[5]};
    p->cargs[1] = (rt_arg){.kind = RT_ARG_BUF, .v.buf = b[6]};
    p->cargs[2] = (rt_arg){.kind = RT_ARG_BUF, .v.buf = b[3]};
    p->cargs[3] = (rt_arg){.kind = RT_ARG_BUF, .v.buf = b[4]};
    p->cargs[4] = (rt_arg){.kind = RT_ARG_I32, .v.i32 = (int32_t)a->rows};
    return STEP_GO;
}

/* One launch sequence, waited for at most --timeout, its O and LSE downloaded: a launch
 * that fails, or hangs (a timeout), is the row's status */
static int launch_once(attn_call *a)
{
    const rt_runtime *rt = a->r->dev.rt;
    rt_event *e1 = NULL, *e2 = NULL;
    int rc = enqueue_plan(&a->p, &e1, &e2, a->reason, sizeof a->reason);
    if (rc == 0) {
        rc = rt->finish(a->r->ctx, a->o->timing.timeout_s, a->reason, sizeof a->reason);
        if (e2 != e1) rt->event_free(e2);
        rt->event_free(e1);
    }
    if (rc != 0) {
        set_status(a->res, rc == RT_ETIMEOUT ? ST_TIMEOUT : rc == RT_ERESOURCE ? ST_RESOURCE_LIMIT : ST_LAUNCH_ERROR, a->reason);
        return STEP_DONE;
    }
    if (rt->download(a->r->ctx, a->ho, a->b[3], a->bytes[3], a->err, a->errlen) ||
        rt->download(a->r->ctx, a->hl, a->b[4], a->bytes[4], a->err, a->errlen))
        return -1;
    return STEP_GO;
}

/* The checked run's output: its guard band as poisoned (a kernel that wrote past O's end
 * is wrong), then every element against the reference. --verify-only ends here, ok. */
static int check_output(attn_call *a)
{
    attn_result *res = a->res;
    unsigned char *g = (unsigned char *)a->ho + a->nq * a->es, *want = malloc(O_GUARD);
    size_t bad = 0;
    if (want) {
        fb_poison(want, O_GUARD / a->es, a->dt);
        for (size_t i = 0; i < O_GUARD; i++) bad += g[i] != want[i];
        free(want);
    }
    if (bad) {
        snprintf(a->reason, sizeof a->reason, "the kernel wrote past the end of O (%zu bytes of the %zu-byte guard band changed)",
                 bad, O_GUARD);
        set_status(res, ST_WRONG_RESULT, a->reason);
        return STEP_DONE;
    }
    if (fb_verify_full(&a->r->ref, a->ho, a->o->write_lse ? a->hl : NULL, &res->ver) < 0) {
        set_status(res, ST_RESOURCE_LIMIT, res->ver.reason); /* the reference could not run: not a verdict */
        return STEP_DONE;
    }
    if (!res->ver.pass) { set_status(res, ST_WRONG_RESULT, res->ver.reason); return STEP_DONE; }
    if (a->o->verify_only) { set_status(res, ST_OK, ""); return STEP_DONE; }
    return STEP_GO;
}

/* The timed runs under the protocol (time_device), then their O compared bit for bit with
 * the checked run's: the timed runs must have computed the same bits, and a race, or
 * counters a launch did not reset for the next, shows up here */
static int run_timed(attn_call *a)
{
    attn_runner *r = a->r;
    const rt_runtime *rt = r->dev.rt;
    /* Kernels whose launches meet on counters that the launch before must have reset
     * (WG_DYNAMIC, SPLIT_FUSE): the timed runs start from a poisoned O, so that a launch
     * that found its counters wrong and wrote nothing cannot pass for one that matched. */
    const int counted = a->c->wg_dynamic || a->c->split_fuse;
    if (counted) {
        fb_poison(a->ho2, a->bytes[3] / a->es, a->dt);
        if (rt->upload(r->ctx, a->b[3], a->ho2, a->bytes[3], a->err, a->errlen) ||
            poison_partials(r, a->split, a->b, a->bytes, a->err, a->errlen))
            return -1;
    }
    timing_opts topt = a->o->timing;
    topt.tm = r->tm;
    const int rc = time_device(rt, r->ctx, enqueue_plan, &a->p, &topt, &a->res->us, &a->res->tel, &a->res->how, a->reason,
                               sizeof a->reason);
    if (rc != 0) {
        set_status(a->res, rc == RT_ETIMEOUT ? ST_TIMEOUT : ST_LAUNCH_ERROR, a->reason);
        return STEP_DONE;
    }
    if (rt->download(r->ctx, a->ho2, a->b[3], a->bytes[3], a->err, a->errlen)) return -1;
    if (memcmp(a->ho, a->ho2, a->bytes[3]) != 0) {
        set_status(a->res, ST_WRONG_RESULT, counted ? "output changed between repeated runs (a race, or counters not reset for the next launch?)"
                                                    : "output changed between repeated runs (a race?)");
        return STEP_DONE;
    }
    return STEP_GO;
}

/* A timeout: the kernel may still be running on the run's buffers, so they are left to it,
 * and nothing this device does is trusted from now on (the next rows say so instead of
 * timing garbage) */
static void forsake_device(attn_call *a)
{
    attn_runner *r = a->r;
    r->broken = 1;
    snprintf(r->broken_why, sizeof r->broken_why, "an earlier launch (%s) never finished", a->s->name);
    memset(a->b, 0, sizeof a->b);
    memset(a->cu, 0, sizeof a->cu);
    memset(a->pg, 0, sizeof a->pg);
    a->tm = NULL;
    a->sched = NULL;
    a->fuse = NULL;
    inputs_drop(r, 0);
}

/* After the steps (ret: attn_run's return): a hang forsakes the device, a kernel fault that
 * left the context unusable is remembered, the buffers are freed, and the inputs dropped
 * after a run that went wrong */
static void attn_call_end(attn_call *a, int ret)
{
    attn_runner *r = a->r;
    const attn_result *res = a->res;
    const rt_runtime *rt = r->dev.rt;
    if (res->status == ST_TIMEOUT) forsake_device(a);
    /* a kernel fault that leaves the context unusable: the later rows say so, instead of
     * failing to load or allocate under another status */
    if (!r->broken && (strstr(res->reason, RT_UNUSABLE) || (ret != 0 && strstr(a->err, RT_UNUSABLE)))) {
        r->broken = 2;
        snprintf(r->broken_why, sizeof r->broken_why, "a kernel fault in an earlier launch (%s) left it unusable in this process",
                 a->s->name);
    }
    for (int i = 3; i < 7; i++) if (a->b[i]) rt->buf_free(a->b[i]);
    for (int i = 0; i < 2; i++) if (a->cu[i]) rt->buf_free(a->cu[i]);
    for (int i = 0; i < 3; i++) if (a->pg[i]) rt->buf_free(a->pg[i]);
    if (a->tm) rt->buf_free(a->tm);
    if (a->sched) rt->buf_free(a->sched);
    if (a->fuse) rt->buf_free(a->fuse);
    free(a->hcu);
    /* a run that went wrong may have written anywhere: the next one starts from fresh inputs */
    if (ret != 0 || (res->status != ST_OK && res->status != ST_RESOURCE_LIMIT && res->status != ST_UNSUPPORTED &&
                     res->status != ST_COMPILE_ERROR))
        inputs_drop(r, !r->broken);
    free(a->ho); free(a->ho2); free(a->hl);
}

int attn_run(attn_runner *r, const shape_t *s, dtype_t dt, const kconfig *cfg, const attn_opts *o,
             attn_result *res, char *err, size_t errlen)
{
    result_start(r, s, dt, cfg, res);
    if (r->broken) { /* after a hang or a fault: said in the row, the device left alone */
        snprintf(res->reason, sizeof res->reason, "device unusable: %s; start a new run", r->broken_why);
        res->status = r->broken == 1 ? ST_TIMEOUT : ST_LAUNCH_ERROR;
        return 0;
    }
    attn_call a = {.r = r, .s = s, .dt = dt, .c = &res->config, .o = o, .res = res, .err = err, .errlen = errlen};
    if (config_module(&a) != STEP_GO || size_buffers(&a) != STEP_GO) return 0; /* a status; nothing allocated */
    int rc = host_buffers(&a);
    if (rc == STEP_GO) rc = get_inputs(&a);
    if (rc == STEP_GO) rc = get_reference(&a);
    if (rc == STEP_GO) rc = upload_pages(&a);
    if (rc == STEP_GO) rc = alloc_outputs(&a);
    if (rc == STEP_GO) rc = upload_cu_seqlens(&a);
    if (rc == STEP_GO) rc = poison_outputs(&a);
    if (rc == STEP_GO) rc = plan_launch(&a);
    if (rc == STEP_GO) rc = launch_once(&a);
    if (rc == STEP_GO) rc = check_output(&a);
    if (rc == STEP_GO) rc = run_timed(&a);
    if (rc == STEP_GO) set_status(res, ST_OK, "");
    const int ret = rc < 0 ? -1 : 0;
    attn_call_end(&a, ret);
    return ret;
}
