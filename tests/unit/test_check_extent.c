/*
 * test_check_extent.c - the checker's extent pass (ref/check/check_extent.c): every
 * tree block and data extent has its extent item with the right backrefs and
 * counts, and the used bytes of block groups and superblock add up.  Each test
 * corrupts one field of the image iu_make_std makes (every copy of the block,
 * checksum made right again), asserts the error ref_check reports, and that
 * `btrfs check --readonly` also finds the image damaged.  Skipped when
 * mkfs.btrfs is not installed.
 */
#include "imgutil.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static char *dir;
static char img[600];
static char want[4][256];

static void setup(void)
{
	dir = tu_tmpdir();
}

static void teardown(void)
{
	iu_rmtree(dir);
	dir = NULL;
}

TestSuite(check_extent, .init = setup, .fini = teardown);

#define EI_SIZE sizeof(struct btrfs_extent_item)
#define EI(field) offsetof(struct btrfs_extent_item, field)
#define DREF(field) (EI_SIZE + 1 + offsetof(struct btrfs_extent_data_ref, field))

/* The METADATA_ITEM of a leaf of the fs tree (level 0, one inline
 * TREE_BLOCK_REF to root 5). */
static bool fs_leaf_item(void *ctx, const struct ref_key *k, const uint8_t *data, uint32_t size)
{
	(void)ctx;
	return k->type == BTRFS_METADATA_ITEM_KEY && k->offset == 0 && size == EI_SIZE + 9 &&
	       data[EI_SIZE] == BTRFS_TREE_BLOCK_REF_KEY &&
	       le64(data + EI_SIZE + 1) == BTRFS_FS_TREE_OBJECTID;
}

/* The EXTENT_ITEM of the data extent (d/big), with one inline EXTENT_DATA_REF. */
static bool data_item(void *ctx, const struct ref_key *k, const uint8_t *data, uint32_t size)
{
	(void)ctx;
	return k->type == BTRFS_EXTENT_ITEM_KEY && size == DREF(count) + 4 &&
	       (le64(data + EI(flags)) & BTRFS_EXTENT_FLAG_DATA) &&
	       data[EI_SIZE] == BTRFS_EXTENT_DATA_REF_KEY;
}

static bool bg_of(void *ctx, const struct ref_key *k, const uint8_t *data, uint32_t size)
{
	return k->type == BTRFS_BLOCK_GROUP_ITEM_KEY && size >= sizeof(struct btrfs_block_group_item) &&
	       (le64(data + offsetof(struct btrfs_block_group_item, flags)) & *(uint64_t *)ctx);
}

static struct iu_item find(iu_match_fn fn, void *ctx)
{
	struct ref_key from = { 0, 0, 0 };
	struct iu_item it;
	cr_assert(iu_find(img, BTRFS_EXTENT_TREE_OBJECTID, &from, fn, ctx, &it));
	return it;
}

static void put64(const struct iu_item *it, size_t pos, uint64_t v)
{
	uint64_t le = htole64(v);
	iu_patch_item(img, it, pos, &le, 8);
}

static uint64_t get64(const struct iu_item *it, size_t pos)
{
	uint8_t *blk = iu_read_block(img, it->leaf, NULL);
	uint64_t v = le64(blk + it->data_off + pos);
	free(blk);
	return v;
}

Test(check_extent, clean)
{
	iu_make_std(dir, img, sizeof(img));
	iu_expect_clean(img);
	char *text = NULL;
	int st = iu_btrfs_check(img, NULL, &text);
	cr_assert(st <= 0, "btrfs check fails on the clean image:\n%s", text);
	free(text);
}

Test(check_extent, metadata_refs_off_by_one)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = find(fs_leaf_item, NULL);
	put64(&it, EI(refs), 2);
	snprintf(want[0], sizeof(want[0]), "extent %llu: refs 2, its backrefs add up to 1",
		 (unsigned long long)it.key.objectid);
	iu_expect_errors(img, want[0], NULL);
	snprintf(want[2], sizeof(want[2]), "ref mismatch on [%llu 4096] extent item 2, found 1",
		 (unsigned long long)it.key.objectid);
	iu_expect_btrfs_check_fails(img, NULL, want[2]);
}

Test(check_extent, data_refs_off_by_one)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = find(data_item, NULL);
	put64(&it, EI(refs), 2);
	snprintf(want[0], sizeof(want[0]), "extent %llu: refs 2, its backrefs add up to 1",
		 (unsigned long long)it.key.objectid);
	iu_expect_errors(img, want[0], NULL);
	snprintf(want[2], sizeof(want[2]), "ref mismatch on [%llu 303104] extent item 2, found 1",
		 (unsigned long long)it.key.objectid);
	iu_expect_btrfs_check_fails(img, NULL, want[2]);
}

Test(check_extent, tree_block_ref_root)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = find(fs_leaf_item, NULL);
	put64(&it, EI_SIZE + 1, BTRFS_CSUM_TREE_OBJECTID);
	unsigned long long b = it.key.objectid;
	snprintf(want[0], sizeof(want[0]), "extent %llu: no TREE_BLOCK_REF 5 (owner of its parent)", b);
	snprintf(want[1], sizeof(want[1]), "extent %llu: TREE_BLOCK_REF 7 has count 1, found 0", b);
	iu_expect_errors(img, want[0], want[1], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "root 5 has no backref item in extent tree");
}

Test(check_extent, data_ref_count)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = find(data_item, NULL);
	uint32_t two = htole32(2);
	iu_patch_item(img, &it, DREF(count), &two, 4);
	unsigned long long b = it.key.objectid, ino = get64(&it, DREF(objectid));
	snprintf(want[0], sizeof(want[0]),
		 "extent %llu: EXTENT_DATA_REF root 5 inode %llu offset 0 has count 2, found 1", b, ino);
	snprintf(want[1], sizeof(want[1]), "extent %llu: refs 1, its backrefs add up to 2", b);
	iu_expect_errors(img, want[0], want[1], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "referencer count mismatch (root 5 owner");
}

Test(check_extent, data_ref_root)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = find(data_item, NULL);
	put64(&it, DREF(root), 256);
	unsigned long long b = it.key.objectid, ino = get64(&it, DREF(objectid));
	snprintf(want[0], sizeof(want[0]),
		 "extent %llu: no EXTENT_DATA_REF for root 5 inode %llu offset 0 (file extent item)", b,
		 ino);
	snprintf(want[1], sizeof(want[1]),
		 "extent %llu: EXTENT_DATA_REF root 256 inode %llu offset 0 has count 1, found 0", b, ino);
	iu_expect_errors(img, want[0], want[1], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "referencer count mismatch (root 256 owner");
}

Test(check_extent, data_num_bytes)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = find(data_item, NULL);
	struct ref_key k = it.key;
	cr_assert_eq(k.offset, 303104);
	k.offset -= 4096;
	iu_set_key(img, &it, &k);
	unsigned long long b = it.key.objectid;
	snprintf(want[0], sizeof(want[0]),
		 "data extent %llu: item of 299008 bytes, file extent says 303104", b);
	snprintf(want[1], sizeof(want[1]), "block group %llu: used 303104, its extents add up to 299008",
		 b);
	iu_expect_errors(img, want[0], want[1], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "extent item size 299008 file item size 303104");
}

Test(check_extent, metadata_item_moved)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = find(fs_leaf_item, NULL);
	struct ref_key k = it.key;
	k.objectid += 1;
	iu_set_key(img, &it, &k);
	unsigned long long b = it.key.objectid;
	snprintf(want[0], sizeof(want[0]), "tree block %llu (owner 5, level 0) has no extent item", b);
	snprintf(want[1], sizeof(want[1]),
		 "extent %llu (4096 bytes, tree block) is not referenced by any tree", b + 1);
	iu_expect_errors(img, want[0], want[1], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "root 5 has no backref item in extent tree");
}

Test(check_extent, metadata_item_retyped)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = find(fs_leaf_item, NULL);
	struct ref_key k = it.key;
	k.type = BTRFS_METADATA_ITEM_KEY + 1; /* no item has type 170 */
	iu_set_key(img, &it, &k);
	snprintf(want[0], sizeof(want[0]), "tree block %llu (owner 5, level 0) has no extent item",
		 (unsigned long long)it.key.objectid);
	iu_expect_errors(img, want[0], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "root 5 has no backref item in extent tree");
}

Test(check_extent, block_group_used)
{
	iu_make_std(dir, img, sizeof(img));
	uint64_t meta = BTRFS_BLOCK_GROUP_METADATA;
	struct iu_item it = find(bg_of, &meta);
	uint64_t used = get64(&it, offsetof(struct btrfs_block_group_item, used));
	put64(&it, offsetof(struct btrfs_block_group_item, used), used + 4096);
	snprintf(want[0], sizeof(want[0]), "block group %llu: used %llu, its extents add up to %llu",
		 (unsigned long long)it.key.objectid, (unsigned long long)used + 4096,
		 (unsigned long long)used);
	iu_expect_errors(img, want[0], "superblock bytes_used", NULL);
	iu_expect_btrfs_check_fails(img, NULL, "but extent items used");
}

Test(check_extent, super_bytes_used)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_opened o = iu_open(img);
	uint64_t used = LE64(ref_super(o.fs)->bytes_used);
	iu_close(&o);
	uint64_t le = htole64(used + 4096);
	iu_patch_super(img, offsetof(struct btrfs_super_disk, bytes_used), &le, 8);
	snprintf(want[0], sizeof(want[0]), "superblock bytes_used %llu, the block groups add up to %llu",
		 (unsigned long long)used + 4096, (unsigned long long)used);
	iu_expect_errors(img, want[0], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "super bytes used");
}

Test(check_extent, extent_generation_in_future)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = find(data_item, NULL);
	put64(&it, EI(generation), 1000);
	snprintf(want[0], sizeof(want[0]), "generation 1000 is newer than the superblock's");
	iu_expect_errors(img, want[0], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "invalid generation");
}

Test(check_extent, metadata_item_level)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = find(fs_leaf_item, NULL);
	struct ref_key k = it.key;
	k.offset = 1; /* the leaf says level 0 */
	iu_set_key(img, &it, &k);
	snprintf(want[0], sizeof(want[0]), "tree block %llu is level 0, its extent item says 1",
		 (unsigned long long)it.key.objectid);
	iu_expect_errors(img, want[0], NULL);
}
