/*
 * test_qgroup.c - quota groups of level 0 (one per subvolume) on memory
 * volumes.  rfer is the bytes of every extent a subvolume's tree reaches
 * (data extents whole, by their disk size; tree blocks, nodesize each), excl
 * the bytes of those only that subvolume reaches.
 *
 * After every commit the groups the quota tree holds (ref_qgroup_list) equal
 * a recount from scratch (ref_qgroup_recount), and both equal the test's own
 * count (qgcount.c: every subvolume tree walked through the read API, a
 * deleted one as far as the cleaner left it).  Checked: enabling on a fresh
 * file system and on a populated one, twice, across remounts; seeded random
 * mixes of writes, truncates, snapshots, deletions, cleaner steps and
 * remounts (snapmix.c) ending in ref_check and btrfs check; exact numbers of a
 * file, its snapshot and an overwrite; limits on rfer and excl (EDQUOT, data
 * pending in the running transaction counted); the errnos; every crash state
 * of snapshots, a deletion and the cleaner with quotas on; a corrupt quota
 * tree read without a crash; the cleaner half-way while the source changes;
 * and reductions of random-mix failures to a few calls.
 *
 * QG_TRACE=1 prints each operation of the random mixes; QG_KEEP_GOING=1
 * lets a test run on after a mismatch of the numbers, reporting every one.
 */
#include "qgcount.h"
#include "snapmix.h"
#include "imgutil.h"
#include "wrutil.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(qgroup);

#define KiB 1024ULL
#define MiB (1024ULL * 1024)


/* ---- Checks ---- */

static struct ref_qgroup qget(ref_fs *fs, uint64_t id)
{
	struct ref_qgroup *l;
	size_t n;
	WU_OK(fs, ref_qgroup_list(fs, &l, &n));
	const struct ref_qgroup *q = qfind(l, n, id);
	cr_assert(q, "%s: no group 0/%llu", qg_where, (unsigned long long)id);
	struct ref_qgroup g = *q;
	free(l);
	return g;
}

static void expect_on(ref_fs *fs)
{
	bool on = false;
	uint64_t flags = 0;
	WU_OK(fs, ref_qgroup_status(fs, &on, &flags));
	cr_assert(on, "%s: quotas not enabled", qg_where);
	cr_assert(flags & BTRFS_QGROUP_STATUS_FLAG_ON, "%s: status flags %#llx", qg_where,
		  (unsigned long long)flags);
	cr_assert(!(flags & BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT), "%s: status flags %#llx",
		  qg_where, (unsigned long long)flags);
}

/* QG_KEEP_GOING=1 in the environment: a mismatch of the numbers fails the
 * test but lets it run on, so that every later one is reported too. */
static bool keep_going(void)
{
	return getenv("QG_KEEP_GOING") != NULL;
}
#define QCHECK(cond, ...)                                                            \
	do {                                                                         \
		if (keep_going())                                                    \
			cr_expect(cond, __VA_ARGS__);                                \
		else                                                                 \
			cr_assert(cond, __VA_ARGS__);                                \
	} while (0)

/* The list equals the recount, and both the test's count, for every
 * subvolume; a group whose subvolume is gone holds nothing.  Returns the
 * list (free it) when out is not NULL. */
static void expect_consistent_list(ref_fs *fs, struct ref_qgroup **out, size_t *nout,
				   bool *dropping)
{
	expect_on(fs);
	struct ref_qgroup *l, *rc;
	size_t nl, nrc, nq;
	WU_OK(fs, ref_qgroup_list(fs, &l, &nl));
	WU_OK(fs, ref_qgroup_recount(fs, &rc, &nrc));
	struct ref_qgroup *q = qcount(fs, &nq, dropping);
	for (size_t i = 1; i < nl; i++)
		cr_assert_lt(l[i - 1].id, l[i].id, "%s: the list is not ascending", qg_where);
	for (size_t i = 0; i < nq; i++) {
		const struct ref_qgroup *a = qfind(l, nl, q[i].id), *b = qfind(rc, nrc, q[i].id);
		QCHECK(b, "%s: subvolume %llu missing from the recount", qg_where,
		       (unsigned long long)q[i].id);
		if (!a) {
			/* Only a subvolume deleted before quotas were enabled may
			 * lack one: the kernel makes groups for linked subvolumes. */
			struct ref_subvol_info si = { 0 };
			(void)ref_subvol_info(fs, q[i].id, &si);
			QCHECK(!si.refs, "%s: linked subvolume %llu has no group; it reaches rfer %llu excl %llu",
			       qg_where, (unsigned long long)q[i].id,
			       (unsigned long long)q[i].rfer, (unsigned long long)q[i].excl);
		}
		if (!a || !b)
			continue;
		QCHECK(a->rfer == b->rfer && a->excl == b->excl && b->rfer == q[i].rfer &&
			       b->excl == q[i].excl,
		       "%s: 0/%llu: list rfer %llu excl %llu, recount rfer %llu excl %llu, "
		       "test's count rfer %llu excl %llu",
		       qg_where, (unsigned long long)q[i].id, (unsigned long long)a->rfer,
		       (unsigned long long)a->excl, (unsigned long long)b->rfer,
		       (unsigned long long)b->excl, (unsigned long long)q[i].rfer,
		       (unsigned long long)q[i].excl);
	}
	QCHECK(nrc == nq, "%s: the recount has %zu subvolumes, the root tree %zu", qg_where, nrc, nq);
	for (size_t i = 0; i < nl; i++)
		if (!qfind(q, nq, l[i].id))
			QCHECK(l[i].rfer == 0 && l[i].excl == 0,
			       "%s: 0/%llu: its subvolume is gone, yet rfer %llu excl %llu", qg_where,
			       (unsigned long long)l[i].id, (unsigned long long)l[i].rfer,
			       (unsigned long long)l[i].excl);
	free(rc);
	free(q);
	if (out) {
		*out = l;
		*nout = nl;
	} else {
		free(l);
	}
}

static void expect_consistent(ref_fs *fs)
{
	expect_consistent_list(fs, NULL, NULL, NULL);
}

/* ref_qgroup_list without quotas: -ENOTCONN (ref.h, the kernel's errno); checked with cr_expect so
 * that the rest of the test still runs. */
static void expect_list_enotconn(ref_fs *fs)
{
	struct ref_qgroup *l = NULL;
	size_t n;
	int r = ref_qgroup_list(fs, &l, &n);
	cr_expect_eq(r, -ENOTCONN, "ref_qgroup_list without quotas = %d (%s), expected ENOTCONN", r,
		     strerror(-r));
	if (r >= 0)
		free(l);
}

static ref_fs *remount(ref_fs *fs, sim_volume *vol)
{
	WU_OK(fs, ref_umount(fs));
	wu_expect_ref_clean(vol);
	char err[256];
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
	return fs;
}

static uint32_t nodesize_of(ref_fs *fs)
{
	return LE32(ref_super(fs)->nodesize);
}

static uint8_t tree_level(ref_fs *fs, uint64_t id)
{
	struct ref_root r;
	WU_OK(fs, ref_find_root(fs, id, &r));
	return r.level;
}

/* Creates the file when it is not there yet. */
static void ensure_file(ref_fs *fs, const char *path)
{
	int r = ref_create(fs, path, 0644);
	cr_assert(r == 0 || r == -EEXIST, "create %s = %d: %s", path, r, ref_error(fs));
}

static void write_pattern(ref_fs *fs, const char *path, uint64_t off, size_t len, uint64_t tag)
{
	ensure_file(fs, path);
	uint8_t *buf = tu_pat(len, tag);
	WU_OK(fs, ref_write(fs, path, buf, len, off));
	free(buf);
}

static ssize_t try_write(ref_fs *fs, const char *path, uint64_t off, size_t len, uint64_t tag)
{
	(void)ref_create(fs, path, 0644); /* EEXIST mostly */
	uint8_t *buf = tu_pat(len, tag);
	ssize_t r = ref_write(fs, path, buf, len, off);
	free(buf);
	return r;
}

static uint64_t file_size(ref_fs *fs, const char *path)
{
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, path, false, &st));
	return st.size;
}

/* ---- Enabling ---- */

Test(qgroup, enable_fresh)
{
	snprintf(qg_where, sizeof(qg_where), "fresh");
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	bool on = true;
	uint64_t flags;
	WU_OK(fs, ref_qgroup_status(fs, &on, &flags));
	cr_assert(!on, "quotas enabled on a new file system");
	struct ref_qgroup *l;
	size_t n;
	expect_list_enotconn(fs);
	WU_OK(fs, ref_qgroup_enable(fs));
	expect_consistent(fs);
	struct ref_qgroup top = qget(fs, BTRFS_FS_TREE_OBJECTID);
	/* The top level of a new file system: its root directory, one leaf. */
	cr_assert_eq(tree_level(fs, BTRFS_FS_TREE_OBJECTID), 0);
	cr_assert_eq(top.rfer, nodesize_of(fs), "rfer %llu", (unsigned long long)top.rfer);
	cr_assert_eq(top.excl, nodesize_of(fs), "excl %llu", (unsigned long long)top.excl);
	cr_assert_eq(top.limit_flags, 0);
	cr_assert_eq(ref_qgroup_enable(fs), 0, "enabled again: %s", ref_error(fs));
	expect_consistent(fs);
	/* A subvolume made afterwards has its group. */
	uint64_t id;
	WU_OK(fs, ref_subvol_create(fs, "/sv", &id));
	expect_consistent(fs);
	struct ref_qgroup g = qget(fs, id);
	cr_assert_eq(g.rfer, nodesize_of(fs), "new subvolume rfer %llu", (unsigned long long)g.rfer);
	cr_assert_eq(g.excl, nodesize_of(fs), "new subvolume excl %llu", (unsigned long long)g.excl);
	write_pattern(fs, "/sv/a", 0, 100 * KiB, 1);
	WU_OK(fs, ref_sync(fs));
	expect_consistent(fs);
	struct ref_qgroup *before;
	size_t nbefore;
	expect_consistent_list(fs, &before, &nbefore, NULL);
	fs = remount(fs, vol);
	snprintf(qg_where, sizeof(qg_where), "fresh, remounted");
	expect_consistent(fs);
	WU_OK(fs, ref_qgroup_list(fs, &l, &n));
	cr_assert_eq(n, nbefore);
	for (size_t i = 0; i < n; i++)
		cr_assert(l[i].id == before[i].id && l[i].rfer == before[i].rfer &&
				  l[i].excl == before[i].excl,
			  "0/%llu changed across a remount", (unsigned long long)l[i].id);
	free(l);
	free(before);
	cr_assert_eq(ref_qgroup_enable(fs), 0, "enabled again after a remount: %s", ref_error(fs));
	expect_consistent(fs);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* Quotas enabled on a file system that already holds files, snapshots and a
 * deletion the cleaner has not finished. */
Test(qgroup, enable_populated)
{
	uint64_t seed = 77;
	fprintf(stderr, "qgroup::enable_populated: seed %llu\n", (unsigned long long)seed);
	struct sm_mix *m = sm_start(seed);
	for (int op = 0; op < 250; op++)
		sm_step(m);
	/* A deletion with its cleaner left half-way, if the mix left none. */
	WU_OK(m->fs, ref_snapshot(m->fs, "/", "/late", false, NULL));
	WU_OK(m->fs, ref_subvol_delete(m->fs, "/late"));
	snprintf(qg_where, sizeof(qg_where), "seed %llu: enabled on a populated fs",
		 (unsigned long long)seed);
	WU_OK(m->fs, ref_qgroup_enable(m->fs));
	bool dropping;
	expect_consistent_list(m->fs, NULL, NULL, &dropping);
	uint64_t *ids;
	size_t nids;
	WU_OK(m->fs, ref_subvol_ids(m->fs, &ids, &nids));
	for (size_t i = 0; i < nids; i++)
		qget(m->fs, ids[i]);
	free(ids);
	qget(m->fs, BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(ref_qgroup_enable(m->fs), 0, "enabled again: %s", ref_error(m->fs));
	expect_consistent(m->fs);
	/* The cleaner's steps, each a commit. */
	for (int i = 0; i < 4; i++) {
		WU_OK(m->fs, ref_sync(m->fs));
		snprintf(qg_where, sizeof(qg_where), "seed %llu: cleaner step %d", (unsigned long long)seed, i);
		expect_consistent(m->fs);
	}
	sm_remount(m);
	snprintf(qg_where, sizeof(qg_where), "seed %llu: remounted", (unsigned long long)seed);
	expect_consistent(m->fs);
	WU_OK(m->fs, ref_subvol_sync(m->fs));
	expect_consistent(m->fs);
	sm_verify(m->fs, m->subs, m->n);
	WU_OK(m->fs, ref_umount(m->fs));
	m->fs = NULL;
	wu_expect_clean(m->vol);
	sm_free(m);
}

/* ---- Random mixes ---- */

struct qmix {
	uint64_t seed;
	int op;
	struct ref_qgroup *saved; /* the list before an unmount */
	size_t nsaved;
	bool saved_dropping;
};

static void qmix_where(struct sm_mix *m, const char *what)
{
	struct qmix *q = m->ctx;
	snprintf(qg_where, sizeof(qg_where), "seed %llu (%#llx), op %d: %s", (unsigned long long)q->seed,
		 (unsigned long long)q->seed, q->op, what);
}

static void qmix_umount(struct sm_mix *m)
{
	struct qmix *q = m->ctx;
	WU_OK(m->fs, ref_sync(m->fs));
	qmix_where(m, "synced before an unmount");
	free(q->saved);
	expect_consistent_list(m->fs, &q->saved, &q->nsaved, &q->saved_dropping);
}

static void qmix_commit(struct sm_mix *m, enum sm_kind kind)
{
	struct qmix *q = m->ctx;
	static const char *names[] = { [SM_SNAPSHOT] = "after a snapshot",
				       [SM_DELETE] = "after a deletion",
				       [SM_CLEANER] = "after the cleaner",
				       [SM_REMOUNT] = "after a remount" };
	qmix_where(m, names[kind]);
	expect_consistent(m->fs);
	if (kind != SM_REMOUNT || !q->saved)
		return;
	/* The groups as the unmount left them: the same numbers unless the
	 * cleaner had work left (the unmount's commit may run a step), the
	 * same limits always. */
	struct ref_qgroup *l;
	size_t n;
	WU_OK(m->fs, ref_qgroup_list(m->fs, &l, &n));
	for (size_t i = 0; i < q->nsaved; i++) {
		const struct ref_qgroup *a = &q->saved[i], *b = qfind(l, n, a->id);
		if (!b) {
			/* A group whose subvolume is freed whole may go (as the
			 * kernel's do); a live subvolume's is missed by
			 * expect_consistent above. */
			cr_assert(q->saved_dropping || (a->rfer == 0 && a->excl == 0),
				  "%s: 0/%llu (rfer %llu excl %llu) gone after the remount", qg_where,
				  (unsigned long long)a->id, (unsigned long long)a->rfer,
				  (unsigned long long)a->excl);
			continue;
		}
		cr_assert(b->limit_flags == a->limit_flags && b->max_rfer == a->max_rfer &&
				  b->max_excl == a->max_excl,
			  "%s: 0/%llu: limits changed across the remount", qg_where,
			  (unsigned long long)a->id);
		if (!q->saved_dropping)
			cr_assert(b->rfer == a->rfer && b->excl == a->excl,
				  "%s: 0/%llu: rfer %llu excl %llu before the unmount, %llu %llu after",
				  qg_where, (unsigned long long)a->id, (unsigned long long)a->rfer,
				  (unsigned long long)a->excl, (unsigned long long)b->rfer,
				  (unsigned long long)b->excl);
	}
	free(l);
	free(q->saved);
	q->saved = NULL;
}

/* enable_at: the operation before which quotas are enabled (0: at once). */
static void run_qmix(uint64_t seed, int ops, int enable_at)
{
	fprintf(stderr, "qgroup random mix: seed %llu (%#llx), %d operations, quotas from op %d "
			"(QG_TRACE=1 prints them, QG_KEEP_GOING=1 runs on after a mismatch)\n",
		(unsigned long long)seed, (unsigned long long)seed, ops, enable_at);
	struct qmix q = { .seed = seed };
	struct sm_mix *m = sm_start(seed);
	m->ctx = &q;
	if (getenv("QG_TRACE"))
		m->trace = stderr;
	uint64_t xs = seed * 0x9e3779b97f4a7c15ULL | 1; /* syncs, apart from the mix's stream */
	for (q.op = 0; q.op < ops; q.op++) {
		if (q.op == enable_at) {
			if (m->trace)
				fprintf(stderr, "%d: quota enable\n", q.op);
			WU_OK(m->fs, ref_qgroup_enable(m->fs));
			qmix_where(m, "enabled");
			expect_consistent(m->fs);
			m->on_commit = qmix_commit;
			m->before_umount = qmix_umount;
		}
		if (m->trace)
			fprintf(stderr, "%d: ", q.op);
		enum sm_kind k = sm_step(m);
		if (m->trace && (k == SM_SKIPPED || k == SM_NOTHING))
			fprintf(stderr, "-\n");
		if (q.op < enable_at)
			continue;
		unsigned x = (unsigned)(sm_rnd(&xs) % 8);
		if (((k == SM_WRITE || k == SM_TRUNCATE) && x == 0) || (k == SM_DELETE && x < 4)) {
			/* A commit after data changes; after a deletion, a cleaner step or two. */
			int syncs = k == SM_DELETE ? 1 + (int)(x % 2) : 1;
			for (int i = 0; i < syncs; i++) {
				if (m->trace)
					fprintf(stderr, "%d: sync\n", q.op);
				WU_OK(m->fs, ref_sync(m->fs));
				qmix_where(m, "after ref_sync");
				expect_consistent(m->fs);
			}
		}
		if (q.op % 50 == 49)
			sm_verify(m->fs, m->subs, m->n);
	}
	/* The end: verified, remounted, the cleaner to the end, btrfs check. */
	qmix_where(m, "the end");
	sm_finish(m);
	free(q.saved);
}

Test(qgroup, random_mix_seed_1)
{
	run_qmix(1, 400, 0);
}

Test(qgroup, random_mix_seed_2)
{
	run_qmix(0x5eed, 400, 0);
}

Test(qgroup, random_mix_seed_3_enabled_late)
{
	run_qmix(2026, 400, 150);
}

Test(qgroup, random_mix_seed_4)
{
	run_qmix(0xdecafbad, 400, 0);
}

Test(qgroup, random_mix_seed_5)
{
	run_qmix(31337, 400, 0);
}

Test(qgroup, random_mix_seed_6_enabled_late)
{
	run_qmix(0xabad1dea, 400, 250);
}

/* ---- Exact numbers ---- */

/* A subvolume of one 1 MiB file in one extent and one leaf; a snapshot of
 * it; 4 KiB overwritten in the source. */
Test(qgroup, exact_numbers)
{
	snprintf(qg_where, sizeof(qg_where), "exact numbers");
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	WU_OK(fs, ref_qgroup_enable(fs));
	uint64_t sv, snap;
	WU_OK(fs, ref_subvol_create(fs, "/sv", &sv));
	write_pattern(fs, "/sv/f", 0, MiB, 1);
	WU_OK(fs, ref_sync(fs));
	uint64_t N = nodesize_of(fs);
	cr_assert_eq(tree_level(fs, sv), 0, "the subvolume's tree is not one leaf");
	expect_consistent(fs);
	struct ref_qgroup g = qget(fs, sv);
	cr_assert_eq(g.rfer, MiB + N, "one 1 MiB file: rfer %llu, expected %llu",
		     (unsigned long long)g.rfer, (unsigned long long)(MiB + N));
	cr_assert_eq(g.excl, MiB + N, "one 1 MiB file: excl %llu, expected %llu",
		     (unsigned long long)g.excl, (unsigned long long)(MiB + N));
	struct ref_qgroup top = qget(fs, BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(tree_level(fs, BTRFS_FS_TREE_OBJECTID), 0);
	cr_assert(top.rfer == N && top.excl == N, "top level: rfer %llu excl %llu, expected %llu",
		  (unsigned long long)top.rfer, (unsigned long long)top.excl,
		  (unsigned long long)N);

	WU_OK(fs, ref_snapshot(fs, "/sv", "/snap", false, &snap));
	expect_consistent(fs);
	g = qget(fs, sv);
	struct ref_qgroup s = qget(fs, snap);
	cr_assert_eq(s.rfer, g.rfer, "snapshot rfer %llu, source %llu", (unsigned long long)s.rfer,
		     (unsigned long long)g.rfer);
	cr_assert_eq(g.rfer, MiB + N, "source rfer %llu after the snapshot",
		     (unsigned long long)g.rfer);
	cr_assert_eq(g.excl, N, "source excl %llu after the snapshot, expected %llu",
		     (unsigned long long)g.excl, (unsigned long long)N);
	cr_assert_eq(s.excl, N, "snapshot excl %llu, expected %llu", (unsigned long long)s.excl,
		     (unsigned long long)N);

	write_pattern(fs, "/sv/f", 0, 4 * KiB, 2);
	WU_OK(fs, ref_sync(fs));
	cr_assert_eq(tree_level(fs, sv), 0);
	expect_consistent(fs);
	g = qget(fs, sv);
	struct ref_qgroup s2 = qget(fs, snap);
	/* The 1 MiB extent stays whole, shared; the source's leaf was its own already. */
	cr_assert_eq(g.excl, N + 4 * KiB, "source excl %llu after a 4 KiB overwrite, expected %llu",
		     (unsigned long long)g.excl, (unsigned long long)(N + 4 * KiB));
	cr_assert_eq(g.rfer, MiB + 4 * KiB + N, "source rfer %llu, expected %llu",
		     (unsigned long long)g.rfer, (unsigned long long)(MiB + 4 * KiB + N));
	cr_assert(s2.rfer == s.rfer && s2.excl == s.excl,
		  "snapshot changed: rfer %llu excl %llu, was %llu %llu",
		  (unsigned long long)s2.rfer, (unsigned long long)s2.excl,
		  (unsigned long long)s.rfer, (unsigned long long)s.excl);

	/* Deleting the snapshot: the source gets the whole extent back. */
	WU_OK(fs, ref_subvol_delete(fs, "/snap"));
	expect_consistent(fs);
	WU_OK(fs, ref_subvol_sync(fs));
	expect_consistent(fs);
	g = qget(fs, sv);
	cr_assert(g.rfer == MiB + 4 * KiB + N && g.excl == g.rfer,
		  "source alone again: rfer %llu excl %llu, expected both %llu",
		  (unsigned long long)g.rfer, (unsigned long long)g.excl,
		  (unsigned long long)(MiB + 4 * KiB + N));
	struct ref_qgroup *l;
	size_t n;
	WU_OK(fs, ref_qgroup_list(fs, &l, &n));
	const struct ref_qgroup *gone = qfind(l, n, snap);
	if (gone)
		cr_assert(gone->rfer == 0 && gone->excl == 0,
			  "deleted snapshot: rfer %llu excl %llu once freed",
			  (unsigned long long)gone->rfer, (unsigned long long)gone->excl);
	free(l);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* A snapshot rewrites the whole extent it shared with its source: the old
 * extent leaves the snapshot's rfer and is the source's alone again; then
 * the source rewrites its copy too, and the old extent is gone. */
Test(qgroup, exact_numbers_whole_extent_replaced)
{
	snprintf(qg_where, sizeof(qg_where), "exact numbers, whole extent replaced");
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	WU_OK(fs, ref_qgroup_enable(fs));
	uint64_t sv, snap;
	WU_OK(fs, ref_subvol_create(fs, "/sv", &sv));
	write_pattern(fs, "/sv/f", 0, MiB, 1);
	WU_OK(fs, ref_snapshot(fs, "/sv", "/snap", false, &snap));
	uint64_t N = nodesize_of(fs);
	write_pattern(fs, "/snap/f", 0, MiB, 2);
	WU_OK(fs, ref_sync(fs));
	cr_assert(tree_level(fs, sv) == 0 && tree_level(fs, snap) == 0);
	struct ref_qgroup g = qget(fs, sv), s = qget(fs, snap);
	cr_expect(s.rfer == MiB + N && s.excl == MiB + N,
		  "snapshot with its own 1 MiB: rfer %llu excl %llu, expected both %llu",
		  (unsigned long long)s.rfer, (unsigned long long)s.excl,
		  (unsigned long long)(MiB + N));
	cr_expect(g.rfer == MiB + N && g.excl == MiB + N,
		  "source alone with the old 1 MiB: rfer %llu excl %llu, expected both %llu",
		  (unsigned long long)g.rfer, (unsigned long long)g.excl,
		  (unsigned long long)(MiB + N));
	expect_consistent(fs);
	write_pattern(fs, "/sv/f", 0, MiB, 3);
	WU_OK(fs, ref_sync(fs));
	g = qget(fs, sv);
	cr_expect(g.rfer == MiB + N && g.excl == MiB + N,
		  "source rewritten: rfer %llu excl %llu, expected both %llu",
		  (unsigned long long)g.rfer, (unsigned long long)g.excl,
		  (unsigned long long)(MiB + N));
	expect_consistent(fs);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* 4 KiB nodes, a subvolume /sv with nfiles empty files and a 1 MiB /sv/f,
 * then quotas enabled. */
static ref_fs *deep_fixture(sim_volume **vol, int nfiles, uint64_t *sv)
{
	ref_fs *fs = wu_fresh(vol, 256, 4096);
	WU_OK(fs, ref_subvol_create(fs, "/sv", sv));
	char p[32];
	for (int i = 0; i < nfiles; i++) {
		snprintf(p, sizeof(p), "/sv/e%d", i);
		WU_OK(fs, ref_create(fs, p, 0644));
	}
	write_pattern(fs, "/sv/f", 0, MiB, 1);
	WU_OK(fs, ref_qgroup_enable(fs));
	return fs;
}

/* The same over a tree of two levels (4 KiB nodes, 300 files): the snapshot
 * shares every block under its root; an overwrite copies the source's path
 * down to the file's leaf, whose old copies then belong to the snapshot
 * alone. */
Test(qgroup, exact_numbers_deep_tree)
{
	snprintf(qg_where, sizeof(qg_where), "exact numbers, deep tree");
	sim_volume *vol;
	uint64_t sv, snap;
	ref_fs *fs = deep_fixture(&vol, 300, &sv);
	uint64_t N = nodesize_of(fs);
	cr_assert_geq(tree_level(fs, sv), 1, "300 files in one leaf of 4 KiB");
	expect_consistent(fs);
	size_t nq;
	struct ref_qgroup *q = qcount(fs, &nq, NULL);
	uint64_t blocks = (qfind(q, nq, sv)->rfer - MiB) / N;
	free(q);
	struct ref_qgroup g = qget(fs, sv);
	cr_assert(g.rfer == MiB + blocks * N && g.excl == g.rfer,
		  "rfer %llu excl %llu, expected 1 MiB + %llu blocks", (unsigned long long)g.rfer,
		  (unsigned long long)g.excl, (unsigned long long)blocks);

	WU_OK(fs, ref_snapshot(fs, "/sv", "/snap", false, &snap));
	expect_consistent(fs);
	g = qget(fs, sv);
	struct ref_qgroup s = qget(fs, snap);
	cr_assert(g.rfer == MiB + blocks * N && s.rfer == g.rfer,
		  "after the snapshot: rfer %llu and %llu, expected %llu", (unsigned long long)g.rfer,
		  (unsigned long long)s.rfer, (unsigned long long)(MiB + blocks * N));
	cr_assert(g.excl == N && s.excl == N, "after the snapshot: excl %llu and %llu, expected %llu",
		  (unsigned long long)g.excl, (unsigned long long)s.excl, (unsigned long long)N);

	write_pattern(fs, "/sv/f", 0, 4 * KiB, 2);
	WU_OK(fs, ref_sync(fs));
	expect_consistent(fs);
	g = qget(fs, sv);
	struct ref_qgroup s2 = qget(fs, snap);
	/* Blocks the source copied: at least its root and the file's leaf; the
	 * snapshot's rfer does not move, its excl grows by the old copies. */
	cr_assert_eq(s2.rfer, s.rfer, "snapshot rfer %llu, was %llu", (unsigned long long)s2.rfer,
		     (unsigned long long)s.rfer);
	cr_assert_geq(g.excl, 4 * KiB + 2 * N, "source excl %llu", (unsigned long long)g.excl);
	cr_assert_eq((g.excl - 4 * KiB) % N, 0, "source excl %llu: 4 KiB + whole blocks",
		     (unsigned long long)g.excl);
	uint64_t copied = (g.excl - 4 * KiB) / N; /* blocks the source holds alone */
	cr_assert_eq(s2.excl, copied * N, "snapshot excl %llu, expected %llu blocks (the source's %llu)",
		     (unsigned long long)s2.excl, (unsigned long long)copied,
		     (unsigned long long)copied);

	/* The snapshot deleted: a commit per cleaner step, the numbers right
	 * after each; at the end the source holds everything it reaches alone. */
	WU_OK(fs, ref_subvol_delete(fs, "/snap"));
	expect_consistent(fs);
	bool dropping = true;
	for (int step = 0; dropping; step++) {
		cr_assert_lt(step, 100, "the cleaner does not finish");
		WU_OK(fs, ref_sync(fs));
		snprintf(qg_where, sizeof(qg_where), "deep tree: snapshot deleted, cleaner step %d", step);
		expect_consistent_list(fs, NULL, NULL, &dropping);
	}
	g = qget(fs, sv);
	cr_assert(g.excl == g.rfer && g.rfer == MiB + 4 * KiB + blocks * N,
		  "source alone again: rfer %llu excl %llu, expected both %llu",
		  (unsigned long long)g.rfer, (unsigned long long)g.excl,
		  (unsigned long long)(MiB + 4 * KiB + blocks * N));
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* A tree of two levels again, the snapshot side rewriting the whole file:
 * the old extent leaves the snapshot and is the source's alone. */
Test(qgroup, whole_extent_replaced_in_snapshot_of_deep_tree)
{
	snprintf(qg_where, sizeof(qg_where), "deep tree, extent replaced in the snapshot");
	sim_volume *vol;
	uint64_t sv, snap;
	ref_fs *fs = deep_fixture(&vol, 60, &sv);
	cr_assert_geq(tree_level(fs, sv), 1);
	WU_OK(fs, ref_snapshot(fs, "/sv", "/snap", false, &snap));
	write_pattern(fs, "/snap/f", 0, MiB, 2);
	WU_OK(fs, ref_sync(fs));
	struct ref_qgroup g = qget(fs, sv), s = qget(fs, snap);
	cr_expect_lt(s.rfer, 2 * MiB, "the snapshot reaches the old 1 MiB still: rfer %llu",
		     (unsigned long long)s.rfer);
	cr_expect_geq(s.excl, MiB, "the snapshot's new 1 MiB not exclusive: excl %llu",
		      (unsigned long long)s.excl);
	cr_expect_geq(g.excl, MiB + 4096, "the old 1 MiB not the source's alone: excl %llu",
		      (unsigned long long)g.excl);
	expect_consistent(fs);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* ---- Limits ---- */

Test(qgroup, limit_rfer)
{
	snprintf(qg_where, sizeof(qg_where), "rfer limit");
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	WU_OK(fs, ref_qgroup_enable(fs));
	uint64_t sv;
	WU_OK(fs, ref_subvol_create(fs, "/sv", &sv));
	WU_OK(fs, ref_create(fs, "/sv/f", 0644));
	WU_OK(fs, ref_qgroup_limit(fs, sv, BTRFS_QGROUP_LIMIT_MAX_RFER, MiB, 0));
	struct ref_qgroup g = qget(fs, sv);
	cr_assert(g.limit_flags == BTRFS_QGROUP_LIMIT_MAX_RFER && g.max_rfer == MiB,
		  "limit flags %#llx max_rfer %llu", (unsigned long long)g.limit_flags,
		  (unsigned long long)g.max_rfer);
	expect_consistent(fs);
	uint64_t used = g.rfer; /* committed: the subvolume's tree */
	cr_assert_lt(used, MiB);
	/* 2 MiB in 64 KiB writes in one transaction: each passes while the data
	 * pending and the committed use stay within the limit. */
	const uint64_t chunk = 64 * KiB;
	uint64_t written = 0;
	bool refused = false;
	while (written < 2 * MiB) {
		ssize_t r = try_write(fs, "/sv/f", written, chunk, 3);
		if (used + written + chunk <= MiB) {
			cr_assert_eq(r, (ssize_t)chunk,
				     "write at %llu (committed %llu, pending %llu, limit 1 MiB) = %zd: %s",
				     (unsigned long long)written, (unsigned long long)used,
				     (unsigned long long)written, r, ref_error(fs));
			written += chunk;
			continue;
		}
		cr_assert_eq(r, -EDQUOT,
			     "write at %llu (committed %llu, pending %llu, limit 1 MiB) = %zd, expected "
			     "EDQUOT",
			     (unsigned long long)written, (unsigned long long)used,
			     (unsigned long long)written, r);
		refused = true;
		break;
	}
	cr_assert(refused);
	cr_assert_eq(file_size(fs, "/sv/f"), written, "the refused write changed the size");
	WU_OK(fs, ref_sync(fs));
	expect_consistent(fs);
	fs = remount(fs, vol);
	expect_consistent(fs);
	cr_assert_eq(file_size(fs, "/sv/f"), written, "after a remount");
	g = qget(fs, sv);
	cr_assert_leq(g.rfer, MiB, "rfer %llu past the limit after a remount",
		      (unsigned long long)g.rfer);
	cr_assert(g.limit_flags == BTRFS_QGROUP_LIMIT_MAX_RFER && g.max_rfer == MiB,
		  "the limit after a remount: flags %#llx max %llu", (unsigned long long)g.limit_flags,
		  (unsigned long long)g.max_rfer);
	/* Up to the limit exactly, then one block more is refused. */
	uint64_t room = MiB - g.rfer;
	if (room) {
		ssize_t r = try_write(fs, "/sv/f", written, room, 4);
		cr_assert_eq(r, (ssize_t)room, "%llu bytes up to the limit exactly (rfer %llu) = %zd: %s",
			     (unsigned long long)room, (unsigned long long)g.rfer, r, ref_error(fs));
		written += room;
	}
	WU_ERR(fs, try_write(fs, "/sv/f", written, 4 * KiB, 5), EDQUOT);
	cr_assert_eq(file_size(fs, "/sv/f"), written);
	/* Overwriting in place needs new data extents (COW) too. */
	WU_ERR(fs, try_write(fs, "/sv/f", 0, 64 * KiB, 6), EDQUOT);
	/* Other subvolumes are not limited. */
	write_pattern(fs, "/big", 0, 2 * MiB, 7);
	WU_OK(fs, ref_sync(fs));
	expect_consistent(fs);
	/* A call naming no limit changes nothing (vfs.h: limits not named stay). */
	WU_OK(fs, ref_qgroup_limit(fs, sv, 0, 0, 0));
	g = qget(fs, sv);
	cr_assert(g.limit_flags == BTRFS_QGROUP_LIMIT_MAX_RFER && g.max_rfer == MiB,
		  "a call naming no limit changed it: flags %#llx max %llu",
		  (unsigned long long)g.limit_flags, (unsigned long long)g.max_rfer);
	WU_ERR(fs, try_write(fs, "/sv/f", written, 4 * KiB, 5), EDQUOT);
	/* The limit removed (a maximum of UINT64_MAX): the rest of the 2 MiB goes in. */
	WU_OK(fs, ref_qgroup_limit(fs, sv, BTRFS_QGROUP_LIMIT_MAX_RFER, UINT64_MAX, 0));
	g = qget(fs, sv);
	cr_expect_eq(g.limit_flags, 0, "flags %#llx after removing the limit",
		     (unsigned long long)g.limit_flags);
	write_pattern(fs, "/sv/f", written, 2 * MiB - written, 8);
	WU_OK(fs, ref_sync(fs));
	expect_consistent(fs);
	g = qget(fs, sv);
	cr_assert_gt(g.rfer, 2 * MiB, "rfer %llu after 2 MiB", (unsigned long long)g.rfer);
	fs = remount(fs, vol);
	cr_assert_eq(file_size(fs, "/sv/f"), 2 * MiB);
	cr_expect_eq(qget(fs, sv).limit_flags, 0, "flags after removing the limit and a remount");
	expect_consistent(fs);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* An excl limit on a snapshot: the data it shares with its source does not
 * count; overwrites in the snapshot do, up to the limit. */
Test(qgroup, limit_excl_snapshot)
{
	snprintf(qg_where, sizeof(qg_where), "excl limit");
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	WU_OK(fs, ref_qgroup_enable(fs));
	uint64_t sv, snap;
	WU_OK(fs, ref_subvol_create(fs, "/sv", &sv));
	write_pattern(fs, "/sv/f", 0, MiB, 1);
	WU_OK(fs, ref_snapshot(fs, "/sv", "/snap", false, &snap));
	uint64_t N = nodesize_of(fs);
	const uint64_t lim = 256 * KiB;
	WU_OK(fs, ref_qgroup_limit(fs, snap, BTRFS_QGROUP_LIMIT_MAX_EXCL, 0, lim));
	struct ref_qgroup s = qget(fs, snap);
	cr_assert(s.limit_flags == BTRFS_QGROUP_LIMIT_MAX_EXCL && s.max_excl == lim,
		  "flags %#llx max_excl %llu", (unsigned long long)s.limit_flags,
		  (unsigned long long)s.max_excl);
	cr_assert(s.rfer == MiB + N && s.excl == N, "snapshot: rfer %llu excl %llu",
		  (unsigned long long)s.rfer, (unsigned long long)s.excl);
	/* rfer is past the excl limit: no matter. Pending: N + 64K + 128K. */
	write_pattern(fs, "/snap/f", 0, 64 * KiB, 2);
	write_pattern(fs, "/snap/f", 128 * KiB, 128 * KiB, 3);
	/* N + 192K + 64K > 256K */
	WU_ERR(fs, try_write(fs, "/snap/f", 512 * KiB, 64 * KiB, 4), EDQUOT);
	/* The source has no limit and shares the same data. */
	write_pattern(fs, "/sv/f", 512 * KiB, 64 * KiB, 5);
	WU_OK(fs, ref_sync(fs));
	expect_consistent(fs);
	cr_assert_eq(tree_level(fs, snap), 0);
	s = qget(fs, snap);
	cr_assert(s.excl == N + 192 * KiB && s.rfer == MiB + 192 * KiB + N,
		  "snapshot after 192 KiB overwritten: rfer %llu excl %llu, expected %llu %llu",
		  (unsigned long long)s.rfer, (unsigned long long)s.excl,
		  (unsigned long long)(MiB + 192 * KiB + N), (unsigned long long)(N + 192 * KiB));
	/* Up to the limit exactly, then no more. */
	uint64_t room = lim - s.excl;
	write_pattern(fs, "/snap/f", 640 * KiB, room, 6);
	WU_ERR(fs, try_write(fs, "/snap/f", 900 * KiB, 4 * KiB, 7), EDQUOT);
	fs = remount(fs, vol);
	expect_consistent(fs);
	s = qget(fs, snap);
	cr_assert_leq(s.excl, lim, "excl %llu past the limit", (unsigned long long)s.excl);
	WU_ERR(fs, try_write(fs, "/snap/f", 900 * KiB, 4 * KiB, 7), EDQUOT);
	/* An excl limit of the source's size: the source's shared data does not
	 * count, so writes that fit pass. */
	struct ref_qgroup g = qget(fs, sv);
	WU_OK(fs, ref_qgroup_limit(fs, sv, BTRFS_QGROUP_LIMIT_MAX_EXCL, 0, g.excl + 8 * KiB));
	write_pattern(fs, "/sv/f", 0, 8 * KiB, 8);
	WU_ERR(fs, try_write(fs, "/sv/f", 16 * KiB, 4 * KiB, 9), EDQUOT);
	/* The source's limit removed, the snapshot's stays. */
	WU_OK(fs, ref_qgroup_limit(fs, sv, BTRFS_QGROUP_LIMIT_MAX_EXCL, 0, UINT64_MAX));
	write_pattern(fs, "/sv/f", 16 * KiB, 4 * KiB, 9);
	WU_ERR(fs, try_write(fs, "/snap/f", 900 * KiB, 4 * KiB, 7), EDQUOT);
	WU_OK(fs, ref_sync(fs));
	expect_consistent(fs);
	g = qget(fs, sv);
	s = qget(fs, snap);
	cr_assert(g.limit_flags == 0 && s.limit_flags == BTRFS_QGROUP_LIMIT_MAX_EXCL &&
			  s.max_excl == lim,
		  "limits: source %#llx, snapshot %#llx max_excl %llu",
		  (unsigned long long)g.limit_flags, (unsigned long long)s.limit_flags,
		  (unsigned long long)s.max_excl);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

Test(qgroup, errnos)
{
	snprintf(qg_where, sizeof(qg_where), "errnos");
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	uint64_t sv;
	WU_OK(fs, ref_subvol_create(fs, "/sv", &sv));
	WU_ERR(fs, ref_qgroup_limit(fs, sv, BTRFS_QGROUP_LIMIT_MAX_RFER, MiB, 0), ENOTCONN);
	WU_ERR(fs, ref_qgroup_limit(fs, BTRFS_FS_TREE_OBJECTID, 0, 0, 0), ENOTCONN);
	expect_list_enotconn(fs);
	/* Without quotas, nothing limits writes. */
	write_pattern(fs, "/sv/f", 0, 2 * MiB, 1);
	WU_OK(fs, ref_qgroup_enable(fs));
	WU_ERR(fs, ref_qgroup_limit(fs, 999, BTRFS_QGROUP_LIMIT_MAX_RFER, MiB, 0), ENOENT);
	WU_ERR(fs, ref_qgroup_limit(fs, sv + 1, BTRFS_QGROUP_LIMIT_MAX_RFER, MiB, 0), ENOENT);
	WU_OK(fs, ref_qgroup_limit(fs, sv, BTRFS_QGROUP_LIMIT_MAX_RFER, 4 * MiB, 0));
	expect_consistent(fs);
	fs = remount(fs, vol);
	cr_assert_eq(qget(fs, sv).max_rfer, 4 * MiB);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* ---- Crash states ---- */

static uint64_t crash_enabled_gen;
static int crash_counted, crash_states_seen; /* states with quotas on, all states */

static void crash_first(ref_fs *fs)
{
	WU_OK(fs, ref_qgroup_enable(fs));
	crash_enabled_gen = LE64(ref_super(fs)->generation);
}

static void crash_state(ref_fs *fs, size_t cut, bool cleaned)
{
	snprintf(qg_where, sizeof(qg_where), "crash state at cut %zu%s", cut,
		 cleaned ? ", the cleaner finished" : "");
	uint64_t gen = LE64(ref_super(fs)->generation);
	crash_states_seen += !cleaned;
	bool on;
	uint64_t flags;
	WU_OK(fs, ref_qgroup_status(fs, &on, &flags));
	if (gen >= crash_enabled_gen)
		cr_assert(on, "%s: generation %llu, quotas enabled at %llu, yet off", qg_where,
			  (unsigned long long)gen, (unsigned long long)crash_enabled_gen);
	if (!on) /* a state before the enabling */
		return;
	/* A state inside the enabling (were it more than one commit) may say
	 * its numbers are not counted yet; any other has them right. */
	if (gen < crash_enabled_gen &&
	    (flags & (BTRFS_QGROUP_STATUS_FLAG_RESCAN | BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT)))
		return;
	expect_consistent(fs);
	crash_counted += !cleaned;
}

Test(qgroup, crash_states)
{
	struct sm_crash_hooks h = { .first = crash_first, .state = crash_state };
	sm_crash_states(&h);
	/* Quotas are enabled at the first recorded commit: most states have them. */
	cr_assert_gt(crash_counted, crash_states_seen / 2, "%d of %d crash states with quotas on",
		     crash_counted, crash_states_seen);
}

/* ---- Bad input ---- */

/* The leaf of an item rebuilt with item `slot` `delta` bytes longer (its
 * data cut or padded with zeros), every item's data packed again. */
static void resize_item(const char *img, const struct iu_item *it, int delta)
{
	uint32_t ns;
	uint8_t *old = iu_read_block(img, it->leaf, &ns);
	uint8_t *nb = calloc(1, ns);
	cr_assert(nb);
	const size_t hs = sizeof(struct btrfs_header_disk);
	memcpy(nb, old, hs);
	uint32_t n = le32(old + offsetof(struct btrfs_header_disk, nritems));
	uint32_t end = ns - (uint32_t)hs;
	for (uint32_t i = 0; i < n; i++) {
		const struct btrfs_item_disk *oi = (const void *)(old + hs + i * sizeof(*oi));
		struct btrfs_item_disk *ni = (void *)(nb + hs + i * sizeof(*ni));
		uint32_t osize = LE32(oi->size);
		uint32_t size = (int)i == it->slot ? (uint32_t)((int)osize + delta) : osize;
		end -= size;
		*ni = *oi;
		uint8_t le[4] = { (uint8_t)end, (uint8_t)(end >> 8), (uint8_t)(end >> 16),
				  (uint8_t)(end >> 24) };
		memcpy(&ni->offset, le, 4);
		uint8_t ls[4] = { (uint8_t)size, (uint8_t)(size >> 8), (uint8_t)(size >> 16),
				  (uint8_t)(size >> 24) };
		memcpy(&ni->size, ls, 4);
		memcpy(nb + hs + end, old + hs + LE32(oi->offset), size < osize ? size : osize);
	}
	iu_patch_block(img, it->leaf, 0, nb, ns, true);
	free(old);
	free(nb);
}

/* An image with quotas on, /sv and a limit, saved to a file. */
static void quota_image(char *img, size_t len)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	WU_OK(fs, ref_qgroup_enable(fs));
	uint64_t sv;
	WU_OK(fs, ref_subvol_create(fs, "/sv", &sv));
	write_pattern(fs, "/sv/f", 0, 200 * KiB, 1);
	WU_OK(fs, ref_qgroup_limit(fs, sv, BTRFS_QGROUP_LIMIT_MAX_RFER, MiB, 0));
	WU_OK(fs, ref_umount(fs));
	snprintf(img, len, "/tmp/btrsim-qg-XXXXXX");
	int fd = mkstemp(img);
	cr_assert(fd >= 0);
	close(fd);
	cr_assert_eq(sim_disk_save_image(vol, 0, img), 0);
	sim_volume_close(vol);
}

/* Opened read-only, a damaged quota tree gives EUCLEAN from the list;
 * mounting for writing gives an error or the same EUCLEAN, never a crash. */
static void expect_euclean(const char *img, const char *what)
{
	struct iu_opened o = iu_open(img);
	struct ref_qgroup *l = NULL;
	size_t n;
	int r = ref_qgroup_list(o.fs, &l, &n);
	if (r >= 0)
		free(l);
	bool on;
	uint64_t flags;
	(void)ref_qgroup_status(o.fs, &on, &flags); /* any answer, no crash */
	iu_close(&o);
	cr_expect_eq(r, -EUCLEAN, "%s: ref_qgroup_list = %d (%s)", what, r, strerror(-r));

	struct sim_volume_config cfg;
	sim_config_init(&cfg, 1, 0, 0);
	cfg.latency = (struct sim_latency){ 0 };
	cfg.disk[0].image_path = img;
	cfg.disk[0].sector_size = 4096;
	sim_volume *vol;
	char err[256] = "";
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), 0, "%s", err);
	ref_fs *fs;
	if (ref_mount(vol, NULL, &fs, err, sizeof(err)) == 0) {
		r = ref_qgroup_list(fs, &l, &n);
		if (r >= 0)
			free(l);
		(void)try_write(fs, "/sv/f", 0, 4 * KiB, 2);
		(void)ref_umount(fs);
		cr_expect_eq(r, -EUCLEAN, "%s: mounted, ref_qgroup_list = %d", what, r);
	}
	sim_volume_close(vol);
}

Test(qgroup, corrupt_short_items)
{
	char img[64];
	quota_image(img, sizeof(img));
	struct iu_item it = iu_item(img, BTRFS_QUOTA_TREE_OBJECTID, 0, BTRFS_QGROUP_INFO_KEY,
				    BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(it.size, sizeof(struct btrfs_qgroup_info_item));
	resize_item(img, &it, -8);
	expect_euclean(img, "an info item 8 bytes short");
	unlink(img);

	quota_image(img, sizeof(img));
	it = iu_item(img, BTRFS_QUOTA_TREE_OBJECTID, 0, BTRFS_QGROUP_LIMIT_KEY, 256);
	resize_item(img, &it, -20);
	expect_euclean(img, "a limit item 20 bytes short");
	unlink(img);
}

/* An info item of the wrong size the other way: 8 bytes too long. */
Test(qgroup, corrupt_long_info_item)
{
	char img[64];
	quota_image(img, sizeof(img));
	struct iu_item it = iu_item(img, BTRFS_QUOTA_TREE_OBJECTID, 0, BTRFS_QGROUP_INFO_KEY, 256);
	cr_assert_eq(it.size, sizeof(struct btrfs_qgroup_info_item));
	resize_item(img, &it, 8);
	expect_euclean(img, "an info item 8 bytes long");
	unlink(img);
}

/* A snapshot deleted and its cleaner half-way while its source keeps
 * changing (4 KiB nodes: the source's files spread over many leaves, some
 * already released by the cleaner, some still shared); then a second
 * snapshot taken with the first still dropping. */
Test(qgroup, source_changes_while_cleaner_runs)
{
	snprintf(qg_where, sizeof(qg_where), "cleaner half-way");
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 4096);
	char p[32];
	for (int i = 0; i < 120; i++) {
		snprintf(p, sizeof(p), "/f%d", i);
		write_pattern(fs, p, 0, 5000 + (size_t)i * 10, (uint64_t)i + 1);
	}
	WU_OK(fs, ref_qgroup_enable(fs));
	WU_OK(fs, ref_snapshot(fs, "/", "/s1", true, NULL));
	WU_OK(fs, ref_subvol_delete(fs, "/s1"));
	expect_consistent(fs);
	WU_OK(fs, ref_sync(fs)); /* one cleaner step */
	snprintf(qg_where, sizeof(qg_where), "cleaner half-way: one step");
	expect_consistent(fs);
	for (int i = 0; i < 120; i += 7) {
		snprintf(p, sizeof(p), "/f%d", i);
		write_pattern(fs, p, 100, 3000, 1000 + (uint64_t)i);
		WU_OK(fs, ref_sync(fs));
		snprintf(qg_where, sizeof(qg_where), "cleaner half-way: /f%d rewritten", i);
		expect_consistent(fs);
	}
	WU_OK(fs, ref_snapshot(fs, "/", "/s2", false, NULL));
	snprintf(qg_where, sizeof(qg_where), "cleaner half-way: second snapshot");
	expect_consistent(fs);
	WU_OK(fs, ref_subvol_delete(fs, "/s2"));
	expect_consistent(fs);
	for (int i = 3; i < 120; i += 11) {
		snprintf(p, sizeof(p), "/f%d", i);
		WU_OK(fs, ref_truncate(fs, p, 1000));
		WU_OK(fs, ref_sync(fs));
		snprintf(qg_where, sizeof(qg_where), "cleaner half-way: /f%d truncated", i);
		expect_consistent(fs);
	}
	WU_OK(fs, ref_subvol_sync(fs));
	snprintf(qg_where, sizeof(qg_where), "cleaner half-way: the cleaner finished");
	expect_consistent(fs);
	struct ref_qgroup top = qget(fs, BTRFS_FS_TREE_OBJECTID);
	cr_assert_eq(top.rfer, top.excl, "the top level alone: rfer %llu excl %llu",
		     (unsigned long long)top.rfer, (unsigned long long)top.excl);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* ---- Reductions of random-mix failures (the mix's first steps: 24 empty
 * files in the top level of a 4 KiB-node file system) ---- */

static ref_fs *mix_like_fs(sim_volume **vol)
{
	ref_fs *fs = wu_fresh(vol, 512, 4096);
	char p[32];
	for (int f = 0; f < SM_NF; f++) {
		snprintf(p, sizeof(p), "/f%d", f);
		WU_OK(fs, ref_create(fs, p, 0644));
	}
	WU_OK(fs, ref_qgroup_enable(fs));
	return fs;
}

/* A snapshot of a snapshot lets go of a data extent the other two still
 * share: its rfer falls by the extent (seed 1's failure, reduced). */
Test(qgroup, extent_dropped_in_snapshot_of_snapshot)
{
	snprintf(qg_where, sizeof(qg_where), "snapshot of a snapshot");
	sim_volume *vol;
	ref_fs *fs = mix_like_fs(&vol);
	write_pattern(fs, "/f22", 76464, 10120, 1); /* one 16 KiB extent */
	uint64_t a, b;
	WU_OK(fs, ref_snapshot(fs, "/", "/s7", false, &a));
	WU_OK(fs, ref_snapshot(fs, "/s7", "/s10", false, &b));
	expect_consistent(fs);
	WU_OK(fs, ref_truncate(fs, "/s10/f22", 62556)); /* below the extent: dropped */
	WU_OK(fs, ref_sync(fs));
	struct ref_qgroup g = qget(fs, b);
	cr_expect_eq(g.rfer % nodesize_of(fs), 0,
		     "0/%llu reaches no data extent any more, yet rfer %llu is not whole blocks",
		     (unsigned long long)b, (unsigned long long)g.rfer);
	expect_consistent(fs);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* A snapshot deleted and freed by the cleaner, then the source changes a
 * block the two had shared: the deleted group holds nothing, the source
 * holds all it reaches alone (seed 0x5eed's failure, reduced). */
Test(qgroup, cow_after_the_cleaner)
{
	snprintf(qg_where, sizeof(qg_where), "COW after the cleaner");
	sim_volume *vol;
	ref_fs *fs = mix_like_fs(&vol);
	write_pattern(fs, "/f19", 10437, 3643, 1);
	uint64_t id;
	WU_OK(fs, ref_snapshot(fs, "/", "/s2", false, &id));
	WU_OK(fs, ref_subvol_delete(fs, "/s2"));
	WU_OK(fs, ref_sync(fs)); /* the cleaner */
	expect_consistent(fs);
	WU_OK(fs, ref_truncate(fs, "/f21", 84384));
	WU_OK(fs, ref_sync(fs));
	struct ref_qgroup *l;
	size_t n;
	WU_OK(fs, ref_qgroup_list(fs, &l, &n));
	const struct ref_qgroup *top = qfind(l, n, BTRFS_FS_TREE_OBJECTID), *gone = qfind(l, n, id);
	cr_expect(top && top->rfer == top->excl, "the top level alone: rfer %llu excl %llu",
		  top ? (unsigned long long)top->rfer : 0ULL,
		  top ? (unsigned long long)top->excl : 0ULL);
	cr_expect(!gone || (gone->rfer == 0 && gone->excl == 0),
		  "0/%llu freed by the cleaner, yet rfer %llu excl %llu", (unsigned long long)id,
		  gone ? (unsigned long long)gone->rfer : 0ULL,
		  gone ? (unsigned long long)gone->excl : 0ULL);
	free(l);
	expect_consistent(fs);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* A snapshot takes its source's limits (btrfs_qgroup_inherit), and they hold
 * on it. */
Test(qgroup, snapshot_inherits_limits)
{
	snprintf(qg_where, sizeof(qg_where), "limits inherited");
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	WU_OK(fs, ref_qgroup_enable(fs));
	uint64_t sv, snap;
	WU_OK(fs, ref_subvol_create(fs, "/sv", &sv));
	WU_OK(fs, ref_qgroup_limit(fs, sv, BTRFS_QGROUP_LIMIT_MAX_RFER | BTRFS_QGROUP_LIMIT_MAX_EXCL,
				   MiB, 512 * KiB));
	WU_OK(fs, ref_snapshot(fs, "/sv", "/snap", false, &snap));
	struct ref_qgroup s = qget(fs, snap);
	cr_assert(s.limit_flags == (BTRFS_QGROUP_LIMIT_MAX_RFER | BTRFS_QGROUP_LIMIT_MAX_EXCL) &&
			  s.max_rfer == MiB && s.max_excl == 512 * KiB,
		  "snapshot's limits: flags %#llx max_rfer %llu max_excl %llu",
		  (unsigned long long)s.limit_flags, (unsigned long long)s.max_rfer,
		  (unsigned long long)s.max_excl);
	WU_OK(fs, ref_create(fs, "/snap/f", 0644));
	cr_assert_eq(try_write(fs, "/snap/f", 0, MiB, 1), -EDQUOT, "%s", ref_error(fs));
	expect_consistent(fs);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* Near the limit, a deletion in the running transaction frees room for a
 * write after it: the transaction is committed before EDQUOT is given (the
 * kernel's try_flush_qgroup). */
Test(qgroup, limit_counts_a_deletion_first)
{
	snprintf(qg_where, sizeof(qg_where), "deletion before a write at the limit");
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	WU_OK(fs, ref_qgroup_enable(fs));
	uint64_t sv;
	WU_OK(fs, ref_subvol_create(fs, "/sv", &sv));
	WU_OK(fs, ref_qgroup_limit(fs, sv, BTRFS_QGROUP_LIMIT_MAX_RFER, MiB, 0));
	WU_OK(fs, ref_create(fs, "/sv/a", 0644));
	cr_assert_eq(try_write(fs, "/sv/a", 0, 768 * KiB, 1), (ssize_t)(768 * KiB), "%s", ref_error(fs));
	WU_OK(fs, ref_sync(fs));
	WU_OK(fs, ref_unlink(fs, "/sv/a"));
	WU_OK(fs, ref_create(fs, "/sv/b", 0644));
	cr_assert_eq(try_write(fs, "/sv/b", 0, 768 * KiB, 2), (ssize_t)(768 * KiB),
		     "a write the deletion made room for: %s", ref_error(fs));
	WU_OK(fs, ref_sync(fs));
	expect_consistent(fs);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* ---- Numbers gone stale (as a kernel's can when its drop of a shared node
 * spans two commits) ---- */

static ref_fs *mount_image(const char *img, sim_volume **vol)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 1, 0, 0);
	cfg.latency = (struct sim_latency){ 0 };
	cfg.disk[0].image_path = img;
	cfg.disk[0].sector_size = 4096;
	char err[256] = "";
	cr_assert_eq(sim_volume_open(&cfg, vol, err, sizeof(err)), 0, "%s", err);
	ref_fs *fs;
	cr_assert_eq(ref_mount(*vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	return fs;
}

static uint64_t status_flags(ref_fs *fs)
{
	bool on;
	uint64_t flags;
	WU_OK(fs, ref_qgroup_status(fs, &on, &flags));
	cr_assert(on);
	return flags;
}

/* /sv's group says 64 KiB more than it reaches.  Once /sv is deleted and
 * dropped, its group goes and the 64 KiB left in it mark the numbers
 * inconsistent (Linux 6.18's btrfs_remove_qgroup); a rescan counts them
 * right again and clears the flag. */
Test(qgroup, stale_numbers_of_a_dropped_group)
{
	char img[64];
	quota_image(img, sizeof(img));
	struct iu_item it = iu_item(img, BTRFS_QUOTA_TREE_OBJECTID, 0, BTRFS_QGROUP_INFO_KEY, 256);
	struct btrfs_qgroup_info_item info;
	cr_assert_eq(it.size, sizeof(info));
	uint8_t *leaf = iu_read_block(img, it.leaf, &(uint32_t){ 0 });
	memcpy(&info, leaf + it.data_off, sizeof(info));
	free(leaf);
	uint64_t stale = LE64(info.rfer) + 64 * KiB;
	info.rfer = info.rfer_cmpr = htole64(stale);
	iu_patch_item(img, &it, 0, &info, sizeof(info));

	sim_volume *vol;
	ref_fs *fs = mount_image(img, &vol);
	snprintf(qg_where, sizeof(qg_where), "stale numbers");
	cr_assert_eq(qget(fs, 256).rfer, stale);
	cr_assert_eq(status_flags(fs) & BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT, 0);
	WU_OK(fs, ref_subvol_delete(fs, "/sv"));
	WU_OK(fs, ref_subvol_sync(fs));
	cr_assert(status_flags(fs) & BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT,
		  "64 KiB left in a dropped group, yet the numbers are not marked inconsistent");
	struct ref_qgroup *l;
	size_t n;
	WU_OK(fs, ref_qgroup_list(fs, &l, &n));
	cr_assert_null(qfind(l, n, 256), "the dropped subvolume's group is still there");
	free(l);
	WU_OK(fs, ref_qgroup_rescan(fs));
	snprintf(qg_where, sizeof(qg_where), "after the rescan");
	expect_on(fs);
	expect_consistent(fs);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
	unlink(img);
}

Test(qgroup, rescan_needs_quotas)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	cr_assert_eq(ref_qgroup_rescan(fs), -ENOTCONN);
	WU_OK(fs, ref_qgroup_enable(fs));
	write_pattern(fs, "/f", 0, 100 * KiB, 1);
	WU_OK(fs, ref_qgroup_rescan(fs));
	expect_on(fs);
	expect_consistent(fs);
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(vol);
}
