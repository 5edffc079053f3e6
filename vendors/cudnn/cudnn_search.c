/* cudnn_search.c: build, run and verify each engine config, time the verified ones, keep the
 * fastest (cudnn_search.h). */
#include "cudnn_search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first reason of each kind of failure, kept for the row when nothing wins. */
typedef struct {
    char refused[400], failed[400], wrong[400], untimed[400];
} first_failures;

static void keep_first(char *slot, size_t len, const char *why)
{
    if (!slot[0]) snprintf(slot, len, "%s", why[0] ? why : "(no reason given)");
}

/* Whether a cap stops the search before its next step; only once something is verified. */
static int cap_reached(const fbdnn_search_limits *lim, double elapsed_s, int tried, int phase_build,
                       fbdnn_search_result *res)
{
    if (res->verified == 0) return 0;
    if (phase_build && lim->max_configs > 0 && tried >= lim->max_configs) {
        res->capped = FBDNN_CAP_CONFIGS;
        return 1;
    }
    if (lim->max_s > 0 && elapsed_s >= lim->max_s) {
        res->capped = FBDNN_CAP_TIME;
        return 1;
    }
    return 0;
}

/* Why no candidate won, from the most telling failure: a wrong answer over a failed run
 * over a refused plan. */
static void no_winner(fbdnn_search_result *res, const first_failures *ff)
{
    char counts[96];
    snprintf(counts, sizeof counts, "tried=%d;ok=%d;verified=%d", res->tried, res->ok, res->verified);
    if (res->verified > 0) {
        res->status = ST_LAUNCH_ERROR;
        snprintf(res->reason, sizeof res->reason, "no verified engine config could be timed (%s): %.360s", counts,
                 ff->untimed);
    } else if (ff->wrong[0]) {
        res->status = ST_WRONG_RESULT;
        snprintf(res->reason, sizeof res->reason, "no engine config verified (%s); first: %.360s", counts, ff->wrong);
    } else if (ff->failed[0]) {
        res->status = ST_LAUNCH_ERROR;
        snprintf(res->reason, sizeof res->reason, "no engine config ran (%s); first: %.360s", counts, ff->failed);
    } else {
        res->status = ST_UNSUPPORTED;
        snprintf(res->reason, sizeof res->reason, "no engine config finalized (%d offered); first: %.360s",
                 res->offered, ff->refused[0] ? ff->refused : "none offered");
    }
}

int fbdnn_search(int n, const fbdnn_search_ops *ops, void *arg, const fbdnn_search_limits *lim,
                 fbdnn_search_result *res)
{
    memset(res, 0, sizeof *res);
    res->offered = n > 0 ? n : 0;
    res->best = -1;
    res->status = ST_UNSUPPORTED;
    double (*now)(void) = ops->now ? ops->now : fb_now;
    first_failures ff;
    memset(&ff, 0, sizeof ff);
    int *verified = calloc((size_t)(n > 0 ? n : 1), sizeof *verified);
    if (!verified) {
        res->status = ST_RESOURCE_LIMIT;
        snprintf(res->reason, sizeof res->reason, "out of memory");
        return 0;
    }
    char why[400];
    const double t0 = now();
    int rc = 0;

    /* build, run once, verify */
    for (int i = 0; i < n; i++) {
        if (cap_reached(lim, now() - t0, res->tried, 1, res)) break;
        res->tried++;
        why[0] = 0;
        int b = ops->build(arg, i, why, sizeof why);
        if (b < 0) { rc = -1; goto out; }
        if (b > 0) { keep_first(ff.refused, sizeof ff.refused, why); continue; }
        why[0] = 0;
        int c = ops->check(arg, i, why, sizeof why);
        if (c < 0) { rc = -1; goto out; }
        if (c == 1) { keep_first(ff.failed, sizeof ff.failed, why); continue; }
        res->ok++;
        if (c == 2) { keep_first(ff.wrong, sizeof ff.wrong, why); continue; }
        if (c == 3) { /* no verdict is possible on this shape: not the candidates' fault */
            res->status = ST_RESOURCE_LIMIT;
            snprintf(res->reason, sizeof res->reason, "the harness could not check the output: %.360s", why);
            goto out;
        }
        verified[res->verified++] = i;
    }
    if (res->verified == 1) { /* nothing to compare it with */
        res->best = verified[0];
        res->status = ST_OK;
        goto out;
    }

    /* time the verified ones; the fastest median wins */
    for (int k = 0; k < res->verified; k++) {
        if (res->timed > 0 && cap_reached(lim, now() - t0, res->tried, 0, res)) break;
        double us = 0;
        why[0] = 0;
        int t = ops->time(arg, verified[k], res->best_us, &us, why, sizeof why);
        if (t < 0) { rc = -1; goto out; }
        if (t > 0 || !(us > 0)) { keep_first(ff.untimed, sizeof ff.untimed, t > 0 ? why : "no valid median"); continue; }
        res->timed++;
        if (res->best < 0 || us < res->best_us) {
            res->best = verified[k];
            res->best_us = us;
        }
    }
    if (res->best >= 0) res->status = ST_OK;
    else no_winner(res, &ff);
out:
    if (rc < 0) snprintf(res->reason, sizeof res->reason, "%s", why);
    free(verified);
    return rc;
}

void fbdnn_search_summary(const fbdnn_search_result *res, const fbdnn_search_limits *lim, char *buf, size_t len)
{
    int o = snprintf(buf, len, "tried=%d;ok=%d;verified=%d;timed=%d", res->tried, res->ok, res->verified, res->timed);
    if (o < 0 || (size_t)o >= len) return;
    if (res->capped == FBDNN_CAP_CONFIGS)
        snprintf(buf + o, len - (size_t)o, ";cap=configs:%d", lim->max_configs);
    else if (res->capped == FBDNN_CAP_TIME)
        snprintf(buf + o, len - (size_t)o, ";cap=time:%gs", lim->max_s);
}
