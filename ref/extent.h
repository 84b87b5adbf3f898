/*
 * extent.h - data extent items and their back references, decoded into a
 * list and encoded back (ref/ only).  Used by delayed.c when references
 * change.
 */
#ifndef BTRSIM_REF_EXTENT_H
#define BTRSIM_REF_EXTENT_H

#include "ref/rw.h"

/* One back reference: EXTENT_DATA_REF (root, ino, offset) or
 * SHARED_DATA_REF (parent), with its count. */
struct xref {
	uint8_t type;
	uint64_t root, ino, offset, parent;
	uint64_t count;
};

struct extent_refs {
	uint64_t bytenr, num_bytes, generation, flags;
	uint64_t total; /* the extent item's refs */
	struct xref *refs;
	size_t n, cap;
	struct ref_key *keyed; /* keyed reference items found at load */
	size_t nkeyed, keyed_cap;
};

/* Loads the extent item at bytenr and its keyed references; x is then the
 * caller's to release with extent_refs_free, also after a failure. */
int extent_load(ref_fs *fs, struct rw_tree *et, uint64_t bytenr, uint64_t num_bytes,
		struct extent_refs *x);
void extent_refs_free(struct extent_refs *x);
int extent_refs_add(ref_fs *fs, struct extent_refs *x, uint64_t root, uint64_t ino,
		    uint64_t offset, int64_t delta);
/* Deletes the extent item and its keyed references as loaded. */
int extent_delete(ref_fs *fs, struct rw_tree *et, const struct extent_refs *x);
/* Writes the extent item (references inline while they fit, keyed after). */
int extent_store(ref_fs *fs, struct rw_tree *et, struct extent_refs *x);
/* Drops the only reference of a tree block (its METADATA_ITEM goes). */
int extent_drop_tree_ref(ref_fs *fs, struct rw_tree *et, uint64_t bytenr);

/* csumtree.c */
int csum_insert(ref_fs *fs, uint64_t bytenr, const uint8_t *csums, uint64_t nsectors);
int csum_delete(ref_fs *fs, uint64_t bytenr, uint64_t len);

#endif
