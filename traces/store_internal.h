/*
 * store_internal.h - shared by the files of the trace store only: store.c
 * (opening, migrations, listings), store_run.c (recording a run),
 * store_load.c (reading one back).
 */
#ifndef BTRSIM_TRACES_STORE_INTERNAL_H
#define BTRSIM_TRACES_STORE_INTERNAL_H

#include "traces/store.h"

#include <sodium.h>
#include <sqlite3.h>

struct store {
	sqlite3 *db;
	char *path;
};

/* -1 with "PATH: is a directory, ..." in err when path is a directory; else 0. */
int store_not_a_file(const char *path, char *err, size_t errlen);
__attribute__((format(printf, 3, 4)))
void store_seterr(char *err, size_t errlen, const char *fmt, ...);
/* "PATH: what failed: SQLite's message", with a plainer word for the usual causes. */
void store_db_err(const struct store *s, const char *what, char *err, size_t errlen);
int store_exec(struct store *s, const char *sql, const char *what, char *err, size_t errlen);
/* Prepares sql into *st; on failure sets err. */
int store_prep(struct store *s, const char *sql, sqlite3_stmt **st, char *err, size_t errlen);
/* Steps st once, expecting `want` (SQLITE_DONE or SQLITE_ROW). */
int store_step(struct store *s, sqlite3_stmt *st, int want, const char *what, char *err,
	       size_t errlen);
int store_bind_text(sqlite3_stmt *st, int i, const char *t);
/* The text of w as wl_print writes it (malloc'd, *len bytes) and its SHA-256 in hex. */
int store_workload_text(const struct wl_workload *w, char **text, size_t *len,
			char hex[crypto_hash_sha256_BYTES * 2 + 1]);

#endif
