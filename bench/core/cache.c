/* cache.c: the on-disk kernel cache: key hashing, checked entries, atomic stores. */
#define _GNU_SOURCE
#include "cache.h"
#include "common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "FABENCH-KERNEL-CACHE 1\n"

void cache_key(const char *const *parts, int nparts, char out[33])
{
    uint64_t a = FB_FNV_OFFSET, b = 0x84222325cbf29ce4ull;
    for (int i = 0; i < nparts; i++) {
        size_t n = strlen(parts[i]);
        a = fb_fnv1a(a, &n, sizeof n); /* lengths too: "ab"+"c" differs from "a"+"bc" */
        a = fb_fnv1a(a, parts[i], n);
        b = fb_fnv1a(b, parts[i], n);
        b = fb_fnv1a(b, "\x1f", 1);
    }
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

static int cache_dir(char *out, size_t len)
{
    const char *env = getenv("FABENCH_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (env && *env) snprintf(out, len, "%s", env);
    else if (xdg && *xdg) snprintf(out, len, "%s/fabench", xdg);
    else if (home && *home) snprintf(out, len, "%s/.cache/fabench", home);
    else return -1;
    char err[FB_ERRLEN];
    return fb_mkdir_p(out, err, sizeof err);
}

static int entry_path(const char *key, char *out, size_t len)
{
    char dir[4096];
    if (cache_dir(dir, sizeof dir) != 0) return -1;
    snprintf(out, len, "%s/%s.bin", dir, key);
    return 0;
}

int cache_get(const char *key, void **bin, size_t *len, char **log)
{
    char path[4200];
    if (entry_path(key, path, sizeof path) != 0) return 0;
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char magic[sizeof MAGIC] = "";
    unsigned long long blen = 0, llen = 0, sum = 0;
    char *b = NULL, *l = NULL;
    int ok = fread(magic, 1, sizeof MAGIC - 1, f) == sizeof MAGIC - 1 && !memcmp(magic, MAGIC, sizeof MAGIC - 1) &&
             fscanf(f, "%llu %llu %llx", &blen, &llen, &sum) == 3 && fgetc(f) == '\n' && blen > 0 &&
             blen < (1ull << 32) && llen < (1ull << 28);
    if (ok) { /* the header's lengths must match what the file holds before anything is allocated */
        long here = ftell(f);
        struct stat st;
        ok = here >= 0 && fstat(fileno(f), &st) == 0 && (unsigned long long)st.st_size == (unsigned long long)here + blen + llen;
    }
    if (ok) {
        b = malloc(blen);
        l = malloc(llen + 1);
        ok = b && l && fread(b, 1, blen, f) == blen && fread(l, 1, llen, f) == llen && fgetc(f) == EOF;
    }
    fclose(f);
    if (ok) {
        uint64_t h = fb_fnv1a(FB_FNV_OFFSET, b, blen);
        h = fb_fnv1a(h, l, llen);
        ok = h == sum;
    }
    if (!ok) { /* corrupt or truncated: drop it, the caller rebuilds */
        free(b);
        free(l);
        unlink(path);
        return 0;
    }
    l[llen] = 0;
    *bin = b;
    *len = blen;
    if (log) *log = llen ? l : (free(l), NULL);
    else free(l);
    return 1;
}

int cache_put(const char *key, const void *bin, size_t len, const char *log)
{
    char path[4200], tmp[4300];
    if (entry_path(key, path, sizeof path) != 0) return -1;
    /* unique per process and per call: threads of one process may store the same key */
    static _Atomic unsigned long seq;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%lu", path, (long)getpid(), (unsigned long)seq++);
    size_t llen = log ? strlen(log) : 0;
    uint64_t h = fb_fnv1a(FB_FNV_OFFSET, bin, len);
    h = fb_fnv1a(h, log ? log : "", llen);
    FILE *f = fopen(tmp, "wb");
    if (!f) return -1;
    int ok = fputs(MAGIC, f) >= 0 && fprintf(f, "%zu %zu %016llx\n", len, llen, (unsigned long long)h) > 0 &&
             fwrite(bin, 1, len, f) == len && (llen == 0 || fwrite(log, 1, llen, f) == llen);
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}
