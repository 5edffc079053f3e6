/* manifest.h: the key,value record of where and how a result was produced (device,
 * driver, runtime and compiler versions, git commit, date, command line, host). */
#ifndef FABENCH_MANIFEST_H
#define FABENCH_MANIFEST_H

#include "csvio.h"
#include "rt.h"

/* A new key,value table describing this run on dev (dev may be NULL). */
csv_table *manifest_new(const rt_device *dev, int argc, char **argv);
/* Adds or replaces one key. 0 or -1. */
int manifest_set(csv_table *t, const char *key, const char *value);

#endif
