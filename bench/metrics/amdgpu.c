/* amdgpu.c: AMDGPU code objects: the metadata note (a small msgpack reader of our own)
 * and instruction histograms through llvm-objdump. */
#define _GNU_SOURCE
#include "amdgpu.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- bounded little-endian reads ---- */

static uint64_t rd(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* ---- msgpack (big-endian), just what the metadata uses, every read bounded ---- */

typedef struct { const unsigned char *p, *end; } mp_cur;
enum { MP_NIL, MP_BOOL, MP_UINT, MP_INT, MP_FLOAT, MP_STR, MP_BIN, MP_ARRAY, MP_MAP, MP_EXT };
typedef struct {
    int kind;
    uint64_t u;       /* MP_UINT, MP_BOOL; element count of MP_ARRAY / MP_MAP */
    int64_t i;        /* MP_INT */
    const char *s;    /* MP_STR / MP_BIN / MP_EXT payload */
    size_t len;
} mp_val;

static int mp_be(mp_cur *c, int n, uint64_t *v)
{
    if (c->end - c->p < n) return -1;
    uint64_t x = 0;
    for (int i = 0; i < n; i++) x = (x << 8) | c->p[i];
    c->p += n;
    *v = x;
    return 0;
}

static int mp_payload(mp_cur *c, uint64_t n, mp_val *v)
{
    if ((uint64_t)(c->end - c->p) < n) return -1;
    v->s = (const char *)c->p;
    v->len = (size_t)n;
    c->p += n;
    return 0;
}

/* One value's header; strings, binaries and extensions come with their payload, arrays and
 * maps with their element count only (their elements follow). */
static int mp_next(mp_cur *c, mp_val *v)
{
    memset(v, 0, sizeof *v);
    if (c->p >= c->end) return -1;
    const unsigned t = *c->p++;
    uint64_t n;
    if (t <= 0x7f) { v->kind = MP_UINT; v->u = t; return 0; }
    if (t >= 0xe0) { v->kind = MP_INT; v->i = (int8_t)t; return 0; }
    if ((t & 0xf0) == 0x80) { v->kind = MP_MAP; v->u = t & 0x0f; return 0; }
    if ((t & 0xf0) == 0x90) { v->kind = MP_ARRAY; v->u = t & 0x0f; return 0; }
    if ((t & 0xe0) == 0xa0) { v->kind = MP_STR; return mp_payload(c, t & 0x1f, v); }
    switch (t) {
    case 0xc0: v->kind = MP_NIL; return 0;
    case 0xc2: case 0xc3: v->kind = MP_BOOL; v->u = t & 1; return 0;
    case 0xc4: case 0xc5: case 0xc6:
        v->kind = MP_BIN;
        return mp_be(c, 1 << (t - 0xc4), &n) || mp_payload(c, n, v);
    case 0xc7: case 0xc8: case 0xc9: /* ext 8/16/32: length, type byte, data */
        v->kind = MP_EXT;
        return mp_be(c, 1 << (t - 0xc7), &n) || mp_be(c, 1, &v->u) || mp_payload(c, n, v);
    case 0xca: v->kind = MP_FLOAT; return mp_be(c, 4, &n);
    case 0xcb: v->kind = MP_FLOAT; return mp_be(c, 8, &n);
    case 0xcc: case 0xcd: case 0xce: case 0xcf:
        v->kind = MP_UINT;
        return mp_be(c, 1 << (t - 0xcc), &v->u);
    case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
        const int bytes = 1 << (t - 0xd0);
        if (mp_be(c, bytes, &n)) return -1;
        v->kind = MP_INT;
        v->i = bytes == 8 ? (int64_t)n : (int64_t)(n ^ (1ull << (8 * bytes - 1))) - (int64_t)(1ull << (8 * bytes - 1));
        return 0;
    }
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: /* fixext 1..16 */
        v->kind = MP_EXT;
        return mp_be(c, 1, &v->u) || mp_payload(c, 1u << (t - 0xd4), v);
    case 0xd9: case 0xda: case 0xdb:
        v->kind = MP_STR;
        return mp_be(c, 1 << (t - 0xd9), &n) || mp_payload(c, n, v);
    case 0xdc: case 0xdd:
        v->kind = MP_ARRAY;
        return mp_be(c, 2 << (t - 0xdc), &v->u);
    case 0xde: case 0xdf:
        v->kind = MP_MAP;
        return mp_be(c, 2 << (t - 0xde), &v->u);
    }
    return -1; /* 0xc1: never used */
}

/* Skips one whole value (nesting bounded, element counts checked against what is left). */
static int mp_skip(mp_cur *c, int depth)
{
    mp_val v;
    if (depth > 32 || mp_next(c, &v)) return -1;
    if (v.kind != MP_ARRAY && v.kind != MP_MAP) return 0;
    uint64_t items = v.kind == MP_MAP ? 2 * v.u : v.u;
    if (items > (uint64_t)(c->end - c->p)) return -1; /* every element takes a byte at least */
    for (uint64_t k = 0; k < items; k++)
        if (mp_skip(c, depth + 1)) return -1;
    return 0;
}

static int mp_key_is(const mp_val *k, const char *s)
{
    return k->kind == MP_STR && k->len == strlen(s) && !memcmp(k->s, s, k->len);
}

/* One whole value: its header, and for an array or a map its elements skipped. */
static int mp_value(mp_cur *c, mp_val *v)
{
    if (mp_next(c, v)) return -1;
    if (v->kind != MP_ARRAY && v->kind != MP_MAP) return 0;
    uint64_t items = v->kind == MP_MAP ? 2 * v->u : v->u;
    if (items > (uint64_t)(c->end - c->p)) return -1;
    for (uint64_t k = 0; k < items; k++)
        if (mp_skip(c, 1)) return -1;
    return 0;
}

/* One kernel's map; fills m (name into name). Unknown keys are skipped. */
static int read_kernel(mp_cur *c, uint64_t nkeys, amdgpu_kernel_meta *m, char *name, size_t namelen)
{
    static const struct { const char *key; size_t off; } nums[] = {
        {".sgpr_count", offsetof(amdgpu_kernel_meta, sgprs)},
        {".vgpr_count", offsetof(amdgpu_kernel_meta, vgprs)},
        {".agpr_count", offsetof(amdgpu_kernel_meta, agprs)},
        {".sgpr_spill_count", offsetof(amdgpu_kernel_meta, sgpr_spills)},
        {".vgpr_spill_count", offsetof(amdgpu_kernel_meta, vgpr_spills)},
        {".group_segment_fixed_size", offsetof(amdgpu_kernel_meta, lds_bytes)},
        {".private_segment_fixed_size", offsetof(amdgpu_kernel_meta, scratch_bytes)},
        {".max_flat_workgroup_size", offsetof(amdgpu_kernel_meta, max_flat_workgroup_size)},
        {".wavefront_size", offsetof(amdgpu_kernel_meta, wavefront_size)},
        {".kernarg_segment_size", offsetof(amdgpu_kernel_meta, kernarg_bytes)},
    };
    name[0] = 0;
    for (uint64_t k = 0; k < nkeys; k++) {
        mp_val key;
        if (mp_next(c, &key)) return -1;
        int done = 0;
        if (mp_key_is(&key, ".name")) {
            mp_val v;
            if (mp_value(c, &v)) return -1;
            if (v.kind == MP_STR) snprintf(name, namelen, "%.*s", (int)(v.len < namelen ? v.len : namelen - 1), v.s);
            done = 1;
        }
        for (size_t i = 0; !done && i < sizeof nums / sizeof nums[0]; i++) {
            if (!mp_key_is(&key, nums[i].key)) continue;
            mp_val v;
            if (mp_value(c, &v)) return -1;
            long *dst = (long *)((char *)m + nums[i].off);
            if (v.kind == MP_UINT && v.u <= (uint64_t)LONG_MAX) *dst = (long)v.u;
            else if (v.kind == MP_INT && v.i >= 0) *dst = (long)v.i;
            done = 1;
        }
        if (!done && mp_skip(c, 1)) return -1;
    }
    return 0;
}

/* The msgpack document desc[0..n): kernel `kernel` into *out. */
static int parse_metadata(const unsigned char *desc, size_t n, const char *kernel, amdgpu_kernel_meta *out,
                          char *err, size_t errlen)
{
    mp_cur c = {desc, desc + n};
    mp_val root;
    if (mp_next(&c, &root) || root.kind != MP_MAP) {
        snprintf(err, errlen, "AMDGPU metadata: not a msgpack map (code object v2 or older?)");
        return -1;
    }
    char target[96] = "";
    int found = 0, nkernels = 0;
    for (uint64_t k = 0; k < root.u; k++) {
        mp_val key;
        if (mp_next(&c, &key)) goto bad;
        if (mp_key_is(&key, "amdhsa.target")) {
            mp_val v;
            if (mp_value(&c, &v)) goto bad;
            if (v.kind == MP_STR) snprintf(target, sizeof target, "%.*s", (int)(v.len < sizeof target ? v.len : sizeof target - 1), v.s);
        } else if (mp_key_is(&key, "amdhsa.kernels")) {
            mp_val arr;
            if (mp_next(&c, &arr) || arr.kind != MP_ARRAY) goto bad;
            for (uint64_t i = 0; i < arr.u; i++) {
                mp_val km;
                if (mp_next(&c, &km) || km.kind != MP_MAP) goto bad;
                amdgpu_kernel_meta m;
                memset(&m, 0xff, sizeof m); /* every long -1 */
                m.target[0] = 0;
                char name[256];
                if (read_kernel(&c, km.u, &m, name, sizeof name)) goto bad;
                nkernels++;
                if (!found && !strcmp(name, kernel)) {
                    *out = m;
                    found = 1;
                }
            }
        } else if (mp_skip(&c, 1)) {
            goto bad;
        }
    }
    if (!found) {
        snprintf(err, errlen, "AMDGPU metadata: no kernel named '%s' among %d", kernel, nkernels);
        return -1;
    }
    snprintf(out->target, sizeof out->target, "%s", target);
    return 0;
bad:
    snprintf(err, errlen, "AMDGPU metadata: malformed msgpack at byte %ld of %zu", (long)(c.p - desc), n);
    return -1;
}

#define NT_AMDGPU_METADATA 32
#define EM_AMDGPU 224

/* The notes in elf[off .. off+size): the AMDGPU metadata note's desc. 1 found, 0 not. */
static int find_note(const unsigned char *e, size_t len, uint64_t off, uint64_t size, const unsigned char **desc,
                     size_t *dlen)
{
    if (off > len || size > len - off) return 0;
    const unsigned char *p = e + off, *end = e + off + size;
    while (end - p >= 12) {
        uint64_t namesz = rd(p, 4), descsz = rd(p + 4, 4), type = rd(p + 8, 4);
        p += 12;
        uint64_t nalign = (namesz + 3) & ~3ull, dalign = (descsz + 3) & ~3ull;
        if (nalign > (uint64_t)(end - p)) return 0;
        const unsigned char *name = p;
        p += nalign;
        if (descsz > (uint64_t)(end - p)) return 0;
        if (type == NT_AMDGPU_METADATA && namesz == 7 && !memcmp(name, "AMDGPU", 7)) {
            *desc = p;
            *dlen = (size_t)descsz;
            return 1;
        }
        if (dalign > (uint64_t)(end - p)) return 0;
        p += dalign;
    }
    return 0;
}

int amdgpu_kernel_meta_get(const void *elf, size_t len, const char *kernel, amdgpu_kernel_meta *out,
                           char *err, size_t errlen)
{
    const unsigned char *e = elf;
    if (!e || len < 64 || memcmp(e, "\x7f" "ELF", 4) || e[4] != 2 || e[5] != 1) {
        snprintf(err, errlen, "not a 64-bit little-endian ELF code object");
        return -1;
    }
    if (rd(e + 18, 2) != EM_AMDGPU) {
        snprintf(err, errlen, "ELF machine %u is not AMDGPU (%u)", (unsigned)rd(e + 18, 2), EM_AMDGPU);
        return -1;
    }
    const unsigned char *desc = NULL;
    size_t dlen = 0;
    /* note sections, then note segments */
    uint64_t shoff = rd(e + 0x28, 8), shentsize = rd(e + 0x3a, 2), shnum = rd(e + 0x3c, 2);
    if (shentsize >= 0x28 && shoff <= len && shnum <= (len - shoff) / shentsize)
        for (uint64_t i = 0; i < shnum && !desc; i++) {
            const unsigned char *sh = e + shoff + i * shentsize;
            if (rd(sh + 4, 4) == 7 /* SHT_NOTE */) find_note(e, len, rd(sh + 0x18, 8), rd(sh + 0x20, 8), &desc, &dlen);
        }
    uint64_t phoff = rd(e + 0x20, 8), phentsize = rd(e + 0x36, 2), phnum = rd(e + 0x38, 2);
    if (!desc && phentsize >= 0x28 && phoff <= len && phnum <= (len - phoff) / phentsize)
        for (uint64_t i = 0; i < phnum && !desc; i++) {
            const unsigned char *ph = e + phoff + i * phentsize;
            if (rd(ph, 4) == 4 /* PT_NOTE */) find_note(e, len, rd(ph + 8, 8), rd(ph + 0x20, 8), &desc, &dlen);
        }
    if (!desc) {
        snprintf(err, errlen, "the code object has no NT_AMDGPU_METADATA note");
        return -1;
    }
    return parse_metadata(desc, dlen, kernel, out, err, errlen);
}

long amdgpu_arch_vgprs(const amdgpu_kernel_meta *m)
{
    const char *t = strstr(m->target, "--gfx");
    int unified = t && (!strncmp(t + 2, "gfx90a", 6) || !strncmp(t + 2, "gfx94", 5) || !strncmp(t + 2, "gfx95", 5));
    if (m->vgprs < 0) return -1;
    return unified && m->agprs > 0 ? m->vgprs - m->agprs : m->vgprs;
}

/* ---- disassembly ---- */

int amdgpu_objdump_histogram(const char *text, size_t len, op_histogram *h)
{
    memset(h, 0, sizeof *h);
    /* instructions since the function's last s_endpgm: counted once another s_endpgm comes,
     * dropped at the next function (the s_nop padding after a kernel's end) */
    size_t cap = 0, npend = 0;
    const char **pend = NULL;
    size_t *plen = NULL;
    int in_text = 0, rc = 0;
    const char *p = text, *end = text + len;
    while (p < end && rc == 0) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *s = p;
        p = eol + 1;
        if ((size_t)(eol - s) >= 23 && !memcmp(s, "Disassembly of section ", 23)) {
            in_text = (size_t)(eol - s) >= 28 && !memcmp(s + 23, ".text", 5);
            npend = 0;
            continue;
        }
        if (!in_text) continue;
        if (s < eol && *s != '\t' && *s != ' ') { npend = 0; continue; } /* "<symbol>:" starts a function */
        while (s < eol && isspace((unsigned char)*s)) s++;
        if (s >= eol || !islower((unsigned char)*s)) continue;
        const char *e = s;
        while (e < eol && (isalnum((unsigned char)*e) || *e == '_' || *e == '.')) e++;
        if (npend == cap) {
            size_t ncap = cap ? 2 * cap : 256;
            const char **np = realloc(pend, ncap * sizeof *np);
            if (!np) { rc = -1; break; }
            pend = np;
            size_t *nl = realloc(plen, ncap * sizeof *nl);
            if (!nl) { rc = -1; break; }
            plen = nl;
            cap = ncap;
        }
        pend[npend] = s;
        plen[npend++] = (size_t)(e - s);
        if ((size_t)(e - s) == 8 && !memcmp(s, "s_endpgm", 8)) {
            for (size_t i = 0; i < npend && rc == 0; i++) rc = op_histogram_add(h, pend[i], plen[i]);
            npend = 0;
        }
    }
    free(pend);
    free(plen);
    if (rc) op_histogram_free(h);
    return rc;
}

static int executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The next llvm-objdump candidate (index *i onward) that exists, into out. */
static int objdump_candidate(int *i, char *out, size_t outlen)
{
    const char *env = getenv("FABENCH_LLVM_OBJDUMP"), *rocm = getenv("ROCM_PATH");
    const char *path = getenv("PATH");
    for (; *i < 64; (*i)++) {
        int k = *i;
        out[0] = 0;
        if (k == 0 && env && *env) snprintf(out, outlen, "%s", env);
        else if (k == 1 && rocm && *rocm) snprintf(out, outlen, "%s/llvm/bin/llvm-objdump", rocm);
        else if (k == 2) snprintf(out, outlen, "/opt/rocm/llvm/bin/llvm-objdump");
        else if (k >= 3 && k <= 24 && path) { /* llvm-objdump-24 .. -15, then plain, on PATH */
            char name[32];
            if (k < 13) snprintf(name, sizeof name, "llvm-objdump-%d", 24 - (k - 3));
            else if (k == 13) snprintf(name, sizeof name, "llvm-objdump");
            else continue;
            const char *d = path;
            while (*d && !out[0]) {
                const char *c = strchr(d, ':');
                size_t dl = c ? (size_t)(c - d) : strlen(d);
                char cand[1024];
                snprintf(cand, sizeof cand, "%.*s/%s", (int)dl, dl ? d : ".", name);
                if (executable(cand)) snprintf(out, outlen, "%s", cand);
                d = c ? c + 1 : d + dl;
            }
        }
        if (out[0] && executable(out)) { (*i)++; return 0; }
    }
    return -1;
}

/* Runs argv, its stdout and stderr into a malloc'd buffer. 0 or -1. */
static int run_capture(char *const argv[], char **out, size_t *outlen)
{
    int fd[2];
    if (pipe(fd) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) { close(fd[0]); close(fd[1]); return -1; }
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    int rc = buf ? 0 : -1;
    for (;;) {
        if (rc == 0 && n + 4097 > cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) rc = -1; else { buf = nb; cap *= 2; }
        }
        char sink[4096];
        ssize_t r = rc == 0 ? read(fd[0], buf + n, 4096) : read(fd[0], sink, sizeof sink);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        if (r == 0) break;
        if (rc == 0) n += (size_t)r;
    }
    close(fd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {}
    if (rc != 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) { free(buf); return -1; }
    buf[n] = 0;
    *out = buf;
    *outlen = n;
    return 0;
}

int amdgpu_isa_histogram(const void *elf, size_t len, const char *mcpu, op_histogram *h, char *tool, size_t toollen,
                         char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    for (const char *c = mcpu; *c; c++)
        if (!isalnum((unsigned char)*c)) { snprintf(err, errlen, "bad target name '%s'", mcpu); return -1; }
    const char *tmp = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/fabench-co-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) { snprintf(err, errlen, "cannot create a temporary file in %s", tmp && *tmp ? tmp : "/tmp"); return -1; }
    size_t w = 0;
    while (w < len) {
        ssize_t r = write(fd, (const char *)elf + w, len - w);
        if (r <= 0) break;
        w += (size_t)r;
    }
    close(fd);
    if (w != len) { unlink(path); snprintf(err, errlen, "cannot write %s", path); return -1; }
    char cpu[64], triple[] = "--triple=amdgcn-amd-amdhsa", dis[] = "-d", noraw[] = "--no-show-raw-insn";
    snprintf(cpu, sizeof cpu, "--mcpu=%s", mcpu);
    int i = 0, rc = -1;
    char exe[1024];
    snprintf(err, errlen, "no llvm-objdump found (install Debian's llvm, or set FABENCH_LLVM_OBJDUMP)");
    while (rc != 0 && objdump_candidate(&i, exe, sizeof exe) == 0) {
        char *argv[] = {exe, dis, triple, cpu, noraw, path, NULL};
        char *out = NULL;
        size_t n = 0;
        if (run_capture(argv, &out, &n) != 0) {
            snprintf(err, errlen, "%s failed on the code object", exe);
            continue;
        }
        if (strstr(out, "is not a recognized processor") || strstr(out, "not a recognized processor")) {
            snprintf(err, errlen, "%s does not know %s (an older LLVM)", exe, mcpu);
            free(out);
            continue;
        }
        rc = amdgpu_objdump_histogram(out, n, h);
        if (rc == 0 && h->n == 0) {
            snprintf(err, errlen, "%s printed no instructions", exe);
            rc = -1;
        }
        if (rc == 0 && tool) snprintf(tool, toollen, "%s", exe);
        free(out);
    }
    unlink(path);
    if (rc == 0 && errlen) err[0] = 0;
    return rc;
}
