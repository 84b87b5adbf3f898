/*
 * imgutil.h - helpers for the checker's unit tests: Btrfs images that
 * mkfs.btrfs --rootdir makes in a temporary directory, opened through sim/
 * and ref/, their items found through the read API and patched in place (in
 * every copy of a tree block or superblock, checksums made right again), the
 * report of ref_check and the verdict of `btrfs check --readonly` on them.
 * Single-device images only.  The helpers assert with Criterion, so a failing
 * helper fails the test that called it.
 */
#ifndef BTRSIM_TESTS_UNIT_IMGUTIL_H
#define BTRSIM_TESTS_UNIT_IMGUTIL_H

#include "ref/internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Skips the test when mkfs.btrfs is not installed. */
void iu_require_mkfs(void);
/* Runs a shell command, asserting it exits 0. */
void iu_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Writes dir/rel (its directory must exist). */
void iu_put(const char *dir, const char *rel, const void *data, size_t len);
/* `rm -rf dir`, then frees it (NULL: nothing). */
void iu_rmtree(char *dir);

/* A source tree in dir/src: d/big (300000 bytes of data in one extent),
 * d/a (inline), and nsmall files f0..f<nsmall-1> of 2000 bytes each (inline,
 * so that a nodesize of 4096 gives a multi-level fs tree). */
void iu_make_src(const char *dir, unsigned nsmall);
/* `truncate -s <mib>M img && mkfs.btrfs -q -f <opts> --rootdir <dir>/src img`. */
void iu_mkfs(const char *dir, const char *img, unsigned mib, const char *opts);

/* The image most checker tests corrupt: iu_make_src(dir, 300) made into
 * dir/fs.img (200 MiB, nodesize 4096: a fs tree of three levels, an extent
 * tree of two, one data extent and one csum item).  img gets its path. */
void iu_make_std(const char *dir, char *img, size_t len);

struct iu_opened {
	sim_volume *vol;
	ref_fs *fs;
};
/* Opens an image file read-only as a one-disk sim volume and the fs on it. */
struct iu_opened iu_open(const char *img);
/* The same for the checker's passes: leaves the kernel's tree-checker
 * rejects read all the same (ref_open_opts.no_item_checks). */
struct iu_opened iu_open_check(const char *img);
void iu_close(struct iu_opened *o);

/* An item found in a tree: its leaf, slot and key, where its data lies in the
 * leaf, and the path of parent nodes above the leaf. */
struct iu_item {
	uint64_t leaf;
	int slot;
	struct ref_key key;
	uint32_t data_off; /* from the start of the leaf block */
	uint32_t size;
	int levels; /* of the path: 1 for a root leaf */
	uint64_t node[BTRFS_MAX_TREE_LEVEL]; /* node[l]: the block at level l (node[0] == leaf) */
	int node_slot[BTRFS_MAX_TREE_LEVEL];
};

/* Picks an item: true to take it. */
typedef bool (*iu_match_fn)(void *ctx, const struct ref_key *k, const uint8_t *data,
			    uint32_t size);
/* The first item of tree `tree` at or after `from` that match accepts (any
 * item when match is NULL); false when there is none. */
bool iu_find(const char *img, uint64_t tree, const struct ref_key *from, iu_match_fn match,
	     void *ctx, struct iu_item *out);
/* The item at exactly this key (asserted to exist). */
struct iu_item iu_item(const char *img, uint64_t tree, uint64_t objectid, uint8_t type,
		       uint64_t offset);
/* The first item of this type in tree (asserted to exist). */
struct iu_item iu_first_of_type(const char *img, uint64_t tree, uint8_t type);

/* A malloc'd copy of the tree block at logical bytenr (first copy); *nodesize
 * gets its size when not NULL. */
uint8_t *iu_read_block(const char *img, uint64_t bytenr, uint32_t *nodesize);
/* Overwrites n bytes at pos of the tree block at logical bytenr in every copy;
 * its checksum is made right again unless fix_csum is false. */
void iu_patch_block(const char *img, uint64_t bytenr, size_t pos, const void *bytes, size_t n,
		    bool fix_csum);
void iu_patch_le64(const char *img, uint64_t bytenr, size_t pos, uint64_t v);
void iu_patch_le32(const char *img, uint64_t bytenr, size_t pos, uint32_t v);
/* Overwrites n bytes at pos of an item's data. */
void iu_patch_item(const char *img, const struct iu_item *it, size_t pos, const void *bytes,
		   size_t n);
/* Gives an item a new key, and the key pointers above it that must equal it
 * (while it is the first item of its block) the same key. */
void iu_set_key(const char *img, const struct iu_item *it, const struct ref_key *key);
/* Offsets, in a tree block, of item i's header and of key pointer i. */
size_t iu_item_hdr_off(int i);
size_t iu_key_ptr_off(int i);

/* Overwrites n bytes at pos of every superblock copy inside the image, with
 * the checksum made right again. */
void iu_patch_super(const char *img, size_t pos, const void *bytes, size_t n);

/* Runs ref_check on the image: the number of errors, the report in *text
 * (malloc'd).  With IU_SHOW set in the environment, it and the btrfs check
 * expectations below also print their reports to stderr. */
long iu_check(const char *img, char **text);
/* Asserts that ref_check finds no error. */
void iu_expect_clean(const char *img);
/* Asserts that ref_check finds errors and, for each string of the
 * NULL-terminated list, that some "ERROR: " line of its report contains it. */
void iu_expect_errors(const char *img, ...);
/* Runs `btrfs check --readonly <opts> img` (opts may be NULL): its exit
 * status (-1 when btrfs is not installed), its output in *text (malloc'd)
 * when text is not NULL. */
int iu_btrfs_check(const char *img, const char *opts, char **text);
/* Asserts that btrfs check exits non-zero, and that its output holds `want`
 * (when not NULL); nothing when btrfs is not installed. */
void iu_expect_btrfs_check_fails(const char *img, const char *opts, const char *want);
/* Asserts only that btrfs check's output holds `want`, for the problems it
 * reports and yet exits 0 on. */
void iu_expect_btrfs_check_says(const char *img, const char *opts, const char *want);

#endif
