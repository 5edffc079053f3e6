/* fuzz_shapes.c: shape files (bench/core/shapes.c) through shapes_load, and suite names
 * through shapes_load_suite. Whatever the input, the loader returns 0, 2 or -1 without a
 * crash or a leak; on failure err is a message and the list is empty; on success every
 * shape meets what shapes.h promises was checked. */
#include "fuzz_common.h"

#include "common.h"
#include "shapes.h"

static void check_list(const char *what, int rc, const shape_list_t *l, const char *err, size_t errlen)
{
    if (rc != 0) {
        if (rc != 2 && rc != -1) fz_fail("%s: returned %d (expected 0, 2 or -1)", what, rc);
        fz_check_err(what, err, errlen);
        if (l->v || l->n) fz_fail("%s: failed (%d) but left %zu shapes", what, rc, l->n);
        return;
    }
    if (l->n == 0 || !l->v) fz_fail("%s: accepted a file with no shapes", what);
    for (size_t i = 0; i < l->n; i++) {
        const shape_t *s = &l->v[i];
        if (!s->name[0] || !memchr(s->name, 0, sizeof s->name)) fz_fail("%s: shape %zu: bad name", what, i);
        if (s->batch < 1 || s->hq < 1 || s->hkv < 1 || s->sq < 1 || s->skv < 1)
            fz_fail("%s: shape '%s' has a size < 1", what, s->name);
        if (!fb_d_supported(s->d)) fz_fail("%s: shape '%s': unsupported d=%d accepted", what, s->name, s->d);
        if (s->hq % s->hkv) fz_fail("%s: shape '%s': hq=%d not a multiple of hkv=%d", what, s->name, s->hq, s->hkv);
        if (s->causal != 0 && s->causal != 1) fz_fail("%s: shape '%s': causal=%d", what, s->name, s->causal);
        if (s->has_dtype && (s->dtype < DT_FP32 || s->dtype > DT_BF16)) fz_fail("%s: shape '%s': dtype %d", what, s->name, (int)s->dtype);
        if (s->nlens < 0 || s->nlens > FB_MAX_LENS) fz_fail("%s: shape '%s': nlens=%d", what, s->name, s->nlens);
        for (int k = 0; k < s->nlens && k < FB_MAX_LENS; k++)
            if (!(s->lens[k] > 0.0 && s->lens[k] <= 1.0)) fz_fail("%s: shape '%s': lens[%d]=%g accepted", what, s->name, k, s->lens[k]);
        if (s->nlens > 0 && s->batch <= 4096) { /* ragged lengths stay within 1 .. the maxima */
            for (int b = 0; b < s->batch; b++) {
                int lq, lk;
                shape_seq_lens(s, b, &lq, &lk);
                if (lq < 1 || lq > s->sq || lk < 1 || lk > s->skv)
                    fz_fail("%s: shape '%s': sequence %d has lengths %d, %d", what, s->name, b, lq, lk);
            }
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(l->v[j].name, s->name)) fz_fail("%s: duplicate name '%s' accepted", what, s->name);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_input_file(data, size);
    char err[FB_ERRLEN];
    shape_list_t l;
    err[0] = 0;
    int rc = shapes_load(path, &l, err, sizeof err);
    check_list("shapes_load", rc, &l, err, sizeof err);
    shapes_free(&l);
    shapes_free(&l); /* freeing twice is allowed (shapes_free clears the list) */

    /* A short input is also tried as a suite name: unknown names (the error lists the
     * suites there are), names with '/' or a leading '.', and the real suites. */
    if (size <= 32 && !memchr(data, 0, size)) {
        char *name = fz_string(data, size, 32, 1);
        err[0] = 0;
        rc = shapes_load_suite(name, &l, err, sizeof err);
        check_list("shapes_load_suite", rc, &l, err, sizeof err);
        shapes_free(&l);
        free(name);
    }
    return 0;
}
