#!/usr/bin/env python3
"""metrics.py: data for the figures beyond performance, from one results folder:

    metrics.py RESULTS_DIR OUT_PLOTS_DIR TMP_DIR     the folder's figures:
        configs      configurations explored (explored.csv, by status) against the vendors'
                     (vendor_configs.csv): bars, log scale                 -> bars_log.gp
        diversity    distributions over every compiled configuration (compiled.csv, and
                     explored.csv as the runtime reported it): instructions, distinct
                     instructions, registers, shared memory, binary size   -> boxes.gp
        portability  best configuration of GPU/runtime A run on B, % of B's own best
                     (portability.csv): heatmap                             -> heatmap.gp
        convergence  best-so-far against configurations timed, per strategy
                     (explored.csv)                                          -> convergence.gp
    metrics.py --loc LOC_CSV OUT_PLOTS_DIR TMP_DIR      the code-size figure (loc) -> bars_log.gp

Like prep.py it writes TMP_DIR/<figure>/vars.gp and .dat files and prints, per figure,
"<figure> <script>" when it has data or "skip <figure> <why>" when it has none.
Python only prepares data; gnuplot draws.
"""
import csv
import math
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prep import COLORS, Vars, gp_enh, log_ticks, fmt_tick  # noqa: E402

STATUS_ORDER = ["ok", "wrong_result", "compile_error", "resource_limit", "launch_error",
                "timeout", "unsupported", "absent"]
STATUS_COLORS = {"ok": "#009E73", "wrong_result": "#D55E00", "compile_error": "#CC79A7",
                 "resource_limit": "#E69F00", "launch_error": "#8C564B", "timeout": "#7F7F7F",
                 "unsupported": "#BCBD22", "absent": "#17BECF"}
OURS = "#0072B2"
VENDOR = "#555555"


def short(s, n):
    return s if len(s) <= n else s[:n - 3] + "..."


def read_csv(path):
    if not os.path.exists(path):
        return None
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def fnum(v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def manifest(d):
    m = {}
    rows = None
    p = os.path.join(d, "manifest.csv")
    if os.path.exists(p):
        with open(p, newline="") as f:
            rows = list(csv.reader(f))
    for r in (rows or [])[1:]:
        if len(r) >= 2:
            m[r[0]] = r[1]
    return m


def class_dtype(cls):
    return cls.split("-", 1)[0] if cls else ""


def title_tail(gpu, dtypes, date):
    dt = "/".join(sorted(d for d in dtypes if d)) or "any dtype"
    return "%s, %s, %s" % (gpu or "unknown GPU", dt, date or "undated")


def folder_facts(d):
    m = manifest(d)
    date = (m.get("date") or "")[:10] or "undated"
    gpu = m.get("gpu") or os.path.basename(os.path.normpath(d))
    return gpu, date, m


def bar_figure(fig, bars, title, sub, ylabel, outdir, tmp, xlabel=""):
    """bars: list of (label line 1, label line 2, value, colour, group name for the legend)"""
    d = os.path.join(tmp, fig)
    os.makedirs(d, exist_ok=True)
    vals = [b[2] for b in bars if b[2] and b[2] > 0]
    lo, hi = min(vals), max(vals)
    ylo, yhi = lo / 3.0, hi * 4.0
    with open(os.path.join(d, "bars.dat"), "w") as f:
        f.write("# x value color label\n")
        for i, (l1, l2, v, c, _) in enumerate(bars):
            if v and v > 0:
                f.write('%d %.6g %d "%s"\n' % (i, v, int(c[1:], 16), "%.0f" % v if v >= 10 else "%.3g" % v))
    with open(os.path.join(d, "tics.dat"), "w") as f:
        for i, (l1, l2, v, c, _) in enumerate(bars):
            f.write('%d "%s" "%s"\n' % (i, l1.replace('"', "'"), l2.replace('"', "'")))
    groups = []
    for b in bars:
        if (b[4], b[3]) not in groups:
            groups.append((b[4], b[3]))
    v = Vars()
    v.set("out_png", os.path.join(outdir, fig + ".png"))
    v.set("out_svg", os.path.join(outdir, fig + ".svg"))
    v.set("datadir", d)
    v.set("fig_title", title)
    v.set("fig_sub", sub)
    v.set("ylabel", ylabel)
    v.set("xlabel", xlabel)
    v.set("nbars", len(bars))
    v.set("fig_w", max(1400, 190 * len(bars) + 400))  # room for each bar's two-line label
    v.set("ymin", ylo)
    v.set("ymax", yhi)
    ticks = log_ticks(ylo, yhi, 10)
    v.set("ytics_cmd", "set ytics (" + ", ".join('"%s" %r' % (fmt_tick(t), t) for t in ticks) + ")")
    v.array("G_title", [gp_enh(g[0]) for g in groups])
    v.array("G_color", [g[1] for g in groups])
    v.set("ngroups", len(groups))
    v.write(os.path.join(d, "vars.gp"))


def fig_configs(d, outdir, tmp):
    explored = read_csv(os.path.join(d, "explored.csv")) or []
    vendors = read_csv(os.path.join(d, "vendor_configs.csv")) or []
    tuning = read_csv(os.path.join(d, "tuning.csv")) or []
    if not explored and not vendors:
        return "no explored.csv (fabench tune) nor vendor_configs.csv"
    gpu, date, _ = folder_facts(d)
    bars = []
    backends = []
    for r in explored:
        if r.get("backend") not in backends:
            backends.append(r.get("backend"))
    for be in backends:
        rows = [r for r in explored if r.get("backend") == be]
        classes = len({r.get("shape_class") for r in rows})
        bars.append((gp_enh("portable / %s" % be), "all explored (%d class%s)" % (classes, "" if classes == 1 else "es"),
                     float(len(rows)), OURS, "ours: every configuration tried"))
        space = sum(fnum(t.get("configs_in_space")) or 0 for t in tuning if t.get("backend") == be)
        if space > 0:
            bars.append((gp_enh("portable / %s" % be), "in the space", space, "#56B4E9",
                         "ours: the space of those classes"))
        for st in STATUS_ORDER + sorted({r.get("status") for r in rows} - set(STATUS_ORDER)):
            n = sum(1 for r in rows if r.get("status") == st)
            if n:
                bars.append((gp_enh("portable / %s" % be), gp_enh(st), float(n), STATUS_COLORS.get(st, "#999999"),
                             "ours: %s" % st))
    # Vendors: rows per shape (a library's own selection, e.g. cuDNN's heuristics) become one
    # bar per impl, the largest count over its shapes; rows counting shipped kernels
    # (scope kernels:...) one bar each. A count of 0 (nothing precompiled: built at run
    # time) cannot stand on a log axis and is named in the label instead.
    per_shape = {}
    for r in vendors:
        n = fnum(r.get("configs"))
        impl, scope = r.get("impl", "?"), r.get("scope", "")
        if n is None:
            continue
        if scope.startswith("kernels"):
            # (no underscore: the tic labels reach gnuplot unescaped) 
            label2 = "precompiled kernels (%s)" % scope.split(":", 1)[-1].replace("_", "-") if n > 0 else "0 precompiled kernels"
            bars.append((gp_enh(impl), gp_enh(label2), n if n > 0 else None, VENDOR, "vendors (vendor_configs.csv)"))
        else:
            per_shape.setdefault(impl, []).append(n)
    for impl, ns in per_shape.items():
        bars.append((gp_enh(impl), gp_enh("own choices per shape (max of %d)" % len(ns)), max(ns), VENDOR,
                     "vendors (vendor_configs.csv)"))
    if not bars:
        return "no rows"
    dtypes = {class_dtype(r.get("shape_class")) for r in explored}
    sub = ("ours: rows of explored.csv (one per configuration tuned, summed over shape classes), "
           "by status" + ("; vendors: vendor_configs.csv" if vendors else "; no vendor_configs.csv here"))
    bar_figure("configs", bars, "{/:Bold Configurations explored}  %s" % gp_enh(title_tail(gpu, dtypes, date)),
               gp_enh(sub), "configurations (log scale)", outdir, tmp)
    return None


def fig_diversity(d, outdir, tmp):
    compiled = read_csv(os.path.join(d, "compiled.csv")) or []
    explored = read_csv(os.path.join(d, "explored.csv")) or []
    gpu, date, _ = folder_facts(d)
    groups = {}  # (label) -> {metric: [values]}
    order = []

    def add(label, metric, v):
        if v is None or v < 0:
            return
        if label not in groups:
            groups[label] = {}
            order.append(label)
        groups[label].setdefault(metric, []).append(v)

    dtypes = set()
    for r in compiled:
        if r.get("status") != "ok":
            continue
        lab = "%s / %s (compiled)" % (r.get("gpu"), r.get("backend"))
        dtypes.add(class_dtype(r.get("shape_class")))
        add(lab, "ptx", fnum(r.get("ptx_instructions")))
        add(lab, "sass", fnum(r.get("sass_instructions")))
        add(lab, "distinct", fnum(r.get("distinct_instructions")))
        add(lab, "registers", fnum(r.get("registers")))
        sh = fnum(r.get("shared_bytes"))
        add(lab, "shared", sh / 1024 if sh is not None and sh >= 0 else None)
        b = fnum(r.get("binary_bytes"))
        add(lab, "binary", b / 1024 if b is not None and b > 0 else None)
    for r in explored:
        b = fnum(r.get("binary_bytes"))
        if r.get("status") == "compile_error" or not (b and b > 0):
            continue
        lab = "%s / %s (tuned)" % (r.get("gpu"), r.get("backend"))
        dtypes.add(class_dtype(r.get("shape_class")))
        add(lab, "registers", fnum(r.get("registers")))
        sh = fnum(r.get("shared_bytes"))
        add(lab, "shared", sh / 1024 if sh is not None and sh >= 0 else None)
        add(lab, "binary", b / 1024)
    metrics = [("ptx", "PTX instructions"), ("sass", "SASS instructions"),
               ("distinct", "distinct PTX instructions"), ("registers", "registers per thread"),
               ("shared", "shared memory (KiB)"), ("binary", "binary size (KiB)")]
    metrics = [m for m in metrics if any(m[0] in g for g in groups.values())]
    if not metrics:
        return "no compiled.csv (fabench compile) nor explored.csv with code metrics"
    fd = os.path.join(tmp, "diversity")
    os.makedirs(fd, exist_ok=True)
    rnd = random.Random(7)
    v = Vars()
    ngroups = len(order)
    counts = [max(len(x) for x in groups[lab].values()) for lab in order]
    e_file, e_group, p_first, p_last = [], [], [], []
    for mi, (m, _) in enumerate(metrics, 1):
        p_first.append(len(e_file) + 1)
        for gi, lab in enumerate(order, 1):
            vals = groups[lab].get(m, [])
            if not vals:
                continue
            name = os.path.join(fd, "m%d_g%d.dat" % (mi, gi))
            with open(name, "w") as f:
                f.write("# jittered_x value\n")
                for val in vals:
                    f.write("%.4f %.6g\n" % (gi + rnd.uniform(-0.22, 0.22), val))
            e_file.append(name)
            e_group.append(gi)
        p_last.append(len(e_file))
    v.array("E_file", e_file)
    v.array("E_group", e_group)
    v.array("P_first", p_first)
    v.array("P_last", p_last)
    v.set("out_png", os.path.join(outdir, "diversity.png"))
    v.set("out_svg", os.path.join(outdir, "diversity.svg"))
    v.set("datadir", fd)
    v.set("fig_title", "{/:Bold Code diversity}  %s" % gp_enh(title_tail(gpu, dtypes, date)))
    v.set("fig_sub", "every compiled configuration: box = quartiles, whiskers = 1.5 IQR, "
          "dots = configurations; compiled: fabench compile (compiled.csv), tuned: as the runtime "
          "reported while tuning (explored.csv)")
    v.set("npanels", len(metrics))
    v.set("ngroups", ngroups)
    v.array("P_title", [t for _, t in metrics])
    v.array("G_label", ["%s\n%s, n=%d" % (gp_enh(short(lab.rsplit(" / ", 1)[0], 24)), gp_enh(lab.rsplit(" / ", 1)[1]), n)
                        for lab, n in zip(order, counts)])
    v.array("G_color", [COLORS[i % len(COLORS)] for i in range(ngroups)])
    v.write(os.path.join(fd, "vars.gp"))
    return None


def fig_portability(d, outdir, tmp):
    rows = read_csv(os.path.join(d, "portability.csv"))
    if not rows:
        return "no portability.csv (fabench portability)"
    gpu, date, _ = folder_facts(d)
    frm, to = [], []
    for r in rows:
        a = "%s / %s" % (r.get("from_gpu"), r.get("from_backend"))
        b = "%s / %s" % (r.get("to_gpu"), r.get("to_backend"))
        if a not in frm:
            frm.append(a)
        if b not in to:
            to.append(b)
    cells = {}
    for r in rows:
        k = ("%s / %s" % (r.get("from_gpu"), r.get("from_backend")), "%s / %s" % (r.get("to_gpu"), r.get("to_backend")))
        c = cells.setdefault(k, {"pct": [], "fail": 0})
        p = fnum(r.get("pct"))
        if r.get("status") == "ok" and p and p > 0:
            c["pct"].append(p)
        else:
            c["fail"] += 1
    fd = os.path.join(tmp, "portability")
    os.makedirs(fd, exist_ok=True)
    vmax = 100.0
    with open(os.path.join(fd, "cells.dat"), "w") as f, open(os.path.join(fd, "labels.dat"), "w") as fl, \
            open(os.path.join(fd, "fails.dat"), "w") as ff:
        ff.write("# to_index from_index (cells where nothing could run)\n")
        f.write("# to_index from_index geomean_pct\n")
        for i, a in enumerate(frm):
            for j, b in enumerate(to):
                c = cells.get((a, b))
                if not c:
                    continue
                if c["pct"]:
                    g = math.exp(sum(math.log(p) for p in c["pct"]) / len(c["pct"]))
                    vmax = max(vmax, g)
                    lab = "%.0f%%\\n%d class%s" % (g, len(c["pct"]), "" if len(c["pct"]) == 1 else "es")
                    if c["fail"]:
                        lab += "\\n%d cannot run" % c["fail"]
                    f.write("%d %d %.3f\n" % (j, i, g))
                else:
                    lab = "cannot run\\n(%d class%s)" % (c["fail"], "" if c["fail"] == 1 else "es")
                    ff.write("%d %d\n" % (j, i))
                fl.write('%d %d "%s"\n' % (j, i, lab))
    dtypes = {class_dtype(r.get("class")) for r in rows}
    v = Vars()
    v.set("out_png", os.path.join(outdir, "portability.png"))
    v.set("out_svg", os.path.join(outdir, "portability.svg"))
    v.set("datadir", fd)
    v.set("fig_title", "{/:Bold Portability of tuned configurations}  %s" % gp_enh(title_tail(gpu, dtypes, date)))
    v.set("fig_sub", "cell: the winners tuned on the row's GPU/runtime, run on the column's, as % of the "
          "column's own tuned best (geometric mean over shape classes, both timed in the same run)")
    v.set("nfrom", len(frm))
    v.set("nto", len(to))
    v.set("cbmax", math.ceil(vmax / 10.0) * 10)
    v.array("F_label", [gp_enh(x) for x in frm])
    v.array("T_label", [gp_enh(x) for x in to])
    v.write(os.path.join(fd, "vars.gp"))
    return None


def fig_convergence(d, outdir, tmp):
    rows = read_csv(os.path.join(d, "explored.csv")) or []
    rows = [r for r in rows if fnum(r.get("step")) is not None]
    if not rows:
        return "no explored.csv rows with a step (fabench tune)"
    gpu, date, _ = folder_facts(d)
    series = {}
    for r in rows:
        k = (r.get("backend"), r.get("strategy") or "?", r.get("shape_class"))
        series.setdefault(k, []).append(r)
    backends = sorted({k[0] for k in series})
    strategies = sorted({k[1] for k in series})
    fd = os.path.join(tmp, "convergence")
    os.makedirs(fd, exist_ok=True)
    files, colors, dashes, panel = [], [], [], []
    med_files, med_colors, med_panel, med_titles = [], [], [], []
    xmax = 1
    drawn = []  # the backends with a curve: one panel each, in order
    for be in backends:
        pi = len(drawn) + 1
        for si, st in enumerate(strategies):
            curves = []
            for k, rs in sorted(series.items()):
                if k[0] != be or k[1] != st:
                    continue
                rs = sorted(rs, key=lambda r: fnum(r.get("step")))
                oks = [fnum(r.get("median_us")) for r in rs if r.get("status") == "ok" and fnum(r.get("median_us"))]
                if not oks:
                    continue
                final = min(oks)
                best = None
                pts = []
                for r in rs:
                    us = fnum(r.get("median_us")) if r.get("status") == "ok" else None
                    if us and (best is None or us < best):
                        best = us
                    step = int(fnum(r.get("step")))
                    xmax = max(xmax, step)
                    if best is not None:
                        pts.append((step, 100.0 * final / best))
                if not pts:
                    continue
                curves.append(pts)
                name = os.path.join(fd, "c%d.dat" % (len(files) + 1))
                with open(name, "w") as f:
                    f.write("# configurations_timed pct_of_best_found\n")
                    for x, y in pts:
                        f.write("%d %.4f\n" % (x, y))
                files.append(name)
                colors.append(COLORS[si % len(COLORS)])
                panel.append(pi)
            if curves:
                # median over classes at each step (a class counts from its first ok row on)
                steps = sorted({x for c in curves for x, _ in c})
                name = os.path.join(fd, "m%d.dat" % (len(med_files) + 1))
                with open(name, "w") as f:
                    f.write("# configurations_timed median_pct_over_classes\n")
                    for x in steps:
                        ys = []
                        for c in curves:
                            prev = [y for (sx, y) in c if sx <= x]
                            if prev:
                                ys.append(prev[-1])
                        ys.sort()
                        n = len(ys)
                        med = ys[n // 2] if n % 2 else (ys[n // 2 - 1] + ys[n // 2]) / 2
                        f.write("%d %.4f\n" % (x, med))
                med_files.append(name)
                med_colors.append(COLORS[si % len(COLORS)])
                med_panel.append(pi)
                med_titles.append("%s: median of %d class%s" % (st, len(curves), "" if len(curves) == 1 else "es"))
        if pi in panel:
            drawn.append(be)
    if not files:
        return "no shape class with an ok row in explored.csv"
    dtypes = {class_dtype(k[2]) for k in series}
    v = Vars()
    v.set("out_png", os.path.join(outdir, "convergence.png"))
    v.set("out_svg", os.path.join(outdir, "convergence.svg"))
    v.set("fig_title", "{/:Bold Tuner convergence}  %s" % gp_enh(title_tail(gpu, dtypes, date)))
    v.set("fig_sub", "best configuration found so far, as % of the best found for its shape class, against "
          "configurations timed; thin: one shape class, thick: median over classes")
    v.set("npanels", len(drawn))
    v.array("P_title", ["{/:Bold portable / %s}" % gp_enh(b) for b in drawn])
    v.set("xmax", xmax)
    # each panel's curves are consecutive: the script plots ranges, no placeholder file
    # (gnuplot warned once per curve and panel about an empty one)
    v.array("C_file", files)
    v.array("C_color", colors)
    v.array("C_first", [panel.index(p) + 1 for p in range(1, len(drawn) + 1)])
    v.array("C_last", [len(panel) - panel[::-1].index(p) for p in range(1, len(drawn) + 1)])
    v.array("M_file", med_files)
    v.array("M_color", med_colors)
    v.array("M_first", [med_panel.index(p) + 1 for p in range(1, len(drawn) + 1)])
    v.array("M_last", [len(med_panel) - med_panel[::-1].index(p) for p in range(1, len(drawn) + 1)])
    v.set("nmed", len(med_files))
    v.array("M_title", [gp_enh(t) for t in med_titles])
    v.write(os.path.join(fd, "vars.gp"))
    return None


def fig_loc(loc_csv, outdir, tmp):
    rows = read_csv(loc_csv)
    if not rows:
        return "no %s (fabench loc --out)" % loc_csv
    labels = []
    for r in rows:
        if r.get("label") not in labels:
            labels.append(r.get("label"))
    bars = []
    commits = {}
    for lab in labels:
        rs = [r for r in rows if r.get("label") == lab]
        total = sum(fnum(r.get("total_lines")) or 0 for r in rs)
        c = sum(fnum(r.get("c_family_lines")) or 0 for r in rs)
        py = sum(fnum(r.get("python_lines")) or 0 for r in rs)
        ours = lab.startswith("fabench")
        files = sum(fnum(r.get("files")) or 0 for r in rs)
        commits[lab] = {r.get("commit", "")[:7] for r in rs}
        bars.append((gp_enh(lab), "%d files: C %d, Py %d" % (files, c, py), total,
                     OURS if ours else VENDOR, "ours" if ours else "FlashAttention (vendor)"))
    if not any(b[2] > 0 for b in bars):
        return "no lines counted"
    date = "undated"
    try:
        out = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(loc_csv)), "log", "-1", "--format=%cs",
                              "--", os.path.abspath(loc_csv)], capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            date = out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    if date == "undated":
        import time
        date = time.strftime("%Y-%m-%d", time.gmtime(os.path.getmtime(loc_csv)))
    allc = sorted({c for s in commits.values() for c in s if c})
    bar_figure("loc", bars, "{/:Bold Kernel source size}  %s" % gp_enh("any GPU, any dtype, %s" % date),
               "non-blank, non-comment lines (fabench loc); commits %s" % ", ".join(allc),
               "lines (log scale)", outdir, tmp)
    return None


def main(argv):
    if len(argv) == 5 and argv[1] == "--loc":
        loc, outdir, tmp = argv[2:]
        why = fig_loc(loc, outdir, tmp)
        print("skip loc %s" % why if why else "loc bars_log.gp")
        return 0
    if len(argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    d, outdir, tmp = argv[1:]
    for fig, fn, script in (("configs", fig_configs, "bars_log.gp"),
                            ("diversity", fig_diversity, "boxes.gp"),
                            ("portability", fig_portability, "heatmap.gp"),
                            ("convergence", fig_convergence, "convergence.gp")):
        try:
            why = fn(d, outdir, tmp)
        except (KeyError, ValueError, OSError, csv.Error) as e:
            sys.stderr.write("metrics.py: %s: %s: %s\n" % (d, fig, e))
            return 2
        print("skip %s %s" % (fig, why) if why else "%s %s" % (fig, script))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
