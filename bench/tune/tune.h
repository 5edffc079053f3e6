/* tune.h: the autotuner: shape classes, the search over kernels/space.csv with every
 * candidate verified before it is timed, explored.csv and tuning.csv, and the lookup that
 * `run --tuned` uses (the class's row, else fallback.csv's rule, else the regime's default). */
#ifndef FABENCH_TUNE_H
#define FABENCH_TUNE_H

#include "common.h"
#include "config.h"
#include "csvio.h"
#include "rt.h"

/* The class a shape is tuned for, e.g. "bf16-d128-c1-g4-q4096-k4096": dtype, head dim,
 * causal, GQA ratio, and Sq, Skv rounded up to powers of two. */
/* Decode classes (Sq rounded up at most this) also key on B * Hkv: "-w<pow2>". */
#define TUNE_DECODE_MAX_SQ 16
/* Dense prefill classes with at most this many query rows in all (B * Hq * Sq rounded up:
 * 256 blocks of 128 rows, two waves of a 132-SM GPU or less) also key on B * Hq, "-w<pow2>":
 * there too the grid's fill decides the winner, and B = 1 S = 1024 no longer takes the
 * row tuned at B = 4. */
#define TUNE_PREFILL_SMALL_ROWS 32768L
/* Ragged or mixed batches (lens or qlens) end in "-v<share>": the percentage of their
 * sequences with at most TUNE_DECODE_MAX_SQ queries, to the nearest 25. */
void tune_class_key(const shape_t *s, dtype_t dt, char *out, size_t len);
/* A class key parsed back (the one parser: tune and check-results): dtype, head dim,
 * causality, GQA ratio, Q and K rounded up to powers of two; w the work bucket (0: none),
 * v the decode share of a ragged batch (-1: dense), p the page size (0: dense K, V). */
typedef struct { dtype_t dt; int d, c, g, q, k, w, v, p; } tune_class;
/* 0 and *out filled, or -1: not a key tune_class_key can write (an unknown dtype, an
 * unsupported head dim, Q or K not a power of two, a bucket or page size out of range). */
int tune_class_parse(const char *key, tune_class *out);
int tune_decode_share(const shape_t *s);

/* The configuration `run --tuned` takes for a shape on this device from a tuning table
 * (tuning.csv): the row of its class for this GPU and runtime ("tuned <class>"), else the
 * rule of fallback.csv beside the table for the shape's regime and features ("rule N of
 * fallback.csv (REGIME: CONDITIONS)"), else the regime's default ("default for REGIME
 * (WHY)"; also without a table): fallback.h. Fills cfg and source and returns 1; 2 for a
 * malformed tuning table or fallback.csv (err says where). */
int tune_lookup(const char *table_path, const rt_device *dev, const shape_t *s, dtype_t dt, kconfig *cfg,
                char *source, size_t srclen, char *err, size_t errlen);

/* The lookup `run --tuned` made before fallback.csv, on a table in memory: the class's row,
 * else the nearest class of the same dtype, head dim and causality (tune_class_distance; its
 * SPLIT_KV and PACK_GQA left to kconfig_complete), skipping rows of the classes skip[0..nskip)
 * names. 1 with cfg and source ("tuned <class>" or "nearest <class>"), 0 when there is none
 * (the runtime's default). `fit-fallback --loo` sets the fitted rules beside it. */
int tune_lookup_nearest(const csv_table *t, const char *gpu, const char *backend, const shape_t *s, dtype_t dt,
                        const char *const *skip, size_t nskip, kconfig *cfg, char *source, size_t srclen);

/* How many classes the tuning table at path holds for this device's GPU and runtime; -1 when
 * it cannot be read (absent). */
long tune_table_classes(const char *path, const rt_device *dev);

/* The configs_explored of class key's row in the tuning table at path for this device's GPU
 * and runtime (0 when the column is empty); -1 when the table has no such row or cannot be
 * read. */
long tune_table_explored(const char *path, const rt_device *dev, const char *key);

/* What `fabench tune --results DIR` would refuse before writing anything, checked without
 * writing: a manifest of another GPU, an explored.csv or tuning.csv of another schema, a
 * malformed fallback.csv. 0, or 2 with err naming the file (absent files are fine). */
int tune_results_check(const char *dir, const rt_device *dev, char *err, size_t errlen);

/* The row of a tuning table (tuned on this machine or another) for any GPU and runtime the
 * table names: the class's, else the nearest class's (tune_lookup_nearest; `fabench
 * portability` takes only the class's own). 1 with cfg and source, 0 when the table has
 * nothing usable (source says why), 2 for a malformed table. */
int tune_lookup_for(const char *table_path, const char *gpu, const char *backend, const shape_t *s, dtype_t dt,
                    kconfig *cfg, char *source, size_t srclen, char *err, size_t errlen);

/* How far a tuning row of class row stands from class key as a source of its
 * configuration: 0 for the same class; INFINITY when either does not parse or the head dim
 * or page size differ; otherwise the log2 distances of Sq, Skv, the GQA ratio and the
 * decode work bucket, plus the decode-share gap of ragged batches, plus dtype_cost for
 * another dtype and causal_cost for the other causality (INFINITY: never). */
double tune_class_distance(const char *row, const char *key, double dtype_cost, double causal_cost);

/* The classes that lend a local climb of class key their winners: the indices of the up
 * to TUNE_LOCAL_BORROW entries of keys[0..n) nearest to it (tune_class_distance with the
 * borrowing costs; NULL entries and key itself skipped), nearest first, into out; returns
 * how many. */
int tune_borrow_classes(const char *key, const char *const *keys, size_t n, size_t *out);

/* --strategy local: besides the class's own row, the winners of this many nearest other
 * classes seed the climb (a class tuned poorly, or not at all, starts where a neighbour
 * ended); another dtype counts this much farther */
#define TUNE_LOCAL_BORROW 2
#define TUNE_BORROW_DTYPE_COST 0.5
#define TUNE_BORROW_CAUSAL_COST 1.0 /* a class with no neighbour of its causality borrows from the other */

/* The head-to-head's verdict over n contenders timed back to back (us[k]: its best time,
 * infinity when it failed; incumbent: the index of tuning.csv's recorded row, -1 if it is
 * not among them): the fastest, except that the recorded row keeps its place when within
 * TUNE_KEEP_MARGIN of it (a closer win is inside what separate runs reproduce: on the H200
 * a 0.7% head-to-head win measured 1.3% slower in the run after it). -1 if none verified. */
#define TUNE_KEEP_MARGIN 0.01
int tune_rematch_pick(const double *us, int n, int incumbent);

int cmd_tune(int argc, char **argv);

/* `fabench tune` with several devices (--device A,B or all; tune_multi.c): one worker
 * process per device into DIR/tune-workers/w<N>/, merged into DIR's tables at the end.
 * results: the --results value or NULL. Returns tune's exit status. */
int tune_multi(int argc, char **argv, const char *spec, const char *results);
/* A worker's claim on a class, under the claims file's lock: 1 the class is this worker's
 * (claimed now, or earlier by it), 0 another worker's, -1 the file cannot be used. */
int tune_claim(const char *path, int worker, const char *gpu, const char *backend, const char *cls);

#endif
