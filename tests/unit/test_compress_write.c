/*
 * test_compress_write.c - compression on the write path (ref/compress/):
 * what the mount options, the property and the flags make a write store, as
 * Linux 6.18's writeback stores it; the heuristic's verdicts; inline
 * compressed extents; NOCOMPRESS; partial overwrites, snapshots, balance
 * and crashes over compressed extents.  The kernel's own sizes are compared
 * in tests/interop/test_compress.sh.
 */
#include "ref/compress/compress_int.h"
#include "tests/unit/testutil.h"
#include "tests/unit/wrutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define K128 (128u * 1024)

struct fx {
	uint64_t off, disk, disk_len, num, ram, ioff;
	uint8_t type, compression;
	uint32_t inline_len;
};

/* The file's extent items, in order; returns how many (at most max). */
static size_t extents(ref_fs *fs, const char *path, struct fx *out, size_t max)
{
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, path, false, &ino));
	struct ref_root root;
	WU_OK(fs, ref_find_root(fs, ino.subvol, &root));
	struct ref_key k = { ino.ino, BTRFS_EXTENT_DATA_KEY, 0 };
	struct ref_path p;
	int r = ref_search(fs, &root, &k, &p);
	size_t n = 0;
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid != ino.ino || k.type != BTRFS_EXTENT_DATA_KEY)
			break;
		const struct btrfs_file_extent_item *fe = (const void *)d;
		if (n < max) {
			struct fx *x = &out[n];
			memset(x, 0, sizeof(*x));
			x->off = k.offset;
			x->type = fe->type;
			x->compression = fe->compression;
			x->ram = LE64(fe->ram_bytes);
			if (fe->type == BTRFS_FILE_EXTENT_INLINE) {
				x->inline_len = size - 21;
			} else {
				x->disk = LE64(fe->disk_bytenr);
				x->disk_len = LE64(fe->disk_num_bytes);
				x->num = LE64(fe->num_bytes);
				x->ioff = LE64(fe->offset);
			}
		}
		n++;
		r = ref_next(fs, &p);
	}
	if (r == 0)
		ref_path_release(fs, &p);
	return n;
}

static uint64_t inode_flags(ref_fs *fs, const char *path)
{
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, path, false, &st));
	return st.flags;
}

/* Text that compresses well but not trivially. */
static uint8_t *text(size_t len, unsigned seed)
{
	static const char *const words[] = { "extent ", "tree ", "block ", "commit ",
					     "checksum ", "snapshot ", "balance ", "\n" };
	uint8_t *b = malloc(len);
	uint64_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len;) {
		x = x * 6364136223846793005u + 1442695040888963407u;
		const char *w = words[(x >> 33) % 8];
		for (size_t j = 0; w[j] && i < len; j++)
			b[i++] = (uint8_t)w[j];
	}
	return b;
}

static uint8_t *random_bytes(size_t len, uint64_t seed)
{
	uint8_t *b = malloc(len);
	uint64_t x = seed | 1;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		b[i] = (uint8_t)(x >> 24);
	}
	return b;
}

static ref_fs *remount(ref_fs *fs, sim_volume *vol, uint8_t type, int level, bool force)
{
	if (fs)
		WU_OK(fs, ref_umount(fs));
	struct ref_mount_opts mo = { .open = { .super_mirror = -1 },
				     .compress = type,
				     .compress_level = (int8_t)level,
				     .compress_force = force };
	char err[256];
	cr_assert_eq(ref_mount(vol, &mo, &fs, err, sizeof(err)), 0, "mount: %s", err);
	return fs;
}

static void expect_content(ref_fs *fs, const char *path, const uint8_t *want, size_t len)
{
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, path, true, &ino));
	uint8_t *got = malloc(len + 1);
	ssize_t n = ref_pread(fs, &ino, got, len + 1, 0);
	cr_assert_eq(n, (ssize_t)len, "%s: read %zd of %zu", path, n, len);
	cr_assert(!memcmp(got, want, len), "%s: content differs", path);
	free(got);
}

static const uint8_t types[] = { REF_COMPRESS_ZLIB, REF_COMPRESS_LZO, REF_COMPRESS_ZSTD };

Test(compress_write, each_algorithm_compresses_text)
{
	for (size_t t = 0; t < 3; t++) {
		sim_volume *vol;
		ref_fs *fs = wu_fresh(&vol, 256, 0);
	fs = remount(fs, vol, types[t], 0, false);
		uint8_t *b = text(1 << 20, 3);
		WU_OK(fs, ref_create(fs, "/f", 0644));
		WU_OK(fs, ref_write(fs, "/f", b, 1 << 20, 0));
		struct fx x[16];
		size_t n = extents(fs, "/f", x, 16);
		cr_assert_eq(n, 8, "%s: %zu extents", ref_compress_name(types[t]), n);
		for (size_t i = 0; i < n; i++) {
			cr_assert_eq(x[i].compression, types[t]);
			cr_assert_eq(x[i].off, i * K128);
			cr_assert_eq(x[i].ram, K128);
			cr_assert_eq(x[i].num, K128);
			cr_assert(x[i].disk_len < K128 / 2 && x[i].disk_len % 4096 == 0);
		}
		struct ref_stat st;
		WU_OK(fs, ref_stat_path(fs, "/f", false, &st));
		cr_assert_eq(st.nbytes, 1 << 20);
		expect_content(fs, "/f", b, 1 << 20);
		WU_OK(fs, ref_umount(fs));
		wu_expect_clean(vol);
		uint64_t need = types[t] == REF_COMPRESS_LZO    ? BTRFS_FEATURE_INCOMPAT_COMPRESS_LZO
				: types[t] == REF_COMPRESS_ZSTD ? BTRFS_FEATURE_INCOMPAT_COMPRESS_ZSTD
								: 0;
		struct ref_open_opts oo = { .super_mirror = -1 };
		char err[256];
		cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(LE64(ref_super(fs)->incompat_flags) & need, need);
		expect_content(fs, "/f", b, 1 << 20);
		ref_close(fs);
		free(b);
		sim_volume_close(vol);
	}
}

Test(compress_write, heuristic_verdicts)
{
	uint8_t *z = calloc(1, K128), *r = random_bytes(K128, 9), *t = text(K128, 1);
	cr_assert(cw_heuristic(z, K128), "zeros");
	cr_assert(!cw_heuristic(r, K128), "random");
	cr_assert(cw_heuristic(t, K128), "text");
	/* A 3000-byte random block repeated: zstd would shrink it, but the
	 * samples 256 bytes apart look random: the kernel does not try. */
	uint8_t *rep = malloc(K128);
	for (size_t i = 0; i < K128; i++)
		rep[i] = r[i % 3000];
	cr_assert(!cw_heuristic(rep, K128));
	/* Random data whose sampled bytes are zero: the samples repeat. */
	for (size_t i = 0; i < K128; i += 256)
		memset(r + i, 0, 16);
	cr_assert(cw_heuristic(r, K128));
	free(z), free(r), free(t), free(rep);
}

/* Random data whose bytes where the heuristic samples take only 32 values:
 * it says try, and the compression cannot save a sector. */
static uint8_t *sample_fooler(size_t len)
{
	uint8_t *b = random_bytes(len, 77);
	for (size_t i = 0; i < len; i += 256)
		for (size_t j = 0; j < 16; j++)
			b[i + j] &= 31;
	return b;
}

Test(compress_write, nocompress_marking)
{
	uint8_t *b = sample_fooler(1 << 20);
	struct fx x[64];
	/* compress=zstd: the first piece fails, the inode is marked, the rest
	 * of its chunk goes plain; later chunks see the mark */
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	fs = remount(fs, vol, REF_COMPRESS_ZSTD, 0, false);
	WU_OK(fs, ref_create(fs, "/f", 0644));
	WU_OK(fs, ref_write(fs, "/f", b, 1 << 20, 0));
	cr_assert(inode_flags(fs, "/f") & BTRFS_INODE_NOCOMPRESS);
	size_t n = extents(fs, "/f", x, 64);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(x[i].compression, 0);
	cr_assert_eq(n, 2, "a plain extent per 512 KiB chunk: %zu", n);
	/* a later compressible write stays plain: the inode is marked */
	uint8_t *t = text(K128, 2);
	WU_OK(fs, ref_create(fs, "/g", 0644));
	WU_OK(fs, ref_write(fs, "/g", b, K128, 0));
	WU_OK(fs, ref_write(fs, "/g", t, K128, K128));
	n = extents(fs, "/g", x, 64);
	cr_assert_eq(n, 2);
	cr_assert_eq(x[1].compression, 0);
	/* a property: no mark */
	WU_OK(fs, ref_create(fs, "/p", 0644));
	WU_OK(fs, ref_setxattr(fs, "/p", "btrfs.compression", "zlib", 4, 0));
	WU_OK(fs, ref_write(fs, "/p", b, K128, 0));
	cr_assert_eq(inode_flags(fs, "/p") & BTRFS_INODE_NOCOMPRESS, 0);
	WU_OK(fs, ref_write(fs, "/p", t, K128, K128));
	n = extents(fs, "/p", x, 64);
	cr_assert_eq(x[n - 1].compression, REF_COMPRESS_ZLIB);
	/* compress-force: no mark, and each chunk tries again */
	fs = remount(fs, vol, REF_COMPRESS_ZSTD, 0, true);
	WU_OK(fs, ref_create(fs, "/force", 0644));
	WU_OK(fs, ref_write(fs, "/force", b, K128, 0));
	WU_OK(fs, ref_write(fs, "/force", t, K128, K128));
	cr_assert_eq(inode_flags(fs, "/force") & BTRFS_INODE_NOCOMPRESS, 0);
	n = extents(fs, "/force", x, 64);
	cr_assert_eq(n, 2);
	cr_assert_eq(x[0].compression, 0);
	cr_assert_eq(x[1].compression, REF_COMPRESS_ZSTD);
	/* random data the heuristic sees: no attempt, no mark */
	fs = remount(fs, vol, REF_COMPRESS_ZSTD, 0, false);
	uint8_t *r = random_bytes(K128, 3);
	WU_OK(fs, ref_create(fs, "/r", 0644));
	WU_OK(fs, ref_write(fs, "/r", r, K128, 0));
	cr_assert_eq(inode_flags(fs, "/r") & BTRFS_INODE_NOCOMPRESS, 0);
	expect_content(fs, "/f", b, 1 << 20);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(b), free(t), free(r);
	sim_volume_close(vol);
}

Test(compress_write, small_files)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	fs = remount(fs, vol, REF_COMPRESS_ZSTD, 0, false);
	struct fx x[4];
	uint8_t zero[4096] = { 0 };
	uint8_t *r = random_bytes(4096, 5);
	/* 3000 zeros: a compressed inline extent of ram 3000 */
	WU_OK(fs, ref_create(fs, "/z", 0644));
	WU_OK(fs, ref_write(fs, "/z", zero, 3000, 0));
	cr_assert_eq(extents(fs, "/z", x, 4), 1);
	cr_assert(x[0].type == BTRFS_FILE_EXTENT_INLINE && x[0].compression == REF_COMPRESS_ZSTD &&
		  x[0].ram == 3000 && x[0].inline_len < 100);
	/* 1000 random bytes under zstd: the codec gives up: NOCOMPRESS, plain inline */
	WU_OK(fs, ref_create(fs, "/r", 0644));
	WU_OK(fs, ref_write(fs, "/r", r, 1000, 0));
	cr_assert_eq(extents(fs, "/r", x, 4), 1);
	cr_assert(x[0].type == BTRFS_FILE_EXTENT_INLINE && x[0].compression == 0);
	cr_assert(inode_flags(fs, "/r") & BTRFS_INODE_NOCOMPRESS);
	/* under lzo the codec has no such check: 1000 random bytes become a
	 * larger lzo inline extent; 2040 do not fit max_inline: plain inline,
	 * unmarked; 3000: a plain regular extent, unmarked (as 6.18.44) */
	fs = remount(fs, vol, REF_COMPRESS_LZO, 0, false);
	WU_OK(fs, ref_create(fs, "/l1", 0644));
	WU_OK(fs, ref_write(fs, "/l1", r, 1000, 0));
	cr_assert_eq(extents(fs, "/l1", x, 4), 1);
	cr_assert(x[0].compression == REF_COMPRESS_LZO && x[0].inline_len > 1000);
	WU_OK(fs, ref_create(fs, "/l2", 0644));
	WU_OK(fs, ref_write(fs, "/l2", r, 2040, 0));
	cr_assert_eq(extents(fs, "/l2", x, 4), 1);
	cr_assert(x[0].type == BTRFS_FILE_EXTENT_INLINE && x[0].compression == 0);
	cr_assert_eq(inode_flags(fs, "/l2") & BTRFS_INODE_NOCOMPRESS, 0);
	WU_OK(fs, ref_create(fs, "/l3", 0644));
	WU_OK(fs, ref_write(fs, "/l3", r, 3000, 0));
	cr_assert_eq(extents(fs, "/l3", x, 4), 1);
	cr_assert(x[0].type == BTRFS_FILE_EXTENT_REG && x[0].compression == 0);
	cr_assert_eq(inode_flags(fs, "/l3") & BTRFS_INODE_NOCOMPRESS, 0);
	/* growing a compressed inline file rewrites it with the new bytes from 0 */
	uint8_t *t = text(300000, 8);
	WU_OK(fs, ref_write(fs, "/z", t + 3000, 300000 - 3000, 3000));
	memcpy(t, zero, 3000);
	expect_content(fs, "/z", t, 300000);
	size_t n = extents(fs, "/z", x, 4);
	cr_assert_eq(n, 3);
	cr_assert(x[0].off == 0 && x[0].compression == REF_COMPRESS_LZO);
	expect_content(fs, "/r", r, 1000);
	expect_content(fs, "/l1", r, 1000);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(r), free(t);
	sim_volume_close(vol);
}

Test(compress_write, property_rules)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	WU_ERR(fs, ref_setxattr(fs, "/d", "btrfs.compression", "gzip", 4, 0), EINVAL);
	WU_ERR(fs, ref_setxattr(fs, "/d", "btrfs.other", "x", 1, 0), EINVAL);
	WU_ERR(fs, ref_removexattr(fs, "/d", "btrfs.compression"), ENODATA);
	/* a prefix names the algorithm; the value is kept as given */
	WU_OK(fs, ref_setxattr(fs, "/d", "btrfs.compression", "zstd:9", 6, 0));
	char v[16] = { 0 };
	cr_assert_eq(ref_getxattr(fs, "/d", "btrfs.compression", v, sizeof(v)), 6);
	cr_assert_str_eq(v, "zstd:9");
	cr_assert(inode_flags(fs, "/d") & BTRFS_INODE_COMPRESS);
	/* new files inherit the algorithm's name and the flag */
	WU_OK(fs, ref_create(fs, "/d/f", 0644));
	memset(v, 0, sizeof(v));
	cr_assert_eq(ref_getxattr(fs, "/d/f", "btrfs.compression", v, sizeof(v)), 4);
	cr_assert_str_eq(v, "zstd");
	cr_assert(inode_flags(fs, "/d/f") & BTRFS_INODE_COMPRESS);
	uint8_t *t = text(1 << 20, 4);
	WU_OK(fs, ref_write(fs, "/d/f", t, 1 << 20, 0));
	struct fx x[16];
	cr_assert_eq(extents(fs, "/d/f", x, 16), 8);
	cr_assert_eq(x[3].compression, REF_COMPRESS_ZSTD);
	/* special files: accepted, nothing stored */
	WU_OK(fs, ref_mknod(fs, "/d/fifo", S_IFIFO | 0644, 0));
	WU_OK(fs, ref_setxattr(fs, "/d/fifo", "btrfs.compression", "lzo", 3, 0));
	cr_assert_eq(ref_getxattr(fs, "/d/fifo", "btrfs.compression", v, sizeof(v)), -ENODATA);
	/* no / none: NOCOMPRESS, not passed on as a property, the flag is */
	WU_OK(fs, ref_setxattr(fs, "/d", "btrfs.compression", "none", 4, 0));
	cr_assert(inode_flags(fs, "/d") & BTRFS_INODE_NOCOMPRESS);
	cr_assert_eq(inode_flags(fs, "/d") & BTRFS_INODE_COMPRESS, 0);
	WU_OK(fs, ref_create(fs, "/d/g", 0644));
	cr_assert_eq(ref_getxattr(fs, "/d/g", "btrfs.compression", v, sizeof(v)), -ENODATA);
	cr_assert(inode_flags(fs, "/d/g") & BTRFS_INODE_NOCOMPRESS);
	/* an empty value or removexattr resets both flags */
	WU_OK(fs, ref_setxattr(fs, "/d", "btrfs.compression", "", 0, 0));
	cr_assert_eq(inode_flags(fs, "/d") & (BTRFS_INODE_NOCOMPRESS | BTRFS_INODE_COMPRESS), 0);
	cr_assert_eq(ref_getxattr(fs, "/d", "btrfs.compression", v, sizeof(v)), -ENODATA);
	/* read-only snapshots refuse */
	uint64_t id;
	WU_OK(fs, ref_snapshot(fs, "/", "/snap", true, &id));
	WU_ERR(fs, ref_setxattr(fs, "/snap/d/f", "btrfs.compression", "lzo", 3, 0), EROFS);
	expect_content(fs, "/d/f", t, 1 << 20);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(t);
	sim_volume_close(vol);
}

Test(compress_write, chattr_flags)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	fs = remount(fs, vol, REF_COMPRESS_LZO, 0, false);
	WU_OK(fs, ref_create(fs, "/f", 0644));
	uint32_t f;
	WU_OK(fs, ref_getflags(fs, "/f", &f));
	cr_assert_eq(f, 0);
	/* +c: the property becomes the mount's algorithm */
	WU_OK(fs, ref_setflags(fs, "/f", FS_COMPR_FL));
	char v[16] = { 0 };
	cr_assert_eq(ref_getxattr(fs, "/f", "btrfs.compression", v, sizeof(v)), 3);
	cr_assert_str_eq(v, "lzo");
	WU_OK(fs, ref_getflags(fs, "/f", &f));
	cr_assert_eq(f, FS_COMPR_FL);
	WU_ERR(fs, ref_setflags(fs, "/f", FS_COMPR_FL | FS_NOCOMP_FL), EINVAL);
	WU_ERR(fs, ref_setflags(fs, "/f", FS_COMPR_FL | FS_NOCOW_FL), EINVAL);
	WU_ERR(fs, ref_setflags(fs, "/f", FS_COMPR_FL | FS_IMMUTABLE_FL), EOPNOTSUPP);
	/* +m: the property goes */
	WU_OK(fs, ref_setflags(fs, "/f", FS_NOCOMP_FL));
	cr_assert_eq(ref_getxattr(fs, "/f", "btrfs.compression", v, sizeof(v)), -ENODATA);
	WU_OK(fs, ref_getflags(fs, "/f", &f));
	cr_assert_eq(f, FS_NOCOMP_FL);
	uint8_t *t = text(K128, 5);
	WU_OK(fs, ref_write(fs, "/f", t, K128, 0));
	struct fx x[4];
	cr_assert_eq(extents(fs, "/f", x, 4), 1);
	cr_assert_eq(x[0].compression, 0, "m: never compressed, whatever the mount says");
	WU_OK(fs, ref_setflags(fs, "/f", 0));
	WU_OK(fs, ref_getflags(fs, "/f", &f));
	cr_assert_eq(f, 0);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(t);
	sim_volume_close(vol);
}

Test(compress_write, prealloc_inodes_are_not_compressed)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	fs = remount(fs, vol, REF_COMPRESS_ZLIB, 0, true);
	WU_OK(fs, ref_create(fs, "/f", 0644));
	WU_OK(fs, ref_fallocate(fs, "/f", 0, 0, 4096));
	cr_assert(inode_flags(fs, "/f") & BTRFS_INODE_PREALLOC);
	uint8_t *t = text(K128, 6);
	WU_OK(fs, ref_write(fs, "/f", t, K128, K128));
	struct fx x[4];
	size_t n = extents(fs, "/f", x, 4);
	cr_assert_eq(x[n - 1].compression, 0);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(t);
	sim_volume_close(vol);
}

/* Compressed extents cut by overwrites, shared by a snapshot, moved by a
 * balance: every file reads back, both checkers clean. */
Test(compress_write, overwrite_snapshot_balance)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 512, 0);
	fs = remount(fs, vol, REF_COMPRESS_ZSTD, 3, false);
	size_t len = 2 << 20;
	uint8_t *t = text(len, 11), *orig = malloc(len);
	memcpy(orig, t, len);
	WU_OK(fs, ref_create(fs, "/f", 0644));
	WU_OK(fs, ref_write(fs, "/f", t, len, 0));
	uint64_t id;
	WU_OK(fs, ref_snapshot(fs, "/", "/s", false, &id));
	/* unaligned bytes in the middle of a compressed extent, a whole
	 * sector, and a range across two extents */
	uint8_t *r = random_bytes(300000, 2);
	const size_t at[] = { 200001, 4096 * 70, K128 * 5 - 1000 };
	const size_t ln[] = { 100, 4096, 300000 };
	for (size_t i = 0; i < 3; i++) {
		WU_OK(fs, ref_write(fs, "/f", r, ln[i], at[i]));
		memcpy(t + at[i], r, ln[i]);
	}
	WU_OK(fs, ref_truncate(fs, "/f", len - 5000));
	expect_content(fs, "/f", t, len - 5000);
	expect_content(fs, "/s/f", orig, len);
	WU_OK(fs, ref_sync(fs));
	struct ref_balance b = { .flags = BTRFS_BALANCE_DATA | BTRFS_BALANCE_METADATA };
	struct ref_balance_stats st;
	WU_OK(fs, ref_balance(fs, &b, &st));
	expect_content(fs, "/f", t, len - 5000);
	expect_content(fs, "/s/f", orig, len);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(t), free(orig), free(r);
	sim_volume_close(vol);
}

/* A crash at any request of a compressed write leaves a file system that
 * checks clean, with the file as the last commit had it. */
Test(compress_write, crash_anywhere)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 4096);
	fs = remount(fs, vol, REF_COMPRESS_LZO, 0, false);
	uint8_t *t = text(600000, 12);
	WU_OK(fs, ref_create(fs, "/f", 0644));
	WU_OK(fs, ref_write(fs, "/f", t, 300000, 0));
	WU_OK(fs, ref_sync(fs));
	WU_OK(fs, ref_umount(fs));
	sim_volume *base;
	cr_assert_eq(sim_volume_clone(vol, &base), 0);
	fs = remount(NULL, vol, REF_COMPRESS_LZO, 0, false);
	sim_volume_log_clear(vol);
	sim_volume_set_recording(vol, true);
	WU_OK(fs, ref_write(fs, "/f", t + 300000, 300000, 300000));
	WU_OK(fs, ref_write(fs, "/f", t, 5000, 100));
	WU_OK(fs, ref_sync(fs));
	WU_OK(fs, ref_umount(fs));
	size_t n;
	const struct sim_io *log = sim_volume_log(vol, &n);
	uint8_t *want2 = malloc(600000);
	memcpy(want2, t, 600000);
	memcpy(want2 + 100, t, 5000);
	for (size_t cut = 0; cut <= n; cut += n / 40 + 1) {
		sim_volume *v = wu_crashed_copy(base, log, cut);
		ref_fs *r;
		char err[256];
		struct ref_open_opts oo = { .super_mirror = -1 };
		cr_assert_eq(ref_open(v, &oo, &r, err, sizeof(err)), 0, "cut %zu: %s", cut, err);
		struct ref_stat st;
		WU_OK(r, ref_stat_path(r, "/f", false, &st));
		cr_assert(st.size == 300000 || st.size == 600000, "cut %zu: size %llu", cut,
			  (unsigned long long)st.size);
		expect_content(r, "/f", st.size == 300000 ? t : want2, st.size);
		ref_close(r);
		sim_volume_close(v);
	}
	free(t), free(want2);
	sim_volume_close(base);
	sim_volume_close(vol);
}

/* A piece at the end of a file compresses only the bytes below the size;
 * a later truncate up brings the rest of its sectors into the file, which
 * read as zeros (the kernel's zero_fill_bio), not as an error. */
Test(compress_write, short_piece_then_truncate_up)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	fs = remount(fs, vol, REF_COMPRESS_ZSTD, 0, false);
	uint8_t *t = text(K128 + 5000, 13), *want = calloc(1, K128 + 8192);
	WU_OK(fs, ref_create(fs, "/f", 0644));
	WU_OK(fs, ref_write(fs, "/f", t, K128 + 5000, 0));
	struct fx x[4];
	cr_assert_eq(extents(fs, "/f", x, 4), 2);
	cr_assert(x[1].compression == REF_COMPRESS_ZSTD && x[1].ram == 8192);
	WU_OK(fs, ref_truncate(fs, "/f", K128 + 8192));
	memcpy(want, t, K128 + 5000);
	expect_content(fs, "/f", want, K128 + 8192);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(t), free(want);
	sim_volume_close(vol);
}

/* Compressed extents in RAID1: a damaged copy found and mended by scrub, a
 * lost disk rebuilt onto a spare by replace, every byte read back; quota
 * groups count their bytes on disk.  Both checkers clean throughout. */
Test(compress_write, scrub_replace_quota)
{
	sim_volume *vol = wu_volume(2, 128, BTRFS_BLOCK_GROUP_RAID1, BTRFS_BLOCK_GROUP_RAID1, 5);
	ref_fs *fs = remount(NULL, vol, REF_COMPRESS_ZSTD, 0, false);
	WU_OK(fs, ref_qgroup_enable(fs));
	uint8_t *t = text(1 << 20, 21);
	WU_OK(fs, ref_create(fs, "/f", 0644));
	WU_OK(fs, ref_write(fs, "/f", t, 1 << 20, 0));
	WU_OK(fs, ref_sync(fs));
	struct fx x[16];
	cr_assert_eq(extents(fs, "/f", x, 16), 8);
	uint64_t disk = 0;
	for (int i = 0; i < 8; i++)
		disk += x[i].disk_len;
	struct ref_qgroup *g;
	size_t ng;
	WU_OK(fs, ref_qgroup_list(fs, &g, &ng));
	bool seen = false;
	for (size_t i = 0; i < ng; i++)
		if (g[i].id == BTRFS_FS_TREE_OBJECTID) {
			seen = true;
			cr_assert_geq(g[i].rfer, disk, "referenced %llu < the extents' %llu",
				      (unsigned long long)g[i].rfer, (unsigned long long)disk);
			cr_assert_lt(g[i].rfer, disk + (1 << 20) / 2,
				     "referenced %llu: the data counted uncompressed",
				     (unsigned long long)g[i].rfer);
		}
	cr_assert(seen);
	free(g);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	/* a copy of the third extent damaged on disk 0: scrub mends it */
	struct ref_open_opts oo = { .super_mirror = -1 };
	char err[256];
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "%s", err);
	struct ref_phys ph[4];
	uint64_t run;
	cr_assert_eq(ref_map(fs, x[2].disk, ph, 4, &run), 2);
	ref_close(fs);
	uint8_t junk[4096];
	memset(junk, 0xa5, sizeof(junk));
	int d0 = ph[0].disk == 0 ? 0 : 1;
	cr_assert_eq(sim_write(vol, (unsigned)ph[d0].disk, ph[d0].physical, junk, sizeof(junk), 0), 0);
	cr_assert_eq(sim_flush(vol, (unsigned)ph[d0].disk), 0);
	fs = remount(NULL, vol, REF_COMPRESS_ZSTD, 0, false);
	struct ref_scrub_dev devs[4];
	size_t nd = 4;
	WU_OK(fs, ref_scrub(fs, false, devs, &nd));
	uint64_t fixed = 0;
	for (size_t i = 0; i < nd; i++) {
		fixed += devs[i].corrected_errors;
		cr_assert_eq(devs[i].uncorrectable_errors, 0);
	}
	cr_assert_gt(fixed, 0, "scrub found nothing to mend");
	expect_content(fs, "/f", t, 1 << 20);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	/* disk 1 lost: rebuilt onto a spare */
	char *paths[3];
	char *dir = wu_save_images(vol, 2, paths);
	sim_volume_close(vol);
	paths[2] = tu_path(dir, "spare.img");
	FILE *sp = fopen(paths[2], "w");
	cr_assert(sp && ftruncate(fileno(sp), 136 << 20) == 0);
	fclose(sp);
	vol = wu_open_images(paths, 3, 0x5, false); /* disk 0 and the spare */
	struct ref_mount_opts mo = { .open = { .super_mirror = -1, .spares = true, .degraded = true } };
	cr_assert_eq(ref_mount(vol, &mo, &fs, err, sizeof(err)), 0, "mount: %s", err);
	struct ref_replace_stats rs;
	WU_OK(fs, ref_device_replace(fs, 2, 1, false, &rs));
	cr_assert_eq(rs.uncorrectable, 0);
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(vol);
	vol = wu_open_images(paths, 3, 0x5, false);
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "the rebuilt volume: %s", err);
	expect_content(fs, "/f", t, 1 << 20);
	ref_close(fs);
	wu_expect_clean(vol);
	sim_volume_close(vol);
	for (int i = 0; i < 3; i++)
		free(paths[i]);
	tu_rmdir(dir);
	free(t);
}
