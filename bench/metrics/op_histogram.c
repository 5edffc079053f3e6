/* op_histogram.c: instruction histograms (how often each instruction occurs in a compiled
 * kernel), counted from PTX here and from SASS and AMD ISA by sass.c and amdgpu.c, and the
 * distances between two of them. */
#define _GNU_SOURCE
#include "op_histogram.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int op_histogram_add(op_histogram *h, const char *op, size_t len)
{
    for (size_t i = 0; i < h->n; i++)
        if (strlen(h->op[i]) == len && !memcmp(h->op[i], op, len)) { h->count[i]++; return 0; }
    char **nop = realloc(h->op, sizeof *nop * (h->n + 1));
    if (!nop) return -1;
    h->op = nop;
    long *nc = realloc(h->count, sizeof *nc * (h->n + 1));
    if (!nc) return -1;
    h->count = nc;
    h->op[h->n] = strndup(op, len);
    if (!h->op[h->n]) return -1;
    h->count[h->n++] = 1;
    return 0;
}

int ptx_histogram(const char *ptx, size_t len, op_histogram *h)
{
    memset(h, 0, sizeof *h);
    const char *p = ptx, *end = ptx + len;
    int in_comment = 0;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *s = p;
        p = eol + 1;
        while (s < eol && isspace((unsigned char)*s)) s++;
        if (in_comment) {
            const char *c = memmem(s, (size_t)(eol - s), "*/", 2);
            if (!c) continue;
            in_comment = 0;
            s = c + 2;
            while (s < eol && isspace((unsigned char)*s)) s++;
        }
        if (s + 1 < eol && s[0] == '/' && s[1] == '*') { in_comment = !memmem(s, (size_t)(eol - s), "*/", 2); continue; }
        if (s >= eol || *s == '.' || *s == '/' || *s == '{' || *s == '}' || *s == ')' || *s == '(') continue;
        if (*s == '@') { /* predicate guard */
            while (s < eol && !isspace((unsigned char)*s)) s++;
            while (s < eol && isspace((unsigned char)*s)) s++;
        }
        const char *e = s;
        while (e < eol && !isspace((unsigned char)*e) && *e != ';' && *e != ',') e++;
        if (e == s || e[-1] == ':') continue; /* a label */
        if (!isalpha((unsigned char)*s)) continue;
        if (op_histogram_add(h, s, (size_t)(e - s)) != 0) { op_histogram_free(h); return -1; }
    }
    return 0;
}

void op_histogram_free(op_histogram *h)
{
    for (size_t i = 0; i < h->n; i++) free(h->op[i]);
    free(h->op);
    free(h->count);
    memset(h, 0, sizeof *h);
}

void hist_distances(const op_histogram *a, const op_histogram *b, double *cosine, double *js, long *shared)
{
    double ta = 0, tb = 0, dot = 0, na = 0, nb = 0, kl = 0;
    long sh = 0;
    for (size_t i = 0; i < a->n; i++) { ta += (double)a->count[i]; na += (double)a->count[i] * (double)a->count[i]; }
    for (size_t j = 0; j < b->n; j++) { tb += (double)b->count[j]; nb += (double)b->count[j] * (double)b->count[j]; }
    if (ta <= 0 || tb <= 0) {
        *cosine = *js = (ta <= 0 && tb <= 0) ? 0 : 1;
        *shared = 0;
        return;
    }
    /* JS divergence = H(m) - (H(p) + H(q)) / 2, summed term by term over the union */
    for (size_t i = 0; i < a->n; i++) {
        double p = (double)a->count[i] / ta, q = 0;
        for (size_t j = 0; j < b->n; j++)
            if (!strcmp(a->op[i], b->op[j])) {
                q = (double)b->count[j] / tb;
                dot += (double)a->count[i] * (double)b->count[j];
                sh++;
                break;
            }
        double m = (p + q) / 2;
        kl += 0.5 * p * log2(p / m);
        if (q > 0) kl += 0.5 * q * log2(q / m);
    }
    for (size_t j = 0; j < b->n; j++) {
        int in_a = 0;
        for (size_t i = 0; i < a->n && !in_a; i++) in_a = !strcmp(a->op[i], b->op[j]);
        if (in_a) continue;
        double q = (double)b->count[j] / tb;
        kl += 0.5 * q * log2(q / (q / 2)); /* p = 0: m = q / 2 */
    }
    double c = 1 - dot / (sqrt(na) * sqrt(nb));
    if (c < 0) c = 0;
    if (kl < 0) kl = 0;
    if (kl > 1) kl = 1;
    *cosine = c;
    *js = sqrt(kl);
    *shared = sh;
}
