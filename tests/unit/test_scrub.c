/*
 * test_scrub.c - ref_scrub on memory volumes of every redundant profile:
 * damage of each kind placed on one copy (a data sector scribbled, a tree
 * block scribbled, a latent sector error, a RAID5/6 parity sector, a
 * superblock copy) is found on the right device and counted as btrfs scrub
 * counts it; a read-only scrub writes nothing and counts what it could mend
 * as corrected; a scrub mounted for writing mends it, so that a second scrub
 * finds nothing and every file reads right.  Damage on every copy is
 * uncorrectable.  (tests/interop/test_scrub.sh compares the counters with
 * the kernel's scrub on the same damaged images.)
 */
#include "testutil.h"
#include "wrutil.h"
#include "ref/internal.h"
#include "ref/mkfs.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (UINT64_C(1) << 20)
#define FILE_LEN (300 * 1024)
#define NF 6

TestSuite(scrub);

#define DUP BTRFS_BLOCK_GROUP_DUP
#define RAID1 BTRFS_BLOCK_GROUP_RAID1
#define RAID1C3 BTRFS_BLOCK_GROUP_RAID1C3
#define RAID10 BTRFS_BLOCK_GROUP_RAID10
#define RAID5 BTRFS_BLOCK_GROUP_RAID5
#define RAID6 BTRFS_BLOCK_GROUP_RAID6

static sim_volume *make_fs(unsigned n, uint64_t data, uint64_t meta)
{
	sim_volume *vol = wu_volume(n, 128, data, meta, 3);
	char err[256];
	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
	wu_write_files(fs, NF, FILE_LEN, 0, 1);
	WU_OK(fs, ref_umount(fs));
	return vol;
}

/* Scrubs: read-only through ref_open, or mounted for writing. */
static void scrub(sim_volume *vol, bool readonly, struct ref_scrub_dev *devs, size_t *n)
{
	char err[256];
	ref_fs *fs;
	if (readonly) {
		struct ref_open_opts oo = { .super_mirror = -1 };
		cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "open: %s", err);
		WU_OK(fs, ref_scrub(fs, true, devs, n));
		ref_close(fs);
	} else {
		cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
		WU_OK(fs, ref_scrub(fs, false, devs, n));
		WU_OK(fs, ref_umount(fs));
	}
}

static uint64_t errors(const struct ref_scrub_dev *d)
{
	return d->read_errors + d->csum_errors + d->verify_errors + d->super_errors + d->parity_errors;
}

static void expect_no_errors(const struct ref_scrub_dev *devs, size_t n, const char *when)
{
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(errors(&devs[i]) + devs[i].uncorrectable_errors + devs[i].corrected_errors, 0,
			     "%s: devid %llu: read %llu csum %llu verify %llu super %llu parity %llu", when,
			     (unsigned long long)devs[i].devid, (unsigned long long)devs[i].read_errors,
			     (unsigned long long)devs[i].csum_errors, (unsigned long long)devs[i].verify_errors,
			     (unsigned long long)devs[i].super_errors, (unsigned long long)devs[i].parity_errors);
}

static void expect_files(sim_volume *vol)
{
	struct ref_open_opts oo = { .super_mirror = -1 };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "open: %s", err);
	wu_expect_files(fs, NF, FILE_LEN, 0, 1);
	ref_close(fs);
}

/* Where copy `copy` of logical lives, from a read-only open. */
static struct ref_phys where(sim_volume *vol, uint64_t logical, int copy)
{
	struct ref_open_opts oo = { .super_mirror = -1 };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "open: %s", err);
	struct ref_phys ph[4];
	uint64_t run;
	cr_assert_gt(ref_map(fs, logical, ph, 4, &run), copy);
	ref_close(fs);
	return ph[copy];
}

/* /f2's data extent and the fs tree's root block, from a read-only open. */
static void targets(sim_volume *vol, uint64_t *data, uint64_t *tree)
{
	struct ref_open_opts oo = { .super_mirror = -1 };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "open: %s", err);
	struct ref_root root;
	WU_OK(fs, ref_find_root(fs, BTRFS_FS_TREE_OBJECTID, &root));
	*tree = root.bytenr;
	*data = wu_file_extent(fs, "/f2");
	ref_close(fs);
}

static void scribble(sim_volume *vol, struct ref_phys at, size_t len, uint64_t tag)
{
	uint8_t *junk = tu_pat(len, tag);
	cr_assert_eq(sim_write(vol, (unsigned)at.disk, at.physical, junk, len, 0), 0);
	cr_assert_eq(sim_flush(vol, (unsigned)at.disk), 0);
	free(junk);
}

static const struct ref_scrub_dev *on(const struct ref_scrub_dev *devs, size_t n, int disk)
{
	for (size_t i = 0; i < n; i++)
		if (devs[i].disk == disk)
			return &devs[i];
	cr_assert_fail("no device for disk %d", disk);
	return NULL;
}

/* One copy damaged three ways (a data sector, a whole tree block, a latent
 * sector error on another data sector): counted on its device, mended. */
static void one_copy_damaged(unsigned n, uint64_t data, uint64_t meta)
{
	sim_volume *vol = make_fs(n, data, meta);
	struct ref_scrub_dev devs[SIM_MAX_DISKS];
	size_t nd;
	scrub(vol, true, devs, &nd);
	expect_no_errors(devs, nd, "before any damage");
	cr_assert_eq(nd, n);
	uint64_t data_bytes = 0;
	for (size_t i = 0; i < nd; i++)
		data_bytes += devs[i].data_bytes_scrubbed;
	cr_assert_geq(data_bytes, (uint64_t)NF * FILE_LEN, "%llu data bytes scrubbed",
		      (unsigned long long)data_bytes);

	uint64_t dl, tl;
	targets(vol, &dl, &tl);
	struct ref_phys dp = where(vol, dl, 0), tp = where(vol, tl, 0);
	struct ref_phys lp = where(vol, dl + 8192, 0);
	scribble(vol, dp, 4096, 41);
	scribble(vol, tp, 16384, 42);
	cr_assert_eq(sim_disk_add_latent(vol, (unsigned)lp.disk, lp.physical / 4096, 1), 0);

	size_t writes = tu_log_count(vol, SIM_IO_WRITE);
	scrub(vol, true, devs, &nd);
	cr_assert_eq(tu_log_count(vol, SIM_IO_WRITE), writes, "a read-only scrub wrote");
	const struct ref_scrub_dev *dd = on(devs, nd, dp.disk), *td = on(devs, nd, tp.disk);
	const struct ref_scrub_dev *ld = on(devs, nd, lp.disk);
	cr_assert_eq(dd->csum_errors, 1, "csum errors on the data copy's device: %llu",
		     (unsigned long long)dd->csum_errors);
	cr_assert_eq(td->verify_errors, 4, "verify errors on the tree copy's device: %llu",
		     (unsigned long long)td->verify_errors);
	cr_assert_eq(ld->read_errors, 1);
	uint64_t total = 0, corrected = 0, uncorrectable = 0;
	for (size_t i = 0; i < nd; i++) {
		total += errors(&devs[i]);
		corrected += devs[i].corrected_errors;
		uncorrectable += devs[i].uncorrectable_errors;
	}
	cr_assert_eq(total, 6, "%llu errors in all", (unsigned long long)total);
	cr_assert_eq(corrected, 6, "-r counts what it could mend as corrected");
	cr_assert_eq(uncorrectable, 0);

	/* The repairing scrub mounts the file system, and the mount reads the
	 * top level's root block (the damaged tree block here) as the kernel's
	 * does, mending its bad copy from the good one: the scrub corrects
	 * the other two errors. */
	scrub(vol, false, devs, &nd);
	corrected = 0;
	for (size_t i = 0; i < nd; i++)
		corrected += devs[i].corrected_errors;
	cr_assert_eq(corrected, 2, "%llu corrected", (unsigned long long)corrected);
	scrub(vol, true, devs, &nd);
	expect_no_errors(devs, nd, "after the repairing scrub");
	expect_files(vol);
	wu_expect_ref_clean(vol);
	sim_volume_close(vol);
}

Test(scrub, dup_one_disk) { one_copy_damaged(1, DUP, DUP); }
Test(scrub, raid1_two_disks) { one_copy_damaged(2, RAID1, RAID1); }
Test(scrub, raid1c3_three_disks) { one_copy_damaged(3, RAID1C3, RAID1C3); }
Test(scrub, raid10_four_disks) { one_copy_damaged(4, RAID10, RAID10); }
Test(scrub, raid5_three_disks) { one_copy_damaged(3, RAID5, RAID1); }
Test(scrub, raid6_four_disks) { one_copy_damaged(4, RAID6, RAID6); }

/* RAID5/6: a parity sector of a row holding data disagrees with it. */
static void parity_damaged(unsigned n, uint64_t prof)
{
	sim_volume *vol = make_fs(n, prof, RAID1);
	uint64_t dl, tl;
	targets(vol, &dl, &tl);
	struct ref_open_opts oo = { .super_mirror = -1 };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "open: %s", err);
	const struct ref_chunk *c = chunk_find(fs, dl);
	cr_assert(c && c->type & prof);
	int k = c->num_stripes - (prof == RAID6 ? 2 : 1);
	uint64_t row = (dl - c->logical) / ((uint64_t)k * c->stripe_len);
	const struct ref_stripe *pst = &c->stripes[(row + (uint64_t)k) % c->num_stripes];
	struct ref_phys pp = { pst->disk, pst->physical + row * c->stripe_len + 4096 };
	ref_close(fs);
	scribble(vol, pp, 4096, 43);

	struct ref_scrub_dev devs[SIM_MAX_DISKS];
	size_t nd;
	scrub(vol, true, devs, &nd);
	cr_assert_eq(on(devs, nd, pp.disk)->parity_errors, 1);
	uint64_t total = 0;
	for (size_t i = 0; i < nd; i++)
		total += errors(&devs[i]);
	cr_assert_eq(total, 1, "only the parity sector is wrong");
	scrub(vol, false, devs, &nd);
	cr_assert_eq(on(devs, nd, pp.disk)->corrected_errors, 1);
	scrub(vol, true, devs, &nd);
	expect_no_errors(devs, nd, "after the repairing scrub");
	sim_volume_close(vol);
}

Test(scrub, raid5_parity) { parity_damaged(3, RAID5); }
Test(scrub, raid6_parity) { parity_damaged(4, RAID6); }

/* Both RAID1 copies of a data sector scribbled: uncorrectable, on both
 * devices, and left as it is. */
Test(scrub, raid1_both_copies)
{
	sim_volume *vol = make_fs(2, RAID1, RAID1);
	uint64_t dl, tl;
	targets(vol, &dl, &tl);
	struct ref_phys a = where(vol, dl, 0), b = where(vol, dl, 1);
	scribble(vol, a, 4096, 44);
	scribble(vol, b, 4096, 45);
	struct ref_scrub_dev devs[SIM_MAX_DISKS];
	size_t nd;
	scrub(vol, false, devs, &nd);
	for (size_t i = 0; i < nd; i++) {
		cr_assert_eq(devs[i].csum_errors, 1);
		cr_assert_eq(devs[i].uncorrectable_errors, 1);
		cr_assert_eq(devs[i].corrected_errors, 0);
	}
	scrub(vol, true, devs, &nd);
	cr_assert_eq(devs[0].uncorrectable_errors + devs[1].uncorrectable_errors, 2, "still there");
	sim_volume_close(vol);
}

/* A superblock copy scribbled: a super error on its device. */
Test(scrub, superblock_copy)
{
	sim_volume *vol = make_fs(2, RAID1, RAID1);
	struct ref_phys sb = { 1, btrfs_super_offset(1) };
	scribble(vol, sb, 4096, 46);
	struct ref_scrub_dev devs[SIM_MAX_DISKS];
	size_t nd;
	scrub(vol, true, devs, &nd);
	cr_assert_eq(on(devs, nd, 1)->super_errors, 1);
	cr_assert_eq(on(devs, nd, 0)->super_errors, 0);
	sim_volume_close(vol);
}
