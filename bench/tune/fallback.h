/* fallback.h: what `run --tuned` takes for a shape whose class has no tuning.csv row: the
 * shape's regime and features, the rules `fabench fit-fallback` fits (fallback.csv), and a
 * default per regime that is sound on any device. The fitting and its check: fallback_fit.c. */
#ifndef FABENCH_FALLBACK_H
#define FABENCH_FALLBACK_H

#include <stdint.h>

#include "common.h"
#include "config.h"
#include "csvio.h"
#include "rt.h"

/* The regime of a shape, decided first: a paged KV cache (any query length), a ragged or
 * mixed batch, else a dense decode (Sq up to TUNE_DECODE_MAX_SQ, the decode classes' bound),
 * a short prefill (Sq up to FALLBACK_SHORT_MAX_SQ: on the H200 the paper's classes of 32..256
 * queries all tuned to mma tiles, 512 and up to wgmma) or a long prefill. */
typedef enum { FB_REG_DECODE, FB_REG_SHORT, FB_REG_LONG, FB_REG_RAGGED, FB_REG_PAGED, FB_NREG } fb_regime;
#define FALLBACK_SHORT_MAX_SQ 256

fb_regime fallback_regime(const shape_t *s);
/* "decode", "short-prefill", "long-prefill", "ragged", "paged" */
const char *fallback_regime_name(fb_regime r);
/* 0 and *out, or -1: not a regime's name */
int fallback_regime_parse(const char *name, fb_regime *out);
/* A shape whose work is mostly decoding: Sq up to TUNE_DECODE_MAX_SQ (dense or paged), or
 * half or more of a ragged batch's sequences that short (tune_decode_share). Within the
 * paged and ragged regimes every rule says which of the two it serves (the feature
 * "decode"), so that a decode shape never takes a prefill's configuration there either. */
int fallback_decode_like(const shape_t *s);

/* The features the rules split on, each a number: decode (0 or 1), d, gqa (Hq / Hkv), causal
 * (0 or 1), sq, skv, kvq (Skv / Sq: above 1 a chunked prefill or a decode), fill (work-groups
 * of a nominal tiling per compute unit: B x Hkv for a decoding sequence's heads packed over
 * their KV head, B x Hq x ceil(Sq / 128) for a prefill's; summed per sequence for a ragged
 * batch; over the device's compute units). */
enum { FB_F_DECODE, FB_F_D, FB_F_GQA, FB_F_CAUSAL, FB_F_SQ, FB_F_SKV, FB_F_KVQ, FB_F_FILL, FB_NFEAT };
const char *fallback_feature_name(int f);
void fallback_features(const shape_t *s, const rt_device_info *dev, double f[FB_NFEAT]);

/* One condition of a rule: feature feat <= thr (gt 0) or > thr (gt 1). */
typedef struct {
    int feat, gt;
    double thr;
} fb_cond;
#define FB_MAX_CONDS 16
#define FB_WHY_MAX 1024

/* One row of fallback.csv: in its regime, a shape whose features meet every condition takes
 * config (SPLIT_KV left out: fill > 0 gives the split that makes work-groups x SPLIT_KV about
 * fill per compute unit, 0 leaves it to kconfig_complete). classes, within10, untimed and
 * geomean: how the configuration did over the classes the rule was fitted on. */
typedef struct {
    int id;
    fb_regime regime;
    int ncond;
    fb_cond cond[FB_MAX_CONDS];
    char config[KCONFIG_STR_MAX];
    double fill;
    int classes, within10, untimed;
    double geomean;
    char why[FB_WHY_MAX];
} fb_rule;

typedef struct {
    fb_rule *v;
    size_t n, cap;
} fb_rules;

int fallback_rules_add(fb_rules *r, const fb_rule *rule); /* 0 or -1 (out of memory) */
void fallback_rules_free(fb_rules *r);

/* A rule's conditions as fallback.csv spells them: "decode=1 & d<=80 & fill>1.94" ("any"
 * when there are none); parsed back by fallback_conds_parse (0, or -1 with err). */
void fallback_conds_str(const fb_rule *r, char *out, size_t len);
int fallback_conds_parse(const char *text, fb_rule *r, char *err, size_t errlen);
/* A rule's SPLIT_KV as fallback.csv spells it: "auto" or "fill=W". */
void fallback_split_str(double fill, char *out, size_t len);
int fallback_rule_matches(const fb_rule *r, fb_regime reg, const double f[FB_NFEAT]);

/* fallback.csv: one table may hold several GPUs' and runtimes' rules */
extern const char *const fallback_header[];
extern const size_t fallback_ncols;
/* Appends rules (of gpu and backend) to t, a table with fallback_header. 0 or -1. */
int fallback_table_add(csv_table *t, const char *gpu, const char *backend, const fb_rules *rules);
/* The rules of gpu and backend in the file at path, in file order. 0; 1 when the file does
 * not exist (no rules); 2 when it is malformed (err: "PATH:LINE: field 'F': ..."). */
int fallback_read(const char *path, const char *gpu, const char *backend, fb_rules *out, char *err, size_t errlen);

/* Configuration text (kconfig_str's form, SPLIT_KV ignored) made a configuration for shape
 * s: PACK_GQA off for one query head a KV head (derived where the text leaves it out, and
 * lowered to what the shape allows), what kernels/space.csv offers causal shapes only off
 * for a shape that is not (the keys of fallback_causal_only: a rule learned on causal
 * classes serves non-causal shapes too, and the tuner never verified those switches
 * there), SPLIT_KV from fill (0: derived), SPLIT_FUSE off without a split, then
 * kconfig_complete. 0 with *out complete and every field marked set (so that a
 * later kconfig_complete changes nothing), or ST_UNSUPPORTED / ST_RESOURCE_LIMIT with reason
 * (kconfig_check's, or a text that does not parse). */
extern const char *const fallback_causal_only[]; /* NULL-terminated */
int fallback_instantiate(const char *config, double fill, const shape_t *s, dtype_t dt, const rt_device_info *dev,
                         kconfig *out, char *reason, size_t len);

/* The default of s's regime on this device, complete and marked set as above:
 * decode: the runtime's decode default (split-KV over packed heads, key warps where
 * kconfig_complete takes them), its rows in one block of up to four warps when packing
 * gives more than 16 (an mma tile otherwise takes 128);
 * short prefill: mma tiles of 32 rows (64 past Sq 128) and 32 keys on two warps where
 * the device has mma.sync (the H200's paper classes of 32..256 queries);
 * long prefill: on a device with wgmma and the copy engine, warp-specialised wgmma (192 rows
 * up to d = 128, 128 rows and 64 keys at d = 256; every such class of the H100 and the
 * H200 tuned to that form, d = 64 to 128-row tiles without the producer warpgroup);
 * ragged: wgmma tiles of 128 x 128 by the copy engine for a prefilling batch on such a device
 * (the H200's ragged classes), else the runtime's default;
 * paged: the runtime's default (tiles within a page).
 * Where the device lacks what a choice needs, or kconfig_check refuses it, the runtime's
 * default (kconfig_complete). */
void fallback_default(const shape_t *s, dtype_t dt, const rt_device_info *dev, kconfig *out);

/* What `run --tuned` takes for a shape without a row of its class: the first rule of rules
 * (NULL: none) for its regime whose conditions it meets, made its configuration
 * (fallback_instantiate) where kconfig_check passes it; else its regime's default. source:
 * "rule N of NAME (REGIME: CONDITIONS)" or "default for REGIME (WHY)", where why_default says
 * why no rule served when there was none to try (e.g. "no fallback.csv"). Returns the rule's
 * index in rules, or -1 for the default. */
long fallback_pick(const fb_rules *rules, const char *name, const shape_t *s, dtype_t dt, const rt_device_info *dev,
                   const char *why_default, kconfig *out, char *source, size_t srclen);

#endif
