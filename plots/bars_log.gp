# bars_log.gp: one panel of bars on a log scale, the value printed on each bar, a two-line
# label under it, a legend of colour groups: the configs figure (configurations explored,
# ours by status against the vendors') and the loc figure (kernel source size). Loaded
# after the vars.gp that plots/metrics.py wrote. Drawn twice: PNG (pngcairo), then SVG.

do for [term = 1:2] {
    if (term == 1) {
        set terminal pngcairo size fig_w,800 enhanced font "Sans,11" linewidth 1.2 background rgb "white"
        set output out_png
    } else {
        set terminal svg size fig_w,800 enhanced font "Sans,11" fontscale 1.25 linewidth 1.2 background rgb "white"
        set output out_svg
    }
    set label 901 fig_title at screen 0.5, screen 0.965 center font "Sans,15"
    set label 902 fig_sub at screen 0.5, screen 0.925 center font "Sans,10" textcolor rgb "#444444"
    set tmargin 7
    set bmargin 6
    set lmargin 12
    set rmargin 30
    set border 3 lc rgb "#555555"
    set tics nomirror out scale 0.6 textcolor rgb "#222222"
    set logscale y 10
    eval ytics_cmd
    set yrange [ymin:ymax]
    set xrange [-0.6:nbars - 0.4]
    set xtics scale 0 offset 0, -0.3 font "Sans,9"
    set grid noxtics ytics lt 1 lc rgb "#E2E2E2" lw 1
    set ylabel ylabel offset 1, 0
    set xlabel xlabel
    set style fill solid 0.9 border lc rgb "#333333"
    set key at screen 1.0 - 290.0 / fig_w, screen 0.85 left top Left reverse samplen 2 spacing 1.4 font "Sans,11" nobox
    bars = datadir . "/bars.dat"
    tics = datadir . "/tics.dat"
    plot bars using 1:2:($1 - 0.38):($1 + 0.38):(ymin):2:3 with boxxyerror lc rgb variable notitle, \
         bars using 1:2:4 with labels offset 0, 0.8 font "Sans,9" notitle, \
         tics using 1:(NaN):xtic(strcol(2) . "\n" . strcol(3)) with points notitle, \
         for [j = 1:ngroups] keyentry with boxes fc rgb G_color[j] title G_title[j]
    set output
    unset label 901
    unset label 902
}
