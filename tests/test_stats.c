/* test_stats.c: percentiles against numpy's default (linear) method, worked out by hand
 * (pos = q/100 * (n-1), value = x[floor] + frac * (x[floor+1] - x[floor]) on sorted x),
 * and the summary in stats_compute. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "stats.h"

#define EPS 1e-12

static void assert_close(double got, double want)
{
    if (!(fabs(got - want) <= EPS * (1 + fabs(want)))) {
        print_error("got %.17g, want %.17g\n", got, want);
        fail();
    }
}

static void test_percentile_four(void **state)
{
    (void)state;
    const double x[] = {1, 2, 3, 4};
    assert_close(stats_percentile(x, 4, 0), 1);
    assert_close(stats_percentile(x, 4, 20), 1.6);   /* pos 0.6 */
    assert_close(stats_percentile(x, 4, 50), 2.5);   /* pos 1.5 */
    assert_close(stats_percentile(x, 4, 80), 3.4);   /* pos 2.4 */
    assert_close(stats_percentile(x, 4, 100), 4);
}

static void test_percentile_classic(void **state)
{
    (void)state;
    const double x[] = {15, 20, 35, 40, 50};
    assert_close(stats_percentile(x, 5, 20), 19);    /* 15 + 0.8 * 5 */
    assert_close(stats_percentile(x, 5, 25), 20);    /* pos 1 exactly */
    assert_close(stats_percentile(x, 5, 40), 29);    /* 20 + 0.6 * 15 */
    assert_close(stats_percentile(x, 5, 50), 35);
    assert_close(stats_percentile(x, 5, 80), 42);    /* 40 + 0.2 * 10 */
    const double y[] = {10, 20, 30, 40};
    assert_close(stats_percentile(y, 4, 33.3), 19.99); /* pos 0.999 */
}

static void test_percentile_unsorted_dups_negative(void **state)
{
    (void)state;
    double x[] = {100, 2.25, -5.5, 7, 2.25};
    const double copy[] = {100, 2.25, -5.5, 7, 2.25};
    assert_close(stats_percentile(x, 5, 20), 0.7);   /* -5.5 + 0.8 * 7.75 */
    assert_close(stats_percentile(x, 5, 50), 2.25);
    assert_close(stats_percentile(x, 5, 80), 25.6);  /* 7 + 0.2 * 93 */
    assert_close(stats_percentile(x, 5, 90), 62.8);  /* 7 + 0.6 * 93 */
    assert_memory_equal(x, copy, sizeof x);          /* not modified */
    const double z[] = {3, 1, 2};
    assert_close(stats_percentile(z, 3, 20), 1.4);
    assert_close(stats_percentile(z, 3, 50), 2);
}

static void test_percentile_ramp_and_single(void **state)
{
    (void)state;
    double x[101];
    for (int i = 0; i < 101; i++) x[100 - i] = i; /* reversed 0..100 */
    for (int q = 0; q <= 100; q += 7) assert_close(stats_percentile(x, 101, q), q);
    assert_close(stats_percentile(x, 101, 12.5), 12.5);
    const double one[] = {42.5};
    assert_close(stats_percentile(one, 1, 0), 42.5);
    assert_close(stats_percentile(one, 1, 37), 42.5);
    assert_close(stats_percentile(one, 1, 100), 42.5);
    const double nan_in[] = {1, NAN, 3};
    assert_true(isnan(stats_percentile(nan_in, 3, 50)));
    assert_true(isnan(stats_percentile(one, 0, 50)));
}

static void test_compute(void **state)
{
    (void)state;
    const double x[] = {12, 10, 11, 15, 10.5, 30, 11.5, 10, 13, 11};
    stats_t st;
    memset(&st, 0xff, sizeof st);
    assert_int_equal(stats_compute(x, 10, &st), 0);
    /* sorted: 10 10 10.5 11 11 11.5 12 13 15 30 */
    assert_int_equal(st.n, 10);
    assert_close(st.min, 10);
    assert_close(st.max, 30);
    assert_close(st.mean, 13.4);
    assert_close(st.median, 11.25);                 /* pos 4.5 */
    assert_close(st.p20, 10.4);                     /* pos 1.8: 10 + 0.8 * 0.5 */
    assert_close(st.p80, 13.4);                     /* pos 7.2: 13 + 0.2 * 2 */
    assert_close(st.rel_spread, 3.0 / 11.25);
}

static void test_compute_errors_and_zero_median(void **state)
{
    (void)state;
    stats_t st;
    const double x[] = {1, 2, NAN};
    assert_int_equal(stats_compute(x, 3, &st), -1);
    assert_int_equal(stats_compute(x, 0, &st), -1);
    const double z[] = {0, 0, 0, -1, 1};
    assert_int_equal(stats_compute(z, 5, &st), 0);
    assert_close(st.median, 0);
    assert_close(st.rel_spread, 0);
    assert_close(st.p20, -0.2);                     /* pos 0.8 on -1 0 0 0 1 */
    assert_close(st.p80, 0.2);
    /* timing samples must be times: zero, negative or infinite ones make no row */
    const double t0[] = {3, 0, 2}, tn[] = {-1, 2, 3}, ti[] = {1, 2, INFINITY}, tok[] = {3, 1, 2};
    assert_int_equal(stats_compute_times(t0, 3, &st), -1);
    assert_int_equal(stats_compute_times(tn, 3, &st), -1);
    assert_int_equal(stats_compute_times(ti, 3, &st), -1);
    assert_int_equal(stats_compute_times(tok, 3, &st), 0);
    assert_close(st.median, 2);
    const double one[] = {7};
    assert_int_equal(stats_compute(one, 1, &st), 0);
    assert_close(st.median, 7);
    assert_close(st.p20, 7);
    assert_close(st.p80, 7);
    assert_close(st.rel_spread, 0);
    assert_int_equal(st.n, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percentile_four),
        cmocka_unit_test(test_percentile_classic),
        cmocka_unit_test(test_percentile_unsorted_dups_negative),
        cmocka_unit_test(test_percentile_ramp_and_single),
        cmocka_unit_test(test_compute),
        cmocka_unit_test(test_compute_errors_and_zero_median),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
