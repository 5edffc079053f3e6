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
it answers one line
    result status=ok samples=US,US,...        (the output is in PATH o)
or  result status=unsupported reason=WHY     (the vendor cannot do this shape)
or  result status=error reason=WHY
Values never hold spaces except reason, which is always last. `quit` ends it.
Tensors are raw little-endian arrays in [B, H, S, D] order, in the request's dtype.
"""
import sys
import time
import warnings

IMPLS = ("torch-flash", "torch-efficient", "torch-cudnn", "flex")


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
    return req


class Adapter:
    def __init__(self, device):
        import torch  # noqa: F401  (absent is reported by main)
        self.torch = torch
        self.dev = torch.device("cuda", device)
        torch.cuda.set_device(self.dev)
        self.flex = None

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

    def make_call(self, r, q, k, v):
        """A function computing O for request r, or raises with the vendor's reason."""
        t = self.torch
        import torch.nn.functional as F
        gqa = r["hq"] != r["hkv"]
        impl = r["impl"]
        if impl == "flex":
            from torch.nn.attention.flex_attention import create_block_mask, flex_attention
            if self.flex is None:
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
                self.flex = t.compile(flex_attention, dynamic=False)
            mask = None
            if r["causal"]:
                off = r["skv"] - r["sq"]

                def lower_right(b, h, qi, ki):
                    return ki <= qi + off
                mask = create_block_mask(lower_right, B=None, H=None, Q_LEN=r["sq"], KV_LEN=r["skv"],
                                         device=self.dev)
            return lambda: self.flex(q, k, v, block_mask=mask, enable_gqa=gqa)
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backend = {"torch-flash": SDPBackend.FLASH_ATTENTION,
                   "torch-efficient": SDPBackend.EFFICIENT_ATTENTION,
                   "torch-cudnn": SDPBackend.CUDNN_ATTENTION}[impl]
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
        return call

    def run(self, r):
        t = self.torch
        if r["impl"] not in IMPLS:
            return "result status=error reason=unknown impl %s" % r["impl"]
        if r["dtype"] not in ("fp32", "fp16", "bf16"):
            return "result status=error reason=unknown dtype %s" % r["dtype"]
        q = self.load(r["q"], (r["b"], r["hq"], r["sq"], r["d"]), r["dtype"])
        k = self.load(r["k"], (r["b"], r["hkv"], r["skv"], r["d"]), r["dtype"])
        v = self.load(r["v"], (r["b"], r["hkv"], r["skv"], r["d"]), r["dtype"])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                call = self.make_call(r, q, k, v)
                o = call()
                t.cuda.synchronize()
            except Exception as e:  # the vendor's own refusal
                why = " | ".join(str(w.message) for w in caught)
                return "result status=unsupported reason=%s: %s%s" % (
                    type(e).__name__, str(e)[:300], (" (" + why[:400] + ")") if why else "")
        self.store(r["o"], o, r["dtype"])
        # the timing protocol of fabench: warm-up, then event-timed repetitions until the
        # time budget and the minimum count are met
        t0 = time.monotonic()
        while True:
            call()
            t.cuda.synchronize()
            if time.monotonic() - t0 >= r["warmup"]:
                break
        samples = []
        t0 = time.monotonic()
        while len(samples) < r["max_reps"] and (len(samples) < r["min_reps"] or time.monotonic() - t0 < r["budget"]):
            evs = [(t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)) for _ in range(8)]
            for a, b in evs:
                a.record()
                call()
                b.record()
            t.cuda.synchronize()
            samples += [a.elapsed_time(b) * 1e3 for a, b in evs]
        del q, k, v, o
        return "result status=ok samples=" + ",".join("%.3f" % s for s in samples[: r["max_reps"]])


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
