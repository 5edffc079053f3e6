/* tune_missing.h: `fabench run --tune-missing SECONDS`: a shape whose class has no row in the
 * tuning table is tuned on first sight by `fabench tune` itself (its search within --time
 * SECONDS, its head-to-head against what the run would otherwise take, explored.csv and
 * tuning.csv beside the table), then measured with the new row. */
#ifndef FABENCH_TUNE_MISSING_H
#define FABENCH_TUNE_MISSING_H

#include <stddef.h>

#include "common.h"
#include "rt.h"

/* A class this run tuned, or tried to */
typedef struct {
    char key[96];
    int rc;        /* the tune's exit status (0: it ran to its end) */
    long explored; /* the candidates its tuning.csv row counts; -1: no row came of it */
    double wall_s; /* the tune's wall time */
} tm_class;

typedef struct {
    double seconds;                  /* --tune-missing: search seconds per class (tune --time) */
    const char *device;              /* the run's --device, as given */
    const char *shapes_file, *suite; /* the run's shapes: tune takes the same list */
    int have_dtype;
    dtype_t dtype;
    const char *table; /* the tuning table: DIR/tuning.csv */
    int quiet;
    tm_class *v;
    size_t n, cap;
} tune_missing;

/* The tuning table the run reads and --tune-missing writes: --tuning's FILE (given, may not
 * exist yet), else the default results/<gpu-slug>/tuning.csv where it exists, else
 * tuning.csv beside out. Into path. */
void tune_missing_table(const char *given, const char *dflt, const char *out, char *path, size_t len);

/* The explored.csv beside the table (tune's, which it appends to), into path. */
void tune_missing_explored(const char *table, char *path, size_t len);

/* Before any work: the table is some folder's tuning.csv (tune writes DIR/tuning.csv and
 * DIR/explored.csv, nothing else), that folder can be written, and tune would accept its
 * files (tune_results_check). 0, or 2 with err. */
int tune_missing_check(const tune_missing *tm, const rt_device *dev, char *err, size_t errlen);

/* Before shape s (of dtype dt) is measured: when its class has no row of this GPU and runtime
 * in the table and this run has not tried it yet, `fabench tune --class KEY --time SECONDS
 * --merge` on the run's shapes (the same representative shape, isolation, head-to-head and
 * files as that command). note: what the shape's config_source adds, when its class was
 * tuned (or tried) in this run, e.g. " (tuned on first sight, 12 candidates, 5.1 s)"; empty
 * otherwise. Returns 0; 130 when the tune was interrupted (SIGINT: stop the run; the
 * tables are whole, the class has no row). */
int tune_missing_visit(tune_missing *tm, const rt_device *dev, const shape_t *s, dtype_t dt, char *note, size_t notelen);

/* note put into a config_source: right after "tuned KEY" where it begins so, else at its end */
void tune_missing_annotate(char *source, size_t len, const char *key, const char *note);

/* 1: the table has no row for s's class on this device (a shape the run will tune) */
int tune_missing_lacks(const tune_missing *tm, const rt_device *dev, const shape_t *s, dtype_t dt);

void tune_missing_free(tune_missing *tm);

#endif
