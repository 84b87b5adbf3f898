/*
 * test_degraded.c - writing with devices missing, as the kernel's `mount -o
 * degraded` allows it: a volume of each redundant profile loses the disks
 * its profile tolerates (RAID1, RAID10, RAID5: one; RAID1C3, RAID6: two),
 * is mounted degraded and written (new files, overwrites, enough to need new
 * chunks), and then reads back every file as written, degraded, with the
 * checker clean.  Writes continue on the copies and columns left; RAID5/6
 * rebuild a missing column of a row before changing it; new chunks use the
 * devices left, single when too few are left for the profile (the kernel's
 * fallback).  A volume whose chunks lost more than their profile tolerates
 * (RAID0 with a disk gone) does not open (EIO, naming the chunk), and no
 * volume mounts with a device missing unless asked to.
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
#define NF 5
#define LEN (700 * 1024)

TestSuite(degraded);

#define RAID0 BTRFS_BLOCK_GROUP_RAID0
#define RAID1 BTRFS_BLOCK_GROUP_RAID1
#define RAID1C3 BTRFS_BLOCK_GROUP_RAID1C3
#define RAID10 BTRFS_BLOCK_GROUP_RAID10
#define RAID5 BTRFS_BLOCK_GROUP_RAID5
#define RAID6 BTRFS_BLOCK_GROUP_RAID6

struct vol_files {
	char *dir;
	char *path[SIM_MAX_DISKS];
	unsigned n;
};

/* A new volume of n disks of 160 MiB (data and metadata in the profiles
 * given) with NF files, saved to image files. */
static void make_images(struct vol_files *v, unsigned n, uint64_t data, uint64_t meta)
{
	sim_volume *vol = wu_volume(n, 160, data, meta, 8);
	char err[256];
	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
	wu_write_files(fs, NF, LEN, 0, 1);
	WU_OK(fs, ref_umount(fs));
	v->n = n;
	v->dir = wu_save_images(vol, n, v->path);
	sim_volume_close(vol);
}

static void free_images(struct vol_files *v)
{
	for (unsigned d = 0; d < v->n; d++)
		free(v->path[d]);
	tu_rmdir(v->dir);
}

/* The volume without the disks in `lost` (a bit mask), writable. */
static sim_volume *without(const struct vol_files *v, uint64_t lost)
{
	return wu_open_images(v->path, v->n, ((UINT64_C(1) << v->n) - 1) & ~lost, false);
}

static int mount_degraded(sim_volume *vol, ref_fs **fs, char *err, size_t errlen)
{
	struct ref_mount_opts mo = { .open = { .super_mirror = -1, .degraded = true } };
	return ref_mount(vol, &mo, fs, err, errlen);
}

/* Every file reads as the model has it, opened read-only and degraded. */
static void expect_files(sim_volume *vol, uint8_t **model, const size_t *len, int nfiles)
{
	struct ref_open_opts oo = { .super_mirror = -1, .degraded = true };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "open: %s", err);
	for (int f = 0; f < nfiles; f++) {
		char p[16];
		snprintf(p, sizeof(p), "/f%d", f);
		struct ref_ino ino;
		WU_OK(fs, ref_lookup_path(fs, p, false, &ino));
		uint8_t *got = malloc(len[f] + 1);
		cr_assert_eq(ref_pread(fs, &ino, got, len[f] + 1, 0), (ssize_t)len[f], "%s: %s", p,
			     ref_error(fs));
		cr_assert_eq(memcmp(got, model[f], len[f]), 0, "%s reads back different", p);
		free(got);
	}
	struct ref_check_opts co = { .out = NULL };
	cr_assert_eq(ref_check(fs, &co), 0, "the checker found errors");
	ref_close(fs);
}

static void write_degraded(unsigned n, uint64_t data, uint64_t meta, uint64_t lost)
{
	struct vol_files v;
	make_images(&v, n, data, meta);
	sim_volume *vol = without(&v, lost);
	char err[256];
	ref_fs *fs;
	cr_assert_eq(ref_open(vol, &(struct ref_open_opts){ .super_mirror = -1 }, &fs, err, sizeof(err)),
		     -ENODEV, "a device is missing, yet it opens without degraded");
	cr_assert_eq(mount_degraded(vol, &fs, err, sizeof(err)), 0, "degraded mount: %s", err);

	/* The model: the files as written, then overwritten in part, and new
	 * ones until new chunks are needed. */
	enum { MAXF = NF + 12 };
	uint8_t *model[MAXF];
	size_t len[MAXF];
	for (int f = 0; f < NF; f++) {
		model[f] = tu_pat(LEN, (uint64_t)f + 1);
		len[f] = LEN;
	}
	uint8_t *patch = tu_pat(100000, 99);
	for (int f = 0; f < NF; f++) {
		char p[16];
		snprintf(p, sizeof(p), "/f%d", f);
		uint64_t off = (uint64_t)f * 77777 + 1234;
		WU_OK(fs, ref_write(fs, p, patch, 100000, off));
		memcpy(model[f] + off, patch, 100000);
	}
	size_t before = fs->nchunks;
	int nfiles = NF;
	for (; nfiles < MAXF; nfiles++) {
		char p[16];
		snprintf(p, sizeof(p), "/f%d", nfiles);
		len[nfiles] = 6 * MIB + (size_t)nfiles * 4096;
		model[nfiles] = tu_pat(len[nfiles], (uint64_t)nfiles + 1);
		WU_OK(fs, ref_create(fs, p, 0644));
		WU_OK(fs, ref_write(fs, p, model[nfiles], len[nfiles], 0));
		WU_OK(fs, ref_sync(fs));
	}
	cr_assert_gt(fs->nchunks, before, "no new chunk after %d files", nfiles - NF);
	/* New chunks stay off the missing devices. */
	for (size_t i = before; i < fs->nchunks; i++)
		for (unsigned s = 0; s < fs->chunks[i].num_stripes; s++)
			cr_assert_geq(fs->chunks[i].stripes[s].disk, 0, "new chunk %llu has a stripe on a missing device",
				      (unsigned long long)fs->chunks[i].logical);
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(vol);
	free(patch);

	vol = without(&v, lost);
	expect_files(vol, model, len, nfiles);
	/* And mounted again degraded, it takes more. */
	cr_assert_eq(mount_degraded(vol, &fs, err, sizeof(err)), 0, "degraded remount: %s", err);
	WU_OK(fs, ref_write(fs, "/f0", "again", 5, 10));
	memcpy(model[0] + 10, "again", 5);
	WU_OK(fs, ref_umount(fs));
	expect_files(vol, model, len, nfiles);
	sim_volume_close(vol);
	for (int f = 0; f < nfiles; f++)
		free(model[f]);
	free_images(&v);
}

Test(degraded, raid1_one_lost) { write_degraded(2, RAID1, RAID1, 1u << 1); }
Test(degraded, raid1_three_disks_one_lost) { write_degraded(3, RAID1, RAID1, 1u << 0); }
Test(degraded, raid1c3_two_lost) { write_degraded(3, RAID1C3, RAID1C3, 1u << 0 | 1u << 2); }
Test(degraded, raid10_one_lost) { write_degraded(4, RAID10, RAID10, 1u << 2); }
Test(degraded, raid5_one_lost) { write_degraded(3, RAID5, RAID1, 1u << 1); }
Test(degraded, raid5_four_disks_one_lost) { write_degraded(4, RAID5, RAID5, 1u << 3); }
Test(degraded, raid6_two_lost) { write_degraded(4, RAID6, RAID6, 1u << 0 | 1u << 3); }

/* RAID0 data cannot lose a disk: refused, the chunk named. */
Test(degraded, raid0_refused)
{
	struct vol_files v;
	make_images(&v, 2, RAID0, RAID1);
	sim_volume *vol = without(&v, 1u << 1);
	char err[256] = "";
	ref_fs *fs;
	int r = mount_degraded(vol, &fs, err, sizeof(err));
	cr_assert_eq(r, -EIO, "%d: %s", r, err);
	cr_assert(strstr(err, "RAID0") && strstr(err, "data is gone"), "%s", err);
	sim_volume_close(vol);
	free_images(&v);
}
