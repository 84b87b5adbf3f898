/*
 * bg_remove.c - removing an empty block group with its chunk, as the
 * kernel's btrfs_remove_chunk: the BLOCK_GROUP_ITEM, the free-space tree's
 * info and extents for the range, the CHUNK_ITEM (and its copy in the
 * superblock's sys_chunk_array for a system chunk), each stripe's
 * DEV_EXTENT with the devices' bytes_used, in one commit.  The logical
 * range is gone from the chunk map and the block cache after it.
 */
#include "ref/rw.h"

#include <errno.h>
#include <stdlib.h>

/* Deletes every item of tree t whose objectid lies in [start, end). */
static int delete_range(ref_fs *fs, struct rw_tree *t, uint64_t start, uint64_t end)
{
	for (;;) {
		struct ref_key k = { start, 0, 0 }, got;
		int r = bt_peek(fs, &t->root, &k, false, &got, NULL);
		if (r < 0)
			return r;
		if (r == 1 || got.objectid >= end)
			return 0;
		if ((r = bt_delete_key(fs, t, &got)))
			return r;
	}
}

static int delete_key(ref_fs *fs, uint64_t tree, uint64_t objectid, uint8_t type, uint64_t offset)
{
	struct rw_tree *t;
	struct ref_key k = { objectid, type, offset };
	int r = rw_tree_get(fs, tree, &t);
	if (!r && (r = bt_delete_key(fs, t, &k)) == -ENOENT)
		r = ref_fail(fs, EUCLEAN, "removing a block group: tree %llu has no item (%llu %u %llu)",
			     (unsigned long long)tree, (unsigned long long)objectid, type,
			     (unsigned long long)offset);
	return r;
}

/* The chunk's entry in the superblock's array of system chunks. */
static int drop_sys_array_entry(ref_fs *fs, uint64_t logical)
{
	uint8_t *a = fs->sb.sys_chunk_array;
	uint32_t size = LE32(fs->sb.sys_chunk_array_size), pos = 0;
	while (pos + sizeof(struct btrfs_disk_key) + sizeof(struct btrfs_chunk) <= size) {
		struct btrfs_disk_key dk;
		struct btrfs_chunk c;
		memcpy(&dk, a + pos, sizeof(dk));
		memcpy(&c, a + pos + sizeof(dk), sizeof(c));
		uint32_t len = (uint32_t)(sizeof(dk) + sizeof(c) +
					  (LE16(c.num_stripes) - 1u) * sizeof(struct btrfs_stripe));
		if (LE64(dk.offset) == logical) {
			memmove(a + pos, a + pos + len, size - pos - len);
			memset(a + size - len, 0, len);
			fs->sb.sys_chunk_array_size = htole32(size - len);
			return 0;
		}
		pos += len;
	}
	return ref_fail(fs, EUCLEAN, "system chunk %llu is not in the superblock's array",
			(unsigned long long)logical);
}

int bg_remove(ref_fs *fs, uint64_t start)
{
	struct rw_state *rw = fs->rw;
	struct rw_bg *bg = rw_bg_find(fs, start);
	const struct ref_chunk *c = chunk_find(fs, start);
	if (!bg || !c || bg->start != start || c->logical != start)
		return ref_fail(fs, ENOENT, "no block group at %llu", (unsigned long long)start);
	if (bg->used)
		return ref_fail(fs, EBUSY, "block group %llu still holds %llu bytes",
				(unsigned long long)start, (unsigned long long)bg->used);
	uint64_t len = c->length, type = c->type;
	uint64_t per = chunk_stripe_bytes(type, len, c->num_stripes);
	struct rw_tree *fst;
	int r = delete_key(fs, rw->bg_tree, start, BTRFS_BLOCK_GROUP_ITEM_KEY, len);
	if (!r && !(r = rw_tree_get(fs, BTRFS_FREE_SPACE_TREE_OBJECTID, &fst)))
		r = delete_range(fs, fst, start, start + len);
	if (!r)
		r = delete_key(fs, BTRFS_CHUNK_TREE_OBJECTID, BTRFS_FIRST_CHUNK_TREE_OBJECTID,
			       BTRFS_CHUNK_ITEM_KEY, start);
	for (uint16_t s = 0; s < c->num_stripes && !r; s++) {
		r = delete_key(fs, BTRFS_DEV_TREE_OBJECTID, c->stripes[s].devid, BTRFS_DEV_EXTENT_KEY,
			       c->stripes[s].physical);
		for (size_t d = 0; d < rw->ndevs && !r; d++)
			if (rw->devs[d].devid == c->stripes[s].devid) {
				rw->devs[d].bytes_used -= per;
				rw->devs[d].dirty = true;
			}
	}
	if (!r && type & BTRFS_BLOCK_GROUP_SYSTEM)
		r = drop_sys_array_entry(fs, start);
	if (r) {
		rw->failed = true;
		return r;
	}
	/* Gone from memory: the group, pinned space in it, cached blocks. */
	rset_remove(&rw->pinned, start, len);
	rset_free(&bg->free);
	size_t i = (size_t)(bg - rw->bgs);
	memmove(&rw->bgs[i], &rw->bgs[i + 1], (rw->nbgs - i - 1) * sizeof(*rw->bgs));
	rw->nbgs--;
	for (uint64_t b = start; b < start + len; b += fs->nodesize) {
		struct ref_block *blk = cache_unlink(fs, b);
		if (blk && !blk->refs)
			free(blk);
		else if (blk)
			cache_insert(fs, blk); /* held by a path still: it goes when let go */
	}
	chunk_remove(fs, start);
	rw->in_txn = true;
	return rw_commit(fs);
}
