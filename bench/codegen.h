/* codegen.h: static code metrics of compiled configurations: the instruction histogram of
 * a PTX text, and `fabench compile --target ARCH`, which compiles configurations for a GPU
 * that need not be present and writes codegen.csv (histograms) and compiled.csv (registers,
 * spills, shared memory, binary size) under results/<target>/. */
#ifndef FABENCH_CODEGEN_H
#define FABENCH_CODEGEN_H

#include <stddef.h>

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

int cmd_compile(int argc, char **argv);

#endif
