/* record.c - explore, record, minimize (record.h). */
#include "traces/record.h"
#include "traces/minimize.h"
#include "traces/kernel.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void record_iso_now(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, 32, "@%lld", (long long)t);
}

void record_outcome_free(struct record_outcome *out)
{
	free(out->res.results);
	free(out->reproducer);
	free(out->script);
	memset(out, 0, sizeof(*out));
}

/* The words of the options, for the run's `config` column. */
static void config_text(const struct explore_opts *o, char *buf, size_t len)
{
	snprintf(buf, len, "disks=%u disk-size=%llu nodesize=%u max-subset=%u samples=%u torn=%u",
		 o->ndisks, (unsigned long long)o->disk_size, (unsigned)o->nodesize, o->max_subset,
		 o->samples, o->torn);
}

int record_explore(const struct wl_workload *w, const struct explore_opts *o,
		   const struct record_opts *ro, struct record_outcome *out, char *err,
		   size_t errlen)
{
	memset(out, 0, sizeof(*out));
	struct explore_opts q = *o;
	struct store_run *run = NULL;
	char started[32], ended[32], config[256];
	record_iso_now(started);
	config_text(o, config, sizeof(config));
	if (ro->store) {
		struct store_run_info info = { ro->kind, w, o, ro->faults, ro->build, config,
					       ro->campaign_id, started };
		if (store_run_begin(ro->store, &info, &run, err, errlen))
			return -EIO;
		q.sink = store_run_sink(run);
	}
	int r = explore_run(w, &q, &out->res, err, errlen);
	if (r < 0) {
		store_run_abort(run); /* a run that could not run has no result */
		return r;
	}
	if (r == 1 && ro->minimize) {
		struct wl_workload mw;
		struct explore_result mres;
		char merr[256];
		if (minimize_workload(w, o, out->res.violation_verdict, &mw, &mres, merr,
				      sizeof(merr)) == 0) {
			/* The stored violation keeps this run's state and picks;
			 * the reproducer's comments name its own crash state. */
			out->reproducer = minimize_reproducer(&mw, o, &mres);
			if (o->target == EXPLORE_KERNEL)
				out->script = kernel_script(&mw, o, &mres);
			free(mres.results);
			wl_free(&mw);
		} else {
			/* Minimization failed: the whole workload is the reproducer. */
			out->reproducer = minimize_reproducer(w, o, &out->res);
			if (o->target == EXPLORE_KERNEL)
				out->script = kernel_script(w, o, &out->res);
		}
	} else if (r == 1 && o->target == EXPLORE_KERNEL) {
		out->script = kernel_script(w, o, &out->res);
	}
	if (run) {
		record_iso_now(ended);
		if (store_run_end(run, &out->res, r, ended, out->reproducer, out->script,
				  &out->run_id, err, errlen))
			return -EIO;
	}
	return r;
}
