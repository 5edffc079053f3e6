/* test_metrics.c: the SASS disassembly parser on the hand-written fixtures in tests/data/sass
 * (nvdisasm and cuobjdump -sass layouts), the disassembler call through a stand-in tool,
 * and the histogram distances. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common.h"
#include "sass.h"

static char root[4096], tmpdir[256];

static long count_of(const op_histogram *h, const char *op)
{
    for (size_t i = 0; i < h->n; i++)
        if (!strcmp(h->op[i], op)) return h->count[i];
    return 0;
}

static long total(const op_histogram *h)
{
    long t = 0;
    for (size_t i = 0; i < h->n; i++) t += h->count[i];
    return t;
}

static void parse_fixture(const char *name, op_histogram *h)
{
    char p[4300], err[FB_ERRLEN], *text;
    size_t len;
    snprintf(p, sizeof p, "%s/tests/data/sass/%s", root, name);
    assert_int_equal(fb_read_file(p, &text, &len, err, sizeof err), 0);
    assert_int_equal(sass_histogram(text, len, h), 0);
    free(text);
}

static void test_nvdisasm_layout(void **state)
{
    (void)state;
    op_histogram h;
    parse_fixture("nvdisasm-sm90.txt", &h);
    assert_int_equal(total(&h), 11);
    assert_int_equal(h.n, 9);
    assert_int_equal(count_of(&h, "EXIT"), 2);          /* one of them predicated: @P0 EXIT */
    assert_int_equal(count_of(&h, "HMMA.16816.F32.BF16"), 2);
    assert_int_equal(count_of(&h, "LDC"), 1);
    assert_int_equal(count_of(&h, "LDC.64"), 1);
    assert_int_equal(count_of(&h, "FFMA"), 1);          /* @!P1 FFMA */
    assert_int_equal(count_of(&h, "BRA"), 1);           /* @!PT BRA */
    assert_int_equal(count_of(&h, "BAR.SYNC.DEFER_BLOCKING"), 1);
    assert_int_equal(count_of(&h, ".byte"), 0);         /* data in .nv.info sections */
    op_histogram_free(&h);
}

static void test_cuobjdump_layout(void **state)
{
    (void)state;
    op_histogram h;
    parse_fixture("cuobjdump-sm90.txt", &h);
    assert_int_equal(total(&h), 12);
    assert_int_equal(h.n, 9);
    assert_int_equal(count_of(&h, "S2R"), 2); /* both functions counted */
    assert_int_equal(count_of(&h, "EXIT"), 3);
    assert_int_equal(count_of(&h, "NOP"), 1); /* "NOP;" without a space */
    assert_int_equal(count_of(&h, "STG.E"), 1);
    op_histogram_free(&h);
}

static void test_not_instructions(void **state)
{
    (void)state;
    const char *text = "/* 0x000fe40000000800 */\n/*0010*/ .dword attn_fwd\n.L_x_0:\n  /*zz*/ MOV R1 ;\n"
                       "  /*0020*/ { IADD R0, R1, R2 ;\n  /*0030*/ @!UP1 UMOV UR4, 0x1 ;\n";
    op_histogram h;
    assert_int_equal(sass_histogram(text, strlen(text), &h), 0);
    assert_int_equal(total(&h), 2);
    assert_int_equal(count_of(&h, "IADD"), 1);
    assert_int_equal(count_of(&h, "UMOV"), 1);
    op_histogram_free(&h);
}

static void write_tool(const char *path, const char *body)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
}

static void test_disassemble_with_a_stand_in_tool(void **state)
{
    (void)state;
    char tool[600], body[8400], err[FB_ERRLEN];
    op_histogram h;
    const unsigned char cubin[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
    /* the stand-in checks it was given a file holding the cubin, then prints the fixture */
    snprintf(tool, sizeof tool, "%s/nvdisasm", tmpdir);
    snprintf(body, sizeof body, "[ \"$#\" -eq 1 ] && head -c 4 \"$1\" | grep -q ELF || exit 3\ncat '%s/tests/data/sass/nvdisasm-sm90.txt'", root);
    write_tool(tool, body);
    setenv("FABENCH_SASS_TOOL", tool, 1);
    char found[1024];
    assert_int_equal(sass_tool(found, sizeof found), 1);
    assert_string_equal(found, tool);
    assert_int_equal(sass_disassemble(cubin, sizeof cubin, &h, err, sizeof err), 0);
    assert_int_equal(total(&h), 11);
    op_histogram_free(&h);

    /* cuobjdump is called with -sass */
    snprintf(tool, sizeof tool, "%s/cuobjdump", tmpdir);
    snprintf(body, sizeof body, "[ \"$1\" = -sass ] || exit 3\ncat '%s/tests/data/sass/cuobjdump-sm90.txt'", root);
    write_tool(tool, body);
    setenv("FABENCH_SASS_TOOL", tool, 1);
    assert_int_equal(sass_disassemble(cubin, sizeof cubin, &h, err, sizeof err), 0);
    assert_int_equal(total(&h), 12);
    op_histogram_free(&h);

    /* a failing tool is an error that names it; no tool at all is not */
    snprintf(tool, sizeof tool, "%s/broken-nvdisasm", tmpdir);
    write_tool(tool, "echo 'nvdisasm fatal' >&2; exit 1");
    setenv("FABENCH_SASS_TOOL", tool, 1);
    assert_int_equal(sass_disassemble(cubin, sizeof cubin, &h, err, sizeof err), -1);
    assert_non_null(strstr(err, "broken-nvdisasm"));
    setenv("FABENCH_SASS_TOOL", "none", 1);
    assert_int_equal(sass_tool(found, sizeof found), 0);
    assert_int_equal(sass_disassemble(cubin, sizeof cubin, &h, err, sizeof err), 1);
    assert_int_equal(h.n, 0);
    unsetenv("FABENCH_SASS_TOOL");
}

static void mk(op_histogram *h, const char *const *ops, const long *counts, size_t n)
{
    memset(h, 0, sizeof *h);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(op_histogram_add(h, ops[i], strlen(ops[i])), 0);
        h->count[h->n - 1] = counts[i];
    }
}

static void test_distances(void **state)
{
    (void)state;
    static const char *const a_ops[] = {"FFMA", "LDS", "EXIT"};
    static const char *const b_ops[] = {"HMMA", "LDSM"};
    const long a_n[] = {6, 3, 1}, a2_n[] = {60, 30, 10}, b_n[] = {5, 5};
    op_histogram a, a2, b, empty = {0};
    mk(&a, a_ops, a_n, 3);
    mk(&a2, a_ops, a2_n, 3);
    mk(&b, b_ops, b_n, 2);
    double co, js;
    long shared;
    hist_distances(&a, &a2, &co, &js, &shared); /* the same mix at another size */
    assert_true(co < 1e-12 && js < 1e-6);
    assert_int_equal(shared, 3);
    hist_distances(&a, &b, &co, &js, &shared); /* nothing in common */
    assert_true(co > 1 - 1e-12 && js > 1 - 1e-9);
    assert_int_equal(shared, 0);
    hist_distances(&a, &empty, &co, &js, &shared);
    assert_true(co == 1 && js == 1);
    /* p = (0.5, 0.5), q = (1, 0): JS divergence = 1 - 0.75 log2(3) / 2 ... checked numerically */
    static const char *const c_ops[] = {"X", "Y"}, *const d_ops[] = {"X"};
    const long c_n[] = {1, 1}, d_n[] = {1};
    op_histogram c, d;
    mk(&c, c_ops, c_n, 2);
    mk(&d, d_ops, d_n, 1);
    hist_distances(&c, &d, &co, &js, &shared);
    double m1 = 0.75, m2 = 0.25;
    double div = 0.5 * (0.5 * log2(0.5 / m1) + 0.5 * log2(0.5 / m2)) + 0.5 * (1.0 * log2(1.0 / m1));
    assert_true(fabs(js - sqrt(div)) < 1e-9);
    assert_true(fabs(co - (1 - 1 / sqrt(2))) < 1e-9);
    op_histogram_free(&a);
    op_histogram_free(&a2);
    op_histogram_free(&b);
    op_histogram_free(&c);
    op_histogram_free(&d);
}

int main(void)
{
    if (fb_root(root, sizeof root) != 0) { fprintf(stderr, "test_metrics: cannot find the project root\n"); return 1; }
    snprintf(tmpdir, sizeof tmpdir, "%s/fabench-metrics-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvdisasm_layout),
        cmocka_unit_test(test_cuobjdump_layout),
        cmocka_unit_test(test_not_instructions),
        cmocka_unit_test(test_disassemble_with_a_stand_in_tool),
        cmocka_unit_test(test_distances),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "test_metrics: could not remove %s\n", tmpdir);
    return rc;
}
