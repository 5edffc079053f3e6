/* cache.h: compiled kernels on disk ($FABENCH_CACHE, else $XDG_CACHE_HOME/fabench, else
 * ~/.cache/fabench), keyed by everything that changes a binary; entries carry a checksum,
 * so a truncated or corrupt one is detected, removed and rebuilt. */
#ifndef FABENCH_CACHE_H
#define FABENCH_CACHE_H

#include <stddef.h>

/* A 32-hex-digit key over the parts (source text, defines, runtime, device, arch, driver,
 * compiler versions...). */
void cache_key(const char *const *parts, int nparts, char out[33]);

/* 1 and the entry (malloc'd binary and log, log may be NULL) on a hit; 0 on a miss, also
 * when the entry was corrupt (it is removed). */
int cache_get(const char *key, void **bin, size_t *len, char **log);

/* Stores an entry atomically (temp file, rename). 0, or -1 when the cache is unwritable
 * (the run goes on without it). */
int cache_put(const char *key, const void *bin, size_t len, const char *log);

#endif
