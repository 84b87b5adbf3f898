/* findings.c - fuzzing findings and statistics in the trace store (findings.h). */
#include "traces/findings.h"
#include "traces/record.h"
#include "traces/store_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool finding_kind_valid(const char *kind)
{
	return kind && (!strcmp(kind, "crash") || !strcmp(kind, "hang") ||
			!strcmp(kind, "violation"));
}

static int bind_blob(sqlite3_stmt *st, int i, const uint8_t *p, size_t n)
{
	if (!p)
		return sqlite3_bind_null(st, i);
	/* A zero-length blob must still be a blob, not NULL (input is NOT NULL). */
	return n ? sqlite3_bind_blob64(st, i, p, n, SQLITE_TRANSIENT) : sqlite3_bind_zeroblob(st, i, 0);
}

int findings_add(struct store *s, const struct finding *f, int64_t *id, bool *known, char *err,
		 size_t errlen)
{
	*known = false;
	*id = 0;
	if (!f->harness || !f->harness[0] || !f->stack_hash || !f->stack_hash[0] || !f->input) {
		store_seterr(err, errlen, "%s: a finding needs a harness, a stack hash and an input",
			     s->path);
		return -1;
	}
	if (!finding_kind_valid(f->kind)) {
		store_seterr(err, errlen, "%s: finding kind '%s' is not crash, hang or violation",
			     s->path, f->kind ? f->kind : "");
		return -1;
	}
	char now[32];
	record_iso_now(now);
	sqlite3_stmt *st = NULL;
	if (store_exec(s, "BEGIN IMMEDIATE", "begin", err, errlen))
		return -1;
	if (store_prep(s, "SELECT id FROM findings WHERE harness = ?1 AND stack_hash = ?2", &st, err,
		       errlen))
		goto fail;
	store_bind_text(st, 1, f->harness);
	store_bind_text(st, 2, f->stack_hash);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		*known = true;
		sqlite3_finalize(st);
		return store_exec(s, "COMMIT", "commit", err, errlen);
	}
	if (rc != SQLITE_DONE) {
		store_db_err(s, "look the finding up", err, errlen);
		goto fail;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (store_prep(s,
		       "INSERT INTO findings (harness, found, kind, signal, stack_hash, stack, input,"
		       " minimized) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
		       &st, err, errlen))
		goto fail;
	store_bind_text(st, 1, f->harness);
	store_bind_text(st, 2, f->found ? f->found : now);
	store_bind_text(st, 3, f->kind);
	store_bind_text(st, 4, f->signal);
	store_bind_text(st, 5, f->stack_hash);
	store_bind_text(st, 6, f->stack);
	bind_blob(st, 7, f->input, f->input_len);
	bind_blob(st, 8, f->minimized, f->minimized_len);
	if (store_step(s, st, SQLITE_DONE, "record the finding", err, errlen))
		goto fail;
	sqlite3_finalize(st);
	*id = sqlite3_last_insert_rowid(s->db);
	return store_exec(s, "COMMIT", "commit", err, errlen);
fail:
	sqlite3_finalize(st);
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

static char *dup_text(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	return t ? strdup(t) : NULL;
}

/* A copy of blob column i (NULL for NULL; a zero-length blob as a 1-byte
 * allocation with *n = 0).  Returns -1 when out of memory. */
static int dup_blob(sqlite3_stmt *st, int i, uint8_t **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return 0;
	const void *p = sqlite3_column_blob(st, i);
	int len = sqlite3_column_bytes(st, i);
	*out = malloc(len > 0 ? (size_t)len : 1);
	if (!*out)
		return -1;
	if (len > 0)
		memcpy(*out, p, (size_t)len);
	*n = len > 0 ? (size_t)len : 0;
	return 0;
}

void finding_free(struct finding *f)
{
	free(f->harness);
	free(f->found);
	free(f->kind);
	free(f->signal);
	free(f->stack_hash);
	free(f->stack);
	free(f->input);
	free(f->minimized);
	memset(f, 0, sizeof(*f));
}

int findings_load(struct store *s, int64_t id, struct finding *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	sqlite3_stmt *st = NULL;
	if (store_prep(s,
		       "SELECT harness, found, kind, signal, stack_hash, stack, input, minimized, fixed"
		       " FROM findings WHERE id = ?1",
		       &st, err, errlen))
		return -1;
	sqlite3_bind_int64(st, 1, id);
	int rc = sqlite3_step(st), ret = -1;
	if (rc == SQLITE_DONE) {
		store_seterr(err, errlen, "%s: finding %lld: no such finding", s->path, (long long)id);
	} else if (rc != SQLITE_ROW) {
		store_db_err(s, "read the finding", err, errlen);
	} else {
		out->id = id;
		out->harness = dup_text(st, 0);
		out->found = dup_text(st, 1);
		out->kind = dup_text(st, 2);
		out->signal = dup_text(st, 3);
		out->stack_hash = dup_text(st, 4);
		out->stack = dup_text(st, 5);
		out->fixed = sqlite3_column_int(st, 8) != 0;
		bool oom = !out->harness || !out->found || !out->kind || !out->stack_hash ||
			   dup_blob(st, 6, &out->input, &out->input_len) ||
			   dup_blob(st, 7, &out->minimized, &out->minimized_len);
		if (!oom && !out->input) {
			store_seterr(err, errlen, "%s: finding %lld has no input", s->path,
				     (long long)id);
		} else if (oom) {
			/* NULL text in a NOT NULL column means a damaged table, or no memory. */
			store_seterr(err, errlen, "%s: finding %lld: out of memory or a damaged row",
				     s->path, (long long)id);
		} else {
			ret = 0;
		}
		if (ret)
			finding_free(out);
	}
	sqlite3_finalize(st);
	return ret;
}

int findings_set_fixed(struct store *s, int64_t id, bool fixed, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (store_prep(s, "UPDATE findings SET fixed = ?2 WHERE id = ?1", &st, err, errlen))
		return -1;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int(st, 2, fixed);
	int r = store_step(s, st, SQLITE_DONE, "mark the finding", err, errlen);
	sqlite3_finalize(st);
	if (!r && sqlite3_changes(s->db) == 0) {
		store_seterr(err, errlen, "%s: finding %lld: no such finding", s->path, (long long)id);
		r = -1;
	}
	return r;
}

static const char *col(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	return t ? t : "-";
}

static int finish_list(struct store *s, sqlite3_stmt *st, int rc, FILE *out, const char *what,
		       char *err, size_t errlen)
{
	if (rc != SQLITE_DONE) {
		store_db_err(s, what, err, errlen);
		sqlite3_finalize(st);
		return -1;
	}
	sqlite3_finalize(st);
	if (fflush(out) || ferror(out)) {
		store_seterr(err, errlen, "cannot write the list: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int findings_list(struct store *s, const char *harness, FILE *out, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (store_prep(s,
		       "SELECT id, harness, found, kind, signal, stack_hash, length(input),"
		       " length(minimized), fixed, stack FROM findings"
		       " WHERE ?1 IS NULL OR harness = ?1 ORDER BY id",
		       &st, err, errlen))
		return -1;
	store_bind_text(st, 1, harness);
	fprintf(out, "%-5s %-8s %-20s %-9s %-8s %-16s %7s %7s %5s %s\n", "ID", "HARNESS", "FOUND",
		"KIND", "SIGNAL", "STACK_HASH", "INPUT", "MIN", "FIXED", "TOP-FRAME");
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		/* The top frame: the stack's first line. */
		const char *stack = col(st, 9);
		int top = (int)strcspn(stack, "\n");
		fprintf(out, "%-5lld %-8s %-20s %-9s %-8s %-16.16s %7s %7s %5s %.*s\n",
			(long long)sqlite3_column_int64(st, 0), col(st, 1), col(st, 2), col(st, 3),
			col(st, 4), col(st, 5), col(st, 6), col(st, 7),
			sqlite3_column_int(st, 8) ? "yes" : "no", top > 100 ? 100 : top, stack);
	}
	return finish_list(s, st, rc, out, "list findings", err, errlen);
}

int fuzz_stats_add(struct store *s, const struct fuzz_stat *v, size_t n, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (store_exec(s, "BEGIN IMMEDIATE", "begin", err, errlen))
		return -1;
	if (store_prep(s,
		       "INSERT INTO fuzz_stats (harness, at, elapsed, execs, execs_per_sec, corpus,"
		       " crashes, hangs) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
		       &st, err, errlen))
		goto fail;
	for (size_t i = 0; i < n; i++) {
		if (!v[i].harness || !v[i].at) {
			store_seterr(err, errlen, "%s: a statistics sample needs a harness and a time",
				     s->path);
			goto fail;
		}
		sqlite3_reset(st);
		store_bind_text(st, 1, v[i].harness);
		store_bind_text(st, 2, v[i].at);
		sqlite3_bind_double(st, 3, v[i].elapsed);
		sqlite3_bind_int64(st, 4, v[i].execs);
		sqlite3_bind_double(st, 5, v[i].execs_per_sec);
		const int64_t opt[3] = { v[i].corpus, v[i].crashes, v[i].hangs };
		for (int k = 0; k < 3; k++) {
			if (opt[k] < 0)
				sqlite3_bind_null(st, 6 + k);
			else
				sqlite3_bind_int64(st, 6 + k, opt[k]);
		}
		if (store_step(s, st, SQLITE_DONE, "record a statistics sample", err, errlen))
			goto fail;
	}
	sqlite3_finalize(st);
	return store_exec(s, "COMMIT", "commit", err, errlen);
fail:
	sqlite3_finalize(st);
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

int fuzz_stats_list(struct store *s, const char *harness, FILE *out, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (store_prep(s,
		       "SELECT id, harness, at, elapsed, execs, execs_per_sec, corpus, crashes, hangs"
		       " FROM fuzz_stats WHERE ?1 IS NULL OR harness = ?1 ORDER BY id",
		       &st, err, errlen))
		return -1;
	store_bind_text(st, 1, harness);
	fprintf(out, "%-6s %-8s %-20s %9s %12s %10s %7s %7s %6s\n", "ID", "HARNESS", "AT",
		"ELAPSED", "EXECS", "EXECS/S", "CORPUS", "CRASHES", "HANGS");
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fprintf(out, "%-6lld %-8s %-20s %9.0f %12lld %10.1f %7s %7s %6s\n",
			(long long)sqlite3_column_int64(st, 0), col(st, 1), col(st, 2),
			sqlite3_column_double(st, 3), (long long)sqlite3_column_int64(st, 4),
			sqlite3_column_double(st, 5), col(st, 6), col(st, 7), col(st, 8));
	return finish_list(s, st, rc, out, "list statistics", err, errlen);
}
