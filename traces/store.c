/* store.c - the SQLite trace store (store.h; traces/README.md, "Trace store"). */
#include "traces/store.h"

#include <errno.h>
#include <limits.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct store {
	sqlite3 *db;
	char *path;
};

/*
 * The migrations: migrations[v] takes a database from version v to v + 1.
 * Static SQL only; each runs inside the transaction that also sets
 * user_version, so a database is at one version or the next, never between.
 */
static const char *const migrations[STORE_VERSION] = {
	/* 0 -> 1: the first schema. */
	"CREATE TABLE workloads ("
	"  id INTEGER PRIMARY KEY,"
	"  hash TEXT UNIQUE NOT NULL," /* sha256 hex of the text */
	"  text TEXT NOT NULL);"
	"CREATE TABLE runs ("
	"  id INTEGER PRIMARY KEY,"
	"  kind TEXT NOT NULL," /* explore */
	"  seed INTEGER,"
	"  build TEXT,"
	"  config TEXT,"
	"  workload_id INTEGER REFERENCES workloads(id),"
	"  started TEXT,"
	"  ended TEXT,"
	"  ops INTEGER,"
	"  crash_points INTEGER,"
	"  states INTEGER,"
	"  violations INTEGER,"
	"  seconds REAL,"
	"  status INTEGER);" /* exit status */
	"CREATE TABLE violations ("
	"  id INTEGER PRIMARY KEY,"
	"  run_id INTEGER REFERENCES runs(id),"
	"  description TEXT NOT NULL);"
	"CREATE INDEX violations_run ON violations(run_id);",
};

__attribute__((format(printf, 3, 4)))
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* "PATH: what failed: SQLite's message", with a plainer word for the usual causes. */
static void db_err(const struct store *s, const char *what, char *err, size_t errlen)
{
	int code = sqlite3_errcode(s->db) & 0xff;
	const char *msg = sqlite3_errmsg(s->db);
	if (code == SQLITE_NOTADB)
		seterr(err, errlen, "%s: not an SQLite trace database (%s)", s->path, msg);
	else if (code == SQLITE_CORRUPT)
		seterr(err, errlen, "%s: corrupt trace database (%s)", s->path, msg);
	else
		seterr(err, errlen, "%s: %s: %s", s->path, what, msg);
}

static int exec(struct store *s, const char *sql, const char *what, char *err, size_t errlen)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		db_err(s, what, err, errlen);
		return -1;
	}
	return 0;
}

/* The integer one-row result of a static statement (a PRAGMA). */
static int query_int(struct store *s, const char *sql, int64_t *out, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		db_err(s, sql, err, errlen);
		sqlite3_finalize(st);
		return -1;
	}
	*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return 0;
}

static int check_version(struct store *s, int64_t v, char *err, size_t errlen)
{
	if (v > STORE_VERSION) {
		seterr(err, errlen,
		       "%s: trace database version %lld is newer than this btrsim knows (%d); "
		       "use a newer btrsim",
		       s->path, (long long)v, STORE_VERSION);
		return -1;
	}
	if (v < 0) {
		seterr(err, errlen, "%s: not a btrsim trace database (user_version %lld)", s->path,
		       (long long)v);
		return -1;
	}
	return 0;
}

/* Brings the schema to STORE_VERSION, one migration after another, all in
 * one immediate transaction (the version is read again under its lock, for
 * two btrsims opening a new database at once). */
static int migrate(struct store *s, char *err, size_t errlen)
{
	int64_t v;
	if (exec(s, "BEGIN IMMEDIATE", "begin", err, errlen))
		return -1;
	if (query_int(s, "PRAGMA user_version", &v, err, errlen) ||
	    check_version(s, v, err, errlen))
		goto fail;
	if (v == STORE_VERSION)
		return exec(s, "COMMIT", "commit", err, errlen);
	for (; v < STORE_VERSION; v++) {
		char what[64];
		snprintf(what, sizeof(what), "migration %lld to %lld", (long long)v,
			 (long long)v + 1);
		if (exec(s, migrations[v], what, err, errlen))
			goto fail;
	}
	char sql[64]; /* a constant of this code, not user data: PRAGMA takes no parameters */
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", STORE_VERSION);
	if (exec(s, sql, "set version", err, errlen) || exec(s, "COMMIT", "commit", err, errlen))
		goto fail;
	return 0;
fail:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

static int open_store(const char *path, int create, struct store **out, char *err,
		      size_t errlen)
{
	*out = NULL;
	struct stat sb;
	if (!create && stat(path, &sb) && errno == ENOENT) {
		seterr(err, errlen, "%s: no such trace database", path);
		return -1;
	}
	struct store *s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(path))) {
		free(s);
		seterr(err, errlen, "%s: out of memory", path);
		return -1;
	}
	int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
	if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
		if (s->db)
			seterr(err, errlen, "%s: cannot open: %s", path, sqlite3_errmsg(s->db));
		else
			seterr(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, 10000);
	/* The first read: a file that is not SQLite, or is newer, stops here
	 * before anything is written to it. */
	int64_t v;
	if (query_int(s, "PRAGMA user_version", &v, err, errlen) ||
	    check_version(s, v, err, errlen))
		goto fail;
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		db_err(s, "journal_mode=WAL", err, errlen);
		sqlite3_finalize(st);
		goto fail;
	}
	const char *mode = (const char *)sqlite3_column_text(st, 0);
	if (!mode || strcmp(mode, "wal")) {
		seterr(err, errlen, "%s: cannot use WAL mode (journal mode is %s)", path,
		       mode ? mode : "unknown");
		sqlite3_finalize(st);
		goto fail;
	}
	sqlite3_finalize(st);
	if (exec(s, "PRAGMA foreign_keys=ON", "foreign_keys", err, errlen) ||
	    migrate(s, err, errlen))
		goto fail;
	*out = s;
	return 0;
fail:
	store_close(s);
	return -1;
}

int store_open(const char *path, struct store **out, char *err, size_t errlen)
{
	return open_store(path, 1, out, err, errlen);
}

int store_open_existing(const char *path, struct store **out, char *err, size_t errlen)
{
	return open_store(path, 0, out, err, errlen);
}

void store_close(struct store *s)
{
	if (!s)
		return;
	sqlite3_close_v2(s->db); /* every statement is finalized by then */
	free(s->path);
	free(s);
}

/* The text of w as wl_print writes it (malloc'd, *len bytes) and its SHA-256 in hex. */
static int workload_text(const struct wl_workload *w, char **text, size_t *len,
			 char hex[crypto_hash_sha256_BYTES * 2 + 1])
{
	*text = NULL;
	*len = 0;
	FILE *f = open_memstream(text, len);
	if (!f)
		return -ENOMEM;
	int r = wl_print(f, w);
	if (fclose(f) && !r)
		r = -ENOMEM;
	if (r) {
		free(*text);
		*text = NULL;
		return r;
	}
	unsigned char h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(h, (const unsigned char *)*text, *len);
	sodium_bin2hex(hex, crypto_hash_sha256_BYTES * 2 + 1, h, sizeof(h));
	return 0;
}

/* Prepares sql into *st; on failure sets err. */
static int prep(struct store *s, const char *sql, sqlite3_stmt **st, char *err, size_t errlen)
{
	if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK) {
		db_err(s, "prepare", err, errlen);
		return -1;
	}
	return 0;
}

/* Steps st once, expecting `want` (SQLITE_DONE or SQLITE_ROW). */
static int step(struct store *s, sqlite3_stmt *st, int want, const char *what, char *err,
		size_t errlen)
{
	if (sqlite3_step(st) != want) {
		db_err(s, what, err, errlen);
		return -1;
	}
	return 0;
}

static int bind_text(sqlite3_stmt *st, int i, const char *t)
{
	return t ? sqlite3_bind_text(st, i, t, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

int store_record_explore(struct store *s, const struct wl_workload *w, uint64_t seed,
			 const char *build, const char *config, const struct explore_result *res,
			 int status, const char *started, const char *ended, int64_t *run_id,
			 char *err, size_t errlen)
{
	char *text, hex[crypto_hash_sha256_BYTES * 2 + 1];
	size_t len;
	int r = workload_text(w, &text, &len, hex);
	if (r) {
		seterr(err, errlen, "%s: cannot print the workload: %s", s->path, strerror(-r));
		return -1;
	}
	if (len > INT_MAX) {
		seterr(err, errlen, "%s: the workload's text is too long to store", s->path);
		free(text);
		return -1;
	}
	sqlite3_stmt *ins_wl = NULL, *get_wl = NULL, *ins_run = NULL, *ins_viol = NULL;
	int ret = -1;
	if (exec(s, "BEGIN IMMEDIATE", "begin", err, errlen))
		goto out;
	if (prep(s, "INSERT OR IGNORE INTO workloads(hash, text) VALUES (?1, ?2)", &ins_wl, err,
		 errlen) ||
	    prep(s, "SELECT id FROM workloads WHERE hash = ?1", &get_wl, err, errlen) ||
	    prep(s,
		 "INSERT INTO runs(kind, seed, build, config, workload_id, started, ended, ops,"
		 " crash_points, states, violations, seconds, status)"
		 " VALUES ('explore', ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
		 &ins_run, err, errlen) ||
	    prep(s, "INSERT INTO violations(run_id, description) VALUES (?1, ?2)", &ins_viol, err,
		 errlen))
		goto rollback;

	sqlite3_bind_text(ins_wl, 1, hex, -1, SQLITE_STATIC);
	sqlite3_bind_text(ins_wl, 2, text ? text : "", (int)len, SQLITE_STATIC);
	if (step(s, ins_wl, SQLITE_DONE, "insert workload", err, errlen))
		goto rollback;
	sqlite3_bind_text(get_wl, 1, hex, -1, SQLITE_STATIC);
	if (step(s, get_wl, SQLITE_ROW, "find workload", err, errlen))
		goto rollback;
	int64_t wid = sqlite3_column_int64(get_wl, 0);

	/* A seed above INT64_MAX is stored as its two's-complement int64. */
	sqlite3_bind_int64(ins_run, 1, (int64_t)seed);
	bind_text(ins_run, 2, build);
	bind_text(ins_run, 3, config);
	sqlite3_bind_int64(ins_run, 4, wid);
	bind_text(ins_run, 5, started);
	bind_text(ins_run, 6, ended);
	sqlite3_bind_int64(ins_run, 7, (int64_t)res->ops);
	sqlite3_bind_int64(ins_run, 8, (int64_t)res->crash_points);
	sqlite3_bind_int64(ins_run, 9, (int64_t)res->states);
	sqlite3_bind_int64(ins_run, 10, (int64_t)res->violations);
	sqlite3_bind_double(ins_run, 11, res->seconds);
	sqlite3_bind_int(ins_run, 12, status);
	if (step(s, ins_run, SQLITE_DONE, "insert run", err, errlen))
		goto rollback;
	int64_t id = sqlite3_last_insert_rowid(s->db);

	/* explore_result keeps the text of the first violation only. */
	if (res->violations > 0) {
		size_t vlen = strnlen(res->violation, sizeof(res->violation));
		sqlite3_bind_int64(ins_viol, 1, id);
		sqlite3_bind_text(ins_viol, 2, res->violation, (int)vlen, SQLITE_STATIC);
		if (step(s, ins_viol, SQLITE_DONE, "insert violation", err, errlen))
			goto rollback;
	}
	if (exec(s, "COMMIT", "commit", err, errlen))
		goto rollback;
	if (run_id)
		*run_id = id;
	ret = 0;
	goto out;
rollback:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
out:
	sqlite3_finalize(ins_wl);
	sqlite3_finalize(get_wl);
	sqlite3_finalize(ins_run);
	sqlite3_finalize(ins_viol);
	free(text);
	return ret;
}

static const char *col_text(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	return t ? t : "-";
}

int store_list_runs(struct store *s, FILE *out, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (prep(s,
		 "SELECT r.id, r.kind, r.started, substr(w.hash, 1, 12), r.ops, r.states,"
		 " r.violations FROM runs r LEFT JOIN workloads w ON w.id = r.workload_id"
		 " ORDER BY r.id",
		 &st, err, errlen))
		return -1;
	fprintf(out, "%-6s %-8s %-20s %-12s %8s %10s %10s\n", "ID", "KIND", "STARTED",
		"WORKLOAD", "OPS", "STATES", "VIOLATIONS");
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fprintf(out, "%-6lld %-8s %-20s %-12s %8s %10s %10s\n",
			(long long)sqlite3_column_int64(st, 0), col_text(st, 1), col_text(st, 2),
			col_text(st, 3), col_text(st, 4), col_text(st, 5), col_text(st, 6));
	if (rc != SQLITE_DONE) {
		db_err(s, "list runs", err, errlen);
		sqlite3_finalize(st);
		return -1;
	}
	sqlite3_finalize(st);
	if (fflush(out) || ferror(out)) {
		seterr(err, errlen, "cannot write the list: %s", strerror(errno));
		return -1;
	}
	return 0;
}
