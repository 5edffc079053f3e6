/* knobs.h: the portable kernel's tuned knobs, one row each. Everything the harness knows
 * about a knob comes from its row: kconfig's field, the parser's range and message, the
 * canonical text (the order of the rows is the order of kconfig_str, which names every
 * recorded configuration, so a new knob goes at the end), the kernel's -D define, the
 * distance between configurations, the search's feature, `--config`'s help and
 * docs/kernel.md's knob table (`fabench knobs --markdown`). Adding a knob touches this
 * list, the kernel (kernels/) and kernels/space.csv; tests/test_knobs.c walks the list.
 *
 * X(KEY, field, type, lo, hi, ok, allowed, kinds, show, off, feat, fdiv, names, group,
 *   values_doc, takes_doc, doc)
 *   KEY, field, type  the key in --config text and the define's name; kconfig's field
 *   lo, hi, ok        the values parsed: lo..hi, and ok(v) besides where ok is not NULL
 *   allowed           the values as a bad value's message names them
 *   kinds             the tile kinds (MMA) that take a value other than `off` (KINDS_*);
 *                     kconfig_check refuses it on the others
 *   show, off         when kconfig_str writes the key and attn_defines defines it:
 *                     SHOW_ALWAYS; SHOW_WGMMA, whenever MMA=wgmma (and never otherwise);
 *                     SHOW_ON, when its value is not `off` (values below `off` mean `off`)
 *   feat, fdiv        the search's feature: FEAT_LIN (v - lo) / fdiv, FEAT_LOG2 log2(v) / fdiv,
 *                     FEAT_ON (v != 0)
 *   names             "a b|alias c": values written as names (MMA), value i the i-th name;
 *                     NULL: numbers
 *   group             what the knob decides (knob_group), which the staged search moves
 *                     together: the tile form first, then one group at a time around it
 *   values_doc, takes_doc, doc  docs/kernel.md's columns: values, who takes it, what it does
 */
#ifndef FABENCH_KNOBS_H
#define FABENCH_KNOBS_H

#define FB_KNOBS(X)                                                                                                    \
    X(MMA, mma, mma_kind, 0, 3, NULL, "fma, mma, mfma or wgmma", KINDS_ALL, SHOW_ALWAYS, 0, FEAT_LIN, 3,               \
      "fma mma|mma_sync mfma wgmma", GROUP_FORM, "`fma`, `mma`, `mfma`, `wgmma`", "",                                  \
      "tile primitives: `fma` (portable, any runtime); `mma` (NVIDIA sm_80+: `mma.sync` m16n8k16, `ldmatrix`, "        \
      "`cp.async`); `mfma` (AMD gfx90a/gfx94x: MFMA 16x16x16 f16/bf16; untested on hardware); `wgmma` (Hopper, "       \
      "compiled for sm_90a: warpgroup MMA m64nNk16 from shared-memory descriptors, P from registers, V read "          \
      "transposed; a warpgroup of 4 warps per 64 rows, `BLOCK_M` = 16 x `NUM_WARPS`, `BLOCK_N` in {64, 128, 176, "     \
      "192, 256}, head dims 64, 80, 96, 128, 256, with 80 and 96 padded to 128 in the swizzled rows)")                 \
    X(BLOCK_M, block_m, int, 1, 1024, block_m_ok, "a power of two or a multiple of 16, 1 to 1024", KINDS_ALL,          \
      SHOW_ALWAYS, 0, FEAT_LOG2, 8, NULL, GROUP_FORM, "powers of two, multiples of 16", "all",                         \
      "query rows per work-group")                                                                                     \
    X(BLOCK_N, block_n, int, 1, 256, block_n_ok, "a power of two up to 256, or 176 or 192", KINDS_ALL, SHOW_ALWAYS, 0, \
      FEAT_LOG2, 7, NULL, GROUP_FORM, "powers of two up to 256; 176, 192", "all (176 and 192: `wgmma`)",               \
      "keys per tile")                                                                                                 \
    X(NUM_WARPS, num_warps, int, 1, 32, NULL, "1 to 32", KINDS_ALL, SHOW_ALWAYS, 0, FEAT_LOG2, 3, NULL, GROUP_FORM,    \
      "1 to 32",                                                                                                       \
      "all",                                                                                                           \
      "work-group size / 32 (a 64-lane AMD wavefront is two); with `wgmma` 4, 8 or 12: one, two or three consumer "    \
      "warpgroups of 64 rows (12, 192-row blocks, as FlashAttention-3 runs d = 64, is in the space for d <= 128)")     \
    X(WARP_M, warp_m, int, 1, 2, NULL, "1 or 2", KINDS_ALL, SHOW_ALWAYS, 0, FEAT_LIN, 1, NULL, GROUP_WORK, "1, 2",     \
      "`mma`, `mfma`",                                                                                                 \
      "`mma`: 16-row tiles per warp (1 keeps Q in registers; 2 halves shared-memory reads per MMA); `mfma`: 16-row "   \
      "tiles per wavefront")                                                                                           \
    X(STAGES, stages, int, 1, 4, NULL, "1 to 4", KINDS_ALL, SHOW_ALWAYS, 0, FEAT_LIN, 3, NULL, GROUP_PIPE, "1 to 4",   \
      "`mma`, `wgmma`, `mfma`",                                                                                        \
      "K/V tiles in flight in the `cp.async` pipeline; `mfma`: 1, or 2 to fetch the next K/V tile into registers "     \
      "during this one")                                                                                               \
    X(SPLIT_KV, split_kv, int, 1, 256, NULL, "1 to 256", KINDS_ALL, SHOW_ALWAYS, 0, FEAT_LOG2, 3, NULL, GROUP_WORK,    \
      "1 to 256",                                                                                                      \
      "all",                                                                                                           \
      "key-range splits, merged by `attn_combine` (1: none). Untuned default: decode splits until about four waves "   \
      "of work-groups; prefill splits only a grid smaller than one wave and stays within it")                          \
    X(PACK_GQA, pack_gqa, int, 0, 3, NULL, "0, 1, 2 or 3", KINDS_ALL, SHOW_ALWAYS, 0, FEAT_LIN, 1, NULL,               \
      GROUP_WORK, "0 to 3",                                                                                            \
      "1: all; 2, 3: Sq % 64 = 0 and `BLOCK_M` % 64 = 0 (in the space for causal GQA `wgmma`)",                        \
      "one work-group serves all query heads of a KV head, each K/V tile read once per KV head. 1: the rows "          \
      "interleave the heads (row R is position R / G of head R % G), for decode. 2: 64-row stripes (stripe u is "      \
      "positions 64 (u / G) .. +63 of head u % G), so a warpgroup's rows are one head's consecutive positions. 3: "    \
      "the same stripes with positions descending, so the KV head's short tail block holds its first positions, "      \
      "the fewest keys")                                                                                               \
    X(KPAD, kpad, int, 0, 8, NULL, "0 to 8", KINDS_ALL, SHOW_ALWAYS, 0, FEAT_LIN, 1, NULL, GROUP_PIPE, "0 to 8",       \
      "all",                                                                                                           \
      "floats of padding per shared-memory row (bank conflicts)")                                                      \
    X(WG_PIPE, wg_pipe, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_PIPE, "0, 1",     \
      "`wgmma`, `STAGES` >= 3 (2 with `WG_WS`)",                                                                       \
      "1: the previous tile's P V wgmma is issued behind this tile's S = Q K^T, so the tensor cores run it during "    \
      "the softmax; 0: each tile's P V waits")                                                                         \
    X(WG_SWIZZLE, wg_swizzle, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_WGMMA, 0, FEAT_LIN, 1, NULL, GROUP_PIPE,    \
      "1, 0",                                                                                                          \
      "`wgmma`",                                                                                                       \
      "Q, K and V tiles in shared memory in the 128-byte swizzled layout (1) or the plain core-matrix layout (0, "     \
      "which conflicts on banks)")                                                                                     \
    X(WG_TMA, wg_tma, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_ROLES, "0, 1",      \
      "`wgmma`, K/V not paged, sm_90 with `cuTensorMapEncodeTiled`",                                                   \
      "K and V tiles by the bulk tensor copy engine (`cp.async.bulk.tensor` into the swizzled layout, one "            \
      "transaction mbarrier per stage; tensor maps encoded by the host) instead of `cp.async` from every thread. Any " \
      "head dim `wgmma` takes (at d = 80 and 96 the engine zero-fills the last box); ragged batches too (maps of "     \
      "[Hkv] planes of [total keys, d]; `WG_PERSIST` takes dense batches only)")                                       \
    X(WG_WS, wg_ws, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_ROLES, "0, 1",        \
      "`WG_TMA`",                                                                                                      \
      "warp specialisation: a producer warpgroup (one thread issues the copies; 24 registers by `setmaxnreg`, two "    \
      "consumer warpgroups take 240, three 160) fills each stage once every consumer warp has released it through a "  \
      "second mbarrier, so the tile loop has no work-group barrier. With `WG_PIPE` a stage is released once its P V "  \
      "is done")                                                                                                       \
    X(WG_PINGPONG, wg_pingpong, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_ROLES,    \
      "0, 1",                                                                                                          \
      "`WG_WS`, two or three consumer warpgroups",                                                                     \
      "they take turns issuing S = Q K^T (named barriers, a ring with three), so one's softmax overlaps the others' "  \
      "MMAs")                                                                                                          \
    X(WG_KVSPLIT, wg_kvsplit, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_ROLES,      \
      "0, 1", "`WG_WS`",                                                                                               \
      "K and V of a stage land on barriers of their own and are released apart (K once its S is done, V once its P "   \
      "V is), so the producer refills K a tile earlier; for 2-stage `WG_PIPE` and 176/192-key tiles")                  \
    X(WG_PERSIST, wg_persist, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_SCHED,      \
      "0, 1",                                                                                                          \
      "`WG_WS` prefill, `SPLIT_KV` = 1, a dense batch, no `GRID_LPT` (it keeps an order of its own)",                  \
      "one work-group per SM (grid min(blocks, SMs)) walks many query blocks; the producer runs on into the next "     \
      "block's tiles while the consumers finish a block and load their next Q rows, so no block pays a cold start. "   \
      "Under a causal mask it needs `WG_DYNAMIC`: a static share leaves some SMs more work than others")               \
    X(WG_DEFER, wg_defer, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_PIPE,           \
      "0, 1", "`WG_PIPE`",                                                                                             \
      "O's rescale for tile j-1 runs while the tensor cores do tile j's S, just before P V of j-1 is issued "          \
      "(FlashAttention-3's order), instead of after the softmax's exp; goes with `WG_PVTURN`")                         \
    X(WG_PVTURN, wg_pvturn, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_PIPE, "0, 1", \
      "`WG_PIPE` + `WG_PINGPONG`",                                                                                     \
      "a warpgroup's turn covers the previous tile's P V as well as this tile's S, so the warpgroups' MMAs reach the " \
      "tensor cores in turn-sized batches")                                                                            \
    X(WG_DYNAMIC, wg_dynamic, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_SCHED,      \
      "0, 1",                                                                                                          \
      "`WG_PERSIST`",                                                                                                  \
      "the producer thread takes each next query block from a counter in global memory as its work-group frees up "    \
      "(list scheduling over the longest-first order) and hands it to the consumers through a ring of four shared "    \
      "slots; the last work-group to finish zeroes the counters. Producer 32 registers, consumers 232")                \
    X(WG_QEARLY, wg_qearly, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_ROLES,        \
      "0, 1",                                                                                                          \
      "`WG_WS` without `WG_PERSIST`",                                                                                  \
      "the producer starts on the first K and V tiles at once while each consumer warpgroup loads its own 64 Q rows, " \
      "instead of after the whole Q tile has landed")                                                                  \
    X(WG_QPREFETCH, wg_qprefetch, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL,               \
      GROUP_SCHED, "0, 1",                                                                                             \
      "`WG_PERSIST`",                                                                                                  \
      "each consumer warpgroup sets its next block's Q rows loading as soon as the present block's last S is done, "   \
      "and waits for them only when that block starts: Q's latency hides behind the last softmax, P V and output "     \
      "stores")                                                                                                        \
    X(WG_HOLDPV, wg_holdpv, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_PIPE,         \
      "0, 1", "`WG_PIPE`",                                                                                             \
      "a CTA fence (`fence.acq_rel.cta`) between the softmax and the wait for the previous tile's P V; without it "    \
      "ptxas moves that `wgmma.wait_group` to the top of the softmax, which then does not overlap the P V (the SASS "  \
      "shows both placements: `fabench compile --binaries`)")                                                          \
    X(WG_SINFLIGHT, wg_sinflight, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL,               \
      GROUP_PIPE, "0, 1",                                                                                              \
      "`WG_DEFER`",                                                                                                    \
      "a `wgmma.wait_group 1` before the deferred rescale of O: it returns at once, but tells ptxas that the "         \
      "previous tile's P V is done, where ptxas otherwise injects a wait for every group at the loop's back edge "     \
      "(ptxas info C7517). Not in `kernels/space.csv`; the key stays")                                                 \
    X(WG_OSTAGE, wg_ostage, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_EDGE, "0, 1", \
      "`wgmma`, `SPLIT_KV` = 1, no `WG_QPREFETCH`",                                                                    \
      "each consumer warpgroup writes its normalised O into its own Q rows of shared memory and stores whole 16-byte " \
      "chunks of rows, consecutive threads along a row, instead of 4-byte stores straight from the accumulator "       \
      "layout (which fill each 32-byte sector half per instruction). Persistent work-groups wait for every chunk to "  \
      "be read before the next block's Q rows land")                                                                   \
    X(WG_QTMA, wg_qtma, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_ROLES, "0, 1",    \
      "`WG_WS` without `WG_PERSIST` or `WG_QEARLY`, `PACK_GQA` = 0, dense",                                            \
      "the producer thread brings the work-group's Q rows in through a third tensor map (on a barrier of their own) "  \
      "before the first K and V tile, instead of the consumer threads' `cp.async` copies")                             \
    X(WG_OTMA, wg_otma, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_EDGE, "0, 1",     \
      "`WG_OSTAGE`, `WG_TMA`, `PACK_GQA` = 0, dense",                                                                  \
      "once a consumer warpgroup has staged its 64 O rows, one thread stores them by the copy engine through a "       \
      "fourth tensor map (rows and columns past the tensor clipped) and waits only until the engine has read them")    \
    X(WG_SKIP, wg_skip, int, 0, 1, NULL, "0 or 1", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_EDGE, "0, 1",     \
      "`WG_WS` without `WG_PIPE`",                                                                                     \
      "a consumer warpgroup whose 64 rows see no key of a tile (rows past the last query row; a causal tile past its " \
      "diagonal) issues no MMA and no softmax for it, only taking its ping-pong turns and releasing the stages; the "  \
      "live tiles keep the same loop, so ptxas keeps the wgmmas asynchronous")                                         \
    X(WG_HALF, wg_half, int, 0, 2, NULL, "0, 1 or 2", KINDS_WGMMA, SHOW_ON, 0, FEAT_LIN, 2, NULL, GROUP_EDGE,          \
      "0, 1, 2",                                                                                                       \
      "`WG_SKIP` (2: `BLOCK_N` 128, 192 or 256)",                                                                      \
      "a live key tile whose second half none of a warpgroup's rows sees takes its P V over the first `BLOCK_N` / 2 "  \
      "keys only (1), or its S as well (2: a 64-wide wgmma into an accumulator of its own). Each arm holds a whole "   \
      "fence-commit-wait; the tile loop runs twice, unrolled, the second pass taking only the last live tile")         \
    X(RED_SPLIT, red_split, int, 0, 1, NULL, "0 or 1", KINDS_MMA_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_PIPE,     \
      "0, 1",                                                                                                          \
      "`mma`, `wgmma`",                                                                                                \
      "a score tile's row maxima and sums in four independent chains per row, joined at the end, not one chain of "    \
      "dependent steps")                                                                                               \
    X(MASK_BOUND, mask_bound, int, 0, 1, NULL, "0 or 1", KINDS_MMA_WGMMA, SHOW_ON, 0, FEAT_LIN, 1, NULL,               \
      GROUP_EDGE, "0, 1",                                                                                              \
      "`mma`, `wgmma` (in the space for causal `wgmma`)",                                                              \
      "a tile that needs a mask compares each score's column within the thread's fragment, a constant, with one "      \
      "bound per row (min(Skv - 1, the row's diagonal) less the tile's and the thread's first column), instead of "    \
      "computing every key's index: the same predicate in fewer registers")                                            \
    X(GRID_LPT, grid_lpt, int, 0, 4096, NULL, "0 to 4096", KINDS_ALL, SHOW_ON, 0, FEAT_ON, 1, NULL, GROUP_SCHED,       \
      "0, 1, N (up to 4096)", "dense batches, any `MMA`",                                                              \
      "the launch order is read longest first inside sections of (batch, head) groups, every group's last query "      \
      "block before any group's next one, so under a causal mask the final wave holds the lightest blocks. 1: a "      \
      "section is as many groups as keep their K and V within 16 MiB of L2 (longest first over the whole grid would "  \
      "read every head's K and V from DRAM at once); N > 1: sections of N groups; 0 walks the blocks head by head")    \
    X(SPLIT_FUSE, split_fuse, int, 0, 1, NULL, "0 or 1", KINDS_ALL, SHOW_ON, 0, FEAT_LIN, 1, NULL, GROUP_WORK, "0, 1", \
      "any `MMA` but `WG_WS`; `SPLIT_KV` > 1",                                                                         \
      "1: each split work-group stores its partial rows and counts itself in at its query block's counter; the last "  \
      "to arrive merges the block's rows and resets the counter, so one launch does what took two (CUDA and HIP: one " \
      "thread fences and counts with a wrapping `atomicInc`; OpenCL: every work-item fences, subtract to reset). 0 "   \
      "keeps the separate `attn_combine` launch")                                                                      \
    X(KV_WARPS, kv_warps, int, 1, 8, is_pow2, "1, 2, 4 or 8", KINDS_MMA, SHOW_ON, 1, FEAT_LOG2, 3, NULL,               \
      GROUP_WORK, "1, 2, 4, 8",                                                                                        \
      "`mma`",                                                                                                         \
      "the warps come in groups of `KV_WARPS` that share one group of query rows (`BLOCK_M` = 16 `WARP_M` "            \
      "`NUM_WARPS` / `KV_WARPS`); each warp takes its own `BLOCK_N` of every `KV_WARPS` x `BLOCK_N` keys with its "    \
      "own running max and sum, and the group merges through shared memory at the end (cuDNN's decode form). "         \
      "Default 4 for untuned `mma` decode up to d = 128, else 1")

/* Which tile kinds take a knob (bits 1 << mma_kind) */
#define KINDS_ALL 15u
#define KINDS_MMA 2u
#define KINDS_WGMMA 8u
#define KINDS_MMA_WGMMA 10u

typedef enum { SHOW_ALWAYS, SHOW_WGMMA, SHOW_ON } knob_show;
/* GROUP_FORM: the tile form (the MMA kind and the work-group's tile and warps), which fixes
 * the work split and the instruction mix; GROUP_WORK: how a problem is split among warps and
 * work-groups (split-KV, GQA packing, key-warps); GROUP_PIPE: the tile loop's pipeline
 * (stages, overlap of the MMAs with the softmax, the shared-memory layout); GROUP_ROLES: who
 * loads what (the copy engine, warp specialisation, ping-pong); GROUP_SCHED: the order and
 * assignment of query blocks (persistence, dynamic scheduling, longest first); GROUP_EDGE:
 * the mask's and the output's special cases */
typedef enum { GROUP_FORM, GROUP_WORK, GROUP_PIPE, GROUP_ROLES, GROUP_SCHED, GROUP_EDGE, GROUP_COUNT } knob_group;
typedef enum { FEAT_LIN, FEAT_LOG2, FEAT_ON } knob_feat;

/* KNOB_BLOCK_M, ...: a knob's row number; KNOB_COUNT of them */
#define FB_KNOB_ID(KEY, ...) KNOB_##KEY,
typedef enum { FB_KNOBS(FB_KNOB_ID) KNOB_COUNT } knob_id;
#undef FB_KNOB_ID

/* A knob's row, as config.c holds it */
typedef struct {
    const char *key;
    int lo, hi;
    int (*ok)(int);
    const char *allowed;
    unsigned kinds;
    knob_show show;
    int off;
    knob_feat feat;
    double fdiv;
    const char *names;
    knob_group group;
    const char *values_doc, *takes_doc, *doc;
} knob_info;

#endif
