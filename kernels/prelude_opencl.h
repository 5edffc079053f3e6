/* prelude_opencl.h: the kernel dialect for OpenCL C 1.2 (any OpenCL device: PoCL on a
 * CPU, NVIDIA's and AMD's OpenCL). The kernel (the .k files) is written against these names. */
#define FB_RUNTIME_OPENCL 1
#define KERNEL __kernel
#define GLOBAL __global
#define SHARED __local
#define SHARED_PTR __local
#define UNROLL
#define RESTRICT restrict
#define INLINE inline
#define BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define BARRIER_GLOBAL() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE) /* also orders the work-items' global stores */
#define THREAD_ID() ((int)get_local_id(0))
#define GROUP_ID(d) ((int)get_group_id(d))
#define NUM_GROUPS(d) ((int)get_num_groups(d))
#define EXP2(x) exp2(x)
#define LOG2(x) log2(x)
#define FMAX(a, b) fmax((a), (b))
#define NEG_INF (-INFINITY)
/* Work-groups meeting through global memory (SPLIT_FUSE): a global-memory fence, an
 * atomic add on a global int (returns the old value; core since OpenCL 1.1), and a
 * volatile load, for data other work-groups wrote during this launch. */
#define FB_FENCE_GLOBAL() mem_fence(CLK_GLOBAL_MEM_FENCE)
#define FB_FENCE_CUMULATIVE 0 /* OpenCL 1.2's fence orders only this work-item's accesses */
#define FB_ATOMIC_ADD(p, v) atomic_add((volatile GLOBAL int *)(p), (v))
#define FB_LD_COHERENT(p, i) (((volatile GLOBAL const float *)(p))[i])
typedef long idx_t;
typedef ushort u16;
typedef uint u32;

/* 16-bit storage: fp16 through vload_half/vstore_half (core OpenCL, no cl_khr_fp16
 * needed); bf16 kept as 16-bit words and widened by shifting. */
INLINE float fb_half_to_float(GLOBAL const u16 *p, idx_t i) { return vload_half(i, (GLOBAL const half *)p); }
INLINE void fb_float_to_half(GLOBAL u16 *p, idx_t i, float v) { vstore_half_rte(v, i, (GLOBAL half *)p); }
INLINE float fb_bits_to_float(u32 b) { return as_float(b); }
INLINE u32 fb_float_to_bits(float f) { return as_uint(f); }
