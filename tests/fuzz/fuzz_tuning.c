/* fuzz_tuning.c: tuning tables (tuning.csv) through tune_lookup (bench/tune/tune.c), as
 * `run --tuned` reads them, for a fixed device ("G" on the opencl runtime; nothing is
 * opened) and a few shapes: an exact class, a decode class, another head dim and dtype.
 * The lookup returns 1 (the class's row, a fallback.csv rule or the regime's default, as
 * its source says) or 2; a configuration it hands back is completed and checked as `run`
 * does. */
#include "fuzz_common.h"

#include "common.h"
#include "config.h"
#include "rt.h"
#include "tune.h"

static shape_t mk(int b, int hq, int hkv, int sq, int skv, int d, int causal)
{
    shape_t s = {.batch = b, .hq = hq, .hkv = hkv, .sq = sq, .skv = skv, .d = d, .causal = causal};
    snprintf(s.name, sizeof s.name, "t");
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_input_file(data, size);
    static rt_device dev;
    if (!dev.rt) {
        dev.rt = rt_find("opencl"); /* the runtime's table only: rt_find loads nothing */
        if (!dev.rt) fz_fail("no opencl runtime in this build");
        snprintf(dev.info.name, sizeof dev.info.name, "G");
        dev.info.compute_units = 16;
        dev.info.max_group_size = 1024;
        dev.info.static_shared_bytes = dev.info.shared_bytes = 64 * 1024;
    }
    const struct { shape_t s; dtype_t dt; } cases[] = {
        {mk(1, 32, 8, 4000, 4000, 128, 1), DT_BF16},
        {mk(1, 32, 8, 2, 3000, 128, 1), DT_BF16},
        {mk(2, 8, 8, 300, 300, 64, 0), DT_FP16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kconfig c;
        memset(&c, 0, sizeof c);
        char src[300] = "", err[FB_ERRLEN] = "";
        int rc = tune_lookup(path, &dev, &cases[i].s, cases[i].dt, &c, src, sizeof src, err, sizeof err);
        if (rc == 2) {
            fz_check_err("tune_lookup", err, sizeof err);
            return 0; /* a malformed table is malformed for every shape */
        }
        if (rc == 0) {
            if (!src[0]) fz_fail("tune_lookup: 0 without saying why in source");
            continue;
        }
        if (rc != 1) fz_fail("tune_lookup returned %d", rc);
        /* tune.h: the class's row, a rule of fallback.csv, or the regime's default */
        if (strncmp(src, "tuned ", 6) && strncmp(src, "rule ", 5) && strncmp(src, "default for ", 12))
            fz_fail("tune_lookup: source '%s'", src);
        kconfig_complete(&c, &dev.info, &cases[i].s, cases[i].dt);
        char reason[256], str[256];
        (void)kconfig_check(&c, &dev.info, &cases[i].s, cases[i].dt, reason, sizeof reason);
        kconfig_str(&c, str, sizeof str);
    }
    return 0;
}
