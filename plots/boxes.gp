# boxes.gp: the diversity figure: one panel per code metric, one box per (GPU, runtime,
# where the numbers come from) over all compiled configurations, with every configuration
# as a jittered dot. Loaded after the vars.gp that plots/metrics.py wrote. PNG, then SVG.

TOP_H = 0.10
ncols = npanels <= 3 ? npanels : 3
nrows = (npanels + ncols - 1) / ncols
PW = 1.0 / ncols
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
    set label 901 fig_title at screen 0.5, screen 0.97 center font "Sans,15"
    set label 902 fig_sub at screen 0.5, screen 0.935 center font "Sans,9" textcolor rgb "#444444"
    set style boxplot nooutliers range 1.5 fraction 0.95 separation 1 labels off
    set style data boxplot
    set boxwidth 0.55
    set style fill solid 0.25 border lc rgb "#333333"
    do for [p = 1:npanels] {
        col = (p - 1) % ncols
        row = (p - 1) / ncols
        set origin col * PW, 1.0 - TOP_H - (row + 1) * PH
        set size PW, PH
        set lmargin 9
        set rmargin 2
        set tmargin 2
        set bmargin 4.5
        set border 3 lc rgb "#555555"
        set tics nomirror out scale 0.6 textcolor rgb "#222222"
        set xrange [0.4:ngroups + 0.6]
        set yrange [*:*]
        set autoscale y
        set xtics () scale 0 font "Sans,8"
        do for [g = 1:ngroups] { set xtics add (G_label[g] g) }
        set grid noxtics ytics lt 1 lc rgb "#E2E2E2" lw 1
        set title P_title[p] offset 0, -0.6 font "Sans,11"
        unset key
        if (p > 1) {
            unset label 901
            unset label 902
        }
        plot for [k = P_first[p]:P_last[p]] E_file[k] using (E_group[k]):2 with boxplot \
                 lc rgb G_color[E_group[k]] lw 1.5 notitle, \
             for [k = P_first[p]:P_last[p]] E_file[k] using 1:2 with points pt 7 ps 0.45 \
                 lc rgb G_color[E_group[k]] notitle
    }
    unset multiplot
    set output
    unset label 901
    unset label 902
}
