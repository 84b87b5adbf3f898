/*
 * findings.h - fuzzing findings and campaign statistics in the trace store
 * (tables findings and fuzz_stats of schema version 3; traces/README.md,
 * "Trace store"; fuzz/README.md, "Findings").  `make fuzz-run` records a
 * finding per distinct stack of each harness (UNIQUE (harness, stack_hash))
 * and the statistics AFL++ wrote; `btrsim findings` lists, exports and
 * replays them.  Every function that can fail returns 0 or -1 with a
 * one-line message in err.
 */
#ifndef BTRSIM_TRACES_FINDINGS_H
#define BTRSIM_TRACES_FINDINGS_H

#include "traces/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct finding {
	int64_t id;
	char *harness;    /* image, workload, parse */
	char *found;      /* ISO-8601 UTC */
	char *kind;       /* crash, hang, violation */
	char *signal;     /* SIGSEGV, SIGABRT, ... or NULL */
	char *stack_hash; /* the deduplication key */
	char *stack;      /* the top frames, one a line, or NULL */
	uint8_t *input;   /* the test case as AFL++ saved it */
	size_t input_len;
	uint8_t *minimized; /* afl-tmin's, or NULL */
	size_t minimized_len;
	bool fixed;       /* in the regression corpus fuzz/regress/, passing */
};

/* The kinds a finding may have. */
bool finding_kind_valid(const char *kind);

/*
 * Records f (id and fixed ignored; found NULL means now).  When the harness
 * already has a finding with that stack hash, nothing is changed and *known
 * is set; else it is inserted.  *id receives the id either way.
 */
int findings_add(struct store *s, const struct finding *f, int64_t *id, bool *known, char *err,
		 size_t errlen);
/* Loads finding id ("finding ID: no such finding" when absent); free with
 * finding_free. */
int findings_load(struct store *s, int64_t id, struct finding *out, char *err, size_t errlen);
void finding_free(struct finding *f);
/* Marks finding id fixed (or not). */
int findings_set_fixed(struct store *s, int64_t id, bool fixed, char *err, size_t errlen);
/* Prints a header and one line per finding (of one harness, or all when
 * harness is NULL), oldest first: ID HARNESS FOUND KIND SIGNAL STACK_HASH
 * INPUT MINIMIZED FIXED TOP-FRAME. */
int findings_list(struct store *s, const char *harness, FILE *out, char *err, size_t errlen);

/* One sample of a campaign's progress (fuzz_stats). */
struct fuzz_stat {
	const char *harness;
	const char *at;      /* ISO-8601 UTC */
	double elapsed;      /* seconds since the campaign began */
	int64_t execs;
	double execs_per_sec;
	int64_t corpus, crashes, hangs; /* -1: unknown (NULL) */
};
/* Records n samples in one transaction. */
int fuzz_stats_add(struct store *s, const struct fuzz_stat *st, size_t n, char *err,
		   size_t errlen);
/* Prints a header and the samples (of one harness, or all), oldest first. */
int fuzz_stats_list(struct store *s, const char *harness, FILE *out, char *err, size_t errlen);

#endif
