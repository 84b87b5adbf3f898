/*
 * test_snapshot.c - subvolumes and snapshots on memory volumes: a seeded
 * random mix of writes, truncates, snapshots (read-write and read-only),
 * deletions and cleaner runs over many subvolumes sharing deep trees (4 KiB
 * nodes), checked against a model of every file's bytes; the refcounts
 * found from all trees equal the extent items' (ref_check) throughout,
 * across remounts with the cleaner half-way, and `btrfs check` agrees at
 * the end.  Plus the errnos of bad calls.
 */
#include "wrutil.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(snapshot);

#define NF 24              /* files per subvolume */
#define MAXSV 40           /* subvolumes made in a run */
#define FMAX (96 * 1024)   /* a file's largest size */

struct mfile {
	uint8_t *data;
	size_t size;
};

struct msub {
	bool live, ro;
	char path[32];
	struct mfile f[NF];
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void file_path(char *buf, size_t len, const struct msub *m, int f)
{
	snprintf(buf, len, "%s/f%d", strcmp(m->path, "/") ? m->path : "", f);
}

static void verify(ref_fs *fs, const struct msub *subs, int n)
{
	static uint8_t buf[FMAX];
	for (int s = 0; s < n; s++) {
		if (!subs[s].live)
			continue;
		for (int f = 0; f < NF; f++) {
			char p[64];
			file_path(p, sizeof(p), &subs[s], f);
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

static ref_fs *remount(ref_fs *fs, sim_volume *vol)
{
	WU_OK(fs, ref_umount(fs));
	wu_expect_ref_clean(vol);
	char err[256];
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
	return fs;
}

static void run_random(uint64_t seed, int ops)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 512, 4096);
	static struct msub subs[MAXSV];
	memset(subs, 0, sizeof(subs));
	int n = 1;
	subs[0].live = true;
	strcpy(subs[0].path, "/");
	uint8_t *chunk = malloc(FMAX);
	cr_assert(chunk);
	for (int f = 0; f < NF; f++) {
		char p[64];
		file_path(p, sizeof(p), &subs[0], f);
		WU_OK(fs, ref_create(fs, p, 0644));
		subs[0].f[f].data = calloc(1, FMAX);
	}
	for (int op = 0; op < ops; op++) {
		int s = (int)(rnd(&seed) % (uint64_t)n);
		struct msub *m = &subs[s];
		unsigned kind = (unsigned)(rnd(&seed) % 20);
		if (!m->live)
			continue;
		if (kind < 12) { /* a write: small, or large enough for regular extents */
			int f = (int)(rnd(&seed) % NF);
			size_t len = 1 + rnd(&seed) % (kind < 6 ? 512 : 20000);
			size_t off = rnd(&seed) % (FMAX - len);
			for (size_t i = 0; i < len; i++)
				chunk[i] = (uint8_t)rnd(&seed);
			char p[64];
			file_path(p, sizeof(p), m, f);
			if (m->ro) {
				WU_ERR(fs, ref_write(fs, p, chunk, len, off), EROFS);
				continue;
			}
			WU_OK(fs, ref_write(fs, p, chunk, len, off));
			memcpy(m->f[f].data + off, chunk, len);
			if (off + len > m->f[f].size)
				m->f[f].size = off + len;
		} else if (kind < 14) { /* a truncate */
			int f = (int)(rnd(&seed) % NF);
			size_t size = rnd(&seed) % FMAX;
			char p[64];
			file_path(p, sizeof(p), m, f);
			if (m->ro) {
				WU_ERR(fs, ref_truncate(fs, p, size), EROFS);
				continue;
			}
			WU_OK(fs, ref_truncate(fs, p, size));
			if (size < m->f[f].size)
				memset(m->f[f].data + size, 0, m->f[f].size - size);
			m->f[f].size = size;
		} else if (kind < 17 && n < MAXSV) { /* a snapshot */
			struct msub *d = &subs[n];
			snprintf(d->path, sizeof(d->path), "/s%d", n);
			d->ro = rnd(&seed) % 4 == 0;
			uint64_t id;
			WU_OK(fs, ref_snapshot(fs, m->path, d->path, d->ro, &id));
			cr_assert(id >= 256 && id <= BTRFS_LAST_FREE_OBJECTID, "snapshot id %llu",
				  (unsigned long long)id);
			d->live = true;
			for (int f = 0; f < NF; f++) {
				d->f[f].data = malloc(FMAX);
				memcpy(d->f[f].data, m->f[f].data, FMAX);
				d->f[f].size = m->f[f].size;
			}
			n++;
		} else if (kind < 19 && s > 0) { /* a deletion */
			WU_OK(fs, ref_subvol_delete(fs, m->path));
			m->live = false;
			struct ref_ino ino;
			WU_ERR(fs, ref_lookup_path(fs, m->path, false, &ino), ENOENT);
		} else if (kind == 19) {
			if (rnd(&seed) % 2)
				WU_OK(fs, ref_subvol_sync(fs));
			else
				fs = remount(fs, vol); /* the cleaner maybe half-way */
		}
		if (op % 50 == 49)
			verify(fs, subs, n);
	}
	verify(fs, subs, n);
	fs = remount(fs, vol);
	verify(fs, subs, n);
	WU_OK(fs, ref_subvol_sync(fs));
	verify(fs, subs, n);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	for (int s = 0; s < n; s++)
		for (int f = 0; f < NF; f++)
			free(subs[s].f[f].data);
	free(chunk);
	sim_volume_close(vol);
}

Test(snapshot, random_mix_seed_1)
{
	run_random(1, 700);
}

Test(snapshot, random_mix_seed_2)
{
	run_random(0x5eed, 700);
}

/* A snapshot landing inside its own source holds the source as it was
 * before the snapshot's entry existed, also when the source's blocks were
 * changed in the same transaction (4 KiB nodes: a tree of two levels). */
Test(snapshot, into_its_own_source)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 4096);
	WU_OK(fs, ref_mkdir(fs, "/a", 0755));
	char p[32];
	for (int i = 0; i < 300; i++) {
		snprintf(p, sizeof(p), "/a/f%d", i);
		WU_OK(fs, ref_create(fs, p, 0644));
	}
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	WU_OK(fs, ref_snapshot(fs, "/", "/d/s", false, NULL));
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, "/d/s/d", false, &st));
	cr_assert_eq(st.size, 0, "the snapshot's /d holds %llu bytes of names",
		     (unsigned long long)st.size);
	WU_OK(fs, ref_stat_path(fs, "/d", false, &st));
	cr_assert_eq(st.size, 2, "/d holds %llu bytes of names", (unsigned long long)st.size);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

Test(snapshot, errors_and_nesting)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	uint64_t id;
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	WU_OK(fs, ref_subvol_create(fs, "/sv", &id));
	cr_assert_eq(id, 256);
	WU_OK(fs, ref_subvol_create(fs, "/sv/inner", &id));
	cr_assert_eq(id, 257);
	WU_ERR(fs, ref_subvol_create(fs, "/sv", NULL), EEXIST);
	WU_ERR(fs, ref_subvol_create(fs, "/nope/x", NULL), ENOENT);
	WU_ERR(fs, ref_snapshot(fs, "/d", "/x", false, NULL), EINVAL);
	WU_ERR(fs, ref_snapshot(fs, "/nope", "/x", false, NULL), ENOENT);
	WU_ERR(fs, ref_subvol_delete(fs, "/"), EPERM);
	WU_ERR(fs, ref_subvol_delete(fs, "/d"), EINVAL);
	WU_ERR(fs, ref_subvol_delete(fs, "/sv"), ENOTEMPTY);
	/* A snapshot of /sv: /sv/inner is an empty directory there, as in the kernel. */
	WU_OK(fs, ref_snapshot(fs, "/sv", "/snap", true, &id));
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, "/snap/inner", false, &st));
	cr_assert_eq(st.nlink, 1);
	WU_ERR(fs, ref_mkdir(fs, "/snap/x", 0755), EROFS);
	WU_ERR(fs, ref_subvol_create(fs, "/snap/x", NULL), EROFS);
	WU_ERR(fs, ref_rmdir(fs, "/snap/inner"), EROFS);
	/* The default subvolume stays. */
	WU_OK(fs, ref_subvol_set_default(fs, 256));
	uint64_t def;
	WU_OK(fs, ref_subvol_default(fs, &def));
	cr_assert_eq(def, 256);
	WU_OK(fs, ref_subvol_delete(fs, "/sv/inner"));
	WU_ERR(fs, ref_subvol_delete(fs, "/sv"), EPERM);
	WU_OK(fs, ref_subvol_set_default(fs, 0));
	WU_OK(fs, ref_subvol_delete(fs, "/snap"));
	WU_OK(fs, ref_subvol_delete(fs, "/sv"));
	char path[64];
	WU_ERR(fs, ref_subvol_path(fs, 256, path, sizeof(path)), ENOENT);
	WU_OK(fs, ref_subvol_sync(fs));
	uint64_t *ids;
	size_t nids;
	WU_OK(fs, ref_subvol_ids(fs, &ids, &nids));
	cr_assert_eq(nids, 0);
	free(ids);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/*
 * Crash consistency: snapshots, a deletion and the cleaner's steps run with
 * every write recorded; for cut points all through the log a copy of the
 * volume replays the log up to the cut and loses power.  Every crash state
 * opens, checks clean (reference counts included), and shows exactly the
 * state of its last commit: a snapshot whole or absent, a deleted one gone
 * or still whole; mounted again, the cleaner finishes and the result checks
 * clean.
 */
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

Test(snapshot, crash_states)
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
	WU_OK(fs, ref_umount(fs));
	cr_assert_gt(last, 6, "only %llu commits", (unsigned long long)last);
	size_t n;
	const struct sim_io *log = sim_volume_log(vol, &n);
	for (size_t cut = 0; cut <= n; cut += n / 120 + 1) {
		sim_volume *v;
		cr_assert_eq(sim_volume_clone(base, &v), 0);
		wu_replay(v, log, cut);
		struct sim_crash_spec cs = { .policy = SIM_CRASH_RANDOM, .keep_probability = 0.5,
					     .tear_probability = 0.3 };
		cr_assert_eq(sim_volume_crash(v, &cs, NULL), 0);
		wu_expect_ref_clean(v);
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
		/* The cleaner resumes from wherever the crash left it. */
		WU_OK(r, ref_subvol_sync(r));
		WU_OK(r, ref_umount(r));
		wu_expect_ref_clean(v);
		sim_volume_close(v);
	}
	sim_volume_close(base);
	sim_volume_close(vol);
}
