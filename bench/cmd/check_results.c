/* check_results.c: `fabench check-results DIR`: validates a results folder (and the folders
 * under it, archive/ and plots/ aside): every known file's columns and value types, ok rows
 * with finite timings and errors within the verification tolerances, the manifest and its
 * required keys. Problems are printed as FILE:LINE: FIELD: MESSAGE; exit 0 clean, 1 problems. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "common.h"
#include "telemetry.h"
#include "config.h"
#include "csvio.h"
#include "fallback.h"
#include "shapes.h"
#include "refcheck.h"
#include "search.h"
#include "tune.h"

/* ---------- value types ---------- */

typedef enum {
    V_TEXT,     /* anything, may be empty */
    V_NAME,     /* non-empty text */
    V_INT,      /* integer >= lo */
    V_NUM,      /* finite number >= lo */
    V_STATUS,   /* ok, compile_error, ... */
    V_DTYPE,    /* fp32, fp16, bf16 */
    V_BOOL,     /* 0 or 1 */
    V_CONFIG,   /* KEY=VALUE;... as kconfig_parse reads it */
    V_CLASS,    /* a shape class key: bf16-d128-c1-g4-q4096-k4096 */
    V_STRATEGY, /* exhaustive, random, bo, local, halving */
    V_SOURCE,   /* ptx, sass */
    V_SUMSOURCE, /* ptx, sass, runtime */
    V_HEX       /* hexadecimal digits */
} vtype;

enum { REQ = 1, EMPTY = 2 }; /* column must exist; value may be empty */

typedef struct {
    const char *name;
    vtype type;
    unsigned flags;
    double lo;
} col_spec;

typedef struct checker checker;
typedef struct file_ctx file_ctx;
typedef void (*row_rule)(file_ctx *fc, size_t r);

typedef struct {
    const char *file;
    const col_spec *cols;
    size_t ncols;
    row_rule rule;
    const char *key[12]; /* columns whose values must be unique together (NULL-ended) */
} file_spec;

struct checker {
    long problems, notes, files, folders;
    int quiet_notes;
};

struct file_ctx {
    checker *ck;
    const char *path;
    const file_spec *spec;
    csv_table *t;
    int col[40];              /* spec column -> table column (-1 absent) */
    const char *manifest_gpu; /* the folder manifest's gpu, or NULL */
    char arch[8][64];         /* the manifest's <backend>.arch values */
    int narch;
    long reported;
};

#define MAX_REPORTS_PER_FILE 60

static void problem(file_ctx *fc, int line, const char *field, const char *fmt, ...)
{
    fc->ck->problems++;
    if (fc->reported++ == MAX_REPORTS_PER_FILE) {
        printf("%s: ...: further problems of this file not shown\n", fc->path);
        return;
    }
    if (fc->reported > MAX_REPORTS_PER_FILE) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) printf("%s:%d: %s: %s\n", fc->path, line, field, msg);
    else printf("%s: %s: %s\n", fc->path, field, msg);
}

static void note(checker *ck, const char *path, const char *fmt, ...)
{
    ck->notes++;
    if (ck->quiet_notes) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("%s: note: %s\n", path, msg);
}

static int parse_num(const char *s, double *out)
{
    char *end;
    if (!*s) return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno == ERANGE) return -1;
    *out = v;
    return 0;
}

static int parse_int(const char *s, long *out)
{
    char *end;
    if (!*s) return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end || errno) return -1;
    *out = v;
    return 0;
}

/* dtype-dD-cC-gG-qQ-kK[-wW][-vV][-pP]; 0 or -1; dt filled */
/* 0 and the dtype of a class key (tune_class_parse), or -1 */
static int parse_class(const char *s, dtype_t *dt)
{
    tune_class c;
    if (tune_class_parse(s, &c) != 0) return -1;
    *dt = c.dt;
    return 0;
}

/* Checks one value against its type; returns a message or NULL. */
static const char *check_value(const col_spec *cs, const char *v, char *buf, size_t len)
{
    if (!*v) {
        if (cs->flags & EMPTY || cs->type == V_TEXT) return NULL;
        return "empty";
    }
    double x;
    long n;
    dtype_t dt;
    switch (cs->type) {
    case V_TEXT:
    case V_NAME: return NULL;
    case V_INT:
        if (parse_int(v, &n) != 0) { snprintf(buf, len, "'%.60s' is not an integer", v); return buf; }
        if (n < cs->lo) { snprintf(buf, len, "%ld is below %g", n, cs->lo); return buf; }
        return NULL;
    case V_NUM:
        if (parse_num(v, &x) != 0) { snprintf(buf, len, "'%.60s' is not a number", v); return buf; }
        if (!isfinite(x)) { snprintf(buf, len, "'%.60s' is not finite", v); return buf; }
        if (x < cs->lo) { snprintf(buf, len, "%s is below %g", v, cs->lo); return buf; }
        return NULL;
    case V_STATUS:
        for (int s = 0; s < ST__COUNT; s++)
            if (!strcmp(v, status_name((status_t)s))) return NULL;
        snprintf(buf, len, "unknown status '%.60s' (ok, compile_error, resource_limit, launch_error, wrong_result, "
                 "timeout, unsupported, absent)", v);
        return buf;
    case V_DTYPE:
        if (dtype_parse(v, &dt) == 0 && !strcmp(v, dtype_name(dt))) return NULL;
        snprintf(buf, len, "unknown dtype '%.60s' (fp32, fp16, bf16)", v);
        return buf;
    case V_BOOL:
        if (!strcmp(v, "0") || !strcmp(v, "1")) return NULL;
        snprintf(buf, len, "'%.60s' is not 0 or 1", v);
        return buf;
    case V_CONFIG: {
        kconfig c = {0};
        char err[FB_ERRLEN];
        if (kconfig_parse(v, &c, err, sizeof err) == 0) return NULL;
        snprintf(buf, len, "%.500s", err);
        return buf;
    }
    case V_CLASS:
        if (parse_class(v, &dt) == 0) return NULL;
        snprintf(buf, len, "'%.80s' is not a shape class (DTYPE-dD-cC-gG-qQ-kK, Q and K powers of two)", v);
        return buf;
    case V_STRATEGY:
        if (search_strategy_known(v)) return NULL;
        snprintf(buf, len, "unknown strategy '%.60s' (" SEARCH_STRATEGIES ")", v);
        return buf;
    case V_SOURCE:
        if (!strcmp(v, "ptx") || !strcmp(v, "sass")) return NULL;
        snprintf(buf, len, "unknown source '%.60s' (ptx, sass)", v);
        return buf;
    case V_SUMSOURCE:
        if (!strcmp(v, "ptx") || !strcmp(v, "sass") || !strcmp(v, "runtime")) return NULL;
        snprintf(buf, len, "unknown source '%.60s' (ptx, sass, runtime)", v);
        return buf;
    case V_HEX:
        if (strspn(v, "0123456789abcdef") == strlen(v)) return NULL;
        snprintf(buf, len, "'%.60s' is not lower-case hexadecimal", v);
        return buf;
    }
    return NULL;
}

/* ---------- row access ---------- */

static int idx(const file_ctx *fc, const char *name)
{
    for (size_t i = 0; i < fc->spec->ncols; i++)
        if (!strcmp(fc->spec->cols[i].name, name)) return fc->col[i];
    return csvt_col(fc->t, name);
}

/* The value of a column in row r, "" when the column is absent. */
static const char *val(const file_ctx *fc, size_t r, const char *name)
{
    int c = idx(fc, name);
    return c < 0 ? "" : fc->t->rows[r][c];
}

static int line_of(const file_ctx *fc, size_t r) { return fc->t->row_line[r]; }

/* The number in a column, NAN when empty, absent or not a number. */
static double num(const file_ctx *fc, size_t r, const char *name)
{
    double x;
    return parse_num(val(fc, r, name), &x) == 0 ? x : NAN;
}

static int gpu_known(const file_ctx *fc, const char *gpu)
{
    if (!fc->manifest_gpu) return 1;
    if (!strcmp(gpu, fc->manifest_gpu)) return 1;
    for (int i = 0; i < fc->narch; i++)
        if (!strcmp(gpu, fc->arch[i])) return 1;
    return 0;
}

static void check_gpu(file_ctx *fc, size_t r, const char *col)
{
    const char *g = val(fc, r, col);
    if (*g && !gpu_known(fc, g))
        problem(fc, line_of(fc, r), col, "'%s' is not this folder's GPU (manifest gpu '%s')", g, fc->manifest_gpu);
}

/* The largest |reference| an output can have: O is a convex combination of V rows, and
 * the inputs are clipped to [-4, 4] (refcheck.h), so |O| <= 4. */
#define MAX_ABS_OUTPUT 4.0

static void check_error_tolerance(file_ctx *fc, size_t r, dtype_t dt)
{
    double atol, rtol, l2;
    fb_tolerances(dt, &atol, &rtol, &l2);
    double e = num(fc, r, "max_abs_err");
    const char *ev = val(fc, r, "max_abs_err");
    if (idx(fc, "max_abs_err") >= 0) {
        if (!*ev) problem(fc, line_of(fc, r), "max_abs_err", "empty on an ok row (was it verified?)");
        else if (!(e <= atol + rtol * MAX_ABS_OUTPUT))
            problem(fc, line_of(fc, r), "max_abs_err", "%s exceeds the %s tolerance atol + rtol * %g = %.3g", ev,
                    dtype_name(dt), MAX_ABS_OUTPUT, atol + rtol * MAX_ABS_OUTPUT);
    }
    double l = num(fc, r, "rel_l2_err");
    if (*val(fc, r, "rel_l2_err") && !(l <= l2))
        problem(fc, line_of(fc, r), "rel_l2_err", "%s exceeds the %s tolerance %.3g", val(fc, r, "rel_l2_err"),
                dtype_name(dt), l2);
}

/* Timing columns: required finite and positive on ok rows, empty otherwise. */
static void check_timings(file_ctx *fc, size_t r, const char *const *cols, int ok, int verify_only_allowed)
{
    int any = 0, all = 1;
    for (int i = 0; cols[i]; i++) {
        if (idx(fc, cols[i]) < 0) continue;
        int e = !*val(fc, r, cols[i]);
        any |= !e;
        all &= !e;
    }
    if (!ok) {
        for (int i = 0; cols[i]; i++)
            if (idx(fc, cols[i]) >= 0 && *val(fc, r, cols[i]))
                problem(fc, line_of(fc, r), cols[i], "a time on a row with status %s (nothing unverified is timed)",
                        val(fc, r, "status"));
        return;
    }
    if (!any && verify_only_allowed) return; /* --verify-only rows */
    (void)all;
    for (int i = 0; cols[i]; i++) {
        if (idx(fc, cols[i]) < 0) continue;
        double x = num(fc, r, cols[i]);
        if (!(x > 0) || !isfinite(x))
            problem(fc, line_of(fc, r), cols[i], "'%s' on an ok row: needs a finite time > 0", val(fc, r, cols[i]));
    }
}

/* |got - want| within rounding of a value printed with `decimals` decimals, and 1 %. */
static int close_enough(double got, double want, int decimals)
{
    return fabs(got - want) <= 0.6 * pow(10, -decimals) + 0.01 * fabs(want);
}

/* ---------- per-file rules ---------- */

/* How the timed runs went (l2_flush) and what the GPU said meanwhile (sm_mhz, power_w,
 * temp_c, clock_events): only on timed rows, and the events are NVML's names. */
static void check_telemetry(file_ctx *fc, size_t r, int timed)
{
    static const char *const cols[] = {"l2_flush", "sm_mhz", "power_w", "temp_c", "clock_events"};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        if (!timed && idx(fc, cols[i]) >= 0 && *val(fc, r, cols[i]))
            problem(fc, line_of(fc, r), cols[i], "a value on a row that was not timed (status %s)", val(fc, r, "status"));
    unsigned long long ev;
    char bad[80];
    if (idx(fc, "clock_events") >= 0 && telemetry_events_parse(val(fc, r, "clock_events"), &ev, bad, sizeof bad) != 0)
        problem(fc, line_of(fc, r), "clock_events", "'%s' is not a clock event reason (%s)", bad,
                "idle, app_clocks, sw_power_cap, hw_slowdown, sync_boost, sw_thermal, hw_thermal, hw_power_brake, "
                "display_clocks or 0x<bits>");
}

static void rule_perf(file_ctx *fc, size_t r)
{
    check_gpu(fc, r, "gpu");
    const char *st = val(fc, r, "status");
    int ok = !strcmp(st, "ok");
    static const char *const times[] = {"median_us", "p20_us", "p80_us", "min_us", NULL};
    check_timings(fc, r, times, ok, 1);
    check_telemetry(fc, r, ok && *val(fc, r, "median_us"));
    if (!ok) {
        static const char *const derived[] = {"tflops", "gbps", "reps", NULL};
        for (int i = 0; derived[i]; i++)
            if (*val(fc, r, derived[i]))
                problem(fc, line_of(fc, r), derived[i], "a value on a row with status %s", st);
        if (idx(fc, "reason") >= 0 && !*val(fc, r, "reason") && strcmp(st, "absent"))
            problem(fc, line_of(fc, r), "reason", "empty on a row with status %s (say why)", st);
        return;
    }
    dtype_t dt;
    if (dtype_parse(val(fc, r, "dtype"), &dt) == 0) check_error_tolerance(fc, r, dt);
    if (!*val(fc, r, "median_us")) return; /* verified, not timed */
    double med = num(fc, r, "median_us"), p20 = num(fc, r, "p20_us"), p80 = num(fc, r, "p80_us");
    double mn = num(fc, r, "min_us");
    if (p20 > med + 1e-9 || med > p80 + 1e-9)
        problem(fc, line_of(fc, r), "median_us", "not p20 %g <= median %g <= p80 %g", p20, med, p80);
    if (isfinite(mn) && mn > p20 + 1e-9) problem(fc, line_of(fc, r), "min_us", "min %g above p20 %g", mn, p20);
    long reps;
    if (idx(fc, "reps") >= 0 && (parse_int(val(fc, r, "reps"), &reps) != 0 || reps < 1))
        problem(fc, line_of(fc, r), "reps", "'%s' on an ok timed row: needs a count >= 1", val(fc, r, "reps"));
    /* the derived columns must agree with the shape and the median */
    shape_t s = {0};
    long v[7];
    static const char *const dims[] = {"batch", "hq", "hkv", "sq", "skv", "d", "causal"};
    for (int i = 0; i < 7; i++) {
        if (parse_int(val(fc, r, dims[i]), &v[i]) != 0) return; /* already reported */
        if (v[i] > INT_MAX) {
            problem(fc, line_of(fc, r), dims[i], "%ld is more than a shape file takes (%d)", v[i], INT_MAX);
            return;
        }
    }
    /* as a shape file: Q and K/V at most 2^40 elements each (so the lengths below stay sane) */
    if ((double)v[0] * (double)v[1] * (double)v[3] * (double)v[5] > 0x1p40 ||
        (double)v[0] * (double)v[2] * (double)v[4] * (double)v[5] > 0x1p40) {
        problem(fc, line_of(fc, r), "batch", "batch*h*s*d is over the limit of 2^40 elements");
        return;
    }
    s.batch = (int)v[0]; s.hq = (int)v[1]; s.hkv = (int)v[2]; s.sq = (int)v[3]; s.skv = (int)v[4];
    s.d = (int)v[5]; s.causal = (int)v[6];
    char lerr[FB_ERRLEN];
    if (shapes_parse_lens(fc->path, line_of(fc, r), val(fc, r, "lens"), &s, lerr, sizeof lerr) != 0) {
        const char *m = strstr(lerr, "field 'lens': ");
        problem(fc, line_of(fc, r), "lens", "%s", m ? m + strlen("field 'lens': ") : lerr);
        return;
    }
    if (shapes_parse_qlens(fc->path, line_of(fc, r), val(fc, r, "qlens"), &s, lerr, sizeof lerr) != 0) {
        const char *m = strstr(lerr, "field 'qlens': ");
        problem(fc, line_of(fc, r), "qlens", "%s", m ? m + strlen("field 'qlens': ") : lerr);
        return;
    }
    long page = 0;
    if (*val(fc, r, "page") && parse_int(val(fc, r, "page"), &page) != 0) return; /* already reported */
    s.page = (int)page;
    if (s.hkv < 1 || s.hq % s.hkv) {
        problem(fc, line_of(fc, r), "hq", "%d is not a multiple of hkv=%d", s.hq, s.hkv);
        return;
    }
    if (!(med > 0)) return;
    double tf = num(fc, r, "tflops"), gb = num(fc, r, "gbps");
    double want_tf = shape_flops(&s) / (med * 1e-6) / 1e12, want_gb = shape_bytes(&s, dt) / (med * 1e-6) / 1e9;
    if (!close_enough(tf, want_tf, 4))
        problem(fc, line_of(fc, r), "tflops", "%s, but the shape and median_us give %.4f", val(fc, r, "tflops"), want_tf);
    if (!close_enough(gb, want_gb, 2))
        problem(fc, line_of(fc, r), "gbps", "%s, but the shape and median_us give %.2f", val(fc, r, "gbps"), want_gb);
}

static void rule_explored(file_ctx *fc, size_t r)
{
    check_gpu(fc, r, "gpu");
    const char *st = val(fc, r, "status");
    int ok = !strcmp(st, "ok");
    static const char *const times[] = {"median_us", NULL};
    check_timings(fc, r, times, ok, 0);
    if (!ok) { /* (a candidate that killed the tuning process has no compile time: it died with it) */
        static const char *const timed[] = {"tflops", "reps", "sm_mhz"};
        for (size_t i = 0; i < sizeof timed / sizeof timed[0]; i++)
            if (idx(fc, timed[i]) >= 0 && *val(fc, r, timed[i]))
                problem(fc, line_of(fc, r), timed[i], "a value on a row with status %s", st);
        if (!*val(fc, r, "reason")) problem(fc, line_of(fc, r), "reason", "empty on a row with status %s (say why)", st);
        return;
    }
    if (!*val(fc, r, "compile_ms")) problem(fc, line_of(fc, r), "compile_ms", "empty on an ok row");
    dtype_t dt;
    if (parse_class(val(fc, r, "shape_class"), &dt) == 0) check_error_tolerance(fc, r, dt);
    if (idx(fc, "tflops") >= 0 && !*val(fc, r, "tflops"))
        problem(fc, line_of(fc, r), "tflops", "empty on an ok row");
}

static void rule_tuning(file_ctx *fc, size_t r)
{
    check_gpu(fc, r, "gpu");
    long e, s;
    if (parse_int(val(fc, r, "configs_explored"), &e) == 0 && parse_int(val(fc, r, "configs_in_space"), &s) == 0 &&
        e > s)
        problem(fc, line_of(fc, r), "configs_explored", "%ld explored, more than the %ld in the space", e, s);
}

static void rule_codegen(file_ctx *fc, size_t r) { check_gpu(fc, r, "gpu"); }

static void rule_compiled(file_ctx *fc, size_t r)
{
    check_gpu(fc, r, "gpu");
    const char *st = val(fc, r, "status");
    if (strcmp(st, "ok")) {
        if (!*val(fc, r, "reason")) problem(fc, line_of(fc, r), "reason", "empty on a row with status %s (say why)", st);
        return;
    }
    if (!(num(fc, r, "binary_bytes") > 0)) problem(fc, line_of(fc, r), "binary_bytes", "'%s' on an ok row: needs a size > 0", val(fc, r, "binary_bytes"));
    /* the instruction count: PTX on NVIDIA targets, the disassembled ISA on AMD (-1 when no
     * disassembler was found; then there is nothing to compare) */
    const int isa = idx(fc, "isa_instructions") >= 0 && idx(fc, "ptx_instructions") < 0;
    const char *ic = isa ? "isa_instructions" : "ptx_instructions";
    if (isa && num(fc, r, ic) == -1) return;
    if (!(num(fc, r, ic) > 0))
        problem(fc, line_of(fc, r), ic, "'%s' on an ok row: needs a count > 0", val(fc, r, ic));
    if (num(fc, r, "distinct_instructions") > num(fc, r, ic))
        problem(fc, line_of(fc, r), "distinct_instructions", "more distinct instructions than instructions");
}

static void rule_portability(file_ctx *fc, size_t r)
{
    check_gpu(fc, r, "to_gpu");
    int ok = !strcmp(val(fc, r, "status"), "ok");
    const char *p = val(fc, r, "pct");
    if (ok && !(num(fc, r, "pct") > 0)) problem(fc, line_of(fc, r), "pct", "'%s' on an ok row: needs a percentage > 0", p);
    if (!ok && *p) problem(fc, line_of(fc, r), "pct", "a value on a row with status %s", val(fc, r, "status"));
    static const char *const times[] = {"from_us", NULL};
    check_timings(fc, r, times, ok, 0);
    if (ok && *val(fc, r, "to_us") && *val(fc, r, "from_us")) {
        double want = 100.0 * num(fc, r, "to_us") / num(fc, r, "from_us");
        if (!close_enough(num(fc, r, "pct"), want, 1))
            problem(fc, line_of(fc, r), "pct", "%s, but 100 * to_us / from_us is %.1f", p, want);
    }
}

/* fallback.csv (fit-fallback): a known regime, conditions and SPLIT_KV as the lookup reads
 * them, counts that add up */
static void rule_fallback(file_ctx *fc, size_t r)
{
    check_gpu(fc, r, "gpu");
    fb_regime reg;
    if (fallback_regime_parse(val(fc, r, "regime"), &reg) != 0)
        problem(fc, line_of(fc, r), "regime", "'%s' is not a regime (decode, short-prefill, long-prefill, ragged, paged)",
                val(fc, r, "regime"));
    fb_rule rule;
    char e[FB_ERRLEN];
    if (fallback_conds_parse(val(fc, r, "conditions"), &rule, e, sizeof e) != 0) problem(fc, line_of(fc, r), "conditions", "%s", e);
    const char *split = val(fc, r, "split_kv");
    if (strcmp(split, "auto") && (strncmp(split, "fill=", 5) || !(strtod(split + 5, NULL) > 0)))
        problem(fc, line_of(fc, r), "split_kv", "'%s' is neither 'auto' nor 'fill=W' with W > 0", split);
    if (num(fc, r, "within_10pct") + num(fc, r, "untimed") > num(fc, r, "classes"))
        problem(fc, line_of(fc, r), "within_10pct", "within_10pct + untimed exceed classes");
}

static void rule_loc(file_ctx *fc, size_t r)
{
    double c = num(fc, r, "c_family_lines"), p = num(fc, r, "python_lines"), t = num(fc, r, "total_lines");
    if (isfinite(c) && isfinite(p) && isfinite(t) && c + p != t)
        problem(fc, line_of(fc, r), "total_lines", "%g is not c_family_lines + python_lines = %g", t, c + p);
    const char *commit = val(fc, r, "commit");
    if (*commit && strcmp(commit, "unknown") && (strlen(commit) != 40 || strspn(commit, "0123456789abcdef") != 40))
        problem(fc, line_of(fc, r), "commit", "'%s' is not a 40-digit git commit (or 'unknown')", commit);
}

static void rule_summary(file_ctx *fc, size_t r)
{
    static const char *const m[] = {"registers", "spill_bytes", "shared_bytes", "binary_bytes", "instructions"};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        char a[64], b[64], c[64];
        snprintf(a, sizeof a, "%s_min", m[i]);
        snprintf(b, sizeof b, "%s_median", m[i]);
        snprintf(c, sizeof c, "%s_max", m[i]);
        double lo = num(fc, r, a), mid = num(fc, r, b), hi = num(fc, r, c);
        if (isfinite(lo) && isfinite(mid) && isfinite(hi) && !(lo <= mid && mid <= hi))
            problem(fc, line_of(fc, r), b, "not min %g <= median %g <= max %g", lo, mid, hi);
    }
}

static void rule_distance(file_ctx *fc, size_t r)
{
    double js = num(fc, r, "jensen_shannon"), co = num(fc, r, "cosine");
    if (isfinite(js) && js > 1 + 1e-9) problem(fc, line_of(fc, r), "jensen_shannon", "%g is above 1", js);
    if (isfinite(co) && co > 1 + 1e-9) problem(fc, line_of(fc, r), "cosine", "%g is above 1", co);
}

/* ---------- schemas ---------- */

#define N(a) (sizeof a / sizeof a[0])

static const col_spec perf_cols[] = {
    {"gpu", V_NAME, REQ, 0}, {"backend", V_NAME, REQ, 0}, {"impl", V_NAME, REQ, 0}, {"config", V_TEXT, REQ, 0},
    {"name", V_NAME, 0, 0}, {"dtype", V_DTYPE, REQ, 0}, {"batch", V_INT, REQ, 1}, {"hq", V_INT, REQ, 1},
    {"hkv", V_INT, REQ, 1}, {"sq", V_INT, REQ, 1}, {"skv", V_INT, REQ, 1}, {"d", V_INT, REQ, 1},
    {"causal", V_BOOL, REQ, 0}, {"median_us", V_NUM, REQ | EMPTY, 0}, {"p20_us", V_NUM, REQ | EMPTY, 0},
    {"p80_us", V_NUM, REQ | EMPTY, 0}, {"min_us", V_NUM, EMPTY, 0}, {"reps", V_INT, EMPTY, 1},
    {"tflops", V_NUM, REQ | EMPTY, 0}, {"gbps", V_NUM, REQ | EMPTY, 0}, {"max_abs_err", V_NUM, REQ | EMPTY, 0},
    {"rel_l2_err", V_NUM, EMPTY, 0}, {"status", V_STATUS, REQ, 0}, {"reason", V_TEXT, 0, 0},
    {"config_source", V_TEXT, 0, 0}, {"lens", V_TEXT, 0, 0}, {"qlens", V_TEXT, 0, 0},
    {"page", V_INT, EMPTY, 1}, {"l2_flush", V_BOOL, EMPTY, 0}, {"sm_mhz", V_NUM, EMPTY, 1}, {"power_w", V_NUM, EMPTY, 0}, {"temp_c", V_NUM, EMPTY, 0},
    {"clock_events", V_TEXT, 0, 0}, {"launch_us", V_NUM, EMPTY, 0}, {"batch_runs", V_INT, EMPTY, 1},
    {"timer", V_TEXT, 0, 0}, {"run_id", V_TEXT, 0, 0}, {"utc", V_TEXT, 0, 0}, {"err_bound_ratio", V_NUM, EMPTY, 0},
    {"lse_err", V_NUM, EMPTY, 0}};

static const col_spec explored_cols[] = {
    {"gpu", V_NAME, REQ, 0}, {"backend", V_NAME, REQ, 0}, {"kernel", V_NAME, REQ, 0}, {"config", V_CONFIG, REQ, 0},
    {"shape_class", V_CLASS, REQ, 0}, {"shape", V_TEXT, 0, 0}, {"status", V_STATUS, REQ, 0}, {"reason", V_TEXT, REQ, 0},
    {"compile_ms", V_NUM, REQ | EMPTY, 0}, {"median_us", V_NUM, REQ | EMPTY, 0}, {"tflops", V_NUM, EMPTY, 0},
    {"registers", V_INT, REQ, -1}, {"spill_bytes", V_INT, REQ, -1}, {"shared_bytes", V_INT, REQ, -1},
    {"private_bytes", V_INT, 0, -1}, {"binary_bytes", V_INT, REQ, -1}, {"max_abs_err", V_NUM, EMPTY, 0},
    {"strategy", V_STRATEGY, 0, 0}, {"step", V_INT, 0, 1}, {"reps", V_INT, EMPTY, 1}, {"sm_mhz", V_NUM, EMPTY, 1},
    {"utc", V_TEXT, 0, 0}};

static const col_spec tuning_cols[] = {
    {"gpu", V_NAME, REQ, 0}, {"backend", V_NAME, REQ, 0}, {"shape_class", V_CLASS, REQ, 0},
    {"config", V_CONFIG, REQ, 0}, {"median_us", V_NUM, REQ, 1e-9}, {"tflops", V_NUM, 0, 0},
    {"configs_explored", V_INT, REQ, 1}, {"configs_in_space", V_INT, 0, 1}, {"shape", V_TEXT, 0, 0},
    {"strategy", V_STRATEGY, 0, 0}, {"date", V_TEXT, 0, 0}};

static const col_spec codegen_cols[] = {
    {"gpu", V_NAME, REQ, 0}, {"backend", V_NAME, REQ, 0}, {"config", V_CONFIG, REQ, 0},
    {"shape_class", V_CLASS, REQ, 0}, {"instruction", V_NAME, REQ, 0}, {"count", V_INT, REQ, 1},
    {"source", V_SOURCE, 0, 0}};

static const col_spec compiled_cols[] = {
    {"gpu", V_NAME, REQ, 0}, {"backend", V_NAME, REQ, 0}, {"config", V_CONFIG, REQ, 0},
    {"shape_class", V_CLASS, REQ, 0}, {"status", V_STATUS, REQ, 0}, {"reason", V_TEXT, REQ, 0},
    {"registers", V_INT, REQ, -1}, {"spill_bytes", V_INT, REQ, -1}, {"shared_bytes", V_INT, REQ, -1},
    {"private_bytes", V_INT, REQ, -1}, {"binary_bytes", V_INT, REQ, 0},
    /* NVIDIA targets count PTX instructions; AMD ones the disassembled ISA (-1: no disassembler) */
    {"ptx_instructions", V_INT, 0, 0}, {"isa_instructions", V_INT, 0, -1},
    {"distinct_instructions", V_INT, REQ, -1}, {"sass_instructions", V_INT, 0, -1}, {"binary_hash", V_HEX, EMPTY, 0},
    {"vgprs", V_INT, 0, -1}, {"agprs", V_INT, 0, -1}, {"sgprs", V_INT, 0, -1}};

static const col_spec manifest_cols[] = {{"key", V_NAME, REQ, 0}, {"value", V_TEXT, REQ, 0}};

static const col_spec vendor_cols[] = {
    {"impl", V_NAME, REQ, 0}, {"scope", V_NAME, REQ, 0}, {"configs", V_INT, REQ, 0} /* 0: e.g. no precompiled kernel (built at run time) */, {"method", V_NAME, REQ, 0},
    {"gpu", V_TEXT, 0, 0}, {"backend", V_TEXT, 0, 0}, {"source", V_TEXT, 0, 0}};

static const col_spec portability_cols[] = {
    {"from_gpu", V_NAME, REQ, 0}, {"from_backend", V_NAME, REQ, 0}, {"to_gpu", V_NAME, REQ, 0},
    {"to_backend", V_NAME, REQ, 0}, {"class", V_CLASS, REQ, 0}, {"pct", V_NUM, REQ | EMPTY, 0},
    {"shape", V_TEXT, 0, 0}, {"from_config", V_CONFIG, 0, 0}, {"to_config", V_CONFIG, 0, 0},
    {"from_us", V_NUM, EMPTY, 0}, {"to_us", V_NUM, EMPTY, 0}, {"status", V_STATUS, REQ, 0},
    {"reason", V_TEXT, 0, 0}, {"date", V_TEXT, 0, 0}};

static const col_spec loc_cols[] = {
    {"label", V_NAME, REQ, 0}, {"path", V_NAME, REQ, 0}, {"commit", V_TEXT, REQ, 0}, {"files", V_INT, REQ, 0},
    {"c_family_lines", V_INT, REQ, 0}, {"python_lines", V_INT, REQ, 0}, {"total_lines", V_INT, REQ, 0}};

static const col_spec summary_cols[] = {
    {"gpu", V_NAME, REQ, 0}, {"backend", V_NAME, REQ, 0}, {"source", V_SUMSOURCE, REQ, 0},
    {"configs_compiled", V_INT, REQ, 0}, {"configs_failed", V_INT, REQ, 0}, {"distinct_binaries", V_INT, REQ, 0},
    {"distinct_by", V_NAME, REQ, 0}, {"distinct_instructions", V_INT, REQ | EMPTY, 0},
    {"distinct_opcodes", V_INT, REQ | EMPTY, 0},
    {"registers_min", V_NUM, REQ | EMPTY, -1}, {"registers_median", V_NUM, REQ | EMPTY, -1},
    {"registers_max", V_NUM, REQ | EMPTY, -1}, {"spill_bytes_min", V_NUM, REQ | EMPTY, -1},
    {"spill_bytes_median", V_NUM, REQ | EMPTY, -1}, {"spill_bytes_max", V_NUM, REQ | EMPTY, -1},
    {"shared_bytes_min", V_NUM, REQ | EMPTY, -1}, {"shared_bytes_median", V_NUM, REQ | EMPTY, -1},
    {"shared_bytes_max", V_NUM, REQ | EMPTY, -1}, {"binary_bytes_min", V_NUM, REQ | EMPTY, 0},
    {"binary_bytes_median", V_NUM, REQ | EMPTY, 0}, {"binary_bytes_max", V_NUM, REQ | EMPTY, 0},
    {"instructions_min", V_NUM, REQ | EMPTY, 0}, {"instructions_median", V_NUM, REQ | EMPTY, 0},
    {"instructions_max", V_NUM, REQ | EMPTY, 0}, {"compared", V_INT, REQ, 0},
    {"jensen_shannon_median", V_NUM, REQ | EMPTY, 0}, {"jensen_shannon_max", V_NUM, REQ | EMPTY, 0}};

static const col_spec distance_cols[] = {
    {"source", V_SOURCE, REQ, 0}, {"set", V_NAME, REQ, 0}, {"a_gpu", V_NAME, REQ, 0}, {"a_backend", V_NAME, REQ, 0},
    {"a_class", V_CLASS, REQ, 0}, {"a_config", V_CONFIG, REQ, 0}, {"b_gpu", V_NAME, REQ, 0},
    {"b_backend", V_NAME, REQ, 0}, {"b_class", V_CLASS, REQ, 0}, {"b_config", V_CONFIG, REQ, 0},
    {"differs", V_NAME, REQ, 0}, {"cosine", V_NUM, REQ, 0}, {"jensen_shannon", V_NUM, REQ, 0},
    {"shared_instructions", V_INT, REQ, 0}};

/* bandwidth.csv: a known kernel; times and a rate on ok rows only, the rate bytes_moved over
 * the median */
static void rule_bandwidth(file_ctx *fc, size_t r)
{
    check_gpu(fc, r, "gpu");
    const char *k = val(fc, r, "kernel");
    if (strcmp(k, "copy") && strcmp(k, "read")) problem(fc, line_of(fc, r), "kernel", "'%s' is not copy or read", k);
    const int ok = !strcmp(val(fc, r, "status"), "ok");
    static const char *const times[] = {"median_us", "p20_us", "p80_us", "min_us", "gbps", NULL};
    check_timings(fc, r, times, ok, 0);
    if (!ok || !(num(fc, r, "median_us") > 0)) return;
    const double want = num(fc, r, "bytes_moved") / num(fc, r, "median_us") / 1e3;
    if (!close_enough(num(fc, r, "gbps"), want, 1))
        problem(fc, line_of(fc, r), "gbps", "%s, but bytes_moved / median_us is %.1f GB/s", val(fc, r, "gbps"), want);
}

/* fit-fallback's rules and its leave-one-class-out check */
static const col_spec fallback_cols[] = {
    {"gpu", V_NAME, REQ, 0}, {"backend", V_NAME, REQ, 0}, {"rule", V_INT, REQ, 1}, {"regime", V_NAME, REQ, 0},
    {"conditions", V_NAME, REQ, 0}, {"config", V_CONFIG, REQ, 0}, {"split_kv", V_NAME, REQ, 0}, {"classes", V_INT, REQ, 1},
    {"within_10pct", V_INT, REQ, 0}, {"untimed", V_INT, REQ, 0}, {"geomean", V_NUM, REQ | EMPTY, 1}, {"why", V_TEXT, REQ, 0}};
static const col_spec loo_cols[] = {
    {"gpu", V_NAME, REQ, 0}, {"backend", V_NAME, REQ, 0}, {"shape_class", V_CLASS, REQ, 0}, {"shape", V_NAME, REQ, 0},
    {"regime", V_NAME, REQ, 0}, {"winner_us", V_NUM, REQ, 1e-9}, {"winner", V_CONFIG, REQ, 0}, {"rule_source", V_NAME, REQ, 0},
    {"rule_config", V_CONFIG, REQ, 0}, {"rule_us", V_NUM, REQ | EMPTY, 1e-9}, {"rule_ratio", V_NUM, REQ | EMPTY, 1},
    {"default_config", V_CONFIG, REQ, 0}, {"default_us", V_NUM, REQ | EMPTY, 1e-9}, {"default_ratio", V_NUM, REQ | EMPTY, 1},
    {"nearest_source", V_NAME, REQ, 0}, {"nearest_config", V_CONFIG, REQ, 0}, {"nearest_us", V_NUM, REQ | EMPTY, 1e-9},
    {"nearest_ratio", V_NUM, REQ | EMPTY, 1}};
static const col_spec loo_summary_cols[] = {
    {"gpu", V_NAME, REQ, 0}, {"backend", V_NAME, REQ, 0}, {"regime", V_NAME, REQ, 0}, {"method", V_NAME, REQ, 0},
    {"classes", V_INT, REQ, 1}, {"timed", V_INT, REQ, 0}, {"within_10pct", V_INT, REQ, 0}, {"untimed", V_INT, REQ, 0},
    {"share_of_timed", V_NUM, REQ | EMPTY, 0}, {"share_of_all", V_NUM, REQ, 0}, {"geomean_of_timed", V_NUM, REQ | EMPTY, 1}};

/* tune's pruned.csv: the space's combinations dropped before compiling, with the rule */
static const col_spec pruned_cols[] = {
    {"gpu", V_NAME, REQ, 0}, {"backend", V_NAME, REQ, 0}, {"shape_class", V_CLASS, REQ, 0}, {"shape", V_TEXT, 0, 0},
    {"rule", V_NAME, REQ, 0}, {"configs", V_INT, REQ, 1}, {"example", V_CONFIG, REQ, 0}, {"utc", V_TEXT, 0, 0}};

/* fabench bandwidth's variants (copy, read) */
static const col_spec bandwidth_cols[] = {
    {"gpu", V_NAME, REQ, 0}, {"backend", V_NAME, REQ, 0}, {"kernel", V_NAME, REQ, 0}, {"buffer_bytes", V_INT, REQ, 16},
    {"bytes_moved", V_NUM, REQ, 16}, {"groups", V_INT, REQ, 1}, {"block", V_INT, REQ, 1}, {"unroll", V_INT, REQ, 1},
    {"median_us", V_NUM, REQ | EMPTY, 0}, {"p20_us", V_NUM, REQ | EMPTY, 0}, {"p80_us", V_NUM, REQ | EMPTY, 0},
    {"min_us", V_NUM, EMPTY, 0}, {"reps", V_INT, REQ, 0}, {"gbps", V_NUM, REQ | EMPTY, 0}, {"status", V_STATUS, REQ, 0},
    {"reason", V_TEXT, 0, 0}, {"timer", V_TEXT, 0, 0}, {"sm_mhz", V_NUM, EMPTY, 1}, {"run_id", V_TEXT, 0, 0},
    {"utc", V_TEXT, 0, 0}};

/* tune-replay's best-so-far curves (the replayed searchers, per seed) */
static const col_spec convergence_cols[] = {
    {"gpu", V_NAME, REQ, 0}, {"backend", V_NAME, REQ, 0}, {"shape_class", V_CLASS, REQ, 0},
    {"strategy", V_STRATEGY, REQ, 0}, {"seed", V_INT, REQ, 1}, {"step", V_INT, REQ, 1},
    {"config", V_CONFIG, REQ, 0}, {"median_us", V_NUM, EMPTY, 1e-9}, {"best_us", V_NUM, EMPTY, 1e-9},
    {"optimum_us", V_NUM, REQ, 1e-9}};

static const file_spec specs[] = {
    {"perf.csv", perf_cols, N(perf_cols), rule_perf,
     {"gpu", "backend", "impl", "config", "name", "dtype", "batch", NULL}},
    {"explored.csv", explored_cols, N(explored_cols), rule_explored,
     {"gpu", "backend", "kernel", "config", "shape_class", NULL}},
    {"tuning.csv", tuning_cols, N(tuning_cols), rule_tuning, {"gpu", "backend", "shape_class", NULL}},
    {"codegen.csv", codegen_cols, N(codegen_cols), rule_codegen,
     {"gpu", "backend", "config", "shape_class", "instruction", "source", NULL}},
    {"compiled.csv", compiled_cols, N(compiled_cols), rule_compiled, {"gpu", "backend", "config", "shape_class", NULL}},
    {"manifest.csv", manifest_cols, N(manifest_cols), NULL, {"key", NULL}},
    {"vendor_configs.csv", vendor_cols, N(vendor_cols), NULL, {"impl", "scope", "gpu", "backend", NULL}},
    {"portability.csv", portability_cols, N(portability_cols), rule_portability,
     {"from_gpu", "from_backend", "to_gpu", "to_backend", "class", NULL}},
    {"loc.csv", loc_cols, N(loc_cols), rule_loc, {"label", "path", NULL}},
    {"convergence.csv", convergence_cols, N(convergence_cols), NULL,
     {"gpu", "backend", "shape_class", "strategy", "seed", "step", NULL}},
    {"codegen_summary.csv", summary_cols, N(summary_cols), rule_summary, {"gpu", "backend", "source", NULL}},
    {"codegen_distance.csv", distance_cols, N(distance_cols), rule_distance,
     {"source", "set", "a_gpu", "a_backend", "a_class", "a_config", "b_gpu", "b_backend", "b_class", "b_config", NULL}},
    {"fallback.csv", fallback_cols, N(fallback_cols), rule_fallback, {"gpu", "backend", "rule", NULL}},
    {"pruned.csv", pruned_cols, N(pruned_cols), NULL, {"gpu", "backend", "shape_class", "rule", NULL}},
    {"bandwidth.csv", bandwidth_cols, N(bandwidth_cols), rule_bandwidth,
     {"gpu", "backend", "kernel", "groups", "block", "unroll", "buffer_bytes", "run_id", NULL}},
    {"fallback_loo.csv", loo_cols, N(loo_cols), NULL, {"gpu", "backend", "shape_class", NULL}},
    {"fallback_loo_summary.csv", loo_summary_cols, N(loo_summary_cols), NULL, {"gpu", "backend", "regime", "method", NULL}},
    /* tools/rounds.sh: perf.csv's rows once per round (each round a run of its own), and
     * their manifest; checked with perf.csv's schema and rules against that manifest */
    {"rounds-perf.csv", perf_cols, N(perf_cols), rule_perf,
     {"gpu", "backend", "impl", "config", "name", "dtype", "batch", "run_id", NULL}},
    {"rounds-manifest.csv", manifest_cols, N(manifest_cols), NULL, {"key", NULL}},
};

/* perf.csv's and rounds-perf.csv's rows: a shape needs every dimension */
static int is_perf(const file_spec *spec)
{
    return !strcmp(spec->file, "perf.csv") || !strcmp(spec->file, "rounds-perf.csv");
}

/* a manifest: the folder's, or rounds.sh's beside its rows */
static int is_manifest(const char *file)
{
    return !strcmp(file, "manifest.csv") || !strcmp(file, "rounds-manifest.csv");
}

/* perf.csv's key also needs the other shape columns */
static void row_key(const file_ctx *fc, size_t r, char *out, size_t len)
{
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; fc->spec->key[i] && o < len; i++)
        o += (size_t)snprintf(out + o, len - o, "%s\x1f", val(fc, r, fc->spec->key[i]));
    if (is_perf(fc->spec)) {
        static const char *const more[] = {"hq", "hkv", "sq", "skv", "d", "causal", NULL};
        for (int i = 0; more[i] && o < len; i++) o += (size_t)snprintf(out + o, len - o, "%s\x1f", val(fc, r, more[i]));
    }
}

static int cmp_keyed(const void *a, const void *b)
{
    const char *const *x = a, *const *y = b;
    int c = strcmp(x[0], y[0]);
    return c ? c : (x[1] > y[1]) - (x[1] < y[1]);
}

static void check_unique(file_ctx *fc)
{
    size_t n = fc->t->nrows;
    if (!fc->spec->key[0] || n < 2) return;
    char **keys = calloc(n, sizeof *keys);
    const char *(*pairs)[2] = calloc(n, sizeof *pairs);
    if (!keys || !pairs) { free(keys); free(pairs); return; }
    for (size_t r = 0; r < n; r++) {
        char k[4096];
        row_key(fc, r, k, sizeof k);
        keys[r] = strdup(k);
        pairs[r][0] = keys[r] ? keys[r] : "";
        pairs[r][1] = (const char *)(uintptr_t)r;
    }
    qsort(pairs, n, sizeof *pairs, cmp_keyed);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(pairs[i][0], pairs[i - 1][0])) {
            size_t a = (size_t)(uintptr_t)pairs[i - 1][1], b = (size_t)(uintptr_t)pairs[i][1];
            char what[256] = "";
            size_t o = 0;
            for (int k = 0; fc->spec->key[k] && o < sizeof what; k++)
                o += (size_t)snprintf(what + o, sizeof what - o, "%s%s", k ? ", " : "", fc->spec->key[k]);
            problem(fc, line_of(fc, b), fc->spec->key[0], "the same (%s) as line %d", what, line_of(fc, a));
        }
    for (size_t r = 0; r < n; r++) free(keys[r]);
    free(keys);
    free(pairs);
}

/* ---------- manifest ---------- */

/* The folder right under the innermost results/ above dir (its real path), into out: the
 * GPU's folder that dir is or lies in. 0, or -1 when dir is not under a results/ folder (a
 * user's own run, which may be named anything). */
static int results_folder(const char *dir, char *out, size_t outlen)
{
    char real[PATH_MAX];
    if (!realpath(dir, real)) return -1;
    char *at = NULL;
    for (char *p = real; (p = strstr(p, "/results/")); p += 8) at = p;
    if (!at) return -1;
    const char *name = at + 9;
    size_t n = strcspn(name, "/");
    if (n == 0) return -1;
    snprintf(out, outlen, "%.*s", (int)n, name);
    return 0;
}

/* Under results/, the GPU's folder is named by the manifest's slug (or by the target, for
 * compile folders), and every folder inside it (a study, a probe) belongs to that GPU; a
 * user's own run (fabench run --out /tmp/x/perf.csv) may be named anything. */
static void check_folder_name(file_ctx *fc, int line, const char *dir, const char *v)
{
    char top[256], slug[256];
    if (results_folder(dir, top, sizeof top) != 0) return;
    fb_slug(top, slug, sizeof slug);
    if (strcmp(slug, v))
        problem(fc, line, "gpu_slug", "'%s' does not name the folder 'results/%s' (a folder under results/ is named by "
                "its GPU's slug, results/%s/, and what lies in it is that GPU's; outside results/ any name will do)",
                v, top, v);
}

static void check_manifest(file_ctx *fc, const char *dir)
{
    csv_table *t = fc->t;
    static const char *const need[] = {"gpu", "gpu_slug", "date", "git_commit", "host"};
    for (size_t i = 0; i < N(need); i++) {
        size_t r = 0;
        while (r < t->nrows && strcmp(t->rows[r][0], need[i])) r++;
        if (r == t->nrows) problem(fc, 1, need[i], "required key missing");
        else if (!*t->rows[r][1]) problem(fc, t->row_line[r], need[i], "empty value");
    }
    int commands = 0;
    for (size_t r = 0; r < t->nrows; r++) {
        const char *k = t->rows[r][0], *v = t->rows[r][1];
        size_t kl = strlen(k);
        if (kl > 8 && !strcmp(k + kl - 8, ".command") && *v) commands++;
        if (!strcmp(k, "date")) {
            int y, mo, d, h, mi, s, n = 0;
            if (sscanf(v, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &y, &mo, &d, &h, &mi, &s, &n) != 6 || v[n] || mo < 1 || mo > 12 ||
                d < 1 || d > 31)
                problem(fc, t->row_line[r], "date", "'%s' is not YYYY-MM-DDTHH:MM:SSZ", v);
        }
        if (!strcmp(k, "git_commit") && strcmp(v, "unknown") &&
            (strlen(v) < 7 || strlen(v) > 40 || strspn(v, "0123456789abcdef") != strlen(v)))
            problem(fc, t->row_line[r], "git_commit", "'%s' is not a commit of 7 to 40 hex digits (or 'unknown')", v);
        if (!strcmp(k, "git_dirty") && strcmp(v, "yes") && strcmp(v, "no") && strcmp(v, "unknown"))
            problem(fc, t->row_line[r], "git_dirty", "'%s' is not yes, no or unknown", v);
        if (!strcmp(k, "gpu_slug")) {
            char slug[256];
            fb_slug(v, slug, sizeof slug);
            if (strcmp(slug, v)) problem(fc, t->row_line[r], "gpu_slug", "'%s' is not a slug (would be '%s')", v, slug);
            else check_folder_name(fc, t->row_line[r], dir, v);
        }
    }
    if (!commands) problem(fc, 1, "command", "no <backend>.command key: the command line that made the results");
}

/* ---------- one file ---------- */

static void load_manifest_facts(file_ctx *fc, csv_table *m, char *gpu_buf, size_t len)
{
    fc->manifest_gpu = NULL;
    fc->narch = 0;
    if (!m || m->ncols < 2) return;
    for (size_t r = 0; r < m->nrows; r++) {
        const char *k = m->rows[r][0];
        size_t kl = strlen(k);
        if (!strcmp(k, "gpu")) { snprintf(gpu_buf, len, "%s", m->rows[r][1]); fc->manifest_gpu = gpu_buf; }
        if (kl > 5 && !strcmp(k + kl - 5, ".arch") && fc->narch < 8 && *m->rows[r][1])
            snprintf(fc->arch[fc->narch++], sizeof fc->arch[0], "%s", m->rows[r][1]);
    }
}

static void check_file(checker *ck, const char *dir, const file_spec *spec, csv_table *manifest)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, spec->file);
    file_ctx fc = {.ck = ck, .path = path, .spec = spec};
    char err[FB_ERRLEN];
    int rc = csvt_read(path, &fc.t, err, sizeof err);
    ck->files++;
    if (rc != 0) {
        /* err is "PATH:LINE: message" or "PATH: message" */
        const char *m = err;
        if (!strncmp(err, path, strlen(path))) m = err + strlen(path);
        int line = 0;
        if (*m == ':' && sscanf(m + 1, "%d", &line) == 1) {
            m = strchr(m + 1, ':');
            m = m ? m + 1 : "";
        } else if (*m == ':') {
            m++;
        }
        while (*m == ' ') m++;
        problem(&fc, line, "csv", "%s", m);
        return;
    }
    char gpu_buf[256];
    if (!is_manifest(spec->file) && strcmp(spec->file, "loc.csv"))
        load_manifest_facts(&fc, manifest, gpu_buf, sizeof gpu_buf);
    if (fc.t->ncols == 0) {
        problem(&fc, 1, "file", "empty: no header");
        csvt_free(fc.t);
        return;
    }
    for (size_t i = 0; i < spec->ncols; i++) {
        fc.col[i] = csvt_col(fc.t, spec->cols[i].name);
        if (fc.col[i] < 0 && spec->cols[i].flags & REQ)
            problem(&fc, 1, spec->cols[i].name, "required column missing");
    }
    for (size_t c = 0; c < fc.t->ncols; c++) {
        size_t i = 0;
        while (i < spec->ncols && strcmp(spec->cols[i].name, fc.t->header[c])) i++;
        if (i == spec->ncols) note(ck, path, "column '%s' is not part of the %s schema; not checked", fc.t->header[c], spec->file);
        for (size_t c2 = 0; c2 < c; c2++)
            if (!strcmp(fc.t->header[c2], fc.t->header[c])) problem(&fc, 1, fc.t->header[c], "column appears twice");
    }
    long before = ck->problems;
    for (size_t r = 0; r < fc.t->nrows; r++) {
        for (size_t i = 0; i < spec->ncols; i++) {
            if (fc.col[i] < 0) continue;
            char buf[512];
            const char *msg = check_value(&spec->cols[i], fc.t->rows[r][fc.col[i]], buf, sizeof buf);
            if (msg) problem(&fc, fc.t->row_line[r], spec->cols[i].name, "%s", msg);
        }
        /* the row rules read columns by name: only for files whose required columns exist */
        int have_all = 1;
        for (size_t i = 0; i < spec->ncols; i++) have_all &= fc.col[i] >= 0 || !(spec->cols[i].flags & REQ);
        if (spec->rule && have_all) spec->rule(&fc, r);
    }
    if (is_manifest(spec->file) && fc.col[0] == 0 && fc.col[1] == 1) check_manifest(&fc, dir);
    if (!strcmp(spec->file, "rounds-perf.csv") && csvt_col(fc.t, "run_id") < 0)
        note(ck, path, "no run_id column (written before run ids): its rows repeat once per round, so whether "
             "they are unique is not checked");
    else check_unique(&fc);
    if (fc.t->nrows == 0 && !is_manifest(spec->file)) note(ck, path, "no rows");
    (void)before;
    csvt_free(fc.t);
}

/* tuning.csv against explored.csv: each winner is an ok row of its class. */
static void cross_check_tuning(checker *ck, const char *dir)
{
    char pt[4200], pe[4200], err[FB_ERRLEN];
    snprintf(pt, sizeof pt, "%s/tuning.csv", dir);
    snprintf(pe, sizeof pe, "%s/explored.csv", dir);
    csv_table *t = NULL, *e = NULL;
    if (csvt_read(pt, &t, err, sizeof err) != 0 || csvt_read(pe, &e, err, sizeof err) != 0) {
        csvt_free(t);
        return;
    }
    file_ctx fc = {.ck = ck, .path = pt, .spec = &specs[2], .t = t};
    for (size_t i = 0; i < specs[2].ncols && i < 40; i++) fc.col[i] = csvt_col(t, specs[2].cols[i].name);
    int tg = csvt_col(t, "gpu"), tb = csvt_col(t, "backend"), tc = csvt_col(t, "shape_class"), tf = csvt_col(t, "config"),
        tu = csvt_col(t, "median_us");
    int eg = csvt_col(e, "gpu"), eb = csvt_col(e, "backend"), ec = csvt_col(e, "shape_class"), ef = csvt_col(e, "config"),
        es = csvt_col(e, "status"), eu = csvt_col(e, "median_us");
    if (tg < 0 || tb < 0 || tc < 0 || tf < 0 || tu < 0 || eg < 0 || eb < 0 || ec < 0 || ef < 0 || es < 0 || eu < 0) {
        csvt_free(t);
        csvt_free(e);
        return;
    }
    for (size_t r = 0; r < t->nrows; r++) {
        char **w = t->rows[r];
        int found = 0, any_class = 0;
        double best = INFINITY;
        for (size_t k = 0; k < e->nrows; k++) {
            char **x = e->rows[k];
            if (strcmp(x[eg], w[tg]) || strcmp(x[eb], w[tb]) || strcmp(x[ec], w[tc])) continue;
            any_class = 1;
            double us;
            if (!strcmp(x[es], "ok") && parse_num(x[eu], &us) == 0 && us < best) best = us;
            if (!strcmp(x[ef], w[tf]) && !strcmp(x[es], "ok")) found = 1;
        }
        if (!any_class) continue; /* explored elsewhere (a table copied from another run) */
        if (!found)
            problem(&fc, t->row_line[r], "config", "not an ok row of %s for class %s", pe, w[tc]);
        double us;
        /* tune times an earlier run's best again beside its own and keeps what was faster
         * in that run: an explored row from another run may show a faster time (a note) */
        if (found && parse_num(w[tu], &us) == 0 && isfinite(best) && us > best * 1.000001 + 1e-3)
            note(ck, pt, "line %d: median_us %s, and %s has a faster ok row for %s (%.3f us: a search's short timing "
                 "or another run's; the winner was decided when the contenders were timed again)", t->row_line[r], w[tu],
                 pe, w[tc], best);
    }
    csvt_free(t);
    csvt_free(e);
}

static int is_known(const char *name)
{
    for (size_t i = 0; i < N(specs); i++)
        if (!strcmp(specs[i].file, name)) return 1;
    return 0;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The manifest at path that a folder's files need, read; a problem when it is missing (why:
 * what needs it and how to write it). NULL when missing or unreadable (its own check says
 * why). */
static csv_table *needed_manifest(checker *ck, const char *path, const char *why)
{
    char err[FB_ERRLEN];
    csv_table *m = NULL;
    if (!exists(path)) {
        ck->problems++;
        printf("%s: manifest: missing: %s\n", path, why);
        return NULL;
    }
    return csvt_read(path, &m, err, sizeof err) == 0 ? m : NULL;
}

static void check_folder(checker *ck, const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d) { printf("%s: folder: cannot open: %s\n", dir, strerror(errno)); ck->problems++; return; }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) break;
            names = nn;
        }
        names[n] = strdup(de->d_name);
        if (names[n]) n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    int data_files = 0, rounds = 0; /* rounds: rounds-perf.csv, whose manifest is rounds-manifest.csv */
    for (size_t i = 0; i < n; i++) {
        rounds |= !strcmp(names[i], "rounds-perf.csv");
        data_files += is_known(names[i]) && !is_manifest(names[i]) && strcmp(names[i], "loc.csv") &&
                      strcmp(names[i], "rounds-perf.csv");
    }
    char mpath[4200], rpath[4200];
    snprintf(mpath, sizeof mpath, "%s/manifest.csv", dir);
    snprintf(rpath, sizeof rpath, "%s/rounds-manifest.csv", dir);
    csv_table *manifest = NULL, *rmanifest = NULL;
    if (data_files || exists(mpath) || rounds) ck->folders++;
    if (data_files || exists(mpath))
        manifest = needed_manifest(ck, mpath, "every results folder needs the manifest of the run that wrote it "
                                              "(fabench run --manifest DIR/manifest.csv)");
    if (rounds)
        rmanifest = needed_manifest(ck, rpath, "rounds-perf.csv needs the manifest tools/rounds.sh writes beside it");
    for (size_t i = 0; i < n; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(p, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) continue;
        size_t l = strlen(names[i]);
        if (l < 4 || strcmp(names[i] + l - 4, ".csv")) continue;
        if (!is_known(names[i])) { note(ck, p, "not a known results file; not checked"); continue; }
        if (!strcmp(names[i], "loc.csv") && depth > 0) note(ck, p, "loc.csv belongs at the top of results/");
        for (size_t s = 0; s < N(specs); s++)
            if (!strcmp(specs[s].file, names[i]))
                check_file(ck, dir, &specs[s], !strcmp(names[i], "rounds-perf.csv") ? rmanifest : manifest);
    }
    if (exists(mpath) && data_files) {
        char pt[4200], pe[4200];
        snprintf(pt, sizeof pt, "%s/tuning.csv", dir);
        snprintf(pe, sizeof pe, "%s/explored.csv", dir);
        if (exists(pt) && exists(pe)) cross_check_tuning(ck, dir);
    }
    csvt_free(manifest);
    csvt_free(rmanifest);
    for (size_t i = 0; i < n; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        struct stat st;
        if (!strcmp(names[i], "cross-gpu") && stat(p, &st) == 0 && S_ISDIR(st.st_mode))
            /* derived from the GPU folders (tools/cross-gpu.sh draws it again each time);
             * those are what is checked */
            note(ck, p, "drawn from the GPU folders by tools/cross-gpu.sh; not checked");
        else if (strcmp(names[i], "archive") && strcmp(names[i], "plots") && stat(p, &st) == 0 && S_ISDIR(st.st_mode) &&
                 depth < 4)
            check_folder(ck, p, depth + 1);
        free(names[i]);
    }
    free(names);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fabench check-results [--quiet] DIR...\n\n"
            "Validates results folders: DIR and every folder under it (archive/ and plots/ aside;\n"
            "cross-gpu/, drawn from the GPU folders by tools/cross-gpu.sh, gets a note).\n"
            "Checks each known file (perf.csv, explored.csv, tuning.csv, codegen.csv, compiled.csv,\n"
            "manifest.csv, vendor_configs.csv, portability.csv, codegen_summary.csv,\n"
            "codegen_distance.csv, loc.csv, convergence.csv, fit-fallback's fallback.csv,\n"
            "fallback_loo.csv and fallback_loo_summary.csv, tools/rounds.sh's rounds-perf.csv and\n"
            "rounds-manifest.csv): required columns, value types, ok rows with finite timings\n"
            "(p20 <= median <= p80, TFLOP/s and GB/s that agree with the shape) and errors within\n"
            "the verification tolerances, no duplicate rows, the folder's manifest with its\n"
            "required keys (gpu, gpu_slug, date, git_commit, host, a <backend>.command), and that\n"
            "tuning.csv's winners are ok rows of explored.csv. rounds-perf.csv is checked as a\n"
            "perf.csv against rounds-manifest.csv beside it; its rows repeat once per round, each\n"
            "round a run of its own, so they are unique per run_id (a file without that column,\n"
            "written before run ids, is not checked for repeats: a note says so). A folder under\n"
            "results/ is named by its GPU's slug (gpu_slug); a folder elsewhere (a run of your\n"
            "own) may have any name.\n\n"
            "Each problem is a line FILE:LINE: FIELD: MESSAGE on stdout; notes (unknown files or\n"
            "columns) are not problems. --quiet leaves the notes out.\n"
            "Exit status: 0 clean, 1 problems found, 2 bad usage.\n");
}

int cmd_check_results(int argc, char **argv)
{
    checker ck = {0};
    int ndirs = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "--quiet")) { ck.quiet_notes = 1; continue; }
        if (argv[i][0] == '-') {
            fprintf(stderr, "fabench check-results: unknown option '%s'\n\n", argv[i]);
            usage(stderr);
            return FB_EXIT_BADINPUT;
        }
        struct stat st;
        if (stat(argv[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "fabench check-results: '%s' is not a folder\n", argv[i]);
            return FB_EXIT_BADINPUT;
        }
        ndirs++;
    }
    if (!ndirs) {
        fprintf(stderr, "fabench check-results: needs a results folder\n\n");
        usage(stderr);
        return FB_EXIT_BADINPUT;
    }
    for (int i = 1; i < argc; i++)
        if (argv[i][0] != '-') check_folder(&ck, argv[i], 0);
    printf("check-results: %ld file%s in %ld results folder%s: %ld problem%s, %ld note%s\n", ck.files,
           ck.files == 1 ? "" : "s", ck.folders, ck.folders == 1 ? "" : "s", ck.problems, ck.problems == 1 ? "" : "s",
           ck.notes, ck.notes == 1 ? "" : "s");
    return ck.problems ? 1 : 0;
}
