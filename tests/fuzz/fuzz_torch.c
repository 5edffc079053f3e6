/* fuzz_torch.c: the PyTorch adapter's line protocol (vendors/torch/torch_proto.c): the
 * input's first line as a 'hello'/'absent' line and as a 'result' line. The parsers
 * return only their documented values, leave strings terminated, allocate samples only
 * for an ok result (each sample positive and finite), and nothing leaks. */
#include "fuzz_common.h"

#include <math.h>

#include "torch/torch_proto.h"

#define TERMINATED(a) (memchr((a), 0, sizeof(a)) != NULL)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = fz_string(data, size, size, 1);
    torch_hello h;
    int rc = torch_parse_hello(line, &h);
    if (rc < -1 || rc > 1) fz_fail("torch_parse_hello returned %d", rc);
    if (!TERMINATED(h.versions) || !TERMINATED(h.gpu) || !TERMINATED(h.impls) || !TERMINATED(h.reason))
        fz_fail("torch_parse_hello: an unterminated string");
    if (rc == 0 && !h.impls[0]) fz_fail("torch_parse_hello: hello without impls");

    vendor_result r;
    rc = torch_parse_result(line, &r);
    if (rc != 0 && rc != -1) fz_fail("torch_parse_result returned %d", rc);
    if (!TERMINATED(r.reason)) fz_fail("torch_parse_result: unterminated reason");
    if (rc == -1 && r.samples_us) fz_fail("torch_parse_result: samples allocated for a refused line");
    if (rc == 0) {
        if (r.status == ST_OK) {
            if (!r.samples_us || r.nsamples == 0) fz_fail("torch_parse_result: ok without samples");
            for (size_t i = 0; i < r.nsamples; i++)
                if (!(r.samples_us[i] > 0) || !isfinite(r.samples_us[i]))
                    fz_fail("torch_parse_result: sample %zu is %g", i, r.samples_us[i]);
        } else {
            if (r.status != ST_UNSUPPORTED && r.status != ST_LAUNCH_ERROR)
                fz_fail("torch_parse_result: status %d", (int)r.status);
            if (r.samples_us) fz_fail("torch_parse_result: samples for a failed result");
            /* an empty "reason=" is taken as it is (an empty reason column): not checked */
        }
    }
    free(r.samples_us);
    free(line);
    return 0;
}
