/* tune_multi.c: `fabench tune --device A,B,...` (or --device all): one worker per device,
 * each a `fabench tune` process of its own (so each is its own supervisor, restarted alone
 * when its device hangs), sharing out the shape classes, into one explored.csv and
 * tuning.csv.
 *
 * tune writes its tables by rewriting them whole, so two processes writing one file would
 * lose each other's rows. Each worker therefore writes a folder of its own,
 * DIR/tune-workers/w<N>/, seeded with copies of DIR's tables (it resumes and rematches
 * against earlier rows as a lone tune would), and takes classes one at a time from a
 * claims file under a lock: a worker that finishes early takes the next class, and every
 * class is tuned by one worker. When all have ended (however they ended) their rows are
 * merged into DIR: each claimed (gpu, backend, class) takes its rows from the worker that
 * claimed it, every other row stays as it was. A merge cut short (the parent killed) is
 * finished by the next multi-device tune of that folder before it starts. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "csvio.h"
#include "manifest.h"
#include "rt.h"
#include "tune.h"

#define MAX_WORKERS 64

typedef struct {
    int worker;
    char gpu[256], backend[32], cls[96];
} claim;

typedef struct {
    claim *v;
    size_t n;
} claim_list;

/* ---------- the claims file: one line per class, "worker<TAB>gpu<TAB>backend<TAB>class" ---------- */

static int claims_read(const char *path, claim_list *out)
{
    out->v = NULL;
    out->n = 0;
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT ? 0 : -1;
    char line[512];
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        claim c;
        line[strcspn(line, "\n")] = 0;
        if (sscanf(line, "%d\t%255[^\t]\t%31[^\t]\t%95s", &c.worker, c.gpu, c.backend, c.cls) != 4) continue;
        if (out->n == cap) {
            cap = cap ? cap * 2 : 64;
            claim *nv = realloc(out->v, cap * sizeof *nv);
            if (!nv) { fclose(f); return -1; }
            out->v = nv;
        }
        out->v[out->n++] = c;
    }
    fclose(f);
    return 0;
}

/* the worker that claimed (gpu, backend, class), or -1 */
static int claimed_by(const claim_list *cl, const char *gpu, const char *backend, const char *cls)
{
    for (size_t i = 0; i < cl->n; i++)
        if (!strcmp(cl->v[i].cls, cls) && !strcmp(cl->v[i].backend, backend) && !strcmp(cl->v[i].gpu, gpu))
            return cl->v[i].worker;
    return -1;
}

int tune_claim(const char *path, int worker, const char *gpu, const char *backend, const char *cls)
{
    int fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    if (flock(fd, LOCK_EX) != 0) { close(fd); return -1; }
    claim_list cl;
    int rc = claims_read(path, &cl);
    if (rc == 0) {
        const int by = claimed_by(&cl, gpu, backend, cls);
        if (by < 0) { /* nobody's yet: ours */
            char line[512];
            const int len = snprintf(line, sizeof line, "%d\t%s\t%s\t%s\n", worker, gpu, backend, cls);
            rc = write(fd, line, (size_t)len) == len ? 1 : -1;
        } else {
            rc = by == worker; /* a restarted worker goes on with its own class */
        }
    }
    free(cl.v);
    flock(fd, LOCK_UN);
    close(fd);
    return rc;
}

/* ---------- files and folders ---------- */

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    if (!in) return errno == ENOENT ? 0 : -1;
    FILE *out = fopen(to, "wb");
    if (!out) { fclose(in); return -1; }
    char buf[65536];
    size_t n;
    int rc = 0;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) { rc = -1; break; }
    if (ferror(in)) rc = -1;
    fclose(in);
    if (fclose(out) != 0) rc = -1;
    return rc;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(p);
}

static int rm_tree(const char *dir) { return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* ---------- the merge ---------- */

/* DIR/NAME with each claimed (gpu, backend, class)'s rows taken from its worker's
 * WORKERS/w<N>/NAME, the other rows of DIR/NAME kept in their order. 0, or -1 with err. */
static int merge_table(const char *dir, const char *workers, int nworkers, const claim_list *cl, const char *name,
                       char *err, size_t errlen)
{
    char path[4200], wpath[4200];
    csv_table *w[MAX_WORKERS] = {0}, *mainv = NULL, *out = NULL;
    int rc = -1;
    for (int i = 0; i < nworkers; i++) {
        snprintf(wpath, sizeof wpath, "%s/w%d/%s", workers, i, name);
        if (exists(wpath) && csvt_read(wpath, &w[i], err, errlen) != 0) goto done;
        if (w[i] && !out && !(out = csvt_new((const char *const *)w[i]->header, w[i]->ncols))) goto oom;
    }
    if (!out) { rc = 0; goto done; } /* no worker wrote this table */
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (exists(path)) {
        if (csvt_read(path, &mainv, err, errlen) != 0) goto done;
        if (mainv->ncols != out->ncols && csvt_widen(mainv, (const char *const *)out->header, out->ncols) != 0) {
            snprintf(err, errlen, "%.900s: its columns are not a beginning of %s's", path, name);
            goto done;
        }
    }
    const char *key[] = {"gpu", "backend", "shape_class"};
    int kc[3];
    for (int k = 0; k < 3; k++)
        if ((kc[k] = csvt_col(out, key[k])) < 0) { snprintf(err, errlen, "%s: no %s column", name, key[k]); goto done; }
    for (size_t r = 0; mainv && r < mainv->nrows; r++) {
        char **row = mainv->rows[r];
        if (claimed_by(cl, row[kc[0]], row[kc[1]], row[kc[2]]) < 0 && csvt_add(out, (const char *const *)row) != 0) goto oom;
    }
    for (int i = 0; i < nworkers; i++)
        for (size_t r = 0; w[i] && r < w[i]->nrows; r++) {
            char **row = w[i]->rows[r];
            if (w[i]->ncols != out->ncols) { snprintf(err, errlen, "%.900s/w%d/%s: another schema", workers, i, name); goto done; }
            if (claimed_by(cl, row[kc[0]], row[kc[1]], row[kc[2]]) == i && csvt_add(out, (const char *const *)row) != 0)
                goto oom;
        }
    rc = csvt_write_atomic(out, path, err, errlen);
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
done:
    for (int i = 0; i < nworkers; i++) csvt_free(w[i]);
    csvt_free(mainv);
    csvt_free(out);
    return rc;
}

/* Merges WORKERS (DIR/tune-workers) into DIR and removes it. 0, or -1 with err (then the
 * workers' folder stays, and the next multi-device tune merges it first). */
static int merge_workers(const char *dir, const char *workers, char *err, size_t errlen)
{
    char claims[4200], wdir[4200];
    int n = 0;
    snprintf(claims, sizeof claims, "%s/claims", workers);
    while (n < MAX_WORKERS && (snprintf(wdir, sizeof wdir, "%s/w%d", workers, n), exists(wdir))) n++;
    claim_list cl;
    if (claims_read(claims, &cl) != 0) { snprintf(err, errlen, "%.900s: cannot read it", claims); return -1; }
    int rc = 0;
    if (merge_table(dir, workers, n, &cl, "explored.csv", err, errlen) != 0 ||
        merge_table(dir, workers, n, &cl, "tuning.csv", err, errlen) != 0 ||
        merge_table(dir, workers, n, &cl, "pruned.csv", err, errlen) != 0)
        rc = -1;
    if (rc == 0) {
        int per[MAX_WORKERS] = {0};
        for (size_t i = 0; i < cl.n; i++)
            if (cl.v[i].worker >= 0 && cl.v[i].worker < MAX_WORKERS) per[cl.v[i].worker]++;
        for (int i = 0; i < n; i++) fprintf(stderr, "fabench tune: worker %d tuned %d class%s\n", i, per[i], per[i] == 1 ? "" : "es");
        if (rm_tree(workers) != 0) fprintf(stderr, "fabench tune: note: %s: not removed: %s\n", workers, strerror(errno));
    }
    free(cl.v);
    return rc;
}

/* ---------- the workers ---------- */

/* the selectors of SPEC: "all" is every GPU present; else comma-separated selectors
 * (one may repeat: two workers on one device). Count, or -1 with err. */
static int device_list(const char *spec, char sel[][64], char *err, size_t errlen)
{
    int n = 0;
    if (!strcmp(spec, "all")) {
        for (int r = 0; r < rt_count(); r++) {
            const rt_runtime *rt = rt_get(r);
            if (rt_status(r, NULL) != 0) continue;
            for (int d = 0; d < rt->device_count() && n < MAX_WORKERS; d++) {
                rt_device_info info;
                if (rt->device_info(d, &info) == 0 && info.is_gpu) snprintf(sel[n++], 64, "%s:%d", rt->name, d);
            }
        }
        if (!n) snprintf(err, errlen, "--device all: no GPU here (fabench devices; a CPU device is named, e.g. opencl:0)");
        return n ? n : -1;
    }
    const char *p = spec;
    while (*p) {
        const size_t len = strcspn(p, ",");
        if (!len || len >= 64 || n == MAX_WORKERS) {
            snprintf(err, errlen, "--device '%s': %s", spec, n == MAX_WORKERS ? "too many devices" : "an empty or overlong selector");
            return -1;
        }
        memcpy(sel[n], p, len);
        sel[n++][len] = 0;
        p += len + (p[len] == ',');
    }
    return n;
}

/* the command line of worker I: ours without --device and --results, then its own */
static char **worker_argv(const char *self, int argc, char **argv, const char *sel, const char *wdir, const char *claims,
                          const char *id)
{
    char **v = calloc((size_t)argc + 12, sizeof *v);
    if (!v) return NULL;
    int n = 0;
    v[n++] = (char *)self;
    v[n++] = "tune";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") || !strcmp(argv[i], "--results")) { i++; continue; }
        if (!strncmp(argv[i], "--device=", 9) || !strncmp(argv[i], "--results=", 10)) continue;
        v[n++] = argv[i];
    }
    const char *more[] = {"--device", sel, "--results", wdir, "--worker-claims", claims, "--worker-id", id};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) v[n++] = (char *)more[i];
    return v;
}

/* starts worker I; its pid, or -1 */
static pid_t start_worker(const char *self, int argc, char **argv, const char *sel, const char *wdir, const char *claims,
                          int i)
{
    char id[16];
    snprintf(id, sizeof id, "%d", i);
    char **v = worker_argv(self, argc, argv, sel, wdir, claims, id);
    if (!v) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGINT, SIG_DFL); /* (ignored here, and an ignored signal stays so across exec) */
        execv(self, v);
        _exit(127);
    }
    free(v);
    return pid;
}

/* DIR's tables copied into a worker's folder (a missing one stays missing); 0 or -1 */
static int seed_worker(const char *dir, const char *wdir)
{
    static const char *const files[] = {"explored.csv", "tuning.csv", "pruned.csv", "manifest.csv", "fallback.csv"};
    char a[4200], b[4200];
    if (mkdir(wdir, 0755) != 0) return -1;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(a, sizeof a, "%.2000s/%s", dir, files[i]);
        snprintf(b, sizeof b, "%.2000s/%s", wdir, files[i]);
        if (copy_file(a, b) != 0) return -1;
    }
    return 0;
}

int tune_multi(int argc, char **argv, const char *spec, const char *results)
{
    char err[FB_ERRLEN], sel[MAX_WORKERS][64];
    const int n = device_list(spec, sel, err, sizeof err);
    if (n < 0) { fprintf(stderr, "fabench tune: %s\n", err); return FB_EXIT_BADINPUT; }
    /* every device opened first: all must be one GPU model, as they write one folder */
    rt_device dev0;
    char slug0[256], dir[1024];
    for (int i = 0; i < n; i++) {
        rt_device dev;
        char slug[256];
        if (rt_select(sel[i], &dev, err, sizeof err) != 0) { fprintf(stderr, "fabench tune: %s\n", err); return FB_EXIT_BADINPUT; }
        fb_slug(dev.info.name, slug, sizeof slug);
        if (i == 0) { dev0 = dev; snprintf(slug0, sizeof slug0, "%s", slug); }
        else if (strcmp(slug, slug0)) {
            fprintf(stderr, "fabench tune: --device %s: %s is a %s, %s a %s: one tune per GPU model (each has its own "
                            "results folder)\n", spec, sel[0], dev0.info.name, sel[i], dev.info.name);
            return FB_EXIT_BADINPUT;
        }
    }
    if (results) snprintf(dir, sizeof dir, "%s", results);
    else snprintf(dir, sizeof dir, "results/%s", slug0);
    char p_tuning[1100], p_manifest[1100], workers[1100], claims[1200];
    snprintf(p_tuning, sizeof p_tuning, "%s/tuning.csv", dir);
    snprintf(p_manifest, sizeof p_manifest, "%s/manifest.csv", dir);
    snprintf(workers, sizeof workers, "%s/tune-workers", dir);
    snprintf(claims, sizeof claims, "%s/claims", workers);
    if (fb_mkdir_p(dir, err, sizeof err) != 0 || fb_claim_output(p_tuning, err, sizeof err) != 0 ||
        manifest_check_path(p_manifest, &dev0, err, sizeof err) != 0) {
        fprintf(stderr, "fabench tune: %s\n", err);
        return FB_EXIT_BADINPUT;
    }
    if (exists(workers)) { /* an earlier multi-device tune's rows, not merged when it was cut short */
        fprintf(stderr, "fabench tune: %s: an earlier run's workers; their rows first\n", workers);
        if (merge_workers(dir, workers, err, sizeof err) != 0) {
            fprintf(stderr, "fabench tune: %s: %s\n", workers, err);
            return 1;
        }
    }
    char self[4096];
    const ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) { fprintf(stderr, "fabench tune: --device with several devices needs /proc/self/exe\n"); return 1; }
    self[sl] = 0;
    if (mkdir(workers, 0755) != 0) { fprintf(stderr, "fabench tune: %s: %s\n", workers, strerror(errno)); return 1; }
    pid_t pid[MAX_WORKERS];
    char wdir[MAX_WORKERS][1200];
    /* Ctrl-C reaches the workers from the terminal; they stop keeping their rows, and this
     * process merges them */
    struct sigaction ign = {0}, old;
    ign.sa_handler = SIG_IGN;
    sigaction(SIGINT, &ign, &old);
    int started = 0;
    for (int i = 0; i < n; i++) {
        snprintf(wdir[i], sizeof wdir[i], "%s/w%d", workers, i);
        if (seed_worker(dir, wdir[i]) != 0) { fprintf(stderr, "fabench tune: %s: cannot seed it: %s\n", wdir[i], strerror(errno)); break; }
        if ((pid[i] = start_worker(self, argc, argv, sel[i], wdir[i], claims, i)) < 0) break;
        fprintf(stderr, "fabench tune: worker %d on %s -> %s\n", i, sel[i], wdir[i]);
        started++;
    }
    int worst = started == n ? 0 : 1, bad_input = 0;
    for (int i = 0; i < started; i++) {
        int st;
        while (waitpid(pid[i], &st, 0) < 0 && errno == EINTR) {}
        const int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
        if (rc) fprintf(stderr, "fabench tune: worker %d (%s) exited %d\n", i, sel[i], rc);
        bad_input |= rc == FB_EXIT_BADINPUT;
        if (rc > worst) worst = rc;
    }
    sigaction(SIGINT, &old, NULL);
    if (bad_input) { /* nothing was tuned: the folder stays as it was (a new one goes) */
        rm_tree(workers);
        rmdir(dir);
        return FB_EXIT_BADINPUT;
    }
    if (merge_workers(dir, workers, err, sizeof err) != 0) {
        fprintf(stderr, "fabench tune: merging %s: %s (kept; the next tune of %s merges it)\n", workers, err, dir);
        return 1;
    }
    int update = 0; /* --merge: the command goes under update.N. keys, as a lone tune's */
    for (int i = 1; i < argc; i++) update |= !strcmp(argv[i], "--merge");
    if (manifest_update(p_manifest, &dev0, argc + 1, argv - 1, update, err, sizeof err) != 0) {
        fprintf(stderr, "fabench tune: %s\n", err);
        return 1;
    }
    fprintf(stderr, "fabench tune: %d workers; results in %s/\n", n, dir);
    return worst;
}
