#!/usr/bin/env python3
"""cross_gpu.py: the outputs across GPUs, from every GPU folder of a results folder
(tools/cross-gpu.sh runs it, then gnuplot).

    cross_gpu.py RESULTS_DIR OUT_DIR TMP_DIR

A GPU folder is a folder right under RESULTS_DIR with a manifest.csv and a perf.csv or a
tuning.csv (compile-only targets such as sm_90/ have neither). It writes:

OUT_DIR/transfer.csv: configuration transfer, one row per (tuned on, run on, shape class)
over every ordered pair of (GPU, backend) with a tuning table, for each class the "from"
side tuned. pct = 100 * the "to" side's own best / the time of the "from" winner there
(100: as good as tuning there). Where a value comes from, in the source column:
  measured  the "to" folder's portability.csv timed the winner beside its own (fabench
            portability: same run, same inputs)
  lookup    the winner is among the configurations the "to" side's tuner timed
            (explored.csv, same class), against the "to" side's tuning.csv winner: both
            search timings, possibly of different sessions, so a rougher number
  unknown   neither (reason says why): no pct
  own       a side's own winner on itself where its portability.csv has no row: 100
OUT_DIR/transfer_summary.csv: one row per pair: classes, how many of each source, and the
geometric mean of pct over the classes that have one.
TMP_DIR/transfer/: the data and variables of the transfer matrix as a heatmap
(plots/heatmap.gp, the portability figure's, draws it into OUT_DIR/transfer.{png,svg}).
TMP_DIR/speedup_gpus/: the data and variables of the speedup figure with one panel per GPU
(plots/speedup.gp draws it into OUT_DIR/speedup_gpus.{png,svg}): each GPU's portable kernel
against the best of its own vendors, shape by shape (prep.py's speedup figure).
It prints what gnuplot draws, as prep.py does ("<figure> <script>", or "skip <figure> WHY"),
and a readable transfer table on stderr.
"""
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prep  # noqa: E402  (the per-folder figures' code, reused)

TRANSFER_HEADER = ["from_gpu", "from_backend", "to_gpu", "to_backend", "class", "pct", "source",
                   "from_config", "from_us", "to_us", "reason"]
SUMMARY_HEADER = ["from_gpu", "from_backend", "to_gpu", "to_backend", "classes", "measured",
                  "lookup", "cannot_run", "unknown", "own", "geomean_pct"]


def read_csv(path):
    """The rows of a CSV file as dicts; [] when it does not exist."""
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def config_key(cfg):
    """A configuration as a comparable value: its KEY=VALUE pairs in any order."""
    return frozenset(p.strip() for p in cfg.split(";") if p.strip())


def gpu_folders(results):
    out = []
    for name in sorted(os.listdir(results)):
        d = os.path.join(results, name)
        if name in ("archive", "plots", "cross-gpu") or not os.path.isdir(d):
            continue
        if os.path.exists(os.path.join(d, "manifest.csv")) and (
                os.path.exists(os.path.join(d, "perf.csv")) or os.path.exists(os.path.join(d, "tuning.csv"))):
            out.append(d)
    return out


class Side:
    """One (GPU, backend) with a tuning table: its winners, its explored times, and the
    portability rows its folder measured with it as the "to" side."""

    def __init__(self, gpu, backend, folder):
        self.gpu, self.backend, self.folder = gpu, backend, folder
        self.winners = {}   # class -> tuning.csv row (a later row of a class replaces an earlier)
        self.explored = {}  # (class, config key) -> fastest ok median_us, or a status
        self.measured = {}  # (from gpu, from backend, class) -> portability row


def load_sides(folders):
    sides = {}
    for d in folders:
        for r in read_csv(os.path.join(d, "tuning.csv")):
            k = (r["gpu"], r["backend"])
            sides.setdefault(k, Side(r["gpu"], r["backend"], d)).winners[r["shape_class"]] = r
    for s in sides.values():
        for r in read_csv(os.path.join(s.folder, "explored.csv")):
            if (r.get("gpu"), r.get("backend")) != (s.gpu, s.backend):
                continue
            key = (r["shape_class"], config_key(r["config"]))
            t = prep.num(r, "median_us")
            if r.get("status") == "ok" and math.isfinite(t):
                old = s.explored.get(key)
                if not isinstance(old, float) or t < old:
                    s.explored[key] = t
            elif key not in s.explored:
                s.explored[key] = r.get("status") or "no status"
        for r in read_csv(os.path.join(s.folder, "portability.csv")):
            if (r.get("to_gpu"), r.get("to_backend")) == (s.gpu, s.backend):
                s.measured[(r["from_gpu"], r["from_backend"], r["class"])] = r
    return [sides[k] for k in sorted(sides)]


def transfer_cell(a, b, cls):
    """(pct or None, source, from_us, to_us, reason) for a's winner of cls run on b."""
    w = a.winners[cls]
    m = b.measured.get((a.gpu, a.backend, cls))
    if m is not None:
        if m.get("status") == "ok" and math.isfinite(prep.num(m, "pct")):
            return prep.num(m, "pct"), "measured", m["from_us"], m["to_us"], ""
        return None, "measured", "", m.get("to_us", ""), "%s: %s" % (m.get("status"), m.get("reason", ""))
    if a is b:
        return 100.0, "own", w["median_us"], w["median_us"], "its own winner (100 by definition)"
    own = b.winners.get(cls)
    if own is None:
        return None, "unknown", "", "", "class not tuned on the 'to' side"
    t = b.explored.get((cls, config_key(w["config"])))
    if t is None:
        return None, "unknown", "", own["median_us"], "the winner is not among the 'to' side's explored configurations"
    if not isinstance(t, float):
        return None, "lookup", "", own["median_us"], "explored there with status " + t
    best = prep.num(own, "median_us")
    return 100.0 * best / t, "lookup", "%.3f" % t, own["median_us"], ""


def write_transfer(sides, out):
    rows, summary = [], []
    for a in sides:
        for b in sides:
            counts = {"measured": 0, "lookup": 0, "cannot_run": 0, "unknown": 0, "own": 0}
            pcts = []
            for cls in sorted(a.winners):
                pct, src, from_us, to_us, why = transfer_cell(a, b, cls)
                # a winner measured or looked up with a status other than ok: it cannot run there
                counts["cannot_run" if pct is None and src != "unknown" else src] += 1
                if pct is not None:
                    pcts.append(pct)
                rows.append([a.gpu, a.backend, b.gpu, b.backend, cls,
                             "" if pct is None else "%.1f" % pct, src, a.winners[cls]["config"],
                             from_us, to_us, why])
            gm = math.exp(sum(math.log(p) for p in pcts) / len(pcts)) if pcts else None
            summary.append([a.gpu, a.backend, b.gpu, b.backend, len(a.winners)] +
                           [counts[k] for k in ("measured", "lookup", "cannot_run", "unknown", "own")] +
                           ["" if gm is None else "%.1f" % gm])
    for name, header, data in (("transfer.csv", TRANSFER_HEADER, rows),
                               ("transfer_summary.csv", SUMMARY_HEADER, summary)):
        tmp = os.path.join(out, name + ".tmp")
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(header)
            w.writerows(data)
        os.replace(tmp, os.path.join(out, name))
    return summary


def print_summary(summary, out):
    if not summary:
        sys.stderr.write("cross-gpu: no GPU folder has a tuning.csv: no transfer table\n")
        return
    sys.stderr.write("cross-gpu: tuned on -> run on: geomean %% of the own best (classes: measured/lookup/cannot run/unknown/own)"
                     " -> %s\n" % os.path.join(out, "transfer_summary.csv"))
    for s in summary:
        r = dict(zip(SUMMARY_HEADER, s))
        sys.stderr.write("  %(from_gpu)s/%(from_backend)s -> %(to_gpu)s/%(to_backend)s: %(value)s (%(classes)s: %(measured)s/"
                         "%(lookup)s/%(cannot_run)s/%(unknown)s/%(own)s)\n"
                         % dict(r, value=(r["geomean_pct"] + "%") if r["geomean_pct"] else "no value"))


def transfer_figure(summary, out, tmp):
    """The transfer matrix as plots/heatmap.gp draws portability.csv's: a row per side tuned
    on, a column per side run on, the geometric mean and where its classes' values came
    from; grey where no class has a value. None, or the reason there is no figure."""
    if not summary:
        return "no GPU folder has a tuning.csv"
    sides = []
    for s in summary:
        if tuple(s[:2]) not in sides:
            sides.append(tuple(s[:2]))
    d = os.path.join(tmp, "transfer")
    os.makedirs(d, exist_ok=True)
    vmax = 100.0
    with open(os.path.join(d, "cells.dat"), "w") as fc, open(os.path.join(d, "labels.dat"), "w") as fl, \
            open(os.path.join(d, "fails.dat"), "w") as ff:
        fc.write("# to_index from_index geomean_pct\n")
        ff.write("# to_index from_index (no class with a value)\n")
        for s in summary:
            r = dict(zip(SUMMARY_HEADER, s))
            i = sides.index((r["from_gpu"], r["from_backend"]))
            j = sides.index((r["to_gpu"], r["to_backend"]))
            parts = ["%s %s" % (r[k], w) for k, w in (("measured", "measured"), ("lookup", "looked up"),
                                                        ("cannot_run", "cannot run"), ("unknown", "unknown"),
                                                        ("own", "own winners")) if r[k] != 0]
            if r["geomean_pct"]:
                g = float(r["geomean_pct"])
                vmax = max(vmax, g)
                fc.write("%d %d %.3f\n" % (j, i, g))
                lab = "%s%%\\n%s" % (r["geomean_pct"], "\\n".join(parts))
            else:
                ff.write("%d %d\n" % (j, i))
                lab = "no value\\n" + "\\n".join(parts)
            fl.write('%d %d "%s"\n' % (j, i, lab))
    v = prep.Vars()
    v.set("out_png", os.path.join(out, "transfer.png"))
    v.set("out_svg", os.path.join(out, "transfer.svg"))
    v.set("datadir", d)
    v.set("fig_title", "{/:Bold Configuration transfer across GPUs}")
    v.set("fig_sub", "cell: the winners tuned on the row's GPU/runtime, run on the column's, as % of the column's"
          " own tuned best (geometric mean over the classes with a value)\nmeasured: fabench portability, both in one"
          " run;  looked up: among the column's tuner timings (explored.csv);  cannot run: either said so;"
          "  unknown: neither (transfer.csv)")
    v.set("nfrom", len(sides))
    v.set("nto", len(sides))
    v.set("cbmax", math.ceil(vmax / 10.0) * 10)
    labels = [prep.gp_enh("%s / %s" % x) for x in sides]
    v.array("F_label", labels)
    v.array("T_label", labels)
    v.write(os.path.join(d, "vars.gp"))
    return None


def speedup(folders, out, tmp):
    """The speedup figure with a panel per GPU, or the reason there is none."""
    all_rows, rows, dates = [], [], set()
    for d in folders:
        p = os.path.join(d, "perf.csv")
        if not os.path.exists(p):
            continue
        loaded = prep.load_perf(p)
        if loaded is None:
            raise ValueError(p)
        all_rows += loaded[0]
        rows += loaded[1]
        dates.add(prep.manifest_date(os.path.join(d, "manifest.csv")))
    if not rows:
        return "no perf.csv with ok rows"
    date = min(dates) + ("" if len(dates) == 1 else ".." + max(dates))
    return prep.speedup_figure(rows, all_rows, date, out, tmp, panel_of=lambda r: r["gpu"],
                               name="speedup_gpus")


def main(argv):
    if len(argv) != 4:
        sys.stderr.write("usage: cross_gpu.py RESULTS_DIR OUT_DIR TMP_DIR\n")
        return 2
    results, out, tmp = argv[1:]
    folders = gpu_folders(results)
    if not folders:
        sys.stderr.write("cross-gpu: %s: no GPU folder (manifest.csv with perf.csv or tuning.csv)\n" % results)
        return 2
    os.makedirs(out, exist_ok=True)
    try:
        summary = write_transfer(load_sides(folders), out)
        print_summary(summary, out)
        figures = (("transfer", transfer_figure(summary, out, tmp), "heatmap.gp"),
                   ("speedup_gpus", speedup(folders, out, tmp), "speedup.gp"))
    except (KeyError, ValueError) as e:
        sys.stderr.write("cross-gpu: a results file lacks a column or value: %s\n" % e)
        return 2
    for fig, why, script in figures:
        print("skip %s %s" % (fig, why) if why else "%s %s" % (fig, script))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
