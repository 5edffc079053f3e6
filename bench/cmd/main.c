/* main.c: the fabench command line: dispatch to the subcommands (commands.h), `devices`, help. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "rt.h"
#include "timing.h"

static void usage_main(FILE *f)
{
    fprintf(f,
            "fabench: one portable flash-attention kernel, JIT-compiled per GPU runtime, measured\n"
            "against the vendors' attention libraries.\n\n"
            "usage: fabench COMMAND [options]   (fabench COMMAND --help for each)\n\n"
            "  devices   list runtimes and devices, and why an absent runtime is absent\n"
            "  run       verify and time the portable kernel on shapes; write perf.csv rows\n"
            "  tune      search the kernel's configuration space per shape class; explored.csv, tuning.csv\n"
            "  tune-replay  the searchers replayed over an exhaustive tune's times; convergence.csv\n"
            "  vendors   the vendors' kernels (PyTorch SDPA, FlexAttention) on the same shapes, verified\n"
            "  compile   compile for a GPU that need not be present; code metrics to codegen.csv\n"
            "  loc       non-blank, non-comment lines of C/C++/CUDA/OpenCL/Python sources\n"
            "  check-results    validate a results folder: columns, types, timings, tolerances, manifest\n"
            "  compare          B/A median time per (impl, shape) of two results, with a verdict\n"
            "  versus           the portable kernel against each vendor and the best one per shape, rows\n"
            "                   of one run; geomeans, faster / tie / slower; --markdown: a summary\n"
            "  codegen-summary  code diversity of compiled configurations: codegen_summary.csv\n"
            "  portability      other GPUs' tuned winners on this device, as %% of its own best\n"
            "  fit-fallback     fallback.csv: rules per regime for shapes without a tuned class, fitted to\n"
            "                   explored.csv; --loo checks them leaving one class out at a time\n"
            "  bandwidth        the device's memory bandwidth as a streaming kernel sees it (copy, read):\n"
            "                   the ceiling memory-bound attention is held against; bandwidth.csv\n"
            "  knobs            the kernel's tuned knobs and their values (--markdown: docs/kernel.md's table)\n"
            "  help      this text\n");
}

static void usage_devices(FILE *f)
{
    fprintf(f, "usage: fabench devices [--list]\n\n"
               "Lists every runtime compiled in (opencl), its devices as RUNTIME:INDEX selectors,\n"
               "and for an absent runtime the reason (library missing, no driver).\n"
               "  --list   one line per present device, tab separated: selector, gpu|cpu, name\n");
}

static int cmd_devices(int argc, char **argv)
{
    int list = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage_devices(stdout); return 0; }
        if (!strcmp(argv[i], "--list")) { list = 1; continue; }
        fprintf(stderr, "fabench devices: unknown argument '%s'\n", argv[i]);
        usage_devices(stderr);
        return FB_EXIT_BADINPUT;
    }
    if (!list) {
        rt_print_devices(stdout);
        return 0;
    }
    for (int r = 0; r < rt_count(); r++) {
        const rt_runtime *rt = rt_get(r);
        if (rt_status(r, NULL) != 0) continue;
        for (int d = 0; d < rt->device_count(); d++) {
            rt_device_info info;
            if (rt->device_info(d, &info) == 0)
                printf("%s:%d\t%s\t%s\n", rt->name, d, info.is_gpu ? "gpu" : "cpu", info.name);
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) { usage_main(stderr); return FB_EXIT_BADINPUT; }
    const char *cmd = argv[1];
    char err[FB_ERRLEN];
    if (fb_run_id_check(err, sizeof err) != 0) { /* rows would carry it: refused before any work */
        fprintf(stderr, "fabench: %s\n", err);
        return FB_EXIT_BADINPUT;
    }
    if (timing_batch_forced() < 0) {
        fprintf(stderr, "fabench: FABENCH_TIMING_BATCH='%s': a whole number of runs from 1 to %d\n",
                getenv("FABENCH_TIMING_BATCH"), TIMING_MAX_BATCH);
        return FB_EXIT_BADINPUT;
    }
    if (timing_mode_wanted() == TIMER_INVALID) {
        fprintf(stderr, "fabench: FABENCH_TIMER='%s': graph, gated or queue\n", getenv("FABENCH_TIMER"));
        return FB_EXIT_BADINPUT;
    }
    if (!strcmp(cmd, "devices")) return cmd_devices(argc - 1, argv + 1);
    if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "tune")) return cmd_tune(argc - 1, argv + 1);
    if (!strcmp(cmd, "tune-replay")) return cmd_tune_replay(argc - 1, argv + 1);
    if (!strcmp(cmd, "vendors")) return cmd_vendors(argc - 1, argv + 1);
    if (!strcmp(cmd, "compile")) return cmd_compile(argc - 1, argv + 1);
    if (!strcmp(cmd, "loc")) return cmd_loc(argc - 1, argv + 1);
    if (!strcmp(cmd, "check-results")) return cmd_check_results(argc - 1, argv + 1);
    if (!strcmp(cmd, "compare")) return cmd_compare(argc - 1, argv + 1);
    if (!strcmp(cmd, "versus")) return cmd_versus(argc - 1, argv + 1);
    if (!strcmp(cmd, "codegen-summary")) return cmd_codegen_summary(argc - 1, argv + 1);
    if (!strcmp(cmd, "portability")) return cmd_portability(argc - 1, argv + 1);
    if (!strcmp(cmd, "knobs")) return cmd_knobs(argc - 1, argv + 1);
    if (!strcmp(cmd, "bandwidth")) return cmd_bandwidth(argc - 1, argv + 1);
    if (!strcmp(cmd, "fit-fallback")) return cmd_fit_fallback(argc - 1, argv + 1);
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) { usage_main(stdout); return 0; }
    fprintf(stderr, "fabench: unknown command '%s'\n\n", cmd);
    usage_main(stderr);
    return FB_EXIT_BADINPUT;
}
