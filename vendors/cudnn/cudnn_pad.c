/* cudnn_pad.c: ragged batches padded for cuDNN and unpadded again (cudnn_pad.h). */
#include "cudnn_pad.h"

#include <stdlib.h>
#include <string.h>

void fbdnn_pad_free(fbdnn_padded *p)
{
    free(p->q); free(p->k); free(p->v); free(p->o); free(p->seq_q); free(p->seq_kv);
    memset(p, 0, sizeof *p);
}

/* Rows [c0, c0 + n) of every head of packed src ([h, total, d]) into rows [0, n) of batch
 * entry bi of dense dst ([b, h, s, d]), or back (to_dense 0). */
static void copy_rows(char *dense, char *packed, int to_dense, int h, int s, long long total, int d, size_t es, int bi,
                      long long c0, int n)
{
    const size_t row = (size_t)d * es;
    for (int hh = 0; hh < h; hh++) {
        char *dp = dense + (((size_t)bi * h + hh) * s) * row;
        char *pp = packed + ((size_t)hh * (size_t)total + (size_t)c0) * row;
        if (to_dense) memcpy(dp, pp, (size_t)n * row);
        else memcpy(pp, dp, (size_t)n * row);
    }
}

int fbdnn_pad_inputs(const shape_t *s, size_t es, const vendor_inputs *in, fbdnn_padded *p)
{
    const size_t nq = (size_t)s->batch * s->hq * s->sq * s->d, nkv = (size_t)s->batch * s->hkv * s->skv * s->d;
    int32_t *cu = malloc(sizeof *cu * 2 * ((size_t)s->batch + 1));
    p->q = calloc(nq, es); p->k = calloc(nkv, es); p->v = calloc(nkv, es); p->o = malloc(nq * es);
    p->seq_q = malloc(sizeof(int32_t) * (size_t)s->batch);
    p->seq_kv = malloc(sizeof(int32_t) * (size_t)s->batch);
    if (!cu || !p->q || !p->k || !p->v || !p->o || !p->seq_q || !p->seq_kv) { free(cu); fbdnn_pad_free(p); return -1; }
    int32_t *cuq = cu, *cukv = cu + s->batch + 1;
    shape_cu_seqlens(s, cuq, cukv);
    const long long tq = shape_total_q(s), tkv = shape_total_kv(s);
    for (int b = 0; b < s->batch; b++) {
        p->seq_q[b] = cuq[b + 1] - cuq[b];
        p->seq_kv[b] = cukv[b + 1] - cukv[b];
        copy_rows(p->q, (char *)in->q, 1, s->hq, s->sq, tq, s->d, es, b, cuq[b], p->seq_q[b]);
        copy_rows(p->k, (char *)in->k, 1, s->hkv, s->skv, tkv, s->d, es, b, cukv[b], p->seq_kv[b]);
        copy_rows(p->v, (char *)in->v, 1, s->hkv, s->skv, tkv, s->d, es, b, cukv[b], p->seq_kv[b]);
    }
    free(cu);
    return 0;
}

/* The real rows of the padded output into the packed O. */
void fbdnn_unpad_output(const shape_t *s, size_t es, const fbdnn_padded *p, void *o)
{
    long long c0 = 0;
    const long long tq = shape_total_q(s);
    for (int b = 0; b < s->batch; b++) {
        copy_rows(p->o, o, 0, s->hq, s->sq, tq, s->d, es, b, c0, p->seq_q[b]);
        c0 += p->seq_q[b];
    }
}

