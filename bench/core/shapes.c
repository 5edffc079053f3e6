/* shapes.c: shape files and named suites (shapes.h). The CSV is read by csvio; this
 * file checks the columns and every value, and names file, line and field on error. */
#include "shapes.h"
#include "csvio.h"

#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

enum { C_NAME, C_BATCH, C_HQ, C_HKV, C_SQ, C_SKV, C_D, C_CAUSAL, C_DTYPE, C_LENS, C_QLENS, C_PAGE, C__COUNT };
static const char *const col_names[C__COUNT] = {
    "name", "batch", "hq", "hkv", "sq", "skv", "d", "causal", "dtype", "lens", "qlens", "page",
};
#define N_REQUIRED C_DTYPE /* every column before dtype is required */

/* Q or K/V may hold at most this many elements. */
#define MAX_ELEMS ((uint64_t)1 << 40)

/* Appends "a,b,c" (the table's header) to buf. */
static void join_header(const csv_table *t, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (size_t i = 0; i < t->ncols && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "," : "", t->header[i]);
}

/* Parses a positive int: the whole field, base 10, 1 .. INT_MAX. 0 or 2. */
static int parse_pos(const char *path, int line, const char *field, const char *s, int *out,
                     char *err, size_t errlen)
{
    if (!*s) {
        snprintf(err, errlen, "%s:%d: field '%s': empty, expected an integer >= 1", path, line, field);
        return 2;
    }
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || (!isdigit((unsigned char)s[0]) && s[0] != '-')) { /* digits (a minus says why below): no plus, no blank */
        snprintf(err, errlen, "%s:%d: field '%s': '%s' is not an integer", path, line, field, s);
        return 2;
    }
    if (errno == ERANGE || v > INT_MAX) {
        snprintf(err, errlen, "%s:%d: field '%s': %s is out of range (1 .. %d)", path, line, field,
                 s, INT_MAX);
        return 2;
    }
    if (v < 1) {
        snprintf(err, errlen, "%s:%d: field '%s': must be >= 1, got %ld", path, line, field, v);
        return 2;
    }
    *out = (int)v;
    return 0;
}

/* a*b*c*d <= MAX_ELEMS, without overflowing. */
static int elems_ok(int a, int b, int c, int d, uint64_t *prod)
{
    uint64_t f[4] = {(uint64_t)a, (uint64_t)b, (uint64_t)c, (uint64_t)d}, p = 1;
    for (int i = 0; i < 4; i++) {
        if (p > MAX_ELEMS / f[i]) return 0;
        p *= f[i];
    }
    *prod = p;
    return 1;
}

static int check_columns(const char *path, const csv_table *t, int col[C__COUNT], char *err,
                         size_t errlen)
{
    char hdr[512];
    join_header(t, hdr, sizeof hdr);
    for (int c = 0; c < C__COUNT; c++) col[c] = -1;
    for (size_t i = 0; i < t->ncols; i++) {
        int found = -1;
        for (int c = 0; c < C__COUNT; c++)
            if (strcmp(t->header[i], col_names[c]) == 0) found = c;
        if (found < 0) {
            snprintf(err, errlen, "%s:1: unknown column '%s' (known: name,batch,hq,hkv,sq,skv,d,"
                     "causal,dtype,lens,qlens,page)", path, t->header[i]);
            return 2;
        }
        if (col[found] >= 0) {
            snprintf(err, errlen, "%s:1: duplicate column '%s' (header has: %s)", path,
                     t->header[i], hdr);
            return 2;
        }
        col[found] = (int)i;
    }
    for (int c = 0; c < N_REQUIRED; c++) {
        if (col[c] < 0) {
            snprintf(err, errlen, "%s:1: missing column '%s' (header has: %s)", path, col_names[c], hdr);
            return 2;
        }
    }
    return 0;
}

/* A `;`-separated list of fractions in (0, 1] (field names the column) into v[*n]. */
static int parse_fracs(const char *path, int line, const char *field, const char *text, double *v, int *n_out,
                       char *err, size_t errlen)
{
    *n_out = 0;
    if (!*text) return 0;
    const char *p = text;
    for (int n = 1;; n++) {
        const char *e = strchr(p, ';');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char tok[64];
        if (len == 0) {
            snprintf(err, errlen, "%s:%d: field '%s': entry %d of '%s' is empty (expected fractions "
                     "in (0, 1] separated by ';')", path, line, field, n, text);
            return 2;
        }
        if (len >= sizeof tok || *n_out == FB_MAX_LENS) {
            snprintf(err, errlen, len >= sizeof tok ? "%s:%d: field '%s': entry %d of '%.40s...' is too long"
                                                    : "%s:%d: field '%s': more than %d entries in '%.40s...'",
                     path, line, field, len >= sizeof tok ? n : FB_MAX_LENS, text);
            return 2;
        }
        memcpy(tok, p, len);
        tok[len] = 0;
        char *end;
        errno = 0;
        double f = strtod(tok, &end);
        if (end == tok || *end || tok[0] == ' ' || tok[0] == '\t' || errno == ERANGE || f != f) {
            snprintf(err, errlen, "%s:%d: field '%s': entry %d, '%s', is not a number (expected "
                     "fractions in (0, 1] separated by ';')", path, line, field, n, tok);
            return 2;
        }
        if (!(f > 0.0 && f <= 1.0)) {
            snprintf(err, errlen, "%s:%d: field '%s': entry %d, '%s', is outside (0, 1] (a length "
                     "is a fraction of the row's sq and skv)", path, line, field, n, tok);
            return 2;
        }
        v[(*n_out)++] = f;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

int shapes_parse_lens(const char *path, int line, const char *text, shape_t *s, char *err, size_t errlen)
{
    return parse_fracs(path, line, "lens", text, s->lens, &s->nlens, err, errlen);
}

int shapes_parse_qlens(const char *path, int line, const char *text, shape_t *s, char *err, size_t errlen)
{
    return parse_fracs(path, line, "qlens", text, s->qlens, &s->nqlens, err, errlen);
}

static int parse_row(const char *path, int line, char *const *row, const int col[C__COUNT],
                     shape_t *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->line = line;
    const char *name = row[col[C_NAME]];
    if (!*name) {
        snprintf(err, errlen, "%s:%d: field 'name': empty", path, line);
        return 2;
    }
    if (strlen(name) >= sizeof s->name) {
        snprintf(err, errlen, "%s:%d: field 'name': '%.20s...' is %zu characters long (at most %zu)",
                 path, line, name, strlen(name), sizeof s->name - 1);
        return 2;
    }
    snprintf(s->name, sizeof s->name, "%s", name);

    int *dst[] = {NULL, &s->batch, &s->hq, &s->hkv, &s->sq, &s->skv, &s->d};
    for (int c = C_BATCH; c <= C_D; c++)
        if (parse_pos(path, line, col_names[c], row[col[c]], dst[c], err, errlen) != 0) return 2;

    if (!fb_d_supported(s->d)) {
        char list[128];
        size_t o = 0;
        list[0] = 0;
        for (size_t i = 0; i < fb_n_supported_d && o < sizeof list; i++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%d", i ? ", " : "", fb_supported_d[i]);
        snprintf(err, errlen, "%s:%d: field 'd': unsupported head dim %d (supported: %s)", path,
                 line, s->d, list);
        return 2;
    }
    if (s->hq % s->hkv != 0) {
        snprintf(err, errlen, "%s:%d: field 'hq': %d is not a multiple of hkv=%d", path, line,
                 s->hq, s->hkv);
        return 2;
    }
    uint64_t n;
    if (!elems_ok(s->batch, s->hq, s->sq, s->d, &n)) {
        snprintf(err, errlen, "%s:%d: field 'sq': batch*hq*sq*d = %d*%d*%d*%d elements is over "
                 "the limit of 2^40", path, line, s->batch, s->hq, s->sq, s->d);
        return 2;
    }
    if (!elems_ok(s->batch, s->hkv, s->skv, s->d, &n)) {
        snprintf(err, errlen, "%s:%d: field 'skv': batch*hkv*skv*d = %d*%d*%d*%d elements is over "
                 "the limit of 2^40", path, line, s->batch, s->hkv, s->skv, s->d);
        return 2;
    }

    const char *c = row[col[C_CAUSAL]];
    if (strcmp(c, "1") == 0 || strcasecmp(c, "true") == 0) s->causal = 1;
    else if (strcmp(c, "0") == 0 || strcasecmp(c, "false") == 0) s->causal = 0;
    else {
        snprintf(err, errlen, "%s:%d: field 'causal': '%s' is not one of 0, 1, true, false",
                 path, line, c);
        return 2;
    }

    if (col[C_DTYPE] >= 0) {
        const char *dt = row[col[C_DTYPE]];
        if (!*dt) {
            snprintf(err, errlen, "%s:%d: field 'dtype': empty (give a dtype in every row, or "
                     "drop the column to use --dtype)", path, line);
            return 2;
        }
        if (dtype_parse(dt, &s->dtype) != 0) {
            snprintf(err, errlen, "%s:%d: field 'dtype': unknown '%s' (known: fp32, fp16, bf16)",
                     path, line, dt);
            return 2;
        }
        s->has_dtype = 1;
    }
    if (col[C_LENS] >= 0 && shapes_parse_lens(path, line, row[col[C_LENS]], s, err, errlen) != 0) return 2;
    if (col[C_QLENS] >= 0 && shapes_parse_qlens(path, line, row[col[C_QLENS]], s, err, errlen) != 0) return 2;
    if (col[C_PAGE] >= 0 && *row[col[C_PAGE]]) { /* empty: a dense K/V */
        const char *v = row[col[C_PAGE]];
        char *end = NULL;
        errno = 0;
        long pg = strtol(v, &end, 10);
        if (errno || end == v || *end || !isdigit((unsigned char)v[0]) || pg < 16 || pg > 4096 || (pg & (pg - 1))) {
            snprintf(err, errlen, "%s:%d: field 'page': '%s' is not a page size (a power of two from 16 to 4096 "
                     "rows, or empty for a dense K/V)", path, line, v);
            return 2;
        }
        s->page = (int)pg;
    }
    return 0;
}

int shapes_load(const char *path, shape_list_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    csv_table *t = NULL;
    int rc = csvt_read(path, &t, err, errlen);
    if (rc != 0) return rc;
    if (t->ncols == 0) {
        snprintf(err, errlen, "%s: no shapes (the file is empty; expected a header "
                 "name,batch,hq,hkv,sq,skv,d,causal[,dtype][,lens][,qlens][,page] and one row per shape)", path);
        csvt_free(t);
        return 2;
    }
    int col[C__COUNT];
    if ((rc = check_columns(path, t, col, err, errlen)) != 0) { csvt_free(t); return rc; }
    if (t->nrows == 0) {
        snprintf(err, errlen, "%s: no shapes (the file has a header but no rows)", path);
        csvt_free(t);
        return 2;
    }
    shape_t *v = calloc(t->nrows, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "%s: out of memory", path);
        csvt_free(t);
        return -1;
    }
    for (size_t r = 0; r < t->nrows; r++) {
        if ((rc = parse_row(path, t->row_line[r], t->rows[r], col, &v[r], err, errlen)) != 0) break;
        for (size_t q = 0; q < r; q++) {
            if (strcmp(v[q].name, v[r].name) == 0) {
                snprintf(err, errlen, "%s:%d: field 'name': duplicate name '%s' (first on line %d)",
                         path, v[r].line, v[r].name, v[q].line);
                rc = 2;
                break;
            }
        }
        if (rc) break;
    }
    size_t n = t->nrows;
    csvt_free(t);
    if (rc != 0) { free(v); return rc; }
    out->v = v;
    out->n = n;
    snprintf(out->source, sizeof out->source, "%s", path);
    return 0;
}

static int suites_dir(char *dir, size_t len)
{
    char root[PATH_MAX - 32];
    if (fb_root(root, sizeof root) != 0) return -1;
    return (size_t)snprintf(dir, len, "%s/bench/suites", root) < len ? 0 : -1;
}

static int is_csv_name(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return e->d_name[0] != '.' && n > 4 && strcmp(e->d_name + n - 4, ".csv") == 0;
}

static int cmp_names(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

void shapes_list_suites(char *out, size_t outlen)
{
    if (!outlen) return;
    out[0] = 0;
    char dir[PATH_MAX];
    if (suites_dir(dir, sizeof dir) != 0) return;
    struct dirent **ents;
    int n = scandir(dir, &ents, is_csv_name, cmp_names);
    if (n < 0) return;
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(ents[i]->d_name) - 4;
        if (o < outlen)
            o += (size_t)snprintf(out + o, outlen - o, "%s%.*s", i ? ", " : "", (int)len,
                                  ents[i]->d_name);
        free(ents[i]);
    }
    free(ents);
}

int shapes_load_suite(const char *name, shape_list_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char dir[PATH_MAX];
    if (suites_dir(dir, sizeof dir) != 0) {
        snprintf(err, errlen, "suite '%s': cannot find the project root (the folder holding "
                 "kernels/ and bench/suites/); set FABENCH_ROOT", name);
        return -1;
    }
    char path[PATH_MAX + 64];
    struct stat st;
    int bare = *name && !strchr(name, '/') && name[0] != '.';
    if (bare) snprintf(path, sizeof path, "%s/%s.csv", dir, name);
    if (!bare || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        char list[1024];
        shapes_list_suites(list, sizeof list);
        size_t n = strlen(name);
        snprintf(err, errlen, "unknown suite '%s' (available: %s)%s", name,
                 *list ? list : "none",
                 n > 4 && strcmp(name + n - 4, ".csv") == 0
                     ? "; a suite is named without .csv, and a file path goes to the shape-file option"
                     : "");
        return 2;
    }
    return shapes_load(path, out, err, errlen);
}

void shapes_free(shape_list_t *l)
{
    if (!l) return;
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

int shapes_load_file_or_suite(const char *file, const char *suite, shape_list_t *out, char *err, size_t errlen)
{
    return file ? shapes_load(file, out, err, errlen) : shapes_load_suite(suite, out, err, errlen);
}

dtype_t shapes_dtype(const shape_t *s, int have_override, dtype_t override)
{
    return have_override ? override : s->has_dtype ? s->dtype : DT_BF16;
}
