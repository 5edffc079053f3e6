/* commands.h: the subcommands of the fabench command line, each in its own file
 * (run_cmd.c, tune.c, vendors_cmd.c, codegen.c, loc.c, check_results.c, compare.c,
 * versus.c, codegen_summary.c, portability.c, fallback_fit.c); main.c dispatches to them. */
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

#endif
