/* csvio.h: CSV tables in memory, read and written only through libcsv. Writes are
 * atomic (temp file in the same folder, fsync, rename), so no reader ever sees half a file. */
#ifndef FABENCH_CSVIO_H
#define FABENCH_CSVIO_H

#include <stddef.h>

typedef struct {
    size_t ncols;
    char **header;      /* ncols names */
    size_t nrows;
    char ***rows;       /* nrows rows of ncols NUL-terminated strings (never NULL) */
    int *row_line;      /* 1-based line number of each row in the file it came from (0 if built) */
    size_t cap;
} csv_table;

/* An empty table with the given header. Returns NULL when out of memory. */
csv_table *csvt_new(const char *const *header, size_t ncols);
/* Appends a row of exactly ncols fields (copied). 0 or -1 (out of memory). */
int csvt_add(csv_table *t, const char *const *fields);
/* Replaces row r's fields with copies of exactly ncols fields (nothing changes when out of
 * memory). 0 or -1. */
int csvt_replace(csv_table *t, size_t r, const char *const *fields);
/* Gives a table whose header is the first columns of header the rest of them, empty in
 * every row (a file of an older schema read into the current one). 0, or -1 when its header
 * is not such a beginning or memory ran out (t unchanged). */
int csvt_widen(csv_table *t, const char *const *header, size_t ncols);
/* Removes row r (the rows after it move up). 0, or -1 when there is no row r. */
int csvt_remove(csv_table *t, size_t r);
/* Replaces field c of row r with a copy of v (nothing changes when out of memory). 0 or -1. */
int csvt_set(csv_table *t, size_t r, size_t c, const char *v);
/* Column index of a header name, or -1. */
int csvt_col(const csv_table *t, const char *name);
void csvt_free(csv_table *t);

/* Parses a CSV file with libcsv. The first record is the header. Blank lines are skipped.
 * A row with a different number of fields than the header is an error
 * "PATH:LINE: expected N fields, found M". Returns 0, or 2 (bad input, err filled) or
 * -1 (I/O error, err filled). */
int csvt_read(const char *path, csv_table **out, char *err, size_t errlen);

/* Writes the whole table to PATH atomically: PATH.tmp.<pid> in the same folder, fflush,
 * fsync, rename. Fields are quoted by libcsv (csv_fwrite) where needed. On failure the
 * temp file is removed, PATH is untouched and err says why. Returns 0 or -1. */
int csvt_write_atomic(const csv_table *t, const char *path, char *err, size_t errlen);

/* Loads PATH if it exists and has the same header (same names, same order), else starts
 * a new table with that header. A file with a different header is an error (returns 2):
 * appending rows of another schema would corrupt it. Returns 0, 2 or -1. */
int csvt_open_append(const char *path, const char *const *header, size_t ncols,
                     csv_table **out, char *err, size_t errlen);
/* csvt_open_append that also takes a file of an earlier schema, one whose header is the
 * first `oldest` or more of these columns: read into this one (csvt_widen). */
int csvt_open_append_from(const char *path, const char *const *header, size_t ncols, size_t oldest,
                          csv_table **out, char *err, size_t errlen);

#endif
