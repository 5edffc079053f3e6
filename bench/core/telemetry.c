/* telemetry.c: NVML loaded with dlopen, one handle per GPU, a sampling thread per timed
 * window, and the window's summary (median clock, mean power, hottest reading, the clock
 * event reasons seen). */
#include "telemetry.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

typedef struct nvml_dev *nvml_device; /* nvmlDevice_t */

/* The NVML entry points used: member, symbol (the first that exists of two), signature,
 * required. Values from nvml.h: clock type SM = 1, temperature sensor GPU = 0; every
 * function returns 0 (NVML_SUCCESS) or an error code. */
#define NVML_API(X)                                                                                               \
    X(init, "nvmlInit_v2", "nvmlInit", int, (void), 1)                                                            \
    X(shutdown, "nvmlShutdown", NULL, int, (void), 1)                                                             \
    X(error_string, "nvmlErrorString", NULL, const char *, (int), 1)                                              \
    X(by_pci, "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId", int, (const char *, nvml_device *), 1) \
    X(clock, "nvmlDeviceGetClockInfo", NULL, int, (nvml_device, int, unsigned *), 1)                              \
    X(max_clock, "nvmlDeviceGetMaxClockInfo", NULL, int, (nvml_device, int, unsigned *), 0)                       \
    X(reasons, "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons", int,        \
      (nvml_device, unsigned long long *), 0)                                                                     \
    X(temperature, "nvmlDeviceGetTemperature", NULL, int, (nvml_device, int, unsigned *), 0)                      \
    X(power, "nvmlDeviceGetPowerUsage", NULL, int, (nvml_device, unsigned *), 0)                                  \
    X(energy, "nvmlDeviceGetTotalEnergyConsumption", NULL, int, (nvml_device, unsigned long long *), 0)           \
    X(power_limit, "nvmlDeviceGetEnforcedPowerLimit", NULL, int, (nvml_device, unsigned *), 0)                    \
    X(driver_version, "nvmlSystemGetDriverVersion", NULL, int, (char *, unsigned), 0)                             \
    X(nvml_version, "nvmlSystemGetNVMLVersion", NULL, int, (char *, unsigned), 0)

#define NVML_CLOCK_SM 1
#define NVML_TEMPERATURE_GPU 0

#define X_TYPE(member, sym, alt, ret, params, req) typedef ret(*member##_fn) params;
NVML_API(X_TYPE)
#undef X_TYPE

typedef struct {
    double t;                /* seconds (fb_now) */
    unsigned sm_mhz;         /* 0: not read */
    unsigned long long events;
    int have_events;
    unsigned temp_c, power_mw; /* 0: not read */
} sample;

struct telemetry {
    void *lib;
#define X_MEMBER(member, sym, alt, ret, params, req) member##_fn member;
    NVML_API(X_MEMBER)
#undef X_MEMBER
    nvml_device dev;
    char pci[32];

    /* the open window; the thread owns samples until it is joined */
    pthread_t thread;
    int running;
    atomic_int stop;
    int period_ms;
    sample *samples;
    size_t n, cap;
    double t0, t1;
    unsigned long long e0, e1; /* the energy counter (mJ) at the window's ends */
    int have_energy;
};

static void take_sample(telemetry *tm)
{
    sample s = {.t = fb_now()};
    if (tm->clock(tm->dev, NVML_CLOCK_SM, &s.sm_mhz) != 0) s.sm_mhz = 0;
    if (tm->reasons && tm->reasons(tm->dev, &s.events) == 0) s.have_events = 1;
    if (tm->temperature && tm->temperature(tm->dev, NVML_TEMPERATURE_GPU, &s.temp_c) != 0) s.temp_c = 0;
    if (tm->power && tm->power(tm->dev, &s.power_mw) != 0) s.power_mw = 0;
    if (tm->n == tm->cap) {
        size_t cap = tm->cap ? 2 * tm->cap : 256;
        sample *p = realloc(tm->samples, cap * sizeof *p);
        if (!p) return; /* out of memory: this sample is dropped, the window goes on */
        tm->samples = p;
        tm->cap = cap;
    }
    tm->samples[tm->n++] = s;
}

/* Samples every period_ms, sleeping a millisecond at a time so that telemetry_end never
 * waits long for it. */
static void *sampler(void *arg)
{
    telemetry *tm = arg;
    const struct timespec ms = {.tv_sec = 0, .tv_nsec = 1000000L};
    double next = fb_now() + tm->period_ms * 1e-3;
    while (!atomic_load(&tm->stop)) {
        nanosleep(&ms, NULL);
        if (atomic_load(&tm->stop) || fb_now() < next) continue;
        take_sample(tm);
        /* on after a stall (NVML can take a while) without catching up in a burst */
        next += tm->period_ms * 1e-3;
        if (next < fb_now()) next = fb_now() + tm->period_ms * 1e-3;
    }
    return NULL;
}

/* The first of two names the library exports (NVML renames entry points between versions). */
static void *sym_either(void *lib, const char *a, const char *b)
{
    void *p = dlsym(lib, a);
    return p || !b ? p : dlsym(lib, b);
}

int telemetry_open(const char *pci, telemetry **out, char *why, size_t wlen)
{
    *out = NULL;
    const char *env = getenv("FABENCH_NVML");
    if (env && !strcmp(env, "off")) { snprintf(why, wlen, "FABENCH_NVML=off"); return -1; }
    if (!pci || !pci[0]) { snprintf(why, wlen, "the runtime gave no PCI address for the device"); return -1; }
    telemetry *tm = calloc(1, sizeof *tm);
    if (!tm) { snprintf(why, wlen, "out of memory"); return -1; }
    const char *names[] = {env && env[0] ? env : "libnvidia-ml.so.1", env && env[0] ? NULL : "libnvidia-ml.so"};
    char dlerr[256] = "";
    for (size_t i = 0; i < 2 && names[i] && !tm->lib; i++) {
        tm->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!tm->lib && !dlerr[0]) snprintf(dlerr, sizeof dlerr, "%s", dlerror());
    }
    if (!tm->lib) {
        snprintf(why, wlen, "NVML is not installed (%s): no clock or power readings", dlerr);
        free(tm);
        return -1;
    }
#define X_LOAD(member, sym, alt, ret, params, req)                                                      \
    tm->member = (member##_fn)sym_either(tm->lib, sym, alt);                                            \
    if (!tm->member && req) {                                                                           \
        snprintf(why, wlen, "%s lacks %s", names[0], sym);                                              \
        goto fail;                                                                                      \
    }
    NVML_API(X_LOAD)
#undef X_LOAD
    int rc = tm->init();
    if (rc != 0) {
        snprintf(why, wlen, "nvmlInit: %s", tm->error_string(rc));
        goto fail;
    }
    snprintf(tm->pci, sizeof tm->pci, "%s", pci);
    if ((rc = tm->by_pci(tm->pci, &tm->dev)) != 0) {
        snprintf(why, wlen, "NVML has no device at PCI %s: %s", pci, tm->error_string(rc));
        tm->shutdown();
        goto fail;
    }
    *out = tm;
    return 0;
fail:
    dlclose(tm->lib);
    free(tm);
    return -1;
}

void telemetry_close(telemetry *tm)
{
    if (!tm) return;
    if (tm->running) {
        telemetry_summary s;
        telemetry_end(tm, &s);
    }
    tm->shutdown();
    dlclose(tm->lib);
    free(tm->samples);
    free(tm);
}

void telemetry_describe(const telemetry *tm, char *buf, size_t len)
{
    buf[0] = 0;
    if (!tm || len == 0) return;
    size_t at = 0;
    char v[96];
    unsigned u;
#define PUT(...)                                                                 \
    do {                                                                         \
        int k = snprintf(buf + at, len - at, __VA_ARGS__);                       \
        if (k > 0) at = (size_t)k >= len - at ? len - 1 : at + (size_t)k;        \
    } while (0)
    PUT("source=nvml pci=%s", tm->pci);
    if (tm->nvml_version && tm->nvml_version(v, sizeof v) == 0) PUT(" nvml=%s", v);
    if (tm->driver_version && tm->driver_version(v, sizeof v) == 0) PUT(" driver=%s", v);
    if (tm->power_limit && tm->power_limit(tm->dev, &u) == 0) PUT(" power_limit_w=%.0f", u / 1000.0);
    if (tm->max_clock && tm->max_clock(tm->dev, NVML_CLOCK_SM, &u) == 0) PUT(" sm_max_mhz=%u", u);
#undef PUT
}

int telemetry_begin(telemetry *tm, int period_ms)
{
    if (!tm || tm->running) return 0;
    tm->n = 0;
    tm->period_ms = period_ms < 1 ? 1 : period_ms;
    atomic_store(&tm->stop, 0);
    tm->have_energy = tm->energy && tm->energy(tm->dev, &tm->e0) == 0;
    tm->t0 = fb_now();
    take_sample(tm);
    if (pthread_create(&tm->thread, NULL, sampler, tm) != 0) return -1;
    tm->running = 1;
    return 0;
}

void telemetry_none(telemetry_summary *out)
{
    out->samples = 0;
    out->sm_mhz = out->sm_mhz_min = out->power_w = out->temp_c = NAN;
    out->events = 0;
}

static int cmp_uint(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

void telemetry_end(telemetry *tm, telemetry_summary *out)
{
    telemetry_none(out);
    if (!tm || !tm->running) return;
    atomic_store(&tm->stop, 1);
    pthread_join(tm->thread, NULL);
    tm->running = 0;
    take_sample(tm);
    tm->t1 = fb_now();
    if (tm->have_energy && tm->energy(tm->dev, &tm->e1) != 0) tm->have_energy = 0;

    /* the samples the GPU did not call idle; all of them when it called every one idle */
    size_t busy = 0;
    for (size_t i = 0; i < tm->n; i++) busy += !(tm->samples[i].have_events && (tm->samples[i].events & TEL_GPU_IDLE));
    unsigned *mhz = malloc((tm->n + 1) * sizeof *mhz);
    if (!mhz) return;
    size_t nm = 0, np = 0;
    double psum = 0;
    for (size_t i = 0; i < tm->n; i++) {
        const sample *s = &tm->samples[i];
        if (busy && s->have_events && (s->events & TEL_GPU_IDLE)) continue;
        out->samples++;
        if (s->sm_mhz) mhz[nm++] = s->sm_mhz;
        if (s->have_events) out->events |= s->events & ~TEL_GPU_IDLE;
        if (s->temp_c && (isnan(out->temp_c) || s->temp_c > out->temp_c)) out->temp_c = s->temp_c;
        if (s->power_mw) { psum += s->power_mw / 1000.0; np++; }
    }
    if (nm) {
        qsort(mhz, nm, sizeof *mhz, cmp_uint);
        out->sm_mhz = nm % 2 ? mhz[nm / 2] : 0.5 * (mhz[nm / 2 - 1] + mhz[nm / 2]);
        out->sm_mhz_min = mhz[0];
    }
    free(mhz);
    /* the energy counter moves in steps: over a window shorter than 0.1 s the readings'
     * mean says more */
    if (tm->have_energy && tm->e1 >= tm->e0 && tm->t1 - tm->t0 >= 0.1)
        out->power_w = (double)(tm->e1 - tm->e0) / 1000.0 / (tm->t1 - tm->t0);
    else if (np)
        out->power_w = psum / (double)np;
}

static const struct {
    unsigned long long bit;
    const char *name;
} event_names[] = {
    {TEL_GPU_IDLE, "idle"},           {TEL_APP_CLOCKS, "app_clocks"},         {TEL_SW_POWER_CAP, "sw_power_cap"},
    {TEL_HW_SLOWDOWN, "hw_slowdown"}, {TEL_SYNC_BOOST, "sync_boost"},         {TEL_SW_THERMAL, "sw_thermal"},
    {TEL_HW_THERMAL, "hw_thermal"},   {TEL_HW_POWER_BRAKE, "hw_power_brake"}, {TEL_DISPLAY_CLOCKS, "display_clocks"},
};
#define NEVENT_NAMES (sizeof event_names / sizeof event_names[0])

const char *telemetry_events_str(unsigned long long events, char *buf, size_t len)
{
    size_t at = 0;
    if (len) buf[0] = 0;
    unsigned long long known = 0;
    for (size_t i = 0; i < NEVENT_NAMES; i++) {
        known |= event_names[i].bit;
        if (!(events & event_names[i].bit)) continue;
        int k = snprintf(buf + at, len - at, "%s%s", at ? ";" : "", event_names[i].name);
        if (k < 0 || (size_t)k >= len - at) { /* no room: whole names only */
            buf[at] = 0;
            return buf;
        }
        at += (size_t)k;
    }
    if (events & ~known) {
        int k = snprintf(buf + at, len - at, "%s0x%llx", at ? ";" : "", events & ~known);
        if (k < 0 || (size_t)k >= len - at) buf[at] = 0;
    }
    return buf;
}

int telemetry_events_parse(const char *s, unsigned long long *events, char *bad, size_t blen)
{
    *events = 0;
    while (s && *s) {
        const char *end = strchr(s, ';');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        int found = 0;
        for (size_t i = 0; i < NEVENT_NAMES && !found; i++)
            if (strlen(event_names[i].name) == n && !strncmp(s, event_names[i].name, n)) {
                *events |= event_names[i].bit;
                found = 1;
            }
        if (!found && n > 2 && s[0] == '0' && s[1] == 'x') { /* bits NVML added after this list */
            char word[32];
            char *e = NULL;
            snprintf(word, sizeof word, "%.*s", (int)(n < 31 ? n : 31), s);
            unsigned long long v = strtoull(word + 2, &e, 16);
            if (e && !*e && n < 31) { *events |= v; found = 1; }
        }
        if (!found) {
            snprintf(bad, blen, "%.*s", (int)(n < 64 ? n : 64), s);
            return -1;
        }
        s = end ? end + 1 : NULL;
    }
    return 0;
}
