/*
 * store.h - the SQLite trace store: a database file in which `btrsim explore
 * --db FILE` records each run (its options, build, times, counts, exit
 * status), the workload it ran (deduplicated by the SHA-256 of its text) and
 * its violations; `btrsim runs --db FILE` lists them.  traces/README.md,
 * "Trace store", has the schema and useful queries.
 *
 * The database is in WAL mode; its schema version is PRAGMA user_version
 * (STORE_VERSION), migrated forward on open.  A database from a newer btrsim,
 * or a file that is not SQLite, is refused with a message, never damaged.
 * Every function that can fail returns 0 or -1 with a one-line message in err.
 */
#ifndef BTRSIM_TRACES_STORE_H
#define BTRSIM_TRACES_STORE_H

#include "traces/explore.h"
#include "traces/workload.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The schema version this code writes and understands. */
#define STORE_VERSION 8

struct store;

/* Opens the database at path, creating it when it does not exist, and
 * migrates its schema to STORE_VERSION.  On success *out is the store. */
int store_open(const char *path, struct store **out, char *err, size_t errlen);
/* The same, but a missing file is an error ("PATH: no such trace database")
 * and is not created. */
int store_open_existing(const char *path, struct store **out, char *err, size_t errlen);

/* ---- Merging stores (store_merge.c; btrsim merge) ---- */

struct store_merge_stats {
	int64_t runs, runs_there;           /* runs added, runs already in the store */
	int64_t campaigns, workloads, states, violations, findings, fuzz_stats, raid_campaigns;
};
/* Adds everything of the store at in_path (which must be of this schema
 * version: it is read, never changed) to s: campaigns, runs with their IO
 * log, results, crash states, fault hits and violations, workloads and
 * payloads (the same text or bytes stored once), fuzzing findings (one per
 * harness and stack) and statistics, RAID fault campaigns.  Ids are
 * renumbered; each merged row keeps where it first came from (origin), so a
 * store merged twice, or two stores holding the same merged rows, add
 * nothing the second time.  One transaction: all of it or nothing. */
int store_merge(struct store *s, const char *in_path, struct store_merge_stats *st, char *err,
		size_t errlen);

/* ---- Recording a run ---- */

/* What a run is, as `btrsim replay` needs it to run it again. */
struct store_run_info {
	const char *kind;               /* "explore", "campaign" */
	const struct wl_workload *w;
	const struct explore_opts *o;   /* seed, disks, mkfs and exploration options */
	const char *faults;             /* the fault plan's canonical text, or NULL */
	const char *build, *config;     /* free text: the build id, the options in words */
	int64_t campaign_id;            /* 0: none */
	const char *started;            /* ISO-8601 UTC */
};

struct store_run; /* a run being recorded: one transaction */

/* Starts recording a run (BEGIN IMMEDIATE; the workload is stored once per
 * distinct SHA-256 of its text).  Pass store_run_sink(r) as the
 * explore_opts' sink: it stores the IO log (payloads zlib-compressed,
 * content-addressed by XXH3-128), every op's result and every crash state. */
int store_run_begin(struct store *s, const struct store_run_info *info, struct store_run **out,
		    char *err, size_t errlen);
const struct explore_sink *store_run_sink(struct store_run *r);
/*
 * Ends the run: its counts and status, its violation (the first one, with
 * the minimized picks and, when not NULL, a reproducer: a workload file, and
 * for a kernel run a shell script),
 * and commits.  *run_id (may be NULL) receives its id.  The run is freed,
 * committed or not.  A sink error met while recording is reported here.
 */
int store_run_end(struct store_run *r, const struct explore_result *res, int status,
		  const char *ended, const char *reproducer, const char *script, int64_t *run_id,
		  char *err, size_t errlen);
/* Forgets a run that could not run (rolls back) and frees it; NULL allowed. */
void store_run_abort(struct store_run *r);

/* ---- Campaigns ---- */

int store_campaign_begin(struct store *s, const char *args, uint64_t seed, const char *build,
			 const char *started, int64_t *id, char *err, size_t errlen);
int store_campaign_end(struct store *s, int64_t id, size_t workloads, size_t states,
		       size_t violations, double seconds, int status, const char *ended, char *err,
		       size_t errlen);

/* ---- RAID fault campaigns (traces/raidcamp.h) ---- */

struct rc_opts;
struct rc_row;
/* Records a finished RAID fault campaign and its n rows in one transaction;
 * *id (may be NULL) receives its id.  0, or -1 with err. */
int store_raid_campaign(struct store *s, const char *args, const char *build, const char *started,
			const struct rc_opts *o, const struct rc_row *rows, size_t n, int64_t *id,
			char *err, size_t errlen);

/* ---- Reading a run back ---- */

struct store_run_row {
	int64_t id;
	char *kind, *workload, *faults; /* faults NULL when none */
	char *build;                    /* the build that recorded it (NULL: not stored) */
	struct explore_opts o;          /* sink, log and faults left NULL; o.mount_options
					 * points into mount_options */
	char *mount_options;            /* the kernel target's --mount-options, or NULL */
	char *check_cmd;                /* explore --check's checker (o.check_cmd), or NULL */
	size_t mkfs_ios, ops, states, violations;
	int status;
};
/* Loads run `id` ("run ID: no such run" when absent).  Free with
 * store_run_row_free. */
int store_load_run(struct store *s, int64_t id, struct store_run_row *out, char *err,
		   size_t errlen);
void store_run_row_free(struct store_run_row *r);

/* The run's IO log with its payloads (decompressed and checked against their
 * hash): *log has *n entries; free with store_log_free. */
int store_load_log(struct store *s, int64_t id, struct sim_io **log, size_t *n, char *err,
		   size_t errlen);
void store_log_free(struct sim_io *log, size_t n);
/* The run's op results (0 or a positive errno), nops of them. */
int store_load_results(struct store *s, int64_t id, int **results, size_t *nops, char *err,
		       size_t errlen);
/* Crash state k of the run: its point and picks (malloc'd) and verdict. */
int store_load_state(struct store *s, int64_t id, size_t k, size_t *point, char **picks,
		     char verdict[16], char *err, size_t errlen);

/* Prints the violations (of one run, or all when run_id is 0): id, run,
 * state, verdict, description, and with `full` the reproducer; "no violations"
 * (in run N) when there is none. */
int store_list_violations(struct store *s, int64_t run_id, bool full, FILE *out, char *err,
			  size_t errlen);
/* Prints violation id's reproducer, a workload file, to out; with script,
 * its stand-alone shell script instead (a violation of a kernel run). */
int store_print_reproducer(struct store *s, int64_t id, bool script, FILE *out, char *err,
			   size_t errlen);

/* Prints a header line and one line per run, oldest first:
 * ID KIND STARTED WORKLOAD(first 12 hex digits of its hash) OPS IOS STATES
 * VIOLATIONS; campaign_id > 0 lists that campaign's runs only. */
int store_list_runs(struct store *s, int64_t campaign_id, FILE *out, char *err, size_t errlen);

/* Closes the database; NULL is allowed. */
void store_close(struct store *s);

#endif
