/* test_rt_shared.c: the launch checks, kernel argument arrays and bounded polling wait
 * that the CUDA and HIP runtimes share (bench/rt/rt_shared.c), without a GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_shared.h"

/* stands in for a runtime's buffer: only its address is read */
struct rt_buf { uint64_t addr; };

static void put_addr(const rt_buf *b, rt_param_slot *slot) { slot->u = b->addr; }

static void test_log_append(void **state)
{
    (void)state;
    char *log = rt_log_append(NULL, "first");
    assert_string_equal(log, "first");
    log = rt_log_append(log, "second");
    assert_string_equal(log, "first\nsecond");
    log = rt_log_append(log, "third\n");
    log = rt_log_append(log, "fourth"); /* no doubled newline after a line that has one */
    assert_string_equal(log, "first\nsecond\nthird\nfourth");
    free(log);
}

static void test_check_launch(void **state)
{
    (void)state;
    char err[256] = "";
    const size_t grid[3] = {132, 4, 1}, block[3] = {384, 1, 1};
    assert_int_equal(rt_check_launch("CUDA", grid, block, NULL, 384, err, sizeof err), 0);
    assert_int_equal(rt_check_launch("CUDA", grid, block, NULL, 0, err, sizeof err), 0); /* no kernel limit known */

    assert_int_equal(rt_check_launch("CUDA", grid, block, NULL, 256, err, sizeof err), RT_ERESOURCE);
    assert_non_null(strstr(err, "384 threads per block"));
    assert_non_null(strstr(err, "at most 256"));

    const size_t zero[3] = {132, 0, 1};
    assert_int_equal(rt_check_launch("HIP", zero, block, NULL, 0, err, sizeof err), RT_ERESOURCE);
    assert_non_null(strstr(err, "grid 132x0x1 of blocks 384x1x1 is beyond HIP's limits"));

    const size_t huge[3] = {(size_t)1 << 33, 1, 1};
    assert_int_equal(rt_check_launch("CUDA", huge, block, NULL, 0, err, sizeof err), RT_ERESOURCE);

    const size_t max_grid[3] = {100, 0, 0}; /* 0: that dimension's limit is unknown */
    assert_int_equal(rt_check_launch("HIP", grid, block, max_grid, 0, err, sizeof err), RT_ERESOURCE);
    const size_t fits[3] = {100, 70000, 1};
    assert_int_equal(rt_check_launch("HIP", fits, block, max_grid, 0, err, sizeof err), 0);
}

static void test_params_pack(void **state)
{
    (void)state;
    char err[256] = "";
    rt_buf a = {0x7f0000001000ull}, b = {0x7f0000002000ull};
    rt_arg args[5];
    args[0].kind = RT_ARG_BUF; args[0].v.buf = &a;
    args[1].kind = RT_ARG_I32; args[1].v.i32 = -7;
    args[2].kind = RT_ARG_I64; args[2].v.i64 = (int64_t)1 << 40;
    args[3].kind = RT_ARG_F32; args[3].v.f32 = 0.125f;
    args[4].kind = RT_ARG_BUF; args[4].v.buf = &b;
    rt_params pp;
    assert_int_equal(rt_params_pack(&pp, args, 5, put_addr, err, sizeof err), 0);
    /* what a driver reads through each pointer: the argument's bytes */
    uint64_t u;
    memcpy(&u, pp.params[0], sizeof u);
    assert_true(u == a.addr);
    memcpy(&u, pp.params[4], sizeof u);
    assert_true(u == b.addr);
    int32_t i;
    memcpy(&i, pp.params[1], sizeof i);
    assert_int_equal(i, -7);
    int64_t l;
    memcpy(&l, pp.params[2], sizeof l);
    assert_true(l == (int64_t)1 << 40);
    float f;
    memcpy(&f, pp.params[3], sizeof f);
    assert_true(f == 0.125f);
    rt_params_free(&pp);
    assert_null(pp.params);

    assert_int_equal(rt_params_pack(&pp, NULL, 0, put_addr, err, sizeof err), 0); /* no arguments */
    rt_params_free(&pp);

    args[4].v.buf = NULL; /* a buffer argument the kernel does not read: a null pointer */
    assert_int_equal(rt_params_pack(&pp, args, 5, put_addr, err, sizeof err), 0);
    memcpy(&u, pp.params[4], sizeof u);
    assert_true(u == 0);
    rt_params_free(&pp);

    args[2].kind = (rt_arg_kind)99;
    assert_int_equal(rt_params_pack(&pp, args, 5, put_addr, err, sizeof err), RT_ERR);
    assert_string_equal(err, "argument 2: unknown kind");
    assert_null(pp.params);
    assert_null(pp.slots);
}

/* a stream that becomes idle after *arg polls, or fails on its third */
static int idle_after(void *arg, char *err, size_t errlen)
{
    int *left = arg;
    if (*left < 0) {
        if (++*left == -1) {
            snprintf(err, errlen, "queued work failed: a fault");
            return RT_ERR;
        }
        return 1;
    }
    return (*left)-- > 0 ? 1 : 0;
}

static int never_idle(void *arg, char *err, size_t errlen)
{
    (void)arg; (void)err; (void)errlen;
    return 1;
}

static void test_poll(void **state)
{
    (void)state;
    char err[256] = "";
    int left = 5;
    assert_int_equal(rt_poll(idle_after, &left, 10.0, err, sizeof err), 0);
    assert_int_equal(left, -1);

    left = -3; /* fails on the second poll */
    assert_int_equal(rt_poll(idle_after, &left, 10.0, err, sizeof err), RT_ERR);
    assert_string_equal(err, "queued work failed: a fault");

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(rt_poll(never_idle, NULL, 0.05, err, sizeof err), RT_ETIMEOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double dt = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    assert_true(dt >= 0.05);
    assert_non_null(strstr(err, "did not finish within 0.1 s"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_append),
        cmocka_unit_test(test_check_launch),
        cmocka_unit_test(test_params_pack),
        cmocka_unit_test(test_poll),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
