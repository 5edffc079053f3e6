/* stats.c: summary statistics of repeated timings (stats.h): percentiles with numpy's
 * default linear interpolation, min/max/mean, and the p20-p80 spread. */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* numpy's lerp: a + (b - a) * t, computed from the nearer end so that t = 1 gives b
 * exactly (numpy._function_base_impl._lerp). */
static double lerp(double a, double b, double t)
{
    double diff = b - a;
    return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

/* Percentile of an already sorted array, n >= 1, q clamped to [0, 100]. */
static double percentile_sorted(const double *s, size_t n, double q)
{
    if (q <= 0) return s[0];
    if (q >= 100) return s[n - 1];
    double pos = q / 100.0 * (double)(n - 1);
    double fl = floor(pos);
    size_t lo = (size_t)fl;
    if (lo >= n - 1) return s[n - 1];
    return lerp(s[lo], s[lo + 1], pos - fl);
}

static double *sorted_copy(const double *x, size_t n)
{
    double *s = malloc(n * sizeof *s);
    if (!s) return NULL;
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    return s;
}

double stats_percentile(const double *x, size_t n, double q)
{
    if (n == 0 || isnan(q)) return NAN;
    for (size_t i = 0; i < n; i++)
        if (isnan(x[i])) return NAN; /* numpy propagates NaN */
    double *s = sorted_copy(x, n);
    if (!s) return NAN;
    double r = percentile_sorted(s, n, q);
    free(s);
    return r;
}

int stats_compute(const double *x, size_t n, stats_t *out)
{
    if (n == 0 || !x || !out) return -1;
    for (size_t i = 0; i < n; i++)
        if (isnan(x[i])) return -1;
    double *s = sorted_copy(x, n);
    if (!s) return -1;
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += s[i];
    out->n = n;
    out->min = s[0];
    out->max = s[n - 1];
    out->mean = sum / (double)n;
    out->median = percentile_sorted(s, n, 50);
    out->p20 = percentile_sorted(s, n, 20);
    out->p80 = percentile_sorted(s, n, 80);
    out->rel_spread = out->median != 0 ? (out->p80 - out->p20) / out->median : 0;
    free(s);
    return 0;
}

int stats_compute_times(const double *us, size_t n, stats_t *out)
{
    for (size_t i = 0; us && i < n; i++)
        if (!(us[i] > 0) || !isfinite(us[i])) return -1;
    return stats_compute(us, n, out);
}
