/*
 * test_defrag.c - ref_defrag (ref/defrag/): what it rewrites (small
 * extents merged; holes, preallocated extents and extents past the target
 * size left; every extent with REF_DEFRAG_COMPRESS), its errnos, and a crash
 * at any request of a defragmentation leaving every byte of the file as it
 * was.  The kernel's own counts: tests/interop/test_defrag.sh.
 */
#include "ref/compress.h"
#include "tests/unit/testutil.h"
#include "tests/unit/wrutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define K 1024u

/* The file's EXTENT_DATA items (regular and prealloc), and how many are
 * compressed. */
static size_t items(ref_fs *fs, const char *path, size_t *compressed)
{
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, path, false, &ino));
	struct ref_root root;
	WU_OK(fs, ref_find_root(fs, ino.subvol, &root));
	struct ref_key k = { ino.ino, BTRFS_EXTENT_DATA_KEY, 0 };
	struct ref_path p;
	size_t n = 0;
	if (compressed)
		*compressed = 0;
	int r = ref_search(fs, &root, &k, &p);
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid != ino.ino || k.type != BTRFS_EXTENT_DATA_KEY)
			break;
		const struct btrfs_file_extent_item *fe = (const void *)d;
		n++;
		if (compressed && fe->compression)
			(*compressed)++;
		r = ref_next(fs, &p);
	}
	if (r == 0)
		ref_path_release(fs, &p);
	return n;
}

static void expect_bytes(ref_fs *fs, const char *path, const uint8_t *want, size_t len)
{
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, path, true, &ino));
	uint8_t *got = malloc(len + 1);
	cr_assert_eq(ref_pread(fs, &ino, got, len + 1, 0), (ssize_t)len);
	cr_assert(!memcmp(got, want, len), "%s changed", path);
	free(got);
}

/* A 1 MiB file of 256 4 KiB pieces written one by one from the back (no two
 * extents merge), its bytes in *data. */
static void fragmented(ref_fs *fs, const char *path, uint8_t **data)
{
	*data = tu_pat(1 << 20, 5);
	WU_OK(fs, ref_create(fs, path, 0644));
	for (int i = 255; i >= 0; i--)
		WU_OK(fs, ref_write(fs, path, *data + i * 4096, 4096, (uint64_t)i * 4096));
}

static const struct ref_defrag progs = { .extent_thresh = 32u << 20 };

Test(defrag, merges_small_extents)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	uint8_t *data;
	fragmented(fs, "/f", &data);
	cr_assert_eq(items(fs, "/f", NULL), 256);
	uint64_t sectors;
	/* a target size of 4 KiB: every extent is that large already */
	struct ref_defrag d = progs;
	d.extent_thresh = 4096;
	WU_OK(fs, ref_defrag(fs, "/f", &d, &sectors));
	cr_assert_eq(sectors, 0);
	cr_assert_eq(items(fs, "/f", NULL), 256);
	/* a range: its extents only */
	d = progs;
	d.start = 256 * K;
	d.len = 256 * K;
	WU_OK(fs, ref_defrag(fs, "/f", &d, &sectors));
	cr_assert_eq(sectors, 64);
	cr_assert_eq(items(fs, "/f", NULL), 256 - 64 + 1);
	WU_OK(fs, ref_defrag(fs, "/f", &progs, &sectors));
	cr_assert_eq(items(fs, "/f", NULL), 1);
	expect_bytes(fs, "/f", data, 1 << 20);
	/* -c: every extent again, compressed (tu_pat data does not shrink:
	 * stored plain, so count the rewrite) */
	d = progs;
	d.flags = REF_DEFRAG_COMPRESS;
	d.compress = REF_COMPRESS_ZSTD;
	WU_OK(fs, ref_defrag(fs, "/f", &d, &sectors));
	cr_assert_eq(sectors, 256);
	expect_bytes(fs, "/f", data, 1 << 20);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(data);
	sim_volume_close(vol);
}

Test(defrag, skips_holes_and_prealloc)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	uint8_t *d = tu_pat(64 * K, 3);
	WU_OK(fs, ref_create(fs, "/h", 0644));
	for (int i = 0; i < 4; i++) /* 4 KiB extents with 4 KiB holes between */
		WU_OK(fs, ref_write(fs, "/h", d + i * 8192, 4096, (uint64_t)i * 8192));
	WU_OK(fs, ref_fallocate(fs, "/h", FALLOC_FL_KEEP_SIZE, 64 * K, 64 * K));
	size_t before = items(fs, "/h", NULL);
	uint64_t sectors;
	WU_OK(fs, ref_defrag(fs, "/h", &progs, &sectors));
	/* no extent has a real neighbour: nothing to merge */
	cr_assert_eq(sectors, 0);
	cr_assert_eq(items(fs, "/h", NULL), before);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(d);
	sim_volume_close(vol);
}

Test(defrag, errnos)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	uint8_t b[100] = { 1 };
	WU_OK(fs, ref_create(fs, "/f", 0644));
	WU_OK(fs, ref_write(fs, "/f", b, sizeof(b), 0));
	WU_OK(fs, ref_create(fs, "/empty", 0644));
	WU_OK(fs, ref_defrag(fs, "/empty", &progs, NULL)); /* nothing, no error */
	struct ref_defrag d = progs;
	d.start = 4096;
	WU_ERR(fs, ref_defrag(fs, "/f", &d, NULL), EINVAL);
	d = progs;
	d.flags = REF_DEFRAG_COMPRESS | REF_DEFRAG_NOCOMPRESS;
	WU_ERR(fs, ref_defrag(fs, "/f", &d, NULL), EINVAL);
	d.flags = REF_DEFRAG_COMPRESS;
	d.compress = 9;
	WU_ERR(fs, ref_defrag(fs, "/f", &d, NULL), EINVAL);
	d.compress = REF_COMPRESS_ZLIB;
	d.level = 10;
	WU_ERR(fs, ref_defrag(fs, "/f", &d, NULL), EINVAL);
	d = progs;
	d.flags = 0x40;
	WU_ERR(fs, ref_defrag(fs, "/f", &d, NULL), EOPNOTSUPP);
	WU_ERR(fs, ref_defrag(fs, "/nope", &progs, NULL), ENOENT);
	WU_OK(fs, ref_mknod(fs, "/fifo", S_IFIFO | 0644, 0));
	WU_ERR(fs, ref_defrag(fs, "/fifo", &progs, NULL), EINVAL);
	uint64_t id;
	WU_OK(fs, ref_snapshot(fs, "/", "/snap", true, &id));
	WU_ERR(fs, ref_defrag(fs, "/snap/f", &progs, NULL), EROFS);
	WU_OK(fs, ref_defrag(fs, "/", &progs, NULL)); /* the tree */
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* A crash at any request of a defragmentation (and its commit): the file
 * reads the same in every state. */
Test(defrag, crash_anywhere)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 4096);
	uint8_t *data;
	fragmented(fs, "/f", &data);
	WU_OK(fs, ref_umount(fs));
	sim_volume *base;
	cr_assert_eq(sim_volume_clone(vol, &base), 0);
	char err[256];
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	sim_volume_log_clear(vol);
	sim_volume_set_recording(vol, true);
	struct ref_defrag d = progs;
	d.flags = REF_DEFRAG_COMPRESS;
	d.compress = REF_COMPRESS_LZO;
	WU_OK(fs, ref_defrag(fs, "/f", &d, NULL));
	WU_OK(fs, ref_sync(fs));
	WU_OK(fs, ref_umount(fs));
	size_t n;
	const struct sim_io *log = sim_volume_log(vol, &n);
	cr_assert_gt(n, 10);
	for (size_t cut = 0; cut <= n; cut += n / 40 + 1) {
		sim_volume *v = wu_crashed_copy(base, log, cut);
		ref_fs *r;
		struct ref_open_opts oo = { .super_mirror = -1 };
		cr_assert_eq(ref_open(v, &oo, &r, err, sizeof(err)), 0, "cut %zu: %s", cut, err);
		expect_bytes(r, "/f", data, 1 << 20);
		ref_close(r);
		sim_volume_close(v);
	}
	free(data);
	sim_volume_close(base);
	sim_volume_close(vol);
}
