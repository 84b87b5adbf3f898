/*
 * test_striped.c - writing with the striped profiles: RAID5 and RAID6 (data
 * and parity row by row, raid56_write.c) and new chunks of RAID0, RAID10,
 * RAID5 and RAID6 as the first ones fill (chunk_alloc.c).
 *
 * Random writes and overwrites of a few files, checked against a model of
 * their bytes; then every row of every RAID5/6 chunk has the P (and Q) its
 * data gives, and the files read the same with any one disk lost (RAID6: any
 * two), the lost columns rebuilt from parity.  (`btrfs check`, the kernel's
 * degraded mounts and its scrub judge the same images in
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
#define KIB 1024u
#define NFILES 4
#define FILE_MAX (2 * MIB)

TestSuite(striped);

#define RAID0 BTRFS_BLOCK_GROUP_RAID0
#define RAID1 BTRFS_BLOCK_GROUP_RAID1
#define RAID10 BTRFS_BLOCK_GROUP_RAID10
#define RAID5 BTRFS_BLOCK_GROUP_RAID5
#define RAID6 BTRFS_BLOCK_GROUP_RAID6

struct model {
	uint8_t *bytes[NFILES];
	size_t len[NFILES];
};

static sim_volume *fresh(unsigned n, unsigned disk_mib, uint64_t data, uint64_t meta)
{
	return wu_volume(n, disk_mib, data, meta, 5);
}

static ref_fs *mount_rw(sim_volume *vol)
{
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
	return fs;
}

static uint64_t next(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 33;
}

/* `nops` writes of 1 byte to 300 KiB at random offsets of the files (some
 * sector-aligned, some not), a remount every 25. */
static ref_fs *random_writes(sim_volume *vol, ref_fs *fs, struct model *m, int nops, uint64_t seed)
{
	uint8_t *buf = malloc(300 * KIB);
	cr_assert(buf);
	char path[16];
	for (int i = 0; i < nops; i++) {
		int f = (int)(next(&seed) % NFILES);
		snprintf(path, sizeof(path), "/f%d", f);
		size_t len = 1 + next(&seed) % (300 * KIB);
		uint64_t off = next(&seed) % (FILE_MAX - len);
		if (next(&seed) % 2)
			off &= ~(uint64_t)4095;
		for (size_t b = 0; b < len; b++)
			buf[b] = (uint8_t)next(&seed);
		if (!m->bytes[f]) {
			cr_assert(m->bytes[f] = calloc(1, FILE_MAX));
			WU_OK(fs, ref_create(fs, path, 0644));
		}
		WU_OK(fs, ref_write(fs, path, buf, len, off));
		memcpy(m->bytes[f] + off, buf, len);
		if (off + len > m->len[f])
			m->len[f] = off + len;
		if (i % 25 == 24) {
			WU_OK(fs, ref_umount(fs));
			fs = mount_rw(vol);
		}
	}
	free(buf);
	return fs;
}

static void expect_files(sim_volume *vol, const struct model *m, bool degraded, const char *what)
{
	struct ref_open_opts oo = { .super_mirror = -1, .degraded = degraded };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "%s: open: %s", what, err);
	uint8_t *got = malloc(FILE_MAX + 1);
	cr_assert(got);
	for (int f = 0; f < NFILES; f++) {
		if (!m->bytes[f])
			continue;
		char path[16];
		snprintf(path, sizeof(path), "/f%d", f);
		struct ref_ino ino;
		cr_assert_eq(ref_lookup_path(fs, path, false, &ino), 0, "%s: %s: %s", what, path,
			     ref_error(fs));
		ssize_t n = ref_pread(fs, &ino, got, FILE_MAX + 1, 0);
		cr_assert_eq(n, (ssize_t)m->len[f], "%s: %s: read %zd of %zu: %s", what, path, n,
			     m->len[f], ref_error(fs));
		cr_assert_eq(memcmp(got, m->bytes[f], m->len[f]), 0, "%s: %s reads back different",
			     what, path);
	}
	free(got);
	ref_close(fs);
}

/* Every row of every RAID5/6 chunk: P (and Q) equal what its data columns give. */
static void expect_parity(sim_volume *vol)
{
	struct ref_open_opts oo = { .super_mirror = -1 };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "open: %s", err);
	int checked = 0;
	for (size_t i = 0; i < fs->nchunks; i++) {
		const struct ref_chunk *c = &fs->chunks[i];
		if (!(c->type & BTRFS_BLOCK_GROUP_RAID56_MASK))
			continue;
		bool raid6 = c->type & RAID6;
		int n = c->num_stripes, k = n - (raid6 ? 2 : 1), np = raid6 ? 2 : 1;
		uint64_t sl = c->stripe_len, rows = c->length / ((uint64_t)k * sl);
		uint8_t *cols[SIM_MAX_DISKS + 2];
		for (int j = 0; j < n + np; j++)
			cr_assert(cols[j] = aligned_alloc(64, sl));
		for (uint64_t row = 0; row < rows; row++) {
			for (int j = 0; j < n; j++) {
				const struct ref_stripe *st = &c->stripes[(row + (uint64_t)j) % (uint64_t)n];
				cr_assert_eq(sim_read(vol, (unsigned)st->disk, st->physical + row * sl,
						      cols[j], sl), 0);
			}
			/* Recomputed into cols[n..]: data columns, then fresh P (and Q). */
			uint8_t *calc[SIM_MAX_DISKS + 2];
			for (int j = 0; j < k; j++)
				calc[j] = cols[j];
			for (int j = 0; j < np; j++)
				calc[k + j] = cols[n + j];
			cr_assert_eq(raid56_parity(k, raid6, sl, calc), 0);
			for (int j = 0; j < np; j++)
				cr_assert_eq(memcmp(cols[k + j], cols[n + j], sl), 0,
					     "chunk %llu row %llu: %s differs from its data",
					     (unsigned long long)c->logical, (unsigned long long)row,
					     j ? "Q" : "P");
			checked++;
		}
		for (int j = 0; j < n + np; j++)
			free(cols[j]);
	}
	cr_assert_gt(checked, 0, "no RAID5/6 row checked");
	ref_close(fs);
}

/* The volume's disks saved, then opened without the disks in `lost` (a bit
 * mask): the files still read right, degraded. */
static void expect_degraded(unsigned n, const struct model *m, uint64_t lost,
			    char *const *paths)
{
	sim_volume *part = wu_open_images(paths, n, ((UINT64_C(1) << n) - 1) & ~lost, true);
	char what[64];
	snprintf(what, sizeof(what), "disks 0x%llx lost", (unsigned long long)lost);
	expect_files(part, m, true, what);
	sim_volume_close(part);
}

static void raid56_mix(unsigned n, uint64_t data, uint64_t meta, int nops, uint64_t seed)
{
	sim_volume *vol = fresh(n, 256, data, meta);
	ref_fs *fs = mount_rw(vol);
	struct model m = { { NULL }, { 0 } };
	fs = random_writes(vol, fs, &m, nops, seed);
	WU_OK(fs, ref_umount(fs));
	wu_expect_ref_clean(vol);
	expect_files(vol, &m, false, "all disks");
	expect_parity(vol);

	char *paths[SIM_MAX_DISKS], *dir = wu_save_images(vol, n, paths);
	bool two = (data & RAID6) && (meta & RAID6);
	for (unsigned a = 0; a < n; a++) {
		expect_degraded(n, &m, UINT64_C(1) << a, paths);
		for (unsigned b = a + 1; two && b < n; b++)
			expect_degraded(n, &m, UINT64_C(1) << a | UINT64_C(1) << b, paths);
	}
	for (unsigned d = 0; d < n; d++)
		free(paths[d]);
	tu_rmdir(dir);
	for (int f = 0; f < NFILES; f++)
		free(m.bytes[f]);
	sim_volume_close(vol);
}

Test(striped, raid5_two_disks) { raid56_mix(2, RAID5, RAID5, 120, 1); }
Test(striped, raid5_three_disks) { raid56_mix(3, RAID5, RAID5, 150, 2); }
Test(striped, raid6_three_disks) { raid56_mix(3, RAID6, RAID6, 120, 3); }
Test(striped, raid6_four_disks) { raid56_mix(4, RAID6, RAID6, 150, 4); }
Test(striped, raid5_data_raid6_meta_five_disks) { raid56_mix(5, RAID5, RAID6, 150, 5); }
Test(striped, raid6_data_raid1_meta_four_disks) { raid56_mix(4, RAID6, RAID1, 100, 6); }

/* Writing past the first chunks: new ones in the same profile, as many
 * stripes as devices with room, readable after a remount. */
static void grows(unsigned n, uint64_t data, uint64_t meta)
{
	sim_volume *vol = fresh(n, 192, data, meta);
	ref_fs *fs = mount_rw(vol);
	size_t before = fs->nchunks, len = 8 * MIB;
	uint8_t *buf = tu_pat(len, n);
	char path[16];
	int files = 0;
	/* Until two more data chunks exist (or the devices fill). */
	while (fs->nchunks < before + 2 && files < 40) {
		snprintf(path, sizeof(path), "/g%d", files++);
		WU_OK(fs, ref_create(fs, path, 0644));
		WU_OK(fs, ref_write(fs, path, buf, len, 0));
		WU_OK(fs, ref_sync(fs));
	}
	cr_assert_geq(fs->nchunks, before + 2, "%zu chunks after %d files of 8 MiB", fs->nchunks,
		      files);
	for (size_t i = before; i < fs->nchunks; i++) {
		const struct ref_chunk *c = &fs->chunks[i];
		uint64_t prof = c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK;
		uint64_t want = c->type & BTRFS_BLOCK_GROUP_DATA ? data : meta;
		cr_assert_eq(prof, want, "new chunk %llu: type 0x%llx", (unsigned long long)c->logical,
			     (unsigned long long)c->type);
		unsigned stripes = prof == RAID10 ? n & ~1u : n;
		cr_assert_eq(c->num_stripes, stripes, "new chunk 0x%llx: %u stripes",
			     (unsigned long long)c->type, c->num_stripes);
		cr_assert_eq(c->sub_stripes, prof == RAID10 ? 2 : 1);
	}
	WU_OK(fs, ref_umount(fs));
	wu_expect_ref_clean(vol);
	fs = mount_rw(vol);
	uint8_t *got = malloc(len);
	for (int f = 0; f < files; f++) {
		snprintf(path, sizeof(path), "/g%d", f);
		struct ref_ino ino;
		WU_OK(fs, ref_lookup_path(fs, path, false, &ino));
		cr_assert_eq(ref_pread(fs, &ino, got, len, 0), (ssize_t)len);
		cr_assert_eq(memcmp(got, buf, len), 0, "%s reads back different", path);
	}
	WU_OK(fs, ref_umount(fs));
	if ((data | meta) & BTRFS_BLOCK_GROUP_RAID56_MASK)
		expect_parity(vol);
	free(got);
	free(buf);
	sim_volume_close(vol);
}

Test(striped, raid0_grows) { grows(3, RAID0, RAID1); }
Test(striped, raid10_grows) { grows(4, RAID10, RAID10); }
Test(striped, raid5_grows) { grows(3, RAID5, RAID5); }
Test(striped, raid6_grows) { grows(4, RAID6, RAID6); }

/* A read-modify-write never folds a wrong column into the parity: /a's
 * column is scribbled (as a lost or rotten write leaves it), then /b goes
 * into the same row.  The write reads /a's column back, finds its checksums
 * wrong, rebuilds it from the old parity, writes it back mended and makes the
 * new parity from the right bytes (Linux 6.2+'s RMW verification).  Without
 * that, /a could never be read again. */
Test(striped, rmw_verifies_the_row)
{
	sim_volume *vol = fresh(3, 128, RAID5, RAID1);
	ref_fs *fs = mount_rw(vol);
	uint8_t *a = tu_pat(64 * KIB, 31), *b = tu_pat(8 * KIB, 32);
	WU_OK(fs, ref_create(fs, "/a", 0644));
	WU_OK(fs, ref_write(fs, "/a", a, 64 * KIB, 0));
	WU_OK(fs, ref_umount(fs));

	struct ref_open_opts oo = { .super_mirror = -1 };
	char err[256];
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "%s", err);
	uint64_t at = wu_file_extent(fs, "/a");
	struct ref_phys ph[4];
	uint64_t run;
	cr_assert_gt(ref_map(fs, at, ph, 4, &run), 0);
	ref_close(fs);
	uint8_t *junk = tu_pat(4096, 33);
	cr_assert_eq(sim_write(vol, (unsigned)ph[0].disk, ph[0].physical + 4096, junk, 4096, 0), 0);

	fs = mount_rw(vol);
	WU_OK(fs, ref_create(fs, "/b", 0644));
	WU_OK(fs, ref_write(fs, "/b", b, 8 * KIB, 0));
	WU_OK(fs, ref_umount(fs));
	uint8_t *col = malloc(64 * KIB);
	cr_assert_eq(sim_read(vol, (unsigned)ph[0].disk, ph[0].physical, col, 64 * KIB), 0);
	cr_assert_eq(memcmp(col, a, 64 * KIB), 0, "/a's column was not mended by the write into its row");
	expect_parity(vol);
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "%s", err);
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, "/a", false, &ino));
	cr_assert_eq(ref_pread(fs, &ino, col, 64 * KIB, 0), 64 * KIB, "%s", ref_error(fs));
	cr_assert_eq(memcmp(col, a, 64 * KIB), 0);
	ref_close(fs);
	free(col);
	free(junk);
	free(a);
	free(b);
	sim_volume_close(vol);
}
