/* fuzz_space.c: search-space files (bench/tune/space.c). space_load must accept or reject any
 * input without a crash; an accepted space is enumerated for a tensor-core GPU and a CPU,
 * prefill and decode, and every configuration that comes out must pass kconfig_check (as
 * tests/test_tune.c asserts for the shipped space).
 * A space whose full product of values exceeds ENUM_LIMIT is not enumerated: the
 * enumeration is exhaustive by design (9 parameters of 16 values are 16^9 combinations),
 * so a huge space is slow, not wrong, and would only stall the fuzzer. */
#include "fuzz_common.h"

#include "common.h"
#include "config.h"
#include "space.h"

#define ENUM_LIMIT 4096L

static shape_t mk(int b, int hq, int hkv, int sq, int skv, int d, int causal)
{
    shape_t s = {.batch = b, .hq = hq, .hkv = hkv, .sq = sq, .skv = skv, .d = d, .causal = causal};
    snprintf(s.name, sizeof s.name, "t");
    return s;
}

static void enumerate(const space_t *sp, const rt_device_info *dev, const shape_t *s, dtype_t dt)
{
    kconfig *c = NULL;
    long before = -1;
    long n = space_enumerate(sp, dev, s, dt, &c, &before);
    if (n < 0) fz_fail("space_enumerate: out of memory");
    if (before < n) fz_fail("space_enumerate: %ld configurations out of %ld before the checks", n, before);
    for (long i = 0; i < n; i++) {
        char reason[256];
        if (kconfig_check(&c[i], dev, s, dt, reason, sizeof reason) != ST_OK) {
            char str[256];
            kconfig_str(&c[i], str, sizeof str);
            fz_fail("space_enumerate: %s fails kconfig_check: %s", str, reason);
        }
    }
    free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_input_file(data, size);
    char err[FB_ERRLEN] = "";
    static space_t sp;
    int rc = space_load(path, &sp, err, sizeof err);
    if (rc != 0) {
        if (rc != 2 && rc != -1) fz_fail("space_load returned %d", rc);
        fz_check_err("space_load", err, sizeof err);
        return 0;
    }
    if (sp.nparams < 1 || sp.nparams > SPACE_MAX_PARAMS) fz_fail("space_load: %d parameters", sp.nparams);
    long product = 1;
    for (int k = 0; k < sp.nparams; k++) {
        if (sp.p[k].nvalues < 1 || sp.p[k].nvalues > SPACE_MAX_VALUES)
            fz_fail("space_load: parameter %s has %d values", sp.p[k].name, sp.p[k].nvalues);
        if (product <= ENUM_LIMIT) product *= sp.p[k].nvalues;
    }
    if (product > ENUM_LIMIT) return 0;

    rt_device_info gpu = {.compute_units = 132, .max_group_size = 1024, .shared_bytes = 227 * 1024,
                          .static_shared_bytes = 48 * 1024, .features = RT_FEAT_MMA_SYNC};
    rt_device_info cpu = {.compute_units = 2, .max_group_size = 4096, .shared_bytes = 512 * 1024,
                          .static_shared_bytes = 512 * 1024};
    shape_t pre = mk(4, 32, 32, 4096, 4096, 128, 1), dec = mk(8, 32, 8, 1, 4096, 128, 1);
    enumerate(&sp, &gpu, &pre, DT_BF16);
    enumerate(&sp, &gpu, &dec, DT_FP16);
    enumerate(&sp, &cpu, &dec, DT_FP32);
    return 0;
}
