/* fuzz_common.h: what every libFuzzer target in tests/fuzz/ shares: one private temporary
 * folder per process (in /dev/shm when it is writable, so the harness's fsyncs cost
 * nothing; removed at exit), files in it written from the fuzzer's input, and a loud
 * abort for a broken invariant (libFuzzer keeps the input as a crash).
 *
 * Every target is built with -fsanitize=fuzzer,address,undefined and
 * -fno-sanitize-recover=undefined, so a memory error, a leak or undefined behaviour in the
 * harness code is a crash too. */
#ifndef FABENCH_FUZZ_COMMON_H
#define FABENCH_FUZZ_COMMON_H

#include <dirent.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fz_dir_path[512];

/* Removes PATH and, for a folder, everything under it (the targets only make plain files
 * and the cache folder, so no links need care). */
__attribute__((unused)) static void fz_rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
                char sub[1024];
                snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
                fz_rm_rf(sub);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

__attribute__((unused)) static void fz_cleanup(void)
{
    if (fz_dir_path[0]) fz_rm_rf(fz_dir_path);
}

/* Provided by the sanitizers' runtime: prints on the report stream, which libFuzzer keeps
 * open (a copy of stderr) even when -close_fd_mask closed the code's own stderr. */
extern void __sanitizer_report_error_summary(const char *error_summary) __attribute__((weak));

/* Prints a message and aborts: the fuzzer records the input as a crash. */
__attribute__((noreturn, format(printf, 1, 2))) static void fz_fail(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(msg, sizeof msg, "FUZZ INVARIANT BROKEN: ");
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    if (__sanitizer_report_error_summary) __sanitizer_report_error_summary(msg);
    else fprintf(stderr, "\n%s\n", msg);
    abort();
}

/* The process's temporary folder, made on the first call. */
static const char *fz_dir(void)
{
    if (fz_dir_path[0]) return fz_dir_path;
    const char *base = getenv("FUZZ_TMPDIR");
    if (!base || !*base) base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    snprintf(fz_dir_path, sizeof fz_dir_path, "%s/fabench-fuzz-XXXXXX", base);
    if (!mkdtemp(fz_dir_path)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(fz_cleanup);
    return fz_dir_path;
}

/* NAME inside the temporary folder (a static buffer per call site is not needed: each
 * target keeps the paths it uses). */
__attribute__((unused)) static void fz_path(const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", fz_dir(), name);
}

/* Writes exactly data[0..size) to path (truncating); aborts when the disk refuses, which
 * is the machine's fault, not an input's. */
__attribute__((unused)) static void fz_write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

/* The input as a file: one file per process, named by mkstemp on the first call and
 * rewritten for every input. */
__attribute__((unused)) static const char *fz_input_file(const uint8_t *data, size_t size)
{
    static char path[600];
    if (!path[0]) {
        snprintf(path, sizeof path, "%s/input-XXXXXX", fz_dir());
        int fd = mkstemp(path);
        if (fd < 0) {
            perror("fuzz: mkstemp");
            abort();
        }
        close(fd);
    }
    fz_write_file(path, data, size);
    return path;
}

/* The input as a NUL-terminated string of at most max bytes (malloc'd; free it). With
 * stop_at_newline, it ends at the first '\n' (a protocol line). Embedded NULs simply end
 * the string early, as they would for any C caller. */
__attribute__((unused)) static char *fz_string(const uint8_t *data, size_t size, size_t max, int stop_at_newline)
{
    size_t n = size < max ? size : max;
    if (stop_at_newline) {
        const uint8_t *nl = memchr(data, '\n', n);
        if (nl) n = (size_t)(nl - data);
    }
    char *s = malloc(n + 1);
    if (!s) abort();
    if (n) memcpy(s, data, n);
    s[n] = 0;
    return s;
}

/* The error buffer contract of the harness: a NUL-terminated, non-empty message. */
__attribute__((unused)) static void fz_check_err(const char *what, const char *err, size_t len)
{
    if (!memchr(err, 0, len)) fz_fail("%s: error message not NUL-terminated", what);
    if (!err[0]) fz_fail("%s: failed without an error message", what);
}

#endif
