/* rt.c: the runtime registry: which runtimes this binary has, whether each one loaded,
 * device selection by "runtime:index" or by name, and the `devices` listing. */
#define _GNU_SOURCE
#include "rt.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern const rt_runtime rt_opencl;
extern const rt_runtime rt_cuda;
extern const rt_runtime rt_hip;

static const rt_runtime *const runtimes[] = { &rt_cuda, &rt_hip, &rt_opencl };
#define NRT ((int)(sizeof runtimes / sizeof runtimes[0]))

/* Loader state: written once per runtime on first use (single-threaded start-up). */
static int inited[NRT];
static int present[NRT];
static char absent_why[NRT][512];

int rt_count(void) { return NRT; }

const rt_runtime *rt_get(int i) { return (i >= 0 && i < NRT) ? runtimes[i] : NULL; }

const rt_runtime *rt_find(const char *name)
{
    for (int i = 0; i < NRT; i++)
        if (!strcmp(runtimes[i]->name, name)) return runtimes[i];
    return NULL;
}

int rt_status(int i, const char **why)
{
    if (i < 0 || i >= NRT) return -1;
    if (!inited[i]) {
        inited[i] = 1;
        present[i] = runtimes[i]->init(absent_why[i], sizeof absent_why[i]) == 0;
    }
    if (why) *why = present[i] ? "" : absent_why[i];
    return present[i] ? 0 : -1;
}

static void list_available(char *err, size_t errlen)
{
    const size_t start = strlen(err);
    size_t o = start;
    for (int r = 0; r < NRT; r++) {
        if (rt_status(r, NULL) != 0) continue;
        for (int d = 0; d < runtimes[r]->device_count(); d++) {
            rt_device_info info;
            if (runtimes[r]->device_info(d, &info) != 0) continue;
            if (o + 1 >= errlen) return;
            o += (size_t)snprintf(err + o, errlen - o, "\n  %s:%d  %s", runtimes[r]->name, d, info.name);
            if (o >= errlen) return;
        }
    }
    if (o == start && o + 1 < errlen)
        snprintf(err + o, errlen - o, "\n  (none: run `fabench devices` to see why)");
}

int rt_select(const char *sel, rt_device *out, char *err, size_t errlen)
{
    const char *colon = strchr(sel, ':');
    if (colon) {
        size_t nlen = (size_t)(colon - sel);
        char *end;
        long idx = strtol(colon + 1, &end, 10);
        for (int r = 0; r < NRT; r++) {
            if (strlen(runtimes[r]->name) != nlen || strncasecmp(sel, runtimes[r]->name, nlen) != 0)
                continue;
            const char *why;
            if (rt_status(r, &why) != 0) {
                snprintf(err, errlen, "device '%s': runtime %s is absent: %s", sel, runtimes[r]->name, why);
                return -1;
            }
            if (*end || end == colon + 1 || idx < 0 || idx >= runtimes[r]->device_count()) {
                snprintf(err, errlen, "device '%s': no such device; available:", sel);
                list_available(err, errlen);
                return -1;
            }
            out->rt = runtimes[r];
            out->index = (int)idx;
            return runtimes[r]->device_info((int)idx, &out->info);
        }
    }
    /* a part of the device name: the first match in registry order */
    for (int r = 0; r < NRT; r++) {
        if (rt_status(r, NULL) != 0) continue;
        for (int d = 0; d < runtimes[r]->device_count(); d++) {
            rt_device_info info;
            if (runtimes[r]->device_info(d, &info) != 0) continue;
            if (strcasestr(info.name, sel)) {
                out->rt = runtimes[r];
                out->index = d;
                out->info = info;
                return 0;
            }
        }
    }
    snprintf(err, errlen, "device '%s': no device matches; available:", sel);
    list_available(err, errlen);
    return -1;
}

void rt_print_devices(FILE *f)
{
    for (int r = 0; r < NRT; r++) {
        const char *why;
        if (rt_status(r, &why) != 0) {
            fprintf(f, "%-8s absent: %s\n", runtimes[r]->name, why);
            continue;
        }
        int n = runtimes[r]->device_count();
        fprintf(f, "%-8s %d device%s\n", runtimes[r]->name, n, n == 1 ? "" : "s");
        for (int d = 0; d < n; d++) {
            rt_device_info i;
            if (runtimes[r]->device_info(d, &i) != 0) continue;
            fprintf(f, "  %s:%d  %s\n", runtimes[r]->name, d, i.name);
            fprintf(f, "      vendor %s | platform %s | arch %s | %s%s%s\n", i.vendor, i.platform, i.arch,
                    i.is_gpu ? "gpu" : "not a gpu", i.pci[0] ? " | pci " : "", i.pci);
            fprintf(f, "      %d compute units, %zu threads/group, %zu KiB shared/group, %.1f GiB memory (max buffer %.1f GiB)\n",
                    i.compute_units, i.max_group_size, i.shared_bytes / 1024,
                    i.global_bytes / 1073741824.0, i.max_alloc_bytes / 1073741824.0);
            fprintf(f, "      driver %s | %s | compiler %s\n", i.driver, i.runtime_version, i.compiler);
        }
    }
}
