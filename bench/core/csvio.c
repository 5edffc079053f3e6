/* csvio.c: CSV tables in memory (csvio.h). Parsing and quoting are libcsv's; this file
 * only keeps the table, counts lines for messages and makes writes atomic.
 *
 * Reading: the file is fed to libcsv one line at a time (CSV_STRICT | CSV_STRICT_FINI |
 * CSV_APPEND_NULL), so a record's line is known even after blank lines or quoted fields
 * that span lines. A UTF-8 BOM is dropped; CRLF line ends are accepted (libcsv treats
 * \r as a terminator; a \r inside a quoted field is kept). Blank and whitespace-only
 * lines are skipped. Unquoted fields lose surrounding spaces and tabs (libcsv's
 * default); quoted fields are kept exactly. A file with no record at all (empty, or
 * only blank lines) reads as a table with no columns and no rows: the caller decides
 * whether that is an error (csvt_open_append starts a new table over it).
 *
 * Writing: a field is written bare when libcsv would read it back unchanged, and
 * through csv_fwrite (always quoted, quotes doubled) otherwise, so numbers stay bare
 * for gnuplot and anything with a comma, quote, line break or edge blank is quoted. */
#include "csvio.h"
#include "common.h"

#include <csv.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------- table ---------- */

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static void free_fields(char **f, size_t n)
{
    if (!f) return;
    for (size_t i = 0; i < n; i++) free(f[i]);
    free(f);
}

csv_table *csvt_new(const char *const *header, size_t ncols)
{
    csv_table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (ncols) {
        t->header = calloc(ncols, sizeof *t->header);
        if (!t->header) { free(t); return NULL; }
        for (size_t i = 0; i < ncols; i++) {
            t->header[i] = dup_n(header[i], strlen(header[i]));
            if (!t->header[i]) { free_fields(t->header, i); free(t); return NULL; }
        }
    }
    t->ncols = ncols;
    return t;
}

/* Makes room for one more row. 0 or -1. */
static int grow(csv_table *t)
{
    if (t->nrows < t->cap) return 0;
    size_t cap = t->cap ? t->cap * 2 : 16;
    char ***rows = realloc(t->rows, cap * sizeof *rows);
    if (!rows) return -1;
    t->rows = rows;
    int *lines = realloc(t->row_line, cap * sizeof *lines);
    if (!lines) return -1;
    t->row_line = lines;
    t->cap = cap;
    return 0;
}

/* Takes ownership of fields (ncols strings) on success. */
static int add_owned(csv_table *t, char **fields, int line)
{
    if (grow(t) != 0) return -1;
    t->rows[t->nrows] = fields;
    t->row_line[t->nrows] = line;
    t->nrows++;
    return 0;
}

int csvt_add(csv_table *t, const char *const *fields)
{
    char **row = calloc(t->ncols ? t->ncols : 1, sizeof *row);
    if (!row) return -1;
    for (size_t i = 0; i < t->ncols; i++) {
        row[i] = dup_n(fields[i], strlen(fields[i]));
        if (!row[i]) { free_fields(row, i); return -1; }
    }
    if (add_owned(t, row, 0) != 0) { free_fields(row, t->ncols); return -1; }
    return 0;
}

int csvt_widen(csv_table *t, const char *const *header, size_t ncols)
{
    if (ncols < t->ncols) return -1;
    for (size_t i = 0; i < t->ncols; i++)
        if (strcmp(t->header[i], header[i]) != 0) return -1;
    if (ncols == t->ncols) return 0;
    /* everything new is built first: out of memory leaves t as it was */
    char **hdr = calloc(ncols, sizeof *hdr);
    char ***rows = calloc(t->nrows ? t->nrows : 1, sizeof *rows);
    int ok = hdr && rows;
    for (size_t c = t->ncols; ok && c < ncols; c++) ok = (hdr[c] = dup_n(header[c], strlen(header[c]))) != NULL;
    for (size_t r = 0; ok && r < t->nrows; r++) {
        ok = (rows[r] = calloc(ncols, sizeof *rows[r])) != NULL;
        for (size_t c = t->ncols; ok && c < ncols; c++) ok = (rows[r][c] = dup_n("", 0)) != NULL;
    }
    if (!ok) {
        for (size_t r = 0; rows && r < t->nrows; r++)
            if (rows[r]) {
                for (size_t c = t->ncols; c < ncols; c++) free(rows[r][c]);
                free(rows[r]);
            }
        for (size_t c = t->ncols; hdr && c < ncols; c++) free(hdr[c]);
        free(rows);
        free(hdr);
        return -1;
    }
    for (size_t c = 0; c < t->ncols; c++) hdr[c] = t->header[c];
    free(t->header);
    t->header = hdr;
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) rows[r][c] = t->rows[r][c];
        free(t->rows[r]);
        t->rows[r] = rows[r];
    }
    free(rows);
    t->ncols = ncols;
    return 0;
}

int csvt_replace(csv_table *t, size_t r, const char *const *fields)
{
    if (r >= t->nrows) return -1;
    char **row = calloc(t->ncols ? t->ncols : 1, sizeof *row);
    if (!row) return -1;
    for (size_t i = 0; i < t->ncols; i++) {
        row[i] = dup_n(fields[i], strlen(fields[i]));
        if (!row[i]) { free_fields(row, i); return -1; }
    }
    free_fields(t->rows[r], t->ncols);
    t->rows[r] = row;
    t->row_line[r] = 0;
    return 0;
}

int csvt_remove(csv_table *t, size_t r)
{
    if (r >= t->nrows) return -1;
    free_fields(t->rows[r], t->ncols);
    memmove(&t->rows[r], &t->rows[r + 1], (t->nrows - r - 1) * sizeof *t->rows);
    memmove(&t->row_line[r], &t->row_line[r + 1], (t->nrows - r - 1) * sizeof *t->row_line);
    t->nrows--;
    return 0;
}

int csvt_set(csv_table *t, size_t r, size_t c, const char *v)
{
    if (r >= t->nrows || c >= t->ncols) return -1;
    char *d = dup_n(v, strlen(v));
    if (!d) return -1;
    free(t->rows[r][c]);
    t->rows[r][c] = d;
    return 0;
}

int csvt_col(const csv_table *t, const char *name)
{
    for (size_t i = 0; i < t->ncols; i++)
        if (strcmp(t->header[i], name) == 0) return (int)i;
    return -1;
}

void csvt_free(csv_table *t)
{
    if (!t) return;
    free_fields(t->header, t->ncols);
    for (size_t r = 0; r < t->nrows; r++) free_fields(t->rows[r], t->ncols);
    free(t->rows);
    free(t->row_line);
    free(t);
}

/* ---------- reading ---------- */

typedef struct {
    const char *path;
    csv_table *t;
    int line;            /* line of the chunk being fed */
    int rec_line;        /* line where the current record began (0: not known yet) */
    int done_line;       /* line where the last whole record ended (0: none yet) */
    char **cur;          /* fields of the current record */
    size_t ncur, capcur;
    int have_header;
    int failed;          /* 2 bad input, -1 out of memory; callbacks stop doing work */
    char *err;
    size_t errlen;
} reader;

static void on_field(void *s, size_t len, void *data)
{
    reader *r = data;
    if (r->failed) return;
    if (r->ncur == 0) {
        /* The field ends on this line; it started as many lines earlier as it holds \n. */
        int nl = 0;
        for (size_t i = 0; i < len; i++) nl += ((const char *)s)[i] == '\n';
        r->rec_line = r->line - nl;
    }
    if (r->ncur == r->capcur) {
        size_t cap = r->capcur ? r->capcur * 2 : 16;
        char **c = realloc(r->cur, cap * sizeof *c);
        if (!c) { r->failed = -1; snprintf(r->err, r->errlen, "%s: out of memory", r->path); return; }
        r->cur = c;
        r->capcur = cap;
    }
    char *f = dup_n(s ? (const char *)s : "", s ? len : 0);
    if (!f) { r->failed = -1; snprintf(r->err, r->errlen, "%s: out of memory", r->path); return; }
    r->cur[r->ncur++] = f;
}

static void drop_record(reader *r)
{
    for (size_t i = 0; i < r->ncur; i++) free(r->cur[i]);
    r->ncur = 0;
}

static void on_record(int c, void *data)
{
    reader *r = data;
    (void)c;
    r->done_line = r->line;
    if (r->failed) { drop_record(r); return; }
    if (!r->have_header) {
        csv_table *t = csvt_new((const char *const *)r->cur, r->ncur);
        drop_record(r);
        if (!t) { r->failed = -1; snprintf(r->err, r->errlen, "%s: out of memory", r->path); return; }
        r->t = t;
        r->have_header = 1;
        return;
    }
    if (r->ncur != r->t->ncols) {
        snprintf(r->err, r->errlen, "%s:%d: expected %zu fields, found %zu", r->path,
                 r->rec_line, r->t->ncols, r->ncur);
        r->failed = 2;
        drop_record(r);
        return;
    }
    char **row = malloc((r->ncur ? r->ncur : 1) * sizeof *row);
    if (!row) { drop_record(r); r->failed = -1; snprintf(r->err, r->errlen, "%s: out of memory", r->path); return; }
    memcpy(row, r->cur, r->ncur * sizeof *row);
    size_t n = r->ncur;
    r->ncur = 0;
    if (add_owned(r->t, row, r->rec_line) != 0) {
        free_fields(row, n);
        r->failed = -1;
        snprintf(r->err, r->errlen, "%s: out of memory", r->path);
    }
}

int csvt_read(const char *path, csv_table **out, char *err, size_t errlen)
{
    *out = NULL;
    char *data = NULL;
    size_t len = 0;
    if (fb_read_file(path, &data, &len, err, errlen) != 0) return -1;

    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) {
        free(data);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    reader r = {.path = path, .line = 1, .err = err, .errlen = errlen};
    const char *s = data, *end = data + len;
    if (len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) s += 3;
    const char *nul = memchr(data, 0, len);
    if (nul) { /* a field would end at it unseen */
        int at = 1;
        for (const char *c = data; c < nul; c++) at += *c == '\n';
        snprintf(err, errlen, "%s:%d: a NUL byte: not a text CSV file", path, at);
        csv_free(&p);
        free(data);
        return 2;
    }

    int rc = 0;
    while (s < end && !r.failed) {
        /* one line a chunk, so that errors name it; a line ends in \n, \r\n or a bare \r */
        const char *nl = s;
        while (nl < end && *nl != '\n' && *nl != '\r') nl++;
        if (nl < end && *nl == '\r' && nl + 1 < end && nl[1] == '\n') nl++;
        if (nl == end) nl = NULL;
        size_t n = nl ? (size_t)(nl - s) + 1 : (size_t)(end - s);
        if (csv_parse(&p, s, n, on_field, on_record, &r) != n) {
            snprintf(err, errlen, "%s:%d: malformed CSV (a quote inside an unquoted field, "
                     "or text after a closing quote): %s", path, r.line, csv_strerror(csv_error(&p)));
            rc = 2;
            break;
        }
        s += n;
        if (nl) r.line++;
    }
    if (rc == 0 && !r.failed && csv_fini(&p, on_field, on_record, &r) != 0) {
        /* the open record began on its first field's line, or, with no field ended yet, on
         * the first line after the last whole record that is not blank */
        int at = r.rec_line;
        if (r.ncur == 0 || at <= r.done_line) {
            at = 1;
            const char *c = data;
            for (; c < end && at <= r.done_line; c++) at += *c == '\n';
            for (; c < end && (*c == '\n' || *c == '\r' || *c == ' ' || *c == '\t'); c++) at += *c == '\n';
        }
        snprintf(err, errlen, "%s:%d: malformed CSV (a quoted field is not closed before the "
                 "end of the file): %s", path, at, csv_strerror(csv_error(&p)));
        rc = 2;
    }
    csv_free(&p);
    free(data);
    drop_record(&r);
    free(r.cur);
    if (rc == 0 && r.failed) rc = r.failed;
    if (rc == 0 && !r.t) {
        r.t = csvt_new(NULL, 0);
        if (!r.t) { snprintf(err, errlen, "%s: out of memory", path); rc = -1; }
    }
    if (rc != 0) { csvt_free(r.t); return rc; }
    *out = r.t;
    return 0;
}

/* ---------- writing ---------- */

/* Would libcsv read this field back unchanged if it were written bare? */
static int needs_quotes(const char *s, size_t ncols)
{
    size_t n = strlen(s);
    if (n == 0) return ncols == 1; /* a lone empty field would be a blank line, skipped */
    if (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t') return 1;
    if (n >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) return 1; /* bare, a reader would take it for a byte-order mark */
    return strpbrk(s, ",\"\r\n") != NULL;
}

static int write_row(FILE *f, char *const *fields, size_t ncols)
{
    for (size_t i = 0; i < ncols; i++) {
        if (i && fputc(',', f) == EOF) return -1;
        const char *s = fields[i];
        if (needs_quotes(s, ncols)) {
            if (csv_fwrite(f, s, strlen(s)) != 0) return -1;
        } else if (fputs(s, f) == EOF) {
            return -1;
        }
    }
    return fputc('\n', f) == EOF ? -1 : 0;
}

/* Best effort: make the rename itself durable. */
static void sync_dir_of(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    int fd = open(dirname(buf), O_RDONLY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int csvt_write_atomic(const csv_table *t, const char *path, char *err, size_t errlen)
{
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create temporary file %s: %s", path, tmp, strerror(errno));
        return -1;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        snprintf(err, errlen, "%s: cannot write %s: %s", path, tmp, strerror(e));
        return -1;
    }
    const char *what = "write";
    int ok = write_row(f, t->header, t->ncols) == 0;
    for (size_t r = 0; ok && r < t->nrows; r++) ok = write_row(f, t->rows[r], t->ncols) == 0;
    if (ok && fflush(f) != 0) { ok = 0; what = "flush"; }
    if (ok && fsync(fileno(f)) != 0) { ok = 0; what = "fsync"; }
    int e = errno;
    if (ok && fclose(f) != 0) { ok = 0; what = "close"; e = errno; }
    else if (!ok) fclose(f);
    if (ok && rename(tmp, path) != 0) { ok = 0; what = "rename"; e = errno; }
    if (!ok) {
        unlink(tmp);
        snprintf(err, errlen, "%s: cannot %s %s: %s (the file was not changed)", path, what,
                 strcmp(what, "rename") == 0 ? "the temporary file over it" : tmp,
                 e ? strerror(e) : "I/O error");
        return -1;
    }
    sync_dir_of(path);
    return 0;
}

/* ---------- append ---------- */

int csvt_open_append(const char *path, const char *const *header, size_t ncols,
                     csv_table **out, char *err, size_t errlen)
{
    return csvt_open_append_from(path, header, ncols, ncols, out, err, errlen);
}

int csvt_open_append_from(const char *path, const char *const *header, size_t ncols, size_t oldest,
                          csv_table **out, char *err, size_t errlen)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT) {
            snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
            return -1;
        }
    } else {
        csv_table *t = NULL;
        int rc = csvt_read(path, &t, err, errlen);
        if (rc != 0) return rc;
        if (t->ncols != 0 || t->nrows != 0) {
            /* this schema, or an earlier one (its first `oldest` or more columns) widened to it */
            int same = t->ncols <= ncols && t->ncols >= oldest;
            for (size_t i = 0; same && i < t->ncols; i++) same = strcmp(t->header[i], header[i]) == 0;
            if (same && csvt_widen(t, header, ncols) != 0) {
                snprintf(err, errlen, "%s: out of memory", path);
                csvt_free(t);
                return -1;
            }
            if (!same) {
                size_t o = (size_t)snprintf(err, errlen, "%s:1: the file's header (", path);
                for (size_t i = 0; i < t->ncols && o < errlen; i++)
                    o += (size_t)snprintf(err + o, errlen - o, "%s%s", i ? "," : "", t->header[i]);
                if (o < errlen) o += (size_t)snprintf(err + o, errlen - o, ") differs from the expected (");
                for (size_t i = 0; i < ncols && o < errlen; i++)
                    o += (size_t)snprintf(err + o, errlen - o, "%s%s", i ? "," : "", header[i]);
                if (o < errlen)
                    snprintf(err + o, errlen - o, "); move it aside or delete it rather than mix schemas");
                csvt_free(t);
                return 2;
            }
            *out = t;
            return 0;
        }
        csvt_free(t); /* empty file: start over */
    }
    *out = csvt_new(header, ncols);
    if (!*out) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    return 0;
}
