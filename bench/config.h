/* config.h: one configuration of the portable kernel (the -D defines that are tuned),
 * its text form "BLOCK_M=64;BLOCK_N=32;..." (the CLI also accepts ','), and defaults. */
#ifndef FABENCH_CONFIG_H
#define FABENCH_CONFIG_H

#include <stdint.h>

#include "common.h"
#include "rt.h"

typedef enum { MMA_FMA = 0, MMA_SYNC = 1, MMA_MFMA = 2, MMA_WGMMA = 3 } mma_kind;

typedef struct {
    int block_m, block_n, num_warps, split_kv, kpad, stages, pack_gqa, warp_m;
    int wg_pipe; /* wgmma: P V of tile j-1 runs while tile j's softmax does (STAGES >= 3) */
    int wg_swizzle; /* wgmma: tiles in shared memory in the 128-byte swizzled layout (default) */
    int wg_tma; /* wgmma: K and V tiles by the bulk tensor copy engine (TMA) and per-stage mbarriers */
    int wg_pingpong; /* wgmma + WG_WS, two consumer warpgroups: they take turns issuing S = Q K^T */
    int wg_kvsplit; /* wgmma + WG_WS: K and V of a stage on barriers of their own (K freed after S, V after P V) */
    int wg_persist; /* wgmma + WG_WS: one work-group per SM walks many query blocks, the producer running on into the next */
    int wg_defer; /* wgmma + WG_PIPE: O's rescale for tile j-1 runs beside tile j's S wgmma (FlashAttention-3's order) */
    int wg_pvturn; /* wgmma + WG_PIPE + WG_PINGPONG: a warpgroup's turn covers P V of tile j-1 as well as S of tile j */
    int wg_dynamic; /* WG_PERSIST: the work-groups take their next query block from a global counter as they free up */
    int wg_qearly; /* WG_WS without WG_PERSIST: the producer starts on K and V while the consumers load Q (not after) */
    int wg_qprefetch; /* WG_PERSIST: a warpgroup fetches its next block's Q rows once this block's last S is done */
    int mask_bound; /* MMA=mma or wgmma: a masked tile's scores compared with one bound per row (fewer registers: no index per key) */
    int red_split; /* MMA=mma or wgmma: a score tile's row maxima and sums in four independent chains per row (not one) */
    int wg_holdpv; /* WG_PIPE: a fence keeps the wait for tile j-1's P V behind tile j's softmax (ptxas hoists it otherwise) */
    int wg_ostage; /* wgmma, SPLIT_KV=1, no WG_QPREFETCH: O stored through the warpgroup's Q rows of shared memory in 16-byte chunks */
    int wg_otma; /* WG_OSTAGE, WG_TMA, dense, PACK_GQA=0: one thread per warpgroup stores the staged O rows by the copy engine */
    int wg_qtma; /* WG_WS without WG_PERSIST or WG_QEARLY, dense, PACK_GQA=0: the producer brings Q in by the copy engine before K and V */
    int wg_skip; /* wgmma: a consumer warpgroup issues no MMA for a key tile none of its rows sees (past the last row; causal, past its diagonal) */
    int wg_half; /* WG_SKIP: a live tile whose second half none of the warpgroup's rows sees takes its P V (1), or its S and P V (2), over its first half only */
    int wg_sinflight; /* WG_DEFER: a wait for all but this tile's S before O's rescale, so that ptxas does not wait for S there */
    int wg_ws;  /* wgmma + TMA: warp specialisation, a producer warpgroup feeds the stages (no CTA barrier per tile) */
    int kv_warps; /* MMA=mma: warps sharing one group of query rows, each taking BLOCK_N of every KV_WARPS * BLOCK_N keys, merged in shared memory at the end (0 or 1: none; kconfig_kv_warps) */
    int split_fuse; /* SPLIT_KV > 1: the last split work-group of each query block merges the partial rows (no attn_combine launch) */
    int grid_lpt; /* dense batches: the launch order visits the heaviest query blocks first (longest first), in sections of groups (1: as many as fit L2, N > 1: N) */
    mma_kind mma;
    uint64_t set; /* bit per field the user gave explicitly (CFG_*) */
    int fault_skip_last_tile; /* test hooks, never tuned: see kernels/common.k */
    int fault_hang, fault_oob, fault_compile, fault_linear_pages, fault_fuse_keep;
    int fault_zero_block, fault_skip_block_tile, fault_head_scale; /* one block's or one head's output wrong */
} kconfig;

enum { CFG_BLOCK_M = 1, CFG_BLOCK_N = 2, CFG_NUM_WARPS = 4, CFG_SPLIT_KV = 8, CFG_KPAD = 16, CFG_MMA = 32, CFG_STAGES = 64, CFG_PACK_GQA = 128, CFG_WARP_M = 256, CFG_WG_PIPE = 512, CFG_WG_SWIZZLE = 1024, CFG_WG_TMA = 2048, CFG_WG_WS = 4096, CFG_WG_PINGPONG = 8192, CFG_GRID_LPT = 16384, CFG_WG_PERSIST = 32768, CFG_WG_KVSPLIT = 65536, CFG_WG_DEFER = 131072, CFG_WG_PVTURN = 262144, CFG_WG_DYNAMIC = 524288, CFG_WG_QEARLY = 1048576, CFG_WG_QPREFETCH = 2097152, CFG_WG_HOLDPV = 4194304, CFG_RED_SPLIT = 8388608, CFG_WG_SINFLIGHT = 16777216, CFG_WG_OSTAGE = 33554432, CFG_WG_QTMA = 67108864, CFG_WG_OTMA = 134217728, CFG_WG_SKIP = 268435456, CFG_MASK_BOUND = 536870912, CFG_WG_HALF = 1073741824 };
#define CFG_SPLIT_FUSE 0x80000000u /* past what an enum constant may hold */
#define CFG_KV_WARPS (UINT64_C(1) << 32)
#define CFG_FAULT (UINT64_C(1) << 33) /* any FAULT_* test hook: a --config that holds only hooks is still a --config */

/* Parses "K=V,K=V" (or ';'), overriding fields of *c and marking them in c->set.
 * Keys: BLOCK_M, BLOCK_N, NUM_WARPS, SPLIT_KV, KPAD, STAGES, PACK_GQA, WARP_M, MMA (fma, mma, mfma, wgmma),
 * WG_PIPE, WG_SWIZZLE, WG_TMA, WG_WS, WG_PINGPONG, WG_KVSPLIT, WG_PERSIST, WG_DEFER, WG_PVTURN, WG_DYNAMIC, WG_QEARLY, WG_QPREFETCH, WG_HOLDPV, WG_SINFLIGHT, WG_OSTAGE, WG_QTMA, WG_OTMA and WG_SKIP (0 or 1; wgmma only), WG_HALF (0, 1 or 2; wgmma only), RED_SPLIT and MASK_BOUND (0 or 1; mma and wgmma), GRID_LPT (0; 1: sections sized to L2; N > 1: sections of N groups),
 * SPLIT_FUSE (0 or 1; SPLIT_KV > 1), KV_WARPS (1, 2, 4 or 8; mma),
 * FAULT_SKIP_LAST_TILE.
 * Returns 0 or 2 with err naming the key. */
int kconfig_parse(const char *s, kconfig *c, char *err, size_t errlen);

/* Copies into dst every field src->set names (a user's --config over a tuned one). */
void kconfig_overlay(kconfig *dst, const kconfig *src);

/* Room for kconfig_str's longest form (every key set) with margin: every buffer that holds a
 * configuration's text is this size, and kconfig_str aborts rather than cut one short. */
#define KCONFIG_STR_MAX 512

/* Canonical text form, ';' separated, every tuned field (WG_PIPE, WG_TMA, WG_WS, WG_PINGPONG, WG_KVSPLIT, WG_PERSIST, WG_DEFER, WG_PVTURN, WG_DYNAMIC, WG_QEARLY, WG_QPREFETCH, WG_HOLDPV, WG_SINFLIGHT, WG_OSTAGE, WG_QTMA, WG_OTMA, WG_SKIP, WG_HALF, RED_SPLIT, MASK_BOUND, GRID_LPT, SPLIT_FUSE and KV_WARPS (above 1) only when set, WG_SWIZZLE
 * only for wgmma, so that the configurations recorded before they existed keep their names). */
void kconfig_str(const kconfig *c, char *out, size_t outlen);

/* The i-th wgmma switch (WG_PIPE, WG_TMA, ..., WG_SWIZZLE, 0 or 1): its key, with its value
 * in c through *on; NULL past the last. */
const char *kconfig_wg_switch(const kconfig *c, size_t i, int *on);
/* The first test hook (FAULT_*) c sets, as its define's name; NULL when none. */
const char *kconfig_fault(const kconfig *c);

/* How many tuned fields of a and b differ (the MMA kind among them). */
int kconfig_distance(const kconfig *a, const kconfig *b);

/* The first of cands[0..n) with the fewest tuned fields different from k, their number in
 * *dist; -1 when n = 0. */
long kconfig_nearest(const kconfig *cands, long n, const kconfig *k, int *dist);

/* KV_WARPS, 1 when not given. */
static inline int kconfig_kv_warps(const kconfig *c) { return c->kv_warps > 1 ? c->kv_warps : 1; }

/* Threads per work-group: NUM_WARPS warps, plus the producer warpgroup of WG_WS=1. */
int kconfig_threads(const kconfig *c);

/* Fills the fields not in c->set with a default for this device and shape: tiles that
 * fit the device's shared memory, split-KV when there are too few work-groups. */
void kconfig_complete(kconfig *c, const rt_device_info *dev, const shape_t *s, dtype_t dt);

/* Static checks before compiling: returns 0, or ST_UNSUPPORTED / ST_RESOURCE_LIMIT with
 * reason, e.g. thread count above the device limit, shared memory above its size. */
status_t kconfig_check(const kconfig *c, const rt_device_info *dev, const shape_t *s, dtype_t dt,
                       char *reason, size_t len);

/* Shared memory bytes the kernel uses for this configuration (fma: static arrays; mma:
 * the dynamic buffer the host must pass at launch, see kconfig_dynamic_shared). */
size_t kconfig_shared_bytes(const kconfig *c, int d);
/* Query rows one work-group column covers (Sq, or Sq * Hq/Hkv with PACK_GQA) and the
 * number of work-groups along grid dimensions 0 and 1. */
long kconfig_rows(const kconfig *c, const shape_t *s);
void kconfig_grid(const kconfig *c, const shape_t *s, size_t grid[3]);

/* Dynamic shared memory to pass at launch: 0 for fma and mfma, kconfig_shared_bytes for mma and wgmma. */
size_t kconfig_dynamic_shared(const kconfig *c, int d);

#endif
