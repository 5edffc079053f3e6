/* inputs.c: the inputs every implementation of a shape sees (ours and the vendors'). */
#include "refcheck.h"

#include <string.h>

void fb_fill_inputs(const shape_t *s, dtype_t dt, uint64_t seed, void *q, void *k, void *v)
{
    const size_t nq = shape_q_elems(s);   /* ragged batches: the packed tensors, real tokens only */
    const size_t nkv = shape_kv_elems(s);
    fb_fill_random(q, nq, dt, seed * 3 + 1);
    fb_fill_random(k, nkv, dt, seed * 3 + 2);
    fb_fill_random(v, nkv, dt, seed * 3 + 3);
}

void fb_page_table(const shape_t *s, uint64_t seed, int32_t *bt)
{
    const size_t npages = (size_t)s->batch * (size_t)shape_pages_per_seq(s);
    /* a seeded shuffle (xorshift64*): no sequence's pages are in order or adjacent by accident */
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x5DEECE66Dull;
    for (size_t i = 0; i < npages; i++) bt[i] = (int32_t)i;
    for (size_t i = npages; i > 1; i--) {
        x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
        size_t j = (size_t)((x * 0x2545F4914F6CDD1Dull) >> 33) % i;
        int32_t t = bt[i - 1]; bt[i - 1] = bt[j]; bt[j] = t;
    }
}

void fb_page_scatter(const shape_t *s, size_t es, const int32_t *bt, const void *src, void *dst, int fill)
{
    const int maxp = shape_pages_per_seq(s);
    const size_t row = (size_t)s->d * es;
    const long long total_kv = shape_total_kv(s); /* ragged: rows per head of the packed K, V */
    const unsigned char *in = src;
    unsigned char *out = dst;
    memset(out, fill, (size_t)s->batch * (size_t)maxp * (size_t)s->hkv * (size_t)s->page * row);
    long long k0 = 0; /* ragged: sequence b's first row in the packed K, V */
    for (int b = 0; b < s->batch; b++) {
        int lq, lk;
        shape_seq_lens(s, b, &lq, &lk);
        for (int h = 0; h < s->hkv; h++)
            for (int j = 0; j < lk; j++) {
                const size_t phys = (size_t)bt[(size_t)b * maxp + (size_t)(j / s->page)];
                const size_t d = ((phys * (size_t)s->hkv + (size_t)h) * (size_t)s->page + (size_t)(j % s->page)) * row;
                const size_t from = shape_ragged(s) ? (size_t)((long long)h * total_kv + k0 + j)
                                                    : ((size_t)b * s->hkv + h) * (size_t)s->skv + (size_t)j;
                memcpy(out + d, in + from * row, row);
            }
        k0 += lk;
    }
}
