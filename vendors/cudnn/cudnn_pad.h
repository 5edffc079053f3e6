/* cudnn_pad.h: the harness's inputs in the layouts cuDNN's padded and paged graphs read: a
 * ragged batch (packed per head: Q, O [hq, total_q, d], K, V [hkv, total_kv, d];
 * bench/core/common.h) padded with zeros to dense [b, h, s, d], each sequence's lengths, K and V
 * scattered into shuffled pages with a block table for a paged cache, and the output and
 * the softmax statistics unpadded again. */
#ifndef FBDNN_PAD_H
#define FBDNN_PAD_H

#include <stddef.h>
#include <stdint.h>

#include "../vendor.h"

typedef struct {
    void *q, *k, *v, *o;     /* Q and O dense [b, hq, sq, d]; K, V dense [b, hkv, skv, d], or
                              * pages [b * pages_per_seq, hkv, page, d] for a paged cache */
    int32_t *seq_q, *seq_kv; /* [b] */
    int32_t *bt;             /* paged: block table [b, pages_per_seq]; else NULL */
    size_t kv_bytes;         /* bytes of k (and of v) */
} fbdnn_padded;

/* Fills p (malloc'd; fbdnn_pad_free) from the inputs of shape s (dense or ragged, paged or
 * not) with elements of es bytes; seed shuffles the pages. 0, or -1 when memory runs out
 * (p left empty). */
int fbdnn_pad_inputs(const shape_t *s, size_t es, const vendor_inputs *in, uint64_t seed, fbdnn_padded *p);
/* The real rows of the padded output p->o into o, in the harness's layout for s. */
void fbdnn_unpad_output(const shape_t *s, size_t es, const fbdnn_padded *p, void *o);
/* The real rows of cuDNN's softmax statistics stats (float [b, hq, sq], dense, padded rows
 * included) into lse, the harness's log-sum-exp layout for s ([b, hq, sq], or packed [hq,
 * total_q] when ragged). */
void fbdnn_unpad_lse(const shape_t *s, const float *stats, float *lse);
void fbdnn_pad_free(fbdnn_padded *p);

#endif
