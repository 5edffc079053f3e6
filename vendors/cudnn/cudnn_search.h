/* cudnn_search.h: the choice among the engine configs cuDNN's heuristics offer: each one built
 * into a plan, run once and verified by the harness, the verified ones timed, the fastest kept;
 * bounded by a count and a time cap. No cuDNN call here: the caller's callbacks do the work. */
#ifndef FBDNN_SEARCH_H
#define FBDNN_SEARCH_H

#include <stddef.h>

#include "common.h"

/* What the search asks of its caller for candidate i (0 .. n-1, the heuristics' order). A
 * callback's why names the candidate itself (the search only passes it on). A return of -1
 * stops the search at once: the caller knows why (a hung or unusable device). */
typedef struct {
    /* Builds candidate i's execution plan: 0, 1 refused (why), -1 stop. */
    int (*build)(void *arg, int i, char *why, size_t len);
    /* Runs candidate i once and has the harness check its output: 0 verified, 1 failed to run
     * (why), 2 wrong result (why), 3 the check itself could not run (why), -1 stop. */
    int (*check)(void *arg, int i, char *why, size_t len);
    /* Times candidate i: 0 with *us its median in microseconds, 1 failed (why), -1 stop.
     * best_us > 0 is the fastest median so far (a hopeless candidate may stop early). */
    int (*time)(void *arg, int i, double best_us, double *us, char *why, size_t len);
    /* Seconds on a monotonic clock; NULL: fb_now (tests pass a fake). */
    double (*now)(void);
} fbdnn_search_ops;

/* The caps, which only stop a search that already has a verified candidate (until then every
 * candidate is tried, as a first-that-works choice would). */
typedef struct {
    int max_configs; /* at most this many candidates tried; <= 0: no cap */
    double max_s;    /* no new candidate built or timed after this long; <= 0: no cap */
} fbdnn_search_limits;

enum { FBDNN_CAP_NONE, FBDNN_CAP_CONFIGS, FBDNN_CAP_TIME };

typedef struct {
    int offered;  /* candidates given */
    int tried;    /* candidates the search tried to build */
    int ok;       /* built and ran cleanly */
    int verified; /* passed the harness's check */
    int timed;    /* verified and timed (0 when only one was verified: nothing to compare) */
    int best;     /* the winner, -1 when none */
    double best_us; /* its median in the search; 0 when it was not timed */
    int capped;   /* FBDNN_CAP_*: what cut the search short */
    status_t status; /* ST_OK with best; else ST_UNSUPPORTED (nothing built), ST_LAUNCH_ERROR
                      * (nothing ran, or nothing verified could be timed), ST_WRONG_RESULT
                      * (something ran, nothing verified) or ST_RESOURCE_LIMIT (the check could
                      * not run) */
    char reason[512]; /* why there is no winner: the counts and the first failure's reason */
} fbdnn_search_result;

/* Searches n candidates. 0 with res filled (res->status says whether there is a winner), or
 * -1 when a callback stopped it (res->reason holds that callback's why). */
int fbdnn_search(int n, const fbdnn_search_ops *ops, void *arg, const fbdnn_search_limits *lim,
                 fbdnn_search_result *res);

/* The counts for perf.csv's config column: "tried=7;ok=5;verified=5;timed=5", with
 * ";cap=configs:8" or ";cap=time:30s" when a cap cut the search short. */
void fbdnn_search_summary(const fbdnn_search_result *res, const fbdnn_search_limits *lim, char *buf, size_t len);

#endif
