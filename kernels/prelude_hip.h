/* prelude_hip.h: the kernel dialect for HIP C++ through HIPRTC (AMD GPUs; no headers
 * needed), and the CDNA tile primitives: 64-lane wavefronts, MFMA 16x16x16 on gfx90a/gfx94x. */
#define FB_RUNTIME_HIP 1
#define KERNEL extern "C" __global__ __launch_bounds__(NT) /* NT: the kernel's work-group size, defined before use */
#define GLOBAL
#define SHARED __shared__ /* on declarations */
#define SHARED_PTR          /* on pointer parameters: generic (flat) addressing */
#define UNROLL _Pragma("unroll")
#define RESTRICT __restrict__
#define INLINE static __device__ __forceinline__
#define BARRIER() __syncthreads()
#define BARRIER_GLOBAL() __syncthreads() /* (HIP barriers order global memory too) */
#define THREAD_ID() ((int)threadIdx.x)
#define FB_GID_0 blockIdx.x
#define FB_GID_1 blockIdx.y
#define FB_GID_2 blockIdx.z
#define GROUP_ID(d) ((int)FB_GID_##d)
#define FB_NGR_0 gridDim.x
#define FB_NGR_1 gridDim.y
#define NUM_GROUPS(d) ((int)FB_NGR_##d)
/* __builtin_exp2f is the hardware v_exp_f32 (exact for -inf -> 0); newer compilers add
 * a denormal range fix-up around it */
#define EXP2(x) __builtin_exp2f(x)
#define LOG2(x) __builtin_log2f(x)
#define FMAX(a, b) __builtin_fmaxf((a), (b))
#define NEG_INF (-__builtin_inff())
/* Work-groups meeting through global memory (SPLIT_FUSE): a device-wide fence, an atomic
 * add on a global int (returns the old value), and a load that does not keep a stale
 * cached copy, for data other work-groups wrote during this launch. */
#define FB_FENCE_GLOBAL() __threadfence()
#define FB_FENCE_CUMULATIVE 1 /* one thread's fence after a barrier orders the work-group's stores */
#define FB_ATOMIC_INC_WRAP(p, lim) ((int)atomicInc((unsigned int *)(p), (unsigned int)(lim))) /* old; lim -> 0 */
#define FB_ATOMIC_ADD(p, v) atomicAdd((p), (v))
#define FB_LD_COHERENT(p, i) (((volatile const float *)(p))[i])
typedef long long idx_t;
typedef unsigned short u16;
typedef unsigned int u32;

INLINE float fb_half_to_float(const u16 *p, idx_t i) { return (float)__builtin_bit_cast(_Float16, p[i]); }
INLINE void fb_float_to_half(u16 *p, idx_t i, float v) { p[i] = __builtin_bit_cast(u16, (_Float16)v); }
INLINE float fb_bits_to_float(u32 b) { return __builtin_bit_cast(float, b); }
INLINE u32 fb_float_to_bits(float f) { return __builtin_bit_cast(u32, f); }

/* Dynamic shared memory (LDS): one buffer the kernel carves up; its size is the dispatch
 * packet's group segment (static + dynamic bytes), read through the dispatch pointer. */
#define FB_DYNAMIC_SHARED(name) extern __shared__ __attribute__((aligned(16))) unsigned char name[]
INLINE u32 fb_dynamic_smem_size(void)
{
    return ((const u32 *)__builtin_amdgcn_dispatch_ptr())[7]; /* hsa_kernel_dispatch_packet_t.group_segment_size */
}
#define FB_TRAP() __builtin_trap()

/* ---- wavefront primitives (64 lanes on CDNA; blocks are whole wavefronts for MMA=mfma) ---- */
#define FB_WAVE 64
INLINE int fb_wlane(void) { return (int)(threadIdx.x & (FB_WAVE - 1)); }
INLINE int fb_wave(void) { return (int)(threadIdx.x / FB_WAVE); }
INLINE float fb_wshfl_xor(float v, int mask) { return __shfl_xor(v, mask, FB_WAVE); }

/* ---- MFMA (CDNA2 gfx90a, CDNA3 gfx94x) ---- */
#if defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
#define FB_HAS_MFMA 1
#endif
typedef float fb_f32x4 __attribute__((ext_vector_type(4)));
typedef u32 fb_u32x2 __attribute__((ext_vector_type(2)));
typedef u32 fb_u32x4 __attribute__((ext_vector_type(4)));
typedef _Float16 fb_f16x4 __attribute__((ext_vector_type(4)));
typedef short fb_i16x4 __attribute__((ext_vector_type(4)));

/* Four 16-bit values (two packed words, element 0 in the low half of word 0) from floats,
 * rounded to nearest even: the A/B operand of one MFMA lane. */
INLINE u32 fb_pack2(float lo, float hi)
{
#if DTYPE == 2
    u32 a = fb_float_to_bits(lo), b = fb_float_to_bits(hi);
    a += 0x7fffu + ((a >> 16) & 1u);
    b += 0x7fffu + ((b >> 16) & 1u);
    return (a >> 16) | (b & 0xffff0000u);
#else
    return (u32)__builtin_bit_cast(u16, (_Float16)lo) | ((u32)__builtin_bit_cast(u16, (_Float16)hi) << 16);
#endif
}

#ifdef FB_HAS_MFMA
/* D = A B + C for one 16x16x16 block on the wavefront's matrix cores, fp32 accumulators.
 * Lane l holds A[l % 16][4 (l / 16) + i] and B[4 (l / 16) + i][l % 16] (i = 0..3, as four
 * 16-bit values in a, b) and D[4 (l / 16) + i][l % 16] in element i of the result. */
INLINE fb_f32x4 fb_mfma16x16x16(fb_u32x2 a, fb_u32x2 b, fb_f32x4 c)
{
#if DTYPE == 2
    return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(fb_i16x4, a), __builtin_bit_cast(fb_i16x4, b), c, 0, 0, 0);
#else
    return __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(fb_f16x4, a), __builtin_bit_cast(fb_f16x4, b), c, 0, 0, 0);
#endif
}
#endif
