/* codegen.h: static code metrics of compiled configurations: the instruction histogram of
 * a PTX text, and `fabench compile --target ARCH`, which compiles configurations for a GPU
 * that need not be present and writes codegen.csv (histograms) and compiled.csv (registers,
 * spills, shared memory, binary size) under results/<target>/. */
#ifndef FABENCH_CODEGEN_H
#define FABENCH_CODEGEN_H

#include <stddef.h>

#include "rt.h"

typedef struct {
    size_t n;
    char **op;      /* instruction names with their modifiers, e.g. mma.sync.aligned.m16n8k16... */
    long *count;
} op_histogram;

/* Counts the instructions of a PTX text (labels, directives, comments and braces are not
 * instructions; a predicate guard such as "@%p1" is dropped). 0 or -1 (out of memory). */
int ptx_histogram(const char *ptx, size_t len, op_histogram *h);
/* Counts one more op[0..len) in h. 0 or -1 (out of memory). */
int op_histogram_add(op_histogram *h, const char *op, size_t len);
void op_histogram_free(op_histogram *h);
/* Adds one occurrence of the instruction op[0..len). 0 or -1 (out of memory). */
int op_histogram_add(op_histogram *h, const char *op, size_t len);

/* The device facts kconfig needs of a GPU named by its architecture (sm_80, sm_90: NVIDIA;
 * gfx90a, gfx942: AMD), as `compile --target` and `fit-fallback` take them without the GPU:
 * 0 and *d filled, or -1 for a name it does not know. */
int codegen_target_info(const char *arch, rt_device_info *d);

int cmd_compile(int argc, char **argv);

#endif
