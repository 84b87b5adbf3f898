/*
 * test_tree_check.c - the kernel's tree-checker item rules (tree_check.c):
 * on an image mkfs.btrfs made, one field of one item is broken per test, the
 * leaf's checksum made right again.  The reader refuses the leaf (EUCLEAN,
 * the rule named, as the kernel refuses to read it), ref_check reports the
 * leaf and the rule and goes on; and the clean image passes every rule (no
 * false alarm on what mkfs.btrfs writes: the other suites do the same for
 * what the kernel and ref write).
 */
#include "imgutil.h"
#include "testutil.h"
#include "wrutil.h"
#include "ref/vfs.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static char *dir;
static char img[512];

static void setup(void)
{
	iu_require_mkfs();
	dir = tu_tmpdir();
	iu_make_std(dir, img, sizeof(img));
}

static void teardown(void)
{
	iu_rmtree(dir);
	dir = NULL;
}

TestSuite(tree_check, .init = setup, .fini = teardown);

/* The leaf of it fails to read with EUCLEAN and `why`; ref_check names it. */
static void expect_rejected(const struct iu_item *it, const char *why)
{
	/* An open that judges items: the leaf does not read (or, when the
	 * open itself needs it, the open fails). */
	struct ref_block *b;
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 1, 0, 0);
	cfg.latency = (struct sim_latency){ 0 };
	cfg.disk[0].image_path = img;
	cfg.disk[0].sector_size = 4096;
	cfg.disk[0].read_only = true;
	sim_volume *vol;
	ref_fs *fs;
	char err[256];
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), 0, "%s", err);
	struct ref_open_opts oo = { .super_mirror = -1 };
	int r = ref_open(vol, &oo, &fs, err, sizeof(err));
	if (r == 0) {
		r = ref_read_block(fs, it->leaf, 0, 0, 0, &b);
		if (r == 0)
			ref_block_put(fs, b);
		cr_assert_eq(r, -EUCLEAN, "the leaf read (%d), expected EUCLEAN for '%s'", r, why);
		cr_assert(strstr(ref_error(fs), why), "'%s' not in: %s", why, ref_error(fs));
		ref_close(fs);
	} else { /* a leaf the open needs (the root tree's) */
		cr_assert_eq(r, -EUCLEAN, "the open failed with %d: %s", r, err);
		cr_assert(strstr(err, why), "'%s' not in: %s", why, err);
	}
	sim_volume_close(vol);
	char want[200];
	snprintf(want, sizeof(want), "leaf %llu: %s", (unsigned long long)it->leaf, why);
	iu_expect_errors(img, want, NULL);
}

Test(tree_check, clean_image_passes)
{
	iu_expect_clean(img);
}

Test(tree_check, file_extent_unaligned_offset)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_FS_TREE_OBJECTID, BTRFS_EXTENT_DATA_KEY);
	struct ref_key k = it.key;
	k.offset += 1;
	iu_set_key(img, &it, &k);
	expect_rejected(&it, "file extent: file offset not aligned to the sectorsize");
}

Test(tree_check, file_extent_bad_compression)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_FS_TREE_OBJECTID, BTRFS_EXTENT_DATA_KEY);
	uint8_t c = 4;
	iu_patch_item(img, &it, offsetof(struct btrfs_file_extent_item, compression), &c, 1);
	expect_rejected(&it, "file extent: unknown compression");
}

Test(tree_check, inode_item_unknown_mode_bits)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_FS_TREE_OBJECTID, BTRFS_INODE_ITEM_KEY);
	uint32_t mode = htole32(0100644 | 0200000);
	iu_patch_item(img, &it, offsetof(struct btrfs_inode_item, mode), &mode, 4);
	expect_rejected(&it, "inode item: unknown mode bits");
}

Test(tree_check, inode_item_future_generation)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_FS_TREE_OBJECTID, BTRFS_INODE_ITEM_KEY);
	uint64_t g = htole64(1000000);
	iu_patch_item(img, &it, offsetof(struct btrfs_inode_item, generation), &g, 8);
	expect_rejected(&it, "inode item: generation newer than the superblock's");
}

Test(tree_check, dir_item_unknown_type)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_FS_TREE_OBJECTID, BTRFS_DIR_INDEX_KEY);
	uint8_t t = BTRFS_FT_MAX;
	iu_patch_item(img, &it, offsetof(struct btrfs_dir_item, type), &t, 1);
	expect_rejected(&it, "dir item: unknown file type");
}

Test(tree_check, csum_item_ragged_size)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_CSUM_TREE_OBJECTID, BTRFS_EXTENT_CSUM_KEY);
	struct ref_key k = it.key;
	k.offset += 512;
	iu_set_key(img, &it, &k);
	expect_rejected(&it, "csum item: offset not aligned to the sectorsize");
}

Test(tree_check, extent_item_neither_data_nor_tree)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_EXTENT_TREE_OBJECTID, BTRFS_EXTENT_ITEM_KEY);
	uint64_t f = htole64(BTRFS_EXTENT_FLAG_DATA | BTRFS_EXTENT_FLAG_TREE_BLOCK);
	iu_patch_item(img, &it, offsetof(struct btrfs_extent_item, flags), &f, 8);
	expect_rejected(&it, "extent item: neither data nor tree block, or both");
}

Test(tree_check, extent_item_refs_below_inline)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_EXTENT_TREE_OBJECTID, BTRFS_METADATA_ITEM_KEY);
	uint64_t refs = 0;
	iu_patch_item(img, &it, offsetof(struct btrfs_extent_item, refs), &refs, 8);
	expect_rejected(&it, "extent item: more inline refs than its count");
}

Test(tree_check, block_group_used_past_size)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_EXTENT_TREE_OBJECTID, BTRFS_BLOCK_GROUP_ITEM_KEY);
	uint64_t used = htole64(it.key.offset + 4096);
	iu_patch_item(img, &it, offsetof(struct btrfs_block_group_item, used), &used, 8);
	expect_rejected(&it, "block group item: more used than its size");
}

Test(tree_check, root_item_unknown_flags)
{
	struct iu_item it = iu_item(img, BTRFS_ROOT_TREE_OBJECTID, BTRFS_FS_TREE_OBJECTID,
				    BTRFS_ROOT_ITEM_KEY, 0);
	uint64_t f = htole64(1ULL << 40);
	iu_patch_item(img, &it, offsetof(struct btrfs_root_item, flags), &f, 8);
	expect_rejected(&it, "root item: unknown flags");
}

Test(tree_check, chunk_item_bad_stripe_len)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY);
	uint64_t sl = htole64(32768);
	iu_patch_item(img, &it, offsetof(struct btrfs_chunk, stripe_len), &sl, 8);
	expect_rejected(&it, "chunk item: stripe length is not 64 KiB");
}

Test(tree_check, dev_item_devid_mismatch)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_CHUNK_TREE_OBJECTID, BTRFS_DEV_ITEM_KEY);
	uint64_t id = htole64(7);
	iu_patch_item(img, &it, offsetof(struct btrfs_dev_item, devid), &id, 8);
	expect_rejected(&it, "device item: devid differs from the key's");
}

Test(tree_check, dev_extent_overlaps_the_previous)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_DEV_TREE_OBJECTID, BTRFS_DEV_EXTENT_KEY);
	uint64_t len = htole64(1ULL << 40);
	iu_patch_item(img, &it, offsetof(struct btrfs_dev_extent, length), &len, 8);
	/* (the device's next extent, in the same leaf, is the one rejected) */
	expect_rejected(&it, "device extent: overlaps the previous one");
}

Test(tree_check, dev_extent_chunk_tree)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_DEV_TREE_OBJECTID, BTRFS_DEV_EXTENT_KEY);
	uint64_t t = htole64(7);
	iu_patch_item(img, &it, offsetof(struct btrfs_dev_extent, chunk_tree), &t, 8);
	expect_rejected(&it, "device extent: chunk tree is not the chunk tree");
}

/* Linux 6.9 and later (e03418abde87): a block on disk without the WRITTEN
 * flag is refused whatever its items; before, its items went unjudged and a
 * commit wrote them into a leaf the checker refuses (fuzz/regress/image/
 * check-after-commit-*). */
Test(tree_check, leaf_without_written_flag)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_FS_TREE_OBJECTID, BTRFS_INODE_ITEM_KEY);
	uint8_t *b = iu_read_block(img, it.leaf, NULL);
	uint64_t flags = le64toh(((const struct btrfs_header_disk *)b)->flags);
	free(b);
	cr_assert(flags & BTRFS_HEADER_FLAG_WRITTEN, "mkfs.btrfs wrote the leaf without WRITTEN");
	iu_patch_le64(img, it.leaf, offsetof(struct btrfs_header_disk, flags),
		      flags & ~(uint64_t)BTRFS_HEADER_FLAG_WRITTEN);
	expect_rejected(&it, "WRITTEN flag not set");
}

/* The write-time check: a leaf the rules refuse, read only because this
 * mount judges no items (as btrsim check opens), is not written by a commit
 * (EUCLEAN, the kernel's "write time tree block corruption detected"); the
 * last commit stays the file system. */
Test(tree_check, write_time_check_refuses_the_leaf)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_FS_TREE_OBJECTID, BTRFS_INODE_ITEM_KEY);
	cr_assert_eq(it.key.objectid, BTRFS_FIRST_FREE_OBJECTID, "not the top directory");
	uint32_t mode = htole32(040755 | 0200000);
	iu_patch_item(img, &it, offsetof(struct btrfs_inode_item, mode), &mode, 4);
	char *paths[1] = { img };
	sim_volume *vol = wu_open_images(paths, 1, 1, false);
	struct ref_mount_opts mo = { .open = { .super_mirror = -1, .no_item_checks = true } };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_mount(vol, &mo, &fs, err, sizeof(err)), 0, "%s", err);
	uint64_t gen = fs->generation;
	cr_assert_eq(ref_mkdir(fs, "/new", 0755), 0, "%s", ref_error(fs));
	int r = ref_sync(fs);
	cr_assert_eq(r, -EUCLEAN, "the commit gave %d: %s", r, ref_error(fs));
	cr_assert(strstr(ref_error(fs), "write time tree block corruption detected"), "%s",
		  ref_error(fs));
	cr_assert(strstr(ref_error(fs), "inode item: unknown mode bits"), "%s", ref_error(fs));
	ref_umount(fs);
	sim_volume_close(vol);
	/* Nothing of it reached the image. */
	struct iu_opened o = iu_open_check(img);
	cr_assert_eq(o.fs->generation, gen);
	struct ref_ino top, found;
	cr_assert_eq(ref_subvol_root(o.fs, BTRFS_FS_TREE_OBJECTID, &top), 0);
	cr_assert_eq(ref_lookup(o.fs, &top, "new", 3, &found, NULL), -ENOENT);
	iu_close(&o);
}

/* check_inode_item: the high 32 bits of an inode's flags are ro-compat flags;
 * one the kernel does not know (only VERITY is) is read by a read-only open
 * and refused by a writable mount: its mount fails when the leaf is the top
 * level's root (as the kernel's), else the first change that reads it. */
Test(tree_check, inode_item_unknown_ro_compat_flag)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_FS_TREE_OBJECTID, BTRFS_INODE_ITEM_KEY);
	cr_assert_eq(it.key.objectid, BTRFS_FIRST_FREE_OBJECTID, "not the top directory");
	uint64_t flags = htole64(UINT64_C(1) << 33);
	iu_patch_item(img, &it, offsetof(struct btrfs_inode_item, flags), &flags, 8);
	iu_expect_clean(img);
	char *paths[1] = { img };
	sim_volume *vol = wu_open_images(paths, 1, 1, false);
	struct ref_mount_opts mo = { .open = { .super_mirror = -1 } };
	ref_fs *fs = NULL;
	char err[256];
	int r = ref_mount(vol, &mo, &fs, err, sizeof(err));
	if (r == 0) {
		r = ref_mkdir(fs, "/new", 0755); /* the top directory's inode changes */
		snprintf(err, sizeof(err), "%s", ref_error(fs));
		ref_umount(fs);
	}
	cr_assert_eq(r, -EUCLEAN, "%d: %s", r, err);
	cr_assert(strstr(err, "unknown ro-compat inode flags on a writable mount"), "%s", err);
	sim_volume_close(vol);
}
