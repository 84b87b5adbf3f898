/*
 * store_run.c - recording one run into the trace store (store.h): the run's
 * row, then, through the explorer's sink, its IO log (payloads compressed
 * and stored once per content), its op results and its crash states, all in
 * one transaction committed by store_run_end.
 */
#include "traces/store_internal.h"
#include "traces/kernel.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zlib.h>

struct store_run {
	struct store *s;
	struct explore_sink sink;
	const struct wl_workload *w; /* whose results the sink stores */
	int64_t id;
	size_t mkfs_ios;
	uint32_t sector; /* the disks' sector: a payload is whole sectors */
	sqlite3_stmt *ins_io, *has_payload, *ins_payload, *ins_result, *ins_state;
	uint8_t *zbuf;
	size_t zcap;
	int failed;        /* a sink call failed: the message is in err */
	char err[512];
};

static void finalize_all(struct store_run *r)
{
	sqlite3_finalize(r->ins_io);
	sqlite3_finalize(r->has_payload);
	sqlite3_finalize(r->ins_payload);
	sqlite3_finalize(r->ins_result);
	sqlite3_finalize(r->ins_state);
	free(r->zbuf);
}

void store_run_abort(struct store_run *r)
{
	if (!r)
		return;
	finalize_all(r);
	sqlite3_exec(r->s->db, "ROLLBACK", NULL, NULL, NULL);
	free(r);
}

/* Stores the payload once (keyed by its XXH3-128) and binds its key. */
static int put_payload(struct store_run *r, sqlite3_stmt *bind_to, int col, const uint8_t *p,
		       size_t len)
{
	XXH128_canonical_t key;
	XXH128_canonicalFromHash(&key, XXH3_128bits(p, len));
	sqlite3_reset(r->has_payload);
	sqlite3_bind_blob(r->has_payload, 1, key.digest, sizeof(key.digest), SQLITE_STATIC);
	int rc = sqlite3_step(r->has_payload);
	if (rc == SQLITE_DONE) {
		uLongf zlen = compressBound((uLong)len);
		if (zlen > r->zcap) {
			uint8_t *nb = realloc(r->zbuf, zlen);
			if (!nb)
				return -ENOMEM;
			r->zbuf = nb;
			r->zcap = zlen;
		}
		if (compress2(r->zbuf, &zlen, p, (uLong)len, 1) != Z_OK || zlen > INT_MAX)
			return -EIO;
		sqlite3_reset(r->ins_payload);
		sqlite3_bind_blob(r->ins_payload, 1, key.digest, sizeof(key.digest), SQLITE_STATIC);
		sqlite3_bind_int64(r->ins_payload, 2, (int64_t)len);
		sqlite3_bind_blob(r->ins_payload, 3, r->zbuf, (int)zlen, SQLITE_STATIC);
		if (sqlite3_step(r->ins_payload) != SQLITE_DONE)
			return -EIO;
	} else if (rc != SQLITE_ROW) {
		return -EIO;
	}
	sqlite3_bind_blob(bind_to, col, key.digest, sizeof(key.digest), SQLITE_TRANSIENT);
	return 0;
}

static int sink_failed(struct store_run *r, const char *what)
{
	if (!r->failed) {
		r->failed = 1;
		store_db_err(r->s, what, r->err, sizeof(r->err));
	}
	return -1;
}

static int put_io(struct store_run *r, size_t idx, const struct sim_io *io)
{
	sqlite3_stmt *st = r->ins_io;
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	sqlite3_bind_int64(st, 1, r->id);
	sqlite3_bind_int64(st, 2, (int64_t)idx);
	sqlite3_bind_int64(st, 3, (int64_t)io->seq);
	sqlite3_bind_int(st, 4, io->disk);
	sqlite3_bind_text(st, 5, sim_io_kind_name(io->kind), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, (int64_t)io->sector);
	sqlite3_bind_int64(st, 7, io->nsectors);
	sqlite3_bind_int64(st, 8, (int64_t)io->epoch);
	sqlite3_bind_int(st, 9, io->status);
	if (io->fault) {
		sqlite3_bind_text(st, 10, sim_fault_kind_name(io->fault), -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 11, (int64_t)io->fault_arg);
	}
	sqlite3_bind_int64(st, 12, (int64_t)io->csum);
	if (io->payload && io->nsectors) {
		/* Sectors are 4 KiB: explore's disks (sim_config_init). */
		int e = put_payload(r, st, 13, io->payload, (size_t)io->nsectors * r->sector);
		if (e)
			return e;
	}
	return sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
}

static int put_result(struct store_run *r, size_t idx, const struct wl_op *op, int result)
{
	char line[512];
	int len = wl_format(op, line, sizeof(line));
	if (len < 0)
		snprintf(line, sizeof(line), "%s", wl_kind_name(op->kind));
	sqlite3_stmt *st = r->ins_result;
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, r->id);
	sqlite3_bind_int64(st, 2, (int64_t)idx);
	sqlite3_bind_int64(st, 3, (int64_t)op->line);
	sqlite3_bind_text(st, 4, line, -1, SQLITE_TRANSIENT);
	const char *name = wl_errno_name(result);
	char num[16];
	if (!name)
		snprintf(num, sizeof(num), "%d", result);
	sqlite3_bind_text(st, 5, name ? name : num, -1, SQLITE_TRANSIENT);
	return sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
}

static int on_recorded(void *ctx, const struct sim_io *log, size_t n, size_t mkfs_ios,
		       const int *results, size_t nops)
{
	struct store_run *r = ctx;
	r->mkfs_ios = mkfs_ios;
	for (size_t i = 0; i < n; i++)
		if (put_io(r, i, &log[i]))
			return sink_failed(r, "store the IO log");
	for (size_t j = 0; j < nops && j < r->w->n; j++)
		if (put_result(r, j, &r->w->ops[j], results[j]))
			return sink_failed(r, "store the op results");
	return 0;
}

static int on_state(void *ctx, const struct explore_state *es)
{
	struct store_run *r = ctx;
	sqlite3_stmt *st = r->ins_state;
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, r->id);
	sqlite3_bind_int64(st, 2, (int64_t)es->k);
	sqlite3_bind_int64(st, 3, (int64_t)es->point);
	sqlite3_bind_text(st, 4, es->picks, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 5, explore_verdict_name(es->verdict), -1, SQLITE_STATIC);
	if (es->detail && *es->detail)
		sqlite3_bind_text(st, 6, es->detail, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, 6);
	return sqlite3_step(st) == SQLITE_DONE ? 0 : sink_failed(r, "store a crash state");
}

const struct explore_sink *store_run_sink(struct store_run *r)
{
	return &r->sink;
}

int store_run_begin(struct store *s, const struct store_run_info *in, struct store_run **out,
		    char *err, size_t errlen)
{
	*out = NULL;
	char *text, hex[crypto_hash_sha256_BYTES * 2 + 1];
	size_t len;
	int e = store_workload_text(in->w, &text, &len, hex);
	if (e) {
		store_seterr(err, errlen, "%s: cannot print the workload: %s", s->path, strerror(-e));
		return -1;
	}
	if (len > INT_MAX) {
		store_seterr(err, errlen, "%s: the workload's text is too long to store", s->path);
		free(text);
		return -1;
	}
	struct store_run *r = calloc(1, sizeof(*r));
	if (!r) {
		free(text);
		store_seterr(err, errlen, "%s: out of memory", s->path);
		return -1;
	}
	r->s = s;
	r->w = in->w;
	r->sink = (struct explore_sink){ r, on_recorded, on_state };
	sqlite3_stmt *ins_wl = NULL, *get_wl = NULL, *ins_run = NULL;
	if (store_exec(s, "BEGIN IMMEDIATE", "begin", err, errlen)) {
		free(text);
		free(r);
		return -1;
	}
	int ret = -1;
	if (store_prep(s, "INSERT OR IGNORE INTO workloads(hash, text) VALUES (?1, ?2)", &ins_wl, err, errlen) ||
	    store_prep(s, "SELECT id FROM workloads WHERE hash = ?1", &get_wl, err, errlen) ||
	    store_prep(s,
		       "INSERT INTO runs(kind, seed, build, config, workload_id, started, campaign_id,"
		       " ndisks, disk_size, nodesize, data_profile, meta_profile, max_subset, samples,"
		       " torn, faults, skip_ops, name, treelog, target, disk_mode, mount_options,"
		       " timeout_ms, sector_size, check_cmd, check_timeout_ms) VALUES (?1, ?2, ?3, ?4,"
		       " ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21,"
		       " ?22, ?23, ?24, ?25, ?26)",
		       &ins_run, err, errlen) ||
	    store_prep(s,
		       "INSERT INTO io(run_id, idx, seq, disk, kind, sector, nsectors, epoch, status,"
		       " fault, fault_arg, csum, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,"
		       " ?10, ?11, ?12, ?13)",
		       &r->ins_io, err, errlen) ||
	    store_prep(s, "SELECT 1 FROM payloads WHERE hash = ?1", &r->has_payload, err, errlen) ||
	    store_prep(s, "INSERT INTO payloads(hash, len, zdata) VALUES (?1, ?2, ?3)",
		       &r->ins_payload, err, errlen) ||
	    store_prep(s, "INSERT INTO results(run_id, idx, line, op, result) VALUES (?1, ?2, ?3, ?4, ?5)",
		       &r->ins_result, err, errlen) ||
	    store_prep(s, "INSERT INTO crash_states(run_id, k, point, picks, verdict, detail)"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6)", &r->ins_state, err, errlen))
		goto out;
	sqlite3_bind_text(ins_wl, 1, hex, -1, SQLITE_STATIC);
	sqlite3_bind_text(ins_wl, 2, text ? text : "", (int)len, SQLITE_STATIC);
	if (store_step(s, ins_wl, SQLITE_DONE, "insert workload", err, errlen))
		goto out;
	sqlite3_bind_text(get_wl, 1, hex, -1, SQLITE_STATIC);
	if (store_step(s, get_wl, SQLITE_ROW, "find workload", err, errlen))
		goto out;
	const struct explore_opts *o = in->o;
	/* A seed above INT64_MAX is stored as its two's-complement int64. */
	sqlite3_bind_text(ins_run, 1, in->kind, -1, SQLITE_STATIC);
	sqlite3_bind_int64(ins_run, 2, (int64_t)o->seed);
	store_bind_text(ins_run, 3, in->build);
	store_bind_text(ins_run, 4, in->config);
	sqlite3_bind_int64(ins_run, 5, sqlite3_column_int64(get_wl, 0));
	store_bind_text(ins_run, 6, in->started);
	if (in->campaign_id)
		sqlite3_bind_int64(ins_run, 7, in->campaign_id);
	sqlite3_bind_int(ins_run, 8, (int)o->ndisks);
	sqlite3_bind_int64(ins_run, 9, (int64_t)o->disk_size);
	sqlite3_bind_int(ins_run, 10, (int)o->nodesize);
	sqlite3_bind_int64(ins_run, 11, (int64_t)o->data_profile);
	sqlite3_bind_int64(ins_run, 12, (int64_t)o->meta_profile);
	sqlite3_bind_int(ins_run, 13, (int)o->max_subset);
	sqlite3_bind_int(ins_run, 14, (int)o->samples);
	sqlite3_bind_int(ins_run, 15, (int)o->torn);
	store_bind_text(ins_run, 16, in->faults);
	sqlite3_bind_int64(ins_run, 17, (int64_t)o->skip_ops);
	store_bind_text(ins_run, 18, in->w->name);
	sqlite3_bind_int(ins_run, 19, o->treelog);
	r->sector = explore_sector_size(o);
	if (o->target == EXPLORE_KERNEL) {
		sqlite3_bind_text(ins_run, 20, "kernel", -1, SQLITE_STATIC);
		store_bind_text(ins_run, 21, kdisk_mode_name((enum kdisk_mode)o->disk_mode));
		store_bind_text(ins_run, 22, o->mount_options);
		sqlite3_bind_int64(ins_run, 23, o->timeout_ms);
	} else {
		sqlite3_bind_text(ins_run, 20, "ref", -1, SQLITE_STATIC);
	}
	sqlite3_bind_int(ins_run, 24, (int)r->sector);
	if (o->check_cmd) {
		store_bind_text(ins_run, 25, o->check_cmd);
		sqlite3_bind_int64(ins_run, 26, o->check_timeout_ms);
	}
	if (store_step(s, ins_run, SQLITE_DONE, "insert run", err, errlen))
		goto out;
	r->id = sqlite3_last_insert_rowid(s->db);
	ret = 0;
out:
	sqlite3_finalize(ins_wl);
	sqlite3_finalize(get_wl);
	sqlite3_finalize(ins_run);
	free(text);
	if (ret)
		store_run_abort(r);
	else
		*out = r;
	return ret;
}

int store_run_end(struct store_run *r, const struct explore_result *res, int status,
		  const char *ended, const char *reproducer, const char *script, int64_t *run_id,
		  char *err, size_t errlen)
{
	struct store *s = r->s;
	if (r->failed) {
		store_seterr(err, errlen, "%s", r->err);
		store_run_abort(r);
		return -1;
	}
	sqlite3_stmt *upd = NULL, *ins_viol = NULL, *ins_hit = NULL;
	int ret = -1;
	if (store_prep(s,
		       "UPDATE runs SET ended = ?2, ops = ?3, crash_points = ?4, states = ?5,"
		       " violations = ?6, seconds = ?7, status = ?8, mkfs_ios = ?9, detected = ?10"
		       " WHERE id = ?1",
		       &upd, err, errlen) ||
	    store_prep(s,
		       "INSERT INTO violations(run_id, description, state_k, point, picks, verdict,"
		       " reproducer, script) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
		       &ins_viol, err, errlen) ||
	    store_prep(s, "INSERT INTO fault_hits(run_id, point, hits, fired) VALUES (?1, ?2, ?3, ?4)",
		       &ins_hit, err, errlen))
		goto out;
	for (size_t i = 0; i < res->nfaults; i++) {
		sqlite3_reset(ins_hit);
		sqlite3_bind_int64(ins_hit, 1, r->id);
		sqlite3_bind_text(ins_hit, 2, res->faults[i].point, -1, SQLITE_STATIC);
		sqlite3_bind_int64(ins_hit, 3, (int64_t)res->faults[i].hits);
		sqlite3_bind_int64(ins_hit, 4, (int64_t)res->faults[i].fired);
		if (store_step(s, ins_hit, SQLITE_DONE, "insert fault hits", err, errlen))
			goto out;
	}
	sqlite3_bind_int64(upd, 1, r->id);
	store_bind_text(upd, 2, ended);
	sqlite3_bind_int64(upd, 3, (int64_t)res->ops);
	sqlite3_bind_int64(upd, 4, (int64_t)res->crash_points);
	sqlite3_bind_int64(upd, 5, (int64_t)res->states);
	sqlite3_bind_int64(upd, 6, (int64_t)res->violations);
	sqlite3_bind_double(upd, 7, res->seconds);
	sqlite3_bind_int(upd, 8, status);
	sqlite3_bind_int64(upd, 9, (int64_t)r->mkfs_ios);
	sqlite3_bind_int64(upd, 10, (int64_t)res->detected);
	if (store_step(s, upd, SQLITE_DONE, "update run", err, errlen))
		goto out;
	if (res->violations > 0) {
		sqlite3_bind_int64(ins_viol, 1, r->id);
		sqlite3_bind_text(ins_viol, 2, res->violation,
				  (int)strnlen(res->violation, sizeof(res->violation)), SQLITE_STATIC);
		sqlite3_bind_int64(ins_viol, 3, (int64_t)res->violation_k);
		sqlite3_bind_int64(ins_viol, 4, (int64_t)res->violation_point);
		store_bind_text(ins_viol, 5, res->violation_picks);
		sqlite3_bind_text(ins_viol, 6, explore_verdict_name(res->violation_verdict), -1,
				  SQLITE_STATIC);
		store_bind_text(ins_viol, 7, reproducer);
		store_bind_text(ins_viol, 8, script);
		if (store_step(s, ins_viol, SQLITE_DONE, "insert violation", err, errlen))
			goto out;
	}
	finalize_all(r);
	r->ins_io = r->has_payload = r->ins_payload = r->ins_result = r->ins_state = NULL;
	r->zbuf = NULL;
	if (store_exec(s, "COMMIT", "commit", err, errlen))
		goto out;
	if (run_id)
		*run_id = r->id;
	ret = 0;
out:
	sqlite3_finalize(upd);
	sqlite3_finalize(ins_viol);
	sqlite3_finalize(ins_hit);
	if (ret)
		store_run_abort(r);
	else
		free(r);
	return ret;
}

int store_campaign_begin(struct store *s, const char *args, uint64_t seed, const char *build,
			 const char *started, int64_t *id, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (store_prep(s, "INSERT INTO campaigns(args, seed, build, started) VALUES (?1, ?2, ?3, ?4)",
		       &st, err, errlen))
		return -1;
	store_bind_text(st, 1, args ? args : "");
	sqlite3_bind_int64(st, 2, (int64_t)seed);
	store_bind_text(st, 3, build);
	store_bind_text(st, 4, started);
	int r = store_step(s, st, SQLITE_DONE, "insert campaign", err, errlen);
	sqlite3_finalize(st);
	if (!r)
		*id = sqlite3_last_insert_rowid(s->db);
	return r;
}

int store_campaign_end(struct store *s, int64_t id, size_t workloads, size_t states,
		       size_t violations, double seconds, int status, const char *ended, char *err,
		       size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (store_prep(s,
		       "UPDATE campaigns SET ended = ?2, workloads = ?3, states = ?4, violations = ?5,"
		       " seconds = ?6, status = ?7 WHERE id = ?1",
		       &st, err, errlen))
		return -1;
	sqlite3_bind_int64(st, 1, id);
	store_bind_text(st, 2, ended);
	sqlite3_bind_int64(st, 3, (int64_t)workloads);
	sqlite3_bind_int64(st, 4, (int64_t)states);
	sqlite3_bind_int64(st, 5, (int64_t)violations);
	sqlite3_bind_double(st, 6, seconds);
	sqlite3_bind_int(st, 7, status);
	int r = store_step(s, st, SQLITE_DONE, "update campaign", err, errlen);
	sqlite3_finalize(st);
	return r;
}
