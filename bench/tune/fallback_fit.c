/* fallback_fit.c: `fabench fit-fallback`: fallback.csv's rules fitted to a GPU's explored
 * times, and the leave-one-class-out check that sets them beside the nearest-class lookup. */
#define _GNU_SOURCE
#include "fallback_fit.h"

#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "commands.h"
#include "shapes.h"
#include "tune.h"

static const double fit_fill_grid[] = {0.5, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32};
#define NGRID (sizeof fit_fill_grid / sizeof fit_fill_grid[0])

typedef struct {
    char key[96], shape[64];
    shape_t s;
    dtype_t dt;
    fb_regime reg;
    int dec, live, train;
    double f[FB_NFEAT];
    size_t n, cap;
    char **cfg; /* explored ok rows, sorted by configuration text (the last row of a repeat) */
    double *us;
    size_t *order; /* rows fastest first */
    double best;
    double own_fill; /* decode: its winner's work-groups x SPLIT_KV per compute unit (0: none) */
} fclass;

typedef struct {
    char base[KCONFIG_STR_MAX]; /* without SPLIT_KV (and PACK_GQA when lent by one query head a KV head) */
    double fill;
    fb_regime reg;
    int dec;
    int origin;           /* the first class that lent it */
    double origin_ratio;  /* its time there over that class's winner */
    unsigned char *from;  /* [class]: that class lent it */
    float *ratio;         /* [class]: time over the winner; NAN untimed; INFINITY unfit or not its regime */
    float *cost;          /* [class]: what the tree minimises */
} fcand;

struct fit_set {
    char gpu[256], backend[32];
    rt_device_info dev;
    fclass *c;
    size_t nc, ccap;
    fcand *k;
    size_t nk, kcap;
    csv_table *tuning;
    size_t skipped;
    /* candidate index by "fill|base" */
    long *hash;
    size_t hcap;
};

const char *fit_gpu(const fit_set *fs) { return fs->gpu; }
const char *fit_backend(const fit_set *fs) { return fs->backend; }
const rt_device_info *fit_device(const fit_set *fs) { return &fs->dev; }

void fit_counts(const fit_set *fs, size_t *classes, size_t *live, size_t *skipped, size_t *candidates)
{
    size_t l = 0;
    for (size_t i = 0; i < fs->nc; i++) l += fs->c[i].live;
    if (classes) *classes = fs->nc;
    if (live) *live = l;
    if (skipped) *skipped = fs->skipped;
    if (candidates) *candidates = fs->nk;
}

void fit_free(fit_set *fs)
{
    if (!fs) return;
    for (size_t i = 0; i < fs->nc; i++) {
        for (size_t j = 0; j < fs->c[i].n; j++) free(fs->c[i].cfg[j]);
        free(fs->c[i].cfg);
        free(fs->c[i].us);
        free(fs->c[i].order);
    }
    for (size_t k = 0; k < fs->nk; k++) {
        free(fs->k[k].from);
        free(fs->k[k].ratio);
        free(fs->k[k].cost);
    }
    free(fs->c);
    free(fs->k);
    free(fs->hash);
    csvt_free(fs->tuning);
    free(fs);
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* ---- loading ------------------------------------------------------------------------- */

static fclass *class_get(fit_set *fs, const char *key, const char *shape)
{
    for (size_t i = 0; i < fs->nc; i++)
        if (!strcmp(fs->c[i].key, key)) return &fs->c[i];
    if (fs->nc == fs->ccap) {
        size_t cap = fs->ccap ? 2 * fs->ccap : 64;
        fclass *v = realloc(fs->c, cap * sizeof *v);
        if (!v) return NULL;
        fs->c = v;
        fs->ccap = cap;
    }
    fclass *c = &fs->c[fs->nc++];
    memset(c, 0, sizeof *c);
    snprintf(c->key, sizeof c->key, "%s", key);
    snprintf(c->shape, sizeof c->shape, "%s", shape);
    return c;
}

static int class_row(fclass *c, const char *cfg, double us)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 32;
        char **v = realloc(c->cfg, cap * sizeof *v);
        if (!v) return -1;
        c->cfg = v;
        double *u = realloc(c->us, cap * sizeof *u);
        if (!u) return -1;
        c->us = u;
        c->cap = cap;
    }
    if (!(c->cfg[c->n] = strdup(cfg))) return -1;
    c->us[c->n++] = us;
    return 0;
}

typedef struct {
    const char *cfg;
    double us;
    size_t at;
} row_ref;

static int cmp_row(const void *a, const void *b)
{
    const row_ref *x = a, *y = b;
    int c = strcmp(x->cfg, y->cfg);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

static const double *sort_us; /* qsort has no context argument: set just before sorting */
static int cmp_fastest(const void *a, const void *b)
{
    const double x = sort_us[*(const size_t *)a], y = sort_us[*(const size_t *)b];
    if (x != y) return x < y ? -1 : 1;
    return (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

/* rows sorted by configuration, a repeated one keeping its last row; then the fastest-first order */
static int class_finish(fclass *c)
{
    row_ref *r = malloc((c->n ? c->n : 1) * sizeof *r);
    if (!r) return -1;
    for (size_t i = 0; i < c->n; i++) r[i] = (row_ref){c->cfg[i], c->us[i], i};
    qsort(r, c->n, sizeof *r, cmp_row);
    char **cfg = malloc((c->n ? c->n : 1) * sizeof *cfg);
    double *us = malloc((c->n ? c->n : 1) * sizeof *us);
    size_t *ord = malloc((c->n ? c->n : 1) * sizeof *ord);
    if (!cfg || !us || !ord) {
        free(r), free(cfg), free(us), free(ord);
        return -1;
    }
    size_t m = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (i + 1 < c->n && !strcmp(r[i].cfg, r[i + 1].cfg)) continue; /* a later row of it follows */
        cfg[m] = strdup(r[i].cfg);
        us[m++] = r[i].us;
    }
    for (size_t i = 0; i < c->n; i++) free(c->cfg[i]);
    free(c->cfg);
    free(c->us);
    free(r);
    c->cfg = cfg;
    c->us = us;
    c->n = c->cap = m;
    c->best = INFINITY;
    for (size_t i = 0; i < m; i++) {
        if (!cfg[i]) return -1;
        ord[i] = i;
        if (us[i] < c->best) c->best = us[i];
    }
    sort_us = us;
    qsort(ord, m, sizeof *ord, cmp_fastest);
    c->order = ord;
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* the class's recorded time of configuration text cfg over its winner's; NAN when untimed */
static double class_ratio(const fclass *c, const char *cfg)
{
    char *const *hit = bsearch(&cfg, c->cfg, c->n, sizeof *c->cfg, cmp_str);
    return hit ? c->us[hit - c->cfg] / c->best : NAN;
}

static const char *manifest_value(const csv_table *m, const char *key)
{
    const int ck = csvt_col(m, "key"), cv = csvt_col(m, "value");
    for (size_t i = 0; ck >= 0 && cv >= 0 && i < m->nrows; i++)
        if (!strcmp(m->rows[i][ck], key)) return m->rows[i][cv];
    return NULL;
}

/* every shape of every suite and of the files named, to find a class's shape by name */
static int load_shapes(const char *const *files, size_t nfiles, shape_list_t *all, char *err, size_t errlen)
{
    memset(all, 0, sizeof *all);
    char names[4096];
    shapes_list_suites(names, sizeof names);
    size_t cap = 0;
    for (size_t pass = 0; pass < 2; pass++) {
        char *save = NULL, *copy = strdup(names);
        if (!copy) return -1;
        size_t nf = pass ? nfiles : 0;
        char *tok = pass ? NULL : strtok_r(copy, ", ", &save);
        for (size_t fi = 0; pass ? fi < nf : tok != NULL; fi++) {
            shape_list_t l;
            int rc = pass ? shapes_load(files[fi], &l, err, errlen) : shapes_load_suite(tok, &l, err, errlen);
            if (rc != 0) {
                free(copy);
                return 2;
            }
            if (all->n + l.n > cap) {
                cap = 2 * (all->n + l.n);
                shape_t *v = realloc(all->v, cap * sizeof *v);
                if (!v) {
                    shapes_free(&l);
                    free(copy);
                    return -1;
                }
                all->v = v;
            }
            memcpy(all->v + all->n, l.v, l.n * sizeof *l.v);
            all->n += l.n;
            shapes_free(&l);
            if (!pass) tok = strtok_r(NULL, ", ", &save);
        }
        free(copy);
    }
    return 0;
}

/* The shape of class c, by its explored rows' shape name, checked against the key: 0, or -1
 * (none of that name, or its key differs in more than the work bucket). */
static int class_shape(fclass *c, const shape_list_t *all)
{
    tune_class want;
    if (tune_class_parse(c->key, &want) != 0) return -1;
    for (size_t i = 0; i < all->n; i++) {
        if (strcmp(all->v[i].name, c->shape)) continue;
        char key[96];
        tune_class_key(&all->v[i], want.dt, key, sizeof key);
        tune_class got;
        if (tune_class_parse(key, &got) != 0 || got.d != want.d || got.c != want.c || got.g != want.g || got.q != want.q ||
            got.k != want.k || got.p != want.p || (got.v >= 0) != (want.v >= 0))
            continue;
        c->s = all->v[i];
        c->dt = want.dt;
        c->live = !strcmp(key, c->key);
        return 0;
    }
    return -1;
}

/* ---- candidates -------------------------------------------------------------------- */

/* text without its "KEY=V" entry */
static void strip_key(char *text, const char *key)
{
    size_t kl = strlen(key);
    for (char *p = text; (p = strstr(p, key)) != NULL; p++) {
        if ((p != text && p[-1] != ';') || p[kl] != '=') continue;
        char *end = strchr(p, ';');
        if (end) memmove(p, end + 1, strlen(end + 1) + 1);
        else if (p != text) p[-1] = 0;
        else *p = 0;
        return;
    }
}

static double round_sig(double x, int digits)
{
    char b[64];
    snprintf(b, sizeof b, "%.*g", digits, x);
    return strtod(b, NULL);
}

/* a candidate's identity: regime, decode-likeness, fill and configuration */
static void cand_key(const fcand *c, char *out, size_t len) { snprintf(out, len, "%d|%d|%.6g|%s", (int)c->reg, c->dec, c->fill, c->base); }

static long cand_find(const fit_set *fs, const char *key, uint64_t h)
{
    for (size_t p = h & (fs->hcap - 1);; p = (p + 1) & (fs->hcap - 1)) {
        long k = fs->hash[p];
        if (k < 0) return -1 - (long)p; /* the free slot, encoded */
        char kk[KCONFIG_STR_MAX + 48];
        cand_key(&fs->k[k], kk, sizeof kk);
        if (!strcmp(kk, key)) return k;
    }
}

static int cand_add(fit_set *fs, const char *base, double fill, int cls, double ratio)
{
    if (2 * (fs->nk + 1) > fs->hcap) { /* grow and rehash */
        size_t cap = fs->hcap ? 2 * fs->hcap : 1024;
        long *h = malloc(cap * sizeof *h);
        if (!h) return -1;
        for (size_t i = 0; i < cap; i++) h[i] = -1;
        free(fs->hash);
        fs->hash = h;
        fs->hcap = cap;
        for (size_t k = 0; k < fs->nk; k++) {
            char kk[KCONFIG_STR_MAX + 48];
            cand_key(&fs->k[k], kk, sizeof kk);
            long slot = cand_find(fs, kk, hash_str(kk));
            fs->hash[-1 - slot] = (long)k;
        }
    }
    char kk[KCONFIG_STR_MAX + 48];
    const fcand probe = {.fill = fill, .reg = fs->c[cls].reg, .dec = fs->c[cls].dec};
    cand_key(&probe, kk, sizeof kk);
    snprintf(kk + strlen(kk), sizeof kk - strlen(kk), "%s", base);
    long k = cand_find(fs, kk, hash_str(kk));
    if (k >= 0) {
        fs->k[k].from[cls] = 1;
        return 0;
    }
    if (fs->nk == fs->kcap) {
        size_t cap = fs->kcap ? 2 * fs->kcap : 256;
        fcand *v = realloc(fs->k, cap * sizeof *v);
        if (!v) return -1;
        fs->k = v;
        fs->kcap = cap;
    }
    fcand *c = &fs->k[fs->nk];
    memset(c, 0, sizeof *c);
    snprintf(c->base, sizeof c->base, "%s", base);
    c->fill = fill;
    c->reg = fs->c[cls].reg;
    c->dec = fs->c[cls].dec;
    c->origin = cls;
    c->origin_ratio = ratio;
    c->from = calloc(fs->nc, 1);
    c->ratio = malloc(fs->nc * sizeof *c->ratio);
    c->cost = malloc(fs->nc * sizeof *c->cost);
    if (!c->from || !c->ratio || !c->cost) {
        free(c->from), free(c->ratio), free(c->cost);
        return -1;
    }
    c->from[cls] = 1;
    fs->hash[-1 - k] = (long)fs->nk++;
    return 0;
}

/* what the candidates of class i are: its configurations near its winner, each with the
 * split modes its regime takes */
static int class_lend(fit_set *fs, size_t i)
{
    fclass *c = &fs->c[i];
    for (size_t r = 0; r < c->n && r < FIT_POOL_MAX; r++) {
        const size_t j = c->order[r];
        if (c->us[j] > c->best * (1 + FIT_POOL_MARGIN)) break;
        kconfig k = {0};
        char err[FB_ERRLEN], base[KCONFIG_STR_MAX];
        if (kconfig_parse(c->cfg[j], &k, err, sizeof err) != 0) continue;
        kconfig_str(&k, base, sizeof base);
        strip_key(base, "SPLIT_KV");
        if (c->s.hq == c->s.hkv) strip_key(base, "PACK_GQA"); /* packing means nothing there */
        const double ratio = c->us[j] / c->best;
        if (cand_add(fs, base, 0, (int)i, ratio) != 0) return -1;
        if (!c->dec || shape_ragged(&c->s)) continue;
        /* its own split as a fill target: work-groups x SPLIT_KV per compute unit */
        kconfig full = k;
        kconfig_complete(&full, &fs->dev, &c->s, c->dt);
        size_t grid[3];
        kconfig_grid(&full, &c->s, grid);
        const double own = round_sig((double)grid[0] * grid[1] * grid[2] / (fs->dev.compute_units > 0 ? fs->dev.compute_units : 1), 3);
        if (r == 0) c->own_fill = own;
        if (own > 0 && cand_add(fs, base, own, (int)i, ratio) != 0) return -1;
        for (size_t g = 0; g < NGRID; g++)
            if (cand_add(fs, base, fit_fill_grid[g], (int)i, ratio) != 0) return -1;
    }
    return 0;
}

/* every candidate made for every class of its regime and decode-likeness, looked up there */
static void cand_evaluate(fit_set *fs)
{
    for (size_t k = 0; k < fs->nk; k++) {
        fcand *x = &fs->k[k];
        for (size_t i = 0; i < fs->nc; i++) {
            const fclass *c = &fs->c[i];
            x->ratio[i] = INFINITY;
            if (c->reg != x->reg || c->dec != x->dec) {
                x->cost[i] = (float)FIT_COST_UNFIT;
                continue;
            }
            kconfig cfg;
            char reason[512], text[KCONFIG_STR_MAX];
            if (fallback_instantiate(x->base, x->fill, &c->s, c->dt, &fs->dev, &cfg, reason, sizeof reason) == 0) {
                kconfig_str(&cfg, text, sizeof text);
                x->ratio[i] = (float)class_ratio(c, text);
            }
            x->cost[i] = (float)(isnan(x->ratio[i]) ? FIT_COST_UNTIMED : isinf(x->ratio[i]) ? FIT_COST_UNFIT : log(x->ratio[i]));
        }
    }
}

int fit_load(const char *dir, const char *gpu, const char *backend, const char *const *shape_files, size_t nfiles,
             fit_set **out, char *err, size_t errlen)
{
    char path[4096];
    fit_set *fs = calloc(1, sizeof *fs);
    if (!fs) { snprintf(err, errlen, "out of memory"); return 2; }
    snprintf(fs->backend, sizeof fs->backend, "%s", backend);
    csv_table *man = NULL, *ex = NULL;
    shape_list_t all = {0};
    int rc = 2;
    snprintf(path, sizeof path, "%s/manifest.csv", dir);
    if (csvt_read(path, &man, err, errlen) != 0) goto out;
    char key[128];
    snprintf(key, sizeof key, "%s.arch", backend);
    const char *arch = manifest_value(man, key);
    snprintf(key, sizeof key, "%s.compute_units", backend);
    const char *cu = manifest_value(man, key);
    const char *mgpu = manifest_value(man, "gpu");
    if (!arch || !cu || !mgpu) {
        snprintf(err, errlen, "%s: no %s.arch, %s.compute_units or gpu: the device the %s rows ran on is not described",
                 path, backend, backend, backend);
        goto out;
    }
    if (codegen_target_info(arch, &fs->dev) != 0 || atoi(cu) < 1) {
        snprintf(err, errlen, "%s: %s.arch '%s' or %s.compute_units '%s' is not a device fit-fallback knows", path, backend, arch,
                 backend, cu);
        goto out;
    }
    fs->dev.compute_units = atoi(cu);
    snprintf(fs->gpu, sizeof fs->gpu, "%s", gpu ? gpu : mgpu);
    snprintf(fs->dev.name, sizeof fs->dev.name, "%s", fs->gpu);
    snprintf(path, sizeof path, "%s/tuning.csv", dir);
    if (csvt_read(path, &fs->tuning, err, errlen) != 0) goto out;
    snprintf(path, sizeof path, "%s/explored.csv", dir);
    if (csvt_read(path, &ex, err, errlen) != 0) goto out;
    const int cg = csvt_col(ex, "gpu"), cb = csvt_col(ex, "backend"), cf = csvt_col(ex, "config"), cc = csvt_col(ex, "shape_class"),
              cs = csvt_col(ex, "shape"), cst = csvt_col(ex, "status"), cm = csvt_col(ex, "median_us");
    if (cg < 0 || cb < 0 || cf < 0 || cc < 0 || cs < 0 || cst < 0 || cm < 0) {
        snprintf(err, errlen, "%s:1: not an explored table (needs gpu, backend, config, shape_class, shape, status, median_us)", path);
        goto out;
    }
    for (size_t i = 0; i < ex->nrows; i++) {
        char *const *r = ex->rows[i];
        if (strcmp(r[cg], fs->gpu) || strcmp(r[cb], backend) || strcmp(r[cst], "ok")) continue;
        char *end;
        const double us = strtod(r[cm], &end);
        if (end == r[cm] || !(us > 0) || !isfinite(us)) continue;
        fclass *c = class_get(fs, r[cc], r[cs]);
        if (!c || class_row(c, r[cf], us) != 0) { snprintf(err, errlen, "out of memory"); rc = -1; goto out; }
    }
    if (fs->nc == 0) {
        snprintf(err, errlen, "%s: no ok rows of %s on %s", path, backend, fs->gpu);
        goto out;
    }
    rc = load_shapes(shape_files, nfiles, &all, err, errlen);
    if (rc != 0) goto out;
    rc = 2;
    size_t m = 0;
    for (size_t i = 0; i < fs->nc; i++) { /* classes without a shape of their name leave */
        fclass *c = &fs->c[i];
        if (class_shape(c, &all) != 0 || class_finish(c) != 0) {
            fs->skipped++;
            for (size_t j = 0; j < c->n; j++) free(c->cfg[j]);
            free(c->cfg), free(c->us), free(c->order);
            continue;
        }
        c->reg = fallback_regime(&c->s);
        c->dec = fallback_decode_like(&c->s);
        fallback_features(&c->s, &fs->dev, c->f);
        fs->c[m++] = *c;
    }
    fs->nc = m;
    /* a class whose key its shape no longer gets (written before the work bucket) trains only
     * where its shape has no class of today's key: the same shape twice would count twice */
    for (size_t i = 0; i < fs->nc; i++) {
        fs->c[i].train = 1;
        for (size_t j = 0; j < fs->nc && !fs->c[i].live; j++)
            if (j != i && fs->c[j].live && !strcmp(fs->c[j].shape, fs->c[i].shape)) fs->c[i].train = 0;
    }
    for (size_t i = 0; i < fs->nc; i++)
        if (fs->c[i].train && class_lend(fs, i) != 0) { snprintf(err, errlen, "out of memory"); rc = -1; goto out; }
    cand_evaluate(fs);
    rc = 0;
out:
    csvt_free(man);
    csvt_free(ex);
    free(all.v);
    if (rc) fit_free(fs);
    else *out = fs;
    return rc;
}

size_t fit_unreproduced(const fit_set *fs, char *first, size_t len)
{
    size_t n = 0;
    if (len) first[0] = 0;
    for (size_t i = 0; i < fs->nc; i++) {
        if (!fs->c[i].train) continue;
        int found = 0;
        for (size_t k = 0; k < fs->nk && !found; k++) found = fs->k[k].from[i] && fs->k[k].ratio[i] == 1.0f;
        if (!found && n++ == 0 && len) snprintf(first, len, "%s", fs->c[i].key);
    }
    return n;
}

/* ---- the tree ---------------------------------------------------------------------- */

typedef struct {
    const fit_set *fs;
    fb_regime reg;
    const long *cands; /* the candidates it may choose from */
    size_t ncand;
    fb_rules *out;
    double *pre;     /* scratch: prefix sums */
    double *lmin, *rmin;
    int *pos;
} tree;

/* the fill a node's winners ran at: the geometric mean of its decode classes' own (0: none) */
static double node_fill(const tree *t, const int *S, size_t n)
{
    double logsum = 0;
    int m = 0;
    for (size_t i = 0; i < n; i++)
        if (t->fs->c[S[i]].own_fill > 0) logsum += log(t->fs->c[S[i]].own_fill), m++;
    return m ? exp(logsum / m) : 0;
}

/* Of two candidates equally good on a node's classes, the one whose fill is nearer the
 * fill its winners ran at. A split only changes work-groups below that fill, so the
 * classes cannot tell 0.5 from 4 when all of them ran at 4 or more; the lower one would
 * leave a smaller batch's compute units idle (a generated decode B=4, 32 heads, 669 keys
 * ran unsplit at 0.58x cuDNN), the nearer one splits it to the occupancy the winners
 * had. auto (0) keeps its place: it is the regime's own choice. */
static int fill_nearer(double a, double b, double target)
{
    if (!(target > 0) || !(a > 0) || !(b > 0)) return 0;
    return fabs(log(a / target)) < fabs(log(b / target)) - 1e-9;
}

static double node_best(const tree *t, const int *S, size_t n, long *best)
{
    double bl = INFINITY;
    int bt = -1;
    *best = -1;
    const double target = node_fill(t, S, n);
    for (size_t a = 0; a < t->ncand; a++) {
        const fcand *k = &t->fs->k[t->cands[a]];
        double l = 0;
        int timed = 0;
        for (size_t i = 0; i < n; i++) {
            l += k->cost[S[i]];
            timed += isfinite(k->ratio[S[i]]);
        }
        const int tie = l <= bl + 1e-9 && timed == bt;
        if (l < bl - 1e-9 || (l <= bl + 1e-9 && timed > bt) ||
            (tie && !strcmp(k->base, t->fs->k[*best].base) && fill_nearer(k->fill, t->fs->k[*best].fill, target))) {
            bl = l;
            bt = timed;
            *best = t->cands[a];
        }
    }
    return bl;
}

static const double *sort_val;
static int cmp_val(const void *a, const void *b)
{
    const double x = sort_val[*(const int *)a], y = sort_val[*(const int *)b];
    if (x != y) return x < y ? -1 : 1;
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* a threshold between a and b (a < b) that reads well: d as the lower value, whole numbers
 * for integer features, else the shortest decimal near their geometric mean */
static double split_threshold(int f, double a, double b)
{
    if (f == FB_F_DECODE || f == FB_F_CAUSAL) return 0.5;
    if (f == FB_F_D) return a;
    const double gm = sqrt(a * b);
    if (f == FB_F_GQA || f == FB_F_SQ || f == FB_F_SKV) {
        const double t = floor(gm);
        return t >= a && t < b ? t : a;
    }
    for (int digits = 1; digits <= 17; digits++) {
        const double t = round_sig(gm, digits);
        if (t >= a && t < b) return t;
    }
    return a;
}

static void add_cond(fb_rule *r, int feat, int gt, double thr)
{
    for (int i = 0; i < r->ncond; i++) /* the tighter of two on the same side */
        if (r->cond[i].feat == feat && r->cond[i].gt == gt) {
            if (gt ? thr > r->cond[i].thr : thr < r->cond[i].thr) r->cond[i].thr = thr;
            return;
        }
    if (r->ncond < FB_MAX_CONDS) r->cond[r->ncond++] = (fb_cond){feat, gt, thr};
}

static int cmp_cond(const void *a, const void *b)
{
    const fb_cond *x = a, *y = b;
    if (x->feat != y->feat) return x->feat - y->feat;
    return x->gt - y->gt;
}

static int make_leaf(tree *t, const int *S, size_t n, const fb_cond *path, int npath)
{
    const fit_set *fs = t->fs;
    long k;
    node_best(t, S, n, &k);
    if (k < 0) return 0;
    fb_rule r = {.regime = t->reg, .fill = fs->k[k].fill, .classes = (int)n};
    if (t->reg == FB_REG_PAGED || t->reg == FB_REG_RAGGED) add_cond(&r, FB_F_DECODE, fs->c[S[0]].dec, 0.5);
    for (int i = 0; i < npath; i++) add_cond(&r, path[i].feat, path[i].gt, path[i].thr);
    qsort(r.cond, (size_t)r.ncond, sizeof r.cond[0], cmp_cond);
    snprintf(r.config, sizeof r.config, "%s", fs->k[k].base);
    double logsum = 0;
    int timed = 0, unfit = 0;
    for (size_t i = 0; i < n; i++) {
        const float x = fs->k[k].ratio[S[i]];
        if (isnan(x)) r.untimed++;
        else if (isinf(x)) unfit++;
        else {
            timed++;
            logsum += log(x);
            r.within10 += x <= FIT_WITHIN;
        }
    }
    r.geomean = timed ? exp(logsum / timed) : NAN;
    size_t o = (size_t)snprintf(r.why, sizeof r.why, "fitted on %zu class%s (", n, n == 1 ? "" : "es");
    for (size_t i = 0; i < n && o < sizeof r.why; i++) {
        if (i == 6) {
            o += (size_t)snprintf(r.why + o, sizeof r.why - o, " and %zu more", n - 6);
            break;
        }
        o += (size_t)snprintf(r.why + o, sizeof r.why - o, "%s%s", i ? " " : "", fs->c[S[i]].key);
    }
    const fcand *c = &fs->k[k];
    if (o < sizeof r.why)
        o += (size_t)snprintf(r.why + o, sizeof r.why - o, "): %d within 10%% of their winners, geomean %.3fx over %d timed", r.within10,
                              r.geomean, timed);
    if (r.untimed && o < sizeof r.why) o += (size_t)snprintf(r.why + o, sizeof r.why - o, ", %d untimed", r.untimed);
    if (unfit && o < sizeof r.why) o += (size_t)snprintf(r.why + o, sizeof r.why - o, ", %d it does not fit", unfit);
    if (o < sizeof r.why)
        snprintf(r.why + o, sizeof r.why - o, "; from %s, %s", fs->c[c->origin].key,
                 c->origin_ratio <= 1.0 ? "its winner" : c->origin_ratio <= 1.005 ? "within 0.5% of its winner" : "near its winner");
    if (c->origin_ratio > 1.005 && strlen(r.why) + 40 < sizeof r.why) {
        char *p = strstr(r.why, "near its winner");
        if (p) snprintf(p, sizeof r.why - (size_t)(p - r.why), "%.1f%% over its winner", 100 * (c->origin_ratio - 1));
    }
    return fallback_rules_add(t->out, &r);
}

static int grow(tree *t, int *S, size_t n, fb_cond *path, int npath, int depth)
{
    const fit_set *fs = t->fs;
    long k;
    const double loss = node_best(t, S, n, &k);
    int bf = -1;
    size_t bp = 0;
    double bgain = FIT_MIN_GAIN, bthr = 0;
    /* paged and ragged batches: decoding and prefilling classes part first, whatever it gains */
    int mixed = 0;
    for (size_t i = 1; i < n; i++) mixed |= fs->c[S[i]].dec != fs->c[S[0]].dec;
    double *val = malloc(n * sizeof *val), *fv = malloc(fs->nc * sizeof *fv);
    int *idx = malloc(n * sizeof *idx);
    if (!val || !idx || !fv) {
        free(val), free(idx), free(fv);
        return -1;
    }
    for (int f = 0; f < FB_NFEAT && depth < FIT_MAX_DEPTH + (mixed ? 1 : 0); f++) {
        if (mixed && f != FB_F_DECODE) continue;
        /* the classes in order of feature f */
        for (size_t i = 0; i < fs->nc; i++) fv[i] = fs->c[i].f[f];
        for (size_t i = 0; i < n; i++) idx[i] = S[i];
        sort_val = fv;
        qsort(idx, n, sizeof *idx, cmp_val);
        for (size_t i = 0; i < n; i++) val[i] = fv[idx[i]];
        if (val[0] == val[n - 1]) continue;
        if (mixed) { /* the one split that must be */
            size_t p = 1;
            while (val[p] == val[p - 1]) p++;
            bf = f, bp = p, bthr = 0.5;
            memcpy(S, idx, n * sizeof *S);
            break;
        }
        for (size_t p = 0; p <= n; p++) t->lmin[p] = t->rmin[p] = INFINITY;
        for (size_t a = 0; a < t->ncand; a++) {
            const fcand *c = &fs->k[t->cands[a]];
            double s = 0;
            t->pre[0] = 0;
            for (size_t i = 0; i < n; i++) t->pre[i + 1] = s += c->cost[idx[i]];
            for (size_t p = FIT_MIN_LEAF; p + FIT_MIN_LEAF <= n; p++) {
                if (val[p] == val[p - 1]) continue;
                if (t->pre[p] < t->lmin[p]) t->lmin[p] = t->pre[p];
                if (s - t->pre[p] < t->rmin[p]) t->rmin[p] = s - t->pre[p];
            }
        }
        for (size_t p = FIT_MIN_LEAF; p + FIT_MIN_LEAF <= n; p++) {
            if (val[p] == val[p - 1]) continue;
            const double gain = loss - (t->lmin[p] + t->rmin[p]);
            if (gain > bgain + 1e-9) {
                bgain = gain;
                bf = f;
                bp = p;
                bthr = split_threshold(f, val[p - 1], val[p]);
            }
        }
    }
    if (bf >= 0 && !mixed) { /* order S by the chosen feature */
        for (size_t i = 0; i < fs->nc; i++) fv[i] = fs->c[i].f[bf];
        sort_val = fv;
        qsort(S, n, sizeof *S, cmp_val);
    }
    free(fv);
    free(val);
    free(idx);
    if (bf < 0) return make_leaf(t, S, n, path, npath);
    path[npath] = (fb_cond){bf, 0, bthr};
    if (grow(t, S, bp, path, npath + 1, depth + 1) != 0) return -1;
    path[npath] = (fb_cond){bf, 1, bthr};
    return grow(t, S + bp, n - bp, path, npath + 1, depth + 1);
}

/* the rules of regime reg fitted on the classes train[0..n) (appended to out) */
static int fit_regime(const fit_set *fs, fb_regime reg, const int *train, size_t n, fb_rules *out)
{
    if (n == 0) return 0;
    tree t = {.fs = fs, .reg = reg, .out = out};
    long *cands = malloc((fs->nk ? fs->nk : 1) * sizeof *cands);
    int *S = malloc(n * sizeof *S);
    t.pre = malloc((n + 1) * sizeof *t.pre);
    t.lmin = malloc((n + 1) * sizeof *t.lmin);
    t.rmin = malloc((n + 1) * sizeof *t.rmin);
    int rc = -1;
    if (!cands || !S || !t.pre || !t.lmin || !t.rmin) goto out;
    for (size_t k = 0; k < fs->nk; k++) {
        if (fs->k[k].reg != reg) continue;
        int lent = 0;
        for (size_t i = 0; i < n && !lent; i++) lent = fs->k[k].from[train[i]];
        if (lent) cands[t.ncand++] = (long)k;
    }
    t.cands = cands;
    memcpy(S, train, n * sizeof *S);
    fb_cond path[FB_MAX_CONDS];
    rc = grow(&t, S, n, path, 0, 0);
out:
    free(cands), free(S), free(t.pre), free(t.lmin), free(t.rmin);
    return rc;
}

static int fit_rules_except(const fit_set *fs, int only_reg, const char *except_shape, fb_rules *out)
{
    memset(out, 0, sizeof *out);
    int *train = malloc((fs->nc ? fs->nc : 1) * sizeof *train);
    if (!train) return -1;
    for (int reg = 0; reg < FB_NREG; reg++) {
        if (only_reg >= 0 && reg != only_reg) continue;
        size_t n = 0;
        for (size_t i = 0; i < fs->nc; i++)
            if (fs->c[i].train && fs->c[i].reg == (fb_regime)reg && (!except_shape || strcmp(fs->c[i].shape, except_shape)))
                train[n++] = (int)i;
        if (fit_regime(fs, (fb_regime)reg, train, n, out) != 0) {
            free(train);
            fallback_rules_free(out);
            return -1;
        }
    }
    free(train);
    for (size_t i = 0; i < out->n; i++) out->v[i].id = (int)i + 1;
    return 0;
}

int fit_rules(const fit_set *fs, fb_rules *out) { return fit_rules_except(fs, -1, NULL, out); }

/* ---- leave one class out ----------------------------------------------------------- */

const char *const fit_loo_header[] = {"gpu", "backend", "shape_class", "shape", "regime", "winner_us", "winner",
                                      "rule_source", "rule_config", "rule_us", "rule_ratio",
                                      "default_config", "default_us", "default_ratio",
                                      "nearest_source", "nearest_config", "nearest_us", "nearest_ratio"};
const size_t fit_loo_ncols = sizeof fit_loo_header / sizeof fit_loo_header[0];
const char *const fit_loo_summary_header[] = {"gpu", "backend", "regime", "method", "classes", "timed", "within_10pct",
                                              "untimed", "share_of_timed", "share_of_all", "geomean_of_timed"};
const size_t fit_loo_summary_ncols = sizeof fit_loo_summary_header / sizeof fit_loo_summary_header[0];

enum { M_RULE, M_DEFAULT, M_NEAREST, NMETHOD };
static const char *const method_names[NMETHOD] = {"fitted rule", "regime default", "nearest class (before)"};

typedef struct {
    int classes, timed, within;
    double logsum;
} tally;

static void tally_add(tally *t, double ratio)
{
    t->classes++;
    if (!isfinite(ratio)) return;
    t->timed++;
    t->within += ratio <= FIT_WITHIN;
    t->logsum += log(ratio);
}

static int summary_row(csv_table *sum, const fit_set *fs, const char *regime, int m, const tally *t)
{
    char f[7][32];
    snprintf(f[0], 32, "%d", t->classes);
    snprintf(f[1], 32, "%d", t->timed);
    snprintf(f[2], 32, "%d", t->within);
    snprintf(f[3], 32, "%d", t->classes - t->timed);
    fb_fmt_num(f[4], 32, t->timed ? (double)t->within / t->timed : NAN, "%.3f");
    fb_fmt_num(f[5], 32, t->classes ? (double)t->within / t->classes : NAN, "%.3f");
    fb_fmt_num(f[6], 32, t->timed ? exp(t->logsum / t->timed) : NAN, "%.3f");
    const char *row[] = {fs->gpu, fs->backend, regime, method_names[m], f[0], f[1], f[2], f[3], f[4], f[5], f[6]};
    return csvt_add(sum, row);
}

int fit_loo(const fit_set *fs, csv_table *rows, csv_table *summary)
{
    tally tl[FB_NREG + 1][NMETHOD];
    memset(tl, 0, sizeof tl);
    const char **skip = malloc((fs->nc ? fs->nc : 1) * sizeof *skip);
    if (!skip) return -1;
    for (size_t h = 0; h < fs->nc; h++) {
        const fclass *c = &fs->c[h];
        if (!c->live) continue;
        fb_rules rules;
        if (fit_rules_except(fs, c->reg, c->shape, &rules) != 0) {
            free(skip);
            return -1;
        }
        char src[3][600], txt[3][KCONFIG_STR_MAX];
        double ratio[3];
        kconfig cfg;
        fallback_pick(&rules, "fallback.csv", &c->s, c->dt, &fs->dev, "no class of its regime to fit", &cfg, src[M_RULE],
                      sizeof src[0]);
        fallback_rules_free(&rules);
        kconfig_str(&cfg, txt[M_RULE], sizeof txt[0]);
        fallback_default(&c->s, c->dt, &fs->dev, &cfg);
        kconfig_str(&cfg, txt[M_DEFAULT], sizeof txt[0]);
        snprintf(src[M_DEFAULT], sizeof src[0], "default for %s", fallback_regime_name(c->reg));
        size_t nskip = 0;
        for (size_t i = 0; i < fs->nc; i++)
            if (!strcmp(fs->c[i].shape, c->shape)) skip[nskip++] = fs->c[i].key;
        cfg = (kconfig){0};
        if (tune_lookup_nearest(fs->tuning, fs->gpu, fs->backend, &c->s, c->dt, skip, nskip, &cfg, src[M_NEAREST], sizeof src[0]) != 1)
            cfg = (kconfig){0};
        kconfig_complete(&cfg, &fs->dev, &c->s, c->dt);
        kconfig_str(&cfg, txt[M_NEAREST], sizeof txt[0]);
        char f[3][2][32], best[32];
        for (int m = 0; m < NMETHOD; m++) {
            ratio[m] = class_ratio(c, txt[m]);
            fb_fmt_num(f[m][0], 32, ratio[m] * c->best, "%.3f");
            fb_fmt_num(f[m][1], 32, ratio[m], "%.4f");
            tally_add(&tl[c->reg][m], ratio[m]);
            tally_add(&tl[FB_NREG][m], ratio[m]);
        }
        snprintf(best, sizeof best, "%.3f", c->best);
        const char *row[] = {fs->gpu, fs->backend, c->key, c->shape, fallback_regime_name(c->reg), best, c->cfg[c->order[0]],
                             src[M_RULE], txt[M_RULE], f[M_RULE][0], f[M_RULE][1],
                             txt[M_DEFAULT], f[M_DEFAULT][0], f[M_DEFAULT][1],
                             src[M_NEAREST], txt[M_NEAREST], f[M_NEAREST][0], f[M_NEAREST][1]};
        if (csvt_add(rows, row) != 0) {
            free(skip);
            return -1;
        }
    }
    free(skip);
    for (int r = 0; r <= FB_NREG; r++)
        for (int m = 0; m < NMETHOD; m++) {
            if (tl[r][m].classes == 0) continue;
            if (summary_row(summary, fs, r < FB_NREG ? fallback_regime_name((fb_regime)r) : "all", m, &tl[r][m]) != 0) return -1;
        }
    return 0;
}

/* ---- the command --------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fabench fit-fallback --results DIR [options]\n\n"
            "Fits the rules `run --tuned` takes for a shape whose class has no row in DIR/tuning.csv:\n"
            "per regime (decode, short-prefill, long-prefill, ragged, paged) a small decision tree over\n"
            "the shape's features (decode, d, gqa, causal, sq, skv, kvq = skv/sq, fill = work-groups of a\n"
            "nominal tiling per compute unit), each leaf the configuration with the smallest summed\n"
            "log time over its winner across the leaf's classes, from DIR/explored.csv's times. Writes\n"
            "DIR/fallback.csv: one row per rule with its regime, conditions, configuration, SPLIT_KV\n"
            "(auto, or fill=W: the split giving about W work-groups per compute unit) and why.\n\n"
            "  --results DIR   a results folder: tuning.csv, explored.csv, manifest.csv (the device:\n"
            "                  BACKEND.arch and BACKEND.compute_units)\n"
            "  --backend NAME  the runtime whose rows to fit (default: every one the manifest describes\n"
            "                  and tuning.csv holds)\n"
            "  --shapes FILE   more shape files to find the classes' shapes in (besides the suites;\n"
            "                  repeatable)\n"
            "  --out FILE      the rules' file (default DIR/fallback.csv)\n"
            "  --loo           also check them by leaving one class out at a time: for each class whose\n"
            "                  key its shape gets today, the rules fitted on the other classes (none of\n"
            "                  its shape), the regime's default and the nearest-class lookup that came\n"
            "                  before choose its configuration, looked up among its own explored times:\n"
            "                  DIR/fallback_loo.csv (per class), DIR/fallback_loo_summary.csv (per\n"
            "                  regime: the share within 10%% of the class's winner, of the timed and of\n"
            "                  all; untimed: the configuration was never timed in that class); the\n"
            "                  summary is printed\n"
            "  --quiet         no summary on stdout\n");
}

static void print_summary(const csv_table *sum, size_t from)
{
    const char *last = "";
    printf("  %-14s %-24s %7s %9s %8s %10s %10s %8s\n", "regime", "method", "classes", "within10", "untimed", "of timed",
           "of all", "geomean");
    for (size_t i = from; i < sum->nrows; i++) {
        char *const *r = sum->rows[i];
        printf("  %-14s %-24s %7s %9s %8s %10s %10s %8s\n", strcmp(last, r[2]) ? r[2] : "", r[3], r[4], r[6], r[7], r[8], r[9],
               r[10]);
        last = r[2];
    }
}

int cmd_fit_fallback(int argc, char **argv)
{
    enum { O_RESULTS = 1, O_BACKEND, O_SHAPES, O_OUT, O_LOO, O_QUIET, O_HELP };
    static const struct option opts[] = {{"results", required_argument, 0, O_RESULTS}, {"backend", required_argument, 0, O_BACKEND},
                                         {"shapes", required_argument, 0, O_SHAPES},   {"out", required_argument, 0, O_OUT},
                                         {"loo", no_argument, 0, O_LOO},               {"quiet", no_argument, 0, O_QUIET},
                                         {"help", no_argument, 0, O_HELP},             {0, 0, 0, 0}};
    const char *dir = NULL, *backend = NULL, *outp = NULL;
    const char *files[16];
    size_t nfiles = 0;
    int loo = 0, quiet = 0, o;
    optind = 1;
    opterr = 0;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (o) {
        case O_RESULTS: dir = optarg; break;
        case O_BACKEND: backend = optarg; break;
        case O_SHAPES:
            if (nfiles == sizeof files / sizeof files[0]) {
                fprintf(stderr, "fabench fit-fallback: at most %zu --shapes files\n", sizeof files / sizeof files[0]);
                return FB_EXIT_BADINPUT;
            }
            files[nfiles++] = optarg;
            break;
        case O_OUT: outp = optarg; break;
        case O_LOO: loo = 1; break;
        case O_QUIET: quiet = 1; break;
        case 'h':
        case O_HELP: usage(stdout); return 0;
        default:
            fprintf(stderr, "fabench fit-fallback: unknown or incomplete option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return FB_EXIT_BADINPUT;
        }
    }
    if (optind < argc || !dir) {
        fprintf(stderr, "fabench fit-fallback: %s\n", optind < argc ? "unexpected argument" : "--results DIR is required");
        usage(stderr);
        return FB_EXIT_BADINPUT;
    }
    char err[FB_ERRLEN] = "", path[4096], out_default[4096];
    snprintf(out_default, sizeof out_default, "%s/fallback.csv", dir);
    if (!outp) outp = out_default;
    /* the runtimes to fit: --backend, else those tuning.csv names */
    snprintf(path, sizeof path, "%s/tuning.csv", dir);
    csv_table *tun;
    if (csvt_read(path, &tun, err, sizeof err) != 0) {
        fprintf(stderr, "fabench fit-fallback: %s\n", err);
        return FB_EXIT_BADINPUT;
    }
    const char *backs[8];
    size_t nb = 0;
    const int cb = csvt_col(tun, "backend");
    if (backend) backs[nb++] = backend;
    for (size_t i = 0; !backend && cb >= 0 && i < tun->nrows && nb < 8; i++) {
        size_t j = 0;
        while (j < nb && strcmp(backs[j], tun->rows[i][cb])) j++;
        if (j == nb) backs[nb++] = tun->rows[i][cb];
    }
    csv_table *rules_t = csvt_new(fallback_header, fallback_ncols);
    csv_table *loo_t = csvt_new(fit_loo_header, fit_loo_ncols);
    csv_table *sum_t = csvt_new(fit_loo_summary_header, fit_loo_summary_ncols);
    int rc = 0, fitted = 0;
    if (!rules_t || !loo_t || !sum_t) rc = 1;
    for (size_t b = 0; !rc && b < nb; b++) {
        fit_set *fs;
        int lr = fit_load(dir, NULL, backs[b], files, nfiles, &fs, err, sizeof err);
        if (lr != 0) {
            if (backend) {
                fprintf(stderr, "fabench fit-fallback: %s\n", err);
                rc = FB_EXIT_BADINPUT;
            } else fprintf(stderr, "fabench fit-fallback: %s: skipped (%s)\n", backs[b], err);
            continue;
        }
        fb_rules rules;
        size_t ncls, nlive, nskip, ncand;
        fit_counts(fs, &ncls, &nlive, &nskip, &ncand);
        if (fit_rules(fs, &rules) != 0 || fallback_table_add(rules_t, fs->gpu, fs->backend, &rules) != 0) rc = 1;
        char lost[96];
        const size_t nlost = fit_unreproduced(fs, lost, sizeof lost);
        if (nlost) /* the candidates would not stand for the classes that lent them */
            fprintf(stderr, "fabench fit-fallback: %s: the winners of %zu classes (%s first) are not made again from their rules' form\n",
                    fs->backend, nlost, lost);
        if (!quiet && !rc)
            printf("fit-fallback: %s / %s: %zu classes (%zu of today's keys; %zu without a shape left out), %zu candidates, %zu rules\n",
                   fs->gpu, fs->backend, ncls, nlive, nskip, ncand, rules.n);
        fallback_rules_free(&rules);
        const size_t from = sum_t->nrows;
        if (!rc && loo && fit_loo(fs, loo_t, sum_t) != 0) rc = 1;
        if (!rc && loo && !quiet) {
            printf("leave one class out (%zu classes): the configuration each method picks, by the class's own explored times\n", nlive);
            print_summary(sum_t, from);
        }
        fitted++;
        fit_free(fs);
    }
    csvt_free(tun);
    if (!rc && !fitted) {
        fprintf(stderr, "fabench fit-fallback: nothing to fit in %s\n", dir);
        rc = FB_EXIT_BADINPUT;
    }
    if (!rc && csvt_write_atomic(rules_t, outp, err, sizeof err) != 0) rc = 1;
    if (!rc && loo) {
        snprintf(path, sizeof path, "%s/fallback_loo.csv", dir);
        if (csvt_write_atomic(loo_t, path, err, sizeof err) != 0) rc = 1;
        snprintf(path, sizeof path, "%s/fallback_loo_summary.csv", dir);
        if (!rc && csvt_write_atomic(sum_t, path, err, sizeof err) != 0) rc = 1;
    }
    if (rc == 1) fprintf(stderr, "fabench fit-fallback: %s\n", err[0] ? err : "out of memory");
    if (!rc && !quiet) printf("fit-fallback: wrote %s%s\n", outp, loo ? ", fallback_loo.csv and fallback_loo_summary.csv" : "");
    csvt_free(rules_t);
    csvt_free(loo_t);
    csvt_free(sum_t);
    return rc;
}
