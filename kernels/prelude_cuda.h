/* prelude_cuda.h: the kernel dialect for CUDA C++ through NVRTC (no headers needed), and
 * the NVIDIA tile primitives (mma.sync, ldmatrix, cp.async, warp shuffles) as inline PTX. */
#define FB_RUNTIME_CUDA 1
#define KERNEL extern "C" __global__
#define GLOBAL
#define SHARED __shared__ /* on declarations */
#define SHARED_PTR          /* on pointer parameters: generic addressing */
#define UNROLL _Pragma("unroll")
#define RESTRICT __restrict__
#define INLINE static __device__ __forceinline__
#define BARRIER() __syncthreads()
#define THREAD_ID() ((int)threadIdx.x)
#define FB_GID_0 blockIdx.x
#define FB_GID_1 blockIdx.y
#define FB_GID_2 blockIdx.z
#define GROUP_ID(d) ((int)FB_GID_##d)
#define EXP2(x) fb_ex2(x)
#define LOG2(x) log2f(x)
#define FMAX(a, b) fmaxf((a), (b))
#define NEG_INF (__int_as_float(0xff800000))
typedef long long idx_t;

/* 2^x on the special-function unit (2 ulp; exact for -inf -> 0) */
static __device__ __forceinline__ float fb_ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
typedef unsigned short u16;
typedef unsigned int u32;

INLINE float fb_half_to_float(const u16 *p, idx_t i)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p[i]));
    return f;
}
INLINE void fb_float_to_half(u16 *p, idx_t i, float v)
{
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    p[i] = h;
}
INLINE float fb_bits_to_float(u32 b) { return __uint_as_float(b); }
INLINE u32 fb_float_to_bits(float f) { return __float_as_uint(f); }

/* ---- warp-level primitives ---- */
#define FB_HAS_WARP_PRIMITIVES 1
INLINE float fb_shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
INLINE int fb_any(int pred) { return __any_sync(0xffffffffu, pred); }
INLINE int fb_lane(void) { return (int)(threadIdx.x & 31); }
INLINE int fb_warp(void) { return (int)(threadIdx.x >> 5); }

/* Two floats -> packed 16-bit pair (lo in the low half), rounded to nearest even. */
INLINE u32 fb_pack2(float lo, float hi)
{
    u32 r;
#if DTYPE == 2
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
    return r;
}

/* D = A * B + D on tensor cores, m16n8k16, 16-bit inputs, fp32 accumulators. */
INLINE void fb_mma16816(float *d, const u32 *a, const u32 *b)
{
#if DTYPE == 2
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

INLINE u32 fb_smem_addr(const void *p) { return (u32)__cvta_generic_to_shared(p); }

/* Shared memory is addressed with 32-bit shared-window byte addresses (fb_smem_addr of a
 * generic pointer), so per-lane offsets are computed once and constant offsets fold into
 * the instructions' immediates. */

/* Four 8x8 16-bit matrices from shared memory, transposed (B operands from row-major V). */
INLINE void fb_ldmatrix_x4_trans(u32 *r, u32 addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* Four 8x8 16-bit matrices from shared memory (A operands, or B operands from row-major K). */
INLINE void fb_ldmatrix_x4(u32 *r, u32 addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* Asynchronous 16-byte global->shared copy; src_bytes < 16 zero-fills the rest. */
INLINE void fb_cp_async16(u32 dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes));
}
/* The same, all 16 bytes (no source-size operand). */
INLINE void fb_cp_async16_full(u32 dst, const void *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src));
}
INLINE void fb_cp_async_commit(void) { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void fb_cp_async_wait(void) { asm volatile("cp.async.wait_group %0;" ::"n"(N)); }

/* Dynamic shared memory: one buffer that the kernel carves up; its size is checked. */
#define FB_DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
INLINE u32 fb_dynamic_smem_size(void)
{
    u32 r;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
    return r;
}
#define FB_TRAP() __trap()
