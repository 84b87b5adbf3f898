/*
 * ace.h - bounded workloads in the style of ACE (CrashMonkey's Automatic
 * Crash Explorer): every workload of N core operations over a small set of
 * files and directories, each operation followed by a persistence point,
 * after a setup that makes the files and syncs.  Workload i of the
 * enumeration is a pure function of (seq, ops, files, i), so a campaign can
 * be split into shards and any workload named by its index.
 * traces/README.md, "Bounded workloads", lists the operations, their
 * arguments and the persistence points.
 */
#ifndef BTRSIM_TRACES_ACE_H
#define BTRSIM_TRACES_ACE_H

#include "traces/workload.h"

#include <stdint.h>

struct ace;

/*
 * The enumeration for workloads of `seq` core operations (1..3).  ops: a
 * comma-separated list of operation names (NULL: all of ace_op_names());
 * files: a comma-separated list of absolute file paths, 2 to 4 of them, at
 * most one directory level ("/foo", "/A/bar"; NULL: "/foo,/A/foo,/A/bar").
 * The last file does not exist after the setup, the others do.  Returns 0 or
 * -EINVAL with a message in err.
 */
int ace_new(unsigned seq, const char *ops, const char *files, struct ace **out, char *err,
	    size_t errlen);
/*
 * The subvolume set: the files (files: as above, NULL: "/foo,/A/bar") live
 * in a subvolume /S, and the setup snapshots it as /T; the core operations
 * are the file operations on them in /S and in /T, links and renames across
 * the two, and snapshot (as /U), subvol-create, subvol-delete, subvol-sync,
 * rmdir of a stand-in and of an empty subvolume, renames of subvolumes
 * (within the top level, into another subvolume, over a stand-in) and a
 * name created in a stand-in (traces/README.md lists them).  ops: from
 * ace_subvol_op_names() (NULL: all).  Workloads are named "seq-N-subvol/i".
 */
int ace_new_subvol(unsigned seq, const char *ops, const char *files, struct ace **out, char *err,
		   size_t errlen);
/* Quota groups on: the setup starts with quota-enable, so that every crash
 * state the workloads are judged in (after the setup) has them; workloads
 * are named "seq-N[-subvol]-quota/i".  0 or -ENOMEM; a second call does
 * nothing. */
int ace_set_quota(struct ace *a);
void ace_free(struct ace *a);
/* How many workloads the enumeration has. */
uint64_t ace_count(const struct ace *a);
/* How many ops the setup has: the explorer skips their crash points. */
size_t ace_setup_ops(const struct ace *a);
/* Workload i (< ace_count), named "seq-N/i".  0 or -ENOMEM/-EINVAL. */
int ace_workload(const struct ace *a, uint64_t i, struct wl_workload *out, char *err, size_t errlen);
/* "create,mkdir,...": every operation name ace_new accepts. */
const char *ace_op_names(void);
/* "create,write,...,subvol-sync": every operation name ace_new_subvol accepts. */
const char *ace_subvol_op_names(void);

#endif
