/*
 * test_check_super.c - the superblock fields the kernel's btrfs_validate_super
 * rejects (ref/io/super.c: ref_super_fields_invalid): each test sets one field
 * of every superblock copy of the image iu_make_std makes (checksum made
 * right again) and asserts that ref refuses to open it with the field named,
 * as the kernel refuses the mount, and that `btrfs check --readonly` finds
 * the image damaged too (but leafsize, which only the kernel checks).  A field left right opens.  Skipped when mkfs.btrfs
 * is not installed.
 */
#include "imgutil.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static char *dir;
static char img[600];

static void setup(void)
{
	dir = tu_tmpdir();
}

static void teardown(void)
{
	iu_rmtree(dir);
	dir = NULL;
}

TestSuite(check_super, .init = setup, .fini = teardown);

#define SB(field) offsetof(struct btrfs_super_disk, field)

/* Opening the image fails with EUCLEAN and a message holding want. */
static void expect_refused(const char *want)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 1, 0, 0);
	cfg.latency = (struct sim_latency){ 0 };
	cfg.disk[0].image_path = img;
	cfg.disk[0].sector_size = 4096;
	cfg.disk[0].read_only = true;
	sim_volume *vol;
	char err[512] = "";
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), 0, "%s", err);
	ref_fs *fs = NULL;
	struct ref_open_opts oo = { .super_mirror = -1 };
	int r = ref_open(vol, &oo, &fs, err, sizeof(err));
	cr_assert_eq(r, -EUCLEAN, "opened (%d): %s", r, err);
	cr_assert(strstr(err, want), "\"%s\" lacks \"%s\"", err, want);
	sim_volume_close(vol);
}

static void patch32(size_t pos, uint32_t v)
{
	uint32_t le = htole32(v);
	iu_patch_super(img, pos, &le, 4);
}

Test(check_super, stripesize_other_than_sectorsize)
{
	iu_make_std(dir, img, sizeof(img));
	patch32(SB(stripesize), 65536);
	expect_refused("stripesize differs from sectorsize");
	iu_expect_btrfs_check_fails(img, NULL, NULL);
}

Test(check_super, leafsize_other_than_nodesize)
{
	iu_make_std(dir, img, sizeof(img));
	patch32(SB(leafsize), 16384); /* the image's nodesize is 4096 */
	expect_refused("leafsize differs from nodesize");
	/* btrfs check (6.x) does not look at leafsize; the kernel refuses the
	 * mount ("invalid leafsize 4096, should be 16384", tried by hand on
	 * 2026-12-06), and ref follows the kernel. */
}

Test(check_super, bytes_used_below_six_tree_blocks)
{
	iu_make_std(dir, img, sizeof(img));
	uint64_t le = htole64(4096);
	iu_patch_super(img, SB(bytes_used), &le, 8);
	expect_refused("bytes_used is below six tree blocks");
	iu_expect_btrfs_check_fails(img, NULL, NULL);
}

Test(check_super, sys_chunk_array_too_small)
{
	iu_make_std(dir, img, sizeof(img));
	patch32(SB(sys_chunk_array_size), 40);
	expect_refused("sys_chunk_array_size is below one chunk item");
	iu_expect_btrfs_check_fails(img, NULL, NULL);
}

Test(check_super, dev_item_fsid_other_than_fsid)
{
	iu_make_std(dir, img, sizeof(img));
	uint8_t junk[BTRFS_FSID_BYTES];
	memset(junk, 0x5a, sizeof(junk));
	iu_patch_super(img, SB(dev_item) + offsetof(struct btrfs_dev_item, fsid), junk, sizeof(junk));
	expect_refused("dev_item fsid differs from the superblock fsid");
	iu_expect_btrfs_check_fails(img, NULL, NULL);
}

/* The same fields as mkfs.btrfs wrote them: the image opens and checks clean. */
Test(check_super, the_fields_as_mkfs_writes_them)
{
	iu_make_std(dir, img, sizeof(img));
	iu_expect_clean(img);
}
