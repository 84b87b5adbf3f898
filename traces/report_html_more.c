/* report_html_more.c - the report's sections on fault points, fuzzing and coverage. */
#include "traces/report_html_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bars in a plot at most (the table lists up to RH_MAX_ROWS). */
#define MAX_BARS 60
/* Harnesses drawn as lines at most; points per line at most (evenly thinned). */
#define MAX_LINES 10
#define MAX_POINTS 2000

static void oom(struct rh *r)
{
	store_seterr(r->err, r->errlen, "out of memory");
}

static void free_labels(char **labels, size_t n)
{
	if (labels)
		for (size_t i = 0; i < n; i++)
			free(labels[i]);
	free(labels);
}

/* ---- 4. Fault points ---- */

static int sim_faults(struct rh *r)
{
	FILE *f = r->f;
	sqlite3_stmt *st;
	if (rh_prep(r,
		    "SELECT i.fault, count(DISTINCT i.run_id), count(*) FROM io i JOIN runs r"
		    " ON r.id = i.run_id WHERE i.fault IS NOT NULL AND (?1 = 0 OR r.campaign_id = ?1)"
		    " GROUP BY i.fault ORDER BY 3 DESC, 1 LIMIT ?2",
		    &st))
		return -1;
	sqlite3_bind_int64(st, 1, r->o->campaign);
	sqlite3_bind_int(st, 2, RH_MAX_ROWS);
	int rc, rows = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!rows++)
			fputs("<h3>Faults of the simulated disks</h3>\n<p>Faults sim applied to requests "
			      "(from the fault plan's <code>sim</code> lines), as the IO log records them:</p>\n"
			      "<table>\n<tr><th>fault</th><th class=\"n\">runs</th><th class=\"n\">requests</th></tr>\n",
			      f);
		fputs("<tr>", f);
		rh_td(r, st, 0, 60);
		rh_td_int(r, st, 1);
		rh_td_int(r, st, 2);
		fputs("</tr>\n", f);
	}
	if (rh_finish(r, st, rc, "sim faults"))
		return -1;
	if (rows)
		fputs("</table>\n", f);
	return 0;
}

int rh_faults(struct rh *r)
{
	FILE *f = r->f;
	int64_t n;
	if (rh_count(r,
		     "SELECT count(DISTINCT f.point) FROM fault_hits f JOIN runs r ON r.id = f.run_id"
		     " WHERE ?1 = 0 OR r.campaign_id = ?1",
		     &n))
		return -1;
	if (!n) {
		fputs("<p>No libfiu fault point was armed in these runs: none had a fault plan naming one "
		      "(<code>--faults PLAN</code>, or <code>--faults sweep</code> for every point of the "
		      "catalogue, faults/README.md).</p>\n",
		      f);
		return sim_faults(r);
	}
	size_t cap = n > RH_MAX_ROWS ? RH_MAX_ROWS : (size_t)n, nb = 0;
	char **labels = calloc(cap, sizeof(*labels));
	double *v = calloc(cap * 2, sizeof(*v));
	if (!labels || !v) {
		free(labels);
		free(v);
		oom(r);
		return -1;
	}
	int ret = -1;
	fputs("<p>The libfiu fault points the runs' fault plans armed: in how many runs, how often the "
	      "code reached each while it was armed (hits) and how often it failed there (fired); the "
	      "most reached first.</p>\n<table>\n<tr><th>point</th><th class=\"n\">runs</th>"
	      "<th class=\"n\">hits</th><th class=\"n\">fired</th></tr>\n",
	      f);
	sqlite3_stmt *st;
	if (rh_prep(r,
		    "SELECT f.point, count(*), sum(f.hits), sum(f.fired) FROM fault_hits f"
		    " JOIN runs r ON r.id = f.run_id WHERE ?1 = 0 OR r.campaign_id = ?1"
		    " GROUP BY f.point ORDER BY 3 DESC, 1 LIMIT ?2",
		    &st))
		goto out;
	sqlite3_bind_int64(st, 1, r->o->campaign);
	sqlite3_bind_int64(st, 2, (int64_t)cap);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		fputs("<tr><td><code>", f);
		rh_esc(f, rh_col(st, 0), 80);
		fputs("</code></td>", f);
		rh_td_int(r, st, 1);
		rh_td_int(r, st, 2);
		rh_td_int(r, st, 3);
		fputs("</tr>\n", f);
		if (nb < MAX_BARS && nb < cap) {
			const char *p = rh_col(st, 0);
			if (!(labels[nb] = strdup(p ? p : "-"))) {
				sqlite3_finalize(st);
				oom(r);
				goto out;
			}
			v[nb * 2] = (double)sqlite3_column_int64(st, 2);
			v[nb * 2 + 1] = (double)sqlite3_column_int64(st, 3);
			nb++;
		}
	}
	if (rh_finish(r, st, rc, "fault points"))
		goto out;
	fputs("</table>\n", f);
	rh_left_out(r, n, (int64_t)cap, "fault points");
	static const char *const series[] = { "hits", "fired" };
	static const char *const colors[] = { "#9ecae1", "#d62728" };
	struct rh_bars b = {
		.title = "Fault points: hits while armed, and fired",
		.xlabel = nb < (size_t)n ? "count (the most reached points)" : "count",
		.ylabel = "",
		.n = nb,
		.nseries = 2,
		.labels = labels,
		.series = series,
		.colors = colors,
		.v = v,
		.overlay = true,
	};
	if (rh_bar_chart(r, "fault-points.svg", &b, false,
			 "bar chart: per fault point, the hits while armed and the times it fired"))
		goto out;
	ret = sim_faults(r);
out:
	free_labels(labels, cap);
	free(v);
	return ret;
}

/* ---- 5. Fuzzing ---- */

struct series_buf {
	char *name;
	double *x, *y;
	size_t n, cap;
};

static int push(struct series_buf *s, double x, double y)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		double *nx = realloc(s->x, cap * sizeof(double));
		if (!nx)
			return -1;
		s->x = nx;
		double *ny = realloc(s->y, cap * sizeof(double));
		if (!ny)
			return -1;
		s->y = ny;
		s->cap = cap;
	}
	s->x[s->n] = x;
	s->y[s->n] = y;
	s->n++;
	return 0;
}

/* Keeps at most MAX_POINTS points, evenly spaced, the last always. */
static void thin(struct series_buf *s)
{
	if (s->n <= MAX_POINTS)
		return;
	size_t out = 0;
	for (size_t k = 0; k < MAX_POINTS; k++) {
		size_t i = k * (s->n - 1) / (MAX_POINTS - 1);
		s->x[out] = s->x[i];
		s->y[out] = s->y[i];
		out++;
	}
	s->n = out;
}

static void series_free(struct series_buf *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(s[i].name);
		free(s[i].x);
		free(s[i].y);
	}
}

/* The series of the first MAX_LINES harnesses (by name) from rows (harness, x, y)
 * ordered by harness; *dropped counts the harnesses left out. */
static int load_series(struct rh *r, const char *sql, struct series_buf *s, size_t *ns,
		       size_t *dropped, size_t *skipped, bool cumulative)
{
	sqlite3_stmt *st;
	*ns = *dropped = *skipped = 0;
	if (rh_prep(r, sql, &st))
		return -1;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *h = rh_col(st, 0);
		h = h ? h : "-";
		if (!*ns || strcmp(s[*ns - 1].name, h)) {
			if (*ns == MAX_LINES) { /* count the harnesses left out, once each */
				char *last = strdup(h);
				if (!last)
					goto nomem;
				(*dropped)++;
				while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
					const char *h2 = rh_col(st, 0);
					h2 = h2 ? h2 : "-";
					if (strcmp(h2, last)) {
						(*dropped)++;
						free(last);
						if (!(last = strdup(h2)))
							goto nomem;
					}
				}
				free(last);
				break;
			}
			if (!(s[*ns].name = strdup(h)))
				goto nomem;
			(*ns)++;
			if (cumulative && push(&s[*ns - 1], 0, 0))
				goto nomem;
		}
		struct series_buf *cur = &s[*ns - 1];
		if (sqlite3_column_type(st, 1) == SQLITE_NULL) {
			(*skipped)++;
			continue;
		}
		double x = sqlite3_column_double(st, 1);
		if (x < 0)
			x = 0;
		if (cumulative) { /* a step: up by one at x */
			double y = cur->y[cur->n - 1];
			if (push(cur, x, y) || push(cur, x, y + 1))
				goto nomem;
		} else if (sqlite3_column_type(st, 2) != SQLITE_NULL) {
			if (push(cur, x, sqlite3_column_double(st, 2)))
				goto nomem;
		}
	}
	return rh_finish(r, st, rc, "fuzzing");
nomem:
	sqlite3_finalize(st);
	oom(r);
	return -1;
}

static int fuzz_plot(struct rh *r, const char *name, const char *title, const char *ylabel,
		     bool integer, const char *alt, struct series_buf *s, size_t ns, double span)
{
	struct rh_line lines[MAX_LINES];
	/* seconds, minutes or hours on the time axis */
	double unit = span > 3 * 3600 ? 3600 : span > 180 ? 60 : 1;
	const char *xlabel = unit == 3600 ? "elapsed (hours)" : unit == 60 ? "elapsed (minutes)"
									     : "elapsed (seconds)";
	for (size_t i = 0; i < ns; i++) {
		thin(&s[i]);
		for (size_t k = 0; k < s[i].n; k++)
			s[i].x[k] /= unit;
		lines[i] = (struct rh_line){ s[i].name, rh_color(i), s[i].n, s[i].x, s[i].y };
	}
	FILE *svg = rh_svg_open(r, name);
	if (!svg)
		return -1;
	int w, h;
	rh_svg_lines(svg, title, xlabel, ylabel, integer, lines, ns, &w, &h);
	return rh_svg_close(r, name, svg, w, h, alt);
}

static int fuzz_table(struct rh *r)
{
	FILE *f = r->f;
	fputs("<table>\n<tr><th>harness</th><th class=\"n\">samples</th><th class=\"n\">elapsed (s)</th>"
	      "<th class=\"n\">execs</th><th class=\"n\">mean execs/s</th><th class=\"n\">corpus</th>"
	      "<th class=\"n\">findings</th><th class=\"n\">fixed</th></tr>\n",
	      f);
	sqlite3_stmt *st;
	if (rh_prep(r,
		    "WITH h AS (SELECT harness FROM fuzz_stats UNION SELECT harness FROM findings)"
		    " SELECT h.harness,"
		    " (SELECT count(*) FROM fuzz_stats s WHERE s.harness = h.harness),"
		    " (SELECT max(elapsed) FROM fuzz_stats s WHERE s.harness = h.harness),"
		    " (SELECT max(execs) FROM fuzz_stats s WHERE s.harness = h.harness),"
		    " (SELECT avg(execs_per_sec) FROM fuzz_stats s WHERE s.harness = h.harness),"
		    " (SELECT max(corpus) FROM fuzz_stats s WHERE s.harness = h.harness),"
		    " (SELECT count(*) FROM findings g WHERE g.harness = h.harness),"
		    " (SELECT sum(fixed != 0) FROM findings g WHERE g.harness = h.harness)"
		    " FROM h ORDER BY h.harness LIMIT ?1",
		    &st))
		return -1;
	sqlite3_bind_int(st, 1, RH_MAX_ROWS);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		fputs("<tr>", f);
		rh_td(r, st, 0, 40);
		rh_td_int(r, st, 1);
		if (sqlite3_column_type(st, 2) == SQLITE_NULL)
			fputs("<td class=\"n\">-</td>", f);
		else
			fprintf(f, "<td class=\"n\">%.0f</td>", sqlite3_column_double(st, 2));
		rh_td_int(r, st, 3);
		if (sqlite3_column_type(st, 4) == SQLITE_NULL)
			fputs("<td class=\"n\">-</td>", f);
		else
			fprintf(f, "<td class=\"n\">%.1f</td>", sqlite3_column_double(st, 4));
		rh_td_int(r, st, 5);
		if (sqlite3_column_int64(st, 6) - sqlite3_column_int64(st, 7) > 0)
			fprintf(f, "<td class=\"n bad\">%lld</td>", (long long)sqlite3_column_int64(st, 6));
		else
			rh_td_int(r, st, 6);
		rh_td_int(r, st, 7);
		fputs("</tr>\n", f);
	}
	if (rh_finish(r, st, rc, "fuzzing"))
		return -1;
	fputs("</table>\n", f);
	return 0;
}

static int findings_table(struct rh *r, int64_t n)
{
	FILE *f = r->f;
	fputs("<h3>Findings</h3>\n<p>Deduplicated by their stack; those not fixed first, newest first.</p>\n"
	      "<table>\n<tr><th class=\"n\">id</th><th>harness</th><th>found</th><th>kind</th>"
	      "<th>signal</th><th>stack hash</th><th>top of the stack</th><th class=\"n\">input bytes</th>"
	      "<th>fixed</th></tr>\n",
	      f);
	sqlite3_stmt *st;
	if (rh_prep(r,
		    "SELECT id, harness, found, kind, signal, stack_hash, stack, length(input), fixed"
		    " FROM findings ORDER BY fixed != 0, found DESC, id DESC LIMIT ?1",
		    &st))
		return -1;
	sqlite3_bind_int(st, 1, RH_MAX_ROWS);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		fputs("<tr>", f);
		rh_td_int(r, st, 0);
		rh_td(r, st, 1, 40);
		rh_td(r, st, 2, 40);
		rh_td(r, st, 3, 20);
		rh_td(r, st, 4, 20);
		fputs("<td><code>", f);
		rh_esc(f, rh_col(st, 5), 16);
		fputs("</code></td><td><code>", f);
		const char *stack = rh_col(st, 6);
		char *one = stack ? strdup(stack) : NULL;
		if (one)
			one[strcspn(one, "\n")] = 0;
		rh_esc(f, one ? one : stack, 100);
		free(one);
		fputs("</code></td>", f);
		rh_td_int(r, st, 7);
		fputs(sqlite3_column_int64(st, 8) ? "<td class=\"good\">yes</td>" : "<td class=\"bad\">no</td>",
		      f);
		fputs("</tr>\n", f);
	}
	if (rh_finish(r, st, rc, "findings"))
		return -1;
	fputs("</table>\n", f);
	rh_left_out(r, n, n > RH_MAX_ROWS ? RH_MAX_ROWS : n, "findings");
	return 0;
}

int rh_fuzzing(struct rh *r)
{
	FILE *f = r->f;
	int64_t nstats, nfind;
	if (rh_count(r, "SELECT count(*) FROM fuzz_stats", &nstats) ||
	    rh_count(r, "SELECT count(*) FROM findings", &nfind))
		return -1;
	if (!nstats && !nfind) {
		fputs("<p>No fuzzing recorded (tables <code>fuzz_stats</code> and <code>findings</code> are "
		      "empty).</p>\n",
		      f);
		return 0;
	}
	fputs("<p>AFL++ campaigns of the harnesses in <code>fuzz/</code>, recorded in this database "
	      "(fuzzing is not part of a crash-exploration campaign).</p>\n",
	      f);
	if (fuzz_table(r))
		return -1;
	struct series_buf s[MAX_LINES];
	size_t ns = 0, dropped = 0, skipped = 0;
	int ret = -1;
	memset(s, 0, sizeof(s));
	if (nstats) {
		if (load_series(r,
				"SELECT harness, elapsed, execs_per_sec FROM fuzz_stats"
				" ORDER BY harness, elapsed, id",
				s, &ns, &dropped, &skipped, false))
			goto out;
		double span = 0;
		for (size_t i = 0; i < ns; i++)
			for (size_t k = 0; k < s[i].n; k++)
				if (s[i].x[k] > span)
					span = s[i].x[k];
		if (fuzz_plot(r, "fuzz-execs.svg", "Executions per second", "execs/s", false,
			      "line plot: executions per second against elapsed time, per harness", s, ns,
			      span))
			goto out;
		if (dropped)
			fprintf(f, "<p class=\"note\">%zu more harness%s left out of the plot.</p>\n", dropped,
				dropped == 1 ? "" : "es");
		series_free(s, ns);
		memset(s, 0, sizeof(s));
		ns = 0;
	}
	if (nfind) {
		/* A finding's time from its harness' start: the first sample's time less
		 * its elapsed, or the harness' first finding when it has no samples. */
		if (load_series(r,
				"SELECT f.harness, (julianday(f.found) - coalesce("
				" (SELECT min(julianday(s.at) - s.elapsed / 86400.0) FROM fuzz_stats s"
				"  WHERE s.harness = f.harness),"
				" (SELECT min(julianday(g.found)) FROM findings g WHERE g.harness = f.harness)"
				" )) * 86400.0 AS t FROM findings f ORDER BY f.harness, t, f.id",
				s, &ns, &dropped, &skipped, true))
			goto out;
		double span = 0;
		for (size_t i = 0; i < ns; i++)
			if (s[i].n && s[i].x[s[i].n - 1] > span)
				span = s[i].x[s[i].n - 1];
		sqlite3_stmt *st;
		if (rh_prep(r, "SELECT max(elapsed) FROM fuzz_stats WHERE harness = ?1", &st))
			goto out;
		for (size_t i = 0; i < ns; i++) { /* each line to its harness' last sample */
			sqlite3_reset(st);
			sqlite3_bind_text(st, 1, s[i].name, -1, SQLITE_STATIC);
			double end = s[i].x[s[i].n - 1];
			if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_double(st, 0) > end)
				end = sqlite3_column_double(st, 0);
			if (end > span)
				span = end;
			if (end > s[i].x[s[i].n - 1] && push(&s[i], end, s[i].y[s[i].n - 1])) {
				sqlite3_finalize(st);
				oom(r);
				goto out;
			}
		}
		sqlite3_finalize(st);
		if (fuzz_plot(r, "fuzz-findings.svg", "Findings (cumulative)", "findings", true,
			      "line plot: cumulative unique findings against elapsed time, per harness", s, ns,
			      span))
			goto out;
		if (dropped)
			fprintf(f, "<p class=\"note\">%zu more harness%s left out of the plot.</p>\n", dropped,
				dropped == 1 ? "" : "es");
		if (skipped)
			fprintf(f, "<p class=\"note\">%zu finding%s with an unreadable time left out of "
				   "the plot.</p>\n",
				skipped, skipped == 1 ? "" : "s");
		if (findings_table(r, nfind))
			goto out;
	} else
		fputs("<p class=\"good\">No findings.</p>\n", f);
	ret = 0;
out:
	series_free(s, ns);
	return ret;
}

/* ---- 6. Coverage ---- */

struct cov_file {
	char *path;
	long long c[6]; /* LF LH FNF FNH BRF BRH */
};

static int cmp_dir(const void *a, const void *b)
{
	return strcmp(((const struct rh_cov_dir *)a)->name, ((const struct rh_cov_dir *)b)->name);
}

static void cov_free(struct cov_file *files, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(files[i].path);
	free(files);
}

/* Reads the lcov tracefile: one entry per SF record with its summary counts. */
static int read_lcov(struct rh *r, const char *path, struct cov_file **out, size_t *nout)
{
	static const char *const keys[6] = { "LF:", "LH:", "FNF:", "FNH:", "BRF:", "BRH:" };
	FILE *in = fopen(path, "r");
	if (!in) {
		store_seterr(r->err, r->errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	struct cov_file *files = NULL;
	size_t n = 0, cap = 0, lineno = 0;
	char *line = NULL;
	size_t len = 0;
	ssize_t got;
	bool in_rec = false;
	int ret = -1;
	while ((got = getline(&line, &len, in)) > 0) {
		lineno++;
		if (memchr(line, 0, (size_t)got)) {
			store_seterr(r->err, r->errlen, "%s:%zu: not an lcov tracefile (a NUL byte)", path,
				     lineno);
			goto out;
		}
		line[strcspn(line, "\r\n")] = 0;
		if (!strncmp(line, "SF:", 3)) {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				struct cov_file *p = realloc(files, nc * sizeof(*p));
				if (!p)
					goto nomem;
				files = p;
				cap = nc;
			}
			files[n] = (struct cov_file){ .path = strdup(line + 3) };
			if (!files[n].path)
				goto nomem;
			n++;
			in_rec = true;
			continue;
		}
		if (!strcmp(line, "end_of_record")) {
			in_rec = false;
			continue;
		}
		for (int k = 0; k < 6; k++) {
			size_t kl = strlen(keys[k]);
			if (strncmp(line, keys[k], kl))
				continue;
			char *end;
			errno = 0;
			long long v = strtoll(line + kl, &end, 10);
			if (!in_rec || errno || end == line + kl || *end || v < 0) {
				store_seterr(r->err, r->errlen, "%s:%zu: not an lcov tracefile (bad %.*s record)",
					     path, lineno, (int)kl - 1, keys[k]);
				goto out;
			}
			files[n - 1].c[k] = v;
		}
	}
	if (ferror(in)) {
		store_seterr(r->err, r->errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!n) {
		store_seterr(r->err, r->errlen, "%s: not an lcov tracefile (no SF: record)", path);
		goto out;
	}
	*out = files;
	*nout = n;
	files = NULL;
	n = 0;
	ret = 0;
	goto out;
nomem:
	oom(r);
out:
	free(line);
	fclose(in);
	cov_free(files, n);
	return ret;
}

/* The folders: each path relative to the current directory when under it, else
 * to the files' common directory; its first component. Sorted by name. */
static int cov_dirs(struct rh *r, struct cov_file *files, size_t n, struct rh_cov_dir **out,
		    size_t *nout)
{
	char cwd[PATH_MAX];
	size_t skip = 0;
	bool under = getcwd(cwd, sizeof(cwd)) != NULL;
	size_t cl = under ? strlen(cwd) : 0;
	for (size_t i = 0; under && i < n; i++)
		if (strncmp(files[i].path, cwd, cl) || files[i].path[cl] != '/')
			under = false;
	if (under)
		skip = cl + 1;
	else { /* the common directory prefix */
		skip = strlen(files[0].path);
		for (size_t i = 1; i < n; i++) {
			size_t k = 0;
			while (k < skip && files[i].path[k] == files[0].path[k])
				k++;
			skip = k;
		}
		while (skip > 0 && files[0].path[skip - 1] != '/')
			skip--;
	}
	struct rh_cov_dir *dirs = calloc(n, sizeof(*dirs));
	size_t nd = 0;
	if (!dirs)
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		const char *rel = files[i].path + skip;
		size_t dl = strcspn(rel, "/");
		char *name;
		if (!rel[dl]) /* a file at the top */
			name = strdup("(top)");
		else if (asprintf(&name, "%.*s/", (int)dl, rel) < 0)
			name = NULL;
		if (!name)
			goto nomem;
		size_t d;
		for (d = 0; d < nd && strcmp(dirs[d].name, name); d++)
			;
		if (d == nd)
			dirs[nd++].name = name;
		else
			free(name);
		for (int k = 0; k < 6; k++)
			dirs[d].c[k] += files[i].c[k];
	}
	qsort(dirs, nd, sizeof(*dirs), cmp_dir);
	*out = dirs;
	*nout = nd;
	return 0;
nomem:
	if (dirs)
		for (size_t d = 0; d < nd; d++)
			free(dirs[d].name);
	free(dirs);
	oom(r);
	return -1;
}

static void pct_td(FILE *f, long long hit, long long found)
{
	if (!found)
		fputs("<td class=\"n\">-</td>", f);
	else
		fprintf(f, "<td class=\"n\">%.1f%% (%lld/%lld)</td>", 100.0 * (double)hit / (double)found,
			hit, found);
}

static double pct(long long hit, long long found)
{
	return found ? 100.0 * (double)hit / (double)found : 0;
}

int rh_coverage_load(struct rh *r)
{
	struct cov_file *files;
	size_t nf;
	if (!r->o->coverage)
		return 0;
	if (read_lcov(r, r->o->coverage, &files, &nf))
		return -1;
	int ret = cov_dirs(r, files, nf, &r->cov, &r->ncov);
	cov_free(files, nf);
	r->ncov_files = nf;
	return ret;
}

void rh_coverage_free(struct rh *r)
{
	for (size_t d = 0; d < r->ncov; d++)
		free(r->cov[d].name);
	free(r->cov);
	r->cov = NULL;
	r->ncov = 0;
}

int rh_coverage(struct rh *r)
{
	FILE *f = r->f;
	if (!r->o->coverage) {
		fputs("<p>No coverage data: run <code>make coverage</code> (it leaves the lcov tracefile "
		      "<code>build/coverage/coverage.info</code>, which <code>btrsim report</code> reads "
		      "from the top of the tree, or name one with <code>--coverage FILE</code>).</p>\n",
		      f);
		return 0;
	}
	const struct rh_cov_dir *dirs = r->cov;
	size_t nd = r->ncov;
	fputs("<p>From the lcov tracefile <code>", f);
	rh_esc(f, r->o->coverage, 0);
	fprintf(f, "</code> (%zu source files; <code>make coverage</code> writes the line-by-line "
		   "HTML in <code>reports/coverage/</code>).</p>\n<table>\n<tr><th>folder</th>"
		   "<th class=\"n\">lines</th><th class=\"n\">functions</th><th class=\"n\">branches</th></tr>\n",
		r->ncov_files);
	long long tot[6] = { 0 };
	for (size_t d = 0; d < nd; d++) {
		fputs("<tr><td>", f);
		rh_esc(f, dirs[d].name, 60);
		fputs("</td>", f);
		for (int k = 0; k < 6; k += 2)
			pct_td(f, dirs[d].c[k + 1], dirs[d].c[k]);
		fputs("</tr>\n", f);
		for (int k = 0; k < 6; k++)
			tot[k] += dirs[d].c[k];
	}
	fputs("<tr><th>total</th>", f);
	for (int k = 0; k < 6; k += 2)
		pct_td(f, tot[k + 1], tot[k]);
	fputs("</tr>\n</table>\n", f);
	size_t nb = nd > MAX_BARS ? MAX_BARS : nd;
	char **labels = calloc(nb ? nb : 1, sizeof(*labels));
	double *v = calloc((nb ? nb : 1) * 3, sizeof(*v));
	int ret = -1;
	if (!labels || !v) {
		oom(r);
		goto out;
	}
	for (size_t d = 0; d < nb; d++) {
		labels[d] = dirs[d].name;
		for (int k = 0; k < 3; k++)
			v[d * 3 + (size_t)k] = pct(dirs[d].c[2 * k + 1], dirs[d].c[2 * k]);
	}
	static const char *const series[] = { "lines", "functions", "branches" };
	static const char *const colors[] = { "#1f77b4", "#2ca02c", "#ff7f0e" };
	struct rh_bars b = {
		.title = "Coverage per folder",
		.xlabel = "covered",
		.ylabel = "",
		.n = nb,
		.nseries = 3,
		.labels = labels,
		.series = series,
		.colors = colors,
		.v = v,
		.max = 100,
		.percent = true,
	};
	if (rh_bar_chart(r, "coverage.svg", &b, false,
			 "bar chart: line, function and branch coverage per folder"))
		goto out;
	if (nd > nb)
		fprintf(f, "<p class=\"note\">%zu more folders left out of the plot.</p>\n", nd - nb);
	ret = 0;
out:
	free(labels); /* the names belong to r->cov */
	free(v);
	return ret;
}
