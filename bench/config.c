/* config.c: parsing, printing, defaults and static checks of kernel configurations. */
#define _GNU_SOURCE
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *mma_name(mma_kind m)
{
    switch (m) {
    case MMA_FMA: return "fma";
    case MMA_SYNC: return "mma";
    case MMA_MFMA: return "mfma";
    case MMA_WGMMA: return "wgmma";
    }
    return "?";
}

static int parse_int(const char *v, int lo, int hi, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < lo || x > hi) return -1;
    *out = (int)x;
    return 0;
}

static int is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

/* The wgmma-only switches (0 or 1): key, field and set bit, in the order kconfig_check
 * names the first one set on another MMA kind. */
static const struct {
    const char *key;
    size_t off;
    uint64_t bit;
} wg_flags[] = {
    {"WG_PIPE", offsetof(kconfig, wg_pipe), CFG_WG_PIPE},          {"WG_TMA", offsetof(kconfig, wg_tma), CFG_WG_TMA},
    {"WG_WS", offsetof(kconfig, wg_ws), CFG_WG_WS},                {"WG_PINGPONG", offsetof(kconfig, wg_pingpong), CFG_WG_PINGPONG},
    {"WG_PERSIST", offsetof(kconfig, wg_persist), CFG_WG_PERSIST}, {"WG_KVSPLIT", offsetof(kconfig, wg_kvsplit), CFG_WG_KVSPLIT},
    {"WG_DEFER", offsetof(kconfig, wg_defer), CFG_WG_DEFER},       {"WG_PVTURN", offsetof(kconfig, wg_pvturn), CFG_WG_PVTURN},
    {"WG_DYNAMIC", offsetof(kconfig, wg_dynamic), CFG_WG_DYNAMIC}, {"WG_QEARLY", offsetof(kconfig, wg_qearly), CFG_WG_QEARLY},
    {"WG_QPREFETCH", offsetof(kconfig, wg_qprefetch), CFG_WG_QPREFETCH}, {"WG_HOLDPV", offsetof(kconfig, wg_holdpv), CFG_WG_HOLDPV},
    {"WG_SINFLIGHT", offsetof(kconfig, wg_sinflight), CFG_WG_SINFLIGHT}, {"WG_OSTAGE", offsetof(kconfig, wg_ostage), CFG_WG_OSTAGE},
    {"WG_QTMA", offsetof(kconfig, wg_qtma), CFG_WG_QTMA}, {"WG_OTMA", offsetof(kconfig, wg_otma), CFG_WG_OTMA},
    {"WG_SKIP", offsetof(kconfig, wg_skip), CFG_WG_SKIP},
    {"WG_SWIZZLE", offsetof(kconfig, wg_swizzle), CFG_WG_SWIZZLE},
};
#define N_WG_FLAGS (sizeof wg_flags / sizeof wg_flags[0])

static int *wg_flag(kconfig *c, size_t i) { return (int *)((char *)c + wg_flags[i].off); }
static int wg_flag_get(const kconfig *c, size_t i) { return *(const int *)((const char *)c + wg_flags[i].off); }

const char *kconfig_wg_switch(const kconfig *c, size_t i, int *on)
{
    if (i >= N_WG_FLAGS) return NULL;
    *on = wg_flag_get(c, i);
    return wg_flags[i].key;
}

/* The test hooks (0 or 1, never tuned; kernels/common.k): key and field, in the order
 * kconfig_str names the first one set. Any of them marks CFG_FAULT. */
static const struct {
    const char *key;
    size_t off;
} fault_hooks[] = {
    {"FAULT_SKIP_LAST_TILE", offsetof(kconfig, fault_skip_last_tile)}, {"FAULT_HANG", offsetof(kconfig, fault_hang)},
    {"FAULT_OOB", offsetof(kconfig, fault_oob)}, {"FAULT_COMPILE", offsetof(kconfig, fault_compile)},
    {"FAULT_LINEAR_PAGES", offsetof(kconfig, fault_linear_pages)}, {"FAULT_FUSE_KEEP", offsetof(kconfig, fault_fuse_keep)},
    {"FAULT_ZERO_BLOCK", offsetof(kconfig, fault_zero_block)}, {"FAULT_SKIP_BLOCK_TILE", offsetof(kconfig, fault_skip_block_tile)},
    {"FAULT_HEAD_SCALE", offsetof(kconfig, fault_head_scale)},
};
#define N_FAULT_HOOKS (sizeof fault_hooks / sizeof fault_hooks[0])

static int *fault_hook(kconfig *c, size_t i) { return (int *)((char *)c + fault_hooks[i].off); }
static int fault_hook_get(const kconfig *c, size_t i) { return *(const int *)((const char *)c + fault_hooks[i].off); }

const char *kconfig_fault(const kconfig *c)
{
    for (size_t i = 0; i < N_FAULT_HOOKS; i++)
        if (fault_hook_get(c, i)) return fault_hooks[i].key;
    return NULL;
}

static int fault_hook_index(const char *key)
{
    for (size_t i = 0; i < N_FAULT_HOOKS; i++)
        if (!strcasecmp(key, fault_hooks[i].key)) return (int)i;
    return -1;
}

/* The wg_flags entry a key names, or -1. */
static int wg_flag_index(const char *key)
{
    for (size_t i = 0; i < N_WG_FLAGS; i++)
        if (!strcasecmp(key, wg_flags[i].key)) return (int)i;
    return -1;
}

static int block_m_ok(int v) { return is_pow2(v) || v % 16 == 0; } /* or 16 * WARP_M * NUM_WARPS rows */
static int block_n_ok(int v) { return is_pow2(v) || v == 176 || v == 192; } /* 176 and 192: wgmma only */

/* The integer keys besides the switches: field, range, a further rule within the range
 * (NULL: none) and the values allowed, as a bad value's message names them. */
static const struct {
    const char *key;
    size_t off;
    int lo, hi;
    int (*ok)(int);
    uint64_t bit;
    const char *allowed;
} int_keys[] = {
    {"BLOCK_M", offsetof(kconfig, block_m), 1, 1024, block_m_ok, CFG_BLOCK_M, "a power of two or a multiple of 16, 1 to 1024"},
    {"BLOCK_N", offsetof(kconfig, block_n), 1, 256, block_n_ok, CFG_BLOCK_N, "a power of two up to 256, or 176 or 192"},
    {"NUM_WARPS", offsetof(kconfig, num_warps), 1, 32, NULL, CFG_NUM_WARPS, "1 to 32"},
    {"SPLIT_KV", offsetof(kconfig, split_kv), 1, 256, NULL, CFG_SPLIT_KV, "1 to 256"},
    {"KPAD", offsetof(kconfig, kpad), 0, 8, NULL, CFG_KPAD, "0 to 8"},
    {"WARP_M", offsetof(kconfig, warp_m), 1, 2, NULL, CFG_WARP_M, "1 or 2"},
    {"KV_WARPS", offsetof(kconfig, kv_warps), 1, 8, is_pow2, CFG_KV_WARPS, "1, 2, 4 or 8"},
    {"SPLIT_FUSE", offsetof(kconfig, split_fuse), 0, 1, NULL, CFG_SPLIT_FUSE, "0 or 1"},
    {"RED_SPLIT", offsetof(kconfig, red_split), 0, 1, NULL, CFG_RED_SPLIT, "0 or 1"},
    {"WG_HALF", offsetof(kconfig, wg_half), 0, 2, NULL, CFG_WG_HALF, "0, 1 or 2"},
    {"MASK_BOUND", offsetof(kconfig, mask_bound), 0, 1, NULL, CFG_MASK_BOUND, "0 or 1"},
    {"PACK_GQA", offsetof(kconfig, pack_gqa), 0, 3, NULL, CFG_PACK_GQA, "0, 1, 2 or 3"},
    {"STAGES", offsetof(kconfig, stages), 1, 4, NULL, CFG_STAGES, "1 to 4"},
    {"GRID_LPT", offsetof(kconfig, grid_lpt), 0, 4096, NULL, CFG_GRID_LPT, "0 to 4096"},
};
#define N_INT_KEYS (sizeof int_keys / sizeof int_keys[0])

static int int_key_index(const char *key)
{
    for (size_t i = 0; i < N_INT_KEYS; i++)
        if (!strcasecmp(key, int_keys[i].key)) return (int)i;
    return -1;
}

/* Sets key k to text v in *c. NULL, or the values k allows (v is not one of them); an
 * unknown key gives "". */
static const char *parse_key(kconfig *c, const char *k, const char *v)
{
    int i;
    if ((i = int_key_index(k)) >= 0) {
        int *f = (int *)((char *)c + int_keys[i].off);
        c->set |= int_keys[i].bit;
        if (parse_int(v, int_keys[i].lo, int_keys[i].hi, f) || (int_keys[i].ok && !int_keys[i].ok(*f)))
            return int_keys[i].allowed;
        return NULL;
    }
    if ((i = wg_flag_index(k)) >= 0) {
        c->set |= wg_flags[i].bit;
        return parse_int(v, 0, 1, wg_flag(c, (size_t)i)) ? "0 or 1" : NULL;
    }
    if ((i = fault_hook_index(k)) >= 0) {
        c->set |= CFG_FAULT;
        return parse_int(v, 0, 1, fault_hook(c, (size_t)i)) ? "0 or 1" : NULL;
    }
    if (!strcasecmp(k, "MMA")) {
        c->set |= CFG_MMA;
        if (!strcasecmp(v, "fma") || !strcmp(v, "0")) c->mma = MMA_FMA;
        else if (!strcasecmp(v, "mma") || !strcasecmp(v, "mma_sync") || !strcmp(v, "1")) c->mma = MMA_SYNC;
        else if (!strcasecmp(v, "mfma") || !strcmp(v, "2")) c->mma = MMA_MFMA;
        else if (!strcasecmp(v, "wgmma") || !strcmp(v, "3")) c->mma = MMA_WGMMA;
        else return "fma, mma, mfma or wgmma";
        return NULL;
    }
    return "";
}

int kconfig_parse(const char *s, kconfig *c, char *err, size_t errlen)
{
    char *copy = strdup(s ? s : "");
    if (!copy) { snprintf(err, errlen, "out of memory"); return FB_EXIT_BADINPUT; }
    int rc = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",; ", &save); tok; tok = strtok_r(NULL, ",; ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) { snprintf(err, errlen, "'%s' is not KEY=VALUE", tok); rc = FB_EXIT_BADINPUT; break; }
        *eq = 0;
        const char *k = tok, *v = eq + 1, *allowed = parse_key(c, k, v);
        if (allowed && !*allowed) {
            size_t o = (size_t)snprintf(err, errlen, "unknown key '%s' (known: MMA", k);
            for (size_t i = 0; i < N_INT_KEYS && o < errlen; i++) o += (size_t)snprintf(err + o, errlen - o, ", %s", int_keys[i].key);
            for (size_t i = 0; i < N_WG_FLAGS && o < errlen; i++) o += (size_t)snprintf(err + o, errlen - o, ", %s", wg_flags[i].key);
            if (o < errlen) snprintf(err + o, errlen - o, ", FAULT_*)");
            rc = FB_EXIT_BADINPUT;
            break;
        }
        if (allowed) {
            snprintf(err, errlen, "bad value '%s' for %s (allowed: %s)", v, k, allowed);
            rc = FB_EXIT_BADINPUT;
            break;
        }
    }
    free(copy);
    return rc;
}

void kconfig_overlay(kconfig *dst, const kconfig *src)
{
    if (src->set & CFG_BLOCK_M) dst->block_m = src->block_m;
    if (src->set & CFG_BLOCK_N) dst->block_n = src->block_n;
    if (src->set & CFG_NUM_WARPS) dst->num_warps = src->num_warps;
    if (src->set & CFG_SPLIT_KV) dst->split_kv = src->split_kv;
    if (src->set & CFG_KPAD) dst->kpad = src->kpad;
    if (src->set & CFG_MMA) dst->mma = src->mma;
    if (src->set & CFG_STAGES) dst->stages = src->stages;
    if (src->set & CFG_PACK_GQA) dst->pack_gqa = src->pack_gqa;
    if (src->set & CFG_WARP_M) dst->warp_m = src->warp_m;
    if (src->set & CFG_RED_SPLIT) dst->red_split = src->red_split;
    if (src->set & CFG_MASK_BOUND) dst->mask_bound = src->mask_bound;
    if (src->set & CFG_WG_HALF) dst->wg_half = src->wg_half;
    for (size_t i = 0; i < N_WG_FLAGS; i++)
        if (src->set & wg_flags[i].bit) *wg_flag(dst, i) = wg_flag_get(src, i);
    if (src->set & CFG_GRID_LPT) dst->grid_lpt = src->grid_lpt;
    if (src->set & CFG_SPLIT_FUSE) dst->split_fuse = src->split_fuse;
    if (src->set & CFG_KV_WARPS) dst->kv_warps = src->kv_warps;
    dst->set |= src->set;
    for (size_t i = 0; i < N_FAULT_HOOKS; i++)
        if (fault_hook_get(src, i)) *fault_hook(dst, i) = 1;
}

int kconfig_distance(const kconfig *a, const kconfig *b)
{
    int d = (a->mma != b->mma) + (a->block_m != b->block_m) + (a->block_n != b->block_n) +
            (a->num_warps != b->num_warps) + (a->warp_m != b->warp_m) + (a->stages != b->stages) +
            (a->split_kv != b->split_kv) + (a->pack_gqa != b->pack_gqa) + (a->kpad != b->kpad) +
            (a->grid_lpt != b->grid_lpt) + (a->red_split != b->red_split) + (a->mask_bound != b->mask_bound) + (a->wg_half != b->wg_half) +
            (a->split_fuse != b->split_fuse) + (kconfig_kv_warps(a) != kconfig_kv_warps(b));
    for (size_t i = 0; i < N_WG_FLAGS; i++) d += wg_flag_get(a, i) != wg_flag_get(b, i);
    return d;
}

long kconfig_nearest(const kconfig *cands, long n, const kconfig *k, int *dist)
{
    long best = -1;
    for (long i = 0; i < n; i++) {
        const int d = kconfig_distance(&cands[i], k);
        if (best < 0 || d < *dist) { best = i; *dist = d; }
    }
    return best;
}

int kconfig_threads(const kconfig *c) { return c->num_warps * 32 + (c->wg_ws ? 128 : 0); }

void kconfig_str(const kconfig *c, char *out, size_t outlen)
{
    char lpt[24] = "";
    if (c->grid_lpt) snprintf(lpt, sizeof lpt, ";GRID_LPT=%d", c->grid_lpt);
    char half[16] = "";
    if (c->wg_half) snprintf(half, sizeof half, ";WG_HALF=%d", c->wg_half);
    char kvw[24] = "";
    if (kconfig_kv_warps(c) > 1) snprintf(kvw, sizeof kvw, ";KV_WARPS=%d", c->kv_warps);
    char fault[32] = "";
    if (kconfig_fault(c)) snprintf(fault, sizeof fault, ";%s=1", kconfig_fault(c));
    int n = snprintf(out, outlen, "MMA=%s;BLOCK_M=%d;BLOCK_N=%d;NUM_WARPS=%d;WARP_M=%d;STAGES=%d;SPLIT_KV=%d;PACK_GQA=%d;KPAD=%d%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s",
             mma_name(c->mma), c->block_m, c->block_n, c->num_warps, c->warp_m, c->stages, c->split_kv, c->pack_gqa, c->kpad,
             c->wg_pipe ? ";WG_PIPE=1" : "", c->mma != MMA_WGMMA ? "" : c->wg_swizzle ? ";WG_SWIZZLE=1" : ";WG_SWIZZLE=0",
             c->wg_tma ? ";WG_TMA=1" : "", c->wg_ws ? ";WG_WS=1" : "", c->wg_pingpong ? ";WG_PINGPONG=1" : "", c->wg_kvsplit ? ";WG_KVSPLIT=1" : "", c->wg_persist ? ";WG_PERSIST=1" : "",
             c->wg_defer ? ";WG_DEFER=1" : "", c->wg_pvturn ? ";WG_PVTURN=1" : "", c->wg_dynamic ? ";WG_DYNAMIC=1" : "", c->wg_qearly ? ";WG_QEARLY=1" : "", c->wg_qprefetch ? ";WG_QPREFETCH=1" : "", c->wg_holdpv ? ";WG_HOLDPV=1" : "", c->wg_sinflight ? ";WG_SINFLIGHT=1" : "", c->wg_ostage ? ";WG_OSTAGE=1" : "", c->wg_qtma ? ";WG_QTMA=1" : "", c->wg_otma ? ";WG_OTMA=1" : "", c->wg_skip ? ";WG_SKIP=1" : "", half, c->red_split ? ";RED_SPLIT=1" : "", c->mask_bound ? ";MASK_BOUND=1" : "", lpt, c->split_fuse ? ";SPLIT_FUSE=1" : "", kvw, fault);
    if (n < 0 || (size_t)n >= outlen) { /* a cut name would be recorded as another configuration */
        fprintf(stderr, "fabench: internal error: a configuration's text needs %d bytes, the buffer has %zu\n", n, outlen);
        abort();
    }
}

long kconfig_rows(const kconfig *c, const shape_t *s)
{
    return c->pack_gqa ? (long)s->sq * (s->hq / s->hkv) : (long)s->sq;
}

void kconfig_grid(const kconfig *c, const shape_t *s, size_t grid[3])
{
    grid[0] = (size_t)((kconfig_rows(c, s) + c->block_m - 1) / c->block_m);
    grid[1] = (size_t)s->batch * (size_t)(c->pack_gqa ? s->hkv : s->hq);
    grid[2] = (size_t)c->split_kv;
}

size_t kconfig_dynamic_shared(const kconfig *c, int d)
{
    return c->mma == MMA_SYNC || c->mma == MMA_WGMMA ? kconfig_shared_bytes(c, d) : 0;
}

size_t kconfig_shared_bytes(const kconfig *c, int d)
{
    const size_t fuse = c->split_fuse ? sizeof(int) : 0; /* SPLIT_FUSE's static flag */
    if (c->mma == MMA_MFMA) /* static LDS: one 16-bit K and one V tile, rows padded by 4 */
        return 2 * 2 * (size_t)(d + 4) * (size_t)c->block_n + fuse;
    if (c->mma == MMA_WGMMA) /* 16-bit Q tile and STAGES K and V tiles; swizzled rows in whole 64-column
                              * blocks (d = 80, 96 padded), else no padding; 1 KiB to align swizzle atoms */
        return 2 * (size_t)(c->wg_swizzle ? (d + 63) / 64 * 64 : d) * (size_t)(c->block_m + 2 * c->stages * c->block_n) + 1024;
    if (c->mma == MMA_SYNC) /* 16-bit Q tile and STAGES K and V tiles of KV_WARPS * BLOCK_N rows, rows padded by 8 */
        return 2 * (size_t)(d + 8) * (size_t)(c->block_m + 2 * c->stages * c->block_n * kconfig_kv_warps(c));
    int nt = c->num_warps * 32;
    int tpr = nt >= c->block_m ? nt / c->block_m : 1;
    size_t floats = (size_t)c->block_m * (size_t)(d + c->kpad) + (size_t)c->block_n * (size_t)(d + c->kpad) +
                    (size_t)c->block_m * (size_t)c->block_n + (size_t)c->block_m * (size_t)tpr;
    return 4 * floats + fuse;
}

void kconfig_complete(kconfig *c, const rt_device_info *dev, const shape_t *s, dtype_t dt)
{
    (void)dt;
    /* decode-like shapes with GQA: one work-group per KV head reads each K/V tile once */
    if (!(c->set & CFG_PACK_GQA)) c->pack_gqa = s->hq > s->hkv && s->sq <= 16;
    if (!(c->set & CFG_MMA)) c->mma = (dev->features & RT_FEAT_MMA_SYNC) && dt != DT_FP32 ? MMA_SYNC : MMA_FMA;
    if (!(c->set & CFG_MMA) && (dev->features & RT_FEAT_MFMA) && dt != DT_FP32) c->mma = MMA_MFMA;
    /* Hopper: wgmma for dense prefill it can tile (64 query rows per warpgroup, head dims
     * 64/128/256, 64-key tiles within a page). On the H200 the untuned wgmma default ran the
     * reference shapes at 425 and 386 TFLOP/s against mma's 337 and 312; decode stays on mma
     * (split-KV over packed heads, 16 rows). */
    if (!(c->set & CFG_MMA) && (dev->features & RT_FEAT_WGMMA) && dt != DT_FP32 && !shape_ragged(s) &&
        s->sq >= 64 && (s->d == 64 || s->d == 128 || s->d == 256) && (!shape_paged(s) || s->page % 64 == 0))
        c->mma = MMA_WGMMA;
    /* ragged batches and a paged KV cache have no mfma tiles */
    if ((shape_ragged(s) || shape_paged(s)) && !(c->set & CFG_MMA) && c->mma == MMA_MFMA) c->mma = MMA_FMA;
    if (shape_ragged(s)) { /* VARLEN: one work-group per (m-block, sequence, head); fma or mma */
        if (!(c->set & CFG_PACK_GQA)) c->pack_gqa = 0;
        if (!(c->set & CFG_SPLIT_KV)) c->split_kv = 1; /* and no split below */
    }
    if (!(c->set & CFG_STAGES)) c->stages = c->mma == MMA_SYNC || c->mma == MMA_WGMMA ? 2 : 1;
    if (!(c->set & CFG_KPAD)) c->kpad = 1;
    if (!(c->set & CFG_WARP_M)) c->warp_m = 1;
    if (c->mma == MMA_SYNC) {
        /* hand-swept on an H200 (tools/sweep.sh, results/nvidia-h200): 4 warps of 2 x 16
         * rows, 64-key tiles, two stages for prefill; one warp and split-KV over packed
         * GQA heads for decode */
        int decode = (long)s->sq * (c->pack_gqa ? s->hq / s->hkv : 1) <= 16;
        /* decode up to d = 128 takes cuDNN's form: four warps share a 16-row block's keys
         * (32 each, 64 at d <= 64), three stages deep, and merge in shared memory. On an
         * H100 every B=16 llama decode class tuned to 2 or 4 such warps with 3 stages and
         * no split (results/nvidia-h100-80gb-hbm3, stop 42) */
        const int key_warps = decode && s->d <= 128 && !shape_paged(s) &&
                              !(c->set & (CFG_KV_WARPS | CFG_NUM_WARPS | CFG_BLOCK_M | CFG_WARP_M));
        if (key_warps) {
            c->kv_warps = 4;
            if (!(c->set & CFG_STAGES)) c->stages = 3;
        }
        if (!(c->set & CFG_WARP_M) && !(c->set & CFG_NUM_WARPS) && !(c->set & CFG_BLOCK_M))
            c->warp_m = decode || s->d > 128 ? 1 : 2;
        int rows = 16 * c->warp_m, kvw = kconfig_kv_warps(c);
        if (!(c->set & CFG_NUM_WARPS))
            c->num_warps = kvw * ((c->set & CFG_BLOCK_M) ? (c->block_m >= rows ? c->block_m / rows : 1) : decode ? 1 : 4);
        if (!(c->set & CFG_BLOCK_M)) c->block_m = rows * (c->num_warps / kvw > 0 ? c->num_warps / kvw : 1);
        /* with KV_WARPS the step's keys stay the same, shared out among the warps (16 at least) */
        const int step = s->d > 128 ? 32 : 64;
        if (!(c->set & CFG_BLOCK_N)) c->block_n = key_warps ? (s->d <= 64 ? 64 : 32) : step / kvw >= 16 ? step / kvw : 16;
        /* within the device's shared memory: fewer stages, then shorter tiles */
        if (key_warps && dev->shared_bytes > 0) {
            while (!(c->set & CFG_STAGES) && c->stages > 2 && kconfig_shared_bytes(c, s->d) > dev->shared_bytes) c->stages--;
            while (!(c->set & CFG_BLOCK_N) && c->block_n > 16 && kconfig_shared_bytes(c, s->d) > dev->shared_bytes) c->block_n /= 2;
        }
        goto split;
    }
    if (c->mma == MMA_WGMMA) {
        /* untuned guesses (never run on a GPU yet): two warpgroups of 64 rows for prefill,
         * one for decode; 128-key tiles up to d = 128 (registers: 64 x 128 scores and
         * 64 x d outputs per warpgroup), 64 beyond */
        int decode = (long)s->sq * (c->pack_gqa ? s->hq / s->hkv : 1) <= 64;
        if (!(c->set & CFG_NUM_WARPS))
            c->num_warps = (c->set & CFG_BLOCK_M) ? (c->block_m >= 64 ? c->block_m / 64 : 1) * 4 : decode ? 4 : 8;
        if (!(c->set & CFG_BLOCK_M)) c->block_m = 16 * c->num_warps;
        if (!(c->set & CFG_BLOCK_N)) c->block_n = s->d > 128 ? 64 : 128;
        /* the unswizzled layout conflicts on shared-memory banks: 259 against 436 TFLOP/s on
         * the H200's reference shape (tests/test_wgmma_probe.c) */
        if (!(c->set & CFG_WG_SWIZZLE)) c->wg_swizzle = 1;
        goto split;
    }
    if (c->mma == MMA_MFMA) {
        /* untuned guesses (no AMD GPU has run this yet): four 64-lane wavefronts of 16 rows
         * for prefill, one wavefront for decode; 64-key tiles (32 past d = 128: 64 KiB LDS) */
        int decode = (long)s->sq * (c->pack_gqa ? s->hq / s->hkv : 1) <= 16;
        int rows = 16 * c->warp_m;
        if (!(c->set & CFG_NUM_WARPS))
            c->num_warps = (c->set & CFG_BLOCK_M) ? 2 * (c->block_m >= rows ? c->block_m / rows : 1) : decode ? 2 : 8;
        if (!(c->set & CFG_BLOCK_M)) c->block_m = rows * (c->num_warps / 2 > 0 ? c->num_warps / 2 : 1);
        if (!(c->set & CFG_BLOCK_N)) c->block_n = s->d > 128 ? 32 : 64;
        goto split;
    }
    if (!(c->set & CFG_NUM_WARPS)) c->num_warps = 4;
    static const int tiles[][2] = {{64, 64}, {64, 32}, {32, 32}, {32, 16}, {16, 16}, {16, 8}};
    size_t limit = dev->static_shared_bytes ? dev->static_shared_bytes : 48 * 1024;
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
        kconfig t = *c;
        if (!(c->set & CFG_BLOCK_M)) t.block_m = tiles[i][0];
        if (!(c->set & CFG_BLOCK_N)) t.block_n = tiles[i][1];
        /* short query ranges (decode) waste a large BLOCK_M */
        if (!(c->set & CFG_BLOCK_M) && s->sq <= 16) t.block_m = 16;
        if (kconfig_shared_bytes(&t, s->d) <= limit || i + 1 == sizeof tiles / sizeof tiles[0]) {
            c->block_m = t.block_m;
            c->block_n = t.block_n;
            break;
        }
    }
split:
    /* a paged cache: a key tile must not straddle two pages */
    if (shape_paged(s) && !(c->set & CFG_BLOCK_N) && c->block_n > s->page) c->block_n = s->page;
    if (!(c->set & CFG_SPLIT_KV) && (c->wg_persist || c->wg_ostage)) {
        c->split_kv = 1; /* the persistent work-groups fill the device themselves; O staged whole */
    } else if (!(c->set & CFG_SPLIT_KV) && !shape_ragged(s)) {
        /* flash-decoding: enough work-groups to fill the device four times over (an
         * H200 decode sweep: 64 x 8 KV heads ran 1.3x faster split in two). Prefill only
         * splits a grid that leaves compute units idle: each work-group already walks
         * many key tiles, and the partial results cost a second pass (on an H100, B=1
         * S=1024 prefill at SPLIT_KV=3 ran 77-144 TFLOP/s, at 1 217-283:
         * results/nvidia-h100-80gb-hbm3/probes/test_packed_small-c38h-*.log) */
        size_t grid[3];
        c->split_kv = 1;
        kconfig_grid(c, s, grid);
        long groups = (long)(grid[0] * grid[1]);
        const int decode = s->sq <= 16;
        long want = (decode ? 4L : 1L) * (dev->compute_units > 0 ? dev->compute_units : 1);
        /* key warps fill the device with fewer, wider work-groups: two warps per compute
         * unit's worth (on the H100, 128 groups of 4 such warps ran unsplit faster than split in two) */
        if (decode && kconfig_kv_warps(c) > 1) want = (2L * (dev->compute_units > 0 ? dev->compute_units : 1) + kconfig_kv_warps(c) - 1) / kconfig_kv_warps(c);
        const long tile_n = (long)c->block_n * kconfig_kv_warps(c); /* keys a step (KV_WARPS' warps each take BLOCK_N) */
        long tiles_kv = (s->skv + tile_n - 1) / tile_n;
        long split = 1;
        /* prefill rounds down: the split grid stays within the one wave */
        if (groups < want) split = decode ? (want + groups - 1) / groups : want / groups;
        if (split > tiles_kv) split = tiles_kv;
        if (split > 32) split = 32;
        if (split < 1) split = 1;
        c->split_kv = (int)split;
    }
}

status_t kconfig_check(const kconfig *c, const rt_device_info *dev, const shape_t *s, dtype_t dt,
                       char *reason, size_t len)
{
    int nt = kconfig_threads(c);
    if (shape_ragged(s) && (c->mma == MMA_MFMA || c->split_kv != 1 || c->pack_gqa)) {
        snprintf(reason, len, "a ragged batch (lens) runs on MMA=fma, mma or wgmma with SPLIT_KV=1 and PACK_GQA=0 only (got %s)",
                 c->mma == MMA_MFMA ? "MMA=mfma" : c->split_kv != 1 ? "SPLIT_KV>1" : "PACK_GQA>0");
        return ST_UNSUPPORTED;
    }
    if (c->pack_gqa >= 2 && (s->sq % 64 || c->block_m % 64)) {
        snprintf(reason, len, "PACK_GQA=%d packs whole 64-row stripes: it needs Sq %% 64 = 0 and BLOCK_M %% 64 = 0 (got Sq %d, BLOCK_M %d)",
                 c->pack_gqa, s->sq, c->block_m);
        return ST_UNSUPPORTED;
    }
    if (shape_paged(s) && (c->mma == MMA_MFMA || s->page % c->block_n)) {
        snprintf(reason, len, "a paged KV cache needs %s",
                 c->mma == MMA_MFMA ? "MMA=fma, mma or wgmma (not mfma yet)" : "BLOCK_N dividing the page size");
        return ST_UNSUPPORTED;
    }
    if (!is_pow2(c->block_n) && c->mma != MMA_WGMMA) {
        snprintf(reason, len, "BLOCK_N=%d (not a power of two) applies to MMA=wgmma only", c->block_n);
        return ST_UNSUPPORTED;
    }
    if (c->mask_bound && c->mma != MMA_SYNC && c->mma != MMA_WGMMA) {
        snprintf(reason, len, "MASK_BOUND=1 applies to MMA=mma and MMA=wgmma only (their mask over score fragments)");
        return ST_UNSUPPORTED;
    }
    if (kconfig_kv_warps(c) > 1 && c->mma != MMA_SYNC) {
        snprintf(reason, len, "KV_WARPS > 1 applies to MMA=mma only");
        return ST_UNSUPPORTED;
    }
    if (c->split_fuse && c->split_kv < 2) {
        snprintf(reason, len, "SPLIT_FUSE=1 needs SPLIT_KV > 1 (it merges the splits' partial rows in the same launch)");
        return ST_UNSUPPORTED;
    }
    if (c->split_fuse && c->wg_ws) {
        snprintf(reason, len, "SPLIT_FUSE=1 needs WG_WS=0 (the merge's work-group barriers need every thread, and the producer warpgroup has left)");
        return ST_UNSUPPORTED;
    }
    if (c->red_split && c->mma != MMA_SYNC && c->mma != MMA_WGMMA) {
        snprintf(reason, len, "RED_SPLIT=1 applies to MMA=mma and MMA=wgmma only (their softmax over score fragments)");
        return ST_UNSUPPORTED;
    }
    if (c->mma != MMA_WGMMA)
        for (size_t i = 0; i < N_WG_FLAGS; i++)
            if (wg_flag_get(c, i)) {
                snprintf(reason, len, "%s applies to MMA=wgmma only", wg_flags[i].key);
                return ST_UNSUPPORTED;
            }
    if (c->wg_half && c->mma != MMA_WGMMA) {
        snprintf(reason, len, "WG_HALF=%d applies to MMA=wgmma only", c->wg_half);
        return ST_UNSUPPORTED;
    }
    if (c->wg_ws && !c->wg_tma) {
        snprintf(reason, len, "WG_WS=1 needs WG_TMA=1 (its producer warpgroup issues the copy engine's loads)");
        return ST_UNSUPPORTED;
    }
    if (c->grid_lpt && (shape_ragged(s) || shape_paged(s))) {
        snprintf(reason, len, "GRID_LPT=1 needs a dense batch (not ragged or paged: their blocks are found per sequence)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_pingpong && (!c->wg_ws || (c->num_warps != 8 && c->num_warps != 12))) {
        snprintf(reason, len, "WG_PINGPONG=1 needs WG_WS=1 and two or three consumer warpgroups (NUM_WARPS=8 or 12)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_defer && !c->wg_pipe) {
        snprintf(reason, len, "WG_DEFER=1 needs WG_PIPE=1 (it moves the rescale of O that WG_PIPE puts after the softmax)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_pvturn && !(c->wg_pipe && c->wg_pingpong)) {
        snprintf(reason, len, "WG_PVTURN=1 needs WG_PIPE=1 and WG_PINGPONG=1 (it widens the ping-pong turn to the previous tile's P V)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_holdpv && !c->wg_pipe) {
        snprintf(reason, len, "WG_HOLDPV=1 needs WG_PIPE=1 (it places the wait for the previous tile's P V)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_sinflight && !c->wg_defer) {
        snprintf(reason, len, "WG_SINFLIGHT=1 needs WG_DEFER=1 (it concerns the deferred rescale of O)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_ostage && (c->split_kv != 1 || c->wg_qprefetch)) {
        snprintf(reason, len, "WG_OSTAGE=1 needs SPLIT_KV=1 and no WG_QPREFETCH (whose next Q rows would land where O is staged)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_dynamic && !c->wg_persist) {
        snprintf(reason, len, "WG_DYNAMIC=1 needs WG_PERSIST=1 (it schedules the persistent work-groups' query blocks)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_qearly && (!c->wg_ws || c->wg_persist)) {
        snprintf(reason, len, "WG_QEARLY=1 needs WG_WS=1 without WG_PERSIST (whose warpgroups load Q that way already)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_qtma && (!c->wg_tma || !c->wg_ws || c->wg_persist || c->wg_qearly || c->pack_gqa || shape_ragged(s) || shape_paged(s))) {
        snprintf(reason, len, "WG_QTMA=1 needs WG_TMA=1 and WG_WS=1 (the producer thread loads Q), no WG_PERSIST or WG_QEARLY (whose "
                              "warpgroups load their own Q rows), PACK_GQA=0 and a dense batch (Q's tensor map is [B * HQ] heads of SQ rows)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_qtma && c->block_m > 256) {
        snprintf(reason, len, "WG_QTMA=1 needs BLOCK_M <= 256 (a bulk tensor copy's box is at most 256 rows; got %d)", c->block_m);
        return ST_UNSUPPORTED;
    }
    if (c->wg_otma && (!c->wg_ostage || !c->wg_tma || c->pack_gqa || shape_ragged(s) || shape_paged(s))) {
        snprintf(reason, len, "WG_OTMA=1 needs WG_OSTAGE=1 (it stores the staged rows), WG_TMA=1, PACK_GQA=0 and a dense batch "
                              "(O's tensor map is [B * HQ] heads of SQ rows)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_skip && (!c->wg_ws || c->wg_pipe)) {
        snprintf(reason, len, "WG_SKIP=1 needs WG_WS=1 and no WG_PIPE (a skipped tile's warpgroup only takes its turn and releases the stage)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_half && !c->wg_skip) {
        snprintf(reason, len, "WG_HALF=%d needs WG_SKIP=1 (its bound on the warpgroup's keys)", c->wg_half);
        return ST_UNSUPPORTED;
    }
    if (c->wg_half == 2 && c->block_n != 128 && c->block_n != 192 && c->block_n != 256) {
        snprintf(reason, len, "WG_HALF=2 needs BLOCK_N = 128, 192 or 256 (half a tile's S is a wgmma width)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_qprefetch && !c->wg_persist) {
        snprintf(reason, len, "WG_QPREFETCH=1 needs WG_PERSIST=1 (it fetches the next query block's Q rows)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_kvsplit && !c->wg_ws) {
        snprintf(reason, len, "WG_KVSPLIT=1 needs WG_WS=1 (its producer warpgroup waits for K and V apart)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_persist && (!c->wg_ws || c->split_kv != 1 || c->grid_lpt)) {
        snprintf(reason, len, "WG_PERSIST=1 needs WG_WS=1 and SPLIT_KV=1 (its producer walks whole query blocks), and no GRID_LPT (it keeps an order of its own)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_tma && (shape_paged(s) || !c->wg_swizzle)) {
        snprintf(reason, len, "WG_TMA=1 needs WG_SWIZZLE=1 and K and V not paged (not a paged batch yet)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_persist && shape_ragged(s)) {
        snprintf(reason, len, "WG_PERSIST=1 needs a dense batch (its walk over query blocks knows no sequence lengths yet)");
        return ST_UNSUPPORTED;
    }
    if (c->wg_tma && !(dev->features & RT_FEAT_TMA)) {
        snprintf(reason, len, "WG_TMA=1 needs the bulk tensor copy engine (sm_90) and a driver with cuTensorMapEncodeTiled");
        return ST_UNSUPPORTED;
    }
    if (c->mma == MMA_SYNC) {
        if (!(dev->features & RT_FEAT_MMA_SYNC)) {
            snprintf(reason, len, "MMA=mma needs NVIDIA tensor cores (sm_80+) through the cuda runtime");
            return ST_UNSUPPORTED;
        }
        if (dt == DT_FP32) { snprintf(reason, len, "MMA=mma needs fp16 or bf16"); return ST_UNSUPPORTED; }
        const int kvw = kconfig_kv_warps(c);
        if (c->num_warps % kvw || c->block_m * kvw != 16 * c->warp_m * c->num_warps) {
            snprintf(reason, len, "MMA=mma needs BLOCK_M = 16 * WARP_M * NUM_WARPS / KV_WARPS (got %d, %d, %d, %d)", c->block_m,
                     c->warp_m, c->num_warps, kvw);
            return ST_UNSUPPORTED;
        }
        if (kvw > 1 && shape_paged(s)) {
            snprintf(reason, len, "KV_WARPS > 1 does not read a paged KV cache yet");
            return ST_UNSUPPORTED;
        }
        /* the warps' merge at the end: every warp's rows' maxima, sums and outputs in floats */
        if (kvw > 1 && (size_t)c->num_warps * 16 * (size_t)c->warp_m * (size_t)(s->d + 2) * 4 > kconfig_shared_bytes(c, s->d)) {
            snprintf(reason, len, "KV_WARPS=%d: the warps' merge needs more shared memory than the tiles take (more STAGES or a larger BLOCK_N)", kvw);
            return ST_UNSUPPORTED;
        }
        if (c->block_n % 16) { snprintf(reason, len, "MMA=mma needs BLOCK_N a multiple of 16"); return ST_UNSUPPORTED; }
    } else if (c->mma == MMA_WGMMA) {
        if (!(dev->features & RT_FEAT_WGMMA)) {
            snprintf(reason, len, "MMA=wgmma needs an NVIDIA Hopper GPU (compute capability 9.0, sm_90a) through the cuda runtime");
            return ST_UNSUPPORTED;
        }
        if (dt == DT_FP32) { snprintf(reason, len, "MMA=wgmma needs fp16 or bf16"); return ST_UNSUPPORTED; }
        if (c->num_warps % 4 || c->warp_m != 1 || c->block_m != 16 * c->num_warps) {
            snprintf(reason, len, "MMA=wgmma needs whole warpgroups: NUM_WARPS a multiple of 4, WARP_M=1 and BLOCK_M = 16 * NUM_WARPS "
                     "(64 rows per warpgroup; got BLOCK_M=%d, NUM_WARPS=%d, WARP_M=%d)", c->block_m, c->num_warps, c->warp_m);
            return ST_UNSUPPORTED;
        }
        if (c->block_n != 64 && c->block_n != 128 && c->block_n != 176 && c->block_n != 192 && c->block_n != 256) {
            snprintf(reason, len, "MMA=wgmma needs BLOCK_N 64, 128, 176, 192 or 256 (got %d)", c->block_n);
            return ST_UNSUPPORTED;
        }
        if (s->d != 64 && s->d != 80 && s->d != 96 && s->d != 128 && s->d != 256) {
            snprintf(reason, len, "MMA=wgmma supports head dims 64, 80, 96, 128 and 256 (got %d)", s->d);
            return ST_UNSUPPORTED;
        }
        if (c->wg_tma && s->d % 16) {
            snprintf(reason, len, "WG_TMA=1 needs a head dim that is a multiple of 16 (got %d)", s->d);
            return ST_UNSUPPORTED;
        }
        if (c->wg_pipe && c->stages < (c->wg_ws ? 2 : 3)) {
            /* P V of tile j-1 still reads its V stage while tile j is current: two stages
             * are held, and without a producer warpgroup a third takes the next tile */
            snprintf(reason, len, "WG_PIPE=1 needs STAGES >= %d%s (got %d)", c->wg_ws ? 2 : 3, c->wg_ws ? " with WG_WS=1" : "", c->stages);
            return ST_UNSUPPORTED;
        }
    } else if (c->mma == MMA_MFMA) {
        if (!(dev->features & RT_FEAT_MFMA)) {
            snprintf(reason, len, "MMA=mfma needs AMD matrix cores (gfx90a, gfx94x) through the hip runtime");
            return ST_UNSUPPORTED;
        }
        if (dt == DT_FP32) { snprintf(reason, len, "MMA=mfma needs fp16 or bf16"); return ST_UNSUPPORTED; }
        if (c->num_warps % 2 || c->block_m != 16 * c->warp_m * (c->num_warps / 2)) {
            snprintf(reason, len, "MMA=mfma needs an even NUM_WARPS and BLOCK_M = 16 * WARP_M * NUM_WARPS / 2 (got %d, %d, %d)",
                     c->block_m, c->warp_m, c->num_warps);
            return ST_UNSUPPORTED;
        }
        if (c->block_n % 16) { snprintf(reason, len, "MMA=mfma needs BLOCK_N a multiple of 16"); return ST_UNSUPPORTED; }
        if (c->stages > 2) { snprintf(reason, len, "MMA=mfma takes STAGES 1 or 2"); return ST_UNSUPPORTED; }
    } else if (c->stages != 1 || c->warp_m != 1) {
        snprintf(reason, len, "STAGES and WARP_M apply to MMA=mma and MMA=mfma only");
        return ST_UNSUPPORTED;
    }
    const int nw = c->num_warps * 32; /* the threads that share the tile (WG_WS's producer warp aside) */
    if (!(nw % c->block_m == 0 || c->block_m % nw == 0)) {
        snprintf(reason, len, "NUM_WARPS*32=%d and BLOCK_M=%d: one must divide the other", nw, c->block_m);
        return ST_UNSUPPORTED;
    }
    if (dev->max_group_size && (size_t)nt > dev->max_group_size) {
        snprintf(reason, len, "%d threads per group > device limit %zu", nt, dev->max_group_size);
        return ST_RESOURCE_LIMIT;
    }
    size_t grid[3];
    kconfig_grid(c, s, grid);
    if ((double)s->batch * s->hq * s->sq > 2147483647.0 || (double)shape_out_rows(s) > 2147483647.0 || (double)kconfig_rows(c, s) + c->block_m > 2147483647.0) {
        snprintf(reason, len, "more than 2^31-1 query rows: the kernel indexes rows with 32-bit integers");
        return ST_UNSUPPORTED;
    }
    if ((double)s->skv + 2.0 * c->block_n * (c->kv_warps > 1 ? c->kv_warps : 1) > 2147483647.0 ||
        (shape_ragged(s) && (double)shape_total_kv(s) > 2147483647.0)) {
        snprintf(reason, len, "more than 2^31 keys a sequence (or in a ragged batch): the kernel counts keys with 32-bit integers");
        return ST_UNSUPPORTED;
    }
    /* a persistent grid is launched as min(items, compute units) x 1 (attn.c), whatever B x H */
    if (dev->max_grid[1] && grid[1] > dev->max_grid[1] && !c->wg_persist) {
        snprintf(reason, len, "%zu work-groups along grid dimension 1 (batch x heads) > device limit %zu%s", grid[1],
                 dev->max_grid[1], c->pack_gqa ? "" : "; PACK_GQA=1 may fit");
        return ST_UNSUPPORTED;
    }
    if (dev->max_grid[2] && grid[2] > dev->max_grid[2]) {
        snprintf(reason, len, "SPLIT_KV=%zu > device grid limit %zu", grid[2], dev->max_grid[2]);
        return ST_UNSUPPORTED;
    }
    size_t sh = kconfig_shared_bytes(c, s->d);
    /* mma and wgmma: SPLIT_FUSE's flag is static shared memory beside the dynamic tiles
     * (ptxas rounds it to 16 bytes), which kconfig_dynamic_shared leaves out */
    if (c->split_fuse && (c->mma == MMA_SYNC || c->mma == MMA_WGMMA)) sh += 16;
    size_t sh_limit = c->mma == MMA_SYNC || c->mma == MMA_WGMMA ? dev->shared_bytes : dev->static_shared_bytes;
    if (sh_limit && sh > sh_limit) {
        snprintf(reason, len, "needs %zu bytes of shared memory > device limit %zu", sh, sh_limit);
        return ST_RESOURCE_LIMIT;
    }
    return ST_OK;
}
