/* torch.c: the PyTorch vendor: runs vendors/torch/adapter.py as a subprocess (argument
 * vector, no shell) and speaks its line protocol over pipes; see adapter.py. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../vendor.h"
#include "torch_proto.h"

struct vendor_session {
    pid_t pid;
    FILE *to, *from;
    char impls_buf[256];
    const char *impls[8];
};

static const char *const *torch_impls(vendor_session *vs) { return vs->impls; }

static void torch_close(vendor_session *vs)
{
    if (!vs) return;
    if (vs->to) { fputs("quit\n", vs->to); fclose(vs->to); }
    if (vs->from) fclose(vs->from);
    if (vs->pid > 0) {
        int st;
        for (int i = 0; i < 50 && waitpid(vs->pid, &st, WNOHANG) == 0; i++) usleep(100000);
        if (waitpid(vs->pid, &st, WNOHANG) == 0) { kill(vs->pid, SIGKILL); waitpid(vs->pid, &st, 0); }
    }
    free(vs);
}

/* Reads one line (without the newline) into a malloc'd buffer; NULL at EOF. */
static char *read_line(FILE *f)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    if (n < 0) { free(line); return NULL; }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    return line;
}

static int torch_open(const rt_device *dev, vendor_session **out, char *versions, size_t vlen, char *why, size_t wlen)
{
    char root[4096], script[4200];
    if (fb_root(root, sizeof root) != 0) { snprintf(why, wlen, "cannot find the fabench tree"); return -1; }
    snprintf(script, sizeof script, "%s/vendors/torch/adapter.py", root);
    const char *python = getenv("FABENCH_PYTHON") ? getenv("FABENCH_PYTHON") : "python3";
    if (strcmp(dev->rt->name, "cuda") != 0) {
        snprintf(why, wlen, "PyTorch's kernels run through CUDA (or ROCm); pick the GPU's cuda device, not %s", dev->rt->name);
        return -1;
    }
    char devidx[16];
    snprintf(devidx, sizeof devidx, "%d", dev->index);
    int in[2], outp[2];
    if (pipe(in) != 0 || pipe(outp) != 0) { snprintf(why, wlen, "pipe: %s", strerror(errno)); return -1; }
    pid_t pid = fork();
    if (pid < 0) { snprintf(why, wlen, "fork: %s", strerror(errno)); return -1; }
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(outp[1], 1);
        close(in[0]); close(in[1]); close(outp[0]); close(outp[1]);
        char *const argv[] = {(char *)python, script, "--serve", "--device", devidx, NULL};
        execvp(python, argv);
        printf("absent reason=cannot run %s: %s\n", python, strerror(errno));
        fflush(stdout);
        _exit(127);
    }
    close(in[0]);
    close(outp[1]);
    vendor_session *vs = calloc(1, sizeof *vs);
    if (!vs) { snprintf(why, wlen, "out of memory"); return -1; }
    vs->pid = pid;
    vs->to = fdopen(in[1], "w");
    vs->from = fdopen(outp[0], "r");
    char *hello = vs->from ? read_line(vs->from) : NULL;
    torch_hello h;
    int rc = hello ? torch_parse_hello(hello, &h) : -1;
    if (rc != 0) {
        snprintf(why, wlen, "%s", hello ? (rc == 1 ? h.reason : hello) : "the adapter printed nothing");
        free(hello);
        torch_close(vs);
        return -1;
    }
    free(hello);
    snprintf(versions, vlen, "%s", h.versions);
    snprintf(vs->impls_buf, sizeof vs->impls_buf, "%s", h.impls);
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(vs->impls_buf, ",", &save); tok && n < 7; tok = strtok_r(NULL, ",", &save)) vs->impls[n++] = tok;
    vs->impls[n] = NULL;
    *out = vs;
    return 0;
}

/* The adapter's log-sum-exp file into in->lse: 0, or -1 when it is not whole (then the
 * row goes unchecked on LSE rather than failing on a file). */
static int read_lse(const vendor_inputs *in, const shape_t *s)
{
    if (!in->lse || !in->lsepath) return -1;
    size_t bytes = shape_out_rows(s) * sizeof(float);
    FILE *f = fopen(in->lsepath, "rb");
    size_t got = f ? fread(in->lse, 1, bytes, f) : 0;
    if (f) fclose(f);
    return got == bytes ? 0 : -1;
}

static int torch_run(vendor_session *vs, const char *impl, const shape_t *s, dtype_t dt, const vendor_inputs *in,
                     void *o, const timing_opts *t, vendor_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    fprintf(vs->to,
            "run impl=%s dtype=%s b=%d hq=%d hkv=%d sq=%d skv=%d d=%d causal=%d q=%s k=%s v=%s o=%s warmup=%g budget=%g "
            "min_reps=%d max_reps=%d batch_us=%g max_batch=%d max_flushed=%d",
            impl, dtype_name(dt), s->batch, s->hq, s->hkv, s->sq, s->skv, s->d, s->causal, in->qpath, in->kpath, in->vpath,
            in->opath, t->warmup_s, t->budget_s, t->min_reps, t->max_reps, TIMING_BATCH_US, TIMING_MAX_BATCH,
            TIMING_MAX_FLUSHED);
    if (in->lse && in->lsepath) fprintf(vs->to, " lse=%s", in->lsepath);
    if (shape_paged(s)) fprintf(vs->to, " page=%d", s->page);
    if (t->l2_flush_bytes) fprintf(vs->to, " flush=%zu", t->l2_flush_bytes);
    if (t->rest_s > 0) fprintf(vs->to, " rest=%g", t->rest_s);
    if (t->tm) fputs(" marks=1", vs->to); /* say when the timed repetitions start: the GPU is watched from there */
    if (shape_ragged(s)) { /* the tensors in the files are packed per head: say where each sequence starts */
        int32_t *cu = malloc(sizeof *cu * 2 * ((size_t)s->batch + 1));
        if (!cu) { snprintf(err, errlen, "out of memory"); return -1; }
        shape_cu_seqlens(s, cu, cu + s->batch + 1);
        for (int which = 0; which < 2; which++) {
            fputs(which ? " cu_kv=" : " cu_q=", vs->to);
            for (int b = 0; b <= s->batch; b++) fprintf(vs->to, "%s%d", b ? "," : "", (int)cu[which * (s->batch + 1) + b]);
        }
        free(cu);
    }
    fputc('\n', vs->to);
    if (fflush(vs->to) != 0) { snprintf(err, errlen, "the PyTorch adapter stopped reading (%s)", strerror(errno)); return -1; }
    char *line = read_line(vs->from);
    while (line && !strcmp(line, "timing")) { /* the warm-up is over */
        telemetry_begin(t->tm, TELEMETRY_PERIOD_MS);
        free(line);
        line = read_line(vs->from);
    }
    telemetry_summary tel;
    telemetry_end(t->tm, &tel);
    if (!line) { snprintf(err, errlen, "the PyTorch adapter exited"); return -1; }
    int rc = torch_parse_result(line, res);
    res->tel = tel;
    if (rc != 0) {
        snprintf(err, errlen, "the PyTorch adapter answered '%.200s'", line);
        free(line);
        return -1;
    }
    free(line);
    if (res->status == ST_OK) {
        size_t bytes = shape_q_elems(s) * dtype_size(dt);
        FILE *f = fopen(in->opath, "rb");
        size_t got = f ? fread(o, 1, bytes, f) : 0;
        if (f) fclose(f);
        if (got != bytes) {
            res->status = ST_LAUNCH_ERROR;
            snprintf(res->reason, sizeof res->reason, "the adapter's output %s holds %zu of %zu bytes", in->opath, got, bytes);
        }
    }
    if (res->status == ST_OK && res->has_lse) res->has_lse = read_lse(in, s) == 0;
    return 0;
}

const vendor vendor_torch = {
    .name = "torch",
    .open = torch_open,
    .impls = torch_impls,
    .run = torch_run,
    .close = torch_close,
};
