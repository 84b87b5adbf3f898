/*
 * campaign.h - many workloads explored and recorded in one go: the bounded
 * enumeration of ace.h (seq-N), seeded random workloads (wl_generate), or a
 * fault sweep (each fault point of faults/ in turn over a workload set).
 * Every workload is a run of the trace store under one campaign row;
 * violations are minimized and printed with their reproducers.
 */
#ifndef BTRSIM_TRACES_CAMPAIGN_H
#define BTRSIM_TRACES_CAMPAIGN_H

#include "traces/record.h"

#include <stdio.h>

struct campaign_opts {
	unsigned seq;              /* ACE workloads of this many core ops (0: none) */
	const char *ops, *files;   /* ACE's sets (NULL: the defaults) */
	bool subvol;               /* ACE's subvolume set (ace_new_subvol), and random
				    * workloads with subvolume operations (wl_gen_opts.subvols) */
	struct wl_mount mount;     /* every workload's header (--compress, --compress-force) */
	bool defrag;               /* random workloads include defrag (wl_gen_opts.defrag) */
	bool reflink;              /* and clone, clone-range, dedupe (wl_gen_opts.reflink) */
	bool quota;                /* every workload starts with quota-enable: ACE's setup
				    * (ace_set_quota), random ones (wl_gen_opts.quota) */
	size_t random;             /* this many random workloads (seeds seed, seed+1, ...) */
	size_t random_ops;         /* of this many operations each */
	unsigned shard, shards;    /* run workload i only when i % shards == shard */
	uint64_t limit;            /* at most this many workloads (0: all) */
	bool fault_sweep;          /* each fault point in turn (nth=1, nth=4), over every workload */
	bool count_only;           /* only count the workloads it would run (res->workloads) */
	struct explore_opts o;     /* for every workload (its sink must be NULL) */
	struct record_opts ro;     /* store, build, minimize (kind set here) */
	const char *args;          /* the command line, stored with the campaign */
	FILE *out;                 /* violations, failures and the summary */
	FILE *progress;            /* a progress line, rewritten in place (NULL: none) */
};

struct campaign_result {
	size_t workloads, states, violations, detected, failures; /* workloads: runs explored */
	size_t degraded_states, write_hole; /* --lose-disk: states judged with a disk lost, unreadable */
	size_t cached;             /* states given what ref found in an earlier state's disks (the memo) */
	double seconds;
	int64_t id;                /* the campaign's row, 0 when not stored */
};

/* Runs the campaign.  Returns 0 when every state of every workload was
 * consistent, 1 when some violation was found, -errno when it could not
 * run (err).  A workload that cannot run counts as a failure (printed) and
 * makes the result 1. */
int campaign_run(const struct campaign_opts *c, struct campaign_result *res, char *err,
		 size_t errlen);

#endif
