/* fallback.c: regimes and features of a shape, fallback.csv's rules (read, written, matched),
 * a rule's configuration made for a shape, the per-regime defaults, and the pick that
 * `run --tuned` makes for a shape without a tuned class. */
#define _GNU_SOURCE
#include "fallback.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

static const char *const regime_names[FB_NREG] = {"decode", "short-prefill", "long-prefill", "ragged", "paged"};
static const char *const feature_names[FB_NFEAT] = {"decode", "d", "gqa", "causal", "sq", "skv", "kvq", "fill"};

fb_regime fallback_regime(const shape_t *s)
{
    if (shape_paged(s)) return FB_REG_PAGED;
    if (shape_ragged(s)) return FB_REG_RAGGED;
    if (s->sq <= TUNE_DECODE_MAX_SQ) return FB_REG_DECODE;
    return s->sq <= FALLBACK_SHORT_MAX_SQ ? FB_REG_SHORT : FB_REG_LONG;
}

const char *fallback_regime_name(fb_regime r) { return r >= 0 && r < FB_NREG ? regime_names[r] : "?"; }

int fallback_regime_parse(const char *name, fb_regime *out)
{
    for (int r = 0; r < FB_NREG; r++)
        if (!strcmp(name, regime_names[r])) {
            *out = (fb_regime)r;
            return 0;
        }
    return -1;
}

int fallback_decode_like(const shape_t *s)
{
    if (shape_ragged(s)) return tune_decode_share(s) >= 50;
    return s->sq <= TUNE_DECODE_MAX_SQ;
}

const char *const fallback_causal_only[] = {"PACK_GQA", "GRID_LPT", "WG_HALF", "MASK_BOUND", NULL};

const char *fallback_feature_name(int f) { return f >= 0 && f < FB_NFEAT ? feature_names[f] : "?"; }

/* binary features are written "=0" / "=1"; integer ones with an integer threshold */
static int feature_binary(int f) { return f == FB_F_DECODE || f == FB_F_CAUSAL; }
static int feature_real(int f) { return f == FB_F_KVQ || f == FB_F_FILL; }

void fallback_features(const shape_t *s, const rt_device_info *dev, double f[FB_NFEAT])
{
    double groups = 0;
    for (int b = 0; b < s->batch; b++) {
        int q, k;
        shape_seq_lens(s, b, &q, &k);
        groups += q <= TUNE_DECODE_MAX_SQ ? (double)s->hkv : (double)s->hq * ((q + 127) / 128);
        if (!shape_ragged(s)) { /* every sequence alike */
            groups *= s->batch;
            break;
        }
    }
    f[FB_F_DECODE] = fallback_decode_like(s);
    f[FB_F_D] = s->d;
    f[FB_F_GQA] = (double)s->hq / s->hkv;
    f[FB_F_CAUSAL] = s->causal ? 1 : 0;
    f[FB_F_SQ] = s->sq;
    f[FB_F_SKV] = s->skv;
    f[FB_F_KVQ] = (double)s->skv / s->sq;
    f[FB_F_FILL] = groups / (dev->compute_units > 0 ? dev->compute_units : 1);
}

int fallback_rules_add(fb_rules *r, const fb_rule *rule)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        fb_rule *v = realloc(r->v, cap * sizeof *v);
        if (!v) return -1;
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = *rule;
    return 0;
}

void fallback_rules_free(fb_rules *r)
{
    free(r->v);
    memset(r, 0, sizeof *r);
}

static void thr_str(int f, double thr, char *out, size_t len)
{
    if (feature_real(f)) snprintf(out, len, "%.3g", thr);
    else snprintf(out, len, "%.0f", thr);
}

void fallback_conds_str(const fb_rule *r, char *out, size_t len)
{
    size_t n = 0;
    if (len) out[0] = 0;
    if (r->ncond == 0) {
        snprintf(out, len, "any");
        return;
    }
    for (int i = 0; i < r->ncond && n < len; i++) {
        const fb_cond *c = &r->cond[i];
        char t[32];
        if (feature_binary(c->feat)) snprintf(t, sizeof t, "=%d", c->gt);
        else {
            char v[24];
            thr_str(c->feat, c->thr, v, sizeof v);
            snprintf(t, sizeof t, "%s%s", c->gt ? ">" : "<=", v);
        }
        n += (size_t)snprintf(out + n, len - n, "%s%s%s", i ? " & " : "", feature_names[c->feat], t);
    }
}

int fallback_conds_parse(const char *text, fb_rule *r, char *err, size_t errlen)
{
    r->ncond = 0;
    const char *p = text;
    while (isspace((unsigned char)*p)) p++;
    if (!strcmp(p, "any")) return 0;
    while (*p) {
        while (isspace((unsigned char)*p)) p++;
        size_t nl = 0;
        while (isalpha((unsigned char)p[nl])) nl++;
        int f = -1;
        for (int k = 0; k < FB_NFEAT; k++)
            if (strlen(feature_names[k]) == nl && !strncmp(p, feature_names[k], nl)) f = k;
        if (f < 0) {
            snprintf(err, errlen, "'%.40s': not a feature (decode, d, gqa, causal, sq, skv, kvq, fill)", p);
            return -1;
        }
        p += nl;
        fb_cond c = {.feat = f};
        int eq = 0;
        if (!strncmp(p, "<=", 2)) p += 2;
        else if (*p == '>') { c.gt = 1; p++; }
        else if (*p == '=') { eq = 1; p++; }
        else {
            snprintf(err, errlen, "'%s' needs <=, > or =", feature_names[f]);
            return -1;
        }
        char *end;
        double v = strtod(p, &end);
        if (end == p || !isfinite(v) || (eq && (!feature_binary(f) || (v != 0 && v != 1))) || (!eq && feature_binary(f))) {
            snprintf(err, errlen, "'%s': bad value '%.20s'%s", feature_names[f], p,
                     feature_binary(f) ? " (it takes =0 or =1)" : "");
            return -1;
        }
        if (eq) { /* =1: above one half, =0: at most */
            c.gt = v == 1;
            c.thr = 0.5;
        } else c.thr = v;
        if (r->ncond == FB_MAX_CONDS) {
            snprintf(err, errlen, "more than %d conditions", FB_MAX_CONDS);
            return -1;
        }
        r->cond[r->ncond++] = c;
        p = end;
        while (isspace((unsigned char)*p)) p++;
        if (*p == '&') p++;
        else if (*p) {
            snprintf(err, errlen, "'%.20s': conditions are joined by '&'", p);
            return -1;
        }
        while (isspace((unsigned char)*p)) p++;
        if (!*p && p[-1] == '&') {
            snprintf(err, errlen, "a condition is missing after the last '&'");
            return -1;
        }
    }
    if (r->ncond == 0) {
        snprintf(err, errlen, "no conditions (write 'any')");
        return -1;
    }
    return 0;
}

void fallback_split_str(double fill, char *out, size_t len)
{
    if (fill > 0) snprintf(out, len, "fill=%.3g", fill);
    else snprintf(out, len, "auto");
}

int fallback_rule_matches(const fb_rule *r, fb_regime reg, const double f[FB_NFEAT])
{
    if (r->regime != reg) return 0;
    for (int i = 0; i < r->ncond; i++) {
        const fb_cond *c = &r->cond[i];
        if (c->gt ? !(f[c->feat] > c->thr) : !(f[c->feat] <= c->thr)) return 0;
    }
    return 1;
}

const char *const fallback_header[] = {"gpu",     "backend",      "rule",    "regime",  "conditions", "config",
                                       "split_kv", "classes", "within_10pct", "untimed", "geomean", "why"};
const size_t fallback_ncols = sizeof fallback_header / sizeof fallback_header[0];

int fallback_table_add(csv_table *t, const char *gpu, const char *backend, const fb_rules *rules)
{
    for (size_t i = 0; i < rules->n; i++) {
        const fb_rule *r = &rules->v[i];
        char id[16], conds[512], split[32], classes[16], within[16], untimed[16], gm[24];
        snprintf(id, sizeof id, "%d", r->id);
        fallback_conds_str(r, conds, sizeof conds);
        fallback_split_str(r->fill, split, sizeof split);
        snprintf(classes, sizeof classes, "%d", r->classes);
        snprintf(within, sizeof within, "%d", r->within10);
        snprintf(untimed, sizeof untimed, "%d", r->untimed);
        fb_fmt_num(gm, sizeof gm, r->geomean, "%.3f");
        const char *row[] = {gpu, backend, id, fallback_regime_name(r->regime), conds, r->config, split, classes, within,
                             untimed, gm, r->why};
        if (csvt_add(t, row) != 0) return -1;
    }
    return 0;
}

static int parse_count(const char *v, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < 0 || x > 1000000) return -1;
    *out = (int)x;
    return 0;
}

int fallback_read(const char *path, const char *gpu, const char *backend, fb_rules *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *probe = fopen(path, "r");
    if (!probe) return 1;
    fclose(probe);
    csv_table *t;
    int rc = csvt_read(path, &t, err, errlen);
    if (rc != 0) return 2;
    int col[12];
    for (size_t c = 0; c < fallback_ncols; c++)
        if ((col[c] = csvt_col(t, fallback_header[c])) < 0) {
            snprintf(err, errlen, "%s:1: not a fallback table (no column '%s')", path, fallback_header[c]);
            csvt_free(t);
            return 2;
        }
    for (size_t i = 0; i < t->nrows; i++) {
        char *const *row = t->rows[i];
        fb_rule r = {0};
        char e[FB_ERRLEN];
        const char *field = NULL;
        kconfig probe_cfg = {0};
        if (parse_count(row[col[2]], &r.id) != 0 || r.id < 1) field = "rule", snprintf(e, sizeof e, "'%s' is not a rule number", row[col[2]]);
        else if (fallback_regime_parse(row[col[3]], &r.regime) != 0)
            field = "regime", snprintf(e, sizeof e, "'%s' is not a regime (decode, short-prefill, long-prefill, ragged, paged)", row[col[3]]);
        else if (fallback_conds_parse(row[col[4]], &r, e, sizeof e) != 0) field = "conditions";
        else if (!row[col[5]][0] || kconfig_parse(row[col[5]], &probe_cfg, e, sizeof e) != 0) {
            field = "config";
            if (!row[col[5]][0]) snprintf(e, sizeof e, "empty");
        } else if (strcmp(row[col[6]], "auto") &&
                   (strncmp(row[col[6]], "fill=", 5) || (r.fill = strtod(row[col[6]] + 5, NULL), !(r.fill > 0 && r.fill < 1e6))))
            field = "split_kv", snprintf(e, sizeof e, "'%s' is neither 'auto' nor 'fill=W' with W > 0", row[col[6]]);
        else if (parse_count(row[col[7]], &r.classes) || parse_count(row[col[8]], &r.within10) || parse_count(row[col[9]], &r.untimed))
            field = "classes", snprintf(e, sizeof e, "classes, within_10pct and untimed are counts");
        if (field) {
            snprintf(err, errlen, "%s:%d: field '%s': %s", path, t->row_line[i], field, e);
            csvt_free(t);
            fallback_rules_free(out);
            return 2;
        }
        if (strcmp(row[col[0]], gpu) || strcmp(row[col[1]], backend)) continue;
        snprintf(r.config, sizeof r.config, "%s", row[col[5]]);
        r.geomean = row[col[10]][0] ? strtod(row[col[10]], NULL) : NAN;
        snprintf(r.why, sizeof r.why, "%s", row[col[11]]);
        if (fallback_rules_add(out, &r) != 0) {
            snprintf(err, errlen, "out of memory");
            csvt_free(t);
            fallback_rules_free(out);
            return 2;
        }
    }
    csvt_free(t);
    return 0;
}

/* c complete, every field it holds marked set: its text read back */
static void mark_all_set(kconfig *c)
{
    char text[KCONFIG_STR_MAX], err[FB_ERRLEN];
    kconfig_str(c, text, sizeof text);
    kconfig r = {0};
    if (kconfig_parse(text, &r, err, sizeof err) == 0) *c = r;
}

int fallback_instantiate(const char *config, double fill, const shape_t *s, dtype_t dt, const rt_device_info *dev,
                         kconfig *out, char *reason, size_t len)
{
    kconfig c = {0};
    char err[FB_ERRLEN];
    if (kconfig_parse(config, &c, err, sizeof err) != 0) {
        snprintf(reason, len, "its configuration: %s", err);
        return ST_UNSUPPORTED;
    }
    c.set &= ~(uint64_t)CFG(SPLIT_KV);
    c.split_kv = 0;
    if (s->hq == s->hkv) { /* nothing to pack */
        c.pack_gqa = 0;
        c.set |= CFG(PACK_GQA);
    } else if ((c.set & CFG(PACK_GQA)) && c.pack_gqa >= 2 && (s->sq % 64 || !s->causal || c.mma != MMA_WGMMA || c.block_m % 64))
        c.pack_gqa = 0; /* whole 64-row stripes only (kconfig_check); unpacked rows otherwise */
    if (!s->causal) /* what kernels/space.csv offers causal shapes only (fallback_causal_only) */
        c.grid_lpt = c.wg_half = c.mask_bound = 0;
    if (shape_ragged(s)) {
        char dropped[256];
        kconfig_fit(&c, s, 0, dropped, sizeof dropped);
        c.set |= CFG(SPLIT_KV) | CFG(PACK_GQA);
        c.split_kv = 1;
        c.pack_gqa = 0;
    } else if (fill > 0) {
        kconfig t = c;
        t.split_kv = 1;
        t.set |= CFG(SPLIT_KV);
        kconfig_complete(&t, dev, s, dt);
        size_t grid[3];
        kconfig_grid(&t, s, grid);
        const double groups = (double)grid[0] * (double)grid[1];
        const long tile_n = (long)t.block_n * kconfig_kv_warps(&t);
        const long tiles = (s->skv + tile_n - 1) / tile_n;
        long split = lround(fill * (dev->compute_units > 0 ? dev->compute_units : 1) / (groups > 0 ? groups : 1));
        if (split > tiles) split = tiles;
        if (split > 32) split = 32; /* kconfig_complete's bound */
        if (split < 1 || t.wg_persist || t.wg_ostage) split = 1;
        c.split_kv = (int)split;
        c.set |= CFG(SPLIT_KV);
    }
    kconfig_complete(&c, dev, s, dt);
    if (c.split_kv < 2 && c.split_fuse) c.split_fuse = 0; /* nothing to merge */
    status_t st = kconfig_check(&c, dev, s, dt, reason, len);
    if (st != ST_OK) return st;
    mark_all_set(&c);
    *out = c;
    return 0;
}

static int wgmma_d(int d) { return d == 64 || d == 80 || d == 96 || d == 128 || d == 256; }

/* c (complete, marked set) made to fit the device's shared memory where it does not: fewer
 * stages, then shorter key tiles (kconfig_complete sizes only its decode tiles so) */
static void fit_shared(kconfig *c, const shape_t *s, dtype_t dt, const rt_device_info *dev)
{
    char reason[512];
    for (int round = 0; round < 16 && kconfig_check(c, dev, s, dt, reason, sizeof reason) == ST_RESOURCE_LIMIT; round++) {
        if (c->stages > (c->wg_pipe ? (c->wg_ws ? 2 : 3) : 1)) c->stages--;
        else if (c->block_n > 16 && (c->mma != MMA_WGMMA || c->block_n > 64)) c->block_n = c->block_n > 128 ? 128 : c->block_n / 2;
        else break;
    }
}

void fallback_default(const shape_t *s, dtype_t dt, const rt_device_info *dev, kconfig *out)
{
    const int tc = dt != DT_FP32;
    const int mma = tc && (dev->features & RT_FEAT_MMA_SYNC), wg = tc && (dev->features & RT_FEAT_WGMMA);
    const int tma = wg && (dev->features & RT_FEAT_TMA) && s->d % 16 == 0;
    const int dec = fallback_decode_like(s);
    char text[KCONFIG_STR_MAX] = "";
    if (shape_ragged(s)) { /* ragged and mixed batches, paged or not: no split, no packing */
        if (dec && mma) /* mostly decoding, some sequences prefilling: the H200's mixed class's tile */
            snprintf(text, sizeof text, "MMA=mma;NUM_WARPS=4;WARP_M=1;BLOCK_M=64");
        else if (!dec && tma && wgmma_d(s->d) && !shape_paged(s)) /* the H200's ragged classes' form */
            snprintf(text, sizeof text, "MMA=wgmma;BLOCK_M=128;NUM_WARPS=8;BLOCK_N=%d;STAGES=2;WG_SWIZZLE=1;WG_TMA=1",
                     s->d > 128 ? 64 : 128);
    } else if (dec) { /* dense or paged decode */
        /* queries packed over their KV head (kconfig_complete packs decode) past one warp's 16
         * rows: kconfig_complete would take a prefill tile of 128 */
        const long rows = (long)s->sq * (s->hq / s->hkv);
        if (mma && rows > 16) {
            const long w = rows > 64 ? 4 : (rows + 15) / 16;
            snprintf(text, sizeof text, "MMA=mma;WARP_M=1;NUM_WARPS=%ld;BLOCK_M=%ld", w, 16 * w);
        }
    } else if (fallback_regime(s) == FB_REG_SHORT) {
        /* the forms that came closest to cuDNN on the H100's short-prefill probe (twelve
         * generated shapes of a development seed, results/nvidia-h100-80gb-hbm3/short-prefill/:
         * d = 64 one warpgroup of 64 rows, d = 128 two warp-specialised ping-pong warpgroups,
         * any other head dim 64 x 64 mma.sync tiles, each ahead of the 32-key tiles this
         * default was before on every shape of its head dim) */
        if (tma && s->d == 64)
            snprintf(text, sizeof text, "MMA=wgmma;BLOCK_M=64;NUM_WARPS=4;BLOCK_N=128;STAGES=2;WG_SWIZZLE=1;WG_TMA=1");
        else if (tma && s->d == 128)
            snprintf(text, sizeof text, "MMA=wgmma;BLOCK_M=128;NUM_WARPS=8;BLOCK_N=128;STAGES=2;WG_SWIZZLE=1;WG_TMA=1;WG_WS=1;"
                                        "WG_PINGPONG=1");
        else if (mma)
            snprintf(text, sizeof text, "MMA=mma;NUM_WARPS=4;WARP_M=1;BLOCK_M=64;BLOCK_N=64;STAGES=2");
    } else if (fallback_regime(s) == FB_REG_LONG) {
        if (tma && s->d == 64)
            snprintf(text, sizeof text, "MMA=wgmma;BLOCK_M=128;NUM_WARPS=8;BLOCK_N=128;STAGES=2;WG_SWIZZLE=1;WG_TMA=1%s",
                     s->causal ? ";GRID_LPT=1" : "");
        else if (tma && s->d == 256)
            snprintf(text, sizeof text, "MMA=wgmma;BLOCK_M=128;NUM_WARPS=8;BLOCK_N=64;STAGES=2;WG_SWIZZLE=1;WG_TMA=1;WG_WS=1;"
                                        "WG_PINGPONG=1;WG_KVSPLIT=1");
        else if (tma && wgmma_d(s->d))
            snprintf(text, sizeof text, "MMA=wgmma;BLOCK_M=192;NUM_WARPS=12;BLOCK_N=128;STAGES=2;WG_SWIZZLE=1;WG_TMA=1;WG_WS=1;"
                                        "WG_KVSPLIT=1;WG_PERSIST=1;WG_DYNAMIC=1;WG_SKIP=1%s", s->causal ? ";MASK_BOUND=1" : "");
        else if (wg && wgmma_d(s->d)) snprintf(text, sizeof text, "MMA=wgmma");
    } /* a paged prefill: the runtime's default (tiles within a page) */
    char reason[512];
    kconfig c = {0};
    if (text[0] && fallback_instantiate(text, 0, s, dt, dev, &c, reason, sizeof reason) == 0) {
        *out = c;
        return;
    }
    c = (kconfig){0};
    kconfig_complete(&c, dev, s, dt);
    mark_all_set(&c);
    fit_shared(&c, s, dt, dev);
    *out = c;
}

long fallback_pick(const fb_rules *rules, const char *name, const shape_t *s, dtype_t dt, const rt_device_info *dev,
                   const char *why_default, kconfig *out, char *source, size_t srclen)
{
    const fb_regime reg = fallback_regime(s);
    double f[FB_NFEAT];
    fallback_features(s, dev, f);
    char why[600] = "";
    for (size_t i = 0; rules && i < rules->n; i++) {
        const fb_rule *r = &rules->v[i];
        if (!fallback_rule_matches(r, reg, f)) continue;
        char reason[512], conds[512];
        kconfig c;
        if (fallback_instantiate(r->config, r->fill, s, dt, dev, &c, reason, sizeof reason) == 0) {
            fallback_conds_str(r, conds, sizeof conds);
            snprintf(source, srclen, "rule %d of %s (%s: %s)", r->id, name, fallback_regime_name(reg), conds);
            *out = c;
            return (long)i;
        }
        snprintf(why, sizeof why, "rule %d of %s does not fit: %s", r->id, name, reason);
        break; /* the rules of a regime do not overlap: no other one matches */
    }
    if (!why[0] && rules && rules->n) snprintf(why, sizeof why, "no rule of %s matches", name);
    else if (!why[0]) snprintf(why, sizeof why, "%s", why_default && *why_default ? why_default : "no rules");
    fallback_default(s, dt, dev, out);
    snprintf(source, srclen, "default for %s (%s)", fallback_regime_name(reg), why);
    return -1;
}
