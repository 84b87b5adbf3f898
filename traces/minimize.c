/* minimize.c - delta debugging of a violating workload (minimize.h). */
#include "traces/minimize.h"
#include "traces/kernel.h"
#include "ref/ref.h"
#include <linux/btrfs_tree.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The ops of w whose keep[] is set, as a new workload. */
static int subset(const struct wl_workload *w, const bool *keep, struct wl_workload *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < w->n; i++)
		if (keep[i]) {
			int r = wl_append(out, &w->ops[i]);
			if (r) {
				wl_free(out);
				return r;
			}
			out->ops[out->n - 1].line = w->ops[i].line;
		}
	if (w->name && !(out->name = strdup(w->name))) {
		wl_free(out);
		return -ENOMEM;
	}
	out->mount = w->mount;
	return 0;
}

/* Does the exploration of the kept ops still give a violation of kind want? */
static int violates(const struct wl_workload *w, const bool *keep, const struct explore_opts *o,
		    enum explore_verdict want, unsigned *runs)
{
	struct wl_workload t;
	if (subset(w, keep, &t))
		return -ENOMEM;
	struct explore_opts q = *o;
	q.stop_first = true;
	q.minimize_picks = false;
	q.sink = NULL;
	q.log = NULL;
	q.progress = NULL;
	struct explore_result res;
	char err[256];
	int r = explore_run(&t, &q, &res, err, sizeof(err));
	/* With an application's checker, a part of the recorded calls counts
	 * only when each call still gives the result it gave the application:
	 * else the checker, which reasons about the application's calls,
	 * judges a run the application could not have made. */
	bool same = true;
	for (size_t i = 0; o->check_cmd && res.results && i < t.n && same; i++)
		same = t.ops[i].kind == WL_MARK || res.results[i] == t.ops[i].expect;
	free(res.results);
	wl_free(&t);
	(*runs)++;
	return r == 1 && res.violation_verdict == want && same;
}

int minimize_workload(const struct wl_workload *w, const struct explore_opts *o,
		      enum explore_verdict want, struct wl_workload *out, struct explore_result *res,
		      char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	memset(res, 0, sizeof(*res));
	size_t n = w->n;
	bool *keep = malloc((n ? n : 1) * sizeof(*keep)), *trial = malloc((n ? n : 1) * sizeof(*trial));
	size_t *idx = malloc((n ? n : 1) * sizeof(*idx));
	if (!keep || !trial || !idx) {
		free(keep);
		free(trial);
		free(idx);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		keep[i] = true;
	size_t setup = wl_setup_ops(w); /* always kept: the workload's starting point */
	unsigned runs = 0;
	size_t parts = 2;
	/* ddmin over the kept ops: remove one of `parts` chunks at a time. */
	for (;;) {
		size_t m = 0;
		for (size_t i = setup; i < n; i++)
			if (keep[i])
				idx[m++] = i;
		if (m < 2 || runs >= MINIMIZE_MAX_RUNS)
			break;
		if (parts > m)
			parts = m;
		bool reduced = false;
		for (size_t c = 0; c < parts && !reduced && runs < MINIMIZE_MAX_RUNS; c++) {
			size_t lo = m * c / parts, hi = m * (c + 1) / parts;
			memcpy(trial, keep, n * sizeof(*trial));
			for (size_t j = lo; j < hi; j++)
				trial[idx[j]] = false;
			int v = violates(w, trial, o, want, &runs);
			if (v < 0)
				break;
			if (v) {
				memcpy(keep, trial, n * sizeof(*keep));
				parts = parts > 2 ? parts - 1 : 2;
				reduced = true;
			}
		}
		if (!reduced) {
			if (parts >= m)
				break;
			parts = parts * 2 > m ? m : parts * 2;
		}
	}
	struct wl_workload t;
	int r = subset(w, keep, &t);
	free(keep);
	free(trial);
	free(idx);
	if (r) {
		snprintf(err, errlen, "out of memory");
		return r;
	}
	/* The last exploration, with the persisted writes minimized. */
	struct explore_opts q = *o;
	q.stop_first = true;
	q.minimize_picks = true;
	q.sink = NULL;
	q.log = NULL;
	q.progress = NULL;
	r = explore_run(&t, &q, res, err, errlen);
	if (r != 1) {
		if (r == 0)
			snprintf(err, errlen, "the minimized workload no longer shows the violation "
				 "(a nondeterministic exploration?)");
		free(res->results);
		res->results = NULL;
		wl_free(&t);
		return r < 0 ? r : -EAGAIN;
	}
	*out = t;
	return 0;
}

void minimize_comment(FILE *f, const char *text)
{
	for (const char *c = text; *c; c++) /* one comment, however many lines */
		fputs(*c == '\n' ? "\n# " : (char[2]){ *c, 0 }, f);
	fputc('\n', f);
}

char *minimize_reproducer(const struct wl_workload *w, const struct explore_opts *o,
			  const struct explore_result *res)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	fprintf(f, "# btrsim reproducer: %zu operation%s\n", w->n, w->n == 1 ? "" : "s");
	fputs("# ", f);
	minimize_comment(f, res->violation);
	fprintf(f, "# crash state: power lost before IO %zu; persisted volatile writes: %s\n",
		res->violation_point, res->violation_picks);
	fprintf(f, "# again: btrsim explore --seed %" PRIu64 " --nodesize %u --max-subset %u"
		" --samples %u --torn %u", o->seed, (unsigned)o->nodesize, o->max_subset,
		o->samples, o->torn);
	char dp[16], mp[16];
	if (o->ndisks > 1)
		fprintf(f, " --disks %u", o->ndisks);
	/* --profile names one profile for both; the defaults need none */
	bool def = o->ndisks > 1 ? o->data_profile == BTRFS_BLOCK_GROUP_RAID1 &&
					   o->meta_profile == BTRFS_BLOCK_GROUP_RAID1
				 : o->data_profile == 0 && o->meta_profile == BTRFS_BLOCK_GROUP_DUP;
	if (!def && o->data_profile == o->meta_profile)
		fprintf(f, " --profile %s", ref_profile_lower(o->data_profile, dp));
	else if (!def)
		fprintf(f, " (data %s, metadata %s)", ref_profile_lower(o->data_profile, dp),
			ref_profile_lower(o->meta_profile, mp));
	if (!o->treelog)
		fprintf(f, " --notreelog");
	if (o->target == EXPLORE_KERNEL) {
		fprintf(f, " --target kernel");
		if (o->disk_mode)
			fprintf(f, " --disk-mode %s", kdisk_mode_name((enum kdisk_mode)o->disk_mode));
		if (o->mount_options && *o->mount_options)
			fprintf(f, " --mount-options %s", o->mount_options);
		if (o->timeout_ms && o->timeout_ms != 30000)
			fprintf(f, " --timeout %u", o->timeout_ms / 1000);
	}
	fprintf(f, " FILE\n");
	for (size_t i = 0; i < w->n; i++) {
		struct wl_op op = w->ops[i];
		op.expect = res->results ? res->results[i] : 0;
		int l = wl_format(&op, NULL, 0); /* a receive's stream may be long */
		char *line = l >= 0 ? malloc((size_t)l + 1) : NULL;
		if (!line || wl_format(&op, line, (size_t)l + 1) != l)
			fprintf(f, "# (an op that could not be printed)\n");
		else
			fprintf(f, "%s\n", line);
		free(line);
	}
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}
