/* fake_nvml.c: a stand-in for libnvidia-ml.so.1 with the few entry points fabench's
 * telemetry calls, its readings set by environment variables, for test_telemetry on a
 * machine without an NVIDIA driver (build/tests/libfake_nvml.so, loaded by FABENCH_NVML).
 *   FAKE_NVML_PCI         the one PCI address it knows (default 0000:3b:00.0)
 *   FAKE_NVML_SM          SM clock, MHz (default 1755)
 *   FAKE_NVML_REASONS     clock event bits of a busy sample (default 0)
 *   FAKE_NVML_IDLE_EVERY  every Nth sample (counted by clock reads) is idle: clock
 *                         FAKE_NVML_IDLE_SM, reasons 0x1 (default 0: never)
 *   FAKE_NVML_POWER_W     board power; the energy counter runs at it in real time (default 500)
 *   FAKE_NVML_NO_ENERGY   set: the energy counter is not supported
 *   FAKE_NVML_TEMP        GPU temperature, C (default 55)
 *   FAKE_NVML_INIT_FAIL   set: nvmlInit fails */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OK 0
#define ERR_UNINITIALIZED 1
#define ERR_INVALID_ARGUMENT 2
#define ERR_NOT_SUPPORTED 3
#define ERR_NOT_FOUND 6
#define ERR_UNKNOWN 999

typedef struct fake_dev *device;
static struct fake_dev { int dummy; } the_device;
static int inits;
static unsigned long clock_reads;

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 0) : dflt;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the current sample (by the count of clock reads) is an idle one */
static int idle_now(void)
{
    long every = env_long("FAKE_NVML_IDLE_EVERY", 0);
    return every > 0 && clock_reads % (unsigned long)every == 0;
}

int nvmlInit_v2(void)
{
    if (getenv("FAKE_NVML_INIT_FAIL")) return ERR_UNKNOWN;
    inits++;
    return OK;
}

int nvmlShutdown(void)
{
    if (inits <= 0) return ERR_UNINITIALIZED;
    inits--;
    return OK;
}

const char *nvmlErrorString(int r)
{
    switch (r) {
    case OK: return "Success";
    case ERR_NOT_FOUND: return "Not Found";
    case ERR_NOT_SUPPORTED: return "Not Supported";
    case ERR_UNINITIALIZED: return "Uninitialized";
    default: return "Unknown Error";
    }
}

int nvmlDeviceGetHandleByPciBusId_v2(const char *pci, device *out)
{
    const char *want = getenv("FAKE_NVML_PCI") ? getenv("FAKE_NVML_PCI") : "0000:3b:00.0";
    if (inits <= 0) return ERR_UNINITIALIZED;
    if (!pci || !out) return ERR_INVALID_ARGUMENT;
    if (strcmp(pci, want) != 0) return ERR_NOT_FOUND;
    *out = &the_device;
    return OK;
}

int nvmlDeviceGetClockInfo(device d, int type, unsigned *mhz)
{
    if (d != &the_device || type != 1 || !mhz) return ERR_INVALID_ARGUMENT;
    clock_reads++;
    *mhz = (unsigned)(idle_now() ? env_long("FAKE_NVML_IDLE_SM", 345) : env_long("FAKE_NVML_SM", 1755));
    return OK;
}

int nvmlDeviceGetMaxClockInfo(device d, int type, unsigned *mhz)
{
    if (d != &the_device || type != 1 || !mhz) return ERR_INVALID_ARGUMENT;
    *mhz = 1980;
    return OK;
}

int nvmlDeviceGetCurrentClocksEventReasons(device d, unsigned long long *bits)
{
    if (d != &the_device || !bits) return ERR_INVALID_ARGUMENT;
    *bits = idle_now() ? 0x1ull : (unsigned long long)env_long("FAKE_NVML_REASONS", 0);
    return OK;
}

int nvmlDeviceGetTemperature(device d, int sensor, unsigned *c)
{
    if (d != &the_device || sensor != 0 || !c) return ERR_INVALID_ARGUMENT;
    *c = (unsigned)env_long("FAKE_NVML_TEMP", 55);
    return OK;
}

int nvmlDeviceGetPowerUsage(device d, unsigned *mw)
{
    if (d != &the_device || !mw) return ERR_INVALID_ARGUMENT;
    *mw = (unsigned)(env_long("FAKE_NVML_POWER_W", 500) * 1000);
    return OK;
}

int nvmlDeviceGetTotalEnergyConsumption(device d, unsigned long long *mj)
{
    if (d != &the_device || !mj) return ERR_INVALID_ARGUMENT;
    if (getenv("FAKE_NVML_NO_ENERGY")) return ERR_NOT_SUPPORTED;
    *mj = (unsigned long long)(now_s() * (double)env_long("FAKE_NVML_POWER_W", 500) * 1000.0);
    return OK;
}

int nvmlDeviceGetEnforcedPowerLimit(device d, unsigned *mw)
{
    if (d != &the_device || !mw) return ERR_INVALID_ARGUMENT;
    *mw = 700000;
    return OK;
}

int nvmlSystemGetDriverVersion(char *buf, unsigned len)
{
    if (!buf || len < 8) return ERR_INVALID_ARGUMENT;
    strcpy(buf, "580.95");
    return OK;
}

int nvmlSystemGetNVMLVersion(char *buf, unsigned len)
{
    if (!buf || len < 10) return ERR_INVALID_ARGUMENT;
    strcpy(buf, "13.580.95");
    return OK;
}
