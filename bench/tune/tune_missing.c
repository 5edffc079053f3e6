/* tune_missing.c: `fabench run --tune-missing SECONDS`: the classes a run's tuning table
 * lacks, tuned on first sight by `fabench tune` (cmd_tune, with the same options a person
 * would give it), so that the rows it writes are exactly a tune's: one search, one
 * head-to-head against what the run would otherwise take, the same isolation of crashing
 * candidates and the same atomic writes. */
#define _GNU_SOURCE
#include "tune_missing.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "tune.h"

void tune_missing_table(const char *given, const char *dflt, const char *out, char *path, size_t len)
{
    if (given) snprintf(path, len, "%s", given);
    else if (access(dflt, F_OK) == 0) snprintf(path, len, "%s", dflt);
    else {
        const char *slash = strrchr(out, '/');
        snprintf(path, len, "%.*s%stuning.csv", slash ? (int)(slash - out) : 0, out, slash ? "/" : "");
    }
}

/* The folder of the table (".": none named) */
static void table_dir(const char *table, char *dir, size_t len)
{
    const char *slash = strrchr(table, '/');
    if (!slash) snprintf(dir, len, ".");
    else if (slash == table) snprintf(dir, len, "/");
    else snprintf(dir, len, "%.*s", (int)(slash - table), table);
}

void tune_missing_explored(const char *table, char *path, size_t len)
{
    char dir[1100];
    table_dir(table, dir, sizeof dir);
    snprintf(path, len, "%s/explored.csv", dir);
}

int tune_missing_check(const tune_missing *tm, const rt_device *dev, char *err, size_t errlen)
{
    const char *slash = strrchr(tm->table, '/');
    if (strcmp(slash ? slash + 1 : tm->table, "tuning.csv")) {
        snprintf(err, errlen, "--tune-missing: the tuning table must be a folder's tuning.csv (tune writes tuning.csv and "
                              "explored.csv there), not %s", tm->table);
        return 2;
    }
    char dir[1100], e[FB_ERRLEN];
    table_dir(tm->table, dir, sizeof dir);
    if (fb_check_writable(tm->table, e, sizeof e) != 0 || tune_results_check(dir, dev, e, sizeof e) != 0) {
        snprintf(err, errlen, "--tune-missing: %s", e);
        return 2;
    }
    return 0;
}

int tune_missing_lacks(const tune_missing *tm, const rt_device *dev, const shape_t *s, dtype_t dt)
{
    char key[96];
    tune_class_key(s, dt, key, sizeof key);
    return tune_table_explored(tm->table, dev, key) < 0;
}

/* `fabench tune` on the run's shapes for class key alone, its search within tm->seconds, into
 * the table's folder (--merge: the manifest there records it under update.N. keys, beside
 * the run's own). The run's SIGINT handler is put back after (an unisolated tune installs
 * its own). Returns tune's exit status. */
static int run_tune(const tune_missing *tm, const char *key)
{
    char secs[32], dir[1100];
    snprintf(secs, sizeof secs, "%.17g", tm->seconds);
    table_dir(tm->table, dir, sizeof dir);
    const char *av[24];
    int n = 0;
    av[n++] = "fabench";
    av[n++] = "tune";
    av[n++] = "--device", av[n++] = tm->device;
    av[n++] = tm->shapes_file ? "--shapes" : "--suite", av[n++] = tm->shapes_file ? tm->shapes_file : tm->suite;
    if (tm->have_dtype) av[n++] = "--dtype", av[n++] = dtype_name(tm->dtype);
    av[n++] = "--class", av[n++] = key;
    av[n++] = "--results", av[n++] = dir;
    av[n++] = "--time", av[n++] = secs;
    av[n++] = "--merge";
    if (tm->quiet) av[n++] = "--quiet";
    av[n] = NULL;
    /* the tune's records carry this run's id (a tune in a child process would make its own) */
    if (!getenv("FABENCH_RUN_ID")) setenv("FABENCH_RUN_ID", fb_run_id(), 1);
    struct sigaction old;
    sigaction(SIGINT, NULL, &old);
    /* cmd_tune's argv[-1] is the program (its manifest records the command from there) */
    const int rc = cmd_tune(n - 1, (char **)av + 1);
    sigaction(SIGINT, &old, NULL);
    return rc;
}

/* What config_source adds for a class this run tuned or tried */
static void class_note(const tm_class *c, char *note, size_t len)
{
    if (c->explored >= 0)
        snprintf(note, len, " (tuned on first sight, %ld candidate%s, %.1f s)", c->explored, c->explored == 1 ? "" : "s",
                 c->wall_s);
    else if (c->rc == 0)
        snprintf(note, len, " (tuning on first sight verified nothing in %.1f s)", c->wall_s);
    else
        snprintf(note, len, " (tuning on first sight failed: exit %d)", c->rc);
}

int tune_missing_visit(tune_missing *tm, const rt_device *dev, const shape_t *s, dtype_t dt, char *note, size_t notelen)
{
    char key[96];
    tune_class_key(s, dt, key, sizeof key);
    note[0] = 0;
    for (size_t i = 0; i < tm->n; i++)
        if (!strcmp(tm->v[i].key, key)) {
            class_note(&tm->v[i], note, notelen);
            return 0;
        }
    if (tune_table_explored(tm->table, dev, key) >= 0) return 0; /* tuned before this run: untouched */
    if (tm->n == tm->cap) {
        tm_class *g = realloc(tm->v, (tm->cap ? 2 * tm->cap : 8) * sizeof *g);
        if (!g) return 0; /* out of memory: the shape takes what the table gives */
        tm->v = g;
        tm->cap = tm->cap ? 2 * tm->cap : 8;
    }
    if (!tm->quiet)
        fprintf(stderr, "fabench run: %s: class %s has no row in %s: tuning it (%g s of search)\n", s->name, key, tm->table,
                tm->seconds);
    tm_class *c = &tm->v[tm->n];
    snprintf(c->key, sizeof c->key, "%s", key);
    const double t0 = fb_now();
    c->rc = run_tune(tm, key);
    c->wall_s = fb_now() - t0;
    if (c->rc == 130) return 130; /* interrupted: not recorded, the run stops */
    c->explored = tune_table_explored(tm->table, dev, key);
    tm->n++;
    if (c->rc != 0) fprintf(stderr, "fabench run: %s: tuning class %s exited %d (above); the shape takes what the table gives\n",
                            s->name, key, c->rc);
    class_note(c, note, notelen);
    return 0;
}

void tune_missing_annotate(char *source, size_t len, const char *key, const char *note)
{
    char head[128];
    const size_t n = strlen(source), hn = (size_t)snprintf(head, sizeof head, "tuned %s", key);
    if (!note[0] || n + strlen(note) + 1 > len) return;
    const size_t at = !strncmp(source, head, hn) && (source[hn] == 0 || source[hn] == ' ') ? hn : n;
    memmove(source + at + strlen(note), source + at, n - at + 1);
    memcpy(source + at, note, strlen(note));
}

void tune_missing_free(tune_missing *tm)
{
    free(tm->v);
    tm->v = NULL;
    tm->n = tm->cap = 0;
}
