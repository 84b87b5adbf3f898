/*
 * raidcamp.h - fault campaigns on multi-disk volumes, profile by profile
 * (`btrsim raid-campaign`): for each profile and number of disks, a fresh
 * volume takes a seeded workload while or after a fault is injected (bit
 * flips at rest and in flight, latent sectors, lost and misdirected writes,
 * disks lost, a disk lost during a commit, a disk replaced and rebuilt, a
 * disk lost during a full balance);
 * then every acknowledged file is read back and the volume scrubbed.  Each
 * run is a row: faults injected, errors detected, repaired, files lost, and
 * files returned with wrong bytes (which must never happen).
 */
#ifndef BTRSIM_TRACES_RAIDCAMP_H
#define BTRSIM_TRACES_RAIDCAMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct rc_opts {
	uint64_t seed;
	unsigned disks[8]; /* volume sizes to run, e.g. 2, 4, 8 */
	size_t ndisks;
	uint64_t profiles; /* bit i: rc_profile_name(i); 0: all */
	unsigned files;    /* files in the workload */
	FILE *progress;    /* a line per run (NULL: quiet) */
};

struct rc_row {
	int profile;          /* index, rc_profile_name */
	unsigned disks;
	int scenario;         /* index, rc_scenario_name */
	bool within;          /* the fault stays within the profile's redundancy */
	bool mounted;         /* the volume mounted after the fault */
	uint64_t injected;    /* fault events that acted on the disks */
	uint64_t detected;    /* errors found by reads and the scrub */
	uint64_t repaired;    /* copies rewritten by reads and the scrub */
	uint64_t files;       /* acknowledged files checked */
	uint64_t lost;        /* of them unreadable (EIO, or the volume unmountable) */
	uint64_t wrong;       /* of them read back with wrong bytes */
	/* Why the fault never acted (NULL: it did, injected > 0): such a run
	 * is neither passed nor failed, and the report says why. */
	const char *not_injected;
};

const char *rc_profile_name(int i);
int rc_nprofiles(void);
const char *rc_scenario_name(int i);
int rc_nscenarios(void);
/* The profile index of a name (raid1, raid5, ...), -1 if none. */
int rc_profile_lookup(const char *name);

/* Runs every (profile, disks, scenario) the options name that the profile
 * allows on that many disks.  *rows (free it) gets one per run.  0, or
 * -errno with the reason in err. */
int rc_run(const struct rc_opts *o, struct rc_row **rows, size_t *nrows, char *err, size_t errlen);
/* Whether a row breaks the promise: wrong bytes, or a loss within redundancy. */
bool rc_row_failed(const struct rc_row *r);
/* The row's verdict in words: "FAILED", "not injected: WHY", "lost, mount
 * refused", "lost, detected", "ok". */
const char *rc_row_verdict(const struct rc_row *r, char *buf, size_t len);
/* The report: a table per profile, in Markdown. */
void rc_report(FILE *out, const struct rc_opts *o, const struct rc_row *rows, size_t nrows);

#endif
