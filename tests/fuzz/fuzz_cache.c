/* fuzz_cache.c: kernel cache entries (bench/core/cache.c). The input is written as the entry
 * file of a fixed key in a private cache folder ($FABENCH_CACHE, set once) and read with
 * cache_get. The target parses the entry format itself (magic line, "BLEN LLEN SUM\n",
 * BLEN binary bytes, LLEN log bytes, end of file, SUM the FNV-1a of binary and log) and
 * demands that cache_get agree: a hit only for a well-formed entry, handing back exactly
 * its bytes; a miss for anything else, with the corrupt file removed. Then the input is
 * stored with cache_put and must read back unchanged. */
#include "fuzz_common.h"

#include "cache.h"
#include "common.h"

#define MAGIC "FABENCH-KERNEL-CACHE 1\n"
#define KEY "0123456789abcdef0123456789abcdef"
#define KEY2 "fedcba9876543210fedcba9876543210"


/* Is data a well-formed entry? Fills the offsets of binary and log. */
static int well_formed(const uint8_t *data, size_t size, size_t *boff, unsigned long long *blen,
                       unsigned long long *llen)
{
    size_t m = sizeof MAGIC - 1;
    if (size < m || memcmp(data, MAGIC, m)) return 0;
    /* the numbers line, as fscanf reads it (it may skip any white space, newlines
     * included); a NUL stops fscanf's conversions as it ends sscanf's string */
    char *hdr = fz_string(data + m, size - m, size - m, 0);
    unsigned long long sum = 0;
    int used = 0;
    int n = sscanf(hdr, "%llu %llu %llx%n", blen, llen, &sum, &used);
    int nl = n == 3 && hdr[used] == '\n';
    free(hdr);
    if (!nl) return 0;
    if (*blen == 0 || *blen >= (1ull << 32) || *llen >= (1ull << 28)) return 0;
    *boff = m + (size_t)used + 1;
    if (size - *boff != *blen + *llen) return 0;
    uint64_t h = fb_fnv1a(FB_FNV_OFFSET, data + *boff, (size_t)(*blen + *llen));
    return h == sum;
}

static void entry_path(const char *key, char *out, size_t len)
{
    char name[64];
    snprintf(name, sizeof name, "%s.bin", key);
    fz_path(name, out, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[700], path2[700];
    if (!path[0]) {
        if (setenv("FABENCH_CACHE", fz_dir(), 1) != 0) abort();
        entry_path(KEY, path, sizeof path);
        entry_path(KEY2, path2, sizeof path2);
    }
    fz_write_file(path, data, size);
    void *bin = NULL;
    size_t len = 0;
    char *log = NULL;
    int hit = cache_get(KEY, &bin, &len, &log);
    size_t boff = 0;
    unsigned long long blen = 0, llen = 0;
    int ok = well_formed(data, size, &boff, &blen, &llen);
    if (hit != 0 && hit != 1) fz_fail("cache_get returned %d", hit);
    if (hit && !ok) fz_fail("cache_get accepted a malformed entry (%zu bytes)", size);
    if (!hit && ok) fz_fail("cache_get refused a well-formed entry (binary %llu, log %llu bytes)", blen, llen);
    if (hit) {
        if (len != blen || memcmp(bin, data + boff, len)) fz_fail("cache_get: the binary differs from the entry's");
        if (llen == 0 && log) fz_fail("cache_get: a log for an entry without one");
        if (llen && (!log || memcmp(log, data + boff + blen, (size_t)llen) || log[llen]))
            fz_fail("cache_get: the log differs from the entry's");
        if (access(path, F_OK) != 0) fz_fail("cache_get removed a good entry");
    } else if (access(path, F_OK) == 0) {
        fz_fail("cache_get left a corrupt entry in place");
    }
    free(bin);
    free(log);

    /* put then get: the input as the binary, its first line as the log */
    const uint8_t *nl = memchr(data, '\n', size);
    char *lg = fz_string(data, size, nl ? (size_t)(nl - data) : 0, 0);
    if (cache_put(KEY2, data, size, lg[0] ? lg : NULL) != 0) fz_fail("cache_put failed");
    bin = NULL;
    log = NULL;
    hit = cache_get(KEY2, &bin, &len, &log);
    if (size == 0) {
        if (hit) fz_fail("cache_get: a hit for an empty binary");
    } else {
        if (hit != 1) fz_fail("cache_get: the entry cache_put just wrote is a miss");
        if (len != size || memcmp(bin, data, size)) fz_fail("cache_get: the binary put is not the binary got");
        if (lg[0] ? (!log || strcmp(log, lg)) : log != NULL) fz_fail("cache_get: the log put is not the log got");
    }
    free(bin);
    free(log);
    free(lg);
    unlink(path2);
    return 0;
}
