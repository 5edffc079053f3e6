/* inputs.c: the inputs every implementation of a shape sees (ours and the vendors'). */
#include "refcheck.h"

void fb_fill_inputs(const shape_t *s, dtype_t dt, uint64_t seed, void *q, void *k, void *v)
{
    const size_t nq = (size_t)s->batch * s->hq * s->sq * s->d;
    const size_t nkv = (size_t)s->batch * s->hkv * s->skv * s->d;
    fb_fill_random(q, nq, dt, seed * 3 + 1);
    fb_fill_random(k, nkv, dt, seed * 3 + 2);
    fb_fill_random(v, nkv, dt, seed * 3 + 3);
}
