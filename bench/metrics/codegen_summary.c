/* codegen_summary.c: `fabench codegen-summary DIR...`: how diverse the generated code is.
 * Per (GPU, runtime, source: ptx, sass, or what the runtime reported while tuning): the
 * configurations compiled, distinct binaries, distinct instructions and opcodes, and the
 * min / median / max of registers, spills, shared memory, binary bytes and instruction
 * count (codegen_summary.csv); and the pairwise distances (cosine, Jensen-Shannon) between
 * the instruction histograms of the winning configurations of tuning.csv, across shapes,
 * runtimes and GPUs (codegen_distance.csv). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codegen.h"
#include "commands.h"
#include "common.h"
#include "csvio.h"
#include "sass.h"
#include "stats.h"

#define MAX_DIRS 16

typedef struct {
    int dir;
    const char *gpu, *backend, *config, *cls, *source;
    op_histogram h;
} hist_entry;

typedef struct {
    int dir;
    const char *gpu, *backend, *config, *cls, *status, *hash;
    const char *source;   /* "ptx" (compiled.csv) or "runtime" (explored.csv) */
    double v[5];          /* registers, spill_bytes, shared_bytes, binary_bytes, instructions; < 0 unknown */
    double sass_instr;
} comp_entry;

typedef struct {
    int dir;
    const char *gpu, *backend, *config, *cls, *set;
} member;

typedef struct {
    csv_table *tab[MAX_DIRS][5]; /* compiled, codegen, tuning, explored, manifest */
    int ndirs;
    const char *dirs[MAX_DIRS];
    hist_entry *h;
    size_t nh, caph;
    comp_entry *c;
    size_t nc, capc;
} data;

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    void *q = realloc(*p, nc * size);
    if (!q) return -1;
    *p = q;
    *cap = nc;
    return 0;
}

/* reads DIR/NAME when it exists: 0 (t NULL when absent), or 2 with err */
static int read_opt(const char *dir, const char *name, csv_table **t, char *err, size_t errlen)
{
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    *t = NULL;
    if (stat(p, &st) != 0) return 0;
    return csvt_read(p, t, err, errlen) == 0 ? 0 : 2;
}

static int need_cols(const csv_table *t, const char *path, const char *const *cols, int *idx, char *err, size_t errlen)
{
    for (int i = 0; cols[i]; i++) {
        idx[i] = csvt_col(t, cols[i]);
        if (idx[i] < 0) {
            snprintf(err, errlen, "%.900s:1: %s: required column missing", path, cols[i]);
            return 2;
        }
    }
    return 0;
}

static double fnum(const char *s)
{
    char *end;
    if (!*s) return -1;
    double v = strtod(s, &end);
    return *end || !isfinite(v) ? -1 : v;
}

static hist_entry *find_hist(data *d, int dir, const char *gpu, const char *backend, const char *config,
                             const char *cls, const char *source, int create)
{
    for (size_t i = d->nh; i-- > 0;) { /* rows come grouped: the last entry is the likely one */
        hist_entry *e = &d->h[i];
        if (e->dir == dir && !strcmp(e->config, config) && !strcmp(e->cls, cls) && !strcmp(e->source, source) &&
            !strcmp(e->gpu, gpu) && !strcmp(e->backend, backend))
            return e;
    }
    if (!create || grow((void **)&d->h, &d->caph, d->nh, sizeof *d->h) != 0) return NULL;
    hist_entry *e = &d->h[d->nh++];
    memset(e, 0, sizeof *e);
    e->dir = dir;
    e->gpu = gpu;
    e->backend = backend;
    e->config = config;
    e->cls = cls;
    e->source = source;
    return e;
}

static long hist_total(const op_histogram *h)
{
    long t = 0;
    for (size_t i = 0; i < h->n; i++) t += h->count[i];
    return t;
}

static int load_dir(data *d, int k, char *err, size_t errlen)
{
    static const char *const names[5] = {"compiled.csv", "codegen.csv", "tuning.csv", "explored.csv", "manifest.csv"};
    for (int i = 0; i < 5; i++)
        if (read_opt(d->dirs[k], names[i], &d->tab[k][i], err, errlen) != 0) return 2;
    char path[4200];
    int ix[16];
    csv_table *t = d->tab[k][1];
    if (t && t->nrows) { /* codegen.csv: histograms */
        static const char *const cols[] = {"gpu", "backend", "config", "shape_class", "instruction", "count", NULL};
        snprintf(path, sizeof path, "%s/codegen.csv", d->dirs[k]);
        if (need_cols(t, path, cols, ix, err, errlen)) return 2;
        int cs = csvt_col(t, "source");
        for (size_t r = 0; r < t->nrows; r++) {
            char **row = t->rows[r];
            double n = fnum(row[ix[5]]);
            if (n < 1) {
                snprintf(err, errlen, "%.900s:%d: count: '%.40s' is not a count >= 1", path, t->row_line[r], row[ix[5]]);
                return 2;
            }
            const char *src = cs >= 0 && *row[cs] ? row[cs] : "ptx";
            hist_entry *e = find_hist(d, k, row[ix[0]], row[ix[1]], row[ix[2]], row[ix[3]], src, 1);
            if (!e) { snprintf(err, errlen, "out of memory"); return -1; }
            if (op_histogram_add(&e->h, row[ix[4]], strlen(row[ix[4]])) != 0) { snprintf(err, errlen, "out of memory"); return -1; }
            for (size_t q = 0; q < e->h.n; q++) /* added once: raise it to the count */
                if (!strcmp(e->h.op[q], row[ix[4]])) { e->h.count[q] += (long)n - 1; break; }
        }
    }
    t = d->tab[k][0];
    if (t && t->nrows) { /* compiled.csv */
        static const char *const cols[] = {"gpu", "backend", "config", "shape_class", "status", "registers", "spill_bytes",
                                           "shared_bytes", "binary_bytes", "ptx_instructions", NULL};
        snprintf(path, sizeof path, "%s/compiled.csv", d->dirs[k]);
        if (need_cols(t, path, cols, ix, err, errlen)) return 2;
        int ch = csvt_col(t, "binary_hash"), csa = csvt_col(t, "sass_instructions");
        for (size_t r = 0; r < t->nrows; r++) {
            char **row = t->rows[r];
            if (grow((void **)&d->c, &d->capc, d->nc, sizeof *d->c) != 0) return -1;
            comp_entry *c = &d->c[d->nc++];
            *c = (comp_entry){.dir = k, .gpu = row[ix[0]], .backend = row[ix[1]], .config = row[ix[2]], .cls = row[ix[3]],
                              .status = row[ix[4]], .hash = ch >= 0 ? row[ch] : "", .source = "ptx"};
            for (int m = 0; m < 5; m++) c->v[m] = fnum(row[ix[5 + m]]);
            c->sass_instr = csa >= 0 ? fnum(row[csa]) : -1;
        }
    }
    t = d->tab[k][3];
    if (t && t->nrows) { /* explored.csv: what the runtime reported for each candidate */
        static const char *const cols[] = {"gpu", "backend", "config", "shape_class", "status", "registers", "spill_bytes",
                                           "shared_bytes", "binary_bytes", NULL};
        snprintf(path, sizeof path, "%s/explored.csv", d->dirs[k]);
        if (need_cols(t, path, cols, ix, err, errlen)) return 2;
        for (size_t r = 0; r < t->nrows; r++) {
            char **row = t->rows[r];
            if (grow((void **)&d->c, &d->capc, d->nc, sizeof *d->c) != 0) return -1;
            comp_entry *c = &d->c[d->nc++];
            *c = (comp_entry){.dir = k, .gpu = row[ix[0]], .backend = row[ix[1]], .config = row[ix[2]], .cls = row[ix[3]],
                              .status = row[ix[4]], .hash = "", .source = "runtime"};
            for (int m = 0; m < 4; m++) c->v[m] = fnum(row[ix[5 + m]]);
            c->v[4] = -1;
            c->sass_instr = -1;
        }
    }
    return 0;
}

/* a compiled.csv / explored.csv row compiled: ok compile reports a binary */
static int compiled_ok(const comp_entry *c)
{
    if (!strcmp(c->source, "runtime")) return c->v[3] > 0 || c->v[0] > 0 || !strcmp(c->status, "ok");
    return !strcmp(c->status, "ok");
}

static void fmt(char *out, size_t len, double v)
{
    if (!isfinite(v)) out[0] = 0;
    else if (v == floor(v) && fabs(v) < 1e15) snprintf(out, len, "%.0f", v);
    else snprintf(out, len, "%.4g", v);
}

/* members of the comparison set: tuning.csv winners that have a histogram; else, where
 * a folder compiled one configuration per class (the defaults), those */
static size_t collect_members(data *d, member **out)
{
    member *m = NULL;
    size_t n = 0, cap = 0;
    for (int k = 0; k < d->ndirs; k++) {
        csv_table *t = d->tab[k][2], *man = d->tab[k][4];
        if (!t) continue;
        int cg = csvt_col(t, "gpu"), cb = csvt_col(t, "backend"), cc = csvt_col(t, "shape_class"), cf = csvt_col(t, "config");
        if (cg < 0 || cb < 0 || cc < 0 || cf < 0) continue;
        for (size_t r = 0; r < t->nrows; r++) {
            char **row = t->rows[r];
            /* the histogram's gpu column is the GPU, or its arch (compile --target) */
            const char *hit_gpu = NULL;
            for (size_t i = 0; i < d->nh && !hit_gpu; i++) {
                hist_entry *e = &d->h[i];
                if (e->dir != k || strcmp(e->backend, row[cb]) || strcmp(e->cls, row[cc]) || strcmp(e->config, row[cf])) continue;
                if (!strcmp(e->gpu, row[cg])) hit_gpu = e->gpu;
                for (size_t q = 0; man && man->ncols >= 2 && q < man->nrows && !hit_gpu; q++) {
                    size_t kl = strlen(man->rows[q][0]);
                    if (kl > 5 && !strcmp(man->rows[q][0] + kl - 5, ".arch") && !strcmp(man->rows[q][1], e->gpu))
                        hit_gpu = e->gpu;
                }
            }
            if (!hit_gpu || grow((void **)&m, &cap, n, sizeof *m) != 0) continue;
            m[n++] = (member){k, hit_gpu, row[cb], row[cf], row[cc], "tuned"};
        }
    }
    if (n == 0) {
        for (size_t i = 0; i < d->nh; i++) {
            hist_entry *e = &d->h[i];
            if (strcmp(e->source, "ptx")) continue;
            int others = 0;
            for (size_t j = 0; j < d->nh; j++) {
                hist_entry *f = &d->h[j];
                others += j != i && f->dir == e->dir && !strcmp(f->source, "ptx") && !strcmp(f->gpu, e->gpu) &&
                          !strcmp(f->backend, e->backend) && !strcmp(f->cls, e->cls);
            }
            if (others || grow((void **)&m, &cap, n, sizeof *m) != 0) continue;
            m[n++] = (member){e->dir, e->gpu, e->backend, e->config, e->cls, "default"};
        }
    }
    *out = m;
    return n;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fabench codegen-summary [--out DIR] [--quiet] DIR...\n\n"
            "Code diversity of the configurations compiled in results folders: their compiled.csv\n"
            "and codegen.csv (fabench compile) and explored.csv (fabench tune). Per GPU, runtime and\n"
            "source (ptx, sass; runtime: what the runtime reported while tuning): configurations\n"
            "compiled and failed, distinct binaries (by binary hash where compiled.csv has it, else\n"
            "by a fingerprint of the code's metrics and histogram), distinct instructions and\n"
            "opcodes, min/median/max of registers, spills, shared memory, binary bytes and\n"
            "instructions. Then the distances (cosine, Jensen-Shannon) between the instruction\n"
            "histograms of every pair of tuned winners (tuning.csv) across shapes, runtimes and\n"
            "GPUs (several DIRs: several GPUs); without winners, of the one configuration compiled\n"
            "per class where a folder has exactly one (the defaults).\n\n"
            "Writes codegen_summary.csv and codegen_distance.csv to --out (default: the first DIR).\n"
            "Exit status: 0, 1 nothing to summarise or a write failed, 2 bad usage or input.\n");
}

/* What the command line asks for, besides the folders (data.dirs). */
typedef struct {
    const char *outdir; /* --out; default the first folder */
    int quiet;
} summary_opts;

/* The options into *o and the folders into d->dirs, each checked to be a folder. Returns -1
 * to go on, else the exit status (the message or the usage printed). */
static int parse_args(int argc, char **argv, data *d, summary_opts *o)
{
    o->outdir = NULL;
    o->quiet = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "--quiet")) { o->quiet = 1; continue; }
        if (!strcmp(argv[i], "--out")) {
            if (i + 1 >= argc) { fprintf(stderr, "fabench codegen-summary: --out needs a folder\n"); return FB_EXIT_BADINPUT; }
            o->outdir = argv[++i];
            continue;
        }
        if (argv[i][0] == '-') {
            fprintf(stderr, "fabench codegen-summary: unknown option '%s'\n\n", argv[i]);
            usage(stderr);
            return FB_EXIT_BADINPUT;
        }
        struct stat st;
        if (stat(argv[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "fabench codegen-summary: '%s' is not a folder\n", argv[i]);
            return FB_EXIT_BADINPUT;
        }
        if (d->ndirs == MAX_DIRS) { fprintf(stderr, "fabench codegen-summary: at most %d folders\n", MAX_DIRS); return FB_EXIT_BADINPUT; }
        d->dirs[d->ndirs++] = argv[i];
    }
    if (!d->ndirs) {
        fprintf(stderr, "fabench codegen-summary: needs a results folder\n\n");
        usage(stderr);
        return FB_EXIT_BADINPUT;
    }
    if (!o->outdir) o->outdir = d->dirs[0];
    return -1;
}

/* Every folder's tables, then at least one row to summarise: 0, 1 nothing to summarise,
 * 2 bad input, -1 out of memory; err says why. */
static int load_all(data *d, char *err, size_t errlen)
{
    int rc = 0;
    for (int k = 0; k < d->ndirs && rc == 0; k++) rc = load_dir(d, k, err, errlen);
    if (rc == 0 && d->nh == 0 && d->nc == 0) {
        snprintf(err, errlen, "no compiled.csv, codegen.csv or explored.csv rows in %s%s", d->dirs[0],
                 d->ndirs > 1 ? " and the other folders" : "");
        rc = 1;
    }
    return rc;
}

/* codegen_summary.csv's and codegen_distance.csv's tables, empty: 0, or 1 with err. */
static int new_tables(csv_table **sum, csv_table **dist, char *err, size_t errlen)
{
    static const char *const sh[] = {
        "gpu", "backend", "source", "configs_compiled", "configs_failed", "distinct_binaries", "distinct_by",
        "distinct_instructions", "distinct_opcodes", "registers_min", "registers_median", "registers_max",
        "spill_bytes_min", "spill_bytes_median", "spill_bytes_max", "shared_bytes_min", "shared_bytes_median",
        "shared_bytes_max", "binary_bytes_min", "binary_bytes_median", "binary_bytes_max", "instructions_min",
        "instructions_median", "instructions_max", "compared", "jensen_shannon_median", "jensen_shannon_max"};
    static const char *const dh[] = {"source", "set", "a_gpu", "a_backend", "a_class", "a_config", "b_gpu", "b_backend",
                                     "b_class", "b_config", "differs", "cosine", "jensen_shannon", "shared_instructions"};
    *sum = csvt_new(sh, sizeof sh / sizeof sh[0]);
    *dist = csvt_new(dh, sizeof dh / sizeof dh[0]);
    if (!*sum || !*dist) { snprintf(err, errlen, "out of memory"); return 1; }
    return 0;
}

/* The pairs measured, kept for the summary rows, which quote the distances within their
 * group: each pair's Jensen-Shannon distance and the (gpu, backend, source) keys of its
 * two ends. */
typedef struct {
    double *js;
    char (*group)[2][300];
    size_t n;
} pair_list;

/* What two members differ in, of gpu, backend, class and config: "gpu+config", or "none". */
static void differs_str(const member *a, const member *b, char *out, size_t len)
{
    const char *what[4] = {"gpu", "backend", "class", "config"};
    int diff[4] = {strcmp(a->gpu, b->gpu) != 0, strcmp(a->backend, b->backend) != 0, strcmp(a->cls, b->cls) != 0,
                   strcmp(a->config, b->config) != 0};
    out[0] = 0;
    for (int q = 0; q < 4; q++)
        if (diff[q]) snprintf(out + strlen(out), len - strlen(out), "%s%s", out[0] ? "+" : "", what[q]);
    if (!out[0]) snprintf(out, len, "none");
}

/* One codegen_distance.csv row: the pair of members, what differs, their distances. */
static void add_pair_row(csv_table *dist, const char *source, const member *a, const member *b, double co, double js,
                         long shared)
{
    char differs[64];
    differs_str(a, b, differs, sizeof differs);
    char fc[32], fj[32], fs[32];
    snprintf(fc, sizeof fc, "%.5f", co);
    snprintf(fj, sizeof fj, "%.5f", js);
    snprintf(fs, sizeof fs, "%ld", shared);
    const char *row[] = {source, a->set, a->gpu, a->backend, a->cls, a->config, b->gpu, b->backend,
                         b->cls, b->config, differs, fc, fj, fs};
    csvt_add(dist, row);
}

/* Every pair of members that both have a histogram of the source (ptx, then sass): a
 * codegen_distance.csv row each, its distance kept in *p. */
static void measure_pairs(data *d, const member *mem, size_t nmem, csv_table *dist, pair_list *p)
{
    static const char *const sources[2] = {"ptx", "sass"};
    size_t maxp = nmem * (nmem ? nmem - 1 : 0) + 1;
    p->js = calloc(maxp, sizeof *p->js);
    p->group = calloc(maxp, sizeof *p->group);
    p->n = 0;
    for (int s = 0; s < 2 && p->js && p->group; s++)
        for (size_t i = 0; i < nmem; i++)
            for (size_t j = i + 1; j < nmem; j++) {
                const member *a = &mem[i], *b = &mem[j];
                hist_entry *ha = find_hist(d, a->dir, a->gpu, a->backend, a->config, a->cls, sources[s], 0);
                hist_entry *hb = find_hist(d, b->dir, b->gpu, b->backend, b->config, b->cls, sources[s], 0);
                if (!ha || !hb) continue;
                double co, js;
                long shared;
                hist_distances(&ha->h, &hb->h, &co, &js, &shared);
                add_pair_row(dist, sources[s], a, b, co, js, shared);
                p->js[p->n] = js;
                snprintf(p->group[p->n][0], sizeof p->group[0][0], "%s\x1f%s\x1f%s", a->gpu, a->backend, sources[s]);
                snprintf(p->group[p->n][1], sizeof p->group[0][1], "%s\x1f%s\x1f%s", b->gpu, b->backend, sources[s]);
                p->n++;
            }
}

/* The (gpu, backend, source) groups in the order first met: over the histograms, then each
 * compile record's source and, where it has SASS counts, sass. At most 512. */
static size_t collect_groups(const data *d, const char *gk[512][3])
{
    size_t ng = 0;
    for (size_t i = 0; i < d->nh + d->nc * 2 && ng < 512; i++) {
        const char *g, *b, *s;
        if (i < d->nh) { g = d->h[i].gpu; b = d->h[i].backend; s = d->h[i].source; }
        else {
            const comp_entry *c = &d->c[(i - d->nh) / 2];
            g = c->gpu; b = c->backend; s = (i - d->nh) % 2 ? (c->sass_instr >= 0 ? "sass" : NULL) : c->source;
            if (!s) continue;
        }
        size_t q = 0;
        while (q < ng && (strcmp(gk[q][0], g) || strcmp(gk[q][1], b) || strcmp(gk[q][2], s))) q++;
        if (q == ng) { gk[ng][0] = g; gk[ng][1] = b; gk[ng][2] = s; ng++; }
    }
    return ng;
}

/* One group's figures, gathered from its compile records and its histograms. */
typedef struct {
    long compiled, failed;
    double *vals[5];       /* registers, spill bytes, shared bytes, binary bytes, instructions: the values known */
    size_t nv[5];
    char **fps;            /* the distinct binaries: hashes, else fingerprints */
    size_t nfp, cap;
    op_histogram all, ops; /* the instructions; the opcodes (an instruction up to its first '.') */
    int have_hash;         /* every compiled record has a binary hash */
    int any_comp;          /* the group has compile records (else its histograms are its configurations) */
} group_stats;

static void group_stats_init(group_stats *gs, size_t cap)
{
    memset(gs, 0, sizeof *gs);
    gs->cap = cap;
    gs->fps = calloc(cap, sizeof *gs->fps);
    for (int m = 0; m < 5; m++) gs->vals[m] = calloc(cap, sizeof **gs->vals);
    gs->have_hash = 1;
}

static void group_stats_free(group_stats *gs)
{
    for (size_t k = 0; k < gs->nfp; k++) free(gs->fps[k]);
    free(gs->fps);
    for (int m = 0; m < 5; m++) free(gs->vals[m]);
    op_histogram_free(&gs->all);
    op_histogram_free(&gs->ops);
}

/* What tells a compile record's binary apart where it has no hash: its resources and, but
 * for what the runtime reported (no histogram), the FNV-1a of its source-s histogram. */
static void fingerprint(data *d, const comp_entry *c, const char *s, char *fp, size_t len)
{
    hist_entry *h = !strcmp(s, "runtime") ? NULL : find_hist(d, c->dir, c->gpu, c->backend, c->config, c->cls, s, 0);
    unsigned long long hh = 1469598103934665603ULL;
    for (size_t k = 0; h && k < h->h.n; k++) {
        for (const char *p = h->h.op[k]; *p; p++) { hh ^= (unsigned char)*p; hh *= 1099511628211ULL; }
        hh ^= (unsigned long long)h->h.count[k];
        hh *= 1099511628211ULL;
    }
    snprintf(fp, len, "%g/%g/%g/%g/%llx", c->v[0], c->v[1], c->v[2], c->v[3], hh);
}

/* The group's compile records, one per configuration: compiled and failed, the known value
 * of each metric, the distinct binaries. sass reads the ptx records that have SASS counts. */
static void add_compile_records(data *d, const char *g, const char *b, const char *s, group_stats *gs)
{
    for (size_t i = 0; i < d->nc; i++) {
        comp_entry *c = &d->c[i];
        const char *csrc = !strcmp(s, "sass") ? "ptx" : s;
        if (strcmp(c->gpu, g) || strcmp(c->backend, b) || strcmp(c->source, csrc)) continue;
        if (!strcmp(s, "sass") && c->sass_instr < 0) continue;
        gs->any_comp = 1;
        if (!compiled_ok(c)) { gs->failed += !strcmp(c->status, "compile_error"); continue; }
        gs->compiled++;
        for (int m = 0; m < 5; m++) {
            double v = m == 4 && !strcmp(s, "sass") ? c->sass_instr : c->v[m];
            if (v >= 0) gs->vals[m][gs->nv[m]++] = v;
        }
        char fp[600];
        if (c->hash[0]) snprintf(fp, sizeof fp, "%s", c->hash);
        else {
            gs->have_hash = 0;
            fingerprint(d, c, s, fp, sizeof fp);
        }
        size_t k = 0;
        while (k < gs->nfp && strcmp(gs->fps[k], fp)) k++;
        if (k == gs->nfp && gs->nfp < gs->cap) gs->fps[gs->nfp++] = strdup(fp);
    }
}

/* The group's histograms: its instruction mix, and, where it has no compile record, one
 * configuration compiled per histogram, its instruction count the histogram's total. */
static void add_histograms(const data *d, const char *g, const char *b, const char *s, group_stats *gs)
{
    for (size_t i = 0; i < d->nh; i++) {
        const hist_entry *h = &d->h[i];
        if (strcmp(h->gpu, g) || strcmp(h->backend, b) || strcmp(h->source, s)) continue;
        for (size_t k = 0; k < h->h.n; k++) {
            op_histogram_add(&gs->all, h->h.op[k], strlen(h->h.op[k]));
            size_t l = strcspn(h->h.op[k], ".");
            op_histogram_add(&gs->ops, h->h.op[k], l);
        }
        if (!gs->any_comp) {
            gs->compiled++;
            gs->vals[4][gs->nv[4]++] = (double)hist_total(&h->h);
        }
    }
}

/* A group's summary fields, as written. */
typedef struct {
    char f[15][32];  /* compiled, failed, binaries, instructions, opcodes; then min and max of each metric */
    char med[5][32]; /* the median of each metric */
    char fc[32], fjm[32], fjx[32]; /* the pairs within the group; the median and max of their distances */
    size_t ndj;
} group_row;

/* The counts, and min / median / max of each metric (empty where none is known). */
static void format_counts(const group_stats *gs, group_row *row)
{
    snprintf(row->f[0], 32, "%ld", gs->compiled);
    snprintf(row->f[1], 32, "%ld", gs->failed);
    snprintf(row->f[2], 32, "%zu", gs->any_comp ? gs->nfp : 0);
    snprintf(row->f[3], 32, "%zu", gs->all.n);
    snprintf(row->f[4], 32, "%zu", gs->ops.n);
    for (int m = 0; m < 5; m++) {
        if (gs->nv[m]) {
            double lo = gs->vals[m][0], hi = gs->vals[m][0];
            for (size_t k = 1; k < gs->nv[m]; k++) { lo = fmin(lo, gs->vals[m][k]); hi = fmax(hi, gs->vals[m][k]); }
            fmt(row->f[5 + m * 2], 32, lo);
            fmt(row->f[6 + m * 2], 32, hi);
        } else {
            row->f[5 + m * 2][0] = row->f[6 + m * 2][0] = 0;
        }
    }
    for (int m = 0; m < 5; m++) fmt(row->med[m], 32, gs->nv[m] ? stats_percentile(gs->vals[m], gs->nv[m], 50) : NAN);
}

/* The distances of the pairs whose two ends are both of the group (key: gpu, backend,
 * source): their count, median and max. */
static void format_distances(const pair_list *p, const char *key, group_row *row)
{
    double *dj = calloc(p->n + 1, sizeof *dj);
    size_t ndj = 0;
    for (size_t k = 0; dj && k < p->n; k++)
        if (!strcmp(p->group[k][0], key) && !strcmp(p->group[k][1], key)) dj[ndj++] = p->js[k];
    snprintf(row->fc, sizeof row->fc, "%zu", ndj);
    double jmax = 0;
    for (size_t k = 0; k < ndj; k++) jmax = fmax(jmax, dj[k]);
    fmt(row->fjm, sizeof row->fjm, ndj ? stats_percentile(dj, ndj, 50) : NAN);
    fmt(row->fjx, sizeof row->fjx, ndj ? jmax : NAN);
    if (ndj) {
        snprintf(row->fjm, sizeof row->fjm, "%.4f", stats_percentile(dj, ndj, 50));
        snprintf(row->fjx, sizeof row->fjx, "%.4f", jmax);
    }
    row->ndj = ndj;
    free(dj);
}

/* The group's line of the table on stdout: min/median/max, shared memory in KiB. */
static void print_group_line(const char *g, const char *b, const char *s, int is_runtime, const group_stats *gs,
                             const group_row *row)
{
    const char (*f)[32] = row->f, (*med)[32] = row->med;
    char r1[112], r2[112], r3[112], r4[112];
    snprintf(r1, sizeof r1, "%s/%s/%s", f[5], med[0], f[6]);
    if (gs->nv[2])
        snprintf(r2, sizeof r2, "%.0f/%.0f/%.0f", atof(f[9]) / 1024, atof(med[2]) / 1024, atof(f[10]) / 1024);
    else r2[0] = 0;
    snprintf(r3, sizeof r3, "%s/%s/%s", f[13], med[4], f[14]);
    if (row->ndj) snprintf(r4, sizeof r4, "%s/%s (%zu)", row->fjm, row->fjx, row->ndj);
    else snprintf(r4, sizeof r4, "-");
    printf("%-22.22s %-8.8s %-7.7s %8s %6s %8s %9s %7s  %-17s %-17s %-19s %-17s\n", g, b, s, f[0], f[1], f[2],
           is_runtime ? "-" : f[3], is_runtime ? "-" : f[4], gs->nv[0] ? r1 : "-", gs->nv[2] ? r2 : "-",
           gs->nv[4] ? r3 : "-", r4);
}

/* One group (gk: gpu, backend, source): its codegen_summary.csv row, and its line unless quiet. */
static void summarise_group(data *d, const char *const gk[3], const pair_list *p, csv_table *sum, int quiet)
{
    const char *g = gk[0], *b = gk[1], *s = gk[2];
    int is_runtime = !strcmp(s, "runtime");
    group_stats gs;
    group_stats_init(&gs, d->nc + d->nh + 1);
    add_compile_records(d, g, b, s, &gs);
    add_histograms(d, g, b, s, &gs);
    group_row row;
    format_counts(&gs, &row);
    char key[300];
    snprintf(key, sizeof key, "%s\x1f%s\x1f%s", g, b, s);
    format_distances(p, key, &row);
    const char *by = !gs.any_comp ? "histogram" : gs.have_hash ? "binary_hash" : is_runtime ? "resource_fingerprint"
                                                                                          : "code_fingerprint";
    char (*f)[32] = row.f, (*med)[32] = row.med;
    if (!gs.any_comp) snprintf(f[2], 32, "%s", "0");
    if (is_runtime) f[3][0] = f[4][0] = 0;
    const char *srow[] = {g, b, s, f[0], f[1], f[2], by, f[3], f[4], f[5], med[0], f[6], f[7], med[1], f[8],
                          f[9], med[2], f[10], f[11], med[3], f[12], f[13], med[4], f[14], row.fc, row.fjm, row.fjx};
    csvt_add(sum, srow);
    if (!quiet) print_group_line(g, b, s, is_runtime, &gs, &row);
    group_stats_free(&gs);
}

/* Which configurations the distances compare: the tuned winners, or the defaults. */
static const char *member_set(const member *mem, size_t nmem)
{
    return nmem && !strcmp(mem[0].set, "tuned") ? "tuned" : "default";
}

/* Every group's summary row, with the table on stdout unless --quiet. */
static void summarise(data *d, const summary_opts *o, const pair_list *p, const member *mem, size_t nmem, csv_table *sum)
{
    const char *gk[512][3];
    size_t ng = collect_groups(d, gk);
    if (!o->quiet)
        printf("%-22s %-8s %-7s %8s %6s %8s %9s %7s  %-17s %-17s %-19s %-17s\n", "gpu", "backend", "source", "compiled",
               "failed", "binaries", "distinct", "opcodes", "registers", "shared KiB", "instructions", "JS (winners)");
    for (size_t q = 0; q < ng; q++) summarise_group(d, gk[q], p, sum, o->quiet);
    if (!o->quiet)
        printf("(min/median/max; JS: median/max Jensen-Shannon distance between the winners' %s histograms, pairs)\n",
               member_set(mem, nmem));
}

/* codegen_summary.csv and codegen_distance.csv into --out, then their line unless --quiet:
 * 0, or 1 with err. */
static int write_outputs(const summary_opts *o, const csv_table *sum, const csv_table *dist, const member *mem, size_t nmem,
                         char *err, size_t errlen)
{
    char ps[4200], pd[4200];
    snprintf(ps, sizeof ps, "%s/codegen_summary.csv", o->outdir);
    snprintf(pd, sizeof pd, "%s/codegen_distance.csv", o->outdir);
    if (csvt_write_atomic(sum, ps, err, errlen) != 0 || csvt_write_atomic(dist, pd, err, errlen) != 0) return 1;
    if (!o->quiet)
        printf("%s: %zu rows; %s: %zu pairs of %zu %s configurations\n", ps, sum->nrows, pd, dist->nrows, nmem,
               member_set(mem, nmem));
    return 0;
}

static void data_free(data *d)
{
    for (size_t i = 0; i < d->nh; i++) op_histogram_free(&d->h[i].h);
    free(d->h);
    free(d->c);
    for (int k = 0; k < d->ndirs; k++)
        for (int i = 0; i < 5; i++) csvt_free(d->tab[k][i]);
}

int cmd_codegen_summary(int argc, char **argv)
{
    data d;
    memset(&d, 0, sizeof d);
    summary_opts o;
    int rc = parse_args(argc, argv, &d, &o);
    if (rc >= 0) return rc;
    char err[FB_ERRLEN] = "";
    rc = load_all(&d, err, sizeof err);
    csv_table *sum = NULL, *dist = NULL;
    member *mem = NULL;
    size_t nmem = 0;
    pair_list pairs = {0};
    if (rc == 0) rc = new_tables(&sum, &dist, err, sizeof err);
    if (rc == 0) {
        nmem = collect_members(&d, &mem);
        measure_pairs(&d, mem, nmem, dist, &pairs); /* distances first: the summary rows quote them */
        summarise(&d, &o, &pairs, mem, nmem, sum);
        rc = write_outputs(&o, sum, dist, mem, nmem, err, sizeof err);
    }
    if (rc != 0) fprintf(stderr, "fabench codegen-summary: %s\n", err);
    free(pairs.js);
    free(pairs.group);
    free(mem);
    csvt_free(sum);
    csvt_free(dist);
    data_free(&d);
    return rc;
}
