/*
 * explore.h - crash-state exploration: a workload runs on ref over memory
 * disks with every write recorded; then the recorded IO is replayed onto a
 * copy of the disks as they were before it, and at every crash point (before
 * each flush and each FUA write, and at the end) the volatile writes of that
 * moment are kept or dropped in every combination (all subsets up to K of
 * them, seeded samples beyond, and torn multi-sector writes).  Each crash
 * state must mount, check clean and show a state the oracle allows: the
 * model's state after some operation between the last completed persistence
 * operation (fsync, fdatasync, sync) and the last one started.
 */
#ifndef BTRSIM_TRACES_EXPLORE_H
#define BTRSIM_TRACES_EXPLORE_H

#include "traces/workload.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct explore_opts {
	uint64_t seed;       /* the sampling and tearing choices */
	unsigned max_subset; /* all subsets while at most this many writes are volatile (10) */
	unsigned samples;    /* random subsets beyond that (64) */
	unsigned torn;       /* states with one write torn, per crash point (4) */
	uint64_t disk_size;  /* bytes (512 MiB) */
	uint32_t nodesize;   /* of the new file system (16 KiB) */
	FILE *log;           /* one line per crash point (NULL: quiet) */
};
void explore_defaults(struct explore_opts *o);

struct explore_result {
	size_t ops, crash_points, states, violations;
	double seconds;
	char violation[4096]; /* the first one: where, and the diff */
};

/* Runs w and explores its crash states.  Returns 0 when every state is
 * consistent, 1 when some is not (res->violation says which), or -errno
 * when the exploration itself could not run (message in err). */
int explore_run(const struct wl_workload *w, const struct explore_opts *o,
		struct explore_result *res, char *err, size_t errlen);

#endif
