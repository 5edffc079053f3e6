/* fuzz_csv.c: the CSV reader and writer (bench/core/csvio.c, libcsv underneath). Any input
 * reads as a table or as an error (0, 2 or -1) without a crash or a leak; a table that
 * reads is written back with csvt_write_atomic and read again, and the second table must
 * equal the first, field for field: the writer quotes exactly what the reader would
 * otherwise change. A difference aborts (a real round-trip bug). */
#include "fuzz_common.h"

#include "common.h"
#include "csvio.h"

static void check_table(const char *what, const csv_table *t)
{
    if (!t) fz_fail("%s: success without a table", what);
    if (t->ncols == 0 && t->nrows != 0) fz_fail("%s: %zu rows without columns", what, t->nrows);
    for (size_t c = 0; c < t->ncols; c++)
        if (!t->header[c]) fz_fail("%s: header field %zu is NULL", what, c);
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++)
            if (!t->rows[r][c]) fz_fail("%s: row %zu field %zu is NULL", what, r, c);
        if (t->row_line[r] < 1) fz_fail("%s: row %zu has line %d", what, r, t->row_line[r]);
        if (r && t->row_line[r] < t->row_line[r - 1])
            fz_fail("%s: row %zu is on line %d, before the previous row's line %d", what, r, t->row_line[r],
                    t->row_line[r - 1]);
    }
}

static void same_tables(const csv_table *a, const csv_table *b)
{
    if (a->ncols != b->ncols) fz_fail("round trip: %zu columns became %zu", a->ncols, b->ncols);
    for (size_t c = 0; c < a->ncols; c++)
        if (strcmp(a->header[c], b->header[c]))
            fz_fail("round trip: header field %zu '%s' became '%s'", c, a->header[c], b->header[c]);
    if (a->nrows != b->nrows) fz_fail("round trip: %zu rows became %zu", a->nrows, b->nrows);
    for (size_t r = 0; r < a->nrows; r++)
        for (size_t c = 0; c < a->ncols; c++)
            if (strcmp(a->rows[r][c], b->rows[r][c]))
                fz_fail("round trip: row %zu field %zu '%s' became '%s'", r, c, a->rows[r][c], b->rows[r][c]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char out[700];
    if (!out[0]) fz_path("roundtrip.csv", out, sizeof out);
    const char *path = fz_input_file(data, size);
    char err[FB_ERRLEN] = "";
    csv_table *t = NULL;
    int rc = csvt_read(path, &t, err, sizeof err);
    if (rc != 0) {
        if (rc != 2 && rc != -1) fz_fail("csvt_read returned %d", rc);
        if (t) fz_fail("csvt_read failed (%d) but returned a table", rc);
        fz_check_err("csvt_read", err, sizeof err);
        return 0;
    }
    check_table("csvt_read", t);
    if (csvt_write_atomic(t, out, err, sizeof err) != 0) fz_fail("csvt_write_atomic: %s", err);
    csv_table *back = NULL;
    rc = csvt_read(out, &back, err, sizeof err);
    if (rc != 0) fz_fail("round trip: the written file does not read back (%d): %s", rc, err);
    check_table("csvt_read (round trip)", back);
    same_tables(t, back);
    csvt_free(back);
    csvt_free(t);
    return 0;
}
