/*
 * plan.h - fault plans: which libfiu fault points of ref/ and sim/ fire, when,
 * and with which errno, plus sim's scheduled faults (bit flips, latent
 * sectors, lost and misdirected writes, device loss), all from one text file
 * whose decisions depend on nothing but a seed.
 *
 * A plan is a text, one fault per line, '#' starting a comment:
 *
 *     POINT [nth=N | p=PROB] [count=N] [errno=ENAME]
 *     sim KIND[,key=value...]
 *
 * POINT is a name of the catalogue (fault_points(), faults/README.md).  With
 * nth=N the point fires on its Nth hit (and the count-1 hits after it; count
 * is 1 by default); with p=PROB each hit fires with that probability, drawn
 * from a splitmix64 stream of the seed and the point's name (at most count
 * times; no limit by default); with neither it fires on every hit (on the
 * first count hits when count is given).  errno is one the point produces
 * (its catalogue entry lists them); the default is the first.  A point
 * appears at most once.  A `sim` line is sim's fault text (sim_fault_parse,
 * sim/README.md), added to the volume when the plan is armed.
 *
 * Hits are counted from the moment the plan is armed.  Every function that
 * can fail returns 0 or a negative errno and writes one line to err (parse
 * errors as "FILE:LINE: message").  The module is single-threaded: one plan
 * is armed at a time, and the code that hits its points runs on the thread
 * that armed it.
 */
#ifndef BTRSIM_FAULTS_PLAN_H
#define BTRSIM_FAULTS_PLAN_H

#include "sim/sim.h"

#include <stddef.h>
#include <stdint.h>

/* ---- The catalogue (points.c) ---- */

#define FAULT_MAX_ERRNOS 4

struct fault_point {
	const char *name;  /* "ref/commit/flush": the FP_* macro of faults/points.h */
	const char *where; /* file and function */
	const char *what;  /* what a firing simulates, and what ref does about it */
	/* the errnos it may give (positive), the default first, 0-ended */
	int errnos[FAULT_MAX_ERRNOS];
};

/* Every point, in catalogue order; *n gets the count. */
const struct fault_point *fault_points(size_t *n);
/* The point of that name, or NULL. */
const struct fault_point *fault_point_find(const char *name);
/* errno names: "EIO" for 5 (NULL when unknown), and back (0 when unknown). */
const char *fault_errno_name(int err);
int fault_errno_parse(const char *name);

/* ---- Plans ---- */

struct fault_plan;

/* Parses a plan; name is the FILE of error messages.  On success *out is a
 * new plan (fault_plan_free); on error *out is NULL and the result -EINVAL
 * (bad text), -EFBIG (over 1 MiB) or -ENOMEM. */
int fault_plan_parse_text(const char *name, const char *text, size_t len, struct fault_plan **out,
			  char *err, size_t errlen);
/* The same for a file (at most 1 MiB); its path is the FILE of messages;
 * a file that cannot be read gives its -errno ("PATH: reason"). */
int fault_plan_parse_file(const char *path, struct fault_plan **out, char *err, size_t errlen);
/* The canonical text of a plan (malloc'd, NUL-terminated, every default
 * spelled out, comments dropped): parsing it gives the same plan. */
int fault_plan_format(const struct fault_plan *p, char **text);
void fault_plan_free(struct fault_plan *p);
/* Point lines and sim lines of a plan. */
size_t fault_plan_npoints(const struct fault_plan *p);
size_t fault_plan_nsims(const struct fault_plan *p);

/*
 * Arms a plan: its points enabled in libfiu (fiu_enable_external, with a
 * callback that decides from the hit count or the seed's random stream), and
 * its sim lines added to vol with sim_fault_add (they stay in the volume
 * until sim_fault_clear; disarming does not remove them).  vol may be NULL
 * for a plan without sim lines; a plan with sim lines and no volume is
 * -EINVAL, as is a sim line that does not fit the volume (checked before
 * anything is armed).  -EBUSY when a plan is armed already.  On error nothing
 * is armed (but for running out of memory while adding sim lines: those added
 * stay in the volume).  The plan may be freed while armed.
 */
int fault_plan_arm(const struct fault_plan *p, uint64_t seed, sim_volume *vol, char *err,
		   size_t errlen);
/* Disables every point the armed plan enabled and forgets its counts; a
 * no-op when none is armed. */
void fault_plan_disarm(void);

/* How often each point of the armed plan was hit and fired since it was
 * armed, in the plan's order (NULL, 0 when no plan is armed).  Valid until
 * fault_plan_disarm.  sim lines are not counted here: the IO log records
 * every fault sim applies. */
struct fault_count {
	const char *point;
	uint64_t hits, fired;
};
const struct fault_count *fault_plan_counts(size_t *n);
/* The fires of one point of the armed plan (0 when it is not in it). */
uint64_t fault_plan_fired(const char *point);

#endif
