/* space.h: the portable kernel's search space, read from kernels/space.csv (parameter,
 * value, when), and the enumeration of the configurations that apply to a device and shape. */
#ifndef FABENCH_SPACE_H
#define FABENCH_SPACE_H

#include "common.h"
#include "config.h"
#include "rt.h"

#define SPACE_MAX_VALUES 16
#define SPACE_MAX_PARAMS 32

typedef struct {
    char name[24];
    int nvalues;
    char value[SPACE_MAX_VALUES][16];
    char when[SPACE_MAX_VALUES][64]; /* '&'-joined conditions; empty: always */
} space_param;

typedef struct {
    int nparams;
    space_param p[SPACE_MAX_PARAMS];
    char source[512];
} space_t;

/* Loads and checks a space file: known parameters (those kconfig_parse takes), values it
 * accepts, known conditions (feature:mma_sync, dtype:16bit, MMA=fma, MMA=mma, decode,
 * prefill, gqa, causal, d<=N: head dims up to N, fill: BLOCK_M only where the shape's rows
 * fill more than half the block). Errors name file, line and field; returns 0, 2 (bad input) or -1. */
int space_load(const char *path, space_t *sp, char *err, size_t errlen);
/* kernels/space.csv under the project root. */
int space_load_default(space_t *sp, char *err, size_t errlen);

/* Every combination of values whose conditions hold for this device, shape and dtype,
 * before the static constraints (kconfig_check); *out is malloc'd. Returns the count, or
 * -1 when out of memory. *before counts all combinations of the values that apply. */
long space_enumerate(const space_t *sp, const rt_device_info *dev, const shape_t *s, dtype_t dt,
                     kconfig **out, long *before);

/* space_enumerate that also lists the whole combinations it dropped before compiling (the
 * device's and the shape's static constraints, kconfig_check, and the fill rule), each with
 * the rule's message (tune's pruned.csv); *pruned is malloc'd, *npruned its count. */
typedef struct {
    kconfig c;
    char rule[256];
} space_pruned;
long space_enumerate_pruned(const space_t *sp, const rt_device_info *dev, const shape_t *s, dtype_t dt,
                            kconfig **out, long *before, space_pruned **pruned, long *npruned);

#endif
