/* test_torch_proto.c: the PyTorch adapter's line protocol as the harness parses it:
 * hello and absent lines, result lines with samples, refusals, and malformed answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "torch/torch_proto.h"

static void test_hello(void **state)
{
    (void)state;
    torch_hello h;
    assert_int_equal(torch_parse_hello("hello torch=2.11.0 cuda=13.0 cudnn=91900 hip=none gpu=NVIDIA_H200 "
                                       "impls=torch-flash,torch-efficient,torch-cudnn,flex", &h), 0);
    assert_string_equal(h.impls, "torch-flash,torch-efficient,torch-cudnn,flex");
    assert_string_equal(h.gpu, "NVIDIA_H200");
    assert_string_equal(h.versions, "torch=2.11.0 cuda=13.0 cudnn=91900 hip=none");
    assert_int_equal(torch_parse_hello("absent reason=PyTorch is not importable (ModuleNotFoundError: No module named 'torch')", &h), 1);
    assert_string_equal(h.reason, "PyTorch is not importable (ModuleNotFoundError: No module named 'torch')");
    assert_int_equal(torch_parse_hello("Traceback (most recent call last):", &h), -1);
    assert_int_equal(torch_parse_hello("hello torch=2.11.0 gpu=X", &h), -1); /* no impls */
    assert_int_equal(torch_parse_hello("absentee reason=x", &h), -1);
}

static void test_result(void **state)
{
    (void)state;
    vendor_result r;
    assert_int_equal(torch_parse_result("result status=ok samples=12.5,13,12.75", &r), 0);
    assert_int_equal(r.status, ST_OK);
    assert_int_equal(r.nsamples, 3);
    assert_true(r.samples_us[0] == 12.5 && r.samples_us[1] == 13.0 && r.samples_us[2] == 12.75);
    assert_string_equal(r.config, "");
    free(r.samples_us);
    /* how the vendor ran a ragged or paged batch comes before the samples */
    assert_int_equal(torch_parse_result("result status=ok config=document-mask-paged16 samples=7,8", &r), 0);
    assert_int_equal(r.status, ST_OK);
    assert_string_equal(r.config, "document-mask-paged16");
    assert_int_equal(r.nsamples, 2);
    assert_true(r.samples_us[0] == 7.0 && r.samples_us[1] == 8.0);
    free(r.samples_us);
    assert_int_equal(torch_parse_result("result status=unsupported reason=RuntimeError: No available kernel. Aborting execution. "
                                        "(Flash attention requires q,k,v to have the same last dimension)", &r), 0);
    assert_int_equal(r.status, ST_UNSUPPORTED);
    assert_non_null(strstr(r.reason, "No available kernel"));
    assert_non_null(strstr(r.reason, "same last dimension)"));
    assert_int_equal(torch_parse_result("result status=error reason=ValueError: q.bin holds 3 elements", &r), 0);
    assert_int_equal(r.status, ST_LAUNCH_ERROR);
    /* malformed: every one rejected, nothing allocated */
    const char *bad[] = {"result status=ok", "result status=ok samples=", "result status=ok samples=1,x,3",
                         "result status=ok samples=-4", "result status=ok samples=nan", "result status=maybe",
                         "reslt status=ok samples=1", "result samples=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (torch_parse_result(bad[i], &r) != -1) fail_msg("accepted '%s'", bad[i]);
        assert_null(r.samples_us);
    }
}

/* How the adapter timed the samples (timer, calls a batch, host time per call) and whether it
 * wrote a log-sum-exp: all three timing words or none; a malformed one is refused. */
static void test_result_method(void **state)
{
    (void)state;
    vendor_result r;
    assert_int_equal(torch_parse_result("result status=ok timer=gated batch=64 launch_us=41.250 lse=1 samples=12.5,13", &r), 0);
    assert_string_equal(r.how.timer, "gated");
    assert_int_equal(r.how.batch, 64);
    assert_true(r.how.launch_us == 41.25);
    assert_int_equal(r.has_lse, 1);
    assert_int_equal(r.nsamples, 2);
    free(r.samples_us);
    assert_int_equal(torch_parse_result("result status=ok config=padded timer=queue batch=1 launch_us=0 samples=9", &r), 0);
    assert_string_equal(r.how.timer, "queue");
    assert_string_equal(r.config, "padded");
    assert_int_equal(r.has_lse, 0);
    free(r.samples_us);
    assert_int_equal(torch_parse_result("result status=ok samples=9", &r), 0); /* an older adapter: not said */
    assert_int_equal(r.how.batch, 0);
    free(r.samples_us);
    const char *bad[] = {"result status=ok timer=gated samples=9", "result status=ok timer=fast batch=1 launch_us=1 samples=9",
                         "result status=ok timer=gated batch=0 launch_us=1 samples=9",
                         "result status=ok timer=gated batch=2 launch_us=-1 samples=9",
                         "result status=ok timer=gated batch=2x launch_us=1 samples=9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (torch_parse_result(bad[i], &r) != -1) fail_msg("accepted '%s'", bad[i]);
        assert_null(r.samples_us);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello),
        cmocka_unit_test(test_result),
        cmocka_unit_test(test_result_method),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
