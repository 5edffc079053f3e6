/* config.h: one configuration of the portable kernel (the -D defines that are tuned),
 * its text form "BLOCK_M=64;BLOCK_N=32;..." (the CLI also accepts ','), and defaults. */
#ifndef FABENCH_CONFIG_H
#define FABENCH_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "knobs.h"
#include "rt.h"

typedef enum { MMA_FMA = 0, MMA_SYNC = 1, MMA_MFMA = 2, MMA_WGMMA = 3 } mma_kind;

/* One configuration: a field per knob (FB_KNOBS, knobs.h, where each is documented), the
 * keys the user gave, and the test hooks. */
#define FB_KNOB_FIELD(KEY, field, type, ...) type field;
typedef struct {
    FB_KNOBS(FB_KNOB_FIELD)
    uint64_t set; /* bit per field the user gave explicitly (CFG(KEY)) */
    int fault_skip_last_tile; /* test hooks, never tuned: see kernels/common.k */
    int fault_hang, fault_oob, fault_compile, fault_linear_pages, fault_fuse_keep;
    int fault_zero_block, fault_skip_block_tile, fault_head_scale; /* one block's or one head's output wrong */
} kconfig;

/* kconfig.set's bit for a knob: CFG(BLOCK_M) */
#define CFG(KEY) (UINT64_C(1) << KNOB_##KEY)
#define CFG_FAULT (UINT64_C(1) << KNOB_COUNT) /* any FAULT_* test hook: a --config that holds only hooks is still a --config */

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

/* Canonical text form, ';' separated: the knobs in FB_KNOBS's order, each as its `show`
 * says (the switches only when on, WG_SWIZZLE only for wgmma, so that the configurations
 * recorded before a knob existed keep their names), then a test hook. */
void kconfig_str(const kconfig *c, char *out, size_t outlen);

/* The knobs' rows (knobs.h), and a knob's value in a configuration */
const knob_info *knob(knob_id k);
/* The knob a key names (any case, as --config reads it); -1 when none */
int knob_find(const char *key);
int kconfig_get(const kconfig *c, knob_id k);
void kconfig_set(kconfig *c, knob_id k, int v);
/* The value as it counts: below a SHOW_ON knob's `off`, `off` (KV_WARPS 0 is 1) */
int kconfig_value(const kconfig *c, knob_id k);
/* Whether kconfig_str writes the knob and the kernel gets its define (knob_info.show) */
int kconfig_shows(const kconfig *c, knob_id k);
/* The search's feature vector, about [0, 1] per knob (knob_info.feat) */
void kconfig_features(const kconfig *c, double f[KNOB_COUNT]);

/* --config's help: every key and its values, wrapped at `width` columns after `indent` */
void knobs_print_keys(FILE *f, const char *indent, int width);
/* docs/kernel.md's knob table (`fabench knobs --markdown`) */
void knobs_print_markdown(FILE *f);

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

/* Fits a tuned configuration to shape s where a rule of kconfig_check allows a fix: what a
 * ragged batch does not support yet goes (split-KV and its fused merge, GQA packing,
 * persistent work-groups and the longest-first order, which walk dense query blocks, and Q
 * or O through the copy engine, whose tensor maps are dense), except the keys keep names (a
 * user's --config). Returns 1 and fills dropped ("SPLIT_KV=1, PACK_GQA=0", in the knobs'
 * order) when something went, else 0. */
int kconfig_fit(kconfig *c, const shape_t *s, uint64_t keep, char *dropped, size_t len);

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
