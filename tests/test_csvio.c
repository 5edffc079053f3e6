/* test_csvio.c: csvio round trips, atomic writes, append schema checks, line numbers. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_skip.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "csvio.h"

static char tmpdir[512];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "%s/fabench-csvio-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", tmpdir, tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void path_in(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", tmpdir, name);
}

static void write_raw(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static char *slurp(const char *path)
{
    char err[FB_ERRLEN], *d = NULL;
    assert_int_equal(fb_read_file(path, &d, NULL, err, sizeof err), 0);
    return d;
}

/* Number of entries in dir whose name contains needle. */
static int count_entries(const char *dir, const char *needle)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, needle)) n++;
    closedir(d);
    return n;
}

static void test_new_add_col(void **state)
{
    (void)state;
    const char *h[] = {"x", "y"};
    csv_table *t = csvt_new(h, 2);
    assert_non_null(t);
    assert_int_equal(t->ncols, 2);
    assert_int_equal(t->nrows, 0);
    assert_int_equal(csvt_col(t, "y"), 1);
    assert_int_equal(csvt_col(t, "x"), 0);
    assert_int_equal(csvt_col(t, "z"), -1);
    char buf[16];
    for (int i = 0; i < 100; i++) {
        snprintf(buf, sizeof buf, "%d", i);
        const char *r[] = {buf, "v"};
        assert_int_equal(csvt_add(t, r), 0);
    }
    assert_int_equal(t->nrows, 100);
    assert_string_equal(t->rows[57][0], "57");
    assert_string_equal(t->rows[99][1], "v");
    assert_int_equal(t->row_line[3], 0);
    /* a row replaced where it stands; a row past the end is refused */
    const char *r57[] = {"fifty-seven", ""};
    assert_int_equal(csvt_replace(t, 57, r57), 0);
    assert_int_equal(t->nrows, 100);
    assert_string_equal(t->rows[57][0], "fifty-seven");
    assert_string_equal(t->rows[57][1], "");
    assert_string_equal(t->rows[58][0], "58");
    assert_int_equal(csvt_replace(t, 100, r57), -1);
    assert_int_equal(csvt_set(t, 58, 1, "w"), 0);
    assert_string_equal(t->rows[58][1], "w");
    assert_string_equal(t->rows[58][0], "58");
    assert_int_equal(csvt_set(t, 58, 2, "x"), -1);
    csvt_free(t);
}

static void test_round_trip(void **state)
{
    (void)state;
    const char *h[] = {"name", "note", "n"};
    const char *rows[][3] = {
        {"plain", "a,b,c", "1"},
        {"quote", "say \"hi\"", ""},
        {"newline", "line1\nline2", "3"},
        {"", "", ""},
        {"  lead", "trail\t", " both "},
        {"crlf", "x\r\ny", "\"\""},
        {"utf8 \xc3\xa9", "tab\there", "-0.5e3"},
    };
    size_t nr = sizeof rows / sizeof rows[0];
    csv_table *t = csvt_new(h, 3);
    assert_non_null(t);
    for (size_t i = 0; i < nr; i++) assert_int_equal(csvt_add(t, rows[i]), 0);

    char path[PATH_MAX], err[FB_ERRLEN];
    path_in(path, sizeof path, "rt.csv");
    assert_int_equal(csvt_write_atomic(t, path, err, sizeof err), 0);
    csvt_free(t);
    assert_int_equal(count_entries(tmpdir, ".tmp."), 0);

    /* Plain fields stay bare (gnuplot reads them as numbers); others are quoted. */
    char *raw = slurp(path);
    assert_non_null(strstr(raw, "name,note,n\nplain,\"a,b,c\",1\n"));
    assert_non_null(strstr(raw, "\"say \"\"hi\"\"\""));
    free(raw);

    csv_table *r = NULL;
    assert_int_equal(csvt_read(path, &r, err, sizeof err), 0);
    assert_int_equal(r->ncols, 3);
    assert_string_equal(r->header[0], "name");
    assert_string_equal(r->header[2], "n");
    assert_int_equal(r->nrows, nr);
    for (size_t i = 0; i < nr; i++)
        for (size_t c = 0; c < 3; c++) assert_string_equal(r->rows[i][c], rows[i][c]);
    /* header 1, plain 2, quote 3, newline 4-5, empty 6, lead 7, crlf 8-9, utf8 10 */
    int lines[] = {2, 3, 4, 6, 7, 8, 10};
    for (size_t i = 0; i < nr; i++) assert_int_equal(r->row_line[i], lines[i]);
    csvt_free(r);
}

static void test_single_empty_column(void **state)
{
    (void)state;
    const char *h[] = {"only"};
    const char *e[] = {""}, *x[] = {"x"};
    csv_table *t = csvt_new(h, 1);
    assert_int_equal(csvt_add(t, e), 0);
    assert_int_equal(csvt_add(t, x), 0);
    assert_int_equal(csvt_add(t, e), 0);
    char path[PATH_MAX], err[FB_ERRLEN];
    path_in(path, sizeof path, "one.csv");
    assert_int_equal(csvt_write_atomic(t, path, err, sizeof err), 0);
    csvt_free(t);
    csv_table *r = NULL;
    assert_int_equal(csvt_read(path, &r, err, sizeof err), 0);
    assert_int_equal(r->nrows, 3);
    assert_string_equal(r->rows[0][0], "");
    assert_string_equal(r->rows[1][0], "x");
    assert_string_equal(r->rows[2][0], "");
    csvt_free(r);
}

static void test_overwrite_replaces(void **state)
{
    (void)state;
    char path[PATH_MAX], err[FB_ERRLEN];
    path_in(path, sizeof path, "over.csv");
    write_raw(path, "old,stuff\n1,2\n3,4\n5,6\n", 23);
    const char *h[] = {"a"}, *v[] = {"new"};
    csv_table *t = csvt_new(h, 1);
    csvt_add(t, v);
    assert_int_equal(csvt_write_atomic(t, path, err, sizeof err), 0);
    csvt_free(t);
    char *raw = slurp(path);
    assert_string_equal(raw, "a\nnew\n");
    free(raw);
}

static void test_atomic_missing_dir(void **state)
{
    (void)state;
    char path[PATH_MAX], err[FB_ERRLEN] = "";
    path_in(path, sizeof path, "no/such/dir/out.csv");
    const char *h[] = {"a"};
    csv_table *t = csvt_new(h, 1);
    assert_int_equal(csvt_write_atomic(t, path, err, sizeof err), -1);
    csvt_free(t);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, strerror(ENOENT)));
    assert_int_equal(count_entries(tmpdir, ".tmp."), 0);
}

/* rename() onto a directory fails after the temp file was written: it must be removed. */
static void test_atomic_rename_fails(void **state)
{
    (void)state;
    char path[PATH_MAX], err[FB_ERRLEN] = "";
    path_in(path, sizeof path, "isdir.csv");
    assert_int_equal(mkdir(path, 0755), 0);
    const char *h[] = {"a"}, *v[] = {"1"};
    csv_table *t = csvt_new(h, 1);
    csvt_add(t, v);
    assert_int_equal(csvt_write_atomic(t, path, err, sizeof err), -1);
    csvt_free(t);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "rename"));
    assert_int_equal(count_entries(tmpdir, ".tmp."), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    rmdir(path);
}

/* A write that fails part way (file size limit, works even as root) leaves the old file. */
static void test_atomic_write_fails_keeps_target(void **state)
{
    (void)state;
    char path[PATH_MAX], err[FB_ERRLEN] = "";
    path_in(path, sizeof path, "keep.csv");
    write_raw(path, "a,b\nold,1\n", 10);

    const char *h[] = {"a", "b"};
    csv_table *t = csvt_new(h, 2);
    char big[1000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = 0;
    for (int i = 0; i < 200; i++) {
        const char *r[] = {big, "x"};
        csvt_add(t, r);
    }
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 4096;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = csvt_write_atomic(t, path, err, sizeof err);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, prev);
    csvt_free(t);

    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, strerror(EFBIG)));
    assert_int_equal(count_entries(tmpdir, ".tmp."), 0);
    char *raw = slurp(path);
    assert_string_equal(raw, "a,b\nold,1\n");
    free(raw);
}

static void test_atomic_readonly_dir(void **state)
{
    (void)state;
    if (geteuid() == 0) /* the tests above cover failures */
        SKIP_BECAUSE("running as root, which writes into a read-only folder anyway");
    char dir[PATH_MAX], path[PATH_MAX + 16], err[FB_ERRLEN] = "";
    path_in(dir, sizeof dir, "ro");
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/t.csv", dir);
    write_raw(path, "a\nold\n", 6);
    assert_int_equal(chmod(dir, 0555), 0);
    const char *h[] = {"a"};
    csv_table *t = csvt_new(h, 1);
    int rc = csvt_write_atomic(t, path, err, sizeof err);
    chmod(dir, 0755);
    csvt_free(t);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, strerror(EACCES)));
    char *raw = slurp(path);
    assert_string_equal(raw, "a\nold\n");
    free(raw);
    assert_int_equal(count_entries(dir, ".tmp."), 0);
}

static void test_open_append(void **state)
{
    (void)state;
    char path[PATH_MAX], err[FB_ERRLEN] = "";
    path_in(path, sizeof path, "app.csv");
    const char *h[] = {"gpu", "us"};
    csv_table *t = NULL;

    /* missing file: a new table */
    assert_int_equal(csvt_open_append(path, h, 2, &t, err, sizeof err), 0);
    assert_int_equal(t->ncols, 2);
    assert_int_equal(t->nrows, 0);
    const char *r1[] = {"h100", "12.5"};
    csvt_add(t, r1);
    assert_int_equal(csvt_write_atomic(t, path, err, sizeof err), 0);
    csvt_free(t);

    /* same header: rows come back and more can be added */
    assert_int_equal(csvt_open_append(path, h, 2, &t, err, sizeof err), 0);
    assert_int_equal(t->nrows, 1);
    assert_string_equal(t->rows[0][1], "12.5");
    const char *r2[] = {"mi300x", "9"};
    csvt_add(t, r2);
    assert_int_equal(csvt_write_atomic(t, path, err, sizeof err), 0);
    csvt_free(t);
    assert_int_equal(csvt_open_append(path, h, 2, &t, err, sizeof err), 0);
    assert_int_equal(t->nrows, 2);
    assert_string_equal(t->rows[1][0], "mi300x");
    csvt_free(t);

    /* other names, other order, other count: 2 and the file untouched */
    const char *other[] = {"gpu", "ms"}, *swapped[] = {"us", "gpu"}, *more[] = {"gpu", "us", "x"};
    t = (csv_table *)1;
    assert_int_equal(csvt_open_append(path, other, 2, &t, err, sizeof err), 2);
    assert_null(t);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "gpu,us"));
    assert_int_equal(csvt_open_append(path, swapped, 2, &t, err, sizeof err), 2);
    assert_int_equal(csvt_open_append(path, more, 3, &t, err, sizeof err), 2);
    char *raw = slurp(path);
    assert_string_equal(raw, "gpu,us\nh100,12.5\nmi300x,9\n");
    free(raw);

    /* an empty existing file is a fresh start */
    char empty[PATH_MAX];
    path_in(empty, sizeof empty, "empty-app.csv");
    write_raw(empty, "", 0);
    assert_int_equal(csvt_open_append(empty, h, 2, &t, err, sizeof err), 0);
    assert_int_equal(t->ncols, 2);
    assert_string_equal(t->header[1], "us");
    csvt_free(t);
}

static void test_wrong_field_count(void **state)
{
    (void)state;
    char path[PATH_MAX], err[FB_ERRLEN] = "";
    path_in(path, sizeof path, "count.csv");
    const char *d = "a,b\n1,2\n\n\"multi\nline\",3\n\n4\n5,6\n";
    write_raw(path, d, strlen(d));
    csv_table *t = (csv_table *)1;
    assert_int_equal(csvt_read(path, &t, err, sizeof err), 2);
    assert_null(t);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof want, "%s:7: expected 2 fields, found 1", path);
    assert_string_equal(err, want);

    d = "a,b\n1,2,3\n";
    write_raw(path, d, strlen(d));
    assert_int_equal(csvt_read(path, &t, err, sizeof err), 2);
    snprintf(want, sizeof want, "%s:2: expected 2 fields, found 3", path);
    assert_string_equal(err, want);
}

static void test_crlf_bom_blank_lines(void **state)
{
    (void)state;
    char path[PATH_MAX], err[FB_ERRLEN] = "";
    path_in(path, sizeof path, "crlf.csv");
    const char *d = "\xEF\xBB\xBF" "a,b\r\n\r\n1,2\r\n   \r\n\r\n3,\"x\r\ny\"\r\n4,5";
    write_raw(path, d, strlen(d));
    csv_table *t = NULL;
    assert_int_equal(csvt_read(path, &t, err, sizeof err), 0);
    assert_int_equal(t->ncols, 2);
    assert_string_equal(t->header[0], "a");
    assert_string_equal(t->header[1], "b");
    assert_int_equal(t->nrows, 3);
    assert_string_equal(t->rows[0][0], "1");
    assert_string_equal(t->rows[0][1], "2");
    assert_string_equal(t->rows[1][1], "x\r\ny");
    assert_string_equal(t->rows[2][1], "5");
    assert_int_equal(t->row_line[0], 3);
    assert_int_equal(t->row_line[1], 6);
    assert_int_equal(t->row_line[2], 8);
    assert_int_equal(csvt_col(t, "a"), 0);
    csvt_free(t);
}

static void test_leading_blank_lines_and_trim(void **state)
{
    (void)state;
    char path[PATH_MAX], err[FB_ERRLEN] = "";
    path_in(path, sizeof path, "trim.csv");
    const char *d = "\n\nname , value\n  a  ,\" b \"\n";
    write_raw(path, d, strlen(d));
    csv_table *t = NULL;
    assert_int_equal(csvt_read(path, &t, err, sizeof err), 0);
    assert_string_equal(t->header[0], "name");
    assert_string_equal(t->header[1], "value");
    assert_string_equal(t->rows[0][0], "a");
    assert_string_equal(t->rows[0][1], " b ");
    assert_int_equal(t->row_line[0], 4);
    csvt_free(t);
}

/* A record's line is where it starts, even when its first field spans lines. */
static void test_multiline_first_field(void **state)
{
    (void)state;
    char path[PATH_MAX], err[FB_ERRLEN] = "";
    path_in(path, sizeof path, "multi.csv");
    const char *d = "a,b\n\"one\ntwo\nthree\",1\n\n4,\"x\ny\"\n\"\n\",z\n";
    write_raw(path, d, strlen(d));
    csv_table *t = NULL;
    assert_int_equal(csvt_read(path, &t, err, sizeof err), 0);
    assert_int_equal(t->nrows, 3);
    assert_string_equal(t->rows[0][0], "one\ntwo\nthree");
    assert_string_equal(t->rows[1][1], "x\ny");
    assert_string_equal(t->rows[2][0], "\n");
    assert_int_equal(t->row_line[0], 2);
    assert_int_equal(t->row_line[1], 6);
    assert_int_equal(t->row_line[2], 8);
    csvt_free(t);
}

static void test_malformed(void **state)
{
    (void)state;
    char path[PATH_MAX], err[FB_ERRLEN] = "", want[PATH_MAX + 16];
    csv_table *t = NULL;
    path_in(path, sizeof path, "bad.csv");

    const char *d = "a,b\n1,2\n3,\"x\"y\n";
    write_raw(path, d, strlen(d));
    assert_int_equal(csvt_read(path, &t, err, sizeof err), 2);
    snprintf(want, sizeof want, "%s:3:", path);
    assert_non_null(strstr(err, want));

    d = "a,b\n1,x\"y\n";
    write_raw(path, d, strlen(d));
    assert_int_equal(csvt_read(path, &t, err, sizeof err), 2);
    snprintf(want, sizeof want, "%s:2:", path);
    assert_non_null(strstr(err, want));

    d = "a,b\n1,2\n3,\"never closed\n4,5\n";
    write_raw(path, d, strlen(d));
    assert_int_equal(csvt_read(path, &t, err, sizeof err), 2);
    snprintf(want, sizeof want, "%s:3:", path);
    assert_non_null(strstr(err, want));
    assert_non_null(strstr(err, "not closed"));

    /* the open quote starts a record's first field, after a blank line: that record's line */
    d = "a,b\n1,2\n\n\"never closed,3\n4,5\n";
    write_raw(path, d, strlen(d));
    assert_int_equal(csvt_read(path, &t, err, sizeof err), 2);
    snprintf(want, sizeof want, "%s:4:", path);
    assert_non_null(strstr(err, want));

    /* a NUL byte would end a field unseen: refused, naming its line */
    write_raw(path, "a,b\n1,2\n3\0009,4\n", 13);
    assert_int_equal(csvt_read(path, &t, err, sizeof err), 2);
    snprintf(want, sizeof want, "%s:3: a NUL byte", path);
    assert_non_null(strstr(err, want));

    /* bare CR line ends count as lines */
    d = "a,b\r1,2\r3,4,5\r";
    write_raw(path, d, strlen(d));
    assert_int_equal(csvt_read(path, &t, err, sizeof err), 2);
    snprintf(want, sizeof want, "%s:3:", path);
    assert_non_null(strstr(err, want));
}

static void test_empty_and_missing(void **state)
{
    (void)state;
    char path[PATH_MAX], err[FB_ERRLEN] = "";
    csv_table *t = NULL;
    path_in(path, sizeof path, "empty.csv");
    write_raw(path, "\n\n", 2);
    assert_int_equal(csvt_read(path, &t, err, sizeof err), 0);
    assert_int_equal(t->ncols, 0);
    assert_int_equal(t->nrows, 0);
    csvt_free(t);

    path_in(path, sizeof path, "absent.csv");
    assert_int_equal(csvt_read(path, &t, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, strerror(ENOENT)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_add_col),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_single_empty_column),
        cmocka_unit_test(test_overwrite_replaces),
        cmocka_unit_test(test_atomic_missing_dir),
        cmocka_unit_test(test_atomic_rename_fails),
        cmocka_unit_test(test_atomic_write_fails_keeps_target),
        cmocka_unit_test(test_atomic_readonly_dir),
        cmocka_unit_test(test_open_append),
        cmocka_unit_test(test_wrong_field_count),
        cmocka_unit_test(test_crlf_bom_blank_lines),
        cmocka_unit_test(test_leading_blank_lines_and_trim),
        cmocka_unit_test(test_multiline_first_field),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_empty_and_missing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
