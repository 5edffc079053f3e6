/* fuzz_config.c: kernel configuration strings (--config, tuning.csv's config column;
 * bench/core/config.c). The input (at most 4096 bytes, NUL-terminated) is parsed over a zero
 * configuration as `run --config` does, completed with a device's defaults and checked;
 * a completed configuration that passes the checks (one `run` would compile, time and
 * record in perf.csv, or `tune` in tuning.csv) must have a canonical text (kconfig_str)
 * that parses again and prints the very same text: what the harness writes, --config and
 * tune_lookup read back. Anything else aborts. */
#include "fuzz_common.h"

#include "common.h"
#include "config.h"

static shape_t mk(int b, int hq, int hkv, int sq, int skv, int d, int causal)
{
    shape_t s = {.batch = b, .hq = hq, .hkv = hkv, .sq = sq, .skv = skv, .d = d, .causal = causal};
    snprintf(s.name, sizeof s.name, "t");
    return s;
}

static void round_trip(const kconfig *c)
{
    char a[512], b[512], err[FB_ERRLEN] = "";
    kconfig_str(c, a, sizeof a);
    kconfig again;
    memset(&again, 0, sizeof again);
    if (kconfig_parse(a, &again, err, sizeof err) != 0) fz_fail("kconfig_str gave '%s', which does not parse: %s", a, err);
    kconfig_str(&again, b, sizeof b);
    if (strcmp(a, b)) fz_fail("canonical form not a fixed point: '%s' parsed and printed as '%s'", a, b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fz_string(data, size, 4096, 0);
    char err[FB_ERRLEN] = "";
    kconfig c;
    memset(&c, 0, sizeof c);
    int rc = kconfig_parse(s, &c, err, sizeof err);
    free(s);
    if (rc != 0) {
        if (rc != FB_EXIT_BADINPUT) fz_fail("kconfig_parse returned %d", rc);
        fz_check_err("kconfig_parse", err, sizeof err);
        return 0;
    }
    static const rt_device_info gpu = {.compute_units = 132, .max_group_size = 1024, .shared_bytes = 227 * 1024,
                                       .static_shared_bytes = 48 * 1024, .features = RT_FEAT_MMA_SYNC,
                                       .max_grid = {2147483647, 65535, 65535}};
    static const rt_device_info cdna = {.compute_units = 110, .max_group_size = 1024, .shared_bytes = 64 * 1024,
                                        .static_shared_bytes = 64 * 1024, .warp_size = 64, .features = RT_FEAT_MFMA,
                                        .max_grid = {2147483647, 2147483647, 2147483647}};
    static const rt_device_info cpu = {.compute_units = 2, .max_group_size = 4096, .shared_bytes = 512 * 1024,
                                       .static_shared_bytes = 512 * 1024};
    const struct { const rt_device_info *dev; shape_t s; dtype_t dt; } cases[] = {
        {&gpu, mk(4, 32, 32, 4096, 4096, 128, 1), DT_BF16},
        {&gpu, mk(64, 32, 8, 1, 4096, 128, 1), DT_FP16},
        {&gpu, mk(1, 16, 16, 1024, 1024, 64, 0), DT_BF16},
        {&cdna, mk(4, 32, 8, 4096, 4096, 128, 1), DT_BF16},
        {&cdna, mk(64, 32, 8, 1, 16384, 256, 1), DT_FP16},
        {&cpu, mk(1, 2, 2, 7, 7, 80, 0), DT_FP32},
        {&cpu, mk(2, 4, 1, 33, 129, 256, 1), DT_BF16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kconfig k = c;
        kconfig_complete(&k, cases[i].dev, &cases[i].s, cases[i].dt);
        char reason[256] = "";
        status_t st = kconfig_check(&k, cases[i].dev, &cases[i].s, cases[i].dt, reason, sizeof reason);
        if (st != ST_OK && !reason[0]) fz_fail("kconfig_check: status %d without a reason", (int)st);
        if (st != ST_OK) continue;
        size_t grid[3];
        kconfig_grid(&k, &cases[i].s, grid);
        (void)kconfig_shared_bytes(&k, cases[i].s.d);
        (void)kconfig_dynamic_shared(&k, cases[i].s.d);
        round_trip(&k);
        /* a user's --config laid over a completed (tuned) configuration */
        kconfig over = k;
        kconfig_overlay(&over, &c);
        if (kconfig_check(&over, cases[i].dev, &cases[i].s, cases[i].dt, reason, sizeof reason) == ST_OK)
            round_trip(&over);
    }
    return 0;
}
