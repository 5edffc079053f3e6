/* perf.c: building perf.csv rows and progress lines from verification and timing. */
#include "perf.h"

#include <math.h>
#include <string.h>

const char *const perf_header[] = {
    "gpu", "backend", "impl", "config", "name", "dtype", "batch", "hq", "hkv", "sq", "skv", "d",
    "causal", "median_us", "p20_us", "p80_us", "min_us", "reps", "tflops", "gbps", "max_abs_err",
    "rel_l2_err", "status", "reason", "config_source", "lens", "qlens", "page", "l2_flush", "sm_mhz", "power_w",
    "temp_c", "clock_events", "launch_us", "batch_runs", "timer", "run_id", "utc", "err_bound_ratio", "lse_err"};
const size_t perf_ncols = sizeof perf_header / sizeof perf_header[0];
/* columns added since the first schema (lens, qlens, page, then l2_flush and the four
 * readings, then how the row was timed and the run it came from, then how close it came to
 * the verification's bound and its log-sum-exp's error): a file without some of them, from
 * the end, is an earlier schema */
#define PERF_NEWER_COLUMNS 15


long perf_find(const csv_table *t, const char *gpu, const char *backend, const char *impl, const char *name,
               dtype_t dt)
{
    int cg = csvt_col(t, "gpu"), cb = csvt_col(t, "backend"), ci = csvt_col(t, "impl"), cn = csvt_col(t, "name"),
        cd = csvt_col(t, "dtype");
    if (cg < 0 || cb < 0 || ci < 0 || cn < 0 || cd < 0) return -1;
    for (size_t r = 0; r < t->nrows; r++) {
        char **row = t->rows[r];
        if (!strcmp(row[cn], name) && !strcmp(row[ci], impl) && !strcmp(row[cb], backend) && !strcmp(row[cg], gpu) &&
            !strcmp(row[cd], dtype_name(dt)))
            return (long)r;
    }
    return -1;
}

int perf_has(const csv_table *t, const char *gpu, const char *backend, const char *impl, const char *name,
             dtype_t dt)
{
    return perf_find(t, gpu, backend, impl, name, dt) >= 0;
}

int perf_add(csv_table *t, const perf_row *r)
{
    return perf_put(t, r, 0);
}

int perf_put(csv_table *t, const perf_row *r, int replace)
{
    const shape_t *s = r->shape;
    const int timed = r->us != NULL && r->status == ST_OK;
    const int verified = r->ver && r->ver->rows_checked > 0;
    const double us = timed ? r->us->median : NAN;
    char f[16][64];
    snprintf(f[0], 64, "%s", dtype_name(r->dt));
    snprintf(f[1], 64, "%d", s->batch);
    snprintf(f[2], 64, "%d", s->hq);
    snprintf(f[3], 64, "%d", s->hkv);
    snprintf(f[4], 64, "%d", s->sq);
    snprintf(f[5], 64, "%d", s->skv);
    snprintf(f[6], 64, "%d", s->d);
    snprintf(f[7], 64, "%d", s->causal);
    fb_fmt_num(f[8], 64, us, "%.3f");
    fb_fmt_num(f[9], 64, timed ? r->us->p20 : NAN, "%.3f");
    fb_fmt_num(f[10], 64, timed ? r->us->p80 : NAN, "%.3f");
    fb_fmt_num(f[11], 64, timed ? r->us->min : NAN, "%.3f");
    if (timed) snprintf(f[12], 64, "%zu", r->us->n); else f[12][0] = 0;
    fb_fmt_num(f[13], 64, timed ? shape_flops(s) / (us * 1e-6) / 1e12 : NAN, "%.4f");
    fb_fmt_num(f[14], 64, timed ? shape_bytes(s, r->dt) / (us * 1e-6) / 1e9 : NAN, "%.2f");
    char e1[32], e2[32], lens[FB_MAX_LENS * 24], qlens[FB_MAX_LENS * 24], page[16] = "";
    shape_lens_str(s, lens, sizeof lens);
    if (shape_paged(s)) snprintf(page, sizeof page, "%d", s->page);
    shape_qlens_str(s, qlens, sizeof qlens);
    fb_fmt_num(e1, sizeof e1, verified ? r->ver->max_abs_err : NAN, "%.3g");
    fb_fmt_num(e2, sizeof e2, verified ? r->ver->rel_l2_err : NAN, "%.3g");
    /* the GPU's own readings over the timed runs: empty where nothing was read */
    const telemetry_summary *tel = timed && r->tel && r->tel->samples > 0 ? r->tel : NULL;
    char mhz[32], watts[32], temp[32], events[256] = "";
    fb_fmt_num(mhz, sizeof mhz, tel ? tel->sm_mhz : NAN, "%.0f");
    fb_fmt_num(watts, sizeof watts, tel ? tel->power_w : NAN, "%.1f");
    fb_fmt_num(temp, sizeof temp, tel ? tel->temp_c : NAN, "%.0f");
    if (tel) telemetry_events_str(tel->events, events, sizeof events);
    /* how it was timed: the host's enqueue time per run, the runs a sample, the gate */
    const timing_method *how = timed && r->how && r->how->batch > 0 ? r->how : NULL;
    char launch[32], batch[16] = "", utc[32];
    fb_fmt_num(launch, sizeof launch, how ? how->launch_us : NAN, "%.3f");
    if (how) snprintf(batch, sizeof batch, "%d", how->batch);
    fb_utc_now(utc, sizeof utc);
    /* the worst element's share of its row's bound (below 1 passes), the LSE's worst error
     * where the implementation returned one: empty where not verified or not returned */
    char ratio[32], lse_err[32];
    fb_fmt_num(ratio, sizeof ratio, verified ? r->ver->worst_ratio : NAN, "%.3g");
    fb_fmt_num(lse_err, sizeof lse_err, verified && r->ver->lse_checked ? r->ver->lse_max_err : NAN, "%.3g");
    const char *row[] = {r->gpu, r->backend, r->impl, r->config ? r->config : "", s->name, f[0], f[1], f[2], f[3],
                         f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12], f[13], f[14], e1, e2,
                         status_name(r->status), r->reason ? r->reason : "", r->config_source ? r->config_source : "",
                         lens, qlens, page, timed ? (r->l2_flush ? "1" : "0") : "", mhz, watts, temp, events,
                         launch, batch, how ? how->timer : "", fb_run_id(), utc, ratio, lse_err};
    const long at = replace ? perf_find(t, r->gpu, r->backend, r->impl, s->name, r->dt) : -1;
    return at >= 0 ? csvt_replace(t, (size_t)at, row) : csvt_add(t, row);
}

int perf_open_append(const char *path, csv_table **out, char *err, size_t errlen)
{
    /* a perf.csv written before the telemetry columns (or also page, qlens, lens) is read
     * into this schema, the old rows' new fields empty */
    return csvt_open_append_from(path, perf_header, perf_ncols, perf_ncols - PERF_NEWER_COLUMNS, out, err, errlen);
}

void perf_progress(FILE *f, size_t i, size_t n, const perf_row *r)
{
    const shape_t *s = r->shape;
    if (r->us && r->status == ST_OK) {
        double us = r->us->median;
        char gpu[192] = "";
        if (r->tel && r->tel->samples > 0 && !isnan(r->tel->sm_mhz)) {
            char ev[128];
            telemetry_events_str(r->tel->events, ev, sizeof ev);
            char w[32] = "";
            if (!isnan(r->tel->power_w)) snprintf(w, sizeof w, " %.0f W", r->tel->power_w);
            snprintf(gpu, sizeof gpu, "%.0f MHz%s%s%s  ", r->tel->sm_mhz, w, ev[0] ? " " : "", ev);
        }
        fprintf(f, "[%zu/%zu] %-34s %s %-15s %10.1f us  %8.3f TFLOP/s  %8.1f GB/s  err %.2g  %s%s%s%s%s\n", i, n, s->name,
                dtype_name(r->dt), r->impl, us, shape_flops(s) / (us * 1e-6) / 1e12,
                shape_bytes(s, r->dt) / (us * 1e-6) / 1e9, r->ver ? r->ver->max_abs_err : NAN, gpu,
                r->config ? r->config : "", r->config_source ? " (" : "", r->config_source ? r->config_source : "",
                r->config_source ? ")" : "");
    } else {
        fprintf(f, "[%zu/%zu] %-34s %s %-15s %s%s%s\n", i, n, s->name, dtype_name(r->dt), r->impl,
                status_name(r->status), r->reason && r->reason[0] ? ": " : "", r->reason ? r->reason : "");
    }
}
