/*
 * test_tree_copies.c - tree blocks with several copies (DUP on one disk,
 * RAID1 on two) where the first copy is stale: a valid block on its own
 * (checksum, bytenr, fsid) that is not the one its parent points to (an older
 * generation, as a lost write leaves; another first key).  As the kernel's
 * btrfs_read_extent_buffer with its btrfs_tree_parent_check, ref tries every
 * copy against what the parent expects, serves the good one, and never
 * caches the stale one (fuzz/regress/image/dup-copy-generation).
 */
#include "testutil.h"
#include "wrutil.h"
#include "ref/csum.h"
#include "ref/mkfs.h"
#include "ref/ref.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(tree_copies);

#define DISK_MIB 128
#define HDR sizeof(struct btrfs_header_disk)
#define GEN_OFF offsetof(struct btrfs_header_disk, generation)

/* A new file system on ndisks memory disks (metadata in meta_profile, 4 KiB
 * nodes), with nfiles files of 3000 bytes in /d, committed by an unmount. */
static sim_volume *make_fs(unsigned ndisks, uint64_t meta_profile, unsigned nfiles)
{
	sim_volume *vol = tu_open(ndisks, (uint64_t)DISK_MIB << 20, 4096, 1);
	struct ref_mkfs_opts o;
	ref_mkfs_defaults(&o);
	o.seed = 11;
	o.time = 1700000000;
	o.nodesize = 4096;
	o.meta_profile = meta_profile;
	char err[256];
	cr_assert_eq(ref_mkfs(vol, &o, NULL, err, sizeof(err)), 0, "mkfs: %s", err);
	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	uint8_t *data = tu_pat(3000, 5);
	for (unsigned i = 0; i < nfiles; i++) {
		char path[32];
		snprintf(path, sizeof(path), "/d/f%u", i);
		WU_OK(fs, ref_create(fs, path, 0644));
		WU_OK(fs, ref_write(fs, path, data, 3000, 0));
	}
	free(data);
	WU_OK(fs, ref_umount(fs));
	return vol;
}

struct opened {
	ref_fs *fs;
	FILE *log;
	char *text;
	size_t len;
};

/* Opens read-only with the log going to memory (open_memstream keeps the
 * addresses of o->text and o->len: o must stay where it is until closed). */
static void open_ro(sim_volume *vol, struct opened *o)
{
	*o = (struct opened){ 0 };
	o->log = open_memstream(&o->text, &o->len);
	cr_assert_not_null(o->log);
	struct ref_open_opts oo = { .super_mirror = -1, .log = o->log };
	char err[256];
	cr_assert_eq(ref_open(vol, &oo, &o->fs, err, sizeof(err)), 0, "open: %s", err);
}

/* The log so far, NUL-terminated. */
static const char *log_text(struct opened *o)
{
	fflush(o->log);
	return o->text ? o->text : "";
}

static void close_ro(struct opened *o)
{
	ref_close(o->fs);
	fclose(o->log);
	free(o->text);
}

static uint32_t nodesize(ref_fs *fs)
{
	return le32(&ref_super(fs)->nodesize);
}

/* Reads copy `copy` of the tree block at bytenr straight off its disk (a
 * malloc'd buffer), and writes it back with its checksum made right. */
static uint8_t *get_copy(sim_volume *vol, ref_fs *fs, uint64_t bytenr, int copy)
{
	struct ref_phys ph[4];
	uint64_t run;
	int n = ref_map(fs, bytenr, ph, 4, &run);
	cr_assert_geq(n, 2, "tree block %llu has %d copies", (unsigned long long)bytenr, n);
	cr_assert_lt(copy, n);
	uint8_t *b = malloc(nodesize(fs));
	cr_assert_eq(sim_read(vol, (unsigned)ph[copy].disk, ph[copy].physical, b, nodesize(fs)), 0);
	return b;
}

static void put_copy(sim_volume *vol, ref_fs *fs, uint64_t bytenr, int copy, uint8_t *b)
{
	struct ref_phys ph[4];
	uint64_t run;
	cr_assert_gt(ref_map(fs, bytenr, ph, 4, &run), copy);
	uint8_t c[32];
	cr_assert_eq(ref_csum(le16(&ref_super(fs)->csum_type), b + BTRFS_CSUM_BYTES,
			      nodesize(fs) - BTRFS_CSUM_BYTES, c), 0);
	memcpy(b, c, BTRFS_CSUM_BYTES);
	cr_assert_eq(sim_write(vol, (unsigned)ph[copy].disk, ph[copy].physical, b, nodesize(fs), 0), 0);
	cr_assert_eq(sim_flush(vol, (unsigned)ph[copy].disk), 0);
}

/* Gives copy `copy` of the block an older generation: a lost write's leftover
 * that still passes every check of the block on its own. */
static void make_stale(sim_volume *vol, ref_fs *fs, uint64_t bytenr, int copy)
{
	uint8_t *b = get_copy(vol, fs, bytenr, copy);
	uint64_t gen = le64(b + GEN_OFF);
	cr_assert_gt(gen, 1);
	uint64_t old = htole64(gen - 1);
	memcpy(b + GEN_OFF, &old, sizeof(old));
	put_copy(vol, fs, bytenr, copy, b);
	free(b);
}

static uint64_t block_gen(const struct ref_block *b)
{
	return le64(ref_block_data(b) + GEN_OFF);
}

/* The root of tree id, from a read-only open that is closed again. */
static struct ref_root root_of(sim_volume *vol, uint64_t id)
{
	struct opened o;
	open_ro(vol, &o);
	struct ref_root r;
	WU_OK(o.fs, ref_find_root(o.fs, id, &r));
	close_ro(&o);
	return r;
}

/* Every item of tree id, counted by walking it leaf by leaf. */
static long count_items(ref_fs *fs, uint64_t id)
{
	struct ref_root root;
	WU_OK(fs, ref_find_root(fs, id, &root));
	struct ref_path path;
	struct ref_key k = { 0, 0, 0 };
	long n = 0;
	int r = ref_search(fs, &root, &k, &path);
	while (r == 0) {
		n++;
		r = ref_next(fs, &path);
	}
	cr_assert_eq(r, 1, "walking tree %llu: %d: %s", (unsigned long long)id, r, ref_error(fs));
	return n;
}

static void expect_check_clean(ref_fs *fs)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	struct ref_check_opts co = { .out = out };
	long n = ref_check(fs, &co);
	fclose(out);
	cr_expect_eq(n, 0, "ref_check:\n%s", text);
	free(text);
}

/* The file's 3000 bytes read back. */
static void expect_file(ref_fs *fs, const char *path)
{
	struct ref_ino top, ino;
	WU_OK(fs, ref_subvol_root(fs, BTRFS_FS_TREE_OBJECTID, &top));
	WU_OK(fs, ref_resolve(fs, &top, path, &ino));
	uint8_t buf[4000], *want = tu_pat(3000, 5);
	cr_assert_eq(ref_pread(fs, &ino, buf, sizeof(buf), 0), 3000, "%s: %s", path, ref_error(fs));
	cr_assert(!memcmp(buf, want, 3000), "%s: data differs", path);
	free(want);
}

/* The log says the block's first copy, one generation old, was skipped. */
static void expect_stale_logged(struct opened *o, uint64_t bytenr, uint64_t gen)
{
	char want[160];
	snprintf(want, sizeof(want),
		 "tree block %llu: copy 0 bad (generation %llu, its parent expects %llu",
		 (unsigned long long)bytenr, (unsigned long long)gen - 1, (unsigned long long)gen);
	cr_assert(strstr(log_text(o), want), "log lacks \"%s\":\n%s", want, log_text(o));
}

/* The fs tree's root block and the root tree's (from the superblock) stale in
 * their first copy: served from the second, counted and logged as repaired,
 * and the file system reads, checks clean, and takes a commit. */
static void stale_roots(unsigned ndisks, uint64_t meta_profile)
{
	sim_volume *vol = make_fs(ndisks, meta_profile, 4);
	struct ref_root fst = root_of(vol, BTRFS_FS_TREE_OBJECTID);
	struct ref_root rt = root_of(vol, BTRFS_ROOT_TREE_OBJECTID);
	struct opened o;
	open_ro(vol, &o);
	make_stale(vol, o.fs, fst.bytenr, 0);
	make_stale(vol, o.fs, rt.bytenr, 0);
	close_ro(&o);

	open_ro(vol, &o);
	expect_stale_logged(&o, rt.bytenr, rt.gen);
	cr_assert_null(strstr(log_text(&o), "backup root"), "%s", log_text(&o));
	struct ref_root r;
	WU_OK(o.fs, ref_find_root(o.fs, BTRFS_ROOT_TREE_OBJECTID, &r));
	cr_assert_eq(r.gen, rt.gen, "the superblock's root tree, not a backup");
	struct ref_block *b;
	WU_OK(o.fs, ref_read_block(o.fs, fst.bytenr, fst.gen, fst.level, 0, &b));
	cr_assert_eq(block_gen(b), fst.gen, "served from the good copy");
	ref_block_put(o.fs, b);
	expect_stale_logged(&o, fst.bytenr, fst.gen);
	uint64_t repaired, csum_errors;
	ref_read_stats(o.fs, &repaired, &csum_errors);
	cr_assert_eq(repaired, 2);
	cr_assert_eq(csum_errors, 0);
	expect_file(o.fs, "/d/f3");
	expect_check_clean(o.fs);
	close_ro(&o);

	/* Writing on top: the commit copies the good blocks on. */
	char err[256];
	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
	WU_OK(fs, ref_create(fs, "/d/new", 0644));
	WU_OK(fs, ref_umount(fs));
	open_ro(vol, &o);
	expect_file(o.fs, "/d/f0");
	expect_check_clean(o.fs);
	close_ro(&o);
	sim_volume_close(vol);
}

Test(tree_copies, stale_first_copy_dup)
{
	stale_roots(1, BTRFS_BLOCK_GROUP_DUP);
}

Test(tree_copies, stale_first_copy_raid1)
{
	stale_roots(2, BTRFS_BLOCK_GROUP_RAID1);
}

/* A leaf below a node whose first copy has another first key than the node's
 * key pointer (and the right generation): the walk through the node takes
 * the second copy. */
Test(tree_copies, first_key_from_parent)
{
	sim_volume *vol = make_fs(1, BTRFS_BLOCK_GROUP_DUP, 120);
	struct opened o;
	open_ro(vol, &o);
	long items = count_items(o.fs, BTRFS_FS_TREE_OBJECTID);
	struct ref_root fst;
	WU_OK(o.fs, ref_find_root(o.fs, BTRFS_FS_TREE_OBJECTID, &fst));
	cr_assert_geq(fst.level, 1, "a fs tree of more than one leaf");
	struct ref_block *root;
	WU_OK(o.fs, ref_read_block(o.fs, fst.bytenr, fst.gen, fst.level, 0, &root));
	const struct btrfs_key_ptr_disk *kp =
		(const void *)(ref_block_data(root) + HDR + sizeof(struct btrfs_key_ptr_disk));
	uint64_t child = le64(&kp->blockptr);
	ref_block_put(o.fs, root);
	close_ro(&o);

	open_ro(vol, &o);
	uint8_t *b = get_copy(vol, o.fs, child, 0);
	struct btrfs_disk_key *k = (void *)(b + HDR); /* item 0's key, or key pointer 0's */
	if (le64(&k->offset))
		k->offset = htole64(le64(&k->offset) - 1);
	else if (k->type)
		k->type--;
	else
		k->objectid = htole64(le64(&k->objectid) - 1);
	put_copy(vol, o.fs, child, 0, b);
	free(b);
	close_ro(&o);

	open_ro(vol, &o);
	cr_assert_eq(count_items(o.fs, BTRFS_FS_TREE_OBJECTID), items);
	/* Either the first key differs from the parent's, or (as in the
	 * kernel, whose tree-checker runs before the key is compared) the key
	 * breaks an item rule first, as a changed name hash does: the copy
	 * is bad and the other one serves. */
	char want[96], want2[96];
	snprintf(want, sizeof(want), "tree block %llu: copy 0 bad (first key (",
		 (unsigned long long)child);
	snprintf(want2, sizeof(want2), "tree block %llu: copy 0 bad (", (unsigned long long)child);
	const char *log = log_text(&o), *at = strstr(log, want2);
	cr_assert(at && (strstr(log, want) || strstr(at, "), served from copy 1")),
		  "log lacks \"%s\":\n%s", want, log);
	expect_check_clean(o.fs);
	close_ro(&o);
	sim_volume_close(vol);
}

/* Every copy stale: EUCLEAN with the first copy's reason; nothing cached, so
 * once the second copy is good again the same fs reads it. */
Test(tree_copies, every_copy_stale_is_not_cached)
{
	sim_volume *vol = make_fs(1, BTRFS_BLOCK_GROUP_DUP, 4);
	struct ref_root fst = root_of(vol, BTRFS_FS_TREE_OBJECTID);
	struct opened o;
	open_ro(vol, &o);
	uint8_t *good = get_copy(vol, o.fs, fst.bytenr, 1);
	make_stale(vol, o.fs, fst.bytenr, 0);
	make_stale(vol, o.fs, fst.bytenr, 1);
	close_ro(&o);

	open_ro(vol, &o);
	struct ref_block *b;
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(ref_read_block(o.fs, fst.bytenr, fst.gen, fst.level, 0, &b), -EUCLEAN);
		char want[128];
		snprintf(want, sizeof(want), "tree block %llu: generation %llu, its parent expects %llu",
			 (unsigned long long)fst.bytenr, (unsigned long long)fst.gen - 1,
			 (unsigned long long)fst.gen);
		cr_assert(strstr(ref_error(o.fs), want), "%s", ref_error(o.fs));
	}
	put_copy(vol, o.fs, fst.bytenr, 1, good);
	free(good);
	WU_OK(o.fs, ref_read_block(o.fs, fst.bytenr, fst.gen, fst.level, 0, &b));
	cr_assert_eq(block_gen(b), fst.gen);
	ref_block_put(o.fs, b);
	close_ro(&o);
	sim_volume_close(vol);
}

/* A reader that expects nothing (generation 0) takes the stale first copy;
 * a later reader that knows the generation does not get it from the cache
 * but reads the copies again (as the kernel re-reads a buffer that fails its
 * parent's transid), unless the stale block is still held. */
Test(tree_copies, cached_for_a_weaker_reader)
{
	sim_volume *vol = make_fs(1, BTRFS_BLOCK_GROUP_DUP, 4);
	struct ref_root fst = root_of(vol, BTRFS_FS_TREE_OBJECTID);
	struct opened o;
	open_ro(vol, &o);
	make_stale(vol, o.fs, fst.bytenr, 0);
	close_ro(&o);

	open_ro(vol, &o);
	struct ref_block *stale, *b;
	WU_OK(o.fs, ref_read_block(o.fs, fst.bytenr, 0, -1, 0, &stale));
	cr_assert_eq(block_gen(stale), fst.gen - 1);
	cr_assert_eq(ref_read_block(o.fs, fst.bytenr, fst.gen, fst.level, 0, &b), -EUCLEAN,
		     "the stale block is held: it stays");
	ref_block_put(o.fs, stale);
	WU_OK(o.fs, ref_read_block(o.fs, fst.bytenr, fst.gen, fst.level, 0, &b));
	cr_assert_eq(block_gen(b), fst.gen);
	ref_block_put(o.fs, b);
	expect_file(o.fs, "/d/f1");
	close_ro(&o);
	sim_volume_close(vol);
}
