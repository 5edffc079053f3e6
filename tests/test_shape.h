/* test_shape.h: a dense shape named after its sizes, for the end-to-end tests. */
#ifndef FABENCH_TEST_SHAPE_H
#define FABENCH_TEST_SHAPE_H

#include <stdio.h>
#include <string.h>

#include "common.h"

static inline shape_t mk(int b, int hq, int hkv, int sq, int skv, int d, int causal)
{
    shape_t s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "b%d-h%d/%d-q%d-k%d-d%d-c%d", b, hq, hkv, sq, skv, d, causal);
    s.batch = b; s.hq = hq; s.hkv = hkv; s.sq = sq; s.skv = skv; s.d = d; s.causal = causal;
    return s;
}

#endif
