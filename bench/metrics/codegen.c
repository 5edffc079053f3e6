/* codegen.c: `fabench compile --target`: configurations compiled for a GPU that need not be present. */
#define _GNU_SOURCE
#include "codegen.h"

#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amdgpu.h"
#include "attn.h"
#include "config.h"
#include "csvio.h"
#include "manifest.h"
#include "rt.h"
#include "sass.h"
#include "shapes.h"
#include "space.h"
#include "tune.h"

/* What a named AMD target offers the kernel: 64-lane wavefronts, 64 KiB of LDS, MFMA on
 * CDNA2/3 (compute units of an MI250X GCD and an MI300X). */
static int amd_target_info(const char *arch, rt_device_info *d)
{
    if (strncmp(arch, "gfx", 3) || !isdigit((unsigned char)arch[3]) || strlen(arch) > 16) return -1;
    for (const char *p = arch + 3; *p; p++)
        if (!isalnum((unsigned char)*p)) return -1;
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", arch);
    snprintf(d->arch, sizeof d->arch, "%s", arch);
    d->is_gpu = 1;
    d->warp_size = 64;
    d->max_group_size = 1024;
    d->static_shared_bytes = d->shared_bytes = 64 * 1024;
    int cdna3 = !strncmp(arch, "gfx94", 5);
    d->compute_units = cdna3 ? 304 : 110;
    if (cdna3 || !strcmp(arch, "gfx90a")) d->features |= RT_FEAT_MFMA;
    return 0;
}

/* What a named NVIDIA target offers the kernel: the device facts kconfig needs. */
int codegen_target_info(const char *arch, rt_device_info *d)
{
    int cc;
    if (!strncmp(arch, "gfx", 3)) return amd_target_info(arch, d);
    if (sscanf(arch, "sm_%d", &cc) != 1 || cc < 50) return -1;
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", arch);
    snprintf(d->arch, sizeof d->arch, "%s", arch);
    d->is_gpu = 1;
    d->warp_size = 32;
    d->max_group_size = 1024;
    d->static_shared_bytes = 48 * 1024;
    d->shared_bytes = cc >= 90 ? 227 * 1024 : cc == 80 ? 163 * 1024 : cc >= 86 ? 99 * 1024 : 48 * 1024;
    d->compute_units = cc >= 90 ? 132 : cc == 80 ? 108 : 80;
    if (cc >= 80) d->features |= RT_FEAT_MMA_SYNC;
    if (cc == 90) d->features |= RT_FEAT_WGMMA | RT_FEAT_TMA; /* compiled for sm_90a (ARCH_SPECIFIC=1) */
    return 0;
}

/* The configurations a tuning table names for a class on one backend (cuda or hip: what
 * this command compiles). Returns the count (0: none), -1 when out of memory; *out malloc'd. */
static long tuned_configs(const csv_table *t, const char *cls, const char *backend, kconfig **out)
{
    int cb = csvt_col(t, "backend"), cc = csvt_col(t, "shape_class"), cf = csvt_col(t, "config");
    kconfig *v = malloc(sizeof *v * (t->nrows ? t->nrows : 1));
    if (!v) return -1;
    long n = 0;
    /* a dense decode class "...-wW" also takes a table's rows written before the work bucket */
    const char *wb = strstr(cls, "-w");
    const size_t base = wb && !strstr(cls, "-p") ? (size_t)(wb - cls) : strlen(cls);
#define CLASS_OF(row) (!strcmp((row)[cc], cls) || (strlen((row)[cc]) == base && !strncmp((row)[cc], cls, base)))
    for (size_t r = 0; r < t->nrows; r++) {
        if (strcmp(t->rows[r][cb], backend) || !CLASS_OF(t->rows[r])) continue;
        int dup = 0;
        for (size_t q = 0; q < r && !dup; q++)
            dup = !strcmp(t->rows[q][cb], backend) && CLASS_OF(t->rows[q]) && !strcmp(t->rows[q][cf], t->rows[r][cf]);
        if (dup) continue;
        char err[FB_ERRLEN];
        kconfig c = {0};
        if (kconfig_parse(t->rows[r][cf], &c, err, sizeof err) == 0) v[n++] = c;
    }
#undef CLASS_OF
    *out = v;
    return n;
}

/* The folder's manifest: a new one (or one of this target) gets the target's facts; a
 * device's manifest (results/<gpu>/, the tuned winners compiled offline) keeps its own and
 * gains compile.* keys. 0, 2 or -1. */
static int compile_manifest(const char *path, const rt_device *rdev, const char *tool, int argc, char **argv, char *err,
                            size_t errlen)
{
    static const char *const header[2] = {"key", "value"};
    csv_table *t;
    int rc = csvt_open_append(path, header, 2, &t, err, errlen);
    if (rc != 0) return rc;
    const char *gpu = NULL;
    for (size_t r = 0; r < t->nrows; r++)
        if (!strcmp(t->rows[r][0], "gpu")) gpu = t->rows[r][1];
    if (!gpu || !strcmp(gpu, rdev->info.name)) {
        manifest_fill(t, rdev, argc, argv);
    } else {
        manifest_note_command(t, "compile", argc, argv);
        manifest_set(t, "compile.arch", rdev->info.arch);
    }
    manifest_set(t, "compile.sass_tool", tool && *tool ? tool : "none");
    rc = csvt_write_atomic(t, path, err, errlen);
    csvt_free(t);
    return rc;
}

/* --binaries: DIR/CLASS-HASH.EXT, written whole or not at all */
static int keep_binary(const char *dir, const char *key, const char *hash, const char *ext, const void *data, size_t len)
{
    char path[1400], err[FB_ERRLEN];
    snprintf(path, sizeof path, "%s/%s-%s.%s", dir, key, hash, ext);
    if (!strcmp(ext, "ptx") && len && !((const char *)data)[len - 1]) len--; /* NVRTC's PTX ends in a NUL */
    if (fb_write_file_atomic(path, data, len, err, sizeof err) == 0) return 0;
    fprintf(stderr, "fabench compile: %s\n", err);
    return -1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fabench compile --target ARCH (--suite NAME | --shapes FILE) [options]\n\n"
            "Compiles the portable kernel for a GPU that need not be present (NVIDIA: sm_80, sm_90,\n"
            "... through NVRTC) and records its static code: codegen.csv (PTX instruction histogram\n"
            "per configuration) and compiled.csv (registers, spills, shared memory, stack, binary\n"
            "bytes, instruction counts) under the output folder. With nvdisasm or cuobjdump on PATH\n"
            "($FABENCH_SASS_TOOL overrides; none: off) the cubin's SASS histogram is recorded too\n"
            "(codegen.csv rows with source sass). AMD: gfx90a, gfx940, gfx942, ... through HIPRTC\n"
            "(hipcc for targets it does not know): resources from the code object's metadata (VGPRs,\n"
            "AGPRs, SGPRs, LDS, scratch), the ISA histogram by llvm-objdump (source isa).\n\n"
            "  --target ARCH     sm_XY or gfxNNN\n"
            "  --config K=V,...  one configuration for every shape (default: the per-shape default)\n"
            "  --space           every configuration of kernels/space.csv per shape class\n"
            "  --tuning FILE     the configurations a tuning table (tuning.csv) names for each class\n"
            "                    (its rows of the target's runtime): the tuned winners\n"
            "  --dtype T         override the shapes' dtype\n"
            "  --out DIR         default results/<target>\n"
            "  --binaries DIR    also keep each compiled binary there, for reading with nvdisasm,\n"
            "                    cuobjdump or llvm-objdump: CLASS-HASH.cubin and CLASS-HASH.ptx\n"
            "                    (NVIDIA), CLASS-HASH.hsaco (AMD); HASH is compiled.csv's binary_hash\n");
}

/* What the command line asks for. */
typedef struct {
    const char *target, *suite, *shapes_file, *outdir, *tuning_path, *bindir;
    int use_space, have_dtype;
    dtype_t dtype; /* --dtype: over the shapes' own */
    kconfig cfg;   /* --config: what every shape's default is completed from */
} compile_opts;

/* The options into *o, checked before any work. Returns -1 to go on, else the exit status
 * (the message or the usage printed). */
static int parse_options(int argc, char **argv, compile_opts *o)
{
    enum { O_TARGET = 1, O_SUITE, O_SHAPES, O_CONFIG, O_SPACE, O_DTYPE, O_OUT, O_HELP, O_TUNING, O_BINARIES };
    static const struct option opts[] = {
        {"target", required_argument, 0, O_TARGET}, {"suite", required_argument, 0, O_SUITE},
        {"shapes", required_argument, 0, O_SHAPES}, {"config", required_argument, 0, O_CONFIG},
        {"space", no_argument, 0, O_SPACE}, {"dtype", required_argument, 0, O_DTYPE},
        {"out", required_argument, 0, O_OUT}, {"help", no_argument, 0, O_HELP},
        {"tuning", required_argument, 0, O_TUNING}, {"binaries", required_argument, 0, O_BINARIES}, {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->dtype = DT_BF16;
    char err[FB_ERRLEN];
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_TARGET: o->target = optarg; break;
        case O_SUITE: o->suite = optarg; break;
        case O_SHAPES: o->shapes_file = optarg; break;
        case O_SPACE: o->use_space = 1; break;
        case O_OUT: o->outdir = optarg; break;
        case O_TUNING: o->tuning_path = optarg; break;
        case O_BINARIES: o->bindir = optarg; break;
        case O_CONFIG:
            if (kconfig_parse(optarg, &o->cfg, err, sizeof err) != 0) { fprintf(stderr, "fabench compile: --config: %s\n", err); return FB_EXIT_BADINPUT; }
            break;
        case O_DTYPE:
            if (dtype_parse(optarg, &o->dtype) != 0) { fprintf(stderr, "fabench compile: --dtype: unknown '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            o->have_dtype = 1;
            break;
        case 'h':
        case O_HELP: usage(stdout); return 0;
        case ':': fprintf(stderr, "fabench compile: %s needs a value\n", argv[optind - 1]); return FB_EXIT_BADINPUT;
        default: fprintf(stderr, "fabench compile: unknown option '%s'\n", argv[optind - 1]); return FB_EXIT_BADINPUT;
        }
    }
    if (optind < argc || !o->target || (!o->suite == !o->shapes_file) || (o->use_space && o->tuning_path)) {
        fprintf(stderr, "fabench compile: needs --target and one of --suite or --shapes (and at most one of --space, --tuning)\n\n");
        usage(stderr);
        return FB_EXIT_BADINPUT;
    }
    return -1;
}

/* The target's device facts and the runtime that compiles for it offline (cuda for
 * NVIDIA, hip for AMD): 0, or the exit status with the message printed. */
static int open_target(const char *target, rt_device_info *dev, const rt_runtime **rt)
{
    if (codegen_target_info(target, dev) != 0) {
        fprintf(stderr, "fabench compile: target '%s': expected an NVIDIA sm_XY or an AMD gfxNNN\n", target);
        return FB_EXIT_BADINPUT;
    }
    const char *backend = !strncmp(target, "gfx", 3) ? "hip" : "cuda";
    *rt = rt_find(backend);
    if (!*rt || !(*rt)->compile_offline) { fprintf(stderr, "fabench compile: no %s runtime in this build\n", backend); return 1; }
    return 0;
}

/* --tuning's table, checked whole before any work (its columns, every configuration), so
 * that a bad row costs no compile: 0, or 2 with the message printed and nothing kept. */
static int read_tuning(const char *path, csv_table **tuned)
{
    char err[FB_ERRLEN];
    *tuned = NULL;
    int rc = csvt_read(path, tuned, err, sizeof err);
    int cc = rc == 0 ? csvt_col(*tuned, "shape_class") : -1, cf = rc == 0 ? csvt_col(*tuned, "config") : -1;
    if (rc == 0 && (cc < 0 || cf < 0 || csvt_col(*tuned, "backend") < 0)) {
        snprintf(err, sizeof err, "%s:1: not a tuning table (needs backend, shape_class, config)", path);
        rc = 2;
    }
    for (size_t r = 0; rc == 0 && r < (*tuned)->nrows; r++) {
        kconfig probe = {0};
        char perr[FB_ERRLEN];
        if (kconfig_parse((*tuned)->rows[r][cf], &probe, perr, sizeof perr) != 0) {
            snprintf(err, sizeof err, "%s:%d: config: %.800s", path, (*tuned)->row_line[r], perr);
            rc = 2;
        }
    }
    if (rc != 0) {
        fprintf(stderr, "fabench compile: %s\n", err);
        csvt_free(*tuned);
        *tuned = NULL;
        return FB_EXIT_BADINPUT;
    }
    return 0;
}

/* The shapes, and --space's space or --tuning's table (*tuned NULL without): 0, or 2 with
 * the message printed and nothing kept. */
static int load_inputs(const compile_opts *o, shape_list_t *shapes, space_t *space, csv_table **tuned)
{
    char err[FB_ERRLEN];
    *tuned = NULL;
    int rc = shapes_load_file_or_suite(o->shapes_file, o->suite, shapes, err, sizeof err);
    if (rc != 0) { fprintf(stderr, "fabench compile: %s\n", err); return FB_EXIT_BADINPUT; }
    if (o->use_space && space_load_default(space, err, sizeof err) != 0) {
        fprintf(stderr, "fabench compile: %s\n", err);
        shapes_free(shapes);
        return FB_EXIT_BADINPUT;
    }
    if (o->tuning_path && read_tuning(o->tuning_path, tuned) != 0) {
        shapes_free(shapes);
        return FB_EXIT_BADINPUT;
    }
    return 0;
}

/* One run of the command: what every compile shares, and what the compiles gather. */
typedef struct {
    const compile_opts *o;
    const rt_runtime *rt;
    const rt_device_info *dev; /* the target's facts */
    const char *backend;       /* cuda or hip */
    int amd;
    char *src;                 /* the kernel's source, its files joined */
    char ptx_arch[32];         /* compute_XY: NVIDIA's PTX, for its histogram, is compiled for it */
    int have_sass;             /* NVIDIA: a SASS disassembler is at hand, at sass_path */
    char sass_path[1024];
    csv_table *cg, *kt;        /* codegen.csv, compiled.csv */
    char disasm[512];          /* AMD: the ISA histograms' disassembler (the manifest names it) */
    char hist_err[512];        /* AMD: why there are no ISA histograms */
    int via_hipcc;             /* AMD: hipcc compiled a target HIPRTC does not know */
    int no_disasm;             /* AMD: no ISA histograms for the rest of the run (said once) */
    long compiled;             /* configurations that compiled */
    int failures;              /* that did not, or whose binary could not be kept: exit 1 */
    char err[FB_ERRLEN];       /* the compiler's, the kernel source's and the writes' messages */
} compile_run;

/* NVIDIA: the SASS disassembler on PATH ($FABENCH_SASS_TOOL), said either way, since
 * without it codegen.csv has PTX histograms only. */
static void find_sass_tool(compile_run *r)
{
    r->have_sass = !r->amd && sass_tool(r->sass_path, sizeof r->sass_path);
    if (!r->amd) fprintf(stderr, "fabench compile: %s\n", r->have_sass ? r->sass_path : "no nvdisasm or cuobjdump on PATH: PTX histograms only");
}

/* The output folder (--out, default results/<target>) and --binaries, made with their
 * parents before any compile: 0, or 2 with the message printed. */
static int make_dirs(const compile_opts *o, char *dir, size_t dirlen)
{
    if (o->outdir) snprintf(dir, dirlen, "%s", o->outdir); else snprintf(dir, dirlen, "results/%s", o->target);
    char derr[FB_ERRLEN];
    if (fb_mkdir_p(dir, derr, sizeof derr) != 0 || (o->bindir && fb_mkdir_p(o->bindir, derr, sizeof derr) != 0)) {
        fprintf(stderr, "fabench compile: %s\n", derr);
        return FB_EXIT_BADINPUT;
    }
    return 0;
}

/* codegen.csv's and compiled.csv's tables, empty, and the kernel's source: 0, or -1 with
 * the message printed. */
static int open_outputs(compile_run *r)
{
    static const char *const ch[] = {"gpu", "backend", "config", "shape_class", "instruction", "count", "source"};
    static const char *const kh[] = {"gpu", "backend", "config", "shape_class", "status", "reason", "registers", "spill_bytes",
                                     "shared_bytes", "private_bytes", "binary_bytes", "ptx_instructions", "distinct_instructions",
                                     "sass_instructions", "binary_hash"};
    /* AMD: registers is the unified VGPR count (architectural + AGPRs), shared_bytes LDS,
     * private_bytes scratch per lane, spill_bytes 4 per spilled VGPR */
    static const char *const kha[] = {"gpu", "backend", "config", "shape_class", "status", "reason", "registers", "spill_bytes",
                                      "shared_bytes", "private_bytes", "binary_bytes", "isa_instructions", "distinct_instructions",
                                      "vgprs", "agprs", "sgprs", "binary_hash"};
    r->cg = csvt_new(ch, 7);
    r->kt = r->amd ? csvt_new(kha, 17) : csvt_new(kh, 15);
    if (!r->cg || !r->kt || attn_source(r->backend, &r->src, r->err, sizeof r->err) != 0) {
        fprintf(stderr, "fabench compile: %s\n", r->err);
        return -1;
    }
    return 0;
}

/* One configuration's compile, and what was read from its binary. */
typedef struct {
    char cs[KCONFIG_STR_MAX]; /* the configuration as the tables write it */
    void *bin, *ptx;          /* the binary (cubin, code object); NVIDIA's PTX */
    size_t blen, plen;
    char *log;                /* the compiler's */
    rt_kernel_attrs a;        /* the compiler's report: -1 where it says nothing */
    int rc;                   /* 0, RT_ECOMPILE or RT_ERR */
    op_histogram h, sh;       /* the PTX or ISA histogram; the SASS histogram */
    int hist;                 /* 0: h is the histogram */
    long total, sass_total;   /* instructions in h, in sh; -1 unknown */
    char hash[24];            /* the binary's, hex; empty when it did not compile */
    amdgpu_kernel_meta am;    /* AMD: the code object's registers */
    status_t st;
    char reason[512];
} config_build;

/* Compiles cfg for the target (the binary, with the compiler's resource report) and, for
 * NVIDIA, to PTX for its histogram. b->rc says whether both compiled. */
static void build_config(compile_run *r, const shape_t *s, dtype_t dt, const kconfig *cfg, config_build *b)
{
    char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN];
    const char *dp[ATTN_MAX_DEFINES];
    int nd = attn_defines(s, dt, cfg, 1, defs);
    for (int k = 0; k < nd; k++) dp[k] = defs[k];
    memset(b, 0, sizeof *b);
    kconfig_str(cfg, b->cs, sizeof b->cs);
    b->a = (rt_kernel_attrs){-1, -1, -1, -1, -1, -1};
    b->st = ST_OK;
    b->sass_total = -1;
    b->am = (amdgpu_kernel_meta){.sgprs = -1, .vgprs = -1, .agprs = -1};
    b->hist = -1;
    const char *target = r->o->target;
    b->rc = r->rt->compile_offline(target, r->src, dp, nd, "attn_fwd", &b->bin, &b->blen, &b->a, &b->log, r->err, sizeof r->err);
    if (b->rc == 0 && !r->amd)
        b->rc = r->rt->compile_offline(r->ptx_arch, r->src, dp, nd, "attn_fwd", &b->ptx, &b->plen, NULL, NULL, r->err, sizeof r->err);
}

/* AMD: the code object's registers from its metadata, and its ISA histogram; without a
 * disassembler that works the histograms are given up for the rest of the run, said once. */
static void read_amd_binary(compile_run *r, config_build *b)
{
    r->via_hipcc |= b->log && strstr(b->log, "does not know") != NULL;
    char merr[256];
    if (amdgpu_kernel_meta_get(b->bin, b->blen, "attn_fwd", &b->am, merr, sizeof merr) != 0)
        fprintf(stderr, "fabench compile: %s %s: %s\n", r->o->target, b->cs, merr);
    if (!r->no_disasm) {
        b->hist = amdgpu_isa_histogram(b->bin, b->blen, r->o->target, &b->h, r->disasm, sizeof r->disasm, r->hist_err,
                                       sizeof r->hist_err);
        if (b->hist != 0) fprintf(stderr, "fabench compile: no ISA histograms: %s\n", r->hist_err);
        r->no_disasm = b->hist != 0;
    }
}

/* A configuration that did not compile: compile_error, with the first line of the
 * compiler's message (AMD: from its first "error", past the command lines) as the reason. */
static void record_failure(compile_run *r, config_build *b)
{
    b->st = ST_COMPILE_ERROR;
    snprintf(b->reason, sizeof b->reason, "%.500s", b->rc == RT_ECOMPILE && b->log ? b->log : r->err);
    if (r->amd && b->rc == RT_ECOMPILE && b->log && strstr(b->log, "error"))
        snprintf(b->reason, sizeof b->reason, "%.500s", strstr(b->log, "error"));
    b->reason[strcspn(b->reason, "\n")] = 0;
    r->failures++;
}

/* One codegen.csv row: an instruction and its count in one configuration's histogram. */
static void add_histogram_row(compile_run *r, const char *backend, const char *cs, const char *key, const char *op,
                              long count, const char *source)
{
    char cnt[32];
    snprintf(cnt, sizeof cnt, "%ld", count);
    const char *row[] = {r->o->target, backend, cs, key, op, cnt, source};
    csvt_add(r->cg, row);
}

/* NVIDIA: the cubin's SASS histogram as codegen.csv rows (source sass); a disassembler
 * that fails is said, and the row's sass_instructions stays unknown. */
static void record_sass(compile_run *r, const char *key, config_build *b)
{
    char serr[FB_ERRLEN];
    int sr = r->have_sass ? sass_disassemble(b->bin, b->blen, &b->sh, serr, sizeof serr) : 1;
    if (sr < 0) fprintf(stderr, "fabench compile: %s %s: SASS: %s\n", key, b->cs, serr);
    for (size_t k = 0; sr == 0 && k < b->sh.n; k++) {
        add_histogram_row(r, "cuda", b->cs, key, b->sh.op[k], b->sh.count[k], "sass");
        b->sass_total = (b->sass_total < 0 ? 0 : b->sass_total) + b->sh.count[k];
    }
}

/* A configuration that compiled: its PTX or ISA histogram as codegen.csv rows, the
 * binary's hash (compiled.csv's binary_hash, the kept files' names), the binaries kept
 * (--binaries), then its SASS histogram. */
static void record_binary(compile_run *r, const char *key, config_build *b)
{
    for (size_t k = 0; b->hist == 0 && k < b->h.n; k++) {
        add_histogram_row(r, r->backend, b->cs, key, b->h.op[k], b->h.count[k], r->amd ? "isa" : "ptx");
        b->total += b->h.count[k];
    }
    if (b->hist != 0) b->total = -1;
    r->compiled++;
    snprintf(b->hash, sizeof b->hash, "%016llx", (unsigned long long)fb_fnv1a(FB_FNV_OFFSET, b->bin, b->blen));
    const char *bindir = r->o->bindir;
    if (bindir && keep_binary(bindir, key, b->hash, r->amd ? "hsaco" : "cubin", b->bin, b->blen) != 0) r->failures++;
    if (bindir && !r->amd && keep_binary(bindir, key, b->hash, "ptx", b->ptx, b->plen) != 0) r->failures++;
    record_sass(r, key, b);
}

/* The configuration's compiled.csv row, whether it compiled or not: -1 for what is not
 * known. Shared memory adds the dynamic part the configuration asks for at launch. */
static void add_compiled_row(compile_run *r, const shape_t *s, const char *key, const kconfig *cfg, const config_build *b)
{
    const rt_kernel_attrs *a = &b->a;
    char f[11][32], f7[32];
    snprintf(f[0], 32, "%ld", a->registers);
    snprintf(f[1], 32, "%ld", a->spill_bytes);
    snprintf(f[2], 32, "%ld", a->shared_bytes >= 0 ? a->shared_bytes + (long)kconfig_dynamic_shared(cfg, s->d) : -1);
    snprintf(f[3], 32, "%ld", a->private_bytes);
    snprintf(f[4], 32, "%zu", b->blen);
    snprintf(f[5], 32, "%ld", b->total);
    snprintf(f[6], 32, "%ld", b->hist == 0 ? (long)b->h.n : -1L);
    snprintf(f7, sizeof f7, "%ld", b->sass_total);
    snprintf(f[7], 32, "%ld", amdgpu_arch_vgprs(&b->am));
    snprintf(f[8], 32, "%ld", b->am.agprs);
    snprintf(f[9], 32, "%ld", b->am.sgprs);
    const char *target = r->o->target, *backend = r->backend, *status = status_name(b->st);
    const char *krow_nv[] = {target, backend, b->cs, key, status, b->reason, f[0], f[1], f[2], f[3], f[4], f[5], f[6],
                             f7, b->hash};
    const char *krow_amd[] = {target, backend, b->cs, key, status, b->reason, f[0], f[1], f[2], f[3], f[4], f[5], f[6],
                              f[7], f[8], f[9], b->hash};
    csvt_add(r->kt, r->amd ? krow_amd : krow_nv);
}

/* One configuration: compiled, read (histograms, registers, SASS) and recorded, its
 * compiled.csv row written whether it compiled or not. */
static void compile_config(compile_run *r, const shape_t *s, dtype_t dt, const char *key, const kconfig *cfg)
{
    config_build b;
    build_config(r, s, dt, cfg, &b);
    if (b.rc == 0 && r->amd) read_amd_binary(r, &b);
    else if (b.rc == 0) b.hist = ptx_histogram(b.ptx, b.plen, &b.h);
    if (b.rc != 0) record_failure(r, &b);
    else record_binary(r, key, &b);
    add_compiled_row(r, s, key, cfg, &b);
    op_histogram_free(&b.h);
    op_histogram_free(&b.sh);
    free(b.bin);
    free(b.ptx);
    free(b.log);
}

/* The configurations to compile for a class: --space's (those the target can hold),
 * --tuning's for the class, or --config's one; each completed for the shape. Returns the
 * count, *out malloc'd; -1, or *out NULL, when out of memory. */
static long class_configs(const compile_run *r, const shape_t *s, dtype_t dt, const char *key, const space_t *space,
                          const csv_table *tuned, kconfig **out)
{
    kconfig *cands = NULL;
    long n = 1, before;
    if (r->o->use_space) n = space_enumerate(space, r->dev, s, dt, &cands, &before);
    else if (tuned) {
        n = tuned_configs(tuned, key, r->backend, &cands);
        for (long j = 0; j < n; j++) kconfig_complete(&cands[j], r->dev, s, dt);
    }
    else if ((cands = malloc(sizeof *cands))) { cands[0] = r->o->cfg; kconfig_complete(&cands[0], r->dev, s, dt); }
    *out = cands;
    return n;
}

/* One class, on its first shape: every configuration compiled, then its line. 0, or -1
 * out of memory (said, and counted a failure). */
static int compile_class(compile_run *r, const shape_t *s, dtype_t dt, const char *key, const space_t *space,
                         const csv_table *tuned)
{
    kconfig *cands;
    long n = class_configs(r, s, dt, key, space, tuned, &cands);
    if (!cands || n < 0) { fprintf(stderr, "fabench compile: out of memory\n"); r->failures++; return -1; }
    for (long j = 0; j < n; j++) compile_config(r, s, dt, key, &cands[j]);
    fprintf(stderr, "fabench compile: %s %s: %ld configuration%s\n", r->o->target, key, n, n == 1 ? "" : "s");
    free(cands);
    return 0;
}

/* Every shape class once, on its first shape: the kernel's defines select a class, so its
 * other shapes would compile the same code. At most 256 classes; running out of memory
 * stops the loop (the tables so far are still written). */
static void compile_classes(compile_run *r, const shape_list_t *shapes, const space_t *space, const csv_table *tuned)
{
    char classes[256][96];
    int nclass = 0;
    for (size_t i = 0; i < shapes->n; i++) {
        const shape_t *s = &shapes->v[i];
        dtype_t dt = shapes_dtype(s, r->o->have_dtype, r->o->dtype);
        char key[96];
        tune_class_key(s, dt, key, sizeof key);
        int seen = 0;
        for (int k = 0; k < nclass; k++) seen |= !strcmp(classes[k], key);
        if (seen || nclass == 256) continue;
        snprintf(classes[nclass++], sizeof classes[0], "%s", key);
        if (compile_class(r, s, dt, key, space, tuned) != 0) break;
    }
}

/* The compiler as the manifest records it: offline, with no device; for AMD whether HIPRTC
 * or hipcc compiled, and what disassembled the ISA. */
static void note_compiler(const compile_run *r, rt_device *rdev)
{
    if (r->amd) {
        const char *dis = strrchr(r->disasm, '/') ? strrchr(r->disasm, '/') + 1 : r->disasm;
        snprintf(rdev->info.compiler, sizeof rdev->info.compiler, "%s (offline, no device); ISA by %.40s",
                 r->via_hipcc ? "hipcc: HIPRTC does not know the target" : "HIPRTC", dis[0] ? dis : "nothing");
    } else {
        char ver[64] = "NVRTC";
        if (r->rt->offline_compiler) (void)r->rt->offline_compiler(ver, sizeof ver);
        snprintf(rdev->info.compiler, sizeof rdev->info.compiler, "%s (offline, no device)", ver);
    }
}

/* codegen.csv, compiled.csv and the folder's manifest, each written whole, then the run's
 * last line. 0, or 1 with the message printed. argc, argv: the command's, for the manifest. */
static int write_outputs(compile_run *r, const char *dir, int argc, char **argv)
{
    char pc[1100], pk[1100], pm[1100];
    snprintf(pc, sizeof pc, "%s/codegen.csv", dir);
    snprintf(pk, sizeof pk, "%s/compiled.csv", dir);
    snprintf(pm, sizeof pm, "%s/manifest.csv", dir);
    rt_device rdev = {.rt = r->rt, .index = -1, .info = *r->dev};
    note_compiler(r, &rdev);
    int wrc = csvt_write_atomic(r->cg, pc, r->err, sizeof r->err) || csvt_write_atomic(r->kt, pk, r->err, sizeof r->err) ||
              compile_manifest(pm, &rdev, r->have_sass ? r->sass_path : "", argc + 1, argv - 1, r->err, sizeof r->err);
    if (wrc) fprintf(stderr, "fabench compile: %s\n", r->err);
    else fprintf(stderr, "fabench compile: %ld compiled for %s; %s and %s\n", r->compiled, r->o->target, pc, pk);
    return wrc ? 1 : 0;
}

int cmd_compile(int argc, char **argv)
{
    compile_opts o;
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) return rc;
    compile_run r = {.o = &o};
    rt_device_info dev;
    if ((rc = open_target(o.target, &dev, &r.rt)) != 0) return rc;
    r.dev = &dev;
    r.amd = !strncmp(o.target, "gfx", 3);
    r.backend = r.amd ? "hip" : "cuda";
    shape_list_t shapes = {0};
    space_t space;
    csv_table *tuned;
    if ((rc = load_inputs(&o, &shapes, &space, &tuned)) != 0) return rc;

    find_sass_tool(&r);
    char dir[1024];
    rc = make_dirs(&o, dir, sizeof dir);
    if (rc == 0 && open_outputs(&r) != 0) rc = 1;
    if (rc == 0) {
        snprintf(r.ptx_arch, sizeof r.ptx_arch, "compute_%s", o.target + 3);
        compile_classes(&r, &shapes, &space, tuned);
        rc = write_outputs(&r, dir, argc, argv) || r.failures ? 1 : 0;
    }
    free(r.src);
    csvt_free(tuned);
    csvt_free(r.cg);
    csvt_free(r.kt);
    shapes_free(&shapes);
    return rc;
}
