# heatmap.gp: the portability figure: rows = where the configurations were tuned (GPU /
# runtime), columns = where they ran; colour and label = % of the column's own tuned best
# (geometric mean over shape classes); grey, "cannot run", where none could run there.
# Loaded after the vars.gp that plots/metrics.py wrote. PNG, then SVG.

do for [term = 1:2] {
    if (term == 1) {
        set terminal pngcairo size 1400,900 enhanced font "Sans,11" linewidth 1.2 background rgb "white"
        set output out_png
    } else {
        set terminal svg size 1400,900 enhanced font "Sans,11" fontscale 1.25 linewidth 1.2 background rgb "white"
        set output out_svg
    }
    set label 901 fig_title at screen 0.5, screen 0.965 center font "Sans,15"
    set label 902 fig_sub at screen 0.5, screen 0.925 center font "Sans,10" textcolor rgb "#444444"
    set tmargin 7
    set bmargin 7
    set lmargin 36
    set rmargin 16
    set border 0
    set xrange [-0.5:nto - 0.5]
    set yrange [nfrom - 0.5:-0.5]
    set xtics () scale 0 font "Sans,10"
    set ytics () scale 0 font "Sans,10"
    do for [j = 1:nto] { set xtics add (T_label[j] j - 1) }
    do for [i = 1:nfrom] { set ytics add (F_label[i] i - 1) }
    set xlabel "{/:Bold run on} (GPU / runtime)" offset 0, -0.5
    set ylabel "{/:Bold tuned on} (GPU / runtime)" offset -1, 0
    set cbrange [0:cbmax]
    set cblabel "% of the own tuned best"
    set palette defined (0 "#B2182B", 50 "#F4A582", 80 "#FDDBC7", 100 "#92C5DE", 120 "#2166AC")
    set palette maxcolors 0
    set style fill solid 1.0 border lc rgb "white"
    plot datadir . "/cells.dat" using 1:2:($1 - 0.5):($1 + 0.5):($2 - 0.5):($2 + 0.5):3 with boxxyerror \
             fc palette notitle, \
         datadir . "/fails.dat" using 1:2:($1 - 0.5):($1 + 0.5):($2 - 0.5):($2 + 0.5) with boxxyerror \
             fc rgb "#DDDDDD" notitle, \
         datadir . "/labels.dat" using 1:2:3 with labels font "Sans,11" notitle
    set output
    unset label 901
    unset label 902
}
