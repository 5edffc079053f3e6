#!/usr/bin/env python3
"""crosscheck.py: fabench's times checked by paths that do not go through its timer.

    crosscheck.py graph SHAPES.csv OUT.csv [--impl LIST] [--device N]
        The PyTorch implementations on every shape, timed by CUDA-graph replay: the call
        (built by the adapter, so the same call fabench times) captured n times in one
        graph, the graph replayed between two events, time per call = elapsed / n; the
        median of 15 replays. No gate, no Python between calls: the host cannot enter.
    crosscheck.py ncu NCU.csv... --out OUT.csv
        Per (shape, impl) kernel times and SM cycles from Nsight Compute's CSV
        (gpu__time_duration.sum, sm__cycles_elapsed.max; --clock-control none, --cache-control
        none): the median of each kernel name's launches, summed over the kernel names of one
        run (a split's forward and combine). Each NCU.csv is named IMPL@SHAPE.ncu.csv by
        tools/crosscheck.sh.
    crosscheck.py report PERF.csv --check OUT.csv [--check ...] --out CROSSCHECK.csv
        Pairs every ok perf.csv row with the second path's time of the same (impl, shape):
        ratio = perf median / check median (in SM cycles where both clocks are known: a
        kernel profiled alone runs at the clock of an idle board), and whether they agree
        (within 5%, or 1 us for short kernels). Prints a summary per implementation; exit 1 when fewer than
        --need shapes agree for any implementation that has a check.
"""
import argparse
import csv
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "vendors", "torch"))

TORCH_IMPLS = ("torch-flash", "torch-efficient", "torch-cudnn", "flex", "flex-autotune")
REL_TOL, ABS_TOL_US = 0.05, 1.0


def read_shapes(path):
    """Shape rows of a fabench shapes file as dicts of the adapter's request keys."""
    import adapter  # noqa: F401  (its helpers build the calls)
    out = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            r = {k: int(row[k]) for k in ("batch", "hq", "hkv", "sq", "skv", "d", "causal")}
            r = {"name": row["name"], "b": r["batch"], "hq": r["hq"], "hkv": r["hkv"], "sq": r["sq"],
                 "skv": r["skv"], "d": r["d"], "causal": r["causal"], "dtype": row.get("dtype") or "bf16",
                 "page": int(row.get("page") or 0), "lens": row.get("lens") or "", "qlens": row.get("qlens") or ""}
            r["cu_q"], r["cu_kv"] = cu_seqlens(r)
            out.append(r)
    return out


def frac_len(frac, most):
    """bench/core/util.c's frac_len: max(1, round(frac * most)), at most most."""
    return min(most, max(1, int(frac * most + 0.5)))


def cu_seqlens(r):
    """bench/core/shapes.c's ragged lengths: lens (keys, and queries when qlens is empty) and
    qlens as fractions of sq and skv, repeated over the batch; None for a dense row."""
    if not r["lens"] and not r["qlens"]:
        return None, None
    lens = [float(x) for x in r["lens"].split(";")] if r["lens"] else [1.0]
    qlens = [float(x) for x in r["qlens"].split(";")] if r["qlens"] else lens
    cq, ck = [0], [0]
    for b in range(r["b"]):
        cq.append(cq[-1] + frac_len(qlens[b % len(qlens)], r["sq"]))
        ck.append(ck[-1] + frac_len(lens[b % len(lens)], r["skv"]))
    return cq, ck


def graph_time(t, call, reps=15, budget_s=0.35):
    """Median time per call in us: the call captured n times in one CUDA graph (n so that a
    replay lasts about 2 ms), each replay between two events, replayed for as long as
    fabench's warm-up and timing last (so that the board's clock settles as it did there)."""
    for _ in range(3):
        call()
    t.cuda.synchronize()
    a, b = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
    a.record()
    call()
    b.record()
    t.cuda.synchronize()
    n = max(1, min(200, int(2000.0 / max(a.elapsed_time(b) * 1e3, 1.0))))
    s = t.cuda.Stream()
    s.wait_stream(t.cuda.current_stream())
    with t.cuda.stream(s):  # capture from a side stream, after a warm-up on it
        for _ in range(2):
            call()
    t.cuda.current_stream().wait_stream(s)
    g = t.cuda.CUDAGraph()
    with t.cuda.graph(g):
        for _ in range(n):
            call()
    g.replay()
    t.cuda.synchronize()
    times = []
    import time
    t0 = time.monotonic()
    while len(times) < reps or time.monotonic() - t0 < budget_s:
        a.record()
        g.replay()
        b.record()
        t.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / n)
    return statistics.median(times), n


def cmd_graph(args):
    import torch as t
    import adapter
    ad = adapter.Adapter(args.device)
    impls = args.impl.split(",") if args.impl else list(TORCH_IMPLS)
    rows = []
    for r in read_shapes(args.shapes):
        dt = {"bf16": t.bfloat16, "fp16": t.float16, "fp32": t.float32}[r["dtype"]]
        if r["cu_q"] is not None:
            qs, ks = (r["hq"], r["cu_q"][-1], r["d"]), (r["hkv"], r["cu_kv"][-1], r["d"])
        else:
            qs, ks = (r["b"], r["hq"], r["sq"], r["d"]), (r["b"], r["hkv"], r["skv"], r["d"])
        g = t.Generator(device=ad.dev).manual_seed(1)
        q, k, v = (t.randn(s, generator=g, device=ad.dev, dtype=t.float32).to(dt) for s in (qs, ks, ks))
        for impl in impls:
            req = dict(r, impl=impl)
            status, us, n, why = "ok", "", "", ""
            try:
                call, _, _, _ = ad.make_call(req, q, k, v)
                med, n = graph_time(t, call)
                us = "%.3f" % med
            except adapter.Unsupported as e:
                status, why = "unsupported", str(e)
            except Exception as e:  # a call that cannot be captured: said, not timed
                status, why = "error", "%s: %s" % (type(e).__name__, " ".join(str(e).split())[:200])
            rows.append({"impl": impl, "name": r["name"], "method": "cuda-graph", "median_us": us, "cycles": "",
                         "calls_per_replay": n, "status": status, "reason": why})
            print("%-16s %-50s %s %s" % (impl, r["name"], us or status, why), file=sys.stderr)
            t.cuda.empty_cache()
    write_rows(args.out, rows)
    return 0


def ncu_times(path):
    """Workload name -> (durations in us, SM cycles) of its launches, from one ncu --csv file,
    in the order of their last launch (with --graph-profiling graph a replayed graph is one
    workload; the runs outside graphs, verification and warm-up, are kernels of their own)."""
    scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6}
    out = {}
    with open(path, newline="") as f:
        lines = [ln for ln in f if ln.startswith('"')]  # ncu prints its own notes before the table
    for row in csv.DictReader(lines):
        name, metric = row["Kernel Name"], row.get("Metric Name")
        if name.startswith("fb_gate") or metric not in ("gpu__time_duration.sum", "sm__cycles_elapsed.max"):
            continue
        value = float(row["Metric Value"].replace(",", ""))
        us, cycles = out.setdefault(name, ([], []))
        if metric == "gpu__time_duration.sum":
            us.append(value * scale.get(row.get("Metric Unit", "nsecond"), 1e-3))
        else:
            cycles.append(value)
    return out


def cmd_ncu(args):
    rows = []
    for path in args.files:
        base = os.path.basename(path)
        if not base.endswith(".ncu.csv") or "@" not in base:
            print("crosscheck: %s is not named IMPL@SHAPE.ncu.csv" % path, file=sys.stderr)
            return 2
        impl, name = base[:-len(".ncu.csv")].split("@", 1)
        kernels = ncu_times(path)
        graphs = [k for k in kernels if not kernels[k][0] or "graph" in k.lower()]
        if args.graphs:  # the timed graphs are the workloads launched last
            last = list(kernels)[-1] if kernels else None
            kernels = {last: kernels[last]} if last else {}
        if not kernels:
            rows.append({"impl": impl, "name": name, "method": "ncu", "median_us": "", "cycles": "",
                         "calls_per_replay": "", "status": "error", "reason": "no kernel times in %s" % base})
            continue
        # the last half of each kernel's launches: the first ones are verification and warm-up
        def last_half(v):
            return statistics.median(v[len(v) // 2:])
        total = sum(last_half(us) for us, _ in kernels.values())
        cycles = sum(last_half(c) for _, c in kernels.values()) if all(c for _, c in kernels.values()) else None
        rows.append({"impl": impl, "name": name, "method": "ncu-graph" if args.graphs else "ncu",
                     "median_us": "%.3f" % total, "cycles": "%.0f" % cycles if cycles else "", "calls_per_replay": "",
                     "status": "ok", "reason": ";".join(sorted(k[:60] for k in kernels)) + (
                         " (graph-like names: %s)" % ",".join(g[:30] for g in graphs) if graphs else "")})
    write_rows(args.out, rows)
    return 0


def write_rows(path, rows):
    cols = ["impl", "name", "method", "median_us", "cycles", "calls_per_replay", "status", "reason"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow(r)


def agree(a, b, floor=ABS_TOL_US):
    """Within REL_TOL of b, or within floor (1 us, in the measure's own unit) for short kernels."""
    return abs(a - b) <= max(REL_TOL * b, floor)


def cmd_report(args):
    perf = {}
    for path in args.perf:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["status"] == "ok" and r["median_us"]:
                    perf[(r["impl"], r["name"])] = r
    out, per_impl = [], {}
    for path in args.check:
        with open(path, newline="") as f:
            for c in csv.DictReader(f):
                p = perf.get((c["impl"], c["name"]))
                if c["status"] != "ok" or not p:
                    continue
                a, b = float(p["median_us"]), float(c["median_us"])
                if c["method"] == "ncu-graph":  # a whole replayed graph: batch_runs runs of it
                    runs = int(p.get("batch_runs") or 0)
                    if p.get("timer") != "graph" or runs < 1:
                        continue
                    b /= runs
                    c = dict(c, cycles="%.0f" % (float(c["cycles"]) / runs) if c.get("cycles") else "")
                # a kernel profiled alone runs at the clock an idle board gives it; fabench's
                # samples at the clock its sustained runs get (NVML's, sm_mhz): where both are
                # known, the comparison is in SM cycles
                mhz = float(p["sm_mhz"]) if p.get("sm_mhz") else None
                cyc = float(c["cycles"]) if c.get("cycles") else None
                if mhz and cyc:
                    ok, ratio, basis = agree(a * mhz, cyc, ABS_TOL_US * mhz), a * mhz / cyc, "cycles"
                else:
                    ok, ratio, basis = agree(a, b), a / b, "time"
                per_impl.setdefault(c["impl"], []).append(ok)
                out.append({"impl": c["impl"], "name": c["name"], "method": c["method"], "fabench_us": "%.3f" % a,
                            "check_us": "%.3f" % b, "time_ratio": "%.4f" % (a / b), "basis": basis,
                            "ratio": "%.4f" % ratio, "agree": int(ok), "sm_mhz": p.get("sm_mhz", ""),
                            "check_cycles": c.get("cycles", ""), "timer": p.get("timer", ""),
                            "launch_us": p.get("launch_us", ""), "run_id": p.get("run_id", "")})
    cols = ["impl", "name", "method", "fabench_us", "check_us", "time_ratio", "basis", "ratio", "agree", "sm_mhz",
            "check_cycles", "timer", "launch_us", "run_id"]
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in out:
            w.writerow(r)
    short = []
    for impl in sorted(per_impl):
        v = per_impl[impl]
        ratios = [float(r["ratio"]) for r in out if r["impl"] == impl]
        print("%-16s %2d of %2d shapes agree (within %d%% or %.0f us); fabench/check median %.3f, range %.3f-%.3f"
              % (impl, sum(v), len(v), REL_TOL * 100, ABS_TOL_US, statistics.median(ratios), min(ratios), max(ratios)))
        if sum(v) < args.need:
            short.append(impl)
    if short:
        print("crosscheck: fewer than %d agreeing shapes for %s" % (args.need, ", ".join(short)))
        return 1
    return 0


def cmd_pin(args):
    """The environment that makes fabench time a perf.csv row's work again as the row did:
    its batch of runs (FABENCH_TIMING_BATCH; under a profiler the warm-up would size it to
    one) and, for cuDNN, the engine config the row chose, alone (FABENCH_CUDNN_STATS and
    FABENCH_CUDNN_ONLY from its config column). Nothing when the row is missing or not ok."""
    with open(args.perf, newline="") as f:
        for r in csv.DictReader(f):
            if r["impl"] != args.impl or r["name"] != args.name or r["status"] != "ok" or not r.get("batch_runs"):
                continue
            env = ["FABENCH_TIMING_BATCH=%s" % r["batch_runs"]]
            if args.impl == "cudnn":
                kv = dict(x.split("=", 1) for x in r["config"].split(";") if "=" in x)
                if "stats" not in kv or "cfg_index" not in kv:
                    continue
                env += ["FABENCH_CUDNN_STATS=%s" % kv["stats"], "FABENCH_CUDNN_ONLY=%s" % kv["cfg_index"]]
            print(" ".join(env))
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("graph")
    g.add_argument("shapes")
    g.add_argument("out")
    g.add_argument("--impl", default="")
    g.add_argument("--device", type=int, default=0)
    n = sub.add_parser("ncu")
    n.add_argument("files", nargs="+")
    n.add_argument("--graphs", action="store_true", help="ncu ran with --graph-profiling graph")
    n.add_argument("--out", required=True)
    pn = sub.add_parser("pin")
    pn.add_argument("perf")
    pn.add_argument("impl")
    pn.add_argument("name")
    r = sub.add_parser("report")
    r.add_argument("perf", nargs="+")
    r.add_argument("--check", action="append", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--need", type=int, default=20)
    args = ap.parse_args(argv)
    return {"graph": cmd_graph, "ncu": cmd_ncu, "report": cmd_report, "pin": cmd_pin}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
