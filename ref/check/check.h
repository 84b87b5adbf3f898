/*
 * check.h - the read-only checker's shared state (ref/ only).  ref_check() in
 * check.c walks every tree and drives the passes, each in a file of its own:
 *   check.c        structure: every tree block reachable, key ranges, levels
 *   check_fs.c     each subvolume: inode items, refs, dir items and indexes, nlink,
 *                  sizes against extents
 *   check_extent.c the extent tree: every reference found in the trees is recorded
 *                  with the right count and backref, and nothing more
 *   check_chunk.c  chunks, block groups and device extents agree
 *   check_csum.c   csum items cover exactly the checksummed data
 *   check_fst.c    the free-space tree records exactly what the extents leave free
 * Every problem is one line on the report, "ERROR: " then the tree, the key
 * and what is wrong, as btrfs check prints them.
 */
#ifndef BTRSIM_REF_CHECK_H
#define BTRSIM_REF_CHECK_H

#include "ref/internal.h"

#include "ref/grow.h"
#include "ref/tree/u64map.h"

/* A tree block found by the structure walk, once however many trees share it. */
struct check_block {
	uint64_t bytenr, owner, gen;
	uint8_t level;
	uint32_t parents; /* first of its parent references (index + 1; 0: none) */
};

/* One way a tree block is referenced: from the node `parent`, or as the root
 * of `tree` (parent 0). */
struct check_parent {
	uint64_t parent, tree;
	uint32_t next; /* index + 1 of the next reference of the same block */
};

/* A file extent item that references a data extent. */
struct check_dref {
	uint64_t disk_bytenr, disk_num_bytes;
	uint64_t leaf;   /* the leaf holding the item */
	uint64_t ino;    /* key objectid */
	uint64_t offset; /* key offset minus the item's extent offset */
};

struct check_state {
	struct check_block *blocks;
	size_t nblocks, blocks_cap;
	struct u64map block_index; /* bytenr -> index + 1 */
	struct check_parent *parents;
	size_t nparents, parents_cap;
	struct check_dref *drefs;
	size_t ndrefs, drefs_cap;
	uint64_t *subvols; /* trees holding files: 5, >= 256, data reloc */
	size_t unreadable;  /* tree blocks the walk could not read */
	size_t nsubvols, subvols_cap;
};

struct check {
	ref_fs *fs;
	FILE *out;
	unsigned long errors;
	bool verbose;
	struct check_state *st; /* what the structure walk collected (check.c) */
	/* The tree being walked is a deleted subvolume half dropped: at this
	 * level, children before this key are freed already (-1: none). */
	int drop_level;
	struct ref_key drop_key;
	/* The tree being walked is the relocation tree (TREE_RELOC) of this
	 * subvolume, left by an interrupted balance (0: it is not). */
	uint64_t reloc_of;
};

void check_error(struct check *ck, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "(256 INODE_ITEM 0)"-style key text into buf. */
const char *check_key_str(const struct ref_key *k, char *buf, size_t len);

/* The block the walk found at bytenr, or NULL. */
const struct check_block *check_block_find(const struct check *ck, uint64_t bytenr);

/* The passes.  Each reports through check_error and returns 0, or a negative
 * errno when it could not run at all (e.g. out of memory). */
int check_fs_tree(struct check *ck, uint64_t subvol);
int check_extents(struct check *ck);
int check_chunks(struct check *ck);
int check_csums(struct check *ck);
int check_free_space(struct check *ck);
int check_qgroups(struct check *ck);

#endif
