/*
 * reloc.c - emptying one block group (balance, device remove): its data
 * extents and tree blocks moved to other groups, every tree that points to
 * them changed, sharing between snapshots kept, and the group removed.
 *
 * The kernel builds a relocation tree per subvolume and merges it back.  ref
 * walks every tree once instead, each shared block once (a map from old
 * address to new), and *moves* a block rather than copying it per tree: the
 * copy takes every reference the original had (keyed ones as they are,
 * shared ones from its parents' copies), so a block a hundred snapshots share
 * stays one block.  A block changes when it lies in the group, or when a
 * child moved (in a leaf: the data extent of a file extent item); a block
 * made in this transaction changes in place, any other moves.  A moved block
 * keeps its generation (header, parent pointer and extent item agree on
 * it): it is shared exactly as before, so the rule that a block newer than
 * its tree's last snapshot is not shared still holds.  (The kernel's moved
 * blocks carry HEADER_FLAG_RELOC instead, and full back references, which
 * btrfs check assumes of that flag.)
 *
 * Commits happen only between two trees' walks, so each commit's file system
 * is whole: a crash leaves the group partly emptied, and emptying it again
 * finishes the job.  The group is marked read-only in memory only (new space
 * never comes from it while the walk runs).
 */
#include "ref/txn/extent.h"
#include "ref/vfs.h"

#include <errno.h>
#include <stdlib.h>

struct gone {
	uint64_t bytenr;
	uint8_t level;
};

struct reloc {
	ref_fs *fs;
	uint64_t start, end; /* the group */
	bool meta;           /* its tree blocks move */
	struct u64map seen;  /* a block -> its new address, or itself when it stays */
	struct u64map moved; /* a data extent -> its new address */
	struct gone *gone;   /* blocks moved: each must end with no reference */
	size_t ngone, gone_cap;
	struct ref_balance_stats *st;
};

struct change {
	int slot;
	uint64_t to, gen; /* the new address (and a child block's generation) */
};

static bool shareable(uint64_t owner)
{
	return owner == BTRFS_FS_TREE_OBJECTID || owner == BTRFS_DATA_RELOC_TREE_OBJECTID ||
	       (owner >= BTRFS_FIRST_FREE_OBJECTID && owner <= BTRFS_LAST_FREE_OBJECTID);
}

/* Points slot ch->slot of d at ch->to: a child block, or a file extent's data. */
static void apply(uint8_t *d, const struct change *ch)
{
	if (blk_level(d)) {
		node_set_ptr(d, ch->slot, ch->to, ch->gen);
		return;
	}
	struct btrfs_file_extent_item *fe = (void *)leaf_data(d, ch->slot);
	fe->disk_bytenr = htole64(ch->to);
}

/* The new address of the data a leaf's item `slot` references, when it moved. */
static bool data_moved(struct reloc *rl, const uint8_t *d, int slot, uint64_t *to)
{
	struct ref_key k;
	blk_key(d, slot, &k);
	if (k.type != BTRFS_EXTENT_DATA_KEY ||
	    leaf_item_size(d, slot) < sizeof(struct btrfs_file_extent_item))
		return false;
	const struct btrfs_file_extent_item *fe = (const void *)leaf_data((uint8_t *)d, slot);
	if (fe->type != BTRFS_FILE_EXTENT_REG && fe->type != BTRFS_FILE_EXTENT_PREALLOC)
		return false;
	uint64_t *v = u64map_get(&rl->moved, le64toh(fe->disk_bytenr), false);
	if (!v || !*v)
		return false;
	*to = *v;
	return true;
}

/* A block made in this transaction: its slots changed where it is, the
 * references following (the child's from this block move to the new child). */
static int change_in_place(struct reloc *rl, struct ref_block *b, const struct change *ch,
			   size_t nch)
{
	int64_t refs;
	uint64_t flags;
	int r = share_refs(rl->fs, b->bytenr, b->level, &refs, &flags);
	bool full = flags & BTRFS_BLOCK_FLAG_FULL_BACKREF;
	for (size_t i = 0; i < nch && !r; i++) {
		if (!(r = share_slot(rl->fs, b, ch[i].slot, full, -1))) {
			apply(b->data, &ch[i]);
			r = share_slot(rl->fs, b, ch[i].slot, full, +1);
		}
	}
	return r;
}

/* Block b moved to a new address with its slots changed: the copy holds
 * what b held on its children (shared refs from the copy when b has full
 * back references, the owner's keyed refs otherwise); b's space is pinned
 * and its references go to the copy as its parents change. */
static int move_block(struct reloc *rl, struct ref_block *b, bool root, const struct change *ch,
		      size_t nch, uint64_t *to)
{
	ref_fs *fs = rl->fs;
	if (b->dirty)
		return ref_fail(fs, EUCLEAN, "balance: block %llu in the group was made in this transaction",
				(unsigned long long)b->bytenr);
	int64_t refs;
	uint64_t flags, nb;
	int r = share_refs(fs, b->bytenr, b->level, &refs, &flags);
	if (r)
		return r;
	bool full = flags & BTRFS_BLOCK_FLAG_FULL_BACKREF;
	/* The allocation's own reference is not wanted: the parents give theirs. */
	if ((r = alloc_tree_block(fs, b->owner, b->level, &nb)) ||
	    (r = dref_tree(fs, nb, b->level, b->owner, 0, -1, true)) ||
	    (!root && (r = dref_tree_gen(fs, nb, b->level, b->gen))))
		return r;
	struct ref_block *n = rw_block_new(fs, nb);
	if (!n)
		return ref_fail(fs, ENOMEM, "out of memory for tree block %llu", (unsigned long long)nb);
	memcpy(n->data, b->data, fs->nodesize);
	struct btrfs_header_disk *h = (void *)n->data;
	h->bytenr = htole64(nb);
	/* A root's generation is its root item's (or the superblock's): the
	 * transaction's, as the commit writes them. */
	n->gen = root ? fs->rw->transid : b->gen;
	h->generation = htole64(n->gen);
	n->owner = b->owner;
	n->level = b->level;
	if (full) {
		r = share_children(fs, b, true, -1);
		for (size_t i = 0; i < nch; i++)
			apply(n->data, &ch[i]);
		if (!r && !(r = share_children(fs, n, true, +1)))
			r = dref_tree_flags(fs, nb, n->level, BTRFS_BLOCK_FLAG_FULL_BACKREF);
	} else {
		for (size_t i = 0; i < nch && !r; i++) {
			if (!(r = share_slot(fs, b, ch[i].slot, false, -1))) {
				apply(n->data, &ch[i]);
				r = share_slot(fs, n, ch[i].slot, false, +1);
			}
		}
	}
	ref_block_put(fs, n);
	if (r)
		return r;
	if (rl->ngone == rl->gone_cap) {
		size_t cap = rl->gone_cap ? rl->gone_cap * 2 : 64;
		void *p = realloc(rl->gone, cap * sizeof(*rl->gone));
		if (!p)
			return ref_fail(fs, ENOMEM, "out of memory");
		rl->gone = p;
		rl->gone_cap = cap;
	}
	rl->gone[rl->ngone++] = (struct gone){ b->bytenr, b->level };
	alloc_pin(fs, b->bytenr, fs->nodesize);
	rl->st->tree_blocks++;
	*to = nb;
	return 0;
}

/* Visits the block at bytenr (first: the key its parent records, NULL for
 * a root): *to is where it is after the walk (bytenr when it stays). */
static int visit(struct reloc *rl, uint64_t bytenr, uint64_t gen, int level,
		 const struct ref_key *first, uint64_t *to)
{
	ref_fs *fs = rl->fs;
	uint64_t *seen = u64map_get(&rl->seen, bytenr, false);
	if (seen && *seen) {
		*to = *seen;
		return 0;
	}
	struct ref_block *b;
	int r = first ? ref_read_child(fs, bytenr, gen, level, first, &b)
		      : ref_read_block(fs, bytenr, gen, level, 0, &b);
	if (r)
		return r;
	uint32_t n = blk_nritems(b->data);
	struct change *ch = NULL;
	size_t nch = 0;
	for (uint32_t i = 0; i < n && !r; i++) {
		struct change c = { (int)i, 0, 0 };
		if (level) {
			uint64_t child = node_ptr(b->data, (int)i, &c.gen);
			struct ref_key k;
			blk_key(b->data, (int)i, &k);
			if ((r = visit(rl, child, c.gen, level - 1, &k, &c.to)) || c.to == child)
				continue;
		} else if (!data_moved(rl, b->data, (int)i, &c.to)) {
			continue;
		}
		if (!ch && !(ch = malloc(n * sizeof(*ch))))
			r = ref_fail(fs, ENOMEM, "out of memory");
		else
			ch[nch++] = c;
	}
	bool move = rl->meta && bytenr >= rl->start && bytenr < rl->end;
	*to = bytenr;
	if (!r && (move || nch))
		r = move || !b->dirty ? move_block(rl, b, !first, ch, nch, to)
				      : change_in_place(rl, b, ch, nch);
	free(ch);
	ref_block_put(fs, b);
	uint64_t *v = r ? NULL : u64map_get(&rl->seen, bytenr, true);
	if (!r && !v)
		r = ref_fail(fs, ENOMEM, "out of memory");
	if (v)
		*v = *to;
	return r;
}

/* Walks tree t, its root moving when the walk moved it. */
static int walk_tree(struct reloc *rl, struct rw_tree *t)
{
	ref_fs *fs = rl->fs;
	struct ref_root old = t->root;
	uint64_t to;
	int r = visit(rl, old.bytenr, old.gen, old.level, NULL, &to);
	if (r || to == old.bytenr)
		return r;
	if ((r = dref_tree(fs, old.bytenr, old.level, old.id, 0, -1, false)) ||
	    (r = dref_tree(fs, to, old.level, old.id, 0, +1, true)))
		return r;
	t->root = (struct ref_root){ old.id, to, fs->rw->transid, old.level };
	t->dirty = true;
	return 0;
}

/* The trees to walk: the root and chunk trees, and every tree with a root
 * item; for data only those that may hold file extents (subvolumes, and the
 * root tree: a v1 free-space cache is file data there). */
static int tree_ids(ref_fs *fs, bool all, uint64_t **ids, size_t *n)
{
	*ids = NULL;
	*n = 0;
	size_t cap = 0;
	struct ref_root rt = rw_tree_find(fs, BTRFS_ROOT_TREE_OBJECTID)->root;
	struct ref_path p;
	struct ref_key k = { 0, 0, 0 };
	int r = ref_search(fs, &rt, &k, &p);
	if (r >= 0) {
		*ids = malloc(2 * sizeof(**ids));
		if (!*ids) {
			ref_path_release(fs, &p);
			return ref_fail(fs, ENOMEM, "out of memory");
		}
		(*ids)[0] = BTRFS_ROOT_TREE_OBJECTID;
		(*ids)[1] = BTRFS_CHUNK_TREE_OBJECTID;
		*n = cap = all ? 2 : 1;
	}
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.type == BTRFS_ROOT_ITEM_KEY && (all || shareable(k.objectid)) &&
		    (!*n || (*ids)[*n - 1] != k.objectid)) {
			if (k.objectid == BTRFS_TREE_RELOC_OBJECTID) {
				ref_path_release(fs, &p);
				return ref_fail(fs, EROFS,
						"the file system holds relocation trees of a kernel's interrupted balance: mount it with the kernel once to merge them");
			}
			if (*n == cap) {
				cap = cap ? cap * 2 : 16;
				void *q = realloc(*ids, cap * sizeof(**ids));
				if (!q) {
					ref_path_release(fs, &p);
					return ref_fail(fs, ENOMEM, "out of memory");
				}
				*ids = q;
			}
			(*ids)[(*n)++] = k.objectid;
		}
		r = ref_next(fs, &p);
	}
	return r < 0 ? r : 0;
}

/* Copies the group's data extents elsewhere, with their checksums; rl->moved
 * says where each went.  The new extents get their references as the
 * leaves pointing to the old ones change. */
static int copy_data(struct reloc *rl, const struct ref_chunk *c)
{
	ref_fs *fs = rl->fs;
	struct ref_extent *ex;
	size_t nex;
	int r = chunk_extents(fs, c, &ex, &nex);
	if (r)
		return r;
	uint32_t ss = fs->sectorsize;
	for (size_t i = 0; i < nex && !r; i++) {
		if (ex[i].tree)
			continue;
		uint64_t len = ex[i].len, nsec = len / ss, to, got;
		uint8_t *buf = malloc(len), *csums = malloc(nsec * fs->csum_size + 1);
		bool *have = malloc(nsec * sizeof(*have) + 1);
		if (!buf || !csums || !have)
			r = ref_fail(fs, ENOMEM, "out of memory for a data extent of %llu bytes",
				     (unsigned long long)len);
		/* Checked against its checksums (and repaired) on the way. */
		if (!r)
			r = data_read(fs, ex[i].start, buf, len, false);
		if (!r)
			r = data_csums(fs, ex[i].start, nsec, csums, have);
		if (!r && !(r = alloc_data(fs, len, len, &to, &got)) && got != len)
			r = ref_fail(fs, ENOSPC, "balance: no room for a data extent of %llu bytes",
				     (unsigned long long)len);
		if (!r)
			r = ref_write_logical(fs, to, buf, len);
		for (uint64_t s = 0; !r && s < nsec;) {
			uint64_t e = s;
			while (e < nsec && have[e] == have[s])
				e++;
			if (have[s])
				r = csum_insert(fs, to + s * ss, csums + s * fs->csum_size, e - s);
			s = e;
		}
		/* New, its references to come (none left: its space goes back). */
		if (!r)
			r = dref_data(fs, to, len, 0, 0, 0, 0, true);
		uint64_t *v = r ? NULL : u64map_get(&rl->moved, ex[i].start, true);
		if (!r && !v)
			r = ref_fail(fs, ENOMEM, "out of memory");
		if (v) {
			*v = to;
			rl->st->data_extents++;
			rl->st->data_bytes += len;
		}
		free(buf);
		free(csums);
		free(have);
	}
	free(ex);
	return r;
}

/* Every moved block lost its last reference to its copy. */
static int check_gone(struct reloc *rl)
{
	for (size_t i = 0; i < rl->ngone; i++) {
		int64_t refs;
		uint64_t flags;
		int r = share_refs(rl->fs, rl->gone[i].bytenr, rl->gone[i].level, &refs, &flags);
		if (r)
			return r;
		if (refs != 0)
			return ref_fail(rl->fs, EUCLEAN,
					"balance: tree block %llu moved, but %lld references to it were not found by the walk",
					(unsigned long long)rl->gone[i].bytenr, (long long)refs);
	}
	return 0;
}

static int empty_group(struct reloc *rl, const struct ref_chunk *c)
{
	ref_fs *fs = rl->fs;
	bool data = c->type & BTRFS_BLOCK_GROUP_DATA;
	rl->meta = c->type & (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM);
	int r = data ? copy_data(rl, c) : 0;
	uint64_t *ids = NULL;
	size_t n = 0;
	if (!r)
		r = tree_ids(fs, rl->meta, &ids, &n);
	for (size_t i = 0; i < n && !r; i++) {
		struct rw_tree *t;
		if (!(r = rw_tree_get(fs, ids[i], &t)))
			r = walk_tree(rl, t);
	}
	free(ids);
	if (!r)
		r = check_gone(rl);
	if (r) {
		fs->rw->failed = true; /* half-moved blocks must not reach a commit */
		return r;
	}
	return rw_commit(fs);
}

static int cmp_desc(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a > b ? -1 : a < b;
}

int reloc_chunk_order(ref_fs *fs, uint64_t **at, size_t *n)
{
	*n = fs->nchunks;
	*at = malloc(*n * sizeof(**at) + 1);
	if (!*at) {
		*n = 0;
		return ref_fail(fs, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < *n; i++)
		(*at)[i] = fs->chunks[i].logical;
	qsort(*at, *n, sizeof(**at), cmp_desc);
	return 0;
}

int reloc_block_group(ref_fs *fs, uint64_t start, struct ref_balance_stats *st)
{
	int r = rw_check_writable(fs);
	if (r)
		return r;
	struct rw_bg *bg = rw_bg_find(fs, start);
	const struct ref_chunk *c = chunk_find(fs, start);
	if (!bg || !c || bg->start != start || c->logical != start)
		return ref_fail(fs, ENOENT, "no block group at %llu", (unsigned long long)start);
	/* Deleted subvolumes are dropped first: their half-dropped trees are
	 * not walked (the kernel's relocation waits for the cleaner likewise).
	 * And what this transaction made reaches the disk: every block in the
	 * group is then an old one, and moves. */
	while ((r = cleaner_pending(fs)) == 1)
		if ((r = cleaner_step(fs)) || (r = rw_commit(fs)))
			return r;
	if (r < 0 || (fs->rw->in_txn && (r = rw_commit(fs))))
		return r;
	bg = rw_bg_find(fs, start);
	bg->ro = true;
	struct reloc rl = { .fs = fs, .start = start, .end = start + c->length, .st = st };
	/* Twice at most: a commit's own changes never land in the group, so a
	 * second pass finds nothing unless the first missed a reference. */
	for (int pass = 0; pass < 2 && !r; pass++) {
		bg = rw_bg_find(fs, start);
		if (!bg || !bg->used)
			break;
		u64map_free(&rl.seen);
		u64map_free(&rl.moved);
		rl.ngone = 0;
		r = empty_group(&rl, chunk_find(fs, start));
	}
	u64map_free(&rl.seen);
	u64map_free(&rl.moved);
	free(rl.gone);
	bg = rw_bg_find(fs, start);
	if (!r && bg && bg->used)
		r = ref_fail(fs, EUCLEAN, "balance: block group %llu still holds %llu bytes after relocation",
			     (unsigned long long)start, (unsigned long long)bg->used);
	if (r) {
		if (bg)
			bg->ro = false;
		return r;
	}
	/* Its freed space is reusable once that commit is durable: now. */
	if ((r = bg_remove(fs, start)))
		return r;
	st->relocated++;
	return 0;
}
