/*
 * extent.h - extent items and their back references, decoded into a list
 * and encoded back (ref/ only): data extents (EXTENT_ITEM) and tree blocks
 * (skinny METADATA_ITEM, or EXTENT_ITEM with a tree block info without
 * skinny metadata).  Used by delayed.c when references change.
 */
#ifndef BTRSIM_REF_EXTENT_H
#define BTRSIM_REF_EXTENT_H

#include "ref/rw.h"

/* One back reference: TREE_BLOCK_REF (root), SHARED_BLOCK_REF (parent),
 * EXTENT_DATA_REF (root, ino, offset) or SHARED_DATA_REF (parent), with its
 * count (always 1 for tree blocks). */
struct xref {
	uint8_t type;
	uint64_t root, ino, offset, parent;
	uint64_t count;
};

struct extent_refs {
	/* (bytenr, EXTENT_ITEM, num_bytes) for data and, without skinny
	 * metadata, for tree blocks; (bytenr, METADATA_ITEM, level) with it */
	struct ref_key key;
	uint64_t generation, flags;
	/* A tree block's btrfs_tree_block_info, which an EXTENT_ITEM of a tree
	 * block holds before its references (no skinny metadata): its first
	 * key (when the item was made) and level. */
	struct ref_key info_key;
	uint8_t info_level;
	uint64_t total; /* the extent item's refs */
	struct xref *refs;
	size_t n, cap;
	struct ref_key *keyed; /* keyed reference items found at load */
	size_t nkeyed, keyed_cap;
};

/* The key of the extent item of the tree block at bytenr: METADATA_ITEM with
 * its level under skinny metadata, else EXTENT_ITEM with the nodesize. */
struct ref_key extent_tree_key(const ref_fs *fs, uint64_t bytenr, int level);
/* Whether an extent item key is a tree block's. */
bool extent_key_is_tree(const struct extent_refs *x);

/* Loads the extent item with this key and its keyed references; x is then
 * the caller's to release with extent_refs_free, also after a failure. */
int extent_load(ref_fs *fs, struct rw_tree *et, const struct ref_key *key, struct extent_refs *x);
void extent_refs_free(struct extent_refs *x);
/* Changes one reference's count (a tree block's or a data extent's). */
int extent_ref_change(ref_fs *fs, struct extent_refs *x, bool tree, const struct dref_ref *c);
/* Deletes the extent item and its keyed references as loaded. */
int extent_delete(ref_fs *fs, struct rw_tree *et, const struct extent_refs *x);
/* Writes the extent item (references inline while they fit, keyed after). */
int extent_store(ref_fs *fs, struct rw_tree *et, struct extent_refs *x);

/* csumtree.c */
int csum_insert(ref_fs *fs, uint64_t bytenr, const uint8_t *csums, uint64_t nsectors);
int csum_delete(ref_fs *fs, uint64_t bytenr, uint64_t len);

#endif
