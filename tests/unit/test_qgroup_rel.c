/*
 * test_qgroup_rel.c - quota groups above level 0: groups made, destroyed and
 * related (ref_qgroup_create / _destroy / _assign), their numbers, limits and
 * errnos as Linux 6.18 has them.
 *
 * After every change the groups the quota tree holds (ref_qgroup_list) equal
 * ref's recount (ref_qgroup_recount) and the tests' own count (qgcount.c), at
 * every level.  Checked: a relation of a subvolume whose numbers are all
 * exclusive moves them into the parent and the grandparent at once (the
 * kernel's quick update), one that shares extents marks the numbers stale and
 * a rescan fixes them; a snapshot of a member marks them stale and the next
 * mount counts again; a limit of a group above level 0 refuses writes in
 * every subvolume below it and none elsewhere; the errnos; groups and
 * relations survive a remount and btrfs check recounts them equal; and seeded
 * random mixes of writes, snapshots, deletions, the cleaner and remounts
 * (snapmix.c) with groups made, related and destroyed on the way.
 */
#include "qgcount.h"
#include "snapmix.h"
#include "wrutil.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(qgroup_rel);

#define MiB (1024ULL * 1024)
#define QG(level, id) ((uint64_t)(level) << BTRFS_QGROUP_LEVEL_SHIFT | (id))

static bool stale(ref_fs *fs)
{
	bool on;
	uint64_t flags;
	WU_OK(fs, ref_qgroup_status(fs, &on, &flags));
	cr_assert(on, "%s: quotas off", qg_where);
	return flags & BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT;
}

/* The list, the recount and the test's count agree on every group of every
 * level, and the numbers are not marked stale. */
static void expect_counted(ref_fs *fs)
{
	cr_assert(!stale(fs), "%s: numbers marked inconsistent", qg_where);
	struct ref_qgroup *l, *rc, *q;
	size_t nl, nrc, nq;
	WU_OK(fs, ref_qgroup_list(fs, &l, &nl));
	WU_OK(fs, ref_qgroup_recount(fs, &rc, &nrc));
	q = qcount(fs, &nq, NULL);
	for (size_t i = 0; i < nl; i++) {
		const struct ref_qgroup *b = qfind(rc, nrc, l[i].id), *c = qfind(q, nq, l[i].id);
		uint64_t id = l[i].id & ((1ULL << BTRFS_QGROUP_LEVEL_SHIFT) - 1);
		if (!c) { /* a group of a subvolume that is gone, or one made ahead */
			cr_assert(!btrfs_qgroup_level(l[i].id) && !l[i].rfer && !l[i].excl,
				  "%s: %u/%llu counts rfer %llu excl %llu for nothing", qg_where,
				  btrfs_qgroup_level(l[i].id), (unsigned long long)id,
				  (unsigned long long)l[i].rfer, (unsigned long long)l[i].excl);
			continue;
		}
		cr_assert(b, "%s: %u/%llu missing from the recount", qg_where,
			  btrfs_qgroup_level(l[i].id), (unsigned long long)id);
		cr_assert(l[i].rfer == c->rfer && l[i].excl == c->excl && b->rfer == c->rfer &&
				  b->excl == c->excl,
			  "%s: %u/%llu: list rfer %llu excl %llu, recount %llu %llu, test's count %llu %llu",
			  qg_where, btrfs_qgroup_level(l[i].id), (unsigned long long)id,
			  (unsigned long long)l[i].rfer, (unsigned long long)l[i].excl,
			  (unsigned long long)b->rfer, (unsigned long long)b->excl,
			  (unsigned long long)c->rfer, (unsigned long long)c->excl);
	}
	free(l);
	free(rc);
	free(q);
}

static struct ref_qgroup get(ref_fs *fs, uint64_t id)
{
	struct ref_qgroup *l;
	size_t n;
	WU_OK(fs, ref_qgroup_list(fs, &l, &n));
	const struct ref_qgroup *q = qfind(l, n, id);
	cr_assert(q, "%s: no group %llx", qg_where, (unsigned long long)id);
	struct ref_qgroup g = *q;
	free(l);
	return g;
}

static void put_file(ref_fs *fs, const char *path, size_t len, uint64_t tag)
{
	uint8_t *buf = tu_pat(len, tag);
	WU_OK(fs, ref_create(fs, path, 0644));
	WU_OK(fs, ref_write(fs, path, buf, len, 0));
	free(buf);
}

/* Subvolumes /a (256) and /b (257) with a 1 MiB file each, /c (258) a
 * snapshot of /a, quotas on. */
static ref_fs *three(sim_volume **vol)
{
	ref_fs *fs = wu_fresh(vol, 256, 0);
	uint64_t id;
	WU_OK(fs, ref_subvol_create(fs, "/a", &id));
	WU_OK(fs, ref_subvol_create(fs, "/b", &id));
	put_file(fs, "/a/f", MiB, 1);
	put_file(fs, "/b/f", MiB, 2);
	WU_OK(fs, ref_qgroup_enable(fs));
	WU_OK(fs, ref_snapshot(fs, "/a", "/c", false, &id));
	snprintf(qg_where, sizeof(qg_where), "three subvolumes");
	expect_counted(fs);
	return fs;
}

Test(qgroup_rel, quick_update_and_rescan)
{
	sim_volume *vol;
	ref_fs *fs = three(&vol);
	WU_OK(fs, ref_qgroup_create(fs, QG(1, 1)));
	WU_OK(fs, ref_qgroup_create(fs, QG(2, 1)));
	WU_OK(fs, ref_qgroup_assign(fs, QG(1, 1), QG(2, 1), true));
	/* /b shares nothing: its numbers move up at once, to both levels. */
	struct ref_qgroup b = get(fs, 257);
	cr_assert_eq(b.rfer, b.excl);
	cr_assert_eq(ref_qgroup_assign(fs, 257, QG(1, 1), true), 0);
	snprintf(qg_where, sizeof(qg_where), "/b assigned to 1/1 (in 2/1)");
	expect_counted(fs);
	cr_assert_eq(get(fs, QG(1, 1)).rfer, b.rfer);
	cr_assert_eq(get(fs, QG(2, 1)).excl, b.excl);
	/* /a shares its file with /c: the numbers go stale (1), a rescan. */
	cr_assert_eq(ref_qgroup_assign(fs, 256, QG(1, 1), true), 1);
	cr_assert(stale(fs));
	WU_OK(fs, ref_qgroup_rescan(fs));
	snprintf(qg_where, sizeof(qg_where), "/a assigned, rescanned");
	expect_counted(fs);
	struct ref_qgroup g = get(fs, QG(1, 1)), a = get(fs, 256);
	cr_assert_eq(g.rfer, a.rfer + b.rfer);
	cr_assert_lt(g.excl, g.rfer, "the file /a shares with /c is not 1/1's alone");
	/* With /c too, everything below 1/1 is its own. */
	cr_assert_eq(ref_qgroup_assign(fs, 258, QG(1, 1), true), 1);
	WU_OK(fs, ref_qgroup_rescan(fs));
	snprintf(qg_where, sizeof(qg_where), "/c assigned, rescanned");
	expect_counted(fs);
	g = get(fs, QG(1, 1));
	cr_assert_eq(g.rfer, g.excl);
	cr_assert_geq(g.rfer, 2 * MiB);
	/* Writes in members move the parents with them at each commit. */
	put_file(fs, "/c/new", 300000, 3);
	put_file(fs, "/b/new", 200000, 4);
	WU_OK(fs, ref_sync(fs));
	snprintf(qg_where, sizeof(qg_where), "writes in members");
	expect_counted(fs);
	/* Removing /b (all exclusive) moves its numbers out at once. */
	b = get(fs, 257);
	cr_assert_eq(b.rfer, b.excl);
	g = get(fs, QG(2, 1));
	cr_assert_eq(ref_qgroup_assign(fs, 257, QG(1, 1), false), 0);
	cr_assert_eq(get(fs, QG(2, 1)).rfer, g.rfer - b.rfer);
	snprintf(qg_where, sizeof(qg_where), "/b removed from 1/1");
	expect_counted(fs);
	/* Kept across a remount; btrfs check recounts every level equal. */
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	struct ref_mount_opts mo = { 0 };
	char err[256];
	cr_assert_eq(ref_mount(vol, &mo, &fs, err, sizeof(err)), 0, "%s", err);
	snprintf(qg_where, sizeof(qg_where), "remounted");
	expect_counted(fs);
	struct ref_qgroup_rel *rel;
	size_t nrel;
	WU_OK(fs, ref_qgroup_relations(fs, &rel, &nrel));
	cr_assert_eq(nrel, 3);
	cr_assert(rel[0].child == 256 && rel[0].parent == QG(1, 1));
	cr_assert(rel[1].child == 258 && rel[1].parent == QG(1, 1));
	cr_assert(rel[2].child == QG(1, 1) && rel[2].parent == QG(2, 1));
	free(rel);
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(vol);
}

Test(qgroup_rel, errnos)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 128, 0);
	uint64_t id;
	WU_ERR(fs, ref_qgroup_create(fs, QG(1, 1)), ENOTCONN);
	WU_ERR(fs, ref_qgroup_assign(fs, 5, QG(1, 1), true), ENOTCONN);
	WU_OK(fs, ref_subvol_create(fs, "/a", &id));
	WU_OK(fs, ref_qgroup_enable(fs));
	WU_OK(fs, ref_qgroup_create(fs, QG(1, 1)));
	WU_ERR(fs, ref_qgroup_create(fs, QG(1, 1)), EEXIST);
	WU_ERR(fs, ref_qgroup_create(fs, 256), EEXIST);
	WU_OK(fs, ref_qgroup_create(fs, QG(1, 2)));
	WU_ERR(fs, ref_qgroup_assign(fs, QG(1, 2), QG(1, 1), true), EINVAL); /* same level */
	WU_ERR(fs, ref_qgroup_assign(fs, QG(1, 1), 256, true), EINVAL);      /* lower */
	WU_ERR(fs, ref_qgroup_assign(fs, 300, QG(1, 1), true), EINVAL);      /* no 0/300 */
	WU_ERR(fs, ref_qgroup_assign(fs, 256, QG(1, 9), true), EINVAL);      /* no 1/9 */
	WU_OK(fs, ref_qgroup_assign(fs, 256, QG(1, 1), true));
	WU_ERR(fs, ref_qgroup_assign(fs, 256, QG(1, 1), true), EEXIST);
	WU_ERR(fs, ref_qgroup_assign(fs, 256, QG(1, 2), false), ENOENT);
	WU_ERR(fs, ref_qgroup_destroy(fs, QG(1, 1)), EBUSY); /* has a member */
	WU_ERR(fs, ref_qgroup_destroy(fs, 256), EBUSY);      /* its subvolume counts */
	WU_ERR(fs, ref_qgroup_destroy(fs, QG(3, 3)), ENOENT);
	/* A group made ahead for subvolume 300 counts nothing: it may go. */
	WU_OK(fs, ref_qgroup_create(fs, 300));
	WU_OK(fs, ref_qgroup_assign(fs, 300, QG(1, 2), true));
	WU_OK(fs, ref_qgroup_destroy(fs, 300));
	struct ref_qgroup_rel *rel;
	size_t nrel;
	WU_OK(fs, ref_qgroup_relations(fs, &rel, &nrel));
	cr_assert_eq(nrel, 1, "the destroyed group's relation went with it");
	free(rel);
	WU_OK(fs, ref_qgroup_assign(fs, 256, QG(1, 1), false));
	WU_OK(fs, ref_qgroup_destroy(fs, QG(1, 1)));
	snprintf(qg_where, sizeof(qg_where), "errnos");
	expect_counted(fs);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

Test(qgroup_rel, limit_above_level_0)
{
	sim_volume *vol;
	ref_fs *fs = three(&vol);
	WU_OK(fs, ref_qgroup_create(fs, QG(1, 1)));
	WU_OK(fs, ref_qgroup_assign(fs, 257, QG(1, 1), true));
	struct ref_qgroup g = get(fs, QG(1, 1));
	WU_OK(fs, ref_qgroup_limit(fs, QG(1, 1), BTRFS_QGROUP_LIMIT_MAX_RFER, g.rfer + MiB / 2, 0));
	uint8_t *buf = tu_pat(MiB, 9);
	WU_OK(fs, ref_create(fs, "/b/big", 0644));
	WU_ERR(fs, ref_write(fs, "/b/big", buf, MiB, 0), EDQUOT);
	cr_assert(strstr(ref_error(fs), "1/1"), "the message names the group: %s", ref_error(fs));
	WU_OK(fs, ref_write(fs, "/b/big", buf, MiB / 4, 0)); /* under it */
	WU_OK(fs, ref_create(fs, "/a/big", 0644));
	WU_OK(fs, ref_write(fs, "/a/big", buf, MiB, 0)); /* /a is not below 1/1 */
	free(buf);
	WU_OK(fs, ref_sync(fs));
	snprintf(qg_where, sizeof(qg_where), "limit of 1/1");
	expect_counted(fs);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

Test(qgroup_rel, snapshot_of_a_member)
{
	sim_volume *vol;
	ref_fs *fs = three(&vol);
	uint64_t id;
	WU_OK(fs, ref_qgroup_create(fs, QG(1, 1)));
	WU_OK(fs, ref_qgroup_assign(fs, 257, QG(1, 1), true));
	WU_OK(fs, ref_snapshot(fs, "/b", "/b2", false, &id));
	cr_assert(stale(fs), "a snapshot of a member leaves the numbers stale, as the kernel's");
	WU_OK(fs, ref_umount(fs));
	struct ref_mount_opts mo = { 0 };
	char err[256];
	cr_assert_eq(ref_mount(vol, &mo, &fs, err, sizeof(err)), 0, "%s", err);
	WU_OK(fs, ref_sync(fs)); /* (the status item says so once committed) */
	snprintf(qg_where, sizeof(qg_where), "counted again at mount");
	expect_counted(fs);
	cr_assert_lt(get(fs, QG(1, 1)).excl, get(fs, QG(1, 1)).rfer);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* ---- Random mixes with groups ---- */

struct gmix {
	uint64_t rng;
	int op;
};

static void gmix_check(struct sm_mix *m, enum sm_kind kind)
{
	struct gmix *g = m->ctx;
	snprintf(qg_where, sizeof(qg_where), "op %d, after step kind %d", g->op, (int)kind);
	/* (A snapshot of a member leaves the numbers stale, by rule.) */
	if (kind == SM_SNAPSHOT && stale(m->fs))
		WU_OK(m->fs, ref_qgroup_rescan(m->fs));
	expect_counted(m->fs);
}

/* One change of the groups: made, related, unrelated or destroyed. */
static void group_op(struct sm_mix *m, struct gmix *g)
{
	static const uint64_t above[] = { QG(1, 1), QG(1, 2), QG(1, 3), QG(2, 1), QG(2, 2), QG(3, 7) };
	struct ref_qgroup *l;
	size_t n;
	WU_OK(m->fs, ref_qgroup_list(m->fs, &l, &n));
	uint64_t x = sm_rnd(&g->rng);
	uint64_t parent = above[x % 6], child = l[(x >> 8) % n].id;
	int r;
	switch ((x >> 16) % 5) {
	case 0:
		r = ref_qgroup_create(m->fs, parent);
		break;
	case 1:
	case 2:
		r = ref_qgroup_assign(m->fs, child, parent, true);
		break;
	case 3:
		r = ref_qgroup_assign(m->fs, child, parent, false);
		break;
	default:
		r = ref_qgroup_destroy(m->fs, parent);
		break;
	}
	if (m->trace)
		fprintf(m->trace, "%d: group op %llu on %llx %llx: %d\n", g->op,
			(unsigned long long)((x >> 16) % 5), (unsigned long long)child,
			(unsigned long long)parent, r);
	cr_assert(r >= 0 || r == -EEXIST || r == -EINVAL || r == -ENOENT || r == -EBUSY,
		  "op %d: group op: %d (%s)", g->op, r, ref_error(m->fs));
	free(l);
	if (r == 1)
		WU_OK(m->fs, ref_qgroup_rescan(m->fs));
	snprintf(qg_where, sizeof(qg_where), "op %d, after a group op", g->op);
	expect_counted(m->fs);
}

static void run_gmix(uint64_t seed, int ops)
{
	fprintf(stderr, "qgroup relation mix: seed %llu (%#llx), %d operations\n",
		(unsigned long long)seed, (unsigned long long)seed, ops);
	struct gmix g = { .rng = seed * 0x9e3779b97f4a7c15ULL | 1 };
	struct sm_mix *m = sm_start(seed);
	m->ctx = &g;
	if (getenv("QG_TRACE"))
		m->trace = stderr;
	WU_OK(m->fs, ref_qgroup_enable(m->fs));
	m->on_commit = gmix_check;
	for (g.op = 0; g.op < ops; g.op++) {
		enum sm_kind k = sm_step(m);
		if (sm_rnd(&g.rng) % 4 == 0)
			group_op(m, &g);
		else if ((k == SM_WRITE || k == SM_TRUNCATE) && sm_rnd(&g.rng) % 6 == 0) {
			WU_OK(m->fs, ref_sync(m->fs));
			gmix_check(m, k);
		}
	}
	snprintf(qg_where, sizeof(qg_where), "the end");
	sm_finish(m);
}

Test(qgroup_rel, random_mix_seed_1)
{
	run_gmix(1, 300);
}

Test(qgroup_rel, random_mix_seed_2)
{
	run_gmix(0xfeed, 300);
}

Test(qgroup_rel, random_mix_seed_3)
{
	run_gmix(424242, 300);
}
