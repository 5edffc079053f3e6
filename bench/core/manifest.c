/* manifest.c: builds the manifest table: device facts, software versions, provenance. */
#define _GNU_SOURCE
#include "manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "telemetry.h"

int manifest_set(csv_table *t, const char *key, const char *value)
{
    for (size_t i = 0; i < t->nrows; i++)
        if (!strcmp(t->rows[i][0], key)) return csvt_set(t, i, 1, value ? value : "");
    const char *row[2] = {key, value ? value : ""};
    return csvt_add(t, row);
}

/* First line printed by a command, or "" (used for git and uname). */
static void first_line(const char *cmd, char *out, size_t len)
{
    out[0] = 0;
    FILE *p = popen(cmd, "r");
    if (!p) return;
    if (fgets(out, (int)len, p)) out[strcspn(out, "\r\n")] = 0;
    else out[0] = 0;
    pclose(p);
}

static void set_rt(csv_table *t, const rt_device *dev, const char *key, const char *value)
{
    char k[128];
    snprintf(k, sizeof k, "%s.%s", dev->rt->name, key);
    manifest_set(t, k, value);
}

int manifest_fill(csv_table *t, const rt_device *dev, int argc, char **argv)
{
    char buf[4096];
    {
        char slug[256];
        fb_slug(dev->info.name, slug, sizeof slug);
        manifest_set(t, "gpu", dev->info.name);
        manifest_set(t, "gpu_slug", slug);
        snprintf(buf, sizeof buf, "%s:%d", dev->rt->name, dev->index);
        set_rt(t, dev, "device", buf);
        set_rt(t, dev, "vendor", dev->info.vendor);
        set_rt(t, dev, "arch", dev->info.arch);
        set_rt(t, dev, "platform", dev->info.platform);
        set_rt(t, dev, "driver", dev->info.driver);
        set_rt(t, dev, "runtime_version", dev->info.runtime_version);
        set_rt(t, dev, "compiler", dev->info.compiler);
        snprintf(buf, sizeof buf, "%d", dev->info.compute_units);
        set_rt(t, dev, "compute_units", buf);
        snprintf(buf, sizeof buf, "%d", dev->info.clock_mhz);
        set_rt(t, dev, "clock_mhz", buf);
        snprintf(buf, sizeof buf, "%zu", dev->info.global_bytes);
        set_rt(t, dev, "memory_bytes", buf);
        set_rt(t, dev, "pci", dev->info.pci);
        /* what reads the clocks and power of perf.csv's rows, or why nothing does */
        telemetry *tm = NULL;
        char why[256];
        if (telemetry_open(dev->info.pci, &tm, why, sizeof why) == 0) {
            telemetry_describe(tm, buf, sizeof buf);
            telemetry_close(tm);
        } else {
            snprintf(buf, sizeof buf, "absent: %s", why);
        }
        set_rt(t, dev, "telemetry", buf);
    }
    char root[4096];
    if (fb_root(root, sizeof root) == 0) {
        char cmd[4300];
        /* FABENCH_GIT_COMMIT: for copies of the tree without a usable .git */
        const char *env = getenv("FABENCH_GIT_COMMIT");
        snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse HEAD 2>/dev/null", root);
        if (env && *env) snprintf(buf, sizeof buf, "%s", env);
        else first_line(cmd, buf, sizeof buf);
        /* a full or abbreviated (7+ digits) hexadecimal commit */
        const size_t hl = strlen(buf);
        manifest_set(t, "git_commit", hl >= 7 && hl <= 40 && strspn(buf, "0123456789abcdef") == hl ? buf : "unknown");
        /* FABENCH_GIT_DIRTY (yes or no) beside it: such a copy's .git, if any, is another
         * commit's, so its status says nothing of the tree (unknown without it) */
        if (env && *env) {
            const char *dirty = getenv("FABENCH_GIT_DIRTY");
            const int known = dirty && (!strcmp(dirty, "yes") || !strcmp(dirty, "no"));
            if (dirty && *dirty && !known)
                fprintf(stderr, "fabench: FABENCH_GIT_DIRTY: '%s' is not yes or no; the manifest says unknown\n", dirty);
            manifest_set(t, "git_dirty", known ? dirty : "unknown");
        } else {
            snprintf(cmd, sizeof cmd, "git -C '%s' status --porcelain --untracked-files=no 2>/dev/null | head -1", root);
            first_line(cmd, buf, sizeof buf);
            manifest_set(t, "git_dirty", buf[0] ? "yes" : "no");
        }
    }
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    manifest_set(t, "date", buf);
    /* the run its rows carry (perf.csv's run_id): versus --markdown finds the commit of a
     * run by it, an --update's among its update.N. keys */
    manifest_set(t, "run_id", fb_run_id());
    if (gethostname(buf, sizeof buf) == 0) { buf[sizeof buf - 1] = 0; manifest_set(t, "host", buf); }
    first_line("uname -srm 2>/dev/null", buf, sizeof buf);
    manifest_set(t, "os", buf);
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < argc && o + 2 < sizeof buf; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? " " : "", argv[i]);
    set_rt(t, dev, "command", buf);
    manifest_set(t, "fabench_version", "0.1");
    /* each subcommand's own line too (run, then vendors, then tune into one manifest: the
     * runtime's command key holds only the last of them) */
    if (argc > 1 && strspn(argv[1], "abcdefghijklmnopqrstuvwxyz-") == strlen(argv[1]))
        return manifest_note_command(t, argv[1], argc, argv);
    return 0;
}

long manifest_last_update(const csv_table *t)
{
    long n = 0;
    for (size_t r = 0; r < t->nrows; r++) {
        const char *k = t->rows[r][0];
        if (!strncmp(k, "update.", 7)) {
            char *end;
            const long v = strtol(k + 7, &end, 10);
            if (end > k + 7 && *end == '.' && k[7] >= '0' && k[7] <= '9' && v > n && v < 1000000000L) n = v;
        }
    }
    return n;
}

int manifest_fill_update(csv_table *t, const rt_device *dev, int argc, char **argv, char *prefix, size_t plen)
{
    static const char *const header[2] = {"key", "value"};
    int has_gpu = 0;
    for (size_t r = 0; r < t->nrows; r++) has_gpu |= !strcmp(t->rows[r][0], "gpu");
    snprintf(prefix, plen, "update.%ld.", manifest_last_update(t) + 1);
    if (!has_gpu && manifest_fill(t, dev, argc, argv) != 0) return -1;
    csv_table *mine = csvt_new(header, 2);
    if (!mine) return -1;
    int rc = manifest_fill(mine, dev, argc, argv);
    char key[256];
    for (size_t r = 0; r < mine->nrows && rc == 0; r++) {
        snprintf(key, sizeof key, "%s%s", prefix, mine->rows[r][0]);
        rc = manifest_set(t, key, mine->rows[r][1]);
    }
    csvt_free(mine);
    return rc;
}

/* manifest_check_path's test on a loaded manifest t */
static int same_gpu(const csv_table *t, const char *path, const rt_device *dev, char *err, size_t errlen)
{
    for (size_t r = 0; r < t->nrows; r++) {
        if (strcmp(t->rows[r][0], "gpu") || !strcmp(t->rows[r][1], dev->info.name)) continue;
        snprintf(err, errlen,
                 "%s:%d: field 'value' of key 'gpu': this folder holds %s's results, and this device is %s "
                 "(one folder per GPU: give this one its own, results/<its slug>/)",
                 path, t->row_line ? t->row_line[r] : 0, t->rows[r][1], dev->info.name);
        return FB_EXIT_BADINPUT;
    }
    return 0;
}

int manifest_check_path(const char *path, const rt_device *dev, char *err, size_t errlen)
{
    static const char *const header[2] = {"key", "value"};
    if (access(path, F_OK) != 0) return 0;
    csv_table *t;
    int rc = csvt_open_append(path, header, 2, &t, err, errlen);
    if (rc != 0) return rc;
    rc = same_gpu(t, path, dev, err, errlen);
    csvt_free(t);
    return rc;
}

int manifest_update(const char *path, const rt_device *dev, int argc, char **argv, int update, char *err, size_t errlen)
{
    static const char *const header[2] = {"key", "value"};
    csv_table *t;
    char prefix[32];
    int rc = csvt_open_append(path, header, 2, &t, err, errlen);
    if (rc != 0) return rc;
    if ((rc = same_gpu(t, path, dev, err, errlen)) != 0) {
        csvt_free(t);
        return rc;
    }
    rc = (update ? manifest_fill_update(t, dev, argc, argv, prefix, sizeof prefix) : manifest_fill(t, dev, argc, argv)) == 0
             ? csvt_write_atomic(t, path, err, errlen)
             : (snprintf(err, errlen, "out of memory"), -1);
    csvt_free(t);
    return rc;
}

int manifest_note_command(csv_table *t, const char *prefix, int argc, char **argv)
{
    char buf[4096], date[32], key[128];
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < argc && o + 2 < sizeof buf; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? " " : "", argv[i]);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(key, sizeof key, "%s.command", prefix);
    if (manifest_set(t, key, buf) != 0) return -1;
    snprintf(key, sizeof key, "%s.date", prefix);
    if (manifest_set(t, key, date) != 0) return -1;
    /* each command's run: run and vendors of one pass share it (run.sh), or show they did not */
    snprintf(key, sizeof key, "%s.run_id", prefix);
    return manifest_set(t, key, fb_run_id());
}
