/* common.h: the plain data every part of the harness shares: element types, shapes,
 * result statuses, error-buffer conventions and a few small utilities (util.c). */
#ifndef FABENCH_COMMON_H
#define FABENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Exit status for bad input (files, options): the run stops before any work. */
#define FB_EXIT_BADINPUT 2
/* Error buffers passed as (char *err, size_t errlen) are this long by convention. */
#define FB_ERRLEN 1024

typedef enum { DT_FP32 = 0, DT_FP16 = 1, DT_BF16 = 2 } dtype_t;

const char *dtype_name(dtype_t dt);             /* "fp32", "fp16", "bf16" */
int dtype_parse(const char *s, dtype_t *out);    /* 0 on success; accepts float32/half/... aliases */
size_t dtype_size(dtype_t dt);                   /* bytes per element in memory */

/* Most entries of a ragged batch's length pattern (the shape file's `lens` column). */
#define FB_MAX_LENS 32

/* One attention problem: Q [batch, hq, sq, d], K and V [batch, hkv, skv, d].
 * A ragged (variable-length) batch has nlens > 0: sequence b has the lengths
 * max(1, round(lens[b % nlens] * sq)) and likewise for skv (sq and skv are the maxima),
 * and its tensors are packed per head without padding: Q and O [hq, total_q, d],
 * K and V [hkv, total_kv, d], LSE [hq, total_q]; sequence b occupies rows
 * cu_q[b] .. cu_q[b+1]-1 of every head (shape_cu_seqlens). */
typedef struct {
    char name[64];
    int batch, hq, hkv, sq, skv, d;
    int causal;      /* 1: bottom-right aligned causal mask (per sequence when ragged) */
    int has_dtype;   /* the shape file named a dtype for this row */
    dtype_t dtype;
    int line;        /* line in the source file, for messages */
    int nlens;       /* 0: every sequence full length (dense [B, H, S, D] layout) */
    double lens[FB_MAX_LENS]; /* fractions in (0, 1], repeated cyclically over the batch */
    /* mixed batches: query lengths of their own (fractions of sq, cyclic; lens then gives
     * the key lengths only), so decoding and prefilling sequences share one launch */
    int nqlens;
    double qlens[FB_MAX_LENS];
    int page;        /* 0: K, V dense; else a paged KV cache of `page`-row pages (shape_paged) */
} shape_t;

typedef struct {
    shape_t *v;
    size_t n;
    char source[512]; /* file the shapes came from */
} shape_list_t;

/* Head dimensions the portable kernel supports. */
extern const int fb_supported_d[];
extern const size_t fb_n_supported_d;
int fb_d_supported(int d);

/* Outcome of one measured configuration; the names are the CSV spellings. */
typedef enum {
    ST_OK = 0,
    ST_COMPILE_ERROR,
    ST_RESOURCE_LIMIT,
    ST_LAUNCH_ERROR,
    ST_WRONG_RESULT,
    ST_TIMEOUT,
    ST_UNSUPPORTED,
    ST_ABSENT,
    ST__COUNT
} status_t;
const char *status_name(status_t st);

/* FLOPs of the unmasked (query, key) pairs: 4 * d * pairs * batch * hq (ragged: the
 * pairs of every sequence, each with its own lengths and causal diagonal). */
double shape_flops(const shape_t *s);
/* Unmasked (query, key) pairs of one (batch, head); bottom-right causal alignment.
 * Ragged: the mean over the batch's sequences. */
double shape_pairs(const shape_t *s);
/* The same for one sequence of sq queries and skv keys. */
double seq_pairs(long sq, long skv, int causal);
/* Bytes of Q, K, V and O moved once (for effective bandwidth); ragged: real tokens only. */
double shape_bytes(const shape_t *s, dtype_t dt);

/* Ragged batches (nlens > 0). shape_seq_lens: the lengths of sequence b (the maxima
 * sq, skv for a dense shape). shape_cu_seqlens: cumulative offsets, batch + 1 entries
 * each, cu[0] = 0 and cu[batch] = total (either pointer may be NULL). shape_total_q/kv:
 * rows per head of the packed tensors (batch * sq, batch * skv for a dense shape). */
int shape_ragged(const shape_t *s);
/* A paged KV cache (page > 0): K and V are [pages, hkv, page, d], the pages of sequence b
 * named by row b of a block table [batch, shape_pages_per_seq] (kernels/common.k, PAGED). */
int shape_paged(const shape_t *s);
int shape_pages_per_seq(const shape_t *s);
void shape_seq_lens(const shape_t *s, int b, int *sq, int *skv);
void shape_cu_seqlens(const shape_t *s, int32_t *cu_q, int32_t *cu_kv);
long long shape_total_q(const shape_t *s);
long long shape_total_kv(const shape_t *s);
/* Elements of Q (= O) and of K (= V), and rows of O (= LSE entries), in either layout. */
size_t shape_q_elems(const shape_t *s);
size_t shape_kv_elems(const shape_t *s);
size_t shape_out_rows(const shape_t *s);
/* The pattern as "0.1;0.4;1" ("" for a dense shape); shape_qlens_str: the query pattern. */
void shape_lens_str(const shape_t *s, char *out, size_t outlen);
void shape_qlens_str(const shape_t *s, char *out, size_t outlen);
/* Length of a fraction of a maximum: max(1, round(frac * max)). */
int frac_len(double frac, int max);

/* The project root (holds kernels/ and bench/suites/): $FABENCH_ROOT, else found by
 * walking up from the executable's directory. Returns 0 and fills out, or -1. */
int fb_root(char *out, size_t outlen);

/* Reads a whole file into a NUL-terminated malloc'd buffer. 0 or -1 with err filled. */
int fb_read_file(const char *path, char **data, size_t *len, char *err, size_t errlen);

/* A kernel's source for a runtime: kernels/prelude_<runtime>.h, then kernels/<file> for each
 * of `files` (NULL-terminated, in order), each under a #line directive (compiler messages
 * name the file and its lines), malloc'd into *out. 0, or -1 with err naming the file that
 * is missing. fb_kernel_source: one file. */
int fb_kernel_source_files(const char *runtime, const char *const *files, char **out, char *err, size_t errlen);
int fb_kernel_source(const char *runtime, const char *body, char **out, char *err, size_t errlen);

/* data written to PATH.tmp.PID, then renamed over PATH: whole or not at all */
int fb_write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);
/* 1 when both paths exist and name the same file (device and inode), else 0. */
int fb_same_file(const char *a, const char *b);
/* 0 when none of the first nout of the n paths (a command's outputs; the rest its inputs;
 * NULL: not given) names the same file as another of them, else -1 with err naming both
 * by their options name[]. */
int fb_distinct_files(const char *const *path, const char *const *name, int nout, int n, char *err, size_t errlen);
/* 0 when PATH can be written whole by a temp file and a rename: its folder exists and is
 * writable, and PATH, if it exists, is not a directory; else -1 with err saying why. */
int fb_check_writable(const char *path, char *err, size_t errlen);
/* Claims PATH for this process's writes until it exits or releases its claims: an
 * exclusive lock on a file in $TMPDIR (or /tmp) named after PATH's real folder and name.
 * Two processes that rewrite one results file whole would lose each other's rows; the
 * second is refused. 0, or -1 with err naming PATH (another process holds it, or the lock
 * could not be taken). */
int fb_claim_output(const char *path, char *err, size_t errlen);
/* Gives up every claim of fb_claim_output (their locks closed): for a process that runs
 * one command after another in itself, as the command-line fuzzer does, once each is done. */
void fb_release_outputs(void);
/* Lower-case, [a-z0-9-] only, runs of other characters collapsed to '-'. */
void fb_slug(const char *in, char *out, size_t outlen);
/* mkdir -p: PATH and any missing parents. 0 when PATH is a directory at the end, else -1
 * with err naming the path that could not be made and why. */
int fb_mkdir_p(const char *path, char *err, size_t errlen);

/* The run a results row belongs to: $FABENCH_RUN_ID when set (run.sh and tools/rounds.sh give
 * the commands of one evaluation pass one id, so ours and the vendors' rows pair by it), else
 * an id made once per process from the UTC time, the host and the process id. */
const char *fb_run_id(void);
/* 0 when $FABENCH_RUN_ID is unset or a usable id (1..64 of [A-Za-z0-9._:-]); else -1 with
 * err saying why (checked before a command writes anything). */
int fb_run_id_check(char *err, size_t errlen);
/* The UTC time now, ISO 8601 to the second: "2026-12-07T09:15:02Z". */
void fb_utc_now(char *out, size_t len);

/* Monotonic clock in seconds. */
double fb_now(void);
/* Sleeps s seconds (through interruptions); nothing for s <= 0. */
void fb_sleep(double s);
/* v printed with fmt into out, or "" when v is NaN (a value not measured). */
void fb_fmt_num(char *out, size_t len, double v, const char *fmt);

/* FNV-1a, 64 bits, continued from h (start from FB_FNV_OFFSET): the checksum and key hash
 * of the kernel cache, and the fingerprint that tells identical binaries apart. */
#define FB_FNV_OFFSET 0xcbf29ce484222325ull
uint64_t fb_fnv1a(uint64_t h, const void *data, size_t n);

#endif
