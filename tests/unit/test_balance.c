/*
 * test_balance.c - ref_balance, ref_balance_resume/cancel and
 * ref_device_remove on memory volumes holding files, a snapshot that shares
 * them, and changes on both sides (blocks with full back references):
 * afterwards every file reads as written, the checker (and btrfs check) is
 * clean, the chunks are where the filters and conversions say, and the
 * snapshot still shares its blocks.  A balance cut by power loss at any
 * write leaves a file system that is whole and that resume finishes.  The
 * kernel's refusals: conversions the devices cannot hold, less metadata
 * redundancy without force, removing below a profile's devices.
 */
#include "testutil.h"
#include "wrutil.h"
#include "ref/rw.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(balance);

#define SINGLE BTRFS_AVAIL_ALLOC_BIT_SINGLE
#define DUP BTRFS_BLOCK_GROUP_DUP
#define RAID1 BTRFS_BLOCK_GROUP_RAID1
#define RAID1C3 BTRFS_BLOCK_GROUP_RAID1C3
#define RAID5 BTRFS_BLOCK_GROUP_RAID5
#define RAID10 BTRFS_BLOCK_GROUP_RAID10
#define NF 40
#define DISK_MIB 192

static size_t flen(int f)
{
	return f % 4 == 0 ? 300000 + (size_t)f * 1111 : 700 + (size_t)f * 37; /* some inline */
}

/* Files /d/fN, a snapshot /snap of them, then changes on both sides. */
static sim_volume *populated(unsigned n, uint64_t data, uint64_t meta)
{
	sim_volume *vol = wu_volume(n, DISK_MIB, data, meta, 5);
	char err[256], p[32];
	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	for (int f = 0; f < NF; f++) {
		snprintf(p, sizeof(p), "/d/f%d", f);
		uint8_t *buf = tu_pat(flen(f), (uint64_t)f + 3);
		WU_OK(fs, ref_create(fs, p, 0644));
		WU_OK(fs, ref_write(fs, p, buf, flen(f), 0));
		free(buf);
	}
	WU_OK(fs, ref_snapshot(fs, "/", "/snap", false, NULL));
	WU_OK(fs, ref_write(fs, "/d/f4", "changed", 7, 0));
	WU_OK(fs, ref_unlink(fs, "/snap/d/f8"));
	WU_OK(fs, ref_umount(fs));
	return vol;
}

/* Every file as populated() left it, in both subvolumes. */
static void expect_files(ref_fs *fs)
{
	char p[48];
	for (int s = 0; s < 2; s++)
		for (int f = 0; f < NF; f++) {
			snprintf(p, sizeof(p), "%s/d/f%d", s ? "/snap" : "", f);
			struct ref_ino ino;
			int e = ref_lookup_path(fs, p, false, &ino);
			if (s && f == 8) {
				cr_assert_eq(e, -ENOENT, "%s", p);
				continue;
			}
			cr_assert_eq(e, 0, "%s: %s", p, ref_error(fs));
			uint8_t *want = tu_pat(flen(f), (uint64_t)f + 3), *got = malloc(flen(f));
			if (!s && f == 4)
				memcpy(want, "changed", 7);
			cr_assert_eq(ref_pread(fs, &ino, got, flen(f), 0), (ssize_t)flen(f), "%s: %s", p,
				     ref_error(fs));
			cr_assert_eq(memcmp(got, want, flen(f)), 0, "%s reads back different", p);
			free(want);
			free(got);
		}
}

static ref_fs *open_ro(sim_volume *vol)
{
	/* (spares: a removed device's wiped disk is left out) */
	struct ref_open_opts oo = { .super_mirror = -1, .spares = true };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "open: %s", err);
	return fs;
}

/* The profile bits of every chunk of a kind, ORed (SINGLE for single). */
static uint64_t profiles_of(ref_fs *fs, uint64_t kind)
{
	uint64_t have = 0;
	for (size_t i = 0; i < fs->nchunks; i++)
		if (fs->chunks[i].type & kind) {
			uint64_t p = fs->chunks[i].type & BTRFS_BLOCK_GROUP_PROFILE_MASK;
			have |= p ? p : SINGLE;
		}
	return have;
}

static struct ref_balance convert(uint64_t data, uint64_t meta)
{
	struct ref_balance b;
	memset(&b, 0, sizeof(b));
	if (data) {
		b.flags |= BTRFS_BALANCE_DATA;
		b.data.flags = BTRFS_BALANCE_ARGS_CONVERT;
		b.data.target = data;
	}
	if (meta) {
		b.flags |= BTRFS_BALANCE_METADATA | BTRFS_BALANCE_SYSTEM;
		b.meta.flags = BTRFS_BALANCE_ARGS_CONVERT;
		b.meta.target = meta;
		b.sys = b.meta;
	}
	return b;
}

static uint64_t meta_used(ref_fs *fs)
{
	uint64_t used = 0;
	for (size_t i = 0; i < fs->rw->nbgs; i++)
		if (!(fs->rw->bgs[i].flags & BTRFS_BLOCK_GROUP_DATA))
			used += fs->rw->bgs[i].used;
	return used;
}

Test(balance, full_balance_keeps_files_and_sharing)
{
	sim_volume *vol = populated(1, 0, DUP);
	char err[256];
	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	uint64_t before = meta_used(fs);
	size_t chunks = fs->nchunks;
	struct ref_balance b = { .flags = BTRFS_BALANCE_TYPE_MASK };
	struct ref_balance_stats st;
	WU_OK(fs, ref_balance(fs, &b, &st));
	cr_assert_eq(st.considered, chunks);
	cr_assert_eq(st.relocated, chunks, "every chunk relocated");
	cr_assert_gt(st.tree_blocks, 0);
	cr_assert_gt(st.data_extents, 0);
	/* Shared blocks moved once: metadata no bigger than before (plus the
	 * few blocks a commit changes). */
	cr_assert_leq(meta_used(fs), before + 8 * 16384, "metadata grew from %llu to %llu: sharing lost?",
		      (unsigned long long)before, (unsigned long long)meta_used(fs));
	expect_files(fs);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	fs = open_ro(vol);
	expect_files(fs);
	struct ref_balance left;
	cr_assert_eq(ref_balance_get(fs, &left), 1, "no balance item is left");
	ref_close(fs);
	sim_volume_close(vol);
}

static void converts(unsigned n, uint64_t data0, uint64_t meta0, uint64_t data, uint64_t meta)
{
	sim_volume *vol = populated(n, data0, meta0);
	char err[256];
	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	struct ref_balance b = convert(data, meta);
	struct ref_balance_stats st;
	WU_OK(fs, ref_balance(fs, &b, &st));
	WU_OK(fs, ref_umount(fs));
	wu_expect_ref_clean(vol);
	fs = open_ro(vol);
	cr_assert_eq(profiles_of(fs, BTRFS_BLOCK_GROUP_DATA), data);
	cr_assert_eq(profiles_of(fs, BTRFS_BLOCK_GROUP_METADATA), meta);
	cr_assert_eq(profiles_of(fs, BTRFS_BLOCK_GROUP_SYSTEM), meta);
	expect_files(fs);
	ref_close(fs);
	sim_volume_close(vol);
}

Test(balance, convert_single_dup_to_raid1) { converts(2, 0, DUP, RAID1, RAID1); }
Test(balance, convert_raid1_to_raid5_raid1c3) { converts(3, RAID1, RAID1, RAID5, RAID1C3); }
Test(balance, convert_raid5_to_raid10_single) { converts(4, RAID5, RAID1, RAID10, RAID10); }
Test(balance, convert_raid1_to_single_dup) { converts(2, RAID1, RAID1, SINGLE, DUP); }

Test(balance, filters)
{
	sim_volume *vol = populated(2, RAID1, RAID1);
	char err[256];
	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	struct ref_balance_stats st;
	/* usage=0: only empty data chunks (none here). */
	struct ref_balance b = { .flags = BTRFS_BALANCE_DATA };
	b.data.flags = BTRFS_BALANCE_ARGS_USAGE;
	b.data.usage = 0;
	WU_OK(fs, ref_balance(fs, &b, &st));
	cr_assert_eq(st.relocated, 0);
	/* profiles=raid1 on data: the data chunk only. */
	b.data.flags = BTRFS_BALANCE_ARGS_PROFILES;
	b.data.profiles = RAID1;
	WU_OK(fs, ref_balance(fs, &b, &st));
	cr_assert_eq(st.relocated, 1);
	cr_assert_gt(st.data_extents, 0);
	/* Converting with soft: nothing left to convert the second time. */
	b = convert(SINGLE, 0);
	b.data.flags |= BTRFS_BALANCE_ARGS_SOFT;
	WU_OK(fs, ref_balance(fs, &b, &st));
	cr_assert_eq(st.relocated, 1);
	WU_OK(fs, ref_balance(fs, &b, &st));
	cr_assert_eq(st.relocated, 0, "soft skips chunks already converted");
	/* limit=1 over metadata and system: one chunk each. */
	b = (struct ref_balance){ .flags = BTRFS_BALANCE_METADATA | BTRFS_BALANCE_SYSTEM };
	b.meta.flags = b.sys.flags = BTRFS_BALANCE_ARGS_LIMIT;
	b.meta.limit = b.sys.limit = 1;
	WU_OK(fs, ref_balance(fs, &b, &st));
	cr_assert_eq(st.relocated, 2);
	/* devid=2, vrange over everything. */
	b = (struct ref_balance){ .flags = BTRFS_BALANCE_METADATA };
	b.meta.flags = BTRFS_BALANCE_ARGS_DEVID | BTRFS_BALANCE_ARGS_VRANGE;
	b.meta.devid = 2;
	b.meta.vstart = 0;
	b.meta.vend = UINT64_MAX;
	WU_OK(fs, ref_balance(fs, &b, &st));
	cr_assert_eq(st.relocated, 1);
	expect_files(fs);
	WU_OK(fs, ref_umount(fs));
	wu_expect_ref_clean(vol);
	sim_volume_close(vol);
}

Test(balance, refused)
{
	sim_volume *vol = populated(2, RAID1, RAID1);
	char err[256];
	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	struct ref_balance_stats st;
	struct ref_balance b = convert(RAID1C3, 0); /* three devices needed */
	WU_ERR(fs, ref_balance(fs, &b, &st), EINVAL);
	cr_assert(strstr(ref_error(fs), "invalid convert data profile raid1c3"), "%s", ref_error(fs));
	b = convert(0, SINGLE); /* less metadata redundancy */
	WU_ERR(fs, ref_balance(fs, &b, &st), EINVAL);
	cr_assert(strstr(ref_error(fs), "reduces metadata redundancy"), "%s", ref_error(fs));
	b.flags |= BTRFS_BALANCE_FORCE;
	WU_OK(fs, ref_balance(fs, &b, &st));
	b = (struct ref_balance){ 0 };
	WU_ERR(fs, ref_balance(fs, &b, &st), EINVAL);
	WU_ERR(fs, ref_balance_resume(fs, &st), ENOTCONN);
	WU_ERR(fs, ref_balance_cancel(fs), ENOTCONN);
	uint64_t devid = 1;
	WU_ERR(fs, ref_device_remove(fs, &devid, &st), EINVAL); /* data is RAID1: two devices */
	cr_assert(strstr(ref_error(fs), "unable to go below two devices on raid1"), "%s", ref_error(fs));
	devid = 9;
	WU_ERR(fs, ref_device_remove(fs, &devid, &st), ENODEV);
	devid = 0;
	WU_ERR(fs, ref_device_remove(fs, &devid, &st), ENODEV); /* none is missing */
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(vol);
}

/* A balance cut by power loss at writes throughout: each state whole, with
 * the balance item until the last commit; resume (or cancel) finishes. */
Test(balance, crash_anywhere_then_resume)
{
	sim_volume *vol = populated(2, 0, DUP);
	sim_volume *base;
	cr_assert_eq(sim_volume_clone(vol, &base), 0);
	char err[256];
	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	sim_volume_log_clear(vol);
	sim_volume_set_recording(vol, true);
	struct ref_balance b = convert(RAID1, RAID1);
	struct ref_balance_stats st;
	WU_OK(fs, ref_balance(fs, &b, &st));
	WU_OK(fs, ref_umount(fs));
	size_t n;
	const struct sim_io *log = sim_volume_log(vol, &n);
	cr_assert_gt(n, 50);
	int paused = 0, done = 0;
	for (size_t cut = 1; cut <= n; cut += n / 12 + 1) {
		sim_volume *v = wu_crashed_copy(base, log, cut);
		cr_assert_eq(ref_mount(v, NULL, &fs, err, sizeof(err)), 0, "cut %zu: %s", cut, err);
		expect_files(fs);
		struct ref_balance got;
		int r = ref_balance_get(fs, &got);
		cr_assert_geq(r, 0);
		if (r == 0) {
			paused++;
			cr_assert_eq(got.data.target, RAID1, "the item keeps the arguments");
			WU_OK(fs, (paused % 3 == 2) ? ref_balance_cancel(fs) : ref_balance_resume(fs, &st));
		} else {
			done++;
		}
		bool cancelled = r == 0 && paused % 3 == 2;
		WU_OK(fs, ref_umount(fs));
		wu_expect_ref_clean(v);
		fs = open_ro(v);
		expect_files(fs);
		if (!cancelled && (r == 0 || profiles_of(fs, BTRFS_BLOCK_GROUP_DATA) == RAID1)) {
			cr_assert_eq(profiles_of(fs, BTRFS_BLOCK_GROUP_DATA), RAID1, "cut %zu", cut);
			cr_assert_eq(profiles_of(fs, BTRFS_BLOCK_GROUP_METADATA), RAID1, "cut %zu", cut);
		}
		ref_close(fs);
		sim_volume_close(v);
	}
	cr_assert_gt(paused, 3, "cuts inside the balance");
	sim_volume_close(base);
	sim_volume_close(vol);
}

Test(balance, device_remove)
{
	sim_volume *vol = populated(3, RAID1, RAID1);
	char err[256];
	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	struct ref_balance_stats st;
	uint64_t devid = 1;
	WU_OK(fs, ref_device_remove(fs, &devid, &st));
	cr_assert_gt(st.relocated, 0);
	for (size_t i = 0; i < fs->nchunks; i++)
		for (uint16_t s = 0; s < fs->chunks[i].num_stripes; s++)
			cr_assert_neq(fs->chunks[i].stripes[s].devid, 1, "a chunk stays on devid 1");
	devid = 2;
	WU_ERR(fs, ref_device_remove(fs, &devid, &st), EINVAL);
	expect_files(fs);
	WU_OK(fs, ref_umount(fs));
	/* Disk 0 is no longer part of the file system: the others open whole. */
	uint8_t sb[4096];
	cr_assert_eq(sim_read(vol, 0, 65536, sb, sizeof(sb)), 0);
	for (size_t i = 0; i < sizeof(sb); i++)
		cr_assert_eq(sb[i], 0, "the removed device's superblock is wiped");
	fs = open_ro(vol);
	cr_assert_eq(LE64(ref_super(fs)->num_devices), 2);
	expect_files(fs);
	struct ref_check_opts co = { .out = NULL };
	cr_assert_eq(ref_check(fs, &co), 0);
	ref_close(fs);
	sim_volume_close(vol);
}
