/*
 * cleaner.c - freeing deleted subvolumes, as the kernel's cleaner thread
 * (btrfs_drop_snapshot) does: a deleted subvolume's ROOT_ITEM stays with
 * refs 0 and an ORPHAN_ITEM in the root tree until every block only it
 * referenced is free; blocks it shares with other subvolumes lose only its
 * reference.
 *
 * Work is done a step per commit: one child subtree of the dead root's root
 * block.  The progress is the root item's drop_progress and drop_level (the
 * key of the next child of the root block, at the root's level), so a crash
 * or an unmount half-way resumes where the last commit left it, and `btrfs
 * check`, which skips the children before drop_progress at drop_level, sees
 * a consistent file system at every commit.
 *
 * Before a shared block loses the dead root's reference, every block below
 * it that the dead root owns is switched to full back references (its
 * children referenced by it rather than by the dead root: the kernel's
 * UPDATE_BACKREF stage), since the dead root's keyed references die with it.
 */
#include "ref/qgroup.h"
#include "ref/rw.h"

#include <errno.h>
#include <stdlib.h>

struct drop {
	uint64_t root;    /* the dead tree */
	uint64_t created; /* its ROOT_ITEM offset: blocks this old cannot be its own */
};

static int convert_owned(ref_fs *fs, const struct drop *dr, uint64_t bytenr, uint64_t gen,
			 uint8_t level, int depth);

/* Every block below b owned by the dead root gets full back references. */
static int convert_children(ref_fs *fs, const struct drop *dr, const struct ref_block *b, int depth)
{
	if (b->level == 0)
		return 0;
	int r = 0;
	for (uint32_t i = 0; i < blk_nritems(b->data) && !r; i++) {
		uint64_t gen, child = node_ptr(b->data, (int)i, &gen);
		if (gen > dr->created)
			r = convert_owned(fs, dr, child, gen, (uint8_t)(b->level - 1), depth + 1);
	}
	return r;
}

static int convert_owned(ref_fs *fs, const struct drop *dr, uint64_t bytenr, uint64_t gen,
			 uint8_t level, int depth)
{
	if (depth > BTRFS_MAX_TREE_LEVEL)
		return ref_fail(fs, EUCLEAN, "tree %llu is deeper than %d levels",
				(unsigned long long)dr->root, BTRFS_MAX_TREE_LEVEL);
	struct ref_block *b;
	int r = ref_read_block(fs, bytenr, gen, level, 0, &b);
	if (r)
		return r;
	if (b->owner != dr->root) { /* nothing below a block of another tree is the dead root's */
		ref_block_put(fs, b);
		return 0;
	}
	uint64_t refs, flags;
	if (!(r = share_info(fs, bytenr, level, &refs, &flags)) &&
	    !(flags & BTRFS_BLOCK_FLAG_FULL_BACKREF))
		r = share_make_full(fs, b);
	if (!r)
		r = convert_children(fs, dr, b, depth);
	ref_block_put(fs, b);
	return r;
}

/* Drops the reference the dead tree holds on a block through a parent (its
 * bytenr when the parent has full back references, else 0): a shared block
 * just loses it; the dead tree's own block is emptied and freed. */
static int drop_block(ref_fs *fs, const struct drop *dr, uint64_t bytenr, uint64_t gen,
		      uint8_t level, uint64_t parent, int depth)
{
	if (depth > BTRFS_MAX_TREE_LEVEL)
		return ref_fail(fs, EUCLEAN, "tree %llu is deeper than %d levels",
				(unsigned long long)dr->root, BTRFS_MAX_TREE_LEVEL);
	uint64_t refs, flags;
	struct ref_block *b;
	int r = share_info(fs, bytenr, level, &refs, &flags);
	if (r || (r = ref_read_block(fs, bytenr, gen, level, 0, &b)))
		return r;
	bool full = flags & BTRFS_BLOCK_FLAG_FULL_BACKREF;
	if (refs > 1) {
		if (b->owner == dr->root && !full)
			r = share_make_full(fs, b);
		if (!r && b->owner == dr->root)
			r = convert_children(fs, dr, b, depth);
		/* Everything below stops being the dead tree's without a
		 * reference changing: quota groups are told (the kernel's
		 * btrfs_qgroup_trace_subtree). */
		if (!r)
			r = qg_trace_subtree(fs, b);
		if (!r)
			r = dref_tree(fs, bytenr, level, dr->root, parent, -1, false);
		ref_block_put(fs, b);
		return r;
	}
	if (b->level) {
		for (uint32_t i = 0; i < blk_nritems(b->data) && !r; i++) {
			uint64_t cgen, child = node_ptr(b->data, (int)i, &cgen);
			r = drop_block(fs, dr, child, cgen, (uint8_t)(level - 1), full ? bytenr : 0,
				       depth + 1);
		}
	} else {
		r = share_children(fs, b, full, -1);
	}
	if (!r)
		r = free_tree_block_ref(fs, b, dr->root, parent);
	ref_block_put(fs, b);
	return r;
}

/* The first deleted subvolume waiting for the cleaner: 1 with its id, 0 when
 * none.  The root tree is searched only while orphans_pending says one may
 * wait (set at mount and by ref_subvol_delete); finding none clears it. */
static int next_dead(ref_fs *fs, struct rw_tree **rt, uint64_t *id)
{
	if (!fs->rw->orphans_pending)
		return 0;
	struct ref_key k = { BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, 0 }, got;
	int r = rw_tree_get(fs, BTRFS_ROOT_TREE_OBJECTID, rt);
	if (r || (r = bt_peek(fs, &(*rt)->root, &k, false, &got, NULL)) < 0)
		return r;
	if (r == 1 || got.objectid != BTRFS_ORPHAN_OBJECTID || got.type != BTRFS_ORPHAN_ITEM_KEY) {
		fs->rw->orphans_pending = false;
		return 0;
	}
	*id = got.offset;
	return 1;
}

int cleaner_pending(ref_fs *fs)
{
	struct rw_tree *rt;
	uint64_t id;
	return next_dead(fs, &rt, &id);
}

int cleaner_step(ref_fs *fs)
{
	struct rw_tree *rt;
	uint64_t id;
	int r = next_dead(fs, &rt, &id);
	if (r <= 0)
		return r;
	struct ref_path p;
	struct ref_key key;
	const uint8_t *d;
	uint32_t size;
	struct btrfs_root_item ri;
	if ((r = ref_find_first(fs, &rt->root, id, BTRFS_ROOT_ITEM_KEY, &p, &key, &d, &size)))
		return r == -ENOENT ? ref_fail(fs, EUCLEAN, "deleted subvolume %llu has no root item",
					       (unsigned long long)id)
				    : r;
	memset(&ri, 0, sizeof(ri));
	memcpy(&ri, d, size < sizeof(ri) ? size : sizeof(ri));
	ref_path_release(fs, &p);
	if (LE32(ri.refs))
		return ref_fail(fs, EUCLEAN, "subvolume %llu has an orphan item but is linked",
				(unsigned long long)id);
	/* Deleted in this very transaction: its root item is not up to date
	 * before the commit; the cleaner starts at the next one, as the kernel's. */
	struct rw_tree *dt = rw_tree_find(fs, id);
	if (dt && dt->dirty)
		return 0;
	struct drop dr = { id, key.offset };
	struct ref_root root = { id, LE64(ri.bytenr), LE64(ri.generation), ri.level };
	struct ref_block *b;
	if ((r = ref_read_block(fs, root.bytenr, root.gen, root.level, 0, &b)))
		return r;
	uint64_t refs, flags;
	if ((r = share_info(fs, b->bytenr, b->level, &refs, &flags)))
		goto out;
	bool full = flags & BTRFS_BLOCK_FLAG_FULL_BACKREF;
	/* The next child of the root block to drop, after drop_progress. */
	uint32_t n = blk_nritems(b->data), slot = 0;
	if (b->level && ri.drop_progress.objectid) {
		struct ref_key from = { LE64(ri.drop_progress.objectid), ri.drop_progress.type,
					LE64(ri.drop_progress.offset) };
		while (slot < n) {
			struct ref_key k;
			blk_key(b->data, (int)slot, &k);
			if (ref_key_cmp(&k, &from) >= 0)
				break;
			slot++;
		}
	}
	if (b->level && slot < n) {
		uint64_t gen, child = node_ptr(b->data, (int)slot, &gen);
		if ((r = drop_block(fs, &dr, child, gen, (uint8_t)(b->level - 1), full ? b->bytenr : 0, 1)))
			goto out;
		slot++;
	}
	if (b->level && slot < n) { /* more to do: record how far it got */
		struct ref_key next;
		blk_key(b->data, (int)slot, &next);
		ri.drop_progress.objectid = htole64(next.objectid);
		ri.drop_progress.type = next.type;
		ri.drop_progress.offset = htole64(next.offset);
		ri.drop_level = b->level;
		if (!(r = bt_lookup_cow(fs, rt, &key, &p))) {
			uint8_t *w = bt_item(&p, &size);
			memcpy(w, &ri, size < sizeof(ri) ? size : sizeof(ri));
			ref_path_release(fs, &p);
		}
		goto out;
	}
	/* The last child is gone (or the root is a leaf): the root block, the
	 * root item and the orphan item go. */
	if (!b->level && (r = share_children(fs, b, full, -1)))
		goto out;
	struct ref_key ok = { BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, id };
	if (!(r = free_tree_block_ref(fs, b, id, 0)) && !(r = bt_delete_key(fs, rt, &key)) &&
	    !(r = bt_delete_key(fs, rt, &ok))) {
		rw_tree_forget(fs, id);
		qg_subvol_dropped(fs, id);
	}
out:
	ref_block_put(fs, b);
	return r;
}
