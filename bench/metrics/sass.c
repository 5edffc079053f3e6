/* sass.c: SASS instruction histograms from nvdisasm / cuobjdump -sass text (sass.h), the
 * disassembler found on PATH, and histogram distances. */
#define _GNU_SOURCE
#include "sass.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

/* Is s (up to eol) an offset comment: slash-star, hex digits, star-slash? Returns the
 * position after it, or NULL. */
static const char *offset_comment(const char *s, const char *eol)
{
    if (eol - s < 5 || s[0] != '/' || s[1] != '*') return NULL;
    const char *p = s + 2;
    while (p < eol && isxdigit((unsigned char)*p)) p++;
    if (p == s + 2 || p + 1 >= eol || p[0] != '*' || p[1] != '/') return NULL;
    return p + 2;
}

int sass_histogram(const char *text, size_t len, op_histogram *h)
{
    memset(h, 0, sizeof *h);
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *s = p;
        p = eol + 1;
        while (s < eol && isspace((unsigned char)*s)) s++;
        const char *q = offset_comment(s, eol);
        if (!q) continue;
        while (q < eol && (isspace((unsigned char)*q) || *q == '{')) q++; /* '{': a dual-issue pair (sm_5x) */
        if (q < eol && *q == '@') { /* predicate guard */
            while (q < eol && !isspace((unsigned char)*q)) q++;
            while (q < eol && isspace((unsigned char)*q)) q++;
        }
        const char *e = q;
        while (e < eol && !isspace((unsigned char)*e) && *e != ';' && *e != '}') e++;
        if (e == q || !isalpha((unsigned char)*q)) continue;
        if (op_histogram_add(h, q, (size_t)(e - q)) != 0) { op_histogram_free(h); return -1; }
    }
    return 0;
}

static int executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static int on_path(const char *name, char *out, size_t len)
{
    const char *path = getenv("PATH");
    if (!path) return 0;
    while (*path) {
        const char *c = strchr(path, ':');
        size_t n = c ? (size_t)(c - path) : strlen(path);
        if (n) {
            snprintf(out, len, "%.*s/%s", (int)n, path, name);
            if (executable(out)) return 1;
        }
        path += n + (c ? 1 : 0);
    }
    out[0] = 0;
    return 0;
}

int sass_tool(char *path, size_t len)
{
    const char *env = getenv("FABENCH_SASS_TOOL");
    path[0] = 0;
    if (env && *env) {
        if (!strcmp(env, "none")) return 0;
        if (strchr(env, '/')) {
            if (!executable(env)) return 0;
            snprintf(path, len, "%s", env);
            return 1;
        }
        return on_path(env, path, len);
    }
    return on_path("nvdisasm", path, len) || on_path("cuobjdump", path, len);
}

int sass_disassemble(const void *cubin, size_t len, op_histogram *h, char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    char tool[1024];
    if (!sass_tool(tool, sizeof tool)) return 1;
    const char *base = strrchr(tool, '/');
    base = base ? base + 1 : tool;
    int is_cuobjdump = strstr(base, "cuobjdump") != NULL;

    const char *tmpdir = getenv("TMPDIR");
    char path[1100];
    snprintf(path, sizeof path, "%s/fabench-sass-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) { snprintf(err, errlen, "cannot create a temporary file for the cubin: %s", strerror(errno)); return -1; }
    const char *b = cubin;
    size_t left = len;
    while (left) {
        ssize_t w = write(fd, b, left);
        if (w <= 0) {
            snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
            close(fd);
            unlink(path);
            return -1;
        }
        b += w;
        left -= (size_t)w;
    }
    close(fd);

    int pipefd[2];
    if (pipe(pipefd) != 0) { unlink(path); snprintf(err, errlen, "pipe: %s", strerror(errno)); return -1; }
    pid_t pid = fork();
    if (pid < 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        unlink(path);
        snprintf(err, errlen, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        dup2(pipefd[1], 1);
        close(pipefd[0]);
        close(pipefd[1]);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, 2);
        if (is_cuobjdump) execl(tool, tool, "-sass", path, (char *)NULL);
        else execl(tool, tool, path, (char *)NULL);
        _exit(127);
    }
    close(pipefd[1]);
    char *text = NULL;
    size_t n = 0, cap = 0;
    int oom = 0;
    for (;;) {
        if (n + 65536 > cap) {
            size_t nc = cap ? cap * 2 : 1 << 20;
            char *t = realloc(text, nc);
            if (!t) { oom = 1; break; }
            text = t;
            cap = nc;
        }
        ssize_t r = read(pipefd[0], text + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(pipefd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    unlink(path);
    int rc = 0;
    if (oom) { snprintf(err, errlen, "out of memory reading %s's output", base); rc = -1; }
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, errlen, "%s failed on the cubin (exit status %d)", tool, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        rc = -1;
    } else if (sass_histogram(text ? text : "", n, h) != 0) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    } else if (h->n == 0) {
        snprintf(err, errlen, "%s printed no instructions for the cubin", tool);
        rc = -1;
    }
    free(text);
    return rc;
}

