/* inputs.c: the inputs every implementation of a shape sees (ours and the vendors'). */
#include "refcheck.h"

void fb_fill_inputs(const shape_t *s, dtype_t dt, uint64_t seed, void *q, void *k, void *v)
{
    const size_t nq = shape_q_elems(s);   /* ragged batches: the packed tensors, real tokens only */
    const size_t nkv = shape_kv_elems(s);
    fb_fill_random(q, nq, dt, seed * 3 + 1);
    fb_fill_random(k, nkv, dt, seed * 3 + 2);
    fb_fill_random(v, nkv, dt, seed * 3 + 3);
}
