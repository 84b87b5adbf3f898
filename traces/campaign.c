/* campaign.c - many workloads explored and recorded (campaign.h). */
#include "traces/campaign.h"
#include "traces/ace.h"
#include "traces/run.h"
#include "faults/plan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The hits at which a sweep fires each point: the first, and a later one
 * (by then a commit or two is under way). */
static const unsigned sweep_nth[] = { 1, 4 };
#define NSWEEP_NTH (sizeof(sweep_nth) / sizeof(sweep_nth[0]))

struct camp {
	const struct campaign_opts *c;
	struct campaign_result *res;
	uint64_t total, done;      /* runs: workloads x sweep plans */
	uint64_t workloads;        /* workloads begun (what --limit counts) */
	double t0, last_progress;
	struct fault_plan **sweep;  /* fault_sweep: one plan per point and nth */
	char **sweep_text;
	size_t nsweep;
};

static void progress(struct camp *k, bool final)
{
	FILE *p = k->c->progress;
	double t = now();
	if (!p || (!final && t - k->last_progress < 0.5))
		return;
	k->last_progress = t;
	double el = t - k->t0, rate = el > 0 ? (double)k->res->states / el : 0;
	double eta = k->done ? el / (double)k->done * (double)(k->total - k->done) : 0;
	fprintf(p, "\r%" PRIu64 "/%" PRIu64 " workloads, %zu states (%.0f/s), %zu violations, ETA %.0fs  %s",
		k->done, k->total, k->res->states, rate, k->res->violations, eta, final ? "\n" : "");
	fflush(p);
}

/* Explores and records one workload of the campaign under one fault plan
 * (NULL: the campaign's). */
static int one_run(struct camp *k, const struct wl_workload *w, const struct explore_opts *base,
		   const struct fault_plan *plan, const char *plan_text, char *err, size_t errlen)
{
	const struct campaign_opts *c = k->c;
	struct record_opts ro = c->ro;
	ro.kind = "campaign";
	ro.campaign_id = k->res->id;
	struct explore_opts q = *base;
	const struct explore_opts *o = &q;
	if (plan) {
		q.faults = plan;
		ro.faults = plan_text;
	}
	struct record_outcome out;
	char werr[1024];
	int r = record_explore(w, o, &ro, &out, werr, sizeof(werr));
	k->done++;
	k->res->workloads++;
	if (r == -EIO && c->ro.store) {
		/* The store failed: the campaign cannot record anything more. */
		snprintf(err, errlen, "%s: %s", w->name ? w->name : "workload", werr);
		record_outcome_free(&out);
		return -EIO;
	}
	if (r < 0) {
		k->res->failures++;
		fprintf(c->out, "%s: cannot explore: %s\n", w->name ? w->name : "workload", werr);
	} else {
		k->res->states += out.res.states;
		k->res->detected += out.res.detected;
		k->res->cached += out.res.cached;
		k->res->degraded_states += out.res.degraded_states;
		k->res->write_hole += out.res.write_hole;
	}
	if (r == 1) {
		k->res->violations++;
		if (c->progress)
			fputc('\n', c->progress);
		fprintf(c->out, "VIOLATION %s", w->name ? w->name : "workload");
		if (plan)
			fprintf(c->out, " with fault %.*s", (int)strcspn(plan_text, "\n"), plan_text);
		if (out.run_id)
			fprintf(c->out, " (run %lld)", (long long)out.run_id);
		fprintf(c->out, ": %s\n", out.res.violation);
		if (out.reproducer)
			fprintf(c->out, "%s", out.reproducer);
	}
	record_outcome_free(&out);
	progress(k, false);
	return 0;
}

/* One workload: as it is, or once per plan of the fault sweep. */
static int one(struct camp *k, const struct wl_workload *w, const struct explore_opts *o,
	       char *err, size_t errlen)
{
	k->workloads++;
	if (!k->c->fault_sweep)
		return one_run(k, w, o, NULL, NULL, err, errlen);
	for (size_t i = 0; i < k->nsweep; i++) {
		int r = one_run(k, w, o, k->sweep[i], k->sweep_text[i], err, errlen);
		if (r)
			return r;
	}
	return 0;
}

static void sweep_free(struct camp *k)
{
	for (size_t i = 0; i < k->nsweep; i++) {
		fault_plan_free(k->sweep[i]);
		free(k->sweep_text[i]);
	}
	free(k->sweep);
	free(k->sweep_text);
}

/* A plan "POINT nth=N" for every point of the catalogue and every N of sweep_nth. */
static int sweep_plans(struct camp *k, char *err, size_t errlen)
{
	size_t np;
	const struct fault_point *fp = fault_points(&np);
	k->sweep = calloc(np * NSWEEP_NTH, sizeof(*k->sweep));
	k->sweep_text = calloc(np * NSWEEP_NTH, sizeof(*k->sweep_text));
	if (!k->sweep || !k->sweep_text) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < np; i++)
		for (size_t j = 0; j < NSWEEP_NTH; j++) {
			char line[160];
			snprintf(line, sizeof(line), "%s nth=%u\n", fp[i].name, sweep_nth[j]);
			struct fault_plan *p;
			int r = fault_plan_parse_text("fault sweep", line, strlen(line), &p, err, errlen);
			if (r)
				return r;
			k->sweep[k->nsweep] = p;
			if (fault_plan_format(p, &k->sweep_text[k->nsweep++])) {
				snprintf(err, errlen, "out of memory");
				return -ENOMEM;
			}
		}
	return 0;
}

static int run_ace(struct camp *k, const struct ace *a, char *err, size_t errlen)
{
	const struct campaign_opts *c = k->c;
	struct explore_opts o = c->o;
	o.skip_ops = ace_setup_ops(a);
	uint64_t n = ace_count(a);
	for (uint64_t i = c->shard; i < n && (!c->limit || k->workloads < c->limit); i += c->shards) {
		struct wl_workload w;
		int r = ace_workload(a, i, &w, err, errlen);
		w.mount = c->mount;
		/* with compression: text data, which it compresses */
		for (size_t j = 0; !r && c->mount.compress && j < w.n; j++)
			if (w.ops[j].kind == WL_WRITE)
				w.ops[j].flags |= WL_WRITE_TEXT;
		if (!r)
			r = one(k, &w, &o, err, errlen);
		wl_free(&w);
		if (r)
			return r;
	}
	return 0;
}

static int run_random(struct camp *k, char *err, size_t errlen)
{
	const struct campaign_opts *c = k->c;
	for (uint64_t i = c->shard; i < c->random && (!c->limit || k->workloads < c->limit);
	     i += c->shards) {
		struct wl_gen_opts g;
		wl_gen_defaults(&g);
		g.seed = c->o.seed + i;
		g.ops = c->random_ops;
		g.max_offset = UINT64_C(1) << 20; /* keep crash states small: 1 MiB files */
		g.max_len = 64 << 10;
		g.subvols = c->subvol;
		g.quota = c->quota;
		g.text = c->mount.compress != 0;
		g.defrag = c->defrag;
		g.reflink = c->reflink;
		struct wl_workload w = { 0 };
		int r = wl_generate(&g, &w);
		char name[64];
		snprintf(name, sizeof(name), "random%s%s/%" PRIu64, c->subvol ? "-subvols" : "",
			 c->quota ? "-quota" : "", g.seed);
		if (!r && !(w.name = strdup(name)))
			r = -ENOMEM;
		if (r) {
			wl_free(&w);
			snprintf(err, errlen, "generating a workload: %s", strerror(-r));
			return r;
		}
		w.mount = c->mount;
		r = one(k, &w, &c->o, err, errlen);
		wl_free(&w);
		if (r)
			return r;
	}
	return 0;
}

int campaign_run(const struct campaign_opts *c, struct campaign_result *res, char *err,
		 size_t errlen)
{
	memset(res, 0, sizeof(*res));
	struct camp k = { .c = c, .res = res, .t0 = now() };
	struct ace *a = NULL;
	if (c->fault_sweep && sweep_plans(&k, err, errlen)) {
		sweep_free(&k);
		return -EINVAL;
	}
	if (c->seq && (c->subvol ? ace_new_subvol : ace_new)(c->seq, c->ops, c->files, &a, err,
							       errlen)) {
		sweep_free(&k);
		return -EINVAL;
	}
	if (a && c->quota && ace_set_quota(a)) {
		snprintf(err, errlen, "out of memory");
		ace_free(a);
		sweep_free(&k);
		return -ENOMEM;
	}
	if (a)
		k.total += (ace_count(a) + c->shards - 1 - c->shard) / c->shards;
	k.total += (c->random + c->shards - 1 - c->shard) / c->shards;
	if (c->limit && k.total > c->limit)
		k.total = c->limit;
	if (c->fault_sweep)
		k.total *= k.nsweep;
	if (c->count_only) {
		res->workloads = k.total;
		ace_free(a);
		sweep_free(&k);
		return 0;
	}
	char started[32];
	record_iso_now(started);
	if (c->ro.store && store_campaign_begin(c->ro.store, c->args, c->o.seed, c->ro.build, started,
						&res->id, err, errlen)) {
		ace_free(a);
		sweep_free(&k);
		return -EIO;
	}
	int r = a ? run_ace(&k, a, err, errlen) : 0;
	if (!r)
		r = run_random(&k, err, errlen);
	ace_free(a);
	sweep_free(&k);
	progress(&k, true);
	res->seconds = now() - k.t0;
	int status = r < 0 ? r : res->violations || res->failures ? 1 : 0;
	if (c->ro.store) {
		char ended[32];
		record_iso_now(ended);
		char e2[512];
		if (store_campaign_end(c->ro.store, res->id, res->workloads, res->states,
				       res->violations, res->seconds, status < 0 ? 2 : status, ended, e2,
				       sizeof(e2)) && status >= 0) {
			snprintf(err, errlen, "%s", e2);
			return -EIO;
		}
	}
	return status;
}
