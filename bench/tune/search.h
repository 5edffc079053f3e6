/* search.h: searchers over a list of candidate configurations, behind one ask/tell
 * interface: exhaustive (in order), random (a seeded permutation), bo (a Gaussian-
 * process model of log time with expected improvement, after a few random probes) and
 * local (a hill climb: its seeds first, then always the unasked candidate with the fewest
 * parameters different from the best so far) and halving (successive halving: rung 0 times
 * candidates in a seeded random order, each rung after it times the faster half of the one
 * before again, twice as long, until a rung has two or fewer verified: the faster wins) and
 * staged (one candidate of each tile form, then a climb one knob group at a time in the
 * leading forms; docs/method.md). */
#ifndef FABENCH_SEARCH_H
#define FABENCH_SEARCH_H

#include <stdint.h>

#include "config.h"

typedef struct searcher searcher;

/* strategy: "exhaustive", "random", "bo", "local", "halving" or "staged". NULL when out of memory or
 * unknown. */
searcher *searcher_new(const char *strategy, const kconfig *cands, long n, uint64_t seed);
/* Index of the next candidate to try, or -1 when all were asked. halving asks a candidate
 * again in each rung it survives to: searcher_rung says which rung the last ask was for. */
long searcher_ask(searcher *se);
/* halving: rung 0 holds at most this many candidates (budget <= 0: all of them); the rungs
 * after it time candidates already counted. staged: stage 1 takes at most a third of it (8
 * forms at least). The other strategies ignore it. */
void searcher_budget(searcher *se, long budget);
/* The rung of the last ask: 0 for a first timing (always, but for halving); r > 0 asks for a
 * timing 2^r times as long of a candidate told before. */
int searcher_rung(const searcher *se);
/* The best candidate so far and its time (-1 and infinity if none): the fastest told; for
 * halving past rung 0, the fastest of the highest rung by that rung's times (by the rung
 * before's when the highest was cut short). */
long searcher_best(const searcher *se, double *us);
/* The result of candidate idx: its median time in microseconds, NaN when it failed. */
void searcher_tell(searcher *se, long idx, double us);
/* Candidate idx is asked for first, whatever the strategy (the runtime's default, so a
 * search cut short never ends worse than no search). */
void searcher_first(searcher *se, long idx);
/* local: candidate idx is asked before the climb starts (seeds are asked in the order given,
 * at most SEARCH_MAX_SEEDS); the climb then starts from the best of them. staged: asked in
 * stage 1 after the first candidate, each for its tile form, whose stage-1 order they lead.
 * The other strategies ignore it. */
#define SEARCH_MAX_SEEDS 8
void searcher_seed(searcher *se, long idx);
/* staged: the best candidate of each of the (at most k) fastest tile forms, fastest first,
 * for the tuner's head-to-head at run-length timing; the count. Other strategies: 0. */
#define SEARCH_FINALISTS 3
long searcher_finalists(const searcher *se, long *out, long k);
/* The first k candidates it would ask for if told nothing (for precompiling). */
void searcher_preview(const searcher *se, long *out, long k);
void searcher_free(searcher *se);
int search_strategy_known(const char *s);
/* Their names, for messages. */
#define SEARCH_STRATEGIES "exhaustive, random, bo, local, halving, staged"

#endif
