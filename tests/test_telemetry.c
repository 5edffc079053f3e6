/* test_telemetry.c: the GPU readings of perf.csv (bench/core/telemetry.c) against a fake NVML
 * (tests/fake_nvml.c, build/tests/libfake_nvml.so beside this program) whose clock, power,
 * temperature and clock event reasons each case sets: a window's median clock, idle samples
 * left out, power from the energy counter and without it, the reasons' names both ways,
 * absent or failing libraries; then perf.csv's columns from a summary, and an older
 * perf.csv widened to the current schema when it is opened for appending. */
#define _DEFAULT_SOURCE /* realpath */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"
#include "telemetry.h"

static char fake_lib[PATH_MAX];
#define PCI "0000:3b:00.0"

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {}
}

/* every case starts from the fake's defaults, loaded by FABENCH_NVML */
static int reset(void **state)
{
    (void)state;
    static const char *const vars[] = {"FAKE_NVML_PCI", "FAKE_NVML_SM", "FAKE_NVML_REASONS", "FAKE_NVML_IDLE_EVERY",
                                       "FAKE_NVML_IDLE_SM", "FAKE_NVML_POWER_W", "FAKE_NVML_NO_ENERGY",
                                       "FAKE_NVML_TEMP", "FAKE_NVML_INIT_FAIL"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
    setenv("FABENCH_NVML", fake_lib, 1);
    return 0;
}

static telemetry *open_fake(void)
{
    telemetry *tm = NULL;
    char why[256] = "";
    if (telemetry_open(PCI, &tm, why, sizeof why) != 0) fail_msg("telemetry_open: %s", why);
    return tm;
}

/* a window of about ms milliseconds, sampled every 2 ms */
static void window(telemetry *tm, int ms, telemetry_summary *s)
{
    assert_int_equal(telemetry_begin(tm, 2), 0);
    sleep_ms(ms);
    telemetry_end(tm, s);
}

static void test_window(void **state)
{
    (void)state;
    setenv("FAKE_NVML_SM", "1605", 1);
    setenv("FAKE_NVML_POWER_W", "690", 1);
    setenv("FAKE_NVML_TEMP", "63", 1);
    setenv("FAKE_NVML_REASONS", "0x4", 1); /* sw_power_cap */
    telemetry *tm = open_fake();
    telemetry_summary s;
    window(tm, 200, &s);
    assert_true(s.samples >= 10); /* one at once, one at the end, one every 2 ms between */
    assert_true(s.sm_mhz == 1605 && s.sm_mhz_min == 1605);
    assert_true(fabs(s.power_w - 690) < 0.05 * 690); /* from the energy counter over 0.2 s */
    assert_true(s.temp_c == 63);
    assert_true(s.events == TEL_SW_POWER_CAP);
    /* a second window on the same handle starts afresh */
    setenv("FAKE_NVML_SM", "1980", 1);
    setenv("FAKE_NVML_REASONS", "0", 1);
    window(tm, 30, &s);
    assert_true(s.sm_mhz == 1980 && s.events == 0);
    telemetry_close(tm);
}

static void test_idle_samples_left_out(void **state)
{
    (void)state;
    setenv("FAKE_NVML_IDLE_EVERY", "2", 1); /* every other sample idle at 345 MHz */
    setenv("FAKE_NVML_REASONS", "0x20", 1);
    telemetry *tm = open_fake();
    telemetry_summary s;
    window(tm, 60, &s);
    assert_true(s.samples >= 3);
    assert_true(s.sm_mhz == 1755 && s.sm_mhz_min == 1755);
    assert_true(s.events == TEL_SW_THERMAL); /* idle is never reported */
    /* a GPU that was idle throughout: every sample counts */
    setenv("FAKE_NVML_IDLE_EVERY", "1", 1);
    window(tm, 30, &s);
    assert_true(s.samples >= 2);
    assert_true(s.sm_mhz == 345 && s.events == 0);
    telemetry_close(tm);
}

static void test_power_without_energy_counter(void **state)
{
    (void)state;
    setenv("FAKE_NVML_NO_ENERGY", "1", 1);
    setenv("FAKE_NVML_POWER_W", "420", 1);
    telemetry *tm = open_fake();
    telemetry_summary s;
    window(tm, 30, &s);
    assert_true(s.power_w == 420); /* the mean of the readings */
    telemetry_close(tm);
}

static void test_short_window(void **state)
{
    (void)state;
    telemetry *tm = open_fake();
    telemetry_summary s;
    assert_int_equal(telemetry_begin(tm, 1000), 0); /* ends before the thread's first sample */
    telemetry_end(tm, &s);
    assert_true(s.samples >= 2 && s.sm_mhz == 1755);
    assert_true(s.power_w == 500); /* too short for the energy counter: the readings' mean */
    telemetry_end(tm, &s); /* no window open: nothing read */
    assert_int_equal(s.samples, 0);
    assert_true(isnan(s.sm_mhz) && isnan(s.power_w) && isnan(s.temp_c));
    telemetry_close(tm);
}

static void test_no_telemetry(void **state)
{
    (void)state;
    telemetry_summary s;
    assert_int_equal(telemetry_begin(NULL, 10), 0);
    telemetry_end(NULL, &s);
    assert_int_equal(s.samples, 0);
    assert_true(isnan(s.sm_mhz));
    telemetry_close(NULL);

    telemetry *tm = NULL;
    char why[256];
    setenv("FABENCH_NVML", "/nonexistent/libnvidia-ml.so.1", 1);
    assert_int_equal(telemetry_open(PCI, &tm, why, sizeof why), -1);
    assert_null(tm);
    assert_non_null(strstr(why, "NVML is not installed"));
    setenv("FABENCH_NVML", "off", 1);
    assert_int_equal(telemetry_open(PCI, &tm, why, sizeof why), -1);
    assert_non_null(strstr(why, "FABENCH_NVML=off"));
    setenv("FABENCH_NVML", fake_lib, 1);
    assert_int_equal(telemetry_open("", &tm, why, sizeof why), -1);
    assert_non_null(strstr(why, "no PCI address"));
    assert_int_equal(telemetry_open("0000:99:00.0", &tm, why, sizeof why), -1);
    assert_non_null(strstr(why, "no device at PCI 0000:99:00.0: Not Found"));
    setenv("FAKE_NVML_INIT_FAIL", "1", 1);
    assert_int_equal(telemetry_open(PCI, &tm, why, sizeof why), -1);
    assert_non_null(strstr(why, "nvmlInit: Unknown Error"));
}

static void test_describe(void **state)
{
    (void)state;
    telemetry *tm = open_fake();
    char d[512];
    telemetry_describe(tm, d, sizeof d);
    assert_string_equal(d, "source=nvml pci=0000:3b:00.0 nvml=13.580.95 driver=580.95 power_limit_w=700 sm_max_mhz=1980");
    char small[20];
    telemetry_describe(tm, small, sizeof small); /* cut short, still a string */
    assert_int_equal(strlen(small), sizeof small - 1);
    telemetry_close(tm);
}

static void test_event_names(void **state)
{
    (void)state;
    char b[256], bad[64];
    unsigned long long ev;
    assert_string_equal(telemetry_events_str(0, b, sizeof b), "");
    assert_string_equal(telemetry_events_str(TEL_SW_POWER_CAP | TEL_HW_THERMAL, b, sizeof b), "sw_power_cap;hw_thermal");
    assert_string_equal(telemetry_events_str(TEL_SW_THERMAL | 0x1000ull, b, sizeof b), "sw_thermal;0x1000");
    assert_int_equal(telemetry_events_parse("sw_thermal;0x1000", &ev, bad, sizeof bad), 0);
    assert_true(ev == (TEL_SW_THERMAL | 0x1000ull));
    assert_int_equal(telemetry_events_parse("", &ev, bad, sizeof bad), 0);
    assert_true(ev == 0);
    for (unsigned long long bit = 1; bit <= TEL_DISPLAY_CLOCKS; bit <<= 1) { /* every name both ways */
        assert_int_equal(telemetry_events_parse(telemetry_events_str(bit, b, sizeof b), &ev, bad, sizeof bad), 0);
        assert_true(ev == bit);
    }
    assert_int_equal(telemetry_events_parse("sw_power_cap;warm", &ev, bad, sizeof bad), -1);
    assert_string_equal(bad, "warm");
    assert_int_equal(telemetry_events_parse("0xzz", &ev, bad, sizeof bad), -1);
    assert_string_equal(bad, "0xzz");
    char tiny[12]; /* cut short: whole names only */
    assert_string_equal(telemetry_events_str(TEL_APP_CLOCKS | TEL_SW_POWER_CAP, tiny, sizeof tiny), "app_clocks");
}

/* perf.csv: the readings of a timed row, nothing on a row that was not timed */
static void test_perf_columns(void **state)
{
    (void)state;
    csv_table *t = csvt_new(perf_header, perf_ncols);
    assert_non_null(t);
    shape_t sh = {.batch = 1, .hq = 2, .hkv = 2, .sq = 64, .skv = 64, .d = 64};
    snprintf(sh.name, sizeof sh.name, "t");
    stats_t us = {.n = 5, .median = 100, .p20 = 90, .p80 = 110, .min = 80};
    telemetry_summary tel = {.samples = 7, .sm_mhz = 1605.4, .sm_mhz_min = 1500, .power_w = 688.26, .temp_c = 63,
                             .events = TEL_SW_POWER_CAP};
    perf_row r = {.gpu = "G", .backend = "cuda", .impl = "portable", .shape = &sh, .dt = DT_BF16, .status = ST_OK,
                  .us = &us, .tel = &tel};
    assert_int_equal(perf_add(t, &r), 0);
    r.status = ST_WRONG_RESULT; /* not timed: no readings either */
    assert_int_equal(perf_add(t, &r), 0);
    r.status = ST_OK;
    tel.samples = 0; /* nothing read */
    assert_int_equal(perf_add(t, &r), 0);
    const int c[4] = {csvt_col(t, "sm_mhz"), csvt_col(t, "power_w"), csvt_col(t, "temp_c"), csvt_col(t, "clock_events")};
    for (int i = 0; i < 4; i++) assert_true(c[i] >= 0);
    assert_string_equal(t->rows[0][c[0]], "1605");
    assert_string_equal(t->rows[0][c[1]], "688.3");
    assert_string_equal(t->rows[0][c[2]], "63");
    assert_string_equal(t->rows[0][c[3]], "sw_power_cap");
    for (size_t row = 1; row < 3; row++)
        for (int i = 0; i < 4; i++) assert_string_equal(t->rows[row][c[i]], "");
    csvt_free(t);
}

/* a perf.csv from before the readings (and one from before lens, qlens, page) is widened */
static void test_perf_old_schema_widened(void **state)
{
    (void)state;
    char dir[] = "/tmp/fabench-telemetry-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/perf.csv", dir);
    for (int drop = 4; drop <= 7; drop += 3) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        for (size_t i = 0; i < perf_ncols - (size_t)drop; i++) fprintf(f, "%s%s", i ? "," : "", perf_header[i]);
        fputc('\n', f);
        for (size_t i = 0; i < perf_ncols - (size_t)drop; i++) fprintf(f, "%s%s", i ? "," : "", i == 0 ? "old" : "1");
        fputc('\n', f);
        fclose(f);
        csv_table *t = NULL;
        assert_int_equal(perf_open_append(path, &t, err, sizeof err), 0);
        assert_int_equal(t->ncols, perf_ncols);
        assert_int_equal(t->nrows, 1);
        assert_string_equal(t->rows[0][0], "old");
        assert_string_equal(t->rows[0][perf_ncols - (size_t)drop - 1], "1");
        for (size_t i = perf_ncols - (size_t)drop; i < perf_ncols; i++) {
            assert_string_equal(t->header[i], perf_header[i]);
            assert_string_equal(t->rows[0][i], "");
        }
        assert_int_equal(csvt_write_atomic(t, path, err, sizeof err), 0);
        csvt_free(t);
        /* written back in the current schema: it opens as it is */
        assert_int_equal(perf_open_append(path, &t, err, sizeof err), 0);
        assert_int_equal(t->ncols, perf_ncols);
        csvt_free(t);
    }
    /* a header that is not an earlier schema is still refused */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("gpu,backend,something\nx,y,z\n", f);
    fclose(f);
    csv_table *t = NULL;
    assert_int_equal(perf_open_append(path, &t, err, sizeof err), 2);
    assert_non_null(strstr(err, "differs from the expected"));
    unlink(path);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    (void)argc;
    /* the fake library sits beside this program */
    char self[PATH_MAX];
    snprintf(self, sizeof self, "%s", argv[0]);
    char *slash = strrchr(self, '/');
    if (slash) *slash = 0;
    else snprintf(self, sizeof self, ".");
    if (!realpath(self, fake_lib)) snprintf(fake_lib, sizeof fake_lib, "%s", self);
    strncat(fake_lib, "/libfake_nvml.so", sizeof fake_lib - strlen(fake_lib) - 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_window, reset),
        cmocka_unit_test_setup(test_idle_samples_left_out, reset),
        cmocka_unit_test_setup(test_power_without_energy_counter, reset),
        cmocka_unit_test_setup(test_short_window, reset),
        cmocka_unit_test_setup(test_no_telemetry, reset),
        cmocka_unit_test_setup(test_describe, reset),
        cmocka_unit_test(test_event_names),
        cmocka_unit_test(test_perf_columns),
        cmocka_unit_test(test_perf_old_schema_widened),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
