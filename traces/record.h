/*
 * record.h - one workload explored and, when a trace store is given,
 * recorded: the run with its IO log, results and crash states; on a
 * violation, the workload minimized (minimize.h) and the reproducer stored
 * with the violation.  What `btrsim explore` and each workload of
 * `btrsim campaign` do.
 */
#ifndef BTRSIM_TRACES_RECORD_H
#define BTRSIM_TRACES_RECORD_H

#include "traces/explore.h"
#include "traces/store.h"

struct record_opts {
	struct store *store;   /* NULL: explore only */
	const char *kind;      /* "explore", "campaign" */
	const char *build;     /* the build id stored with the run */
	const char *faults;    /* the fault plan's canonical text (o->faults's), or NULL */
	int64_t campaign_id;   /* 0: none */
	bool minimize;         /* minimize a violation into a reproducer */
};

struct record_outcome {
	struct explore_result res; /* res.results is freed by record_outcome_free */
	int64_t run_id;            /* 0 when not recorded */
	char *reproducer;          /* the minimized workload file, or NULL */
	char *script;              /* a kernel run's: the reproducer as a shell script */
};

/* Explores w under o (whose sink must be NULL: the store's is used), records
 * it, minimizes a violation.  Returns explore_run's 0 or 1, or -errno with
 * a message in err (a store error included: then nothing is recorded). */
int record_explore(const struct wl_workload *w, const struct explore_opts *o,
		   const struct record_opts *ro, struct record_outcome *out, char *err,
		   size_t errlen);
void record_outcome_free(struct record_outcome *out);

/* The time now as ISO-8601 UTC text ("2026-12-03T14:00:00Z"). */
void record_iso_now(char out[32]);

#endif
