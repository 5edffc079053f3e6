/* space.c: reading kernels/space.csv and enumerating the configurations that apply. */
#define _GNU_SOURCE
#include "space.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "csvio.h"

static const char *const known_params[] = {"MMA", "BLOCK_M", "BLOCK_N", "NUM_WARPS", "WARP_M",
                                           "STAGES", "KPAD", "SPLIT_KV", "PACK_GQA", "WG_PIPE", "WG_SWIZZLE", "WG_TMA",
                                           "WG_WS", "WG_PINGPONG", "GRID_LPT", "WG_PERSIST", "WG_KVSPLIT",
                                           "WG_DEFER", "WG_PVTURN", "WG_DYNAMIC", "WG_QEARLY",
                                           "WG_QPREFETCH", "WG_HOLDPV", "RED_SPLIT",
                                           "WG_SINFLIGHT", "WG_OSTAGE", "WG_QTMA", "WG_OTMA"};
static const char *const known_conds[] = {"feature:mma_sync", "dtype:16bit", "MMA=fma", "MMA=mma",
                                          "decode", "prefill", "gqa", "fill", "feature:mfma", "MMA=mfma",
                                          "feature:wgmma", "MMA=wgmma", "feature:tma", "causal"};

static int known(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, list[i])) return 1;
    return 0;
}

/* A condition on another parameter's value in the same combination ("WG_PIPE=0"; MMA
 * has its own conditions above): 1 and the name's length, else 0. */
static int param_cond(const char *c, size_t *namelen)
{
    const char *eq = strchr(c, '=');
    if (!eq || eq == c || !eq[1] || !strncmp(c, "MMA=", 4)) return 0;
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)(eq - c), c);
    if (!known(name, known_params, sizeof known_params / sizeof known_params[0])) return 0;
    *namelen = (size_t)(eq - c);
    return 1;
}

int space_load(const char *path, space_t *sp, char *err, size_t errlen)
{
    csv_table *t;
    int rc = csvt_read(path, &t, err, errlen);
    if (rc != 0) return rc;
    memset(sp, 0, sizeof *sp);
    snprintf(sp->source, sizeof sp->source, "%s", path);
    int cp = csvt_col(t, "param"), cv = csvt_col(t, "value"), cw = csvt_col(t, "when");
    rc = 0;
    if (cp < 0 || cv < 0 || cw < 0 || t->ncols != 3) {
        snprintf(err, errlen, "%s:1: header must be param,value,when", path);
        rc = FB_EXIT_BADINPUT;
    }
    for (size_t i = 0; rc == 0 && i < t->nrows; i++) {
        const char *name = t->rows[i][cp], *val = t->rows[i][cv], *when = t->rows[i][cw];
        int line = t->row_line[i];
        if (!known(name, known_params, sizeof known_params / sizeof known_params[0])) {
            snprintf(err, errlen, "%s:%d: field 'param': unknown parameter '%s'", path, line, name);
            rc = FB_EXIT_BADINPUT;
            break;
        }
        /* the value must be one the configuration parser accepts */
        kconfig probe = {0};
        char kv[64], perr[256] = "";
        snprintf(kv, sizeof kv, "%s=%s", name, val);
        if (strlen(val) >= sizeof sp->p[0].value[0]) snprintf(perr, sizeof perr, "value too long (at most %zu characters)", sizeof sp->p[0].value[0] - 1);
        if (perr[0] || kconfig_parse(kv, &probe, perr, sizeof perr) != 0) {
            snprintf(err, errlen, "%s:%d: field 'value': %s", path, line, perr);
            rc = FB_EXIT_BADINPUT;
            break;
        }
        char wcopy[64];
        if (strlen(when) >= sizeof wcopy) {
            snprintf(err, errlen, "%s:%d: field 'when': too long", path, line);
            rc = FB_EXIT_BADINPUT;
            break;
        }
        snprintf(wcopy, sizeof wcopy, "%s", when);
        char *save = NULL;
        for (char *c = strtok_r(wcopy, "&", &save); c && rc == 0; c = strtok_r(NULL, "&", &save))
            if (!known(c, known_conds, sizeof known_conds / sizeof known_conds[0]) && !param_cond(c, &(size_t){0})) {
                snprintf(err, errlen, "%s:%d: field 'when': unknown condition '%s' (known: feature:mma_sync, "
                         "dtype:16bit, MMA=fma, MMA=mma, decode, prefill, gqa, fill, feature:mfma, MMA=mfma, feature:wgmma, "
                         "MMA=wgmma, feature:tma, causal, and PARAM=VALUE on another parameter)", path, line, c);
                rc = FB_EXIT_BADINPUT;
            }
        if (rc) break;
        space_param *p = NULL;
        for (int k = 0; k < sp->nparams; k++)
            if (!strcmp(sp->p[k].name, name)) p = &sp->p[k];
        if (!p && sp->nparams == SPACE_MAX_PARAMS) {
            snprintf(err, errlen, "%s:%d: field 'param': more than %d parameters", path, line, SPACE_MAX_PARAMS);
            rc = FB_EXIT_BADINPUT;
            break;
        }
        if (!p) {
            p = &sp->p[sp->nparams++];
            snprintf(p->name, sizeof p->name, "%s", name);
        }
        if (p->nvalues == SPACE_MAX_VALUES) {
            snprintf(err, errlen, "%s:%d: more than %d values for %s", path, line, SPACE_MAX_VALUES, name);
            rc = FB_EXIT_BADINPUT;
            break;
        }
        snprintf(p->value[p->nvalues], sizeof p->value[0], "%s", val);
        snprintf(p->when[p->nvalues], sizeof p->when[0], "%s", when);
        p->nvalues++;
    }
    if (rc == 0 && sp->nparams == 0) {
        snprintf(err, errlen, "%s: no parameters", path);
        rc = FB_EXIT_BADINPUT;
    }
    csvt_free(t);
    return rc;
}

int space_load_default(space_t *sp, char *err, size_t errlen)
{
    char root[4096], path[4200];
    if (fb_root(root, sizeof root) != 0) {
        snprintf(err, errlen, "cannot find the fabench tree; set FABENCH_ROOT");
        return -1;
    }
    snprintf(path, sizeof path, "%s/kernels/space.csv", root);
    return space_load(path, sp, err, errlen);
}

/* Does every condition of `when` hold? mma: the MMA value of this combination; sp and idx:
 * the combination, for conditions on another parameter's value (idx NULL: those are left
 * for later and count as holding). */
static int holds(const char *when, const rt_device_info *dev, const shape_t *s, dtype_t dt, int mma,
                 const space_t *sp, const int *idx)
{
    char w[64];
    snprintf(w, sizeof w, "%s", when);
    char *save = NULL;
    int decode = s->sq <= 16;
    for (char *c = strtok_r(w, "&", &save); c; c = strtok_r(NULL, "&", &save)) {
        if (!strcmp(c, "feature:mma_sync") && !(dev->features & RT_FEAT_MMA_SYNC)) return 0;
        if (!strcmp(c, "dtype:16bit") && dt == DT_FP32) return 0;
        if (!strcmp(c, "MMA=fma") && mma != MMA_FMA) return 0;
        if (!strcmp(c, "MMA=mma") && mma != MMA_SYNC) return 0;
        if (!strcmp(c, "feature:mfma") && !(dev->features & RT_FEAT_MFMA)) return 0;
        if (!strcmp(c, "MMA=mfma") && mma != MMA_MFMA) return 0;
        if (!strcmp(c, "feature:wgmma") && !(dev->features & RT_FEAT_WGMMA)) return 0;
        if (!strcmp(c, "MMA=wgmma") && mma != MMA_WGMMA) return 0;
        if (!strcmp(c, "feature:tma") && !(dev->features & RT_FEAT_TMA)) return 0;
        size_t nl;
        if (idx && param_cond(c, &nl))
            for (int k = 0; k < sp->nparams; k++)
                if (strlen(sp->p[k].name) == nl && !strncmp(sp->p[k].name, c, nl) && strcmp(sp->p[k].value[idx[k]], c + nl + 1))
                    return 0;
        if (!strcmp(c, "decode") && !decode) return 0;
        if (!strcmp(c, "prefill") && decode) return 0;
        if (!strcmp(c, "gqa") && s->hq == s->hkv) return 0;
        if (!strcmp(c, "causal") && !s->causal) return 0;
        /* "fill" is checked on the whole configuration (space_fills) */
    }
    return 1;
}

/* "fill" on a BLOCK_M value: the work-group's rows fill more than half of such a block
 * (decode rows leave larger blocks idle; PACK_GQA decides how many rows there are). */
static int space_fills(const space_t *sp, const int *idx, const kconfig *c, const shape_t *s)
{
    for (int k = 0; k < sp->nparams; k++)
        if (strstr(sp->p[k].when[idx[k]], "fill") && !strcmp(sp->p[k].name, "BLOCK_M") &&
            2 * kconfig_rows(c, s) <= c->block_m)
            return 0;
    return 1;
}

/* The order candidates are offered in, so that an exhaustive search cut short by --time has
 * tried the likely winners: the MMA kind the device's default picks for this shape first,
 * then the other tensor-core kinds, then fma; within a kind, the fewest fields away from
 * that kind's default configuration first (the default itself leads). The sort is stable:
 * ties keep the enumeration's order. */
static void likely_first(kconfig *v, long n, const rt_device_info *dev, const shape_t *s, dtype_t dt)
{
    kconfig pref = {0};
    kconfig_complete(&pref, dev, s, dt);
    long *key = malloc(sizeof *key * (size_t)(n ? n : 1));
    if (!key) return; /* out of memory: the enumeration's order */
    kconfig def[4];
    for (int m = 0; m < 4; m++) {
        def[m] = (kconfig){.mma = (mma_kind)m, .set = CFG_MMA};
        kconfig_complete(&def[m], dev, s, dt);
    }
    for (long i = 0; i < n; i++) {
        int kind = v[i].mma == pref.mma ? 0 : v[i].mma != MMA_FMA ? 1 : 2;
        key[i] = (long)kind * 100 + kconfig_distance(&v[i], &def[v[i].mma]);
    }
    for (long i = 1; i < n; i++) { /* insertion sort: stable, and n is a few hundred */
        kconfig c = v[i];
        long k = key[i], j = i;
        while (j > 0 && key[j - 1] > k) {
            v[j] = v[j - 1];
            key[j] = key[j - 1];
            j--;
        }
        v[j] = c;
        key[j] = k;
    }
    free(key);
}

/* An enumerated configuration and its place in the odometer order over the whole product
 * (MMA, then each parameter as the file lists them, the first fastest). */
typedef struct {
    long pos;
    kconfig c;
} placed;

static int by_pos(const void *a, const void *b)
{
    const long x = ((const placed *)a)->pos, y = ((const placed *)b)->pos;
    return (x > y) - (x < y);
}

long space_enumerate(const space_t *sp, const rt_device_info *dev, const shape_t *s, dtype_t dt,
                     kconfig **out, long *before)
{
    int idx[SPACE_MAX_PARAMS] = {0};
    long cap = 256, n = 0, all = 0;
    placed *v = malloc(sizeof *v * (size_t)cap);
    if (!v) return -1;
    int mma_param = -1;
    long stride[SPACE_MAX_PARAMS];
    for (int k = 0; k < sp->nparams; k++) {
        if (!strcmp(sp->p[k].name, "MMA")) mma_param = k;
        stride[k] = k ? stride[k - 1] * sp->p[k - 1].nvalues : 1;
    }
    /* one pass per MMA value; within it only the values whose conditions can hold beside
     * it (the shape's, the device's, the MMA kind's), so that the product walked is the
     * part of the space that applies; conditions on another parameter's value per
     * combination */
    const int nm = mma_param >= 0 ? sp->p[mma_param].nvalues : 1;
    for (int mv = 0; mv < nm; mv++) {
        int mma = MMA_FMA;
        if (mma_param >= 0) {
            kconfig mc = {0};
            char kv[64], e[256];
            snprintf(kv, sizeof kv, "MMA=%s", sp->p[mma_param].value[mv]);
            mma = kconfig_parse(kv, &mc, e, sizeof e) == 0 ? (int)mc.mma : MMA_FMA;
        }
        int allow[SPACE_MAX_PARAMS][SPACE_MAX_VALUES], na[SPACE_MAX_PARAMS], at[SPACE_MAX_PARAMS] = {0}, empty = 0;
        for (int k = 0; k < sp->nparams; k++) {
            na[k] = 0;
            for (int j = 0; j < sp->p[k].nvalues; j++)
                if ((k != mma_param || j == mv) && holds(sp->p[k].when[j], dev, s, dt, mma, sp, NULL)) allow[k][na[k]++] = j;
            empty |= na[k] == 0;
        }
        while (!empty) {
            long pos = 0;
            for (int k = 0; k < sp->nparams; k++) {
                idx[k] = allow[k][at[k]];
                pos += idx[k] * stride[k];
            }
            int ok = 1;
            for (int k = 0; k < sp->nparams && ok; k++)
                if (strchr(sp->p[k].when[idx[k]], '=')) ok = holds(sp->p[k].when[idx[k]], dev, s, dt, mma, sp, idx);
            if (ok) {
                all++;
                kconfig c = {0};
                char kv[64], err[256];
                for (int k = 0; k < sp->nparams; k++) {
                    snprintf(kv, sizeof kv, "%s=%s", sp->p[k].name, sp->p[k].value[idx[k]]);
                    kconfig_parse(kv, &c, err, sizeof err);
                }
                kconfig_complete(&c, dev, s, dt); /* parameters the space leaves out */
                char reason[256];
                if (space_fills(sp, idx, &c, s) && kconfig_check(&c, dev, s, dt, reason, sizeof reason) == ST_OK) {
                    if (n == cap) {
                        placed *nv = realloc(v, sizeof *v * (size_t)(cap *= 2));
                        if (!nv) { free(v); return -1; }
                        v = nv;
                    }
                    v[n].pos = pos;
                    v[n++].c = c;
                }
            }
            int k = 0;
            while (k < sp->nparams && ++at[k] == na[k]) at[k++] = 0;
            if (k == sp->nparams) break;
        }
    }
    qsort(v, (size_t)n, sizeof *v, by_pos); /* the odometer's order over the whole product */
    kconfig *cv = malloc(sizeof *cv * (size_t)(n ? n : 1));
    if (!cv) { free(v); return -1; }
    for (long i = 0; i < n; i++) cv[i] = v[i].c;
    free(v);
    likely_first(cv, n, dev, s, dt);
    *out = cv;
    if (before) *before = all;
    return n;
}
