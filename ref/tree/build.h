/*
 * build.h - bulk-building a B-tree from sorted items (ref/ only): leaves packed
 * in key order, then node levels above them, each block with its header and
 * checksum.  mkfs builds its first trees this way, as mkfs.btrfs does, before
 * any transaction exists.
 */
#ifndef BTRSIM_REF_BUILD_H
#define BTRSIM_REF_BUILD_H

#include "ref/ref.h"

struct build_item {
	struct ref_key key;
	uint32_t size;
	const void *data;
};

/* Identity of the blocks of one tree. */
struct build_header {
	uint8_t fsid[BTRFS_FSID_BYTES];
	uint8_t chunk_tree_uuid[BTRFS_UUID_SIZE];
	uint64_t generation;
	uint64_t owner;
	unsigned csum_type;
	uint32_t nodesize;
};

/* How many leaves the items make (1 for none). */
size_t build_leaves(uint32_t nodesize, const struct build_item *items, size_t n);
/* The level of block b in build_emit's order, for a tree of `leaves` leaves. */
int build_level(uint32_t nodesize, size_t leaves, size_t b);
/* How many blocks the items make (they must be sorted; an empty tree is one leaf). */
size_t build_count(uint32_t nodesize, const struct build_item *items, size_t n);
/*
 * Writes the blocks into out (count * nodesize bytes): leaves first, then each
 * node level, the root last.  addr[i] is the logical address of block i.
 * Returns the root's level, or -EINVAL when an item cannot fit in a leaf.
 */
int build_emit(const struct build_header *h, const struct build_item *items, size_t n,
	       const uint64_t *addr, size_t count, uint8_t *out);
/* Sorts items by key. */
void build_sort(struct build_item *items, size_t n);

#endif
