/*
 * dedupe_hashfile.c - the hash file of `btrsim dedupe --hashfile FILE`
 * (dedupe.h), as duperemove's: an SQLite database of the block hashes of
 * the files of one file system, per file (subvolume, inode), with what
 * tells whether the file changed since: its generation (the inode number
 * reused), size, mtime and ctime.  Every write changes the ctime, and a
 * dedupe changes none of them (it keeps the bytes and the times, as the
 * kernel's), so a file deduped by the last run is not read again.  The
 * inode's transid is stored too but not compared: a dedupe moves it on.
 *
 * The database says what it is (application_id 'BtDd', user_version 1) and
 * with which block size, hash and file system it was made (table config):
 * any other is refused rather than mixed.  Blocks read back are checked
 * against their file (offsets, lengths, digest sizes), so a damaged file
 * is said, never trusted.
 */
#include "cli/dedupe.h"

#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define APP_ID 0x42744464 /* "BtDd" */
#define VERSION 1

struct dd_hashfile {
	sqlite3 *db;
	char *path;
	uint32_t bs;
	enum dd_hash hash;
	sqlite3_stmt *get_file, *get_blocks;
};

static const char schema[] =
	"CREATE TABLE config ("
	"  name TEXT PRIMARY KEY,"
	"  value TEXT NOT NULL);"
	"CREATE TABLE files ("
	"  subvol INTEGER NOT NULL,"
	"  ino INTEGER NOT NULL,"
	"  generation INTEGER NOT NULL,"
	"  transid INTEGER NOT NULL,"
	"  size INTEGER NOT NULL,"
	"  mtime_sec INTEGER NOT NULL,"
	"  mtime_nsec INTEGER NOT NULL,"
	"  ctime_sec INTEGER NOT NULL,"
	"  ctime_nsec INTEGER NOT NULL,"
	"  path TEXT NOT NULL," /* the name it was read by, for people */
	"  PRIMARY KEY (subvol, ino));"
	"CREATE TABLE blocks ("
	"  subvol INTEGER NOT NULL,"
	"  ino INTEGER NOT NULL,"
	"  off INTEGER NOT NULL,"
	"  len INTEGER NOT NULL,"
	"  digest BLOB NOT NULL,"
	"  PRIMARY KEY (subvol, ino, off)) WITHOUT ROWID;";

static int hf_err(const struct dd_hashfile *hf, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int hf_err(const struct dd_hashfile *hf, char *err, size_t errlen, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "%s: %s", hf->path, what);
	return -1;
}

static int db_err(const struct dd_hashfile *hf, char *err, size_t errlen, const char *what)
{
	return hf_err(hf, err, errlen, "%s: %s", what, sqlite3_errmsg(hf->db));
}

static int exec(struct dd_hashfile *hf, const char *sql, char *err, size_t errlen)
{
	if (sqlite3_exec(hf->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_err(hf, err, errlen, "cannot use it");
	return 0;
}

/* The integer one-row result of a static statement. */
static int query_int(struct dd_hashfile *hf, const char *sql, int64_t *out, char *err,
		     size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(hf->db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		/* the first read of a file that is not SQLite fails here */
		hf_err(hf, err, errlen, "not a hash file (%s)", sqlite3_errmsg(hf->db));
		sqlite3_finalize(st);
		return -1;
	}
	*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return 0;
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = 0;
}

static int set_config(struct dd_hashfile *hf, const char *name, const char *value, char *err,
		      size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(hf->db, "INSERT INTO config VALUES (?, ?)", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : db_err(hf, err, errlen, "cannot write its settings");
}

/* A new hash file's tables and settings (the file was an empty database). */
static int create(struct dd_hashfile *hf, const char *fsid, char *err, size_t errlen)
{
	char bs[24], sql[80];
	snprintf(bs, sizeof(bs), "%" PRIu32, hf->bs);
	/* constants of this code: PRAGMA takes no parameters */
	snprintf(sql, sizeof(sql), "PRAGMA application_id = %d; PRAGMA user_version = %d", APP_ID,
		 VERSION);
	if (exec(hf, schema, err, errlen) || set_config(hf, "blocksize", bs, err, errlen) ||
	    set_config(hf, "hash", dd_hash_name(hf->hash), err, errlen) ||
	    set_config(hf, "fsid", fsid, err, errlen) || exec(hf, sql, err, errlen))
		return -1;
	return 0;
}

/* The setting `name` of an existing hash file (malloc'd), or NULL after err. */
static char *get_config(struct dd_hashfile *hf, const char *name, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char *v = NULL;
	int rc = sqlite3_prepare_v2(hf->db, "SELECT value FROM config WHERE name = ?", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
	}
	if (rc == SQLITE_ROW && sqlite3_column_text(st, 0))
		v = strdup((const char *)sqlite3_column_text(st, 0));
	else if (rc == SQLITE_DONE)
		hf_err(hf, err, errlen, "damaged hash file: no %s setting", name);
	else
		db_err(hf, err, errlen, "cannot read its settings");
	if ((rc == SQLITE_ROW) && !v)
		hf_err(hf, err, errlen, "out of memory");
	sqlite3_finalize(st);
	return v;
}

/* An existing hash file must have been made with this run's settings. */
static int same_settings(struct dd_hashfile *hf, const char *fsid, char *err, size_t errlen)
{
	char *bs = get_config(hf, "blocksize", err, errlen);
	char *hash = bs ? get_config(hf, "hash", err, errlen) : NULL;
	char *fs = hash ? get_config(hf, "fsid", err, errlen) : NULL;
	int r = fs ? 0 : -1;
	char want[24];
	snprintf(want, sizeof(want), "%" PRIu32, hf->bs);
	if (!r && (strcmp(bs, want) || strcmp(hash, dd_hash_name(hf->hash))))
		r = hf_err(hf, err, errlen,
			   "made with block size %s and hash %s, not %s and %s: give the same -b "
			   "and --hash, or another hash file",
			   bs, hash, want, dd_hash_name(hf->hash));
	else if (!r && strcmp(fs, fsid))
		r = hf_err(hf, err, errlen, "made for the file system %s, not this one (%s)", fs, fsid);
	free(bs);
	free(hash);
	free(fs);
	return r;
}

/* What the database is: a new one is made a hash file; one of ours must
 * match; anything else is refused.  In one transaction, for two runs at once. */
static int check_or_create(struct dd_hashfile *hf, const char *fsid, char *err, size_t errlen)
{
	int64_t app, ver, tables;
	if (query_int(hf, "PRAGMA application_id", &app, err, errlen) ||
	    exec(hf, "BEGIN IMMEDIATE", err, errlen))
		return -1;
	int r = query_int(hf, "PRAGMA user_version", &ver, err, errlen) ||
			query_int(hf, "SELECT count(*) FROM sqlite_master", &tables, err, errlen)
		? -1
		: 0;
	if (!r && app == 0 && ver == 0 && tables == 0)
		r = create(hf, fsid, err, errlen);
	else if (!r && app != APP_ID)
		r = hf_err(hf, err, errlen, "not a hash file of btrsim dedupe (an SQLite database of "
					    "something else)");
	else if (!r && ver != VERSION)
		r = hf_err(hf, err, errlen, "hash file version %" PRId64 ", this btrsim knows %d", ver,
			   VERSION);
	else if (!r)
		r = same_settings(hf, fsid, err, errlen);
	if (!r)
		return exec(hf, "COMMIT", err, errlen);
	sqlite3_exec(hf->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

int dd_hf_open(const char *path, uint32_t bs, enum dd_hash hash, const uint8_t fsid[16],
	       struct dd_hashfile **out, char *err, size_t errlen)
{
	*out = NULL;
	struct dd_hashfile *hf = calloc(1, sizeof(*hf));
	if (!hf || !(hf->path = strdup(path))) {
		free(hf);
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	hf->bs = bs;
	hf->hash = hash;
	struct stat sb;
	char id[33];
	hex(fsid, 16, id);
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		hf_err(hf, err, errlen, "not a regular file");
		goto fail;
	}
	if (sqlite3_open_v2(path, &hf->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK) {
		if (hf->db)
			db_err(hf, err, errlen, "cannot open");
		else
			hf_err(hf, err, errlen, "out of memory");
		goto fail;
	}
	sqlite3_extended_result_codes(hf->db, 1);
	sqlite3_busy_timeout(hf->db, 10000);
	if (check_or_create(hf, id, err, errlen))
		goto fail;
	if (sqlite3_prepare_v2(hf->db,
			       "SELECT generation, size, mtime_sec, mtime_nsec, ctime_sec, ctime_nsec "
			       "FROM files WHERE subvol = ? AND ino = ?",
			       -1, &hf->get_file, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(hf->db,
			       "SELECT off, len, digest FROM blocks WHERE subvol = ? AND ino = ? "
			       "ORDER BY off",
			       -1, &hf->get_blocks, NULL) != SQLITE_OK) {
		db_err(hf, err, errlen, "damaged hash file");
		goto fail;
	}
	*out = hf;
	return 0;
fail:
	dd_hf_close(hf);
	return -1;
}

void dd_hf_close(struct dd_hashfile *hf)
{
	if (!hf)
		return;
	sqlite3_finalize(hf->get_file);
	sqlite3_finalize(hf->get_blocks);
	sqlite3_close_v2(hf->db);
	free(hf->path);
	free(hf);
}

static void bind_ino(sqlite3_stmt *st, const struct ref_ino *ino)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	sqlite3_bind_int64(st, 1, (int64_t)ino->subvol);
	sqlite3_bind_int64(st, 2, (int64_t)ino->ino);
}

/* 1 when the stored row describes the file as it is now, 0 when not (or none). */
static int unchanged(struct dd_hashfile *hf, const struct dd_file *f, char *err, size_t errlen)
{
	sqlite3_stmt *st = hf->get_file;
	bind_ino(st, &f->ino);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return db_err(hf, err, errlen, "cannot read it");
	const struct ref_stat *s = &f->st;
	return (uint64_t)sqlite3_column_int64(st, 0) == s->generation &&
	       (uint64_t)sqlite3_column_int64(st, 1) == s->size &&
	       sqlite3_column_int64(st, 2) == (int64_t)s->mtime.tv_sec &&
	       sqlite3_column_int64(st, 3) == (int64_t)s->mtime.tv_nsec &&
	       sqlite3_column_int64(st, 4) == (int64_t)s->ctime.tv_sec &&
	       sqlite3_column_int64(st, 5) == (int64_t)s->ctime.tv_nsec;
}

int dd_hf_load(struct dd_hashfile *hf, struct dd_scan *s, size_t i, char *err, size_t errlen)
{
	struct dd_file *f = &s->f[i];
	int r = unchanged(hf, f, err, errlen);
	if (r <= 0)
		return r;
	sqlite3_stmt *st = hf->get_blocks;
	bind_ino(st, &f->ino);
	size_t dlen = dd_hash_len(hf->hash);
	uint64_t next = 0; /* blocks come by offset, each at or after the last one's end */
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t off = sqlite3_column_int64(st, 0), len = sqlite3_column_int64(st, 1);
		const void *d = sqlite3_column_blob(st, 2);
		size_t n = (size_t)sqlite3_column_bytes(st, 2);
		if (off < 0 || (uint64_t)off < next || off % hf->bs || len <= 0 || len > hf->bs ||
		    (uint64_t)off + (uint64_t)len > f->st.size ||
		    ((uint64_t)len < hf->bs && (uint64_t)off + (uint64_t)len != f->st.size) ||
		    n != dlen || !d) {
			s->nb = f->first;
			f->nblocks = 0;
			return hf_err(hf, err, errlen,
				      "damaged hash file: subvolume %" PRIu64 " inode %" PRIu64
				      ": a block at %" PRId64 " of %" PRId64 " bytes, digest %zu bytes",
				      f->ino.subvol, f->ino.ino, off, len, n);
		}
		if (s->nb == s->capb) {
			size_t cap = s->capb ? s->capb * 2 : 1024;
			struct dd_block *v = realloc(s->b, cap * sizeof(*v));
			if (!v)
				return hf_err(hf, err, errlen, "out of memory");
			s->b = v;
			s->capb = cap;
		}
		struct dd_block *b = &s->b[s->nb++];
		*b = (struct dd_block){ .file = (uint32_t)i, .len = (uint32_t)len, .off = (uint64_t)off };
		memcpy(b->h, d, n);
		f->nblocks++;
		next = (uint64_t)off + (uint64_t)len;
	}
	if (rc != SQLITE_DONE) {
		s->nb = f->first;
		f->nblocks = 0;
		return db_err(hf, err, errlen, "cannot read it");
	}
	return 1;
}

/* One file's row and blocks, replacing what was there. */
static int save_file(struct dd_hashfile *hf, const struct dd_scan *s, const struct dd_file *f,
		     sqlite3_stmt *del, sqlite3_stmt *put_file, sqlite3_stmt *put_block)
{
	bind_ino(del, &f->ino);
	if (sqlite3_step(del) != SQLITE_DONE)
		return -1;
	bind_ino(put_file, &f->ino);
	const struct ref_stat *t = &f->st;
	int64_t v[] = { (int64_t)t->generation,  (int64_t)t->transid,     (int64_t)t->size,
			(int64_t)t->mtime.tv_sec, (int64_t)t->mtime.tv_nsec, (int64_t)t->ctime.tv_sec,
			(int64_t)t->ctime.tv_nsec };
	for (int k = 0; k < 7; k++)
		sqlite3_bind_int64(put_file, 3 + k, v[k]);
	sqlite3_bind_text(put_file, 10, f->path, -1, SQLITE_STATIC);
	if (sqlite3_step(put_file) != SQLITE_DONE)
		return -1;
	size_t dlen = dd_hash_len(hf->hash);
	for (size_t k = f->first; k < f->first + f->nblocks; k++) {
		bind_ino(put_block, &f->ino);
		sqlite3_bind_int64(put_block, 3, (int64_t)s->b[k].off);
		sqlite3_bind_int64(put_block, 4, s->b[k].len);
		sqlite3_bind_blob(put_block, 5, s->b[k].h, (int)dlen, SQLITE_STATIC);
		if (sqlite3_step(put_block) != SQLITE_DONE)
			return -1;
	}
	return 0;
}

int dd_hf_save(struct dd_hashfile *hf, const struct dd_scan *s, char *err, size_t errlen)
{
	sqlite3_stmt *del = NULL, *put_file = NULL, *put_block = NULL;
	int r = -1;
	if (exec(hf, "BEGIN IMMEDIATE", err, errlen))
		return -1;
	if (sqlite3_prepare_v2(hf->db, "DELETE FROM blocks WHERE subvol = ? AND ino = ?", -1, &del,
			       NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(hf->db,
			       "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", -1,
			       &put_file, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(hf->db, "INSERT INTO blocks VALUES (?, ?, ?, ?, ?)", -1, &put_block,
			       NULL) == SQLITE_OK) {
		r = 0;
		for (size_t i = 0; i < s->nf && !r; i++)
			if (!s->f[i].cached)
				r = save_file(hf, s, &s->f[i], del, put_file, put_block);
	}
	if (r)
		db_err(hf, err, errlen, "cannot write it");
	sqlite3_finalize(del);
	sqlite3_finalize(put_file);
	sqlite3_finalize(put_block);
	if (!r)
		return exec(hf, "COMMIT", err, errlen);
	sqlite3_exec(hf->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}
