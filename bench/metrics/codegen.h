/* codegen.h: static code metrics of compiled configurations: `fabench compile --target
 * ARCH` compiles configurations for a GPU that need not be present and writes codegen.csv
 * (instruction histograms, op_histogram.h) and compiled.csv (registers, spills, shared
 * memory, binary size) under results/<target>/. */
#ifndef FABENCH_CODEGEN_H
#define FABENCH_CODEGEN_H

#include <stddef.h>

#include "op_histogram.h"
#include "rt.h"

/* The device facts kconfig needs of a GPU named by its architecture (sm_80, sm_90: NVIDIA;
 * gfx90a, gfx942: AMD), as `compile --target` and `fit-fallback` take them without the GPU:
 * 0 and *d filled, or -1 for a name it does not know. */
int codegen_target_info(const char *arch, rt_device_info *d);

int cmd_compile(int argc, char **argv);

#endif
