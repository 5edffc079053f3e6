/* fuzz_cli.c: the command-line parsing of `fabench run`, `tune`, `vendors` and `compile`
 * (bench/cmd/commands.h), without any device work.
 *
 * The first byte picks the subcommand; the rest is split on NUL or newline into at most
 * 32 words. `devices` is not fuzzed (it starts the runtimes), nor `loc` (it walks
 * whatever paths it is given).
 *
 * What keeps it from doing work: run, tune and vendors always end with `--device
 * nosuchdevice`, and compile with `--target sm_1` (rejected before anything is read), so
 * each command stops at device selection at the latest: the last --device / --target
 * wins, and when the input's last word swallows ours as its value or ends the options
 * with `--`, the leftover word is an unexpected argument. The runtimes are started once,
 * before fuzzing, with no OpenCL platform (OCL_ICD_VENDORS is an empty folder) and no
 * CUDA device (CUDA_VISIBLE_DEVICES=""), so selection never finds a device. Every '/' in
 * a word becomes '_', so file arguments (--shapes, --space) can only name files in the
 * current folder, never /dev/zero or a FIFO. A command must return 0 (--help) or 2 (bad
 * input); 1 would mean it went past selection.
 *
 * getopt keeps state between calls (glibc: the position inside a cluster of short
 * options). The commands set optind = 1, which glibc does not take as a full reset, so
 * the target resets it (optind = 0 and one empty scan) before each command: in fabench
 * each command runs once per process, so this is the fuzzing loop's need, not a bug. */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include <dirent.h>
#include <getopt.h>

#include "codegen.h"
#include "common.h"
#include "rt.h"
#include "tune.h"

#include "commands.h"

#define MAX_WORDS 32

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char icd[700];
    fz_path("no-icd", icd, sizeof icd);
    if (mkdir(icd, 0700) != 0) abort();
    setenv("OCL_ICD_VENDORS", icd, 1);
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    setenv("HIP_VISIBLE_DEVICES", "", 1);
    setenv("FABENCH_TUNE_ISOLATE", "0", 1); /* tune in this process, not a re-executed child */
    setenv("TMPDIR", fz_dir(), 1);             /* the output claims' lock files: removed with it */
    for (int i = 0; i < rt_count(); i++) (void)rt_status(i, NULL); /* load once, outside any input */
    return 0;
}

/* this process's open file descriptors: a command must close every one it opens (a leak
 * shows as "Too many open files" only after a million inputs; counted, it shows at once).
 * With names, what each one is, for the report. */
static int open_fds(char *names, size_t len)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    size_t o = 0;
    if (names && len) names[0] = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        n++;
        char link[300], target[256] = "";
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        const ssize_t k = readlink(link, target, sizeof target - 1);
        if (k > 0) target[k] = 0;
        if (names && o < len) o += (size_t)snprintf(names + o, len - o, " %s=%s", e->d_name, target);
    }
    closedir(d);
    return n;
}

static void getopt_reset(void)
{
    static char name[] = "fuzz";
    char *av[] = {name, NULL};
    optind = 0;
    opterr = 0;
    (void)getopt(1, av, ":");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    static const char *const subs[] = {"tune", "vendors", "compile", "run"};
    const char *sub = subs[data[0] % 4];
    int compile = !strcmp(sub, "compile");

    char *words[MAX_WORDS];
    int nw = 0;
    size_t i = 1;
    while (i < size && nw < MAX_WORDS) {
        size_t j = i;
        while (j < size && data[j] != 0 && data[j] != '\n') j++;
        char *w = fz_string(data + i, j - i, j - i, 0);
        for (char *p = w; *p; p++)
            if (*p == '/') *p = '_';
        words[nw++] = w;
        i = j + 1;
    }

    char *argv[MAX_WORDS + 6];
    int argc = 0;
    argv[argc++] = (char *)"fabench";
    argv[argc++] = (char *)sub;
    for (int k = 0; k < nw; k++) argv[argc++] = words[k];
    argv[argc++] = (char *)(compile ? "--target" : "--device");
    argv[argc++] = (char *)(compile ? "sm_1" : "nosuchdevice");
    argv[argc] = NULL;

    getopt_reset();
    char before[4096];
    const int fds = open_fds(before, sizeof before);
    int rc;
    if (!strcmp(sub, "run")) rc = cmd_run(argc - 1, argv + 1);
    else if (!strcmp(sub, "tune")) rc = cmd_tune(argc - 1, argv + 1);
    else if (!strcmp(sub, "vendors")) rc = cmd_vendors(argc - 1, argv + 1);
    else rc = cmd_compile(argc - 1, argv + 1);
    if (rc != 0 && rc != 2) fz_fail("fabench %s returned %d: it went past device selection", sub, rc);
    fb_release_outputs(); /* fabench holds an output's claim until it exits: one command a process */
    char after[4096];
    if (fds >= 0 && open_fds(after, sizeof after) > fds)
        fz_fail("fabench %s left a file descriptor open: before:%s; after:%s", sub, before, after);

    for (int k = 0; k < nw; k++) free(words[k]);
    return 0;
}
