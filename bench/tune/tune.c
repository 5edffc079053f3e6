/* tune.c: `fabench tune`: per shape class, enumerate the space, verify then time every
 * candidate the searcher asks for, keep the best; explored.csv records them all. */
#define _GNU_SOURCE
#include "tune.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attn.h"
#include "csvio.h"
#include "fallback.h"
#include "manifest.h"
#include "shapes.h"
#include "search.h"
#include "space.h"

static const char *const explored_header[] = {
    "gpu", "backend", "kernel", "config", "shape_class", "shape", "status", "reason", "compile_ms",
    "median_us", "tflops", "registers", "spill_bytes", "shared_bytes", "private_bytes", "binary_bytes",
    "max_abs_err", "strategy", "step", "reps", "sm_mhz", "utc"};
/* explored.csv files written before sm_mhz (the GPU's median SM clock while the candidate
 * was timed), or before utc (when the row was written: a class's rows of one run span its
 * search), are read into this schema */
#define EXPLORED_OLDEST_NCOLS 20
#define TUNE_ABANDON 4.0
/* --time spent before any candidate of a class verified: this many tries more */
#define TUNE_LATE_TRIES 3
/* rounds of the head-to-head between this run's best and earlier runs' (each contender
 * timed once a round, in turn; its fastest round counts) */
#define TUNE_REMATCH_ROUNDS 2
/* how many of a class's fastest explored configurations enter it */
#define TUNE_REMATCH_TOP 3
#define EXPLORED_NCOLS (sizeof explored_header / sizeof explored_header[0])
static const char *const tuning_header[] = {
    "gpu", "backend", "shape_class", "config", "median_us", "tflops", "configs_explored", "configs_in_space",
    "shape", "strategy", "date"};
#define TUNING_NCOLS (sizeof tuning_header / sizeof tuning_header[0])
/* pruned.csv: the space's combinations for a class that were dropped before compiling: a
 * row per (gpu, backend, class, rule), with how many it dropped and one of them */
static const char *const pruned_header[] = {"gpu", "backend", "shape_class", "shape", "rule", "configs", "example", "utc"};
#define PRUNED_NCOLS (sizeof pruned_header / sizeof pruned_header[0])

static int pow2_ceil(int x)
{
    int p = 1;
    while (p < x && p < (1 << 30)) p <<= 1;
    return p;
}

int tune_decode_share(const shape_t *s)
{
    int dec = 0;
    for (int b = 0; b < s->batch; b++) {
        int q, k;
        shape_seq_lens(s, b, &q, &k);
        dec += q <= TUNE_DECODE_MAX_SQ;
    }
    return (int)floor(4.0 * dec / s->batch + 0.5) * 25;
}

void tune_class_key(const shape_t *s, dtype_t dt, char *out, size_t len)
{
    int n = snprintf(out, len, "%s-d%d-c%d-g%d-q%d-k%d", dtype_name(dt), s->d, s->causal ? 1 : 0, s->hq / s->hkv,
                     pow2_ceil(s->sq), pow2_ceil(s->skv));
    /* the work bucket. Decode: a handful of query rows per KV head, so the grid is about
     * B * Hkv work-groups before split-KV, and how that fills the GPU decides the winner
     * (B=16 and B=64 want different SPLIT_KV). A small dense prefill grid: its fill decides
     * too (a B = 1 S = 1024 launch is one wave or less), so it keys on B * Hq */
    int w = 0;
    if (pow2_ceil(s->sq) <= TUNE_DECODE_MAX_SQ)
        w = pow2_ceil(s->batch * s->hkv);
    else if (!shape_ragged(s) && !shape_paged(s) && (long)s->batch * s->hq * pow2_ceil(s->sq) <= TUNE_PREFILL_SMALL_ROWS)
        w = pow2_ceil(s->batch * s->hq);
    if (w && n > 0 && (size_t)n < len) n += snprintf(out + n, len - (size_t)n, "-w%d", w);
    /* a ragged or mixed batch compiles to the VARLEN kernel; how many of its sequences
     * decode decides whether the launch is a prefill with stragglers or a decode with a
     * few long rows */
    if (shape_ragged(s) && n > 0 && (size_t)n < len)
        n += snprintf(out + n, len - (size_t)n, "-v%d", tune_decode_share(s));
    /* a paged KV cache compiles to another kernel (and bounds BLOCK_N) */
    if (shape_paged(s) && n > 0 && (size_t)n < len) snprintf(out + n, len - (size_t)n, "-p%d", s->page);
}

int tune_class_parse(const char *key, tune_class *out)
{
    char name[16];
    const char *dash = strchr(key, '-');
    if (!dash || (size_t)(dash - key) >= sizeof name) return -1;
    memcpy(name, key, (size_t)(dash - key));
    name[dash - key] = 0;
    tune_class c = {.v = -1};
    if (dtype_parse(name, &c.dt) != 0 || strcmp(name, dtype_name(c.dt))) return -1;
    int n = 0;
    if (sscanf(dash, "-d%d-c%d-g%d-q%d-k%d%n", &c.d, &c.c, &c.g, &c.q, &c.k, &n) != 5) return -1;
    const char *rest = dash + n;
    int m = 0;
    if (!strncmp(rest, "-w", 2)) { /* decode and small prefill grids: a power of two */
        if (sscanf(rest, "-w%d%n", &c.w, &m) != 1 || c.w < 1 || (c.w & (c.w - 1))) return -1;
        rest += m;
    }
    if (!strncmp(rest, "-v", 2)) { /* ragged batches: the decode share, 0..100 by 25 */
        m = 0;
        if (sscanf(rest, "-v%d%n", &c.v, &m) != 1 || c.v < 0 || c.v > 100 || c.v % 25) return -1;
        rest += m;
    }
    if (!strncmp(rest, "-p", 2)) { /* a paged KV cache: the page size, a power of two from 16 */
        m = 0;
        if (sscanf(rest, "-p%d%n", &c.p, &m) != 1 || c.p < 16 || (c.p & (c.p - 1))) return -1;
        rest += m;
    }
    if (*rest || !fb_d_supported(c.d) || (c.c != 0 && c.c != 1) || c.g < 1 || c.q < 1 || c.k < 1 || (c.q & (c.q - 1)) ||
        (c.k & (c.k - 1)))
        return -1;
    *out = c;
    return 0;
}

/* A class's fastest ok explored rows, distinct configurations, fastest first (at most
 * TUNE_REMATCH_TOP); earlier[i] says that row is older than row first_new (another run's). */
/* Configurations as kconfig_str writes them (the form explored.csv holds); NULL when out
 * of memory. */
static char **config_strings(const kconfig *c, long n)
{
    char **out = malloc(sizeof(char *) * (size_t)(n > 0 ? n : 1));
    for (long i = 0; out && i < n; i++) {
        char buf[KCONFIG_STR_MAX];
        kconfig_str(&c[i], buf, sizeof buf);
        if (!(out[i] = strdup(buf))) {
            while (i-- > 0) free(out[i]);
            free(out);
            out = NULL;
        }
    }
    return out;
}

/* A space's configurations for this shape as strings (config_strings); NULL when out of
 * memory. */
static char **declared_strings(const space_t *sp, const rt_device_info *dev, const shape_t *s, dtype_t dt, long *n)
{
    kconfig *all;
    long before;
    *n = space_enumerate(sp, dev, s, dt, &all, &before);
    if (*n < 0) return NULL;
    char **out = config_strings(all, *n);
    free(all);
    return out;
}

static void strings_free(char **v, long n)
{
    for (long i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

/* Is cfg one of the n strings of list? */
static int in_declared_list(const char *const *list, long n, const char *cfg)
{
    for (long i = 0; i < n; i++)
        if (!strcmp(list[i], cfg)) return 1;
    return 0;
}

/* Is cfg one of the declared space's configurations for this class? (NULL: no filter) */
static int in_declared(const char *const *decl, long ndecl, const char *cfg)
{
    return !decl || in_declared_list(decl, ndecl, cfg);
}

/* The class's fastest ok explored configurations, skipping those that kernels/space.csv no
 * longer declares (one a probe or a dropped switch explored must not win the class);
 * *best_earlier: the fastest of the rows earlier runs wrote, whether among those or not
 * (NULL when there are none). */
static int class_top(const csv_table *e, const char *gpu, const char *backend, const char *cls, size_t first_new,
                     const char *const *decl, long ndecl, const char **out, int *earlier, const char **best_earlier)
{
    int cg = csvt_col(e, "gpu"), cb = csvt_col(e, "backend"), cc = csvt_col(e, "shape_class"), cf = csvt_col(e, "config"),
        cs = csvt_col(e, "status"), cu = csvt_col(e, "median_us");
    double t[TUNE_REMATCH_TOP], t_earlier = INFINITY;
    int n = 0;
    *best_earlier = NULL;
    if (cg < 0 || cb < 0 || cc < 0 || cf < 0 || cs < 0 || cu < 0) return 0;
    for (size_t i = 0; i < e->nrows; i++) {
        char **row = e->rows[i];
        if (strcmp(row[cs], "ok") || !row[cu][0] || strcmp(row[cc], cls) || strcmp(row[cb], backend) || strcmp(row[cg], gpu))
            continue;
        if (!in_declared(decl, ndecl, row[cf])) continue;
        const double us = atof(row[cu]);
        if (i < first_new && us < t_earlier) {
            t_earlier = us;
            *best_earlier = row[cf];
        }
        int j = 0;
        while (j < n && strcmp(out[j], row[cf])) j++;
        if (j < n) { /* a configuration twice: its faster row */
            if (us >= t[j]) continue;
            for (; j + 1 < n; j++) { out[j] = out[j + 1]; t[j] = t[j + 1]; earlier[j] = earlier[j + 1]; }
            n--;
        }
        if (n == TUNE_REMATCH_TOP && us >= t[n - 1]) continue;
        if (n < TUNE_REMATCH_TOP) n++;
        for (j = n - 1; j > 0 && t[j - 1] > us; j--) { out[j] = out[j - 1]; t[j] = t[j - 1]; earlier[j] = earlier[j - 1]; }
        out[j] = row[cf];
        t[j] = us;
        earlier[j] = i < first_new;
    }
    return n;
}

/* The row of tuning for this device, its runtime and class key; tuning->nrows if none. */
static size_t class_row(const csv_table *tuning, const rt_device *dev, const char *key)
{
    const int cg = csvt_col(tuning, "gpu"), cb = csvt_col(tuning, "backend"), cc = csvt_col(tuning, "shape_class");
    size_t r = 0;
    while (r < tuning->nrows && (strcmp(tuning->rows[r][cg], dev->info.name) || strcmp(tuning->rows[r][cb], dev->rt->name) ||
                                 strcmp(tuning->rows[r][cc], key)))
        r++;
    return r;
}

/* The candidate nearest to cfg (a ',' or ';' separated text form): the first with the
 * fewest tuned fields different, their number in *dist; -1 if cfg does not parse or n = 0. */
static long cand_nearest(const kconfig *cands, long n, const char *cfg, int *dist)
{
    char err[FB_ERRLEN];
    kconfig k = {0};
    if (kconfig_parse(cfg, &k, err, sizeof err) != 0) return -1;
    return kconfig_nearest(cands, n, &k, dist);
}

int tune_borrow_classes(const char *key, const char *const *keys, size_t n, size_t *out)
{
    int m = 0;
    for (; m < TUNE_LOCAL_BORROW; m++) {
        size_t pick = n;
        double pd = INFINITY;
        for (size_t j = 0; j < n; j++) {
            int taken = !keys[j] || !strcmp(keys[j], key);
            for (int u = 0; u < m; u++) taken |= out[u] == j;
            if (taken) continue;
            const double d = tune_class_distance(keys[j], key, TUNE_BORROW_DTYPE_COST, TUNE_BORROW_CAUSAL_COST);
            if (d < pd) { pd = d; pick = j; }
        }
        if (pick == n) break;
        out[m] = pick;
    }
    return m;
}

/* The seeds of a local climb for class key: the candidate nearest the class's tuning.csv
 * row, then those nearest the rows of the TUNE_LOCAL_BORROW nearest other classes of this
 * GPU and runtime. */
static void local_seeds(searcher *se, const csv_table *tuning, const rt_device *dev, const char *key, const kconfig *cands,
                        long n)
{
    const int cg = csvt_col(tuning, "gpu"), cb = csvt_col(tuning, "backend"), cc = csvt_col(tuning, "shape_class"),
              cf = csvt_col(tuning, "config");
    if (cg < 0 || cb < 0 || cc < 0 || cf < 0) return;
    const size_t r = class_row(tuning, dev, key);
    int dist;
    if (r < tuning->nrows) searcher_seed(se, cand_nearest(cands, n, tuning->rows[r][cf], &dist));
    /* the other rows of this GPU and runtime */
    const char **keys = malloc(sizeof *keys * (tuning->nrows ? tuning->nrows : 1));
    if (!keys) return;
    for (size_t j = 0; j < tuning->nrows; j++)
        keys[j] = strcmp(tuning->rows[j][cg], dev->info.name) || strcmp(tuning->rows[j][cb], dev->rt->name)
                      ? NULL : tuning->rows[j][cc];
    size_t lend[TUNE_LOCAL_BORROW];
    const int m = tune_borrow_classes(key, keys, tuning->nrows, lend);
    for (int b = 0; b < m; b++) searcher_seed(se, cand_nearest(cands, n, tuning->rows[lend[b]][cf], &dist));
    free(keys);
}

/* A contender for the head-to-head, unless it is one already. */
static long explored_find(const csv_table *e, const rt_device *dev, const char *cls, const char *cfg);
static void note_candidate(const char *path, const char *explored_path, const rt_device *dev, const char *cfg,
                           const char *cls, const char *shape, const char *strategy, const char *step, int retime);
static int failed_before(const csv_table *e, const rt_device *dev, const char *cls, const char *cfg);

/* cfg joins the contenders, unless it is one already or its newest row of the class failed */
static void contend(const char **con, int *src, int *ncon, const char *cfg, int source, const csv_table *e,
                    const rt_device *dev, const char *cls)
{
    for (int j = 0; j < *ncon; j++)
        if (!strcmp(con[j], cfg)) return;
    if (failed_before(e, dev, cls, cfg)) return;
    con[*ncon] = cfg;
    src[(*ncon)++] = source;
}

/* Sets columns col[0..n) of explored row r to val[0..n). 0, or -1 (out of memory). */
static int explored_set(csv_table *e, size_t r, const char *const *col, const char *const *val, size_t n, char *err, size_t errlen)
{
    for (size_t k = 0; k < n; k++) {
        const int j = csvt_col(e, col[k]);
        if (j < 0 || csvt_set(e, r, (size_t)j, val[k]) != 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* A contender that failed when timed again (wrong, crashed, hung): its explored row of
 * this class takes the status and reason (a row is added when it has none), so neither
 * this run nor a resumed one offers it again. 0, or -1 with err. */
static int rematch_failed(csv_table *e, const char *path, const rt_device *dev, const char *cls, const shape_t *s,
                          const char *strategy, const char *step, const char *cfg, const attn_result *res, char *err,
                          size_t errlen)
{
    char reason[FB_ERRLEN], utc[32];
    snprintf(reason, sizeof reason, "timed again beside the other contenders: %.900s", res->reason);
    fb_utc_now(utc, sizeof utc);
    const long r = explored_find(e, dev, cls, cfg);
    if (r < 0) {
        const char *row[EXPLORED_NCOLS] = {dev->info.name, dev->rt->name, "attn_fwd", cfg, cls, s->name,
                                           status_name(res->status), reason, "", "", "", "-1", "-1", "-1", "-1", "-1",
                                           "", strategy, step, "", "", utc};
        if (csvt_add(e, row) != 0) { snprintf(err, errlen, "out of memory"); return -1; }
    } else {
        const char *const col[] = {"status", "reason", "median_us", "tflops", "reps", "sm_mhz", "utc"};
        const char *const val[] = {status_name(res->status), reason, "", "", "", "", utc};
        if (explored_set(e, (size_t)r, col, val, sizeof col / sizeof col[0], err, errlen) != 0) return -1;
    }
    return path ? csvt_write_atomic(e, path, err, errlen) : 0;
}

/* 1: cfg's newest explored row of this class failed (a contender that failed before) */
static int failed_before(const csv_table *e, const rt_device *dev, const char *cls, const char *cfg)
{
    const long r = explored_find(e, dev, cls, cfg);
    return r >= 0 && strcmp(e->rows[r][csvt_col(e, "status")], "ok") != 0;
}

/* What `run --tuned` would take for a class without its tuning.csv row (kind 1: fallback.csv's
 * rule for its regime and features, else the regime's default: fallback_pick) and the
 * runtime's default configuration (kind 0, where it differs); each made for the class's
 * representative shape. */
#define TUNE_FALLBACKS 2
typedef struct {
    char cfg[TUNE_FALLBACKS][KCONFIG_STR_MAX]; /* [0]: what the run takes without the row */
    int kind[TUNE_FALLBACKS];                  /* 0: the runtime's default, 1: run --tuned's fallback */
    char source[600];                          /* kind 1's config_source */
    int n;
} fallbacks;

/* The fallbacks of a class whose representative shape is s; rules: fallback.csv's for this
 * GPU and runtime (NULL: no fallback.csv in the results folder). */
static void class_fallbacks(const fb_rules *rules, const rt_device *dev, const shape_t *s, dtype_t dt, fallbacks *fb)
{
    kconfig c;
    fb->n = 0;
    fallback_pick(rules && rules->n ? rules : NULL, "fallback.csv", s, dt, &dev->info,
                  rules ? "fallback.csv has no rules of this GPU and runtime" : "no fallback.csv in the results folder", &c,
                  fb->source, sizeof fb->source);
    kconfig_str(&c, fb->cfg[fb->n], sizeof fb->cfg[0]);
    fb->kind[fb->n++] = 1;
    c = (kconfig){0};
    kconfig_complete(&c, &dev->info, s, dt);
    kconfig_str(&c, fb->cfg[fb->n], sizeof fb->cfg[0]);
    if (strcmp(fb->cfg[0], fb->cfg[1])) fb->kind[fb->n++] = 0;
}

/* Adds the explored row of configuration cfg run as res (step: its place in the class's
 * search; reason: the row's reason column). 0, or -1 (out of memory). */
static int explored_add(csv_table *e, const rt_device *dev, const char *cls, const shape_t *s, const char *strategy, long step,
                        const char *cfg, const attn_result *res, const char *reason)
{
    const int ok = res->status == ST_OK;
    const double us = res->us.median;
    char f[12][48];
    if (ok) snprintf(f[11], 48, "%zu", res->us.n); else f[11][0] = 0;
    snprintf(f[0], 48, "%.1f", res->compile_ms);
    if (ok) snprintf(f[1], 48, "%.3f", us); else f[1][0] = 0;
    if (ok) snprintf(f[2], 48, "%.4f", shape_flops(s) / (us * 1e-6) / 1e12); else f[2][0] = 0;
    snprintf(f[3], 48, "%ld", res->attrs.registers);
    snprintf(f[4], 48, "%ld", res->attrs.spill_bytes);
    snprintf(f[5], 48, "%ld", res->attrs.shared_bytes < 0 ? -1 : res->attrs.shared_bytes + (long)kconfig_dynamic_shared(&res->config, s->d));
    snprintf(f[6], 48, "%ld", res->attrs.private_bytes);
    snprintf(f[7], 48, "%ld", res->attrs.binary_bytes);
    if (res->ver.rows_checked) snprintf(f[8], 48, "%.3g", res->ver.max_abs_err); else f[8][0] = 0;
    snprintf(f[9], 48, "%ld", step);
    fb_fmt_num(f[10], 48, ok && res->tel.samples > 0 ? res->tel.sm_mhz : NAN, "%.0f");
    char utc[32];
    fb_utc_now(utc, sizeof utc);
    const char *row[EXPLORED_NCOLS] = {dev->info.name, dev->rt->name, "attn_fwd", cfg, cls, s->name, status_name(res->status),
                                       reason, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], strategy, f[9], f[11],
                                       f[10], utc};
    return csvt_add(e, row);
}

/* A fallback's explored row, in the class where the head-to-head first timed it: its
 * fastest round there. 0, or -1 with err. */
static int fallback_row(csv_table *e, const char *path, const rt_device *dev, const char *cls, const shape_t *s,
                        const char *strategy, long step, const char *cfg, const attn_result *res, char *err, size_t errlen)
{
    if (explored_add(e, dev, cls, s, strategy, step, cfg, res,
                     "timed beside the search's best, as what the run takes without the class's row") != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return path ? csvt_write_atomic(e, path, err, errlen) : 0;
}

/* Times measured by an earlier run (resumed explored rows; tuning.csv's row under --merge,
 * `recorded`) and this run's are not comparable: clocks, temperature and the machine
 * differ between runs. When the class has earlier runs' rows, the contenders (this run's
 * best, if any; the class's fastest few; the fastest earlier row; the recorded row) are
 * timed again here, in turn, and the faster in this run becomes best_cfg and *best_us.
 * They are timed as `fabench run` times them (verified on 2048 rows, then 0.05 s of
 * warm-up and 0.3 s of repetitions; rematch_s > 0, --rematch-budget: that many seconds of
 * repetitions instead), not with the search's short repetitions: on the
 * H200 the short back-to-back timings ranked configurations within 3-10% of each other
 * differently from the runs that then measured them (NOTES.md, stop 20). `force`: time
 * whatever contenders there are even when nothing is stale (the search's best is not one
 * of them: kernels/space.csv does not declare it). What `run --tuned` would take for the
 * class without its row and the runtime's default, fb->cfg[] (class_fallbacks), always
 * contend: a row slower than them there is never written, and without --merge's recorded
 * row the first of them keeps its place within TUNE_KEEP_MARGIN, as the recorded row does.
 * Without an earlier run's rows the search's best meets them alone. A fallback without an
 * explored row of the class gets one (fallback_row). A contender that fails in any round
 * (not verified, crashed, hung) is out, and its explored row says why (rematch_failed);
 * each is noted in flight first, so a crash is recorded by the supervisor. Returns 1 when
 * that decided, 0 when nothing was stale, 2 when contenders ran and none verified (nothing
 * may be written), 3 when one hung the device (this process must restart), -1 on a
 * harness error. */
static int head_to_head(attn_runner *runner, const shape_t *s, dtype_t dt, attn_opts *ao, double rematch_s, csv_table *explored,
                        const char *p_explored, const char *inflight, const char *strategy, long step,
                        const rt_device *dev, const char *cls, size_t first_row, const char *new_cfg,
                        const char *recorded, const fallbacks *fb, const char (*finalists)[KCONFIG_STR_MAX], int nfinal,
                        const char *const *decl, long ndecl, int force, int quiet, char *best_cfg, size_t best_len,
                        double *best_us, char *err, size_t errlen)
{
    static const char *const src_name[] = {"this run's best", "an earlier run's row", "this run's", "tuning.csv's row",
                                           "the runtime's default", "run --tuned without the row:"};
    enum { NCON = TUNE_REMATCH_TOP + 3 + TUNE_FALLBACKS + SEARCH_FINALISTS };
    const char *con[NCON], *top[TUNE_REMATCH_TOP], *earliest_best;
    int src[NCON], top_earlier[TUNE_REMATCH_TOP], ncon = 0, stale = 0;
    if (new_cfg[0] && in_declared(decl, ndecl, new_cfg)) contend(con, src, &ncon, new_cfg, 0, explored, dev, cls);
    const int nfirst = ncon;
    const int nt = class_top(explored, dev->info.name, dev->rt->name, cls, first_row, decl, ndecl, top, top_earlier,
                             &earliest_best);
    for (int k = 0; k < nt; k++) {
        const int before = ncon;
        contend(con, src, &ncon, top[k], top_earlier[k] ? 1 : 2, explored, dev, cls);
        stale |= ncon > before && top_earlier[k];
    }
    if (earliest_best) {
        const int before = ncon;
        contend(con, src, &ncon, earliest_best, 1, explored, dev, cls);
        stale |= ncon > before;
    }
    if (recorded) {
        const int before = ncon;
        contend(con, src, &ncon, recorded, 3, explored, dev, cls);
        stale |= ncon > before;
    }
    /* nothing from an earlier run (and this run's best declared): it meets the fallbacks
     * alone, its other candidates having been timed beside it in this run */
    if (!stale && !force) ncon = nfirst;
    /* staged: each leading form's best meets the others at run length, always: short timings
     * rank configurations within a few percent of each other differently from the runs that
     * follow (docs/notes-staged-search.md) */
    for (int k = 0; k < nfinal; k++) {
        const int before = ncon;
        if (in_declared(decl, ndecl, finalists[k])) contend(con, src, &ncon, finalists[k], 2, explored, dev, cls);
        stale |= ncon > before;
    }
    int fallback = -1; /* the contender that stands for what the run would take without the row */
    for (int f = 0; f < fb->n; f++) {
        const int before = ncon;
        contend(con, src, &ncon, fb->cfg[f], 4 + fb->kind[f], explored, dev, cls);
        stale |= ncon > before;
        for (int k = 0; k < ncon && f == 0; k++)
            if (!strcmp(con[k], fb->cfg[0])) fallback = k;
    }
    if (force ? ncon < 1 : !stale || ncon < 2) return 0;
    kconfig kc[NCON];
    double us[NCON];
    attn_result fast[NCON]; /* each contender's fastest round */
    int parsed[NCON], failed[NCON];
    for (int k = 0; k < ncon; k++) {
        us[k] = INFINITY;
        failed[k] = 0;
        kc[k] = (kconfig){0};
        parsed[k] = kconfig_parse(con[k], &kc[k], err, errlen) == 0; /* an unreadable recorded row loses */
    }
    attn_opts as_run = *ao, defaults;
    attn_opts_defaults(&defaults);
    as_run.timing.abandon_us = 0;
    as_run.timing.warmup_s = defaults.timing.warmup_s;
    if (as_run.timing.budget_s < defaults.timing.budget_s) as_run.timing.budget_s = defaults.timing.budget_s;
    if (rematch_s > 0) as_run.timing.budget_s = rematch_s;
    if (!quiet)
        fprintf(stderr, "fabench tune: %s: %d contenders timed again, %g s of repetitions each\n", cls, ncon, as_run.timing.budget_s);
    char new_step[24];
    snprintf(new_step, sizeof new_step, "%ld", step);
    for (int round = 0; round < TUNE_REMATCH_ROUNDS; round++)
        for (int k = 0; k < ncon; k++) {
            attn_result res;
            if (!parsed[k] || failed[k]) continue;
            if (attn_unusable(runner)) { /* an earlier contender hung or faulted: the rest never ran */
                if (inflight) return 3;
                snprintf(err, errlen, "%s: the device became unusable while timing the contenders again", cls);
                return -1;
            }
            if (inflight) { /* a crash is recorded over its row (or as a row of its own) */
                const long r = explored_find(explored, dev, cls, con[k]);
                note_candidate(inflight, p_explored, dev, con[k], cls, s->name, strategy,
                               r >= 0 ? explored->rows[r][csvt_col(explored, "step")] : new_step, r >= 0);
            }
            kconfig run_cfg = kc[k];
            /* test hook (tests/faults.sh): contenders whose configuration contains this text
             * compute a wrong result here, from round FABENCH_TEST_WRONG_REMATCH_ROUND on */
            const char *wrong = getenv("FABENCH_TEST_WRONG_REMATCH"), *from = getenv("FABENCH_TEST_WRONG_REMATCH_ROUND");
            if (wrong && *wrong && strstr(con[k], wrong) && round >= (from ? atoi(from) : 0)) {
                kconfig h = {0};
                if (kconfig_parse("FAULT_SKIP_LAST_TILE=1", &h, err, errlen) == 0) kconfig_overlay(&run_cfg, &h);
            }
            if (attn_run(runner, s, dt, &run_cfg, &as_run, &res, err, errlen) != 0) return -1;
            if (inflight) unlink(inflight);
            if (res.status != ST_OK) { /* out, whatever its other rounds did */
                failed[k] = 1;
                us[k] = INFINITY;
                if (!quiet) fprintf(stderr, "fabench tune: %s: timed again %s: %s (%s)\n", cls, con[k], status_name(res.status), res.reason);
                if (rematch_failed(explored, p_explored, dev, cls, s, strategy, new_step, con[k], &res, err, errlen) != 0) return -1;
                if ((res.status == ST_TIMEOUT || attn_unusable(runner)) && inflight) return 3; /* the device is gone for this process */
                continue;
            }
            if (res.us.median < us[k]) { us[k] = res.us.median; fast[k] = res; }
        }
    /* the incumbent keeps its place within the margin: tuning.csv's row (--merge), whichever
     * list brought it in; else what the run would take without a row for the class */
    int incumbent = recorded ? -1 : fallback;
    for (int k = 0; k < ncon && recorded; k++)
        if (!strcmp(con[k], recorded)) incumbent = k;
    for (int k = 0; k < ncon; k++) /* a fallback timed for the first time in this class gets its row */
        if (src[k] >= 4 && isfinite(us[k]) && explored_find(explored, dev, cls, con[k]) < 0 &&
            fallback_row(explored, p_explored, dev, cls, s, strategy, step, con[k], &fast[k], err, errlen) != 0)
            return -1;
    const int w = tune_rematch_pick(us, ncon, incumbent);
    if (w < 0) return 2;
    const int fastest = tune_rematch_pick(us, ncon, -1);
    if (!quiet)
        for (int k = 0; k < ncon; k++) {
            if (failed[k]) fprintf(stderr, "fabench tune: %s: timed again %s: out, it failed (%s)\n", cls, con[k], src_name[src[k]]);
            else
                fprintf(stderr, "fabench tune: %s: timed again %s: %.3f us (%s%s%s)%s\n", cls, con[k], us[k], src_name[src[k]],
                        src[k] == 5 ? " " : "", src[k] == 5 ? fb->source : "",
                        k != w ? "" : w == fastest ? ", the winner" : ", the winner (kept: within the margin of the fastest)");
        }
    snprintf(best_cfg, best_len, "%s", con[w]);
    *best_us = us[w];
    return 1;
}

int tune_rematch_pick(const double *us, int n, int incumbent)
{
    int w = -1;
    for (int k = 0; k < n; k++)
        if (isfinite(us[k]) && (w < 0 || us[k] < us[w])) w = k;
    if (w >= 0 && incumbent >= 0 && incumbent < n && isfinite(us[incumbent]) && us[incumbent] <= us[w] * (1 + TUNE_KEEP_MARGIN))
        w = incumbent;
    return w;
}

double tune_class_distance(const char *row, const char *key, double dtype_cost, double causal_cost)
{
    tune_class R, K; /* the row's class, the wanted one */
    if (tune_class_parse(row, &R) != 0 || tune_class_parse(key, &K) != 0) return INFINITY;
    if (R.d != K.d || R.p != K.p || (R.c != K.c && isinf(causal_cost))) return INFINITY;
    double dist = (R.dt != K.dt ? dtype_cost : 0.0) + (R.c != K.c ? causal_cost : 0.0);
    dist += fabs(log2((double)R.q) - log2((double)K.q)) + fabs(log2((double)R.k) - log2((double)K.k)) +
            fabs(log2((double)R.g) - log2((double)K.g));
    /* a row without the work bucket (an older table) stands for every batch size, but
     * for a decode class behind a row of its own bucket: it was tuned at one batch size,
     * so it is only the nearest (its SPLIT_KV and PACK_GQA are derived again) */
    if (R.w > 0) dist += K.w > 0 ? fabs(log2((double)R.w) - log2((double)K.w)) : 1.0;
    else if (K.w > 0) dist += 0.5;
    /* ragged batches: the nearest decode share; a dense row for a ragged batch (or the
     * other way round) only when nothing closer exists: another kernel was tuned */
    if ((K.v >= 0) != (R.v >= 0)) dist += 2.0;
    else if (R.v >= 0) dist += abs(R.v - K.v) / 25.0;
    return dist;
}

long tune_table_classes(const char *path, const rt_device *dev)
{
    csv_table *t;
    char err[FB_ERRLEN];
    if (csvt_read(path, &t, err, sizeof err) != 0) return -1;
    const int cg = csvt_col(t, "gpu"), cb = csvt_col(t, "backend");
    long n = 0;
    for (size_t i = 0; cg >= 0 && cb >= 0 && i < t->nrows; i++)
        n += !strcmp(t->rows[i][cg], dev->info.name) && !strcmp(t->rows[i][cb], dev->rt->name);
    csvt_free(t);
    return n;
}

long tune_table_explored(const char *path, const rt_device *dev, const char *key)
{
    csv_table *t;
    char err[FB_ERRLEN];
    if (csvt_read(path, &t, err, sizeof err) != 0) return -1;
    const int cg = csvt_col(t, "gpu"), cb = csvt_col(t, "backend"), cc = csvt_col(t, "shape_class"),
              cn = csvt_col(t, "configs_explored");
    long n = -1;
    for (size_t i = 0; cg >= 0 && cb >= 0 && cc >= 0 && i < t->nrows && n < 0; i++)
        if (!strcmp(t->rows[i][cg], dev->info.name) && !strcmp(t->rows[i][cb], dev->rt->name) && !strcmp(t->rows[i][cc], key))
            n = cn >= 0 ? atol(t->rows[i][cn]) : 0;
    csvt_free(t);
    return n;
}

int tune_results_check(const char *dir, const rt_device *dev, char *err, size_t errlen)
{
    char p[1100];
    csv_table *t = NULL;
    snprintf(p, sizeof p, "%s/manifest.csv", dir);
    if (manifest_check_path(p, dev, err, errlen) != 0) return 2;
    snprintf(p, sizeof p, "%s/explored.csv", dir);
    int rc = csvt_open_append_from(p, explored_header, EXPLORED_NCOLS, EXPLORED_OLDEST_NCOLS, &t, err, errlen);
    csvt_free(t);
    t = NULL;
    snprintf(p, sizeof p, "%s/tuning.csv", dir);
    if (rc == 0) rc = csvt_open_append(p, tuning_header, TUNING_NCOLS, &t, err, errlen);
    csvt_free(t);
    if (rc != 0) return 2;
    fb_rules rules;
    snprintf(p, sizeof p, "%s/fallback.csv", dir);
    rc = fallback_read(p, dev->info.name, dev->rt->name, &rules, err, errlen);
    if (rc == 0) fallback_rules_free(&rules);
    return rc == 2 ? 2 : 0;
}

/* Reads the tuning table at path and checks every row (a bad row spoils the table): 0 and
 * *out with its config and shape_class columns in *cf and *cc; 1 when it cannot be read
 * (source says why); 2 when it is malformed (err). */
static int tuning_table_read(const char *table_path, csv_table **out, int *cf, int *cc, char *source, size_t srclen,
                             char *err, size_t errlen)
{
    csv_table *t;
    int rc = csvt_read(table_path, &t, err, errlen);
    if (rc != 0) {
        snprintf(source, srclen, "no tuning table (%s)", err);
        return rc == FB_EXIT_BADINPUT ? 2 : 1;
    }
    int cg = csvt_col(t, "gpu"), cb = csvt_col(t, "backend");
    *cc = csvt_col(t, "shape_class"), *cf = csvt_col(t, "config");
    if (cg < 0 || cb < 0 || *cc < 0 || *cf < 0) {
        snprintf(err, errlen, "%s:1: not a tuning table (needs gpu, backend, shape_class, config)", table_path);
        csvt_free(t);
        return 2;
    }
    for (size_t i = 0; i < t->nrows; i++) {
        kconfig probe = {0};
        char perr[FB_ERRLEN];
        tune_class tc;
        if (!t->rows[i][*cf][0] || kconfig_parse(t->rows[i][*cf], &probe, perr, sizeof perr) != 0) {
            snprintf(err, errlen, "%s:%d: field 'config': %.800s", table_path, t->row_line[i], t->rows[i][*cf][0] ? perr : "empty");
            csvt_free(t);
            return 2;
        }
        if (tune_class_parse(t->rows[i][*cc], &tc) != 0) {
            snprintf(err, errlen, "%s:%d: field 'shape_class': '%.80s' is not a shape class (DTYPE-dD-cC-gG-qQ-kK[-wW][-vV][-pP])",
                     table_path, t->row_line[i], t->rows[i][*cc]);
            csvt_free(t);
            return 2;
        }
    }
    *out = t;
    return 0;
}

/* fallback.csv beside the tuning table at table_path */
static void fallback_path_beside(const char *table_path, char *out, size_t len)
{
    const char *slash = strrchr(table_path, '/');
    if (slash) snprintf(out, len, "%.*s/fallback.csv", (int)(slash - table_path), table_path);
    else snprintf(out, len, "fallback.csv");
}

int tune_lookup(const char *table_path, const rt_device *dev, const shape_t *s, dtype_t dt, kconfig *cfg,
                char *source, size_t srclen, char *err, size_t errlen)
{
    csv_table *t = NULL;
    int cf = -1, cc = -1;
    char nosrc[FB_ERRLEN + 32];
    const int rc = tuning_table_read(table_path, &t, &cf, &cc, nosrc, sizeof nosrc, err, errlen);
    if (rc == 2) return 2;
    char want[96];
    tune_class_key(s, dt, want, sizeof want);
    const int cg = t ? csvt_col(t, "gpu") : -1, cb = t ? csvt_col(t, "backend") : -1;
    for (size_t i = 0; t && i < t->nrows; i++) {
        if (strcmp(t->rows[i][cg], dev->info.name) || strcmp(t->rows[i][cb], dev->rt->name) || strcmp(t->rows[i][cc], want))
            continue;
        kconfig c = {0};
        if (kconfig_parse(t->rows[i][cf], &c, err, errlen) != 0) { /* checked above: cannot happen */
            csvt_free(t);
            return 2;
        }
        *cfg = c;
        snprintf(source, srclen, "tuned %s", want);
        csvt_free(t);
        return 1;
    }
    csvt_free(t);
    /* no row of the class: the fitted rule of its regime and features, else the regime's default */
    char fpath[2048];
    fallback_path_beside(table_path, fpath, sizeof fpath);
    fb_rules rules;
    const int fr = rc == 0 ? fallback_read(fpath, dev->info.name, dev->rt->name, &rules, err, errlen) : 1;
    if (fr == 2) return 2;
    const char *why = rc != 0 ? "no tuning table" : fr == 1 ? "no fallback.csv beside the tuning table"
                      : rules.n == 0 ? "fallback.csv has no rules of this GPU and runtime" : NULL;
    fallback_pick(fr == 0 && rules.n ? &rules : NULL, "fallback.csv", s, dt, &dev->info, why, cfg, source, srclen);
    if (fr == 0) fallback_rules_free(&rules);
    return 1;
}

int tune_lookup_nearest(const csv_table *t, const char *gpu, const char *backend, const shape_t *s, dtype_t dt,
                        const char *const *skip, size_t nskip, kconfig *cfg, char *source, size_t srclen)
{
    const int cg = csvt_col(t, "gpu"), cb = csvt_col(t, "backend"), cc = csvt_col(t, "shape_class"), cf = csvt_col(t, "config");
    char want[96];
    tune_class_key(s, dt, want, sizeof want);
    size_t best = t->nrows;
    double best_dist = INFINITY;
    for (size_t i = 0; cg >= 0 && cb >= 0 && cc >= 0 && cf >= 0 && i < t->nrows; i++) {
        if (strcmp(t->rows[i][cg], gpu) || strcmp(t->rows[i][cb], backend)) continue;
        size_t k = 0;
        while (k < nskip && strcmp(skip[k], t->rows[i][cc])) k++;
        if (k < nskip) continue;
        const double d = tune_class_distance(t->rows[i][cc], want, INFINITY, INFINITY);
        if (d < best_dist) { best_dist = d; best = i; }
    }
    char err[FB_ERRLEN];
    kconfig c = {0};
    if (best == t->nrows || kconfig_parse(t->rows[best][cf], &c, err, sizeof err) != 0) {
        snprintf(source, srclen, "default (no tuned class for %s)", want);
        return 0;
    }
    if (best_dist > 0) c.set &= ~(uint64_t)(CFG(SPLIT_KV) | CFG(PACK_GQA));
    *cfg = c;
    snprintf(source, srclen, "%s %s", best_dist == 0 ? "tuned" : "nearest", t->rows[best][cc]);
    return 1;
}

int tune_lookup_for(const char *table_path, const char *gpu, const char *backend, const shape_t *s, dtype_t dt,
                    kconfig *cfg, char *source, size_t srclen, char *err, size_t errlen)
{
    csv_table *t;
    int cf, cc;
    int rc = tuning_table_read(table_path, &t, &cf, &cc, source, srclen, err, errlen);
    if (rc != 0) return rc == 2 ? 2 : 0;
    rc = tune_lookup_nearest(t, gpu, backend, s, dt, NULL, 0, cfg, source, srclen);
    csvt_free(t);
    return rc;
}

/* The explored row of this device, runtime, class and configuration (the last of them);
 * -1 if none. */
static long explored_find(const csv_table *e, const rt_device *dev, const char *cls, const char *cfg)
{
    int cg = csvt_col(e, "gpu"), cb = csvt_col(e, "backend"), cc = csvt_col(e, "shape_class"), cf = csvt_col(e, "config");
    for (size_t i = e->nrows; i-- > 0;) {
        char **row = e->rows[i];
        if (!strcmp(row[cf], cfg) && !strcmp(row[cc], cls) && !strcmp(row[cb], dev->rt->name) && !strcmp(row[cg], dev->info.name))
            return (long)i;
    }
    return -1;
}

/* halving: candidate c verified and timed again for 2^rung times the search's timing
 * budget and least repetitions (rung at most TUNE_RUNG_MAX counts); this run's explored row r takes the new status,
 * time and repetitions, and the file is written whole. 0, or -1 with err. */
#define TUNE_RUNG_MAX 5
static int retime_row(attn_runner *runner, const shape_t *s, dtype_t dt, const kconfig *c, const attn_opts *ao, int rung,
                      csv_table *e, size_t r, const char *path, status_t *st, char *err, size_t errlen)
{
    attn_opts o = *ao;
    o.timing.abandon_us = 0;
    const int f = 1 << (rung < TUNE_RUNG_MAX ? rung : TUNE_RUNG_MAX);
    o.timing.budget_s = ao->timing.budget_s * f;
    o.timing.min_reps = ao->timing.min_reps * f; /* a slow kernel's few repetitions grow too, */
    if (o.timing.max_reps > 0) o.timing.max_reps *= f;   /* and a fast one's cap */
    kconfig cand = *c;
    attn_result res;
    if (attn_run(runner, s, dt, &cand, &o, &res, err, errlen) != 0) return -1;
    *st = res.status;
    const int ok = res.status == ST_OK;
    char us[32] = "", tf[32] = "", reps[24] = "", mae[32] = "", mhz[32] = "";
    if (ok) {
        snprintf(us, sizeof us, "%.3f", res.us.median);
        snprintf(tf, sizeof tf, "%.4f", shape_flops(s) / (res.us.median * 1e-6) / 1e12);
        snprintf(reps, sizeof reps, "%zu", res.us.n);
        fb_fmt_num(mhz, sizeof mhz, res.tel.samples > 0 ? res.tel.sm_mhz : NAN, "%.0f");
    }
    if (res.ver.rows_checked) snprintf(mae, sizeof mae, "%.3g", res.ver.max_abs_err);
    char utc[32];
    fb_utc_now(utc, sizeof utc);
    const char *const col[] = {"status", "reason", "median_us", "tflops", "reps", "max_abs_err", "sm_mhz", "utc"};
    const char *const val[] = {status_name(res.status), res.reason, us, tf, reps, mae, mhz, utc};
    if (explored_set(e, r, col, val, sizeof col / sizeof col[0], err, errlen) != 0) return -1;
    return csvt_write_atomic(e, path, err, errlen);
}

static volatile int stop_requested; /* set by SIGINT; read between candidates */
static void on_sigint(int sig) { (void)sig; stop_requested = 1; }

/* ---- isolation: the tuning runs in a child process, which a supervisor restarts ----
 * A candidate that kills the process (a crash, a corrupted GPU context) or hangs the
 * device ends only that process. Before each candidate the child notes it in the
 * in-flight file; when the child dies the supervisor records that candidate as failed in
 * explored.csv and starts a fresh child, which resumes from explored.csv as any rerun does.
 * A child whose device hung records the timeout itself and asks for a restart (exit 75). */
#define TUNE_RESTART_EXIT 75
#define TUNE_MAX_RESTARTS 50
static volatile pid_t tune_child;
static void forward_sigint(int sig) { (void)sig; if (tune_child > 0) kill(tune_child, SIGINT); }

/* The in-flight note: one field per line (explored path, gpu, backend, config, class,
 * shape, strategy, step, and "retime" when halving times a survivor that has a row
 * already), written whole (temp + rename) or not at all. */
static void inflight_note(const char *path, const char *const *f, int n)
{
    if (!path) return;
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *o = fopen(tmp, "w");
    if (!o) return;
    for (int i = 0; i < n; i++) fprintf(o, "%s\n", f[i]);
    if (fclose(o) == 0) rename(tmp, path);
    else unlink(tmp);
}

/* The in-flight note for candidate cfg of class cls (retime: halving times this run's row
 * of it again); nothing when not isolated (path NULL). */
static void note_candidate(const char *path, const char *explored_path, const rt_device *dev, const char *cfg,
                           const char *cls, const char *shape, const char *strategy, const char *step, int retime)
{
    const char *f[9] = {explored_path, dev->info.name, dev->rt->name, cfg, cls, shape, strategy, step, "retime"};
    inflight_note(path, f, retime ? 9 : 8);
}

static int supervise(int argc, char **argv)
{
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) return -1; /* no /proc: run unisolated */
    self[sl] = 0;
    /* only a fabench executable can be started again as `fabench tune` (not a test or fuzz
     * binary calling cmd_tune, nor valgrind's tool) */
    const char *base = strrchr(self, '/') ? strrchr(self, '/') + 1 : self;
    if (strcmp(base, "fabench")) return -1;
    char inflight[256];
    const char *tmpdir = getenv("TMPDIR");
    snprintf(inflight, sizeof inflight, "%s/fabench-tune-%ld.inflight", tmpdir && *tmpdir ? tmpdir : "/tmp", (long)getpid());
    char **cargv = calloc((size_t)argc + 2, sizeof *cargv);
    if (!cargv) return -1;
    cargv[0] = self;
    cargv[1] = "tune";
    for (int i = 1; i < argc; i++) cargv[i + 1] = argv[i];
    struct sigaction sa = {0}, old;
    sa.sa_handler = forward_sigint;
    sigaction(SIGINT, &sa, &old);
    int rc = 1;
    char t0s[64]; /* the whole tune's start, for the wall time its last process reports */
    snprintf(t0s, sizeof t0s, "%.6f", fb_now());
    setenv("FABENCH_TUNE_T0", t0s, 1);
    for (int restarts = 0;; restarts++) {
        unlink(inflight);
        pid_t pid = fork();
        if (pid < 0) { fprintf(stderr, "fabench tune: fork failed\n"); rc = 1; break; }
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the supervisor */
            setenv("FABENCH_TUNE_CHILD", "1", 1);
            setenv("FABENCH_TUNE_INFLIGHT", inflight, 1);
            execv(self, cargv);
            _exit(127);
        }
        tune_child = pid;
        int st;
        while (waitpid(pid, &st, 0) < 0) {}
        tune_child = 0;
        if (WIFEXITED(st) && WEXITSTATUS(st) != TUNE_RESTART_EXIT) { rc = WEXITSTATUS(st); break; }
        if (WIFSIGNALED(st) && (WTERMSIG(st) == SIGINT || WTERMSIG(st) == SIGTERM)) { rc = 130; break; }
        /* the child died, or its device hung: record the candidate in flight, go on */
        char reason[256];
        if (WIFSIGNALED(st))
            snprintf(reason, sizeof reason, "the tuning process died (%s) running this candidate; tuning went on in a fresh process",
                     strsignal(WTERMSIG(st)));
        else
            snprintf(reason, sizeof reason, "the device hung, or a kernel fault left it unusable; tuning went on in a fresh process");
        FILE *in = fopen(inflight, "r");
        if (in && WIFSIGNALED(st)) {
            char f[9][512];
            int nf = 0;
            while (nf < 9 && fgets(f[nf], sizeof f[0], in)) { f[nf][strcspn(f[nf], "\n")] = 0; nf++; }
            const int retime = nf == 9 && !strcmp(f[8], "retime");
            if (nf == 8 || retime) {
                csv_table *t;
                char err[FB_ERRLEN];
                if (csvt_open_append_from(f[0], explored_header, EXPLORED_NCOLS, EXPLORED_OLDEST_NCOLS, &t, err, sizeof err) == 0) {
                    long have = -1;
                    for (size_t r = t->nrows; r-- > 0 && have < 0;) /* the newest row, as explored_find */
                        if (!strcmp(t->rows[r][0], f[1]) && !strcmp(t->rows[r][1], f[2]) && !strcmp(t->rows[r][3], f[3]) &&
                            !strcmp(t->rows[r][4], f[4]))
                            have = (long)r;
                    char utc[32];
                    fb_utc_now(utc, sizeof utc);
                    const char *row[EXPLORED_NCOLS] = {f[1], f[2], "attn_fwd", f[3], f[4], f[5], "launch_error", reason, "",
                                                       "", "", "-1", "-1", "-1", "-1", "-1", "", f[6], f[7], "", "", utc};
                    int werr = 0;
                    if (have < 0) werr = csvt_add(t, row) != 0;
                    else if (retime) { /* halving timing a survivor again: the crash replaces its earlier
                                        * result (its compile time stays: that part still holds) */
                        static const char *const redo[] = {"status", "reason", "median_us", "tflops", "reps", "sm_mhz",
                                                           "utc"};
                        for (size_t k = 0; k < sizeof redo / sizeof redo[0] && !werr; k++) {
                            const int c = csvt_col(t, redo[k]);
                            werr = c < 0 || csvt_set(t, (size_t)have, (size_t)c, row[c]) != 0;
                        }
                    }
                    if (werr) snprintf(err, sizeof err, "out of memory");
                    if (werr || ((have < 0 || retime) && csvt_write_atomic(t, f[0], err, sizeof err) != 0))
                        fprintf(stderr, "fabench tune: %s\n", err);
                    csvt_free(t);
                }
                fprintf(stderr, "fabench tune: %s: %s %s\n", f[4], f[3], reason);
            }
        }
        if (in) fclose(in);
        if (!WIFSIGNALED(st)) fprintf(stderr, "fabench tune: %s\n", reason);
        if (restarts + 1 >= TUNE_MAX_RESTARTS) {
            fprintf(stderr, "fabench tune: %d restarts; giving up (explored.csv keeps every row)\n", TUNE_MAX_RESTARTS);
            rc = 1;
            break;
        }
    }
    unlink(inflight);
    sigaction(SIGINT, &old, NULL);
    free(cargv);
    return rc;
}

/* 1: key is one of the comma-separated classes of list */
static int class_listed(const char *list, const char *key)
{
    const size_t n = strlen(key);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, key, n) && (p[n] == ',' || !p[n])) return 1;
    return 0;
}

/* 1: some shape of shapes is of class key */
static int class_has_shape(const shape_list_t *shapes, int have_dtype, dtype_t dtype, const char *key)
{
    for (size_t i = 0; i < shapes->n; i++) {
        char k[96];
        tune_class_key(&shapes->v[i], shapes_dtype(&shapes->v[i], have_dtype, dtype), k, sizeof k);
        if (!strcmp(k, key)) return 1;
    }
    return 0;
}

/* --class: 0 when every comma-separated entry of list is a class key that some shape has
 * (a typo must not tune nothing in silence), else -1 with err */
static int class_list_check(const char *list, const shape_list_t *shapes, int have_dtype, dtype_t dtype, char *err,
                            size_t errlen)
{
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        char key[96];
        const size_t n = strcspn(p, ",");
        tune_class tc;
        snprintf(key, sizeof key, "%.*s", (int)(n < sizeof key ? n : sizeof key - 1), p);
        if (n >= sizeof key || tune_class_parse(key, &tc) != 0) {
            snprintf(err, errlen, "--class: '%.*s' is not a shape class (DTYPE-dD-cC-gG-qQ-kK[-wW][-vV][-pP])",
                     (int)(n < 100 ? n : 100), p);
            return -1;
        }
        if (!class_has_shape(shapes, have_dtype, dtype, key)) {
            snprintf(err, errlen, "--class: no shape of the shapes is of class %s", key);
            return -1;
        }
    }
    return 0;
}

/* The classes of the shapes (only those listed in only, when not NULL) and one
 * representative each, its shape with the most work: indices into rep, keys into keys,
 * their number into *nclass (rep and keys hold shapes->n entries). */
static void class_reps(const shape_list_t *shapes, int have_dtype, dtype_t dtype, const char *only, size_t *rep,
                       char (*keys)[96], size_t *nclass)
{
    size_t nc = 0;
    for (size_t i = 0; i < shapes->n; i++) {
        dtype_t dt = shapes_dtype(&shapes->v[i], have_dtype, dtype);
        char key[96];
        tune_class_key(&shapes->v[i], dt, key, sizeof key);
        if (only && !class_listed(only, key)) continue;
        size_t k = 0;
        while (k < nc && strcmp(keys[k], key)) k++;
        if (k == nc) { snprintf(keys[nc], sizeof keys[0], "%s", key); rep[nc++] = i; }
        else if (shape_flops(&shapes->v[i]) > shape_flops(&shapes->v[rep[k]])) rep[k] = i;
    }
    *nclass = nc;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fabench tune --device SEL (--suite NAME | --shapes FILE) [options]\n\n"
            "For each shape class of the shapes (dtype, head dim, causal, GQA ratio, Sq and Skv\n"
            "rounded up to powers of two; decode classes and dense prefill ones of at most 32768\n"
            "query rows in all add B*Hkv and B*Hq, ragged ones the share of\n"
            "decoding sequences, paged ones the page size) it enumerates kernels/space.csv, drops what the device\n"
            "cannot hold, then compiles, verifies against the CPU reference and times the candidates\n"
            "the searcher asks for; the best verified one goes to tuning.csv. Every candidate is a\n"
            "row of explored.csv. A run stopped with Ctrl-C keeps its explored rows (a class cut short\n"
            "writes no tuning.csv row: it never met the head-to-head); the same command resumes.\n\n"
            "  --device SEL        as for `fabench run`\n"
            "  --suite NAME | --shapes FILE\n"
            "  --dtype T           override the shapes' dtype (default bf16 where a shape names none)\n"
            "  --class KEY[,KEY]   tune only the shapes of these classes (keys as tuning.csv's\n"
            "                      shape_class; each must be the class of some shape); a class's\n"
            "                      representative is still its shape with the most work.\n"
            "                      `fabench run --tune-missing` passes the classes it lacks\n"
            "  --strategy S        exhaustive (default), random, bo (a Gaussian-process model of\n"
            "                      the time steers the search after 8 random probes), local (a\n"
            "                      hill climb: the class's tuning.csv row and the rows of its two\n"
            "                      nearest classes first, then always the candidate with the\n"
            "                      fewest parameters different from the best so far; for refining\n"
            "                      earlier winners after the space grew, or a class from its\n"
            "                      neighbours'), halving (successive halving: --candidates N\n"
            "                      (default all) in a seeded random order, then the faster half\n"
            "                      of them timed again twice as long, and so on until two or fewer\n"
            "                      are left (the faster wins);\n"
            "                      for ranking configurations closer than one short timing tells\n"
            "                      apart), or staged (stage 1: the default, the tuning.csv rows of\n"
            "                      the class and its two nearest classes, what run --tuned takes\n"
            "                      without a row (fallback.csv's rule or the regime's default),\n"
            "                      then one candidate of each other tile form (MMA kind, BLOCK_M,\n"
            "                      BLOCK_N, NUM_WARPS), tensor cores first, at most a third of\n"
            "                      --candidates; stage 2: a\n"
            "                      climb in the three fastest forms, one knob group at a time;\n"
            "                      stage 3: each of those forms' best in the head-to-head;\n"
            "                      docs/notes-staged-search.md)\n"
            "  --candidates N      at most N candidates timed per class (default: all; --budget, which\n"
            "                      is seconds of timing in run and vendors, is refused here)\n"
            "  --time S            at most S seconds per class (one with no verified candidate when\n"
            "                      the time is up tries up to 3 more, so that it gets a winner)\n"
            "  --seed N            for random and halving (default 1)\n"
            "  --results DIR       where explored.csv, tuning.csv, manifest.csv go\n"
            "                      (default results/<gpu-slug>)\n"
            "  --space FILE        the search space (default kernels/space.csv)\n"
            "  --merge             keep a class's tuning.csv row when it is faster than this run's\n"
            "                      best (for tuning only part of the space, as with --space); the\n"
            "                      manifest then records this command under update.N. keys\n"
            "  --declared-only     with --merge and --space: time only the candidates that\n"
            "                      kernels/space.csv also declares for the class (the others could\n"
            "                      not go to tuning.csv); tools/refine.sh passes it\n"
            "  --rep-budget S      seconds of timing per candidate (default 0.1)\n"
            "  --rematch-budget S  seconds of repetitions for each contender when a class's finalists\n"
            "                      are timed again against earlier runs' rows (default: fabench run's\n"
            "                      0.3). On a GPU held by its power cap under sustained load (the\n"
            "                      H200's 700 W), 0.05 picks the winner for short bursts at full\n"
            "                      clocks, the default for sustained work\n"
            "  --timeout S         a batch of runs longer than this is a hang (default 30)\n"
            "  --quiet\n\n"
            "--device A,B,... (or all: every GPU) tunes on several devices of one GPU model at\n"
            "once: a worker process per device (a selector may repeat), each taking the next class\n"
            "no worker has taken, each writing DIR/tune-workers/w<N>/; at the end their rows are\n"
            "merged into DIR's explored.csv and tuning.csv (a merge cut short is done by the next\n"
            "such tune of DIR). Candidates run in a child process: one that crashes the process or hangs the device\n"
            "is recorded (launch_error, timeout) and tuning goes on in a fresh child\n"
            "(FABENCH_TUNE_ISOLATE=0: in this process, as one run).\n");
}

/* The supervisor, unless asked not to (FABENCH_TUNE_ISOLATE=0): it runs no GPU code itself
 * but the tune in a child process, which it starts again where a candidate crashed or hung
 * the device; several devices: a worker process each (tune_multi.c). Returns the exit
 * status when it ran the tune, -1 when this process is to tune itself */
static int tune_dispatch(int argc, char **argv, int child)
{
    const char *iso = getenv("FABENCH_TUNE_ISOLATE");
    int help = 0;
    for (int i = 1; i < argc; i++) help |= !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
    /* several devices: a worker process each (tune_multi.c), not one tune */
    const char *spec = NULL, *res = NULL;
    int worker = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) spec = argv[i + 1];
        else if (!strncmp(argv[i], "--device=", 9)) spec = argv[i] + 9;
        else if (!strcmp(argv[i], "--results") && i + 1 < argc) res = argv[i + 1];
        else if (!strncmp(argv[i], "--results=", 10)) res = argv[i] + 10;
        worker |= !strncmp(argv[i], "--worker-", 9);
    }
    if (!child && !help && !worker && spec && (strchr(spec, ',') || !strcmp(spec, "all")))
        return tune_multi(argc, argv, spec, res);
    if (!child && !help && !(iso && !strcmp(iso, "0"))) {
        int rc = supervise(argc, argv);
        if (rc >= 0) return rc;
    }
    return -1;
}

/* What `fabench tune` was asked: its options, checked */
typedef struct {
    const char *device, *suite, *shapes_file, *results, *space_file, *only, *strategy, *claims;
    int halving, have_dtype, quiet, merge, declared_only;
    double timeout_s, time_limit, rep_budget, rematch_budget;
    long budget, worker_id; /* worker_id: a worker of a multi-device tune (claims: the classes it takes), else -1 */
    uint64_t seed;
    dtype_t dtype;
} tune_opts;

/* Reads tune's options into *o: -1 to go on, else the exit status (0 after --help) */
static int tune_options(int argc, char **argv, tune_opts *o)
{
    enum { O_DEVICE = 1, O_SUITE, O_SHAPES, O_DTYPE, O_STRATEGY, O_BUDGET, O_OLD_BUDGET, O_TIME, O_SEED, O_RESULTS, O_SPACE,
           O_REPBUDGET, O_QUIET, O_HELP, O_TIMEOUT, O_MERGE, O_REMATCH, O_DECLARED, O_CLASS, O_CLAIMS, O_WORKER };
    static const struct option opts[] = {
        {"device", required_argument, 0, O_DEVICE}, {"suite", required_argument, 0, O_SUITE},
        {"shapes", required_argument, 0, O_SHAPES}, {"dtype", required_argument, 0, O_DTYPE},
        {"strategy", required_argument, 0, O_STRATEGY}, {"candidates", required_argument, 0, O_BUDGET},
        {"budget", required_argument, 0, O_OLD_BUDGET},
        {"time", required_argument, 0, O_TIME}, {"seed", required_argument, 0, O_SEED},
        {"results", required_argument, 0, O_RESULTS}, {"space", required_argument, 0, O_SPACE},
        {"rep-budget", required_argument, 0, O_REPBUDGET}, {"rematch-budget", required_argument, 0, O_REMATCH}, {"quiet", no_argument, 0, O_QUIET},
        {"help", no_argument, 0, O_HELP}, {"timeout", required_argument, 0, O_TIMEOUT},
        {"merge", no_argument, 0, O_MERGE}, {"declared-only", no_argument, 0, O_DECLARED},
        {"class", required_argument, 0, O_CLASS}, {"worker-claims", required_argument, 0, O_CLAIMS},
        {"worker-id", required_argument, 0, O_WORKER}, {0, 0, 0, 0}};
    const char *device = NULL, *suite = NULL, *shapes_file = NULL, *results = NULL, *space_file = NULL, *only = NULL;
    const char *strategy = "exhaustive";
    int halving = 0;
    double timeout_s = 30;
    long budget = -1;
    double time_limit = -1, rep_budget = 0.1, rematch_budget = 0;
    uint64_t seed = 1;
    int have_dtype = 0, quiet = 0, merge = 0, declared_only = 0;
    const char *claims = NULL; /* a worker of a multi-device tune: the classes it takes */
    long worker_id = -1;
    dtype_t dtype = DT_BF16;
    optind = 1;
    opterr = 0;
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_DEVICE: device = optarg; break;
        case O_SUITE: suite = optarg; break;
        case O_SHAPES: shapes_file = optarg; break;
        case O_RESULTS: results = optarg; break;
        case O_SPACE: space_file = optarg; break;
        case O_CLASS: only = optarg; break;
        case O_QUIET: quiet = 1; break;
        case O_MERGE: merge = 1; break;
        case O_DECLARED: declared_only = 1; break;
        case O_CLAIMS: claims = optarg; break;
        case O_WORKER:
            worker_id = strtol(optarg, &end, 10);
            if (*end || end == optarg || worker_id < 0) { fprintf(stderr, "fabench tune: --worker-id: bad number '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            break;
        case O_DTYPE:
            if (dtype_parse(optarg, &dtype) != 0) {
                fprintf(stderr, "fabench tune: --dtype: unknown '%s' (known: fp32, fp16, bf16)\n", optarg);
                return FB_EXIT_BADINPUT;
            }
            have_dtype = 1;
            break;
        case O_STRATEGY:
            if (!search_strategy_known(optarg)) {
                fprintf(stderr, "fabench tune: --strategy: unknown '%s' (known: " SEARCH_STRATEGIES ")\n", optarg);
                return FB_EXIT_BADINPUT;
            }
            strategy = optarg;
            halving = !strcmp(optarg, "halving");
            break;
        case O_BUDGET:
            budget = strtol(optarg, &end, 10);
            if (*end || end == optarg || budget < 1) { fprintf(stderr, "fabench tune: --candidates: bad count '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            break;
        case O_OLD_BUDGET: /* one option, one meaning: --budget is seconds of timing in run and vendors */
            fprintf(stderr, "fabench tune: --budget is seconds of timing in run and vendors; tune counts candidates: "
                            "--candidates %s\n", optarg);
            return FB_EXIT_BADINPUT;
        case O_TIME:
            time_limit = strtod(optarg, &end);
            if (*end || end == optarg || !(time_limit > 0)) { fprintf(stderr, "fabench tune: --time: bad seconds '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            break;
        case O_REPBUDGET:
            rep_budget = strtod(optarg, &end);
            if (*end || end == optarg || !(rep_budget >= 0)) { fprintf(stderr, "fabench tune: --rep-budget: bad seconds '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            break;
        case O_REMATCH:
            rematch_budget = strtod(optarg, &end);
            if (*end || end == optarg || !(rematch_budget > 0 && rematch_budget <= 60)) { fprintf(stderr, "fabench tune: --rematch-budget: bad seconds '%s' (more than 0, at most 60)\n", optarg); return FB_EXIT_BADINPUT; }
            break;
        case O_TIMEOUT:
            timeout_s = strtod(optarg, &end);
            if (*end || end == optarg || !(timeout_s > 0 && timeout_s <= 3600)) { fprintf(stderr, "fabench tune: --timeout: bad seconds '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            break;
        case O_SEED:
            seed = strtoull(optarg, &end, 10);
            if (*end || end == optarg) { fprintf(stderr, "fabench tune: --seed: bad number '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            break;
        case 'h':
        case O_HELP: usage(stdout); return 0;
        case ':': fprintf(stderr, "fabench tune: %s needs a value\n", argv[optind - 1]); return FB_EXIT_BADINPUT;
        default: fprintf(stderr, "fabench tune: unknown option '%s' (fabench tune --help)\n", argv[optind - 1]); return FB_EXIT_BADINPUT;
        }
    }
    if (optind < argc) { fprintf(stderr, "fabench tune: unexpected argument '%s'\n", argv[optind]); return FB_EXIT_BADINPUT; }
    if (!device || (!suite == !shapes_file)) {
        fprintf(stderr, "fabench tune: needs --device and one of --suite or --shapes\n\n");
        usage(stderr);
        return FB_EXIT_BADINPUT;
    }
    if (!claims != (worker_id < 0)) {
        fprintf(stderr, "fabench tune: --worker-claims and --worker-id go together (tune --device A,B passes them)\n");
        return FB_EXIT_BADINPUT;
    }
    if (declared_only && !(merge && space_file)) {
        fprintf(stderr, "fabench tune: --declared-only needs --merge and --space (without --space every candidate is declared)\n");
        return FB_EXIT_BADINPUT;
    }
    *o = (tune_opts){.device = device, .suite = suite, .shapes_file = shapes_file, .results = results,
                     .space_file = space_file, .only = only, .strategy = strategy, .claims = claims,
                     .halving = halving, .have_dtype = have_dtype, .quiet = quiet, .merge = merge,
                     .declared_only = declared_only, .timeout_s = timeout_s, .time_limit = time_limit,
                     .rep_budget = rep_budget, .rematch_budget = rematch_budget, .budget = budget,
                     .worker_id = worker_id, .seed = seed, .dtype = dtype};
    return -1;
}

/* One tune: its options, the space, the shapes, the device, the results folder's tables and
 * fallback.csv's rules, the runner */
typedef struct {
    tune_opts o;
    int child, is_tty;
    const char *inflight; /* a supervised child: the file that names the candidate in flight */
    space_t space, decl_space;
    const space_t *declared; /* kernels/space.csv, which earlier runs' rows must belong to (NULL: unread) */
    shape_list_t shapes;
    rt_device dev;
    char dir[1024], p_explored[1100], p_tuning[1100], p_manifest[1100];
    csv_table *explored, *tuning;
    fb_rules rules;
    int have_rules;
    attn_runner *runner;
    attn_opts ao;
} tune_run;

/* Reads every input of the tune and opens the results folder's tables, all checked before
 * anything is written: -1 to go on, else the exit status (what it opened is freed) */
static int tune_open(tune_run *t, int argc, char **argv)
{
    char err[FB_ERRLEN];
    int rc = t->o.space_file ? space_load(t->o.space_file, &t->space, err, sizeof err) : space_load_default(&t->space, err, sizeof err);
    if (rc != 0) { fprintf(stderr, "fabench tune: %s\n", err); return FB_EXIT_BADINPUT; }
    /* the declared space (kernels/space.csv), which earlier runs' rows must still belong to */
    t->declared = &t->space;
    if (t->o.space_file && t->o.merge) { /* only --merge consults it */
        char e2[512];
        t->declared = space_load_default(&t->decl_space, e2, sizeof e2) == 0 ? &t->decl_space : NULL;
        if (!t->declared && t->o.declared_only) {
            fprintf(stderr, "fabench tune: --declared-only: %s\n", e2);
            return FB_EXIT_BADINPUT;
        }
        if (!t->declared) fprintf(stderr, "fabench tune: note: %s; earlier rows are not checked against it\n", e2);
    }
    rc = shapes_load_file_or_suite(t->o.shapes_file, t->o.suite, &t->shapes, err, sizeof err);
    if (rc == 0 && t->o.only && class_list_check(t->o.only, &t->shapes, t->o.have_dtype, t->o.dtype, err, sizeof err) != 0) rc = FB_EXIT_BADINPUT;
    if (rc != 0) { fprintf(stderr, "fabench tune: %s\n", err); shapes_free(&t->shapes); return FB_EXIT_BADINPUT; }
    if (rt_select(t->o.device, &t->dev, err, sizeof err) != 0) {
        fprintf(stderr, "fabench tune: %s\n", err);
        shapes_free(&t->shapes);
        return FB_EXIT_BADINPUT;
    }

    char slug[256];
    fb_slug(t->dev.info.name, slug, sizeof slug);
    if (t->o.results) snprintf(t->dir, sizeof t->dir, "%s", t->o.results);
    else snprintf(t->dir, sizeof t->dir, "results/%s", slug);
    snprintf(t->p_tuning, sizeof t->p_tuning, "%s/tuning.csv", t->dir);
    if (fb_mkdir_p(t->dir, err, sizeof err) != 0 || fb_claim_output(t->p_tuning, err, sizeof err) != 0) {
        fprintf(stderr, "fabench tune: %s\n", err);
        shapes_free(&t->shapes);
        return FB_EXIT_BADINPUT;
    }
    snprintf(t->p_explored, sizeof t->p_explored, "%s/explored.csv", t->dir);
    snprintf(t->p_tuning, sizeof t->p_tuning, "%s/tuning.csv", t->dir);
    snprintf(t->p_manifest, sizeof t->p_manifest, "%s/manifest.csv", t->dir);
    /* every input read (another GPU's manifest is bad input too) before anything is written */
    if (manifest_check_path(t->p_manifest, &t->dev, err, sizeof err) != 0 ||
        csvt_open_append_from(t->p_explored, explored_header, EXPLORED_NCOLS, EXPLORED_OLDEST_NCOLS, &t->explored, err, sizeof err) != 0 ||
        csvt_open_append(t->p_tuning, tuning_header, TUNING_NCOLS, &t->tuning, err, sizeof err) != 0 ||
        csvt_write_atomic(t->explored, t->p_explored, err, sizeof err) != 0 ||
        manifest_update(t->p_manifest, &t->dev, argc + 1, argv - 1, t->o.merge, err, sizeof err) != 0) {
        fprintf(stderr, "fabench tune: %s\n", err);
        csvt_free(t->explored);
        csvt_free(t->tuning);
        shapes_free(&t->shapes);
        return FB_EXIT_BADINPUT;
    }
    /* what `run --tuned` takes for a class without its row contends in its head-to-head: the
     * rules of fallback.csv in the results folder, where there is one */
    char p_fallback[1100];
    snprintf(p_fallback, sizeof p_fallback, "%s/fallback.csv", t->dir);
    const int frc = fallback_read(p_fallback, t->dev.info.name, t->dev.rt->name, &t->rules, err, sizeof err);
    t->have_rules = frc == 0;
    if (frc == 2) {
        fprintf(stderr, "fabench tune: %s\n", err);
        csvt_free(t->explored);
        csvt_free(t->tuning);
        shapes_free(&t->shapes);
        return FB_EXIT_BADINPUT;
    }
    if (attn_open(&t->dev, &t->runner, err, sizeof err) != 0) {
        fprintf(stderr, "fabench tune: %s\n", err);
        csvt_free(t->explored);
        csvt_free(t->tuning);
        shapes_free(&t->shapes);
        if (t->have_rules) fallback_rules_free(&t->rules);
        return 1;
    }
    attn_opts_defaults(&t->ao);
    t->ao.timing.budget_s = t->o.rep_budget;
    t->ao.timing.warmup_s = 0.02;
    t->ao.timing.timeout_s = t->o.timeout_s;
    return -1;
}

/* How a class's search came out, for its head-to-head and its tuning.csv row */
typedef struct {
    long best, explored_n, before; /* best: a candidate's index, -1 when none verified */
    double best_us;
    char best_cfg[KCONFIG_STR_MAX], new_cfg[KCONFIG_STR_MAX]; /* new_cfg: the best this run timed */
    size_t first_row; /* explored.csv's rows from here on are this run's */
    char **decl;      /* the configurations admissible in the head-to-head (NULL: no filter) */
    long ndecl;
    char finalists[SEARCH_FINALISTS][KCONFIG_STR_MAX]; /* staged: each leading form's best */
    int nfinal;
} class_search;

enum { CLASS_DONE, CLASS_FATAL, CLASS_RESTART, CLASS_STOPPED };

/* Halving's later rungs: candidate cs, whose row rr this run wrote, timed again for longer
 * over that row. CLASS_DONE, CLASS_FATAL or CLASS_RESTART (the device is gone for this
 * process) */
static int retime_candidate(tune_run *t, const shape_t *s, dtype_t dt, const kconfig *cand, const char *key, const char *cs,
                            long rr, int rung)
{
    char err[FB_ERRLEN];
    status_t st = ST_OK;
    /* a crash here is recorded over this row (the supervisor) */
    note_candidate(t->inflight, t->p_explored, &t->dev, cs, key, s->name, t->o.strategy,
                   t->explored->rows[rr][csvt_col(t->explored, "step")], 1);
    /* test hook (tests/faults.sh): crash while timing a candidate again, once: at
     * the first such timing after the file named there was created */
    const char *crash = getenv("FABENCH_TEST_CRASH_RETIME");
    if (t->inflight && crash && *crash) {
        FILE *once = fopen(crash, "wx");
        if (once) { fclose(once); signal(SIGSEGV, SIG_DFL); raise(SIGSEGV); }
    }
    if (retime_row(t->runner, s, dt, cand, &t->ao, rung, t->explored, (size_t)rr, t->p_explored, &st, err, sizeof err) != 0) {
        fprintf(stderr, "fabench tune: %s: %s\n", s->name, err);
        return CLASS_FATAL;
    }
    if (t->inflight) unlink(t->inflight);
    if (t->child && (st == ST_TIMEOUT || attn_unusable(t->runner))) return CLASS_RESTART;
    const int col_st = csvt_col(t->explored, "status"), col_us = csvt_col(t->explored, "median_us");
    if (!t->o.quiet && !t->is_tty)
        fprintf(stderr, "fabench tune: %s: rung %d: %s %s us\n", key, rung, cs,
                t->explored->rows[rr][col_us][0] ? t->explored->rows[rr][col_us] : t->explored->rows[rr][col_st]);
    return CLASS_DONE;
}

/* Candidate cand (text cs), the step'th of class key, compiled, verified and timed once
 * into *res, and its explored.csv row written. CLASS_DONE, CLASS_FATAL, or CLASS_RESTART
 * (timed, but the device is gone for this process) */
static int time_candidate(tune_run *t, const shape_t *s, dtype_t dt, kconfig cand, const char *key, const char *cs,
                          long step, double best_us, attn_result *res)
{
    char err[FB_ERRLEN];
    /* a candidate more than ABANDON times slower than the best so far gets one timed run */
    t->ao.timing.abandon_us = isfinite(best_us) ? TUNE_ABANDON * best_us : 0;
    if (t->inflight) {
        char steps[24];
        snprintf(steps, sizeof steps, "%ld", step);
        note_candidate(t->inflight, t->p_explored, &t->dev, cs, key, s->name, t->o.strategy, steps, 0);
        /* test hooks (tests/faults.sh): crash the process, or hang the device, on
         * candidates whose configuration contains the given text */
        const char *crash = getenv("FABENCH_TEST_CRASH_CONFIG"), *hang = getenv("FABENCH_TEST_HANG_CONFIG");
        if (crash && *crash && strstr(cs, crash)) { signal(SIGSEGV, SIG_DFL); raise(SIGSEGV); }
        if (hang && *hang && strstr(cs, hang)) {
            kconfig h = {0};
            if (kconfig_parse("FAULT_HANG=1", &h, err, sizeof err) == 0) kconfig_overlay(&cand, &h);
        }
    }
    if (attn_run(t->runner, s, dt, &cand, &t->ao, res, err, sizeof err) != 0) {
        fprintf(stderr, "fabench tune: %s: %s\n", s->name, err);
        return CLASS_FATAL;
    }
    if (explored_add(t->explored, &t->dev, key, s, t->o.strategy, step, cs, res, res->reason) != 0)
        snprintf(err, sizeof err, "out of memory");
    if (t->explored->nrows == 0 || strcmp(t->explored->rows[t->explored->nrows - 1][3], cs) ||
        csvt_write_atomic(t->explored, t->p_explored, err, sizeof err) != 0) {
        fprintf(stderr, "fabench tune: %s\n", err);
        return CLASS_FATAL;
    }
    if (t->inflight) unlink(t->inflight);
    if (t->child && (res->status == ST_TIMEOUT || attn_unusable(t->runner))) return CLASS_RESTART;
    return CLASS_DONE;
}

/* Searches class `key` (shape s, dtype dt): the space's candidates for it, asked of the
 * searcher in turn, each compiled, verified and timed, every one a row of explored.csv. The
 * outcome in *out; CLASS_DONE, or CLASS_FATAL, or CLASS_RESTART where the device is gone for
 * this process (a supervised child: the supervisor starts a fresh one) */
/* --declared-only: keeps of the class's *n candidates those kernels/space.csv declares for it
 * (into *decl, *ndecl, which the head-to-head takes later), says how many went, and counts
 * *before as of what remains. -1 out of memory. */
static int keep_declared(tune_run *t, const shape_t *s, dtype_t dt, const char *key, kconfig *cands, long *n, long *before,
                         char ***decl, long *ndecl)
{
    *decl = declared_strings(t->declared, &t->dev.info, s, dt, ndecl);
    if (!*decl) return -1;
    long kept = 0;
    for (long i = 0; i < *n; i++) {
        char cs[KCONFIG_STR_MAX];
        kconfig_str(&cands[i], cs, sizeof cs);
        if (in_declared_list((const char *const *)*decl, *ndecl, cs)) cands[kept++] = cands[i];
    }
    if (!t->o.quiet && kept < *n)
        fprintf(stderr, "fabench tune: %s: --declared-only: %ld of the %ld candidates are not in %s for this class; "
                "%ld left\n", key, *n - kept, *n, t->declared->source, kept);
    *before -= *n - kept; /* the summary's count is then of what remains */
    *n = kept;
    return 0;
}

/* The default configuration first; a local climb starts from its seeds (the class's
 * tuning.csv row and its nearest neighbours'), else from the default; staged takes those
 * and what `run --tuned` takes without a row (fallback.csv's rule, else the regime's
 * default), so that a tune from an empty table still starts in the regime's known form */
static void seed_search(tune_run *t, searcher *se, const shape_t *s, dtype_t dt, const char *key, const kconfig *cands, long n)
{
    kconfig dc = {0};
    char ds[256];
    int dist = 0;
    kconfig_complete(&dc, &t->dev.info, s, dt);
    kconfig_str(&dc, ds, sizeof ds);
    long i = cand_nearest(cands, n, ds, &dist);
    if (i >= 0 && dist == 0) searcher_first(se, i);
    const int staged = !strcmp(t->o.strategy, "staged");
    if (!strcmp(t->o.strategy, "local") || staged) local_seeds(se, t->tuning, &t->dev, key, cands, n);
    if (staged) {
        fallbacks fb;
        class_fallbacks(t->have_rules ? &t->rules : NULL, &t->dev, s, dt, &fb);
        if ((i = cand_nearest(cands, n, fb.cfg[0], &dist)) >= 0) searcher_seed(se, i);
    }
}

/* Compiles what the searcher may ask for on all cores (into the disk cache), in the
 * background where the runtime allows, so timing starts at once; a model-guided search may
 * ask for any of them. NULL when nothing could be started. */
static attn_precompile_job *precompile_ahead(tune_run *t, searcher *se, const shape_t *s, dtype_t dt, const kconfig *cands,
                                             long n, double t0)
{
    attn_precompile_job *pjob = NULL;
    long m = t->o.budget > 0 && t->o.budget < n ? (strcmp(t->o.strategy, "bo") ? t->o.budget : 4 * t->o.budget) : n;
    if (m > n) m = n;
    kconfig *pre = malloc(sizeof *pre * (size_t)(m ? m : 1));
    long *ord = malloc(sizeof *ord * (size_t)(m ? m : 1));
    if (pre && ord) {
        searcher_preview(se, ord, m);
        for (long i = 0; i < m; i++) pre[i] = cands[ord[i]];
        pjob = attn_precompile_start(t->runner, s, dt, pre, m, t->ao.write_lse, t->o.time_limit > 0 ? t0 + t->o.time_limit : 0,
                                     &stop_requested);
    }
    free(pre);
    free(ord);
    return pjob;
}

/* Halving's result: the survivor of the highest rung, by its longest timing, into *best,
 * *best_us and best_cfg; new_cfg and *new_us keep it only where this run timed it (an
 * earlier run's row: rung 0's fastest new one may have been eliminated since). Every
 * survivor failed when timed again: nothing to trust, *best -1. */
static void halving_survivor(tune_run *t, searcher *se, const char *key, const kconfig *cands, size_t first_row, long *best,
                             double *best_us, char *best_cfg, double *new_us, char *new_cfg)
{
    double hus;
    const long hb = searcher_best(se, &hus);
    if (hb < 0) {
        if (!t->o.quiet) fprintf(stderr, "fabench tune: %s: every survivor failed when timed again\n", key);
        *best = -1;
        new_cfg[0] = 0;
        return;
    }
    *best = hb;
    *best_us = hus;
    kconfig_str(&cands[hb], best_cfg, KCONFIG_STR_MAX);
    if (explored_find(t->explored, &t->dev, key, best_cfg) >= (long)first_row) {
        *new_us = hus;
        snprintf(new_cfg, KCONFIG_STR_MAX, "%s", best_cfg);
    } else {
        *new_us = INFINITY;
        new_cfg[0] = 0;
    }
}

/* The class's pruned combinations into pruned.csv beside explored.csv: a row per rule that
 * dropped some, with how many and one of them (a resumed or repeated tune replaces the
 * class's rows: the count is of today's space). 0, or -1 said on stderr. */
static int record_pruned(const tune_run *t, const char *key, const shape_t *s, const space_pruned *pr, long n)
{
    char path[1100], err[FB_ERRLEN] = "out of memory", cfg[KCONFIG_STR_MAX], utc[32], count[24];
    snprintf(path, sizeof path, "%s/pruned.csv", t->dir);
    if (n <= 0 && access(path, F_OK) != 0) return 0;
    csv_table *p;
    if (csvt_open_append(path, pruned_header, PRUNED_NCOLS, &p, err, sizeof err) != 0) {
        fprintf(stderr, "fabench tune: %s\n", err);
        return -1;
    }
    int rc = 0;
    for (size_t r = p->nrows; r-- > 0 && rc == 0;) /* the class's earlier rows */
        if (!strcmp(p->rows[r][0], t->dev.info.name) && !strcmp(p->rows[r][1], t->dev.rt->name) && !strcmp(p->rows[r][2], key))
            rc = csvt_remove(p, r);
    fb_utc_now(utc, sizeof utc);
    const size_t first_row = p->nrows; /* the class's rows from here: one per rule, counting */
    for (long i = 0; i < n && rc == 0; i++) {
        size_t r = first_row;
        while (r < p->nrows && strcmp(p->rows[r][4], pr[i].rule)) r++;
        if (r < p->nrows) { /* the rule's row: one more combination */
            snprintf(count, sizeof count, "%ld", atol(p->rows[r][5]) + 1);
            rc = csvt_set(p, r, 5, count);
            continue;
        }
        kconfig_str(&pr[i].c, cfg, sizeof cfg);
        const char *row[] = {t->dev.info.name, t->dev.rt->name, key, s->name, pr[i].rule, "1", cfg, utc};
        rc = csvt_add(p, row);
    }
    if (rc != 0 || csvt_write_atomic(p, path, err, sizeof err) != 0) {
        fprintf(stderr, "fabench tune: %s\n", err);
        rc = -1;
    }
    csvt_free(p);
    return rc;
}

static int search_class(tune_run *t, size_t ci, size_t nclass, const shape_t *s, dtype_t dt, const char *key,
                        class_search *out)
{
    int fatal = 0, restart = 0;
    kconfig *cands;
    long before, npruned = 0;
    space_pruned *pruned = NULL;
    long n = space_enumerate_pruned(&t->space, &t->dev.info, s, dt, &cands, &before, &pruned, &npruned);
    if (n < 0) { fprintf(stderr, "fabench tune: out of memory\n"); return CLASS_FATAL; }
    const int pruned_rc = record_pruned(t, key, s, pruned, npruned);
    free(pruned);
    if (pruned_rc != 0) { free(cands); return CLASS_FATAL; }
    /* the declared space's configurations for this class (--merge): --declared-only
     * filters the candidates with them first, the head-to-head takes them after */
    long ndecl = 0;
    char **decl = NULL;
    if (t->o.declared_only && t->declared && keep_declared(t, s, dt, key, cands, &n, &before, &decl, &ndecl) != 0) {
        free(cands);
        fprintf(stderr, "fabench tune: out of memory\n");
        return CLASS_FATAL;
    }
    double t0 = fb_now(), best_us = INFINITY;
    if (!t->o.quiet && !t->is_tty) /* a log shows where a long class is from its start */
        fprintf(stderr, "fabench tune: [%zu/%zu] %s: %s over %ld configurations%s\n", ci + 1, nclass, key, t->o.strategy, n,
                t->o.time_limit > 0 ? ", within --time" : "");
    searcher *se = searcher_new(t->o.strategy, cands, n, t->o.seed);
    if (!se) { free(cands); strings_free(decl, ndecl); return CLASS_FATAL; }
    searcher_budget(se, t->o.budget); /* halving: the size of its first rung */
    seed_search(t, se, s, dt, key, cands, n);
    attn_precompile_job *pjob = precompile_ahead(t, se, s, dt, cands, n, t0);
    const size_t first_row = t->explored->nrows; /* rows from here on are this run's */
    long best = -1, explored_n = 0, late_tries = 0;
    char best_cfg[KCONFIG_STR_MAX] = "", new_cfg[KCONFIG_STR_MAX] = ""; /* new_cfg: the best of the candidates timed by this run */
    double new_us = INFINITY;
    /* resume: candidates this class already has rows for are not run again */
    const int col_st = csvt_col(t->explored, "status"), col_us = csvt_col(t->explored, "median_us");
    long idx;
    /* halving's later rungs time candidates already counted against the budget */
    while (!stop_requested && (t->o.budget <= 0 || explored_n < t->o.budget || t->o.halving) && (idx = searcher_ask(se)) >= 0) {
        /* --time spent: stop, except that a class with nothing verified yet gets a few
         * tries more (a cold compile of the precompile batch, NVIDIA's OpenCL say, can
         * take all of a short --time before the first candidate has run) */
        if (t->o.time_limit > 0 && fb_now() - t0 > t->o.time_limit && (best >= 0 || late_tries++ >= TUNE_LATE_TRIES)) break;
        char cs[KCONFIG_STR_MAX];
        kconfig_str(&cands[idx], cs, sizeof cs);
        /* this class's row for the candidate: an earlier run's (resumed: its recorded time),
         * or, for halving's later rungs, this run's, which is timed again for longer */
        const long rr = explored_find(t->explored, &t->dev, key, cs);
        const int rung = searcher_rung(se);
        if (rung > 0 && rr >= (long)first_row) {
            const int rc = retime_candidate(t, s, dt, &cands[idx], key, cs, rr, rung);
            if (rc == CLASS_FATAL) { fatal = 1; break; }
            if (rc == CLASS_RESTART) { restart = 1; break; }
        }
        if (rung > 0 || rr >= 0) {
            const int row_ok = rr >= 0 && !strcmp(t->explored->rows[rr][col_st], "ok") && t->explored->rows[rr][col_us][0];
            const double us = row_ok ? atof(t->explored->rows[rr][col_us]) : NAN;
            searcher_tell(se, idx, us);
            if (rung == 0) { /* a resumed candidate counts as explored */
                explored_n++;
                if (us < best_us) {
                    best_us = us;
                    best = idx;
                    snprintf(best_cfg, sizeof best_cfg, "%s", cs);
                }
            }
            continue;
        }
        attn_result res;
        const int tc = time_candidate(t, s, dt, cands[idx], key, cs, explored_n + 1, best_us, &res);
        if (tc == CLASS_FATAL) { fatal = 1; break; }
        explored_n++;
        int ok = res.status == ST_OK;
        double us = ok ? res.us.median : NAN;
        searcher_tell(se, idx, us);
        if (ok && us < best_us) { best_us = us; best = idx; snprintf(best_cfg, sizeof best_cfg, "%s", cs); }
        if (ok && us < new_us) { new_us = us; snprintf(new_cfg, sizeof new_cfg, "%s", cs); }
        if (tc == CLASS_RESTART) { restart = 1; break; }
        if (!t->o.quiet && t->is_tty) {
            /* ETA from this class's pace so far, capped by --time */
            const long total = t->o.budget > 0 && t->o.budget < n ? t->o.budget : n;
            double eta = (fb_now() - t0) / (double)explored_n * (double)(total - explored_n);
            if (t->o.time_limit > 0 && eta > t->o.time_limit - (fb_now() - t0)) eta = t->o.time_limit - (fb_now() - t0);
            fprintf(stderr, "\r[%zu/%zu] %s: %ld/%ld, best %.1f us, ETA %.0f s   ", ci + 1, nclass, key,
                    explored_n, total, best_us, eta > 0 ? eta : 0.0);
        }
    }
    attn_precompile_wait(pjob, 1);
    if (t->o.halving && !fatal && searcher_rung(se) > 0)
        halving_survivor(t, se, key, cands, first_row, &best, &best_us, best_cfg, &new_us, new_cfg);
    long fin[SEARCH_FINALISTS];
    const long nfin = searcher_finalists(se, fin, SEARCH_FINALISTS);
    char fin_cfg[SEARCH_FINALISTS][KCONFIG_STR_MAX] = {{0}};
    for (long k = 0; k < nfin; k++) kconfig_str(&cands[fin[k]], fin_cfg[k], sizeof fin_cfg[k]);
    searcher_free(se);
    /* the head-to-head's admissible configurations: this run's candidates without
     * --merge (already enumerated), the declared space's with it (enumerated above
     * under --declared-only); none without a best, as nothing contends then */
    if (best < 0) {
        strings_free(decl, ndecl);
        decl = NULL;
        ndecl = 0;
    } else if (!decl) {
        if (!t->o.merge) decl = config_strings(cands, ndecl = n);
        else if (t->declared) decl = declared_strings(t->declared, &t->dev.info, s, dt, &ndecl);
        if (!decl && (!t->o.merge || t->declared)) {
            fprintf(stderr, "fabench tune: out of memory\n");
            fatal = 1;
        }
    }
    free(cands);
    if (!t->o.quiet)
        fprintf(stderr, "%s[%zu/%zu] %s: %ld configurations in the space, %ld fit the device, %ld explored; best %s%s%s\n",
                t->is_tty ? "\r" : "", ci + 1, nclass, key, before, n, explored_n,
                best >= 0 ? "" : "none verified", best >= 0 ? best_cfg : "", "");
    *out = (class_search){.best = best, .explored_n = explored_n, .before = before, .best_us = best_us,
                          .first_row = first_row, .decl = decl, .ndecl = ndecl};
    memcpy(out->finalists, fin_cfg, sizeof fin_cfg);
    out->nfinal = (int)nfin;
    snprintf(out->best_cfg, sizeof out->best_cfg, "%s", best_cfg);
    snprintf(out->new_cfg, sizeof out->new_cfg, "%s", new_cfg);
    return fatal ? CLASS_FATAL : restart ? CLASS_RESTART : CLASS_DONE;
}

/* After class `key`'s search: its head-to-head (tuning.csv's row, what run --tuned takes
 * without it, the runtime's default and this run's best, timed again back to back), then
 * its tuning.csv row written, kept, or removed where it failed. CLASS_DONE, CLASS_FATAL or
 * CLASS_RESTART */
static int settle_class(tune_run *t, const shape_t *s, dtype_t dt, const char *key, class_search *c)
{
    char err[FB_ERRLEN];
    int fatal = 0, restart = 0;
    long best = c->best, explored_n = c->explored_n, before = c->before;
    double best_us = c->best_us;
    char *best_cfg = c->best_cfg;
    const char *new_cfg = c->new_cfg;
    const size_t first_row = c->first_row;
    char **decl = c->decl;
    const long ndecl = c->ndecl;
    /* this class's tuning.csv row, if any */
    const size_t r = class_row(t->tuning, &t->dev, key);
    int cu = csvt_col(t->tuning, "median_us"), ccfg = csvt_col(t->tuning, "config");
    int rematched = 0, undeclared = 0;
    /* earlier rows contend, and tuning.csv's row is kept, only while decl holds them
     * (NULL under --merge when kernels/space.csv could not be read: no filter) */
    const char *recorded = t->o.merge && r < t->tuning->nrows && ccfg >= 0 ? t->tuning->rows[r][ccfg] : NULL;
    char recorded_cfg[KCONFIG_STR_MAX] = "";
    /* no incumbent: a row kernels/space.csv no longer declares, or one whose configuration's
     * newest row failed */
    int recorded_failed = 0;
    if (recorded) {
        undeclared = !in_declared((const char *const *)decl, ndecl, recorded);
        recorded_failed = !undeclared && failed_before(t->explored, &t->dev, key, recorded);
    }
    if (undeclared || recorded_failed) {
        snprintf(recorded_cfg, sizeof recorded_cfg, "%s", recorded); /* for the note where it is replaced */
        recorded = NULL;
    }
    /* under --merge a probe's --space may hold what kernels/space.csv does not: the
     * search's best must then give way to a declared contender */
    const int best_undeclared = best >= 0 && !in_declared((const char *const *)decl, ndecl, best_cfg);
    if (best_undeclared && !t->o.quiet && !fatal && !stop_requested && !restart)
        fprintf(stderr,
                "fabench tune: %s: this run's best is not in %s, so it cannot go to tuning.csv; the declared "
                "contenders are timed instead (add its values there to let it win)\n",
                key, t->declared ? t->declared->source : "kernels/space.csv");
    /* a search cut short by SIGINT skips the head-to-head, and so writes no row: one
     * never matched against what the run takes without it could be slower (the class's
     * explored rows stay, and the same command resumes) */
    const int cut = stop_requested;
    if (best >= 0 && !fatal && !cut && !restart) {
        fallbacks fb;
        class_fallbacks(t->have_rules ? &t->rules : NULL, &t->dev, s, dt, &fb);
        const int hh = head_to_head(t->runner, s, dt, &t->ao, t->o.rematch_budget, t->explored, t->p_explored, t->inflight, t->o.strategy,
                                    explored_n + 1, &t->dev, key, first_row, new_cfg, recorded, &fb,
                                    (const char (*)[KCONFIG_STR_MAX])c->finalists, c->nfinal, (const char *const *)decl,
                                    ndecl, best_undeclared, t->o.quiet, best_cfg, sizeof c->best_cfg, &best_us, err, sizeof err);
        if (hh < 0) {
            fprintf(stderr, "fabench tune: %s: %s\n", s->name, err);
            fatal = 1;
        } else if (hh == 2) { /* said even under --quiet: the class's search came to nothing */
            fprintf(stderr, "fabench tune: %s: no contender verified when timed again; tuning.csv's row is left as it was\n",
                    key);
            best = -1; /* a wrong kernel never wins */
        } else if (hh == 3)
            restart = 1;
        rematched = hh == 1;
    }
    strings_free(decl, ndecl);
    if (best >= 0 && best_undeclared && !rematched && !fatal) {
        if (!t->o.quiet)
            fprintf(stderr, "fabench tune: %s: no configuration %s declares verified; its tuning.csv row is left as it was\n",
                    key, t->declared ? t->declared->source : "kernels/space.csv");
        best = -1; /* nothing to write */
    }
    if (best >= 0 && !fatal && !restart && !cut) {
        char f[6][64], date[32];
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
        snprintf(f[0], 64, "%.3f", best_us);
        snprintf(f[1], 64, "%.4f", shape_flops(s) / (best_us * 1e-6) / 1e12);
        snprintf(f[2], 64, "%ld", explored_n);
        snprintf(f[3], 64, "%ld", before);
        const char *row[TUNING_NCOLS] = {t->dev.info.name, t->dev.rt->name, key, best_cfg, f[0], f[1], f[2], f[3],
                                         s->name, t->o.strategy, date};
        /* replace this class's row, if any (under --merge only when this run's winner is
         * faster; when both were timed again above, that decided) */
        if (r < t->tuning->nrows && t->o.merge && !rematched && !undeclared && !recorded_failed && cu >= 0 && atof(t->tuning->rows[r][cu]) > 0 &&
            atof(t->tuning->rows[r][cu]) <= best_us) {
            if (!t->o.quiet)
                fprintf(stderr, "fabench tune: %s: kept tuning.csv's %s (%s us); this run's best took %.3f us\n", key,
                        t->tuning->rows[r][csvt_col(t->tuning, "config")], t->tuning->rows[r][cu], best_us);
        } else if (r < t->tuning->nrows) {
            if (undeclared && !t->o.quiet)
                fprintf(stderr, "fabench tune: %s: tuning.csv's %s is not in %s any more; replaced\n", key,
                        recorded_cfg, t->declared ? t->declared->source : "kernels/space.csv");
            if (recorded_failed && !t->o.quiet)
                fprintf(stderr, "fabench tune: %s: tuning.csv's %s failed when timed; replaced\n", key, recorded_cfg);
            csvt_replace(t->tuning, r, row);
        } else if (csvt_add(t->tuning, row) != 0) {
            fprintf(stderr, "fabench tune: out of memory\n");
            fatal = 1;
        }
        if (!fatal && csvt_write_atomic(t->tuning, t->p_tuning, err, sizeof err) != 0) {
            fprintf(stderr, "fabench tune: %s\n", err);
            fatal = 1;
        }
    }
    /* tuning.csv's row names a configuration that failed (before this run or in its
     * head-to-head) and nothing verified replaced it: the row goes, so that run --tuned
     * takes the nearest class or the default rather than a wrong kernel */
    if (best < 0 && !fatal && !restart && !stop_requested) {
        const size_t rr = class_row(t->tuning, &t->dev, key);
        if (rr < t->tuning->nrows && ccfg >= 0 && failed_before(t->explored, &t->dev, key, t->tuning->rows[rr][ccfg])) {
            fprintf(stderr, "fabench tune: %s: tuning.csv's %s failed when timed and nothing verified replaces it; "
                            "its row is removed\n", key, t->tuning->rows[rr][ccfg]);
            if (csvt_remove(t->tuning, rr) != 0 || csvt_write_atomic(t->tuning, t->p_tuning, err, sizeof err) != 0) {
                fprintf(stderr, "fabench tune: %s\n", err);
                fatal = 1;
            }
        }
    }
    return fatal ? CLASS_FATAL : restart ? CLASS_RESTART : CLASS_DONE;
}

/* The tune's last words: how many classes in how long, and its wall time in the manifest */
static void tune_finish(tune_run *t, double tune_t0, size_t nfinished, size_t nclass)
{
    char err[FB_ERRLEN];
    long compiled, cached;
    attn_counts(t->runner, &compiled, &cached);
    /* wall time since the tune began (the supervisor's start, across restarted processes) */
    const char *t0env = t->child ? getenv("FABENCH_TUNE_T0") : NULL;
    const double wall = fb_now() - (t0env && atof(t0env) > 0 ? atof(t0env) : tune_t0);
    if (!t->o.quiet) {
        char done[64];
        if (nfinished < nclass) snprintf(done, sizeof done, "%zu of %zu classes", nfinished, nclass);
        else snprintf(done, sizeof done, "%zu classes", nclass);
        fprintf(stderr, "fabench tune: %s in %.0f s; %ld binaries compiled, %ld loaded from the cache; results in %s/\n", done,
                wall, compiled, cached, t->dir);
    }
    {   /* the manifest keeps it beside the command line: <backend>.tune.wall_s, under --merge
         * in this command's own update.N. record (the folder's first tune keeps its time) */
        csv_table *man = NULL;
        char key[96], val[32];
        snprintf(val, sizeof val, "%.1f", wall);
        if (csvt_read(t->p_manifest, &man, err, sizeof err) == 0) {
            const long upd = t->o.merge ? manifest_last_update(man) : 0;
            if (upd > 0) snprintf(key, sizeof key, "update.%ld.%s.tune.wall_s", upd, t->dev.rt->name);
            else snprintf(key, sizeof key, "%s.tune.wall_s", t->dev.rt->name);
            if (manifest_set(man, key, val) != 0 || csvt_write_atomic(man, t->p_manifest, err, sizeof err) != 0)
                fprintf(stderr, "fabench tune: %s: the wall time was not recorded\n", t->p_manifest);
            csvt_free(man);
        }
    }
}

int cmd_tune(int argc, char **argv)
{
    const double tune_t0 = fb_now();
    tune_run t = {0};
    t.child = getenv("FABENCH_TUNE_CHILD") != NULL;
    t.inflight = t.child ? getenv("FABENCH_TUNE_INFLIGHT") : NULL;
    int rc = tune_dispatch(argc, argv, t.child);
    if (rc < 0) rc = tune_options(argc, argv, &t.o);
    if (rc < 0) rc = tune_open(&t, argc, argv);
    if (rc >= 0) return rc;
    signal(SIGINT, on_sigint);
    t.is_tty = isatty(2);

    size_t *rep = calloc(t.shapes.n ? t.shapes.n : 1, sizeof *rep);
    char (*keys)[96] = calloc(t.shapes.n ? t.shapes.n : 1, sizeof *keys);
    size_t nclass = 0;
    int fatal = 0;
    if (!rep || !keys) { fprintf(stderr, "fabench tune: out of memory\n"); fatal = 1; }
    else class_reps(&t.shapes, t.o.have_dtype, t.o.dtype, t.o.only, rep, keys, &nclass);
    int restart = 0; /* a child whose device hung: the supervisor starts a fresh one */
    size_t nfinished = 0; /* classes this process finished (fewer than nclass when stopped) */
    for (size_t ci = 0; ci < nclass && !stop_requested && !fatal && !restart; ci++) {
        const shape_t *s = &t.shapes.v[rep[ci]];
        dtype_t dt = shapes_dtype(s, t.o.have_dtype, t.o.dtype);
        if (t.o.claims) { /* a worker: only the classes no other worker took */
            const int mine = tune_claim(t.o.claims, (int)t.o.worker_id, t.dev.info.name, t.dev.rt->name, keys[ci]);
            if (mine < 0) { fprintf(stderr, "fabench tune: %s: cannot claim a class: %s\n", t.o.claims, strerror(errno)); fatal = 1; break; }
            if (!mine) { nfinished++; continue; }
        }
        class_search cs = {0};
        int st = search_class(&t, ci, nclass, s, dt, keys[ci], &cs);
        if (st == CLASS_DONE) st = settle_class(&t, s, dt, keys[ci], &cs);
        else strings_free(cs.decl, cs.ndecl);
        fatal = st == CLASS_FATAL;
        restart = st == CLASS_RESTART;
        if (!stop_requested && !fatal && !restart) nfinished++;
    }
    tune_finish(&t, tune_t0, nfinished, nclass);
    if (stop_requested && !t.o.quiet) fprintf(stderr, "fabench tune: interrupted; finished rows kept; the same command resumes\n");
    free(rep);
    free(keys);
    attn_close(t.runner);
    csvt_free(t.explored);
    csvt_free(t.tuning);
    shapes_free(&t.shapes);
    if (t.have_rules) fallback_rules_free(&t.rules);
    return fatal ? 1 : stop_requested ? 130 : restart ? TUNE_RESTART_EXIT : 0;
}
