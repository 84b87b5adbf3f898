/*
 * test_read_repair.c - a read that meets a bad copy serves a good one and,
 * on a file system mounted for writing, writes the good bytes over the bad
 * copy, as the kernel's read repair does: tree blocks (DUP), data (RAID1,
 * a checksum mismatch and a latent sector error), and RAID5 data rebuilt
 * from parity (the data column rewritten).  Opened read-only, nothing is
 * written.  The errors are counted per device in the dev tree (devstats.c).
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
#define FILE_LEN (64 * 1024)

TestSuite(read_repair);

static sim_volume *make_fs(unsigned ndisks, uint64_t data, uint64_t meta)
{
	sim_volume *vol = wu_volume(ndisks, 128, data, meta, 7);
	char err[256];
	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
	uint8_t *buf = tu_pat(FILE_LEN, 9);
	WU_OK(fs, ref_create(fs, "/f", 0644));
	WU_OK(fs, ref_write(fs, "/f", buf, FILE_LEN, 0));
	free(buf);
	WU_OK(fs, ref_umount(fs));
	return vol;
}

static ref_fs *open_ro(sim_volume *vol)
{
	struct ref_open_opts oo = { .super_mirror = -1, .log = NULL };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "open: %s", err);
	return fs;
}

static ref_fs *mount_rw(sim_volume *vol)
{
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
	return fs;
}

static struct ref_phys where(ref_fs *fs, uint64_t logical, int copy)
{
	struct ref_phys ph[4];
	uint64_t run;
	cr_assert_gt(ref_map(fs, logical, ph, 4, &run), copy);
	return ph[copy];
}

static uint8_t *raw(sim_volume *vol, struct ref_phys at, size_t len)
{
	uint8_t *b = malloc(len);
	cr_assert_eq(sim_read(vol, (unsigned)at.disk, at.physical, b, len), 0);
	return b;
}

static void scribble(sim_volume *vol, struct ref_phys at, size_t len)
{
	uint8_t *junk = tu_pat(len, 77);
	cr_assert_eq(sim_write(vol, (unsigned)at.disk, at.physical, junk, len, 0), 0);
	free(junk);
}

/* Reads /f whole and asserts it is what was written. */
static void read_file(ref_fs *fs)
{
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, "/f", false, &ino));
	uint8_t *got = malloc(FILE_LEN), *want = tu_pat(FILE_LEN, 9);
	cr_assert_eq(ref_pread(fs, &ino, got, FILE_LEN, 0), FILE_LEN, "%s", ref_error(fs));
	cr_assert_eq(memcmp(got, want, FILE_LEN), 0, "/f reads back different");
	free(got);
	free(want);
}

/* The fs tree's root block (DUP) has a scribbled first copy: a read-only
 * open serves copy 1 and leaves copy 0 alone; a mount for writing serves
 * copy 1 and rewrites copy 0 with it. */
Test(read_repair, tree_block_dup)
{
	sim_volume *vol = make_fs(1, 0, BTRFS_BLOCK_GROUP_DUP);
	ref_fs *fs = open_ro(vol);
	struct ref_root root;
	WU_OK(fs, ref_find_root(fs, BTRFS_FS_TREE_OBJECTID, &root));
	uint32_t ns = fs->nodesize;
	struct ref_phys c0 = where(fs, root.bytenr, 0), c1 = where(fs, root.bytenr, 1);
	ref_close(fs);
	scribble(vol, c0, ns);

	fs = open_ro(vol);
	read_file(fs);
	cr_assert_eq(ref_read_rewritten(fs), 0, "read-only, yet a copy was rewritten");
	ref_close(fs);
	uint8_t *b0 = raw(vol, c0, ns), *b1 = raw(vol, c1, ns);
	cr_assert_neq(memcmp(b0, b1, ns), 0, "read-only, yet copy 0 was repaired");
	free(b0);

	fs = mount_rw(vol);
	read_file(fs);
	cr_assert_geq(ref_read_rewritten(fs), 1);
	WU_OK(fs, ref_umount(fs));
	b0 = raw(vol, c0, ns);
	cr_assert_eq(memcmp(b0, b1, ns), 0, "copy 0 not rewritten from copy 1");
	free(b0);
	free(b1);
	wu_expect_ref_clean(vol);
	sim_volume_close(vol);
}

/* RAID1 data: a bad checksum in copy 0 (scribbled) and a latent sector
 * error in it are both rewritten from copy 1 by a read. */
static void data_raid1(bool latent)
{
	sim_volume *vol = make_fs(2, BTRFS_BLOCK_GROUP_RAID1, BTRFS_BLOCK_GROUP_RAID1);
	ref_fs *fs = open_ro(vol);
	uint64_t at = wu_file_extent(fs, "/f");
	struct ref_phys c0 = where(fs, at, 0), c1 = where(fs, at, 1);
	ref_close(fs);
	if (latent)
		cr_assert_eq(sim_disk_add_latent(vol, (unsigned)c0.disk, c0.physical / 4096 + 3, 2), 0);
	else
		scribble(vol, c0, 8192);

	fs = mount_rw(vol);
	read_file(fs);
	cr_assert_geq(ref_read_rewritten(fs), 1);
	WU_OK(fs, ref_umount(fs));
	uint8_t *b0 = raw(vol, c0, FILE_LEN), *b1 = raw(vol, c1, FILE_LEN);
	cr_assert_eq(memcmp(b0, b1, FILE_LEN), 0, "copy 0 not rewritten from copy 1");
	free(b0);
	free(b1);
	/* The error was counted on copy 0's device, in the dev tree: a later
	 * open sees it (read_errs for the latent sector, corruption_errs for
	 * the bad checksum), and nothing on the other device. */
	fs = open_ro(vol);
	struct ref_dev_stats st[4];
	size_t n;
	WU_OK(fs, ref_dev_stats(fs, st, 4, &n));
	cr_assert_eq(n, 2);
	for (size_t i = 0; i < n; i++) {
		uint64_t want_read = st[i].disk == c0.disk && latent;
		uint64_t want_corrupt = st[i].disk == c0.disk && !latent ? 2 : 0; /* 8 KiB scribbled */
		cr_assert_eq(st[i].values[BTRFS_DEV_STAT_READ_ERRS], want_read, "disk %d read_errs %llu",
			     st[i].disk, (unsigned long long)st[i].values[BTRFS_DEV_STAT_READ_ERRS]);
		cr_assert_eq(st[i].values[BTRFS_DEV_STAT_CORRUPTION_ERRS], want_corrupt,
			     "disk %d corruption_errs %llu", st[i].disk,
			     (unsigned long long)st[i].values[BTRFS_DEV_STAT_CORRUPTION_ERRS]);
	}
	ref_close(fs);
	sim_volume_close(vol);
}

Test(read_repair, data_raid1_bad_checksum) { data_raid1(false); }
Test(read_repair, data_raid1_latent_sector) { data_raid1(true); }

/* RAID5 on three disks: /f's first data column scribbled; the read rebuilds
 * it from the other column and P and writes it back; the column then holds
 * the file's bytes again. */
Test(read_repair, data_raid5_rebuilt)
{
	sim_volume *vol = make_fs(3, BTRFS_BLOCK_GROUP_RAID5, BTRFS_BLOCK_GROUP_RAID1);
	ref_fs *fs = open_ro(vol);
	uint64_t at = wu_file_extent(fs, "/f");
	struct ref_phys c0 = where(fs, at, 0);
	ref_close(fs);
	uint8_t *want = tu_pat(FILE_LEN, 9);
	uint8_t *before = raw(vol, c0, 4096);
	cr_assert_eq(memcmp(before, want, 4096), 0, "the column does not hold the file's start");
	free(before);
	scribble(vol, c0, 4096);

	fs = mount_rw(vol);
	read_file(fs);
	cr_assert_geq(ref_read_rewritten(fs), 1);
	WU_OK(fs, ref_umount(fs));
	uint8_t *after = raw(vol, c0, 4096);
	cr_assert_eq(memcmp(after, want, 4096), 0, "the data column not rewritten");
	free(after);
	free(want);
	sim_volume_close(vol);
}
