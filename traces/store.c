/* store.c - the SQLite trace store (store.h; traces/README.md, "Trace store"). */
#include "traces/store_internal.h"

#include <errno.h>
#include <limits.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
	/* 1 -> 2: everything needed to rebuild a run: its configuration, IO log,
	 * payloads, op results and crash states; campaigns; reproducers. */
	"CREATE TABLE campaigns ("
	"  id INTEGER PRIMARY KEY,"
	"  args TEXT NOT NULL,"        /* the command line, as given */
	"  seed INTEGER,"
	"  build TEXT,"
	"  started TEXT,"
	"  ended TEXT,"
	"  workloads INTEGER,"
	"  states INTEGER,"
	"  violations INTEGER,"
	"  seconds REAL,"
	"  status INTEGER);"
	"ALTER TABLE runs ADD COLUMN campaign_id INTEGER REFERENCES campaigns(id);"
	"ALTER TABLE runs ADD COLUMN name TEXT;"       /* the workload's name: file, seq-N/I */
	"ALTER TABLE runs ADD COLUMN ndisks INTEGER;"
	"ALTER TABLE runs ADD COLUMN disk_size INTEGER;"
	"ALTER TABLE runs ADD COLUMN nodesize INTEGER;"
	"ALTER TABLE runs ADD COLUMN data_profile INTEGER;"
	"ALTER TABLE runs ADD COLUMN meta_profile INTEGER;"
	"ALTER TABLE runs ADD COLUMN max_subset INTEGER;"
	"ALTER TABLE runs ADD COLUMN samples INTEGER;"
	"ALTER TABLE runs ADD COLUMN torn INTEGER;"
	"ALTER TABLE runs ADD COLUMN skip_ops INTEGER;"  /* a setup whose IO is not crashed */
	"ALTER TABLE runs ADD COLUMN faults TEXT;"     /* the fault plan's canonical text */
	"ALTER TABLE runs ADD COLUMN mkfs_ios INTEGER;"/* the first IOs of the log are mkfs's */
	"ALTER TABLE runs ADD COLUMN detected INTEGER;"
	"CREATE INDEX runs_campaign ON runs(campaign_id);"
	"CREATE TABLE payloads ("
	"  hash BLOB PRIMARY KEY,"     /* XXH3-128 of the bytes, big-endian */
	"  len INTEGER NOT NULL,"
	"  zdata BLOB NOT NULL"        /* zlib (compress2) of the bytes */
	") WITHOUT ROWID;"
	"CREATE TABLE io ("
	"  run_id INTEGER NOT NULL REFERENCES runs(id),"
	"  idx INTEGER NOT NULL,"      /* position in the run's log, from 0 */
	"  seq INTEGER NOT NULL,"
	"  disk INTEGER NOT NULL,"
	"  kind TEXT NOT NULL,"        /* read write write-fua flush discard fault crash replace */
	"  sector INTEGER NOT NULL,"
	"  nsectors INTEGER NOT NULL,"
	"  epoch INTEGER NOT NULL,"
	"  status INTEGER NOT NULL,"   /* 0 or a negative errno */
	"  fault TEXT,"                /* the sim fault that acted on it */
	"  fault_arg INTEGER,"
	"  csum INTEGER NOT NULL,"     /* XXH3-64 of the data, as sim logs it */
	"  payload BLOB REFERENCES payloads(hash),"
	"  PRIMARY KEY (run_id, idx)) WITHOUT ROWID;"
	"CREATE TABLE results ("
	"  run_id INTEGER NOT NULL REFERENCES runs(id),"
	"  idx INTEGER NOT NULL,"      /* the op's position in the workload, from 0 */
	"  line INTEGER,"
	"  op TEXT NOT NULL,"          /* the op in the workload language */
	"  result TEXT NOT NULL,"      /* 0 or an errno name */
	"  PRIMARY KEY (run_id, idx)) WITHOUT ROWID;"
	"CREATE TABLE crash_states ("
	"  run_id INTEGER NOT NULL REFERENCES runs(id),"
	"  k INTEGER NOT NULL,"        /* the state's number in its run */
	"  point INTEGER NOT NULL,"    /* crash point: the io.idx of the first lost request */
	"  picks TEXT NOT NULL,"       /* the volatile writes that persisted (traces/explore.h) */
	"  verdict TEXT NOT NULL,"     /* ok mount check read oracle detected */
	"  detail TEXT,"
	"  PRIMARY KEY (run_id, k)) WITHOUT ROWID;"
	"ALTER TABLE violations ADD COLUMN state_k INTEGER;"
	"ALTER TABLE violations ADD COLUMN point INTEGER;"
	"ALTER TABLE violations ADD COLUMN picks TEXT;"      /* minimized */
	"ALTER TABLE violations ADD COLUMN verdict TEXT;"
	"ALTER TABLE violations ADD COLUMN reproducer TEXT;",/* a workload file */
	/* 2 -> 3: fault points hit per run; fuzzing findings and statistics. */
	"CREATE TABLE fault_hits ("
	"  run_id INTEGER NOT NULL REFERENCES runs(id),"
	"  point TEXT NOT NULL,"       /* a point of the plan (faults/README.md) */
	"  hits INTEGER NOT NULL,"     /* times the code reached it while armed */
	"  fired INTEGER NOT NULL,"    /* times it gave its errno */
	"  PRIMARY KEY (run_id, point)) WITHOUT ROWID;"
	"CREATE TABLE findings ("
	"  id INTEGER PRIMARY KEY,"
	"  harness TEXT NOT NULL,"     /* image, workload, parse */
	"  found TEXT NOT NULL,"       /* ISO-8601 UTC */
	"  kind TEXT NOT NULL,"        /* crash, hang, violation */
	"  signal TEXT,"               /* SIGSEGV, SIGABRT, ... */
	"  stack_hash TEXT NOT NULL,"  /* the deduplication key: the top frames */
	"  stack TEXT,"                /* the symbolized top frames */
	"  input BLOB NOT NULL,"       /* the test case as AFL++ found it */
	"  minimized BLOB,"            /* afl-tmin's */
	"  fixed INTEGER NOT NULL DEFAULT 0," /* in the regression corpus, passing */
	"  UNIQUE (harness, stack_hash));"
	"CREATE TABLE fuzz_stats ("
	"  id INTEGER PRIMARY KEY,"
	"  harness TEXT NOT NULL,"
	"  at TEXT NOT NULL,"          /* ISO-8601 UTC of the sample */
	"  elapsed REAL NOT NULL,"     /* seconds since the campaign began */
	"  execs INTEGER NOT NULL,"
	"  execs_per_sec REAL,"
	"  corpus INTEGER,"            /* AFL++'s corpus_count */
	"  crashes INTEGER,"           /* saved_crashes */
	"  hangs INTEGER);",           /* saved_hangs */
	/* 3 -> 4: RAID fault campaigns (btrsim raid-campaign --db), a row per run. */
	"CREATE TABLE raid_campaigns ("
	"  id INTEGER PRIMARY KEY,"
	"  args TEXT NOT NULL,"        /* the command line, as given */
	"  seed INTEGER,"
	"  build TEXT,"
	"  started TEXT,"              /* ISO-8601 UTC */
	"  files INTEGER,"             /* files per run's workload */
	"  runs INTEGER,"
	"  failed INTEGER,"
	"  not_injected INTEGER);"
	"CREATE TABLE raid_runs ("
	"  campaign_id INTEGER NOT NULL REFERENCES raid_campaigns(id),"
	"  idx INTEGER NOT NULL,"      /* the run's place in the campaign, from 0 */
	"  profile TEXT NOT NULL,"     /* single, dup, raid0, ... */
	"  disks INTEGER NOT NULL,"
	"  fault TEXT NOT NULL,"       /* the scenario: bit flips at rest, disks lost, ... */
	"  within INTEGER NOT NULL,"   /* the fault stays within the profile's redundancy */
	"  mounted INTEGER NOT NULL,"
	"  injected INTEGER NOT NULL,"
	"  detected INTEGER NOT NULL,"
	"  repaired INTEGER NOT NULL,"
	"  files INTEGER NOT NULL,"    /* acknowledged files checked */
	"  lost INTEGER NOT NULL,"
	"  wrong INTEGER NOT NULL,"
	"  failed INTEGER NOT NULL,"   /* rc_row_failed */
	"  verdict TEXT NOT NULL,"     /* rc_row_verdict */
	"  PRIMARY KEY (campaign_id, idx)) WITHOUT ROWID;",
	/* 4 -> 5: runs whose fsyncs wrote the log tree (explore --treelog):
	 * a replay must mount the same way. */
	"ALTER TABLE runs ADD COLUMN treelog INTEGER NOT NULL DEFAULT 0;",
	/* 5 -> 6: the target a run ran on (explore --target kernel): the kernel's
	 * runs with how their FUSE disks behaved, the mount options given, the
	 * timeout, and the disks' sector (payloads are whole sectors). */
	"ALTER TABLE runs ADD COLUMN target TEXT NOT NULL DEFAULT 'ref';"
	"ALTER TABLE runs ADD COLUMN disk_mode TEXT;"
	"ALTER TABLE runs ADD COLUMN mount_options TEXT;"
	"ALTER TABLE runs ADD COLUMN timeout_ms INTEGER;"
	"ALTER TABLE runs ADD COLUMN sector_size INTEGER NOT NULL DEFAULT 4096;"
	"ALTER TABLE violations ADD COLUMN script TEXT;", /* a kernel run's shell script */
	/* 6 -> 7: an application's checker (explore --check) and its time
	 * limit: a replay runs it again in the same states. */
	("ALTER TABLE runs ADD COLUMN check_cmd TEXT;"
	 "ALTER TABLE runs ADD COLUMN check_timeout_ms INTEGER;"),
	/* 7 -> 8: stores merged into one (btrsim merge, store_merge.c): each
	 * store's own id, and where merged rows came from (origin: the first
	 * store's id and the row's id there, the same through every later
	 * merge, so that merging twice adds nothing; source: the file merged). */
	"CREATE TABLE store_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	"INSERT INTO store_info VALUES ('id', lower(hex(randomblob(16))));"
	"ALTER TABLE runs ADD COLUMN origin TEXT;"
	"ALTER TABLE runs ADD COLUMN source TEXT;"
	"CREATE UNIQUE INDEX runs_origin ON runs(origin);"
	"ALTER TABLE campaigns ADD COLUMN origin TEXT;"
	"CREATE UNIQUE INDEX campaigns_origin ON campaigns(origin);"
	"ALTER TABLE raid_campaigns ADD COLUMN origin TEXT;"
	"CREATE UNIQUE INDEX raid_campaigns_origin ON raid_campaigns(origin);"
	"ALTER TABLE fuzz_stats ADD COLUMN origin TEXT;"
	"CREATE UNIQUE INDEX fuzz_stats_origin ON fuzz_stats(origin);",
};

void store_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* "PATH: what failed: SQLite's message", with a plainer word for the usual causes. */
void store_db_err(const struct store *s, const char *what, char *err, size_t errlen)
{
	int code = sqlite3_errcode(s->db) & 0xff;
	const char *msg = sqlite3_errmsg(s->db);
	if (code == SQLITE_NOTADB)
		store_seterr(err, errlen, "%s: not an SQLite trace database (%s)", s->path, msg);
	else if (code == SQLITE_CORRUPT)
		store_seterr(err, errlen, "%s: corrupt trace database (%s)", s->path, msg);
	else
		store_seterr(err, errlen, "%s: %s: %s", s->path, what, msg);
}

int store_exec(struct store *s, const char *sql, const char *what, char *err, size_t errlen)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		store_db_err(s, what, err, errlen);
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
		store_db_err(s, sql, err, errlen);
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
		store_seterr(err, errlen,
		       "%s: trace database version %lld is newer than this btrsim knows (%d); "
		       "use a newer btrsim",
		       s->path, (long long)v, STORE_VERSION);
		return -1;
	}
	if (v < 0) {
		store_seterr(err, errlen, "%s: not a btrsim trace database (user_version %lld)", s->path,
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
	if (store_exec(s, "BEGIN IMMEDIATE", "begin", err, errlen))
		return -1;
	if (query_int(s, "PRAGMA user_version", &v, err, errlen) ||
	    check_version(s, v, err, errlen))
		goto fail;
	if (v == STORE_VERSION)
		return store_exec(s, "COMMIT", "commit", err, errlen);
	for (; v < STORE_VERSION; v++) {
		char what[64];
		snprintf(what, sizeof(what), "migration %lld to %lld", (long long)v,
			 (long long)v + 1);
		if (store_exec(s, migrations[v], what, err, errlen))
			goto fail;
	}
	char sql[64]; /* a constant of this code, not user data: PRAGMA takes no parameters */
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", STORE_VERSION);
	if (store_exec(s, sql, "set version", err, errlen) || store_exec(s, "COMMIT", "commit", err, errlen))
		goto fail;
	return 0;
fail:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

int store_not_a_file(const char *path, char *err, size_t errlen)
{
	struct stat sb;
	if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		store_seterr(err, errlen, "%s: is a directory, not a trace database (give --db FILE)",
			     path);
		return -1;
	}
	return 0;
}

static int open_store(const char *path, int create, struct store **out, char *err,
		      size_t errlen)
{
	*out = NULL;
	if (store_not_a_file(path, err, errlen))
		return -1;
	struct stat sb;
	if (!create && stat(path, &sb) && errno == ENOENT) {
		store_seterr(err, errlen, "%s: no such trace database", path);
		return -1;
	}
	struct store *s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(path))) {
		free(s);
		store_seterr(err, errlen, "%s: out of memory", path);
		return -1;
	}
	int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
	if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
		if (s->db)
			store_seterr(err, errlen, "%s: cannot open: %s", path, sqlite3_errmsg(s->db));
		else
			store_seterr(err, errlen, "%s: out of memory", path);
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
		store_db_err(s, "journal_mode=WAL", err, errlen);
		sqlite3_finalize(st);
		goto fail;
	}
	const char *mode = (const char *)sqlite3_column_text(st, 0);
	if (!mode || strcmp(mode, "wal")) {
		store_seterr(err, errlen, "%s: cannot use WAL mode (journal mode is %s)", path,
		       mode ? mode : "unknown");
		sqlite3_finalize(st);
		goto fail;
	}
	sqlite3_finalize(st);
	if (store_exec(s, "PRAGMA foreign_keys=ON", "foreign_keys", err, errlen) ||
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
int store_workload_text(const struct wl_workload *w, char **text, size_t *len,
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
int store_prep(struct store *s, const char *sql, sqlite3_stmt **st, char *err, size_t errlen)
{
	if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK) {
		store_db_err(s, "prepare", err, errlen);
		return -1;
	}
	return 0;
}

/* Steps st once, expecting `want` (SQLITE_DONE or SQLITE_ROW). */
int store_step(struct store *s, sqlite3_stmt *st, int want, const char *what, char *err,
		size_t errlen)
{
	if (sqlite3_step(st) != want) {
		store_db_err(s, what, err, errlen);
		return -1;
	}
	return 0;
}

int store_bind_text(sqlite3_stmt *st, int i, const char *t)
{
	return t ? sqlite3_bind_text(st, i, t, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

static const char *col_text(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	return t ? t : "-";
}

int store_list_runs(struct store *s, int64_t campaign_id, FILE *out, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (store_prep(s,
		 "SELECT r.id, r.kind || CASE r.target WHEN 'ref' THEN '' ELSE ':' || r.target END,"
		 " r.started, coalesce(r.name, '-'), substr(w.hash, 1, 12), r.ops,"
		 " (SELECT count(*) FROM io WHERE io.run_id = r.id), r.states, r.violations"
		 " FROM runs r LEFT JOIN workloads w ON w.id = r.workload_id"
		 " WHERE ?1 = 0 OR r.campaign_id = ?1 ORDER BY r.id",
		 &st, err, errlen))
		return -1;
	sqlite3_bind_int64(st, 1, campaign_id);
	fprintf(out, "%-6s %-15s %-20s %-14s %-12s %6s %8s %10s %10s\n", "ID", "KIND", "STARTED",
		"WORKLOAD", "HASH", "OPS", "IOS", "STATES", "VIOLATIONS");
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fprintf(out, "%-6lld %-15s %-20s %-14s %-12s %6s %8s %10s %10s\n",
			(long long)sqlite3_column_int64(st, 0), col_text(st, 1), col_text(st, 2),
			col_text(st, 3), col_text(st, 4), col_text(st, 5), col_text(st, 6),
			col_text(st, 7), col_text(st, 8));
	if (rc != SQLITE_DONE) {
		store_db_err(s, "list runs", err, errlen);
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
