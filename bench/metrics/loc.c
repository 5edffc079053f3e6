/* loc.c: `fabench loc PATH...`: non-blank, non-comment lines of C, C++, CUDA, OpenCL and
 * Python sources (C-family: // and block comments; Python: # comments and docstrings),
 * per path, written to a CSV with the tree's git commit when it is a checkout. */
#define _GNU_SOURCE
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "csvio.h"

typedef enum { LANG_NONE, LANG_C, LANG_PY } lang_t;

static lang_t lang_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot) return LANG_NONE;
    static const char *const cfam[] = {".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cu", ".cuh", ".cl", ".k"};
    for (size_t i = 0; i < sizeof cfam / sizeof cfam[0]; i++)
        if (!strcmp(dot, cfam[i])) return LANG_C;
    return strcmp(dot, ".py") ? LANG_NONE : LANG_PY;
}

/* Code lines of a C-family text: a line counts when something outside comments remains. */
static long count_c(const char *t)
{
    long lines = 0;
    int in_block = 0, has_code = 0;
    char in_str = 0;
    for (const char *p = t;; p++) {
        if (*p == '\n' || !*p) {
            lines += has_code;
            has_code = 0;
            in_str = 0; /* strings do not span lines (a trailing backslash is rare enough) */
            if (!*p) break;
            continue;
        }
        if (in_block) {
            if (p[0] == '*' && p[1] == '/') { in_block = 0; p++; }
            continue;
        }
        if (in_str) {
            has_code = 1;
            if (*p == '\\' && p[1] && p[1] != '\n') p++;
            else if (*p == in_str) in_str = 0;
            continue;
        }
        if (p[0] == '/' && p[1] == '*') { in_block = 1; p++; continue; }
        if (p[0] == '/' && p[1] == '/') {
            while (p[1] && p[1] != '\n') p++;
            continue;
        }
        if (*p == '"' || *p == '\'') { in_str = *p; has_code = 1; continue; }
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\f') has_code = 1;
    }
    return lines;
}

/* Code lines of Python: '#' comments and docstrings (a triple-quoted string that is a
 * statement of its own) do not count. */
static long count_py(const char *t)
{
    long lines = 0;
    const char *doc = NULL; /* the closing quote of an open docstring */
    for (const char *line = t; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *s = line;
        while (s < line + len && (*s == ' ' || *s == '\t' || *s == '\r')) s++;
        size_t rest = (size_t)(line + len - s);
        if (doc) {
            if (memmem(s, rest, doc, 3)) doc = NULL;
        } else if (rest >= 3 && (!strncmp(s, "\"\"\"", 3) || !strncmp(s, "'''", 3))) {
            const char *q = !strncmp(s, "\"\"\"", 3) ? "\"\"\"" : "'''";
            if (!memmem(s + 3, rest - 3, q, 3)) doc = q;
        } else if (rest > 0 && *s != '#') {
            lines++;
        }
        if (!eol) break;
        line = eol + 1;
    }
    return lines;
}

typedef struct { long files, lines[3]; } tally;

static void walk(const char *path, tally *t, int depth)
{
    struct stat st;
    if (depth > 64 || lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        if (depth > 0 && base[0] == '.') return; /* .git and friends */
        DIR *d = opendir(path);
        if (!d) return;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char child[4096];
            snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            walk(child, t, depth + 1);
        }
        closedir(d);
        return;
    }
    if (!S_ISREG(st.st_mode)) return;
    lang_t l = lang_of(path);
    if (l == LANG_NONE) return;
    char *text, err[256];
    if (fb_read_file(path, &text, NULL, err, sizeof err) != 0) return;
    t->files++;
    t->lines[l] += l == LANG_C ? count_c(text) : count_py(text);
    free(text);
}

int cmd_loc(int argc, char **argv)
{
    static const struct option opts[] = {{"out", required_argument, 0, 'o'}, {"label", required_argument, 0, 'l'}, {"commit", required_argument, 0, 'c'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *out = NULL, *label = "", *commit_arg = NULL;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'o') out = optarg;
        else if (c == 'l') label = optarg;
        else if (c == 'c') commit_arg = optarg;
        else if (c == 'h') {
            printf("usage: fabench loc [--label NAME] [--commit SHA] [--out FILE.csv] PATH...\n\n"
                   "Counts non-blank, non-comment lines of C, C++, CUDA, OpenCL (.cl, .k) and Python sources\n"
                   "under each PATH (hidden folders skipped). With --out, adds one row per path to FILE.csv\n"
                   "(label, path, git commit of the tree or --commit, files, c_family_lines, python_lines,\n"
                   "total_lines); an earlier row with the same label and path is replaced.\n");
            return 0;
        } else {
            fprintf(stderr, "fabench loc: bad option '%s'\n", argv[optind - 1]);
            return FB_EXIT_BADINPUT;
        }
    }
    if (optind >= argc) { fprintf(stderr, "fabench loc: needs at least one PATH\n"); return FB_EXIT_BADINPUT; }
    static const char *const hdr[] = {"label", "path", "commit", "files", "c_family_lines", "python_lines", "total_lines"};
    csv_table *t = NULL;
    char err[FB_ERRLEN];
    if (out && csvt_open_append(out, hdr, 7, &t, err, sizeof err) != 0) { fprintf(stderr, "fabench loc: %s\n", err); return FB_EXIT_BADINPUT; }
    for (int i = optind; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "fabench loc: %s: no such file or folder\n", argv[i]);
            csvt_free(t);
            return FB_EXIT_BADINPUT;
        }
        tally ty = {0};
        walk(argv[i], &ty, 0);
        char cmd[4200], commit[64] = "";
        snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse HEAD 2>/dev/null", S_ISDIR(st.st_mode) ? argv[i] : ".");
        FILE *p = commit_arg ? NULL : popen(cmd, "r");
        if (commit_arg) snprintf(commit, sizeof commit, "%s", commit_arg);
        if (p) {
            if (!fgets(commit, sizeof commit, p)) commit[0] = 0;
            commit[strcspn(commit, "\n")] = 0;
            pclose(p);
        }
        long total = ty.lines[LANG_C] + ty.lines[LANG_PY];
        printf("%-40s %6ld files %8ld C-family %8ld Python %8ld total\n", argv[i], ty.files, ty.lines[LANG_C],
               ty.lines[LANG_PY], total);
        if (t) {
            char f[4][32];
            snprintf(f[0], 32, "%ld", ty.files);
            snprintf(f[1], 32, "%ld", ty.lines[LANG_C]);
            snprintf(f[2], 32, "%ld", ty.lines[LANG_PY]);
            snprintf(f[3], 32, "%ld", total);
            const char *row[] = {label, argv[i], commit, f[0], f[1], f[2], f[3]};
            /* one row per (label, path): a recount replaces the earlier row */
            size_t r = 0;
            while (r < t->nrows && (strcmp(t->rows[r][0], label) || strcmp(t->rows[r][1], argv[i]))) r++;
            if (r < t->nrows) csvt_replace(t, r, row);
            else csvt_add(t, row);
        }
    }
    int rc = 0;
    if (t && csvt_write_atomic(t, out, err, sizeof err) != 0) { fprintf(stderr, "fabench loc: %s\n", err); rc = 1; }
    csvt_free(t);
    return rc;
}
