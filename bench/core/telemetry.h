/* telemetry.h: what the GPU itself reports while work is timed (SM clock, board power,
 * temperature, the reasons its clocks were held down), sampled by a thread through NVML
 * (libnvidia-ml.so.1, dlopen'd); absent where there is no NVML or no PCI address. */
#ifndef FABENCH_TELEMETRY_H
#define FABENCH_TELEMETRY_H

#include <stddef.h>

typedef struct telemetry telemetry;

/* Clock event ("throttle") reasons, NVML's bit values. */
#define TEL_GPU_IDLE 0x1ull
#define TEL_APP_CLOCKS 0x2ull
#define TEL_SW_POWER_CAP 0x4ull
#define TEL_HW_SLOWDOWN 0x8ull
#define TEL_SYNC_BOOST 0x10ull
#define TEL_SW_THERMAL 0x20ull
#define TEL_HW_THERMAL 0x40ull
#define TEL_HW_POWER_BRAKE 0x80ull
#define TEL_DISPLAY_CLOCKS 0x100ull

/* One window (telemetry_begin .. telemetry_end). Samples taken while the GPU said it was
 * idle are left out (all of them count when every sample was idle). NAN where unknown. */
typedef struct {
    int samples;              /* samples the figures come from; 0: nothing was read */
    double sm_mhz;            /* median SM clock */
    double sm_mhz_min;        /* lowest SM clock */
    double power_w;           /* mean board power: the energy counter over the window, else
                               * the mean of the power readings */
    double temp_c;            /* highest GPU temperature */
    unsigned long long events; /* clock event reasons seen in any counted sample, TEL_GPU_IDLE excluded */
} telemetry_summary;

/* Opens NVML's view of the GPU at PCI address pci ("0000:3b:00.0"; empty: none). The
 * library is $FABENCH_NVML when set ("off": no telemetry), else libnvidia-ml.so.1.
 * 0 and *out, or -1 with the reason in why (no library, no such device). */
int telemetry_open(const char *pci, telemetry **out, char *why, size_t wlen);
void telemetry_close(telemetry *tm);

/* "key=value" pairs separated by spaces for the manifest: NVML's and the driver's versions,
 * the enforced power limit, the highest SM clock. */
void telemetry_describe(const telemetry *tm, char *buf, size_t len);

/* Starts sampling every period_ms (at least 1) on a thread of its own, one sample at once.
 * A NULL tm, or a window already open, does nothing. 0, or -1 when no thread could start. */
int telemetry_begin(telemetry *tm, int period_ms);
/* Takes a last sample, stops the thread and summarises the window into *out (samples 0
 * when tm is NULL or no window was open). */
void telemetry_end(telemetry *tm, telemetry_summary *out);

/* An empty summary: no samples, every figure NAN. */
void telemetry_none(telemetry_summary *out);

/* The event bits as names joined by ';' ("sw_power_cap;sw_thermal"; "" for none), into
 * buf. Returns buf. */
const char *telemetry_events_str(unsigned long long events, char *buf, size_t len);
/* Parses that form back; 0, or -1 naming the unknown word in bad (check-results). */
int telemetry_events_parse(const char *s, unsigned long long *events, char *bad, size_t blen);

#endif
