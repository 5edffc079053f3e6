/* config.c: parsing, printing, defaults and static checks of kernel configurations. */
#define _GNU_SOURCE
#include "config.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int parse_int(const char *v, int lo, int hi, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < lo || x > hi) return -1;
    *out = (int)x;
    return 0;
}

static int is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }
static int block_m_ok(int v) { return is_pow2(v) || v % 16 == 0; } /* or 16 * WARP_M * NUM_WARPS rows */
static int block_n_ok(int v) { return is_pow2(v) || v == 176 || v == 192; } /* 176 and 192: wgmma only */

#define FB_KNOB_ROW(KEY, field, type, lo, hi, ok, allowed, kinds, show, off, feat, fdiv, names, group, values_doc, takes_doc, \
                    doc)                                                                                            \
    {#KEY, lo, hi, ok, allowed, kinds, show, off, feat, fdiv, names, group, values_doc, takes_doc, doc},
static const knob_info knob_table[KNOB_COUNT] = {FB_KNOBS(FB_KNOB_ROW)};
#undef FB_KNOB_ROW

const knob_info *knob(knob_id k) { return &knob_table[k]; }

#define FB_KNOB_GET(KEY, field, ...) \
    case KNOB_##KEY: return (int)c->field;
int kconfig_get(const kconfig *c, knob_id k)
{
    switch (k) {
        FB_KNOBS(FB_KNOB_GET)
    case KNOB_COUNT: break;
    }
    return 0;
}
#undef FB_KNOB_GET

#define FB_KNOB_SET(KEY, field, type, ...) \
    case KNOB_##KEY: c->field = (type)v; break;
void kconfig_set(kconfig *c, knob_id k, int v)
{
    switch (k) {
        FB_KNOBS(FB_KNOB_SET)
    case KNOB_COUNT: break;
    }
}
#undef FB_KNOB_SET

int kconfig_value(const kconfig *c, knob_id k)
{
    const int v = kconfig_get(c, k);
    return knob_table[k].show == SHOW_ON && v < knob_table[k].off ? knob_table[k].off : v;
}

int kconfig_shows(const kconfig *c, knob_id k)
{
    switch (knob_table[k].show) {
    case SHOW_ALWAYS: return 1;
    case SHOW_WGMMA: return c->mma == MMA_WGMMA;
    case SHOW_ON: return kconfig_value(c, k) != knob_table[k].off;
    }
    return 1;
}

/* The i-th name of a names list ("fma mma|mma_sync ..."): its first spelling into out. */
static int knob_name_of(const char *names, int i, char *out, size_t outlen)
{
    for (const char *p = names; *p; i--) {
        size_t word = strcspn(p, " "), first = strcspn(p, " |");
        if (i == 0) {
            snprintf(out, outlen, "%.*s", (int)first, p);
            return 0;
        }
        p += word;
        p += *p == ' ';
    }
    return -1;
}

/* The value a name (or one of its spellings) stands for in a names list; -1 when none. */
static int knob_name_value(const char *names, const char *v)
{
    int i = 0;
    for (const char *p = names; *p; i++) {
        size_t word = strcspn(p, " ");
        for (const char *q = p; q < p + word;) {
            size_t n = strcspn(q, " |");
            if (n == strlen(v) && !strncasecmp(q, v, n)) return i;
            q += n;
            q += *q == '|';
        }
        p += word;
        p += *p == ' ';
    }
    return -1;
}

int knob_find(const char *key)
{
    for (int i = 0; i < KNOB_COUNT; i++)
        if (!strcasecmp(key, knob_table[i].key)) return i;
    return -1;
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

/* Sets knob k to text v in *c. NULL, or the values k allows (v is not one of them). */
static const char *parse_knob(kconfig *c, knob_id k, const char *v)
{
    const knob_info *kn = &knob_table[k];
    int x = kn->names ? knob_name_value(kn->names, v) : -1;
    c->set |= UINT64_C(1) << k;
    if (x < 0 && (parse_int(v, kn->lo, kn->hi, &x) || (kn->ok && !kn->ok(x)))) return kn->allowed;
    kconfig_set(c, k, x);
    return NULL;
}

/* Sets key k to text v in *c. NULL, or the values k allows (v is not one of them); an
 * unknown key gives "". */
static const char *parse_key(kconfig *c, const char *k, const char *v)
{
    int i;
    if ((i = knob_find(k)) >= 0) return parse_knob(c, (knob_id)i, v);
    if ((i = fault_hook_index(k)) >= 0) {
        c->set |= CFG_FAULT;
        return parse_int(v, 0, 1, fault_hook(c, (size_t)i)) ? "0 or 1" : NULL;
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
            size_t o = (size_t)snprintf(err, errlen, "unknown key '%s' (known: ", k);
            for (int i = 0; i < KNOB_COUNT && o < errlen; i++) o += (size_t)snprintf(err + o, errlen - o, "%s, ", knob_table[i].key);
            if (o < errlen) snprintf(err + o, errlen - o, "FAULT_*)");
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
    for (int k = 0; k < KNOB_COUNT; k++)
        if (src->set & (UINT64_C(1) << k)) kconfig_set(dst, (knob_id)k, kconfig_get(src, (knob_id)k));
    dst->set |= src->set;
    for (size_t i = 0; i < N_FAULT_HOOKS; i++)
        if (fault_hook_get(src, i)) *fault_hook(dst, i) = 1;
}

int kconfig_distance(const kconfig *a, const kconfig *b)
{
    int d = 0;
    for (int k = 0; k < KNOB_COUNT; k++) d += kconfig_value(a, (knob_id)k) != kconfig_value(b, (knob_id)k);
    return d;
}

void kconfig_features(const kconfig *c, double f[KNOB_COUNT])
{
    for (int k = 0; k < KNOB_COUNT; k++) {
        const knob_info *kn = &knob_table[k];
        const int v = kconfig_value(c, (knob_id)k);
        f[k] = kn->feat == FEAT_ON ? (double)(v != 0)
             : kn->feat == FEAT_LOG2 ? log2((double)v) / kn->fdiv
                                     : (double)(v - kn->lo) / kn->fdiv;
    }
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

/* A knob's value as text: its name (MMA) or its number */
static void knob_text(const kconfig *c, knob_id k, char *out, size_t outlen)
{
    const int v = kconfig_get(c, k);
    if (!knob_table[k].names || knob_name_of(knob_table[k].names, v, out, outlen)) snprintf(out, outlen, "%d", v);
}

void kconfig_str(const kconfig *c, char *out, size_t outlen)
{
    size_t o = 0;
    int n = 0;
    out[0] = 0;
    for (int k = 0; k < KNOB_COUNT && n >= 0 && o < outlen; k++) {
        if (!kconfig_shows(c, (knob_id)k)) continue;
        char v[32];
        knob_text(c, (knob_id)k, v, sizeof v);
        n = snprintf(out + o, outlen - o, "%s%s=%s", o ? ";" : "", knob_table[k].key, v);
        o += n > 0 ? (size_t)n : 0;
    }
    if (kconfig_fault(c) && n >= 0 && o < outlen) {
        n = snprintf(out + o, outlen - o, ";%s=1", kconfig_fault(c));
        o += n > 0 ? (size_t)n : 0;
    }
    if (n < 0 || o >= outlen) { /* a cut name would be recorded as another configuration */
        fprintf(stderr, "fabench: internal error: a configuration's text needs more than the %zu bytes of its buffer\n", outlen);
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
    if (!(c->set & CFG(PACK_GQA))) c->pack_gqa = s->hq > s->hkv && s->sq <= 16;
    if (!(c->set & CFG(MMA))) c->mma = (dev->features & RT_FEAT_MMA_SYNC) && dt != DT_FP32 ? MMA_SYNC : MMA_FMA;
    if (!(c->set & CFG(MMA)) && (dev->features & RT_FEAT_MFMA) && dt != DT_FP32) c->mma = MMA_MFMA;
    /* Hopper: wgmma for dense prefill it can tile (64 query rows per warpgroup, head dims
     * 64/128/256, 64-key tiles within a page). On the H200 the untuned wgmma default ran the
     * reference shapes at 425 and 386 TFLOP/s against mma's 337 and 312; decode stays on mma
     * (split-KV over packed heads, 16 rows). */
    if (!(c->set & CFG(MMA)) && (dev->features & RT_FEAT_WGMMA) && dt != DT_FP32 && !shape_ragged(s) &&
        s->sq >= 64 && (s->d == 64 || s->d == 128 || s->d == 256) && (!shape_paged(s) || s->page % 64 == 0))
        c->mma = MMA_WGMMA;
    /* ragged batches and a paged KV cache have no mfma tiles */
    if ((shape_ragged(s) || shape_paged(s)) && !(c->set & CFG(MMA)) && c->mma == MMA_MFMA) c->mma = MMA_FMA;
    if (shape_ragged(s)) { /* VARLEN: one work-group per (m-block, sequence, head); fma or mma */
        if (!(c->set & CFG(PACK_GQA))) c->pack_gqa = 0;
        if (!(c->set & CFG(SPLIT_KV))) c->split_kv = 1; /* and no split below */
    }
    if (!(c->set & CFG(STAGES))) c->stages = c->mma == MMA_SYNC || c->mma == MMA_WGMMA ? 2 : 1;
    if (!(c->set & CFG(KPAD))) c->kpad = 1;
    if (!(c->set & CFG(WARP_M))) c->warp_m = 1;
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
                              !(c->set & (CFG(KV_WARPS) | CFG(NUM_WARPS) | CFG(BLOCK_M) | CFG(WARP_M)));
        if (key_warps) {
            c->kv_warps = 4;
            if (!(c->set & CFG(STAGES))) c->stages = 3;
        }
        if (!(c->set & CFG(WARP_M)) && !(c->set & CFG(NUM_WARPS)) && !(c->set & CFG(BLOCK_M)))
            c->warp_m = decode || s->d > 128 ? 1 : 2;
        int rows = 16 * c->warp_m, kvw = kconfig_kv_warps(c);
        if (!(c->set & CFG(NUM_WARPS)))
            c->num_warps = kvw * ((c->set & CFG(BLOCK_M)) ? (c->block_m >= rows ? c->block_m / rows : 1) : decode ? 1 : 4);
        if (!(c->set & CFG(BLOCK_M))) c->block_m = rows * (c->num_warps / kvw > 0 ? c->num_warps / kvw : 1);
        /* with KV_WARPS the step's keys stay the same, shared out among the warps (16 at least) */
        const int step = s->d > 128 ? 32 : 64;
        if (!(c->set & CFG(BLOCK_N))) c->block_n = key_warps ? (s->d <= 64 ? 64 : 32) : step / kvw >= 16 ? step / kvw : 16;
        /* within the device's shared memory: fewer stages, then shorter tiles */
        if (key_warps && dev->shared_bytes > 0) {
            while (!(c->set & CFG(STAGES)) && c->stages > 2 && kconfig_shared_bytes(c, s->d) > dev->shared_bytes) c->stages--;
            while (!(c->set & CFG(BLOCK_N)) && c->block_n > 16 && kconfig_shared_bytes(c, s->d) > dev->shared_bytes) c->block_n /= 2;
        }
        goto split;
    }
    if (c->mma == MMA_WGMMA) {
        /* untuned guesses (never run on a GPU yet): two warpgroups of 64 rows for prefill,
         * one for decode; 128-key tiles up to d = 128 (registers: 64 x 128 scores and
         * 64 x d outputs per warpgroup), 64 beyond */
        int decode = (long)s->sq * (c->pack_gqa ? s->hq / s->hkv : 1) <= 64;
        if (!(c->set & CFG(NUM_WARPS)))
            c->num_warps = (c->set & CFG(BLOCK_M)) ? (c->block_m >= 64 ? c->block_m / 64 : 1) * 4 : decode ? 4 : 8;
        if (!(c->set & CFG(BLOCK_M))) c->block_m = 16 * c->num_warps;
        if (!(c->set & CFG(BLOCK_N))) c->block_n = s->d > 128 ? 64 : 128;
        /* the unswizzled layout conflicts on shared-memory banks: 259 against 436 TFLOP/s on
         * the H200's reference shape (tests/test_wgmma_probe.c) */
        if (!(c->set & CFG(WG_SWIZZLE))) c->wg_swizzle = 1;
        goto split;
    }
    if (c->mma == MMA_MFMA) {
        /* untuned guesses (no AMD GPU has run this yet): four 64-lane wavefronts of 16 rows
         * for prefill, one wavefront for decode; 64-key tiles (32 past d = 128: 64 KiB LDS) */
        int decode = (long)s->sq * (c->pack_gqa ? s->hq / s->hkv : 1) <= 16;
        int rows = 16 * c->warp_m;
        if (!(c->set & CFG(NUM_WARPS)))
            c->num_warps = (c->set & CFG(BLOCK_M)) ? 2 * (c->block_m >= rows ? c->block_m / rows : 1) : decode ? 2 : 8;
        if (!(c->set & CFG(BLOCK_M))) c->block_m = rows * (c->num_warps / 2 > 0 ? c->num_warps / 2 : 1);
        if (!(c->set & CFG(BLOCK_N))) c->block_n = s->d > 128 ? 32 : 64;
        goto split;
    }
    if (!(c->set & CFG(NUM_WARPS))) c->num_warps = 4;
    static const int tiles[][2] = {{64, 64}, {64, 32}, {32, 32}, {32, 16}, {16, 16}, {16, 8}};
    size_t limit = dev->static_shared_bytes ? dev->static_shared_bytes : 48 * 1024;
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
        kconfig t = *c;
        if (!(c->set & CFG(BLOCK_M))) t.block_m = tiles[i][0];
        if (!(c->set & CFG(BLOCK_N))) t.block_n = tiles[i][1];
        /* short query ranges (decode) waste a large BLOCK_M */
        if (!(c->set & CFG(BLOCK_M)) && s->sq <= 16) t.block_m = 16;
        if (kconfig_shared_bytes(&t, s->d) <= limit || i + 1 == sizeof tiles / sizeof tiles[0]) {
            c->block_m = t.block_m;
            c->block_n = t.block_n;
            break;
        }
    }
split:
    /* a paged cache: a key tile must not straddle two pages */
    if (shape_paged(s) && !(c->set & CFG(BLOCK_N)) && c->block_n > s->page) c->block_n = s->page;
    if (!(c->set & CFG(SPLIT_KV)) && (c->wg_persist || c->wg_ostage)) {
        c->split_kv = 1; /* the persistent work-groups fill the device themselves; O staged whole */
    } else if (!(c->set & CFG(SPLIT_KV)) && !shape_ragged(s)) {
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

/* The rules between knobs, and between knobs and the shape, that kconfig_check enforces,
 * in the order it names the first one broken. Each: whether a configuration breaks it, the
 * reason recorded (explain() where it names values), and what kconfig_fit sets so that a
 * tuned row fits a ragged batch (KNOB_COUNT: nothing; the row is refused). */
typedef struct {
    int (*broken)(const kconfig *c, const shape_t *s);
    const char *why;
    void (*explain)(const kconfig *c, const shape_t *s, char *out, size_t len);
    knob_id fix;
    int to;
} kconfig_rule;

static int ragged_mfma(const kconfig *c, const shape_t *s) { return shape_ragged(s) && c->mma == MMA_MFMA; }
static int ragged_split(const kconfig *c, const shape_t *s) { return shape_ragged(s) && c->split_kv > 1; }
static int ragged_pack(const kconfig *c, const shape_t *s) { return shape_ragged(s) && c->pack_gqa; }
static int stripes_misfit(const kconfig *c, const shape_t *s) { return c->pack_gqa >= 2 && (s->sq % 64 || c->block_m % 64); }
static void stripes_explain(const kconfig *c, const shape_t *s, char *out, size_t len)
{
    snprintf(out, len, "PACK_GQA=%d packs whole 64-row stripes: it needs Sq %% 64 = 0 and BLOCK_M %% 64 = 0 (got Sq %d, BLOCK_M %d)",
             c->pack_gqa, s->sq, c->block_m);
}
static int paged_mfma(const kconfig *c, const shape_t *s) { return shape_paged(s) && c->mma == MMA_MFMA; }
/* MMA=fma reads a tile of BLOCK_N contiguous rows; mma and wgmma load a key tile (BLOCK_N x
 * KV_WARPS keys) page by page when it spans whole pages (kernels/common.k, KV_PAGES) */
static int paged_straddle(const kconfig *c, const shape_t *s)
{
    if (!shape_paged(s)) return 0;
    if (c->mma != MMA_SYNC && c->mma != MMA_WGMMA) return s->page % c->block_n != 0;
    const int tile_n = c->block_n * kconfig_kv_warps(c);
    return s->page % tile_n && (tile_n % s->page || tile_n / s->page > 8);
}
static int block_n_odd(const kconfig *c, const shape_t *s) { (void)s; return !is_pow2(c->block_n) && c->mma != MMA_WGMMA; }
static void block_n_odd_explain(const kconfig *c, const shape_t *s, char *out, size_t len)
{
    (void)s;
    snprintf(out, len, "BLOCK_N=%d (not a power of two) applies to MMA=wgmma only", c->block_n);
}
static int knob_kind_broken(const kconfig *c, const shape_t *s);
static void knob_kind_explain(const kconfig *c, const shape_t *s, char *out, size_t len);
static int fuse_unsplit(const kconfig *c, const shape_t *s) { (void)s; return c->split_fuse && c->split_kv < 2; }
static int fuse_ws(const kconfig *c, const shape_t *s) { (void)s; return c->split_fuse && c->wg_ws; }
static int ws_no_tma(const kconfig *c, const shape_t *s) { (void)s; return c->wg_ws && !c->wg_tma; }
static int lpt_not_dense(const kconfig *c, const shape_t *s) { return c->grid_lpt && (shape_ragged(s) || shape_paged(s)); }
static int pingpong_misfit(const kconfig *c, const shape_t *s)
{
    (void)s;
    return c->wg_pingpong && (!c->wg_ws || (c->num_warps != 8 && c->num_warps != 12));
}
static int defer_no_pipe(const kconfig *c, const shape_t *s) { (void)s; return c->wg_defer && !c->wg_pipe; }
static int pvturn_misfit(const kconfig *c, const shape_t *s) { (void)s; return c->wg_pvturn && !(c->wg_pipe && c->wg_pingpong); }
static int holdpv_no_pipe(const kconfig *c, const shape_t *s) { (void)s; return c->wg_holdpv && !c->wg_pipe; }
static int sinflight_no_defer(const kconfig *c, const shape_t *s) { (void)s; return c->wg_sinflight && !c->wg_defer; }
static int ostage_misfit(const kconfig *c, const shape_t *s) { (void)s; return c->wg_ostage && (c->split_kv != 1 || c->wg_qprefetch); }
static int dynamic_alone(const kconfig *c, const shape_t *s) { (void)s; return c->wg_dynamic && !c->wg_persist; }
static int qearly_misfit(const kconfig *c, const shape_t *s) { (void)s; return c->wg_qearly && (!c->wg_ws || c->wg_persist); }
static int qtma_misfit(const kconfig *c, const shape_t *s)
{
    return c->wg_qtma && (!c->wg_tma || !c->wg_ws || c->wg_persist || c->wg_qearly || c->pack_gqa || shape_ragged(s) || shape_paged(s));
}
static int qtma_tall(const kconfig *c, const shape_t *s) { (void)s; return c->wg_qtma && c->block_m > 256; }
static void qtma_tall_explain(const kconfig *c, const shape_t *s, char *out, size_t len)
{
    (void)s;
    snprintf(out, len, "WG_QTMA=1 needs BLOCK_M <= 256 (a bulk tensor copy's box is at most 256 rows; got %d)", c->block_m);
}
static int otma_misfit(const kconfig *c, const shape_t *s)
{
    return c->wg_otma && (!c->wg_ostage || !c->wg_tma || c->pack_gqa || shape_ragged(s) || shape_paged(s));
}
static int skip_misfit(const kconfig *c, const shape_t *s) { (void)s; return c->wg_skip && (!c->wg_ws || c->wg_pipe); }
static int half_no_skip(const kconfig *c, const shape_t *s) { (void)s; return c->wg_half && !c->wg_skip; }
static void half_no_skip_explain(const kconfig *c, const shape_t *s, char *out, size_t len)
{
    (void)s;
    snprintf(out, len, "WG_HALF=%d needs WG_SKIP=1 (its bound on the warpgroup's keys)", c->wg_half);
}
static int half_narrow(const kconfig *c, const shape_t *s)
{
    (void)s;
    return c->wg_half == 2 && c->block_n != 128 && c->block_n != 192 && c->block_n != 256;
}
static int qprefetch_alone(const kconfig *c, const shape_t *s) { (void)s; return c->wg_qprefetch && !c->wg_persist; }
static int kvsplit_no_ws(const kconfig *c, const shape_t *s) { (void)s; return c->wg_kvsplit && !c->wg_ws; }
static int persist_misfit(const kconfig *c, const shape_t *s) { (void)s; return c->wg_persist && (!c->wg_ws || c->split_kv != 1 || c->grid_lpt); }
static int tma_misfit(const kconfig *c, const shape_t *s) { return c->wg_tma && (shape_paged(s) || !c->wg_swizzle); }
static int persist_ragged(const kconfig *c, const shape_t *s) { return c->wg_persist && shape_ragged(s); }

#define RAGGED_ONLY "a ragged batch (lens) runs on MMA=fma, mma or wgmma with SPLIT_KV=1 and PACK_GQA=0 only"
static const kconfig_rule rules[] = {
    {ragged_mfma, RAGGED_ONLY " (got MMA=mfma)", NULL, KNOB_COUNT, 0},
    {ragged_split, RAGGED_ONLY " (got SPLIT_KV>1)", NULL, KNOB_SPLIT_KV, 1},
    {ragged_pack, RAGGED_ONLY " (got PACK_GQA>0)", NULL, KNOB_PACK_GQA, 0},
    {stripes_misfit, NULL, stripes_explain, KNOB_COUNT, 0},
    {paged_mfma, "a paged KV cache needs MMA=fma, mma or wgmma (not mfma yet)", NULL, KNOB_COUNT, 0},
    {paged_straddle, "a paged KV cache needs BLOCK_N dividing the page size (MMA=fma), or a key tile (BLOCK_N x KV_WARPS) in one page or over at most 8 whole pages", NULL, KNOB_COUNT, 0},
    {block_n_odd, NULL, block_n_odd_explain, KNOB_COUNT, 0},
    {knob_kind_broken, NULL, knob_kind_explain, KNOB_COUNT, 0},
    {fuse_unsplit, "SPLIT_FUSE=1 needs SPLIT_KV > 1 (it merges the splits' partial rows in the same launch)", NULL, KNOB_SPLIT_FUSE, 0},
    {fuse_ws, "SPLIT_FUSE=1 needs WG_WS=0 (the merge's work-group barriers need every thread, and the producer warpgroup has left)",
     NULL, KNOB_COUNT, 0},
    {ws_no_tma, "WG_WS=1 needs WG_TMA=1 (its producer warpgroup issues the copy engine's loads)", NULL, KNOB_COUNT, 0},
    {lpt_not_dense, "GRID_LPT=1 needs a dense batch (not ragged or paged: their blocks are found per sequence)", NULL, KNOB_GRID_LPT, 0},
    {pingpong_misfit, "WG_PINGPONG=1 needs WG_WS=1 and two or three consumer warpgroups (NUM_WARPS=8 or 12)", NULL, KNOB_COUNT, 0},
    {defer_no_pipe, "WG_DEFER=1 needs WG_PIPE=1 (it moves the rescale of O that WG_PIPE puts after the softmax)", NULL, KNOB_COUNT, 0},
    {pvturn_misfit, "WG_PVTURN=1 needs WG_PIPE=1 and WG_PINGPONG=1 (it widens the ping-pong turn to the previous tile's P V)", NULL,
     KNOB_COUNT, 0},
    {holdpv_no_pipe, "WG_HOLDPV=1 needs WG_PIPE=1 (it places the wait for the previous tile's P V)", NULL, KNOB_COUNT, 0},
    {sinflight_no_defer, "WG_SINFLIGHT=1 needs WG_DEFER=1 (it concerns the deferred rescale of O)", NULL, KNOB_COUNT, 0},
    {ostage_misfit, "WG_OSTAGE=1 needs SPLIT_KV=1 and no WG_QPREFETCH (whose next Q rows would land where O is staged)", NULL,
     KNOB_COUNT, 0},
    {dynamic_alone, "WG_DYNAMIC=1 needs WG_PERSIST=1 (it schedules the persistent work-groups' query blocks)", NULL, KNOB_WG_DYNAMIC, 0},
    {qearly_misfit, "WG_QEARLY=1 needs WG_WS=1 without WG_PERSIST (whose warpgroups load Q that way already)", NULL, KNOB_COUNT, 0},
    {qtma_misfit,
     "WG_QTMA=1 needs WG_TMA=1 and WG_WS=1 (the producer thread loads Q), no WG_PERSIST or WG_QEARLY (whose warpgroups load their "
     "own Q rows), PACK_GQA=0 and a dense batch (Q's tensor map is [B * HQ] heads of SQ rows)",
     NULL, KNOB_WG_QTMA, 0},
    {qtma_tall, NULL, qtma_tall_explain, KNOB_COUNT, 0},
    {otma_misfit,
     "WG_OTMA=1 needs WG_OSTAGE=1 (it stores the staged rows), WG_TMA=1, PACK_GQA=0 and a dense batch (O's tensor map is [B * HQ] "
     "heads of SQ rows)",
     NULL, KNOB_WG_OTMA, 0},
    {skip_misfit, "WG_SKIP=1 needs WG_WS=1 and no WG_PIPE (a skipped tile's warpgroup only takes its turn and releases the stage)",
     NULL, KNOB_COUNT, 0},
    {half_no_skip, NULL, half_no_skip_explain, KNOB_COUNT, 0},
    {half_narrow, "WG_HALF=2 needs BLOCK_N = 128, 192 or 256 (half a tile's S is a wgmma width)", NULL, KNOB_COUNT, 0},
    {qprefetch_alone, "WG_QPREFETCH=1 needs WG_PERSIST=1 (it fetches the next query block's Q rows)", NULL, KNOB_WG_QPREFETCH, 0},
    {kvsplit_no_ws, "WG_KVSPLIT=1 needs WG_WS=1 (its producer warpgroup waits for K and V apart)", NULL, KNOB_COUNT, 0},
    {persist_misfit,
     "WG_PERSIST=1 needs WG_WS=1 and SPLIT_KV=1 (its producer walks whole query blocks), and no GRID_LPT (it keeps an order of its own)",
     NULL, KNOB_COUNT, 0},
    {tma_misfit, "WG_TMA=1 needs WG_SWIZZLE=1 and K and V not paged (not a paged batch yet)", NULL, KNOB_COUNT, 0},
    {persist_ragged, "WG_PERSIST=1 needs a dense batch (its walk over query blocks knows no sequence lengths yet)", NULL,
     KNOB_WG_PERSIST, 0},
};
#define N_RULES (sizeof rules / sizeof rules[0])

/* The first rule c breaks for shape s: its index and reason; -1 when none */
static int rule_broken(const kconfig *c, const shape_t *s, char *reason, size_t len)
{
    for (size_t i = 0; i < N_RULES; i++) {
        if (!rules[i].broken(c, s)) continue;
        if (rules[i].explain) rules[i].explain(c, s, reason, len);
        else snprintf(reason, len, "%s", rules[i].why);
        return (int)i;
    }
    return -1;
}

int kconfig_fit(kconfig *c, const shape_t *s, uint64_t keep, char *dropped, size_t len)
{
    uint64_t fixed = 0;
    for (int again = 1; again;) { /* a fix can break a rule further on (WG_DYNAMIC after WG_PERSIST) */
        again = 0;
        for (size_t i = 0; i < N_RULES; i++) {
            const kconfig_rule *r = &rules[i];
            if (r->fix == KNOB_COUNT || (keep & (UINT64_C(1) << r->fix)) || !r->broken(c, s)) continue;
            kconfig_set(c, r->fix, r->to);
            fixed |= UINT64_C(1) << r->fix;
            again = 1;
        }
    }
    size_t n = 0;
    if (len) dropped[0] = 0;
    for (int k = 0; k < KNOB_COUNT; k++) /* in the table's order */
        if ((fixed >> k & 1) && n < len)
            n += (size_t)snprintf(dropped + n, len - n, "%s%s=%d", n ? ", " : "", knob_table[k].key, kconfig_get(c, (knob_id)k));
    return fixed != 0;
}

/* A knob set (not `off`) on a tile kind that does not take it (knob_info.kinds): the first,
 * in the table's order; KNOB_COUNT when none. */
static knob_id knob_off_kind(const kconfig *c)
{
    for (int k = 0; k < KNOB_COUNT; k++)
        if (!(knob_table[k].kinds >> c->mma & 1) && kconfig_value(c, (knob_id)k) != knob_table[k].off) return (knob_id)k;
    return KNOB_COUNT;
}

static int knob_kind_broken(const kconfig *c, const shape_t *s)
{
    (void)s;
    return knob_off_kind(c) != KNOB_COUNT;
}

static void knob_kind_explain(const kconfig *c, const shape_t *s, char *out, size_t len)
{
    (void)s;
    const knob_id k = knob_off_kind(c);
    const knob_info *kn = &knob_table[k];
    size_t o = (size_t)snprintf(out, len, "%s=%d applies to", kn->key, kconfig_get(c, k));
    for (int m = 0, first = 1; m <= MMA_WGMMA && o < len; m++)
        if (kn->kinds >> m & 1) {
            char name[16];
            knob_name_of(knob_table[KNOB_MMA].names, m, name, sizeof name);
            o += (size_t)snprintf(out + o, len - o, "%s MMA=%s", first ? "" : " and", name);
            first = 0;
        }
    if (o < len) snprintf(out + o, len - o, " only");
}

status_t kconfig_check(const kconfig *c, const rt_device_info *dev, const shape_t *s, dtype_t dt,
                       char *reason, size_t len)
{
    int nt = kconfig_threads(c);
    if (rule_broken(c, s, reason, len) >= 0) return ST_UNSUPPORTED;
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

/* Writes text to f wrapped at spaces into lines of at most `width` columns, each after indent */
static void print_wrapped(FILE *f, const char *text, const char *indent, int width)
{
    const int room = width - (int)strlen(indent);
    while (*text) {
        int n = (int)strlen(text);
        if (n > room) { /* the last space that fits, else the first one */
            n = room;
            while (n > 0 && text[n] != ' ') n--;
            if (n == 0) n = (int)strcspn(text, " ");
        }
        fprintf(f, "%s%.*s\n", indent, n, text);
        text += n;
        while (*text == ' ') text++;
    }
}

void knobs_print_keys(FILE *f, const char *indent, int width)
{
    char text[4096];
    size_t o = 0;
    for (int k = 0; k < KNOB_COUNT && o < sizeof text; k++) { /* neighbours that take the same values share them */
        const int last = k + 1 == KNOB_COUNT || strcmp(knob_table[k].allowed, knob_table[k + 1].allowed);
        o += (size_t)snprintf(text + o, sizeof text - o, last ? "%s (%s)%s" : "%s, ", knob_table[k].key,
                              knob_table[k].allowed, k + 1 < KNOB_COUNT ? "; " : "");
    }
    print_wrapped(f, text, indent, width);
}

/* The knob table as docs/kernel.md shows it (Markdown) */
void knobs_print_markdown(FILE *f)
{
    fprintf(f, "| key | values | takes it | what it does |\n| --- | --- | --- | --- |\n");
    for (int k = 0; k < KNOB_COUNT; k++)
        fprintf(f, "| `%s` | %s | %s | %s |\n", knob_table[k].key, knob_table[k].values_doc, knob_table[k].takes_doc,
                knob_table[k].doc);
}
