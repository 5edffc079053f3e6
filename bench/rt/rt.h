/* rt.h: the one interface every GPU runtime (OpenCL, CUDA, HIP) implements, and the
 * registry that finds runtimes and devices. Nothing outside bench/rt/ asks which runtime it is. */
#ifndef FABENCH_RT_H
#define FABENCH_RT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct rt_ctx rt_ctx;       /* an opened device: context + queue/stream */
typedef struct rt_buf rt_buf;       /* device memory */
typedef struct rt_module rt_module; /* a compiled program */
typedef struct rt_kernel rt_kernel; /* one entry point of a module */
typedef struct rt_event rt_event;   /* marks one launch, for timing */
typedef struct rt_graph rt_graph;   /* captured launches, replayed by one call */

typedef struct {
    char name[256];          /* device name as the runtime reports it */
    char vendor[128];
    char arch[64];           /* sm_90, gfx90a; "cpu"/"gpu" where the runtime has no arch */
    char platform[256];      /* OpenCL platform; the runtime's name otherwise */
    char driver[128];        /* driver version */
    char runtime_version[128];
    char compiler[128];      /* JIT compiler and version */
    int is_gpu;
    int compute_units;
    int warp_size;           /* SIMD width the kernel may assume for warps (1 if none) */
    size_t max_group_size;   /* threads per work-group / block */
    size_t shared_bytes;     /* shared (local) memory per work-group / block, dynamic included */
    size_t static_shared_bytes; /* statically declared shared memory per block (CUDA: 48 KiB) */
    size_t global_bytes;
    size_t max_alloc_bytes;  /* largest single buffer */
    int clock_mhz;           /* 0 when unknown */
    size_t l2_bytes;         /* last-level cache the GPU keeps global memory in (CUDA, HIP: L2;
                              * OpenCL: CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, at least 64 MiB on a
                              * GPU, whose driver may report an L1 there); 0 when unknown */
    char pci[32];            /* PCI address ("0000:3b:00.0"); empty when unknown (the CPU, a runtime
                              * that does not say): telemetry finds the GPU by it */
    unsigned features;       /* RT_FEAT_* bits: what the kernel's tile primitives may use */
    size_t max_grid[3];      /* work-groups per grid dimension; 0: no limit that matters */
} rt_device_info;

#define RT_FEAT_MMA_SYNC 1u  /* NVIDIA mma.sync/ldmatrix/cp.async (sm_80+) through this runtime */
#define RT_FEAT_MFMA 2u      /* AMD MFMA 16x16x16 f16 and bf16 (CDNA2 gfx90a, CDNA3 gfx94x) through this runtime */
#define RT_FEAT_WGMMA 4u     /* NVIDIA Hopper wgmma (compute capability 9.0, compiled for sm_90a) through this runtime */
#define RT_FEAT_TMA 8u       /* NVIDIA bulk tensor copies (sm_90+) from tensor maps the driver encodes (tensor_map) */

/* A tiled tensor map for the bulk tensor copy engine: `rank` dimensions, innermost first,
 * the byte strides of dimensions 1.., and the box one copy moves; 16-bit elements (bf16
 * when bf16, else fp16), the 128-byte swizzle, out-of-bounds elements read as zeros. */
typedef struct {
    int rank;
    uint64_t dims[5];
    uint64_t strides[4];
    uint32_t box[5];
    int bf16;
} rt_tensor_map_desc;

/* What the compiler and runtime report for one kernel; -1 where a runtime cannot tell. */
typedef struct {
    long registers;
    long spill_bytes;
    long shared_bytes;       /* static shared/local memory */
    long private_bytes;      /* private/local (stack) memory per thread */
    long max_threads;        /* largest work-group this kernel can be launched with */
    long binary_bytes;       /* size of the module's binary */
} rt_kernel_attrs;

typedef enum { RT_ARG_BUF, RT_ARG_I32, RT_ARG_I64, RT_ARG_F32 } rt_arg_kind;
typedef struct {
    rt_arg_kind kind;
    union { rt_buf *buf; int32_t i32; int64_t i64; float f32; } v; /* buf NULL: a null pointer */
} rt_arg;

/* Return codes of compile and launch besides 0. */
#define RT_ERR (-1)        /* generic failure; err says why */
#define RT_ECOMPILE (-2)   /* compiler rejected the source; log holds the compiler output */
#define RT_ERESOURCE (-3)  /* valid code that exceeds the device (shared memory, threads) */
#define RT_ETIMEOUT (-4)   /* device work did not finish in time */
/* How an error message of a runtime ends when a kernel fault left the context unusable
 * (CUDA's and HIP's sticky errors): nothing this process enqueues will run again. */
#define RT_UNUSABLE "only a new process can use the device again"

typedef struct rt_runtime {
    const char *name;      /* "opencl", "cuda", "hip": also picks kernels/prelude_<name>.h */
    /* Loads the libraries (dlopen) and enumerates devices. 0, or -1 with the reason the
     * runtime is absent in err (library missing, no platform, driver failed to start). */
    int (*init)(char *err, size_t errlen);
    int (*device_count)(void);
    int (*device_info)(int index, rt_device_info *out);
    int (*open)(int index, rt_ctx **out, char *err, size_t errlen);
    void (*close)(rt_ctx *ctx);

    /* Compiles source with -D defines ("NAME=VALUE"). On RT_ECOMPILE *log holds the
     * compiler output (malloc'd; caller frees; may be set on success too). */
    int (*compile)(rt_ctx *ctx, const char *source, const char *const *defines, int ndefines,
                   rt_module **out, char **log, char *err, size_t errlen);
    int (*get_kernel)(rt_module *mod, const char *name, rt_kernel **out, rt_kernel_attrs *attrs,
                      char *err, size_t errlen);
    void (*kernel_free)(rt_kernel *k);
    /* The module's binary (PTX, cubin, code object...) as the runtime holds it; malloc'd. */
    int (*binary)(rt_module *mod, void **data, size_t *len);
    void (*module_free)(rt_module *mod);
    /* Loads a binary that `binary` returned earlier for the same device (the disk cache),
     * with the compile log that came with it (may be NULL). 0 or RT_ERR. */
    int (*load_binary)(rt_ctx *ctx, const void *bin, size_t len, const char *log, rt_module **out,
                       char *err, size_t errlen);

    int (*alloc)(rt_ctx *ctx, size_t bytes, rt_buf **out, char *err, size_t errlen);
    void (*buf_free)(rt_buf *buf);
    int (*upload)(rt_ctx *ctx, rt_buf *dst, const void *src, size_t bytes, char *err, size_t errlen);
    int (*download)(rt_ctx *ctx, void *dst, rt_buf *src, size_t bytes, char *err, size_t errlen);

    /* Enqueues a launch of grid[i] work-groups of block[i] threads. With ev != NULL,
     * *ev marks this launch for elapsed(). Asynchronous. */
    int (*launch)(rt_ctx *ctx, rt_kernel *k, const size_t grid[3], const size_t block[3],
                  size_t dyn_shared, const rt_arg *args, int nargs, rt_event **ev,
                  char *err, size_t errlen);
    /* Optional (NULL when the runtime cannot): enqueues filling the first bytes (a multiple
     * of 4) of buf with the 32-bit value, asynchronously, in order with the launches: the
     * L2 flush between timed repetitions. 0 or RT_ERR. */
    int (*fill)(rt_ctx *ctx, rt_buf *buf, size_t bytes, uint32_t value, char *err, size_t errlen);
    /* Waits for all queued work, at most timeout_s seconds: 0, RT_ETIMEOUT or RT_ERR. */
    int (*finish)(rt_ctx *ctx, double timeout_s, char *err, size_t errlen);
    /* Device time from the start of the launch `first` to the end of `last`, in ms. */
    int (*elapsed_ms)(rt_ctx *ctx, rt_event *first, rt_event *last, double *ms);
    void (*event_free)(rt_event *ev);

    /* Optional (NULL when the runtime cannot): compiles for a named target with no device
     * present ("sm_90", "gfx90a"), needing only the compiler library. Fills *binary
     * (malloc'd), *attrs from the compiler's own report for kernel `kernel` (registers,
     * spills, shared and stack bytes; -1 where it says nothing) and *log. 0, RT_ECOMPILE
     * (log says why) or RT_ERR (err says why, e.g. the compiler library is missing). */
    int (*compile_offline)(const char *arch, const char *source, const char *const *defines, int ndefines,
                           const char *kernel, void **binary, size_t *len, rt_kernel_attrs *attrs,
                           char **log, char *err, size_t errlen);
    /* Optional (NULL when the runtime has none; RT_FEAT_TMA says a device can use it):
     * encodes the tensor map of desc over buffer base into out (128 bytes, 64-aligned),
     * ready to upload for a kernel that copies with it. 0, or RT_ERR with err. */
    int (*tensor_map)(rt_buf *base, const rt_tensor_map_desc *desc, void *out, char *err, size_t errlen);
    /* Optional: names the compiler compile_offline uses, with its version ("NVRTC 12.4"),
     * into out; 0, or RT_ERR when it cannot be loaded. */
    int (*offline_compiler)(char *out, size_t len);

    /* Optional (NULL where the runtime has none): the timing gate (bench/core/timing.c).
     * gate_hold enqueues a command that holds the queue until gate_open, so that the batch
     * enqueued between the two runs back to back on the device, whatever the host spent
     * enqueuing it. A hold not opened within timeout_s gives up (the batch then ran with the
     * host's gaps in it) and counts itself in gate_late, which is read after finish. Nothing
     * between hold and open may wait on the device. gate_hold: 0, or RT_ERR with err (the
     * gate cannot be used on this device; time without it). */
    int (*gate_hold)(rt_ctx *ctx, double timeout_s, char *err, size_t errlen);
    void (*gate_open)(rt_ctx *ctx);
    long (*gate_late)(rt_ctx *ctx);

    /* Optional, for a vendor library that enqueues its own work on this context's queue
     * (cuDNN) and is timed by bench/core/timing.c: native_queue is the runtime's own handle of
     * the queue (a CUstream); mark enqueues an event at this point of the queue, usable as
     * either end of elapsed_ms. 0, or RT_ERR with err. */
    void *(*native_queue)(rt_ctx *ctx);
    int (*mark)(rt_ctx *ctx, rt_event **ev, char *err, size_t errlen);

    /* Optional (NULL where the runtime has none): launch graphs, the timer's first choice
     * (bench/core/timing.c). Between capture_begin and capture_end the context's queue records
     * what is enqueued on it (launches without events; a vendor's own work) instead of running
     * it; capture_end makes a graph of it that graph_launch enqueues as one call, so the
     * host's cost per launch never reaches the device. capture_end also ends a capture that
     * failed (then *out is NULL and err says why). 0, or RT_ERR with err. */
    int (*capture_begin)(rt_ctx *ctx, char *err, size_t errlen);
    int (*capture_end)(rt_ctx *ctx, rt_graph **out, char *err, size_t errlen);
    int (*graph_launch)(rt_ctx *ctx, rt_graph *g, char *err, size_t errlen);
    void (*graph_free)(rt_graph *g);
} rt_runtime;

/* ---- registry ---- */

/* Every runtime compiled into this binary, initialised on first use. */
int rt_count(void);
const rt_runtime *rt_get(int i);
/* The runtime called name ("cuda"), present or not; NULL when not compiled in. */
const rt_runtime *rt_find(const char *name);
/* 0 when runtime i is present; else -1 and *why says why it is absent. */
int rt_status(int i, const char **why);

/* A device picked by selector: "RUNTIME:INDEX" (opencl:0) or a case-insensitive part of
 * the device name ("h200", "pthread"). */
typedef struct {
    const rt_runtime *rt;
    int index;
    rt_device_info info;
} rt_device;

/* 0 and out filled; -1 with err listing the available devices. */
int rt_select(const char *sel, rt_device *out, char *err, size_t errlen);
/* Writes the table printed by `fabench devices` (present devices and absent runtimes). */
void rt_print_devices(FILE *f);

#endif
