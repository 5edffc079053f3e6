# bars.gp: the ref and batches figures. Loaded after the vars.gp that plots/prep.py wrote: one
# panel per kind (prefill: TFLOP/s, decode: GB/s), a cluster of bars per shape, one bar per
# (impl, backend) with its value printed on top where it fits (value_labels), a shared legend
# on the right; canvas_w pixels wide.
# Drawn twice: PNG (pngcairo), then SVG.

LEGEND_W = 238.0 / canvas_w  # the legend keeps its width in pixels on a wide canvas
TOP_H    = 0.085
# panel widths in proportion to their number of shapes (a lone decode shape gets a
# narrower panel than the two prefill shapes), never under a third of the width
array PWID[npanels]
total = 0.0
do for [p = 1:npanels] { total = total + (P_nshapes[p] < 1 ? 1 : P_nshapes[p]) }
do for [p = 1:npanels] {
    PWID[p] = (1.0 - LEGEND_W) * (P_nshapes[p] < 1 ? 1 : P_nshapes[p]) / total
}
if (npanels > 1) {
    do for [p = 1:npanels] {
        if (PWID[p] < (1.0 - LEGEND_W) / 3.0) { PWID[p] = (1.0 - LEGEND_W) / 3.0 }
    }
    rest = 0.0
    do for [p = 1:npanels] { rest = rest + PWID[p] }
    do for [p = 1:npanels] { PWID[p] = PWID[p] * (1.0 - LEGEND_W) / rest }
}

do for [term = 1:2] {
    if (term == 1) {
        set terminal pngcairo size canvas_w,900 enhanced font "Sans,11" linewidth 1.2 background rgb "white"
        set output out_png
    } else {
        set terminal svg size canvas_w,900 enhanced font "Sans,11" fontscale 1.25 linewidth 1.2 background rgb "white"
        set output out_svg
    }
    set multiplot
    set label 901 fig_title at screen 0.5, screen 0.975 center font "Sans,15"
    set label 902 fig_sub at screen 0.5, screen 0.94 center font "Sans,10" textcolor rgb "#444444"

    x0 = 0.0
    do for [p = 1:npanels] {
        set origin x0, 0.0
        set size PWID[p], 1.0 - TOP_H
        x0 = x0 + PWID[p]
        set lmargin (tic_rotate != 0 && p == 1 ? 22 : 10)
        set rmargin 3
        set tmargin 2.5
        set bmargin (tic_rotate != 0 ? 16 : 5)
        set border 3 lc rgb "#555555"
        set tics nomirror out scale 0.6 textcolor rgb "#222222"
        unset logscale
        set xrange [-0.6:P_nshapes[p] - 0.4]
        set yrange [0:P_ymax[p]]
        if (tic_rotate != 0) {
            set xtics scale 0 rotate by tic_rotate right offset 0.5, -0.3 font "Sans,9"
        } else {
            set xtics scale 0 norotate offset 0, -0.3 font "Sans,11"
        }
        set ytics autofreq
        set grid noxtics ytics lt 1 lc rgb "#E2E2E2" lw 1
        unset xlabel
        set ylabel P_ylabel[p] offset 1, 0
        set title P_title[p] offset 0, -0.3
        set style fill solid 0.9 border lc rgb "#333333"
        unset key
        if (p > 1) {
            unset label 901
            unset label 902
        }
        bars = sprintf("%s/bars%d.dat", datadir, p)
        tics = sprintf("%s/tics%d.dat", datadir, p)
        if (value_labels) {
            plot bars using 1:2:3:4 with boxes lc rgb variable notitle, \
                 bars using 1:2:5 with labels offset 0, 0.8 font "Sans,9" notitle, \
                 tics using 1:(NaN):xtic(strcol(2) . "\n" . strcol(3)) with points notitle
        } else {
            plot bars using 1:2:3:4 with boxes lc rgb variable notitle, \
                 tics using 1:(NaN):xtic(strcol(2) . "\n" . strcol(3)) with points notitle
        }
    }

    set origin 1.0 - LEGEND_W, 0.0
    set size LEGEND_W, 1.0 - TOP_H
    unset title
    unset xlabel
    unset ylabel
    unset grid
    unset border
    unset tics
    set xrange [0:1]
    set yrange [0:1]
    set lmargin 0
    set rmargin 0
    set tmargin 0
    set bmargin 0
    set key at screen 1.0 - LEGEND_W + 0.012, screen 1.0 - TOP_H - 0.03 left top Left reverse samplen 2 spacing 1.4 \
        font "Sans,11" nobox
    set style fill solid 0.9 border lc rgb "#333333"
    set key title "{/:Bold impl / backend}" left
    plot NaN notitle, for [j = 1:nlegend] keyentry with boxes fc rgb L_color[j] title L_title[j]
    unset multiplot
    set output
    set key notitle
    unset label 901
    unset label 902
    set border
    set tics
}
