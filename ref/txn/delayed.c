/*
 * delayed.c - delayed extent references.  Every change to the number of
 * references to a tree block or data extent is recorded here while a
 * transaction runs, summed per extent, and applied to the extent tree at
 * commit: extent items inserted, re-encoded or deleted, the free-space tree
 * and block-group usage following, and freed data losing its checksums.
 */
#include "faults/points.h"
#include "ref/txn/extent.h"
#include "ref/qgroup/qgroup.h"

#include <errno.h>
#include <stdlib.h>

static struct dref *head(ref_fs *fs, uint64_t bytenr)
{
	struct rw_state *rw = fs->rw;
	uint64_t *idx = u64map_get(&rw->dref_idx, bytenr, true);
	if (!idx)
		return NULL;
	if (*idx)
		return &rw->drefs[*idx - 1];
	if (rw->ndrefs == rw->drefs_cap) {
		size_t cap = rw->drefs_cap ? rw->drefs_cap * 2 : 256;
		void *p = realloc(rw->drefs, cap * sizeof(*rw->drefs));
		if (!p)
			return NULL;
		rw->drefs = p;
		rw->drefs_cap = cap;
	}
	struct dref *d = &rw->drefs[rw->ndrefs++];
	memset(d, 0, sizeof(*d));
	d->bytenr = bytenr;
	*idx = rw->ndrefs;
	return d;
}

static int add_ref(ref_fs *fs, struct dref *d, const struct dref_ref *c)
{
	d->total += c->delta;
	for (size_t i = 0; i < d->nrefs; i++) {
		struct dref_ref *e = &d->refs[i];
		if (e->root == c->root && e->ino == c->ino && e->offset == c->offset &&
		    e->parent == c->parent) {
			e->delta += c->delta;
			return 0;
		}
	}
	if (d->nrefs == d->refs_cap) {
		size_t cap = d->refs_cap ? d->refs_cap * 2 : 2;
		void *p = realloc(d->refs, cap * sizeof(*d->refs));
		if (!p)
			return ref_fail(fs, ENOMEM, "out of memory");
		d->refs = p;
		d->refs_cap = cap;
	}
	d->refs[d->nrefs++] = *c;
	return 0;
}

static struct dref *head_of(ref_fs *fs, uint64_t bytenr, int *r)
{
	*r = 0;
	if (FP_FAIL(FP_REF_MEM_DREF)) {
		*r = ref_fail(fs, ENOMEM, "out of memory for a delayed reference (fault point %s)",
			      FP_REF_MEM_DREF);
		return NULL;
	}
	struct dref *d = head(fs, bytenr);
	if (!d)
		*r = ref_fail(fs, ENOMEM, "out of memory");
	fs->rw->in_txn = true;
	return d;
}

/* The changes of tree block bytenr (at `level`). */
static struct dref *tree_head(ref_fs *fs, uint64_t bytenr, uint8_t level, int *r)
{
	struct dref *d = head_of(fs, bytenr, r);
	if (d) {
		d->tree = true;
		d->num_bytes = fs->nodesize;
		d->level = level;
	}
	return d;
}

int dref_tree(ref_fs *fs, uint64_t bytenr, uint8_t level, uint64_t root, uint64_t parent,
	      int delta, bool is_new)
{
	int r;
	struct dref *d = tree_head(fs, bytenr, level, &r);
	if (!d)
		return r;
	if (is_new)
		d->is_new = true;
	struct dref_ref c = { parent ? 0 : root, 0, 0, parent, delta };
	return add_ref(fs, d, &c);
}

int dref_tree_flags(ref_fs *fs, uint64_t bytenr, uint8_t level, uint64_t flags)
{
	int r;
	struct dref *d = tree_head(fs, bytenr, level, &r);
	if (d)
		d->set_flags |= flags;
	return d ? 0 : r;
}

int dref_tree_gen(ref_fs *fs, uint64_t bytenr, uint8_t level, uint64_t gen)
{
	int r;
	struct dref *d = tree_head(fs, bytenr, level, &r);
	if (d)
		d->gen = gen;
	return d ? 0 : r;
}

int dref_data(ref_fs *fs, uint64_t bytenr, uint64_t num_bytes, uint64_t root, uint64_t ino,
	      uint64_t offset, int64_t delta, bool is_new)
{
	int r;
	struct dref *d = head_of(fs, bytenr, &r);
	if (!d)
		return r;
	d->num_bytes = num_bytes;
	if (is_new)
		d->is_new = true;
	struct dref_ref c = { root, ino, offset, 0, delta };
	return add_ref(fs, d, &c);
}

int dref_data_shared(ref_fs *fs, uint64_t bytenr, uint64_t num_bytes, uint64_t parent,
		     int64_t delta)
{
	int r;
	struct dref *d = head_of(fs, bytenr, &r);
	if (!d)
		return r;
	d->num_bytes = num_bytes;
	struct dref_ref c = { 0, 0, 0, parent, delta };
	return add_ref(fs, d, &c);
}

void dref_pending(ref_fs *fs, uint64_t bytenr, int64_t *delta, uint64_t *flags, bool *is_new)
{
	struct rw_state *rw = fs->rw;
	uint64_t *idx = u64map_get(&rw->dref_idx, bytenr, false);
	*delta = 0, *flags = 0, *is_new = false;
	if (idx && *idx) {
		const struct dref *d = &rw->drefs[*idx - 1];
		*delta = d->total;
		*flags = d->set_flags;
		*is_new = d->is_new;
	}
}

void dref_free_all(ref_fs *fs)
{
	struct rw_state *rw = fs->rw;
	for (size_t i = 0; i < rw->ndrefs; i++)
		free(rw->drefs[i].refs);
	free(rw->drefs);
	rw->drefs = NULL;
	rw->ndrefs = rw->drefs_cap = 0;
	u64map_free(&rw->dref_idx);
}

/* Block-group usage and free space follow an extent coming or going. */
static int account(ref_fs *fs, uint64_t bytenr, uint64_t len, bool add)
{
	struct rw_bg *bg = rw_bg_find(fs, bytenr);
	if (!bg)
		return ref_fail(fs, EUCLEAN, "extent %llu lies in no block group",
				(unsigned long long)bytenr);
	if (add) {
		bg->used += len;
	} else {
		if (bg->used < len)
			return ref_fail(fs, EUCLEAN, "block group %llu: usage below zero",
					(unsigned long long)bg->start);
		bg->used -= len;
	}
	bg->dirty = true;
	return add ? fst_remove(fs, bytenr, len) : fst_add(fs, bytenr, len);
}

/* The first key of the new tree block d, for its tree block info (no skinny
 * metadata): the key it starts with now, as the kernel's is the one it had
 * when made; none (zero) for an empty block.  (A block made in this
 * transaction lives in the cache until the commit writes it; one already let
 * go again this round, its release due in the next, gets zero: its item goes
 * then.) */
static void first_key(ref_fs *fs, const struct dref *d, struct ref_key *out)
{
	*out = (struct ref_key){ 0, 0, 0 };
	const struct ref_block *b = cache_peek(fs, d->bytenr);
	if (!b)
		return;
	const struct btrfs_header_disk *h = (const void *)b->data;
	if (LE32(h->nritems)) {
		const struct btrfs_disk_key *k = h->level
			? &((const struct btrfs_key_ptr_disk *)(b->data + sizeof(*h)))[0].key
			: &((const struct btrfs_item_disk *)(b->data + sizeof(*h)))[0].key;
		*out = (struct ref_key){ LE64(k->objectid), k->type, LE64(k->offset) };
	}
}

/* One extent's changes: its item loaded (unless new), every reference
 * change and flag applied, and the item stored again, or deleted with the
 * extent's space, usage and checksums following when no reference is left. */
static int run_extent(ref_fs *fs, struct dref *d)
{
	struct rw_tree *et;
	int r = rw_tree_get(fs, BTRFS_EXTENT_TREE_OBJECTID, &et);
	if (r)
		return r;
	bool existed = !d->is_new, moved = false; /* refs traded for others */
	for (size_t i = 0; i < d->nrefs && !moved; i++)
		moved = d->refs[i].delta != 0;
	struct ref_key key = d->tree ? extent_tree_key(fs, d->bytenr, d->level)
				     : (struct ref_key){ d->bytenr, BTRFS_EXTENT_ITEM_KEY, d->num_bytes };
	if (!existed && d->tree && (moved || d->total == 0)) {
		/* New at an address whose old block went in this same transaction
		 * (only a broken build reuses space before the commit that frees it
		 * is durable: ref/mutant.h EARLY_REUSE), or whose block, made in an
		 * earlier round of this commit, was let go and the space given to
		 * a block of another level in this one: the old item takes the
		 * changes, whatever its level, and gets the new block's. */
		struct ref_key at = { d->bytenr, key.type, 0 }, got;
		if ((r = bt_peek(fs, &et->root, &at, false, &got, NULL)) < 0)
			return r;
		if (r == 0 && got.objectid == d->bytenr && got.type == key.type) {
			existed = true;
			key = got;
		}
		r = 0;
	}
	if (!existed && d->total == 0 && d->tree)
		return 0; /* made and freed in this transaction (its space is free already) */
	if ((r = qg_note_extent(fs, d)))
		return r;
	/* (A block made again at this address may have another level.) */
	bool relevel = existed && d->is_new && d->tree &&
		       (key.type != BTRFS_METADATA_ITEM_KEY || key.offset != d->level);
	if (existed && d->total == 0 && !d->set_flags && !moved && !relevel)
		return 0;
	struct extent_refs x;
	memset(&x, 0, sizeof(x));
	if (existed && (r = extent_load(fs, et, &key, &x))) {
		extent_refs_free(&x);
		return r;
	}
	if (!existed) {
		x.key = key;
		x.generation = d->gen ? d->gen : fs->rw->transid;
		x.flags = d->tree ? BTRFS_EXTENT_FLAG_TREE_BLOCK : BTRFS_EXTENT_FLAG_DATA;
	}
	if (d->is_new && d->tree && key.type == BTRFS_EXTENT_ITEM_KEY)
		first_key(fs, d, &x.info_key); /* (a block made at this address in this round) */
	x.flags |= d->set_flags;
	for (size_t i = 0; i < d->nrefs && !r; i++)
		if (d->refs[i].delta)
			r = extent_ref_change(fs, &x, d->tree, &d->refs[i]);
	if (!r && existed)
		r = extent_delete(fs, et, &x);
	if (d->tree && x.key.type == BTRFS_METADATA_ITEM_KEY)
		x.key.offset = d->level; /* (the level of the block there now) */
	else if (d->tree)
		x.info_level = (uint8_t)d->level;
	if (!r && x.total > 0)
		r = extent_store(fs, et, &x);
	if (!r && x.total == 0 && !d->tree) {
		/* Gone: its checksums go, and its space once this commit is durable. */
		r = csum_delete(fs, d->bytenr, d->num_bytes);
		if (!r && existed)
			alloc_pin(fs, d->bytenr, d->num_bytes);
		else if (!r)
			alloc_unreserve_data(fs, d->bytenr, d->num_bytes);
	}
	/* (A tree block's space was pinned or freed when its last reference went.) */
	if (!r && existed != (x.total > 0))
		r = account(fs, d->bytenr, d->num_bytes, !existed);
	extent_refs_free(&x);
	return r;
}

static int cmp_dref(const void *a, const void *b)
{
	const struct dref *x = a, *y = b;
	return x->bytenr < y->bytenr ? -1 : x->bytenr > y->bytenr;
}

long dref_run(ref_fs *fs)
{
	struct rw_state *rw = fs->rw;
	/* Take the list: running it records new references (blocks COWed). */
	struct dref *list = rw->drefs;
	size_t n = rw->ndrefs;
	rw->drefs = NULL;
	rw->ndrefs = rw->drefs_cap = 0;
	u64map_free(&rw->dref_idx);
	qsort(list, n, sizeof(*list), cmp_dref);
	int r = 0;
	for (size_t i = 0; i < n && !r; i++)
		r = run_extent(fs, &list[i]);
	for (size_t i = 0; i < n; i++)
		free(list[i].refs);
	free(list);
	return r ? r : (long)n;
}
