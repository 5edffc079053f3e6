/* common.h: the plain data every part of the harness shares: element types, shapes,
 * result statuses, error-buffer conventions and a few small utilities (util.c). */
#ifndef FABENCH_COMMON_H
#define FABENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Exit status for bad input (files, options): the run stops before any work. */
#define FB_EXIT_BADINPUT 2
/* Error buffers passed as (char *err, size_t errlen) are this long by convention. */
#define FB_ERRLEN 1024

typedef enum { DT_FP32 = 0, DT_FP16 = 1, DT_BF16 = 2 } dtype_t;

const char *dtype_name(dtype_t dt);             /* "fp32", "fp16", "bf16" */
int dtype_parse(const char *s, dtype_t *out);    /* 0 on success; accepts float32/half/... aliases */
size_t dtype_size(dtype_t dt);                   /* bytes per element in memory */

/* One attention problem: Q [batch, hq, sq, d], K and V [batch, hkv, skv, d]. */
typedef struct {
    char name[64];
    int batch, hq, hkv, sq, skv, d;
    int causal;      /* 1: bottom-right aligned causal mask */
    int has_dtype;   /* the shape file named a dtype for this row */
    dtype_t dtype;
    int line;        /* line in the source file, for messages */
} shape_t;

typedef struct {
    shape_t *v;
    size_t n;
    char source[512]; /* file the shapes came from */
} shape_list_t;

/* Head dimensions the portable kernel supports. */
extern const int fb_supported_d[];
extern const size_t fb_n_supported_d;
int fb_d_supported(int d);

/* Outcome of one measured configuration; the names are the CSV spellings. */
typedef enum {
    ST_OK = 0,
    ST_COMPILE_ERROR,
    ST_RESOURCE_LIMIT,
    ST_LAUNCH_ERROR,
    ST_WRONG_RESULT,
    ST_TIMEOUT,
    ST_UNSUPPORTED,
    ST_ABSENT,
    ST__COUNT
} status_t;
const char *status_name(status_t st);

/* FLOPs of the unmasked (query, key) pairs: 4 * d * pairs * batch * hq. */
double shape_flops(const shape_t *s);
/* Unmasked (query, key) pairs of one (batch, head); bottom-right causal alignment. */
double shape_pairs(const shape_t *s);
/* Bytes of Q, K, V and O moved once (for effective bandwidth). */
double shape_bytes(const shape_t *s, dtype_t dt);

/* The project root (holds kernels/ and bench/suites/): $FABENCH_ROOT, else found by
 * walking up from the executable's directory. Returns 0 and fills out, or -1. */
int fb_root(char *out, size_t outlen);

/* Reads a whole file into a NUL-terminated malloc'd buffer. 0 or -1 with err filled. */
int fb_read_file(const char *path, char **data, size_t *len, char *err, size_t errlen);

/* Lower-case, [a-z0-9-] only, runs of other characters collapsed to '-'. */
void fb_slug(const char *in, char *out, size_t outlen);

/* Monotonic clock in seconds. */
double fb_now(void);

#endif
