/*
 * delayed.c - delayed extent references.  Every change to the number of
 * references to a tree block or data extent is recorded here while a
 * transaction runs, summed per extent, and applied to the extent tree at
 * commit: extent items inserted, re-encoded or deleted, the free-space tree
 * and block-group usage following, and freed data losing its checksums.
 */
#include "faults/points.h"
#include "ref/extent.h"

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

int dref_tree(ref_fs *fs, uint64_t bytenr, uint64_t root, uint8_t level, int delta, bool is_new)
{
	if (FP_FAIL(FP_REF_MEM_DREF))
		return ref_fail(fs, ENOMEM,
				"out of memory for a delayed reference (fault point %s)",
				FP_REF_MEM_DREF);
	struct dref *d = head(fs, bytenr);
	if (!d)
		return ref_fail(fs, ENOMEM, "out of memory");
	d->tree = true;
	d->num_bytes = fs->nodesize;
	d->tree_delta += delta;
	if (delta > 0) {
		d->root = root;
		d->level = level;
	}
	if (is_new)
		d->is_new = true;
	return 0;
}

int dref_data(ref_fs *fs, uint64_t bytenr, uint64_t num_bytes, uint64_t root, uint64_t ino,
	      uint64_t offset, int64_t delta, bool is_new)
{
	if (FP_FAIL(FP_REF_MEM_DREF))
		return ref_fail(fs, ENOMEM,
				"out of memory for a delayed reference (fault point %s)",
				FP_REF_MEM_DREF);
	struct dref *d = head(fs, bytenr);
	if (!d)
		return ref_fail(fs, ENOMEM, "out of memory");
	d->num_bytes = num_bytes;
	if (is_new)
		d->is_new = true;
	fs->rw->in_txn = true;
	for (size_t i = 0; i < d->ndata; i++) {
		struct dref_data *e = &d->data[i];
		if (e->root == root && e->ino == ino && e->offset == offset) {
			e->delta += delta;
			return 0;
		}
	}
	if (d->ndata == d->data_cap) {
		size_t cap = d->data_cap ? d->data_cap * 2 : 2;
		void *p = realloc(d->data, cap * sizeof(*d->data));
		if (!p)
			return ref_fail(fs, ENOMEM, "out of memory");
		d->data = p;
		d->data_cap = cap;
	}
	d->data[d->ndata++] = (struct dref_data){ root, ino, offset, delta };
	return 0;
}

void dref_free_all(ref_fs *fs)
{
	struct rw_state *rw = fs->rw;
	for (size_t i = 0; i < rw->ndrefs; i++)
		free(rw->drefs[i].data);
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

static int run_tree(ref_fs *fs, struct dref *d)
{
	struct rw_tree *et;
	int r = rw_tree_get(fs, BTRFS_EXTENT_TREE_OBJECTID, &et);
	if (r || d->tree_delta == 0)
		return r;
	if (d->tree_delta == 1 && d->is_new) {
		uint8_t buf[sizeof(struct btrfs_extent_item) + 9];
		struct btrfs_extent_item *ei = (void *)buf;
		ei->refs = htole64(1);
		ei->generation = htole64(fs->rw->transid);
		ei->flags = htole64(BTRFS_EXTENT_FLAG_TREE_BLOCK);
		buf[sizeof(*ei)] = BTRFS_TREE_BLOCK_REF_KEY;
		uint64_t root = htole64(d->root);
		memcpy(buf + sizeof(*ei) + 1, &root, 8);
		struct ref_key k = { d->bytenr, BTRFS_METADATA_ITEM_KEY, d->level };
		if ((r = bt_insert_data(fs, et, &k, buf, sizeof(buf))))
			return r == -EEXIST ? ref_fail(fs, EUCLEAN, "tree block %llu already has an extent item",
						       (unsigned long long)d->bytenr)
					    : r;
		return account(fs, d->bytenr, fs->nodesize, true);
	}
	if (d->tree_delta == -1 && !d->is_new) {
		if ((r = extent_drop_tree_ref(fs, et, d->bytenr)))
			return r;
		return account(fs, d->bytenr, fs->nodesize, false);
	}
	return ref_fail(fs, EUCLEAN, "tree block %llu: reference change %lld is not possible here",
			(unsigned long long)d->bytenr, (long long)d->tree_delta);
}

static int run_data(ref_fs *fs, struct dref *d)
{
	struct rw_tree *et;
	int r = rw_tree_get(fs, BTRFS_EXTENT_TREE_OBJECTID, &et);
	if (r)
		return r;
	struct extent_refs x;
	memset(&x, 0, sizeof(x));
	bool existed = !d->is_new;
	if (existed && (r = extent_load(fs, et, d->bytenr, d->num_bytes, &x))) {
		extent_refs_free(&x);
		return r;
	}
	if (!existed) {
		x.bytenr = d->bytenr;
		x.num_bytes = d->num_bytes;
		x.generation = fs->rw->transid;
		x.flags = BTRFS_EXTENT_FLAG_DATA;
	}
	for (size_t i = 0; i < d->ndata && !r; i++)
		if (d->data[i].delta)
			r = extent_refs_add(fs, &x, d->data[i].root, d->data[i].ino, d->data[i].offset,
					    d->data[i].delta);
	if (!r && existed)
		r = extent_delete(fs, et, &x);
	if (!r && x.total > 0)
		r = extent_store(fs, et, &x);
	if (!r && x.total == 0) {
		/* Gone: its checksums go, and its space once this commit is durable. */
		r = csum_delete(fs, d->bytenr, d->num_bytes);
		if (!r && existed)
			alloc_pin(fs, d->bytenr, d->num_bytes);
		else if (!r)
			alloc_unreserve_data(fs, d->bytenr, d->num_bytes);
	}
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
		r = list[i].tree ? run_tree(fs, &list[i]) : run_data(fs, &list[i]);
	for (size_t i = 0; i < n; i++)
		free(list[i].data);
	free(list);
	return r ? r : (long)n;
}
