/* knobs_cmd.c: `fabench knobs`: the kernel's knobs as knobs.h lists them, for a person
 * (key and values) or as docs/kernel.md's Markdown table (tools/knob-table.sh puts it there). */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "config.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: fabench knobs [--markdown]\n\n"
               "The portable kernel's tuned knobs (bench/core/knobs.h): each key and the values it takes,\n"
               "one a line; --markdown: docs/kernel.md's table (key, values, who takes it, what it does).\n");
}

int cmd_knobs(int argc, char **argv)
{
    int markdown = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "--markdown")) { markdown = 1; continue; }
        fprintf(stderr, "fabench knobs: unknown argument '%s'\n", argv[i]);
        usage(stderr);
        return FB_EXIT_BADINPUT;
    }
    if (markdown) {
        knobs_print_markdown(stdout);
        return 0;
    }
    for (int k = 0; k < KNOB_COUNT; k++) printf("%-13s %s\n", knob((knob_id)k)->key, knob((knob_id)k)->allowed);
    return 0;
}
