/* refdev.h: the full reference on the device: kernels/ref_attn.k (plain attention, one row
 * per work-item, double where the device has it) through the runtime table, checked against
 * the CPU on sampled rows every time it is used; the CPU reference of every row when not. */
#ifndef FABENCH_REFDEV_H
#define FABENCH_REFDEV_H

#include "refcheck.h"
#include "rt.h"

typedef struct fb_refdev fb_refdev;

/* The reference kernel on a device context the caller opened (and closes, after
 * fb_refdev_close). Nothing is compiled yet. 0, or -1 with err (no memory, kernels/ not
 * found). fb_refdev_close releases its modules only when device_usable (0: a kernel may
 * still run there, and releasing could wait for it forever). */
int fb_refdev_open(const rt_device *dev, rt_ctx *ctx, fb_refdev **out, char *err, size_t errlen);
void fb_refdev_close(fb_refdev *rd, int device_usable);

/* Runs the reference of p on the device from inputs already there (q, k, v laid out as the
 * problem says; a paged problem's dense K and V) into ref, allocated here: o, lse and
 * plain_err filled, not yet spot-checked, bound not set, not valid. *fp64: 1 when its sums
 * ran in double. 0; RT_ETIMEOUT (not done within timeout_s: the device still runs it); or
 * -1 with err (no compile, no memory, a failed launch). */
int fb_refdev_compute(fb_refdev *rd, const attn_problem *p, rt_buf *q, rt_buf *k, rt_buf *v, double timeout_s,
                      fb_reference *ref, int *fp64, char *err, size_t errlen);

/* How close the device's rows must be to the CPU's (fb_reference_spot_check's tol_rel, and
 * never more than a sixteenth of the rule's floor): its O is the exact answer rounded to
 * float, so with double sums a few float roundings of the row's largest output; with float
 * sums (an OpenCL device without cl_khr_fp64) the sums' own error over thousands of keys,
 * fine for 16-bit outputs; fp32 outputs then take the CPU's reference. */
#define FB_REFDEV_TOL_FP64 0x1.0p-22
#define FB_REFDEV_TOL_FP32 2e-4

/* Makes ref the full reference of p on the inputs q, k, v (host copies, called seed)
 * unless it already is: on the device through rd (NULL: no device) from dq, dk, dv (NULL:
 * uploaded here from q, k, v), accepted only when its FB_SPOT_ROWS sampled rows agree with
 * the CPU's; else every row on the CPU, and stderr says why (once per rd). A problem of no
 * more rows than the sample goes to the CPU at once. 0; RT_ETIMEOUT (the device did not
 * finish the reference: nothing more should run there; ref freed); -1 (no memory; err). */
int fb_reference_get(fb_refdev *rd, const attn_problem *p, const void *q, const void *k, const void *v, rt_buf *dq,
                     rt_buf *dk, rt_buf *dv, uint64_t seed, double timeout_s, fb_reference *ref, char *err,
                     size_t errlen);

#endif
