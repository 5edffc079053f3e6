#!/usr/bin/env python3
"""prep.py: turns one results/<gpu>/ folder's perf.csv (and manifest.csv) into the data
files and the variables the gnuplot scripts in plots/ draw from.

    prep.py PERF_CSV MANIFEST_CSV OUT_PLOTS_DIR TMP_DIR

For every figure (perf_prefill, perf_paper, perf_fa3, perf_decode, ref, batches, perf_other, speedup) it writes TMP_DIR/<figure>/vars.gp
(gnuplot commands: titles, output paths, ranges, ticks and one array entry per series or
bar) and whitespace-separated .dat files next to it, then prints one line per figure on
stdout: "<figure> <script>" when it has data, "skip <figure> <why>" when it has none.
Only rows with status ok are drawn. MANIFEST_CSV may be missing (the date is "undated").
"""
import csv
import math
import os
import re
import sys

# One colour per (impl, backend), in the same order in every figure of a folder; the
# Okabe-Ito colours first (distinct for colour-blind readers), then more.
COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
          "#000000", "#8C564B", "#7F7F7F", "#BCBD22", "#17BECF", "#9467BD"]
# One point type and dash type per series variant (batch, and whatever else differs).
POINTS = [7, 5, 9, 11, 13, 15, 6, 4, 8, 10, 12, 14]
DASHES = [1, 2, 4, 5, 3]

DECODE_MAX_SQ = 16


def gp_str(s):
    """A gnuplot double-quoted string literal: backslash, quote and newline escaped."""
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def gp_enh(s):
    """Text safe for enhanced-text mode: its control characters taken literally."""
    out = []
    for ch in str(s):
        if ch in "^_@&~{}\\":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def num(row, key):
    try:
        v = float(row.get(key, "") or "nan")
    except ValueError:
        return float("nan")
    return v


def ival(row, key):
    v = num(row, key)
    return int(v) if math.isfinite(v) else None


def family(name):
    """The model family of a shape name: what comes before -prefill-b<N> / -decode-b<N>
    (llama3-8b-prefill-b1-s1024 -> llama3-8b), else the name less its -b<N>-... tail
    (paper-h32kv8-b4-s512 -> paper-h32kv8), else the whole name (a -decode- that no batch
    follows names no family: smoke-decode-gqa4to1-skv257-d128 is its own panel)."""
    m = re.match(r"^(.+?)-(prefill|decode)-b\d+(-.*)?$", name)
    if m:
        return m.group(1)
    m = re.match(r"^(.*?)-b\d+(-.*)?$", name)
    if m and m.group(1):
        return m.group(1)
    return name


def fa3_panel(row):
    """FlashAttention-3's figures: a panel per head dim and mask (fa3-bf16-d128-c-s4096 ->
    'd=128 causal'); dtype tells the series of one panel apart, batch does not (it falls as
    the sequence grows, 16k tokens in all)."""
    causal = row["causal"] in ("1", "true", "yes")
    return "d=%s %s" % (row["d"], "causal" if causal else "non-causal")


def impl_key(row):
    return (row["impl"], row["backend"])


def impl_order(keys):
    # our portable kernel first, then the vendors, each by backend
    return sorted(set(keys), key=lambda k: (k[0] != "portable", k[0], k[1]))


def pow2_label(v):
    if v >= 1024 * 1024 and v % (1024 * 1024) == 0:
        return "%dM" % (v // (1024 * 1024))
    if v >= 1024 and v % 1024 == 0:
        return "%dK" % (v // 1024)
    return "%d" % v


def log2_ticks(lo, hi, most=9):
    """Powers of two covering [lo, hi], thinned to at most `most` labels."""
    a = 2 ** math.floor(math.log2(lo))
    b = 2 ** math.ceil(math.log2(hi))
    ticks = []
    v = a
    while v <= b:
        ticks.append(int(v))
        v *= 2
    step = 1
    while len(ticks[::step]) > most:
        step += 1
    return ticks[::step]


def log_ticks(lo, hi, most=12):
    """Ticks on a log axis between lo and hi (both > 0), at most `most` of them:
    1-2-5 steps, else decades, else every other decade; 1-1.5-2-3-5-7 on a narrow range."""
    def steps(mults, every=1):
        out = []
        e = math.floor(math.log10(lo)) - 1
        while 10 ** e <= hi * 10:
            if e % every == 0:
                out.extend(m * 10 ** e for m in mults if lo <= m * 10 ** e <= hi)
            e += 1
        return out
    ticks = steps((1, 2, 5))
    if len(ticks) < 3:
        ticks = steps((1, 1.5, 2, 3, 5, 7))
    every = 1
    while len(ticks) > most:
        ticks = steps((1,), every)
        every += 1
    return ticks


def fmt_tick(v):
    if v >= 1:
        return "%g" % round(v, 6)
    return "%g" % v


def linear_ticks(hi, most=8):
    """Ticks from 0 up to hi in 1-2-2.5-5 steps, at most `most` + 1 of them."""
    if not hi > 0:
        return [0.0]
    mag = 10 ** math.floor(math.log10(hi / most))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if hi / (m * mag) <= most)
    return [i * step for i in range(int(hi / step + 1e-9) + 1)]


def fmt_value(v):
    if v >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    if v >= 0.1:
        return "%.2f" % v
    return "%.2g" % v  # a CPU's 0.0019 TFLOP/s, not 0.00


def shape_desc(rows, fields):
    """'Hq=32 Hkv=8 d=128 causal' for the fields that one value covers in rows."""
    parts = []
    for f, label in fields:
        vals = {r[f] for r in rows}
        if len(vals) != 1:
            continue
        v = vals.pop()
        if f == "causal":
            parts.append("causal" if v in ("1", "true", "yes") else "non-causal")
        elif f == "dtype":
            parts.append(v)
        elif f == "hkv" and {r["hq"] for r in rows} == {v}:
            continue  # MHA: Hkv = Hq says nothing more
        else:
            parts.append("%s=%s" % (label, v))
    return " ".join(parts)


VARIANT_FIELDS = [("batch", "B"), ("hq", "Hq"), ("hkv", "Hkv"), ("d", "d"),
                  ("causal", "causal"), ("dtype", ""), ("sq", "Sq")]

VARIANT_HEADERS = {"batch": "batch", "hq": "Hq", "hkv": "Hkv", "d": "head dim",
                   "causal": "mask", "dtype": "dtype", "sq": "Sq"}


def variant_label(key, varying):
    parts = []
    for (f, label), v in zip(VARIANT_FIELDS, key):
        if f not in varying:
            continue
        if f == "causal":
            parts.append("causal" if v in ("1", "true", "yes") else "non-causal")
        elif f == "dtype":
            parts.append(v)
        else:
            parts.append("%s=%s" % (label, v))
    return " ".join(parts)


def title_parts(rows, date):
    gpus = sorted({r["gpu"] for r in rows if r.get("gpu")}) or ["unknown GPU"]
    dtypes = sorted({r["dtype"] for r in rows if r.get("dtype")}) or ["?"]
    return "%s, %s, %s" % (", ".join(gpus), "/".join(dtypes), date)


class Vars:
    def __init__(self):
        self.lines = []

    def set(self, name, value):
        if isinstance(value, str):
            self.lines.append("%s = %s" % (name, gp_str(value)))
        else:
            self.lines.append("%s = %s" % (name, repr(value)))

    def array(self, name, values):
        n = max(len(values), 1)
        if not values:
            self.lines.append("array %s[1]" % name)
            return
        items = ", ".join(gp_str(v) if isinstance(v, str) else repr(v) for v in values)
        self.lines.append("array %s[%d] = [%s]" % (name, n, items))

    def write(self, path):
        with open(path, "w") as f:
            f.write("\n".join(self.lines) + "\n")


def legend_arrays(v, impls, color_of, variants_seen, variant_names, kind):
    """The shared legend: a header, one coloured entry per (impl, backend), a header, one
    black entry per variant (point and dash type)."""
    titles, colors, pts, dts, pss = [], [], [], [], []

    def add(t, c, p, d, s):
        titles.append(t)
        colors.append(c)
        pts.append(p)
        dts.append(d)
        pss.append(s)

    if kind == "lines":  # the bars' legend has one group: its header is the key title
        add("{/:Bold impl / backend}", "#FFFFFF", 7, 1, 0.01)
    for k in impls:
        add(gp_enh("%s / %s" % k), color_of[k], 7, 1, 1.3 if kind == "lines" else 0.0)
    if variants_seen:
        add(" ", "#FFFFFF", 7, 1, 0.01)
        add("{/:Bold %s}" % gp_enh(variant_names), "#FFFFFF", 7, 1, 0.01)
        for label, pt, dt in variants_seen:
            add(gp_enh(label), "#333333", pt, dt, 1.3)
    v.array("L_title", titles)
    v.array("L_color", colors)
    v.array("L_pt", pts)
    v.array("L_dt", dts)
    v.array("L_ps", pss)
    v.set("nlegend", len(titles))


def lines_figure(fig, rows, all_impls, color_of, date, outdir, tmp, decode, what=None,
                 panel_of=None, same_series=()):
    """perf_prefill / perf_decode: one panel per model family (panel_of: per what it says),
    x = sequence length (sq) or KV length (skv), y = TFLOP/s or GB/s with p20/p80 error bars;
    the fields in same_series do not split a panel's rows into series."""
    panel_of = panel_of or (lambda r: family(r["name"]))
    if not rows:
        return "no %s rows with status ok" % ("decode (sq <= 16)" if decode
                                              else "prefill (sq == skv > 16)")
    xcol = "skv" if decode else "sq"
    ycol = "gbps" if decode else "tflops"
    fams = {}
    for r in rows:
        fams.setdefault(panel_of(r), []).append(r)
    # panels in the order their families first appear in perf.csv
    order = []
    for r in rows:
        f = panel_of(r)
        if f not in order:
            order.append(f)

    d = os.path.join(tmp, fig)
    os.makedirs(d, exist_ok=True)
    v = Vars()
    # the fields that tell two series of one panel apart beyond (impl, backend)
    varying = set()
    for f in order:
        fr = fams[f]
        for fld, _ in VARIANT_FIELDS:
            if (fld == "sq" and not decode) or fld in same_series:
                continue
            if len({r[fld] for r in fr}) > 1:
                varying.add(fld)
    if "batch" not in same_series:
        varying.add("batch")
    variant_style = {}
    series = []  # (panel index, impl key, variant key, points)
    p_first, p_last, p_title = [], [], []
    xs, ys = [], []
    for pi, f in enumerate(order):
        fr = fams[f]
        groups = {}
        for r in fr:
            vk = tuple(r[fld] if fld in varying else "" for fld, _ in VARIANT_FIELDS)
            groups.setdefault((impl_key(r), vk), []).append(r)
        first = len(series) + 1

        def vsort(vk):
            return tuple(int(x) if x.isdigit() else 0 for x in vk) + vk

        for ik in all_impls:
            for vk in sorted({g[1] for g in groups if g[0] == ik}, key=vsort):
                pts = []
                for r in groups[(ik, vk)]:
                    x = num(r, xcol)
                    y = num(r, ycol)
                    med, p20, p80 = num(r, "median_us"), num(r, "p20_us"), num(r, "p80_us")
                    if not (math.isfinite(x) and x > 0 and math.isfinite(y) and y > 0):
                        continue
                    lo = y * med / p80 if med > 0 and p80 > 0 else y  # slower -> lower
                    hi = y * med / p20 if med > 0 and p20 > 0 else y
                    pts.append((x, y, min(lo, y), max(hi, y)))
                    xs.append(x)
                    ys.extend([y, min(lo, y), max(hi, y)])
                if not pts:
                    continue
                pts.sort()
                if vk not in variant_style:
                    i = len(variant_style)
                    variant_style[vk] = (POINTS[i % len(POINTS)],
                                         DASHES[i % len(DASHES)])
                series.append((pi, ik, vk, pts))
        last = len(series)
        if last < first:
            continue
        p_first.append(first)
        p_last.append(last)
        desc = shape_desc(fr, [("hq", "Hq"), ("hkv", "Hkv"), ("d", "d"), ("causal", "")]
                          + ([("dtype", "")] if len({r["dtype"] for r in rows}) > 1 else []))
        p_title.append((f, desc))
    if not series:
        return "no rows with a positive %s" % ycol

    for k, (_, _, _, pts) in enumerate(series, 1):
        with open(os.path.join(d, "s%d.dat" % k), "w") as fh:
            fh.write("# %s %s_p80 %s_p20\n" % (xcol, ycol, ycol))
            for p in pts:
                fh.write("%g %.6g %.6g %.6g\n" % p)

    npanels = len(p_first)
    ncols = 1 if npanels == 1 else 2 if npanels <= 4 else 3 if npanels <= 9 else 4
    nrows = (npanels + ncols - 1) // ncols

    ymin, ymax = min(ys), max(ys)
    logy = ymax / ymin > 20
    if logy:
        ylo = ymin / 1.35
        yhi = ymax * 1.35
        ticks = log_ticks(ylo, yhi)
    else:
        ylo, yhi = 0.0, ymax * 1.12
        ticks = []
    xmin, xmax = min(xs), max(xs)
    if logy:
        # one y tick label per 22 px of a panel's plot area at most
        panel_h = 900 * (1 - 0.085) / nrows - (3.2 + 3.6) * 15
        ticks = log_ticks(ylo, yhi, max(3, int(panel_h // 22)))
    # panel width in pixels of the 1400-wide figure (the legend takes 17 %): at most one
    # x tick label per 50 px, and a panel title on two lines when one would not fit
    panel_px = 1400 * (1 - 0.17) / ncols
    xt = log2_ticks(xmin, xmax, max(3, int(panel_px // 50)))
    two = any(len(f) + 3 + len(desc) > (panel_px - 20) / 7.5 for f, desc in p_title)
    p_title = ["{/:Bold %s}%s" % (gp_enh(f), (("\n" if two else "   ") + gp_enh(desc))
                                  if desc else "") for f, desc in p_title]
    v.set("tmarg", 3.2 if two else 2.0)

    what = what or ("Decode" if decode else "Prefill")
    v.set("out_png", os.path.join(outdir, fig + ".png"))
    v.set("out_svg", os.path.join(outdir, fig + ".svg"))
    v.set("datadir", d)
    v.set("fig_title", "{/:Bold %s attention}  %s" % (what, gp_enh(title_parts(rows, date))))
    if decode:
        v.set("fig_sub", "effective bandwidth (bytes of Q, K, V, O moved once / median time)"
              " against KV-cache length;  error bars: p20 to p80 of the timed repetitions")
        v.set("xlabel", "KV length S_{kv} (log_2)")
        v_ylabel = "GB/s"
    else:
        v.set("fig_sub", "TFLOP/s (4 d * unmasked query-key pairs * B * H_q / median time) "
              "against sequence length S_q = S_{kv};  error bars: p20 to p80")
        v.set("xlabel", "sequence length S_q = S_{kv} (log_2)")
        v_ylabel = "TFLOP/s"
    if logy:
        v.set("ylabel", v_ylabel + " (log scale)")
    else:
        v.set("ylabel", v_ylabel)
    v.set("npanels", npanels)
    v.set("ncols", ncols)
    v.set("nrows", nrows)
    v.set("xmin", xmin / 1.45)
    v.set("xmax", xmax * 1.45)
    v.set("ymin", ylo)
    v.set("ymax", yhi)
    v.set("logy", 1 if logy else 0)
    v.set("xtics_cmd", "set xtics (" + ", ".join('"%s" %d' % (pow2_label(t), t) for t in xt) + ")")
    # the y ticks' labels, so that the left margin holds the widest of them and the axis
    # label (a CPU's 0.0015 TFLOP/s was cut to '.0015' at the image's edge)
    if not logy:
        ticks = linear_ticks(yhi, max(3, min(8, int((900 * (1 - 0.085) / nrows - 6.8 * 15) // 60))))
    labels = [fmt_tick(t) if logy else "%g" % round(t, 12) for t in ticks] or ["0"]
    v.set("lmarg", max(len(x) for x in labels) + 4.5)
    v.set("ytics_cmd", "set ytics (" + ", ".join('"%s" %r' % (x, t) for x, t in zip(labels, ticks)) + ")")
    v.array("P_first", p_first)
    v.array("P_last", p_last)
    v.array("P_title", p_title)
    v.set("nseries", len(series))
    v.array("S_color", [color_of[s[1]] for s in series])
    v.array("S_pt", [variant_style[s[2]][0] for s in series])
    v.array("S_dt", [variant_style[s[2]][1] for s in series])
    used_impls = [k for k in all_impls if any(s[1] == k for s in series)]
    vnames = " / ".join(VARIANT_HEADERS[fld] for fld, _ in VARIANT_FIELDS if fld in varying)
    seen = [(variant_label(vk, varying), st[0], st[1]) for vk, st in variant_style.items()]
    legend_arrays(v, used_impls, color_of, seen, vnames, "lines")
    v.write(os.path.join(d, "vars.gp"))
    return None


def is_batch(r):
    """A ragged, mixed or paged batch (lens, qlens or page set)."""
    return bool((r.get("lens") or "").strip() or (r.get("qlens") or "").strip() or
                (r.get("page") or "").strip() not in ("", "0"))


def ref_figure(rows, all_impls, color_of, date, outdir, tmp):
    """ref: one panel of bars for the prefill references (TFLOP/s), one for the decode
    reference (GB/s); one bar per (impl, backend) in each shape's cluster."""
    if not rows:
        return "no rows named ref-* with status ok"
    return bars_figure("ref", rows, all_impls, color_of, date, outdir, tmp, "Reference shapes",
                       "median-time throughput of the ref suite; value printed on each bar",
                       ("Prefill references", "Decode reference"))


def batches_figure(rows, all_impls, color_of, date, outdir, tmp):
    """batches: ragged, mixed and paged batches as bars, like ref (TFLOP/s where the longest
    query exceeds 16 rows, else GB/s), each shape labelled with its length pattern and page."""
    if not rows:
        return "no ragged, mixed or paged rows (lens, qlens, page) with status ok"
    return bars_figure("batches", rows, all_impls, color_of, date, outdir, tmp,
                       "Ragged, mixed and paged batches",
                       "median-time throughput over real tokens only; lens are fractions of the longest "
                       "sequence, repeated over the batch; vendors' config says varlen, document mask or padded",
                       ("Prefill and mixed batches", "Decode batches"), by_name=True)


def other_figure(rows, all_impls, color_of, date, outdir, tmp):
    """perf_other: the shapes no other figure draws (Sq != Skv above the decode rows, say),
    as bars like ref's, so that every measured shape is in some figure."""
    if not rows:
        return "every shape is in another figure"
    return bars_figure("perf_other", rows, all_impls, color_of, date, outdir, tmp, "Other shapes",
                       "median-time throughput of the shapes the line figures leave out (S_q \u2260 S_{kv} above %d "
                       "queries); value printed on each bar" % DECODE_MAX_SQ,
                       ("Prefill, S_q \u2260 S_{kv}", "Decode"))


def bars_figure(fig, rows, all_impls, color_of, date, outdir, tmp, title_text, sub, panel_names, by_name=False):
    """One panel of bars for the rows whose longest query exceeds DECODE_MAX_SQ (TFLOP/s),
    one for the others (GB/s); one bar per (impl, backend) in each shape's cluster, labelled
    by its shape (by_name: by the shape's name, turned)."""
    d = os.path.join(tmp, fig)
    os.makedirs(d, exist_ok=True)
    v = Vars()
    panels = []
    pre = [r for r in rows if ival(r, "sq") is None or ival(r, "sq") > DECODE_MAX_SQ]
    dec = [r for r in rows if r not in pre]
    if pre:
        panels.append((panel_names[0], "TFLOP/s", "tflops", pre))
    if dec:
        panels.append((panel_names[1], "GB/s (effective)", "gbps", dec))
    used = [k for k in all_impls if any(impl_key(r) == k for r in rows)]
    pt_titles, pt_ylabels, pt_ymax, pt_nshapes = [], [], [], []
    for pi, (title, ylabel, col, pr) in enumerate(panels, 1):
        shapes = []
        for r in pr:
            if r["name"] not in shapes:
                shapes.append(r["name"])
        ik = [k for k in used if any(impl_key(r) == k for r in pr)]
        n = len(ik)
        width = 0.8 / max(n, 1)
        ymax = 0.0
        with open(os.path.join(d, "bars%d.dat" % pi), "w") as fb, \
                open(os.path.join(d, "tics%d.dat" % pi), "w") as ft:
            fb.write("# x y width color label\n")
            ft.write("# x line1 line2\n")
            for ci, name in enumerate(shapes):
                srows = [r for r in pr if r["name"] == name]
                r0 = srows[0]
                causal = "causal" if r0["causal"] in ("1", "true", "yes") else "non-causal"
                heads = "H=%s" % r0["hq"] if r0["hq"] == r0["hkv"] else \
                    "Hq=%s Hkv=%s" % (r0["hq"], r0["hkv"])
                seq = "S=%s" % r0["sq"] if r0["sq"] == r0["skv"] else \
                    "Sq=%s Skv=%s" % (r0["sq"], r0["skv"])
                line1 = "B=%s %s %s d=%s" % (r0["batch"], heads, seq, r0["d"])
                line2 = "%s, %s" % (causal, r0["dtype"])
                if by_name:  # many shapes: their names, turned, say enough
                    line1, line2 = name, ""
                ft.write('%d "%s" "%s"\n' % (ci, line1.replace('"', "'"), line2.replace('"', "'")))
                for bi, k in enumerate(ik):
                    vals = [num(r, col) for r in srows if impl_key(r) == k]
                    vals = [x for x in vals if math.isfinite(x)]
                    if not vals:
                        continue
                    y = max(vals)
                    ymax = max(ymax, y)
                    x = ci + (bi - (n - 1) / 2.0) * width
                    fb.write('%.4f %.6g %.4f %d "%s"\n' % (
                        x, y, width * 0.92, int(color_of[k][1:], 16), fmt_value(y)))
        pt_titles.append("{/:Bold %s}" % title)
        pt_ylabels.append(ylabel)
        pt_ymax.append(ymax * 1.15 if ymax > 0 else 1.0)
        pt_nshapes.append(len(shapes))
    v.set("out_png", os.path.join(outdir, fig + ".png"))
    v.set("out_svg", os.path.join(outdir, fig + ".svg"))
    v.set("datadir", d)
    v.set("fig_title", "{/:Bold %s}  %s" % (title_text, gp_enh(title_parts(rows, date))))
    v.set("fig_sub", sub)
    # wide enough for every cluster's two-line label and its bars: at least 1400 pixels, at
    # most 4800; values printed on the bars only where a bar is wide enough to carry one
    nbars = sum(pt_nshapes) * max(len(used), 1)
    per_shape = 60 if by_name else 150
    canvas = int(min(4800, max(1400, 300 + sum(pt_nshapes) * per_shape, 300 + nbars * (12 if by_name else 30))))
    v.set("canvas_w", canvas)
    v.set("tic_rotate", 40 if by_name else 0)
    v.set("value_labels", 1 if (canvas - 300) / max(nbars, 1) >= 38 else 0)
    v.set("npanels", len(panels))
    v.array("P_title", pt_titles)
    v.array("P_ylabel", pt_ylabels)
    v.array("P_ymax", pt_ymax)
    v.array("P_nshapes", pt_nshapes)
    legend_arrays(v, used, color_of, [], "", "bars")
    v.write(os.path.join(d, "vars.gp"))
    return None


VENDOR_FA2 = "torch-flash"
FASTER, SLOWER, TIE, FA2_COLOR = "#009E73", "#D55E00", "#999999", "#0072B2"
SHAPE_FIELDS = ("name", "dtype", "batch", "hq", "hkv", "sq", "skv", "d", "causal")


def ratio_ticks(lo, hi, most=14):
    """Ticks for a log axis of ratios around 1: the finest of a few 1-2-5-like sets that
    keeps at most `most` ticks between lo and hi, 1 always among them."""
    for mults in ((1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8),
                  (1, 1.5, 2, 3, 5, 7), (1, 2, 5), (1,)):
        ticks = []
        e = math.floor(math.log10(lo)) - 1
        while 10 ** e <= hi * 10:
            ticks.extend(round(m * 10 ** e, 9) for m in mults if lo <= m * 10 ** e <= hi)
            e += 1
        if len(ticks) <= most:
            return sorted(set(ticks))
    return [1]


def fmt_ratio(x):
    return "%.2f" % x if x >= 0.095 else "%.2g" % x


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def spread_verdict(ours, theirs):
    """ours against theirs as fabench versus says it: faster only when ours' p80 is below
    their p20, slower only when ours' p20 is above their p80; overlapping spreads: a tie."""
    if num(ours, "p80_us") < num(theirs, "p20_us"):
        return "faster"
    if num(ours, "p20_us") > num(theirs, "p80_us"):
        return "slower"
    return "tie"


def crossed_runs(ours, theirs):
    """The two rows are not of one run (run_id): different ids, or a row without one."""
    a, b = ours.get("run_id", ""), theirs.get("run_id", "")
    return not a or a != b


def speedup_figure(rows, all_rows, date, outdir, tmp, panel_of=None, name="speedup"):
    """speedup: per shape, the best vendor's median time over the portable kernel's (one
    panel per backend of the portable kernel), as a bar from 1; a marker for the speedup
    over FlashAttention-2 (torch-flash) alone. rows: status ok; all_rows: every status
    (to tell a vendor that failed on a shape from one that never ran on it).
    panel_of (row -> panel name), when given, makes the panels its values instead, and a
    panel's bars compare only rows of that panel: one panel per GPU, each against its own
    vendors (plots/cross_gpu.py). name: the figure's file names and data folder."""
    own = panel_of is not None
    pan = panel_of or (lambda r: r["backend"])
    def skey(r):
        return tuple(r[f] for f in SHAPE_FIELDS)

    def fastest(rs):
        """(median, impl, row) of the row with the lowest median, or None"""
        best = None
        for r in rs:
            t = num(r, "median_us")
            if math.isfinite(t) and t > 0 and (best is None or t < best[0]):
                best = (t, r["impl"], r)
        return best

    order = []
    seen = set()
    for r in rows:
        k = skey(r)
        if k not in seen:
            seen.add(k)
            order.append(k)
    port = [r for r in rows if r["impl"] == "portable"]
    vend = [r for r in rows if r["impl"] != "portable"]
    if not port:
        return "no portable rows with status ok"
    if not vend:
        return "no vendor rows with status ok (only %s)" % ", ".join(
            sorted({r["impl"] for r in rows}))
    backends = sorted({pan(r) for r in port}, key=lambda b: (b != "cuda", b))
    vendors_all = sorted({r["impl"] for r in all_rows if r["impl"] != "portable"})
    by_shape = {}
    for r in rows:
        by_shape.setdefault(skey(r), []).append(r)
    run_on = {}  # (shape, panel or None): the vendors with any row there
    for r in all_rows:
        if r["impl"] != "portable":
            run_on.setdefault((skey(r), pan(r) if own else None), set()).add(r["impl"])

    shapes = []  # (key, {backend: (vs best, best impl, vs fa2 or None, verdict)}, partial)
    ncrossed = 0  # shapes whose rows paired are not of one run (fabench versus leaves them out)
    for k in order:
        rs = by_shape[k]
        per = {}
        partial = False
        for b in backends:
            theirs = [x for x in rs if x["impl"] != "portable" and (not own or pan(x) == b)]
            best = fastest(theirs)
            fa2 = fastest(x for x in theirs if x["impl"] == VENDOR_FA2)
            mine = fastest(x for x in rs if x["impl"] == "portable" and pan(x) == b)
            if mine and best:
                partial |= len(run_on.get((k, b if own else None), ())) < len(vendors_all)
                per[b] = (best[0] / mine[0], best[1], fa2[0] / mine[0] if fa2 else None,
                          spread_verdict(mine[2], best[2]))
                ncrossed += crossed_runs(mine[2], best[2])
        if per:
            shapes.append((k, per, partial))
    if not shapes:
        return "no shape has ok rows of both the portable kernel and a vendor"
    backends = [b for b in backends if any(b in s[1] for s in shapes)]

    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    v = Vars()
    multi_dtype = len({k[1] for k, _, _ in shapes}) > 1
    labels = []
    for k, _, partial in shapes:
        lab = k[0] + (" " + k[1] if multi_dtype else "")
        labels.append(gp_enh(lab))
    with open(os.path.join(d, "tics.dat"), "w") as ft:
        ft.write("# y label\n")
        for i, lab in enumerate(labels):
            ft.write('%d "%s"\n' % (i, lab.replace('"', "'")))
    # thin lines between model families
    seps = [i - 0.5 for i in range(1, len(shapes))
            if family(shapes[i][0][0]) != family(shapes[i - 1][0][0])]
    p_vals = []
    p_title = []
    npartial = 0
    for pi, b in enumerate(backends, 1):
        sb, sf, verdicts = [], [], []
        vals = [1.0]
        with open(os.path.join(d, "sp%d.dat" % pi), "w") as fh:
            fh.write("# y vs_best color vs_fa2 best_label fa2_label\n")
            for i, (k, per, partial) in enumerate(shapes):
                if b not in per:
                    continue
                s, impl, f, verdict = per[b]
                sb.append(s)
                verdicts.append(verdict)
                vals.append(s)
                if f is not None:
                    sf.append(f)
                    vals.append(f)
                if partial and pi == 1:
                    npartial += 1
                fh.write('%d %.6g %d %s "%s" "%s"\n' % (
                    i, s, int({"faster": FASTER, "slower": SLOWER, "tie": TIE}[verdict][1:], 16),
                    "%.6g" % f if f is not None else "NaN",
                    "%s %s%s" % (fmt_ratio(s), impl, "*" if partial else ""),
                    fmt_ratio(f) if f is not None else "-"))
        head = gp_enh(b) if own else "portable / %s" % gp_enh(b)
        title = "{/:Bold %s}   faster on %d, tied on %d, slower on %d of %d shapes\ngeomean" \
            " %s vs the best vendor" % (head, verdicts.count("faster"), verdicts.count("tie"),
                                       verdicts.count("slower"), len(sb), fmt_ratio(geomean(sb)))
        if sf:
            title += ", %s vs FA2%s" % (fmt_ratio(geomean(sf)),
                                        "" if len(sf) == len(sb) else " (%d shapes)" % len(sf))
        p_title.append(title)
        p_vals.append(vals)
    # pixels: 22 per shape, room above for the titles and legend, below for the x axis
    top_px, bot_px = 170, 75 + (22 if npartial else 0)
    height = max(600, top_px + bot_px + 22 * len(shapes))
    name_px = 30 + 7 * max(len(x) for x in labels)
    text_px = 200  # the value column right of each panel
    width = 1400
    panel_px = (width - name_px - 10 - len(backends) * text_px) / len(backends)
    p_xmin, p_xmax, p_xtics = [], [], []
    for vals in p_vals:  # each panel its own range: OpenCL may sit far below CUDA
        lo, hi = min(vals), max(vals)
        span = math.log(hi / lo) if hi > lo else 0.0
        pad = max(span * 0.06, math.log(1.15))
        xlo, xhi = lo / math.exp(pad), hi * math.exp(pad)
        xt = ratio_ticks(xlo, xhi, max(4, int(panel_px // 45)))
        p_xmin.append(xlo)
        p_xmax.append(xhi)
        p_xtics.append("set xtics (" + ", ".join('"%g" %r' % (t, t) for t in xt) + ")")

    v.set("out_png", os.path.join(outdir, name + ".png"))
    v.set("out_svg", os.path.join(outdir, name + ".svg"))
    v.set("datadir", d)
    v.set("width", width)
    v.set("height", height)
    v.set("fig_title", "{/:Bold Speedup over the vendors}  %s" % gp_enh(title_parts(rows, date)))
    v.set("fig_sub", "speedup = a vendor's median time / the portable kernel's median time on the"
          " same shape  (> 1: the portable kernel is faster; log scale)\nbar: against the"
          " fastest vendor of %s, named right;  marker: against FlashAttention-2 (%s), the"
          " same mma.sync class of kernel" % (", ".join(vendors_all), VENDOR_FA2))
    v.set("title_y", 1 - 24.0 / height)
    v.set("sub_y", 1 - 58.0 / height)
    v.set("key_y", 1 - 90.0 / height)
    v.set("plot_top", 1 - float(top_px) / height)
    v.set("plot_bot", float(bot_px) / height)
    v.set("note_y", 14.0 / height)
    notes = []
    if npartial:
        notes.append("* some of the %d vendors have no row at all for this shape: the best of"
                     " those that ran" % len(vendors_all))
    if ncrossed:
        notes.append("%d shape%s pair%s rows of different runs (run_id), or without a run id:"
                     " fabench versus leaves %s out unless --any-run"
                     % (ncrossed, "" if ncrossed == 1 else "s", "s" if ncrossed == 1 else "",
                        "it" if ncrossed == 1 else "them"))
    v.set("note", ";  ".join(notes))
    v.set("nshapes", len(shapes))
    v.set("npanels", len(backends))
    v.array("P_left", [(name_px + i * (panel_px + text_px)) / width
                       for i in range(len(backends))])
    v.array("P_right", [(name_px + i * (panel_px + text_px) + panel_px) / width
                        for i in range(len(backends))])
    v.array("P_title", p_title)
    v.array("SEP", seps)
    v.set("nsep", len(seps))
    v.array("P_xmin", p_xmin)
    v.array("P_xmax", p_xmax)
    v.array("P_xtics", p_xtics)
    v.set("c_faster", FASTER)
    v.set("c_slower", SLOWER)
    v.set("c_tie", TIE)
    v.set("c_fa2", FA2_COLOR)
    v.write(os.path.join(d, "vars.gp"))
    return None


def load_perf(perf):
    """(all_rows, rows) of a perf.csv: every row, a later row of the same implementation,
    backend and shape replacing an earlier one as in fabench versus and compare (the figures
    then agree with their numbers), and those with status ok; None (said on stderr) when a
    needed column is missing."""
    with open(perf, newline="") as f:
        reader = csv.DictReader(f)
        need = {"gpu", "backend", "impl", "name", "dtype", "batch", "hq", "hkv", "sq", "skv",
                "d", "causal", "median_us", "p20_us", "p80_us", "tflops", "gbps", "status"}
        missing = need - set(reader.fieldnames or [])
        if missing:
            sys.stderr.write("%s: missing columns: %s\n" % (perf, ", ".join(sorted(missing))))
            return None
        all_rows = list(reader)

    def row_key(r):
        cfg = r.get("config", "") if r.get("config_source") == "--config" else ""
        return (r["impl"], r["backend"], cfg) + tuple(r.get(f, "") for f in SHAPE_FIELDS) + (r.get("lens", ""),
                                                                                          r.get("qlens", ""), r.get("page", ""))
    last = {}
    for r in all_rows:
        last[row_key(r)] = r
    all_rows = [r for r in all_rows if last[row_key(r)] is r]
    return all_rows, [r for r in all_rows if (r.get("status") or "").strip() == "ok"]


def manifest_date(manifest):
    """The manifest's date (YYYY-MM-DD), "undated" when it has none or is missing."""
    if os.path.exists(manifest):
        with open(manifest, newline="") as f:
            for rec in csv.reader(f):
                if len(rec) >= 2 and rec[0].strip() == "date" and rec[1].strip():
                    return rec[1].strip()[:10]
    return "undated"


def main(argv):
    if len(argv) != 5:
        sys.stderr.write("usage: prep.py PERF_CSV MANIFEST_CSV OUT_PLOTS_DIR TMP_DIR\n")
        return 2
    perf, manifest, outdir, tmp = argv[1:]
    loaded = load_perf(perf)
    if loaded is None:
        return 2
    all_rows, rows = loaded
    date = manifest_date(manifest)
    impls = impl_order(impl_key(r) for r in rows)
    color_of = {k: COLORS[i % len(COLORS)] for i, k in enumerate(impls)}

    def sq(r):
        return ival(r, "sq")

    def skv(r):
        return ival(r, "skv")

    batches = [r for r in rows if is_batch(r)]
    perf_rows = [r for r in rows if not r["name"].startswith("ref-") and not is_batch(r)]
    prefill = [r for r in perf_rows
               if sq(r) is not None and sq(r) == skv(r) and sq(r) > DECODE_MAX_SQ]
    # the paper suite's sweep (down to 16 tokens, up to B=128) gets its own figure: on the
    # model families' axes it would stretch their y range over four decades
    paper = [r for r in prefill if r["name"].startswith("paper-")]
    # FlashAttention-3's grid (the fa3 suite) in the style of its paper: a panel per head dim
    # and mask, TFLOP/s against sequence length
    fa3 = [r for r in prefill if r["name"].startswith("fa3-")]
    prefill = [r for r in prefill if not r["name"].startswith(("paper-", "fa3-"))]
    decode = [r for r in perf_rows if sq(r) is not None and sq(r) <= DECODE_MAX_SQ]
    ref = [r for r in rows if r["name"].startswith("ref-") and not is_batch(r)]
    # every measured shape is in some figure: the rest (prefill with Sq != Skv, say) as bars
    drawn = {id(r) for r in prefill + paper + fa3 + decode + ref + batches}
    other = [r for r in rows if id(r) not in drawn]

    for fig, why in (
            ("perf_prefill", lines_figure("perf_prefill", prefill, impls, color_of, date,
                                          outdir, tmp, False)),
            ("perf_paper", lines_figure("perf_paper", paper, impls, color_of, date,
                                        outdir, tmp, False, "Paper-suite prefill")),
            ("perf_fa3", lines_figure("perf_fa3", fa3, impls, color_of, date, outdir, tmp, False,
                                      "FA3-grid prefill",
                                      fa3_panel, ("batch", "hq", "hkv"))),
            ("perf_decode", lines_figure("perf_decode", decode, impls, color_of, date,
                                         outdir, tmp, True)),
            ("ref", ref_figure(ref, impls, color_of, date, outdir, tmp)),
            ("batches", batches_figure(batches, impls, color_of, date, outdir, tmp)),
            ("perf_other", other_figure(other, impls, color_of, date, outdir, tmp)),
            ("speedup", speedup_figure(rows, all_rows, date, outdir, tmp))):
        if why:
            print("skip %s %s" % (fig, why))
        else:
            print("%s %s" % (fig, {"ref": "bars.gp", "batches": "bars.gp", "perf_other": "bars.gp",
                                   "speedup": "speedup.gp"}.get(fig, "lines.gp")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
