/*
 * share.c - tree blocks shared between subvolumes and their snapshots: the
 * reference bookkeeping of copy-on-write over shadowed B-trees, as the
 * kernel keeps it (Rodeh's lazy reference counting).
 *
 * A snapshot copies only the root block; every block below it gains a
 * reference from the snapshot.  A block's children are referenced either
 * by the tree that owns it (keyed refs: TREE_BLOCK_REF root, EXTENT_DATA_REF
 * root/inode/offset) or, once its extent item carries FULL_BACKREF, by the
 * block itself (SHARED_BLOCK_REF / SHARED_DATA_REF parent).  Changing a
 * shared block copies it, and update_ref_for_cow's four cases decide which
 * references the copy and the original hold:
 *
 *   refs > 1, t owns it, not FULL_BACKREF: the original's children become
 *     shared refs from it (FULL_BACKREF set); the copy takes over t's keyed refs.
 *   refs > 1, otherwise: the copy's children gain t's keyed refs.
 *   refs = 1, FULL_BACKREF: the copy's children gain t's keyed refs and lose
 *     the original's shared refs; the original is freed.
 *   refs = 1, otherwise: nothing moves; the original is freed.
 */
#include "ref/txn/extent.h"
#include "ref/rw.h"

#include <errno.h>

int share_refs(ref_fs *fs, uint64_t bytenr, uint8_t level, int64_t *refs, uint64_t *flags)
{
	int64_t delta;
	uint64_t add;
	bool is_new;
	dref_pending(fs, bytenr, &delta, &add, &is_new);
	*refs = 0;
	*flags = add;
	if (!is_new) {
		struct rw_tree *et;
		int r = rw_tree_get(fs, BTRFS_EXTENT_TREE_OBJECTID, &et);
		if (r)
			return r;
		struct ref_path p;
		struct ref_key k = extent_tree_key(fs, bytenr, level), got;
		const uint8_t *d;
		uint32_t size = 0;
		if ((r = ref_search(fs, &et->root, &k, &p)) < 0)
			return r;
		if (r == 0) {
			ref_path_item(&p, &got, &d, &size);
			if (!ref_key_cmp(&got, &k) && size >= sizeof(struct btrfs_extent_item)) {
				*refs = (int64_t)le64(d);
				*flags |= le64(d + 16);
			} else {
				r = 1;
			}
			ref_path_release(fs, &p);
		}
		if (r)
			return ref_fail(fs, EUCLEAN, "tree block %llu has no metadata extent item",
					(unsigned long long)bytenr);
	}
	*refs += delta;
	return 0;
}

int share_info(ref_fs *fs, uint64_t bytenr, uint8_t level, uint64_t *refs, uint64_t *flags)
{
	int64_t n;
	int r = share_refs(fs, bytenr, level, &n, flags);
	if (r)
		return r;
	if (n <= 0)
		return ref_fail(fs, EUCLEAN, "tree block %llu is in use but has no reference left",
				(unsigned long long)bytenr);
	*refs = (uint64_t)n;
	return 0;
}

/* The data extent a file extent item references (false: inline or a hole). */
static bool file_extent_ref(const uint8_t *d, uint32_t size, uint64_t *bytenr, uint64_t *len,
			    uint64_t *offset)
{
	if (size < sizeof(struct btrfs_file_extent_item))
		return false;
	const struct btrfs_file_extent_item *fe = (const void *)d;
	if (fe->type != BTRFS_FILE_EXTENT_REG && fe->type != BTRFS_FILE_EXTENT_PREALLOC)
		return false;
	*bytenr = le64toh(fe->disk_bytenr);
	*len = le64toh(fe->disk_num_bytes);
	*offset = le64toh(fe->offset);
	return *bytenr != 0;
}

int share_slot(ref_fs *fs, const struct ref_block *b, int slot, bool full, int delta)
{
	const uint8_t *d = b->data;
	uint64_t parent = full ? b->bytenr : 0;
	if (b->level) {
		uint64_t gen, child = node_ptr(d, slot, &gen);
		return dref_tree(fs, child, (uint8_t)(b->level - 1), b->owner, parent, delta, false);
	}
	struct ref_key k;
	blk_key(d, slot, &k);
	uint64_t bytenr, len, off;
	if (k.type != BTRFS_EXTENT_DATA_KEY ||
	    !file_extent_ref(leaf_data((uint8_t *)d, slot), leaf_item_size(d, slot), &bytenr, &len,
			     &off))
		return 0;
	if (full)
		return dref_data_shared(fs, bytenr, len, parent, delta);
	return dref_data(fs, bytenr, len, b->owner, k.objectid, k.offset - off, delta, false);
}

int share_children(ref_fs *fs, const struct ref_block *b, bool full, int delta)
{
	uint32_t n = blk_nritems(b->data);
	int r = 0;
	for (uint32_t i = 0; i < n && !r; i++)
		r = share_slot(fs, b, (int)i, full, delta);
	return r;
}

/* b's children referenced by b itself, b's extent flagged FULL_BACKREF; with
 * drop_keyed they also lose the keyed references of b's owner (the
 * cleaner's UPDATE_BACKREF stage), without it those stay for a copy of b
 * to take over (update_ref_for_cow). */
static int make_full(ref_fs *fs, const struct ref_block *b, bool drop_keyed)
{
	int r = share_children(fs, b, true, +1);
	if (!r && drop_keyed)
		r = share_children(fs, b, false, -1);
	return r ? r : dref_tree_flags(fs, b->bytenr, b->level, BTRFS_BLOCK_FLAG_FULL_BACKREF);
}

int share_make_full(ref_fs *fs, const struct ref_block *b)
{
	return make_full(fs, b, true);
}

int share_cow(ref_fs *fs, struct rw_tree *t, struct ref_block *b, struct ref_block *cow,
	      bool *last)
{
	uint64_t refs = 1, flags = 0;
	/* Only blocks below the root and as old as the last snapshot can be
	 * shared (the kernel's btrfs_block_can_be_shared); a block a kernel's balance
	 * moved is newer than that but may be shared all the same
	 * (HEADER_FLAG_RELOC). */
	bool may_share = b->bytenr != t->root.bytenr &&
			 ((t->last_snapshot && b->gen <= t->last_snapshot) || blk_reloc(b->data));
	int r = may_share ? share_info(fs, b->bytenr, b->level, &refs, &flags) : 0;
	if (r)
		return r;
	bool full = flags & BTRFS_BLOCK_FLAG_FULL_BACKREF;
	*last = refs == 1;
	if (refs > 1) {
		if (b->owner == t->root.id && !full)
			return make_full(fs, b, false); /* the copy takes over t's keyed refs */
		return share_children(fs, cow, false, +1);
	}
	if (full && !(r = share_children(fs, cow, false, +1)))
		r = share_children(fs, b, true, -1);
	return r;
}
