# speedup.gp: the speedup figure. Loaded after the vars.gp that plots/prep.py wrote: one
# row per shape (in perf.csv's order, model families split by thin lines), one panel per
# backend of the portable kernel, each with its own x range; x (log scale): the best
# vendor's median time / the portable kernel's, as a bar from 1 (green: faster, vermillion:
# slower, grey: a tie, the two rows' p20..p80 spreads overlapping), a marker for the speedup
# over FlashAttention-2 alone; right of each panel, the
# ratio and the vendor it is against, then the ratio to FlashAttention-2.
# Drawn twice: PNG (pngcairo), then SVG.

do for [term = 1:2] {
    if (term == 1) {
        set terminal pngcairo size width,height enhanced font "Sans,11" linewidth 1.2 background rgb "white"
        set output out_png
    } else {
        set terminal svg size width,height enhanced font "Sans,11" fontscale 1.25 linewidth 1.2 background rgb "white"
        set output out_svg
    }
    set multiplot
    set label 901 fig_title at screen 0.5, screen title_y center font "Sans,15"
    set label 902 fig_sub at screen 0.5, screen sub_y center font "Sans,10" textcolor rgb "#444444"
    if (strlen(note) > 0) {
        set label 903 note at screen P_left[1], screen note_y left font "Sans,9" textcolor rgb "#444444"
    }
    unset key

    do for [p = 1:npanels] {
        set lmargin at screen P_left[p]
        set rmargin at screen P_right[p]
        set tmargin at screen plot_top
        set bmargin at screen plot_bot
        set border 3 lc rgb "#555555"
        set tics nomirror out scale 0.6 textcolor rgb "#222222"
        set logscale x 10
        unset mxtics
        eval P_xtics[p]
        xhi = P_xmax[p]
        set xrange [P_xmin[p]:xhi]
        set yrange [nshapes - 0.5:-0.5]
        set grid xtics noytics lt 1 lc rgb "#E2E2E2" lw 1
        set xlabel "speedup of the portable kernel (log scale)" offset 0, 0.3
        unset ylabel
        set title P_title[p] offset 0, -0.3 font "Sans,10.5"
        set style fill solid 0.85 border lc rgb "#333333"
        # the reference line at 1 (when in range) and the family separators
        if (P_xmin[p] < 1 && xhi > 1) {
            set arrow 1 from first 1, graph 0 to first 1, graph 1 nohead lc rgb "#222222" lw 1.5 front
        }
        do for [j = 1:nsep] {
            set arrow (10 + j) from graph 0, first SEP[j] to graph 1, first SEP[j] nohead \
                lc rgb "#BBBBBB" lw 0.8 back
        }
        # the value column's headings, right of the panel
        set label 1 "{/:Bold vs best vendor}" at graph 1, graph 1 left offset char 1.5, char 0.9 font "Sans,10"
        set label 2 "{/:Bold vs FA2}" at graph 1, graph 1 right offset char 20.5, char 0.9 font "Sans,10"
        bars = sprintf("%s/sp%d.dat", datadir, p)
        tics = datadir . "/tics.dat"
        if (p == 1) {
            set ytics scale 0 font "Sans,10"
        } else {
            set ytics scale 0 format ""
            unset label 901
            unset label 902
            unset label 903
        }
        # a bar from 1 to the speedup, the FA2 marker, the value column; y tic labels from
        # tics.dat on the first panel only
        body = "bars using (sqrt($2)):1:($2 < 1 ? $2 : 1):($2 < 1 ? 1 : $2):($1 - 0.36):($1 + 0.36):3" \
            . " with boxxyerror lc rgb variable notitle," \
            . " bars using 4:1 with points pt 13 ps 1.4 lc rgb c_fa2 notitle," \
            . " bars using (xhi):1:5 with labels left offset char 1.5, 0 font 'Sans,9' noenhanced" \
            . " tc rgb '#222222' notitle," \
            . " bars using (xhi):1:6 with labels right offset char 20.5, 0 font 'Sans,9' noenhanced" \
            . " tc rgb c_fa2 notitle"
        if (p == 1) {
            eval "plot " . body . ", tics using (NaN):1:ytic(2) with points notitle"
        } else {
            eval "plot " . body
        }
        unset arrow
        unset label 1
        unset label 2
        set ytics format "% h"
    }

    # the legend: one row across the figure under the subtitle
    unset label 901
    unset label 902
    unset label 903
    unset title
    unset xlabel
    unset grid
    unset border
    unset tics
    unset logscale
    set lmargin at screen 0.02
    set rmargin at screen 0.98
    set tmargin at screen 1
    set bmargin at screen 0
    set xrange [0:1]
    set yrange [0:1]
    set key at screen 0.5, screen key_y center top horizontal maxcols 4 maxrows 1 Left reverse samplen 2 width 1 \
        font "Sans,11" nobox
    plot NaN notitle, \
         keyentry with boxes fc rgb c_faster title "portable faster than the best vendor", \
         keyentry with boxes fc rgb c_slower title "portable slower than the best vendor", \
         keyentry with boxes fc rgb c_tie title "tie (p20..p80 spreads overlap)", \
         keyentry with points pt 13 ps 1.4 lc rgb c_fa2 title "speedup over FlashAttention-2 (torch-flash)"
    unset multiplot
    set output
    unset key
    set border
    set tics
}
