/* test_shapes.c: shape-file validation (every error names file, line and field) and the
 * suites shipped in bench/suites/. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "shapes.h"

#define HDR "name,batch,hq,hkv,sq,skv,d,causal\n"

static char tmpdir[512];
static char last_path[600];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "%s/fabench-shapes-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes content to a fresh file in tmpdir; its path is left in last_path. */
static const char *write_tmp(const char *content)
{
    snprintf(last_path, sizeof last_path, "%s/shapes-XXXXXX", tmpdir);
    int fd = mkstemp(last_path);
    assert_true(fd >= 0);
    size_t n = strlen(content);
    assert_int_equal(write(fd, content, n), (ssize_t)n);
    assert_int_equal(close(fd), 0);
    return last_path;
}

/* Loads content and expects rc, with err holding "PATH:LINE:" (LINE 0: "PATH: ") and every
 * further string given (NULL-terminated). */
static void expect_err(const char *content, int rc, int line, ...)
{
    const char *path = write_tmp(content);
    shape_list_t l;
    char err[FB_ERRLEN] = "";
    int got = shapes_load(path, &l, err, sizeof err);
    if (got != rc) print_error("unexpected rc %d (err: %s)\n", got, err);
    assert_int_equal(got, rc);
    assert_null(l.v);
    assert_int_equal(l.n, 0);
    char want[700];
    if (line) snprintf(want, sizeof want, "%s:%d: ", path, line);
    else snprintf(want, sizeof want, "%s: ", path);
    if (strncmp(err, want, strlen(want)) != 0) print_error("err '%s' lacks '%s'\n", err, want);
    assert_true(strncmp(err, want, strlen(want)) == 0);
    va_list ap;
    va_start(ap, line);
    for (const char *s; (s = va_arg(ap, const char *));) {
        if (!strstr(err, s)) print_error("err '%s' lacks '%s'\n", err, s);
        assert_non_null(strstr(err, s));
    }
    va_end(ap);
}

static void test_valid(void **state)
{
    (void)state;
    const char *path = write_tmp(
        "causal,name,d,batch,dtype,hq,hkv,sq,skv\n"
        "1,a,64,2,fp16,8,2,33,129\n"
        "\n"
        "false,b,128,1,BF16,4,4,1,4096\n"
        "TRUE,c,80,1,half,4,1,7,7\n"
        "0,\"quoted, name\",256,3,fp32,2,1,5,9\n");
    shape_list_t l;
    char err[FB_ERRLEN] = "";
    assert_int_equal(shapes_load(path, &l, err, sizeof err), 0);
    assert_int_equal(l.n, 4);
    assert_string_equal(l.source, path);
    const shape_t *s = &l.v[0];
    assert_string_equal(s->name, "a");
    assert_int_equal(s->batch, 2);
    assert_int_equal(s->hq, 8);
    assert_int_equal(s->hkv, 2);
    assert_int_equal(s->sq, 33);
    assert_int_equal(s->skv, 129);
    assert_int_equal(s->d, 64);
    assert_int_equal(s->causal, 1);
    assert_int_equal(s->has_dtype, 1);
    assert_int_equal(s->dtype, DT_FP16);
    assert_int_equal(s->line, 2);
    assert_int_equal(l.v[1].line, 4);
    assert_int_equal(l.v[1].causal, 0);
    assert_int_equal(l.v[1].dtype, DT_BF16);
    assert_int_equal(l.v[2].causal, 1);
    assert_int_equal(l.v[2].dtype, DT_FP16);
    assert_int_equal(l.v[2].line, 5);
    assert_string_equal(l.v[3].name, "quoted, name");
    assert_int_equal(l.v[3].dtype, DT_FP32);
    shapes_free(&l);
    assert_null(l.v);
    assert_int_equal(l.n, 0);

    /* no dtype column: has_dtype 0; a 63-character name; exactly 2^40 elements */
    path = write_tmp(HDR
        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk,1024,16,16,524288,524288,128,1\n");
    assert_int_equal(shapes_load(path, &l, err, sizeof err), 0);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.v[0].has_dtype, 0);
    assert_int_equal(strlen(l.v[0].name), 63);
    shapes_free(&l);
}

static void test_bad_head_dim(void **state)
{
    (void)state;
    expect_err(HDR "a,1,2,2,8,8,64,0\nb,1,2,2,8,8,128,1\n\nc,1,2,2,8,8,100,0\n", 2, 5,
               "field 'd'", "unsupported head dim 100", "(supported: 32, 64, 80, 96, 128, 192, 256)",
               NULL);
}

static void test_missing_column(void **state)
{
    (void)state;
    expect_err("name,batch,hq,sq,skv,d,causal\na,1,2,8,8,64,0\n", 2, 1, "missing column 'hkv'",
               "(header has: name,batch,hq,sq,skv,d,causal)", NULL);
    expect_err("name,batch,hq,hkv,sq,skv,d\na,1,2,2,8,8,64\n", 2, 1, "missing column 'causal'", NULL);
}

static void test_unknown_and_duplicate_column(void **state)
{
    (void)state;
    expect_err("name,batch,hq,hkv,sq,skv,d,causal,dtpye\na,1,2,2,8,8,64,0,fp16\n", 2, 1,
               "unknown column 'dtpye'", NULL);
    expect_err("name,batch,hq,hkv,sq,skv,d,causal,hq\na,1,2,2,8,8,64,0,2\n", 2, 1,
               "duplicate column 'hq'", NULL);
}

static void test_not_multiple(void **state)
{
    (void)state;
    expect_err(HDR "a,1,4,2,8,8,64,0\nb,1,12,5,8,8,64,0\n", 2, 3,
               "field 'hq': 12 is not a multiple of hkv=5", NULL);
}

static void test_range(void **state)
{
    (void)state;
    expect_err(HDR "a,1,2,2,8,8,64,0\n\n\nb,0,2,2,8,8,64,0\n", 2, 5,
               "field 'batch': must be >= 1, got 0", NULL);
    expect_err(HDR "a,1,2,2,8,-3,64,0\n", 2, 2, "field 'skv': must be >= 1, got -3", NULL);
    expect_err(HDR "a,1,2,0,8,8,64,0\n", 2, 2, "field 'hkv'", NULL);
    expect_err(HDR "a,1,2,2,0,8,64,0\n", 2, 2, "field 'sq'", NULL);
    expect_err(HDR "a,1,2,2,8,8,0,0\n", 2, 2, "field 'd'", NULL);
    expect_err(HDR "a,1,2147483648,2,8,8,64,0\n", 2, 2, "field 'hq'", "out of range", NULL);
    expect_err(HDR "a,1,2,2,99999999999999999999,8,64,0\n", 2, 2, "field 'sq'", "out of range", NULL);
}

static void test_not_integers(void **state)
{
    (void)state;
    expect_err(HDR "a,12x,2,2,8,8,64,0\n", 2, 2, "field 'batch'", "'12x' is not an integer", NULL);
    expect_err(HDR "a,+1,2,2,8,8,64,0\n", 2, 2, "field 'batch'", "'+1' is not an integer", NULL);
    expect_err(HDR "a,1,2,2,1.5,8,64,0\n", 2, 2, "field 'sq'", "'1.5' is not an integer", NULL);
    expect_err(HDR "a,1,2,2,8,,64,0\n", 2, 2, "field 'skv'", "empty", NULL);
    expect_err(HDR "a,1,\" 2\",2,8,8,64,0\n", 2, 2, "field 'hq'", "not an integer", NULL);
    expect_err(HDR "a,1,2,2,8,8,0x40,0\n", 2, 2, "field 'd'", "not an integer", NULL);
}

static void test_too_many_elements(void **state)
{
    (void)state;
    /* 1024*64*2^20*256 = 2^44 query elements */
    expect_err(HDR "a,1024,64,8,1048576,1,256,0\n", 2, 2, "field 'sq'", "2^40", NULL);
    /* 2^40 + a bit of K/V: 1025*16*524288*128 */
    expect_err(HDR "a,1025,16,16,1,524288,128,1\n", 2, 2, "field 'skv'", "2^40", NULL);
    /* products that overflow 64 bits */
    expect_err(HDR "a,2147483647,2147483647,1,2147483647,1,256,0\n", 2, 2, "field 'sq'", NULL);
}

#define HDRD "name,batch,hq,hkv,sq,skv,d,causal,dtype\n"

static void test_causal_and_dtype(void **state)
{
    (void)state;
    expect_err(HDR "a,1,2,2,8,8,64,2\n", 2, 2, "field 'causal'", "'2'", NULL);
    expect_err(HDR "a,1,2,2,8,8,64,yes\n", 2, 2, "field 'causal'", NULL);
    expect_err(HDR "a,1,2,2,8,8,64,\n", 2, 2, "field 'causal'", NULL);
    expect_err(HDRD "a,1,2,2,8,8,64,1,fp16\nb,1,2,2,8,8,64,1,fp8\n", 2, 3,
               "field 'dtype': unknown 'fp8' (known: fp32, fp16, bf16)", NULL);
    expect_err(HDRD "a,1,2,2,8,8,64,1,fp16\nb,1,2,2,8,8,64,1,\n", 2, 3, "field 'dtype'", "empty",
               NULL);
}

static void test_names(void **state)
{
    (void)state;
    expect_err(HDR "a,1,2,2,8,8,64,0\n,1,2,2,8,8,64,0\n", 2, 3, "field 'name'", "empty", NULL);
    expect_err(HDR "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl,1,2,2,8,8,64,0\n",
               2, 2, "field 'name'", "64 characters", NULL);
    expect_err(HDR "a,1,2,2,8,8,64,0\nb,1,2,2,8,8,64,0\na,1,4,2,8,8,64,0\n", 2, 4, "field 'name'",
               "duplicate name 'a'", "line 2", NULL);
}

static void test_no_shapes(void **state)
{
    (void)state;
    expect_err("", 2, 0, "no shapes", NULL);
    expect_err("\n\n", 2, 0, "no shapes", NULL);
    expect_err(HDR, 2, 0, "no shapes", NULL);
    expect_err(HDR "\n\n", 2, 0, "no shapes", NULL);
}

static void test_csv_errors_pass_through(void **state)
{
    (void)state;
    expect_err(HDR "a,1,2,2,8,8,64,0\nb,1,2,2,8,8,64\n", 2, 3, "expected 8 fields, found 7", NULL);
    expect_err(HDR "a,1,2,2,8,8,64,0\nb\"x,1,2,2,8,8,64,0\n", 2, 3, NULL);

    shape_list_t l;
    char err[FB_ERRLEN] = "", path[600];
    snprintf(path, sizeof path, "%s/does-not-exist.csv", tmpdir);
    assert_int_equal(shapes_load(path, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_null(l.v);
}

/* ---------- the shipped suites ---------- */

static int root_or_fail(char *root, size_t len)
{
    if (fb_root(root, len) != 0) {
        print_error("fb_root failed: run from build/tests/ under the project or set FABENCH_ROOT\n");
        fail();
    }
    return 0;
}

static shape_list_t load_suite(const char *name)
{
    shape_list_t l;
    char err[FB_ERRLEN] = "";
    int rc = shapes_load_suite(name, &l, err, sizeof err);
    if (rc != 0) print_error("suite %s: %s\n", name, err);
    assert_int_equal(rc, 0);
    assert_true(l.n > 0);
    assert_non_null(strstr(l.source, "/bench/suites/"));
    return l;
}

static void test_list_and_load_all_suites(void **state)
{
    (void)state;
    char root[PATH_MAX];
    root_or_fail(root, sizeof root);
    char list[1024];
    shapes_list_suites(list, sizeof list);
    /* sorted, comma separated, without .csv */
    const char *want[] = {"decode", "llm", "paper", "smoke"};
    const char *prev = list;
    for (size_t i = 0; i < 4; i++) {
        const char *p = strstr(list, want[i]);
        if (!p) print_error("suite list '%s' lacks %s\n", list, want[i]);
        assert_non_null(p);
        assert_true(p >= prev);
        prev = p;
    }
    assert_null(strstr(list, ".csv"));

    /* every listed suite loads and validates */
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", list);
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        shape_list_t l = load_suite(tok);
        for (size_t i = 0; i < l.n; i++) assert_true(l.v[i].line >= 2);
        shapes_free(&l);
        n++;
    }
    assert_true(n >= 4);
}

static void test_smoke_suite(void **state)
{
    (void)state;
    char root[PATH_MAX];
    root_or_fail(root, sizeof root);
    shape_list_t l = load_suite("smoke");
    assert_true(l.n >= 6 && l.n <= 8);
    int causal = 0, noncausal = 0, sq_lt = 0, sq_gt = 0, gqa41 = 0, gqa42 = 0, dec = 0, odd = 0;
    int d64 = 0, d128 = 0, d80_96 = 0;
    for (size_t i = 0; i < l.n; i++) {
        const shape_t *s = &l.v[i];
        assert_true(shape_flops(s) <= 2e8);
        assert_int_equal(s->has_dtype, 0);
        causal += s->causal;
        noncausal += !s->causal;
        sq_lt += s->sq < s->skv;
        sq_gt += s->sq > s->skv;
        gqa41 += s->hq == 4 && s->hkv == 1;
        gqa42 += s->hq == 4 && s->hkv == 2;
        dec += s->sq == 1;
        odd += (s->sq % 2) || (s->skv % 2);
        d64 += s->d == 64;
        d128 += s->d == 128;
        d80_96 += s->d == 80 || s->d == 96;
    }
    assert_true(causal && noncausal && sq_lt && sq_gt && gqa41 && gqa42 && dec && odd);
    assert_true(d64 && d128 && d80_96);
    shapes_free(&l);
}

static void test_paper_suite(void **state)
{
    (void)state;
    char root[PATH_MAX];
    root_or_fail(root, sizeof root);
    shape_list_t l = load_suite("paper");
    /* (32,32) and (32,8) x the (batch, seqlen) pairs with batch*seqlen <= 131072 */
    size_t want = 0;
    const int batches[] = {1, 4, 16, 64, 128};
    for (int b = 0; b < 5; b++)
        for (int s = 16; s <= 4096; s *= 2) want += batches[b] * s <= 131072;
    assert_int_equal(l.n, 2 * want);
    int kv8 = 0;
    for (size_t i = 0; i < l.n; i++) {
        const shape_t *s = &l.v[i];
        assert_int_equal(s->has_dtype, 1);
        assert_int_equal(s->dtype, DT_FP16);
        assert_int_equal(s->causal, 1);
        assert_int_equal(s->d, 128);
        assert_int_equal(s->hq, 32);
        assert_true(s->hkv == 32 || s->hkv == 8);
        assert_int_equal(s->sq, s->skv);
        assert_true((long)s->batch * s->sq <= 131072);
        char name[64];
        snprintf(name, sizeof name, "paper-h%dkv%d-b%d-s%d", s->hq, s->hkv, s->batch, s->sq);
        assert_string_equal(s->name, name);
        kv8 += s->hkv == 8;
    }
    assert_int_equal(kv8, (int)want);
    shapes_free(&l);
}

/* FlashAttention-3's benchmark grid: 16k tokens (batch x seqlen) and heads x head dim = 2048,
 * seqlen 512..16k, head dims 64, 128, 256, causal and not, bf16 and fp16: each point once */
static void test_fa3_suite(void **state)
{
    (void)state;
    char root[PATH_MAX];
    root_or_fail(root, sizeof root);
    shape_list_t l = load_suite("fa3");
    assert_int_equal(l.n, 2 * 3 * 2 * 6);
    int seen[2][3][2][6] = {{{{0}}}};
    for (size_t i = 0; i < l.n; i++) {
        const shape_t *s = &l.v[i];
        assert_int_equal(s->has_dtype, 1);
        assert_true(s->dtype == DT_BF16 || s->dtype == DT_FP16);
        assert_int_equal((long)s->batch * s->sq, 16384);
        assert_int_equal(s->hq * s->d, 2048);
        assert_int_equal(s->hkv, s->hq);
        assert_int_equal(s->sq, s->skv);
        const int di = s->d == 64 ? 0 : s->d == 128 ? 1 : s->d == 256 ? 2 : -1;
        int si = -1;
        for (int k = 0; k < 6; k++) si = s->sq == 512 << k ? k : si;
        assert_true(di >= 0 && si >= 0);
        seen[s->dtype == DT_FP16][di][s->causal][si]++;
        char name[64];
        snprintf(name, sizeof name, "fa3-%s-d%d-%s-s%d", s->dtype == DT_FP16 ? "fp16" : "bf16", s->d, s->causal ? "c" : "nc",
                 s->sq);
        assert_string_equal(s->name, name);
    }
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 2; c++)
                for (int k = 0; k < 6; k++) assert_int_equal(seen[a][b][c][k], 1);
    shapes_free(&l);
}

static const shape_t *find(const shape_list_t *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].name, name) == 0) return &l->v[i];
    return NULL;
}

static void test_llm_suite(void **state)
{
    (void)state;
    char root[PATH_MAX];
    root_or_fail(root, sizeof root);
    shape_list_t l = load_suite("llm");
    assert_true(l.n >= 40 && l.n <= 60);
    const shape_t *r = find(&l, "ref-b4-h32-s4096-d128");
    assert_non_null(r);
    assert_true(r->batch == 4 && r->hq == 32 && r->hkv == 32 && r->sq == 4096 && r->skv == 4096 &&
                r->d == 128 && r->causal == 0);
    r = find(&l, "ref-b4-h32-s4096-d128-causal");
    assert_non_null(r);
    assert_true(r->batch == 4 && r->hq == 32 && r->sq == 4096 && r->d == 128 && r->causal == 1);
    r = find(&l, "ref-decode-b64-h32kv8-s4096");
    assert_non_null(r);
    assert_true(r->batch == 64 && r->hq == 32 && r->hkv == 8 && r->sq == 1 && r->skv == 4096 &&
                r->d == 128 && r->causal == 1);
    int decode = 0;
    for (size_t i = 0; i < l.n; i++) {
        assert_int_equal(l.v[i].has_dtype, 0);
        decode += l.v[i].sq == 1;
    }
    assert_true(decode >= 10);
    shapes_free(&l);
}

static void test_decode_suite(void **state)
{
    (void)state;
    char root[PATH_MAX];
    root_or_fail(root, sizeof root);
    shape_list_t l = load_suite("decode");
    int mqa = 0, mha = 0, gqa = 0, spec = 0, d64 = 0, d256 = 0;
    for (size_t i = 0; i < l.n; i++) {
        const shape_t *s = &l.v[i];
        assert_true(s->sq == 1 || s->sq == 4);
        assert_int_equal(s->causal, 1);
        assert_true((double)s->batch * s->hkv * s->skv * s->d * 2 * 2 <= 4.3e9);
        mqa += s->hkv == 1;
        mha += s->hkv == s->hq;
        gqa += s->hq == 32 && s->hkv == 8;
        spec += s->sq == 4;
        d64 += s->d == 64;
        d256 += s->d == 256;
    }
    assert_true(mqa && mha && gqa && spec && d64 && d256);
    shapes_free(&l);
}

/* The `qlens` column: a mixed batch's query lengths, independent of the key lengths. */
static void test_qlens(void **state)
{
    (void)state;
    const char *path = write_tmp("name,batch,hq,hkv,sq,skv,d,causal,lens,qlens\n"
                                 "mix,4,4,2,2048,4096,64,1,0.5;1,1;0.0001\n"
                                 "qonly,3,4,2,100,300,64,1,,0.5;1;0.001\n");
    shape_list_t l;
    char err[FB_ERRLEN] = "";
    assert_int_equal(shapes_load(path, &l, err, sizeof err), 0);
    const shape_t *mix = &l.v[0], *qonly = &l.v[1];
    assert_true(shape_ragged(mix) && shape_ragged(qonly));
    int lq, lk;
    shape_seq_lens(mix, 0, &lq, &lk); /* prefill: 2048 queries over 2048 keys */
    assert_int_equal(lq, 2048);
    assert_int_equal(lk, 2048);
    shape_seq_lens(mix, 1, &lq, &lk); /* decode: one query over 4096 keys */
    assert_int_equal(lq, 1);
    assert_int_equal(lk, 4096);
    shape_seq_lens(mix, 3, &lq, &lk);
    assert_int_equal(lq, 1);
    assert_int_equal(shape_total_q(mix), 2048 + 1 + 2048 + 1);
    assert_int_equal(shape_total_kv(mix), 2048 + 4096 + 2048 + 4096);
    shape_seq_lens(qonly, 2, &lq, &lk); /* without lens every sequence has all the keys */
    assert_int_equal(lq, 1);
    assert_int_equal(lk, 300);
    char str[128];
    shape_qlens_str(mix, str, sizeof str);
    assert_string_equal(str, "1;0.0001");
    shapes_free(&l);
    expect_err("name,batch,hq,hkv,sq,skv,d,causal,qlens\nx,1,2,1,8,64,64,1,0.5;0\n", 2, 2, "field 'qlens'", "outside (0, 1]",
               NULL);
    expect_err("name,batch,hq,hkv,sq,skv,d,causal,qlens\nx,1,2,1,8,64,64,1,0.5;;1\n", 2, 2, "field 'qlens'", "empty", NULL);
}

static void test_ragged_suite(void **state)
{
    (void)state;
    char root[PATH_MAX];
    root_or_fail(root, sizeof root);
    shape_list_t l = load_suite("ragged");
    int uniform = 0, varied = 0, decode = 0, prefill = 0, tiny = 0;
    for (size_t i = 0; i < l.n; i++) {
        const shape_t *s = &l.v[i];
        assert_true(shape_ragged(s));
        uniform += s->nlens == 1 && s->lens[0] == 1.0;
        varied += s->nlens == 5 && s->lens[0] == 0.1 && s->lens[1] == 0.4 && s->lens[2] == 0.5 && s->lens[3] == 1.0 &&
                  s->lens[4] == 0.2;
        decode += s->sq == 1;
        prefill += s->sq == s->skv && s->sq > 1;
        tiny += shape_flops(s) <= 2e8;
    }
    assert_int_equal(uniform + varied, (int)l.n);
    assert_true(uniform && varied && decode && prefill && tiny >= 3);
    shapes_free(&l);
}

static void test_unknown_suite(void **state)
{
    (void)state;
    char root[PATH_MAX];
    root_or_fail(root, sizeof root);
    const char *bad[] = {"nope", "smoke.csv", "../suites/smoke", "", "/etc/passwd"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        shape_list_t l;
        char err[FB_ERRLEN] = "";
        assert_int_equal(shapes_load_suite(bad[i], &l, err, sizeof err), 2);
        assert_null(l.v);
        char want[128];
        snprintf(want, sizeof want, "unknown suite '%s'", bad[i]);
        assert_non_null(strstr(err, want));
        assert_non_null(strstr(err, "decode, fa3, llm, mixed, paged, paper, ragged, ref, smoke"));
    }
}

/* The optional `lens` column: a ragged batch's pattern, per-sequence lengths, offsets,
 * and FLOPs and bytes of real tokens only. */
/* The optional `page` column: a paged KV cache's page size; empty is dense. */
static void test_page(void **state)
{
    (void)state;
    const char *path = write_tmp("name,batch,hq,hkv,sq,skv,d,causal,page\n"
                                 "p16,4,8,2,1,1000,128,1,16\n"
                                 "dense,4,8,2,1,1000,128,1,\n"
                                 "p4096,1,2,1,9000,9000,64,0,4096\n");
    shape_list_t l;
    char err[FB_ERRLEN] = "";
    assert_int_equal(shapes_load(path, &l, err, sizeof err), 0);
    assert_int_equal(l.n, 3);
    assert_int_equal(l.v[0].page, 16);
    assert_true(shape_paged(&l.v[0]));
    assert_int_equal(shape_pages_per_seq(&l.v[0]), 63); /* ceil(1000 / 16) */
    assert_int_equal(l.v[1].page, 0);
    assert_false(shape_paged(&l.v[1]));
    assert_int_equal(shape_pages_per_seq(&l.v[1]), 0);
    assert_int_equal(shape_pages_per_seq(&l.v[2]), 3);
    shapes_free(&l);
    const char *bad[] = {"8", "24", "8192", "16k", "-16", "0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char content[256];
        snprintf(content, sizeof content, "name,batch,hq,hkv,sq,skv,d,causal,page\nx,1,2,1,1,64,64,1,%s\n", bad[i]);
        expect_err(content, 2, 2, "field 'page'", bad[i], "power of two", NULL);
    }
}

static void test_lens(void **state)
{
    (void)state;
    const char *path = write_tmp(
        "name,batch,hq,hkv,sq,skv,d,causal,lens\n"
        "pre,7,4,2,100,100,64,1,0.1;0.4;0.5;1.0;0.2\n"
        "dense,7,4,2,100,100,64,1,\n"
        "uni,7,4,2,100,100,64,1,1\n"
        "dec,5,8,2,1,1000,128,1,0.1;0.4;0.5;1.0;0.2\n"
        "odd,4,2,1,37,29,32,0,0.3;1;0.05;0.5\n");
    shape_list_t l;
    char err[FB_ERRLEN] = "";
    assert_int_equal(shapes_load(path, &l, err, sizeof err), 0);
    assert_int_equal(l.n, 5);
    const shape_t *pre = &l.v[0], *dense = &l.v[1], *uni = &l.v[2], *dec = &l.v[3], *odd = &l.v[4];
    assert_int_equal(pre->nlens, 5);
    assert_true(pre->lens[0] == 0.1 && pre->lens[3] == 1.0 && pre->lens[4] == 0.2);
    assert_int_equal(dense->nlens, 0);
    assert_false(shape_ragged(dense));
    assert_true(shape_ragged(pre) && shape_ragged(uni));
    char str[128];
    shape_lens_str(pre, str, sizeof str);
    assert_string_equal(str, "0.1;0.4;0.5;1;0.2");
    shape_lens_str(dense, str, sizeof str);
    assert_string_equal(str, "");

    /* lengths repeat cyclically: 10 40 50 100 20 | 10 40 */
    int32_t cq[8], ck[8];
    const int32_t want_cu[8] = {0, 10, 50, 100, 200, 220, 230, 270};
    shape_cu_seqlens(pre, cq, ck);
    for (int b = 0; b < 8; b++) {
        assert_int_equal(cq[b], want_cu[b]);
        assert_int_equal(ck[b], want_cu[b]);
    }
    assert_int_equal(shape_total_q(pre), 270);
    assert_int_equal(shape_total_kv(pre), 270);
    assert_int_equal(shape_q_elems(pre), (size_t)270 * 4 * 64);
    assert_int_equal(shape_kv_elems(pre), (size_t)270 * 2 * 64);
    assert_int_equal(shape_out_rows(pre), (size_t)270 * 4);
    /* causal per sequence: L (L + 1) / 2 pairs each */
    double pairs = 55 + 820 + 1275 + 5050 + 210 + 55 + 820;
    assert_true(shape_flops(pre) == 4.0 * 64 * 4 * pairs);
    assert_true(shape_bytes(pre, DT_FP16) == 2.0 * (2.0 * 270 * 4 * 64 + 2.0 * 270 * 2 * 64));
    assert_true(shape_flops(pre) < shape_flops(dense));

    /* the uniform pattern [1.0] counts exactly what the dense shape counts */
    assert_int_equal(shape_total_q(uni), 700);
    assert_int_equal(shape_q_elems(uni), shape_q_elems(dense));
    assert_int_equal(shape_kv_elems(uni), shape_kv_elems(dense));
    assert_true(shape_flops(uni) == shape_flops(dense));
    assert_true(shape_bytes(uni, DT_BF16) == shape_bytes(dense, DT_BF16));
    assert_int_equal(shape_total_q(dense), 700);

    /* decode: one query each, keys 100 400 500 1000 200, all visible */
    int lq, lk;
    const int want_k[5] = {100, 400, 500, 1000, 200};
    for (int b = 0; b < 5; b++) {
        shape_seq_lens(dec, b, &lq, &lk);
        assert_int_equal(lq, 1);
        assert_int_equal(lk, want_k[b]);
    }
    assert_true(shape_flops(dec) == 4.0 * 128 * 8 * 2200);
    assert_true(shape_bytes(dec, DT_FP16) == 2.0 * (2.0 * 5 * 8 * 128 + 2.0 * 2200 * 2 * 128));

    /* rounding to the nearest length, at least 1: 0.3*37 = 11.1, 0.3*29 = 8.7, 0.05*29 = 1.45, 0.5*37 = 18.5 */
    const int want_odd[4][2] = {{11, 9}, {37, 29}, {2, 1}, {19, 15}};
    for (int b = 0; b < 4; b++) {
        shape_seq_lens(odd, b, &lq, &lk);
        assert_int_equal(lq, want_odd[b][0]);
        assert_int_equal(lk, want_odd[b][1]);
    }
    assert_true(shape_flops(odd) == 4.0 * 32 * 2 * (11 * 9 + 37 * 29 + 2 * 1 + 19 * 15));
    assert_int_equal(frac_len(0.001, 100), 1);
    assert_int_equal(frac_len(1.0, 1), 1);
    /* bottom-right causal per sequence: 6 queries over 27 keys see 22 .. 27 keys; 27 over 6 see 0 .. 6 */
    assert_true(seq_pairs(6, 27, 1) == 22 + 23 + 24 + 25 + 26 + 27);
    assert_true(seq_pairs(27, 6, 1) == 1 + 2 + 3 + 4 + 5 + 6);
    assert_true(seq_pairs(6, 27, 0) == 6 * 27);
    /* the closed form against the row-by-row count, and a length no loop could walk */
    for (long q = 0; q < 40; q++)
        for (long k = 0; k < 40; k++) {
            double want = 0;
            for (long i = 0; i < q; i++) {
                const long n = i + k - q + 1;
                want += n > 0 ? (double)(n < k ? n : k) : 0;
            }
            assert_true(seq_pairs(q, k, 1) == want);
        }
    assert_true(seq_pairs(2147483647L, 2147483647L, 1) == 2147483647.0 * 2147483648.0 / 2);
    shapes_free(&l);
}

static void test_bad_lens(void **state)
{
    (void)state;
#define LHDR "name,batch,hq,hkv,sq,skv,d,causal,lens\n"
    expect_err(LHDR "a,2,2,2,16,16,64,1,0\n", 2, 2, "field 'lens'", "'0'", "(0, 1]", NULL);
    expect_err(LHDR "a,2,2,2,16,16,64,1,0.5;1.5\n", 2, 2, "field 'lens'", "entry 2", "'1.5'", NULL);
    expect_err(LHDR "ok,2,2,2,16,16,64,1,1\na,2,2,2,16,16,64,1,-0.1\n", 2, 3, "field 'lens'", "'-0.1'", NULL);
    expect_err(LHDR "a,2,2,2,16,16,64,1,half\n", 2, 2, "field 'lens'", "'half'", "not a number", NULL);
    expect_err(LHDR "a,2,2,2,16,16,64,1,0.1;;0.2\n", 2, 2, "field 'lens'", "entry 2", "empty", NULL);
    expect_err(LHDR "a,2,2,2,16,16,64,1,0.1;\n", 2, 2, "field 'lens'", "entry 2", "empty", NULL);
    expect_err(LHDR "a,2,2,2,16,16,64,1,nan\n", 2, 2, "field 'lens'", "'nan'", NULL);
    expect_err(LHDR "a,2,2,2,16,16,64,1,0.1; 0.5\n", 2, 2, "field 'lens'", "entry 2", "not a number", NULL);
    expect_err(LHDR "a,2,2,2,16,16,64,1,0.5x\n", 2, 2, "field 'lens'", "'0.5x'", NULL);
    char many[512] = LHDR "a,2,2,2,16,16,64,1,";
    for (int i = 0; i <= FB_MAX_LENS; i++) strcat(many, i ? ";0.5" : "0.5");
    strcat(many, "\n");
    expect_err(many, 2, 2, "field 'lens'", "more than 32 entries", NULL);
#undef LHDR
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_bad_head_dim),
        cmocka_unit_test(test_missing_column),
        cmocka_unit_test(test_unknown_and_duplicate_column),
        cmocka_unit_test(test_not_multiple),
        cmocka_unit_test(test_range),
        cmocka_unit_test(test_not_integers),
        cmocka_unit_test(test_too_many_elements),
        cmocka_unit_test(test_causal_and_dtype),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_no_shapes),
        cmocka_unit_test(test_csv_errors_pass_through),
        cmocka_unit_test(test_list_and_load_all_suites),
        cmocka_unit_test(test_smoke_suite),
        cmocka_unit_test(test_paper_suite),
        cmocka_unit_test(test_fa3_suite),
        cmocka_unit_test(test_llm_suite),
        cmocka_unit_test(test_decode_suite),
        cmocka_unit_test(test_unknown_suite),
        cmocka_unit_test(test_lens),
        cmocka_unit_test(test_page),
        cmocka_unit_test(test_qlens),
        cmocka_unit_test(test_bad_lens),
        cmocka_unit_test(test_ragged_suite),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
