/* store_raid.c - a RAID fault campaign and its rows in the trace store
 * (store.h: store_raid_campaign; the report's "RAID fault campaign" reads them). */
#include "traces/raidcamp.h"
#include "traces/store.h"
#include "traces/store_internal.h"

#include <stdio.h>

static int insert_row(struct store *s, sqlite3_stmt *st, int64_t id, size_t idx,
		      const struct rc_row *r, char *err, size_t errlen)
{
	char verdict[128];
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, (int64_t)idx);
	store_bind_text(st, 3, rc_profile_name(r->profile));
	sqlite3_bind_int(st, 4, (int)r->disks);
	store_bind_text(st, 5, rc_scenario_name(r->scenario));
	sqlite3_bind_int(st, 6, r->within);
	sqlite3_bind_int(st, 7, r->mounted);
	sqlite3_bind_int64(st, 8, (int64_t)r->injected);
	sqlite3_bind_int64(st, 9, (int64_t)r->detected);
	sqlite3_bind_int64(st, 10, (int64_t)r->repaired);
	sqlite3_bind_int64(st, 11, (int64_t)r->files);
	sqlite3_bind_int64(st, 12, (int64_t)r->lost);
	sqlite3_bind_int64(st, 13, (int64_t)r->wrong);
	sqlite3_bind_int(st, 14, rc_row_failed(r));
	store_bind_text(st, 15, rc_row_verdict(r, verdict, sizeof(verdict)));
	return store_step(s, st, SQLITE_DONE, "insert RAID run", err, errlen);
}

int store_raid_campaign(struct store *s, const char *args, const char *build, const char *started,
			const struct rc_opts *o, const struct rc_row *rows, size_t n, int64_t *id,
			char *err, size_t errlen)
{
	size_t failed = 0, skipped = 0;
	for (size_t i = 0; i < n; i++) {
		failed += rc_row_failed(&rows[i]);
		skipped += !rc_row_failed(&rows[i]) && rows[i].not_injected;
	}
	if (store_exec(s, "BEGIN IMMEDIATE", "begin", err, errlen))
		return -1;
	sqlite3_stmt *st = NULL;
	int r = store_prep(s,
			   "INSERT INTO raid_campaigns(args, seed, build, started, files, runs, failed,"
			   " not_injected) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
			   &st, err, errlen);
	if (!r) {
		store_bind_text(st, 1, args ? args : "");
		sqlite3_bind_int64(st, 2, (int64_t)o->seed);
		store_bind_text(st, 3, build);
		store_bind_text(st, 4, started);
		sqlite3_bind_int(st, 5, (int)o->files);
		sqlite3_bind_int64(st, 6, (int64_t)n);
		sqlite3_bind_int64(st, 7, (int64_t)failed);
		sqlite3_bind_int64(st, 8, (int64_t)skipped);
		r = store_step(s, st, SQLITE_DONE, "insert RAID campaign", err, errlen);
	}
	sqlite3_finalize(st);
	st = NULL;
	int64_t cid = sqlite3_last_insert_rowid(s->db);
	if (!r)
		r = store_prep(s,
			       "INSERT INTO raid_runs(campaign_id, idx, profile, disks, fault, within,"
			       " mounted, injected, detected, repaired, files, lost, wrong, failed, verdict)"
			       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
			       &st, err, errlen);
	for (size_t i = 0; !r && i < n; i++)
		r = insert_row(s, st, cid, i, &rows[i], err, errlen);
	sqlite3_finalize(st);
	if (!r)
		r = store_exec(s, "COMMIT", "commit", err, errlen);
	if (r) {
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	if (id)
		*id = cid;
	return 0;
}
