/* torch_proto.c: the PyTorch adapter's line protocol, parsed strictly. */
#define _GNU_SOURCE
#include "torch_proto.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of key in "w1 k=v k=v reason=free text": copied into out; 0 or -1. reason
 * is always last and runs to the end of the line. */
static int field(const char *line, const char *key, char *out, size_t len)
{
    size_t kl = strlen(key);
    const char *p = line;
    while ((p = strstr(p, key)) != NULL) {
        if ((p == line || p[-1] == ' ') && p[kl] == '=') break;
        p += kl;
    }
    if (!p) return -1;
    p += kl + 1;
    size_t n = strcmp(key, "reason") == 0 ? strlen(p) : strcspn(p, " ");
    if (n >= len) n = len - 1;
    memcpy(out, p, n);
    out[n] = 0;
    return 0;
}

int torch_parse_hello(const char *line, torch_hello *h)
{
    memset(h, 0, sizeof *h);
    if (!strncmp(line, "absent", 6) && (line[6] == ' ' || !line[6])) {
        if (field(line, "reason", h->reason, sizeof h->reason) != 0) snprintf(h->reason, sizeof h->reason, "absent");
        return 1;
    }
    if (strncmp(line, "hello ", 6) != 0) return -1;
    if (field(line, "impls", h->impls, sizeof h->impls) != 0 || !h->impls[0]) return -1;
    if (field(line, "gpu", h->gpu, sizeof h->gpu) != 0) return -1;
    /* everything but impls and gpu is a version for the manifest */
    size_t o = 0;
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", line + 6);
    char *save = NULL;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        if (!strchr(tok, '=') || !strncmp(tok, "impls=", 6) || !strncmp(tok, "gpu=", 4)) continue;
        o += (size_t)snprintf(h->versions + o, sizeof h->versions - o, "%s%s", o ? " " : "", tok);
        if (o >= sizeof h->versions) break;
    }
    return 0;
}

/* timer=WORD batch=N launch_us=US, all three or none (an older adapter): 0, or -1 when
 * malformed. */
static int parse_method(const char *line, timing_method *how)
{
    char timer[16], batch[32], launch[64];
    const int n = (field(line, "timer", timer, sizeof timer) == 0) + (field(line, "batch", batch, sizeof batch) == 0) +
                  (field(line, "launch_us", launch, sizeof launch) == 0);
    how->launch_us = NAN;
    if (n == 0) return 0;
    if (n != 3) return -1;
    char *end;
    long b = strtol(batch, &end, 10);
    if (*end || b < 1 || b > 1000000) return -1;
    double l = strtod(launch, &end);
    if (*end || !(l >= 0) || !isfinite(l)) return -1;
    if (strcmp(timer, "graph") != 0 && strcmp(timer, "gated") != 0 && strcmp(timer, "queue") != 0) return -1;
    how->batch = (int)b;
    how->launch_us = l;
    snprintf(how->timer, sizeof how->timer, "%s", timer);
    return 0;
}

int torch_parse_result(const char *line, vendor_result *res)
{
    memset(res, 0, sizeof *res);
    if (strncmp(line, "result ", 7) != 0) return -1;
    char st[32];
    if (field(line, "status", st, sizeof st) != 0) return -1;
    if (!strcmp(st, "ok")) {
        const char *p = strstr(line, " samples=");
        if (!p) return -1;
        p += 9;
        size_t cap = 64, n = 0;
        double *v = malloc(sizeof *v * cap);
        if (!v) return -1;
        while (*p && *p != ' ') {
            char *end;
            double x = strtod(p, &end);
            if (end == p || !(x > 0) || !isfinite(x) || (*end && *end != ',' && *end != ' ')) { free(v); return -1; }
            if (n == cap) {
                double *nv = realloc(v, sizeof *v * (cap *= 2));
                if (!nv) { free(v); return -1; }
                v = nv;
            }
            v[n++] = x;
            p = *end == ',' ? end + 1 : end;
        }
        if (n == 0) { free(v); return -1; }
        res->status = ST_OK;
        if (field(line, "config", res->config, sizeof res->config) != 0) res->config[0] = 0;
        if (parse_method(line, &res->how) != 0) { free(v); return -1; }
        char lse[8];
        res->has_lse = field(line, "lse", lse, sizeof lse) == 0 && !strcmp(lse, "1");
        res->samples_us = v;
        res->nsamples = n;
        return 0;
    }
    if (!strcmp(st, "unsupported")) res->status = ST_UNSUPPORTED;
    else if (!strcmp(st, "error")) res->status = ST_LAUNCH_ERROR;
    else return -1;
    if (field(line, "reason", res->reason, sizeof res->reason) != 0) snprintf(res->reason, sizeof res->reason, "%s", st);
    return 0;
}
