/* rt_shared.c: the launch checks, argument arrays and bounded waits of the CUDA and HIP
 * runtimes, and the rt_runtime entries they share through their rt_drv (see rt_shared.h). */
#define _GNU_SOURCE
#include "rt_shared.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

char *rt_log_append(char *log, const char *line)
{
    size_t a = log ? strlen(log) : 0, b = strlen(line);
    char *n = realloc(log, a + b + 2);
    if (!n) return log;
    if (a && n[a - 1] != '\n') n[a++] = '\n';
    memcpy(n + a, line, b + 1);
    return n;
}

int rt_check_launch(const char *api, const size_t grid[3], const size_t block[3], const size_t *max_grid,
                    long max_threads, char *err, size_t errlen)
{
    for (int i = 0; i < 3; i++)
        if (grid[i] == 0 || block[i] == 0 || grid[i] > UINT_MAX || block[i] > UINT_MAX ||
            (max_grid && max_grid[i] && grid[i] > max_grid[i])) {
            snprintf(err, errlen, "launch: grid %zux%zux%zu of blocks %zux%zux%zu is beyond %s's limits", grid[0],
                     grid[1], grid[2], block[0], block[1], block[2], api);
            return RT_ERESOURCE;
        }
    const size_t threads = block[0] * block[1] * block[2];
    if (max_threads > 0 && threads > (size_t)max_threads) {
        snprintf(err, errlen, "launch: %zu threads per block; this kernel allows at most %ld", threads, max_threads);
        return RT_ERESOURCE;
    }
    return 0;
}

int rt_params_pack(rt_params *out, const rt_arg *args, int nargs, void (*put_buf)(const rt_buf *, rt_param_slot *),
                   char *err, size_t errlen)
{
    const size_t n = nargs > 0 ? (size_t)nargs : 1;
    out->params = calloc(n, sizeof *out->params);
    out->slots = calloc(n, sizeof *out->slots);
    if (!out->params || !out->slots) {
        rt_params_free(out);
        snprintf(err, errlen, "out of memory");
        return RT_ERR;
    }
    for (int i = 0; i < nargs; i++) {
        switch (args[i].kind) {
        case RT_ARG_BUF: /* a NULL buffer: a null pointer (the slots start zeroed) */
            if (args[i].v.buf) put_buf(args[i].v.buf, &out->slots[i]);
            out->params[i] = &out->slots[i];
            break;
        case RT_ARG_I32: out->params[i] = (void *)&args[i].v.i32; break;
        case RT_ARG_I64: out->params[i] = (void *)&args[i].v.i64; break;
        case RT_ARG_F32: out->params[i] = (void *)&args[i].v.f32; break;
        default:
            rt_params_free(out);
            snprintf(err, errlen, "argument %d: unknown kind", i);
            return RT_ERR;
        }
    }
    return 0;
}

void rt_params_free(rt_params *p)
{
    free(p->params);
    free(p->slots);
    p->params = NULL;
    p->slots = NULL;
}

int rt_poll(int (*query)(void *arg, char *err, size_t errlen), void *arg, double timeout_s, char *err,
            size_t errlen)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        const int q = query(arg, err, errlen);
        if (q <= 0) return q;
        clock_gettime(CLOCK_MONOTONIC, &now);
        const double dt = (double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec);
        if (dt > timeout_s) {
            snprintf(err, errlen, "device work did not finish within %.1f s", timeout_s);
            return RT_ETIMEOUT;
        }
        struct timespec nap = {0, dt < 0.01 ? 100000 : 1000000};
        nanosleep(&nap, NULL);
    }
}

/* ---- the driver-style runtimes ---- */

/* A struct rt_ctx of a driver-style runtime begins with its rt_drv_ctx, and its struct
 * rt_buf is an rt_drv_buf. */
static rt_drv_ctx *head(rt_ctx *c) { return (rt_drv_ctx *)(void *)c; }
static rt_drv_buf *dbuf(rt_buf *b) { return (rt_drv_buf *)(void *)b; }

const char *rt_describe(const char *api, int r, const char *name, const char *str, char *buf, size_t len)
{
    if (name && str) snprintf(buf, len, "%s (%s)", name, str);
    else if (name) snprintf(buf, len, "%s", name);
    else snprintf(buf, len, "%s error %d", api, r);
    return buf;
}

int rt_drv_fail(const rt_drv *d, const char *call, int r, char *err, size_t errlen)
{
    char desc[256];
    snprintf(err, errlen, "%s: %s%s", call, d->describe(r, desc, sizeof desc), d->sticky(r) ? d->sticky_msg : "");
    return RT_ERR;
}

int rt_drv_bind(rt_ctx *c, char *err, size_t errlen)
{
    const rt_drv_ctx *h = head(c);
    const int r = h->drv->select(&h->at);
    if (r != 0) return rt_drv_fail(h->drv, h->drv->name.select, r, err, errlen);
    return 0;
}

int rt_drv_init(rt_drv_devices *devs, int (*once)(char *err, size_t errlen), char *err, size_t errlen)
{
    if (!devs->inited) {
        devs->inited = 1;
        devs->init_rc = once(devs->init_err, sizeof devs->init_err);
        if (devs->init_rc != 0) devs->ndev = 0;
    }
    if (devs->init_rc != 0) snprintf(err, errlen, "%s", devs->init_err);
    return devs->init_rc;
}

int rt_drv_device_info(const rt_drv_devices *devs, int index, rt_device_info *out)
{
    if (index < 0 || index >= devs->ndev) return RT_ERR;
    *out = devs->info[index];
    return 0;
}

int rt_drv_device_count(const rt_drv *d, int *n, const char *none, char *err, size_t errlen)
{
    const int r = d->call.device_count(n);
    if (r != 0) {
        char desc[256];
        FAIL("%s: %s", d->name.device_count, d->describe(r, desc, sizeof desc));
    }
    if (*n <= 0) FAIL("%s", none);
    if (*n > RT_DRV_MAX_DEVICES) *n = RT_DRV_MAX_DEVICES;
    return 0;
}

void *rt_drv_ctx_new(const rt_drv *d, int index, size_t size, char *err, size_t errlen)
{
    if (index < 0 || index >= d->devs->ndev) {
        snprintf(err, errlen, "no %s device %d", d->api, index);
        return NULL;
    }
    rt_drv_ctx *h = calloc(1, size);
    if (!h) {
        snprintf(err, errlen, "%s", "out of memory");
        return NULL;
    }
    h->drv = d;
    snprintf(h->arch, sizeof h->arch, "%s", d->devs->info[index].arch);
    return h;
}

/* ---- memory ---- */

int rt_drv_alloc(rt_ctx *c, size_t bytes, rt_buf **out, char *err, size_t errlen)
{
    const rt_drv_ctx *h = head(c);
    const rt_drv *d = h->drv;
    if (rt_drv_bind(c, err, errlen) != 0) return RT_ERR;
    rt_drv_buf *b = calloc(1, sizeof *b);
    if (!b) FAIL("%s", "out of memory");
    b->drv = d;
    b->at = h->at;
    const int r = d->call.mem_alloc(&b->ptr, bytes ? bytes : 4);
    if (r != 0) {
        char desc[256];
        free(b);
        FAIL("%s(%zu bytes): %s", d->name.mem_alloc, bytes, d->describe(r, desc, sizeof desc));
    }
    *out = (rt_buf *)(void *)b;
    return 0;
}

void rt_drv_buf_free(rt_buf *buf)
{
    if (!buf) return;
    rt_drv_buf *b = dbuf(buf);
    if (b->drv->select(&b->at) == 0) b->drv->call.mem_free(b->ptr);
    free(b);
}

/* After a copy was enqueued: waits for the stream, naming the copy where that fails. */
static int copied(const rt_drv_ctx *h, const char *copy, char *err, size_t errlen)
{
    const rt_drv *d = h->drv;
    const int r = d->call.stream_sync(h->stream);
    if (r != 0) {
        char call[160];
        snprintf(call, sizeof call, "%s after %s", d->name.stream_sync, copy);
        return rt_drv_fail(d, call, r, err, errlen);
    }
    return 0;
}

int rt_drv_upload(rt_ctx *c, rt_buf *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    const rt_drv_ctx *h = head(c);
    const rt_drv *d = h->drv;
    if (rt_drv_bind(c, err, errlen) != 0) return RT_ERR;
    const int r = d->call.htod(dbuf(dst)->ptr, src, bytes, h->stream);
    if (r != 0) return rt_drv_fail(d, d->name.htod, r, err, errlen);
    return copied(h, d->name.htod, err, errlen);
}

int rt_drv_download(rt_ctx *c, void *dst, rt_buf *src, size_t bytes, char *err, size_t errlen)
{
    const rt_drv_ctx *h = head(c);
    const rt_drv *d = h->drv;
    if (rt_drv_bind(c, err, errlen) != 0) return RT_ERR;
    const int r = d->call.dtoh(dst, dbuf(src)->ptr, bytes, h->stream);
    if (r != 0) return rt_drv_fail(d, d->name.dtoh, r, err, errlen);
    return copied(h, d->name.dtoh, err, errlen);
}

int rt_drv_fill(rt_ctx *c, rt_buf *buf, size_t bytes, uint32_t value, char *err, size_t errlen)
{
    const rt_drv_ctx *h = head(c);
    const rt_drv *d = h->drv;
    if (!d->call.memset32) FAIL("%s lacks %s", d->lib, d->name.memset32);
    if (rt_drv_bind(c, err, errlen) != 0) return RT_ERR;
    const int r = d->call.memset32(dbuf(buf)->ptr, value, bytes / 4, h->stream);
    if (r != 0) return rt_drv_fail(d, d->name.memset32, r, err, errlen);
    return 0;
}

/* ---- modules and kernels ---- */

/* Loads m's binary in its context: 0 with *out = m, or RT_ERR with err and m freed. */
static int module_load(rt_module *m, rt_module **out, char *err, size_t errlen)
{
    const rt_drv *d = head(m->c)->drv;
    int r = 0;
    if (rt_drv_bind(m->c, err, errlen) != 0 || (r = d->call.module_load(&m->mod, m->bin)) != 0) {
        if (r != 0) rt_drv_fail(d, d->name.module_load, r, err, errlen);
        free(m->bin); free(m->log); free(m);
        return RT_ERR;
    }
    *out = m;
    return 0;
}

int rt_drv_compile(rt_ctx *c, const char *source, const char *const *defines, int ndefines, rt_module **out,
                   char **log, char *err, size_t errlen)
{
    const rt_drv_ctx *h = head(c);
    void *bin = NULL;
    size_t len = 0;
    char *lg = NULL;
    if (log) *log = NULL;
    const int rc = h->drv->build(h->arch, source, defines, ndefines, &bin, &len, &lg, err, errlen);
    if (rc != 0) {
        if (log) *log = lg;
        else free(lg);
        return rc;
    }
    rt_module *m = calloc(1, sizeof *m);
    if (!m) { free(bin); free(lg); FAIL("%s", "out of memory"); }
    m->c = c;
    m->bin = bin;
    m->binlen = len;
    if (lg) {
        m->log = strdup(lg);
        if (log) *log = lg;
        else free(lg);
    }
    return module_load(m, out, err, errlen);
}

int rt_drv_load_binary(rt_ctx *c, const void *bin, size_t len, const char *log, rt_module **out, char *err,
                       size_t errlen)
{
    rt_module *m = calloc(1, sizeof *m);
    if (!m) FAIL("%s", "out of memory");
    m->c = c;
    m->bin = malloc(len ? len : 1);
    if (!m->bin) { free(m); FAIL("%s", "out of memory"); }
    memcpy(m->bin, bin, len);
    m->binlen = len;
    m->log = log ? strdup(log) : NULL;
    return module_load(m, out, err, errlen);
}

int rt_drv_binary(rt_module *m, void **data, size_t *len)
{
    void *b = malloc(m->binlen ? m->binlen : 1);
    if (!b) return RT_ERR;
    memcpy(b, m->bin, m->binlen);
    *data = b;
    *len = m->binlen;
    return 0;
}

void rt_drv_module_free(rt_module *m)
{
    if (!m) return;
    const rt_drv_ctx *h = head(m->c);
    if (h->drv->select(&h->at) == 0) h->drv->call.module_unload(m->mod);
    free(m->bin);
    free(m->log);
    free(m);
}

void *rt_drv_kernel_new(rt_module *m, const char *name, size_t size, char *err, size_t errlen)
{
    const rt_drv *d = head(m->c)->drv;
    if (rt_drv_bind(m->c, err, errlen) != 0) return NULL;
    void *f;
    const int r = d->call.get_function(&f, m->mod, name);
    if (r != 0) {
        char desc[256];
        snprintf(err, errlen, "%s(%s): %s (is it declared extern \"C\" __global__?)", d->name.get_function, name,
                 d->describe(r, desc, sizeof desc));
        return NULL;
    }
    void **k = calloc(1, size);
    if (!k) {
        snprintf(err, errlen, "%s", "out of memory");
        return NULL;
    }
    *k = f; /* the first member of the runtime's struct rt_kernel */
    return k;
}

void rt_drv_kernel_free(rt_kernel *k) { free(k); }

/* ---- launches, waiting, timing ---- */

int rt_drv_launch_check(rt_ctx *c, const size_t grid[3], const size_t block[3], const size_t *max_grid,
                        long max_threads, char *err, size_t errlen)
{
    if (rt_drv_bind(c, err, errlen) != 0) return RT_ERR;
    return rt_check_launch(head(c)->drv->api, grid, block, max_grid, max_threads, err, errlen);
}

int rt_drv_enqueue(rt_ctx *c, void *fn, const size_t grid[3], const size_t block[3], size_t dyn_shared,
                   const rt_arg *args, int nargs, void (*put_buf)(const rt_buf *, rt_param_slot *), rt_event **ev,
                   char *err, size_t errlen)
{
    const rt_drv_ctx *h = head(c);
    const rt_drv *d = h->drv;
    rt_params pp;
    if (rt_params_pack(&pp, args, nargs, put_buf, err, errlen) != 0) return RT_ERR;
    rt_event *re = NULL;
    int r;
    if (ev) {
        re = calloc(1, sizeof *re);
        if (!re) { rt_params_free(&pp); FAIL("%s", "out of memory"); }
        re->drv = d;
        r = d->call.event_create(&re->start, 0); /* flags 0: CU_EVENT_DEFAULT, hipEventDefault */
        if (r == 0) {
            r = d->call.event_create(&re->stop, 0);
            if (r != 0) d->call.event_destroy(re->start);
        }
        if (r != 0) RT_DRV_FAIL(d, d->name.event_create, r, free(re), rt_params_free(&pp));
        r = d->call.event_record(re->start, h->stream);
        if (r != 0) goto fail;
    }
    r = d->call.launch(fn, (unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2], (unsigned)block[0],
                       (unsigned)block[1], (unsigned)block[2], (unsigned)dyn_shared, h->stream, pp.params, NULL);
    if (r != 0) goto fail;
    if (re) {
        r = d->call.event_record(re->stop, h->stream);
        if (r != 0) goto fail;
        *ev = re;
    }
    rt_params_free(&pp);
    return 0;
fail: {
        char desc[256];
        d->describe(r, desc, sizeof desc);
        const int res = r == d->out_of_resources || r == d->invalid_value;
        snprintf(err, errlen, "%s (grid %zux%zux%zu, block %zux%zux%zu, %zu bytes dynamic %s): %s%s", d->name.launch,
                 grid[0], grid[1], grid[2], block[0], block[1], block[2], dyn_shared, d->shared_mem, desc,
                 d->sticky(r) ? d->sticky_msg : "");
        if (re) {
            d->call.event_destroy(re->start);
            d->call.event_destroy(re->stop);
            free(re);
        }
        rt_params_free(&pp);
        return res ? RT_ERESOURCE : RT_ERR;
    }
}

/* "queued work failed: call: description" */
static int work_failed(const rt_drv *d, const char *call, int r, char *err, size_t errlen)
{
    char what[160];
    snprintf(what, sizeof what, "queued work failed: %s", call);
    return rt_drv_fail(d, what, r, err, errlen);
}

/* rt_poll's query: 0 once the stream of the rt_drv_ctx arg is idle, 1 while not */
static int stream_done(void *arg, char *err, size_t errlen)
{
    const rt_drv_ctx *h = arg;
    const rt_drv *d = h->drv;
    const int r = d->call.stream_query(h->stream);
    if (r == 0) return 0;
    if (r != d->not_ready) return work_failed(d, d->name.stream_query, r, err, errlen);
    return 1;
}

int rt_drv_finish(rt_ctx *c, double timeout_s, char *err, size_t errlen)
{
    rt_drv_ctx *h = head(c);
    const rt_drv *d = h->drv;
    if (rt_drv_bind(c, err, errlen) != 0) return RT_ERR;
    if (timeout_s <= 0) {
        const int r = d->call.stream_sync(h->stream);
        if (r != 0) return work_failed(d, d->name.stream_sync, r, err, errlen);
        return 0;
    }
    return rt_poll(stream_done, h, timeout_s, err, errlen);
}

int rt_drv_elapsed_ms(rt_ctx *c, rt_event *first, rt_event *last, double *ms)
{
    const rt_drv *d = last->drv;
    if (c && d->select(&head(c)->at) != 0) return RT_ERR;
    if (d->call.event_sync(last->stop) != 0) return RT_ERR;
    float f = 0;
    if (d->call.event_elapsed(&f, first->start, last->stop) != 0) return RT_ERR;
    *ms = f;
    return 0;
}

void rt_drv_event_free(rt_event *ev)
{
    if (!ev) return;
    ev->drv->call.event_destroy(ev->start);
    if (ev->stop != ev->start) ev->drv->call.event_destroy(ev->stop); /* a mark is one event */
    free(ev);
}

/* ---- the runtime compilers ---- */

int rt_rtc_try(rt_rtc *x, const char *path, int flags, int (*take)(void *h, const char *path), char *dlerr,
               size_t dlerrlen)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | flags);
    if (!h) {
        if (!dlerr[0] && !flags) snprintf(dlerr, dlerrlen, "%s", dlerror());
        else (void)dlerror();
        return 0;
    }
    if (!take(h, path)) {
        dlclose(h);
        return 0;
    }
    x->handle = h;
    snprintf(x->path, sizeof x->path, "%s", path);
    return 1;
}

void rt_rtc_try_in(rt_rtc *x, const char *dir, const char *const *names, size_t nn,
                   int (*take)(void *h, const char *path), char *dlerr, size_t dlerrlen)
{
    for (size_t i = 0; i < nn && !x->handle; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        rt_rtc_try(x, path, 0, take, dlerr, dlerrlen);
    }
}

int rt_rtc_load(rt_rtc *x, void (*load_once)(void), char *err, size_t errlen)
{
    pthread_once(&x->once, load_once);
    if (!x->ok) FAIL("%s", x->why);
    return 0;
}

int rt_defines(const char *const *defines, int ndefines, char ***defs, char *err, size_t errlen)
{
    *defs = calloc((size_t)ndefines + 1, sizeof **defs);
    if (!*defs) FAIL("%s", "out of memory");
    for (int i = 0; i < ndefines; i++) {
        size_t l = strlen(defines[i]) + 3;
        (*defs)[i] = malloc(l);
        if (!(*defs)[i]) FAIL("%s", "out of memory");
        snprintf((*defs)[i], l, "-D%s", defines[i]);
    }
    return 0;
}

void rt_defines_free(char **defs, int ndefines)
{
    if (!defs) return;
    for (int i = 0; i < ndefines; i++) free(defs[i]);
    free(defs);
}

/* prog's log (malloc'd; empty where the compiler gives none), NULL without memory */
static char *rtc_log(const rt_rtc *x, void *prog)
{
    size_t n = 0;
    if (x->call.log_size(prog, &n) != 0) n = 0;
    char *log = malloc(n + 1);
    if (!log) return NULL;
    if (n && x->call.log(prog, log) != 0) n = 0;
    log[n] = 0;
    return log;
}

/* Compiles source with opts: see rt_rtc_build. */
static int rtc_compile(const rt_rtc *x, const char *arch, const char *source, const char *const *opts, int no,
                       void **bin, size_t *len, char **log, char *err, size_t errlen)
{
    void *p = NULL;
    int r = x->call.create(&p, source, x->file, 0, NULL, NULL);
    if (r != 0) FAIL("%sCreateProgram: %s", x->prefix, x->call.error_string(r));
    r = x->call.compile(p, no, opts);
    char *lg = rtc_log(x, p);
    int rc;
    if (r != 0) {
        char line[1024];
        int o = snprintf(line, sizeof line, "%sCompileProgram (%s %d.%d, %s): %s; options:", x->prefix, x->name,
                         x->major, x->minor, arch, x->call.error_string(r));
        for (int i = 0; i < no && o > 0 && (size_t)o < sizeof line; i++)
            o += snprintf(line + o, sizeof line - (size_t)o, " %s", opts[i]);
        if (x->refused) x->refused(arch, r, &lg, line, sizeof line, o);
        lg = rt_log_append(lg, line);
        if (x->no_diagnostic && !strstr(lg, "error")) lg = rt_log_append(lg, x->no_diagnostic);
        snprintf(err, errlen, "%s", line);
        rc = r == x->compilation || r == x->invalid_option ? RT_ECOMPILE : RT_ERR;
    } else {
        rc = x->get_code(arch, p, bin, len, err, errlen);
    }
    x->call.destroy(&p);
    if (log) *log = lg;
    else free(lg);
    return rc;
}

int rt_rtc_build(const rt_rtc *x, const char *arch, const char *source, const char *const *fixed, int nfixed,
                 const char *const *defines, int ndefines, void **bin, size_t *len, char **log, char *err,
                 size_t errlen)
{
    char **defs = NULL;
    const char **opts = calloc((size_t)(nfixed + ndefines) + 1, sizeof *opts);
    if (!opts || rt_defines(defines, ndefines, &defs, err, errlen) != 0) {
        free(opts);
        rt_defines_free(defs, ndefines);
        FAIL("%s", "out of memory");
    }
    int no = 0;
    for (int i = 0; i < nfixed; i++) opts[no++] = fixed[i];
    for (int i = 0; i < ndefines; i++) opts[no++] = defs[i];
    const int rc = rtc_compile(x, arch, source, opts, no, bin, len, log, err, errlen);
    rt_defines_free(defs, ndefines);
    free(opts);
    return rc;
}
