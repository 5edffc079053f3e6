/* manifest.h: the key,value record of where and how a result was produced (device,
 * driver, runtime and compiler versions, git commit, date, command line, host). */
#ifndef FABENCH_MANIFEST_H
#define FABENCH_MANIFEST_H

#include "csvio.h"
#include "rt.h"

/* Adds this run's facts to t (key,value): the GPU and provenance under plain keys
 * (gpu, gpu_slug, date, git_commit, host, ...), the runtime's own facts and the command
 * line under "<backend>." keys, so runs of several runtimes on one GPU share one file. */
int manifest_fill(csv_table *t, const rt_device *dev, int argc, char **argv);
/* For a command that replaces some rows of a finished run (`--update`): this command's
 * facts (manifest_fill's keys) go under "update.N." with N one past the highest N already in
 * t, so the run's own keys keep describing the rows it wrote; a manifest without a `gpu` key
 * takes the plain keys too. The prefix ("update.N.") is written to prefix. 0 or -1. */
int manifest_fill_update(csv_table *t, const rt_device *dev, int argc, char **argv, char *prefix, size_t plen);
/* One results folder holds one GPU's results: 0 when the manifest at path does not exist,
 * names no GPU or names this device's; otherwise 2, with err naming the file, the line of its
 * `gpu` key and both GPUs. Read only: for a command to call before it writes anything beside
 * the manifest (a fresh perf.csv), so that a command sent to another machine than the one
 * its folder is for stops before any work. */
int manifest_check_path(const char *path, const rt_device *dev, char *err, size_t errlen);
/* Loads PATH (or starts an empty manifest), checks it is this GPU's (as manifest_check_path),
 * fills it (manifest_fill, or with `update` manifest_fill_update), writes it back atomically.
 * Returns 0, 2 (PATH is not a manifest, or another GPU's) or -1; err filled on failure. */
int manifest_update(const char *path, const rt_device *dev, int argc, char **argv, int update, char *err, size_t errlen);
/* The highest N of the update.N. keys in t (0 when there are none): the record a command
 * that manifest_update(..., update = 1, ...) began is the last one. */
long manifest_last_update(const csv_table *t);
/* PREFIX.command (the command line), PREFIX.date (now, UTC) and PREFIX.run_id (the run its
 * rows carry): a later step's record in a manifest that keeps the run's own keys. 0 or -1. */
int manifest_note_command(csv_table *t, const char *prefix, int argc, char **argv);
/* Adds or replaces one key. 0 or -1. */
int manifest_set(csv_table *t, const char *key, const char *value);

#endif
