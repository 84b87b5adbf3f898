/*
 * test_check_structure.c - the checker's structure walk (ref/check/check.c): every
 * tree block read and validated, its generation and level what its parent
 * says, its keys in order and inside the range its parent gives, its first key
 * its parent's.  The image iu_make_std makes has a fs tree of three levels
 * (root R at level 2, its children A and B at level 1); each test corrupts
 * one node pointer or leaf item (every copy, checksum made right again),
 * asserts the error ref_check reports, and that `btrfs check --readonly` also
 * finds the image damaged.  Skipped when mkfs.btrfs is not installed.
 */
#include "ref/check/check.h"
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

TestSuite(check_structure, .init = setup, .fini = teardown);

#define PTR(field) offsetof(struct btrfs_key_ptr_disk, field)

static const struct btrfs_key_ptr_disk *ptr_at(const uint8_t *blk, int i)
{
	return (const void *)(blk + iu_key_ptr_off(i));
}

static const struct btrfs_header_disk *hdr(const uint8_t *blk)
{
	return (const void *)blk;
}

static struct ref_key disk_key(const struct btrfs_disk_key *dk)
{
	return (struct ref_key){ LE64(dk->objectid), dk->type, LE64(dk->offset) };
}

/* The key of item or pointer i of a block. */
static struct ref_key key_at(const uint8_t *blk, int i)
{
	if (hdr(blk)->level)
		return disk_key(&ptr_at(blk, i)->key);
	return disk_key(&((const struct btrfs_item_disk *)(blk + iu_item_hdr_off(i)))->key);
}

/* The fs tree's root R (asserted to be at level 2) and its first two children. */
struct fs_top {
	uint64_t r, a, b, gen_b;
};

static struct fs_top fs_top(void)
{
	struct iu_opened o = iu_open(img);
	struct ref_root root;
	cr_assert_eq(ref_find_root(o.fs, BTRFS_FS_TREE_OBJECTID, &root), 0);
	iu_close(&o);
	cr_assert_eq(root.level, 2, "the fs tree has %u levels, not 3", root.level + 1);
	uint8_t *blk = iu_read_block(img, root.bytenr, NULL);
	cr_assert_geq(LE32(hdr(blk)->nritems), 2);
	struct fs_top t = { root.bytenr, LE64(ptr_at(blk, 0)->blockptr),
			    LE64(ptr_at(blk, 1)->blockptr), LE64(ptr_at(blk, 1)->generation) };
	free(blk);
	return t;
}

static void ref_key_dec(struct ref_key *k)
{
	if (k->offset) {
		k->offset--;
	} else if (k->type) {
		k->type--;
		k->offset = UINT64_MAX;
	} else {
		k->objectid--;
		k->type = 255;
		k->offset = UINT64_MAX;
	}
}

Test(check_structure, clean)
{
	iu_make_std(dir, img, sizeof(img));
	fs_top();
	iu_expect_clean(img);
}

/* R's pointer to B says generation - 1: a parent transid mismatch. */
Test(check_structure, pointer_generation)
{
	iu_make_std(dir, img, sizeof(img));
	struct fs_top t = fs_top();
	iu_patch_le64(img, t.r, iu_key_ptr_off(1) + PTR(generation), t.gen_b - 1);
	snprintf(want[0], sizeof(want[0]),
		 "tree 5: tree block %llu: generation %llu, its parent expects %llu",
		 (unsigned long long)t.b, (unsigned long long)t.gen_b,
		 (unsigned long long)t.gen_b - 1);
	iu_expect_errors(img, want[0], NULL);
	snprintf(want[1], sizeof(want[1]), "parent transid verify failed on %llu wanted %llu found %llu",
		 (unsigned long long)t.b, (unsigned long long)t.gen_b - 1,
		 (unsigned long long)t.gen_b);
	iu_expect_btrfs_check_fails(img, NULL, want[1]);
}

/* B's pointer 1 gets a key just below its child's first key (and still above
 * the last key of the child before): the child's first key is not its
 * parent's. */
Test(check_structure, pointer_key)
{
	iu_make_std(dir, img, sizeof(img));
	struct fs_top t = fs_top();
	uint8_t *b = iu_read_block(img, t.b, NULL);
	uint64_t c0 = LE64(ptr_at(b, 0)->blockptr), c1 = LE64(ptr_at(b, 1)->blockptr);
	struct ref_key k = key_at(b, 1), old = k;
	free(b);
	uint8_t *leaf0 = iu_read_block(img, c0, NULL);
	struct ref_key last0 = key_at(leaf0, (int)LE32(hdr(leaf0)->nritems) - 1);
	free(leaf0);
	ref_key_dec(&k);
	cr_assert_gt(ref_key_cmp(&k, &last0), 0);
	struct btrfs_disk_key dk = { htole64(k.objectid), k.type, htole64(k.offset) };
	iu_patch_block(img, t.b, iu_key_ptr_off(1), &dk, sizeof(dk), true);
	char kb[64], kb2[64];
	snprintf(want[0], sizeof(want[0]), "tree 5 block %llu: first key %s is not its parent's %s",
		 (unsigned long long)c1, check_key_str(&old, kb, sizeof(kb)),
		 check_key_str(&k, kb2, sizeof(kb2)));
	iu_expect_errors(img, want[0], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "Wrong key of child node/leaf");
}

/* B's pointer 2 gets the last key of the leaf under pointer 1: that leaf's
 * last key is not below the next key of its parent. */
Test(check_structure, pointer_key_not_above_previous_child)
{
	iu_make_std(dir, img, sizeof(img));
	struct fs_top t = fs_top();
	uint8_t *b = iu_read_block(img, t.b, NULL);
	cr_assert_geq(LE32(hdr(b)->nritems), 3);
	uint64_t c1 = LE64(ptr_at(b, 1)->blockptr);
	free(b);
	uint8_t *leaf1 = iu_read_block(img, c1, NULL);
	struct ref_key last1 = key_at(leaf1, (int)LE32(hdr(leaf1)->nritems) - 1);
	free(leaf1);
	struct btrfs_disk_key dk = { htole64(last1.objectid), last1.type, htole64(last1.offset) };
	iu_patch_block(img, t.b, iu_key_ptr_off(2), &dk, sizeof(dk), true);
	char kb[64];
	snprintf(want[0], sizeof(want[0]),
		 "tree 5 block %llu: last key %s is not below the next key %s of its parent",
		 (unsigned long long)c1, check_key_str(&last1, kb, sizeof(kb)), kb);
	iu_expect_errors(img, want[0], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "Wrong key of child node/leaf");
}

/* B's pointer 1 leads to A, a node of level 1, where a leaf is expected. */
Test(check_structure, pointer_to_other_level)
{
	iu_make_std(dir, img, sizeof(img));
	struct fs_top t = fs_top();
	uint8_t *a = iu_read_block(img, t.a, NULL);
	cr_assert_eq(hdr(a)->level, 1);
	uint64_t gen_a = LE64(hdr(a)->generation);
	free(a);
	struct {
		uint64_t blockptr, generation;
	} __attribute__((packed)) p = { htole64(t.a), htole64(gen_a) };
	iu_patch_block(img, t.b, iu_key_ptr_off(1) + PTR(blockptr), &p, sizeof(p), true);
	snprintf(want[0], sizeof(want[0]), "tree 5: block %llu is level 1, its parent expects 0",
		 (unsigned long long)t.a);
	iu_expect_errors(img, want[0], NULL);
	/* btrfs check names no level, but the second reference to A. */
	snprintf(want[1], sizeof(want[1]), "ref mismatch on [%llu 4096] extent item 1, found 2",
		 (unsigned long long)t.a);
	iu_expect_btrfs_check_fails(img, NULL, want[1]);
}

/* B's pointers 1 and 2 swapped: B's keys are out of order. */
Test(check_structure, pointers_swapped)
{
	iu_make_std(dir, img, sizeof(img));
	struct fs_top t = fs_top();
	uint8_t *b = iu_read_block(img, t.b, NULL);
	cr_assert_geq(LE32(hdr(b)->nritems), 3);
	struct btrfs_key_ptr_disk p[2];
	memcpy(&p[1], ptr_at(b, 1), sizeof(p[1]));
	memcpy(&p[0], ptr_at(b, 2), sizeof(p[0]));
	free(b);
	iu_patch_block(img, t.b, iu_key_ptr_off(1), p, sizeof(p), true);
	snprintf(want[0], sizeof(want[0]), "tree 5: tree block %llu: keys out of order",
		 (unsigned long long)t.b);
	iu_expect_errors(img, want[0], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "bad key order");
}

/* Item 1 of B's first leaf says its data starts one byte later. */
Test(check_structure, leaf_item_offset)
{
	iu_make_std(dir, img, sizeof(img));
	struct fs_top t = fs_top();
	uint8_t *b = iu_read_block(img, t.b, NULL);
	uint64_t leaf = LE64(ptr_at(b, 0)->blockptr);
	free(b);
	uint8_t *l = iu_read_block(img, leaf, NULL);
	cr_assert_eq(hdr(l)->level, 0);
	cr_assert_geq(LE32(hdr(l)->nritems), 3);
	const struct btrfs_item_disk *it = (const void *)(l + iu_item_hdr_off(1));
	uint32_t off = LE32(it->offset);
	free(l);
	iu_patch_le32(img, leaf, iu_item_hdr_off(1) + offsetof(struct btrfs_item_disk, offset), off + 1);
	snprintf(want[0], sizeof(want[0]), "tree 5: tree block %llu: item data is not packed in order",
		 (unsigned long long)leaf);
	iu_expect_errors(img, want[0], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "unexpected item end");
}

/* The first leaf below A, walked already, reached a second time through
 * B's pointer 1 (the leaf that pointer led to is left without a parent). */
static uint64_t point_b_at_first_leaf_of_a(const struct fs_top *t, uint64_t gen_delta,
					   uint64_t *gen)
{
	uint8_t *a = iu_read_block(img, t->a, NULL);
	uint64_t leaf = LE64(ptr_at(a, 0)->blockptr);
	*gen = LE64(ptr_at(a, 0)->generation);
	free(a);
	struct {
		uint64_t blockptr, generation;
	} __attribute__((packed)) p = { htole64(leaf), htole64(*gen - gen_delta) };
	iu_patch_block(img, t->b, iu_key_ptr_off(1) + PTR(blockptr), &p, sizeof(p), true);
	return leaf;
}

/* The pointer's key is not the leaf's first key. */
Test(check_structure, pointer_to_walked_block_key)
{
	iu_make_std(dir, img, sizeof(img));
	struct fs_top t = fs_top();
	uint8_t *b = iu_read_block(img, t.b, NULL);
	struct ref_key k = key_at(b, 1);
	free(b);
	uint64_t gen;
	uint64_t leaf = point_b_at_first_leaf_of_a(&t, 0, &gen);
	uint8_t *l = iu_read_block(img, leaf, NULL);
	struct ref_key first = key_at(l, 0);
	free(l);
	char kb[64], kb2[64];
	snprintf(want[0], sizeof(want[0]), "tree 5 block %llu: first key %s is not its parent's %s",
		 (unsigned long long)leaf, check_key_str(&first, kb, sizeof(kb)),
		 check_key_str(&k, kb2, sizeof(kb2)));
	snprintf(want[1], sizeof(want[1]), "extent %llu: TREE_BLOCK_REF 5 has count 1, found 2",
		 (unsigned long long)leaf);
	iu_expect_errors(img, want[0], want[1], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "Wrong key of child node/leaf");
}

/* The pointer's generation is not the leaf's. */
Test(check_structure, pointer_to_walked_block_generation)
{
	iu_make_std(dir, img, sizeof(img));
	struct fs_top t = fs_top();
	uint64_t gen;
	uint64_t leaf = point_b_at_first_leaf_of_a(&t, 1, &gen);
	snprintf(want[0], sizeof(want[0]),
		 "tree 5: block %llu has generation %llu, its parent expects %llu",
		 (unsigned long long)leaf, (unsigned long long)gen, (unsigned long long)gen - 1);
	iu_expect_errors(img, want[0], NULL);
	snprintf(want[1], sizeof(want[1]), "parent transid verify failed on %llu wanted %llu found %llu",
		 (unsigned long long)leaf, (unsigned long long)gen - 1, (unsigned long long)gen);
	iu_expect_btrfs_check_fails(img, NULL, want[1]);
}
