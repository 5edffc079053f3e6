/* shapes.h: shape files (CSV: name,batch,hq,hkv,sq,skv,d,causal[,dtype][,lens][,qlens][,page]) and the named
 * suites in bench/suites/. Everything is validated before any work starts. */
#ifndef FABENCH_SHAPES_H
#define FABENCH_SHAPES_H

#include "common.h"

/* Loads and validates a shape file. Required columns, in any order: name, batch, hq,
 * hkv, sq, skv, d, causal; optional: dtype, lens (a ragged batch: per-sequence lengths as
 * fractions in (0, 1] of sq and skv, ';'-separated, repeated over the batch, at most
 * FB_MAX_LENS; empty: every sequence full length; see shape_t). Unknown extra columns are an error too
 * (a typo must not be silently ignored). Checks: integers in range (1 .. 2^31-1; batch,
 * heads and lengths >= 1), d in fb_supported_d, hq a multiple of hkv, causal in
 * {0,1,true,false}, dtype known, name non-empty, at least one row.
 * Errors read "PATH:LINE: field 'hq': 12 is not a multiple of hkv=5" (the header's line
 * for a missing column). Returns 0, 2 (bad input) or -1 (I/O); err filled on failure. */
int shapes_load(const char *path, shape_list_t *out, char *err, size_t errlen);

/* Loads bench/suites/NAME.csv under the project root (fb_root). An unknown name is an
 * error listing the suites that exist. Returns as shapes_load. */
int shapes_load_suite(const char *name, shape_list_t *out, char *err, size_t errlen);

/* The dtype a shape runs in: a command's --dtype (have_override), else the shape's own, else
 * bf16 */
dtype_t shapes_dtype(const shape_t *s, int have_override, dtype_t override);

/* The shapes a command's --shapes FILE or --suite NAME names: the file where one is given,
 * else the suite. Returns as shapes_load. */
int shapes_load_file_or_suite(const char *file, const char *suite, shape_list_t *out, char *err, size_t errlen);

/* Writes the names of the available suites, comma separated, into out. */
void shapes_list_suites(char *out, size_t outlen);

void shapes_free(shape_list_t *l);

/* Parses a `lens` field ("0.1;0.4;1") into s->lens and s->nlens ("" gives nlens 0).
 * 0, or 2 with err "PATH:LINE: field 'lens': ...". */
int shapes_parse_lens(const char *path, int line, const char *text, shape_t *s, char *err, size_t errlen);
/* The same for a `qlens` field (a mixed batch's query lengths) into s->qlens, s->nqlens. */
int shapes_parse_qlens(const char *path, int line, const char *text, shape_t *s, char *err, size_t errlen);

#endif
