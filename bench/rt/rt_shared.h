/* rt_shared.h: what the CUDA and HIP runtimes have in common. Both drive a driver-style
 * API (a module, a function, cuLaunchKernel / hipModuleLaunchKernel with an array of
 * pointers to the arguments, a stream that is polled), so the checks before a launch, the
 * argument array and the bounded wait are written once, here. */
#ifndef FABENCH_RT_SHARED_H
#define FABENCH_RT_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include "rt.h"

/* log with line appended on a line of its own; log may be NULL. On allocation failure
 * the old log is returned unchanged. */
char *rt_log_append(char *log, const char *line);

/* 0 when grid and block fit a launch (nonzero, at most UINT_MAX, within max_grid where it
 * is given and nonzero, and at most max_threads threads a block where that is positive);
 * else RT_ERESOURCE with err naming the launch and `api`'s limits. */
int rt_check_launch(const char *api, const size_t grid[3], const size_t block[3], const size_t *max_grid,
                    long max_threads, char *err, size_t errlen);

/* A kernel's argument array: params[i] points at argument i (a buffer's device address
 * sits in slots[i], scalars are read from the rt_arg itself, which has to outlive the
 * launch call). */
typedef union { uint64_t u; void *p; } rt_param_slot;
typedef struct { void **params; rt_param_slot *slots; } rt_params;

/* Fills out for args; put_buf writes a buffer's device address into its slot. 0, or
 * RT_ERR with err (out of memory, an unknown argument kind); nothing to free then. */
int rt_params_pack(rt_params *out, const rt_arg *args, int nargs, void (*put_buf)(const rt_buf *, rt_param_slot *),
                   char *err, size_t errlen);
void rt_params_free(rt_params *p);

/* Waits for queued work by polling: query returns 0 once it is done, 1 while it is not,
 * or a negative RT_ code with err written. Sleeps 0.1 ms between polls for the first
 * 10 ms, 1 ms after. Returns 0, query's error, or RT_ETIMEOUT past timeout_s seconds. */
int rt_poll(int (*query)(void *arg, char *err, size_t errlen), void *arg, double timeout_s, char *err,
            size_t errlen);

#endif
