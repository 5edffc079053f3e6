/* sass.h: machine-code (SASS) instruction histograms of NVIDIA binaries, read from the text
 * that nvdisasm or cuobjdump -sass print. */
#ifndef FABENCH_SASS_H
#define FABENCH_SASS_H

#include <stddef.h>

#include "op_histogram.h"

/* Counts the instructions of a disassembly (nvdisasm, or cuobjdump -sass): a line whose
 * first token is an offset comment such as slash-star 0a40 star-slash, then an optional
 * predicate guard (@P0, @!PT, @UP1), then the opcode with its modifiers (HMMA.16816.F32.BF16),
 * which is what is counted. Headers, labels, directives and encoding-only lines are not
 * instructions. 0, or -1 (out of memory). */
int sass_histogram(const char *text, size_t len, op_histogram *h);

/* The disassembler to use: $FABENCH_SASS_TOOL when set ("none" disables), else nvdisasm,
 * else cuobjdump, found on PATH. Fills path (empty when none) and returns 1 when found. */
int sass_tool(char *path, size_t len);

/* Disassembles a cubin with the tool sass_tool found and counts its instructions.
 * 0; 1 when no tool is available (h empty); -1 when the tool failed (err says why). */
int sass_disassemble(const void *cubin, size_t len, op_histogram *h, char *err, size_t errlen);

#endif
