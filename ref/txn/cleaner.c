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
 * check`, which skips the children before drop_progress, sees a consistent
 * file system at every commit.  The kernel records its progress at any level
 * (the node it stopped in); ref resumes there, finishing that node and the
 * nodes above it that run out of children in one step.
 *
 * Before a shared block loses the dead root's reference, every block below
 * it that the dead root owns is switched to full back references (its
 * children referenced by it rather than by the dead root: the kernel's
 * UPDATE_BACKREF stage), since the dead root's keyed references die with it.
 */
#include "ref/qgroup/qgroup.h"
#include "ref/rw.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct drop {
	uint64_t root;    /* the dead tree */
	uint64_t created; /* its ROOT_ITEM offset: blocks this old cannot be its own */
	bool reloc;       /* a relocation tree: no quota group accounts for it */
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
		if (!r && !dr->reloc)
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

/* The way down a half-dropped dead tree to the node holding the next child
 * to drop: from the root, the first child not dropped yet at each level,
 * down to drop_level (the root itself when the drop has not begun). */
struct drop_path {
	struct ref_block *b[BTRFS_MAX_TREE_LEVEL];
	uint64_t gen[BTRFS_MAX_TREE_LEVEL];  /* as its parent records it */
	uint32_t slot[BTRFS_MAX_TREE_LEVEL]; /* the next child at each level */
	bool full[BTRFS_MAX_TREE_LEVEL];     /* the block has full back references */
	bool shared[BTRFS_MAX_TREE_LEVEL];   /* more than one reference */
	int level;                      /* where the next child is dropped */
};

static void drop_path_put(ref_fs *fs, struct drop_path *dp)
{
	for (int l = 0; l < BTRFS_MAX_TREE_LEVEL; l++)
		if (dp->b[l])
			ref_block_put(fs, dp->b[l]);
}

static int drop_path_find(ref_fs *fs, const struct ref_root *root,
			  const struct btrfs_root_item *ri, struct drop_path *dp)
{
	memset(dp, 0, sizeof(*dp));
	bool begun = ri->drop_progress.objectid != 0;
	struct ref_key from = { LE64(ri->drop_progress.objectid), ri->drop_progress.type,
				LE64(ri->drop_progress.offset) };
	if (root->level >= BTRFS_MAX_TREE_LEVEL || (begun && (!ri->drop_level || ri->drop_level > root->level)))
		return ref_fail(fs, EUCLEAN, "deleted subvolume %llu: drop_level %u, root level %u",
				(unsigned long long)root->id, ri->drop_level, root->level);
	uint64_t bytenr = root->bytenr, gen = root->gen;
	for (int l = root->level;; l--) {
		uint64_t refs, flags;
		int r = ref_read_block(fs, bytenr, gen, (uint8_t)l, 0, &dp->b[l]);
		if (r || (r = share_info(fs, bytenr, (uint8_t)l, &refs, &flags))) {
			drop_path_put(fs, dp);
			return r;
		}
		dp->gen[l] = gen;
		dp->full[l] = flags & BTRFS_BLOCK_FLAG_FULL_BACKREF;
		dp->shared[l] = refs > 1;
		const uint8_t *d = dp->b[l]->data;
		uint32_t n = blk_nritems(d), s = 0;
		while (begun && l && s < n && node_child_dropped(d, (int)s, &from))
			s++;
		dp->slot[l] = s;
		dp->level = l;
		if (!l || !begun || l == ri->drop_level)
			return 0;
		if (s >= n) {
			drop_path_put(fs, dp);
			return ref_fail(fs, EUCLEAN, "deleted subvolume %llu: node %llu holds no key after its drop progress",
					(unsigned long long)root->id, (unsigned long long)bytenr);
		}
		bytenr = node_ptr(d, (int)s, &gen);
	}
}

/* Records in the dead tree's root item how far the drop got: drop_progress
 * is the key of the next child to drop in a node of level `level`. */
static int save_progress(ref_fs *fs, struct rw_tree *rt, const struct ref_key *key,
			 struct btrfs_root_item *ri, const struct ref_key *next, uint8_t level)
{
	ri->drop_progress.objectid = htole64(next->objectid);
	ri->drop_progress.type = next->type;
	ri->drop_progress.offset = htole64(next->offset);
	ri->drop_level = level;
	struct ref_path p;
	int r = bt_lookup_cow(fs, rt, key, &p);
	if (!r) {
		uint32_t size;
		uint8_t *w = bt_item(&p, &size);
		memcpy(w, ri, size < sizeof(*ri) ? size : sizeof(*ri));
		ref_path_release(fs, &p);
	}
	return r;
}

/*
 * One step of dropping the dead tree whose root item is at `key` in the root
 * tree (ri: its contents): 1 when the tree is gone, its root item deleted
 * with it; 0 when progress was saved for the next step.
 */
static int drop_step(ref_fs *fs, struct rw_tree *rt, const struct drop *dr, const struct ref_key *key,
		     struct btrfs_root_item *ri)
{
	uint64_t id = dr->root;
	struct ref_root root = { id, LE64(ri->bytenr), LE64(ri->generation), ri->level };
	struct drop_path dp;
	int r = drop_path_find(fs, &root, ri, &dp);
	if (r)
		return r;
	/* The step: at the node holding the next child, one child when that
	 * node is the root (ref's own steps); the rest of it when the kernel
	 * left the progress lower down. */
	int l = dp.level;
	struct ref_block *at = dp.b[l];
	uint32_t n = blk_nritems(at->data), end = l == root.level ? dp.slot[l] + 1 : n;
	if (l < root.level && dp.shared[l]) {
		/* A node another tree holds too: the kernel never stops inside
		 * one, but were it so, it lets the node go whole (walk_up_proc). */
		r = drop_block(fs, dr, at->bytenr, dp.gen[l], (uint8_t)l,
			       dp.full[l + 1] ? dp.b[l + 1]->bytenr : 0, 1);
		end = dp.slot[++l] + 1;
	} else {
		for (uint32_t i = dp.slot[l]; l && i < end && i < n && !r; i++) {
			uint64_t gen, child = node_ptr(at->data, (int)i, &gen);
			r = drop_block(fs, dr, child, gen, (uint8_t)(l - 1),
				       dp.full[l] ? at->bytenr : 0, 1);
		}
		if (!l && !r)
			r = share_children(fs, at, dp.full[0], -1);
	}
	/* Up from there: the first node with a child left records the progress;
	 * a node with none left is freed; the root last, with its root item. */
	int gone = 0;
	for (uint32_t next = end; !r; next = dp.slot[++l] + 1) {
		struct ref_block *b = dp.b[l];
		if (l && next < blk_nritems(b->data)) {
			struct ref_key nk;
			blk_key(b->data, (int)next, &nk);
			r = save_progress(fs, rt, key, ri, &nk, (uint8_t)l);
			break;
		}
		bool top = l == root.level;
		/* (a relocation tree's root holds a full backref to itself) */
		uint64_t parent = top ? (dr->reloc ? b->bytenr : 0)
				      : dp.full[l + 1] ? dp.b[l + 1]->bytenr : 0;
		if ((r = free_tree_block_ref(fs, b, id, parent)) || !top)
			continue;
		if (!(r = bt_delete_key(fs, rt, key)))
			gone = 1;
		break;
	}
	drop_path_put(fs, &dp);
	return r ? r : gone;
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
	struct drop dr = { id, key.offset, false };
	r = drop_step(fs, rt, &dr, &key, &ri);
	if (r == 1) {
		struct ref_key ok = { BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, id };
		if (!(r = bt_delete_key(fs, rt, &ok))) {
			rw_tree_forget(fs, id);
			qg_subvol_dropped(fs, id);
		}
	}
	return r;
}

int cleaner_drop_reloc(ref_fs *fs, uint64_t subvol)
{
	struct rw_tree *rt;
	int r = rw_tree_get(fs, BTRFS_ROOT_TREE_OBJECTID, &rt);
	if (r)
		return r;
	struct ref_key key = { BTRFS_TREE_RELOC_OBJECTID, BTRFS_ROOT_ITEM_KEY, subvol };
	/* Blocks of any age may be its own: it copies older blocks of the
	 * subvolume, and merging swaps subtrees between the two. */
	struct drop dr = { BTRFS_TREE_RELOC_OBJECTID, 0, true };
	/* A bound against a tree that does not shrink (each step frees a child). */
	for (unsigned step = 0; step < 100000000; step++) {
		struct ref_path p;
		struct ref_key got;
		const uint8_t *d;
		uint32_t size;
		if ((r = ref_search(fs, &rt->root, &key, &p)))
			return r < 0 ? r : 0;
		ref_path_item(&p, &got, &d, &size);
		if (ref_key_cmp(&got, &key)) {
			ref_path_release(fs, &p);
			return 0; /* gone */
		}
		struct btrfs_root_item ri;
		memset(&ri, 0, sizeof(ri));
		memcpy(&ri, d, size < sizeof(ri) ? size : sizeof(ri));
		ref_path_release(fs, &p);
		if (LE32(ri.refs)) {
			/* Not merged yet: its drop_progress is the merge's
			 * (merge_reloc_root), not a drop's.  Marked dead, as
			 * the kernel marks a merged one, it drops from the top. */
			ri.refs = 0;
			memset(&ri.drop_progress, 0, sizeof(ri.drop_progress));
			ri.drop_level = 0;
			struct ref_key none = { 0, 0, 0 };
			if ((r = save_progress(fs, rt, &key, &ri, &none, 0)))
				return r;
		}
		r = drop_step(fs, rt, &dr, &key, &ri);
		if (r)
			return r == 1 ? 0 : r;
	}
	return ref_fail(fs, EUCLEAN, "relocation tree of %llu does not shrink",
				(unsigned long long)subvol);
}
