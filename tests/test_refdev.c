/* test_refdev.c: the reference on a device (kernels/ref_attn.k through bench/core/refdev.c; the
 * first OpenCL device, PoCL in CI, or $FABENCH_TEST_DEVICE) against the CPU's, every row:
 * every dtype, causal and not, GQA and MQA, ragged and mixed batches, Sq != Skv both ways,
 * rows with no visible key, odd head dims; a device reference that is wrong in one row is
 * refused by the spot check and the CPU takes over; float sums (a device without fp64)
 * within their tolerance; the full check's time on a mid-size shape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "test_shape.h"

#include "refdev.h"
#include "rt.h"
#include "shapes.h"

static rt_device dev;
static rt_ctx *ctx;
static fb_refdev *rd;

static int setup(void **state)
{
    (void)state;
    char err[FB_ERRLEN];
    const char *sel = getenv("FABENCH_TEST_DEVICE");
    if (rt_select(sel ? sel : "opencl:0", &dev, err, sizeof err) != 0) {
        fprintf(stderr, "no device for the reference tests: %s\n", err);
        return -1;
    }
    if (dev.rt->open(dev.index, &ctx, err, sizeof err) != 0 || fb_refdev_open(&dev, ctx, &rd, err, sizeof err) != 0) {
        fprintf(stderr, "open: %s\n", err);
        return -1;
    }
    fprintf(stderr, "reference on %s:%d (%s)\n", dev.rt->name, dev.index, dev.info.name);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fb_refdev_close(rd, 1);
    dev.rt->close(ctx);
    return 0;
}

/* A problem's inputs on the host and on the device. */
typedef struct {
    attn_problem p;
    void *h[3];
    rt_buf *b[3];
} inputs;

static inputs make_inputs(const shape_t *s, dtype_t dt, uint64_t seed)
{
    inputs in = {.p = {.s = *s, .dt = dt, .scale = 1.0 / sqrt((double)s->d)}};
    const size_t es = dtype_size(dt), n[3] = {shape_q_elems(s) * es, shape_kv_elems(s) * es, shape_kv_elems(s) * es};
    char err[FB_ERRLEN];
    for (int i = 0; i < 3; i++) {
        in.h[i] = malloc(n[i] ? n[i] : 1);
        assert_non_null(in.h[i]);
    }
    fb_fill_inputs(s, dt, seed, in.h[0], in.h[1], in.h[2]);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(dev.rt->alloc(ctx, n[i] ? n[i] : 4, &in.b[i], err, sizeof err), 0);
        assert_int_equal(dev.rt->upload(ctx, in.b[i], in.h[i], n[i], err, sizeof err), 0);
    }
    return in;
}

static void free_inputs(inputs *in)
{
    for (int i = 0; i < 3; i++) {
        free(in->h[i]);
        dev.rt->buf_free(in->b[i]);
    }
}

/* How far the device's reference is from the CPU's over every row: O relative to the row's
 * largest output, LSE relative to 1 + |lse|, and the plain error as the ratio of the larger
 * to the smaller (where it exceeds half the row's floor, as the spot check takes it). */
typedef struct { double o, lse, plain; } deviation;

static deviation compare(const fb_reference *a, const fb_reference *c)
{
    deviation dv = {0, 0, 1};
    const size_t d = (size_t)a->p.s.d;
    for (size_t r = 0; r < a->rows; r++) {
        double mx = 0;
        for (size_t x = 0; x < d; x++) mx = fmax(mx, fabs(c->o[r * d + x]));
        for (size_t x = 0; x < d; x++) {
            const double e = fabs(a->o[r * d + x] - c->o[r * d + x]);
            dv.o = fmax(dv.o, mx > 0 ? e / mx : (e > 0 ? INFINITY : 0));
        }
        if (isinf(c->lse[r])) assert_true(isinf(a->lse[r]) && a->lse[r] < 0);
        else dv.lse = fmax(dv.lse, fabs(a->lse[r] - c->lse[r]) / (1 + fabs(c->lse[r])));
        const double slack = 0.5 * fb_row_bound(a->p.dt, 0, mx), hi = fmax(a->plain_err[r], c->plain_err[r]),
                     lo = fmin(a->plain_err[r], c->plain_err[r]);
        if (hi > slack) dv.plain = fmax(dv.plain, lo > 0 ? hi / lo : INFINITY);
    }
    return dv;
}

static shape_t ragged(int b, int hq, int hkv, int sq, int skv, int d, int causal, const char *lens, const char *qlens)
{
    shape_t s = mk(b, hq, hkv, sq, skv, d, causal);
    char err[FB_ERRLEN];
    if (shapes_parse_lens("test", 0, lens, &s, err, sizeof err) != 0) fail_msg("%s", err);
    if (qlens && shapes_parse_qlens("test", 0, qlens, &s, err, sizeof err) != 0) fail_msg("%s", err);
    return s;
}

/* Every row of the device's reference against the CPU's, on small problems of every kind. */
static void test_device_matches_cpu(void **state)
{
    (void)state;
    const shape_t shapes[] = {
        mk(2, 4, 2, 70, 90, 64, 0),     mk(2, 4, 2, 70, 90, 64, 1),   /* GQA, Sq < Skv */
        mk(1, 4, 1, 130, 33, 128, 1),   mk(1, 4, 1, 130, 33, 128, 0), /* MQA, Sq > Skv: causal rows with no key */
        mk(1, 2, 2, 200, 200, 32, 1),   mk(1, 3, 3, 150, 7, 80, 0),   /* head dims 32, 80 */
        mk(3, 8, 2, 1, 300, 96, 1),     mk(1, 2, 1, 129, 129, 256, 1), /* decode; d = 256 */
        ragged(5, 4, 2, 70, 70, 64, 1, "0.1;0.4;0.5;1.0;0.2", NULL),
        ragged(4, 2, 1, 90, 20, 32, 1, "0.3;1;0.05", NULL), /* ragged Sq > Skv: empty rows */
        ragged(6, 4, 2, 100, 300, 64, 1, "1;0.5;0.2", "0.001;1;0.3"), /* mixed decode and prefill */
    };
    deviation worst[3] = {{0, 0, 1}, {0, 0, 1}, {0, 0, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int t = DT_FP32; t <= DT_BF16; t++) {
            inputs in = make_inputs(&shapes[i], (dtype_t)t, 7 + i);
            fb_reference a = {0}, c = {0};
            int fp64 = -1;
            char err[FB_ERRLEN];
            assert_int_equal(fb_refdev_compute(rd, &in.p, in.b[0], in.b[1], in.b[2], 120, &a, &fp64, err, sizeof err), 0);
            assert_int_equal(fb_reference_cpu(&in.p, in.h[0], in.h[1], in.h[2], 0, &c), 0);
            const double tol = fp64 ? FB_REFDEV_TOL_FP64 : FB_REFDEV_TOL_FP32;
            const deviation dv = compare(&a, &c);
            if (!(dv.o <= tol && dv.lse <= tol && dv.plain <= 2))
                print_error("%s %s: O %.3g, LSE %.3g, plain x%.3g (tol %.3g)\n", shapes[i].name, dtype_name((dtype_t)t),
                            dv.o, dv.lse, dv.plain, tol);
            assert_true(dv.o <= tol && dv.lse <= tol && dv.plain <= 2);
            worst[t].o = fmax(worst[t].o, dv.o);
            worst[t].lse = fmax(worst[t].lse, dv.lse);
            worst[t].plain = fmax(worst[t].plain, dv.plain);
            /* and the spot check says so too */
            assert_int_equal(fb_reference_spot_check(&a, in.h[0], in.h[1], in.h[2], FB_SPOT_ROWS, 3, tol, err, sizeof err), 0);
            fb_reference_free(&a);
            fb_reference_free(&c);
            free_inputs(&in);
        }
    for (int t = DT_FP32; t <= DT_BF16; t++)
        print_message("%s: device vs CPU over every row: O %.2e of the row's max, LSE %.2e, plain error within x%.3f\n",
                      dtype_name((dtype_t)t), worst[t].o, worst[t].lse, worst[t].plain);
}

/* fb_reference_get: the device's reference when its sampled rows agree (and kept: a second
 * call on the same problem and seed computes nothing), the CPU's for a problem no larger
 * than the sample, and for one whose device reference is wrong in its last row (a test
 * hook in the kernel), said on stderr. */
static void test_reference_get(void **state)
{
    (void)state;
    const shape_t s = mk(1, 4, 2, 150, 150, 64, 1), tiny = mk(1, 2, 2, 33, 40, 64, 0);
    inputs in = make_inputs(&s, DT_BF16, 5);
    fb_reference ref = {0};
    char err[FB_ERRLEN];
    assert_int_equal(fb_reference_get(rd, &in.p, in.h[0], in.h[1], in.h[2], in.b[0], in.b[1], in.b[2], 5, 120, &ref,
                                      err, sizeof err), 0);
    assert_true(ref.valid && ref.on_device);
    float *keep = ref.o;
    assert_int_equal(fb_reference_get(rd, &in.p, in.h[0], in.h[1], in.h[2], NULL, NULL, NULL, 5, 120, &ref, err,
                                      sizeof err), 0);
    assert_ptr_equal(ref.o, keep); /* kept, not computed again */
    /* uploaded from the host copies when no device inputs are given, another seed's name */
    assert_int_equal(fb_reference_get(rd, &in.p, in.h[0], in.h[1], in.h[2], NULL, NULL, NULL, 6, 120, &ref, err,
                                      sizeof err), 0);
    assert_true(ref.valid && ref.on_device && ref.seed == 6);
    inputs small = make_inputs(&tiny, DT_FP16, 5);
    assert_int_equal(fb_reference_get(rd, &small.p, small.h[0], small.h[1], small.h[2], NULL, NULL, NULL, 5, 120, &ref,
                                      err, sizeof err), 0);
    assert_true(ref.valid && !ref.on_device);
    free_inputs(&small);
    /* a wrong device reference: refused, the CPU's instead */
    setenv("FABENCH_TEST_REF_FAULT", "1", 1);
    fb_refdev *bad;
    assert_int_equal(fb_refdev_open(&dev, ctx, &bad, err, sizeof err), 0);
    fb_reference cpu = {0};
    assert_int_equal(fb_reference_get(bad, &in.p, in.h[0], in.h[1], in.h[2], in.b[0], in.b[1], in.b[2], 5, 120, &ref,
                                      err, sizeof err), 0);
    unsetenv("FABENCH_TEST_REF_FAULT");
    assert_true(ref.valid && !ref.on_device);
    assert_int_equal(fb_reference_cpu(&in.p, in.h[0], in.h[1], in.h[2], 5, &cpu), 0);
    assert_memory_equal(ref.o, cpu.o, ref.rows * (size_t)s.d * sizeof *ref.o);
    fb_reference_free(&cpu);
    fb_refdev_close(bad, 1);
    fb_reference_free(&ref);
    free_inputs(&in);
}

/* A device without fp64 sums in float (forced here by a test hook): its rows then agree
 * with the CPU's within FB_REFDEV_TOL_FP32, which the spot check applies when the kernel
 * says it summed in float, and its reference is used for 16-bit outputs; fp32 outputs,
 * whose bounds are a few units of fp32 roundoff, take the CPU's. */
static void test_float_sums(void **state)
{
    (void)state;
    setenv("FABENCH_TEST_REF_FLOAT", "1", 1);
    fb_refdev *fl;
    char err[FB_ERRLEN];
    assert_int_equal(fb_refdev_open(&dev, ctx, &fl, err, sizeof err), 0);
    const shape_t shapes[] = {mk(1, 2, 1, 64, 4096, 128, 0), mk(1, 4, 2, 300, 300, 64, 1),
                              ragged(4, 2, 1, 90, 200, 32, 1, "0.3;1;0.05", NULL)};
    double worst = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int t = DT_FP32; t <= DT_BF16; t++) {
            inputs in = make_inputs(&shapes[i], (dtype_t)t, 3 + i);
            fb_reference a = {0}, c = {0};
            int fp64 = -1;
            assert_int_equal(fb_refdev_compute(fl, &in.p, in.b[0], in.b[1], in.b[2], 120, &a, &fp64, err, sizeof err), 0);
            assert_int_equal(fp64, 0);
            assert_int_equal(fb_reference_cpu(&in.p, in.h[0], in.h[1], in.h[2], 0, &c), 0);
            const deviation dv = compare(&a, &c);
            worst = fmax(worst, fmax(dv.o, dv.lse));
            const int plain_ok = t == DT_FP32 || dv.plain <= 2; /* fp32: the float sums are no finer than the plain ones */
            if (!(dv.o <= FB_REFDEV_TOL_FP32 && dv.lse <= FB_REFDEV_TOL_FP32 && plain_ok))
                print_error("%s %s: O %.3g, LSE %.3g, plain x%.3g\n", shapes[i].name, dtype_name((dtype_t)t), dv.o, dv.lse,
                            dv.plain);
            assert_true(dv.o <= FB_REFDEV_TOL_FP32 && dv.lse <= FB_REFDEV_TOL_FP32 && plain_ok);
            fb_reference_free(&a);
            fb_reference_free(&c);
            fb_reference ref = {0};
            assert_int_equal(fb_reference_get(fl, &in.p, in.h[0], in.h[1], in.h[2], in.b[0], in.b[1], in.b[2], 3, 120, &ref,
                                              err, sizeof err), 0);
            assert_true(ref.valid);
            if (ref.rows > FB_SPOT_ROWS) assert_int_equal(ref.on_device, t != DT_FP32);
            fb_reference_free(&ref);
            free_inputs(&in);
        }
    unsetenv("FABENCH_TEST_REF_FLOAT");
    fb_refdev_close(fl, 1);
    print_message("float sums: O and LSE within %.2e of the CPU's (tolerance %.0e)\n", worst, FB_REFDEV_TOL_FP32);
}

/* The time of a full check on a mid-size shape (a number for the report, not a threshold):
 * the device's reference with its spot check, then one comparison of every element. */
static void test_full_check_time(void **state)
{
    (void)state;
    const shape_t s = mk(1, 8, 8, 1024, 1024, 64, 0);
    inputs in = make_inputs(&s, DT_BF16, 9);
    fb_reference ref = {0};
    char err[FB_ERRLEN];
    double t0 = fb_now();
    assert_int_equal(fb_reference_get(rd, &in.p, in.h[0], in.h[1], in.h[2], in.b[0], in.b[1], in.b[2], 9, 600, &ref,
                                      err, sizeof err), 0);
    double t1 = fb_now();
    assert_true(ref.on_device);
    /* the plain implementation itself as the output: it must pass, and take the comparison's time */
    const size_t d = (size_t)s.d, n = ref.rows * d;
    uint16_t *o = malloc(n * sizeof *o);
    float *row = malloc(d * sizeof *row);
    assert_non_null(o);
    assert_non_null(row);
    for (size_t r = 0; r < ref.rows; r++) {
        int b, h, i;
        fb_row_coords(&s, r, &b, &h, &i);
        fb_plain_row(&in.p, in.h[0], in.h[1], in.h[2], b, h, i, row);
        for (size_t x = 0; x < d; x++) o[r * d + x] = fb_f32_to_bf16(row[x]);
    }
    verify_result v;
    double t2 = fb_now();
    assert_int_equal(fb_verify_full(&ref, o, NULL, &v), 0);
    double t3 = fb_now();
    if (!v.pass) print_error("%s\n", v.reason);
    assert_true(v.pass);
    print_message("B=1 H=8 S=1024 d=64 bf16 on %s: reference %.2f s (device, spot-checked), comparison of %zu elements "
                  "%.3f s; the plain implementation at %.2f of its bound\n",
                  dev.info.name, t1 - t0, n, t3 - t2, v.worst_ratio);
    free(o);
    free(row);
    fb_reference_free(&ref);
    free_inputs(&in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_matches_cpu),
        cmocka_unit_test(test_reference_get),
        cmocka_unit_test(test_float_sums),
        cmocka_unit_test(test_full_check_time),
    };
    return cmocka_run_group_tests(tests, setup, teardown); /* all three, also under `make sanitize` */
}
