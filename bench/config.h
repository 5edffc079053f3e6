/* config.h: one configuration of the portable kernel (the -D defines that are tuned),
 * its text form "BLOCK_M=64;BLOCK_N=32;..." (the CLI also accepts ','), and defaults. */
#ifndef FABENCH_CONFIG_H
#define FABENCH_CONFIG_H

#include "common.h"
#include "rt.h"

typedef enum { MMA_FMA = 0 } mma_kind;

typedef struct {
    int block_m, block_n, num_warps, split_kv, kpad;
    mma_kind mma;
    unsigned set; /* bit per field the user gave explicitly (CFG_*) */
    int fault_skip_last_tile; /* test hook, never tuned */
} kconfig;

enum { CFG_BLOCK_M = 1, CFG_BLOCK_N = 2, CFG_NUM_WARPS = 4, CFG_SPLIT_KV = 8, CFG_KPAD = 16, CFG_MMA = 32 };

/* Parses "K=V,K=V" (or ';'), overriding fields of *c and marking them in c->set.
 * Keys: BLOCK_M, BLOCK_N, NUM_WARPS, SPLIT_KV, KPAD, MMA (fma), FAULT_SKIP_LAST_TILE.
 * Returns 0 or 2 with err naming the key. */
int kconfig_parse(const char *s, kconfig *c, char *err, size_t errlen);

/* Canonical text form, ';' separated, every tuned field. */
void kconfig_str(const kconfig *c, char *out, size_t outlen);

/* Fills the fields not in c->set with a default for this device and shape: tiles that
 * fit the device's shared memory, split-KV when there are too few work-groups. */
void kconfig_complete(kconfig *c, const rt_device_info *dev, const shape_t *s, dtype_t dt);

/* Static checks before compiling: returns 0, or ST_UNSUPPORTED / ST_RESOURCE_LIMIT with
 * reason, e.g. thread count above the device limit, shared memory above its size. */
status_t kconfig_check(const kconfig *c, const rt_device_info *dev, const shape_t *s, char *reason, size_t len);

/* Shared memory bytes the fma path declares for this configuration. */
size_t kconfig_shared_bytes(const kconfig *c, int d);

#endif
