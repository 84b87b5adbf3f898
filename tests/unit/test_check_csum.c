/*
 * test_check_csum.c - the checker's csum pass (ref/check/check_csum.c): every
 * sector of checksummed data has one checksum in the csum tree and no
 * checksum lies outside the referenced data.  The image iu_make_std makes
 * has one data extent (d/big, 303104 bytes) and one csum item for it, the
 * last (and only) item of its leaf; each test moves, shortens or removes that
 * item (every copy of the leaf, checksum made right again), asserts the
 * ranges ref_check reports, and that `btrfs check --readonly` also finds the
 * image damaged.  Skipped when mkfs.btrfs is not installed.
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

TestSuite(check_csum, .init = setup, .fini = teardown);

#define DATA_LEN 303104ull /* d/big's extent */

/* The csum item, asserted to be the last item of its leaf and to cover the
 * whole data extent with 4-byte crc32c sums. */
static struct iu_item csum_item(void)
{
	struct iu_item it = iu_first_of_type(img, BTRFS_CSUM_TREE_OBJECTID, BTRFS_EXTENT_CSUM_KEY);
	cr_assert_eq(it.size, DATA_LEN / 4096 * 4);
	uint8_t *blk = iu_read_block(img, it.leaf, NULL);
	const struct btrfs_header_disk *h = (const void *)blk;
	cr_assert_eq(LE32(h->nritems), (uint32_t)it.slot + 1, "the csum item is not its leaf's last");
	free(blk);
	return it;
}

Test(check_csum, clean)
{
	iu_make_std(dir, img, sizeof(img));
	csum_item();
	iu_expect_clean(img);
}

Test(check_csum, item_moved_one_sector)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = csum_item();
	unsigned long long x = it.key.offset;
	struct ref_key k = it.key;
	k.offset += 4096;
	iu_set_key(img, &it, &k);
	snprintf(want[0], sizeof(want[0]),
		 "checksummed data without csum items: logical %llu..%llu (4096 bytes)", x, x + 4096);
	snprintf(want[1], sizeof(want[1]),
		 "csum items outside every referenced data extent: logical %llu..%llu (4096 bytes)",
		 x + DATA_LEN, x + DATA_LEN + 4096);
	iu_expect_errors(img, want[0], want[1], NULL);
	/* btrfs-progs 6.2 sees neither the gap nor the stray sector: its
	 * count_csum_range moves past the gap without counting it missing.  Only
	 * verifying the data against the (now shifted) sums shows the damage. */
	iu_expect_btrfs_check_fails(img, "--check-data-csum", "errors found in csum tree");
}

/* One sum fewer: the item's data starts 4 bytes later (it is the leaf's last
 * item, so the leaf stays packed), and the last sector has no sum. */
Test(check_csum, item_shortened)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = csum_item();
	unsigned long long x = it.key.offset;
	struct { uint32_t offset, size; } __attribute__((packed)) os = {
		htole32(it.data_off - (uint32_t)sizeof(struct btrfs_header_disk) + 4),
		htole32(it.size - 4) };
	iu_patch_block(img, it.leaf, iu_item_hdr_off(it.slot) + sizeof(struct btrfs_disk_key), &os,
		       sizeof(os), true);
	snprintf(want[0], sizeof(want[0]),
		 "checksummed data without csum items: logical %llu..%llu (4096 bytes)",
		 x + DATA_LEN - 4096, x + DATA_LEN);
	iu_expect_errors(img, want[0], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "some csum missing");
}

/* The item dropped from its leaf (nritems one less). */
Test(check_csum, item_removed)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = csum_item();
	unsigned long long x = it.key.offset;
	iu_patch_le32(img, it.leaf, offsetof(struct btrfs_header_disk, nritems), (uint32_t)it.slot);
	snprintf(want[0], sizeof(want[0]),
		 "checksummed data without csum items: logical %llu..%llu (%llu bytes)", x,
		 x + DATA_LEN, DATA_LEN);
	iu_expect_errors(img, want[0], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "some csum missing");
}
