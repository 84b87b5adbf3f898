/*
 * store_load.c - reading a recorded run back from the trace store
 * (store.h): its configuration, its IO log with the payloads decompressed
 * and checked, its op results and crash states, and the violations with
 * their reproducers.
 */
#include "traces/store_internal.h"
#include "traces/kernel.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zlib.h>

static char *dup_col(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	return t ? strdup(t) : NULL;
}

void store_run_row_free(struct store_run_row *r)
{
	free(r->kind);
	free(r->workload);
	free(r->faults);
	free(r->build);
	free(r->mount_options);
	free(r->check_cmd);
	memset(r, 0, sizeof(*r));
}

int store_load_run(struct store *s, int64_t id, struct store_run_row *out, char *err,
		   size_t errlen)
{
	memset(out, 0, sizeof(*out));
	sqlite3_stmt *st = NULL;
	if (store_prep(s,
		       "SELECT r.kind, w.text, r.faults, r.seed, r.ndisks, r.disk_size, r.nodesize,"
		       " r.data_profile, r.meta_profile, r.max_subset, r.samples, r.torn, r.mkfs_ios,"
		       " r.ops, r.states, r.violations, r.status, r.skip_ops, r.build, r.treelog,"
		       " r.target, r.disk_mode, r.mount_options, r.timeout_ms, r.check_cmd,"
		       " r.check_timeout_ms"
		       " FROM runs r JOIN workloads w ON w.id = r.workload_id WHERE r.id = ?1",
		       &st, err, errlen))
		return -1;
	sqlite3_bind_int64(st, 1, id);
	int rc = sqlite3_step(st);
	int ret = -1;
	if (rc == SQLITE_DONE) {
		store_seterr(err, errlen, "%s: run %lld: no such run", s->path, (long long)id);
	} else if (rc != SQLITE_ROW) {
		store_db_err(s, "read run", err, errlen);
	} else if (sqlite3_column_type(st, 4) == SQLITE_NULL ||
		   sqlite3_column_type(st, 12) == SQLITE_NULL) {
		store_seterr(err, errlen,
			     "%s: run %lld was recorded without its IO log (an older btrsim, or it did "
			     "not finish): it cannot be replayed", s->path, (long long)id);
	} else {
		out->id = id;
		out->kind = dup_col(st, 0);
		out->workload = dup_col(st, 1);
		out->faults = dup_col(st, 2);
		explore_defaults(&out->o);
		out->o.seed = (uint64_t)sqlite3_column_int64(st, 3);
		out->o.ndisks = (unsigned)sqlite3_column_int(st, 4);
		out->o.disk_size = (uint64_t)sqlite3_column_int64(st, 5);
		out->o.nodesize = (uint32_t)sqlite3_column_int(st, 6);
		out->o.data_profile = (uint64_t)sqlite3_column_int64(st, 7);
		out->o.meta_profile = (uint64_t)sqlite3_column_int64(st, 8);
		out->o.max_subset = (unsigned)sqlite3_column_int(st, 9);
		out->o.samples = (unsigned)sqlite3_column_int(st, 10);
		out->o.torn = (unsigned)sqlite3_column_int(st, 11);
		out->mkfs_ios = (size_t)sqlite3_column_int64(st, 12);
		out->ops = (size_t)sqlite3_column_int64(st, 13);
		out->states = (size_t)sqlite3_column_int64(st, 14);
		out->violations = (size_t)sqlite3_column_int64(st, 15);
		out->status = sqlite3_column_int(st, 16);
		out->o.skip_ops = (size_t)sqlite3_column_int64(st, 17);
		out->build = dup_col(st, 18);
		out->o.treelog = sqlite3_column_int(st, 19) != 0;
		const char *target = (const char *)sqlite3_column_text(st, 20);
		const char *mode = (const char *)sqlite3_column_text(st, 21);
		out->o.target = target && !strcmp(target, "kernel") ? EXPLORE_KERNEL : EXPLORE_REF;
		out->o.disk_mode = mode && kdisk_mode_parse(mode) > 0 ? kdisk_mode_parse(mode) : 0;
		out->mount_options = dup_col(st, 22);
		out->o.mount_options = out->mount_options;
		if (sqlite3_column_type(st, 23) != SQLITE_NULL)
			out->o.timeout_ms = (unsigned)sqlite3_column_int64(st, 23);
		out->check_cmd = dup_col(st, 24);
		out->o.check_cmd = out->check_cmd;
		if (sqlite3_column_type(st, 25) != SQLITE_NULL)
			out->o.check_timeout_ms = (unsigned)sqlite3_column_int64(st, 25);
		if (target && strcmp(target, "ref") && strcmp(target, "kernel")) {
			store_seterr(err, errlen, "%s: run %lld ran on target '%s', which this btrsim "
				     "does not know", s->path, (long long)id, target);
			store_run_row_free(out);
		} else if (!out->kind || !out->workload) {
			store_seterr(err, errlen, "%s: out of memory", s->path);
			store_run_row_free(out);
		} else {
			ret = 0;
		}
	}
	sqlite3_finalize(st);
	return ret;
}

void store_log_free(struct sim_io *log, size_t n)
{
	for (size_t i = 0; log && i < n; i++)
		free((void *)log[i].payload);
	free(log);
}

static int kind_of(const char *name)
{
	for (int k = 0; k < SIM_IO_KIND_COUNT; k++)
		if (name && !strcmp(name, sim_io_kind_name(k)))
			return k;
	return -1;
}

static int fault_of(const char *name)
{
	for (int k = 1; name && k < SIM_FAULT_KIND_COUNT; k++)
		if (!strcmp(name, sim_fault_kind_name(k)))
			return k;
	return name ? -1 : 0;
}

/* The payload with key `key`, inflated and checked against its hash. */
static uint8_t *load_payload(struct store *s, sqlite3_stmt *get, const void *key, int keylen,
			     size_t want, char *err, size_t errlen)
{
	sqlite3_reset(get);
	sqlite3_bind_blob(get, 1, key, keylen, SQLITE_STATIC);
	if (sqlite3_step(get) != SQLITE_ROW) {
		store_seterr(err, errlen, "%s: a payload of the IO log is missing", s->path);
		return NULL;
	}
	uLongf len = (uLongf)sqlite3_column_int64(get, 0);
	const void *z = sqlite3_column_blob(get, 1);
	int zlen = sqlite3_column_bytes(get, 1);
	uint8_t *p = len == want ? malloc(len ? len : 1) : NULL;
	uLongf got = len;
	XXH128_canonical_t c;
	if (p && z && uncompress(p, &got, z, (uLong)zlen) == Z_OK && got == len) {
		XXH128_canonicalFromHash(&c, XXH3_128bits(p, len));
		if (keylen == (int)sizeof(c.digest) && !memcmp(c.digest, key, sizeof(c.digest)))
			return p;
	}
	free(p);
	store_seterr(err, errlen, "%s: a payload of the IO log is corrupt (size, zlib or hash)",
		     s->path);
	return NULL;
}

int store_load_log(struct store *s, int64_t id, struct sim_io **log, size_t *n, char *err,
		   size_t errlen)
{
	*log = NULL;
	*n = 0;
	sqlite3_stmt *st = NULL, *get = NULL;
	if (store_prep(s,
		       "SELECT idx, seq, disk, kind, sector, nsectors, epoch, status, fault, fault_arg,"
		       " csum, payload FROM io WHERE run_id = ?1 ORDER BY idx",
		       &st, err, errlen) ||
	    store_prep(s, "SELECT len, zdata FROM payloads WHERE hash = ?1", &get, err, errlen)) {
		sqlite3_finalize(st);
		return -1;
	}
	sqlite3_bind_int64(st, 1, id);
	/* a payload is whole sectors of the run's disks */
	size_t sector = 4096;
	sqlite3_stmt *ss = NULL;
	if (store_prep(s, "SELECT sector_size FROM runs WHERE id = ?1", &ss, err, errlen)) {
		sqlite3_finalize(st);
		sqlite3_finalize(get);
		return -1;
	}
	sqlite3_bind_int64(ss, 1, id);
	if (sqlite3_step(ss) == SQLITE_ROW && sqlite3_column_int(ss, 0) > 0)
		sector = (size_t)sqlite3_column_int(ss, 0);
	sqlite3_finalize(ss);
	size_t cap = 0, cnt = 0;
	struct sim_io *v = NULL;
	int rc, ret = -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cnt == cap) {
			size_t nc = cap ? cap * 2 : 1024;
			struct sim_io *nv = realloc(v, nc * sizeof(*nv));
			if (!nv) {
				store_seterr(err, errlen, "%s: out of memory", s->path);
				goto out;
			}
			v = nv;
			cap = nc;
		}
		struct sim_io *io = &v[cnt];
		memset(io, 0, sizeof(*io));
		int kind = kind_of((const char *)sqlite3_column_text(st, 3));
		int fault = fault_of((const char *)sqlite3_column_text(st, 8));
		int64_t nsec = sqlite3_column_int64(st, 5);
		if (sqlite3_column_int64(st, 0) != (int64_t)cnt || kind < 0 || fault < 0 ||
		    nsec < 0 || nsec > (int64_t)(SIM_MAX_IO_BYTES / 512)) {
			store_seterr(err, errlen, "%s: run %lld: IO log entry %zu is malformed",
				     s->path, (long long)id, cnt);
			goto out;
		}
		io->seq = (uint64_t)sqlite3_column_int64(st, 1);
		io->disk = (uint16_t)sqlite3_column_int(st, 2);
		io->kind = (uint8_t)kind;
		io->sector = (uint64_t)sqlite3_column_int64(st, 4);
		io->nsectors = (uint32_t)nsec;
		io->epoch = (uint64_t)sqlite3_column_int64(st, 6);
		io->status = sqlite3_column_int(st, 7);
		io->fault = (uint8_t)fault;
		io->fault_arg = (uint64_t)sqlite3_column_int64(st, 9);
		io->csum = (uint64_t)sqlite3_column_int64(st, 10);
		cnt++;
		if (sqlite3_column_type(st, 11) != SQLITE_NULL) {
			io->payload = load_payload(s, get, sqlite3_column_blob(st, 11),
						   sqlite3_column_bytes(st, 11),
						   (size_t)io->nsectors * sector, err, errlen);
			if (!io->payload)
				goto out;
		}
	}
	if (rc != SQLITE_DONE) {
		store_db_err(s, "read the IO log", err, errlen);
		goto out;
	}
	ret = 0;
out:
	sqlite3_finalize(st);
	sqlite3_finalize(get);
	if (ret)
		store_log_free(v, cnt);
	else {
		*log = v;
		*n = cnt;
	}
	return ret;
}

int store_load_results(struct store *s, int64_t id, int **results, size_t *nops, char *err,
		       size_t errlen)
{
	*results = NULL;
	*nops = 0;
	sqlite3_stmt *st = NULL;
	if (store_prep(s, "SELECT idx, result FROM results WHERE run_id = ?1 ORDER BY idx", &st,
		       err, errlen))
		return -1;
	sqlite3_bind_int64(st, 1, id);
	size_t cnt = 0, cap = 0;
	int *v = NULL, rc, ret = -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cnt == cap) {
			size_t nc = cap ? cap * 2 : 64;
			int *nv = realloc(v, nc * sizeof(*nv));
			if (!nv) {
				store_seterr(err, errlen, "%s: out of memory", s->path);
				goto out;
			}
			v = nv;
			cap = nc;
		}
		const char *name = (const char *)sqlite3_column_text(st, 1);
		int e = name ? wl_errno_parse(name) : -1;
		if (e < 0 && name) {
			char *end;
			long l = strtol(name, &end, 10);
			e = *end || l < 0 || l > 4095 ? -1 : (int)l;
		}
		if (sqlite3_column_int64(st, 0) != (int64_t)cnt || e < 0) {
			store_seterr(err, errlen, "%s: run %lld: result %zu is malformed", s->path,
				     (long long)id, cnt);
			goto out;
		}
		v[cnt++] = e;
	}
	if (rc != SQLITE_DONE) {
		store_db_err(s, "read the results", err, errlen);
		goto out;
	}
	ret = 0;
out:
	sqlite3_finalize(st);
	if (ret)
		free(v);
	else {
		*results = v;
		*nops = cnt;
	}
	return ret;
}

int store_load_state(struct store *s, int64_t id, size_t k, size_t *point, char **picks,
		     char verdict[16], char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	*picks = NULL;
	if (store_prep(s, "SELECT point, picks, verdict FROM crash_states WHERE run_id = ?1 AND k = ?2",
		       &st, err, errlen))
		return -1;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, (int64_t)k);
	int rc = sqlite3_step(st), ret = -1;
	if (rc == SQLITE_DONE)
		store_seterr(err, errlen, "%s: run %lld has no crash state %zu", s->path,
			     (long long)id, k);
	else if (rc != SQLITE_ROW)
		store_db_err(s, "read a crash state", err, errlen);
	else if (!(*picks = dup_col(st, 1)))
		store_seterr(err, errlen, "%s: out of memory", s->path);
	else {
		*point = (size_t)sqlite3_column_int64(st, 0);
		snprintf(verdict, 16, "%s", (const char *)sqlite3_column_text(st, 2));
		ret = 0;
	}
	sqlite3_finalize(st);
	return ret;
}

int store_list_violations(struct store *s, int64_t run_id, bool full, FILE *out, char *err,
			  size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (store_prep(s,
		       "SELECT id, run_id, state_k, verdict, description, reproducer FROM violations"
		       " WHERE ?1 = 0 OR run_id = ?1 ORDER BY id",
		       &st, err, errlen))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	int rc;
	size_t shown = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		shown++;
		const char *verdict = (const char *)sqlite3_column_text(st, 3);
		fprintf(out, "violation %lld: run %lld, crash state %s, %s: %s\n",
			(long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 1),
			sqlite3_column_type(st, 2) == SQLITE_NULL ? "?" : (const char *)sqlite3_column_text(st, 2),
			verdict ? verdict : "?", (const char *)sqlite3_column_text(st, 4));
		const char *rep = (const char *)sqlite3_column_text(st, 5);
		if (full && rep)
			fprintf(out, "%s\n", rep);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		store_db_err(s, "list violations", err, errlen);
		return -1;
	}
	if (!shown && run_id)
		fprintf(out, "no violations in run %lld\n", (long long)run_id);
	else if (!shown)
		fprintf(out, "no violations\n");
	return 0;
}

int store_print_reproducer(struct store *s, int64_t id, bool script, FILE *out, char *err,
			   size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (store_prep(s, script ? "SELECT script FROM violations WHERE id = ?1"
				 : "SELECT reproducer FROM violations WHERE id = ?1",
		       &st, err, errlen))
		return -1;
	sqlite3_bind_int64(st, 1, id);
	int rc = sqlite3_step(st), ret = -1;
	if (rc == SQLITE_DONE)
		store_seterr(err, errlen, "%s: violation %lld: no such violation", s->path, (long long)id);
	else if (rc != SQLITE_ROW)
		store_db_err(s, "read a violation", err, errlen);
	else if (sqlite3_column_type(st, 0) == SQLITE_NULL)
		store_seterr(err, errlen, "%s: violation %lld has no %s", s->path, (long long)id,
			     script ? "shell script (only a kernel run's has one)" : "reproducer");
	else {
		fputs((const char *)sqlite3_column_text(st, 0), out);
		ret = 0;
	}
	sqlite3_finalize(st);
	return ret;
}
