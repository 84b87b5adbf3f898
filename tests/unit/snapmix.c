/* snapmix.c - see snapmix.h (moved here from test_snapshot.c). */
#include "snapmix.h"
#include "wrutil.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t sm_rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

void sm_file_path(char *buf, size_t len, const struct sm_sub *m, int f)
{
	snprintf(buf, len, "%s/f%d", strcmp(m->path, "/") ? m->path : "", f);
}

void sm_verify(ref_fs *fs, const struct sm_sub *subs, int n)
{
	static uint8_t buf[SM_FMAX];
	for (int s = 0; s < n; s++) {
		if (!subs[s].live)
			continue;
		for (int f = 0; f < SM_NF; f++) {
			char p[64];
			sm_file_path(p, sizeof(p), &subs[s], f);
			struct ref_ino ino;
			WU_OK(fs, ref_lookup_path(fs, p, false, &ino));
			struct ref_stat st;
			WU_OK(fs, ref_stat(fs, &ino, &st));
			cr_assert_eq(st.size, subs[s].f[f].size, "%s: size %llu, model %zu", p,
				     (unsigned long long)st.size, subs[s].f[f].size);
			ssize_t got = ref_pread(fs, &ino, buf, sizeof(buf), 0);
			cr_assert_eq(got, (ssize_t)subs[s].f[f].size, "%s: read %zd", p, got);
			cr_assert(!memcmp(buf, subs[s].f[f].data, (size_t)got), "%s: content differs", p);
		}
	}
}

void sm_remount(struct sm_mix *m)
{
	if (m->before_umount)
		m->before_umount(m);
	WU_OK(m->fs, ref_umount(m->fs));
	m->fs = NULL;
	wu_expect_ref_clean(m->vol);
	char err[256];
	cr_assert_eq(ref_mount(m->vol, NULL, &m->fs, err, sizeof(err)), 0, "mount: %s", err);
	if (m->on_commit)
		m->on_commit(m, SM_REMOUNT);
}

struct sm_mix *sm_start(uint64_t seed)
{
	struct sm_mix *m = calloc(1, sizeof(*m));
	cr_assert(m);
	m->seed = seed;
	m->fs = wu_fresh(&m->vol, 512, 4096);
	m->n = 1;
	m->subs[0].live = true;
	strcpy(m->subs[0].path, "/");
	m->chunk = malloc(SM_FMAX);
	cr_assert(m->chunk);
	for (int f = 0; f < SM_NF; f++) {
		char p[64];
		sm_file_path(p, sizeof(p), &m->subs[0], f);
		WU_OK(m->fs, ref_create(m->fs, p, 0644));
		m->subs[0].f[f].data = calloc(1, SM_FMAX);
	}
	return m;
}

enum sm_kind sm_step(struct sm_mix *mx)
{
	ref_fs *fs = mx->fs;
	uint64_t *seed = &mx->seed;
	struct sm_sub *subs = mx->subs;
	uint8_t *chunk = mx->chunk;
	int n = mx->n;
	int s = (int)(sm_rnd(seed) % (uint64_t)n);
	struct sm_sub *m = &subs[s];
	unsigned kind = (unsigned)(sm_rnd(seed) % 20);
	mx->last_sub = s;
	if (!m->live)
		return SM_SKIPPED;
	if (kind < 12) { /* a write: small, or large enough for regular extents */
		int f = (int)(sm_rnd(seed) % SM_NF);
		size_t len = 1 + sm_rnd(seed) % (kind < 6 ? 512 : 20000);
		size_t off = sm_rnd(seed) % (SM_FMAX - len);
		for (size_t i = 0; i < len; i++)
			chunk[i] = (uint8_t)sm_rnd(seed);
		char p[64];
		sm_file_path(p, sizeof(p), m, f);
		if (mx->trace)
			fprintf(mx->trace, "write %s %zu+%zu%s\n", p, off, len, m->ro ? " (ro)" : "");
		if (m->ro) {
			WU_ERR(fs, ref_write(fs, p, chunk, len, off), EROFS);
			return SM_SKIPPED;
		}
		WU_OK(fs, ref_write(fs, p, chunk, len, off));
		memcpy(m->f[f].data + off, chunk, len);
		if (off + len > m->f[f].size)
			m->f[f].size = off + len;
		return SM_WRITE;
	} else if (kind < 14) { /* a truncate */
		int f = (int)(sm_rnd(seed) % SM_NF);
		size_t size = sm_rnd(seed) % SM_FMAX;
		char p[64];
		sm_file_path(p, sizeof(p), m, f);
		if (mx->trace)
			fprintf(mx->trace, "truncate %s %zu%s\n", p, size, m->ro ? " (ro)" : "");
		if (m->ro) {
			WU_ERR(fs, ref_truncate(fs, p, size), EROFS);
			return SM_SKIPPED;
		}
		WU_OK(fs, ref_truncate(fs, p, size));
		if (size < m->f[f].size)
			memset(m->f[f].data + size, 0, m->f[f].size - size);
		m->f[f].size = size;
		return SM_TRUNCATE;
	} else if (kind < 17 && n < SM_MAXSV) { /* a snapshot */
		struct sm_sub *d = &subs[n];
		snprintf(d->path, sizeof(d->path), "/s%d", n);
		d->ro = sm_rnd(seed) % 4 == 0;
		uint64_t id;
		WU_OK(fs, ref_snapshot(fs, m->path, d->path, d->ro, &id));
		cr_assert(id >= 256 && id <= BTRFS_LAST_FREE_OBJECTID, "snapshot id %llu",
			  (unsigned long long)id);
		if (mx->trace)
			fprintf(mx->trace, "snapshot%s %s %s (id %llu)\n", d->ro ? " -r" : "", m->path,
				d->path, (unsigned long long)id);
		d->live = true;
		for (int f = 0; f < SM_NF; f++) {
			d->f[f].data = malloc(SM_FMAX);
			memcpy(d->f[f].data, m->f[f].data, SM_FMAX);
			d->f[f].size = m->f[f].size;
		}
		mx->n++;
		if (mx->on_commit)
			mx->on_commit(mx, SM_SNAPSHOT);
		return SM_SNAPSHOT;
	} else if (kind < 19 && s > 0) { /* a deletion */
		if (mx->trace)
			fprintf(mx->trace, "delete %s\n", m->path);
		WU_OK(fs, ref_subvol_delete(fs, m->path));
		m->live = false;
		struct ref_ino ino;
		WU_ERR(fs, ref_lookup_path(fs, m->path, false, &ino), ENOENT);
		if (mx->on_commit)
			mx->on_commit(mx, SM_DELETE);
		return SM_DELETE;
	} else if (kind == 19) {
		if (sm_rnd(seed) % 2) {
			if (mx->trace)
				fprintf(mx->trace, "subvol-sync\n");
			WU_OK(fs, ref_subvol_sync(fs));
			if (mx->on_commit)
				mx->on_commit(mx, SM_CLEANER);
			return SM_CLEANER;
		}
		if (mx->trace)
			fprintf(mx->trace, "remount\n");
		sm_remount(mx); /* the cleaner maybe half-way */
		return SM_REMOUNT;
	}
	return SM_NOTHING;
}

void sm_free(struct sm_mix *m)
{
	for (int s = 0; s < m->n; s++)
		for (int f = 0; f < SM_NF; f++)
			free(m->subs[s].f[f].data);
	free(m->chunk);
	sim_volume_close(m->vol);
	free(m);
}

void sm_finish(struct sm_mix *m)
{
	sm_verify(m->fs, m->subs, m->n);
	sm_remount(m);
	sm_verify(m->fs, m->subs, m->n);
	WU_OK(m->fs, ref_subvol_sync(m->fs));
	if (m->on_commit)
		m->on_commit(m, SM_CLEANER);
	sm_verify(m->fs, m->subs, m->n);
	if (m->before_umount)
		m->before_umount(m);
	WU_OK(m->fs, ref_umount(m->fs));
	m->fs = NULL;
	wu_expect_clean(m->vol);
	sm_free(m);
}

/* ---- Crash states ---- */

enum { CF = 150, CSIZE = 3000 };

struct cstate {
	int sv;    /* version of /sv's files */
	int snap1; /* version in /snap1, -1 absent */
	int snap2;
};

static void cfill(uint8_t *buf, int f, int version)
{
	for (int i = 0; i < CSIZE; i++)
		buf[i] = (uint8_t)(f * 7 + version * 31 + i);
}

static void cwrite_all(ref_fs *fs, int version)
{
	uint8_t buf[CSIZE];
	char p[32];
	for (int f = 0; f < CF; f += version ? 3 : 1) { /* a new version rewrites a third */
		snprintf(p, sizeof(p), "/sv/f%d", f);
		cfill(buf, f, version);
		WU_OK(fs, ref_write(fs, p, buf, CSIZE, 0));
	}
}

static void cexpect(ref_fs *r, const char *dir, int version, size_t cut)
{
	uint8_t want[CSIZE], got[CSIZE];
	char p[32];
	for (int f = 0; f < CF; f++) {
		snprintf(p, sizeof(p), "%s/f%d", dir, f);
		struct ref_ino ino;
		cr_assert_eq(ref_lookup_path(r, p, false, &ino), 0, "cut %zu: %s: %s", cut, p, ref_error(r));
		cfill(want, f, f % 3 == 0 ? version : 0); /* each version rewrote every third file */
		cr_assert_eq(ref_pread(r, &ino, got, sizeof(got), 0), CSIZE, "cut %zu: %s", cut, p);
		cr_assert(!memcmp(got, want, CSIZE), "cut %zu: %s differs (version %d)", cut, p, version);
	}
}

void sm_crash_states(const struct sm_crash_hooks *hooks)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 4096);
	WU_OK(fs, ref_subvol_create(fs, "/sv", NULL));
	char p[32];
	for (int f = 0; f < CF; f++) {
		snprintf(p, sizeof(p), "/sv/f%d", f);
		WU_OK(fs, ref_create(fs, p, 0644));
	}
	cwrite_all(fs, 0);
	WU_OK(fs, ref_umount(fs));
	sim_volume *base;
	cr_assert_eq(sim_volume_clone(vol, &base), 0);
	char err[256];
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	uint64_t gen0 = LE64(ref_super(fs)->generation);
	sim_volume_log_clear(vol);
	sim_volume_set_recording(vol, true);
	enum { MAXG = 64 };
	struct cstate at[MAXG];
	struct cstate cur = { 0, -1, -1 };
	at[0] = cur;
	uint64_t last = 0;
#define COMMITTED()                                                                  \
	do {                                                                         \
		uint64_t g_ = LE64(ref_super(fs)->generation) - gen0;                 \
		cr_assert_lt(g_, MAXG);                                              \
		for (uint64_t k = last + 1; k <= g_; k++)                            \
			at[k] = cur;                                                 \
		last = g_;                                                           \
	} while (0)
	if (hooks && hooks->first) {
		hooks->first(fs);
		COMMITTED();
	}
	WU_OK(fs, ref_snapshot(fs, "/sv", "/snap1", false, NULL));
	cur.snap1 = 0;
	COMMITTED();
	cwrite_all(fs, 1);
	WU_OK(fs, ref_sync(fs));
	cur.sv = 1;
	COMMITTED();
	WU_OK(fs, ref_snapshot(fs, "/sv", "/snap2", true, NULL));
	cur.snap2 = 1;
	COMMITTED();
	cwrite_all(fs, 2);
	WU_OK(fs, ref_subvol_delete(fs, "/snap1")); /* commits /sv's version 2 too */
	cur.sv = 2;
	cur.snap1 = -1;
	COMMITTED();
	WU_OK(fs, ref_subvol_sync(fs)); /* the cleaner, a commit per step */
	COMMITTED();
#undef COMMITTED
	WU_OK(fs, ref_umount(fs));
	cr_assert_gt(last, 6, "only %llu commits", (unsigned long long)last);
	size_t n;
	const struct sim_io *log = sim_volume_log(vol, &n);
	for (size_t cut = 0; cut <= n; cut += n / 120 + 1) {
		sim_volume *v = wu_crashed_copy(base, log, cut);
		ref_fs *r;
		cr_assert_eq(ref_mount(v, NULL, &r, err, sizeof(err)), 0, "cut %zu: %s", cut, err);
		uint64_t g = LE64(ref_super(r)->generation) - gen0;
		cr_assert_leq(g, last, "cut %zu", cut);
		struct cstate w = at[g];
		cexpect(r, "/sv", w.sv, cut);
		struct ref_ino ino;
		if (w.snap1 >= 0)
			cexpect(r, "/snap1", w.snap1, cut);
		else
			cr_assert_eq(ref_lookup_path(r, "/snap1", false, &ino), -ENOENT, "cut %zu", cut);
		if (w.snap2 >= 0)
			cexpect(r, "/snap2", w.snap2, cut);
		else
			cr_assert_eq(ref_lookup_path(r, "/snap2", false, &ino), -ENOENT, "cut %zu", cut);
		if (hooks && hooks->state)
			hooks->state(r, cut, false);
		/* The cleaner resumes from wherever the crash left it. */
		WU_OK(r, ref_subvol_sync(r));
		if (hooks && hooks->state)
			hooks->state(r, cut, true);
		WU_OK(r, ref_umount(r));
		wu_expect_ref_clean(v);
		sim_volume_close(v);
	}
	sim_volume_close(base);
	sim_volume_close(vol);
}
