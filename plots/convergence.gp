# convergence.gp: the convergence figure: per runtime a panel; thin lines: best-so-far of
# one shape class as % of the best found for it, against configurations timed; thick
# lines: the median over classes, one colour per search strategy. Loaded after the vars.gp
# that plots/metrics.py wrote. PNG, then SVG.

TOP_H = 0.10
LEGEND_W = 0.24
PW = (1.0 - LEGEND_W) / npanels

do for [term = 1:2] {
    if (term == 1) {
        set terminal pngcairo size 1400,800 enhanced font "Sans,11" linewidth 1.2 background rgb "white"
        set output out_png
    } else {
        set terminal svg size 1400,800 enhanced font "Sans,11" fontscale 1.25 linewidth 1.2 background rgb "white"
        set output out_svg
    }
    set multiplot
    set label 901 fig_title at screen 0.5, screen 0.965 center font "Sans,15"
    set label 902 fig_sub at screen 0.5, screen 0.925 center font "Sans,10" textcolor rgb "#444444"
    do for [p = 1:npanels] {
        set origin (p - 1) * PW, 0.0
        set size PW, 1.0 - TOP_H
        set lmargin 9
        set rmargin 2
        set tmargin 2
        set bmargin 4
        set border 3 lc rgb "#555555"
        set tics nomirror out scale 0.6 textcolor rgb "#222222"
        set xrange [0.8:xmax * 1.1]
        set logscale x 2
        set yrange [0:105]
        set ytics 0, 20, 100
        set grid xtics ytics lt 1 lc rgb "#E2E2E2" lw 1
        set xlabel "configurations timed (log_2)"
        set ylabel "best so far, % of the best found"
        set title P_title[p] offset 0, -0.6
        unset key
        if (p > 1) {
            unset label 901
            unset label 902
        }
        plot for [k = C_first[p]:C_last[p]] C_file[k] using 1:2 with steps lc rgb C_color[k] lw 0.8 dt 1 notitle, \
             for [k = M_first[p]:M_last[p]] M_file[k] using 1:2 with steps lc rgb M_color[k] lw 3.5 notitle
    }
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
    set key at screen 1.0 - LEGEND_W + 0.01, screen 0.85 left top Left reverse samplen 3 spacing 1.4 font "Sans,11" nobox
    plot NaN notitle, for [k = 1:nmed] keyentry with lines lc rgb M_color[k] lw 3.5 title M_title[k]
    unset multiplot
    set output
    unset label 901
    unset label 902
    set border
    set tics
}
