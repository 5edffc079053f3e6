#!/usr/bin/env python3
"""fabench's PyTorch adapter: measures the vendors' attention kernels reachable from
PyTorch (SDPA restricted to one backend: FlashAttention-2, memory-efficient, cuDNN; and
FlexAttention, torch.compile'd to Triton) on inputs the harness wrote, and hands the
outputs back for the harness's own verification.

Run by the harness as a subprocess with an argument vector (no shell):
    adapter.py --serve --device N
It speaks a line protocol: it first prints one line
    hello torch=VERSION cuda=VERSION cudnn=VERSION hip=VERSION gpu=NAME impls=a,b,c
or  absent reason=WHY
then, for every request line on stdin
    run impl=NAME dtype=bf16 b=.. hq=.. hkv=.. sq=.. skv=.. d=.. causal=0|1 q=PATH k=PATH v=PATH o=PATH
        warmup=SECONDS budget=SECONDS min_reps=N max_reps=N
and optionally batch_us=US max_batch=N max_flushed=N (the batch rule of bench/core/timing.h)
and lse=PATH (write the log-sum-exp there too, where the implementation returns one);
it answers one line
    result status=ok timer=gated batch=N launch_us=US samples=US,US,...   (the output is in PATH o)
or  result status=unsupported reason=WHY     (the vendor cannot do this shape)
or  result status=error reason=WHY
A ragged (variable-length or mixed) batch adds
        cu_q=0,N1,N2,... cu_kv=0,M1,M2,...   (batch + 1 cumulative offsets each)
and its tensors are packed per head without padding: Q and O [Hq, total_q, D], K and V
[Hkv, total_kv, D]; sequence b owns rows cu[b] .. cu[b+1]-1 (bench/core/common.h). A paged KV
cache adds page=ROWS: the adapter scatters K and V into shuffled pages of that many rows
and hands each vendor the block table its API takes; a vendor API without one says so.
How each vendor ran a batch (varlen, document mask, padded with a mask, pages) comes back
as config=WORD before samples. A request with marks=1 is also answered, once the warm-up is
over and the timed repetitions begin, with a line
    timing
before its result line (the harness watches the GPU's clocks and power from there). A
request with flush=BYTES has that much device memory overwritten before every call, outside
the timed events, so that no input stays in the cache from the call before. A request with
rest=SECONDS leaves the device idle that long before the warm-up. With lse=PATH the
answer has lse=1 before samples when the log-sum-exp ([B, Hq, Sq] float32, natural log;
packed [Hq, total_q] for a ragged batch) was written to PATH by a separate call of the same
implementation that returns it.
Values never hold spaces except reason, which is always last. `quit` ends it.
Tensors are raw little-endian arrays in [B, H, S, D] order, in the request's dtype.

Timing is fabench's one protocol (bench/core/timing.c): after the warm-up, batches of calls run
back to back, each batch a CUDA graph of n calls replayed by one call (timer=graph), or,
where a call cannot be captured, n calls enqueued behind a gate (kernels/gate.ptx, loaded
through the driver with ctypes) that holds the stream until the whole batch is enqueued
(timer=gated), so the host's per-call work (Python, dispatch) never reaches the device's
timeline; a sample is a batch's device time over its calls (each call on its own between
events, gated, when the L2 is flushed). launch_us is the host's time to enqueue one call,
reported apart. FABENCH_TIMER=graph|gated|queue asks for a mode, as for fabench itself.
"""
import sys
import time
import warnings

import ctypes
import os

IMPLS = ("torch-flash", "torch-efficient", "torch-cudnn", "flex", "flex-autotune")
# FlexAttention compiled with Inductor's autotuning: the Triton peer of the paper's method
FLEX_MODES = {"flex": None, "flex-autotune": "max-autotune-no-cudagraphs"}
# bench/core/timing.h's batch rule, used when a request does not carry it
BATCH_US, MAX_BATCH, MAX_FLUSHED = 1000.0, 128, 32
GATE_PTX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels", "gate.ptx")


def say(line):
    sys.stdout.write(line.replace("\n", " ") + "\n")
    sys.stdout.flush()


def parse_request(line):
    """'run k=v k=v ... reason=...' -> dict; raises ValueError on a malformed line."""
    words = line.split()
    if not words or words[0] != "run":
        raise ValueError("expected 'run', got %r" % line[:40])
    req = {}
    for w in words[1:]:
        if "=" not in w:
            raise ValueError("expected key=value, got %r" % w)
        k, v = w.split("=", 1)
        req[k] = v
    need = ("impl", "dtype", "b", "hq", "hkv", "sq", "skv", "d", "causal", "q", "k", "v", "o",
            "warmup", "budget", "min_reps", "max_reps")
    missing = [k for k in need if k not in req]
    if missing:
        raise ValueError("missing " + ",".join(missing))
    for k in ("b", "hq", "hkv", "sq", "skv", "d", "causal", "min_reps", "max_reps"):
        req[k] = int(req[k])
    for k in ("warmup", "budget"):
        req[k] = float(req[k])
    req["batch_us"] = float(req.get("batch_us", BATCH_US))
    req["max_batch"] = int(req.get("max_batch", MAX_BATCH))
    req["max_flushed"] = int(req.get("max_flushed", MAX_FLUSHED))
    if not (req["batch_us"] > 0 and req["max_batch"] >= 1 and req["max_flushed"] >= 1):
        raise ValueError("batch_us, max_batch and max_flushed must be positive")
    req["page"] = int(req.get("page", "0"))
    req["flush"] = int(req.get("flush", "0"))
    if req["flush"] < 0:
        raise ValueError("flush=%d is negative" % req["flush"])
    req["rest"] = float(req.get("rest", "0"))
    if not req["rest"] >= 0:
        raise ValueError("rest=%s is not a count of seconds" % req.get("rest"))
    if req["page"] < 0 or (req["page"] & (req["page"] - 1)):
        raise ValueError("page=%d is not 0 or a power of two" % req["page"])
    if ("cu_q" in req) != ("cu_kv" in req):
        raise ValueError("cu_q and cu_kv come together")
    if "cu_q" in req:
        for k in ("cu_q", "cu_kv"):
            cu = [int(x) for x in req[k].split(",")]
            if len(cu) != req["b"] + 1 or cu[0] != 0 or any(b <= a for a, b in zip(cu, cu[1:])):
                raise ValueError("%s needs b+1=%d strictly rising offsets from 0" % (k, req["b"] + 1))
            req[k] = cu
        if max(seq_lens(req["cu_q"])) > req["sq"] or max(seq_lens(req["cu_kv"])) > req["skv"]:
            raise ValueError("a sequence is longer than sq or skv")
    else:
        req["cu_q"] = req["cu_kv"] = None
    return req


class Gate:
    """The timing gate of bench/core/timing.c in this process: kernels/gate.ptx loaded through the
    CUDA driver (ctypes), spinning on a word of mapped host memory until the host writes the
    hold's sequence number there, or giving up after a timeout and counting itself late."""

    def __init__(self, stream):
        lib = ctypes.CDLL("libcuda.so.1")
        with open(GATE_PTX, "rb") as f:
            ptx = f.read() + b"\0"
        self.lib, self.stream, self.seq = lib, ctypes.c_void_p(stream), 0
        self.mod, self.fn, host = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        self.dev = ctypes.c_uint64()
        self.check("cuModuleLoadData", lib.cuModuleLoadData(ctypes.byref(self.mod), ctypes.c_char_p(ptx)))
        self.check("cuModuleGetFunction", lib.cuModuleGetFunction(ctypes.byref(self.fn), self.mod, b"fb_gate"))
        self.check("cuMemHostAlloc", lib.cuMemHostAlloc(ctypes.byref(host), ctypes.c_size_t(8), ctypes.c_uint(3)))
        self.check("cuMemHostGetDevicePointer", lib.cuMemHostGetDevicePointer_v2(ctypes.byref(self.dev), host, 0))
        self.words = (ctypes.c_uint32 * 2).from_address(host.value)  # [0] opened sequence, [1] late holds
        self.words[0] = self.words[1] = 0

    @staticmethod
    def check(what, rc):
        if rc != 0:
            raise RuntimeError("%s failed (CUresult %d)" % (what, rc))

    def hold(self, timeout_s):
        self.seq = (self.seq + 1) & 0xffffffff
        args = [ctypes.c_uint64(self.dev.value), ctypes.c_uint32(self.seq),
                ctypes.c_uint64(int(timeout_s * 1e9)), ctypes.c_uint64(self.dev.value + 4)]
        params = (ctypes.c_void_p * 4)(*[ctypes.addressof(a) for a in args])
        self.check("cuLaunchKernel (the timing gate)", self.lib.cuLaunchKernel(
            self.fn, 1, 1, 1, 1, 1, 1, 0, self.stream, params, None))

    def open(self):
        self.words[0] = self.seq

    def late(self):
        return self.words[1]


def batch_size(run_us, r, flushed):
    """bench/core/timing.c's timing_batch_size: runs a batch, from one run's device time."""
    most = r["max_flushed"] if flushed else r["max_batch"]
    if not run_us > 0:
        return 1
    return max(1, min(most, int(r["batch_us"] // run_us)))


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def seq_lens(cu):
    """Per-sequence lengths from cumulative offsets."""
    return [b - a for a, b in zip(cu, cu[1:])]


def page_plan(kv_lens, page, seed=1):
    """A paged KV cache for sequences of kv_lens keys: each sequence gets ceil(len/page)
    pages, numbered in a seeded shuffle so that no sequence's pages are in order.
    Returns (block_table rows padded with 0 to the longest, number of pages)."""
    import random
    need = [(n + page - 1) // page for n in kv_lens]
    total = sum(need)
    ids = list(range(total))
    random.Random(seed).shuffle(ids)
    width = max(need)
    table, at = [], 0
    for n in need:
        table.append(ids[at:at + n] + [0] * (width - n))
        at += n
    return table, total


def sdpa_backend(impl):
    """The SDPA backend an impl name stands for."""
    from torch.nn.attention import SDPBackend
    return {"torch-flash": SDPBackend.FLASH_ATTENTION,
            "torch-efficient": SDPBackend.EFFICIENT_ATTENTION,
            "torch-cudnn": SDPBackend.CUDNN_ATTENTION}[impl]


def page_pool(x, phys, rows):
    """Packed x [H, total, D] scattered into a pool of `rows` cache rows [H, rows, D] at
    the physical rows phys (paged_rows); rows no sequence owns stay zero."""
    pool = x.new_zeros((x.shape[0], rows, x.shape[2]))
    pool[:, phys] = x
    return pool


class Unsupported(Exception):
    """A batch the vendor's API cannot take, with the reason (status unsupported)."""


def token_index(t, cu, dev):
    """Sequence id and position inside its sequence of every packed row, as int64
    tensors, for cumulative offsets cu."""
    lens = t.tensor(seq_lens(cu), dtype=t.int64, device=dev)
    doc = t.repeat_interleave(t.arange(len(cu) - 1, device=dev), lens)
    start = t.tensor(cu[:-1], dtype=t.int64, device=dev)
    return doc, t.arange(cu[-1], device=dev) - start[doc]


def dense_offsets(n, s):
    return [i * s for i in range(n + 1)]


def to_packed(x):
    """Dense [B, H, S, D] -> packed [H, B*S, D] (a copy)."""
    b, h, s, d = x.shape
    return x.permute(1, 0, 2, 3).reshape(h, b * s, d)


def from_packed(x, b, s):
    """Packed [H, B*S, D] -> dense [B, H, S, D]."""
    h, _, d = x.shape
    return x.reshape(h, b, s, d).permute(1, 0, 2, 3)


def paged_rows(t, r, cu_kv, dev):
    """Where every packed key row lives in a shuffled paged cache: (physical row of each
    packed row, block table [B, pages] int32, number of pages)."""
    page = r["page"]
    table, npages = page_plan(seq_lens(cu_kv), page)
    tbl = t.tensor(table, dtype=t.int64, device=dev)
    doc, pos = token_index(t, cu_kv, dev)
    return tbl[doc, pos // page] * page + pos % page, tbl.to(t.int32), npages


def flex_parts(t, r, qp, kp, vp, cu_q, cu_kv, dev):
    """FlexAttention over a packed batch: sequences are documents of one long batch row,
    kept apart by the mask (and, paged, K and V live in shuffled pages which the mask
    maps back to their sequence and position). Returns (K, V, mask_mod, config) with K,
    V [Hkv, rows, D]."""
    qdoc, qpos = token_index(t, cu_q, dev)
    kdoc, kpos = token_index(t, cu_kv, dev)
    off = t.tensor([kl - ql for ql, kl in zip(seq_lens(cu_q), seq_lens(cu_kv))], dtype=t.int64, device=dev)
    config = "document-mask"
    if r["page"]:
        phys, _, npages = paged_rows(t, r, cu_kv, dev)
        rows = npages * r["page"]
        kc, vc = page_pool(kp, phys, rows), page_pool(vp, phys, rows)
        pdoc = t.full((rows,), -1, dtype=t.int64, device=dev)  # page tails belong to no one
        ppos = t.zeros((rows,), dtype=t.int64, device=dev)
        pdoc[phys] = kdoc
        ppos[phys] = kpos
        kp, vp, kdoc, kpos = kc, vc, pdoc, ppos
        config = "document-mask-paged%d" % r["page"]
    causal = bool(r["causal"])

    def mask_mod(b, h, qi, ki):
        same = qdoc[qi] == kdoc[ki]
        if causal:
            same = same & (kpos[ki] <= qpos[qi] + off[qdoc[qi]])
        return same
    return kp, vp, mask_mod, config


def torch_version(t):
    """(major, minor) of torch's version text ("2.6.0+cu124" -> (2, 6)); (0, 0) if unreadable."""
    import re
    m = re.match(r"(\d+)\.(\d+)", getattr(t, "__version__", ""))
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def mask_builder(t):
    """create_block_mask as this torch supports building a block mask without the whole
    (total_q x total_kv) mask in memory: torch.compile'd (torch 2.6 deprecated the _compile
    flag, with a DeprecationWarning on every call), or with _compile=True before 2.6."""
    import functools
    import inspect
    from torch.nn.attention.flex_attention import create_block_mask
    if torch_version(t) < (2, 6) and "_compile" in inspect.signature(create_block_mask).parameters:
        return functools.partial(create_block_mask, _compile=True)
    return t.compile(create_block_mask)


def padded_parts(t, r, qp, kp, vp, cu_q, cu_kv, dev):
    """A ragged batch padded to dense [B, H, sq, D] and [B, Hkv, skv, D] with a boolean
    mask [B, 1, sq, skv] that hides padded keys (and future keys when causal); padded
    query rows see every real key so that no row is empty. Returns (Q, K, V, mask,
    unpad) where unpad maps the dense output back to packed [Hq, total_q, D]."""
    b, sq, skv = r["b"], r["sq"], r["skv"]
    qdoc, qpos = token_index(t, cu_q, dev)
    kdoc, kpos = token_index(t, cu_kv, dev)
    Q = qp.new_zeros((b, qp.shape[0], sq, qp.shape[2]))
    K = kp.new_zeros((b, kp.shape[0], skv, kp.shape[2]))
    V = vp.new_zeros((b, vp.shape[0], skv, vp.shape[2]))
    Q[qdoc, :, qpos] = qp.transpose(0, 1)
    K[kdoc, :, kpos] = kp.transpose(0, 1)
    V[kdoc, :, kpos] = vp.transpose(0, 1)
    qlen = t.tensor(seq_lens(cu_q), dtype=t.int64, device=dev)
    klen = t.tensor(seq_lens(cu_kv), dtype=t.int64, device=dev)
    ki = t.arange(skv, device=dev)[None, None, :]
    qi = t.arange(sq, device=dev)[None, :, None]
    mask = ki < klen[:, None, None]
    if r["causal"]:
        real_q = qi < qlen[:, None, None]
        mask = mask & ((ki <= qi + (klen - qlen)[:, None, None]) | ~real_q)
    return Q, K, V, mask[:, None], lambda o: o[qdoc, :, qpos].transpose(0, 1)


def flex_config(impl):
    """What perf.csv's config says of a FlexAttention implementation."""
    return "mode=%s" % FLEX_MODES[impl] if FLEX_MODES[impl] else ""


class Adapter:
    def __init__(self, device):
        """device: the CUDA device's index; a torch.device (the CPU) builds and runs the
        calls without timing them, for tests."""
        import torch  # noqa: F401  (absent is reported by main)
        self.torch = torch
        self.dev = torch.device("cuda", device) if isinstance(device, int) else device
        if self.dev.type == "cuda":
            torch.cuda.set_device(self.dev)
        self.flex = {}  # impl -> the compiled flex_attention
        self.make_mask = None  # create_block_mask as this torch supports it (mask_builder)
        self.gate = None  # loaded on first use; False when it cannot be
        self.gate_why = ""

    def hello(self):
        t = self.torch
        cudnn = t.backends.cudnn.version() if t.backends.cudnn.is_available() else "none"
        return "hello torch=%s cuda=%s cudnn=%s hip=%s gpu=%s impls=%s" % (
            t.__version__, t.version.cuda or "none", cudnn, getattr(t.version, "hip", None) or "none",
            t.cuda.get_device_name(self.dev).replace(" ", "_"), ",".join(IMPLS))

    def load(self, path, shape, dtype):
        import numpy as np
        t = self.torch
        npdt = np.float32 if dtype == "fp32" else np.uint16
        arr = np.fromfile(path, dtype=npdt)
        n = 1
        for s in shape:
            n *= s
        if arr.size != n:
            raise ValueError("%s holds %d elements, expected %d" % (path, arr.size, n))
        x = t.from_numpy(arr.reshape(shape))
        if dtype == "bf16":
            x = x.view(t.bfloat16)
        elif dtype == "fp16":
            x = x.view(t.float16)
        return x.to(self.dev)

    def store(self, path, o, dtype):
        t = self.torch
        o = o.contiguous().cpu()
        if dtype != "fp32":
            o = o.view(t.int16)
        o.numpy().tofile(path)

    def compiled_flex(self, impl="flex"):
        t = self.torch
        from torch.nn.attention.flex_attention import flex_attention
        if impl not in self.flex:
            # Every shape is its own static compile. Past dynamo's recompile limit (8 by
            # default) torch would quietly run flex_attention eagerly, unfused, and we
            # would time that instead of FlexAttention's kernel: raise the limit, and
            # make hitting it an error rather than a fallback where torch allows.
            dc = t._dynamo.config
            for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                         "accumulated_cache_size_limit"):
                if hasattr(dc, name):
                    setattr(dc, name, max(getattr(dc, name), 4096))
            if hasattr(dc, "fail_on_recompile_limit_hit"):
                dc.fail_on_recompile_limit_hit = True
            mode = FLEX_MODES[impl]
            self.flex[impl] = t.compile(flex_attention, dynamic=False, **({"mode": mode} if mode else {}))
        return self.flex[impl]

    def block_mask(self, mask_mod, qlen, kvlen):
        if self.make_mask is None:
            self.make_mask = mask_builder(self.torch)
        return self.make_mask(mask_mod, B=None, H=None, Q_LEN=qlen, KV_LEN=kvlen, device=self.dev)

    def flex_lse(self, impl, *args, **kw):
        """FlexAttention's log-sum-exp for the same call (natural log; the newer API asks for
        it with return_aux, the older with return_lse), compiled as timed, else eager where
        the compiled form declines (torch.compile on the CPU has no log-sum-exp)."""
        import inspect
        from torch.nn.attention import flex_attention as fa
        aux = "return_aux" in inspect.signature(fa.flex_attention).parameters and hasattr(fa, "AuxRequest")

        def lse_of(fn):
            if aux:
                return fn(*args, return_aux=fa.AuxRequest(lse=True), **kw)[1].lse
            return fn(*args, return_lse=True, **kw)[1]
        try:
            return lse_of(self.compiled_flex(impl))
        except Exception as e:
            if "lse" not in str(e) and "logsumexp" not in str(e):
                raise
            return lse_of(fa.flex_attention)

    def sdpa_lse(self, r, q, k, v):
        """The log-sum-exp of SDPA's backend r["impl"] on a dense batch, from its aten entry
        point (the kernel SDPA dispatches to), [B, Hq, Sq]; None where that entry point's
        masks differ from fabench's (causal with Sq != Skv is aligned differently there)."""
        t = self.torch
        if r["causal"] and r["sq"] != r["skv"]:
            return None
        rep = r["hq"] // r["hkv"]
        if rep > 1:  # the entry points take as many K and V heads as Q heads
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        causal = bool(r["causal"])
        ops = t.ops.aten
        if r["impl"] == "torch-flash":
            lse = ops._scaled_dot_product_flash_attention(q, k, v, 0.0, causal)[1]
        elif r["impl"] == "torch-efficient":
            lse = ops._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.0, causal)[1]
        else:
            lse = ops._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, causal, False)[1]
        b, h = q.shape[0], q.shape[1]
        return lse.reshape(b, h, -1)[:, :, :r["sq"]].float()

    def make_call(self, r, q, k, v):
        """(call, finish, config, lse): call computes the vendor's output, finish turns it
        into the harness's layout (packed [Hq, total_q, D] for a ragged batch, else dense),
        config says how the vendor ran the batch, lse (None where the implementation returns
        none) computes its log-sum-exp in the harness's layout by a separate call. Raises
        Unsupported, or the vendor's own error."""
        import torch.nn.functional as F
        gqa = r["hq"] != r["hkv"]
        impl = r["impl"]
        ragged = r["cu_q"] is not None
        if ragged or r["page"]:
            return self.make_ragged_call(r, q, k, v, gqa)
        if impl in FLEX_MODES:
            flex = self.compiled_flex(impl)
            mask = None
            if r["causal"]:
                off = r["skv"] - r["sq"]

                def lower_right(b, h, qi, ki):
                    return ki <= qi + off
                mask = self.block_mask(lower_right, r["sq"], r["skv"])
            return (lambda: flex(q, k, v, block_mask=mask, enable_gqa=gqa), lambda o: o, flex_config(impl),
                    lambda: self.flex_lse(impl, q, k, v, block_mask=mask, enable_gqa=gqa))
        from torch.nn.attention import sdpa_kernel
        backend = sdpa_backend(impl)
        kw = {}
        if gqa:
            kw["enable_gqa"] = True
        if r["causal"] and r["sq"] == r["skv"]:
            kw["is_causal"] = True
        elif r["causal"]:
            # SDPA's is_causal is aligned top-left; fabench's convention is bottom-right
            from torch.nn.attention.bias import causal_lower_right
            kw["attn_mask"] = causal_lower_right(r["sq"], r["skv"])

        def call():
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v, **kw)
        return call, lambda o: o, "", lambda: self.sdpa_lse(r, q, k, v)

    def make_ragged_call(self, r, q, k, v, gqa):
        """Ragged or paged batches: FlashAttention-2 through torch's varlen entry point
        (with its block table where this torch has one), FlexAttention with a document
        mask (over shuffled pages when paged), the other SDPA backends on the batch padded
        to dense with a mask (labelled padded: they do the padded work)."""
        t = self.torch
        import torch.nn.functional as F
        from torch.nn.attention import sdpa_kernel
        impl = r["impl"]
        ragged = r["cu_q"] is not None
        if ragged:
            qp, kp, vp, cu_q, cu_kv = q, k, v, r["cu_q"], r["cu_kv"]

            def finish(o):
                return o
        else:  # a dense batch over a paged cache: pack it, and unpack the output
            qp, kp, vp = to_packed(q), to_packed(k), to_packed(v)
            cu_q, cu_kv = dense_offsets(r["b"], r["sq"]), dense_offsets(r["b"], r["skv"])

            def finish(o):
                return from_packed(o, r["b"], r["sq"])
        if impl in FLEX_MODES:
            flex = self.compiled_flex(impl)
            K, V, mask_mod, config = flex_parts(t, r, qp, kp, vp, cu_q, cu_kv, self.dev)
            bm = self.block_mask(mask_mod, qp.shape[1], K.shape[1])
            q4, k4, v4 = qp.unsqueeze(0), K.unsqueeze(0), V.unsqueeze(0)
            config += ";" + flex_config(impl) if FLEX_MODES[impl] else ""

            def lse():  # packed [Hq, total_q]; dense over pages: [B, Hq, Sq]
                x = self.flex_lse(impl, q4, k4, v4, block_mask=bm, enable_gqa=gqa)[0]
                return x if ragged else from_packed(x.unsqueeze(-1), r["b"], r["sq"])[..., 0]
            return lambda: flex(q4, k4, v4, block_mask=bm, enable_gqa=gqa)[0], finish, config, lse
        if impl == "torch-flash":
            import inspect
            try:
                from torch.nn.attention.varlen import varlen_attn
            except ImportError as e:
                raise Unsupported("torch %s has no torch.nn.attention.varlen (%s)" % (t.__version__, e))
            params = inspect.signature(varlen_attn).parameters
            kw = {}
            if r["causal"]:
                if "is_causal" in params:
                    kw["is_causal"] = True
                elif "window_size" in params:
                    kw["window_size"] = (-1, 0)  # bottom-right aligned, as FlashAttention-2.1+
                else:
                    raise Unsupported("varlen_attn of torch %s has no causal mask" % t.__version__)
            if gqa and "enable_gqa" in params:
                kw["enable_gqa"] = True
            qv = qp.transpose(0, 1).contiguous()
            kv, vv = kp.transpose(0, 1).contiguous(), vp.transpose(0, 1).contiguous()
            config = "varlen"
            if r["page"]:
                if "block_table" not in params:
                    raise Unsupported("varlen_attn of torch %s takes no block_table" % t.__version__)
                phys, tbl, npages = paged_rows(t, r, cu_kv, self.dev)
                pages = (npages, r["page"], kp.shape[0], kp.shape[2])  # FA's [pages, page, Hkv, D]
                kv = page_pool(kp, phys, npages * r["page"]).transpose(0, 1).contiguous().view(pages)
                vv = page_pool(vp, phys, npages * r["page"]).transpose(0, 1).contiguous().view(pages)
                kw["block_table"] = tbl
                if "seqused_k" in params:  # newer torch wants each sequence's key count with pages
                    kw["seqused_k"] = t.tensor(seq_lens(cu_kv), dtype=t.int32, device=self.dev)
                config = "varlen-paged%d" % r["page"]
            cq = t.tensor(cu_q, dtype=t.int32, device=self.dev)
            ck = t.tensor(cu_kv, dtype=t.int32, device=self.dev)
            mq, mk = max(seq_lens(cu_q)), max(seq_lens(cu_kv))
            def varlen_call():
                # newer torch picks cuDNN for varlen_attn when it may: keep it FlashAttention
                with sdpa_kernel([sdpa_backend("torch-flash")]):
                    return varlen_attn(qv, kv, vv, cq, ck, mq, mk, **kw).transpose(0, 1)
            return varlen_call, finish, config, None
        if r["page"]:
            raise Unsupported("SDPA takes dense K and V; it has no block table for a paged cache")
        backend = sdpa_backend(impl)
        Q, K, V, mask, unpad = padded_parts(t, r, qp, kp, vp, cu_q, cu_kv, self.dev)
        kw = {"attn_mask": mask}
        if gqa:
            kw["enable_gqa"] = True

        def call():
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(Q, K, V, **kw)
        return call, lambda o: finish(unpad(o)), "padded", None

    def run(self, r):
        t = self.torch
        if r["impl"] not in IMPLS:
            return "result status=error reason=unknown impl %s" % r["impl"]
        if r["dtype"] not in ("fp32", "fp16", "bf16"):
            return "result status=error reason=unknown dtype %s" % r["dtype"]
        if r["cu_q"] is not None:  # packed per head: [H, total, D]
            qs, ks = (r["hq"], r["cu_q"][-1], r["d"]), (r["hkv"], r["cu_kv"][-1], r["d"])
        else:
            qs, ks = (r["b"], r["hq"], r["sq"], r["d"]), (r["b"], r["hkv"], r["skv"], r["d"])
        q = self.load(r["q"], qs, r["dtype"])
        k = self.load(r["k"], ks, r["dtype"])
        v = self.load(r["v"], ks, r["dtype"])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                call, finish, config, lse_fn = self.make_call(r, q, k, v)
                o = call()
                t.cuda.synchronize()
            except Unsupported as e:
                return "result status=unsupported reason=%s" % e
            except Exception as e:  # the vendor's own refusal, unless the device faulted
                why = " | ".join(str(w.message) for w in caught)
                msg = " ".join(str(e).split())
                # a fault (an illegal address, a device-side assert, memory exhausted) is a
                # failure of the run, not a shape the vendor declines
                fault = isinstance(e, t.cuda.OutOfMemoryError) or any(
                    x in msg for x in ("CUDA error", "illegal memory access", "device-side assert",
                                       "CUBLAS_STATUS", "CUDNN_STATUS_EXECUTION_FAILED", "out of memory"))
                return "result status=%s reason=%s: %s%s" % (
                    "error" if fault else "unsupported", type(e).__name__, msg[:300],
                    (" (" + why[:400] + ")") if why else "")
        self.store(r["o"], finish(o), r["dtype"])
        del o
        lse = self.write_lse(r, lse_fn)
        samples, batch, launch_us, timer = self.time_calls(r, call)
        del q, k, v
        return "result status=ok %stimer=%s batch=%d launch_us=%.3f %ssamples=%s" % (
            "config=%s " % config if config else "", timer, batch, launch_us, "lse=1 " if lse else "",
            ",".join("%.3f" % x for x in samples[: r["max_reps"]]))

    def write_lse(self, r, lse_fn):
        """With lse=PATH: the implementation's log-sum-exp to PATH as float32; False where
        it returns none (or its entry point refuses the call)."""
        if "lse" not in r or lse_fn is None:
            return False
        try:
            x = lse_fn()
        except Exception:  # a private entry point that moved: no LSE to check, not a failure
            return False
        if x is None:
            return False
        self.torch.cuda.synchronize()
        x.float().contiguous().cpu().numpy().tofile(r["lse"])
        return True

    def gate_for(self, stream):
        """The timing gate on this stream, or None where the driver's cannot load (the batches
        then run as enqueued: timer=queue)."""
        if self.gate is None:
            try:
                self.gate = Gate(stream)
            except Exception as e:  # ROCm's torch, no libcuda: timed without it
                self.gate, self.gate_why = False, "%s: %s" % (type(e).__name__, e)
                sys.stderr.write("adapter: timing without a gate: %s\n" % self.gate_why)
        return self.gate or None

    def capture(self, call, n):
        """n calls captured into one CUDA graph (warmed up on a side stream first, as
        capture wants), or None with a note on stderr where the call cannot be captured."""
        t = self.torch
        try:
            side = t.cuda.Stream()
            side.wait_stream(t.cuda.current_stream())
            with t.cuda.stream(side):
                call()
            t.cuda.current_stream().wait_stream(side)
            g = t.cuda.CUDAGraph()
            with t.cuda.graph(g):
                for _ in range(n):
                    call()
            g.replay()
            t.cuda.synchronize()
            return g
        except Exception as e:
            sys.stderr.write("adapter: timing with gated batches instead of a graph: %s: %s\n"
                             % (type(e).__name__, " ".join(str(e).split())[:200]))
            return None

    def time_calls(self, r, call):
        """fabench's timing protocol (bench/core/timing.c): warm-up, then batches of calls back to
        back, each a replayed CUDA graph of n calls (FABENCH_TIMER=graph, the default), or
        calls enqueued behind the gate (gated) or as they come (queue); with flush=BYTES that
        much device memory is overwritten before every call, outside the events, and each
        call is timed on its own, gated. Returns (samples in us per call, calls a sample, the
        host's enqueue time per call in us, timer)."""
        t = self.torch
        mode = os.environ.get("FABENCH_TIMER") or "graph"
        flush = t.empty(r["flush"] // 4, dtype=t.int32, device=self.dev) if r["flush"] else None
        runs = [0]

        def flush_l2():
            if flush is not None:
                runs[0] += 1
                flush.fill_(runs[0])
        if r["rest"] > 0:  # rest=S: the device idle before the warm-up, as fabench's own runs
            t.cuda.synchronize()
            time.sleep(r["rest"])
        t0, run_us, host = time.monotonic(), 0.0, []
        while True:  # warm-up; its last run's device time sizes the batches, its runs the host's cost
            a, b = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            flush_l2()
            a.record()
            h0 = time.perf_counter()
            call()
            host.append((time.perf_counter() - h0) * 1e6)
            b.record()
            t.cuda.synchronize()
            run_us = a.elapsed_time(b) * 1e3
            if time.monotonic() - t0 >= r["warmup"]:
                break
        each = flush is not None
        n = batch_size(run_us, r, each)
        if each and mode == "graph":
            mode = "gated"
        graph = self.capture(call, n) if mode == "graph" else None
        if mode == "graph" and graph is None:
            mode = "gated"
        gate = self.gate_for(t.cuda.current_stream().cuda_stream) if mode == "gated" else None
        if mode == "gated" and gate is None:
            mode = "queue"
        if r.get("marks") == "1":
            say("timing")
        samples, late_run = [], 0
        t0 = time.monotonic()
        while len(samples) < r["max_reps"] and (len(samples) < r["min_reps"] or time.monotonic() - t0 < r["budget"]):
            if graph is not None:
                a, b = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
                a.record()
                graph.replay()
                b.record()
                t.cuda.synchronize()
                samples.append(a.elapsed_time(b) * 1e3 / n)
                continue
            evs = [(t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)) for _ in range(n if each else 1)]
            late0 = gate.late() if gate else 0
            if gate:
                gate.hold(1.0 + 1e-3 * n)
            for i in range(n):
                flush_l2()
                if each or i == 0:
                    evs[i if each else 0][0].record()
                call()
                if each or i == n - 1:
                    evs[i if each else 0][1].record()
            if gate:
                gate.open()
            t.cuda.synchronize()
            if gate and gate.late() != late0:  # the gate gave up: host gaps in this batch
                late_run += 1
                if late_run >= 3:
                    sys.stderr.write("adapter: the timing gate gave up 3 times running; timing without it\n")
                    gate, mode = None, "queue"
                continue
            late_run = 0
            samples += [a.elapsed_time(b) * 1e3 / (1 if each else n) for a, b in evs]
        del flush, graph
        return samples, n, median(host[1:] or host), mode


def main(argv):
    device = 0
    if "--device" in argv:
        device = int(argv[argv.index("--device") + 1])
    if "--serve" not in argv:
        sys.stderr.write(__doc__)
        return 2
    try:
        import torch
    except Exception as e:  # not installed: absent, not an error
        say("absent reason=PyTorch is not importable (%s: %s)" % (type(e).__name__, e))
        return 0
    if not torch.cuda.is_available() or torch.cuda.device_count() <= device:
        say("absent reason=PyTorch %s sees no GPU %d" % (torch.__version__, device))
        return 0
    try:
        ad = Adapter(device)
        say(ad.hello())
    except Exception as e:
        say("absent reason=%s: %s" % (type(e).__name__, e))
        return 0
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        if line == "quit":
            break
        try:
            say(ad.run(parse_request(line)))
        except Exception as e:
            say("result status=error reason=%s: %s" % (type(e).__name__, str(e)[:400]))
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
