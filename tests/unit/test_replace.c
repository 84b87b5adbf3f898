/*
 * test_replace.c - ref_device_replace: a device of a RAID1, RAID1C3, RAID10,
 * RAID5 or RAID6 volume (or a single DUP device) rebuilt onto a blank spare
 * disk, with the device still there or lost; afterwards the volume of the
 * other disks and the spare opens without degraded, every file reads as
 * written, the checker is clean, a scrub finds nothing wrong (every copy and
 * every parity right), and the old disk is no longer taken for the device.
 * A spare too small, or a disk that is not a spare, is refused.  And
 * ref_device_add: a spare joins as a new device that new chunks use.
 */
#include "testutil.h"
#include "wrutil.h"
#include "ref/internal.h"
#include "ref/mkfs.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (UINT64_C(1) << 20)
#define NF 6
#define LEN (900 * 1024)
#define DISK_MIB 160

TestSuite(replace);

#define DUP BTRFS_BLOCK_GROUP_DUP
#define RAID1 BTRFS_BLOCK_GROUP_RAID1
#define RAID1C3 BTRFS_BLOCK_GROUP_RAID1C3
#define RAID10 BTRFS_BLOCK_GROUP_RAID10
#define RAID5 BTRFS_BLOCK_GROUP_RAID5
#define RAID6 BTRFS_BLOCK_GROUP_RAID6

struct imgs {
	char *dir;
	char *path[SIM_MAX_DISKS + 1];
	unsigned n; /* the volume's disks; path[n] is the spare */
};

static void make(struct imgs *v, unsigned n, uint64_t data, uint64_t meta, uint64_t spare_mib)
{
	sim_volume *vol = wu_volume(n, DISK_MIB, data, meta, 12);
	char err[256];
	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
	wu_write_files(fs, NF, LEN, 1000, 21);
	WU_OK(fs, ref_umount(fs));
	v->n = n;
	v->dir = wu_save_images(vol, n, v->path);
	v->path[n] = tu_path(v->dir, "spare.img");
	int fd = open(v->path[n], O_CREAT | O_WRONLY | O_TRUNC, 0644);
	cr_assert(fd >= 0 && ftruncate(fd, (off_t)(spare_mib * MIB)) == 0);
	close(fd);
	sim_volume_close(vol);
}

static void drop(struct imgs *v)
{
	for (unsigned d = 0; d <= v->n; d++)
		free(v->path[d]);
	tu_rmdir(v->dir);
}

/* A volume of the images named by `use` (bit i: path[i]), writable. */
static sim_volume *volume(const struct imgs *v, uint64_t use)
{
	return wu_open_images(v->path, v->n + 1, use, false);
}

/* The sim disk index of path[d] in a volume made from `use`. */
static int disk_of(uint64_t use, unsigned d)
{
	return __builtin_popcountll(use & ((UINT64_C(1) << d) - 1));
}

static void expect_all_right(sim_volume *vol)
{
	struct ref_open_opts oo = { .super_mirror = -1 };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "open without degraded: %s", err);
	wu_expect_files(fs, NF, LEN, 1000, 21);
	struct ref_check_opts co = { .out = NULL };
	cr_assert_eq(ref_check(fs, &co), 0, "the checker found errors");
	struct ref_scrub_dev devs[SIM_MAX_DISKS];
	size_t nd;
	WU_OK(fs, ref_scrub(fs, true, devs, &nd));
	for (size_t i = 0; i < nd; i++)
		cr_assert_eq(devs[i].read_errors + devs[i].csum_errors + devs[i].verify_errors +
				     devs[i].parity_errors + devs[i].super_errors,
			     0, "scrub after the replace: errors on devid %llu (read %llu csum %llu verify %llu parity %llu super %llu)",
			     (unsigned long long)devs[i].devid, (unsigned long long)devs[i].read_errors,
			     (unsigned long long)devs[i].csum_errors, (unsigned long long)devs[i].verify_errors,
			     (unsigned long long)devs[i].parity_errors, (unsigned long long)devs[i].super_errors);
	ref_close(fs);
}

/* Replaces path[victim] by the spare, the victim present or lost. */
static void replace(unsigned n, uint64_t data, uint64_t meta, unsigned victim, bool lost)
{
	struct imgs v;
	make(&v, n, data, meta, DISK_MIB + 8);
	uint64_t all = (UINT64_C(1) << (n + 1)) - 1, use = lost ? all & ~(UINT64_C(1) << victim) : all;
	sim_volume *vol = volume(&v, use);
	struct ref_mount_opts mo = { .open = { .super_mirror = -1, .spares = true, .degraded = lost } };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_mount(vol, &mo, &fs, err, sizeof(err)), 0, "mount: %s", err);
	struct ref_replace_stats st;
	WU_OK(fs, ref_device_replace(fs, victim + 1, disk_of(use, n), false, &st));
	cr_assert_gt(st.bytes_copied, 0);
	cr_assert_eq(st.uncorrectable, 0, "%llu bytes uncorrectable", (unsigned long long)st.uncorrectable);
	cr_assert_gt(st.data_extents + st.tree_extents + (data & BTRFS_BLOCK_GROUP_RAID56_MASK ? 1 : 0), 0);
	/* Written on at once: the spare is the device now. */
	uint8_t *orig = tu_pat(LEN, 21);
	WU_OK(fs, ref_write(fs, "/f0", "after", 5, 7));
	WU_OK(fs, ref_write(fs, "/f0", orig + 7, 5, 7)); /* and back */
	free(orig);
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(vol);

	/* The volume without the old disk, with the spare: whole again. */
	vol = volume(&v, all & ~(UINT64_C(1) << victim));
	expect_all_right(vol);
	sim_volume_close(vol);
	/* The old disk (when it was there) is no device of it any more. */
	if (!lost) {
		vol = volume(&v, all);
		struct ref_open_opts oo = { .super_mirror = -1 };
		cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), -EINVAL, "the old disk still opens as a device");
		cr_assert(strstr(err, "no valid btrfs superblock"), "%s", err);
		sim_volume_close(vol);
	}
	drop(&v);
}

Test(replace, raid1_present) { replace(2, RAID1, RAID1, 1, false); }
Test(replace, raid1_lost) { replace(2, RAID1, RAID1, 0, true); }
Test(replace, raid1c3_lost) { replace(3, RAID1C3, RAID1C3, 2, true); }
Test(replace, raid10_lost) { replace(4, RAID10, RAID10, 1, true); }
Test(replace, raid5_present) { replace(3, RAID5, RAID1, 2, false); }
Test(replace, raid5_lost) { replace(3, RAID5, RAID5, 0, true); }
Test(replace, raid6_lost) { replace(4, RAID6, RAID6, 3, true); }
Test(replace, dup_single_device) { replace(1, DUP, DUP, 0, false); }

Test(replace, refused)
{
	struct imgs v;
	make(&v, 2, RAID1, RAID1, 64); /* a spare smaller than the devices */
	sim_volume *vol = volume(&v, 7);
	struct ref_mount_opts mo = { .open = { .super_mirror = -1, .spares = true } };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_mount(vol, &mo, &fs, err, sizeof(err)), 0, "mount: %s", err);
	struct ref_replace_stats st;
	WU_ERR(fs, ref_device_replace(fs, 1, 2, false, &st), EINVAL);
	cr_assert(strstr(ref_error(fs), "needs"), "%s", ref_error(fs));
	WU_ERR(fs, ref_device_replace(fs, 1, 1, false, &st), EINVAL); /* a device, not a spare */
	WU_ERR(fs, ref_device_replace(fs, 9, 2, false, &st), ENOENT);
	WU_ERR(fs, ref_device_add(fs, 2, NULL), EINVAL); /* 64 MiB: too small to add */
	cr_assert(strstr(ref_error(fs), "at least 256 MiB"), "%s", ref_error(fs));
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(vol);
	/* Without spares, a blank disk fails the open as before. */
	vol = volume(&v, 7);
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), -EINVAL);
	sim_volume_close(vol);
	drop(&v);
}

/* ref_device_add: a spare joins a RAID1 volume as devid 3; the new chunks
 * written after it may use it, and the three disks open whole, read and
 * check clean.  A disk that is no spare, or too small, is refused. */
Test(replace, device_add)
{
	struct imgs v;
	make(&v, 2, RAID1, RAID1, 300);
	sim_volume *vol = volume(&v, 7);
	struct ref_mount_opts mo = { .open = { .super_mirror = -1, .spares = true } };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_mount(vol, &mo, &fs, err, sizeof(err)), 0, "mount: %s", err);
	uint64_t devid = 0;
	WU_ERR(fs, ref_device_add(fs, 0, &devid), EINVAL); /* a device already */
	WU_OK(fs, ref_device_add(fs, 2, &devid));
	cr_assert_eq(devid, 3);
	WU_ERR(fs, ref_device_add(fs, 2, &devid), EINVAL); /* not a spare any more */
	size_t before = fs->nchunks;
	uint8_t *big = tu_pat(8 * MIB, 77);
	bool on_new = false;
	for (int i = 0; i < 24 && !on_new; i++) {
		char p[16];
		snprintf(p, sizeof(p), "/g%d", i);
		WU_OK(fs, ref_create(fs, p, 0644));
		WU_OK(fs, ref_write(fs, p, big, 8 * MIB, 0));
		WU_OK(fs, ref_sync(fs));
		for (size_t c = before; c < fs->nchunks; c++)
			for (unsigned s = 0; s < fs->chunks[c].num_stripes; s++)
				on_new |= fs->chunks[c].stripes[s].devid == 3;
	}
	cr_assert(on_new, "no new chunk on the added device");
	WU_OK(fs, ref_umount(fs));
	free(big);
	sim_volume_close(vol);
	vol = volume(&v, 7);
	expect_all_right(vol);
	struct ref_open_opts oo = { .super_mirror = -1 };
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(LE64(ref_super(fs)->num_devices), 3);
	ref_close(fs);
	sim_volume_close(vol);
	drop(&v);
}
