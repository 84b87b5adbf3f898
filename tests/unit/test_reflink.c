/*
 * test_reflink.c - ref_clone_range, ref_clone and ref_dedupe_range
 * (ref/reflink/) against what Linux 6.18 does with FICLONERANGE, FICLONE
 * and FIDEDUPERANGE on btrfs (measured on the kernel, 4 KiB sectors): the
 * cases of alignment, end of file, overlap, zero length, files past each
 * other's ends, directories, read-only snapshots, nodatasum, inline
 * extents, holes and preallocated extents; bytes read back, the extents
 * really shared (one disk extent, two references), sizes, times and
 * capabilities as the kernel leaves them; quota numbers moved as the
 * kernel moves them; every image checked by ref and btrfs check.
 */
#include "tests/unit/testutil.h"
#include "tests/unit/wrutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define K4 4096u

/* A file of len pattern bytes (tag), written in one call. */
static uint8_t *make_file(ref_fs *fs, const char *path, size_t len, uint64_t tag)
{
	uint8_t *d = tu_pat(len ? len : 1, tag);
	WU_OK(fs, ref_create(fs, path, 0644));
	if (len)
		WU_OK(fs, ref_write(fs, path, d, len, 0));
	return d;
}

static struct ref_stat stat_of(ref_fs *fs, const char *path)
{
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, path, true, &st));
	return st;
}

/* path holds want[0..len) and nothing more. */
static void expect_bytes(ref_fs *fs, const char *path, const uint8_t *want, size_t len)
{
	cr_assert_eq(stat_of(fs, path).size, len, "%s: size %llu, want %zu", path,
		     (unsigned long long)stat_of(fs, path).size, len);
	uint8_t *got = malloc(len + 1);
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, path, true, &ino));
	ssize_t n = ref_pread(fs, &ino, got, len, 0);
	cr_assert_eq(n, (ssize_t)len, "%s: read %zd", path, n);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(got[i], want[i], "%s: byte %zu is %#x, want %#x", path, i, got[i], want[i]);
	free(got);
}

static void finish(ref_fs *fs, sim_volume *vol)
{
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* Case 1: an aligned range into the middle of another file: the bytes,
 * one disk extent for both, the destination's old extent split. */
Test(reflink, aligned_clone_into_the_middle_shares_the_extent)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	uint8_t *s = make_file(fs, "/s", 65536, 1), *d = make_file(fs, "/d", 65536, 2);
	struct ref_stat before = stat_of(fs, "/d");
	WU_OK(fs, ref_clone_range(fs, "/s", 0, 16384, "/d", 32768));
	memcpy(d + 32768, s, 16384);
	expect_bytes(fs, "/d", d, 65536);
	for (uint64_t o = 0; o < 16384; o += K4)
		cr_assert_eq(wu_extent_at(fs, "/s", o, NULL), wu_extent_at(fs, "/d", 32768 + o, NULL),
			     "offset %llu is not shared", (unsigned long long)o);
	cr_assert_neq(wu_extent_at(fs, "/d", 0, NULL), wu_extent_at(fs, "/s", 0, NULL));
	struct ref_stat after = stat_of(fs, "/d");
	cr_assert_eq(after.nbytes, before.nbytes);
	cr_assert(after.mtime.tv_sec > before.mtime.tv_sec ||
		  (after.mtime.tv_sec == before.mtime.tv_sec &&
		   after.mtime.tv_nsec >= before.mtime.tv_nsec));
	finish(fs, vol);
	free(s);
	free(d);
}

/* Cases 2-5: a range ending at the source's unaligned end lands at or past
 * the destination's end, never inside it. */
Test(reflink, the_source_end_lands_only_at_the_destination_end)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	uint8_t *s = make_file(fs, "/s", 10000, 3), *d = make_file(fs, "/d", 8192, 4);
	uint8_t *e = make_file(fs, "/e", 5000, 5), *m = make_file(fs, "/m", 65536, 6);
	WU_OK(fs, ref_clone_range(fs, "/s", 8192, 1808, "/d", 8192));
	uint8_t *want = calloc(1, 20000);
	memcpy(want, d, 8192);
	memcpy(want + 8192, s + 8192, 1808);
	expect_bytes(fs, "/d", want, 10000);
	WU_OK(fs, ref_clone_range(fs, "/s", 8192, 1808, "/e", 4096)); /* 5904 >= 5000 */
	memset(want, 0, 20000);
	memcpy(want, e, 4096);
	memcpy(want + 4096, s + 8192, 1808);
	expect_bytes(fs, "/e", want, 5904);
	WU_ERR(fs, ref_clone_range(fs, "/s", 8192, 1808, "/m", 8192), EINVAL);
	WU_ERR(fs, ref_clone_range(fs, "/s", 8192, 0, "/m", 8192), EINVAL);
	WU_ERR(fs, ref_clone(fs, "/s", "/m"), EINVAL); /* FICLONE of 10000 into 65536 */
	expect_bytes(fs, "/m", m, 65536);
	WU_OK(fs, ref_truncate(fs, "/e", 3000));
	WU_OK(fs, ref_clone(fs, "/s", "/e"));
	expect_bytes(fs, "/e", s, 10000);
	finish(fs, vol);
	free(s);
	free(d);
	free(e);
	free(m);
	free(want);
}

/* Cases 6-9: within one file, zero lengths, offsets at and past the end. */
Test(reflink, one_file_overlap_and_zero_lengths)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	uint8_t *f = make_file(fs, "/f", 65536, 7), *g = make_file(fs, "/g", 10000, 8);
	WU_ERR(fs, ref_clone_range(fs, "/f", 0, 16384, "/f", 8192), EINVAL);
	WU_ERR(fs, ref_clone(fs, "/f", "/f"), EINVAL);
	WU_OK(fs, ref_clone_range(fs, "/f", 0, 16384, "/f", 16384));
	memcpy(f + 16384, f, 16384);
	expect_bytes(fs, "/f", f, 65536);
	WU_OK(fs, ref_clone_range(fs, "/f", 0, 16384, "/f", 32768));
	memcpy(f + 32768, f, 16384);
	expect_bytes(fs, "/f", f, 65536);
	/* g: 10000 bytes; its tail cloned past its end, then into its middle */
	WU_OK(fs, ref_clone_range(fs, "/g", 8192, 0, "/g", 12288));
	uint8_t *want = calloc(1, 14096);
	memcpy(want, g, 10000);
	memcpy(want + 12288, g + 8192, 1808);
	expect_bytes(fs, "/g", want, 14096);
	WU_ERR(fs, ref_clone_range(fs, "/g", 8192, 0, "/g", 4096), EINVAL);
	/* len 0: to the end; at the end nothing to do; past it EINVAL */
	WU_OK(fs, ref_create(fs, "/empty", 0644));
	WU_OK(fs, ref_clone_range(fs, "/g", 0, 0, "/empty", 0));
	expect_bytes(fs, "/empty", want, 14096);
	WU_OK(fs, ref_clone_range(fs, "/g", 14096, 0, "/f", 0));
	WU_ERR(fs, ref_clone_range(fs, "/g", 14097, 0, "/f", 0), EINVAL);
	WU_ERR(fs, ref_clone_range(fs, "/g", 16384, 0, "/f", 0), EINVAL);
	WU_ERR(fs, ref_clone_range(fs, "/g", 4097, 0, "/f", 0), EINVAL);
	expect_bytes(fs, "/f", f, 65536);
	finish(fs, vol);
	free(f);
	free(g);
	free(want);
}

/* Cases 10-13 and 17: ranges past the source, unaligned, past 2^63; a
 * destination offset past its end (the gap reads as zeros); an empty
 * source. */
Test(reflink, ranges_refused_and_a_gap_past_the_end)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	uint8_t *s = make_file(fs, "/s", 10000, 9), *d = make_file(fs, "/d", 5000, 10);
	uint8_t *t = make_file(fs, "/t", 8192, 11);
	const uint64_t bad[][3] = { { 12288, 4096, 0 }, { 0, 16384, 0 }, { 8192, 4096, 0 },
				    { 10000, 4096, 0 }, { 100, 4096, 0 }, { 0, 4096, 100 },
				    { 0, 4000, 0 }, { 0, 5000, 0 } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		WU_ERR(fs, ref_clone_range(fs, "/s", bad[i][0], bad[i][1], "/d", bad[i][2]), EINVAL);
	WU_ERR(fs, ref_clone_range(fs, "/s", UINT64_C(1) << 63, 4096, "/d", 0), EINVAL);
	WU_ERR(fs, ref_clone_range(fs, "/s", 0, 4096, "/d", UINT64_C(0x7ffffffffffff000)), EINVAL);
	expect_bytes(fs, "/d", d, 5000);
	WU_OK(fs, ref_clone_range(fs, "/t", 0, 8192, "/d", 65536));
	uint8_t *want = calloc(1, 73728);
	memcpy(want, d, 5000);
	memcpy(want + 65536, t, 8192);
	expect_bytes(fs, "/d", want, 73728);
	WU_OK(fs, ref_create(fs, "/z", 0644));
	WU_OK(fs, ref_clone(fs, "/z", "/d"));
	WU_OK(fs, ref_clone_range(fs, "/z", 0, 0, "/d", 0));
	WU_ERR(fs, ref_clone_range(fs, "/z", 0, 4096, "/d", 0), EINVAL);
	expect_bytes(fs, "/d", want, 73728);
	finish(fs, vol);
	free(s);
	free(d);
	free(t);
	free(want);
}

/* Cases 14 and 19: directories, fifos, missing files, a symlink followed,
 * across subvolumes, a read-only snapshot as destination (EROFS before any
 * range check) and as source. */
Test(reflink, what_is_no_regular_writable_file)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	WU_OK(fs, ref_subvol_create(fs, "/sv", NULL));
	uint8_t *s = make_file(fs, "/sv/s", 8192, 12), *d = make_file(fs, "/d", 8192, 13);
	WU_OK(fs, ref_mkdir(fs, "/dir", 0755));
	WU_OK(fs, ref_mknod(fs, "/p", S_IFIFO | 0644, 0));
	WU_OK(fs, ref_symlink(fs, "sv/s", "/link"));
	WU_ERR(fs, ref_clone(fs, "/dir", "/d"), EISDIR);
	WU_ERR(fs, ref_clone(fs, "/sv/s", "/dir"), EISDIR);
	WU_ERR(fs, ref_clone(fs, "/p", "/d"), EINVAL);
	WU_ERR(fs, ref_clone(fs, "/sv/s", "/p"), EINVAL);
	WU_ERR(fs, ref_clone(fs, "/nothing", "/d"), ENOENT);
	WU_ERR(fs, ref_clone(fs, "/sv/s", "/nothing"), ENOENT);
	expect_bytes(fs, "/d", d, 8192);
	WU_OK(fs, ref_clone(fs, "/link", "/d"));
	expect_bytes(fs, "/d", s, 8192);
	cr_assert_eq(wu_extent_at(fs, "/d", 0, NULL), wu_extent_at(fs, "/sv/s", 0, NULL));
	WU_OK(fs, ref_snapshot(fs, "/sv", "/ro", true, NULL));
	WU_ERR(fs, ref_clone(fs, "/d", "/ro/s"), EROFS);
	WU_ERR(fs, ref_clone_range(fs, "/d", 1, 3, "/ro/s", 5), EROFS);
	WU_OK(fs, ref_create(fs, "/e", 0644));
	WU_OK(fs, ref_clone(fs, "/ro/s", "/e"));
	expect_bytes(fs, "/e", s, 8192);
	finish(fs, vol);
	free(s);
	free(d);
}

/* Cases 29-31: an inline source into an empty file and a short inline one
 * (stays inline), into a file with a regular extent at 0 or past offset 0
 * (written as data), into the middle of a longer file (EINVAL). */
Test(reflink, inline_sources)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	uint8_t *s = make_file(fs, "/s", 100, 14), *i50 = make_file(fs, "/i50", 50, 15);
	uint8_t type;
	wu_extent_at(fs, "/s", 0, &type);
	cr_assert_eq(type, BTRFS_FILE_EXTENT_INLINE, "set-up: /s is not inline");
	WU_OK(fs, ref_create(fs, "/empty", 0644));
	WU_OK(fs, ref_clone(fs, "/s", "/empty"));
	expect_bytes(fs, "/empty", s, 100);
	wu_extent_at(fs, "/empty", 0, &type);
	cr_assert_eq(type, BTRFS_FILE_EXTENT_INLINE);
	cr_assert_eq(stat_of(fs, "/empty").nbytes, 100);
	WU_OK(fs, ref_clone(fs, "/s", "/i50"));
	expect_bytes(fs, "/i50", s, 100);
	wu_extent_at(fs, "/i50", 0, &type);
	cr_assert_eq(type, BTRFS_FILE_EXTENT_INLINE);
	uint8_t *f = make_file(fs, "/f", 4096, 16);
	WU_OK(fs, ref_clone_range(fs, "/s", 0, 0, "/f", 4096));
	uint8_t *want = calloc(1, 8292);
	memcpy(want, f, 4096);
	memcpy(want + 4096, s, 100);
	expect_bytes(fs, "/f", want, 4196);
	WU_OK(fs, ref_create(fs, "/g", 0644));
	WU_OK(fs, ref_clone_range(fs, "/s", 0, 0, "/g", 8192));
	memset(want, 0, 8292);
	memcpy(want + 8192, s, 100);
	expect_bytes(fs, "/g", want, 8292);
	uint8_t *big = make_file(fs, "/big", 8192, 17);
	WU_ERR(fs, ref_clone(fs, "/s", "/big"), EINVAL);
	expect_bytes(fs, "/big", big, 8192);
	/* a destination with an inline extent receiving regular ones past it */
	uint8_t *r8 = make_file(fs, "/r8", 8192, 18);
	WU_OK(fs, ref_clone_range(fs, "/r8", 0, 8192, "/i50", 8192));
	memset(want, 0, 8292);
	memcpy(want, s, 100);
	memcpy(want + 8192, r8, 100);
	uint8_t *w2 = calloc(1, 16384);
	memcpy(w2, s, 100);
	memcpy(w2 + 8192, r8, 8192);
	expect_bytes(fs, "/i50", w2, 16384);
	finish(fs, vol);
	free(s);
	free(i50);
	free(f);
	free(big);
	free(r8);
	free(want);
	free(w2);
}

/* Case 32: a source of data, a hole, a preallocated range and data again:
 * the hole stays a hole, the preallocated range stays preallocated. */
Test(reflink, holes_and_preallocated_ranges)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	uint8_t *a = tu_pat(8192, 19), *b = tu_pat(4096, 20), *d = NULL;
	WU_OK(fs, ref_create(fs, "/s", 0644));
	WU_OK(fs, ref_write(fs, "/s", a, 8192, 0));
	WU_OK(fs, ref_fallocate(fs, "/s", FALLOC_FL_KEEP_SIZE, 16384, 8192));
	WU_OK(fs, ref_write(fs, "/s", b, 4096, 32768));
	d = make_file(fs, "/d", 49152, 21);
	WU_OK(fs, ref_clone_range(fs, "/s", 0, 36864, "/d", 4096));
	uint8_t *want = calloc(1, 49152);
	memcpy(want, d, 4096);
	memcpy(want + 4096, a, 8192);
	memcpy(want + 36864, b, 4096);
	memcpy(want + 40960, d + 40960, 8192);
	expect_bytes(fs, "/d", want, 49152);
	uint8_t type;
	cr_assert_eq(wu_extent_at(fs, "/d", 12288, &type), 0);
	cr_assert_eq(type, 0xff, "a hole at 12288");
	cr_assert_eq(wu_extent_at(fs, "/d", 20480, &type), wu_extent_at(fs, "/s", 16384, NULL));
	cr_assert_eq(type, BTRFS_FILE_EXTENT_PREALLOC);
	cr_assert_eq(wu_extent_at(fs, "/d", 36864, NULL), wu_extent_at(fs, "/s", 32768, NULL));
	/* a range the source has no extent in: the destination's data there
	 * goes, a hole */
	WU_OK(fs, ref_truncate(fs, "/s", 200000));
	WU_OK(fs, ref_clone_range(fs, "/s", 131072, 8192, "/d", 0));
	memset(want, 0, 8192);
	expect_bytes(fs, "/d", want, 49152);
	cr_assert_eq(wu_extent_at(fs, "/d", 4096, &type), 0);
	finish(fs, vol);
	free(a);
	free(b);
	free(d);
	free(want);
}

/* Case 33: the destination loses its capabilities, keeps its set-id bits
 * (root clones); a failed or empty clone changes nothing. */
Test(reflink, capabilities_go_set_id_bits_stay)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	uint8_t *s = make_file(fs, "/s", 8192, 22), *d = make_file(fs, "/d", 8192, 23);
	static const uint8_t caps[20] = { 1, 0, 0, 2, 0, 0x20 };
	WU_OK(fs, ref_chmod(fs, "/d", 06755));
	WU_OK(fs, ref_setxattr(fs, "/d", "security.capability", caps, sizeof(caps), 0));
	WU_ERR(fs, ref_clone_range(fs, "/s", 0, 100, "/d", 0), EINVAL);
	cr_assert_eq(ref_getxattr(fs, "/d", "security.capability", NULL, 0), (ssize_t)sizeof(caps));
	WU_OK(fs, ref_clone(fs, "/s", "/d"));
	cr_assert_eq(ref_getxattr(fs, "/d", "security.capability", NULL, 0), -ENODATA);
	cr_assert_eq(stat_of(fs, "/d").mode & 07777, 06755);
	finish(fs, vol);
	free(s);
	free(d);
}

/* A clone then an fsync of the destination: after a power loss the log's
 * replay gives the cloned bytes, still shared, and the image checks clean. */
Test(reflink, an_fsynced_clone_survives_power_loss)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	uint8_t *s = make_file(fs, "/s", 65536, 24), *d = make_file(fs, "/d", 16384, 25);
	WU_OK(fs, ref_sync(fs));
	WU_OK(fs, ref_clone_range(fs, "/s", 8192, 16384, "/d", 8192));
	WU_OK(fs, ref_fsync(fs, "/d"));
	struct ref_log_stats ls;
	ref_log_stats(fs, &ls);
	cr_assert_eq(ls.log_syncs, 1, "the fsync wrote the log");
	sim_volume *c;
	cr_assert_eq(sim_volume_clone(vol, &c), 0);
	struct sim_crash_spec none = { .policy = SIM_CRASH_NONE };
	cr_assert_eq(sim_volume_crash(c, &none, NULL), 0);
	ref_close(fs);
	sim_volume_close(vol);
	struct ref_mount_opts mo = { .open = { .super_mirror = -1 } };
	char err[256];
	cr_assert_eq(ref_mount(c, &mo, &fs, err, sizeof(err)), 0, "%s", err);
	uint8_t want[24576];
	memcpy(want, d, 8192);
	memcpy(want + 8192, s + 8192, 16384);
	expect_bytes(fs, "/d", want, sizeof(want));
	cr_assert_eq(wu_extent_at(fs, "/d", 8192, NULL), wu_extent_at(fs, "/s", 8192, NULL));
	finish(fs, c);
	free(s);
	free(d);
}

/* Quota groups count a shared extent whole, once per subvolume: a clone of
 * 64 KiB of a 1 MiB extent into another subvolume moves the whole extent
 * into its referenced bytes and out of the source's exclusive ones (the
 * kernel's numbers, measured). */
Test(reflink, quota_groups_count_the_whole_extent)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	WU_OK(fs, ref_qgroup_enable(fs));
	WU_OK(fs, ref_subvol_create(fs, "/qa", NULL));
	WU_OK(fs, ref_subvol_create(fs, "/qb", NULL));
	uint8_t *s = make_file(fs, "/qa/f", 1 << 20, 26), *d = make_file(fs, "/qb/g", 4096, 27);
	WU_OK(fs, ref_sync(fs));
	struct ref_ino a, b;
	WU_OK(fs, ref_lookup_path(fs, "/qa", true, &a));
	WU_OK(fs, ref_lookup_path(fs, "/qb", true, &b));
	struct ref_qgroup *l;
	size_t n;
	uint64_t before[4] = { 0 }, after[4] = { 0 };
	for (int round = 0; round < 2; round++) {
		uint64_t *v = round ? after : before;
		WU_OK(fs, ref_qgroup_list(fs, &l, &n));
		for (size_t i = 0; i < n; i++) {
			if (l[i].id == a.subvol) {
				v[0] = l[i].rfer;
				v[1] = l[i].excl;
			} else if (l[i].id == b.subvol) {
				v[2] = l[i].rfer;
				v[3] = l[i].excl;
			}
		}
		free(l);
		if (!round) {
			WU_OK(fs, ref_clone_range(fs, "/qa/f", 65536, 65536, "/qb/g", 4096));
			WU_OK(fs, ref_sync(fs));
		}
	}
	const uint64_t mib = 1 << 20;
	cr_assert_eq(after[0], before[0], "qa referenced");
	cr_assert_eq(after[1], before[1] - mib, "qa exclusive: %llu -> %llu",
		     (unsigned long long)before[1], (unsigned long long)after[1]);
	cr_assert_eq(after[2], before[2] + mib, "qb referenced: %llu -> %llu",
		     (unsigned long long)before[2], (unsigned long long)after[2]);
	cr_assert_eq(after[3], before[3], "qb exclusive");
	finish(fs, vol);
	free(s);
	free(d);
}

/* FIDEDUPERANGE, cases 22-28: equal and differing bytes, an equal prefix,
 * a tail that is shared only where both files end, zero lengths, ranges
 * past either end, overlap in one file, a directory, a read-only snapshot
 * as destination (allowed), no time or capability change, more than 127
 * destinations, a range of 40 MiB in pieces. */
Test(reflink, dedupe_shares_only_equal_bytes)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	uint8_t *a = make_file(fs, "/a", 20000, 28);
	WU_OK(fs, ref_create(fs, "/b", 0644));
	WU_OK(fs, ref_write(fs, "/b", a, 20000, 0));
	uint8_t *c = malloc(20000);
	memcpy(c, a, 20000);
	c[10000] ^= 1;
	WU_OK(fs, ref_create(fs, "/c", 0644));
	WU_OK(fs, ref_write(fs, "/c", c, 20000, 0));
	memcpy(c, a, 20000);
	c[19999] ^= 1;
	WU_OK(fs, ref_create(fs, "/e", 0644));
	WU_OK(fs, ref_write(fs, "/e", c, 20000, 0));
	WU_OK(fs, ref_mkdir(fs, "/dir", 0755));
	static const uint8_t caps[20] = { 1, 0, 0, 2, 0, 0x20 };
	WU_OK(fs, ref_setxattr(fs, "/b", "security.capability", caps, sizeof(caps), 0));
	struct ref_stat bt = stat_of(fs, "/b");
	struct ref_dedupe_dest d[6] = { { .path = "/b" }, { .path = "/c" }, { .path = "/e" },
					{ .path = "/dir" }, { .path = "/none" },
					{ .path = "/b", .offset = 100 } };
	WU_OK(fs, ref_dedupe_range(fs, "/a", 0, 20000, d, 6));
	cr_assert_eq(d[0].status, 0, "status %d: %s", d[0].status, ref_error(fs));
	cr_assert_eq(d[0].bytes_deduped, 20000);
	cr_assert_eq(d[1].status, REF_DEDUPE_DIFFERS);
	cr_assert_eq(d[2].status, REF_DEDUPE_DIFFERS);
	cr_assert_eq(d[3].status, -EISDIR);
	cr_assert_eq(d[4].status, -ENOENT);
	cr_assert_eq(d[5].status, -EINVAL);
	for (uint64_t o = 0; o < 20000; o += K4)
		cr_assert_eq(wu_extent_at(fs, "/b", o, NULL), wu_extent_at(fs, "/a", o, NULL));
	cr_assert_neq(wu_extent_at(fs, "/c", 0, NULL), wu_extent_at(fs, "/a", 0, NULL));
	expect_bytes(fs, "/b", a, 20000);
	struct ref_stat bt2 = stat_of(fs, "/b");
	cr_assert(bt2.mtime.tv_sec == bt.mtime.tv_sec && bt2.mtime.tv_nsec == bt.mtime.tv_nsec);
	cr_assert_eq(ref_getxattr(fs, "/b", "security.capability", NULL, 0), (ssize_t)sizeof(caps));
	/* an equal prefix of the differing files */
	d[0] = (struct ref_dedupe_dest){ .path = "/c" };
	WU_OK(fs, ref_dedupe_range(fs, "/a", 0, 8192, d, 1));
	cr_assert_eq(d[0].status, 0);
	cr_assert_eq(wu_extent_at(fs, "/c", 4096, NULL), wu_extent_at(fs, "/a", 4096, NULL));
	/* a tail not at both ends: reported whole, nothing shared */
	uint8_t *t = calloc(1, 30000);
	memcpy(t + 16384, a + 16384, 3616);
	WU_OK(fs, ref_create(fs, "/t", 0644));
	WU_OK(fs, ref_write(fs, "/t", t, 30000, 0));
	d[0] = (struct ref_dedupe_dest){ .path = "/t", .offset = 16384 };
	WU_OK(fs, ref_dedupe_range(fs, "/a", 16384, 3616, d, 1));
	cr_assert_eq(d[0].status, 0);
	cr_assert_eq(d[0].bytes_deduped, 3616);
	cr_assert_neq(wu_extent_at(fs, "/t", 16384, NULL), wu_extent_at(fs, "/a", 16384, NULL));
	/* zero length; past the source (the whole call); past the destination;
	 * unaligned; one file overlapping and not */
	d[0] = (struct ref_dedupe_dest){ .path = "/t" };
	WU_OK(fs, ref_dedupe_range(fs, "/a", 0, 0, d, 1));
	cr_assert_eq(d[0].status, 0);
	cr_assert_eq(d[0].bytes_deduped, 0);
	WU_ERR(fs, ref_dedupe_range(fs, "/a", 16384, 4096, d, 1), EINVAL);
	WU_ERR(fs, ref_dedupe_range(fs, "/dir", 0, 0, d, 1), EISDIR);
	d[0] = (struct ref_dedupe_dest){ .path = "/a", .offset = 16384 };
	WU_OK(fs, ref_dedupe_range(fs, "/t", 16384, 8192, d, 1));
	cr_assert_eq(d[0].status, -EINVAL);
	d[0] = (struct ref_dedupe_dest){ .path = "/a", .offset = 4096 };
	WU_OK(fs, ref_dedupe_range(fs, "/a", 0, 8192, d, 1));
	cr_assert_eq(d[0].status, -EINVAL);
	d[0] = (struct ref_dedupe_dest){ .path = "/b", .offset = 1 };
	WU_OK(fs, ref_dedupe_range(fs, "/a", 0, 4096, d, 1));
	cr_assert_eq(d[0].status, -EINVAL);
	struct ref_dedupe_dest many[128];
	for (int i = 0; i < 128; i++)
		many[i] = (struct ref_dedupe_dest){ .path = "/b" };
	WU_ERR(fs, ref_dedupe_range(fs, "/a", 0, 4096, many, 128), ENOMEM);
	WU_OK(fs, ref_dedupe_range(fs, "/a", 0, 4096, many, 127));
	cr_assert_eq(many[126].status, 0);
	/* into a read-only snapshot: allowed */
	WU_OK(fs, ref_subvol_create(fs, "/sv", NULL));
	WU_OK(fs, ref_create(fs, "/sv/x", 0644));
	WU_OK(fs, ref_write(fs, "/sv/x", a, 20000, 0));
	WU_OK(fs, ref_snapshot(fs, "/sv", "/ro", true, NULL));
	d[0] = (struct ref_dedupe_dest){ .path = "/ro/x" };
	WU_OK(fs, ref_dedupe_range(fs, "/a", 0, 20000, d, 1));
	cr_assert_eq(d[0].status, 0, "%d %s", d[0].status, ref_error(fs));
	cr_assert_eq(wu_extent_at(fs, "/ro/x", 8192, NULL), wu_extent_at(fs, "/a", 8192, NULL));
	/* 40 MiB, in pieces of 16 MiB */
	size_t big = 40u << 20;
	uint8_t *g = make_file(fs, "/g", big, 29);
	WU_OK(fs, ref_create(fs, "/h", 0644));
	WU_OK(fs, ref_write(fs, "/h", g, big, 0));
	d[0] = (struct ref_dedupe_dest){ .path = "/h" };
	WU_OK(fs, ref_dedupe_range(fs, "/g", 0, big, d, 1));
	cr_assert_eq(d[0].status, 0);
	cr_assert_eq(d[0].bytes_deduped, big);
	for (uint64_t o = 0; o < big; o += 1 << 20)
		cr_assert_eq(wu_extent_at(fs, "/h", o, NULL), wu_extent_at(fs, "/g", o, NULL),
			     "offset %llu", (unsigned long long)o);
	finish(fs, vol);
	free(a);
	free(c);
	free(t);
	free(g);
}
