/* cuda.c: the CUDA runtime through the driver API (libcuda.so.1) and NVRTC (libnvrtc.so),
 * both loaded with dlopen and declared here, so no CUDA headers or toolkit are needed to
 * build: devices, NVRTC builds to CUBIN with ptxas' resource report, the primary context
 * and one non-blocking stream per opened device, launches, event timing, and offline
 * compiles for a named architecture with NVRTC alone. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "rt.h"
#include "rt_shared.h"

/* ---- the few driver API and NVRTC declarations we use (values as in cuda.h / nvrtc.h) ---- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
/* the handles the shared routines pass (rt_shared.h) as void pointers */
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef int nvrtcResult;
typedef void *nvrtcProgram;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_ILLEGAL_ADDRESS 700
#define CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES 701
#define CUDA_ERROR_LAUNCH_TIMEOUT 702
#define CUDA_ERROR_ASSERT 710
#define CUDA_ERROR_HARDWARE_STACK_ERROR 714
#define CUDA_ERROR_LAUNCH_FAILED 719

#define CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK 1
#define CU_DEVICE_ATTRIBUTE_WARP_SIZE 10
#define CU_DEVICE_ATTRIBUTE_CLOCK_RATE 13 /* kHz */
#define CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE 38 /* bytes */
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 97

#define CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK 0
#define CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES 1
#define CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES 3
#define CU_FUNC_ATTRIBUTE_NUM_REGS 4
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8

#define CU_STREAM_NON_BLOCKING 1
#define CU_EVENT_DEFAULT 0

#define NVRTC_SUCCESS 0
#define NVRTC_ERROR_INVALID_OPTION 5
#define NVRTC_ERROR_COMPILATION 6
#define NVRTC_ERROR_BUILTIN_OPERATION_FAILURE 7

/* One typedef and one pointer per API function: X(member, symbol, return, parameters,
 * required). The member is the API's name; the symbol is the versioned one (_v2) where the
 * headers map the name onto one. */
#define CU_API(X)                                                                              \
    X(cuInit, "cuInit", CUresult, (unsigned int), 1)                                           \
    X(cuDriverGetVersion, "cuDriverGetVersion", CUresult, (int *), 1)                          \
    X(cuGetErrorName, "cuGetErrorName", CUresult, (CUresult, const char **), 1)                \
    X(cuGetErrorString, "cuGetErrorString", CUresult, (CUresult, const char **), 1)            \
    X(cuDeviceGetCount, "cuDeviceGetCount", CUresult, (int *), 1)                              \
    X(cuDeviceGet, "cuDeviceGet", CUresult, (CUdevice *, int), 1)                              \
    X(cuDeviceGetName, "cuDeviceGetName", CUresult, (char *, int, CUdevice), 1)                \
    X(cuDeviceGetAttribute, "cuDeviceGetAttribute", CUresult, (int *, int, CUdevice), 1)       \
    X(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", CUresult, (char *, int, CUdevice), 0)        \
    X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", CUresult, (size_t *, CUdevice), 1)              \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult, (CUcontext *, CUdevice), 1) \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult, (CUdevice), 1)     \
    X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult, (CUcontext), 1)                            \
    X(cuStreamCreate, "cuStreamCreate", CUresult, (CUstream *, unsigned int), 1)               \
    X(cuStreamDestroy, "cuStreamDestroy_v2", CUresult, (CUstream), 1)                          \
    X(cuStreamQuery, "cuStreamQuery", CUresult, (CUstream), 1)                                 \
    X(cuStreamSynchronize, "cuStreamSynchronize", CUresult, (CUstream), 1)                     \
    X(cuModuleLoadData, "cuModuleLoadData", CUresult, (CUmodule *, const void *), 1)           \
    X(cuModuleUnload, "cuModuleUnload", CUresult, (CUmodule), 1)                               \
    X(cuModuleGetFunction, "cuModuleGetFunction", CUresult, (CUfunction *, CUmodule, const char *), 1) \
    X(cuFuncGetAttribute, "cuFuncGetAttribute", CUresult, (int *, int, CUfunction), 1)         \
    X(cuFuncSetAttribute, "cuFuncSetAttribute", CUresult, (CUfunction, int, int), 1)           \
    X(cuMemAlloc, "cuMemAlloc_v2", CUresult, (CUdeviceptr *, size_t), 1)                       \
    X(cuMemFree, "cuMemFree_v2", CUresult, (CUdeviceptr), 1)                                   \
    X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", CUresult, (CUdeviceptr, const void *, size_t, CUstream), 1) \
    X(cuMemsetD32Async, "cuMemsetD32Async", CUresult, (CUdeviceptr, unsigned int, size_t, CUstream), 0) \
    X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", CUresult, (void *, CUdeviceptr, size_t, CUstream), 1) \
    X(cuLaunchKernel, "cuLaunchKernel", CUresult, (CUfunction, unsigned int, unsigned int,     \
        unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, CUstream, void **, void **), 1) \
    X(cuEventCreate, "cuEventCreate", CUresult, (CUevent *, unsigned int), 1)                  \
    X(cuEventRecord, "cuEventRecord", CUresult, (CUevent, CUstream), 1)                        \
    X(cuEventSynchronize, "cuEventSynchronize", CUresult, (CUevent), 1)                        \
    X(cuEventDestroy, "cuEventDestroy_v2", CUresult, (CUevent), 1)                             \
    X(cuEventElapsedTime_v2, "cuEventElapsedTime_v2", CUresult, (float *, CUevent, CUevent), 0) \
    X(cuEventElapsedTime, "cuEventElapsedTime", CUresult, (float *, CUevent, CUevent), 0)    \
    X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", CUresult, (CUstream, int), 0)            \
    X(cuStreamEndCapture, "cuStreamEndCapture", CUresult, (CUstream, CUgraph *), 0)             \
    X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", CUresult, (CUgraphExec *, CUgraph, unsigned long long), 0) \
    X(cuGraphLaunch, "cuGraphLaunch", CUresult, (CUgraphExec, CUstream), 0)                    \
    X(cuGraphExecDestroy, "cuGraphExecDestroy", CUresult, (CUgraphExec), 0)                    \
    X(cuGraphDestroy, "cuGraphDestroy", CUresult, (CUgraph), 0)                                \
    X(cuMemHostAlloc, "cuMemHostAlloc", CUresult, (void **, size_t, unsigned int), 0)           \
    X(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", CUresult, (CUdeviceptr *, void *, unsigned int), 0) \
    X(cuMemFreeHost, "cuMemFreeHost", CUresult, (void *), 0)                                   \
    X(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", CUresult, (void *, int, unsigned, void *, \
        const unsigned long long *, const unsigned long long *, const unsigned *, const unsigned *, int, int, int, int), 0)

#define NVRTC_API(X)                                                                           \
    X(nvrtcVersion, "nvrtcVersion", nvrtcResult, (int *, int *), 1)                            \
    X(nvrtcGetErrorString, "nvrtcGetErrorString", const char *, (nvrtcResult), 1)              \
    X(nvrtcCreateProgram, "nvrtcCreateProgram", nvrtcResult, (nvrtcProgram *, const char *,    \
        const char *, int, const char *const *, const char *const *), 1)                       \
    X(nvrtcDestroyProgram, "nvrtcDestroyProgram", nvrtcResult, (nvrtcProgram *), 1)            \
    X(nvrtcCompileProgram, "nvrtcCompileProgram", nvrtcResult, (nvrtcProgram, int, const char *const *), 1) \
    X(nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", nvrtcResult, (nvrtcProgram, size_t *), 1) \
    X(nvrtcGetProgramLog, "nvrtcGetProgramLog", nvrtcResult, (nvrtcProgram, char *), 1)        \
    X(nvrtcGetPTXSize, "nvrtcGetPTXSize", nvrtcResult, (nvrtcProgram, size_t *), 1)            \
    X(nvrtcGetPTX, "nvrtcGetPTX", nvrtcResult, (nvrtcProgram, char *), 1)                      \
    X(nvrtcGetCUBINSize, "nvrtcGetCUBINSize", nvrtcResult, (nvrtcProgram, size_t *), 1)        \
    X(nvrtcGetCUBIN, "nvrtcGetCUBIN", nvrtcResult, (nvrtcProgram, char *), 1)                  \
    X(nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs", nvrtcResult, (int *), 0)         \
    X(nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs", nvrtcResult, (int *), 0)

CU_API(RT_API_TYPEDEF)
NVRTC_API(RT_API_TYPEDEF)

/* The driver's state: filled once by cu_init, read-only afterwards. */
static struct {
    rt_drv_devices devs;
    void *lib;
    CU_API(RT_API_MEMBER)
    CUdevice dev[RT_DRV_MAX_DEVICES];
    int optin_shared[RT_DRV_MAX_DEVICES];
} cu;

static void nvrtc_refused(const char *arch, int r, char **log, char *line, size_t size, int o);
static int nvrtc_code(const char *arch, void *prog, void **bin, size_t *len, char *err, size_t errlen);

/* NVRTC's state: loaded once (by init or by the first offline compile), read-only after. */
static struct {
    rt_rtc lib;
    NVRTC_API(RT_API_MEMBER)
} nv = {.lib = {.name = "NVRTC", .prefix = "nvrtc", .file = "attn_fwd.cu", .compilation = NVRTC_ERROR_COMPILATION,
                .invalid_option = NVRTC_ERROR_INVALID_OPTION, .refused = nvrtc_refused, .get_code = nvrtc_code,
                .once = PTHREAD_ONCE_INIT}};

/* The timing gate (kernels/gate.ptx): loaded on first use. */
typedef struct {
    int state;                 /* 0 not loaded yet, 1 ready, -1 cannot be used (why) */
    char why[256];
    CUmodule mod;
    CUfunction fn;
    volatile uint32_t *host;   /* mapped host words: [0] the opened sequence, [1] late holds */
    CUdeviceptr dev;           /* the same words as the device sees them */
    uint32_t seq;              /* the sequence number of the last hold */
} cu_gate;

struct rt_ctx {
    rt_drv_ctx h;    /* at.ctx: the device's primary context */
    int index;
    CUdevice dev;
    int optin_shared;
    cu_gate gate;
};
struct rt_buf { rt_drv_buf h; };
struct rt_kernel { CUfunction f; long max_threads; long max_dyn_shared; };

static rt_drv cu_drv; /* the driver for the shared routines, defined with rt_cuda below */

/* "CUDA_ERROR_X (description)" into buf. */
static const char *cu_describe(CUresult r, char *buf, size_t len)
{
    const char *name = NULL, *str = NULL;
    if (cu.cuGetErrorName && cu.cuGetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
    if (cu.cuGetErrorString && cu.cuGetErrorString(r, &str) != CUDA_SUCCESS) str = NULL;
    return rt_describe("CUDA", r, name, str, buf, len);
}

/* Errors after which the context cannot run anything more: a kernel fault. */
static int cu_sticky(CUresult r)
{
    return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_TIMEOUT || r == CUDA_ERROR_ASSERT ||
           (r >= CUDA_ERROR_HARDWARE_STACK_ERROR && r <= CUDA_ERROR_LAUNCH_FAILED);
}

#define STICKY_MSG "; a kernel fault left CUDA unusable in this process: " RT_UNUSABLE

#define CU_FAIL(call, r, ...) RT_DRV_FAIL(&cu_drv, call, r, __VA_ARGS__)

static int cu_select(const rt_drv_where *at) { return cu.cuCtxSetCurrent(at->ctx); }

/* ---- NVRTC loading ---- */

/* rt_rtc_try's take: NVRTC's calls from the library h found at path */
static int nvrtc_take(void *h, const char *path)
{
#define X_LOAD(member, sym, ret, params, req)                                                             \
    RT_API_LOAD(nv, h, member, sym, req,                                                                  \
                snprintf(nv.lib.why, sizeof nv.lib.why, "%s lacks the required symbol %s (NVRTC older than 11.2?)", \
                         path, sym); return 0)
    NVRTC_API(X_LOAD)
#undef X_LOAD
    return 1;
}

static void nvrtc_load_once(void)
{
    static const char *const names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"};
    const char *dirs[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda", NULL};
    char dlerr[192] = "";
    const size_t nn = sizeof names / sizeof names[0];
    for (size_t i = 0; i < nn && !nv.lib.handle; i++) rt_rtc_try(&nv.lib, names[i], 0, nvrtc_take, dlerr, sizeof dlerr);
    for (size_t d = 0; d < 4 && !nv.lib.handle; d++) {
        char dir[160];
        if (d < 3) {
            if (!dirs[d] || !dirs[d][0]) continue;
            snprintf(dir, sizeof dir, "%s/lib64", dirs[d]);
        } else {
            snprintf(dir, sizeof dir, "/usr/lib/x86_64-linux-gnu");
        }
        rt_rtc_try_in(&nv.lib, dir, names, nn, nvrtc_take, dlerr, sizeof dlerr);
    }
    if (!nv.lib.handle) {
        if (!nv.lib.why[0])
            snprintf(nv.lib.why, sizeof nv.lib.why,
                     "NVRTC not found (%s; also looked in $CUDA_HOME/lib64, $CUDA_PATH/lib64, "
                     "/usr/local/cuda/lib64): install the CUDA toolkit's NVRTC (cuda-nvrtc) or set CUDA_HOME",
                     dlerr);
        return;
    }
    nv.lib.call = (rt_rtc_calls){.create = nv.nvrtcCreateProgram, .destroy = nv.nvrtcDestroyProgram,
                                 .compile = nv.nvrtcCompileProgram, .log_size = nv.nvrtcGetProgramLogSize,
                                 .log = nv.nvrtcGetProgramLog, .error_string = nv.nvrtcGetErrorString};
    if (nv.nvrtcVersion(&nv.lib.major, &nv.lib.minor) != NVRTC_SUCCESS) nv.lib.major = nv.lib.minor = 0;
    /* NVRTC loads libnvrtc-builtins.so.X.Y by name at its first compile; where we found NVRTC
     * in a directory the loader does not search, load the builtins from there first, so that
     * lookup finds them already loaded */
    const char *slash = strrchr(nv.lib.path, '/');
    if (slash) {
        char path[320];
        snprintf(path, sizeof path, "%.*s/libnvrtc-builtins.so.%d.%d", (int)(slash - nv.lib.path), nv.lib.path,
                 nv.lib.major, nv.lib.minor);
        if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) (void)dlerror();
    }
    nv.lib.ok = 1;
}

static int cu_offline_compiler(char *out, size_t len)
{
    char err[512];
    if (rt_rtc_load(&nv.lib, nvrtc_load_once, err, sizeof err) != 0) return RT_ERR;
    snprintf(out, len, "NVRTC %d.%d", nv.lib.major, nv.lib.minor);
    return 0;
}

/* ---- ptxas' verbose report ---- */

/* Whether the symbol s[0..n) names kernel: the same name, or a C++ mangling
 * _Z<len><name>... of it. */
static int sym_is(const char *s, size_t n, const char *kernel)
{
    size_t kl = strlen(kernel);
    if (n == kl && !strncmp(s, kernel, kl)) return 1;
    if (n > 2 && s[0] == '_' && s[1] == 'Z') {
        char pre[32];
        int pl = snprintf(pre, sizeof pre, "%zu", kl);
        if (n >= 2 + (size_t)pl + kl && !strncmp(s + 2, pre, (size_t)pl) && !strncmp(s + 2 + pl, kernel, kl))
            return 1;
    }
    return 0;
}

static long num_before(const char *line, const char *end, const char *what)
{
    /* the number right before `what` on this line, e.g. "24 bytes spill stores" */
    const char *p = line;
    while ((p = strstr(p, what)) && p < end) {
        const char *q = p;
        while (q > line && q[-1] == ' ') q--;
        const char *e = q;
        while (q > line && isdigit((unsigned char)q[-1])) q--;
        if (q < e) return strtol(q, NULL, 10);
        p += strlen(what);
    }
    return -1;
}

/* Fills registers, spill_bytes, shared_bytes and private_bytes (stack frame) for kernel from
 * an NVRTC log with ptxas --verbose output; leaves -1 where the log says nothing. */
static void parse_ptxas(const char *log, const char *kernel, rt_kernel_attrs *a)
{
    a->registers = a->spill_bytes = a->shared_bytes = a->private_bytes = -1;
    if (!log || !kernel) return;
    int in_entry = 0, props_next = 0;
    for (const char *line = log; *line;) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        const char *p;
        if ((p = strstr(line, "Compiling entry function '")) && p < end) {
            p += strlen("Compiling entry function '");
            const char *q = memchr(p, '\'', (size_t)(end - p));
            in_entry = q && sym_is(p, (size_t)(q - p), kernel);
            props_next = 0;
        } else if ((p = strstr(line, "Function properties for ")) && p < end) {
            p += strlen("Function properties for ");
            size_t n = 0;
            while (p + n < end && !isspace((unsigned char)p[n])) n++;
            props_next = sym_is(p, n, kernel);
        } else if (props_next && strstr(line, "bytes stack frame") && strstr(line, "bytes stack frame") < end) {
            long st = num_before(line, end, "bytes stack frame");
            long ss = num_before(line, end, "bytes spill stores");
            long sl = num_before(line, end, "bytes spill loads");
            a->private_bytes = st;
            a->spill_bytes = ss >= 0 && sl >= 0 ? ss + sl : -1;
            props_next = 0;
        } else if (in_entry && (p = strstr(line, "Used ")) && p < end && strstr(p, " registers") &&
                   strstr(p, " registers") < end) {
            a->registers = strtol(p + 5, NULL, 10);
            long sm = num_before(line, end, "bytes smem");
            a->shared_bytes = sm >= 0 ? sm : 0;
            in_entry = 0;
        }
        line = *end ? end + 1 : end;
    }
}

/* ---- NVRTC builds ---- */

/* " It knows sm_75 sm_80 ..." from NVRTC, or "" where it cannot say. */
static void supported_archs(char *out, size_t len)
{
    int n = 0;
    out[0] = 0;
    if (!nv.nvrtcGetNumSupportedArchs || !nv.nvrtcGetSupportedArchs || len < 16) return;
    if (nv.nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0 || n > 256) return;
    int a[256];
    if (nv.nvrtcGetSupportedArchs(a) != NVRTC_SUCCESS) return;
    size_t o = (size_t)snprintf(out, len, " It knows");
    for (int i = 0; i < n && o + 8 < len; i++) o += (size_t)snprintf(out + o, len - o, " sm_%d", a[i]);
}

/* For a device newer than this NVRTC: the newest architecture it knows below the device's
 * compute capability cc (e.g. 90 for sm_90), as "compute_XY" in out; 0, or -1 when the
 * device's own architecture is known (or NVRTC cannot say). */
static int ptx_fallback_arch(int cc, char *out, size_t len)
{
    int n = 0, a[256], best = 0;
    if (!nv.nvrtcGetNumSupportedArchs || !nv.nvrtcGetSupportedArchs) return -1;
    if (nv.nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0 || n > 256) return -1;
    if (nv.nvrtcGetSupportedArchs(a) != NVRTC_SUCCESS) return -1;
    for (int i = 0; i < n; i++) {
        if (a[i] == cc) return -1;
        if (a[i] < cc && a[i] > best) best = a[i];
    }
    if (!best) return -1;
    snprintf(out, len, "compute_%d", best);
    return 0;
}

/* Compiles source for arch: "sm_XY[a]" gives a CUBIN (with ptxas' report in the log),
 * "compute_XY[a]" PTX. 0, RT_ECOMPILE (*log says why) or RT_ERR. */
static int nvrtc_build(const char *arch, const char *source, const char *const *defines, int ndefines,
                       void **bin, size_t *len, int *is_ptx, char **log, char *err, size_t errlen)
{
    *bin = NULL;
    *len = 0;
    if (log) *log = NULL;
    if (rt_rtc_load(&nv.lib, nvrtc_load_once, err, errlen) != 0) return RT_ERR;
    const int ptx = !strncmp(arch, "compute_", 8);
    if (is_ptx) *is_ptx = ptx;
    /* ARCH_SPECIFIC=1 among the defines: the configuration uses instructions of the
     * architecture-specific target (wgmma: sm_90a), which runs on that compute capability
     * only; the plain sm_90 / compute_90 is taken to mean it */
    char arch_a[32];
    int want_a = 0;
    for (int i = 0; i < ndefines; i++) want_a |= !strcmp(defines[i], "ARCH_SPECIFIC=1");
    if (want_a && (!strcmp(arch, "sm_90") || !strcmp(arch, "compute_90"))) {
        snprintf(arch_a, sizeof arch_a, "%sa", arch);
        arch = arch_a;
    }
    char archopt[96];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
    const char *const fixed[] = {archopt, "-std=c++17", "-default-device", "--ptxas-options=--verbose"};
    return rt_rtc_build(&nv.lib, arch, source, fixed, ptx ? 3 : 4, defines, ndefines, bin, len, log, err, errlen);
}

/* rt_rtc's refused: where the options were refused, the architectures NVRTC knows; where
 * its builtins library could not be loaded, where to put it */
static void nvrtc_refused(const char *arch, int r, char **log, char *line, size_t size, int o)
{
    if (r == NVRTC_ERROR_INVALID_OPTION) {
        char known[512];
        supported_archs(known, sizeof known);
        char hint[640];
        snprintf(hint, sizeof hint, "error: NVRTC rejected the options; is %s an architecture this NVRTC knows?%s",
                 arch, known);
        *log = rt_log_append(*log, hint);
    }
    if (r == NVRTC_ERROR_BUILTIN_OPERATION_FAILURE && o > 0 && (size_t)o < size)
        snprintf(line + o, size - (size_t)o, "; NVRTC could not load libnvrtc-builtins.so.%d.%d: put the "
                 "directory of %s on LD_LIBRARY_PATH", nv.lib.major, nv.lib.minor,
                 nv.lib.path[0] ? nv.lib.path : "libnvrtc.so");
}

/* rt_rtc's get_code: the PTX (arch compute_XY) or the CUBIN of prog */
static int nvrtc_code(const char *arch, void *prog, void **bin, size_t *len, char *err, size_t errlen)
{
    const int ptx = !strncmp(arch, "compute_", 8);
    size_t n = 0;
    nvrtcResult r = ptx ? nv.nvrtcGetPTXSize(prog, &n) : nv.nvrtcGetCUBINSize(prog, &n);
    if (r != NVRTC_SUCCESS || n == 0)
        FAIL("nvrtcGet%sSize: %s", ptx ? "PTX" : "CUBIN", r != NVRTC_SUCCESS ? nv.nvrtcGetErrorString(r) : "empty");
    char *b = malloc(n);
    if (!b) FAIL("%s", "out of memory");
    r = ptx ? nv.nvrtcGetPTX(prog, b) : nv.nvrtcGetCUBIN(prog, b);
    if (r != NVRTC_SUCCESS) {
        free(b);
        FAIL("nvrtcGet%s: %s", ptx ? "PTX" : "CUBIN", nv.nvrtcGetErrorString(r));
    }
    *bin = b;
    *len = n;
    return 0;
}

/* cuTensorMapEncodeTiled's enumerations (cuda.h): data types, no interleave, the 128-byte
 * swizzle, 256-byte L2 promotion, zeros out of bounds */
#define CU_TENSOR_MAP_DATA_TYPE_FLOAT16 6
#define CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 9
#define CU_TENSOR_MAP_SWIZZLE_128B 3
#define CU_TENSOR_MAP_L2_PROMOTION_L2_256B 3

static int cu_tensor_map(rt_buf *base, const rt_tensor_map_desc *d, void *out, char *err, size_t errlen)
{
    if (!cu.cuTensorMapEncodeTiled) FAIL("%s", "this driver has no cuTensorMapEncodeTiled (CUDA 12 or newer needed)");
    if (d->rank < 1 || d->rank > 5) FAIL("tensor map: rank %d outside 1..5", d->rank);
    unsigned box[5], estr[5] = {1, 1, 1, 1, 1};
    unsigned long long dims[5], strides[4]; /* cuuint64_t */
    for (int i = 0; i < d->rank; i++) {
        box[i] = d->box[i];
        dims[i] = d->dims[i];
        if (i > 0) strides[i - 1] = d->strides[i - 1];
    }
    char why[256];
    CUresult r = cu.cuTensorMapEncodeTiled(out, d->bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                           (unsigned)d->rank, (void *)(uintptr_t)base->h.ptr, dims, strides, box, estr,
                                           0, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, 0);
    if (r != CUDA_SUCCESS) FAIL("cuTensorMapEncodeTiled: %s", cu_describe(r, why, sizeof why));
    return 0;
}

static int cu_compile_offline(const char *arch, const char *source, const char *const *defines, int ndefines,
                              const char *kernel, void **binary, size_t *len, rt_kernel_attrs *attrs,
                              char **log, char *err, size_t errlen)
{
    char *lg = NULL;
    int is_ptx = 0;
    if (log) *log = NULL;
    if (!arch || (strncmp(arch, "sm_", 3) != 0 && strncmp(arch, "compute_", 8) != 0)) {
        snprintf(err, errlen, "error: unknown CUDA target '%s': use sm_XY (CUBIN) or compute_XY (PTX)", arch ? arch : "");
        if (log) *log = rt_log_append(NULL, err);
        return RT_ECOMPILE;
    }
    int rc = nvrtc_build(arch, source, defines, ndefines, binary, len, &is_ptx, &lg, err, errlen);
    if (attrs) {
        parse_ptxas(rc == 0 ? lg : NULL, kernel, attrs);
        attrs->max_threads = -1;
        attrs->binary_bytes = rc == 0 ? (long)*len : -1;
    }
    if (log) *log = lg;
    else free(lg);
    return rc;
}

/* ---- driver: devices ---- */

static void fill_info(int i)
{
    CUdevice d = cu.dev[i];
    rt_device_info *o = &cu.devs.info[i];
    memset(o, 0, sizeof *o);
    if (cu.cuDeviceGetName(o->name, (int)sizeof o->name, d) != CUDA_SUCCESS) snprintf(o->name, sizeof o->name, "CUDA device %d", i);
    o->name[sizeof o->name - 1] = 0;
    snprintf(o->vendor, sizeof o->vendor, "NVIDIA");
    snprintf(o->platform, sizeof o->platform, "CUDA");
    int v = 0, major = 0, minor = 0;
    if (cu.cuDriverGetVersion(&v) == CUDA_SUCCESS) {
        snprintf(o->driver, sizeof o->driver, "CUDA driver %d.%d", v / 1000, (v % 1000) / 10);
        snprintf(o->runtime_version, sizeof o->runtime_version, "CUDA driver %d.%d", v / 1000, (v % 1000) / 10);
    }
    snprintf(o->compiler, sizeof o->compiler, "NVRTC %d.%d", nv.lib.major, nv.lib.minor);
    o->is_gpu = 1;
    if (cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d) == CUDA_SUCCESS &&
        cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d) == CUDA_SUCCESS)
        snprintf(o->arch, sizeof o->arch, "sm_%d%d", major, minor);
    else
        snprintf(o->arch, sizeof o->arch, "gpu");
    if (cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d) == CUDA_SUCCESS) o->compute_units = v;
    o->warp_size = cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, d) == CUDA_SUCCESS && v > 0 ? v : 32;
    if (cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, d) == CUDA_SUCCESS && v > 0)
        o->max_group_size = (size_t)v;
    if (cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d) == CUDA_SUCCESS && v > 0) {
        o->shared_bytes = (size_t)v;
        cu.optin_shared[i] = v;
    }
    o->static_shared_bytes = 48 * 1024; /* the most a CUDA kernel may declare statically */
    o->max_grid[0] = 2147483647;
    o->max_grid[1] = o->max_grid[2] = 65535;
    if (major >= 8) o->features |= RT_FEAT_MMA_SYNC;
    if (major == 9 && minor == 0) o->features |= RT_FEAT_WGMMA; /* sm_90a: Hopper's wgmma */
    if (major >= 9 && cu.cuTensorMapEncodeTiled) o->features |= RT_FEAT_TMA;
    size_t mem = 0;
    if (cu.cuDeviceTotalMem(&mem, d) == CUDA_SUCCESS) o->global_bytes = o->max_alloc_bytes = mem;
    if (cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, d) == CUDA_SUCCESS && v > 0) o->clock_mhz = v / 1000;
    if (cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, d) == CUDA_SUCCESS && v > 0) o->l2_bytes = (size_t)v;
    if (!cu.cuDeviceGetPCIBusId || cu.cuDeviceGetPCIBusId(o->pci, (int)sizeof o->pci, d) != CUDA_SUCCESS) o->pci[0] = 0;
}

static int cu_init_once(char *err, size_t errlen)
{
    char dlerr[512] = "";
    const char *names[] = {"libcuda.so.1", "libcuda.so"};
    for (size_t i = 0; i < 2 && !cu.lib; i++) {
        cu.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!cu.lib && !dlerr[0]) snprintf(dlerr, sizeof dlerr, "%s", dlerror());
    }
    if (!cu.lib) FAIL("libcuda.so.1 not found (no NVIDIA driver): %s", dlerr);
#define X_LOAD(member, sym, ret, params, req)                                                             \
    RT_API_LOAD(cu, cu.lib, member, sym, req, FAIL("libcuda.so.1 lacks the required symbol %s (driver older than CUDA 11?)", sym))
    CU_API(X_LOAD)
#undef X_LOAD
    if (!cu.cuEventElapsedTime_v2 && !cu.cuEventElapsedTime)
        FAIL("%s", "libcuda.so.1 has neither cuEventElapsedTime_v2 nor cuEventElapsedTime");
    cu_drv.call = (rt_drv_calls){
        .device_count = cu.cuDeviceGetCount, .stream_sync = cu.cuStreamSynchronize, .stream_query = cu.cuStreamQuery,
        .mem_alloc = cu.cuMemAlloc, .mem_free = cu.cuMemFree, .htod = cu.cuMemcpyHtoDAsync,
        .dtoh = cu.cuMemcpyDtoHAsync, .memset32 = cu.cuMemsetD32Async,
        .module_load = cu.cuModuleLoadData, .module_unload = cu.cuModuleUnload,
        .get_function = cu.cuModuleGetFunction, .launch = cu.cuLaunchKernel,
        .event_create = cu.cuEventCreate, .event_record = cu.cuEventRecord, .event_sync = cu.cuEventSynchronize,
        .event_destroy = cu.cuEventDestroy,
        .event_elapsed = cu.cuEventElapsedTime_v2 ? cu.cuEventElapsedTime_v2 : cu.cuEventElapsedTime,
    };

    char d[256];
    CUresult r = cu.cuInit(0);
    if (r != CUDA_SUCCESS)
        FAIL("cuInit failed: %s%s", cu_describe(r, d, sizeof d),
             r == CUDA_ERROR_NO_DEVICE ? "; check nvidia-smi and CUDA_VISIBLE_DEVICES" : "");
    int n = 0;
    if (rt_drv_device_count(&cu_drv, &n, "the NVIDIA driver reports no CUDA devices (check nvidia-smi and "
                            "CUDA_VISIBLE_DEVICES)", err, errlen) != 0 ||
        rt_rtc_load(&nv.lib, nvrtc_load_once, err, errlen) != 0)
        return RT_ERR;
    for (int i = 0; i < n; i++) {
        r = cu.cuDeviceGet(&cu.dev[cu.devs.ndev], i);
        if (r != CUDA_SUCCESS) continue;
        fill_info(cu.devs.ndev);
        cu.devs.ndev++;
    }
    if (cu.devs.ndev == 0) FAIL("%d CUDA device(s) but cuDeviceGet failed for all", n);
    return 0;
}

static int cu_init(char *err, size_t errlen) { return rt_drv_init(&cu.devs, cu_init_once, err, errlen); }
static int cu_device_count(void) { return cu.devs.ndev; }
static int cu_device_info(int index, rt_device_info *out) { return rt_drv_device_info(&cu.devs, index, out); }

/* ---- contexts ---- */

static int cu_open(int index, rt_ctx **out, char *err, size_t errlen)
{
    rt_ctx *c = rt_drv_ctx_new(&cu_drv, index, sizeof *c, err, errlen);
    if (!c) return RT_ERR;
    c->index = index;
    c->dev = cu.dev[index];
    c->optin_shared = cu.optin_shared[index];
    CUresult r = cu.cuDevicePrimaryCtxRetain(&c->h.at.ctx, c->dev);
    if (r != CUDA_SUCCESS) CU_FAIL("cuDevicePrimaryCtxRetain", r, free(c));
    r = cu.cuCtxSetCurrent(c->h.at.ctx);
    if (r != CUDA_SUCCESS) CU_FAIL("cuCtxSetCurrent", r, cu.cuDevicePrimaryCtxRelease(c->dev), free(c));
    r = cu.cuStreamCreate(&c->h.stream, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) CU_FAIL("cuStreamCreate", r, cu.cuDevicePrimaryCtxRelease(c->dev), free(c));
    *out = c;
    return 0;
}

static void gate_free(rt_ctx *c);

static void cu_close(rt_ctx *c)
{
    if (!c) return;
    if (cu.cuCtxSetCurrent(c->h.at.ctx) == CUDA_SUCCESS) {
        cu.cuStreamSynchronize(c->h.stream);
        gate_free(c);
        cu.cuStreamDestroy(c->h.stream);
    }
    cu.cuDevicePrimaryCtxRelease(c->dev);
    free(c);
}

/* ---- modules and kernels ---- */

/* NVRTC's build for a context's arch; for a GPU newer than this NVRTC, PTX for the newest
 * architecture it knows, which the driver compiles for the device at load time (no ptxas
 * report, so spills are -1) */
static int cu_build(const char *arch, const char *source, const char *const *defines, int ndefines, void **bin,
                    size_t *len, char **log, char *err, size_t errlen)
{
    int rc = nvrtc_build(arch, source, defines, ndefines, bin, len, NULL, log, err, errlen);
    char ptxarch[32];
    if (rc == RT_ECOMPILE && !strncmp(arch, "sm_", 3) &&
        ptx_fallback_arch(atoi(arch + 3), ptxarch, sizeof ptxarch) == 0) {
        free(*log);
        *log = NULL;
        rc = nvrtc_build(ptxarch, source, defines, ndefines, bin, len, NULL, log, err, errlen);
        char note[256];
        snprintf(note, sizeof note, "note: NVRTC %d.%d does not know %s; built PTX for %s for the driver to compile",
                 nv.lib.major, nv.lib.minor, arch, ptxarch);
        *log = rt_log_append(*log, note);
    }
    return rc;
}

static int cu_get_kernel(rt_module *m, const char *name, rt_kernel **out, rt_kernel_attrs *attrs,
                         char *err, size_t errlen)
{
    rt_kernel *k = rt_drv_kernel_new(m, name, sizeof *k, err, errlen);
    if (!k) return RT_ERR;
    const CUfunction f = k->f;
    int v = 0;
    long regs = cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f) == CUDA_SUCCESS ? v : -1;
    long shared = cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f) == CUDA_SUCCESS ? v : -1;
    long local = cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f) == CUDA_SUCCESS ? v : -1;
    k->max_threads = cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f) == CUDA_SUCCESS ? v : -1;
    /* lets launches ask for more than the default 48 KiB of dynamic shared memory */
    k->max_dyn_shared = -1;
    if (m->c->optin_shared > 0) {
        int want = m->c->optin_shared - (shared > 0 ? (int)shared : 0);
        if (want > 0 && cu.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, want) == CUDA_SUCCESS)
            k->max_dyn_shared = want;
    }
    if (k->max_dyn_shared < 0 && cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f) == CUDA_SUCCESS)
        k->max_dyn_shared = v;
    if (attrs) {
        rt_kernel_attrs p;
        parse_ptxas(m->log, name, &p);
        attrs->registers = regs;
        attrs->spill_bytes = p.spill_bytes;
        attrs->shared_bytes = shared;
        attrs->private_bytes = local;
        attrs->max_threads = k->max_threads;
        attrs->binary_bytes = (long)m->binlen;
    }
    *out = k;
    return 0;
}

/* ---- the timing gate ---- */

#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02

/* Loads kernels/gate.ptx and two words of mapped host memory; 0, or -1 with gate.why. */
static int gate_load(rt_ctx *c)
{
    cu_gate *g = &c->gate;
    char root[4096], path[4200], e[256] = "";
    char *ptx = NULL;
    size_t len = 0;
    void *host = NULL;
    CUresult r;
    if (!cu.cuMemHostAlloc || !cu.cuMemHostGetDevicePointer || !cu.cuMemFreeHost) {
        snprintf(g->why, sizeof g->why, "libcuda.so.1 lacks mapped host memory (cuMemHostAlloc)");
        return -1;
    }
    if (fb_root(root, sizeof root) != 0) {
        snprintf(g->why, sizeof g->why, "cannot find kernels/gate.ptx (set FABENCH_ROOT)");
        return -1;
    }
    snprintf(path, sizeof path, "%s/kernels/gate.ptx", root);
    if (fb_read_file(path, &ptx, &len, e, sizeof e) != 0) {
        snprintf(g->why, sizeof g->why, "%s", e);
        return -1;
    }
    r = cu.cuModuleLoadData(&g->mod, ptx);
    free(ptx);
    if (r == CUDA_SUCCESS) r = cu.cuModuleGetFunction(&g->fn, g->mod, "fb_gate");
    if (r == CUDA_SUCCESS) r = cu.cuMemHostAlloc(&host, 2 * sizeof(uint32_t), CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    if (r == CUDA_SUCCESS) r = cu.cuMemHostGetDevicePointer(&g->dev, host, 0);
    if (r != CUDA_SUCCESS) {
        snprintf(g->why, sizeof g->why, "the gate kernel or its mapped words: %s", cu_describe(r, e, sizeof e));
        if (host) cu.cuMemFreeHost(host);
        if (g->mod) cu.cuModuleUnload(g->mod);
        g->mod = NULL;
        return -1;
    }
    g->host = host;
    g->host[0] = g->host[1] = 0;
    g->seq = 0;
    return 0;
}

static void gate_free(rt_ctx *c)
{
    cu_gate *g = &c->gate;
    if (g->state != 1) return;
    cu.cuMemFreeHost((void *)g->host);
    cu.cuModuleUnload(g->mod);
    memset(g, 0, sizeof *g);
}

static int cu_gate_hold(rt_ctx *c, double timeout_s, char *err, size_t errlen)
{
    cu_gate *g = &c->gate;
    if (rt_drv_bind(c, err, errlen) != 0) return RT_ERR;
    if (g->state == 0) g->state = gate_load(c) == 0 ? 1 : -1;
    if (g->state < 0) FAIL("%s", g->why);
    uint32_t seq = g->seq + 1;
    unsigned long long timeout_ns = (unsigned long long)(timeout_s * 1e9);
    CUdeviceptr flag = g->dev, late = g->dev + sizeof(uint32_t);
    void *params[] = {&flag, &seq, &timeout_ns, &late};
    CUresult r = cu.cuLaunchKernel(g->fn, 1, 1, 1, 1, 1, 1, 0, c->h.stream, params, NULL);
    if (r != CUDA_SUCCESS) CU_FAIL("cuLaunchKernel (the timing gate)", r, (void)0);
    g->seq = seq;
    return 0;
}

static void cu_gate_open(rt_ctx *c)
{
    if (c->gate.state == 1) __atomic_store_n(&c->gate.host[0], c->gate.seq, __ATOMIC_RELEASE);
}

static long cu_gate_late(rt_ctx *c)
{
    return c->gate.state == 1 ? (long)__atomic_load_n(&c->gate.host[1], __ATOMIC_ACQUIRE) : 0;
}

static void *cu_native_queue(rt_ctx *c) { return c->h.stream; }

/* ---- launch graphs ---- */

#define CU_STREAM_CAPTURE_MODE_RELAXED 2 /* other threads may keep calling the driver (compiles) */

struct rt_graph { CUgraph graph; CUgraphExec exec; };

static int graphs_loaded(void)
{
    return cu.cuStreamBeginCapture && cu.cuStreamEndCapture && cu.cuGraphInstantiateWithFlags && cu.cuGraphLaunch &&
           cu.cuGraphExecDestroy && cu.cuGraphDestroy;
}

static int cu_capture_begin(rt_ctx *c, char *err, size_t errlen)
{
    if (!graphs_loaded()) FAIL("%s", "libcuda.so.1 lacks stream capture and graphs (CUDA before 11.4)");
    if (rt_drv_bind(c, err, errlen) != 0) return RT_ERR;
    CUresult r = cu.cuStreamBeginCapture(c->h.stream, CU_STREAM_CAPTURE_MODE_RELAXED);
    if (r != CUDA_SUCCESS) CU_FAIL("cuStreamBeginCapture", r, (void)0);
    return 0;
}

static int cu_capture_end(rt_ctx *c, rt_graph **out, char *err, size_t errlen)
{
    *out = NULL;
    CUgraph g = NULL;
    CUresult r = cu.cuStreamEndCapture(c->h.stream, &g);
    if (r != CUDA_SUCCESS) CU_FAIL("cuStreamEndCapture", r, if (g) cu.cuGraphDestroy(g));
    rt_graph *rg = calloc(1, sizeof *rg);
    if (!rg) FAIL("%s", "out of memory");
    rg->graph = g;
    r = cu.cuGraphInstantiateWithFlags(&rg->exec, g, 0);
    if (r != CUDA_SUCCESS) CU_FAIL("cuGraphInstantiateWithFlags", r, cu.cuGraphDestroy(g), free(rg));
    *out = rg;
    return 0;
}

static int cu_graph_launch(rt_ctx *c, rt_graph *g, char *err, size_t errlen)
{
    if (rt_drv_bind(c, err, errlen) != 0) return RT_ERR;
    CUresult r = cu.cuGraphLaunch(g->exec, c->h.stream);
    if (r != CUDA_SUCCESS) CU_FAIL("cuGraphLaunch", r, (void)0);
    return 0;
}

static void cu_graph_free(rt_graph *g)
{
    if (!g) return;
    cu.cuGraphExecDestroy(g->exec);
    cu.cuGraphDestroy(g->graph);
    free(g);
}

/* An event at this point of the stream: both ends of it are the one recorded event. */
static int cu_mark(rt_ctx *c, rt_event **ev, char *err, size_t errlen)
{
    if (rt_drv_bind(c, err, errlen) != 0) return RT_ERR;
    rt_event *re = calloc(1, sizeof *re);
    if (!re) FAIL("%s", "out of memory");
    re->drv = &cu_drv;
    CUresult r = cu.cuEventCreate(&re->start, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) CU_FAIL("cuEventCreate", r, free(re));
    r = cu.cuEventRecord(re->start, c->h.stream);
    if (r != CUDA_SUCCESS) CU_FAIL("cuEventRecord", r, cu.cuEventDestroy(re->start), free(re));
    re->stop = re->start;
    *ev = re;
    return 0;
}

/* ---- launches (waiting and timing: rt_drv_finish, rt_drv_elapsed_ms) ---- */

static void put_buf(const rt_buf *b, rt_param_slot *slot) { slot->u = (uint64_t)b->h.ptr; }

static int cu_launch(rt_ctx *c, rt_kernel *k, const size_t grid[3], const size_t block[3],
                     size_t dyn_shared, const rt_arg *args, int nargs, rt_event **ev,
                     char *err, size_t errlen)
{
    const int chk = rt_drv_launch_check(c, grid, block, NULL, k->max_threads, err, errlen);
    if (chk != 0) return chk;
    if (dyn_shared > (size_t)INT_MAX || (k->max_dyn_shared >= 0 && dyn_shared > (size_t)k->max_dyn_shared)) {
        snprintf(err, errlen, "launch: %zu bytes of dynamic shared memory; this kernel on this device allows at most %ld",
                 dyn_shared, k->max_dyn_shared);
        return RT_ERESOURCE;
    }
    return rt_drv_enqueue(c, k->f, grid, block, dyn_shared, args, nargs, put_buf, ev, err, errlen);
}

static rt_drv cu_drv = {
    .api = "CUDA", .lib = "libcuda.so.1", .sticky_msg = STICKY_MSG, .shared_mem = "shared",
    .not_ready = CUDA_ERROR_NOT_READY, .out_of_resources = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
    .invalid_value = CUDA_ERROR_INVALID_VALUE,
    .describe = cu_describe, .sticky = cu_sticky, .select = cu_select, .build = cu_build, .devs = &cu.devs,
    .name = {.device_count = "cuDeviceGetCount", .select = "cuCtxSetCurrent", .stream_sync = "cuStreamSynchronize",
             .stream_query = "cuStreamQuery", .mem_alloc = "cuMemAlloc", .htod = "cuMemcpyHtoD",
             .dtoh = "cuMemcpyDtoH", .memset32 = "cuMemsetD32Async", .module_load = "cuModuleLoadData",
             .get_function = "cuModuleGetFunction", .launch = "cuLaunchKernel", .event_create = "cuEventCreate"},
};

const rt_runtime rt_cuda = {
    .name = "cuda",
    .init = cu_init,
    .device_count = cu_device_count,
    .device_info = cu_device_info,
    .open = cu_open,
    .close = cu_close,
    RT_DRV_ENTRIES,
    .get_kernel = cu_get_kernel,
    .launch = cu_launch,
    .compile_offline = cu_compile_offline,
    .offline_compiler = cu_offline_compiler,
    .tensor_map = cu_tensor_map,
    .gate_hold = cu_gate_hold,
    .gate_open = cu_gate_open,
    .gate_late = cu_gate_late,
    .native_queue = cu_native_queue,
    .mark = cu_mark,
    .capture_begin = cu_capture_begin,
    .capture_end = cu_capture_end,
    .graph_launch = cu_graph_launch,
    .graph_free = cu_graph_free,
};

/* the layouts rt_shared.c relies on, for the rt_drv_* entries above */
RT_DRV_LAYOUT_CHECK;
