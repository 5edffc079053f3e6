/* stats.h: summary statistics of repeated timings: median, p20, p80 (linear
 * interpolation between order statistics), min, max, mean. */
#ifndef FABENCH_STATS_H
#define FABENCH_STATS_H

#include <stddef.h>

typedef struct {
    size_t n;
    double min, max, mean, median, p20, p80;
    double rel_spread; /* (p80 - p20) / median, 0 when median is 0 */
} stats_t;

/* Percentile q in [0, 100] of x (n >= 1), linear interpolation between closest ranks
 * (numpy's default). x is not modified. */
double stats_percentile(const double *x, size_t n, double q);
/* Fills out; returns 0, or -1 when n == 0 or any value is NaN. */
int stats_compute(const double *x, size_t n, stats_t *out);
/* stats_compute over timing samples, which must all be times: > 0 and finite (a device
 * event pair that says 0 or a wrapped-around span makes no row); -1 otherwise. */
int stats_compute_times(const double *us, size_t n, stats_t *out);

#endif
