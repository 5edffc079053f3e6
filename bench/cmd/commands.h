/* commands.h: the subcommands of the fabench command line, each in its own file: in cmd/
 * (run_cmd.c, vendors_cmd.c, check_results.c, compare.c, versus.c, portability.c,
 * knobs_cmd.c, bandwidth_cmd.c), tune/ (tune.c, replay.c, fallback_fit.c) and metrics/ (codegen.c, loc.c,
 * codegen_summary.c), beside the code they drive; main.c dispatches to them. */
#ifndef FABENCH_COMMANDS_H
#define FABENCH_COMMANDS_H

int cmd_run(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_tune_replay(int argc, char **argv);
int cmd_vendors(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_loc(int argc, char **argv);
int cmd_check_results(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_versus(int argc, char **argv);
int cmd_codegen_summary(int argc, char **argv);
int cmd_portability(int argc, char **argv);
int cmd_knobs(int argc, char **argv);
int cmd_fit_fallback(int argc, char **argv);
int cmd_bandwidth(int argc, char **argv);

#endif
