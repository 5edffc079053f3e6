/* cudnn_graph.c: the fused attention graph on cuDNN's backend API (cudnn_graph.h). The
 * operation pattern is the one cuDNN's fused flash-attention engines match, as cudnn-frontend's
 * SDPA forward node expands it:
 *
 *   S = Q K^T (matmul, float)      S *= scale (by-value)           [causal: row index + skv - sq
 *   >= column index selects S, else -inf]   M = max_j S   E = exp(S - M)   Z = sum_j E
 *   stats = M + log Z   P = E / Z (in the input type)   O = P V (matmul)
 *
 * K enters as K^T: the same memory with its last two dimensions and strides swapped. */
#define _GNU_SOURCE
#include "cudnn_graph.h"

#include <dlfcn.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names, for messages ---- */

#define FBDNN_X_CASE(name, value) case value: return #name;
const char *fbdnn_attr_name(int v)
{
    switch (v) { FBDNN_ATTR_NAME_LIST(FBDNN_X_CASE) FBDNN_ATTR_NAME_LIST_98(FBDNN_X_CASE) }
    return NULL;
}
const char *fbdnn_desc_type_name(int v)
{
    switch (v) { FBDNN_DESCRIPTOR_TYPE_LIST(FBDNN_X_CASE) FBDNN_DESCRIPTOR_TYPE_LIST_98(FBDNN_X_CASE) }
    return NULL;
}
const char *fbdnn_attr_type_name(int v) { switch (v) { FBDNN_ATTR_TYPE_LIST(FBDNN_X_CASE) } return NULL; }
static const char *data_type_name(int v) { switch (v) { FBDNN_DATA_TYPE_LIST(FBDNN_X_CASE) } return NULL; }
static const char *pw_mode_name(int v) { switch (v) { FBDNN_POINTWISE_MODE_LIST(FBDNN_X_CASE) } return NULL; }
static const char *reduce_name(int v) { switch (v) { FBDNN_REDUCE_OP_LIST(FBDNN_X_CASE) } return NULL; }
static const char *heur_name(int v) { switch (v) { FBDNN_HEUR_MODE_LIST(FBDNN_X_CASE) } return NULL; }
#undef FBDNN_X_CASE

int fbdnn_not_supported(int status) { return status / 1000 == CUDNN_STATUS_NOT_SUPPORTED / 1000; }

void fbdnn_describe(const fbdnn_lib *L, int status, char *buf, size_t len)
{
    const char *name = L && L->cudnnGetErrorString ? L->cudnnGetErrorString(status) : NULL;
    char last[384] = "";
    if (L && L->cudnnGetLastErrorString) {
        L->cudnnGetLastErrorString(last, sizeof last);
        last[sizeof last - 1] = 0;
        for (char *c = last; *c; c++)
            if (*c == '\n' || *c == '\r') *c = ' ';
    }
    if (name) snprintf(buf, len, "%s%s%s", name, last[0] ? ": " : "", last);
    else snprintf(buf, len, "cuDNN status %d%s%s", status, last[0] ? ": " : "", last);
}

/* ---- loading ---- */

static struct {
    pthread_once_t once;
    int ok;
    char why[512];
    fbdnn_lib L;
} ld = {.once = PTHREAD_ONCE_INIT};

/* 1 when path loaded and has every required symbol; else 0 with the first reason kept. */
static int try_load(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        if (!ld.why[0]) snprintf(ld.why, sizeof ld.why, "%s", dlerror());
        else (void)dlerror();
        return 0;
    }
    fbdnn_lib L = {0};
#define FBDNN_X_LOAD(fn, ret, params, req)                                                     \
    L.fn = (fbdnn_##fn##_fn)dlsym(h, #fn);                                                   \
    if (!L.fn && req) {                                                                       \
        snprintf(ld.why, sizeof ld.why, "%s lacks %s (not cuDNN 9?)", path, #fn);            \
        dlclose(h);                                                                           \
        return 0;                                                                             \
    }
    FBDNN_FUNC_LIST(FBDNN_X_LOAD)
#undef FBDNN_X_LOAD
    L.lib = h;
    L.version = L.cudnnGetVersion();
    if (L.version < 90000) {
        snprintf(ld.why, sizeof ld.why, "%s is cuDNN %zu; the backend graph used here needs cuDNN 9", path, L.version);
        dlclose(h);
        return 0;
    }
    Dl_info info;
    if (dladdr((void *)L.cudnnGetVersion, &info) && info.dli_fname) snprintf(L.path, sizeof L.path, "%s", info.dli_fname);
    else snprintf(L.path, sizeof L.path, "%s", path);
    const char *dbg = getenv("FABENCH_CUDNN_DEBUG");
    L.debug = dbg && dbg[0] && strcmp(dbg, "0") != 0;
    ld.L = L;
    return 1;
}

static void load_once(void)
{
    const char *forced = getenv("FABENCH_CUDNN_LIB");
    if (forced && forced[0]) {
        ld.ok = try_load(forced);
        if (!ld.ok) {
            char w[512];
            snprintf(w, sizeof w, "FABENCH_CUDNN_LIB=%.200s: %.280s", forced, ld.why);
            snprintf(ld.why, sizeof ld.why, "%s", w);
        }
        return;
    }
    static const char *const names[] = {"libcudnn.so.9", "libcudnn.so"};
    for (size_t i = 0; i < 2; i++)
        if ((ld.ok = try_load(names[i]))) return;
    const char *roots[] = {getenv("CUDNN_HOME"), getenv("CUDNN_PATH"), getenv("CUDA_HOME"), "/usr/local/cuda"};
    for (size_t r = 0; r < sizeof roots / sizeof roots[0]; r++) {
        if (!roots[r] || !roots[r][0]) continue;
        for (int sub = 0; sub < 2; sub++)
            for (size_t i = 0; i < 2; i++) {
                char path[400];
                snprintf(path, sizeof path, "%s/%s/%s", roots[r], sub ? "lib" : "lib64", names[i]);
                if ((ld.ok = try_load(path))) return;
            }
    }
    char w[512];
    snprintf(w, sizeof w,
             "libcudnn.so.9 not found (%.250s; also looked under $CUDNN_HOME, $CUDNN_PATH, $CUDA_HOME and "
             "/usr/local/cuda): install cuDNN 9, or point FABENCH_CUDNN_LIB at libcudnn.so.9",
             ld.why);
    snprintf(ld.why, sizeof ld.why, "%s", w);
}

int fbdnn_load(const fbdnn_lib **out, char *why, size_t wlen)
{
    pthread_once(&ld.once, load_once);
    if (!ld.ok) {
        snprintf(why, wlen, "%s", ld.why);
        return -1;
    }
    *out = &ld.L;
    return 0;
}

/* ---- descriptors and the call wrapper ---- */

static const char *label_of(const fbdnn_graph *g, fbdnn_desc d)
{
    for (int i = 0; i < g->ndesc; i++)
        if (g->descs[i] == d) return g->labels[i];
    return "?";
}

/* Appends a printable rendering of n values of attribute type `type` to buf. */
static void render_values(const fbdnn_graph *g, int type, int64_t n, const void *v, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    if (!v) { snprintf(buf, len, "(null)"); return; }
    for (int64_t i = 0; i < n && i < 12 && o + 40 < len; i++) {
        const char *sep = i ? "," : "";
        const char *nm = NULL;
        char tmp[64];
        switch (type) {
        case CUDNN_TYPE_INT64: snprintf(tmp, sizeof tmp, "%" PRId64, ((const int64_t *)v)[i]); break;
        case CUDNN_TYPE_FLOAT: snprintf(tmp, sizeof tmp, "%g", (double)((const float *)v)[i]); break;
        case CUDNN_TYPE_DOUBLE: snprintf(tmp, sizeof tmp, "%g", ((const double *)v)[i]); break;
        case CUDNN_TYPE_BOOLEAN: snprintf(tmp, sizeof tmp, "%s", ((const bool *)v)[i] ? "true" : "false"); break;
        case CUDNN_TYPE_DATA_TYPE: nm = data_type_name(((const int32_t *)v)[i]); goto named;
        case CUDNN_TYPE_POINTWISE_MODE: nm = pw_mode_name(((const int32_t *)v)[i]); goto named;
        case CUDNN_TYPE_REDUCTION_OPERATOR_TYPE: nm = reduce_name(((const int32_t *)v)[i]); goto named;
        case CUDNN_TYPE_HEUR_MODE: nm = heur_name(((const int32_t *)v)[i]); goto named;
        named:
            if (nm) snprintf(tmp, sizeof tmp, "%s", nm);
            else snprintf(tmp, sizeof tmp, "%" PRId32, ((const int32_t *)v)[i]);
            break;
        case CUDNN_TYPE_BACKEND_DESCRIPTOR: snprintf(tmp, sizeof tmp, "%s", label_of(g, ((const fbdnn_desc *)v)[i])); break;
        case CUDNN_TYPE_VOID_PTR:
        case CUDNN_TYPE_HANDLE: snprintf(tmp, sizeof tmp, "%p", ((void *const *)v)[i]); break;
        default: snprintf(tmp, sizeof tmp, "..."); break;
        }
        o += (size_t)snprintf(buf + o, len - o, "%s%s", sep, tmp);
    }
    if (n > 12 && o + 8 < len) snprintf(buf + o, len - o, ",...");
}

static void debug_line(const fbdnn_graph *g, int status, const char *fmt, ...)
{
    if (!g->L->debug || !g->log_calls) return;
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char st[512];
    fbdnn_describe(g->L, status, st, sizeof st);
    if (status == CUDNN_STATUS_SUCCESS) snprintf(st, sizeof st, "CUDNN_STATUS_SUCCESS");
    fprintf(stderr, "[cudnn] %s -> %s\n", what, st);
}

/* Fills err with "call(label, attr): status: message". */
static void fail_msg(const fbdnn_graph *g, int status, char *err, size_t errlen, const char *call, fbdnn_desc d, int attr)
{
    char st[512];
    fbdnn_describe(g->L, status, st, sizeof st);
    const char *an = attr >= 0 ? fbdnn_attr_name(attr) : NULL;
    if (attr >= 0)
        snprintf(err, errlen, "%s(%s, %s): %s", call, label_of(g, d), an ? an : "?", st);
    else
        snprintf(err, errlen, "%s(%s): %s", call, label_of(g, d), st);
}

/* Creates a descriptor of type `type` labelled `label`; NULL on failure (err filled). */
static fbdnn_desc create(fbdnn_graph *g, int type, const char *label, char *err, size_t errlen)
{
    if (g->ndesc == g->cap) {
        int cap = g->cap ? 2 * g->cap : 64;
        fbdnn_desc *d = realloc(g->descs, (size_t)cap * sizeof *d);
        if (d) g->descs = d;
        char(*l)[48] = d ? realloc(g->labels, (size_t)cap * sizeof *l) : NULL;
        if (l) g->labels = l;
        if (!d || !l) { snprintf(err, errlen, "out of memory"); return NULL; }
        g->cap = cap;
    }
    fbdnn_desc d = NULL;
    int st = g->L->cudnnBackendCreateDescriptor(type, &d);
    const char *tn = fbdnn_desc_type_name(type);
    debug_line(g, st, "CreateDescriptor(%s) %s", tn ? tn : "?", label);
    if (st != CUDNN_STATUS_SUCCESS || !d) {
        char m[512];
        fbdnn_describe(g->L, st, m, sizeof m);
        snprintf(err, errlen, "cudnnBackendCreateDescriptor(%s for %s): %s", tn ? tn : "?", label, m);
        return NULL;
    }
    g->descs[g->ndesc] = d;
    snprintf(g->labels[g->ndesc], sizeof g->labels[0], "%s", label);
    g->ndesc++;
    return d;
}

void fbdnn_destroy(fbdnn_graph *g, fbdnn_desc d)
{
    if (!d) return;
    for (int i = 0; i < g->ndesc; i++)
        if (g->descs[i] == d) {
            int st = g->L->cudnnBackendDestroyDescriptor(d);
            debug_line(g, st, "DestroyDescriptor %s", g->labels[i]);
            g->ndesc--;
            g->descs[i] = g->descs[g->ndesc];
            memcpy(g->labels[i], g->labels[g->ndesc], sizeof g->labels[0]);
            return;
        }
}

static int set(fbdnn_graph *g, fbdnn_desc d, int attr, int type, int64_t n, const void *v, char *err, size_t errlen)
{
    int st = g->L->cudnnBackendSetAttribute(d, attr, type, n, v);
    if (g->L->debug && g->log_calls) {
        char vals[400];
        render_values(g, type, n, v, vals, sizeof vals);
        const char *an = fbdnn_attr_name(attr), *tn = fbdnn_attr_type_name(type);
        debug_line(g, st, "SetAttribute %s.%s %s[%" PRId64 "]={%s}", label_of(g, d), an ? an : "?", tn ? tn : "?", n,
                   vals);
    }
    if (st != CUDNN_STATUS_SUCCESS) fail_msg(g, st, err, errlen, "cudnnBackendSetAttribute", d, attr);
    return st;
}

static int get(fbdnn_graph *g, fbdnn_desc d, int attr, int type, int64_t want, int64_t *count, void *v, char *err,
               size_t errlen)
{
    int64_t got = -1;
    int st = g->L->cudnnBackendGetAttribute(d, attr, type, want, &got, v);
    if (g->L->debug && g->log_calls) {
        char vals[400] = "";
        if (st == CUDNN_STATUS_SUCCESS && v && type != CUDNN_TYPE_CHAR)
            render_values(g, type, got < want ? got : want, v, vals, sizeof vals);
        const char *an = fbdnn_attr_name(attr), *tn = fbdnn_attr_type_name(type);
        debug_line(g, st, "GetAttribute %s.%s %s asked %" PRId64 " got %" PRId64 " {%s}", label_of(g, d),
                   an ? an : "?", tn ? tn : "?", want, got, vals);
    }
    if (count) *count = got;
    if (st != CUDNN_STATUS_SUCCESS) fail_msg(g, st, err, errlen, "cudnnBackendGetAttribute", d, attr);
    return st;
}

static int finalize(fbdnn_graph *g, fbdnn_desc d, char *err, size_t errlen)
{
    int st = g->L->cudnnBackendFinalize(d);
    debug_line(g, st, "Finalize %s", label_of(g, d));
    if (st != CUDNN_STATUS_SUCCESS) fail_msg(g, st, err, errlen, "cudnnBackendFinalize", d, -1);
    return st;
}

void fbdnn_graph_free(fbdnn_graph *g)
{
    if (!g || !g->L) return;
    /* plans and configs before the graph they were made from, tensors last */
    for (int i = g->ndesc - 1; i >= 0; i--) {
        int st = g->L->cudnnBackendDestroyDescriptor(g->descs[i]);
        debug_line(g, st, "DestroyDescriptor %s", g->labels[i]);
    }
    free(g->descs);
    free(g->labels);
    memset(g, 0, sizeof *g);
}

/* ---- the graph ---- */

#define TRY(x) do { if ((x) != CUDNN_STATUS_SUCCESS) return -1; } while (0)

/* A finalized tensor; NULL on failure. uid 0 takes the next virtual id. */
static fbdnn_desc tensor(fbdnn_graph *g, const char *label, int64_t uid, int dtype, const int64_t dim[4],
                         const int64_t stride[4], int is_virtual, int by_value, char *err, size_t errlen)
{
    char lab[48];
    if (uid == 0) uid = g->next_virtual_uid++;
    snprintf(lab, sizeof lab, "tensor:%s#%" PRId64, label, uid);
    fbdnn_desc t = create(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, lab, err, errlen);
    if (!t) return NULL;
    int32_t dt = dtype;
    int64_t align = 16;
    bool v = is_virtual != 0, bv = by_value != 0;
    if (set(g, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, err, errlen) ||
        set(g, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim, err, errlen) ||
        set(g, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, stride, err, errlen) ||
        set(g, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, err, errlen) ||
        set(g, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, err, errlen) ||
        (v && set(g, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v, err, errlen)) ||
        (bv && set(g, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &bv, err, errlen)) ||
        finalize(g, t, err, errlen))
        return NULL;
    if (!is_virtual && g->nuids < (int)(sizeof g->uids / sizeof g->uids[0])) g->uids[g->nuids++] = uid;
    return t;
}

static int add_op(fbdnn_graph *g, fbdnn_desc op, char *err, size_t errlen)
{
    if (g->nops >= (int)(sizeof g->ops / sizeof g->ops[0])) {
        snprintf(err, errlen, "too many operations");
        return -1;
    }
    g->ops[g->nops++] = op;
    return 0;
}

/* y = mode(x[, b[, t]]) computed in `comp`; axis >= 0 for GEN_INDEX. */
static int pointwise(fbdnn_graph *g, const char *name, int mode, int comp, int64_t axis, fbdnn_desc x, fbdnn_desc b,
                     fbdnn_desc t, fbdnn_desc y, char *err, size_t errlen)
{
    char lab[48];
    snprintf(lab, sizeof lab, "pw:%s", name);
    fbdnn_desc pw = create(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, lab, err, errlen);
    if (!pw) return -1;
    int32_t m = mode, c = comp;
    TRY(set(g, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &m, err, errlen));
    TRY(set(g, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &c, err, errlen));
    if (axis >= 0) TRY(set(g, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, err, errlen));
    TRY(finalize(g, pw, err, errlen));
    snprintf(lab, sizeof lab, "op:%s", name);
    fbdnn_desc op = create(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, lab, err, errlen);
    if (!op) return -1;
    float one = 1.0f;
    TRY(set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw, err, errlen));
    TRY(set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, err, errlen));
    if (b) TRY(set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, err, errlen));
    if (t) TRY(set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t, err, errlen));
    TRY(set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, err, errlen));
    TRY(set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one, err, errlen));
    TRY(set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one, err, errlen));
    TRY(finalize(g, op, err, errlen));
    return add_op(g, op, err, errlen);
}

static int reduction(fbdnn_graph *g, const char *name, int rop, fbdnn_desc x, fbdnn_desc y, char *err, size_t errlen)
{
    char lab[48];
    snprintf(lab, sizeof lab, "red:%s", name);
    fbdnn_desc rd = create(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, lab, err, errlen);
    if (!rd) return -1;
    int32_t r = rop, c = CUDNN_DATA_FLOAT;
    TRY(set(g, rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &c, err, errlen));
    TRY(set(g, rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &r, err, errlen));
    TRY(finalize(g, rd, err, errlen));
    snprintf(lab, sizeof lab, "op:%s", name);
    fbdnn_desc op = create(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, lab, err, errlen);
    if (!op) return -1;
    TRY(set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, err, errlen));
    TRY(set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, err, errlen));
    TRY(set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd, err, errlen));
    TRY(finalize(g, op, err, errlen));
    return add_op(g, op, err, errlen);
}

/* C = A B; m_ov, n_ov, k_ov (may be NULL): per-batch int32 tensors [b, 1, 1, 1] that cut the
 * GEMM's M, N or K short for each batch entry (a padded ragged batch's real lengths). */
static int matmul(fbdnn_graph *g, const char *name, fbdnn_desc a, fbdnn_desc b, fbdnn_desc c, fbdnn_desc m_ov,
                  fbdnn_desc n_ov, fbdnn_desc k_ov, char *err, size_t errlen)
{
    char lab[48];
    snprintf(lab, sizeof lab, "mm:%s", name);
    fbdnn_desc md = create(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR, lab, err, errlen);
    if (!md) return -1;
    int32_t comp = CUDNN_DATA_FLOAT;
    TRY(set(g, md, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, err, errlen));
    TRY(finalize(g, md, err, errlen));
    snprintf(lab, sizeof lab, "op:%s", name);
    fbdnn_desc op = create(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, lab, err, errlen);
    if (!op) return -1;
    TRY(set(g, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a, err, errlen));
    TRY(set(g, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, err, errlen));
    TRY(set(g, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c, err, errlen));
    TRY(set(g, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &md, err, errlen));
    if (m_ov) TRY(set(g, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &m_ov, err, errlen));
    if (n_ov) TRY(set(g, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n_ov, err, errlen));
    if (k_ov) TRY(set(g, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k_ov, err, errlen));
    TRY(finalize(g, op, err, errlen));
    return add_op(g, op, err, errlen);
}

/* y (a virtual K^T or V, [b, h, ...]) = the rows of container (pages [npages, h, page, d])
 * that page table [b, 1, pages, 1] names for each sequence, seq_len [b, 1, 1, 1] long. */
static int paged_load(fbdnn_graph *g, const char *name, fbdnn_desc container, fbdnn_desc seq_len, fbdnn_desc table,
                      fbdnn_desc y, char *err, size_t errlen)
{
    char lab[48];
    snprintf(lab, sizeof lab, "op:%s", name);
    fbdnn_desc op = create(g, CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR, lab, err, errlen);
    if (!op) return -1;
    TRY(set(g, op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_CONTAINER_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &container, err, errlen));
    TRY(set(g, op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_PAGE_TABLE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &table, err, errlen));
    TRY(set(g, op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_SEQUENCE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &seq_len, err, errlen));
    TRY(set(g, op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, err, errlen));
    TRY(finalize(g, op, err, errlen));
    return add_op(g, op, err, errlen);
}

static int build(fbdnn_graph *g, char *err, size_t errlen)
{
    const fbdnn_sdpa *p = &g->p;
    const int64_t b = p->b, hq = p->hq, hkv = p->hkv, sq = p->sq, skv = p->skv, d = p->d;
    const int F = CUDNN_DATA_FLOAT, I = CUDNN_DATA_INT32, BOOL = CUDNN_DATA_BOOLEAN, IO = p->io_type;
    const int64_t q_dim[4] = {b, hq, sq, d}, q_str[4] = {hq * sq * d, sq * d, d, 1};
    const int64_t kt_dim[4] = {b, hkv, d, skv}, kt_str[4] = {hkv * skv * d, skv * d, 1, d};
    const int64_t v_dim[4] = {b, hkv, skv, d}, v_str[4] = {hkv * skv * d, skv * d, d, 1};
    const int64_t s_dim[4] = {b, hq, sq, skv}, s_str[4] = {hq * sq * skv, sq * skv, skv, 1};
    const int64_t r_dim[4] = {b, hq, sq, 1}, r_str[4] = {hq * sq, sq, 1, 1};
    const int64_t one[4] = {1, 1, 1, 1};

    const int paged = p->page > 0;
    fbdnn_desc Q, KT, V, O, S, SS, M, SM, E, Z, LZ, ST, P, SC;
    if (!(Q = tensor(g, "Q", FBDNN_UID_Q, IO, q_dim, q_str, 0, 0, err, errlen)) ||
        /* paged: K^T and V are what the paged cache loads produce */
        !(KT = tensor(g, "K^T", paged ? 0 : FBDNN_UID_K, IO, kt_dim, kt_str, paged, 0, err, errlen)) ||
        !(V = tensor(g, "V", paged ? 0 : FBDNN_UID_V, IO, v_dim, v_str, paged, 0, err, errlen)) ||
        !(O = tensor(g, "O", FBDNN_UID_O, IO, q_dim, q_str, 0, 0, err, errlen)) ||
        !(ST = tensor(g, "stats", p->stats_real ? FBDNN_UID_STATS : 0, F, r_dim, r_str, !p->stats_real, 0, err, errlen)) ||
        !(SC = tensor(g, "scale", FBDNN_UID_SCALE, F, one, one, 0, 1, err, errlen)) ||
        !(S = tensor(g, "S", 0, F, s_dim, s_str, 1, 0, err, errlen)) ||
        !(SS = tensor(g, "S*scale", 0, F, s_dim, s_str, 1, 0, err, errlen)))
        return -1;
    const int64_t bdim[4] = {b, 1, 1, 1};
    fbdnn_desc SEQQ = NULL, SEQKV = NULL, NI = NULL;
    if (p->padded && (!(SEQQ = tensor(g, "seq_len_q", FBDNN_UID_SEQ_Q, I, bdim, one, 0, 0, err, errlen)) ||
                      !(SEQKV = tensor(g, "seq_len_kv", FBDNN_UID_SEQ_KV, I, bdim, one, 0, 0, err, errlen))))
        return -1;
    if ((p->padded || g->masked) && !(NI = tensor(g, "neg_inf", FBDNN_UID_NEG_INF, F, one, one, 0, 1, err, errlen)))
        return -1;
    if (paged) {
        const int64_t pages = (skv + p->page - 1) / p->page;
        const int64_t c_dim[4] = {p->npages, hkv, p->page, d}, c_str[4] = {hkv * p->page * d, p->page * d, d, 1};
        const int64_t t_dim[4] = {b, 1, pages, 1}, t_str[4] = {pages, pages, 1, 1};
        fbdnn_desc KC, VC, TK, TV;
        if (!(KC = tensor(g, "K pages", FBDNN_UID_K, IO, c_dim, c_str, 0, 0, err, errlen)) ||
            !(VC = tensor(g, "V pages", FBDNN_UID_V, IO, c_dim, c_str, 0, 0, err, errlen)) ||
            !(TK = tensor(g, "page table K", FBDNN_UID_PAGE_TABLE_K, I, t_dim, t_str, 0, 0, err, errlen)) ||
            !(TV = tensor(g, "page table V", FBDNN_UID_PAGE_TABLE_V, I, t_dim, t_str, 0, 0, err, errlen)))
            return -1;
        if (paged_load(g, "load K pages", KC, SEQKV, TK, KT, err, errlen) ||
            paged_load(g, "load V pages", VC, SEQKV, TV, V, err, errlen))
            return -1;
    }
    if (matmul(g, "bmm1 Q*K^T", Q, KT, S, SEQQ, SEQKV, NULL, err, errlen) ||
        pointwise(g, "attn_scale", CUDNN_POINTWISE_MUL, F, -1, S, SC, NULL, SS, err, errlen))
        return -1;

    fbdnn_desc scores = SS;
    if (p->padded) {
        /* padding: keep (i, j) of batch entry n where i < seq_q[n] and j < seq_kv[n] */
        fbdnn_desc ROW, COL, RIN, CIN, BOTH, PS;
        if (!(ROW = tensor(g, "pad row", 0, I, s_dim, s_str, 1, 0, err, errlen)) ||
            !(COL = tensor(g, "pad col", 0, I, s_dim, s_str, 1, 0, err, errlen)) ||
            !(RIN = tensor(g, "row<seq_q", 0, BOOL, s_dim, s_str, 1, 0, err, errlen)) ||
            !(CIN = tensor(g, "col<seq_kv", 0, BOOL, s_dim, s_str, 1, 0, err, errlen)) ||
            !(BOTH = tensor(g, "in both", 0, BOOL, s_dim, s_str, 1, 0, err, errlen)) ||
            !(PS = tensor(g, "S padded", 0, F, s_dim, s_str, 1, 0, err, errlen)))
            return -1;
        if (pointwise(g, "gen_pad_row", CUDNN_POINTWISE_GEN_INDEX, F, 2, scores, NULL, NULL, ROW, err, errlen) ||
            pointwise(g, "gen_pad_col", CUDNN_POINTWISE_GEN_INDEX, F, 3, scores, NULL, NULL, COL, err, errlen) ||
            pointwise(g, "row<seq_q", CUDNN_POINTWISE_CMP_LT, BOOL, -1, ROW, SEQQ, NULL, RIN, err, errlen) ||
            pointwise(g, "col<seq_kv", CUDNN_POINTWISE_CMP_LT, BOOL, -1, COL, SEQKV, NULL, CIN, err, errlen) ||
            pointwise(g, "pad_and", CUDNN_POINTWISE_LOGICAL_AND, BOOL, -1, RIN, CIN, NULL, BOTH, err, errlen) ||
            pointwise(g, "padding_select", CUDNN_POINTWISE_BINARY_SELECT, F, -1, scores, NI, BOTH, PS, err, errlen))
            return -1;
        scores = PS;
    }
    if (g->masked) {
        /* bottom-right causal: keep (i, j) where i + skv - sq >= j; padded, each batch entry's
         * own lengths replace skv and sq */
        fbdnn_desc SKV = SEQKV, SQ = SEQQ, ROW, COL, ROW1, ROW2, KEEP, MS;
        if ((!p->padded && (!(SKV = tensor(g, "s_kv", FBDNN_UID_SKV, I, one, one, 0, 1, err, errlen)) ||
                            !(SQ = tensor(g, "s_q", FBDNN_UID_SQ, I, one, one, 0, 1, err, errlen)))) ||
            !(ROW = tensor(g, "row", 0, I, s_dim, s_str, 1, 0, err, errlen)) ||
            !(COL = tensor(g, "col", 0, I, s_dim, s_str, 1, 0, err, errlen)) ||
            !(ROW1 = tensor(g, "row+skv", 0, I, s_dim, s_str, 1, 0, err, errlen)) ||
            !(ROW2 = tensor(g, "row+skv-sq", 0, I, s_dim, s_str, 1, 0, err, errlen)) ||
            !(KEEP = tensor(g, "row>=col", 0, BOOL, s_dim, s_str, 1, 0, err, errlen)) ||
            !(MS = tensor(g, "S masked", 0, F, s_dim, s_str, 1, 0, err, errlen)))
            return -1;
        if (pointwise(g, "gen_row_index", CUDNN_POINTWISE_GEN_INDEX, F, 2, scores, NULL, NULL, ROW, err, errlen) ||
            pointwise(g, "gen_col_index", CUDNN_POINTWISE_GEN_INDEX, F, 3, scores, NULL, NULL, COL, err, errlen) ||
            pointwise(g, "row+skv", CUDNN_POINTWISE_ADD, I, -1, ROW, SKV, NULL, ROW1, err, errlen) ||
            pointwise(g, "row+skv-sq", CUDNN_POINTWISE_SUB, I, -1, ROW1, SQ, NULL, ROW2, err, errlen) ||
            pointwise(g, "row>=col", CUDNN_POINTWISE_CMP_GE, BOOL, -1, ROW2, COL, NULL, KEEP, err, errlen) ||
            pointwise(g, "causal_select", CUDNN_POINTWISE_BINARY_SELECT, F, -1, scores, NI, KEEP, MS, err, errlen))
            return -1;
        scores = MS;
    }

    if (!(M = tensor(g, "max", 0, F, r_dim, r_str, 1, 0, err, errlen)) ||
        !(SM = tensor(g, "S-max", 0, F, s_dim, s_str, 1, 0, err, errlen)) ||
        !(E = tensor(g, "exp", 0, F, s_dim, s_str, 1, 0, err, errlen)) ||
        !(Z = tensor(g, "sum", 0, F, r_dim, r_str, 1, 0, err, errlen)) ||
        !(LZ = tensor(g, "log sum", 0, F, r_dim, r_str, 1, 0, err, errlen)) ||
        !(P = tensor(g, "P", 0, IO, s_dim, s_str, 1, 0, err, errlen)))
        return -1;
    if (reduction(g, "max", CUDNN_REDUCE_TENSOR_MAX, scores, M, err, errlen) ||
        pointwise(g, "sub_max", CUDNN_POINTWISE_SUB, F, -1, scores, M, NULL, SM, err, errlen) ||
        pointwise(g, "exp", CUDNN_POINTWISE_EXP, F, -1, SM, NULL, NULL, E, err, errlen) ||
        reduction(g, "sum", CUDNN_REDUCE_TENSOR_ADD, E, Z, err, errlen) ||
        pointwise(g, "log", CUDNN_POINTWISE_LOG, F, -1, Z, NULL, NULL, LZ, err, errlen) ||
        pointwise(g, "stats", CUDNN_POINTWISE_ADD, F, -1, M, LZ, NULL, ST, err, errlen) ||
        pointwise(g, "div", CUDNN_POINTWISE_DIV, F, -1, E, Z, NULL, P, err, errlen) ||
        matmul(g, "bmm2 P*V", P, V, O, SEQQ, NULL, SEQKV, err, errlen))
        return -1;
    return 0;
}

int fbdnn_graph_build(const fbdnn_lib *L, const fbdnn_sdpa *p, fbdnn_graph *g, char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    g->L = L;
    g->p = *p;
    g->log_calls = 1;
    g->next_virtual_uid = 100;
    g->masked = p->causal && p->sq > 1;
    g->scale = p->scale;
    /* cuDNN before 9.10 wants the lowest float as the masked score (cudnn-frontend does the same) */
    g->neg_inf = L->version >= 91000 ? -INFINITY : -FLT_MAX;
    g->skv32 = (int32_t)p->skv;
    g->sq32 = (int32_t)p->sq;
    if (p->io_type != CUDNN_DATA_HALF && p->io_type != CUDNN_DATA_BFLOAT16) {
        snprintf(err, errlen, "cuDNN's fused attention takes fp16 or bf16 inputs");
        return -1;
    }
    if (p->b < 1 || p->hq < 1 || p->hkv < 1 || p->sq < 1 || p->skv < 1 || p->d < 1 || p->hq % p->hkv != 0 ||
        p->skv > INT32_MAX || p->sq > INT32_MAX || p->page < 0 ||
        (p->page > 0 && (!p->padded || p->npages < p->b * ((p->skv + p->page - 1) / p->page)))) {
        snprintf(err, errlen, "invalid problem");
        return -1;
    }
    if (p->page > 0 && L->version < 90500) {
        snprintf(err, errlen, "cuDNN %zu has no paged cache load (9.5 or newer)", L->version);
        return -1;
    }
    if (L->debug)
        fprintf(stderr, "[cudnn] graph b=%" PRId64 " hq=%" PRId64 " hkv=%" PRId64 " sq=%" PRId64 " skv=%" PRId64
                        " d=%" PRId64 " causal=%d masked=%d padded=%d page=%" PRId64 " io=%s stats=%s scale=%g (cuDNN %zu, %s)\n",
                p->b, p->hq, p->hkv, p->sq, p->skv, p->d, p->causal, g->masked, p->padded, p->page, data_type_name(p->io_type),
                p->stats_real ? "real" : "virtual", (double)p->scale, L->version, L->path);
    return build(g, err, errlen);
}

int fbdnn_graph_finalize(fbdnn_graph *g, fbdnn_handle h, char *err, size_t errlen)
{
    fbdnn_desc og = create(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "opgraph", err, errlen);
    if (!og) return CUDNN_STATUS_INTERNAL_ERROR;
    int st;
    if (h && (st = set(g, og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h, err, errlen))) return st;
    if ((st = set(g, og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->nops, g->ops, err, errlen)) ||
        (st = finalize(g, og, err, errlen))) {
        fbdnn_destroy(g, og);
        return st;
    }
    g->opgraph = og;
    if (g->L->debug) {
        int64_t n = -1, cnt = 0;
        char e2[256];
        if (get(g, og, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, &cnt, &n, e2, sizeof e2) == 0)
            fprintf(stderr, "[cudnn] the library has %" PRId64 " engines for this operation graph\n", n);
    }
    return 0;
}

/* ---- engine configs and plans ---- */

/* engine index and knob choices of an engine config, for the record */
static void describe_config(fbdnn_graph *g, fbdnn_desc cfg, fbdnn_plan *pl)
{
    char e[256];
    int64_t cnt = 0;
    pl->engine = -1;
    pl->knobs[0] = 0;
    const int log = g->log_calls;
    g->log_calls = 0; /* 64 knob descriptors would drown the trace: one summary line instead */
    fbdnn_desc eng = create(g, CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine", e, sizeof e);
    if (eng && get(g, cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cnt, &eng, e, sizeof e) == 0) {
        int64_t idx = -1;
        if (get(g, eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &cnt, &idx, e, sizeof e) == 0) pl->engine = idx;
    }
    fbdnn_destroy(g, eng);
    enum { NK = 64 };
    fbdnn_desc knobs[NK];
    int nk = 0;
    for (; nk < NK; nk++)
        if (!(knobs[nk] = create(g, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, "knob", e, sizeof e))) break;
    int64_t got = 0;
    if (nk == NK && get(g, cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, NK, &got, knobs, e,
                        sizeof e) == 0) {
        size_t o = 0;
        for (int64_t i = 0; i < got && i < NK; i++) {
            int32_t type = -1;
            int64_t value = 0;
            if (get(g, knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &cnt, &type, e, sizeof e) ||
                get(g, knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &cnt, &value, e, sizeof e))
                continue;
            if (o + 24 < sizeof pl->knobs)
                o += (size_t)snprintf(pl->knobs + o, sizeof pl->knobs - o, "%sk%" PRId32 "=%" PRId64, o ? "," : "", type,
                                      value);
        }
    }
    for (int i = 0; i < nk; i++) fbdnn_destroy(g, knobs[i]);
    g->log_calls = log;
}

/* Prints the plan's JSON (engine name, knobs) in debug mode. */
static void debug_plan_json(fbdnn_graph *g, fbdnn_desc plan)
{
    if (!g->L->debug) return;
    char *json = calloc(1, 65536);
    int64_t n = 0;
    char e[256];
    if (json && get(g, plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, 65535, &n, json, e,
                    sizeof e) == 0) {
        json[65535] = 0;
        fprintf(stderr, "[cudnn] plan json: %.2000s%s\n", json, strlen(json) > 2000 ? "..." : "");
    }
    free(json);
}

int fbdnn_heur_configs(fbdnn_graph *g, int mode, fbdnn_desc **cfgs, int *n, char *why, size_t wlen)
{
    *cfgs = NULL;
    *n = 0;
    if (!g->opgraph) {
        snprintf(why, wlen, "the operation graph is not finalized");
        return -1;
    }
    const char *mname = mode == CUDNN_HEUR_MODE_A ? "a" : mode == CUDNN_HEUR_MODE_FALLBACK ? "fallback" : "other";
    char lab[48];
    snprintf(lab, sizeof lab, "heur:%s", mname);
    fbdnn_desc heur = create(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, lab, why, wlen);
    if (!heur) return -1;
    int32_t m = mode;
    int st;
    if ((st = set(g, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->opgraph, why,
                  wlen)) ||
        (st = set(g, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &m, why, wlen)) ||
        (st = finalize(g, heur, why, wlen)))
        return fbdnn_not_supported(st) ? 1 : -1;
    int64_t count = 0;
    if ((st = get(g, heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL, why, wlen)))
        return fbdnn_not_supported(st) ? 1 : -1;
    if (count <= 0) return 0;
    if (count > 4096) count = 4096;
    fbdnn_desc *v = calloc((size_t)count, sizeof *v);
    if (!v) { snprintf(why, wlen, "out of memory"); return -1; }
    for (int64_t i = 0; i < count; i++) {
        snprintf(lab, sizeof lab, "cfg:%s[%" PRId64 "]", mname, i);
        if (!(v[i] = create(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, lab, why, wlen))) {
            for (int64_t j = 0; j < i; j++) fbdnn_destroy(g, v[j]);
            free(v);
            return -1;
        }
    }
    int64_t got = 0;
    if ((st = get(g, heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, v, why, wlen))) {
        for (int64_t j = 0; j < count; j++) fbdnn_destroy(g, v[j]);
        free(v);
        return fbdnn_not_supported(st) ? 1 : -1;
    }
    if (got < 0) got = 0;
    if (got > count) got = count;
    for (int64_t j = got; j < count; j++) fbdnn_destroy(g, v[j]); /* announced but not filled in */
    if (g->L->debug && g->log_calls)
        fprintf(stderr, "[cudnn] heuristics mode %s offered %" PRId64 " engine configs\n", mname, got);
    if (got == 0) { free(v); return 0; }
    *cfgs = v;
    *n = (int)got;
    return 0;
}

int fbdnn_plan_make(fbdnn_graph *g, fbdnn_handle h, fbdnn_desc cfg, const char *mode, int index, fbdnn_plan *pl,
                    char *why, size_t wlen)
{
    memset(pl, 0, sizeof *pl);
    pl->engine = -1;
    pl->mode = mode;
    pl->index = index;
    char lab[48];
    snprintf(lab, sizeof lab, "plan:%s[%d]", mode, index);
    fbdnn_desc plan = create(g, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, lab, why, wlen);
    if (!plan) return CUDNN_STATUS_INTERNAL_ERROR;
    int st;
    int64_t ws = 0, cnt = 0;
    if ((st = set(g, plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h, why, wlen)) ||
        (st = set(g, plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg, why, wlen)) ||
        (st = finalize(g, plan, why, wlen)) ||
        (st = get(g, plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &cnt, &ws, why, wlen))) {
        fbdnn_destroy(g, plan);
        return st;
    }
    pl->plan = plan;
    pl->workspace = ws;
    describe_config(g, cfg, pl);
    if (g->L->debug && g->log_calls) {
        fprintf(stderr, "[cudnn] plan %s: engine %" PRId64 ", knobs {%s}, workspace %" PRId64 " bytes\n", lab,
                pl->engine, pl->knobs, pl->workspace);
        debug_plan_json(g, plan);
    }
    return 0;
}

void fbdnn_plan_drop(fbdnn_graph *g, fbdnn_plan *pl)
{
    if (pl->plan) fbdnn_destroy(g, pl->plan);
    pl->plan = NULL;
}

int fbdnn_variant_pack(fbdnn_graph *g, void *const dev[FBDNN_NDEV], void *workspace, fbdnn_desc *out, char *err,
                       size_t errlen)
{
    void *ptrs[16];
    for (int i = 0; i < g->nuids; i++) {
        switch (g->uids[i]) {
        case FBDNN_UID_Q: ptrs[i] = dev[FBDNN_DEV_Q]; break;
        case FBDNN_UID_K: ptrs[i] = dev[FBDNN_DEV_K]; break;
        case FBDNN_UID_V: ptrs[i] = dev[FBDNN_DEV_V]; break;
        case FBDNN_UID_O: ptrs[i] = dev[FBDNN_DEV_O]; break;
        case FBDNN_UID_STATS: ptrs[i] = dev[FBDNN_DEV_STATS]; break;
        case FBDNN_UID_SEQ_Q: ptrs[i] = dev[FBDNN_DEV_SEQ_Q]; break;
        case FBDNN_UID_SEQ_KV: ptrs[i] = dev[FBDNN_DEV_SEQ_KV]; break;
        case FBDNN_UID_PAGE_TABLE_K:
        case FBDNN_UID_PAGE_TABLE_V: ptrs[i] = dev[FBDNN_DEV_PAGE_TABLE]; break;
        case FBDNN_UID_SCALE: ptrs[i] = &g->scale; break;
        case FBDNN_UID_NEG_INF: ptrs[i] = &g->neg_inf; break;
        case FBDNN_UID_SKV: ptrs[i] = &g->skv32; break;
        case FBDNN_UID_SQ: ptrs[i] = &g->sq32; break;
        default: snprintf(err, errlen, "unknown tensor uid %" PRId64, g->uids[i]); return -1;
        }
    }
    fbdnn_desc vp = create(g, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant_pack", err, errlen);
    if (!vp) return -1;
    if (set(g, vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, g->nuids, g->uids, err, errlen) ||
        set(g, vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, g->nuids, ptrs, err, errlen) ||
        set(g, vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace, err, errlen) ||
        finalize(g, vp, err, errlen)) {
        fbdnn_destroy(g, vp);
        return -1;
    }
    *out = vp;
    return 0;
}

int fbdnn_execute(fbdnn_graph *g, fbdnn_handle h, const fbdnn_plan *pl, fbdnn_desc vp, char *err, size_t errlen)
{
    int st = g->L->cudnnBackendExecute(h, pl->plan, vp);
    debug_line(g, st, "Execute %s with %s", label_of(g, pl->plan), label_of(g, vp));
    if (st != CUDNN_STATUS_SUCCESS) {
        char m[512];
        fbdnn_describe(g->L, st, m, sizeof m);
        snprintf(err, errlen, "cudnnBackendExecute(%s): %s", label_of(g, pl->plan), m);
    }
    return st;
}

int fbdnn_deviceprop_json(const fbdnn_lib *L, fbdnn_handle h, char **json, char *err, size_t errlen)
{
    *json = NULL;
    if (L->version < 90800) {
        snprintf(err, errlen, "device properties need cuDNN 9.8 (this is %zu)", L->version);
        return -1;
    }
    fbdnn_graph g = {.L = L, .log_calls = 1};
    int64_t n = 0;
    int rc = -1;
    fbdnn_desc dp = create(&g, CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, "deviceprop", err, errlen);
    if (dp && !set(&g, dp, CUDNN_ATTR_DEVICEPROP_HANDLE, CUDNN_TYPE_HANDLE, 1, &h, err, errlen) &&
        !finalize(&g, dp, err, errlen) &&
        !get(&g, dp, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, 0, &n, NULL, err, errlen) && n > 0 &&
        n < (1 << 24) && (*json = calloc(1, (size_t)n + 1)) != NULL &&
        !get(&g, dp, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, n, &n, *json, err, errlen))
        rc = 0;
    if (rc != 0) {
        if (!err[0]) snprintf(err, errlen, "no JSON representation (%" PRId64 " bytes)", n);
        free(*json);
        *json = NULL;
    }
    fbdnn_graph_free(&g);
    return rc;
}
