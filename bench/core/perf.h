/* perf.h: perf.csv, the one row format every implementation (ours and the vendors')
 * writes: schema, row construction from a verification and a timing, progress lines. */
#ifndef FABENCH_PERF_H
#define FABENCH_PERF_H

#include <stdio.h>

#include "common.h"
#include "csvio.h"
#include "refcheck.h"
#include "stats.h"
#include "telemetry.h"
#include "timing.h"

extern const char *const perf_header[];
extern const size_t perf_ncols;

typedef struct {
    const char *gpu, *backend, *impl, *config, *config_source;
    const shape_t *shape;
    dtype_t dt;
    status_t status;
    const char *reason;
    const verify_result *ver; /* NULL or rows_checked == 0: not verified */
    const stats_t *us;        /* NULL: not timed */
    const telemetry_summary *tel; /* NULL or no samples: the GPU's clocks and power not read */
    int l2_flush;             /* the device's cache was flushed before every run (--l2-flush) */
    const timing_method *how; /* NULL: how the samples were taken is not known */
} perf_row;

/* Opens perf.csv at path for appending (csvt_open_append), accepting a file written
 * before the trailing telemetry columns (`sm_mhz, power_w, temp_c, clock_events`), or also
 * before `page`, `qlens` and `lens`: its rows are widened to the current schema with those
 * fields empty.
 * 0, 2 or -1. */
int perf_open_append(const char *path, csv_table **out, char *err, size_t errlen);

/* Appends the row to t. 0 or -1 (out of memory). */
int perf_add(csv_table *t, const perf_row *r);
/* perf_add, except that with `replace` a row of the same device, runtime, implementation,
 * shape name and dtype is overwritten where it stands (`--update`). 0 or -1. */
int perf_put(csv_table *t, const perf_row *r, int replace);
/* The index of t's row of this implementation on this device for the shape (by name) and
 * dtype, or -1. */
long perf_find(const csv_table *t, const char *gpu, const char *backend, const char *impl, const char *name,
               dtype_t dt);
/* Does t already hold a row of this implementation on this device for the shape (by name)
 * and dtype? (`--resume`: a command cut short is run again and goes on where it stopped) */
int perf_has(const csv_table *t, const char *gpu, const char *backend, const char *impl, const char *name,
             dtype_t dt);
/* One progress line ("[i/n] name dtype 123.4 us 1.2 TFLOP/s ... config") on f. */
void perf_progress(FILE *f, size_t i, size_t n, const perf_row *r);

#endif
