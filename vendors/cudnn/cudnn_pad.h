/* cudnn_pad.h: a ragged batch (packed per head: Q, O [hq, total_q, d], K, V [hkv,
 * total_kv, d]; bench/common.h) padded with zeros to the dense [b, h, s, d] that cuDNN's
 * padding-mask graph reads, each sequence's lengths, and the output unpadded again. */
#ifndef FBDNN_PAD_H
#define FBDNN_PAD_H

#include <stddef.h>
#include <stdint.h>

#include "../vendor.h"

typedef struct {
    void *q, *k, *v, *o;
    int32_t *seq_q, *seq_kv;
} fbdnn_padded;

/* Fills p (malloc'd; fbdnn_pad_free) from the packed inputs of ragged shape s with
 * elements of es bytes. 0, or -1 when memory runs out (p left empty). */
int fbdnn_pad_inputs(const shape_t *s, size_t es, const vendor_inputs *in, fbdnn_padded *p);
/* The real rows of the padded output p->o into the packed o ([hq, total_q, d]). */
void fbdnn_unpad_output(const shape_t *s, size_t es, const fbdnn_padded *p, void *o);
void fbdnn_pad_free(fbdnn_padded *p);

#endif
