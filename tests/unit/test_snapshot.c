/*
 * test_snapshot.c - subvolumes and snapshots on memory volumes: a seeded
 * random mix of writes, truncates, snapshots (read-write and read-only),
 * deletions and cleaner runs over many subvolumes sharing deep trees (4 KiB
 * nodes), checked against a model of every file's bytes; the refcounts
 * found from all trees equal the extent items' (ref_check) throughout,
 * across remounts with the cleaner half-way, and `btrfs check` agrees at
 * the end.  Plus the errnos of bad calls.
 */
#include "snapmix.h"
#include "wrutil.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(snapshot);

/* The random mix (snapmix.c): verified every 50 operations, then at the end. */
static void run_random(uint64_t seed, int ops)
{
	struct sm_mix *m = sm_start(seed);
	for (int op = 0; op < ops; op++) {
		if (sm_step(m) == SM_SKIPPED)
			continue;
		if (op % 50 == 49)
			sm_verify(m->fs, m->subs, m->n);
	}
	sm_finish(m);
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
 * clean (snapmix.c).
 */
Test(snapshot, crash_states)
{
	sm_crash_states(NULL);
}
