/* cudnn_pad.c: the harness's inputs padded and paged for cuDNN, and unpadded again. */
#include "cudnn_pad.h"

#include <stdlib.h>
#include <string.h>

#include "refcheck.h"

void fbdnn_pad_free(fbdnn_padded *p)
{
    free(p->q); free(p->k); free(p->v); free(p->o); free(p->seq_q); free(p->seq_kv); free(p->bt);
    memset(p, 0, sizeof *p);
}

/* Row r of head h of sequence b in the harness's layout: packed [heads, total, d] from the
 * sequence's first row c0 when ragged, else dense [b, heads, smax, d]. */
static size_t host_row(const shape_t *s, int heads, int smax, long long total, int b, int h, long long c0)
{
    return shape_ragged(s) ? (size_t)((long long)h * total + c0) : ((size_t)b * heads + (size_t)h) * (size_t)smax;
}

/* n rows of `row` bytes of every head of sequence b between the harness's layout and dense
 * [b, heads, smax, ...] (to_dense 0: back). */
static void copy_rows(const shape_t *s, char *dense, char *host, int to_dense, int heads, int smax, long long total,
                      size_t row, int b, long long c0, int n)
{
    for (int h = 0; h < heads; h++) {
        char *dp = dense + (((size_t)b * heads + (size_t)h) * (size_t)smax) * row;
        char *hp = host + host_row(s, heads, smax, total, b, h, c0) * row;
        if (to_dense) memcpy(dp, hp, (size_t)n * row);
        else memcpy(hp, dp, (size_t)n * row);
    }
}

int fbdnn_pad_inputs(const shape_t *s, size_t es, const vendor_inputs *in, uint64_t seed, fbdnn_padded *p)
{
    memset(p, 0, sizeof *p);
    const size_t nq = (size_t)s->batch * s->hq * s->sq * s->d;
    const int paged = shape_paged(s);
    const size_t npages = (size_t)s->batch * (size_t)shape_pages_per_seq(s);
    p->kv_bytes = es * (paged ? npages * (size_t)s->hkv * (size_t)s->page * (size_t)s->d
                              : (size_t)s->batch * s->hkv * s->skv * s->d);
    p->q = calloc(nq, es);
    p->o = malloc(nq * es);
    p->k = calloc(p->kv_bytes, 1);
    p->v = calloc(p->kv_bytes, 1);
    p->seq_q = malloc(sizeof(int32_t) * (size_t)s->batch);
    p->seq_kv = malloc(sizeof(int32_t) * (size_t)s->batch);
    if (paged) p->bt = malloc(sizeof(int32_t) * npages);
    if (!p->q || !p->o || !p->k || !p->v || !p->seq_q || !p->seq_kv || (paged && !p->bt)) { fbdnn_pad_free(p); return -1; }
    const long long tq = shape_total_q(s), tkv = shape_total_kv(s);
    const size_t row = (size_t)s->d * es;
    long long q0 = 0, k0 = 0;
    for (int b = 0; b < s->batch; b++) {
        int lq, lk;
        shape_seq_lens(s, b, &lq, &lk);
        p->seq_q[b] = lq;
        p->seq_kv[b] = lk;
        copy_rows(s, p->q, (char *)in->q, 1, s->hq, s->sq, tq, row, b, q0, lq);
        if (!paged) {
            copy_rows(s, p->k, (char *)in->k, 1, s->hkv, s->skv, tkv, row, b, k0, lk);
            copy_rows(s, p->v, (char *)in->v, 1, s->hkv, s->skv, tkv, row, b, k0, lk);
        }
        q0 += lq;
        k0 += lk;
    }
    if (paged) { /* a vendor's cache: unused rows are zero */
        fb_page_table(s, seed, p->bt);
        fb_page_scatter(s, es, p->bt, in->k, p->k, 0);
        fb_page_scatter(s, es, p->bt, in->v, p->v, 0);
    }
    return 0;
}

void fbdnn_unpad_output(const shape_t *s, size_t es, const fbdnn_padded *p, void *o)
{
    long long q0 = 0;
    const long long tq = shape_total_q(s);
    for (int b = 0; b < s->batch; b++) {
        copy_rows(s, p->o, o, 0, s->hq, s->sq, tq, (size_t)s->d * es, b, q0, p->seq_q[b]);
        q0 += p->seq_q[b];
    }
}

void fbdnn_unpad_lse(const shape_t *s, const float *stats, float *lse)
{
    long long q0 = 0;
    const long long tq = shape_total_q(s);
    for (int b = 0; b < s->batch; b++) {
        int lq, lk;
        shape_seq_lens(s, b, &lq, &lk);
        copy_rows(s, (char *)stats, (char *)lse, 0, s->hq, s->sq, tq, sizeof(float), b, q0, lq);
        q0 += lq;
    }
}
