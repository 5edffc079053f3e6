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

int cmd_compile(int argc, char **argv)
{
    enum { O_TARGET = 1, O_SUITE, O_SHAPES, O_CONFIG, O_SPACE, O_DTYPE, O_OUT, O_HELP, O_TUNING, O_BINARIES };
    static const struct option opts[] = {
        {"target", required_argument, 0, O_TARGET}, {"suite", required_argument, 0, O_SUITE},
        {"shapes", required_argument, 0, O_SHAPES}, {"config", required_argument, 0, O_CONFIG},
        {"space", no_argument, 0, O_SPACE}, {"dtype", required_argument, 0, O_DTYPE},
        {"out", required_argument, 0, O_OUT}, {"help", no_argument, 0, O_HELP},
        {"tuning", required_argument, 0, O_TUNING}, {"binaries", required_argument, 0, O_BINARIES}, {0, 0, 0, 0}};
    const char *target = NULL, *suite = NULL, *shapes_file = NULL, *outdir = NULL, *tuning_path = NULL, *bindir = NULL;
    int use_space = 0, have_dtype = 0;
    dtype_t dtype = DT_BF16;
    kconfig cfg = {0};
    char err[FB_ERRLEN];
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_TARGET: target = optarg; break;
        case O_SUITE: suite = optarg; break;
        case O_SHAPES: shapes_file = optarg; break;
        case O_SPACE: use_space = 1; break;
        case O_OUT: outdir = optarg; break;
        case O_TUNING: tuning_path = optarg; break;
        case O_BINARIES: bindir = optarg; break;
        case O_CONFIG:
            if (kconfig_parse(optarg, &cfg, err, sizeof err) != 0) { fprintf(stderr, "fabench compile: --config: %s\n", err); return FB_EXIT_BADINPUT; }
            break;
        case O_DTYPE:
            if (dtype_parse(optarg, &dtype) != 0) { fprintf(stderr, "fabench compile: --dtype: unknown '%s'\n", optarg); return FB_EXIT_BADINPUT; }
            have_dtype = 1;
            break;
        case 'h':
        case O_HELP: usage(stdout); return 0;
        case ':': fprintf(stderr, "fabench compile: %s needs a value\n", argv[optind - 1]); return FB_EXIT_BADINPUT;
        default: fprintf(stderr, "fabench compile: unknown option '%s'\n", argv[optind - 1]); return FB_EXIT_BADINPUT;
        }
    }
    if (optind < argc || !target || (!suite == !shapes_file) || (use_space && tuning_path)) {
        fprintf(stderr, "fabench compile: needs --target and one of --suite or --shapes (and at most one of --space, --tuning)\n\n");
        usage(stderr);
        return FB_EXIT_BADINPUT;
    }
    rt_device_info dev;
    if (codegen_target_info(target, &dev) != 0) {
        fprintf(stderr, "fabench compile: target '%s': expected an NVIDIA sm_XY or an AMD gfxNNN\n", target);
        return FB_EXIT_BADINPUT;
    }
    const int amd = !strncmp(target, "gfx", 3);
    const char *backend = amd ? "hip" : "cuda";
    const rt_runtime *rt = rt_find(backend);
    if (!rt || !rt->compile_offline) { fprintf(stderr, "fabench compile: no %s runtime in this build\n", backend); return 1; }
    shape_list_t shapes = {0};
    int rc = shapes_file ? shapes_load(shapes_file, &shapes, err, sizeof err) : shapes_load_suite(suite, &shapes, err, sizeof err);
    if (rc != 0) { fprintf(stderr, "fabench compile: %s\n", err); return FB_EXIT_BADINPUT; }
    space_t space;
    if (use_space && space_load_default(&space, err, sizeof err) != 0) {
        fprintf(stderr, "fabench compile: %s\n", err);
        shapes_free(&shapes);
        return FB_EXIT_BADINPUT;
    }
    csv_table *tuned = NULL;
    if (tuning_path) { /* the whole table is checked before any work */
        rc = csvt_read(tuning_path, &tuned, err, sizeof err);
        int cc = rc == 0 ? csvt_col(tuned, "shape_class") : -1, cf = rc == 0 ? csvt_col(tuned, "config") : -1;
        if (rc == 0 && (cc < 0 || cf < 0 || csvt_col(tuned, "backend") < 0)) {
            snprintf(err, sizeof err, "%s:1: not a tuning table (needs backend, shape_class, config)", tuning_path);
            rc = 2;
        }
        for (size_t r = 0; rc == 0 && r < tuned->nrows; r++) {
            kconfig probe = {0};
            char perr[FB_ERRLEN];
            if (kconfig_parse(tuned->rows[r][cf], &probe, perr, sizeof perr) != 0) {
                snprintf(err, sizeof err, "%s:%d: config: %.800s", tuning_path, tuned->row_line[r], perr);
                rc = 2;
            }
        }
        if (rc != 0) {
            fprintf(stderr, "fabench compile: %s\n", err);
            csvt_free(tuned);
            shapes_free(&shapes);
            return FB_EXIT_BADINPUT;
        }
    }
    char sass_path[1024];
    int have_sass = !amd && sass_tool(sass_path, sizeof sass_path);
    if (!amd) fprintf(stderr, "fabench compile: %s\n", have_sass ? sass_path : "no nvdisasm or cuobjdump on PATH: PTX histograms only");
    char dir[1024], pc[1100], pk[1100];
    if (outdir) snprintf(dir, sizeof dir, "%s", outdir); else snprintf(dir, sizeof dir, "results/%s", target);
    char derr[FB_ERRLEN];
    if (fb_mkdir_p(dir, derr, sizeof derr) != 0 || (bindir && fb_mkdir_p(bindir, derr, sizeof derr) != 0)) {
        fprintf(stderr, "fabench compile: %s\n", derr);
        csvt_free(tuned);
        shapes_free(&shapes);
        return FB_EXIT_BADINPUT;
    }
    snprintf(pc, sizeof pc, "%s/codegen.csv", dir);
    snprintf(pk, sizeof pk, "%s/compiled.csv", dir);
    static const char *const ch[] = {"gpu", "backend", "config", "shape_class", "instruction", "count", "source"};
    static const char *const kh[] = {"gpu", "backend", "config", "shape_class", "status", "reason", "registers", "spill_bytes",
                                     "shared_bytes", "private_bytes", "binary_bytes", "ptx_instructions", "distinct_instructions",
                                     "sass_instructions", "binary_hash"};
    /* AMD: registers is the unified VGPR count (architectural + AGPRs), shared_bytes LDS,
     * private_bytes scratch per lane, spill_bytes 4 per spilled VGPR */
    static const char *const kha[] = {"gpu", "backend", "config", "shape_class", "status", "reason", "registers", "spill_bytes",
                                      "shared_bytes", "private_bytes", "binary_bytes", "isa_instructions", "distinct_instructions",
                                      "vgprs", "agprs", "sgprs", "binary_hash"};
    csv_table *cg = csvt_new(ch, 7), *kt = amd ? csvt_new(kha, 17) : csvt_new(kh, 15);
    char *src = NULL, disasm[512] = "", hist_err[512] = "";
    int via_hipcc = 0, no_disasm = 0;
    if (!cg || !kt || attn_source(backend, &src, err, sizeof err) != 0) {
        fprintf(stderr, "fabench compile: %s\n", err);
        csvt_free(cg); csvt_free(kt); shapes_free(&shapes);
        return 1;
    }
    char classes[256][96];
    int nclass = 0, failures = 0;
    long compiled = 0;
    char ptx_arch[32];
    snprintf(ptx_arch, sizeof ptx_arch, "compute_%s", target + 3);
    for (size_t i = 0; i < shapes.n; i++) {
        const shape_t *s = &shapes.v[i];
        dtype_t dt = have_dtype ? dtype : s->has_dtype ? s->dtype : DT_BF16;
        char key[96];
        tune_class_key(s, dt, key, sizeof key);
        int seen = 0;
        for (int k = 0; k < nclass; k++) seen |= !strcmp(classes[k], key);
        if (seen || nclass == 256) continue;
        snprintf(classes[nclass++], sizeof classes[0], "%s", key);
        kconfig *cands = NULL;
        long n = 1, before;
        if (use_space) n = space_enumerate(&space, &dev, s, dt, &cands, &before);
        else if (tuned) {
            n = tuned_configs(tuned, key, backend, &cands);
            for (long j = 0; j < n; j++) kconfig_complete(&cands[j], &dev, s, dt);
        }
        else if ((cands = malloc(sizeof *cands))) { cands[0] = cfg; kconfig_complete(&cands[0], &dev, s, dt); }
        if (!cands || n < 0) { fprintf(stderr, "fabench compile: out of memory\n"); failures++; break; }
        for (long j = 0; j < n; j++) {
            char defs[ATTN_MAX_DEFINES][ATTN_DEFINE_LEN], cs[KCONFIG_STR_MAX], reason[512] = "";
            const char *dp[ATTN_MAX_DEFINES];
            int nd = attn_defines(s, dt, &cands[j], 1, defs);
            for (int k = 0; k < nd; k++) dp[k] = defs[k];
            kconfig_str(&cands[j], cs, sizeof cs);
            void *bin = NULL, *ptx = NULL;
            size_t blen = 0, plen = 0;
            char *log = NULL;
            rt_kernel_attrs a = {-1, -1, -1, -1, -1, -1};
            status_t st = ST_OK;
            int r1 = rt->compile_offline(target, src, dp, nd, "attn_fwd", &bin, &blen, &a, &log, err, sizeof err);
            if (r1 == 0 && !amd) r1 = rt->compile_offline(ptx_arch, src, dp, nd, "attn_fwd", &ptx, &plen, NULL, NULL, err, sizeof err);
            op_histogram h = {0}, sh = {0};
            long total = 0, sass_total = -1;
            char hash[24] = "";
            amdgpu_kernel_meta am = {.sgprs = -1, .vgprs = -1, .agprs = -1};
            int hist = -1;
            if (r1 == 0 && amd) {
                via_hipcc |= log && strstr(log, "does not know") != NULL;
                char merr[256];
                if (amdgpu_kernel_meta_get(bin, blen, "attn_fwd", &am, merr, sizeof merr) != 0)
                    fprintf(stderr, "fabench compile: %s %s: %s\n", target, cs, merr);
                if (!no_disasm) {
                    hist = amdgpu_isa_histogram(bin, blen, target, &h, disasm, sizeof disasm, hist_err, sizeof hist_err);
                    if (hist != 0) fprintf(stderr, "fabench compile: no ISA histograms: %s\n", hist_err);
                    no_disasm = hist != 0;
                }
            } else if (r1 == 0) {
                hist = ptx_histogram(ptx, plen, &h);
            }
            if (r1 != 0) {
                st = ST_COMPILE_ERROR;
                snprintf(reason, sizeof reason, "%.500s", r1 == RT_ECOMPILE && log ? log : err);
                if (amd && r1 == RT_ECOMPILE && log && strstr(log, "error")) snprintf(reason, sizeof reason, "%.500s", strstr(log, "error"));
                reason[strcspn(reason, "\n")] = 0;
                failures++;
            } else {
                for (size_t k = 0; hist == 0 && k < h.n; k++) {
                    char cnt[32];
                    snprintf(cnt, sizeof cnt, "%ld", h.count[k]);
                    const char *row[] = {target, backend, cs, key, h.op[k], cnt, amd ? "isa" : "ptx"};
                    csvt_add(cg, row);
                    total += h.count[k];
                }
                if (hist != 0) total = -1;
                compiled++;
                snprintf(hash, sizeof hash, "%016llx", (unsigned long long)fb_fnv1a(FB_FNV_OFFSET, bin, blen));
                if (bindir && keep_binary(bindir, key, hash, amd ? "hsaco" : "cubin", bin, blen) != 0) failures++;
                if (bindir && !amd && keep_binary(bindir, key, hash, "ptx", ptx, plen) != 0) failures++;
                char serr[FB_ERRLEN];
                int sr = have_sass ? sass_disassemble(bin, blen, &sh, serr, sizeof serr) : 1;
                if (sr < 0) fprintf(stderr, "fabench compile: %s %s: SASS: %s\n", key, cs, serr);
                for (size_t k = 0; sr == 0 && k < sh.n; k++) {
                    char cnt[32];
                    snprintf(cnt, sizeof cnt, "%ld", sh.count[k]);
                    const char *row[] = {target, "cuda", cs, key, sh.op[k], cnt, "sass"};
                    csvt_add(cg, row);
                    sass_total = (sass_total < 0 ? 0 : sass_total) + sh.count[k];
                }
            }
            char f[11][32], f7[32];
            snprintf(f[0], 32, "%ld", a.registers);
            snprintf(f[1], 32, "%ld", a.spill_bytes);
            snprintf(f[2], 32, "%ld", a.shared_bytes >= 0 ? a.shared_bytes + (long)kconfig_dynamic_shared(&cands[j], s->d) : -1);
            snprintf(f[3], 32, "%ld", a.private_bytes);
            snprintf(f[4], 32, "%zu", blen);
            snprintf(f[5], 32, "%ld", total);
            snprintf(f[6], 32, "%ld", hist == 0 ? (long)h.n : -1L);
            snprintf(f7, sizeof f7, "%ld", sass_total);
            snprintf(f[7], 32, "%ld", amdgpu_arch_vgprs(&am));
            snprintf(f[8], 32, "%ld", am.agprs);
            snprintf(f[9], 32, "%ld", am.sgprs);
            const char *krow_nv[] = {target, backend, cs, key, status_name(st), reason, f[0], f[1], f[2], f[3], f[4], f[5], f[6],
                                     f7, hash};
            const char *krow_amd[] = {target, backend, cs, key, status_name(st), reason, f[0], f[1], f[2], f[3], f[4], f[5], f[6],
                                      f[7], f[8], f[9], hash};
            const char *const *krow = amd ? krow_amd : krow_nv;
            csvt_add(kt, krow);
            op_histogram_free(&h);
            op_histogram_free(&sh);
            free(bin);
            free(ptx);
            free(log);
        }
        fprintf(stderr, "fabench compile: %s %s: %ld configuration%s\n", target, key, n, n == 1 ? "" : "s");
        free(cands);
    }
    char pm[1100];
    snprintf(pm, sizeof pm, "%s/manifest.csv", dir);
    rt_device rdev = {.rt = rt, .index = -1, .info = dev};
    if (amd) {
        const char *dis = strrchr(disasm, '/') ? strrchr(disasm, '/') + 1 : disasm;
        snprintf(rdev.info.compiler, sizeof rdev.info.compiler, "%s (offline, no device); ISA by %.40s",
                 via_hipcc ? "hipcc: HIPRTC does not know the target" : "HIPRTC", dis[0] ? dis : "nothing");
    } else {
        char ver[64] = "NVRTC";
        if (rt->offline_compiler) (void)rt->offline_compiler(ver, sizeof ver);
        snprintf(rdev.info.compiler, sizeof rdev.info.compiler, "%s (offline, no device)", ver);
    }
    int wrc = csvt_write_atomic(cg, pc, err, sizeof err) || csvt_write_atomic(kt, pk, err, sizeof err) ||
              compile_manifest(pm, &rdev, have_sass ? sass_path : "", argc + 1, argv - 1, err, sizeof err);
    if (wrc) fprintf(stderr, "fabench compile: %s\n", err);
    else fprintf(stderr, "fabench compile: %ld compiled for %s; %s and %s\n", compiled, target, pc, pk);
    free(src);
    csvt_free(tuned);
    csvt_free(cg);
    csvt_free(kt);
    shapes_free(&shapes);
    return wrc ? 1 : failures ? 1 : 0;
}
