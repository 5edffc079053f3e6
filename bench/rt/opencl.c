/* opencl.c: the OpenCL runtime through the ICD loader (libOpenCL.so.1, loaded with dlopen):
 * every platform's devices, program builds with logs, buffers, launches, event timing. */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt.h"

#ifndef CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV
#define CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001
#endif
/* cl_nv_device_attribute_query: where the GPU sits on the PCI bus (the slot id holds the
 * device number in its upper five bits and the function in the lower three) */
#define CL_DEVICE_PCI_BUS_ID_NV 0x4008
#define CL_DEVICE_PCI_SLOT_ID_NV 0x4009
#define CL_DEVICE_PCI_DOMAIN_ID_NV 0x400A
#ifndef CL_DEVICE_WARP_SIZE_NV
#define CL_DEVICE_WARP_SIZE_NV 0x4003
#endif

/* One typedef and one pointer per API function: X(name, return, parameters, required). */
#define CL_API(X)                                                                              \
    X(clGetPlatformIDs, cl_int, (cl_uint, cl_platform_id *, cl_uint *), 1)                     \
    X(clGetPlatformInfo, cl_int, (cl_platform_id, cl_platform_info, size_t, void *, size_t *), 1) \
    X(clGetDeviceIDs, cl_int, (cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *), 1) \
    X(clGetDeviceInfo, cl_int, (cl_device_id, cl_device_info, size_t, void *, size_t *), 1)    \
    X(clCreateContext, cl_context, (const cl_context_properties *, cl_uint, const cl_device_id *, \
        void (CL_CALLBACK *)(const char *, const void *, size_t, void *), void *, cl_int *), 1) \
    X(clReleaseContext, cl_int, (cl_context), 1)                                               \
    X(clCreateCommandQueue, cl_command_queue, (cl_context, cl_device_id, cl_command_queue_properties, cl_int *), 1) \
    X(clReleaseCommandQueue, cl_int, (cl_command_queue), 1)                                    \
    X(clCreateProgramWithSource, cl_program, (cl_context, cl_uint, const char **, const size_t *, cl_int *), 1) \
    X(clBuildProgram, cl_int, (cl_program, cl_uint, const cl_device_id *, const char *,        \
        void (CL_CALLBACK *)(cl_program, void *), void *), 1)                                  \
    X(clGetProgramBuildInfo, cl_int, (cl_program, cl_device_id, cl_program_build_info, size_t, void *, size_t *), 1) \
    X(clGetProgramInfo, cl_int, (cl_program, cl_program_info, size_t, void *, size_t *), 1)    \
    X(clReleaseProgram, cl_int, (cl_program), 1)                                               \
    X(clCreateKernel, cl_kernel, (cl_program, const char *, cl_int *), 1)                      \
    X(clReleaseKernel, cl_int, (cl_kernel), 1)                                                 \
    X(clGetKernelWorkGroupInfo, cl_int, (cl_kernel, cl_device_id, cl_kernel_work_group_info, size_t, void *, size_t *), 1) \
    X(clSetKernelArg, cl_int, (cl_kernel, cl_uint, size_t, const void *), 1)                   \
    X(clEnqueueNDRangeKernel, cl_int, (cl_command_queue, cl_kernel, cl_uint, const size_t *,   \
        const size_t *, const size_t *, cl_uint, const cl_event *, cl_event *), 1)             \
    X(clCreateBuffer, cl_mem, (cl_context, cl_mem_flags, size_t, void *, cl_int *), 1)         \
    X(clReleaseMemObject, cl_int, (cl_mem), 1)                                                 \
    X(clEnqueueWriteBuffer, cl_int, (cl_command_queue, cl_mem, cl_bool, size_t, size_t,        \
        const void *, cl_uint, const cl_event *, cl_event *), 1)                               \
    X(clEnqueueFillBuffer, cl_int, (cl_command_queue, cl_mem, const void *, size_t, size_t, size_t, cl_uint, \
                                    const cl_event *, cl_event *), 0)                                   \
    X(clEnqueueReadBuffer, cl_int, (cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, \
        cl_uint, const cl_event *, cl_event *), 1)                                             \
    X(clFlush, cl_int, (cl_command_queue), 1)                                                  \
    X(clFinish, cl_int, (cl_command_queue), 1)                                                 \
    X(clGetEventInfo, cl_int, (cl_event, cl_event_info, size_t, void *, size_t *), 1)          \
    X(clGetEventProfilingInfo, cl_int, (cl_event, cl_profiling_info, size_t, void *, size_t *), 1) \
    X(clReleaseEvent, cl_int, (cl_event), 1)                                                   \
    X(clEnqueueMarkerWithWaitList, cl_int, (cl_command_queue, cl_uint, const cl_event *, cl_event *), 0) \
    X(clCreateUserEvent, cl_event, (cl_context, cl_int *), 0)                                  \
    X(clSetUserEventStatus, cl_int, (cl_event, cl_int), 0)                                     \
    X(clCreateProgramWithBinary, cl_program, (cl_context, cl_uint, const cl_device_id *, const size_t *,  \
        const unsigned char **, cl_int *, cl_int *), 1)

#define X_TYPEDEF(name, ret, params, req) typedef ret(CL_API_CALL *name##_fn) params;
CL_API(X_TYPEDEF)
#undef X_TYPEDEF

#define MAX_DEVICES 32

/* The loader's state: filled once by cl_init, read-only afterwards. */
static struct {
    void *lib;
#define X_MEMBER(name, ret, params, req) name##_fn name;
    CL_API(X_MEMBER)
#undef X_MEMBER
    int ndev;
    cl_device_id dev[MAX_DEVICES];
    cl_platform_id plat[MAX_DEVICES];
    rt_device_info info[MAX_DEVICES];
} cl;

struct rt_ctx {
    cl_context context;
    cl_command_queue queue;
    cl_device_id dev;
    cl_event gate; /* the user event the timing gate's marker waits on, while held */
};
struct rt_buf { cl_mem mem; };
struct rt_module { cl_program prog; cl_device_id dev; };
struct rt_kernel { cl_kernel k; };
struct rt_event { cl_event ev; };

static const char *cl_errstr(cl_int e)
{
    switch (e) {
    case CL_SUCCESS: return "CL_SUCCESS";
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_COMPILER_NOT_AVAILABLE: return "CL_COMPILER_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_PROFILING_INFO_NOT_AVAILABLE: return "CL_PROFILING_INFO_NOT_AVAILABLE";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_DEVICE: return "CL_INVALID_DEVICE";
    case CL_INVALID_BINARY: return "CL_INVALID_BINARY";
    case CL_INVALID_BUILD_OPTIONS: return "CL_INVALID_BUILD_OPTIONS";
    case CL_INVALID_PROGRAM_EXECUTABLE: return "CL_INVALID_PROGRAM_EXECUTABLE";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_WORK_DIMENSION: return "CL_INVALID_WORK_DIMENSION";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE: return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_EVENT: return "CL_INVALID_EVENT";
    case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
    case CL_INVALID_COMMAND_QUEUE: return "CL_INVALID_COMMAND_QUEUE";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST: return "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL driver registered with the ICD loader)";
    default: return "CL error";
    }
}

#define FAIL(fmt, ...) do { snprintf(err, errlen, fmt, __VA_ARGS__); return RT_ERR; } while (0)

static void dev_str(cl_device_id d, cl_device_info what, char *out, size_t len)
{
    out[0] = 0;
    if (cl.clGetDeviceInfo(d, what, len, out, NULL) != CL_SUCCESS) out[0] = 0;
    out[len - 1] = 0;
    /* some drivers pad names with spaces */
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == ' ') out[--n] = 0;
}

static void fill_info(int i)
{
    cl_device_id d = cl.dev[i];
    rt_device_info *o = &cl.info[i];
    memset(o, 0, sizeof *o);
    dev_str(d, CL_DEVICE_NAME, o->name, sizeof o->name);
    dev_str(d, CL_DEVICE_VENDOR, o->vendor, sizeof o->vendor);
    dev_str(d, CL_DRIVER_VERSION, o->driver, sizeof o->driver);
    dev_str(d, CL_DEVICE_VERSION, o->runtime_version, sizeof o->runtime_version);
    dev_str(d, CL_DEVICE_OPENCL_C_VERSION, o->compiler, sizeof o->compiler);
    cl.clGetPlatformInfo(cl.plat[i], CL_PLATFORM_NAME, sizeof o->platform, o->platform, NULL);
    o->platform[sizeof o->platform - 1] = 0;

    cl_device_type type = 0;
    cl_uint u = 0;
    cl_ulong ul = 0;
    size_t sz = 0;
    cl.clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    o->is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
    if (cl.clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof u, &u, NULL) == CL_SUCCESS) o->compute_units = (int)u;
    if (cl.clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof sz, &sz, NULL) == CL_SUCCESS) o->max_group_size = sz;
    if (cl.clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS) o->shared_bytes = (size_t)ul;
    o->static_shared_bytes = o->shared_bytes;
    if (cl.clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS) o->global_bytes = (size_t)ul;
    if (cl.clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS) o->max_alloc_bytes = (size_t)ul;
    if (cl.clGetDeviceInfo(d, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof u, &u, NULL) == CL_SUCCESS) o->clock_mhz = (int)u;
    /* OpenCL's "global memory cache" need not be the last-level cache (drivers may report
     * a per-SM L1 there): on a GPU the L2 flush takes no less than 64 MiB for it, more than
     * any current GPU's L2 (timing_flush_bytes flushes twice this) */
    if (cl.clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS) o->l2_bytes = (size_t)ul;
    if (o->is_gpu && o->l2_bytes < ((size_t)64 << 20)) o->l2_bytes = (size_t)64 << 20;

    cl_uint major = 0, minor = 0, warp = 0;
    if (cl.clGetDeviceInfo(d, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof major, &major, NULL) == CL_SUCCESS &&
        cl.clGetDeviceInfo(d, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, sizeof minor, &minor, NULL) == CL_SUCCESS) {
        snprintf(o->arch, sizeof o->arch, "sm_%u%u", major, minor);
    } else {
        snprintf(o->arch, sizeof o->arch, "%s", o->is_gpu ? "gpu" : (type & CL_DEVICE_TYPE_CPU) ? "cpu" : "other");
    }
    cl_uint bus = 0, slot = 0, domain = 0;
    if (cl.clGetDeviceInfo(d, CL_DEVICE_PCI_BUS_ID_NV, sizeof bus, &bus, NULL) == CL_SUCCESS &&
        cl.clGetDeviceInfo(d, CL_DEVICE_PCI_SLOT_ID_NV, sizeof slot, &slot, NULL) == CL_SUCCESS) {
        if (cl.clGetDeviceInfo(d, CL_DEVICE_PCI_DOMAIN_ID_NV, sizeof domain, &domain, NULL) != CL_SUCCESS) domain = 0;
        snprintf(o->pci, sizeof o->pci, "%04x:%02x:%02x.%x", domain, bus & 0xffu, (slot >> 3) & 0x1fu, slot & 7u);
    }
    if (cl.clGetDeviceInfo(d, CL_DEVICE_WARP_SIZE_NV, sizeof warp, &warp, NULL) == CL_SUCCESS && warp > 0)
        o->warp_size = (int)warp;
    else
        o->warp_size = 1;
}

static int cl_init(char *err, size_t errlen)
{
    const char *names[] = {"libOpenCL.so.1", "libOpenCL.so"};
    char dlerr[256] = "";
    for (size_t i = 0; i < 2 && !cl.lib; i++) {
        cl.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!cl.lib) snprintf(dlerr, sizeof dlerr, "%s", dlerror());
    }
    if (!cl.lib)
        FAIL("the OpenCL ICD loader is not installed (dlopen libOpenCL.so.1: %s); "
             "apt-get install ocl-icd-libopencl1 pocl-opencl-icd", dlerr);
#define X_LOAD(name, ret, params, req)                                                   \
    cl.name = (name##_fn)dlsym(cl.lib, #name);                                           \
    if (!cl.name && req) FAIL("libOpenCL.so.1 lacks the required symbol %s", #name);
    CL_API(X_LOAD)
#undef X_LOAD

    cl_uint np = 0;
    cl_int e = cl.clGetPlatformIDs(0, NULL, &np);
    if (e != CL_SUCCESS || np == 0)
        FAIL("the ICD loader found no OpenCL platform (%s); install a driver, "
             "e.g. apt-get install pocl-opencl-icd, or set OCL_ICD_VENDORS", e == CL_SUCCESS ? "0 platforms" : cl_errstr(e));
    cl_platform_id plats[16];
    if (np > 16) np = 16;
    cl.clGetPlatformIDs(np, plats, NULL);
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        if (cl.clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0) continue;
        cl_device_id ids[MAX_DEVICES];
        if (nd > MAX_DEVICES) nd = MAX_DEVICES;
        cl.clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL);
        for (cl_uint d = 0; d < nd && cl.ndev < MAX_DEVICES; d++) {
            cl.dev[cl.ndev] = ids[d];
            cl.plat[cl.ndev] = plats[p];
            fill_info(cl.ndev);
            cl.ndev++;
        }
    }
    if (cl.ndev == 0) FAIL("%u OpenCL platform(s) but no devices", np);
    return 0;
}

static int ocl_device_count(void) { return cl.ndev; }

static int ocl_device_info(int index, rt_device_info *out)
{
    if (index < 0 || index >= cl.ndev) return RT_ERR;
    *out = cl.info[index];
    return 0;
}

static int cl_open(int index, rt_ctx **out, char *err, size_t errlen)
{
    if (index < 0 || index >= cl.ndev) FAIL("no OpenCL device %d", index);
    rt_ctx *c = calloc(1, sizeof *c);
    if (!c) FAIL("%s", "out of memory");
    cl_int e;
    c->dev = cl.dev[index];
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)cl.plat[index], 0};
    c->context = cl.clCreateContext(props, 1, &c->dev, NULL, NULL, &e);
    if (e != CL_SUCCESS) { free(c); FAIL("clCreateContext: %s", cl_errstr(e)); }
    c->queue = cl.clCreateCommandQueue(c->context, c->dev, CL_QUEUE_PROFILING_ENABLE, &e);
    if (e != CL_SUCCESS) {
        cl.clReleaseContext(c->context);
        free(c);
        FAIL("clCreateCommandQueue: %s", cl_errstr(e));
    }
    *out = c;
    return 0;
}

static void cl_gate_open(rt_ctx *c);

static void cl_close(rt_ctx *c)
{
    if (!c) return;
    cl_gate_open(c); /* a queue held by the gate would never finish */
    cl.clFinish(c->queue);
    cl.clReleaseCommandQueue(c->queue);
    cl.clReleaseContext(c->context);
    free(c);
}

static char *build_log(cl_program p, cl_device_id d)
{
    size_t n = 0;
    if (cl.clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS) return NULL;
    char *log = malloc(n + 1);
    if (!log) return NULL;
    if (cl.clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS) n = 0;
    log[n] = 0;
    return log;
}

static int cl_compile(rt_ctx *c, const char *source, const char *const *defines, int ndefines,
                      rt_module **out, char **log, char *err, size_t errlen)
{
    size_t optlen = 64;
    for (int i = 0; i < ndefines; i++) optlen += strlen(defines[i]) + 4;
    char *opts = malloc(optlen);
    if (!opts) FAIL("%s", "out of memory");
    size_t o = (size_t)snprintf(opts, optlen, "-cl-std=CL1.2");
    for (int i = 0; i < ndefines; i++) o += (size_t)snprintf(opts + o, optlen - o, " -D%s", defines[i]);

    cl_int e;
    size_t srclen = strlen(source);
    cl_program p = cl.clCreateProgramWithSource(c->context, 1, &source, &srclen, &e);
    if (e != CL_SUCCESS) { free(opts); FAIL("clCreateProgramWithSource: %s", cl_errstr(e)); }
    e = cl.clBuildProgram(p, 1, &c->dev, opts, NULL, NULL);
    free(opts);
    if (log) *log = build_log(p, c->dev);
    if (e != CL_SUCCESS) {
        cl.clReleaseProgram(p);
        snprintf(err, errlen, "clBuildProgram: %s", cl_errstr(e));
        return e == CL_BUILD_PROGRAM_FAILURE || e == CL_INVALID_BUILD_OPTIONS ? RT_ECOMPILE : RT_ERR;
    }
    rt_module *m = calloc(1, sizeof *m);
    if (!m) { cl.clReleaseProgram(p); FAIL("%s", "out of memory"); }
    m->prog = p;
    m->dev = c->dev;
    *out = m;
    return 0;
}

static int cl_load_binary(rt_ctx *c, const void *bin, size_t len, const char *log, rt_module **out,
                          char *err, size_t errlen)
{
    (void)log;
    cl_int e, st = CL_SUCCESS;
    const unsigned char *ptr = bin;
    cl_program p = cl.clCreateProgramWithBinary(c->context, 1, &c->dev, &len, &ptr, &st, &e);
    if (e != CL_SUCCESS || st != CL_SUCCESS) FAIL("clCreateProgramWithBinary: %s", cl_errstr(e != CL_SUCCESS ? e : st));
    e = cl.clBuildProgram(p, 1, &c->dev, "", NULL, NULL);
    if (e != CL_SUCCESS) {
        cl.clReleaseProgram(p);
        FAIL("clBuildProgram (binary): %s", cl_errstr(e));
    }
    rt_module *m = calloc(1, sizeof *m);
    if (!m) { cl.clReleaseProgram(p); FAIL("%s", "out of memory"); }
    m->prog = p;
    m->dev = c->dev;
    *out = m;
    return 0;
}

static int cl_binary(rt_module *m, void **data, size_t *len)
{
    size_t n = 0;
    if (cl.clGetProgramInfo(m->prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) != CL_SUCCESS || n == 0)
        return RT_ERR;
    unsigned char *buf = malloc(n);
    if (!buf) return RT_ERR;
    unsigned char *ptrs[1] = {buf};
    if (cl.clGetProgramInfo(m->prog, CL_PROGRAM_BINARIES, sizeof ptrs, ptrs, NULL) != CL_SUCCESS) {
        free(buf);
        return RT_ERR;
    }
    *data = buf;
    *len = n;
    return 0;
}

static int cl_get_kernel(rt_module *m, const char *name, rt_kernel **out, rt_kernel_attrs *attrs,
                         char *err, size_t errlen)
{
    cl_int e;
    cl_kernel k = cl.clCreateKernel(m->prog, name, &e);
    if (e != CL_SUCCESS) FAIL("clCreateKernel(%s): %s", name, cl_errstr(e));
    rt_kernel *rk = calloc(1, sizeof *rk);
    if (!rk) { cl.clReleaseKernel(k); FAIL("%s", "out of memory"); }
    rk->k = k;
    if (attrs) {
        size_t wg = 0;
        cl_ulong lm = 0, pm = 0;
        attrs->registers = -1;
        attrs->spill_bytes = -1;
        attrs->max_threads = cl.clGetKernelWorkGroupInfo(k, m->dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) == CL_SUCCESS ? (long)wg : -1;
        attrs->shared_bytes = cl.clGetKernelWorkGroupInfo(k, m->dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL) == CL_SUCCESS ? (long)lm : -1;
        attrs->private_bytes = cl.clGetKernelWorkGroupInfo(k, m->dev, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof pm, &pm, NULL) == CL_SUCCESS ? (long)pm : -1;
        size_t n = 0;
        attrs->binary_bytes = cl.clGetProgramInfo(m->prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) == CL_SUCCESS ? (long)n : -1;
    }
    *out = rk;
    return 0;
}

static void cl_kernel_free(rt_kernel *k)
{
    if (!k) return;
    cl.clReleaseKernel(k->k);
    free(k);
}

static void cl_module_free(rt_module *m)
{
    if (!m) return;
    cl.clReleaseProgram(m->prog);
    free(m);
}

static int cl_alloc(rt_ctx *c, size_t bytes, rt_buf **out, char *err, size_t errlen)
{
    cl_int e;
    cl_mem mem = cl.clCreateBuffer(c->context, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &e);
    if (e != CL_SUCCESS) FAIL("clCreateBuffer(%zu bytes): %s", bytes, cl_errstr(e));
    /* drivers allocate lazily, at the buffer's first use: one word written now makes a
     * device out of memory show here, as this allocation's failure (a resource limit), not
     * at a later upload, which the harness could only take for a broken runtime */
    const uint32_t zero = 0;
    e = bytes >= 4 ? cl.clEnqueueWriteBuffer(c->queue, mem, CL_TRUE, (bytes - 4) / 4 * 4, sizeof zero, &zero, 0, NULL, NULL)
                   : CL_SUCCESS;
    if (e != CL_SUCCESS) {
        cl.clReleaseMemObject(mem);
        FAIL("clCreateBuffer(%zu bytes), first write: %s", bytes, cl_errstr(e));
    }
    rt_buf *b = calloc(1, sizeof *b);
    if (!b) { cl.clReleaseMemObject(mem); FAIL("%s", "out of memory"); }
    b->mem = mem;
    *out = b;
    return 0;
}

static void cl_buf_free(rt_buf *b)
{
    if (!b) return;
    cl.clReleaseMemObject(b->mem);
    free(b);
}

static int cl_upload(rt_ctx *c, rt_buf *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    cl_int e = cl.clEnqueueWriteBuffer(c->queue, dst->mem, CL_TRUE, 0, bytes, src, 0, NULL, NULL);
    if (e != CL_SUCCESS) FAIL("clEnqueueWriteBuffer(%zu bytes): %s", bytes, cl_errstr(e));
    return 0;
}

static int cl_fill(rt_ctx *c, rt_buf *buf, size_t bytes, uint32_t value, char *err, size_t errlen)
{
    if (!cl.clEnqueueFillBuffer) FAIL("%s", "the OpenCL loader lacks clEnqueueFillBuffer (OpenCL 1.2)");
    cl_int e = cl.clEnqueueFillBuffer(c->queue, buf->mem, &value, sizeof value, 0, bytes / 4 * 4, 0, NULL, NULL);
    if (e != CL_SUCCESS) FAIL("clEnqueueFillBuffer(%zu bytes): %s", bytes, cl_errstr(e));
    return 0;
}

static int cl_download(rt_ctx *c, void *dst, rt_buf *src, size_t bytes, char *err, size_t errlen)
{
    cl_int e = cl.clEnqueueReadBuffer(c->queue, src->mem, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
    if (e != CL_SUCCESS) FAIL("clEnqueueReadBuffer(%zu bytes): %s", bytes, cl_errstr(e));
    return 0;
}

static int cl_launch(rt_ctx *c, rt_kernel *k, const size_t grid[3], const size_t block[3],
                     size_t dyn_shared, const rt_arg *args, int nargs, rt_event **ev,
                     char *err, size_t errlen)
{
    if (dyn_shared) FAIL("%s", "dynamic shared memory is not supported by the OpenCL runtime");
    for (int i = 0; i < nargs; i++) {
        cl_int e;
        switch (args[i].kind) {
        case RT_ARG_BUF: /* (NULL: a null pointer) */
            e = cl.clSetKernelArg(k->k, (cl_uint)i, sizeof(cl_mem), args[i].v.buf ? &args[i].v.buf->mem : NULL);
            break;
        case RT_ARG_I32: e = cl.clSetKernelArg(k->k, (cl_uint)i, sizeof(cl_int), &args[i].v.i32); break;
        case RT_ARG_I64: e = cl.clSetKernelArg(k->k, (cl_uint)i, sizeof(cl_long), &args[i].v.i64); break;
        case RT_ARG_F32: e = cl.clSetKernelArg(k->k, (cl_uint)i, sizeof(cl_float), &args[i].v.f32); break;
        default: FAIL("argument %d: unknown kind", i);
        }
        if (e != CL_SUCCESS) FAIL("clSetKernelArg(%d): %s", i, cl_errstr(e));
    }
    size_t global[3], local[3];
    for (int i = 0; i < 3; i++) {
        local[i] = block[i];
        global[i] = grid[i] * block[i];
    }
    cl_event e_out = NULL;
    cl_int e = cl.clEnqueueNDRangeKernel(c->queue, k->k, 3, NULL, global, local, 0, NULL, ev ? &e_out : NULL);
    if (e != CL_SUCCESS) {
        snprintf(err, errlen, "clEnqueueNDRangeKernel: %s", cl_errstr(e));
        return e == CL_OUT_OF_RESOURCES || e == CL_INVALID_WORK_GROUP_SIZE ? RT_ERESOURCE : RT_ERR;
    }
    if (ev) {
        rt_event *re = calloc(1, sizeof *re);
        if (!re) { cl.clReleaseEvent(e_out); FAIL("%s", "out of memory"); }
        re->ev = e_out;
        *ev = re;
    }
    return 0;
}

static int cl_finish(rt_ctx *c, double timeout_s, char *err, size_t errlen)
{
    cl_int e;
    if (cl.clEnqueueMarkerWithWaitList && timeout_s > 0) {
        cl_event mark;
        e = cl.clEnqueueMarkerWithWaitList(c->queue, 0, NULL, &mark);
        if (e != CL_SUCCESS) FAIL("clEnqueueMarkerWithWaitList: %s", cl_errstr(e));
        cl.clFlush(c->queue);
        struct timespec t0, now;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
            cl_int st = CL_QUEUED;
            e = cl.clGetEventInfo(mark, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
            if (e != CL_SUCCESS) { cl.clReleaseEvent(mark); FAIL("clGetEventInfo: %s", cl_errstr(e)); }
            if (st == CL_COMPLETE) break;
            if (st < 0) { cl.clReleaseEvent(mark); FAIL("queued work failed: %s", cl_errstr(st)); }
            clock_gettime(CLOCK_MONOTONIC, &now);
            double dt = (double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec);
            if (dt > timeout_s) {
                cl.clReleaseEvent(mark);
                snprintf(err, errlen, "device work did not finish within %.1f s", timeout_s);
                return RT_ETIMEOUT;
            }
            struct timespec nap = {0, dt < 0.01 ? 50000 : 1000000};
            nanosleep(&nap, NULL);
        }
        cl.clReleaseEvent(mark);
    }
    e = cl.clFinish(c->queue);
    if (e != CL_SUCCESS) FAIL("clFinish: %s", cl_errstr(e));
    return 0;
}

/* The timing gate: a marker that waits on a user event the host completes, which holds the
 * in-order queue behind it. The host always opens it, so it never gives up (late is 0). */
static int cl_gate_hold(rt_ctx *c, double timeout_s, char *err, size_t errlen)
{
    (void)timeout_s;
    if (!cl.clCreateUserEvent || !cl.clSetUserEventStatus || !cl.clEnqueueMarkerWithWaitList)
        FAIL("%s", "this OpenCL (before 1.2) has no user events and markers with wait lists");
    if (c->gate) FAIL("%s", "the timing gate is already held");
    cl_int e = CL_SUCCESS;
    cl_event ue = cl.clCreateUserEvent(c->context, &e);
    if (e != CL_SUCCESS) FAIL("clCreateUserEvent: %s", cl_errstr(e));
    e = cl.clEnqueueMarkerWithWaitList(c->queue, 1, &ue, NULL);
    if (e != CL_SUCCESS) {
        cl.clSetUserEventStatus(ue, CL_COMPLETE);
        cl.clReleaseEvent(ue);
        FAIL("clEnqueueMarkerWithWaitList (the timing gate): %s", cl_errstr(e));
    }
    c->gate = ue;
    return 0;
}

static void cl_gate_open(rt_ctx *c)
{
    if (!c->gate) return;
    cl.clSetUserEventStatus(c->gate, CL_COMPLETE);
    cl.clReleaseEvent(c->gate);
    c->gate = NULL;
    cl.clFlush(c->queue);
}

static long cl_gate_late(rt_ctx *c)
{
    (void)c;
    return 0;
}

static int cl_elapsed_ms(rt_ctx *c, rt_event *first, rt_event *last, double *ms)
{
    (void)c;
    cl_ulong t0 = 0, t1 = 0;
    if (cl.clGetEventProfilingInfo(first->ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) != CL_SUCCESS ||
        cl.clGetEventProfilingInfo(last->ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) != CL_SUCCESS)
        return RT_ERR;
    *ms = (double)(t1 - t0) * 1e-6;
    return 0;
}

static void cl_event_free(rt_event *ev)
{
    if (!ev) return;
    cl.clReleaseEvent(ev->ev);
    free(ev);
}

const rt_runtime rt_opencl = {
    .name = "opencl",
    .init = cl_init,
    .device_count = ocl_device_count,
    .device_info = ocl_device_info,
    .open = cl_open,
    .close = cl_close,
    .compile = cl_compile,
    .get_kernel = cl_get_kernel,
    .kernel_free = cl_kernel_free,
    .binary = cl_binary,
    .module_free = cl_module_free,
    .load_binary = cl_load_binary,
    .alloc = cl_alloc,
    .buf_free = cl_buf_free,
    .upload = cl_upload,
    .fill = cl_fill,
    .download = cl_download,
    .launch = cl_launch,
    .finish = cl_finish,
    .elapsed_ms = cl_elapsed_ms,
    .event_free = cl_event_free,
    .gate_hold = cl_gate_hold,
    .gate_open = cl_gate_open,
    .gate_late = cl_gate_late,
};
