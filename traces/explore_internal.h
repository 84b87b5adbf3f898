/*
 * explore_internal.h - what explore.c (recording, replay, crash points) and
 * explore_judge.c (one crash state: mount, check, oracle) share.
 */
#ifndef BTRSIM_TRACES_EXPLORE_INTERNAL_H
#define BTRSIM_TRACES_EXPLORE_INTERNAL_H

#include "traces/explore.h"

#include <stdbool.h>
#include <stddef.h>

/* Where each operation's IO lies in the log, and whether it promised
 * durability on return. */
struct span {
	size_t start, end;
	bool persist;
	size_t line;
};

struct ex {
	const struct explore_opts *o;
	struct explore_result *res;
	const struct wl_workload *w;
	struct span *spans; /* nops + 1: the last is the final unmount */
	size_t nspans;
	char **snaps;       /* snaps[j]: the model's description after j operations */
	uint64_t rng;
	uint32_t sector;
	bool sim_faults;    /* the plan damages disks: detected corruption is no violation */
	bool stop;          /* the sink or stop_first asked to stop */
};

/* Judges the crashed volume v at crash point `point`: returns its verdict,
 * with the reason in why (for every verdict but ok). */
enum explore_verdict explore_judge(const struct ex *x, sim_volume *v, size_t point, char *why,
				   size_t whylen);

#endif
