/* space.c: reading kernels/space.csv and enumerating the configurations that apply. */
#define _GNU_SOURCE
#include "space.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "csvio.h"

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
    if (knob_find(name) < 0) return 0;
    *namelen = (size_t)(eq - c);
    return 1;
}

/* A bound on the head dimension ("d<=64": only shapes whose d is at most 64): 1 and the
 * bound, else 0. */
static int hdim_cond(const char *c, int *most)
{
    if (strncmp(c, "d<=", 3) != 0) return 0;
    char *end;
    long v = strtol(c + 3, &end, 10);
    if (end == c + 3 || *end || v < 1 || v > 4096) return 0;
    *most = (int)v;
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
        if (knob_find(name) < 0) { /* a knob of bench/core/knobs.h */
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
            if (!known(c, known_conds, sizeof known_conds / sizeof known_conds[0]) && !param_cond(c, &(size_t){0}) &&
                !hdim_cond(c, &(int){0})) {
                snprintf(err, errlen, "%s:%d: field 'when': unknown condition '%s' (known: feature:mma_sync, "
                         "dtype:16bit, MMA=fma, MMA=mma, decode, prefill, gqa, fill, feature:mfma, MMA=mfma, feature:wgmma, "
                         "MMA=wgmma, feature:tma, causal, d<=N, and PARAM=VALUE on another parameter)", path, line, c);
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

/* Does every condition of `when` on the device, dtype, shape and MMA kind hold? mma: the
 * MMA value of this combination. Conditions on another parameter's value are the walk's
 * (compile_conds); "fill" is checked on the whole configuration. */
static int holds(const char *when, const rt_device_info *dev, const shape_t *s, dtype_t dt, int mma)
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
        if (!strcmp(c, "decode") && !decode) return 0;
        if (!strcmp(c, "prefill") && decode) return 0;
        if (!strcmp(c, "gqa") && s->hq == s->hkv) return 0;
        if (!strcmp(c, "causal") && !s->causal) return 0;
        int most;
        if (hdim_cond(c, &most) && s->d > most) return 0;
    }
    return 1;
}

typedef struct { /* a candidate's sort key and its place in the enumeration */
    long key, i;
} ranked;

static int by_rank(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->key != y->key) return (x->key > y->key) - (x->key < y->key);
    return (x->i > y->i) - (x->i < y->i); /* ties keep the enumeration's order */
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
    ranked *rk = malloc(sizeof *rk * (size_t)(n ? n : 1));
    kconfig *sorted = malloc(sizeof *sorted * (size_t)(n ? n : 1));
    if (!rk || !sorted) { /* out of memory: the enumeration's order */
        free(rk);
        free(sorted);
        return;
    }
    kconfig def[4];
    for (int m = 0; m < 4; m++) {
        def[m] = (kconfig){.mma = (mma_kind)m, .set = CFG(MMA)};
        kconfig_complete(&def[m], dev, s, dt);
    }
    for (long i = 0; i < n; i++) {
        int kind = v[i].mma == pref.mma ? 0 : v[i].mma != MMA_FMA ? 1 : 2;
        rk[i] = (ranked){.key = (long)kind * 100 + kconfig_distance(&v[i], &def[v[i].mma]), .i = i};
    }
    qsort(rk, (size_t)n, sizeof *rk, by_rank); /* stable by the index: tens of thousands on Hopper */
    for (long i = 0; i < n; i++) sorted[i] = v[rk[i].i];
    memcpy(v, sorted, sizeof *v * (size_t)n);
    free(sorted);
    free(rk);
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

/* One value's conditions on other parameters' values ("WG_PIPE=1"), compiled: the value
 * index each named parameter must hold (-1: a value the space does not list, so never).
 * A parameter the space does not have is no condition. (A 64-byte `when` holds at most 9.) */
typedef struct {
    int n;
    int param[16], value[16];
} value_conds;

static void compile_conds(const space_t *sp, const char *when, value_conds *vc)
{
    char w[64];
    snprintf(w, sizeof w, "%s", when);
    char *save = NULL;
    vc->n = 0;
    for (char *c = strtok_r(w, "&", &save); c; c = strtok_r(NULL, "&", &save)) {
        size_t nl;
        if (!param_cond(c, &nl)) continue;
        for (int k = 0; k < sp->nparams; k++) {
            if (strlen(sp->p[k].name) != nl || strncmp(sp->p[k].name, c, nl)) continue;
            int v = -1;
            for (int j = 0; j < sp->p[k].nvalues; j++)
                if (!strcmp(sp->p[k].value[j], c + nl + 1)) { v = j; break; }
            if (vc->n < 16) {
                vc->param[vc->n] = k;
                vc->value[vc->n++] = v;
            }
        }
    }
}

/* The walk's state: the allowed values of each parameter for this MMA pass, each value's
 * parsed fields and compiled conditions, the configuration built so far per depth. */
typedef struct {
    const space_t *sp;
    const rt_device_info *dev;
    const shape_t *s;
    dtype_t dt;
    int allow[SPACE_MAX_PARAMS][SPACE_MAX_VALUES], na[SPACE_MAX_PARAMS];
    kconfig delta[SPACE_MAX_PARAMS][SPACE_MAX_VALUES];
    value_conds conds[SPACE_MAX_PARAMS][SPACE_MAX_VALUES];
    unsigned char fill[SPACE_MAX_PARAMS][SPACE_MAX_VALUES]; /* a "fill" condition on a BLOCK_M value */
    int idx[SPACE_MAX_PARAMS];
    long stride[SPACE_MAX_PARAMS];
    kconfig built[SPACE_MAX_PARAMS + 1];
    placed *v;
    long n, cap, all;
    space_pruned *pr; /* NULL: the dropped combinations are only counted */
    long npr, prcap;
    int oom;
} walk;

#define NO_NEED (-2) /* need[p]: no value of p asked for yet */

/* a whole combination dropped before compiling, and the rule that dropped it (w->pr only) */
static void note_pruned(walk *w, const kconfig *c, const char *reason)
{
    if (!w->pr) return;
    if (w->npr == w->prcap) {
        space_pruned *nv = realloc(w->pr, sizeof *nv * (size_t)(w->prcap * 2));
        if (!nv) { w->oom = 1; return; }
        w->pr = nv;
        w->prcap *= 2;
    }
    w->pr[w->npr].c = *c;
    snprintf(w->pr[w->npr++].rule, sizeof w->pr[0].rule, "%s", reason);
}

/* Values a and b of parameter p are the same value: a value may be listed more than once,
 * under different conditions ("BLOCK_N,128,MMA=mma" and "BLOCK_N,128,MMA=wgmma"), and a
 * condition naming it holds for every listing. */
static int same_value(const space_t *sp, int p, int a, int b)
{
    return a == b || (a >= 0 && b >= 0 && !strcmp(sp->p[p].value[a], sp->p[p].value[b]));
}

/* Can parameter d take value jd? Its own conditions on the parameters before it must hold,
 * and any value the earlier ones asked of it (need[d]). Its conditions on later parameters
 * become their needs: *need is updated, 0 when two values ask for different ones. */
static int assign(const walk *w, int d, int jd, int need[SPACE_MAX_PARAMS])
{
    if (need[d] != NO_NEED && !same_value(w->sp, d, need[d], jd)) return 0;
    const value_conds *own = &w->conds[d][jd];
    for (int i = 0; i < own->n; i++) {
        const int p = own->param[i], v = own->value[i];
        if (p < d && !same_value(w->sp, p, w->idx[p], v)) return 0;
        if (p == d && !same_value(w->sp, p, jd, v)) return 0;
        if (p > d) {
            if (need[p] != NO_NEED && !same_value(w->sp, p, need[p], v)) return 0;
            need[p] = v;
        }
    }
    return 1;
}

/* Depth-first over the parameters in file order, dropping a branch as soon as a condition
 * between its values fails; each whole combination is completed and checked. */
static void walk_from(walk *w, int d, const int need_in[SPACE_MAX_PARAMS])
{
    const space_t *sp = w->sp;
    if (d == sp->nparams) {
        w->all++;
        kconfig c = w->built[d];
        kconfig_complete(&c, w->dev, w->s, w->dt); /* parameters the space leaves out */
        /* "fill" on a BLOCK_M value: the work-group's rows fill more than half of such a
         * block (decode rows leave larger blocks idle; PACK_GQA decides how many rows) */
        char reason[256] = "";
        for (int k = 0; k < sp->nparams && !reason[0]; k++)
            if (w->fill[k][w->idx[k]] && 2 * kconfig_rows(&c, w->s) <= c.block_m)
                snprintf(reason, sizeof reason, "fill: the shape's %ld rows a work-group fill at most half of BLOCK_M=%d",
                         kconfig_rows(&c, w->s), c.block_m);
        if (reason[0] || kconfig_check(&c, w->dev, w->s, w->dt, reason, sizeof reason) != ST_OK) {
            note_pruned(w, &c, reason);
            return;
        }
        if (w->n == w->cap) {
            placed *nv = realloc(w->v, sizeof *nv * (size_t)(w->cap * 2));
            if (!nv) { w->oom = 1; return; }
            w->v = nv;
            w->cap *= 2;
        }
        long pos = 0;
        for (int k = 0; k < sp->nparams; k++) pos += w->idx[k] * w->stride[k];
        w->v[w->n].pos = pos;
        w->v[w->n++].c = c;
        return;
    }
    int need[SPACE_MAX_PARAMS];
    for (int a = 0; a < w->na[d] && !w->oom; a++) {
        const int j = w->allow[d][a];
        memcpy(need, need_in, sizeof need);
        if (!assign(w, d, j, need)) continue;
        w->idx[d] = j;
        w->built[d + 1] = w->built[d];
        kconfig_overlay(&w->built[d + 1], &w->delta[d][j]);
        walk_from(w, d + 1, need);
    }
}

long space_enumerate(const space_t *sp, const rt_device_info *dev, const shape_t *s, dtype_t dt,
                     kconfig **out, long *before)
{
    return space_enumerate_pruned(sp, dev, s, dt, out, before, NULL, NULL);
}

long space_enumerate_pruned(const space_t *sp, const rt_device_info *dev, const shape_t *s, dtype_t dt,
                            kconfig **out, long *before, space_pruned **pruned, long *npruned)
{
    walk *w = calloc(1, sizeof *w);
    if (!w) return -1;
    *w = (walk){.sp = sp, .dev = dev, .s = s, .dt = dt, .cap = 256, .prcap = 16};
    w->v = malloc(sizeof *w->v * (size_t)w->cap);
    if (pruned) w->pr = malloc(sizeof *w->pr * (size_t)w->prcap);
    if (!w->v || (pruned && !w->pr)) { free(w->v); free(w->pr); free(w); return -1; }
    int mma_param = -1;
    for (int k = 0; k < sp->nparams; k++) {
        if (!strcmp(sp->p[k].name, "MMA")) mma_param = k;
        w->stride[k] = k ? w->stride[k - 1] * sp->p[k - 1].nvalues : 1;
        for (int j = 0; j < sp->p[k].nvalues; j++) {
            char kv[64], e[256];
            snprintf(kv, sizeof kv, "%s=%s", sp->p[k].name, sp->p[k].value[j]);
            w->delta[k][j] = (kconfig){0};
            kconfig_parse(kv, &w->delta[k][j], e, sizeof e); /* space_load checked every value */
            compile_conds(sp, sp->p[k].when[j], &w->conds[k][j]);
            w->fill[k][j] = strstr(sp->p[k].when[j], "fill") && !strcmp(sp->p[k].name, "BLOCK_M");
        }
    }
    /* one pass per MMA value; within it only the values whose conditions can hold beside
     * it (the shape's, the device's, the MMA kind's), so that the product walked is the
     * part of the space that applies; conditions on another parameter's value as the walk
     * reaches both */
    const int nm = mma_param >= 0 ? sp->p[mma_param].nvalues : 1;
    for (int mv = 0; mv < nm && !w->oom; mv++) {
        int mma = mma_param >= 0 && (w->delta[mma_param][mv].set & CFG(MMA)) ? (int)w->delta[mma_param][mv].mma : MMA_FMA;
        int empty = 0;
        for (int k = 0; k < sp->nparams; k++) {
            w->na[k] = 0;
            for (int j = 0; j < sp->p[k].nvalues; j++)
                if ((k != mma_param || j == mv) && holds(sp->p[k].when[j], dev, s, dt, mma)) w->allow[k][w->na[k]++] = j;
            empty |= w->na[k] == 0;
        }
        if (empty) continue;
        w->built[0] = (kconfig){0};
        int need[SPACE_MAX_PARAMS];
        for (int k = 0; k < SPACE_MAX_PARAMS; k++) need[k] = NO_NEED;
        walk_from(w, 0, need);
    }
    placed *v = w->v;
    long n = w->n, all = w->all;
    const int oom = w->oom;
    if (pruned && !oom) { *pruned = w->pr; *npruned = w->npr; }
    else free(w->pr);
    free(w);
    if (oom) { free(v); return -1; }
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
