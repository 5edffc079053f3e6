/* bandwidth.h: the copy-bandwidth probe (kernels/stream.k through the runtime table): the
 * bytes a second a streaming kernel moves on this device, timed by the one protocol
 * (timing.h) and verified word by word, the ceiling that memory-bound attention (decode,
 * paged decode) is held against (`fabench bandwidth`, docs/method.md). */
#ifndef FABENCH_BANDWIDTH_H
#define FABENCH_BANDWIDTH_H

#include "common.h"
#include "rt.h"
#include "stats.h"
#include "telemetry.h"
#include "timing.h"

typedef enum { BW_COPY, BW_READ } bw_kind; /* copy: reads and writes every byte; read: reads it */
const char *bw_kind_name(bw_kind k);

#define BW_GROUP 256 /* work-items per group (fewer where the device allows fewer) */

typedef struct {
    bw_kind kind;
    long groups;        /* work-groups launched (a grid-stride loop covers the rest) */
    int block;          /* work-items per group */
    int unroll;         /* 16-byte words a work-item has in flight per loop step */
    size_t buffer_bytes; /* the buffer read (copy: and the one written) */
    double bytes_moved; /* per run: read + written */
    status_t status;
    char reason[256];
    stats_t us;         /* per run, when status is ok */
    timing_method how;
    telemetry_summary tel;
} bw_result;

typedef struct bw_probe bw_probe;

/* How big a buffer the probe streams by default: eight times the last-level cache (so that
 * nothing is served from it), at least 256 MiB (on a CPU: 256 MiB), at most a quarter of the largest buffer the
 * device allows and an eighth of its memory; a multiple of 16 bytes. */
size_t bw_default_bytes(const rt_device_info *info);

/* Opens the device, compiles stream.k, and fills a buffer of buffer_bytes (a multiple of 16)
 * with words from seed. 0, or -1 with err. */
int bw_open(const rt_device *dev, size_t buffer_bytes, uint64_t seed, bw_probe **out, char *err, size_t errlen);
void bw_close(bw_probe *p);
/* The unroll depths the probe was compiled for, and how many. */
const int *bw_unrolls(int *n);
/* One variant: launched and checked once, then timed under t, then checked again (the timed
 * runs must have left the same result). res->status says how it went; -1 only when the
 * device can no longer be used (err says why). */
int bw_measure(bw_probe *p, bw_kind kind, long groups, int unroll, const timing_opts *t, bw_result *res, char *err,
               size_t errlen);
/* The grid sizes worth trying: work-groups per compute unit 1, 2, 4 .. 32, then one group per
 * block of words (no loop), within the device's grid limit. Returns how many (at most max). */
int bw_group_counts(const bw_probe *p, int unroll, long *out, int max);
/* The probe's block size and telemetry (NULL when the GPU's clocks cannot be read). */
int bw_block(const bw_probe *p);
telemetry *bw_telemetry(bw_probe *p);

#endif
