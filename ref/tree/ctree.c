/*
 * ctree.c - changing a B-tree with copy-on-write: search that COWs the path
 * and makes room on the way down (splitting full nodes before descending, as
 * the kernel does, so a parent always has a free slot), item insertion,
 * deletion with merging of under-full blocks, and growing and shrinking the
 * root.  Every block on a path that changes belongs to the running
 * transaction; the blocks it replaced are freed (pinned until the commit).
 */
#include "faults/points.h"
#include "ref/mutant.h"
#include "ref/rw.h"

#include <errno.h>
#include <stdlib.h>

#define MAX_RESTARTS 64

static uint32_t nsz(const ref_fs *fs)
{
	return fs->nodesize;
}

uint32_t bt_max_item(const ref_fs *fs)
{
	return leaf_space(fs->nodesize) - (uint32_t)ITEM_SIZE;
}

/* A new empty block of tree `owner` at `level`, dirty, with one reference held. */
static int new_block(ref_fs *fs, uint64_t owner, uint8_t level, struct ref_block **out)
{
	uint64_t bytenr;
	int r = alloc_tree_block(fs, owner, level, &bytenr);
	if (r)
		return r;
	bool fault = FP_FAIL(FP_REF_MEM_BLOCK);
	struct ref_block *b = fault ? NULL : rw_block_new(fs, bytenr);
	if (!b)
		return ref_fail(fs, ENOMEM, "out of memory for tree block %llu%s",
				(unsigned long long)bytenr,
				fault ? " (fault point " FP_REF_MEM_BLOCK ")" : "");
	struct btrfs_header_disk *h = (void *)b->data;
	memset(b->data, 0, fs->nodesize);
	memcpy(h->fsid, fs->meta_fsid, BTRFS_FSID_BYTES);
	memcpy(h->chunk_tree_uuid, fs->rw->chunk_tree_uuid, BTRFS_UUID_SIZE);
	h->bytenr = htole64(bytenr);
	h->flags = htole64((uint64_t)1 << 56) /* backref revision: MIXED */;
	h->generation = htole64(fs->rw->transid);
	h->owner = htole64(owner);
	h->level = level;
	b->gen = fs->rw->transid;
	b->owner = owner;
	b->level = level;
	*out = b;
	return 0;
}

/*
 * The block to change in place: b itself when this transaction made it,
 * otherwise a copy at a new address, with the parent (or the root) pointing
 * to it and b freed.  Returns the block with a reference held; b's reference
 * is dropped.
 */
static int cow_block(ref_fs *fs, struct rw_tree *t, struct ref_block *b, struct ref_block *parent,
		     int pslot, struct ref_block **out)
{
	if (b->dirty) {
		*out = b;
		return 0;
	}
	if (MUTANT(COW_IN_PLACE)) { /* broken on purpose: the live block is changed where it is */
		struct btrfs_header_disk *h = (void *)b->data;
		h->generation = htole64(fs->rw->transid);
		b->gen = fs->rw->transid;
		if (parent)
			node_set_ptr(parent->data, pslot, b->bytenr, b->gen);
		else
			t->root.gen = b->gen, t->dirty = true;
		cache_unlink(fs, b->bytenr);
		struct ref_block *n = rw_block_new(fs, b->bytenr);
		if (!n) {
			ref_block_put(fs, b);
			return ref_fail(fs, ENOMEM, "out of memory");
		}
		memcpy(n->data, b->data, fs->nodesize);
		n->gen = b->gen, n->owner = b->owner, n->level = b->level;
		ref_block_put(fs, b);
		if (b->refs == 0)
			free(b);
		*out = n;
		return 0;
	}
	struct ref_block *n;
	int r = new_block(fs, t->root.id, b->level, &n);
	if (r) {
		ref_block_put(fs, b);
		return r;
	}
	size_t body = offsetof(struct btrfs_header_disk, nritems);
	memcpy(n->data + body, b->data + body, fs->nodesize - body); /* the header is n's own */
	bool last;
	if ((r = share_cow(fs, t, b, n, &last))) {
		ref_block_put(fs, b);
		ref_block_put(fs, n);
		return r;
	}
	if (parent)
		node_set_ptr(parent->data, pslot, n->bytenr, n->gen);
	else {
		t->root = (struct ref_root){ t->root.id, n->bytenr, n->gen, n->level };
		t->dirty = true;
	}
	/* Shared with a snapshot: t only lets go of it. */
	r = last ? free_tree_block(fs, b, t->root.id)
		 : dref_tree(fs, b->bytenr, b->level, t->root.id, 0, -1, false);
	ref_block_put(fs, b);
	*out = n;
	return r;
}

static int cow_path(ref_fs *fs, struct rw_tree *t, struct ref_path *p, int level)
{
	bool top = level == p->levels - 1;
	return cow_block(fs, t, p->blk[level], top ? NULL : p->blk[level + 1],
			 top ? 0 : p->slot[level + 1], &p->blk[level]);
}

/* Reads child `slot` of node `parent`: a copy whose generation, level or
 * first key is not what the parent says is skipped for the next. */
static int read_child(ref_fs *fs, struct ref_block *parent, int slot, struct ref_block **out)
{
	uint64_t gen, bytenr = node_ptr(parent->data, slot, &gen);
	struct ref_key want;
	blk_key(parent->data, slot, &want);
	return ref_read_child(fs, bytenr, gen, parent->level - 1, &want, out);
}

static void fixup_low_keys(struct ref_path *p, int level, const struct ref_key *k)
{
	for (int l = level; l < p->levels; l++) {
		blk_set_key(p->blk[l]->data, p->slot[l], k);
		if (p->slot[l] != 0)
			break;
	}
}

/* A new root node above the current root. */
static int grow_root(ref_fs *fs, struct rw_tree *t, struct ref_path *p)
{
	int top = p->levels - 1;
	if (top + 1 >= BTRFS_MAX_TREE_LEVEL)
		return ref_fail(fs, EOVERFLOW, "tree %llu would need more than 8 levels",
				(unsigned long long)t->root.id);
	struct ref_block *old = p->blk[top], *n;
	int r = new_block(fs, t->root.id, (uint8_t)(top + 1), &n);
	if (r)
		return r;
	struct ref_key k = { 0, 0, 0 };
	if (blk_nritems(old->data))
		blk_key(old->data, 0, &k);
	node_insert(n->data, 0, &k, old->bytenr, old->gen);
	p->blk[top + 1] = n;
	p->slot[top + 1] = 0;
	p->levels++;
	t->root = (struct ref_root){ t->root.id, n->bytenr, n->gen, n->level };
	t->dirty = true;
	return 0;
}

static int split_node(ref_fs *fs, struct rw_tree *t, struct ref_path *p, int level)
{
	int r;
	if (level == p->levels - 1 && (r = grow_root(fs, t, p)))
		return r;
	struct ref_block *nb = p->blk[level], *pb = p->blk[level + 1], *rb;
	if ((r = new_block(fs, t->root.id, (uint8_t)level, &rb)))
		return r;
	int n = (int)blk_nritems(nb->data), mid = n / 2;
	node_append(rb->data, nb->data, mid, n - mid);
	node_delete(nb->data, mid, n - mid);
	struct ref_key k;
	blk_key(rb->data, 0, &k);
	node_insert(pb->data, p->slot[level + 1] + 1, &k, rb->bytenr, rb->gen);
	ref_block_put(fs, rb);
	return 0;
}

/* Item i's share of a leaf. */
static uint32_t item_cost(const uint8_t *d, int i)
{
	return (uint32_t)ITEM_SIZE + leaf_item_size(d, i);
}

/*
 * Makes room for ins_len bytes at the path's leaf slot.  Appending (or
 * prepending) gets a new empty leaf keyed by the new key, so that sequential
 * inserts fill leaves; otherwise the leaf splits at its middle byte and the
 * search restarts (and splits again if the half is still too full).
 */
static int split_leaf(ref_fs *fs, struct rw_tree *t, struct ref_path *p, int ins_len,
		      const struct ref_key *key, bool found)
{
	struct ref_block *lb = p->blk[0];
	int n = (int)blk_nritems(lb->data), slot = p->slot[0], r;
	if ((uint32_t)ins_len > leaf_space(nsz(fs)) || n == 0 || (found && n == 1))
		return ref_fail(fs, EOVERFLOW, "an item of %d bytes does not fit in a leaf", ins_len);
	if (p->levels == 1 && (r = grow_root(fs, t, p)))
		return r;
	struct ref_block *pb = p->blk[1], *rb;
	int ps = p->slot[1];
	if ((r = new_block(fs, t->root.id, 0, &rb)))
		return r;
	if (!found && slot == n) {
		node_insert(pb->data, ps + 1, key, rb->bytenr, rb->gen);
	} else if (!found && slot == 0) {
		node_insert(pb->data, ps, key, rb->bytenr, rb->gen);
		if (ps == 0)
			fixup_low_keys(p, 2, key);
	} else {
		uint32_t total = leaf_used(lb->data, nsz(fs)), acc = 0;
		int mid = 1;
		for (int i = 0; i < n - 1; i++) {
			acc += item_cost(lb->data, i);
			mid = i + 1;
			if (acc >= total / 2)
				break;
		}
		leaf_append(rb->data, lb->data, nsz(fs), mid, n - mid);
		leaf_delete(lb->data, nsz(fs), mid, n - mid);
		struct ref_key k;
		blk_key(rb->data, 0, &k);
		node_insert(pb->data, ps + 1, &k, rb->bytenr, rb->gen);
	}
	ref_block_put(fs, rb);
	return 0;
}

/* Index of the last key <= key in a node (0 when all are greater). */
static int node_slot(const uint8_t *d, const struct ref_key *key)
{
	int lo = 0, hi = (int)blk_nritems(d);
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		struct ref_key k;
		blk_key(d, mid, &k);
		if (ref_key_cmp(&k, key) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 ? lo - 1 : 0;
}

/* Index of the first key >= key in a leaf; *found when equal. */
static int leaf_slot(const uint8_t *d, const struct ref_key *key, bool *found)
{
	int lo = 0, hi = (int)blk_nritems(d);
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		struct ref_key k;
		blk_key(d, mid, &k);
		if (ref_key_cmp(&k, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	if (lo < (int)blk_nritems(d)) {
		struct ref_key k;
		blk_key(d, lo, &k);
		*found = !ref_key_cmp(&k, key);
	}
	return lo;
}

int bt_search(ref_fs *fs, struct rw_tree *t, const struct ref_key *key, struct ref_path *p,
	      int ins_len, bool cow)
{
	int r = 0;
	memset(p, 0, sizeof(*p));
	if (cow && (r = rw_check_writable(fs)))
		return r;
	if (cow && t->rdonly) /* before anything changed: the call fails cleanly */
		return ref_fail(fs, EROFS, "subvolume %llu is read-only", (unsigned long long)t->root.id);
	if (cow)
		fs->rw->mods++;
	for (int restarts = 0; restarts < MAX_RESTARTS; restarts++) {
		ref_path_release(fs, p);
		struct ref_block *b;
		if ((r = ref_read_block(fs, t->root.bytenr, t->root.gen, t->root.level, 0, &b)))
			return r;
		p->levels = t->root.level + 1;
		p->blk[t->root.level] = b;
		if (cow && (r = cow_path(fs, t, p, t->root.level)))
			goto fail;
		bool restart = false;
		for (int l = t->root.level; l > 0 && !restart; l--) {
			const uint8_t *d = p->blk[l]->data;
			if (cow && ins_len > 0 && blk_nritems(d) >= node_max_ptrs(nsz(fs)) - 1) {
				if ((r = split_node(fs, t, p, l)))
					goto fail;
				restart = true;
				break;
			}
			p->slot[l] = node_slot(d, key);
			if ((r = read_child(fs, p->blk[l], p->slot[l], &p->blk[l - 1])))
				goto fail;
			if (cow && (r = cow_path(fs, t, p, l - 1)))
				goto fail;
		}
		if (restart)
			continue;
		bool found;
		p->slot[0] = leaf_slot(p->blk[0]->data, key, &found);
		if (cow && ins_len > 0 && leaf_free(p->blk[0]->data, nsz(fs)) < (uint32_t)ins_len) {
			if ((r = split_leaf(fs, t, p, ins_len, key, found)))
				goto fail;
			continue;
		}
		return found ? 0 : 1;
	}
	r = ref_fail(fs, EUCLEAN, "tree %llu: no room found after %d splits",
		     (unsigned long long)t->root.id, MAX_RESTARTS);
fail:
	ref_path_release(fs, p);
	return r;
}

int bt_insert(ref_fs *fs, struct rw_tree *t, const struct ref_key *key, uint32_t size,
	      struct ref_path *p)
{
	if (size > bt_max_item(fs))
		return ref_fail(fs, EOVERFLOW, "an item of %u bytes does not fit in a leaf", size);
	int r = bt_search(fs, t, key, p, (int)(size + ITEM_SIZE), true);
	if (r <= 0) {
		if (r == 0) {
			ref_path_release(fs, p);
			return -EEXIST;
		}
		return r;
	}
	leaf_insert(p->blk[0]->data, nsz(fs), p->slot[0], key, size);
	if (p->slot[0] == 0)
		fixup_low_keys(p, 1, key);
	return 0;
}

int bt_insert_data(ref_fs *fs, struct rw_tree *t, const struct ref_key *key, const void *data,
		   uint32_t size)
{
	struct ref_path p;
	int r = bt_insert(fs, t, key, size, &p);
	if (r)
		return r;
	if (size)
		memcpy(leaf_data(p.blk[0]->data, p.slot[0]), data, size);
	ref_path_release(fs, &p);
	return 0;
}

uint8_t *bt_item(struct ref_path *p, uint32_t *size)
{
	if (size)
		*size = leaf_item_size(p->blk[0]->data, p->slot[0]);
	return leaf_data(p->blk[0]->data, p->slot[0]);
}

void bt_set_key(struct ref_path *p, const struct ref_key *k)
{
	blk_set_key(p->blk[0]->data, p->slot[0], k);
	if (p->slot[0] == 0)
		fixup_low_keys(p, 1, k);
}

int bt_lookup_cow(ref_fs *fs, struct rw_tree *t, const struct ref_key *key, struct ref_path *p)
{
	int r = bt_search(fs, t, key, p, -1, true);
	if (r == 1) {
		ref_path_release(fs, p);
		return -ENOENT;
	}
	return r;
}

int bt_resize(ref_fs *fs, struct rw_tree *t, const struct ref_key *key, uint32_t size,
	      struct ref_path *p)
{
	if (size > bt_max_item(fs))
		return ref_fail(fs, EOVERFLOW, "an item of %u bytes does not fit in a leaf", size);
	int r = bt_search(fs, t, key, p, -1, false);
	if (r)
		return r == 1 ? -ENOENT : r;
	uint32_t old = leaf_item_size(p->blk[0]->data, p->slot[0]);
	ref_path_release(fs, p);
	r = bt_search(fs, t, key, p, size > old ? (int)(size - old) : -1, true);
	if (r) {
		ref_path_release(fs, p);
		return r == 1 ? -ENOENT : r;
	}
	leaf_resize(p->blk[0]->data, nsz(fs), p->slot[0], size);
	return 0;
}

/* ---- Deletion ---- */

static int shrink_root(ref_fs *fs, struct rw_tree *t)
{
	for (;;) {
		struct ref_block *b;
		int r = ref_read_block(fs, t->root.bytenr, t->root.gen, t->root.level, 0, &b);
		if (r)
			return r;
		if (b->level == 0 || blk_nritems(b->data) != 1) {
			ref_block_put(fs, b);
			return 0;
		}
		uint64_t gen, child = node_ptr(b->data, 0, &gen);
		t->root = (struct ref_root){ t->root.id, child, gen, (uint8_t)(b->level - 1) };
		t->dirty = true;
		r = free_tree_block(fs, b, t->root.id);
		ref_block_put(fs, b);
		if (r)
			return r;
	}
}

static int merge_level(ref_fs *fs, struct rw_tree *t, struct ref_path *p, int level);

/* Removes the pointer at slot[level] of blk[level] and frees the child
 * blk[level-1]; a node left empty goes too. */
static int remove_child(ref_fs *fs, struct rw_tree *t, struct ref_path *p, int level)
{
	struct ref_block *pb = p->blk[level];
	int ps = p->slot[level];
	int r = free_tree_block(fs, p->blk[level - 1], t->root.id);
	ref_block_put(fs, p->blk[level - 1]);
	p->blk[level - 1] = NULL;
	if (r)
		return r;
	node_delete(pb->data, ps, 1);
	uint32_t n = blk_nritems(pb->data);
	bool top = level == p->levels - 1;
	if (n == 0) {
		if (top) { /* every item gone: the tree becomes one empty leaf */
			struct ref_block *leaf;
			if ((r = new_block(fs, t->root.id, 0, &leaf)))
				return r;
			r = free_tree_block(fs, pb, t->root.id);
			ref_block_put(fs, pb);
			p->blk[level] = NULL;
			p->levels = level; /* the freed root is no longer on the path */
			t->root = (struct ref_root){ t->root.id, leaf->bytenr, leaf->gen, 0 };
			t->dirty = true;
			ref_block_put(fs, leaf);
			return r;
		}
		return remove_child(fs, t, p, level + 1);
	}
	if (ps == 0) {
		struct ref_key k;
		blk_key(pb->data, 0, &k);
		fixup_low_keys(p, level + 1, &k);
	}
	if (!top && n < node_max_ptrs(nsz(fs)) / 4)
		return merge_level(fs, t, p, level);
	return 0;
}

static bool fits_together(ref_fs *fs, const uint8_t *a, const uint8_t *b)
{
	if (blk_level(a))
		return blk_nritems(a) + blk_nritems(b) <= node_max_ptrs(nsz(fs)) - 4;
	return leaf_used(a, nsz(fs)) + leaf_used(b, nsz(fs)) <= leaf_space(nsz(fs));
}

static void append_all(ref_fs *fs, uint8_t *dst, const uint8_t *src)
{
	if (blk_level(src))
		node_append(dst, src, 0, (int)blk_nritems(src));
	else
		leaf_append(dst, src, nsz(fs), 0, (int)blk_nritems(src));
}

/*
 * blk[level] is under-full: its contents move into its left sibling, or its
 * right sibling's move into it, when they fit in one block; the emptied block
 * is removed from the parent.
 */
static int merge_level(ref_fs *fs, struct rw_tree *t, struct ref_path *p, int level)
{
	struct ref_block *pb = p->blk[level + 1], *sib;
	int ps = p->slot[level + 1], r;
	if (ps > 0) {
		if ((r = read_child(fs, pb, ps - 1, &sib)))
			return r;
		if (fits_together(fs, sib->data, p->blk[level]->data)) {
			if ((r = cow_block(fs, t, sib, pb, ps - 1, &sib)))
				return r;
			append_all(fs, sib->data, p->blk[level]->data);
			ref_block_put(fs, sib);
			return remove_child(fs, t, p, level + 1);
		}
		ref_block_put(fs, sib);
	}
	if ((uint32_t)ps + 1 < blk_nritems(pb->data)) {
		if ((r = read_child(fs, pb, ps + 1, &sib)))
			return r;
		if (fits_together(fs, p->blk[level]->data, sib->data)) {
			if ((r = cow_block(fs, t, sib, pb, ps + 1, &sib)))
				return r;
			append_all(fs, p->blk[level]->data, sib->data);
			/* The right sibling goes: put it on the path in place of this block. */
			ref_block_put(fs, p->blk[level]);
			p->blk[level] = sib;
			p->slot[level + 1] = ps + 1;
			return remove_child(fs, t, p, level + 1);
		}
		ref_block_put(fs, sib);
	}
	return 0;
}

int bt_delete(ref_fs *fs, struct rw_tree *t, struct ref_path *p, int nr)
{
	struct ref_block *lb = p->blk[0];
	int slot = p->slot[0], r = 0;
	leaf_delete(lb->data, nsz(fs), slot, nr);
	if (p->levels > 1) {
		if (blk_nritems(lb->data) == 0) {
			r = remove_child(fs, t, p, 1);
		} else {
			if (slot == 0) {
				struct ref_key k;
				blk_key(lb->data, 0, &k);
				fixup_low_keys(p, 1, &k);
			}
			if (leaf_used(lb->data, nsz(fs)) < leaf_space(nsz(fs)) / 4)
				r = merge_level(fs, t, p, 0);
		}
	}
	ref_path_release(fs, p);
	if (!r)
		r = shrink_root(fs, t);
	return r;
}

int bt_delete_key(ref_fs *fs, struct rw_tree *t, const struct ref_key *key)
{
	struct ref_path p;
	int r = bt_lookup_cow(fs, t, key, &p);
	if (r)
		return r;
	return bt_delete(fs, t, &p, 1);
}

int bt_item_append(ref_fs *fs, struct rw_tree *t, const struct ref_key *k, const void *data,
		   uint32_t len)
{
	/* Looked at before anything is copied on write: an item that cannot
	 * grow fails with nothing changed, so that the caller's operation can
	 * fail cleanly (link's EMLINK without extended irefs, as the kernel's). */
	struct ref_path p;
	struct ref_key got;
	uint32_t at = 0;
	int r = bt_peek(fs, &t->root, k, false, &got, &at);
	if (r < 0)
		return r;
	if (r == 0 && !ref_key_cmp(&got, k)) {
		if (at + len > bt_max_item(fs))
			return -EOVERFLOW;
		r = bt_resize(fs, t, k, at + len, &p);
	} else {
		at = 0;
		r = bt_insert(fs, t, k, len, &p);
	}
	if (r)
		return r;
	memcpy(bt_item(&p, NULL) + at, data, len);
	ref_path_release(fs, &p);
	return 0;
}

int bt_item_cut(ref_fs *fs, struct rw_tree *t, const struct ref_key *k, uint32_t off, uint32_t len)
{
	struct ref_path p;
	int r = bt_lookup_cow(fs, t, k, &p);
	if (r)
		return r;
	uint32_t size;
	uint8_t *d = bt_item(&p, &size);
	if (len >= size)
		return bt_delete(fs, t, &p, 1);
	memmove(d + off, d + off + len, size - off - len);
	leaf_resize(p.blk[0]->data, fs->nodesize, p.slot[0], size - len);
	ref_path_release(fs, &p);
	return 0;
}

int bt_peek(ref_fs *fs, const struct ref_root *root, const struct ref_key *key, bool le,
	    struct ref_key *got, uint32_t *size)
{
	struct ref_path p;
	int r = le ? ref_search_le(fs, root, key, &p) : ref_search(fs, root, key, &p);
	if (r)
		return r;
	const uint8_t *d;
	uint32_t sz;
	ref_path_item(&p, got, &d, &sz);
	ref_path_release(fs, &p);
	if (size)
		*size = sz;
	return 0;
}

/* ---- New trees ---- */

int bt_new_tree(ref_fs *fs, uint64_t id, struct rw_tree **out)
{
	struct ref_block *leaf;
	int r = new_block(fs, id, 0, &leaf);
	if (r)
		return r;
	struct ref_root root = { id, leaf->bytenr, leaf->gen, 0 };
	ref_block_put(fs, leaf);
	if ((r = rw_tree_add(fs, &root, 0, out)))
		return r;
	(*out)->dirty = true;
	return 0;
}

int bt_new_tree_rooted(ref_fs *fs, uint64_t id, struct rw_tree **out)
{
	struct rw_tree *rt;
	int r;
	if ((r = bt_new_tree(fs, id, out)) || (r = rw_tree_get(fs, BTRFS_ROOT_TREE_OBJECTID, &rt)))
		return r;
	struct btrfs_root_item ri;
	memset(&ri, 0, sizeof(ri));
	ri.inode.generation = htole64(1);
	ri.inode.nlink = htole32(1);
	ri.inode.mode = htole32(040755);
	ri.generation = ri.generation_v2 = htole64(fs->rw->transid);
	ri.bytenr = htole64((*out)->root.bytenr);
	ri.refs = htole32(1);
	ri.bytes_used = htole64(fs->nodesize);
	struct ref_key key = { id, BTRFS_ROOT_ITEM_KEY, 0 };
	return bt_insert_data(fs, rt, &key, &ri, sizeof(ri));
}

int bt_snapshot_root(ref_fs *fs, struct rw_tree *src, uint64_t id, struct rw_tree **out)
{
	/* The source's root is made this transaction's own first, so that the
	 * copy and the source share everything below the root. */
	struct ref_block *b, *copy;
	int r = ref_read_block(fs, src->root.bytenr, src->root.gen, src->root.level, 0, &b);
	if (r)
		return r;
	if ((r = cow_block(fs, src, b, NULL, 0, &b)))
		return r;
	if ((r = new_block(fs, id, b->level, &copy))) {
		ref_block_put(fs, b);
		return r;
	}
	size_t body = offsetof(struct btrfs_header_disk, nritems);
	memcpy(copy->data + body, b->data + body, fs->nodesize - body);
	ref_block_put(fs, b);
	src->last_snapshot = fs->rw->transid;
	struct ref_root root = { id, copy->bytenr, copy->gen, copy->level };
	r = share_children(fs, copy, false, +1);
	ref_block_put(fs, copy);
	if (!r && !(r = rw_tree_add(fs, &root, fs->rw->transid, out)))
		(*out)->dirty = true;
	return r;
}
