/*
 * minimize.h - a violation cut down to a small reproducer: delta debugging
 * (Zeller and Hildebrandt's ddmin) over the operations of the workload, each
 * candidate explored until its first violation; then, in the last
 * exploration, over the persisted writes of the violating crash state
 * (explore.c drops them one at a time).  The result prints as a workload
 * file whose expectations are the results ref gave and whose comments say
 * which crash state breaks and how to explore it again.
 */
#ifndef BTRSIM_TRACES_MINIMIZE_H
#define BTRSIM_TRACES_MINIMIZE_H

#include "traces/explore.h"

#include <stdio.h>

/* At most this many explorations per minimization. */
#define MINIMIZE_MAX_RUNS 400

/*
 * w has a violation of kind `want` under o.  Fills *out with a sub-workload
 * (ops in their order, a 1-minimal set as far as MINIMIZE_MAX_RUNS allows)
 * whose exploration still gives a violation of that kind, and *res with that
 * exploration's result (res->results: free it).  Returns 0, or -errno with
 * a message in err (the workload is then left empty).
 */
int minimize_workload(const struct wl_workload *w, const struct explore_opts *o,
		      enum explore_verdict want, struct wl_workload *out, struct explore_result *res,
		      char *err, size_t errlen);

/* text as the rest of a "# " comment line: each newline in it starts a
 * new comment line; ends the line. */
void minimize_comment(FILE *f, const char *text);

/* The reproducer: comments (the violation, the crash state, the command
 * that finds it again) then the ops, each "= ERRNO" as ref gave it.  A
 * malloc'd text, or NULL when out of memory. */
char *minimize_reproducer(const struct wl_workload *w, const struct explore_opts *o,
			  const struct explore_result *res);

#endif
