/* fuzz_perf.c: an existing perf.csv or manifest.csv opened for appending
 * (csvt_open_append, bench/core/csvio.c) as `run --append`, `vendors --append` and
 * manifest_update do: any file is either taken (same header, all its rows) or refused
 * (2, -1) with a message, never half-read. A taken manifest gets a key set, as
 * manifest_fill does. */
#include "fuzz_common.h"

#include "common.h"
#include "csvio.h"
#include "manifest.h"
#include "perf.h"

static void open_append(const char *path, const char *const *header, size_t ncols, int manifest)
{
    csv_table *t = NULL;
    char err[FB_ERRLEN] = "";
    int rc = csvt_open_append(path, header, ncols, &t, err, sizeof err);
    if (rc != 0) {
        if (rc != 2 && rc != -1) fz_fail("csvt_open_append returned %d", rc);
        if (t) fz_fail("csvt_open_append failed (%d) but returned a table", rc);
        fz_check_err("csvt_open_append", err, sizeof err);
        return;
    }
    if (!t || t->ncols != ncols) fz_fail("csvt_open_append: a table of %zu columns for a header of %zu", t ? t->ncols : 0, ncols);
    for (size_t c = 0; c < ncols; c++)
        if (strcmp(t->header[c], header[c])) fz_fail("csvt_open_append: header '%s' taken for '%s'", t->header[c], header[c]);
    if (manifest) {
        size_t before = t->nrows;
        int had = 0;
        for (size_t r = 0; r < t->nrows; r++) had |= !strcmp(t->rows[r][0], "gpu");
        if (manifest_set(t, "gpu", "G") != 0) fz_fail("manifest_set: out of memory");
        if (t->nrows != before + (had ? 0 : 1)) fz_fail("manifest_set: %zu rows became %zu", before, t->nrows);
    }
    csvt_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const manifest_header[2] = {"key", "value"};
    const char *path = fz_input_file(data, size);
    open_append(path, perf_header, perf_ncols, 0);
    open_append(path, manifest_header, 2, 1);
    return 0;
}
