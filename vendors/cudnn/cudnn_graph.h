/* cudnn_graph.h: cuDNN's fused flash-attention forward through the backend API: loading
 * libcudnn (dlopen), the operation graph, engine configs from the heuristics, an execution
 * plan for each, and variant packs. Every backend call goes through one wrapper, which prints
 * the call, its attribute and values and cuDNN's status on stderr when FABENCH_CUDNN_DEBUG=1. */
#ifndef FBDNN_GRAPH_H
#define FBDNN_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "cudnn_abi.h"

/* The loaded library: filled once by fbdnn_load, read-only afterwards. */
typedef struct {
    void *lib;
    char path[512];  /* the file dlopen found */
    size_t version;  /* cudnnGetVersion(): 91900 for 9.19.0 */
    int debug;       /* FABENCH_CUDNN_DEBUG was set */
#define FBDNN_X_MEMBER(fn, ret, params, req) fbdnn_##fn##_fn fn;
    FBDNN_FUNC_LIST(FBDNN_X_MEMBER)
#undef FBDNN_X_MEMBER
} fbdnn_lib;

/* Loads libcudnn ($FABENCH_CUDNN_LIB, else libcudnn.so.9, else libcudnn.so, also under
 * $CUDNN_HOME, $CUDA_HOME and /usr/local/cuda). 0 and *out, or -1 with why filled. */
int fbdnn_load(const fbdnn_lib **out, char *why, size_t wlen);

/* The tensors the caller provides, by unique id (variant pack order). */
enum { FBDNN_UID_Q = 1, FBDNN_UID_K, FBDNN_UID_V, FBDNN_UID_O, FBDNN_UID_STATS, FBDNN_UID_SCALE, FBDNN_UID_NEG_INF,
       FBDNN_UID_SKV, FBDNN_UID_SQ, FBDNN_UID_SEQ_Q, FBDNN_UID_SEQ_KV, FBDNN_UID_PAGE_TABLE_K, FBDNN_UID_PAGE_TABLE_V };
/* The device buffers of a variant pack, by position in fbdnn_variant_pack's dev[] (one page
 * table serves K and V). */
enum { FBDNN_DEV_Q, FBDNN_DEV_K, FBDNN_DEV_V, FBDNN_DEV_O, FBDNN_DEV_STATS, FBDNN_DEV_SEQ_Q, FBDNN_DEV_SEQ_KV,
       FBDNN_DEV_PAGE_TABLE, FBDNN_NDEV };

/* One attention problem: Q [b, hq, sq, d], K and V [b, hkv, skv, d], O like Q, all contiguous. */
typedef struct {
    int64_t b, hq, hkv, sq, skv, d;
    int causal;      /* bottom-right aligned: key j visible to query i iff j <= i + skv - sq */
    int padded;      /* a ragged batch padded to sq, skv: per-sequence lengths seq_q, seq_kv [b] (int32,
                      * device buffers) limit the matmuls and mask padded rows and columns, and the
                      * causal diagonal is each sequence's own (j <= i + seq_kv - seq_q) */
    int64_t page;    /* > 0: K and V are pages [npages, hkv, page, d] read through a page table
                      * [b, 1, ceil(skv / page), 1] (int32) by paged cache loads; needs padded */
    int64_t npages;
    int io_type;     /* CUDNN_DATA_HALF or CUDNN_DATA_BFLOAT16 */
    int stats_real;  /* the softmax statistics (log-sum-exp) as an output tensor, else virtual */
    float scale;     /* 1/sqrt(d) */
} fbdnn_sdpa;

/* A graph and everything created for it; one owner frees every descriptor. */
typedef struct {
    const fbdnn_lib *L;
    fbdnn_sdpa p;
    fbdnn_desc *descs;   /* every live descriptor, with a label for messages */
    char (*labels)[48];
    int ndesc, cap;
    fbdnn_desc ops[40];
    int nops;
    fbdnn_desc opgraph;  /* NULL until fbdnn_graph_finalize */
    int masked;          /* the causal mask is in the graph (not for sq == 1, where it hides nothing) */
    int64_t next_virtual_uid;
    /* by-value scalars: the variant pack points at these */
    float scale, neg_inf;
    int32_t skv32, sq32;
    int64_t uids[16];    /* non-virtual tensors, variant pack order */
    int nuids;
    int log_calls;       /* print each backend call (debug); off during timed repetitions */
} fbdnn_graph;

/* Builds and finalizes every tensor and operation descriptor of the graph: the part that needs
 * no handle and no GPU. 0, or -1 with err naming the call, attribute and cuDNN's message;
 * fbdnn_graph_free(g) in both cases. */
int fbdnn_graph_build(const fbdnn_lib *L, const fbdnn_sdpa *p, fbdnn_graph *g, char *err, size_t errlen);
/* Finalizes the operation graph over the operations for handle h (NULL: no handle attribute,
 * which cuDNN may refuse). 0, or cuDNN's status with err filled. */
int fbdnn_graph_finalize(fbdnn_graph *g, fbdnn_handle h, char *err, size_t errlen);
void fbdnn_graph_free(fbdnn_graph *g);

/* One engine config's execution plan. */
typedef struct {
    fbdnn_desc plan;        /* NULL until fbdnn_plan_make succeeded */
    int64_t workspace;      /* bytes */
    int64_t engine;         /* the engine's global index; -1 when cuDNN would not say */
    char knobs[200];        /* "kTYPE=VALUE,..." of the engine config's knob choices */
    const char *mode;       /* the heuristics mode that offered it: "a" or "fallback" */
    int index;              /* its position in that mode's list */
} fbdnn_plan;

/* The engine configs heuristics mode `mode` (CUDNN_HEUR_MODE_A or CUDNN_HEUR_MODE_FALLBACK)
 * offer for the finalized graph, best first: 0 with *n of them in *cfgs (a malloc'd array the
 * caller frees; the descriptors belong to g), *n may be 0; 1 when cuDNN says it cannot (why);
 * -1 on other failures (why). */
int fbdnn_heur_configs(fbdnn_graph *g, int mode, fbdnn_desc **cfgs, int *n, char *why, size_t wlen);
/* Finalizes engine config cfg (offered by heuristics `mode` at `index`) into an execution plan
 * for handle h: 0 with pl filled (engine, knobs, workspace), or cuDNN's status with why (no
 * plan descriptor is left behind). */
int fbdnn_plan_make(fbdnn_graph *g, fbdnn_handle h, fbdnn_desc cfg, const char *mode, int index, fbdnn_plan *pl,
                    char *why, size_t wlen);
/* Destroys pl's plan descriptor (a candidate that lost); pl->plan becomes NULL. */
void fbdnn_plan_drop(fbdnn_graph *g, fbdnn_plan *pl);

/* A finalized variant pack: dev holds the device addresses of Q, K, V, O, the statistics
 * (when they are real) and the sequence lengths (when padded), indexed by FBDNN_DEV_*.
 * 0 or -1 (err). */
int fbdnn_variant_pack(fbdnn_graph *g, void *const dev[FBDNN_NDEV], void *workspace, fbdnn_desc *out, char *err,
                       size_t errlen);
/* cudnnBackendExecute; 0 or cuDNN's status (err filled). */
int fbdnn_execute(fbdnn_graph *g, fbdnn_handle h, const fbdnn_plan *pl, fbdnn_desc vp, char *err, size_t errlen);
/* Destroys one descriptor made for g (a variant pack). */
void fbdnn_destroy(fbdnn_graph *g, fbdnn_desc d);

/* The device properties of handle h as cuDNN serializes them (JSON, malloc'd; cuDNN 9.8+), for
 * building plans without the device later. 0 or -1 (err). */
int fbdnn_deviceprop_json(const fbdnn_lib *L, fbdnn_handle h, char **json, char *err, size_t errlen);

/* "CUDNN_STATUS_X: <cuDNN's last error message>" into buf. */
void fbdnn_describe(const fbdnn_lib *L, int status, char *buf, size_t len);
/* The enumerator's name for a value of each list, or NULL. */
const char *fbdnn_attr_name(int v);
const char *fbdnn_desc_type_name(int v);
const char *fbdnn_attr_type_name(int v);
/* 1 when status means "cuDNN cannot do this" (CUDNN_STATUS_NOT_SUPPORTED*) rather than a fault. */
int fbdnn_not_supported(int status);

#endif
