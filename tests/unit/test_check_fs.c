/*
 * test_check_fs.c - the checker's subvolume pass (ref/check_fs*.c) on images
 * that mkfs.btrfs --rootdir makes from a small tree: a clean image gives no
 * error, and each corruption (one field of one item, written to every copy
 * of its leaf with the checksum made right again) gives the error it should.
 * Skipped when mkfs.btrfs is not installed.
 */
#include "ref/check/check.h"
#include "imgutil.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

static char *dir;  /* the test's temporary directory */
static char img[512];
static bool have_xattr;

static void put(const char *rel, const void *data, size_t len)
{
	char src[600];
	snprintf(src, sizeof(src), "%s/src", dir);
	iu_put(src, rel, data, len);
}

/* The source tree and the image made from it. */
static void make_image(const char *mkfs_opts)
{
	iu_require_mkfs();
	iu_sh("mkdir -p %s/src/d/sub", dir);
	put("d/a", "hello\n", 6);
	uint8_t *big = tu_pat(300000, 7);
	put("d/big", big, 300000);
	free(big);
	put("sparse", "", 0);
	char p[600], q[600];
	snprintf(p, sizeof(p), "%s/src/sparse", dir);
	cr_assert_eq(truncate(p, 1 << 20), 0);
	snprintf(p, sizeof(p), "%s/src/d/a", dir);
	snprintf(q, sizeof(q), "%s/src/d/sub/a2", dir);
	cr_assert_eq(link(p, q), 0);
	snprintf(q, sizeof(q), "%s/src/s", dir);
	cr_assert_eq(symlink("d/a", q), 0);
	have_xattr = !setxattr(p, "user.test", "value", 5, 0);
	snprintf(img, sizeof(img), "%s/fs.img", dir);
	iu_mkfs(dir, img, 160, mkfs_opts);
}

static void setup(void)
{
	dir = tu_tmpdir();
}

static void teardown(void)
{
	iu_rmtree(dir);
	dir = NULL;
}

TestSuite(check_fs, .init = setup, .fini = teardown);

/* check_fs_tree on the top-level tree and the data reloc tree; returns the
 * number of errors, their text in *text (malloc'd). */
static unsigned long check_all(char **text)
{
	struct iu_opened o = iu_open_check(img);
	size_t len;
	FILE *out = open_memstream(text, &len);
	cr_assert_not_null(out);
	struct check ck = { .fs = o.fs, .out = out };
	cr_assert_eq(check_fs_tree(&ck, BTRFS_FS_TREE_OBJECTID), 0);
	cr_assert_eq(check_fs_tree(&ck, (uint64_t)BTRFS_DATA_RELOC_TREE_OBJECTID), 0);
	fclose(out);
	iu_close(&o);
	return ck.errors;
}

static void expect_clean(void)
{
	char *text;
	unsigned long n = check_all(&text);
	cr_assert_eq(n, 0, "%lu errors on a clean image:\n%s", n, text);
	free(text);
}

/* Expects errors, one of them containing `want`. */
static void expect_error(const char *want)
{
	char *text;
	unsigned long n = check_all(&text);
	cr_assert_gt(n, 0, "no error, expected '%s'", want);
	cr_assert_not_null(strstr(text, want), "expected '%s' in:\n%s", want, text);
	free(text);
}

/* The inode at a path of the top-level subvolume. */
static uint64_t ino_of(const char *path)
{
	struct iu_opened o = iu_open(img);
	struct ref_ino root, ino;
	cr_assert_eq(ref_subvol_root(o.fs, BTRFS_FS_TREE_OBJECTID, &root), 0);
	cr_assert_eq(ref_resolve(o.fs, &root, path, &ino), 0, "%s: %s", path, ref_error(o.fs));
	iu_close(&o);
	return ino.ino;
}

struct index_ctx {
	const char *name;
	uint64_t index;
};

static int index_of_entry(void *ctx, const struct ref_dirent *de)
{
	struct index_ctx *ic = ctx;
	if (de->len == strlen(ic->name) && !memcmp(de->name, ic->name, de->len))
		ic->index = de->index;
	return 0;
}

/* The DIR_INDEX key offset of name in the directory at path. */
static uint64_t index_of(const char *path, const char *name)
{
	struct iu_opened o = iu_open(img);
	struct ref_ino root, d;
	cr_assert_eq(ref_subvol_root(o.fs, BTRFS_FS_TREE_OBJECTID, &root), 0);
	cr_assert_eq(ref_resolve(o.fs, &root, path, &d), 0);
	struct index_ctx ic = { name, 0 };
	cr_assert_eq(ref_readdir(o.fs, &d, index_of_entry, &ic), 0);
	iu_close(&o);
	cr_assert_neq(ic.index, 0, "no %s in %s", name, path);
	return ic.index;
}

/* Overwrites n bytes at `pos` of the item at key k in the top-level tree (pos
 * < 0: from the item's end), in every copy of its leaf; the leaf checksum is
 * made right again unless fix_csum is false. */
static void patch_item(uint64_t objectid, uint8_t type, uint64_t offset, long pos,
		       const void *bytes, size_t n, bool fix_csum)
{
	struct iu_item it = iu_item(img, BTRFS_FS_TREE_OBJECTID, objectid, type, offset);
	uint64_t at = pos < 0 ? (uint64_t)((long)it.size + pos) : (uint64_t)pos;
	cr_assert_leq(at + n, it.size);
	iu_patch_block(img, it.leaf, it.data_off + at, bytes, n, fix_csum);
}

static void patch_le32(uint64_t objectid, uint8_t type, uint64_t offset, long pos, uint32_t v)
{
	uint32_t le = htole32(v);
	patch_item(objectid, type, offset, pos, &le, sizeof(le), true);
}

static void patch_le64(uint64_t objectid, uint8_t type, uint64_t offset, long pos, uint64_t v)
{
	uint64_t le = htole64(v);
	patch_item(objectid, type, offset, pos, &le, sizeof(le), true);
}

#define II(field) ((long)offsetof(struct btrfs_inode_item, field))
#define DI_NAME ((long)sizeof(struct btrfs_dir_item))
#define FE(field) ((long)offsetof(struct btrfs_file_extent_item, field))

Test(check_fs, clean_images)
{
	make_image("");
	expect_clean();
	iu_sh("mkfs.btrfs -q -f -O ^no-holes --rootdir %s/src %s >/dev/null 2>&1", dir, img);
	expect_clean();
}

Test(check_fs, nlink_against_refs)
{
	make_image("");
	uint64_t a = ino_of("d/a");
	patch_le32(a, BTRFS_INODE_ITEM_KEY, 0, II(nlink), 3);
	expect_error("nlink 3 but 2 references found");
}

Test(check_fs, nlink_zero_needs_orphan_item)
{
	make_image("");
	uint64_t big = ino_of("d/big");
	patch_le32(big, BTRFS_INODE_ITEM_KEY, 0, II(nlink), 0);
	expect_error("nlink 0 and no orphan item");
}

Test(check_fs, dir_isize)
{
	make_image("");
	uint64_t d = ino_of("d");
	patch_le64(d, BTRFS_INODE_ITEM_KEY, 0, II(size), 1000);
	expect_error("directory i_size 1000 but its DIR_ITEM and DIR_INDEX names total");
}

Test(check_fs, invalid_mode)
{
	make_image("");
	uint64_t a = ino_of("d/big");
	patch_le32(a, BTRFS_INODE_ITEM_KEY, 0, II(mode), 0170644);
	expect_error("invalid mode 0170644");
}

Test(check_fs, dir_index_name)
{
	make_image("");
	uint64_t d = ino_of("d"), idx = index_of("d", "big");
	patch_item(d, BTRFS_DIR_INDEX_KEY, idx, DI_NAME, "X", 1, true);
	expect_error("name \"Xig\" for inode");
	expect_error("has no matching DIR_ITEM, INODE_REF");
}

Test(check_fs, dir_item_hash)
{
	make_image("");
	uint64_t d = ino_of("d");
	patch_item(d, BTRFS_DIR_ITEM_KEY, ref_name_hash("big", 3), DI_NAME, "X", 1, true);
	expect_error("name \"Xig\" hashes to");
}

Test(check_fs, dir_item_type)
{
	make_image("");
	uint64_t d = ino_of("d");
	uint8_t t = BTRFS_FT_SYMLINK;
	patch_item(d, BTRFS_DIR_ITEM_KEY, ref_name_hash("big", 3),
		   (long)offsetof(struct btrfs_dir_item, type), &t, 1, true);
	expect_error("name \"big\" has type SYMLINK but inode");
}

Test(check_fs, inode_ref_index)
{
	make_image("");
	uint64_t d = ino_of("d"), big = ino_of("d/big");
	patch_le64(big, BTRFS_INODE_REF_KEY, d, 0, 999);
	expect_error("has index 999, but its DIR_INDEX is");
}

Test(check_fs, nbytes)
{
	make_image("");
	uint64_t big = ino_of("d/big");
	patch_le64(big, BTRFS_INODE_ITEM_KEY, 0, II(nbytes), 4096);
	expect_error("nbytes 4096 but its file extents hold");
}

Test(check_fs, extent_gap_without_no_holes)
{
	make_image("-O ^no-holes");
	uint64_t sp = ino_of("sparse");
	patch_le64(sp, BTRFS_EXTENT_DATA_KEY, 0, FE(num_bytes), 4096);
	expect_error("no file extent for [4096, ");
}

Test(check_fs, extent_bad_type)
{
	make_image("");
	uint64_t big = ino_of("d/big");
	uint8_t t = 7;
	patch_item(big, BTRFS_EXTENT_DATA_KEY, 0, FE(type), &t, 1, true);
	expect_error("unknown file extent type 7");
}

Test(check_fs, symlink_size)
{
	make_image("");
	struct iu_opened o = iu_open(img);
	struct ref_ino root, s;
	cr_assert_eq(ref_subvol_root(o.fs, BTRFS_FS_TREE_OBJECTID, &root), 0);
	cr_assert_eq(ref_lookup(o.fs, &root, "s", 1, &s, NULL), 0);
	iu_close(&o);
	patch_le64(s.ino, BTRFS_INODE_ITEM_KEY, 0, II(size), 7);
	expect_error("symlink target is");
}

Test(check_fs, xattr_hash)
{
	make_image("");
	if (!have_xattr)
		cr_skip_test("no user xattrs on this file system");
	uint64_t a = ino_of("d/a");
	patch_item(a, BTRFS_XATTR_ITEM_KEY, ref_name_hash("user.test", 9), DI_NAME, "U", 1, true);
	expect_error("name \"User.test\" hashes to");
}

Test(check_fs, root_dir_ref)
{
	make_image("");
	patch_item(BTRFS_FIRST_FREE_OBJECTID, BTRFS_INODE_REF_KEY, BTRFS_FIRST_FREE_OBJECTID,
		   (long)sizeof(struct btrfs_inode_ref), "x", 1, true);
	expect_error("the root directory has no \"..\" INODE_REF to itself");
}

Test(check_fs, unreadable_leaf)
{
	make_image("");
	uint64_t big = ino_of("d/big");
	uint32_t v = 12345;
	patch_item(big, BTRFS_INODE_ITEM_KEY, 0, II(uid), &v, sizeof(v), false);
	expect_error("cannot read the tree");
}
