/*
 * test_cov_check.c - more of the checker's subvolume pass on damaged items of
 * an image mkfs.btrfs --rootdir makes: inode items (key offset, mode, flags
 * on a symlink, generations from the future), INODE_REF names (empty, running
 * past the item), directory entries (empty names, names running past the
 * item, entries in something that is not a directory).  One field of one
 * item is changed in every copy of its leaf with the checksum made right, and
 * ref_check must say what is wrong; the untouched image is clean.
 * Skipped when mkfs.btrfs is not installed.
 */
#include "imgutil.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define II_GENERATION 0 /* offsets in btrfs_inode_item */
#define II_MODE 52
#define II_FLAGS 64
#define IREF_NAME_LEN 8 /* in btrfs_inode_ref: index, name_len, name */
#define DI_NAME_LEN 27  /* in btrfs_dir_item: location 17, transid 8, data_len 2, name_len 2, type 1 */

static char *dir;
static char img[600];
static char pristine[640];

static void setup(void)
{
	dir = tu_tmpdir();
	iu_require_mkfs();
	char src[600], p[700], q[700];
	snprintf(src, sizeof(src), "%s/src", dir);
	iu_sh("mkdir -p %s/d/sub", src);
	iu_put(src, "d/file", "some data\n", 10);
	snprintf(p, sizeof(p), "%s/link", src);
	cr_assert_eq(symlink("d/file", p), 0);
	snprintf(p, sizeof(p), "%s/d/file", src);
	snprintf(q, sizeof(q), "%s/d/hard", src);
	cr_assert_eq(link(p, q), 0);
	snprintf(img, sizeof(img), "%s/fs.img", dir);
	iu_mkfs(dir, img, 160, "");
	snprintf(pristine, sizeof(pristine), "%s/pristine.img", dir);
	iu_sh("cp --sparse=always %s %s", img, pristine);
}

static void teardown(void)
{
	iu_rmtree(dir);
	dir = NULL;
}

TestSuite(cov_check, .init = setup, .fini = teardown);

static uint64_t ino_of(const char *path)
{
	struct iu_opened o = iu_open(img);
	struct ref_ino root, ino;
	cr_assert_eq(ref_subvol_root(o.fs, BTRFS_FS_TREE_OBJECTID, &root), 0);
	cr_assert_eq(ref_resolve(o.fs, &root, path, &ino), 0, "%s: %s", path, ref_error(o.fs));
	iu_close(&o);
	return ino.ino;
}

static void restore(void)
{
	iu_sh("cp --sparse=always %s %s", pristine, img);
}

static void patch(uint64_t ino, uint8_t type, uint64_t offset, size_t pos, const void *v,
		  size_t n)
{
	struct iu_item it = iu_item(img, BTRFS_FS_TREE_OBJECTID, ino, type, offset);
	iu_patch_item(img, &it, pos, v, n);
}

static void le(uint8_t *out, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		out[i] = (uint8_t)(v >> (8 * i));
}

Test(cov_check, pristine_is_clean)
{
	iu_expect_clean(img);
}

Test(cov_check, inode_items)
{
	uint64_t file = ino_of("d/file"), link = ino_of("link"), d = ino_of("d");
	uint8_t b[8];

	/* a key offset other than 0 */
	struct iu_item it = iu_item(img, BTRFS_FS_TREE_OBJECTID, file, BTRFS_INODE_ITEM_KEY, 0);
	struct ref_key k = { file, BTRFS_INODE_ITEM_KEY, 3 };
	iu_set_key(img, &it, &k);
	iu_expect_errors(img, "INODE_ITEM key offset is 3", NULL);
	restore();

	/* mode bits outside S_IFMT | 07777, and no file type */
	le(b, 0100644 | 0200000, 4);
	patch(file, BTRFS_INODE_ITEM_KEY, 0, II_MODE, b, 4);
	iu_expect_errors(img, "invalid mode", NULL);
	restore();
	le(b, 0644, 4);
	patch(file, BTRFS_INODE_ITEM_KEY, 0, II_MODE, b, 4);
	iu_expect_errors(img, "invalid mode 0644", NULL);
	restore();

	/* an immutable symlink */
	le(b, BTRFS_INODE_IMMUTABLE, 8);
	patch(link, BTRFS_INODE_ITEM_KEY, 0, II_FLAGS, b, 8);
	iu_expect_errors(img, "symlink with the immutable or append flag", NULL);
	restore();

	/* a generation from the future */
	le(b, 1ull << 40, 8);
	patch(file, BTRFS_INODE_ITEM_KEY, 0, II_GENERATION, b, 8);
	iu_expect_errors(img, "past the superblock generation", NULL);
	restore();

	/* a directory turned into a regular file still has entries */
	le(b, 0100755, 4);
	patch(d, BTRFS_INODE_ITEM_KEY, 0, II_MODE, b, 4);
	iu_expect_errors(img, "not a directory, but has directory entries", NULL);
	restore();
}

Test(cov_check, inode_refs)
{
	uint64_t d = ino_of("d"), sub = ino_of("d/sub");
	uint8_t b[2];
	le(b, 0, 2);
	patch(sub, BTRFS_INODE_REF_KEY, d, IREF_NAME_LEN, b, 2);
	iu_expect_errors(img, "reference name of 0 bytes", NULL);
	restore();
	le(b, 200, 2);
	patch(sub, BTRFS_INODE_REF_KEY, d, IREF_NAME_LEN, b, 2);
	iu_expect_errors(img, "runs past the", NULL);
	restore();
}

/* The first DIR_ITEM or DIR_INDEX item of directory d. */
static struct iu_item first_entry(uint64_t d, uint8_t type)
{
	struct ref_key from = { d, type, 0 };
	struct iu_item it;
	cr_assert(iu_find(img, BTRFS_FS_TREE_OBJECTID, &from, NULL, NULL, &it));
	cr_assert(it.key.objectid == d && it.key.type == type);
	return it;
}

Test(cov_check, dir_entries)
{
	uint64_t d = ino_of("d");
	uint8_t b[2];
	const uint8_t types[] = { BTRFS_DIR_ITEM_KEY, BTRFS_DIR_INDEX_KEY };
	for (int t = 0; t < 2; t++) {
		struct iu_item it = first_entry(d, types[t]);
		le(b, 0, 2);
		iu_patch_item(img, &it, DI_NAME_LEN, b, 2);
		iu_expect_errors(img, "entry name of 0 bytes", NULL);
		restore();
		it = first_entry(d, types[t]);
		le(b, 300, 2);
		iu_patch_item(img, &it, DI_NAME_LEN, b, 2);
		iu_expect_errors(img, "", NULL);
		restore();
	}
}
