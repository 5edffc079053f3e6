# lines.gp: perf_prefill and perf_decode. Loaded after the vars.gp that plots/prep.py
# wrote for the figure: small multiples, one panel per model family, one line per
# (impl, backend, variant) with p20/p80 error bars, a shared legend on the right.
# Drawn twice: PNG (pngcairo), then SVG.

LEGEND_W = 0.17          # screen fraction the legend column takes
TOP_H    = 0.085         # screen fraction for the figure title
PW = (1.0 - LEGEND_W) / ncols
PH = (1.0 - TOP_H) / nrows

do for [term = 1:2] {
    if (term == 1) {
        set terminal pngcairo size 1400,900 enhanced font "Sans,11" linewidth 1.2 background rgb "white"
        set output out_png
    } else {
        set terminal svg size 1400,900 enhanced font "Sans,11" fontscale 1.25 linewidth 1.2 background rgb "white"
        set output out_svg
    }
    set multiplot
    # the figure title and the one-line explanation under it
    set label 901 fig_title at screen 0.5, screen 0.975 center font "Sans,15"
    set label 902 fig_sub at screen 0.5, screen 0.94 center font "Sans,10" textcolor rgb "#444444"

    do for [p = 1:npanels] {
        col = (p - 1) % ncols
        row = (p - 1) / ncols
        set origin col * PW, 1.0 - TOP_H - (row + 1) * PH
        set size PW, PH
        set lmargin lmarg
        set rmargin 2
        set tmargin tmarg
        set bmargin 3.6
        set border 3 lc rgb "#555555"
        set tics nomirror out scale 0.6 textcolor rgb "#222222"
        set logscale x 2
        eval xtics_cmd
        set xrange [xmin:xmax]
        if (logy) {
            set logscale y 10
            set mytics 1
        } else {
            unset logscale y
        }
        eval ytics_cmd
        set yrange [ymin:ymax]
        set grid xtics ytics lt 1 lc rgb "#E2E2E2" lw 1
        set xlabel xlabel offset 0, 0.4
        # the y label on the left column only: the panels share the axis, and a label on a
        # right column's panel sat between two panels
        if (col == 0) { set ylabel ylabel offset 0.3, 0 } else { unset ylabel }
        set title P_title[p] offset 0, -0.6
        unset key
        if (p > 1) {   # the page title is drawn once, with the first panel
            unset label 901
            unset label 902
        }
        plot for [k = P_first[p]:P_last[p]] sprintf("%s/s%d.dat", datadir, k) \
             using 1:2:3:4 with yerrorlines lc rgb S_color[k] pt S_pt[k] dt S_dt[k] \
             lw 1.8 ps 1.1 notitle
    }

    # the legend column
    set origin 1.0 - LEGEND_W, 0.0
    set size LEGEND_W, 1.0 - TOP_H
    unset title
    unset xlabel
    unset ylabel
    unset grid
    unset logscale
    unset border
    unset tics
    set xrange [0:1]
    set yrange [0:1]
    set lmargin 0
    set rmargin 0
    set tmargin 0
    set bmargin 0
    set key at screen 1.0 - LEGEND_W + 0.012, screen 1.0 - TOP_H - 0.03 left top Left reverse samplen 3.2 spacing 1.25 \
        font "Sans,11" nobox
    plot NaN notitle, for [j = 1:nlegend] keyentry with linespoints lc rgb L_color[j] pt L_pt[j] \
         dt L_dt[j] ps L_ps[j] lw (L_ps[j] > 0.05 ? 1.8 : 0.01) title L_title[j]
    unset multiplot
    set output
    # labels are part of the state: drop them before the next terminal's pass
    unset label 901
    unset label 902
    set border
    set tics
}
