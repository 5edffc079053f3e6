/* op_histogram.h: an instruction histogram of a compiled kernel (PTX, SASS or AMD ISA: each
 * instruction with its modifiers and how often it occurs), and distances between two. The
 * readers of each kind of code (ptx_histogram here, sass.h, amdgpu.h) fill one. */
#ifndef FABENCH_OP_HISTOGRAM_H
#define FABENCH_OP_HISTOGRAM_H

#include <stddef.h>

typedef struct {
    size_t n;
    char **op;      /* instruction names with their modifiers, e.g. mma.sync.aligned.m16n8k16... */
    long *count;
} op_histogram;

/* Adds one occurrence of the instruction op[0..len). 0 or -1 (out of memory). */
int op_histogram_add(op_histogram *h, const char *op, size_t len);
void op_histogram_free(op_histogram *h);

/* Counts the instructions of a PTX text (labels, directives, comments and braces are not
 * instructions; a predicate guard such as "@%p1" is dropped). 0 or -1 (out of memory). */
int ptx_histogram(const char *ptx, size_t len, op_histogram *h);

/* Distances between two histograms taken as distributions over instructions:
 * cosine distance 1 - cos(a, b), and the Jensen-Shannon distance (square root of the
 * divergence, base 2), both in [0, 1]; 0 for identical mixes. *shared counts the
 * instructions both use. Empty histograms are at distance 1 from anything else. */
void hist_distances(const op_histogram *a, const op_histogram *b, double *cosine, double *js, long *shared);

#endif
