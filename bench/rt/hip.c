/* hip.c: AMD GPUs through the HIP runtime (libamdhip64.so) and HIPRTC (inside libamdhip64
 * up to ROCm 5, libhiprtc.so from ROCm 6), loaded with dlopen and declared here, so no ROCm
 * headers are needed to build: devices, HIPRTC builds to code objects (resources from their
 * metadata note), one non-blocking stream per opened device, launches, event timing, and
 * offline compiles for a named gfx target (HIPRTC; hipcc for targets HIPRTC does not know).
 * Written after cuda.c; it has run on no AMD GPU yet (see README). */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "amdgpu.h"
#include "rt.h"
#include "rt_shared.h"

/* ---- the few HIP runtime and HIPRTC declarations we use (values as in hip_runtime_api.h
 * and hiprtc.h; the same in ROCm 5 and 6) ---- */

typedef int hipError_t;
/* the handles the shared routines pass (rt_shared.h) as void pointers */
typedef void *hipModule_t;
typedef void *hipFunction_t;
typedef void *hipStream_t;
typedef void *hipEvent_t;
typedef int hiprtcResult;
typedef void *hiprtcProgram;

#define hipSuccess 0
#define hipErrorInvalidValue 1
#define hipErrorOutOfMemory 2
#define hipErrorNoDevice 100
#define hipErrorInvalidDevice 101
#define hipErrorNotReady 600
#define hipErrorIllegalAddress 700
#define hipErrorLaunchOutOfResources 701
#define hipErrorLaunchTimeOut 702
#define hipErrorAssert 710
#define hipErrorLaunchFailure 719

/* hipDeviceAttribute_t: the CUDA-compatible block, unchanged from ROCm 5.0 to 6.x */
#define hipDeviceAttributeClockRate 5
#define hipDeviceAttributeL2CacheSize 19
#define hipDeviceAttributeMaxGridDimX 29
#define hipDeviceAttributeMaxGridDimY 30
#define hipDeviceAttributeMaxGridDimZ 31
#define hipDeviceAttributeMaxThreadsPerBlock 56
#define hipDeviceAttributeMultiprocessorCount 63
#define hipDeviceAttributeMaxSharedMemoryPerBlock 74
#define hipDeviceAttributeWarpSize 87

#define HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK 0
#define HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES 1
#define HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES 3
#define HIP_FUNC_ATTRIBUTE_NUM_REGS 4

#define hipStreamNonBlocking 1
#define hipEventDefault 0

#define HIPRTC_SUCCESS 0
#define HIPRTC_ERROR_INVALID_OPTION 5
#define HIPRTC_ERROR_COMPILATION 6

/* X(member, symbol, return, parameters, required) */
#define HIP_API(X)                                                                             \
    X(hipInit, "hipInit", hipError_t, (unsigned int), 1)                                       \
    X(hipDriverGetVersion, "hipDriverGetVersion", hipError_t, (int *), 1)                      \
    X(hipRuntimeGetVersion, "hipRuntimeGetVersion", hipError_t, (int *), 0)                    \
    X(hipGetErrorName, "hipGetErrorName", const char *, (hipError_t), 1)                       \
    X(hipGetErrorString, "hipGetErrorString", const char *, (hipError_t), 1)                   \
    X(hipGetDeviceCount, "hipGetDeviceCount", hipError_t, (int *), 1)                          \
    X(hipDeviceGetName, "hipDeviceGetName", hipError_t, (char *, int, int), 1)                 \
    X(hipDeviceGetAttribute, "hipDeviceGetAttribute", hipError_t, (int *, int, int), 1)        \
    X(hipDeviceGetPCIBusId, "hipDeviceGetPCIBusId", hipError_t, (char *, int, int), 0)         \
    X(hipDeviceTotalMem, "hipDeviceTotalMem", hipError_t, (size_t *, int), 1)                  \
    X(hipGetDevicePropertiesR0600, "hipGetDevicePropertiesR0600", hipError_t, (void *, int), 0) \
    X(hipGetDeviceProperties, "hipGetDeviceProperties", hipError_t, (void *, int), 0)          \
    X(hipSetDevice, "hipSetDevice", hipError_t, (int), 1)                                      \
    X(hipStreamCreateWithFlags, "hipStreamCreateWithFlags", hipError_t, (hipStream_t *, unsigned int), 1) \
    X(hipStreamDestroy, "hipStreamDestroy", hipError_t, (hipStream_t), 1)                      \
    X(hipStreamQuery, "hipStreamQuery", hipError_t, (hipStream_t), 1)                          \
    X(hipStreamSynchronize, "hipStreamSynchronize", hipError_t, (hipStream_t), 1)              \
    X(hipModuleLoadData, "hipModuleLoadData", hipError_t, (hipModule_t *, const void *), 1)    \
    X(hipModuleUnload, "hipModuleUnload", hipError_t, (hipModule_t), 1)                        \
    X(hipModuleGetFunction, "hipModuleGetFunction", hipError_t, (hipFunction_t *, hipModule_t, const char *), 1) \
    X(hipFuncGetAttribute, "hipFuncGetAttribute", hipError_t, (int *, int, hipFunction_t), 0)  \
    X(hipMalloc, "hipMalloc", hipError_t, (void **, size_t), 1)                                \
    X(hipFree, "hipFree", hipError_t, (void *), 1)                                             \
    X(hipMemcpyHtoDAsync, "hipMemcpyHtoDAsync", hipError_t, (void *, const void *, size_t, hipStream_t), 1) \
    X(hipMemsetD32Async, "hipMemsetD32Async", hipError_t, (void *, int, size_t, hipStream_t), 0) \
    X(hipMemcpyDtoHAsync, "hipMemcpyDtoHAsync", hipError_t, (void *, void *, size_t, hipStream_t), 1) \
    X(hipModuleLaunchKernel, "hipModuleLaunchKernel", hipError_t, (hipFunction_t, unsigned int, unsigned int, \
        unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, hipStream_t, void **, void **), 1) \
    X(hipEventCreateWithFlags, "hipEventCreateWithFlags", hipError_t, (hipEvent_t *, unsigned int), 1) \
    X(hipEventRecord, "hipEventRecord", hipError_t, (hipEvent_t, hipStream_t), 1)              \
    X(hipEventSynchronize, "hipEventSynchronize", hipError_t, (hipEvent_t), 1)                 \
    X(hipEventDestroy, "hipEventDestroy", hipError_t, (hipEvent_t), 1)                         \
    X(hipEventElapsedTime, "hipEventElapsedTime", hipError_t, (float *, hipEvent_t, hipEvent_t), 1)

#define HIPRTC_API(X)                                                                          \
    X(hiprtcVersion, "hiprtcVersion", hiprtcResult, (int *, int *), 0)                         \
    X(hiprtcGetErrorString, "hiprtcGetErrorString", const char *, (hiprtcResult), 1)           \
    X(hiprtcCreateProgram, "hiprtcCreateProgram", hiprtcResult, (hiprtcProgram *, const char *, \
        const char *, int, const char *const *, const char *const *), 1)                       \
    X(hiprtcDestroyProgram, "hiprtcDestroyProgram", hiprtcResult, (hiprtcProgram *), 1)        \
    X(hiprtcCompileProgram, "hiprtcCompileProgram", hiprtcResult, (hiprtcProgram, int, const char *const *), 1) \
    X(hiprtcGetProgramLogSize, "hiprtcGetProgramLogSize", hiprtcResult, (hiprtcProgram, size_t *), 1) \
    X(hiprtcGetProgramLog, "hiprtcGetProgramLog", hiprtcResult, (hiprtcProgram, char *), 1)    \
    X(hiprtcGetCodeSize, "hiprtcGetCodeSize", hiprtcResult, (hiprtcProgram, size_t *), 1)      \
    X(hiprtcGetCode, "hiprtcGetCode", hiprtcResult, (hiprtcProgram, char *), 1)

HIP_API(RT_API_TYPEDEF)
HIPRTC_API(RT_API_TYPEDEF)
typedef int (*comgr_count_fn)(size_t *);
typedef int (*comgr_name_fn)(size_t, const char **);

/* The runtime's state: filled once by hip_init, read-only afterwards. */
static struct {
    rt_drv_devices devs;
    void *lib;
    HIP_API(RT_API_MEMBER)
} hp;

static int rtc_code(const char *arch, void *prog, void **bin, size_t *len, char *err, size_t errlen);

/* HIPRTC's state: loaded once (by init or by the first offline compile), read-only after. */
static struct {
    rt_rtc lib;
    HIPRTC_API(RT_API_MEMBER)
    comgr_count_fn isa_count; /* the code-object manager HIPRTC compiles with: which targets it knows */
    comgr_name_fn isa_name;
} rtc = {.lib = {.name = "HIPRTC", .prefix = "hiprtc", .file = "attn_fwd.hip",
                 .compilation = HIPRTC_ERROR_COMPILATION, .invalid_option = HIPRTC_ERROR_INVALID_OPTION,
                 .no_diagnostic = "error: HIPRTC failed without a diagnostic", .get_code = rtc_code,
                 .once = PTHREAD_ONCE_INIT}};

struct rt_ctx {
    rt_drv_ctx h;    /* at.dev: the device */
    size_t shared_limit;
};
struct rt_buf { rt_drv_buf h; };
struct rt_kernel { hipFunction_t f; long max_threads; long static_shared; };

static rt_drv hip_drv; /* the runtime for the shared routines, defined with rt_hip below */

/* "hipErrorX (description)", the description left out where it only repeats the name */
static const char *hip_describe(hipError_t r, char *buf, size_t len)
{
    const char *name = hp.hipGetErrorName ? hp.hipGetErrorName(r) : NULL;
    const char *str = hp.hipGetErrorString ? hp.hipGetErrorString(r) : NULL;
    return rt_describe("HIP", r, name, name && str && strcmp(name, str) ? str : NULL, buf, len);
}

/* Errors after which the device cannot run anything more in this process: a kernel fault.
 * (ROCm usually aborts the process on a GPU memory fault before HIP can report one.) */
static int hip_sticky(hipError_t r)
{
    return r == hipErrorIllegalAddress || r == hipErrorLaunchTimeOut || r == hipErrorAssert || r == hipErrorLaunchFailure;
}

#define STICKY_MSG "; a kernel fault left HIP unusable in this process: " RT_UNUSABLE

#define HIP_FAIL(call, r, ...) RT_DRV_FAIL(&hip_drv, call, r, __VA_ARGS__)

static int hip_select(const rt_drv_where *at) { return hp.hipSetDevice(at->dev); }

/* HIP's memory calls take device addresses as pointers, the shared routines pass rt_devptr */
static int hip_malloc(rt_devptr *ptr, size_t bytes)
{
    void *p = NULL;
    const hipError_t r = hp.hipMalloc(&p, bytes);
    *ptr = (rt_devptr)(uintptr_t)p;
    return r;
}
static int hip_free(rt_devptr ptr) { return hp.hipFree((void *)(uintptr_t)ptr); }
static int hip_htod(rt_devptr dst, const void *src, size_t bytes, void *stream)
{
    return hp.hipMemcpyHtoDAsync((void *)(uintptr_t)dst, src, bytes, stream);
}
static int hip_dtoh(void *dst, rt_devptr src, size_t bytes, void *stream)
{
    return hp.hipMemcpyDtoHAsync(dst, (void *)(uintptr_t)src, bytes, stream);
}
static int hip_memset32(rt_devptr dst, unsigned value, size_t count, void *stream)
{
    return hp.hipMemsetD32Async((void *)(uintptr_t)dst, (int)value, count, stream);
}

/* ---- HIPRTC loading ---- */

/* rt_rtc_try's take: HIPRTC's calls from the library h found at path */
static int rtc_take(void *h, const char *path)
{
    if (!dlsym(h, "hiprtcCompileProgram")) return 0; /* ROCm 6's libamdhip64: HIPRTC is a library of its own */
#define X_LOAD(member, sym, ret, params, req)                                                             \
    RT_API_LOAD(rtc, h, member, sym, req,                                                                 \
                snprintf(rtc.lib.why, sizeof rtc.lib.why, "%s lacks the required symbol %s", path, sym); return 0)
    HIPRTC_API(X_LOAD)
#undef X_LOAD
    return 1;
}

static void rtc_load_once(void)
{
    /* HIPRTC of the ROCm whose runtime is loaded already, else the newest found */
    static const char *const names[] = {"libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6", "libamdhip64.so.5",
                                        "libhiprtc.so.5", "libamdhip64.so"};
    const char *rocm = getenv("ROCM_PATH");
    char dlerr[192] = "";
    const size_t nn = sizeof names / sizeof names[0];
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < nn && !rtc.lib.handle; i++)
            rt_rtc_try(&rtc.lib, names[i], pass == 0 ? RTLD_NOLOAD : 0, rtc_take, dlerr, sizeof dlerr);
    for (int d = 0; d < 2 && !rtc.lib.handle; d++) {
        const char *dir = d == 0 ? rocm : "/opt/rocm";
        if (!dir || !dir[0]) continue;
        char lib[512];
        snprintf(lib, sizeof lib, "%s/lib", dir);
        rt_rtc_try_in(&rtc.lib, lib, names, nn, rtc_take, dlerr, sizeof dlerr);
    }
    if (!rtc.lib.handle) {
        if (!rtc.lib.why[0])
            snprintf(rtc.lib.why, sizeof rtc.lib.why,
                     "HIPRTC not found (%s; also looked in $ROCM_PATH/lib and /opt/rocm/lib): install ROCm's "
                     "HIPRTC (Debian: libamdhip64-dev) or set ROCM_PATH", dlerr);
        return;
    }
    rtc.lib.call = (rt_rtc_calls){.create = rtc.hiprtcCreateProgram, .destroy = rtc.hiprtcDestroyProgram,
                                  .compile = rtc.hiprtcCompileProgram, .log_size = rtc.hiprtcGetProgramLogSize,
                                  .log = rtc.hiprtcGetProgramLog, .error_string = rtc.hiprtcGetErrorString};
    if (!rtc.hiprtcVersion || rtc.hiprtcVersion(&rtc.lib.major, &rtc.lib.minor) != HIPRTC_SUCCESS)
        rtc.lib.major = rtc.lib.minor = 0;
    /* the code-object manager (comgr) HIPRTC compiles with, to ask it which targets it
     * knows: an older one can crash on a target it does not (ROCm 5.2 on gfx940) */
    static const char *const comgr[] = {"libamd_comgr.so.3", "libamd_comgr.so.2", "libamd_comgr.so"};
    void *cg = NULL;
    for (int pass = 0; pass < 2 && !cg; pass++)
        for (size_t i = 0; i < 3 && !cg; i++) cg = dlopen(comgr[i], RTLD_NOW | RTLD_LOCAL | (pass == 0 ? RTLD_NOLOAD : 0));
    if (cg) {
        rtc.isa_count = (comgr_count_fn)dlsym(cg, "amd_comgr_get_isa_count");
        rtc.isa_name = (comgr_name_fn)dlsym(cg, "amd_comgr_get_isa_name");
    }
    (void)dlerror();
    rtc.lib.ok = 1;
}

/* Whether HIPRTC's code-object manager lists arch (bare: "gfx90a"); 1 where it cannot say. */
static int rtc_knows(const char *arch)
{
    size_t n = 0;
    if (!rtc.isa_count || !rtc.isa_name || rtc.isa_count(&n) != 0 || n == 0) return 1;
    size_t al = strcspn(arch, ":");
    for (size_t i = 0; i < n; i++) {
        const char *name = NULL;
        if (rtc.isa_name(i, &name) != 0 || !name) continue;
        const char *g = strstr(name, "--");
        if (g && strlen(g + 2) >= al && !strncmp(g + 2, arch, al) && (g[2 + al] == 0 || g[2 + al] == ':')) return 1;
    }
    return 0;
}

/* ---- builds ---- */

/* "gfx" followed by letters and digits, then optional ":feature+" parts. */
static int valid_gfx(const char *arch)
{
    if (!arch || strncmp(arch, "gfx", 3) || !isalnum((unsigned char)arch[3])) return 0;
    for (const char *p = arch + 3; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != ':' && *p != '+' && *p != '-') return 0;
    return strlen(arch) < 48;
}

static int rtc_build(const char *arch, const char *source, const char *const *defines, int ndefines, void **bin,
                     size_t *len, char **log, char *err, size_t errlen)
{
    char archopt[96];
    snprintf(archopt, sizeof archopt, "--offload-arch=%s", arch);
    const char *const fixed[] = {archopt, "-O3", "-std=c++17"};
    return rt_rtc_build(&rtc.lib, arch, source, fixed, 3, defines, ndefines, bin, len, log, err, errlen);
}

/* rt_rtc's get_code: the code object of prog */
static int rtc_code(const char *arch, void *prog, void **bin, size_t *len, char *err, size_t errlen)
{
    size_t n = 0;
    const hiprtcResult r = rtc.hiprtcGetCodeSize(prog, &n);
    char *b = r == HIPRTC_SUCCESS && n ? malloc(n) : NULL;
    if (!b || rtc.hiprtcGetCode(prog, b) != HIPRTC_SUCCESS) {
        free(b);
        FAIL("hiprtcGetCode: %s", r != HIPRTC_SUCCESS ? rtc.hiprtcGetErrorString(r) : n ? "failed" : "empty");
    }
    *bin = b;
    *len = n;
    return 0;
}

/* hipcc (the ROCm clang driver) for the device code alone: hipcc on PATH, in $ROCM_PATH/bin
 * or /opt/rocm/bin ($HIPCC first). */
static int find_hipcc(char *out, size_t len)
{
    const char *env = getenv("HIPCC"), *rocm = getenv("ROCM_PATH"), *path = getenv("PATH");
    struct stat st;
    if (env && *env && stat(env, &st) == 0) { snprintf(out, len, "%s", env); return 0; }
    const char *dirs[] = {rocm && *rocm ? rocm : NULL, "/opt/rocm"};
    for (int i = 0; i < 2; i++) {
        if (!dirs[i]) continue;
        snprintf(out, len, "%s/bin/hipcc", dirs[i]);
        if (access(out, X_OK) == 0) return 0;
    }
    for (const char *d = path ? path : ""; *d;) {
        const char *c = strchr(d, ':');
        size_t dl = c ? (size_t)(c - d) : strlen(d);
        snprintf(out, len, "%.*s/hipcc", (int)dl, dl ? d : ".");
        if (access(out, X_OK) == 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode)) return 0;
        d = c ? c + 1 : d + dl;
    }
    return -1;
}

static int read_whole(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    while (b) {
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (n < cap) break;
        char *nb = realloc(b, cap * 2 + 1);
        if (!nb) { free(b); b = NULL; break; }
        b = nb;
        cap *= 2;
    }
    fclose(f);
    if (!b) return -1;
    b[n] = 0;
    *out = b;
    *len = n;
    return 0;
}

/* The device code of source for arch through hipcc (what HIPRTC compiles: the HIP headers
 * included, device code only, one unbundled code object). */
static int hipcc_build(const char *arch, const char *source, const char *const *defines, int ndefines, void **bin,
                       size_t *len, char **log, char *err, size_t errlen)
{
    char hipcc[512];
    if (find_hipcc(hipcc, sizeof hipcc) != 0)
        FAIL("HIPRTC (%s) does not know %s and no hipcc was found (PATH, $ROCM_PATH/bin, /opt/rocm/bin)",
             rtc.lib.path[0] ? rtc.lib.path : "HIPRTC", arch);
    const char *tmp = getenv("TMPDIR");
    char dir[512], src[600], obj[600], lgp[600];
    snprintf(dir, sizeof dir, "%s/fabench-hipcc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) FAIL("cannot create a temporary folder in %s: %s", tmp && *tmp ? tmp : "/tmp", strerror(errno));
    snprintf(src, sizeof src, "%s/attn_fwd.hip", dir);
    snprintf(obj, sizeof obj, "%s/attn_fwd.co", dir);
    snprintf(lgp, sizeof lgp, "%s/log", dir);
    int rc = RT_ERR;
    char **defs = NULL;
    char **argv = calloc((size_t)ndefines + 20, sizeof *argv);
    FILE *f = fopen(src, "w");
    if (!argv || !f || fputs(source, f) < 0) {
        if (f) fclose(f);
        snprintf(err, errlen, "cannot write %s", src);
        goto out;
    }
    if (fclose(f) != 0) { snprintf(err, errlen, "cannot write %s", src); goto out; }
    if (rt_defines(defines, ndefines, &defs, err, errlen) != 0) goto out;
    char archopt[96];
    snprintf(archopt, sizeof archopt, "--offload-arch=%s", arch);
    int na = 0;
    char *fixed[] = {hipcc, "-x", "hip", "--cuda-device-only", "--no-gpu-bundle-output", archopt, "-O3", "-std=c++17",
                     "-include", "hip/hip_runtime.h"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) argv[na++] = fixed[i];
    for (int i = 0; i < ndefines; i++) argv[na++] = defs[i];
    argv[na++] = "-c";
    argv[na++] = src;
    argv[na++] = "-o";
    argv[na++] = obj;
    pid_t pid = fork();
    if (pid < 0) { snprintf(err, errlen, "fork: %s", strerror(errno)); goto out; }
    if (pid == 0) {
        int fd = open(lgp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(hipcc, argv);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    char *lg = NULL, *b = NULL;
    size_t ll = 0, bl = 0;
    if (read_whole(lgp, &lg, &ll) != 0) lg = NULL;
    char note[1024];
    snprintf(note, sizeof note, "note: HIPRTC (%s) does not know %s; built with %s",
             rtc.lib.path[0] ? rtc.lib.path : "absent", arch, hipcc);
    lg = rt_log_append(lg, note);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        snprintf(err, errlen, "%s failed (exit %d) for %s", hipcc, code, arch);
        lg = rt_log_append(lg, code == 127 ? "error: hipcc could not be run" : "error: hipcc failed");
        rc = code == 127 ? RT_ERR : RT_ECOMPILE;
    } else if (read_whole(obj, &b, &bl) != 0 || bl == 0) {
        free(b);
        snprintf(err, errlen, "%s wrote no code object", hipcc);
    } else {
        *bin = b;
        *len = bl;
        rc = 0;
    }
    if (log) *log = lg;
    else free(lg);
out:
    rt_defines_free(defs, ndefines);
    free(argv);
    unlink(src);
    unlink(obj);
    unlink(lgp);
    rmdir(dir);
    return rc;
}

/* A code object of source for arch: HIPRTC, or hipcc where HIPRTC's compiler does not know
 * the target. 0, RT_ECOMPILE (*log says why) or RT_ERR. */
static int hip_build(const char *arch, const char *source, const char *const *defines, int ndefines, void **bin,
                     size_t *len, char **log, char *err, size_t errlen)
{
    *bin = NULL;
    *len = 0;
    if (log) *log = NULL;
    int have_rtc = rt_rtc_load(&rtc.lib, rtc_load_once, err, errlen) == 0;
    if (have_rtc && rtc_knows(arch)) return rtc_build(arch, source, defines, ndefines, bin, len, log, err, errlen);
    char hipcc[512];
    if (!have_rtc && find_hipcc(hipcc, sizeof hipcc) != 0) return RT_ERR; /* err: HIPRTC's absence */
    return hipcc_build(arch, source, defines, ndefines, bin, len, log, err, errlen);
}

/* Compiler-reported resources of kernel in a code object (-1 where unknown). */
static void meta_attrs(const void *bin, size_t len, const char *kernel, rt_kernel_attrs *a)
{
    a->registers = a->spill_bytes = a->shared_bytes = a->private_bytes = a->max_threads = -1;
    a->binary_bytes = bin ? (long)len : -1;
    amdgpu_kernel_meta m;
    char e[256];
    if (!bin || !kernel || amdgpu_kernel_meta_get(bin, len, kernel, &m, e, sizeof e) != 0) return;
    a->registers = m.vgprs;
    a->spill_bytes = m.vgpr_spills >= 0 ? 4 * m.vgpr_spills : -1; /* bytes per lane */
    a->shared_bytes = m.lds_bytes;
    a->private_bytes = m.scratch_bytes;
    a->max_threads = m.max_flat_workgroup_size;
}

static int hip_compile_offline(const char *arch, const char *source, const char *const *defines, int ndefines,
                               const char *kernel, void **binary, size_t *len, rt_kernel_attrs *attrs, char **log,
                               char *err, size_t errlen)
{
    char *lg = NULL;
    if (log) *log = NULL;
    *binary = NULL;
    *len = 0;
    if (!valid_gfx(arch)) {
        snprintf(err, errlen, "error: unknown AMD target '%s': use gfxNNN (gfx90a, gfx940, gfx942, ...)", arch ? arch : "");
        if (log) *log = rt_log_append(NULL, err);
        if (attrs) meta_attrs(NULL, 0, NULL, attrs);
        return RT_ECOMPILE;
    }
    int rc = hip_build(arch, source, defines, ndefines, binary, len, &lg, err, errlen);
    if (attrs) {
        meta_attrs(rc == 0 ? *binary : NULL, rc == 0 ? *len : 0, kernel, attrs);
        attrs->max_threads = -1; /* as for CUDA: a limit of the device, not of the compile */
    }
    if (log) *log = lg;
    else free(lg);
    return rc;
}

/* ---- devices ---- */

/* gcnArchName ("gfx90a:sramecc+:xnack-") from hipGetDeviceProperties without relying on
 * the struct's layout (it changed in ROCm 6): the first NUL-preceded string in the
 * zero-filled buffer that starts with "gfx" and a digit. Bare name ("gfx90a") into out. */
static int gcn_arch(int dev, char *out, size_t outlen)
{
    enum { PROPS = 16384 };
    unsigned char *buf = calloc(1, PROPS);
    if (!buf) return -1;
    hipError_t r = hp.hipGetDevicePropertiesR0600 ? hp.hipGetDevicePropertiesR0600(buf, dev)
                 : hp.hipGetDeviceProperties ? hp.hipGetDeviceProperties(buf, dev) : hipErrorInvalidValue;
    int rc = -1;
    for (size_t i = 0; r == hipSuccess && i + 8 < PROPS && rc != 0; i++) {
        if ((i && buf[i - 1]) || memcmp(buf + i, "gfx", 3) || !isdigit(buf[i + 3])) continue;
        size_t n = 3;
        while (i + n < PROPS && n < 48 && (isalnum(buf[i + n]) || buf[i + n] == ':' || buf[i + n] == '+' || buf[i + n] == '-')) n++;
        if (i + n >= PROPS || buf[i + n]) continue;
        size_t bare = strcspn((const char *)buf + i, ":");
        snprintf(out, outlen, "%.*s", (int)(bare < outlen ? bare : outlen - 1), (const char *)buf + i);
        rc = 0;
    }
    free(buf);
    return rc;
}

static int has_mfma(const char *arch)
{
    return !strcmp(arch, "gfx90a") || !strcmp(arch, "gfx940") || !strcmp(arch, "gfx941") || !strcmp(arch, "gfx942") ||
           !strcmp(arch, "gfx950");
}

static void version_str(int v, const char *what, char *out, size_t len)
{
    /* HIP_VERSION: major * 10000000 + minor * 100000 + patch */
    snprintf(out, len, "%s %d.%d.%d", what, v / 10000000, (v / 100000) % 100, v % 100000);
}

static void fill_info(int i)
{
    rt_device_info *o = &hp.devs.info[i];
    memset(o, 0, sizeof *o);
    int v = 0;
    char arch[sizeof o->arch];
    if (gcn_arch(i, arch, sizeof arch) != 0) snprintf(arch, sizeof arch, "gpu");
    memcpy(o->arch, arch, sizeof arch);
    if (hp.hipDeviceGetName(o->name, (int)sizeof o->name, i) != hipSuccess) o->name[0] = 0;
    o->name[sizeof o->name - 1] = 0;
    if (!o->name[0]) snprintf(o->name, sizeof o->name, "AMD %s", arch);
    snprintf(o->vendor, sizeof o->vendor, "AMD");
    snprintf(o->platform, sizeof o->platform, "HIP");
    if (hp.hipDriverGetVersion(&v) == hipSuccess) version_str(v, "HIP driver", o->driver, sizeof o->driver);
    if (hp.hipRuntimeGetVersion && hp.hipRuntimeGetVersion(&v) == hipSuccess)
        version_str(v, "HIP runtime", o->runtime_version, sizeof o->runtime_version);
    const char *lib = strrchr(rtc.lib.path, '/') ? strrchr(rtc.lib.path, '/') + 1 : rtc.lib.path;
    snprintf(o->compiler, sizeof o->compiler, "HIPRTC %d.%d (%.80s)", rtc.lib.major, rtc.lib.minor, lib);
    o->is_gpu = 1;
    if (hp.hipDeviceGetAttribute(&v, hipDeviceAttributeMultiprocessorCount, i) == hipSuccess) o->compute_units = v;
    o->warp_size = hp.hipDeviceGetAttribute(&v, hipDeviceAttributeWarpSize, i) == hipSuccess && v > 0 ? v : 64;
    if (hp.hipDeviceGetAttribute(&v, hipDeviceAttributeMaxThreadsPerBlock, i) == hipSuccess && v > 0)
        o->max_group_size = (size_t)v;
    /* LDS: one limit for static and dynamic together (64 KiB on CDNA) */
    if (hp.hipDeviceGetAttribute(&v, hipDeviceAttributeMaxSharedMemoryPerBlock, i) == hipSuccess && v > 0)
        o->shared_bytes = o->static_shared_bytes = (size_t)v;
    const int gattr[3] = {hipDeviceAttributeMaxGridDimX, hipDeviceAttributeMaxGridDimY, hipDeviceAttributeMaxGridDimZ};
    for (int d = 0; d < 3; d++)
        if (hp.hipDeviceGetAttribute(&v, gattr[d], i) == hipSuccess && v > 0) o->max_grid[d] = (size_t)v;
    size_t mem = 0;
    if (hp.hipDeviceTotalMem(&mem, i) == hipSuccess) o->global_bytes = o->max_alloc_bytes = mem;
    if (hp.hipDeviceGetAttribute(&v, hipDeviceAttributeClockRate, i) == hipSuccess && v > 0) o->clock_mhz = v / 1000;
    if (has_mfma(o->arch)) o->features |= RT_FEAT_MFMA;
    if (hp.hipDeviceGetAttribute(&v, hipDeviceAttributeL2CacheSize, i) == hipSuccess && v > 0) o->l2_bytes = (size_t)v;
    if (!hp.hipDeviceGetPCIBusId || hp.hipDeviceGetPCIBusId(o->pci, (int)sizeof o->pci, i) != hipSuccess) o->pci[0] = 0;
}

static int hip_init_once(char *err, size_t errlen)
{
    char dlerr[512] = "";
    const char *names[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.7", "libamdhip64.so.5"};
    for (size_t i = 0; i < 4 && !hp.lib; i++) {
        hp.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!hp.lib && !dlerr[0]) snprintf(dlerr, sizeof dlerr, "%s", dlerror());
    }
    const char *rocm = getenv("ROCM_PATH");
    for (int d = 0; d < 2 && !hp.lib; d++) {
        const char *dir = d == 0 ? rocm : "/opt/rocm";
        if (!dir || !dir[0]) continue;
        char path[300];
        snprintf(path, sizeof path, "%s/lib/libamdhip64.so", dir);
        hp.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    if (!hp.lib) FAIL("libamdhip64.so not found (no ROCm HIP runtime): %s", dlerr);
#define X_LOAD(member, sym, ret, params, req)                                                             \
    RT_API_LOAD(hp, hp.lib, member, sym, req, FAIL("libamdhip64 lacks the required symbol %s (HIP older than 5.0?)", sym))
    HIP_API(X_LOAD)
#undef X_LOAD
    hip_drv.call = (rt_drv_calls){
        .device_count = hp.hipGetDeviceCount, .stream_sync = hp.hipStreamSynchronize, .stream_query = hp.hipStreamQuery,
        .mem_alloc = hip_malloc, .mem_free = hip_free, .htod = hip_htod, .dtoh = hip_dtoh,
        .memset32 = hp.hipMemsetD32Async ? hip_memset32 : NULL,
        .module_load = hp.hipModuleLoadData, .module_unload = hp.hipModuleUnload,
        .get_function = hp.hipModuleGetFunction, .launch = hp.hipModuleLaunchKernel,
        .event_create = hp.hipEventCreateWithFlags, .event_record = hp.hipEventRecord,
        .event_sync = hp.hipEventSynchronize, .event_destroy = hp.hipEventDestroy,
        .event_elapsed = hp.hipEventElapsedTime,
    };
    char d[256];
    hipError_t r = hp.hipInit(0);
    if (r != hipSuccess)
        FAIL("hipInit failed: %s%s", hip_describe(r, d, sizeof d),
             r == hipErrorNoDevice || r == hipErrorInvalidDevice
                 ? "; no usable AMD GPU (check rocminfo, /dev/kfd access and HIP_VISIBLE_DEVICES)" : "");
    int n = 0;
    if (rt_drv_device_count(&hip_drv, &n, "the HIP runtime reports no AMD GPUs (check rocminfo and "
                            "HIP_VISIBLE_DEVICES)", err, errlen) != 0 ||
        rt_rtc_load(&rtc.lib, rtc_load_once, err, errlen) != 0)
        return RT_ERR;
    for (int i = 0; i < n; i++) fill_info(i);
    hp.devs.ndev = n;
    return 0;
}

static int hip_init(char *err, size_t errlen) { return rt_drv_init(&hp.devs, hip_init_once, err, errlen); }
static int hip_device_count(void) { return hp.devs.ndev; }
static int hip_device_info(int index, rt_device_info *out) { return rt_drv_device_info(&hp.devs, index, out); }

/* ---- contexts: the device and one stream ---- */

static int hip_open(int index, rt_ctx **out, char *err, size_t errlen)
{
    rt_ctx *c = rt_drv_ctx_new(&hip_drv, index, sizeof *c, err, errlen);
    if (!c) return RT_ERR;
    c->h.at.dev = index;
    c->shared_limit = hp.devs.info[index].shared_bytes;
    if (rt_drv_bind(c, err, errlen) != 0) { free(c); return RT_ERR; }
    hipError_t r = hp.hipStreamCreateWithFlags(&c->h.stream, hipStreamNonBlocking);
    if (r != hipSuccess) HIP_FAIL("hipStreamCreateWithFlags", r, free(c));
    *out = c;
    return 0;
}

static void hip_close(rt_ctx *c)
{
    if (!c) return;
    if (hp.hipSetDevice(c->h.at.dev) == hipSuccess) {
        hp.hipStreamSynchronize(c->h.stream);
        hp.hipStreamDestroy(c->h.stream);
    }
    free(c);
}

/* ---- modules and kernels ---- */

static int hip_get_kernel(rt_module *m, const char *name, rt_kernel **out, rt_kernel_attrs *attrs, char *err,
                          size_t errlen)
{
    rt_kernel *k = rt_drv_kernel_new(m, name, sizeof *k, err, errlen);
    if (!k) return RT_ERR;
    const hipFunction_t f = k->f;
    rt_kernel_attrs a;
    meta_attrs(m->bin, m->binlen, name, &a);
    int v = 0;
    /* the runtime's word where the metadata note says nothing */
    if (hp.hipFuncGetAttribute) {
        if (a.registers < 0 && hp.hipFuncGetAttribute(&v, HIP_FUNC_ATTRIBUTE_NUM_REGS, f) == hipSuccess) a.registers = v;
        if (a.shared_bytes < 0 && hp.hipFuncGetAttribute(&v, HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f) == hipSuccess)
            a.shared_bytes = v;
        if (a.private_bytes < 0 && hp.hipFuncGetAttribute(&v, HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f) == hipSuccess)
            a.private_bytes = v;
        if (hp.hipFuncGetAttribute(&v, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f) == hipSuccess && v > 0 &&
            (a.max_threads < 0 || v < a.max_threads))
            a.max_threads = v;
    }
    k->max_threads = a.max_threads;
    k->static_shared = a.shared_bytes > 0 ? a.shared_bytes : 0;
    if (attrs) *attrs = a;
    *out = k;
    return 0;
}

/* ---- launches (waiting and timing: rt_drv_finish, rt_drv_elapsed_ms) ---- */

static void put_buf(const rt_buf *b, rt_param_slot *slot) { slot->p = (void *)(uintptr_t)b->h.ptr; }

static int hip_launch(rt_ctx *c, rt_kernel *k, const size_t grid[3], const size_t block[3], size_t dyn_shared,
                      const rt_arg *args, int nargs, rt_event **ev, char *err, size_t errlen)
{
    const size_t *max_grid = hp.devs.info[c->h.at.dev].max_grid;
    const int chk = rt_drv_launch_check(c, grid, block, max_grid, k->max_threads, err, errlen);
    if (chk != 0) return chk;
    /* HIP's own limit: grid times block at most 2^32 - 1 threads along each dimension */
    for (int i = 0; i < 3; i++)
        if ((double)grid[i] * (double)block[i] > 4294967295.0) {
            snprintf(err, errlen, "launch: %zu work-groups of %zu threads along dimension %d exceed HIP's 2^32 - 1", grid[i],
                     block[i], i);
            return RT_ERESOURCE;
        }
    if (dyn_shared > (size_t)INT_MAX || (c->shared_limit && dyn_shared + (size_t)k->static_shared > c->shared_limit)) {
        snprintf(err, errlen, "launch: %zu bytes of dynamic LDS on top of %ld static; the device allows %zu in all",
                 dyn_shared, k->static_shared, c->shared_limit);
        return RT_ERESOURCE;
    }
    return rt_drv_enqueue(c, k->f, grid, block, dyn_shared, args, nargs, put_buf, ev, err, errlen);
}

static rt_drv hip_drv = {
    .api = "HIP", .lib = "libamdhip64", .sticky_msg = STICKY_MSG, .shared_mem = "LDS",
    .not_ready = hipErrorNotReady, .out_of_resources = hipErrorLaunchOutOfResources,
    .invalid_value = hipErrorInvalidValue,
    .describe = hip_describe, .sticky = hip_sticky, .select = hip_select, .build = hip_build, .devs = &hp.devs,
    .name = {.device_count = "hipGetDeviceCount", .select = "hipSetDevice", .stream_sync = "hipStreamSynchronize",
             .stream_query = "hipStreamQuery", .mem_alloc = "hipMalloc", .htod = "hipMemcpyHtoDAsync",
             .dtoh = "hipMemcpyDtoHAsync", .memset32 = "hipMemsetD32Async", .module_load = "hipModuleLoadData",
             .get_function = "hipModuleGetFunction", .launch = "hipModuleLaunchKernel",
             .event_create = "hipEventCreateWithFlags"},
};

const rt_runtime rt_hip = {
    .name = "hip",
    .init = hip_init,
    .device_count = hip_device_count,
    .device_info = hip_device_info,
    .open = hip_open,
    .close = hip_close,
    RT_DRV_ENTRIES,
    .get_kernel = hip_get_kernel,
    .launch = hip_launch,
    .compile_offline = hip_compile_offline,
};

/* the layouts rt_shared.c relies on, for the rt_drv_* entries above */
RT_DRV_LAYOUT_CHECK;
