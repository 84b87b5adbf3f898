/*
 * test_mkfs.c - ref_mkfs across every disk of a volume: for 1 to 4 disks and
 * each profile, the superblocks (one per device, each with its own device
 * item), the chunks (types, stripe counts, stripes on distinct devices, both
 * DUP copies on one), the device extents and usage; then ref mounts it, writes
 * a file, fsyncs, unmounts, remounts, reads it back, and ref_check is clean.
 * Mirrored and parity profiles still read with a disk lost.  Profiles that need more
 * devices than the volume has are EINVAL with the reason, and write nothing.
 * (`btrfs check` and the kernel judge the same images in
 * tests/interop/test_mkfs.sh.)
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

TestSuite(mkfs);

#define SINGLE 0
#define DUP BTRFS_BLOCK_GROUP_DUP
#define RAID0 BTRFS_BLOCK_GROUP_RAID0
#define RAID1 BTRFS_BLOCK_GROUP_RAID1
#define RAID1C3 BTRFS_BLOCK_GROUP_RAID1C3
#define RAID1C4 BTRFS_BLOCK_GROUP_RAID1C4
#define RAID10 BTRFS_BLOCK_GROUP_RAID10
#define RAID5 BTRFS_BLOCK_GROUP_RAID5
#define RAID6 BTRFS_BLOCK_GROUP_RAID6

static uint32_t nodesize = 16384;

static int mkfs_on(sim_volume *vol, uint64_t data, uint64_t meta, uint64_t size, char *err,
		   size_t errlen)
{
	struct ref_mkfs_opts o;
	ref_mkfs_defaults(&o);
	o.nodesize = nodesize;
	o.seed = 11;
	o.time = 1700000000;
	o.data_profile = data;
	o.meta_profile = meta;
	o.size = size;
	return ref_mkfs(vol, &o, NULL, err, errlen);
}

/* Stripes a chunk of this profile has on n devices (as mkfs.btrfs makes them). */
static unsigned want_stripes(uint64_t prof, unsigned n)
{
	switch (prof) {
	case DUP: return 2;
	case RAID1: return 2;
	case RAID1C3: return 3;
	case RAID1C4: return 4;
	case RAID0: return n;
	case RAID10: return n & ~1u;
	case RAID5:
	case RAID6: return n;
	default: return 1;
	}
}

/* The superblocks and the chunk map agree with the profiles asked for. */
static void expect_layout(sim_volume *vol, unsigned n, uint64_t data, uint64_t meta, uint64_t size)
{
	struct btrfs_super_disk sb0;
	bool valid;
	cr_assert_eq(ref_read_super(vol, 0, 0, &sb0, &valid), 0);
	cr_assert(valid);
	uint64_t total = 0;
	for (unsigned d = 0; d < n; d++)
		total += size ? size : sim_disk_size(vol, d);
	for (unsigned d = 0; d < n; d++) {
		struct btrfs_super_disk sb;
		for (int mirror = 0; mirror < 2; mirror++) {
			if (btrfs_super_offset(mirror) + BTRFS_SUPER_SIZE > sim_disk_size(vol, d))
				continue;
			cr_assert_eq(ref_read_super(vol, d, mirror, &sb, &valid), 0);
			cr_assert(valid, "disk %u copy %d", d, mirror);
			cr_assert_eq(memcmp(sb.fsid, sb0.fsid, 16), 0, "disk %u has another fsid", d);
			cr_assert_eq(LE64(sb.num_devices), n);
			cr_assert_eq(LE64(sb.total_bytes), total);
			cr_assert_eq(LE64(sb.dev_item.devid), d + 1, "disk %u", d);
			cr_assert_eq(LE64(sb.dev_item.total_bytes), size ? size : sim_disk_size(vol, d));
			cr_assert_eq(memcmp(sb.dev_item.fsid, sb0.fsid, 16), 0);
			cr_assert_eq(LE64(sb.generation), LE64(sb0.generation));
			cr_assert_eq(LE64(sb.root), LE64(sb0.root));
			bool c34 = (data | meta) & (RAID1C3 | RAID1C4);
			cr_assert_eq(!!(LE64(sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_RAID1C34), c34);
			bool r56 = (data | meta) & (RAID5 | RAID6);
			cr_assert_eq(!!(LE64(sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_RAID56), r56);
		}
		for (unsigned e = 0; e < d; e++) {
			struct btrfs_super_disk other;
			cr_assert_eq(ref_read_super(vol, e, 0, &other, &valid), 0);
			cr_assert_neq(memcmp(other.dev_item.uuid, sb.dev_item.uuid, 16), 0,
				      "disks %u and %u share a device uuid", e, d);
		}
	}
	ref_fs *fs;
	char err[256];
	struct ref_open_opts oo = { .super_mirror = -1 };
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "open: %s", err);
	cr_assert_eq(fs->ndevs, n);
	cr_assert_eq(fs->nchunks, 3);
	uint64_t used[SIM_MAX_DISKS] = { 0 };
	for (size_t i = 0; i < fs->nchunks; i++) {
		const struct ref_chunk *c = &fs->chunks[i];
		uint64_t prof = c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK;
		uint64_t want = c->type & BTRFS_BLOCK_GROUP_DATA ? data : meta;
		cr_assert_eq(prof, want, "chunk %llu: type 0x%llx", (unsigned long long)c->logical,
			     (unsigned long long)c->type);
		cr_assert_eq(c->num_stripes, want_stripes(prof, n), "chunk type 0x%llx: %u stripes",
			     (unsigned long long)c->type, c->num_stripes);
		cr_assert_eq(c->sub_stripes, prof == RAID10 ? 2 : 1);
		for (unsigned s = 0; s < c->num_stripes; s++) {
			cr_assert(c->stripes[s].devid >= 1 && c->stripes[s].devid <= n);
			cr_assert_eq(c->stripes[s].disk, (int)c->stripes[s].devid - 1);
			used[c->stripes[s].devid - 1] += chunk_stripe_bytes(c->type, c->length, c->num_stripes);
			for (unsigned t = 0; t < s; t++)
				cr_assert_eq(c->stripes[t].devid == c->stripes[s].devid, prof == DUP,
					     "chunk type 0x%llx: stripes %u and %u on devid %llu",
					     (unsigned long long)c->type, t, s,
					     (unsigned long long)c->stripes[s].devid);
		}
	}
	ref_close(fs);
	for (unsigned d = 0; d < n; d++) {
		struct btrfs_super_disk sb;
		cr_assert_eq(ref_read_super(vol, d, 0, &sb, &valid), 0);
		cr_assert_eq(LE64(sb.dev_item.bytes_used), used[d], "disk %u: bytes_used %llu, stripes %llu",
			     d, (unsigned long long)LE64(sb.dev_item.bytes_used), (unsigned long long)used[d]);
	}
}

static uint8_t *pattern(size_t len, uint64_t seed)
{
	uint8_t *p = malloc(len);
	cr_assert_not_null(p);
	for (size_t i = 0; i < len; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		p[i] = (uint8_t)(seed >> 56);
	}
	return p;
}

static void expect_file(sim_volume *vol, const struct ref_open_opts *oo, const char *path,
			const uint8_t *want, size_t len)
{
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_open(vol, oo, &fs, err, sizeof(err)), 0, "open: %s", err);
	struct ref_ino ino;
	cr_assert_eq(ref_lookup_path(fs, path, false, &ino), 0, "%s: %s", path, ref_error(fs));
	uint8_t *got = malloc(len + 1);
	cr_assert_eq(ref_pread(fs, &ino, got, len + 1, 0), (ssize_t)len, "%s", ref_error(fs));
	cr_assert_eq(memcmp(got, want, len), 0, "%s reads back different", path);
	free(got);
	ref_close(fs);
}

/* mkfs on n disks, the layout checked, a file written, fsynced, read back
 * after a remount, ref_check clean; with one disk lost, a mirrored volume
 * still reads it. */
static void roundtrip_on(unsigned n, uint64_t disk_mib, uint64_t data, uint64_t meta)
{
	sim_volume *vol = tu_open(n, disk_mib * MIB, 4096, n);
	char err[256];
	cr_assert_eq(mkfs_on(vol, data, meta, 0, err, sizeof(err)), 0, "mkfs: %s", err);
	expect_layout(vol, n, data, meta, 0);
	wu_expect_ref_clean(vol);

	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
	size_t len = 3 * MIB + 12345; /* many stripe units: RAID0 and RAID10 spread it */
	uint8_t *buf = pattern(len, data ^ meta ^ n);
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	WU_OK(fs, ref_create(fs, "/d/f", 0644));
	WU_OK(fs, ref_write(fs, "/d/f", buf, len, 0));
	WU_OK(fs, ref_create(fs, "/small", 0644));
	WU_OK(fs, ref_write(fs, "/small", "tiny", 4, 0));
	WU_OK(fs, ref_fsync(fs, "/d/f"));
	WU_OK(fs, ref_umount(fs));

	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "remount: %s", err);
	WU_OK(fs, ref_write(fs, "/d/f", "rewritten", 9, MIB));
	memcpy(buf + MIB, "rewritten", 9);
	WU_OK(fs, ref_umount(fs));
	struct ref_open_opts oo = { .super_mirror = -1 };
	expect_file(vol, &oo, "/d/f", buf, len);
	expect_file(vol, &oo, "/small", (const uint8_t *)"tiny", 4);
	wu_expect_ref_clean(vol);

	uint64_t redundant = RAID1 | RAID1C3 | RAID1C4 | RAID10 | RAID5 | RAID6;
	bool mirrored = (data & redundant) && (meta & redundant);
	if (mirrored) {
		/* Each disk missing in turn: the others, saved as images, open degraded. */
		char *dir = tu_tmpdir();
		char *paths[SIM_MAX_DISKS];
		for (unsigned d = 0; d < n; d++) {
			char name[16];
			snprintf(name, sizeof(name), "d%u.img", d);
			paths[d] = tu_path(dir, name);
			cr_assert_eq(sim_disk_save_image(vol, d, paths[d]), 0);
		}
		for (unsigned lost = 0; lost < n; lost += n > 4 ? n / 4 : 1) {
			struct sim_volume_config cfg;
			sim_config_init(&cfg, n - 1, 0, 1);
			memset(&cfg.latency, 0, sizeof(cfg.latency));
			for (unsigned d = 0, k = 0; d < n; d++)
				if (d != lost) {
					cfg.disk[k].image_path = paths[d];
					cfg.disk[k++].read_only = true;
				}
			sim_volume *part;
			cr_assert_eq(sim_volume_open(&cfg, &part, err, sizeof(err)), 0, "%s", err);
			struct ref_open_opts deg = { .super_mirror = -1, .degraded = true };
			expect_file(part, &deg, "/d/f", buf, len);
			sim_volume_close(part);
		}
		for (unsigned d = 0; d < n; d++)
			free(paths[d]);
		tu_rmdir(dir);
	}
	free(buf);
	sim_volume_close(vol);
}

static void roundtrip(unsigned n, uint64_t data, uint64_t meta)
{
	roundtrip_on(n, 256, data, meta);
}

Test(mkfs, one_disk_single) { roundtrip(1, SINGLE, SINGLE); }
Test(mkfs, one_disk_dup) { roundtrip(1, DUP, DUP); }
Test(mkfs, one_disk_raid0) { roundtrip(1, RAID0, DUP); }
Test(mkfs, two_disks_single) { roundtrip(2, SINGLE, SINGLE); }
Test(mkfs, two_disks_dup) { roundtrip(2, DUP, DUP); }
Test(mkfs, two_disks_raid0) { roundtrip(2, RAID0, RAID0); }
Test(mkfs, two_disks_raid1) { roundtrip(2, RAID1, RAID1); }
Test(mkfs, two_disks_raid10) { roundtrip(2, RAID10, RAID10); }
Test(mkfs, two_disks_single_data_raid1_meta) { roundtrip(2, SINGLE, RAID1); }
Test(mkfs, three_disks_single) { roundtrip(3, SINGLE, SINGLE); }
Test(mkfs, three_disks_dup) { roundtrip(3, DUP, DUP); }
Test(mkfs, three_disks_raid0) { roundtrip(3, RAID0, RAID0); }
Test(mkfs, three_disks_raid1) { roundtrip(3, RAID1, RAID1); }
Test(mkfs, three_disks_raid1c3) { roundtrip(3, RAID1C3, RAID1C3); }
Test(mkfs, three_disks_raid10) { roundtrip(3, RAID10, RAID10); }
Test(mkfs, three_disks_raid1_data_raid1c3_meta) { roundtrip(3, RAID1, RAID1C3); }
Test(mkfs, four_disks_raid1c4) { roundtrip(4, RAID1C4, RAID1C4); }
Test(mkfs, four_disks_raid10) { roundtrip(4, RAID10, RAID10); }
Test(mkfs, two_disks_raid5) { roundtrip(2, RAID5, RAID5); }
Test(mkfs, three_disks_raid5) { roundtrip(3, RAID5, RAID5); }
Test(mkfs, three_disks_raid6) { roundtrip(3, RAID6, RAID6); }
Test(mkfs, four_disks_raid6_data_raid1c3_meta) { roundtrip(4, RAID6, RAID1C3); }
Test(mkfs, five_disks_raid5_data_raid6_meta) { roundtrip(5, RAID5, RAID6); }

/* 24 disks and 4 KiB nodes: the device tree and the chunk tree take more
 * than one leaf; the SYSTEM chunk's stripes are capped to fit the superblock. */
Test(mkfs, many_disks_small_nodes)
{
	nodesize = 4096;
	sim_volume *vol = tu_open(24, 64 * MIB, 4096, 2);
	char err[256];
	cr_assert_eq(mkfs_on(vol, RAID0, RAID10, 0, err, sizeof(err)), 0, "mkfs: %s", err);
	ref_fs *fs;
	struct ref_open_opts oo = { .super_mirror = -1 };
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "%s", err);
	struct ref_root dev;
	cr_assert_eq(ref_find_root(fs, BTRFS_DEV_TREE_OBJECTID, &dev), 0);
	cr_assert_geq(dev.level, 1, "the device tree is one leaf: the test misses its point");
	cr_assert_geq(fs->chunk_root.level, 1);
	ref_close(fs);
	sim_volume_close(vol);
	roundtrip_on(24, 64, RAID0, RAID10);
	roundtrip_on(24, 64, RAID1, RAID1C4);
}

/* RAID1 data fills its first chunk: the write path allocates new RAID1
 * chunks across the devices mkfs made, and all of it reads back. */
Test(mkfs, raid1_grows_new_chunks)
{
	sim_volume *vol = tu_open(3, 256 * MIB, 4096, 5);
	char err[256];
	cr_assert_eq(mkfs_on(vol, RAID1, RAID1, 0, err, sizeof(err)), 0, "mkfs: %s", err);
	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
	size_t len = 60 * MIB;
	uint8_t *buf = pattern(len, 99);
	WU_OK(fs, ref_create(fs, "/big", 0644));
	for (size_t off = 0; off < len; off += 4 * MIB)
		WU_OK(fs, ref_write(fs, "/big", buf + off, 4 * MIB, off));
	WU_OK(fs, ref_umount(fs));
	struct ref_open_opts oo = { .super_mirror = -1 };
	ref_fs *ro;
	cr_assert_eq(ref_open(vol, &oo, &ro, err, sizeof(err)), 0, "%s", err);
	cr_assert_gt(ro->nchunks, 3, "no chunk was added");
	for (size_t i = 0; i < ro->nchunks; i++)
		if (ro->chunks[i].type & BTRFS_BLOCK_GROUP_DATA)
			cr_assert_eq(ro->chunks[i].type & BTRFS_BLOCK_GROUP_PROFILE_MASK, RAID1);
	ref_close(ro);
	expect_file(vol, &oo, "/big", buf, len);
	wu_expect_ref_clean(vol);
	free(buf);
	sim_volume_close(vol);
}

/* Disks of different sizes: the stripes go to the devices with the most room,
 * each device item has its own size, and --size applies to every disk. */
Test(mkfs, unequal_disks_and_size)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 3, 0, 3);
	memset(&cfg.latency, 0, sizeof(cfg.latency));
	cfg.disk[0].size = 160 * MIB;
	cfg.disk[1].size = 512 * MIB;
	cfg.disk[2].size = 384 * MIB;
	sim_volume *vol;
	char err[256];
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(mkfs_on(vol, SINGLE, RAID1, 0, err, sizeof(err)), 0, "mkfs: %s", err);
	expect_layout(vol, 3, SINGLE, RAID1, 0);
	ref_fs *fs;
	struct ref_open_opts oo = { .super_mirror = -1 };
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "%s", err);
	for (size_t i = 0; i < fs->nchunks; i++) {
		const struct ref_chunk *c = &fs->chunks[i];
		if (c->type & BTRFS_BLOCK_GROUP_SYSTEM) /* the first: the two largest disks */
			cr_assert(c->stripes[0].devid == 2 && c->stripes[1].devid == 3);
		if (c->type & BTRFS_BLOCK_GROUP_DATA) /* single: the disk with most room */
			cr_assert_eq(c->stripes[0].devid, 2);
	}
	ref_close(fs);
	wu_expect_ref_clean(vol);
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
	WU_OK(fs, ref_create(fs, "/f", 0644));
	WU_OK(fs, ref_write(fs, "/f", "hello", 5, 0));
	WU_OK(fs, ref_umount(fs));
	wu_expect_ref_clean(vol);

	/* --size: 150 MiB of each disk. */
	cr_assert_eq(mkfs_on(vol, RAID0, RAID1, 150 * MIB, err, sizeof(err)), 0, "mkfs: %s", err);
	expect_layout(vol, 3, RAID0, RAID1, 150 * MIB);
	wu_expect_ref_clean(vol);
	/* Bigger than the smallest disk. */
	cr_assert_eq(mkfs_on(vol, SINGLE, RAID1, 200 * MIB, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "exceeds disk 0"), "%s", err);
	sim_volume_close(vol);
}

/* The same seed and time: the same bytes on every disk. */
Test(mkfs, deterministic)
{
	uint64_t h[2][3];
	for (int run = 0; run < 2; run++) {
		sim_volume *vol = tu_open(3, 128 * MIB, 4096, 1);
		char err[256];
		cr_assert_eq(mkfs_on(vol, RAID10, RAID1C3, 0, err, sizeof(err)), 0, "mkfs: %s", err);
		for (unsigned d = 0; d < 3; d++)
			cr_assert_eq(sim_disk_durable_hash(vol, d, &h[run][d]), 0);
		sim_volume_close(vol);
	}
	cr_assert_eq(memcmp(h[0], h[1], sizeof(h[0])), 0);
	cr_assert_neq(h[0][0], h[0][1]);
}

/* Asserts mkfs fails with -e, a message holding `want`, and nothing on disk. */
static void expect_refused(unsigned n, uint64_t data, uint64_t meta, int e, const char *want)
{
	sim_volume *vol = tu_open(n, 256 * MIB, 4096, 1);
	char err[256] = "";
	cr_assert_eq(mkfs_on(vol, data, meta, 0, err, sizeof(err)), -e,
		     "%u disks, data 0x%llx meta 0x%llx: %s", n, (unsigned long long)data,
		     (unsigned long long)meta, err);
	cr_assert(strstr(err, want), "'%s' lacks '%s'", err, want);
	cr_assert_eq(strchr(err, '\n'), NULL);
	for (unsigned d = 0; d < n; d++) {
		struct btrfs_super_disk sb;
		bool valid = true;
		ref_read_super(vol, d, 0, &sb, &valid);
		cr_assert_not(valid, "disk %u got a superblock", d);
		cr_assert_eq(tu_log_count(vol, SIM_IO_WRITE) + tu_log_count(vol, SIM_IO_WRITE_FUA), 0);
	}
	sim_volume_close(vol);
}

Test(mkfs, too_few_devices)
{
	expect_refused(1, RAID1, DUP, EINVAL, "data profile RAID1 needs at least 2 devices, the volume has 1");
	expect_refused(1, SINGLE, RAID1, EINVAL, "metadata profile RAID1 needs at least 2 devices");
	expect_refused(1, SINGLE, RAID10, EINVAL, "metadata profile RAID10 needs at least 2 devices");
	expect_refused(2, RAID1C3, RAID1, EINVAL, "data profile RAID1C3 needs at least 3 devices, the volume has 2");
	expect_refused(2, SINGLE, RAID1C3, EINVAL, "metadata profile RAID1C3 needs at least 3");
	expect_refused(3, RAID1C4, RAID1C3, EINVAL, "data profile RAID1C4 needs at least 4 devices, the volume has 3");
	expect_refused(3, SINGLE, RAID1C4, EINVAL, "metadata profile RAID1C4 needs at least 4");
	expect_refused(1, RAID5, DUP, EINVAL, "data profile RAID5 needs at least 2 devices, the volume has 1");
	expect_refused(2, SINGLE, RAID6, EINVAL, "metadata profile RAID6 needs at least 3 devices, the volume has 2");
}

Test(mkfs, bad_profiles)
{
	expect_refused(3, RAID5 | RAID6, RAID1, EINVAL, "not one of");
	expect_refused(2, RAID1 | RAID0, RAID1, EINVAL, "not one of");
	expect_refused(2, SINGLE, BTRFS_BLOCK_GROUP_DATA, EINVAL, "not one of");
}

Test(mkfs, disk_too_small)
{
	sim_volume *vol = tu_open(2, 24 * MIB, 4096, 1);
	char err[256];
	cr_assert_eq(mkfs_on(vol, RAID1, RAID1, 0, err, sizeof(err)), -ENOSPC);
	cr_assert(strstr(err, "too small"), "%s", err);
	sim_volume_close(vol);
}
