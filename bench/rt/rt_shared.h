/* rt_shared.h: what the CUDA and HIP runtimes have in common. Both drive a driver-style
 * API (a module, a function, cuLaunchKernel / hipModuleLaunchKernel with an array of
 * pointers to the arguments, a stream that is polled), so the checks before a launch, the
 * argument array and the bounded wait are written once, here; and so is every rt_runtime
 * entry that differs between the two only in which call it makes (rt_drv below). */
#ifndef FABENCH_RT_SHARED_H
#define FABENCH_RT_SHARED_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "rt.h"

/* snprintf into the caller's err and errlen, then return RT_ERR from the caller */
#define FAIL(fmt, ...) do { snprintf(err, errlen, fmt, __VA_ARGS__); return RT_ERR; } while (0)

/* cuda.c and hip.c declare each library's calls as a list X(member, symbol, return,
 * parameters, required): the member is the API's name, the symbol the versioned one (_v2)
 * where the headers map the name onto one. RT_API_TYPEDEF makes the list's function types
 * (member_fn) and RT_API_MEMBER the members that hold them; RT_API_LOAD loads one from lib
 * into st.member and runs the statements after req where a required one is missing (sym
 * names it). */
#define RT_API_TYPEDEF(member, sym, ret, params, req) typedef ret (*member##_fn) params;
#define RT_API_MEMBER(member, sym, ret, params, req) member##_fn member;
#define RT_API_LOAD(st, lib, member, sym, req, ...)                                         \
    if (!((st).member = (member##_fn)dlsym(lib, sym)) && (req)) { __VA_ARGS__; }

/* log with line appended on a line of its own; log may be NULL. On allocation failure
 * the old log is returned unchanged. */
char *rt_log_append(char *log, const char *line);

/* 0 when grid and block fit a launch (nonzero, at most UINT_MAX, within max_grid where it
 * is given and nonzero, and at most max_threads threads a block where that is positive);
 * else RT_ERESOURCE with err naming the launch and `api`'s limits. */
int rt_check_launch(const char *api, const size_t grid[3], const size_t block[3], const size_t *max_grid,
                    long max_threads, char *err, size_t errlen);

/* A kernel's argument array: params[i] points at argument i (a buffer's device address
 * sits in slots[i], scalars are read from the rt_arg itself, which has to outlive the
 * launch call). */
typedef union { uint64_t u; void *p; } rt_param_slot;
typedef struct { void **params; rt_param_slot *slots; } rt_params;

/* Fills out for args; put_buf writes a buffer's device address into its slot. 0, or
 * RT_ERR with err (out of memory, an unknown argument kind); nothing to free then. */
int rt_params_pack(rt_params *out, const rt_arg *args, int nargs, void (*put_buf)(const rt_buf *, rt_param_slot *),
                   char *err, size_t errlen);
void rt_params_free(rt_params *p);

/* Waits for queued work by polling: query returns 0 once it is done, 1 while it is not,
 * or a negative RT_ code with err written. Sleeps 0.1 ms between polls for the first
 * 10 ms, 1 ms after. Returns 0, query's error, or RT_ETIMEOUT past timeout_s seconds. */
int rt_poll(int (*query)(void *arg, char *err, size_t errlen), void *arg, double timeout_s, char *err,
            size_t errlen);

/* ---- the driver-style runtimes (cuda.c, hip.c) ----
 *
 * CUDA's driver API and HIP's runtime are one API under two sets of names. Each runtime
 * describes its own in an rt_drv (names for messages, result codes, error wording, the
 * calls it loaded), starts its struct rt_ctx with an rt_drv_ctx, and the rt_drv_* routines
 * below do the rest through those. */

typedef struct rt_drv rt_drv;

/* Where a context lives: CUDA's context (ctx), or HIP's device ordinal (dev). */
typedef struct {
    void *ctx;
    int dev;
} rt_drv_where;

/* The first member of a driver-style runtime's struct rt_ctx. */
typedef struct {
    const rt_drv *drv;
    rt_drv_where at;
    void *stream;                /* the context's one stream (CUstream, hipStream_t) */
    char arch[64];               /* what it compiles for: the device's rt_device_info.arch */
} rt_drv_ctx;

/* A device address as the shared routines hold it: CUDA's CUdeviceptr; HIP converts its
 * pointers through uintptr_t. */
typedef unsigned long long rt_devptr;

/* The one member of a driver-style runtime's struct rt_buf. */
typedef struct {
    const rt_drv *drv;
    rt_drv_where at;             /* the context it was allocated in */
    rt_devptr ptr;
} rt_drv_buf;

/* A driver-style runtime's struct rt_module, whole: the binary it loaded and the log that
 * came with it. Its struct rt_kernel begins with the function's handle (void *). */
struct rt_module {
    rt_ctx *c;
    void *mod;                   /* CUmodule, hipModule_t */
    void *bin;                   /* the CUBIN, PTX or code object that was loaded */
    size_t binlen;
    char *log;                   /* the compiler's log (NVRTC's with ptxas' resource report) */
};

/* A driver-style runtime's struct rt_event, whole: the events around a launch, or one
 * event for a mark (stop == start). */
struct rt_event {
    const rt_drv *drv;
    void *start, *stop;          /* CUevent, hipEvent_t */
};

/* The layouts the rt_drv_* routines rely on, checked in each runtime after its structs. */
#define RT_DRV_LAYOUT_CHECK                                                                  \
    _Static_assert(offsetof(struct rt_ctx, h) == 0, "struct rt_ctx begins with its rt_drv_ctx"); \
    _Static_assert(offsetof(struct rt_buf, h) == 0 && sizeof(struct rt_buf) == sizeof(rt_drv_buf), \
                   "struct rt_buf is an rt_drv_buf");                                        \
    _Static_assert(offsetof(struct rt_kernel, f) == 0 && sizeof(((struct rt_kernel *)0)->f) == sizeof(void *), \
                   "struct rt_kernel begins with its function's handle")

#define RT_DRV_MAX_DEVICES 32

/* A runtime's devices, found by its init once: read-only afterwards. */
typedef struct {
    int inited, init_rc;
    char init_err[512];
    int ndev;
    rt_device_info info[RT_DRV_MAX_DEVICES];
} rt_drv_devices;

/* The calls the shared routines make, as the runtime loaded them (its init fills them in):
 * the API's handles as void pointers, its results as int, 0 for success. */
typedef struct {
    int (*device_count)(int *n);
    int (*stream_sync)(void *stream);
    int (*stream_query)(void *stream);
    int (*mem_alloc)(rt_devptr *ptr, size_t bytes);
    int (*mem_free)(rt_devptr ptr);
    int (*htod)(rt_devptr dst, const void *src, size_t bytes, void *stream);
    int (*dtoh)(void *dst, rt_devptr src, size_t bytes, void *stream);
    int (*memset32)(rt_devptr dst, unsigned value, size_t count, void *stream); /* NULL: the library lacks it */
    int (*module_load)(void **mod, const void *image);
    int (*module_unload)(void *mod);
    int (*get_function)(void **fn, void *mod, const char *name);
    int (*launch)(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                  unsigned dyn_shared, void *stream, void **params, void **extra);
    int (*event_create)(void **ev, unsigned flags);
    int (*event_record)(void *ev, void *stream);
    int (*event_sync)(void *ev);
    int (*event_destroy)(void *ev);
    int (*event_elapsed)(float *ms, void *start, void *stop);
} rt_drv_calls;

struct rt_drv {
    const char *api;             /* "CUDA", "HIP": in messages */
    const char *lib;             /* the library, in messages ("libcuda.so.1") */
    const char *sticky_msg;      /* what follows the description of a sticky error */
    const char *shared_mem;      /* what a launch's message calls dynamic shared memory */
    /* the results the shared routines tell apart: a stream still busy; a launch beyond the
     * device's resources or limits (RT_ERESOURCE) */
    int not_ready, out_of_resources, invalid_value;
    /* "NAME (description)" of a result into buf; returns buf */
    const char *(*describe)(int r, char *buf, size_t len);
    int (*sticky)(int r);        /* a kernel fault: nothing more runs in this process */
    int (*select)(const rt_drv_where *at); /* makes at current on this thread: the API's result */
    /* compiles source for arch into *bin (malloc'd); *log: the compiler's, malloc'd, may be
     * set on failure too. 0, RT_ECOMPILE or RT_ERR (err says why) */
    int (*build)(const char *arch, const char *source, const char *const *defines, int ndefines, void **bin,
                 size_t *len, char **log, char *err, size_t errlen);
    rt_drv_devices *devs;
    struct {                     /* the calls' names in messages */
        const char *device_count, *select, *stream_sync, *stream_query, *mem_alloc, *htod, *dtoh, *memset32,
            *module_load, *get_function, *launch, *event_create;
    } name;
    rt_drv_calls call;
};

/* "name (str)", "name" where str is NULL, or "API error r" where name is NULL, into buf;
 * returns buf. */
const char *rt_describe(const char *api, int r, const char *name, const char *str, char *buf, size_t len);

/* Writes "call: description" to err, with the runtime's sticky message where r is a kernel
 * fault; returns RT_ERR. */
int rt_drv_fail(const rt_drv *d, const char *call, int r, char *err, size_t errlen);

/* rt_drv_fail, then the statements after r (freeing what the caller holds), then return
 * RT_ERR from the caller; err and errlen are the caller's. */
#define RT_DRV_FAIL(d, call, r, ...) do {                                                  \
        rt_drv_fail(d, call, r, err, errlen);                                             \
        __VA_ARGS__;                                                                      \
        return RT_ERR;                                                                    \
    } while (0)

/* Makes c's context current on this thread: 0, or RT_ERR with err. */
int rt_drv_bind(rt_ctx *c, char *err, size_t errlen);

/* The runtime's init: runs once(err, errlen) on the first call and keeps its result (and
 * no devices where it failed); 0, or that result again with its message in err. */
int rt_drv_init(rt_drv_devices *devs, int (*once)(char *err, size_t errlen), char *err, size_t errlen);
int rt_drv_device_info(const rt_drv_devices *devs, int index, rt_device_info *out);
/* For init: the API's device count into *n (at most RT_DRV_MAX_DEVICES); 0, or RT_ERR with
 * err: the call's failure, or none where there are no devices. */
int rt_drv_device_count(const rt_drv *d, int *n, const char *none, char *err, size_t errlen);

/* A zeroed struct rt_ctx of size bytes for device index, its rt_drv_ctx's drv and arch
 * set; NULL with err where there is no such device or no memory. */
void *rt_drv_ctx_new(const rt_drv *d, int index, size_t size, char *err, size_t errlen);

/* The rt_runtime entries that are rt_drv_* for every driver-style runtime. */
#define RT_DRV_ENTRIES                                                                      \
    .compile = rt_drv_compile, .kernel_free = rt_drv_kernel_free, .binary = rt_drv_binary,  \
    .module_free = rt_drv_module_free, .load_binary = rt_drv_load_binary, .alloc = rt_drv_alloc, \
    .buf_free = rt_drv_buf_free, .upload = rt_drv_upload, .fill = rt_drv_fill,              \
    .download = rt_drv_download, .finish = rt_drv_finish, .elapsed_ms = rt_drv_elapsed_ms,  \
    .event_free = rt_drv_event_free

/* rt_runtime's alloc, buf_free, upload, download and fill. Copies run on the context's
 * stream, so they are ordered with its launches, and return once complete. */
int rt_drv_alloc(rt_ctx *c, size_t bytes, rt_buf **out, char *err, size_t errlen);
void rt_drv_buf_free(rt_buf *b);
int rt_drv_upload(rt_ctx *c, rt_buf *dst, const void *src, size_t bytes, char *err, size_t errlen);
int rt_drv_download(rt_ctx *c, void *dst, rt_buf *src, size_t bytes, char *err, size_t errlen);
int rt_drv_fill(rt_ctx *c, rt_buf *buf, size_t bytes, uint32_t value, char *err, size_t errlen);

/* rt_runtime's compile (the runtime's build for the context's arch), load_binary, binary,
 * module_free and kernel_free. */
int rt_drv_compile(rt_ctx *c, const char *source, const char *const *defines, int ndefines, rt_module **out,
                   char **log, char *err, size_t errlen);
int rt_drv_load_binary(rt_ctx *c, const void *bin, size_t len, const char *log, rt_module **out, char *err,
                       size_t errlen);
int rt_drv_binary(rt_module *m, void **data, size_t *len);
void rt_drv_module_free(rt_module *m);
void rt_drv_kernel_free(rt_kernel *k);

/* The start of get_kernel: a zeroed struct rt_kernel of size bytes whose first member holds
 * the handle of m's function name; NULL with err where m has no such function. */
void *rt_drv_kernel_new(rt_module *m, const char *name, size_t size, char *err, size_t errlen);

/* The start of launch: binds c and checks grid and block (rt_check_launch under the API's
 * name); 0, RT_ERR or RT_ERESOURCE with err. */
int rt_drv_launch_check(rt_ctx *c, const size_t grid[3], const size_t block[3], const size_t *max_grid,
                        long max_threads, char *err, size_t errlen);
/* The rest of launch, after the runtime's own checks: enqueues fn with args on c's stream,
 * between two new events where ev asks for them. 0, RT_ERESOURCE (the API's out of
 * resources or invalid value) or RT_ERR, with err. */
int rt_drv_enqueue(rt_ctx *c, void *fn, const size_t grid[3], const size_t block[3], size_t dyn_shared,
                   const rt_arg *args, int nargs, void (*put_buf)(const rt_buf *, rt_param_slot *), rt_event **ev,
                   char *err, size_t errlen);
/* rt_runtime's finish (polled with rt_poll under a timeout), elapsed_ms and event_free. */
int rt_drv_finish(rt_ctx *c, double timeout_s, char *err, size_t errlen);
int rt_drv_elapsed_ms(rt_ctx *c, rt_event *first, rt_event *last, double *ms);
void rt_drv_event_free(rt_event *ev);

/* ---- the runtime compilers: NVRTC (cuda.c) and HIPRTC (hip.c) ----
 *
 * HIPRTC is NVRTC's API under hiprtc names: a program made from source, compiled with
 * options, its log, its code. Each runtime keeps an rt_rtc: how it words and judges a
 * build, its library once loaded, and the calls a build makes. */

/* The calls, filled in by the runtime once its library is found: programs as void
 * pointers, results as int, 0 for success. */
typedef struct {
    int (*create)(void **prog, const char *src, const char *name, int nheaders, const char *const *headers,
                  const char *const *include_names);
    int (*destroy)(void **prog);
    int (*compile)(void *prog, int nopts, const char *const *opts);
    int (*log_size)(void *prog, size_t *n);
    int (*log)(void *prog, char *log);
    const char *(*error_string)(int r);
} rt_rtc_calls;

typedef struct {
    const char *name;            /* "NVRTC", "HIPRTC" */
    const char *prefix;          /* its calls' names begin so: "nvrtc", "hiprtc" */
    const char *file;            /* the name a build gives the source: "attn_fwd.cu" */
    int compilation, invalid_option; /* results that refuse the source or the options: RT_ECOMPILE */
    /* where a compile for arch fails with r: adds what the runtime can say to *log, or to the
     * error line (size bytes, o of them written); NULL where it has nothing to add */
    void (*refused)(const char *arch, int r, char **log, char *line, size_t size, int o);
    const char *no_diagnostic;   /* appended after the error line where the log says no "error" */
    /* the code of a compiled prog into *bin (malloc'd): 0, or RT_ERR with err */
    int (*get_code)(const char *arch, void *prog, void **bin, size_t *len, char *err, size_t errlen);
    /* the library: loaded once (by init or by the first offline compile), read-only after */
    pthread_once_t once;         /* PTHREAD_ONCE_INIT */
    int ok;
    char why[448];               /* why it cannot be used */
    char path[256];              /* where it was found */
    int major, minor;
    void *handle;
    rt_rtc_calls call;
} rt_rtc;

/* dlopens path (RTLD_NOW | RTLD_LOCAL | flags) and has take(h, path) load its symbols: 1
 * with x's handle and path set, or 0 with it closed again (the first dlopen error of a
 * call with no flags kept in dlerr; take says in x->why why a library does not do). */
int rt_rtc_try(rt_rtc *x, const char *path, int flags, int (*take)(void *h, const char *path), char *dlerr,
               size_t dlerrlen);
/* rt_rtc_try of dir/name for each of names[0..nn) until one loads */
void rt_rtc_try_in(rt_rtc *x, const char *dir, const char *const *names, size_t nn,
                   int (*take)(void *h, const char *path), char *dlerr, size_t dlerrlen);
/* Loads the library once with load_once: 0, or RT_ERR with x->why in err. */
int rt_rtc_load(rt_rtc *x, void (*load_once)(void), char *err, size_t errlen);

/* "-D<define>" for each define in *defs (malloc'd, NULL-terminated): 0, or RT_ERR with err
 * (free what was made with rt_defines_free either way). */
int rt_defines(const char *const *defines, int ndefines, char ***defs, char *err, size_t errlen);
void rt_defines_free(char **defs, int ndefines);

/* Builds source for arch with the options fixed[0..nfixed) and a -D for each define: the
 * code into *bin (malloc'd), the compiler's log into *log where log is not NULL (malloc'd;
 * on a failed compile too, the failed call and its options on its last line; untouched
 * where no program could be made). 0, RT_ECOMPILE or RT_ERR, with err. */
int rt_rtc_build(const rt_rtc *x, const char *arch, const char *source, const char *const *fixed, int nfixed,
                 const char *const *defines, int ndefines, void **bin, size_t *len, char **log, char *err,
                 size_t errlen);

#endif
