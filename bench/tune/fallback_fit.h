/* fallback_fit.h: `fabench fit-fallback`: the rules of fallback.csv fitted to one GPU's
 * explored.csv (a small decision tree per regime over the shape's features, each leaf the
 * configuration that did best over its classes), and their leave-one-class-out check. */
#ifndef FABENCH_FALLBACK_FIT_H
#define FABENCH_FALLBACK_FIT_H

#include <stddef.h>

#include "csvio.h"
#include "fallback.h"

/* Candidates: each class lends its configurations within FIT_POOL_MARGIN of its winner (at
 * most FIT_POOL_MAX, fastest first); a decode-like class lends each with SPLIT_KV left to
 * kconfig_complete, with its own split as a fill target, and with the fill targets of
 * fit_fill_grid. The tree: a split must leave FIT_MIN_LEAF classes on each side and lower
 * the summed cost by more than FIT_MIN_GAIN (a class's cost: the log of the candidate's time
 * over its winner's; FIT_COST_UNTIMED where the candidate was never timed in it,
 * FIT_COST_UNFIT where kconfig_check refuses it there); at most FIT_MAX_DEPTH splits deep. */
#define FIT_POOL_MARGIN 0.15
#define FIT_POOL_MAX 16
#define FIT_MIN_LEAF 2
#define FIT_MAX_DEPTH 4
#define FIT_MIN_GAIN 0.05
#define FIT_COST_UNTIMED 0.2231435513142098 /* log 1.25 */
#define FIT_COST_UNFIT 0.6931471805599453   /* log 2 */
#define FIT_WITHIN 1.10                     /* "within 10% of the winner" */

typedef struct fit_set fit_set;

/* One GPU's and runtime's classes from a results folder: dir/tuning.csv, dir/explored.csv
 * (its ok rows: each class's times) and dir/manifest.csv (the device: BACKEND.arch and
 * BACKEND.compute_units, read as codegen_target_info describes the architecture). gpu NULL:
 * the manifest's. Each class's shape is found by its explored rows' shape name in the
 * suites and in shape_files[0..nfiles). 0; 2 with err (bad or missing input). */
int fit_load(const char *dir, const char *gpu, const char *backend, const char *const *shape_files, size_t nfiles,
             fit_set **out, char *err, size_t errlen);
void fit_free(fit_set *fs);
const char *fit_gpu(const fit_set *fs);
const char *fit_backend(const fit_set *fs);
const rt_device_info *fit_device(const fit_set *fs);
/* Classes read, those evaluated (live: the key its shape gets today), those left out (no
 * shape of that name, or a shape whose key disagrees), and the candidates. */
void fit_counts(const fit_set *fs, size_t *classes, size_t *live, size_t *skipped, size_t *candidates);

/* How many training classes' winners no candidate makes again for them exactly (the
 * configuration text a rule holds, made for the class's shape, is not the row it came from:
 * 0 unless fallback_instantiate and the tuner disagree); first: the first such class. */
size_t fit_unreproduced(const fit_set *fs, char *first, size_t len);

/* The rules over every class (fallback.csv's rows for this GPU and runtime), numbered from 1. */
int fit_rules(const fit_set *fs, fb_rules *out);

/* Leave one class out: for each live class, the rules fitted on the other classes (none of
 * the same shape) pick its configuration; so does the lookup before them (tune_lookup_nearest
 * over tuning.csv without those classes) and the regime's default; each is looked up among
 * the class's explored times. Appends one row per class to rows (fit_loo_header) and one row
 * per (regime, method) and the totals to summary (fit_loo_summary_header). 0 or -1. */
extern const char *const fit_loo_header[];
extern const size_t fit_loo_ncols;
extern const char *const fit_loo_summary_header[];
extern const size_t fit_loo_summary_ncols;
int fit_loo(const fit_set *fs, csv_table *rows, csv_table *summary);

int cmd_fit_fallback(int argc, char **argv);

#endif
