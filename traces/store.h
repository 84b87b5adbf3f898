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

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The schema version this code writes and understands. */
#define STORE_VERSION 1

struct store;

/* Opens the database at path, creating it when it does not exist, and
 * migrates its schema to STORE_VERSION.  On success *out is the store. */
int store_open(const char *path, struct store **out, char *err, size_t errlen);
/* The same, but a missing file is an error ("PATH: no such trace database")
 * and is not created. */
int store_open_existing(const char *path, struct store **out, char *err, size_t errlen);

/*
 * Records one `explore` run in one transaction: the workload's text (as
 * wl_print writes it; stored once per distinct SHA-256), the run's row
 * (seed, build, config, started/ended as ISO-8601 UTC text, res's counts and
 * seconds, the exit status) and, when res->violations > 0, the violation
 * text.  *run_id (may be NULL) receives the new run's id.
 */
int store_record_explore(struct store *s, const struct wl_workload *w, uint64_t seed,
			 const char *build, const char *config, const struct explore_result *res,
			 int status, const char *started, const char *ended, int64_t *run_id,
			 char *err, size_t errlen);

/* Prints a header line and one line per run, oldest first:
 * ID KIND STARTED WORKLOAD(first 12 hex digits of its hash) OPS STATES VIOLATIONS. */
int store_list_runs(struct store *s, FILE *out, char *err, size_t errlen);

/* Closes the database; NULL is allowed. */
void store_close(struct store *s);

#endif
