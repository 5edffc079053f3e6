#!/usr/bin/env python3
"""gen-shapes.py: random, realistic attention shapes as a fabench shapes CSV.

    tools/gen-shapes.py --seed N --count K [--out FILE] [--kinds LIST] [--tiny]

Shapes no suite names, to see how `fabench run --tuned` does away from the tuned classes
(fallback.csv's rules, the regime defaults): head counts and head dims of real models
(32/8, 64/8, 16/16, 32/32, 28/4, 40/8, 48/6, MQA with one KV head, ...; d in 64, 80, 96,
128, 192, 256 and 32), and some heads paired with another model's head dim; decode (one
query, or a few: speculative decoding) over caches of odd lengths, prefill, chunked prefill
(Sq < Skv), cross attention (Sq > Skv, not causal), a 1x1 problem; causal and not; batch
sizes 1..64. Lengths are drawn log-uniformly and not rounded. `--kinds` picks the kinds
(default: decode,prefill,chunked,cross,tiny; paged, ragged and mixed add a paged KV cache, a
ragged batch and a mixed decode/prefill batch). The sizes are bounded so that a shape fits an
80 GiB GPU and runs in well under a second (--max-work, --max-kv-gib); --tiny scales every
shape down for the CPU (PoCL) at the cost of realism (a check of the file's and the
fallback's paths, not a measurement).

The same seed gives the same file. Seeds are kept apart by use: DEV_SEEDS are the ones used
while developing and testing the fallback (tests/data/gen-shapes-dev.csv is seed 1); a
measurement that is reported takes a seed of REPORT_SEEDS, never one looked at before, so
that the fallback was not shaped by the shapes it is judged on; once a reported seed's shapes
have been looked at it is spent (SPENT_REPORT_SEEDS) and the next report takes the next
seed. The script says on stderr which list a seed belongs to.
"""
import argparse
import csv
import math
import random
import sys

DEV_SEEDS = [1, 2, 3, 7, 11]
REPORT_SEEDS = [20270101, 20270102, 20270103, 20270104, 20270105]
# reported once and looked at since (20270101: stop 51's generalize run, whose weak shapes
# were read while the fallback was worked on): a new report takes the next unspent seed
SPENT_REPORT_SEEDS = [20270101]

# (name, query heads, KV heads, head dim) of real models
MODELS = [
    ("llama3-8b", 32, 8, 128), ("llama3-70b", 64, 8, 128), ("llama3.2-1b", 32, 8, 64),
    ("llama3.2-3b", 24, 8, 128), ("mistral-7b", 32, 8, 128), ("qwen2-7b", 28, 4, 128),
    ("qwen2-1.5b", 12, 2, 128), ("qwen2.5-32b", 40, 8, 128), ("gemma-7b", 16, 16, 256),
    ("gemma2-2b", 8, 4, 256), ("phi-2", 32, 32, 80), ("phi-3-mini", 32, 32, 96),
    ("gpt-j", 16, 16, 256), ("llama2-13b", 40, 40, 128), ("olmo-7b", 32, 32, 128),
    ("starcoder", 48, 1, 128), ("falcon-7b", 71, 1, 64), ("granite-mqa", 32, 1, 128),
    ("yi-9b", 32, 4, 128), ("hyp-48-6", 48, 6, 128), ("deepseek-lite", 16, 16, 192),
    ("small-d32", 16, 4, 32), ("bert-large", 16, 16, 64),
]
HEAD_DIMS = [32, 64, 80, 96, 128, 192, 256]
KINDS = ["decode", "prefill", "chunked", "cross", "tiny", "paged", "ragged", "mixed"]
DEFAULT_KINDS = "decode,prefill,chunked,cross,tiny"


def log_uniform(rng, lo, hi):
    """An integer drawn log-uniformly from [lo, hi]."""
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def heads(rng):
    """(model name, hq, hkv, d): a model's own, or its heads with another model's head dim."""
    name, hq, hkv, d = rng.choice(MODELS)
    if rng.random() < 0.25:
        d = rng.choice(HEAD_DIMS)
        name += "-d%d" % d
    return name, hq, hkv, d


def bounded(b, hq, hkv, sq, skv, d, args):
    """Work (B*Hq*Sq*Skv*d) and the K, V bytes within the bounds."""
    work = b * hq * sq * skv * d
    kv_bytes = 2 * 2 * b * hkv * skv * d
    return work <= args.max_work and kv_bytes <= args.max_kv_gib * 2**30


def draw(rng, kind, args):
    """One shape of the kind: a dict of the CSV's columns."""
    name, hq, hkv, d = heads(rng)
    causal, lens, qlens, page = 1, "", "", ""
    if kind == "decode":
        sq = 1 if rng.random() < 0.8 else rng.choice([2, 3, 4, 5, 8])
        skv = log_uniform(rng, 200, 32768)
        b = log_uniform(rng, 1, 64)
        causal = rng.choice([0, 1])
    elif kind == "prefill":
        sq = skv = log_uniform(rng, 100, 16384)
        b = log_uniform(rng, 1, 16)
        causal = 1 if rng.random() < 0.75 else 0
    elif kind == "chunked":
        sq = log_uniform(rng, 64, 2048)
        skv = sq + log_uniform(rng, 100, 16384)
        b = log_uniform(rng, 1, 16)
    elif kind == "cross":
        sq = log_uniform(rng, 256, 8192)
        skv = max(1, int(sq * rng.uniform(0.05, 0.8)))
        b = log_uniform(rng, 1, 16)
        causal = 0
    elif kind == "tiny":
        b, sq, skv = rng.choice([(1, 1, 1), (1, 1, 7), (2, 3, 3), (1, 17, 17), (3, 5, 130)])
        causal = rng.choice([0, 1])
    elif kind == "paged":
        sq = 1 if rng.random() < 0.7 else log_uniform(rng, 64, 2048)
        skv = log_uniform(rng, 300, 16384) + (sq if sq > 1 else 0)
        b = log_uniform(rng, 1, 64)
        page = rng.choice([16, 32, 64, 128])
    elif kind == "ragged":
        sq = skv = log_uniform(rng, 256, 8192)
        b = log_uniform(rng, 2, 32)
        lens = ";".join("%.3g" % rng.uniform(0.05, 1.0) for _ in range(rng.randint(2, 6))) + ";1"
    else:  # mixed: a few prefilling (or chunked) sequences beside decoding ones
        skv = log_uniform(rng, 512, 16384)
        sq = max(64, int(skv * rng.uniform(0.1, 0.5)))
        b = log_uniform(rng, 4, 64)
        npre = rng.randint(1, 3)
        lens = "1"
        qlens = ";".join(["1"] * npre + ["0.0001"] * rng.randint(npre, 3 * npre + 2))
    if args.tiny:  # the CPU: small lengths, batch and heads (hq a multiple of hkv kept)
        scale = max(1, max(sq, skv) // 192)
        sq, skv = max(1, sq // scale), max(1, skv // scale)
        b = min(b, 2)
        g = hq // hkv
        hkv = min(hkv, 2)
        hq = hkv * min(g, 4)
        if page:
            page = 16
    return {"name": "%s-%s" % (kind, name), "batch": b, "hq": hq, "hkv": hkv, "sq": sq, "skv": skv, "d": d,
            "causal": causal, "dtype": "bf16" if rng.random() < 0.8 else "fp16", "lens": lens, "qlens": qlens,
            "page": page}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, required=True, help="the random seed (see DEV_SEEDS and REPORT_SEEDS)")
    ap.add_argument("--count", type=int, required=True, help="how many shapes")
    ap.add_argument("--out", help="the shapes CSV (default: stdout)")
    ap.add_argument("--kinds", default=DEFAULT_KINDS, help="comma-separated, of %s (default %s)" % (",".join(KINDS), DEFAULT_KINDS))
    ap.add_argument("--tiny", action="store_true", help="scale every shape down for the CPU (PoCL)")
    ap.add_argument("--max-work", type=float, default=2.0**40, help="bound on B*Hq*Sq*Skv*d (default 2^40)")
    ap.add_argument("--max-kv-gib", type=float, default=8.0, help="bound on K and V together, GiB (default 8)")
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds or args.count < 1:
        sys.exit("gen-shapes.py: %s" % ("unknown kind %s (known: %s)" % (", ".join(bad), ", ".join(KINDS)) if bad
                                        else "--count must be at least 1" if args.count < 1 else "no kinds"))
    which = "a development seed" if args.seed in DEV_SEEDS else \
        "a spent seed for reported measurements (reported and looked at: report with the next one)" \
        if args.seed in SPENT_REPORT_SEEDS else \
        "a seed for reported measurements" if args.seed in REPORT_SEEDS else "a seed on neither list"
    print("gen-shapes.py: seed %d is %s" % (args.seed, which), file=sys.stderr)
    rng = random.Random(args.seed)
    rows = []
    while len(rows) < args.count:
        kind = kinds[len(rows) % len(kinds)] if len(rows) < len(kinds) else rng.choice(kinds)
        r = draw(rng, kind, args)
        if not args.tiny and not bounded(r["batch"], r["hq"], r["hkv"], r["sq"], r["skv"], r["d"], args):
            continue
        r["name"] = ("g%d-%03d-%s" % (args.seed, len(rows), r["name"]))[:63]  # shape names hold 63 characters
        rows.append(r)
    cols = ["name", "batch", "hq", "hkv", "sq", "skv", "d", "causal", "dtype", "lens", "qlens", "page"]
    out = open(args.out, "w", newline="") if args.out else sys.stdout
    w = csv.DictWriter(out, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    if args.out:
        out.close()


if __name__ == "__main__":
    main()
