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
#define BARRIER_GLOBAL() __syncthreads() /* (CUDA barriers order global memory too) */
#define THREAD_ID() ((int)threadIdx.x)
#define FB_GID_0 blockIdx.x
#define FB_GID_1 blockIdx.y
#define FB_GID_2 blockIdx.z
#define GROUP_ID(d) ((int)FB_GID_##d)
#define FB_NGR_0 gridDim.x
#define FB_NGR_1 gridDim.y
#define NUM_GROUPS(d) ((int)FB_NGR_##d)
#define EXP2(x) fb_ex2(x)
#define LOG2(x) log2f(x)
#define FMAX(a, b) fmaxf((a), (b))
#define NEG_INF (__int_as_float(0xff800000))
/* Work-groups meeting through global memory (SPLIT_FUSE): a device-wide fence, an atomic
 * add on a global int (returns the old value), and a load that skips the L1, for data
 * other work-groups wrote during this launch. */
#define FB_FENCE_GLOBAL() __threadfence()
#define FB_FENCE_CUMULATIVE 1 /* one thread's fence after a barrier orders the work-group's stores */
#define FB_ATOMIC_INC_WRAP(p, lim) ((int)atomicInc((unsigned int *)(p), (unsigned int)(lim))) /* old; lim -> 0 */
#define FB_ATOMIC_ADD(p, v) atomicAdd((p), (v))
#define FB_LD_COHERENT(p, i) __ldcg((p) + (i))
#define FB_LD_COHERENT4(dst, p, i)                                  \
    {                                                               \
        const float4 v4_ = __ldcg((const float4 *)((p) + (i)));     \
        (dst)[0] = v4_.x; (dst)[1] = v4_.y; (dst)[2] = v4_.z; (dst)[3] = v4_.w; \
    }
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
/* v as lane 0 has it: a value every lane holds alike, which ptxas then knows to be
 * warp-uniform (WG_SKIP's loop bound; CUTLASS reads its warpgroup index the same way) */
INLINE int fb_warp_uniform(int v) { return __shfl_sync(0xffffffffu, v, 0); }
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

/* ---- Hopper warpgroup MMA (wgmma), sm_90a only: MMA = 3 ----
 * NVRTC defines __CUDA_ARCH_FEAT_SM90_ALL when compiling for sm_90a / compute_90a (the
 * architecture-specific target wgmma needs); the cuda runtime picks that target when the
 * defines ask for ARCH_SPECIFIC=1 on an sm_90 device. PTX ISA section names below are
 * those of "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions". */
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FB_HAS_WGMMA 1
typedef unsigned long long u64;

/* "Matrix Descriptor Format": a 64-bit descriptor of a matrix in shared memory
 *   bits  0-13  start address >> 4 (shared-window byte address)
 *   bits 16-29  leading dimension byte offset >> 4  (LBO)
 *   bits 32-45  stride dimension byte offset >> 4   (SBO)
 *   bits 49-51  matrix base offset (0: only swizzled layouts use it)
 *   bits 62-63  swizzle mode: 0 none ("interleave"), 1 128-byte, 2 64-byte, 3 32-byte
 * Here always swizzle 0: core matrices of 8 rows x 16 bytes, each 128 contiguous bytes.
 * Adding (bytes >> 4) to a descriptor moves its start address (no carry: shared
 * addresses stay below 2^18). */
INLINE u64 fb_wg_desc(u32 addr, u32 lbo, u32 sbo)
{
    return (u64)((addr & 0x3FFFFu) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32);
}

/* wgmma.fence before the first wgmma and whenever registers it reads (accumulators, A
 * fragments) were written by other instructions; commit_group closes a batch;
 * wait_group<N> waits until at most N batches are pending ("wgmma.fence",
 * "wgmma.commit_group", "wgmma.wait_group"). */
INLINE void fb_wgmma_fence(void) { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
INLINE void fb_wgmma_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void fb_wgmma_wait(void) { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }
/* Makes this thread's generic-proxy shared-memory writes (cp.async, st.shared) visible to
 * the async proxy through which wgmma reads its shared-memory operands. */
/* A CTA-scope acquire-release fence (MEMBAR.ALL.CTA); WG_HOLDPV uses it as a point ptxas
 * does not schedule a wgmma wait across */
INLINE void fb_fence_cta(void) { asm volatile("fence.acq_rel.cta;" ::: "memory"); }
/* 4 bytes into shared memory; 16 bytes out of it; 16 bytes to global memory (WG_OSTAGE) */
INLINE void fb_st_shared_u32(u32 addr, u32 v) { asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory"); }
INLINE uint4 fb_ld_shared_v4(u32 addr)
{
    uint4 v;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
    return v;
}
INLINE void fb_st_global_v4(void *p, uint4 v) { *(uint4 *)p = v; }
INLINE void fb_fence_proxy_async(void) { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
/* The bulk tensor copy engine (TMA) and transaction barriers, for WG_TMA: an mbarrier in
 * shared memory counts one arrival plus the bytes its copies bring; a wait spins on the
 * phase parity. The tensor map is a CUtensorMap the host encoded (cuTensorMapEncodeTiled)
 * in global memory; the copy lands in this CTA's shared memory (no cluster). */
INLINE void fb_mbar_init(u32 bar, u32 count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
INLINE void fb_mbar_init_fence(void) { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
INLINE void fb_mbar_expect_tx(u32 bar, u32 bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
/* Moves registers between warpgroups (every warp of the warpgroup executes it): a producer
 * gives its own back to the pool, the consumers take them (the kernel's launch bounds fix
 * the count each thread starts with). */
template <int N> __device__ __forceinline__ void fb_setmaxnreg_dec(void) { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N)); }
template <int N> __device__ __forceinline__ void fb_setmaxnreg_inc(void) { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N)); }
/* Named barrier id (1..15) of n threads: sync waits, arrive counts this warp and goes on */
INLINE void fb_named_sync(int id, int n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
INLINE void fb_named_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory"); }
INLINE void fb_mbar_arrive(u32 bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
/* An arrival when cond holds, by predication rather than a branch: a branch among
 * in-flight wgmmas makes ptxas serialise them */
INLINE void fb_mbar_arrive_if(u32 bar, int cond)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.s32 p, %1, 0;\n"
                 "@p mbarrier.arrive.shared::cta.b64 _, [%0];\n"
                 "}" ::"r"(bar), "r"(cond) : "memory");
}
INLINE void fb_mbar_wait(u32 bar, u32 parity)
{
    asm volatile("{\n"
                 ".reg .pred done;\n"
                 "wait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait_%=;\n"
                 "}" ::"r"(bar), "r"(parity) : "memory");
}
/* box {c0, c1, c2} of the 3-d tensor map out of shared memory at src (the copy engine
 * clips what falls outside the map), in this thread's bulk group; the thread's generic
 * writes to src need fence.proxy.async first, and src stays untouched until
 * fb_bulk_wait_read says the engine has read it */
INLINE void fb_tma_store_3d(const void *tmap, int c0, int c1, int c2, u32 src)
{
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];"
                 ::"l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(src) : "memory");
}
INLINE void fb_bulk_commit(void) { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
INLINE void fb_bulk_wait_read(void) { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
/* box {c0, c1, c2} of the 3-d tensor map into shared memory at dst, completing on bar */
INLINE void fb_tma_load_3d(u32 dst, const void *tmap, int c0, int c1, int c2, u32 bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];"
                 ::"r"(dst), "l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}

/* Pins a register between asynchronous wgmma uses: the compiler may neither move its
 * reads and writes across this point nor copy it while a wgmma owns it. */
INLINE void fb_reg_pin(float &x) { asm volatile("" : "+f"(x)::"memory"); }
INLINE void fb_reg_pin_u(u32 &x) { asm volatile("" : "+r"(x)::"memory"); }

#if DTYPE == 2
#define FB_WG_T "bf16"
#else
#define FB_WG_T "f16"
#endif
#define FB_WG_D8(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define FB_WG_D32(d, i) FB_WG_D8(d, i), FB_WG_D8(d, i + 8), FB_WG_D8(d, i + 16), FB_WG_D8(d, i + 24)
#define FB_WG_D64(d, i) FB_WG_D32(d, i), FB_WG_D32(d, i + 32)
#define FB_WG_D128(d, i) FB_WG_D64(d, i), FB_WG_D64(d, i + 64)
#define FB_WG_D40(d, i) FB_WG_D32(d, i), FB_WG_D8(d, i + 32)
#define FB_WG_D48(d, i) FB_WG_D40(d, i), FB_WG_D8(d, i + 40)
#define FB_WG_D88(d, i) FB_WG_D64(d, i), FB_WG_D8(d, i + 64), FB_WG_D8(d, i + 72), FB_WG_D8(d, i + 80)
#define FB_WG_D96(d, i) FB_WG_D88(d, i), FB_WG_D8(d, i + 88)
/* operand lists %0 .. %(N/2 - 1): the accumulators of m64nNk16 */
#define FB_WG_L32 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
#define FB_WG_L40 FB_WG_L32 ",%32,%33,%34,%35,%36,%37,%38,%39"
#define FB_WG_L48 FB_WG_L40 ",%40,%41,%42,%43,%44,%45,%46,%47"
#define FB_WG_L64 FB_WG_L32 ",%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
#define FB_WG_L88 FB_WG_L64 ",%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87"
#define FB_WG_L96 FB_WG_L88 ",%88,%89,%90,%91,%92,%93,%94,%95"
#define FB_WG_L128 FB_WG_L96 ",%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"
/* D[64 x N] (+)= A[64 x 16] * B[16 x N], fp32 accumulators, 16-bit inputs; acc = 0 ignores D.
 *   fb_wgmma_ss_N: A and B from shared memory by descriptors, both K-major (no transpose)
 *   fb_wgmma_rs_tb_N: A from registers, B by descriptor, N-major (imm-trans-b = 1)
 * "Register Fragments" (m64nNk16): warp w (= warp index % 4) of the warpgroup holds rows
 * 16w .. 16w+15; with g = lane / 4 and t = lane % 4, thread element
 *   D: d[4j + 2r + c] = D[16w + g + 8r][8j + 2t + c]       (j < N/8, r, c in {0, 1})
 *   A: a[2h + r] = A[16w + g + 8r][8h + 2t .. 8h + 2t + 1]  (h, r in {0, 1}; low half first)
 * i.e. per 8 columns the mma.sync m16n8 C fragment, and A the mma.sync m16n8k16 A fragment. */
#define FB_WGMMA_DEF(N, REGS, DL, SS_AB, SS_SC, RS_AB, RS_SC)                                           \
    INLINE void fb_wgmma_ss_##N(float *d, u64 a, u64 b, int acc)                                       \
    {                                                                                                  \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SS_SC ", 0;\nwgmma.mma_async.sync.aligned.m64n" #N \
                     "k16.f32." FB_WG_T "." FB_WG_T " " REGS ", " SS_AB ", p, 1, 1, 0, 0;\n}\n"             \
                     : DL(d, 0) : "l"(a), "l"(b), "r"(acc));                                           \
    }                                                                                                  \
    INLINE void fb_wgmma_rs_tb_##N(float *d, const u32 *a, u64 b, int acc)                             \
    {                                                                                                  \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " RS_SC ", 0;\nwgmma.mma_async.sync.aligned.m64n" #N \
                     "k16.f32." FB_WG_T "." FB_WG_T " " REGS ", " RS_AB ", p, 1, 1, 1;\n}\n"                \
                     : DL(d, 0) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(acc));         \
    }
FB_WGMMA_DEF(64, "{" FB_WG_L32 "}", FB_WG_D32, "%32, %33", "%34", "{%32, %33, %34, %35}, %36", "%37")
FB_WGMMA_DEF(80, "{" FB_WG_L40 "}", FB_WG_D40, "%40, %41", "%42", "{%40, %41, %42, %43}, %44", "%45")
FB_WGMMA_DEF(96, "{" FB_WG_L48 "}", FB_WG_D48, "%48, %49", "%50", "{%48, %49, %50, %51}, %52", "%53")
FB_WGMMA_DEF(128, "{" FB_WG_L64 "}", FB_WG_D64, "%64, %65", "%66", "{%64, %65, %66, %67}, %68", "%69")
FB_WGMMA_DEF(176, "{" FB_WG_L88 "}", FB_WG_D88, "%88, %89", "%90", "{%88, %89, %90, %91}, %92", "%93")
FB_WGMMA_DEF(192, "{" FB_WG_L96 "}", FB_WG_D96, "%96, %97", "%98", "{%96, %97, %98, %99}, %100", "%101")
FB_WGMMA_DEF(256, "{" FB_WG_L128 "}", FB_WG_D128, "%128, %129", "%130", "{%128, %129, %130, %131}, %132", "%133")
#endif /* __CUDA_ARCH_FEAT_SM90_ALL */

/* Dynamic shared memory: one buffer that the kernel carves up; its size is checked. */
#define FB_DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
INLINE u32 fb_dynamic_smem_size(void)
{
    u32 r;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
    return r;
}
#define FB_TRAP() __trap()
