/*
 * store_merge.c - stores merged into one (`btrsim merge OUT IN...`): the
 * shards of a campaign run as a Slurm array, one store each, brought back
 * together.  The input is ATTACHed to the output's connection and copied
 * table by table in one transaction, with new ids: content-addressed rows
 * (workloads by their text's hash, payloads by their bytes' hash, findings
 * by harness and stack) are stored once; campaigns, runs, RAID campaigns
 * and fuzzing statistics carry an origin ("STOREID:ID": the store they were
 * first recorded in and their id there) that survives every merge, so that
 * a row already merged is recognised and left alone.  Columns are copied by
 * name from the input's schema, which must be this btrsim's version.
 */
#include "traces/store_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The columns of the input's table t but those in skip (",a,b,"), each
 * after prefix, joined with ", ".  malloc'd; NULL with err set. */
static char *columns(struct store *s, const char *t, const char *skip, const char *prefix,
		     char *err, size_t errlen)
{
	char *sql = sqlite3_mprintf("PRAGMA src.table_info(%s)", t);
	sqlite3_stmt *st = NULL;
	int r = sql ? store_prep(s, sql, &st, err, errlen) : -1;
	sqlite3_free(sql);
	if (r)
		return NULL;
	sqlite3_str *out = sqlite3_str_new(s->db);
	bool first = true;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 1);
		char pat[96];
		snprintf(pat, sizeof(pat), ",%s,", name ? name : "");
		if (!name || strstr(skip, pat))
			continue;
		sqlite3_str_appendf(out, "%s%s\"%w\"", first ? "" : ", ", prefix, name);
		first = false;
	}
	sqlite3_finalize(st);
	char *text = sqlite3_str_finish(out);
	if (!text) {
		store_seterr(err, errlen, "out of memory");
		return NULL;
	}
	char *copy = strdup(text);
	sqlite3_free(text);
	if (!copy)
		store_seterr(err, errlen, "out of memory");
	return copy;
}

/* store_exec of a statement made with sqlite3_mprintf (freed here), adding
 * the rows it changed to *n (may be NULL). */
static int run_sql(struct store *s, char *sql, const char *what, int64_t *n, char *err,
		   size_t errlen)
{
	if (!sql) {
		store_seterr(err, errlen, "out of memory");
		return -1;
	}
	int r = store_exec(s, sql, what, err, errlen);
	sqlite3_free(sql);
	if (!r && n)
		*n += sqlite3_changes64(s->db);
	return r;
}

static int64_t count(struct store *s, char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t n = 0;
	if (sql && sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_free(sql);
	return n;
}

struct ids {
	const char *in, *out; /* the two stores' ids */
};

/*
 * The rows of table t with an origin: temp.m_t(old, origin, new, added)
 * maps the input's ids to the output's; rows the output holds already
 * (by origin, or its own rows by "OUTID:ID") are mapped to them, the others
 * copied (cols: what is copied as is; extra_cols / extra_vals: columns set
 * by expressions over the input row r) and marked added.
 */
static int copy_origin(struct store *s, const struct ids *id, const char *t, const char *skip,
		       const char *extra_cols, const char *extra_vals, int64_t *added,
		       int64_t *there, char *err, size_t errlen)
{
	char *cols = columns(s, t, skip, "", err, errlen);
	char *rcols = cols ? columns(s, t, skip, "r.", err, errlen) : NULL;
	int r = -1;
	if (!cols || !rcols)
		goto out;
	if (run_sql(s, sqlite3_mprintf("CREATE TEMP TABLE m_%s (old INTEGER PRIMARY KEY, origin TEXT,"
				      " new INTEGER, added INTEGER NOT NULL DEFAULT 0)", t),
		    "merge: a map", NULL, err, errlen) ||
	    run_sql(s, sqlite3_mprintf("INSERT INTO temp.m_%s(old, origin) SELECT r.id,"
				      " coalesce(r.origin, %Q || ':' || r.id) FROM src.%s r", t, id->in, t),
		    "merge: origins", NULL, err, errlen) ||
	    run_sql(s, sqlite3_mprintf("UPDATE temp.m_%s SET new = (SELECT x.id FROM main.%s x"
				      " WHERE x.origin = temp.m_%s.origin)", t, t, t),
		    "merge: rows merged before", NULL, err, errlen) ||
	    run_sql(s, sqlite3_mprintf("UPDATE temp.m_%s SET new = CAST(substr(origin, %d) AS INTEGER)"
				      " WHERE new IS NULL AND substr(origin, 1, %d) = %Q || ':' AND"
				      " EXISTS (SELECT 1 FROM main.%s x WHERE x.origin IS NULL AND"
				      " x.id = CAST(substr(temp.m_%s.origin, %d) AS INTEGER))",
				      t, (int)strlen(id->out) + 2, (int)strlen(id->out) + 1, id->out, t, t,
				      (int)strlen(id->out) + 2),
		    "merge: the output's own rows", NULL, err, errlen))
		goto out;
	if (there)
		*there += count(s, sqlite3_mprintf("SELECT count(*) FROM temp.m_%s WHERE new IS NOT NULL", t));
	if (run_sql(s, sqlite3_mprintf("INSERT INTO main.%s(%s, origin%s) SELECT %s, m.origin%s"
				      " FROM src.%s r JOIN temp.m_%s m ON m.old = r.id WHERE m.new IS NULL"
				      " ORDER BY r.id", t, cols, extra_cols, rcols, extra_vals, t, t),
		    "merge: new rows", added, err, errlen) ||
	    run_sql(s, sqlite3_mprintf("UPDATE temp.m_%s SET added = 1, new = (SELECT x.id FROM main.%s x"
				      " WHERE x.origin = temp.m_%s.origin) WHERE new IS NULL", t, t, t),
		    "merge: new ids", NULL, err, errlen))
		goto out;
	r = 0;
out:
	free(cols);
	free(rcols);
	return r;
}

/* A child table's rows of the parents added now, pcol mapped through
 * temp.m_parent; with_id: the table's own id column is renumbered. */
static int copy_children(struct store *s, const char *t, const char *parent, const char *pcol,
			 bool with_id, int64_t *n, char *err, size_t errlen)
{
	char skip[96];
	snprintf(skip, sizeof(skip), ",%s,%s", pcol, with_id ? "id," : "");
	char *cols = columns(s, t, skip, "", err, errlen);
	char *ccols = cols ? columns(s, t, skip, "c.", err, errlen) : NULL;
	int r = -1;
	if (cols && ccols)
		r = run_sql(s, sqlite3_mprintf("INSERT INTO main.%s(\"%w\", %s) SELECT m.new, %s FROM src.%s c"
					      " JOIN temp.m_%s m ON m.old = c.\"%w\" WHERE m.added",
					      t, pcol, cols, ccols, t, parent, pcol),
			    "merge: rows of the new rows", n, err, errlen);
	free(cols);
	free(ccols);
	return r;
}

/* The input checked before anything is attached: a btrsim store of this
 * schema version, with its id. */
static int check_input(const char *path, char *in_id, size_t idlen, char *err, size_t errlen)
{
	if (store_not_a_file(path, err, errlen))
		return -1;
	if (access(path, F_OK)) {
		store_seterr(err, errlen, "%s: no such trace database", path);
		return -1;
	}
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		store_seterr(err, errlen, "%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close_v2(db);
		return -1;
	}
	sqlite3_stmt *st = NULL;
	int r = -1;
	int64_t v = -1;
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (v < 0) {
		store_seterr(err, errlen, "%s: not an SQLite trace database (%s)", path, sqlite3_errmsg(db));
	} else if (v != STORE_VERSION) {
		store_seterr(err, errlen,
			     "%s: trace database version %lld; btrsim merge takes version %d only (%s)",
			     path, (long long)v, STORE_VERSION,
			     v < STORE_VERSION ? "any command of this btrsim that opens it, 'btrsim runs --db "
						 "FILE' say, migrates it"
					       : "merge it with the btrsim that wrote it");
	} else if (sqlite3_prepare_v2(db, "SELECT value FROM store_info WHERE key = 'id'", -1, &st,
				      NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
		store_seterr(err, errlen, "%s: not a btrsim trace database of version %d (no store id)",
			     path, STORE_VERSION);
	} else {
		snprintf(in_id, idlen, "%s", (const char *)sqlite3_column_text(st, 0));
		r = 0;
	}
	sqlite3_finalize(st);
	sqlite3_close_v2(db);
	return r;
}

static const char *const temps[] = { "m_campaigns", "m_raid_campaigns", "m_runs", "m_fuzz_stats" };

int store_merge(struct store *s, const char *in_path, struct store_merge_stats *st, char *err,
		size_t errlen)
{
	memset(st, 0, sizeof(*st));
	char in_id[80], out_id[80] = "";
	char a[PATH_MAX], b[PATH_MAX];
	if (realpath(in_path, a) && realpath(s->path, b) && !strcmp(a, b)) {
		store_seterr(err, errlen, "%s: is the store merged into", in_path);
		return -1;
	}
	if (check_input(in_path, in_id, sizeof(in_id), err, errlen))
		return -1;
	sqlite3_stmt *q = NULL;
	if (store_prep(s, "SELECT value FROM store_info WHERE key = 'id'", &q, err, errlen))
		return -1;
	if (sqlite3_step(q) == SQLITE_ROW)
		snprintf(out_id, sizeof(out_id), "%s", (const char *)sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	if (run_sql(s, sqlite3_mprintf("ATTACH DATABASE %Q AS src", in_path), "attach", NULL, err, errlen))
		return -1;
	struct ids id = { in_id, out_id };
	char *src = sqlite3_mprintf("%Q", in_path);
	char *run_vals = src ? sqlite3_mprintf(
				       ", (SELECT w2.id FROM main.workloads w2 JOIN src.workloads w1 ON"
				       " w1.hash = w2.hash WHERE w1.id = r.workload_id),"
				       " (SELECT mc.new FROM temp.m_campaigns mc WHERE mc.old = r.campaign_id),"
				       " coalesce(r.source, %s)", src)
			     : NULL;
	int64_t ignored = 0;
	int r = !run_vals ? (store_seterr(err, errlen, "out of memory"), -1)
			  : store_exec(s, "BEGIN IMMEDIATE", "begin", err, errlen);
	if (!r)
		r = run_sql(s, sqlite3_mprintf("INSERT OR IGNORE INTO main.payloads(hash, len, zdata)"
					      " SELECT hash, len, zdata FROM src.payloads"),
			    "merge: payloads", NULL, err, errlen) ||
		    run_sql(s, sqlite3_mprintf("INSERT OR IGNORE INTO main.workloads(hash, text)"
					      " SELECT hash, text FROM src.workloads"),
			    "merge: workloads", &st->workloads, err, errlen) ||
		    copy_origin(s, &id, "campaigns", ",id,origin,", "", "", &st->campaigns, &ignored,
				err, errlen) ||
		    copy_origin(s, &id, "runs", ",id,origin,source,workload_id,campaign_id,",
				", workload_id, campaign_id, source", run_vals, &st->runs,
				&st->runs_there, err, errlen) ||
		    copy_children(s, "io", "runs", "run_id", false, NULL, err, errlen) ||
		    copy_children(s, "results", "runs", "run_id", false, NULL, err, errlen) ||
		    copy_children(s, "crash_states", "runs", "run_id", false, &st->states, err, errlen) ||
		    copy_children(s, "fault_hits", "runs", "run_id", false, NULL, err, errlen) ||
		    copy_children(s, "violations", "runs", "run_id", true, &st->violations, err, errlen) ||
		    copy_origin(s, &id, "raid_campaigns", ",id,origin,", "", "", &st->raid_campaigns,
				&ignored, err, errlen) ||
		    copy_children(s, "raid_runs", "raid_campaigns", "campaign_id", false, NULL, err,
				  errlen) ||
		    copy_origin(s, &id, "fuzz_stats", ",id,origin,", "", "", &st->fuzz_stats, &ignored,
				err, errlen);
	if (!r) {
		char *fc = columns(s, "findings", ",id,", "", err, errlen);
		r = !fc ? -1
			: run_sql(s, sqlite3_mprintf("INSERT OR IGNORE INTO main.findings(%s) SELECT %s"
						    " FROM src.findings", fc, fc),
				  "merge: findings", &st->findings, err, errlen);
		free(fc);
	}
	if (!r)
		r = store_exec(s, "COMMIT", "commit", err, errlen);
	else
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	for (size_t i = 0; i < sizeof(temps) / sizeof(temps[0]); i++) {
		char *drop = sqlite3_mprintf("DROP TABLE IF EXISTS temp.%s", temps[i]);
		if (drop)
			sqlite3_exec(s->db, drop, NULL, NULL, NULL);
		sqlite3_free(drop);
	}
	sqlite3_exec(s->db, "DETACH DATABASE src", NULL, NULL, NULL);
	sqlite3_free(src);
	sqlite3_free(run_vals);
	return r ? -1 : 0;
}
