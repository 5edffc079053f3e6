/* util.c: the small shared helpers declared in common.h: dtype and status names,
 * FLOP and byte accounting, locating the project root, reading files, slugs. */
#define _GNU_SOURCE
#include "common.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const int fb_supported_d[] = {32, 64, 80, 96, 128, 192, 256};
const size_t fb_n_supported_d = sizeof fb_supported_d / sizeof fb_supported_d[0];

int fb_d_supported(int d)
{
    for (size_t i = 0; i < fb_n_supported_d; i++)
        if (fb_supported_d[i] == d) return 1;
    return 0;
}

const char *dtype_name(dtype_t dt)
{
    switch (dt) {
    case DT_FP32: return "fp32";
    case DT_FP16: return "fp16";
    case DT_BF16: return "bf16";
    }
    return "?";
}

int dtype_parse(const char *s, dtype_t *out)
{
    static const struct { const char *name; dtype_t dt; } names[] = {
        {"fp32", DT_FP32}, {"float32", DT_FP32}, {"f32", DT_FP32}, {"float", DT_FP32},
        {"fp16", DT_FP16}, {"float16", DT_FP16}, {"f16", DT_FP16}, {"half", DT_FP16},
        {"bf16", DT_BF16}, {"bfloat16", DT_BF16},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(s, names[i].name) == 0) { *out = names[i].dt; return 0; }
    return -1;
}

size_t dtype_size(dtype_t dt) { return dt == DT_FP32 ? 4 : 2; }

const char *status_name(status_t st)
{
    static const char *names[ST__COUNT] = {
        "ok", "compile_error", "resource_limit", "launch_error",
        "wrong_result", "timeout", "unsupported", "absent",
    };
    return (st >= 0 && st < ST__COUNT) ? names[st] : "?";
}

double seq_pairs(long sq, long skv, int causal)
{
    if (!causal) return (double)sq * (double)skv;
    /* query i (0-based) sees i + skv - sq + 1 keys, the last one all skv of them; rows
     * before lo see none. Closed form, since a results file's row may hold any length. */
    const long first = skv - sq + 1; /* keys of row 0 */
    const long lo = first > 0 ? 0 : 1 - first;
    if (lo >= sq) return 0;
    return (double)(sq - lo) * ((double)(lo + first) + (double)skv) / 2;
}

int shape_ragged(const shape_t *s) { return s->nlens > 0 || s->nqlens > 0; }
int shape_paged(const shape_t *s) { return s->page > 0; }
int shape_pages_per_seq(const shape_t *s) { return s->page > 0 ? (s->skv + s->page - 1) / s->page : 0; }

int frac_len(double frac, int max)
{
    double x = floor(frac * (double)max + 0.5);
    if (x < 1) return 1;
    return x > max ? max : (int)x;
}

void shape_seq_lens(const shape_t *s, int b, int *sq, int *skv)
{
    *sq = s->nqlens > 0 ? frac_len(s->qlens[b % s->nqlens], s->sq)
          : s->nlens > 0 ? frac_len(s->lens[b % s->nlens], s->sq) : s->sq;
    *skv = s->nlens > 0 ? frac_len(s->lens[b % s->nlens], s->skv) : s->skv;
}

void shape_cu_seqlens(const shape_t *s, int32_t *cu_q, int32_t *cu_kv)
{
    long long q = 0, kv = 0;
    for (int b = 0; b <= s->batch; b++) {
        if (cu_q) cu_q[b] = (int32_t)q;
        if (cu_kv) cu_kv[b] = (int32_t)kv;
        if (b == s->batch) break;
        int lq, lk;
        shape_seq_lens(s, b, &lq, &lk);
        q += lq;
        kv += lk;
    }
}

/* The query and key token totals over the batch. */
static void shape_totals(const shape_t *s, long long *tq, long long *tkv)
{
    *tq = *tkv = 0;
    for (int b = 0; b < s->batch; b++) {
        int lq, lk;
        shape_seq_lens(s, b, &lq, &lk);
        *tq += lq;
        *tkv += lk;
    }
}

long long shape_total_q(const shape_t *s)
{
    long long q, kv;
    shape_totals(s, &q, &kv);
    return q;
}

long long shape_total_kv(const shape_t *s)
{
    long long q, kv;
    shape_totals(s, &q, &kv);
    return kv;
}

uint64_t fb_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

size_t shape_q_elems(const shape_t *s)
{
    if (!shape_ragged(s)) return (size_t)s->batch * s->hq * s->sq * s->d;
    return (size_t)shape_total_q(s) * (size_t)s->hq * (size_t)s->d;
}

size_t shape_kv_elems(const shape_t *s)
{
    if (!shape_ragged(s)) return (size_t)s->batch * s->hkv * s->skv * s->d;
    return (size_t)shape_total_kv(s) * (size_t)s->hkv * (size_t)s->d;
}

size_t shape_out_rows(const shape_t *s)
{
    if (!shape_ragged(s)) return (size_t)s->batch * s->hq * s->sq;
    return (size_t)shape_total_q(s) * (size_t)s->hq;
}

static void fracs_str(const double *v, int n, char *out, size_t outlen)
{
    size_t o = 0;
    if (outlen) out[0] = 0;
    for (int i = 0; i < n && o < outlen; i++) o += (size_t)snprintf(out + o, outlen - o, "%s%g", i ? ";" : "", v[i]);
}
void shape_lens_str(const shape_t *s, char *out, size_t outlen) { fracs_str(s->lens, s->nlens, out, outlen); }
void shape_qlens_str(const shape_t *s, char *out, size_t outlen) { fracs_str(s->qlens, s->nqlens, out, outlen); }

/* The pairs of every sequence of a ragged batch, summed. The lengths repeat with the
 * period lcm(nlens, nqlens) (at most 32 * 31), so one period is summed and scaled. */
static double ragged_pairs_sum(const shape_t *s)
{
    int p = s->nlens > 0 ? s->nlens : 1, q = s->nqlens > 0 ? s->nqlens : 1, g = p, r = q;
    while (r) { int t = g % r; g = r; r = t; }
    const int period = p / g * q;
    double per = 0, rest = 0;
    const int tail = s->batch % period;
    for (int b = 0; b < period && b < s->batch; b++) {
        int lq, lk;
        shape_seq_lens(s, b, &lq, &lk);
        const double x = seq_pairs(lq, lk, s->causal);
        per += x;
        if (b < tail) rest += x;
    }
    return s->batch >= period ? per * (double)(s->batch / period) + rest : per;
}

double shape_pairs(const shape_t *s)
{
    if (!shape_ragged(s)) return seq_pairs(s->sq, s->skv, s->causal);
    return ragged_pairs_sum(s) / s->batch;
}

double shape_flops(const shape_t *s)
{
    if (shape_ragged(s)) return 4.0 * s->d * ragged_pairs_sum(s) * s->hq;
    return 4.0 * s->d * shape_pairs(s) * s->batch * s->hq;
}

double shape_bytes(const shape_t *s, dtype_t dt)
{
    double e = (double)dtype_size(dt);
    if (shape_ragged(s)) return e * (2.0 * (double)shape_q_elems(s) + 2.0 * (double)shape_kv_elems(s));
    double q = (double)s->batch * s->hq * s->sq * s->d;
    double kv = (double)s->batch * s->hkv * s->skv * s->d;
    return e * (2 * q + 2 * kv);
}

static int is_root(const char *dir)
{
    char p[PATH_MAX];
    struct stat st;
    snprintf(p, sizeof p, "%s/kernels/space.csv", dir);
    if (stat(p, &st) != 0) return 0;
    snprintf(p, sizeof p, "%s/bench/suites", dir);
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int fb_root(char *out, size_t outlen)
{
    const char *env = getenv("FABENCH_ROOT");
    if (env && *env) {
        if (!is_root(env)) return -1;
        snprintf(out, outlen, "%s", env);
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = 0;
    for (int up = 0; up < 4; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash) break;
        *slash = 0;
        if (exe[0] && is_root(exe)) {
            snprintf(out, outlen, "%s", exe);
            return 0;
        }
    }
    return -1;
}

int fb_read_file(const char *path, char **data, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) { fclose(f); snprintf(err, errlen, "%s: out of memory", path); return -1; }
    for (;;) {
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); fclose(f); snprintf(err, errlen, "%s: out of memory", path); return -1; }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    const int bad = ferror(f), e = errno;
    fclose(f);
    if (bad) { free(buf); snprintf(err, errlen, "%s: read error: %s", path, strerror(e ? e : EIO)); return -1; }
    buf[n] = 0;
    *data = buf;
    if (len) *len = n;
    return 0;
}

int fb_write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        return -1;
    }
    int ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* PATH's folder into dir ("." for a bare name); returns its own name */
static const char *split_dir(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, len, ".");
    else if (slash == path) snprintf(dir, len, "/");
    else snprintf(dir, len, "%.*s", (int)(slash - path), path);
    return slash ? slash + 1 : path;
}

/* PATH with its folder resolved (realpath) and its own name kept; 0, or -1 when the
 * folder does not resolve */
static int resolved(const char *path, char *out, size_t len)
{
    char dir[4096], real[PATH_MAX];
    const char *base = split_dir(path, dir, sizeof dir);
    if (!realpath(dir, real)) return -1;
    snprintf(out, len, "%s/%s", real, base);
    return 0;
}

int fb_same_file(const char *a, const char *b)
{
    if (!a || !b) return 0;
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    /* one of them not there yet: the same name in the same folder */
    char ra[PATH_MAX + 256], rb[PATH_MAX + 256];
    return resolved(a, ra, sizeof ra) == 0 && resolved(b, rb, sizeof rb) == 0 && !strcmp(ra, rb);
}

int fb_distinct_files(const char *const *path, const char *const *name, int nout, int n, char *err, size_t errlen)
{
    for (int i = 0; i < nout; i++)
        for (int j = i + 1; j < n; j++)
            if (path[i] && path[j] && fb_same_file(path[i], path[j])) {
                snprintf(err, errlen, "%s %s is the %s file; it would be overwritten", name[i], path[i], name[j]);
                return -1;
            }
    return 0;
}

int fb_check_writable(const char *path, char *err, size_t errlen)
{
    char dir[4096];
    split_dir(path, dir, sizeof dir);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: is a directory, not a file", path);
        return -1;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: its folder %s does not exist", path, dir);
        return -1;
    }
    if (access(dir, W_OK) != 0) {
        snprintf(err, errlen, "%s: its folder %s is not writable: %s", path, dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* the outputs this process has claimed: the path's hash, and the locked file's descriptor */
typedef struct {
    uint64_t hash;
    int fd;
} output_claim;
static output_claim *claims;
static size_t nclaims, capclaims;

int fb_claim_output(const char *path, char *err, size_t errlen)
{
    char real[PATH_MAX + 256];
    if (resolved(path, real, sizeof real) != 0) {
        snprintf(err, errlen, "%s: its folder does not exist: %s", path, strerror(errno));
        return -1;
    }
    const uint64_t h = fb_fnv1a(0xcbf29ce484222325ull, real, strlen(real));
    for (size_t i = 0; i < nclaims; i++)
        if (claims[i].hash == h) return 0;
    const char *tmp = getenv("TMPDIR");
    char lock[4200];
    struct stat st;
    snprintf(lock, sizeof lock, "%s/fabench-%016llx.lock",
             tmp && *tmp && stat(tmp, &st) == 0 && S_ISDIR(st.st_mode) ? tmp : "/tmp", (unsigned long long)h);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) fd = open(lock, O_RDONLY | O_CLOEXEC); /* another user's lock file: flock works read-only */
    if (fd < 0) { /* no lock to be had: go on unguarded, and say so */
        fprintf(stderr, "fabench: warning: %s: cannot open the lock %s (%s); another writer of it would not be noticed\n",
                path, lock, strerror(errno));
        return 0;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char who[32] = "";
        const ssize_t n = pread(fd, who, sizeof who - 1, 0);
        who[n > 0 ? n : 0] = 0;
        who[strcspn(who, "\n")] = 0;
        snprintf(err, errlen, "%s: another fabench%s%s is writing it (two writers would lose each other's rows)", path,
                 who[0] ? " process, pid " : "", who);
        close(fd);
        return -1;
    }
    char pid[32];
    const int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)n, 0) < 0) { /* the pid is only for the message */ }
    if (nclaims == capclaims) {
        output_claim *g = realloc(claims, (capclaims ? 2 * capclaims : 16) * sizeof *g);
        if (g) { claims = g; capclaims = capclaims ? 2 * capclaims : 16; }
    }
    if (nclaims < capclaims) claims[nclaims++] = (output_claim){h, fd};
    return 0; /* fd stays open (not inherited by exec) until the process ends or releases it */
}

void fb_release_outputs(void)
{
    for (size_t i = 0; i < nclaims; i++) close(claims[i].fd);
    nclaims = 0;
}

int fb_mkdir_p(const char *path, char *err, size_t errlen)
{
    char tmp[4096];
    if (!path[0] || strlen(path) >= sizeof tmp) {
        snprintf(err, errlen, "%s: not a usable directory name", path);
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/' && p[-1] != '/') {
            *p = 0;
            mkdir(tmp, 0777); /* an existing parent is fine; a failure shows below */
            *p = '/';
        }
    struct stat st;
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: cannot create directory: %s", path, strerror(errno));
        return -1;
    }
    if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: not a directory", path);
        return -1;
    }
    return 0;
}

void fb_slug(const char *in, char *out, size_t outlen)
{
    size_t o = 0;
    int dash = 0;
    for (const char *p = in; *p && o + 1 < outlen; p++) {
        unsigned char c = (unsigned char)*p;
        if (isalnum(c)) {
            if (dash && o > 0 && o + 2 < outlen) out[o++] = '-';
            dash = 0;
            out[o++] = (char)tolower(c);
        } else {
            dash = 1;
        }
    }
    out[o] = 0;
    if (o == 0) snprintf(out, outlen, "unknown");
}

void fb_utc_now(char *out, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    if (!gmtime_r(&now, &tm) || !strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm)) snprintf(out, len, "unknown");
}

static int run_id_char(int c) { return isalnum(c) || c == '.' || c == '_' || c == ':' || c == '-'; }

int fb_run_id_check(char *err, size_t errlen)
{
    const char *env = getenv("FABENCH_RUN_ID");
    if (!env) return 0;
    size_t n = strlen(env);
    for (size_t i = 0; i < n; i++)
        if (!run_id_char((unsigned char)env[i])) {
            snprintf(err, errlen, "FABENCH_RUN_ID='%.80s': character %zu is not one of A-Z a-z 0-9 . _ : -", env, i + 1);
            return -1;
        }
    if (n == 0 || n > 64) {
        snprintf(err, errlen, "FABENCH_RUN_ID must be 1 to 64 characters (it has %zu)", n);
        return -1;
    }
    return 0;
}

const char *fb_run_id(void)
{
    static char id[80]; /* set once, on the first call (commands run on one thread) */
    if (id[0]) return id;
    char e[8];
    const char *env = getenv("FABENCH_RUN_ID");
    if (env && fb_run_id_check(e, sizeof e) == 0) {
        snprintf(id, sizeof id, "%s", env);
        return id;
    }
    char host[64] = "host", t[32];
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = 0;
    fb_utc_now(t, sizeof t);
    /* 20261207T091502Z-<host hash>-<pid>: sorts by time, unique across hosts and processes */
    char compact[32];
    size_t k = 0;
    for (const char *c = t; *c && k + 1 < sizeof compact; c++)
        if (*c != '-' && *c != ':') compact[k++] = *c;
    compact[k] = 0;
    snprintf(id, sizeof id, "%s-%06llx-%ld", compact,
             (unsigned long long)(fb_fnv1a(FB_FNV_OFFSET, host, strlen(host)) & 0xffffffull), (long)getpid());
    return id;
}

double fb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void fb_sleep(double s)
{
    const double end = fb_now() + s;
    for (double left = s; left > 0; left = end - fb_now()) {
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

void fb_fmt_num(char *out, size_t len, double v, const char *fmt)
{
    if (isnan(v)) out[0] = 0;
    else snprintf(out, len, fmt, v);
}

int fb_kernel_source_files(const char *runtime, const char *const *files, char **out, char *err, size_t errlen)
{
    char root[4096], path[4400];
    *out = NULL;
    if (fb_root(root, sizeof root) != 0) {
        snprintf(err, errlen, "cannot find the fabench tree (kernels/, bench/suites/); set FABENCH_ROOT");
        return -1;
    }
    char *src = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/kernels/prelude_%s.h", root, runtime);
    if (fb_read_file(path, &src, &len, err, errlen) != 0) return -1;
    for (size_t i = 0; files[i]; i++) { /* each file after a #line naming it: messages name its lines */
        char *text = NULL;
        size_t lt = 0;
        snprintf(path, sizeof path, "%s/kernels/%s", root, files[i]);
        if (fb_read_file(path, &text, &lt, err, errlen) != 0) { free(src); return -1; }
        const size_t n = len + lt + strlen(files[i]) + 64;
        char *grown = realloc(src, n);
        if (!grown) {
            snprintf(err, errlen, "out of memory");
            free(text);
            free(src);
            return -1;
        }
        src = grown;
        len += (size_t)snprintf(src + len, n - len, "\n#line 1 \"%s\"\n%s", files[i], text);
        free(text);
    }
    *out = src;
    return 0;
}

int fb_kernel_source(const char *runtime, const char *body, char **out, char *err, size_t errlen)
{
    const char *const files[] = {body, NULL};
    return fb_kernel_source_files(runtime, files, out, err, errlen);
}
