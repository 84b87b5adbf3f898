/*
 * test_check_chunk.c - the checker's chunk pass (ref/check/check_chunk.c): chunks,
 * block group items, device items and device extents agree, and the
 * superblock's device count with the chunk tree.  Each test corrupts one
 * field of the image iu_make_std makes (every copy, checksum made right
 * again), asserts the error ref_check reports, and that `btrfs check
 * --readonly` also finds the image damaged.  Skipped when mkfs.btrfs is not
 * installed.
 */
#include <errno.h>
#include <string.h>
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

TestSuite(check_chunk, .init = setup, .fini = teardown);

#define BG(field) offsetof(struct btrfs_block_group_item, field)
#define DE(field) offsetof(struct btrfs_dev_extent, field)
#define DI(field) offsetof(struct btrfs_dev_item, field)

static bool bg_of(void *ctx, const struct ref_key *k, const uint8_t *data, uint32_t size)
{
	return k->type == BTRFS_BLOCK_GROUP_ITEM_KEY && size >= sizeof(struct btrfs_block_group_item) &&
	       (le64(data + BG(flags)) & *(uint64_t *)ctx);
}

/* The device extent of the chunk at logical *ctx. */
static bool devext_of(void *ctx, const struct ref_key *k, const uint8_t *data, uint32_t size)
{
	return k->type == BTRFS_DEV_EXTENT_KEY && size >= sizeof(struct btrfs_dev_extent) &&
	       le64(data + DE(chunk_offset)) == *(uint64_t *)ctx;
}

static uint64_t get64(const struct iu_item *it, size_t pos)
{
	uint8_t *blk = iu_read_block(img, it->leaf, NULL);
	uint64_t v = le64(blk + it->data_off + pos);
	free(blk);
	return v;
}

static void put64(const struct iu_item *it, size_t pos, uint64_t v)
{
	uint64_t le = htole64(v);
	iu_patch_item(img, it, pos, &le, 8);
}

/* The data block group's item, in the extent tree. */
static struct iu_item data_bg(void)
{
	uint64_t want_flags = BTRFS_BLOCK_GROUP_DATA;
	struct ref_key from = { 0, 0, 0 };
	struct iu_item it;
	cr_assert(iu_find(img, BTRFS_EXTENT_TREE_OBJECTID, &from, bg_of, &want_flags, &it));
	return it;
}

/* The device extent of the data chunk, in the device tree. */
static struct iu_item data_devext(void)
{
	uint64_t chunk = data_bg().key.objectid;
	struct ref_key from = { 0, 0, 0 };
	struct iu_item it;
	cr_assert(iu_find(img, BTRFS_DEV_TREE_OBJECTID, &from, devext_of, &chunk, &it));
	return it;
}

Test(check_chunk, clean)
{
	iu_make_std(dir, img, sizeof(img));
	iu_expect_clean(img);
}

Test(check_chunk, block_group_flags)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = data_bg();
	put64(&it, BG(flags), BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_DUP);
	snprintf(want[0], sizeof(want[0]),
		 "block group (%llu 192 %llu): flags 0x21, its chunk's type 0x1",
		 (unsigned long long)it.key.objectid, (unsigned long long)it.key.offset);
	iu_expect_errors(img, want[0], NULL);
	/* btrfs-progs 6.2 prints the mismatch but exits 0. */
	iu_expect_btrfs_check_says(img, NULL, "mismatch with block group");
}

Test(check_chunk, dev_extent_length)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = data_devext();
	uint64_t len = get64(&it, DE(length)), chunk = get64(&it, DE(chunk_offset));
	put64(&it, DE(length), len - 4096);
	snprintf(want[0], sizeof(want[0]),
		 "chunk %llu stripe 0: device extent of %llu bytes, the stripe has %llu",
		 (unsigned long long)chunk, (unsigned long long)len - 4096, (unsigned long long)len);
	iu_expect_errors(img, want[0], "device 1: bytes_used", NULL);
	iu_expect_btrfs_check_fails(img, NULL, "is not equal to byte-used");
}

Test(check_chunk, dev_extent_chunk_offset)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = data_devext();
	uint64_t chunk = get64(&it, DE(chunk_offset));
	put64(&it, DE(chunk_offset), chunk + 4096);
	snprintf(want[0], sizeof(want[0]),
		 "chunk %llu stripe 0: the device extent there belongs to chunk %llu",
		 (unsigned long long)chunk, (unsigned long long)chunk + 4096);
	snprintf(want[1], sizeof(want[1]), "device extent devid 1 offset %llu: chunk %llu has no such stripe",
		 (unsigned long long)it.key.offset, (unsigned long long)chunk + 4096);
	iu_expect_errors(img, want[0], want[1], NULL);
	/* btrfs-progs 6.2 prints the mismatch but exits 0. */
	iu_expect_btrfs_check_says(img, NULL, "didn't find the relative chunk");
}

Test(check_chunk, dev_item_bytes_used)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_item it = iu_item(img, BTRFS_CHUNK_TREE_OBJECTID, BTRFS_DEV_ITEMS_OBJECTID,
				    BTRFS_DEV_ITEM_KEY, 1);
	uint64_t used = get64(&it, DI(bytes_used));
	put64(&it, DI(bytes_used), used + (1 << 20));
	snprintf(want[0], sizeof(want[0]), "device 1: bytes_used %llu, its device extents add up to %llu",
		 (unsigned long long)used + (1 << 20), (unsigned long long)used);
	iu_expect_errors(img, want[0], NULL);
	iu_expect_btrfs_check_fails(img, NULL, "is not equal to byte-used");
}

Test(check_chunk, super_num_devices)
{
	iu_make_std(dir, img, sizeof(img));
	uint64_t two = htole64(2);
	iu_patch_super(img, offsetof(struct btrfs_super_disk, num_devices), &two, 8);
	iu_expect_errors(img, "superblock num_devices 2, the chunk tree has 1 device items", NULL);
	iu_expect_btrfs_check_fails(img, NULL, "super num devices mismatch, have 2 expect 1");
}

Test(check_chunk, super_total_bytes)
{
	iu_make_std(dir, img, sizeof(img));
	struct iu_opened o = iu_open(img);
	uint64_t total = LE64(ref_super(o.fs)->total_bytes);
	iu_close(&o);
	uint64_t le = htole64(total - 1048576);
	iu_patch_super(img, offsetof(struct btrfs_super_disk, total_bytes), &le, 8);
	snprintf(want[0], sizeof(want[0]), "superblock total_bytes %llu, the devices add up to %llu",
		 (unsigned long long)total - 1048576, (unsigned long long)total);
	iu_expect_errors(img, want[0], NULL);
	iu_expect_btrfs_check_fails(img, NULL, NULL);
}

/* The superblock's SYSTEM chunk with a stripe far past the end of the disk:
 * opening fails with a clear reason, nothing is read from there. */
Test(check_chunk, sys_chunk_outside_device)
{
	iu_make_std(dir, img, sizeof(img));
	size_t at = offsetof(struct btrfs_super_disk, sys_chunk_array) + sizeof(struct btrfs_disk_key) +
		    offsetof(struct btrfs_chunk, stripe) + offsetof(struct btrfs_stripe, offset);
	uint64_t far = htole64(UINT64_C(1) << 45);
	iu_patch_super(img, at, &far, 8);
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 1, 0, 0);
	cfg.disk[0].image_path = img;
	cfg.disk[0].read_only = true;
	sim_volume *vol;
	char err[256];
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), 0, "%s", err);
	struct ref_open_opts oo = { .super_mirror = -1 };
	ref_fs *fs = NULL;
	int r = ref_open(vol, &oo, &fs, err, sizeof(err));
	cr_assert_eq(r, -EUCLEAN, "ref_open returned %d (%s)", r, err);
	cr_assert(strstr(err, "maps outside device"), "message: %s", err);
	sim_volume_close(vol);
}
