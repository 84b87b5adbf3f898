/* report_html_runs.c - the report's sections on campaigns and runs: the summary, crash
 * states per workload and per flush epoch, violations with their reproducers. */
#include "traces/report_html_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- 1. Campaign summary ---- */

static void status_td(FILE *f, sqlite3_stmt *st, int i, bool ended)
{
	if (!ended || sqlite3_column_type(st, i) == SQLITE_NULL) {
		fputs("<td class=\"bad\">unfinished</td>", f);
		return;
	}
	long long s = sqlite3_column_int64(st, i);
	if (s == 0)
		fputs("<td class=\"good\">0: consistent</td>", f);
	else if (s == 1)
		fputs("<td class=\"bad\">1: violation or failure</td>", f);
	else
		fprintf(f, "<td class=\"bad\">%lld: error</td>", s);
}

/* states / seconds of two columns, or "-". */
static void rate_td(FILE *f, sqlite3_stmt *st, int states, int secs)
{
	double s = sqlite3_column_double(st, secs);
	if (sqlite3_column_type(st, states) == SQLITE_NULL || !(s > 0))
		fputs("<td class=\"n\">-</td>", f);
	else
		fprintf(f, "<td class=\"n\">%.0f</td>", (double)sqlite3_column_int64(st, states) / s);
}

static void secs_td(FILE *f, sqlite3_stmt *st, int i)
{
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		fputs("<td class=\"n\">-</td>", f);
	else
		fprintf(f, "<td class=\"n\">%.2f</td>", sqlite3_column_double(st, i));
}

static int campaigns(struct rh *r)
{
	FILE *f = r->f;
	int64_t n;
	if (rh_count(r, "SELECT count(*) FROM campaigns WHERE ?1 = 0 OR id = ?1", &n))
		return -1;
	if (!n) {
		fputs("<p>No campaign recorded.</p>\n", f);
		return 0;
	}
	fputs("<table>\n<tr><th class=\"n\">id</th><th>command</th><th class=\"n\">seed</th>"
	      "<th>build</th><th>started</th><th>ended</th><th class=\"n\">seconds</th>"
	      "<th class=\"n\">workloads</th><th class=\"n\">crash states</th>"
	      "<th class=\"n\">states/s</th><th class=\"n\">damage detected</th>"
	      "<th class=\"n\">violations</th><th>status</th></tr>\n", f);
	sqlite3_stmt *st;
	if (rh_prep(r,
		    "SELECT c.id, c.args, c.seed, c.build, c.started, c.ended, c.seconds,"
		    " coalesce(c.workloads, (SELECT count(*) FROM runs r WHERE r.campaign_id = c.id)),"
		    " coalesce(c.states, (SELECT sum(states) FROM runs r WHERE r.campaign_id = c.id)),"
		    " (SELECT sum(detected) FROM runs r WHERE r.campaign_id = c.id),"
		    " coalesce(c.violations, (SELECT sum(violations) FROM runs r WHERE r.campaign_id = c.id)),"
		    " c.status FROM campaigns c WHERE ?1 = 0 OR c.id = ?1 ORDER BY c.id LIMIT ?2",
		    &st))
		return -1;
	sqlite3_bind_int64(st, 1, r->o->campaign);
	sqlite3_bind_int(st, 2, RH_MAX_ROWS);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		fputs("<tr>", f);
		rh_td_int(r, st, 0);
		fputs("<td><code>btrsim ", f);
		rh_esc(f, rh_col(st, 1), 400);
		fputs("</code></td>", f);
		rh_td_int(r, st, 2);
		rh_td(r, st, 3, 80);
		rh_td(r, st, 4, 40);
		rh_td(r, st, 5, 40);
		secs_td(f, st, 6);
		rh_td_int(r, st, 7);
		rh_td_int(r, st, 8);
		rate_td(f, st, 8, 6);
		rh_td_int(r, st, 9);
		if (sqlite3_column_int64(st, 10) > 0) {
			fprintf(f, "<td class=\"n bad\">%lld</td>", (long long)sqlite3_column_int64(st, 10));
		} else
			rh_td_int(r, st, 10);
		status_td(f, st, 11, sqlite3_column_type(st, 5) != SQLITE_NULL);
		fputs("</tr>\n", f);
	}
	if (rh_finish(r, st, rc, "campaigns"))
		return -1;
	fputs("</table>\n", f);
	rh_left_out(r, n, n > RH_MAX_ROWS ? RH_MAX_ROWS : n, "campaigns");
	return 0;
}

static int lone_runs(struct rh *r)
{
	FILE *f = r->f;
	int64_t n;
	if (rh_count(r, "SELECT count(*) FROM runs WHERE campaign_id IS NULL", &n))
		return -1;
	fputs("<h3>Runs outside a campaign</h3>\n", f);
	if (!n) {
		fputs("<p>None: every run belongs to a campaign.</p>\n", f);
		return 0;
	}
	fputs("<p>Runs of <code>btrsim explore --db</code>; those with violations first, then the "
	      "slowest.</p>\n<table>\n<tr><th class=\"n\">run</th><th>kind</th><th>workload</th>"
	      "<th>started</th><th>build</th><th>configuration</th><th>fault plan</th>"
	      "<th class=\"n\">ops</th><th class=\"n\">crash states</th><th class=\"n\">states/s</th>"
	      "<th class=\"n\">damage detected</th><th class=\"n\">violations</th><th>status</th></tr>\n",
	      f);
	sqlite3_stmt *st;
	if (rh_prep(r,
		    "SELECT r.id, r.kind || CASE r.target WHEN 'ref' THEN '' ELSE ':' || r.target END,"
		    " coalesce(r.name, substr(w.hash, 1, 12)), r.started, r.build,"
		    " r.config, r.faults, r.ops, r.states, r.seconds, r.detected, r.violations, r.status,"
		    " r.ended FROM runs r LEFT JOIN workloads w ON w.id = r.workload_id"
		    " WHERE r.campaign_id IS NULL"
		    " ORDER BY r.violations DESC, r.seconds DESC, r.id LIMIT ?1",
		    &st))
		return -1;
	sqlite3_bind_int(st, 1, RH_MAX_ROWS);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		fputs("<tr>", f);
		rh_td_int(r, st, 0);
		rh_td(r, st, 1, 20);
		rh_td(r, st, 2, 80);
		rh_td(r, st, 3, 40);
		rh_td(r, st, 4, 80);
		rh_td(r, st, 5, 160);
		/* the plan's first line */
		const char *plan = rh_col(st, 6);
		fputs("<td>", f);
		if (plan) {
			char *one = strdup(plan);
			if (one) {
				one[strcspn(one, "\n")] = 0;
				fputs("<code>", f);
				rh_esc(f, one, 80);
				fputs("</code>", f);
				if (strchr(plan, '\n') && plan[strlen(one) + 1])
					fputs(" &hellip;", f);
			}
			free(one);
		} else
			fputs("-", f);
		fputs("</td>", f);
		rh_td_int(r, st, 7);
		rh_td_int(r, st, 8);
		rate_td(f, st, 8, 9);
		rh_td_int(r, st, 10);
		if (sqlite3_column_int64(st, 11) > 0)
			fprintf(f, "<td class=\"n bad\">%lld</td>", (long long)sqlite3_column_int64(st, 11));
		else
			rh_td_int(r, st, 11);
		status_td(f, st, 12, true);
		fputs("</tr>\n", f);
	}
	if (rh_finish(r, st, rc, "runs"))
		return -1;
	fputs("</table>\n", f);
	rh_left_out(r, n, n > RH_MAX_ROWS ? RH_MAX_ROWS : n, "runs");
	return 0;
}

int rh_summary(struct rh *r)
{
	FILE *f = r->f;
	sqlite3_stmt *st;
	if (rh_prep(r,
		    "SELECT count(*), sum(states), sum(detected), sum(violations), sum(seconds),"
		    " (SELECT count(*) FROM violations v JOIN runs q ON q.id = v.run_id"
		    "  WHERE ?1 = 0 OR q.campaign_id = ?1)"
		    " FROM runs WHERE ?1 = 0 OR campaign_id = ?1",
		    &st))
		return -1;
	sqlite3_bind_int64(st, 1, r->o->campaign);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		long long runs = sqlite3_column_int64(st, 0), states = sqlite3_column_int64(st, 1);
		double secs = sqlite3_column_double(st, 4);
		fprintf(f, "<p>%lld runs, %lld crash states", runs, states);
		if (secs > 0)
			fprintf(f, " (%.0f per second of exploration)", (double)states / secs);
		fprintf(f, ", %lld with injected damage detected, %lld violating states",
			(long long)sqlite3_column_int64(st, 2), (long long)sqlite3_column_int64(st, 3));
		long long nv = sqlite3_column_int64(st, 5);
		fprintf(f, "; %lld violation%s recorded with %s reproducer%s.</p>\n", nv,
			nv == 1 ? "" : "s", nv == 1 ? "its" : "their", nv == 1 ? "" : "s");
		rc = SQLITE_DONE;
	}
	if (rh_finish(r, st, rc, "summary"))
		return -1;
	fputs("<h3>Campaigns</h3>\n", f);
	if (campaigns(r))
		return -1;
	if (!r->o->campaign)
		return lone_runs(r);
	return 0;
}

/* ---- 2. Crash states ---- */

struct epoch_row {
	int64_t epoch; /* -1: the crash after the last request ("end") */
	int verdict;   /* index in the verdict list */
	int64_t count;
};

#define MAX_VERDICTS 8

/* Fixed colours for the known verdicts; the others (a foreign database's) take
 * colours none of those uses, in their order. */
static const char *verdict_color(const char *v, size_t *unknown)
{
	static const struct {
		const char *name, *color;
	} known[] = {
		{ "ok", "#2ca02c" },   { "detected", "#1f77b4" }, { "mount", "#d62728" },
		{ "check", "#ff7f0e" }, { "read", "#9467bd" },     { "oracle", "#8c564b" },
	};
	static const char *const more[] = { "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
					    "#393b79", "#637939", "#843c39", "#7b4173" };
	for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
		if (!strcmp(known[k].name, v))
			return known[k].color;
	return more[(*unknown)++ % (sizeof(more) / sizeof(more[0]))];
}

static int verdict_rank(const char *v)
{
	return !strcmp(v, "ok") ? 0 : !strcmp(v, "detected") ? 1 : 2;
}

static int cmp_verdict(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	int rx = verdict_rank(x), ry = verdict_rank(y);
	return rx != ry ? rx - ry : strcmp(x, y);
}

struct epochs {
	struct epoch_row *rows;
	size_t n, cap;
	char *verdicts[MAX_VERDICTS];
	size_t nverdicts;
	bool other; /* more kinds than MAX_VERDICTS: the last is "other" */
};

static void epochs_free(struct epochs *e)
{
	free(e->rows);
	for (size_t i = 0; i < e->nverdicts; i++)
		free(e->verdicts[i]);
}

/* The verdict's index (added when new). */
static int verdict_index(struct epochs *e, const char *v)
{
	for (size_t i = 0; i < e->nverdicts; i++)
		if (!strcmp(e->verdicts[i], v))
			return (int)i;
	if (e->nverdicts == MAX_VERDICTS - 1 && !e->other) {
		if (!(e->verdicts[e->nverdicts] = strdup("other")))
			return -1;
		e->other = true;
		e->nverdicts++;
	}
	if (e->other)
		return (int)e->nverdicts - 1;
	e->verdicts[e->nverdicts] = strdup(v);
	return e->verdicts[e->nverdicts] ? (int)e->nverdicts++ : -1;
}

static int load_epochs(struct rh *r, struct epochs *e)
{
	sqlite3_stmt *st;
	if (rh_prep(r,
		    "SELECT i.epoch, s.verdict, count(*) FROM crash_states s JOIN runs r ON r.id = s.run_id"
		    " LEFT JOIN io i ON i.run_id = s.run_id AND i.idx = s.point"
		    " WHERE ?1 = 0 OR r.campaign_id = ?1 GROUP BY 1, 2 ORDER BY 1, 2",
		    &st))
		return -1;
	sqlite3_bind_int64(st, 1, r->o->campaign);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (e->n == e->cap) {
			size_t cap = e->cap ? e->cap * 2 : 64;
			struct epoch_row *p = realloc(e->rows, cap * sizeof(*p));
			if (!p)
				break;
			e->rows = p;
			e->cap = cap;
		}
		const char *v = rh_col(st, 1);
		int vi = verdict_index(e, v ? v : "-");
		if (vi < 0)
			break;
		int64_t ep = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 0);
		e->rows[e->n++] = (struct epoch_row){ ep < 0 ? -1 : ep, vi, sqlite3_column_int64(st, 2) };
	}
	if (rc == SQLITE_ROW) {
		sqlite3_finalize(st);
		store_seterr(r->err, r->errlen, "out of memory");
		return -1;
	}
	return rh_finish(r, st, rc, "crash states per epoch");
}

static int verdict_table(struct rh *r, const struct epochs *e, int64_t *total_out)
{
	FILE *f = r->f;
	int64_t per[MAX_VERDICTS] = { 0 }, total = 0;
	for (size_t i = 0; i < e->n; i++) {
		per[e->rows[i].verdict] += e->rows[i].count;
		total += e->rows[i].count;
	}
	*total_out = total;
	if (!total) {
		fputs("<p>No crash state recorded.</p>\n", f);
		return 0;
	}
	fputs("<table>\n<tr><th>verdict</th><th class=\"n\">crash states</th><th class=\"n\">share</th></tr>\n",
	      f);
	for (size_t v = 0; v < e->nverdicts; v++) {
		fprintf(f, "<tr><td%s>", verdict_rank(e->verdicts[v]) < 2 ? "" : " class=\"bad\"");
		rh_esc(f, e->verdicts[v], 0);
		fprintf(f, "</td><td class=\"n\">%lld</td><td class=\"n\">%.1f%%</td></tr>\n",
			(long long)per[v], 100.0 * (double)per[v] / (double)total);
	}
	fprintf(f, "<tr><th>all</th><th class=\"n\">%lld</th><th class=\"n\">100%%</th></tr>\n</table>\n",
		(long long)total);
	fputs("<p class=\"note\"><code>ok</code>: mounted, checked clean, a state the oracle allows. "
	      "<code>detected</code>: damage a fault plan injected, caught by checksums. Any other "
	      "verdict (<code>mount</code>, <code>check</code>, <code>read</code>, <code>oracle</code>) "
	      "is a violation.</p>\n",
	      f);
	return 0;
}

static int epoch_plot(struct rh *r, struct epochs *e)
{
	/* The categories: each epoch, or bins of epochs when there are many; "end" last. */
	int64_t maxep = -1;
	bool end = false;
	size_t distinct = 0;
	for (size_t i = 0; i < e->n; i++) {
		if (e->rows[i].epoch < 0) {
			end = true;
			continue;
		}
		if (i == 0 || e->rows[i].epoch != e->rows[i - 1].epoch)
			distinct++;
		if (e->rows[i].epoch > maxep)
			maxep = e->rows[i].epoch;
	}
	int64_t width = 1;
	size_t ncat;
	if (distinct > 40) {
		width = (int64_t)rh_nice_step((double)maxep + 1, 30);
		if (width < 1)
			width = 1;
	}
	if (distinct > 40 || maxep < 0)
		ncat = maxep < 0 ? 0 : (size_t)(maxep / width) + 1;
	else
		ncat = distinct;
	size_t ntot = ncat + (end ? 1 : 0), nv = e->nverdicts;
	if (!ntot)
		return 0;
	char **labels = calloc(ntot, sizeof(*labels));
	double *v = calloc(ntot * nv, sizeof(*v));
	int64_t *first = calloc(ntot, sizeof(*first));
	int ret = -1;
	if (!labels || !v || !first)
		goto out;
	size_t cat = 0;
	bool any = false;
	for (size_t i = 0; i < e->n; i++) {
		const struct epoch_row *row = &e->rows[i];
		size_t c;
		if (row->epoch < 0)
			c = ncat;
		else if (width > 1 || distinct > 40)
			c = (size_t)(row->epoch / width);
		else {
			if (any && row->epoch != first[cat])
				cat++;
			any = true;
			c = cat;
			first[c] = row->epoch;
		}
		v[c * nv + (size_t)row->verdict] += (double)row->count;
	}
	for (size_t c = 0; c < ntot; c++) {
		char buf[64];
		if (c == ncat)
			snprintf(buf, sizeof(buf), "end");
		else if (distinct > 40)
			snprintf(buf, sizeof(buf), width > 1 ? "%lld-%lld" : "%lld",
				 (long long)((int64_t)c * width), (long long)((int64_t)c * width + width - 1));
		else
			snprintf(buf, sizeof(buf), "%lld", (long long)first[c]);
		if (!(labels[c] = strdup(buf)))
			goto out;
	}
	const char *colors[MAX_VERDICTS];
	size_t unknown = 0;
	for (size_t i = 0; i < nv; i++)
		colors[i] = verdict_color(e->verdicts[i], &unknown);
	struct rh_bars b = {
		.title = "Crash states per flush epoch, by verdict",
		.xlabel = width > 1 ? "flush epoch of the crash point (bins)" : "flush epoch of the crash point",
		.ylabel = "crash states",
		.n = ntot,
		.nseries = nv,
		.labels = labels,
		.series = (const char *const *)e->verdicts,
		.colors = colors,
		.v = v,
		.legend = true,
	};
	if (rh_bar_chart(r, "verdicts-per-epoch.svg", &b, true,
			 "stacked bars: crash states per flush epoch of the crash point, by verdict"))
		goto out;
	/* The same as shares of each bar: a verdict of a few percent (detected,
	 * say) is a thin sliver on the count chart, a visible band here. */
	for (size_t c = 0; c < ntot; c++) {
		double sum = 0;
		for (size_t k = 0; k < nv; k++)
			sum += v[c * nv + k];
		for (size_t k = 0; sum > 0 && k < nv; k++)
			v[c * nv + k] = 100.0 * v[c * nv + k] / sum;
	}
	b.title = "Share of each verdict per flush epoch";
	b.ylabel = "share of the epoch's crash states";
	b.percent = true;
	b.max = 100;
	if (rh_bar_chart(r, "verdict-shares-per-epoch.svg", &b, true,
			 "stacked bars of 100%: the share of each verdict among the crash states of each flush epoch"))
		goto out;
	int64_t lowest = -1;
	for (size_t i = 0; i < e->n; i++)
		if (e->rows[i].epoch >= 0 && (lowest < 0 || e->rows[i].epoch < lowest))
			lowest = e->rows[i].epoch;
	fprintf(r->f, "<p class=\"note\">The epoch of a crash state is the flush epoch (<code>io.epoch</code>) of "
		"the request at its crash point: the first request that did not happen. "
		"<code>end</code>: the crash after the last request. The second chart shows each "
		"epoch's verdicts as shares, so that a small one (<code>detected</code>) is not lost "
		"beside the others.");
	if (lowest > 0)
		fprintf(r->f, " The charts start at epoch %lld: the epochs before it are those of "
			"mkfs, whose requests are recorded with each run but never cut (crash points "
			"lie in the workload).", (long long)lowest);
	fputs("</p>\n", r->f);
	ret = 0;
out:
	if (ret && !r->err[0])
		store_seterr(r->err, r->errlen, "out of memory");
	if (labels)
		for (size_t c = 0; c < ntot; c++)
			free(labels[c]);
	free(labels);
	free(v);
	free(first);
	return ret;
}

static int states_histogram(struct rh *r)
{
	sqlite3_stmt *st;
	if (rh_prep(r,
		    "SELECT count(*), max(states) FROM runs WHERE (?1 = 0 OR campaign_id = ?1)"
		    " AND states IS NOT NULL AND states >= 0",
		    &st))
		return -1;
	sqlite3_bind_int64(st, 1, r->o->campaign);
	int rc = sqlite3_step(st);
	int64_t nruns = 0, max = 0;
	if (rc == SQLITE_ROW) {
		nruns = sqlite3_column_int64(st, 0);
		max = sqlite3_column_int64(st, 1);
		rc = SQLITE_DONE;
	}
	if (rh_finish(r, st, rc, "states per run"))
		return -1;
	if (!nruns)
		return 0;
	int64_t width = (int64_t)rh_nice_step((double)max + 1, 20);
	if (width < 1)
		width = 1;
	size_t n = (size_t)(max / width) + 1;
	char **labels = calloc(n, sizeof(*labels));
	double *v = calloc(n, sizeof(*v));
	int ret = -1;
	if (!labels || !v)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		char buf[64];
		long long a = (long long)((int64_t)i * width);
		if (width == 1)
			snprintf(buf, sizeof(buf), "%lld", a);
		else
			snprintf(buf, sizeof(buf), "%lld-%lld", a, a + (long long)width - 1);
		if (!(labels[i] = strdup(buf)))
			goto oom;
	}
	if (rh_prep(r,
		    "SELECT states / ?2, count(*) FROM runs WHERE (?1 = 0 OR campaign_id = ?1)"
		    " AND states IS NOT NULL AND states >= 0 GROUP BY 1 ORDER BY 1",
		    &st))
		goto out;
	sqlite3_bind_int64(st, 1, r->o->campaign);
	sqlite3_bind_int64(st, 2, width);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t bin = sqlite3_column_int64(st, 0);
		if (bin >= 0 && (size_t)bin < n)
			v[bin] = (double)sqlite3_column_int64(st, 1);
	}
	if (rh_finish(r, st, rc, "states per run"))
		goto out;
	static const char *const one[] = { "workloads" };
	const char *colors[] = { "#1f77b4" };
	struct rh_bars b = {
		.title = "Crash states per workload",
		.xlabel = "crash states of the workload (run)",
		.ylabel = "workloads",
		.n = n,
		.nseries = 1,
		.labels = labels,
		.series = one,
		.colors = colors,
		.v = v,
	};
	if (rh_bar_chart(r, "states-per-workload.svg", &b, true,
			 "histogram: how many workloads had how many crash states"))
		goto out;
	ret = 0;
	goto out;
oom:
	store_seterr(r->err, r->errlen, "out of memory");
out:
	if (labels)
		for (size_t i = 0; i < n; i++)
			free(labels[i]);
	free(labels);
	free(v);
	return ret;
}

static int per_run_table(struct rh *r)
{
	FILE *f = r->f;
	int64_t n;
	if (rh_count(r, "SELECT count(*) FROM runs WHERE ?1 = 0 OR campaign_id = ?1", &n))
		return -1;
	if (!n)
		return 0;
	fputs("<h3>Per workload</h3>\n<p>Each run is one workload explored; the runs with violating "
	      "states first, then those with the most crash states.</p>\n<table>\n"
	      "<tr><th class=\"n\">run</th><th>workload</th><th class=\"n\">campaign</th>"
	      "<th class=\"n\">ops</th><th class=\"n\">crash states</th><th class=\"n\">ok</th>"
	      "<th class=\"n\">detected</th><th class=\"n\">violating</th><th class=\"n\">seconds</th>"
	      "<th class=\"n\">states/s</th></tr>\n",
	      f);
	sqlite3_stmt *st;
	if (rh_prep(r,
		    "SELECT r.id, coalesce(r.name, substr(w.hash, 1, 12)), r.campaign_id, r.ops, r.states,"
		    " count(s.k), sum(s.verdict = 'ok'), sum(s.verdict = 'detected'),"
		    " sum(s.verdict NOT IN ('ok', 'detected')) AS bad, r.seconds"
		    " FROM runs r LEFT JOIN workloads w ON w.id = r.workload_id"
		    " LEFT JOIN crash_states s ON s.run_id = r.id"
		    " WHERE ?1 = 0 OR r.campaign_id = ?1"
		    " GROUP BY r.id ORDER BY bad DESC, r.states DESC, r.id LIMIT ?2",
		    &st))
		return -1;
	sqlite3_bind_int64(st, 1, r->o->campaign);
	sqlite3_bind_int(st, 2, RH_MAX_ROWS);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		fputs("<tr>", f);
		rh_td_int(r, st, 0);
		rh_td(r, st, 1, 80);
		rh_td_int(r, st, 2);
		rh_td_int(r, st, 3);
		rh_td_int(r, st, 4);
		if (sqlite3_column_int64(st, 5) == 0)
			fputs("<td class=\"note\" colspan=\"3\">states not recorded</td>", f);
		else {
			rh_td_int(r, st, 6);
			rh_td_int(r, st, 7);
			if (sqlite3_column_int64(st, 8) > 0)
				fprintf(f, "<td class=\"n bad\">%lld</td>", (long long)sqlite3_column_int64(st, 8));
			else
				rh_td_int(r, st, 8);
		}
		secs_td(f, st, 9);
		rate_td(f, st, 4, 9);
		fputs("</tr>\n", f);
	}
	if (rh_finish(r, st, rc, "runs"))
		return -1;
	fputs("</table>\n", f);
	rh_left_out(r, n, n > RH_MAX_ROWS ? RH_MAX_ROWS : n, "runs");
	return 0;
}

int rh_states(struct rh *r)
{
	struct epochs e = { 0 };
	int64_t total = 0;
	int ret = -1;
	if (load_epochs(r, &e))
		goto out;
	if (e.nverdicts > 1) { /* ok, detected, then the violations by name; rows follow */
		char *before[MAX_VERDICTS];
		int map[MAX_VERDICTS];
		memcpy(before, e.verdicts, sizeof(before));
		qsort(e.verdicts, e.nverdicts - (e.other ? 1 : 0), sizeof(e.verdicts[0]), cmp_verdict);
		for (size_t i = 0; i < e.nverdicts; i++)
			for (size_t j = 0; j < e.nverdicts; j++)
				if (e.verdicts[j] == before[i])
					map[i] = (int)j;
		for (size_t i = 0; i < e.n; i++)
			e.rows[i].verdict = map[e.rows[i].verdict];
	}
	if (verdict_table(r, &e, &total))
		goto out;
	if (states_histogram(r))
		goto out;
	if (total && epoch_plot(r, &e))
		goto out;
	if (per_run_table(r))
		goto out;
	ret = 0;
out:
	epochs_free(&e);
	return ret;
}

/* ---- 3. Violations ---- */

static void replay_commands(struct rh *r, sqlite3_stmt *st)
{
	FILE *f = r->f;
	if (sqlite3_column_type(st, 1) == SQLITE_NULL)
		return;
	long long vid = sqlite3_column_int64(st, 0), run = sqlite3_column_int64(st, 1);
	fputs("<p>Replay the run (every op result, IO request and crash state compared), then write "
	      "the crash state's disks as images to mount or check:</p>\n<pre>btrsim replay --db ",
	      f);
	rh_shell_word(f, r->o->db);
	fprintf(f, " %lld\n", run);
	if (sqlite3_column_type(st, 3) != SQLITE_NULL) {
		fputs("btrsim replay --db ", f);
		rh_shell_word(f, r->o->db);
		fprintf(f, " %lld --crash-state %lld --out crash-%lld\n", run,
			(long long)sqlite3_column_int64(st, 3), vid);
	}
	fputs("</pre>\n", f);
}

static int violation_details(struct rh *r, int64_t shown)
{
	FILE *f = r->f;
	sqlite3_stmt *st;
	if (rh_prep(r,
		    "SELECT v.id, v.run_id, coalesce(r.name, substr(w.hash, 1, 12)), v.state_k, v.point,"
		    " v.picks, v.verdict, v.description, v.reproducer"
		    " FROM violations v LEFT JOIN runs r ON r.id = v.run_id"
		    " LEFT JOIN workloads w ON w.id = r.workload_id"
		    " WHERE ?1 = 0 OR r.campaign_id = ?1 ORDER BY v.id LIMIT ?2",
		    &st))
		return -1;
	sqlite3_bind_int64(st, 1, r->o->campaign);
	sqlite3_bind_int64(st, 2, shown);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		long long vid = sqlite3_column_int64(st, 0);
		fprintf(f, "<h3 id=\"violation-%lld\">Violation %lld: <span class=\"bad\">", vid, vid);
		rh_esc(f, rh_col(st, 6), 20);
		fputs("</span>, run ", f);
		rh_esc(f, rh_col(st, 1), 0);
		fputs(" (", f);
		rh_esc(f, rh_col(st, 2), 80);
		fputs("), crash state ", f);
		rh_esc(f, rh_col(st, 3), 0);
		fputs("</h3>\n<p><code>", f);
		rh_esc(f, rh_col(st, 7), 2000);
		fputs("</code></p>\n", f);
		if (sqlite3_column_type(st, 4) != SQLITE_NULL) {
			fprintf(f, "<p>Crash point: IO %lld; minimized picks (persisted volatile writes): <code>",
				(long long)sqlite3_column_int64(st, 4));
			rh_esc(f, rh_col(st, 5), 200);
			fputs("</code></p>\n", f);
		}
		replay_commands(r, st);
		const char *rep = rh_col(st, 8);
		if (rep) {
			fprintf(f, "<p>Minimized reproducer, a workload file (<code>btrsim violations --db ");
			rh_shell_word(f, r->o->db);
			fprintf(f, " --reproducer %lld &gt;repro.wl</code>, then <code>btrsim explore "
				   "repro.wl</code>):</p>\n<pre>",
				vid);
			rh_esc(f, rep, 20000);
			fputs("</pre>\n", f);
		} else
			fputs("<p class=\"note\">No reproducer recorded (not minimized).</p>\n", f);
	}
	return rh_finish(r, st, rc, "violations");
}

int rh_violations(struct rh *r)
{
	FILE *f = r->f;
	int64_t n;
	if (rh_count(r,
		     "SELECT count(*) FROM violations v LEFT JOIN runs r ON r.id = v.run_id"
		     " WHERE ?1 = 0 OR r.campaign_id = ?1",
		     &n))
		return -1;
	if (!n) {
		fputs("<p class=\"good\">None: every crash state of every run was consistent.</p>\n", f);
		return 0;
	}
	int64_t detailed = n > RH_MAX_VIOLATIONS ? RH_MAX_VIOLATIONS : n;
	int64_t listed = n > RH_MAX_ROWS ? RH_MAX_ROWS : n;
	fprintf(f, "<p class=\"bad\">%lld violation%s.</p>\n<table>\n<tr><th class=\"n\">violation</th>"
		   "<th class=\"n\">run</th><th>workload</th><th class=\"n\">crash state</th>"
		   "<th>verdict</th><th>what was wrong</th></tr>\n",
		(long long)n, n == 1 ? "" : "s");
	sqlite3_stmt *st;
	if (rh_prep(r,
		    "SELECT v.id, v.run_id, coalesce(r.name, substr(w.hash, 1, 12)), v.state_k, v.verdict,"
		    " v.description FROM violations v LEFT JOIN runs r ON r.id = v.run_id"
		    " LEFT JOIN workloads w ON w.id = r.workload_id"
		    " WHERE ?1 = 0 OR r.campaign_id = ?1 ORDER BY v.id LIMIT ?2",
		    &st))
		return -1;
	sqlite3_bind_int64(st, 1, r->o->campaign);
	sqlite3_bind_int64(st, 2, listed);
	int rc;
	for (int64_t i = 0; (rc = sqlite3_step(st)) == SQLITE_ROW; i++) {
		long long vid = sqlite3_column_int64(st, 0);
		if (i < detailed)
			fprintf(f, "<tr><td class=\"n\"><a href=\"#violation-%lld\">%lld</a></td>", vid, vid);
		else
			fprintf(f, "<tr><td class=\"n\">%lld</td>", vid);
		rh_td_int(r, st, 1);
		rh_td(r, st, 2, 60);
		rh_td_int(r, st, 3);
		rh_td(r, st, 4, 20);
		rh_td(r, st, 5, 160);
		fputs("</tr>\n", f);
	}
	if (rh_finish(r, st, rc, "violations"))
		return -1;
	fputs("</table>\n", f);
	rh_left_out(r, n, listed, "violations");
	if (n > detailed)
		fprintf(f, "<p class=\"note\">The first %lld are shown whole below; <code>btrsim violations "
			   "--db ",
			(long long)detailed);
	if (n > detailed) {
		rh_shell_word(f, r->o->db);
		fputs(" --full</code> prints every one.</p>\n", f);
	}
	return violation_details(r, detailed);
}
