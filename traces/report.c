/* report.c - a campaign's Markdown report from the trace store (report.h). */
#include "traces/report.h"
#include "traces/store_internal.h"

#include <string.h>

static const char *text(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	return t ? t : "-";
}

/* Runs sql (?1 bound to id) and hands each row to `row`. */
static int each(struct store *s, const char *sql, int64_t id, void (*row)(sqlite3_stmt *, FILE *),
		FILE *out, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (store_prep(s, sql, &st, err, errlen))
		return -1;
	sqlite3_bind_int64(st, 1, id);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		row(st, out);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		store_db_err(s, "report", err, errlen);
		return -1;
	}
	return 0;
}

static void head_row(sqlite3_stmt *st, FILE *out)
{
	fprintf(out, "| command | `%s` |\n|---|---|\n", text(st, 0));
	fprintf(out, "| seed | %lld |\n| build | %s |\n| started | %s |\n| ended | %s |\n",
		(long long)sqlite3_column_int64(st, 1), text(st, 2), text(st, 3), text(st, 4));
	double secs = sqlite3_column_double(st, 8);
	int64_t states = sqlite3_column_int64(st, 6);
	fprintf(out, "| workloads | %s |\n| crash states | %lld |\n| states per second | %.0f |\n"
		"| violations | %s |\n| seconds | %.1f |\n| exit status | %s |\n\n",
		text(st, 5), (long long)states, secs > 0 ? (double)states / secs : 0.0, text(st, 7),
		secs, text(st, 9));
}

static void verdict_row(sqlite3_stmt *st, FILE *out)
{
	fprintf(out, "| %s | %s |\n", text(st, 0), text(st, 1));
}

static void slow_row(sqlite3_stmt *st, FILE *out)
{
	fprintf(out, "| %s | %s | %s | %.2f |\n", text(st, 0), text(st, 1), text(st, 2),
		sqlite3_column_double(st, 3));
}

static void fault_row(sqlite3_stmt *st, FILE *out)
{
	fprintf(out, "| %s | %s | %s | %s |\n", text(st, 0), text(st, 1), text(st, 2), text(st, 3));
}

static const char *report_db; /* the path shown in commands (set for one report) */

static void violation_row(sqlite3_stmt *st, FILE *out)
{
	long long vid = sqlite3_column_int64(st, 0), run = sqlite3_column_int64(st, 1);
	fprintf(out, "### Violation %lld (%s, run %lld, crash state %s, %s)\n\n", vid, text(st, 6), run,
		text(st, 2), text(st, 3));
	fprintf(out, "%s\n\n", text(st, 4));
	fprintf(out, "Replay the run and write the crash state's disks:\n\n"
		"    btrsim replay --db %s %lld\n"
		"    btrsim replay --db %s %lld --crash-state %s --out crash-%lld\n\n",
		report_db, run, report_db, run, text(st, 2), vid);
	if (sqlite3_column_type(st, 5) != SQLITE_NULL)
		fprintf(out, "Minimized reproducer (`btrsim violations --db %s --reproducer %lld`):\n\n"
			"```\n%s```\n\n", report_db, vid, text(st, 5));
}

int report_campaign(struct store *s, const char *db, int64_t id, FILE *out, char *err,
		    size_t errlen)
{
	report_db = db;
	sqlite3_stmt *st = NULL;
	if (store_prep(s, "SELECT 1 FROM campaigns WHERE id = ?1", &st, err, errlen))
		return -1;
	sqlite3_bind_int64(st, 1, id);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW) {
		store_seterr(err, errlen, "%s: campaign %lld: no such campaign", db, (long long)id);
		return -1;
	}
	fprintf(out, "# btrsim campaign %lld\n\n", (long long)id);
	if (each(s,
		 "SELECT args, seed, build, started, ended, workloads, states, violations, seconds,"
		 " status FROM campaigns WHERE id = ?1",
		 id, head_row, out, err, errlen))
		return -1;
	fprintf(out, "## Crash states by verdict\n\n| verdict | states |\n|---|---|\n");
	if (each(s,
		 "SELECT s.verdict, count(*) FROM crash_states s JOIN runs r ON r.id = s.run_id"
		 " WHERE r.campaign_id = ?1 GROUP BY s.verdict ORDER BY count(*) DESC",
		 id, verdict_row, out, err, errlen))
		return -1;
	fprintf(out, "\n`ok`: mounted, checked clean, a state the oracle allows. `detected`: damage a "
		"fault plan injected, caught by checksums. Any other verdict is a violation.\n\n");
	fprintf(out, "## The slowest workloads\n\n| run | workload | crash states | seconds |\n"
		"|---|---|---|---|\n");
	if (each(s,
		 "SELECT r.id, coalesce(r.name, substr(w.hash, 1, 12)), r.states, r.seconds FROM runs r"
		 " JOIN workloads w ON w.id = r.workload_id WHERE r.campaign_id = ?1"
		 " ORDER BY r.seconds DESC LIMIT 5",
		 id, slow_row, out, err, errlen))
		return -1;
	fprintf(out, "\n## Fault points\n\n| point | runs | hits | fired |\n|---|---|---|---|\n");
	if (each(s,
		 "SELECT f.point, count(*), sum(f.hits), sum(f.fired) FROM fault_hits f"
		 " JOIN runs r ON r.id = f.run_id WHERE r.campaign_id = ?1 GROUP BY f.point"
		 " ORDER BY f.point",
		 id, fault_row, out, err, errlen))
		return -1;
	fprintf(out, "\n(none armed when the table is empty; sim's own faults are in the IO log)\n");
	fprintf(out, "\n## Violations\n\n");
	sqlite3_stmt *cnt = NULL;
	if (store_prep(s,
		       "SELECT count(*) FROM violations v JOIN runs r ON r.id = v.run_id"
		       " WHERE r.campaign_id = ?1",
		       &cnt, err, errlen))
		return -1;
	sqlite3_bind_int64(cnt, 1, id);
	int64_t n = sqlite3_step(cnt) == SQLITE_ROW ? sqlite3_column_int64(cnt, 0) : 0;
	sqlite3_finalize(cnt);
	if (n == 0)
		fprintf(out, "None: every crash state of every workload was consistent.\n");
	if (n && each(s,
		      "SELECT v.id, v.run_id, v.state_k, v.verdict, v.description, v.reproducer, r.name"
		      " FROM violations v JOIN runs r ON r.id = v.run_id WHERE r.campaign_id = ?1"
		      " ORDER BY v.id",
		      id, violation_row, out, err, errlen))
		return -1;
	if (fflush(out) || ferror(out)) {
		store_seterr(err, errlen, "cannot write the report");
		return -1;
	}
	return 0;
}
