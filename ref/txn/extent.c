/*
 * extent.c - extent items of data extents and tree blocks: decoding the item
 * and its keyed references into one list, changing counts, and encoding it
 * back with the inline references in the order the kernel's tree-checker
 * demands (by type ascending, then by root, hash or parent descending).
 */
#include "ref/txn/extent.h"

#include <errno.h>
#include <stdlib.h>

#define INLINE_MAX 2048 /* bytes of extent item before references go keyed */

static int push(ref_fs *fs, struct extent_refs *x, const struct xref *e)
{
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 8;
		void *p = realloc(x->refs, cap * sizeof(*x->refs));
		if (!p)
			return ref_fail(fs, ENOMEM, "out of memory");
		x->refs = p;
		x->cap = cap;
	}
	x->refs[x->n++] = *e;
	return 0;
}

static void data_ref_decode(const uint8_t *p, struct xref *e)
{
	e->type = BTRFS_EXTENT_DATA_REF_KEY;
	e->root = le64(p + offsetof(struct btrfs_extent_data_ref, root));
	e->ino = le64(p + offsetof(struct btrfs_extent_data_ref, objectid));
	e->offset = le64(p + offsetof(struct btrfs_extent_data_ref, offset));
	e->count = le32(p + offsetof(struct btrfs_extent_data_ref, count));
}

static int bad(ref_fs *fs, uint64_t bytenr, const char *why)
{
	return ref_fail(fs, EUCLEAN, "extent item %llu: %s", (unsigned long long)bytenr, why);
}

static uint64_t bytenr_of(const struct extent_refs *x)
{
	return x->key.objectid;
}

struct ref_key extent_tree_key(const ref_fs *fs, uint64_t bytenr, int level)
{
	if (LE64(fs->sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA)
		return (struct ref_key){ bytenr, BTRFS_METADATA_ITEM_KEY, (uint64_t)level };
	return (struct ref_key){ bytenr, BTRFS_EXTENT_ITEM_KEY, fs->nodesize };
}

bool extent_key_is_tree(const struct extent_refs *x)
{
	return x->key.type == BTRFS_METADATA_ITEM_KEY || x->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK;
}

#define TREE_INFO sizeof(struct btrfs_tree_block_info)

static int decode_inline(ref_fs *fs, struct extent_refs *x, const uint8_t *d, uint32_t size)
{
	if (size < sizeof(struct btrfs_extent_item))
		return bad(fs, bytenr_of(x), "too small");
	x->total = le64(d);
	x->generation = le64(d + 8);
	x->flags = le64(d + 16);
	bool tree = extent_key_is_tree(x);
	if (!(x->flags & (tree ? BTRFS_EXTENT_FLAG_TREE_BLOCK : BTRFS_EXTENT_FLAG_DATA)))
		return bad(fs, bytenr_of(x), tree ? "not a tree block" : "not a data extent");
	uint32_t pos = sizeof(struct btrfs_extent_item);
	if (tree && x->key.type == BTRFS_EXTENT_ITEM_KEY) { /* (no skinny metadata) */
		if (size < pos + TREE_INFO)
			return bad(fs, bytenr_of(x), "a tree block's item without its tree block info");
		const struct btrfs_tree_block_info *bi = (const void *)(d + pos);
		x->info_key = (struct ref_key){ LE64(bi->key.objectid), bi->key.type,
						LE64(bi->key.offset) };
		x->info_level = bi->level;
		pos += TREE_INFO;
	}
	while (pos < size) {
		struct xref e = { 0 };
		uint8_t type = d[pos];
		if (!tree && type == BTRFS_EXTENT_DATA_REF_KEY && size - pos >= 1 + 28) {
			data_ref_decode(d + pos + 1, &e);
			pos += 1 + 28;
		} else if (!tree && type == BTRFS_SHARED_DATA_REF_KEY && size - pos >= 1 + 8 + 4) {
			e.type = type;
			e.parent = le64(d + pos + 1);
			e.count = le32(d + pos + 9);
			pos += 13;
		} else if (tree && (type == BTRFS_TREE_BLOCK_REF_KEY ||
				    type == BTRFS_SHARED_BLOCK_REF_KEY) && size - pos >= 1 + 8) {
			e.type = type;
			if (type == BTRFS_TREE_BLOCK_REF_KEY)
				e.root = le64(d + pos + 1);
			else
				e.parent = le64(d + pos + 1);
			e.count = 1;
			pos += 9;
		} else {
			return bad(fs, bytenr_of(x), "unknown or truncated inline reference");
		}
		int r = push(fs, x, &e);
		if (r)
			return r;
	}
	return 0;
}

/* A keyed reference item decoded; false for an item that is none. */
static bool keyed_decode(const struct ref_key *k, const uint8_t *d, uint32_t size, struct xref *e)
{
	memset(e, 0, sizeof(*e));
	e->type = k->type;
	e->count = 1;
	switch (k->type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
		e->root = k->offset;
		return true;
	case BTRFS_SHARED_BLOCK_REF_KEY:
		e->parent = k->offset;
		return true;
	case BTRFS_EXTENT_DATA_REF_KEY:
		if (size < 28)
			return false;
		data_ref_decode(d, e);
		return true;
	case BTRFS_SHARED_DATA_REF_KEY:
		if (size < 4)
			return false;
		e->parent = k->offset;
		e->count = le32(d);
		return true;
	}
	return false;
}

int extent_load(ref_fs *fs, struct rw_tree *et, const struct ref_key *key, struct extent_refs *x)
{
	memset(x, 0, sizeof(*x));
	x->key = *key;
	uint64_t bytenr = key->objectid;
	struct ref_path p;
	int r = ref_search(fs, &et->root, key, &p);
	if (r < 0)
		return r;
	struct ref_key got = { 0, 0, 0 };
	const uint8_t *d;
	uint32_t size;
	if (r == 0)
		ref_path_item(&p, &got, &d, &size);
	if (r == 1 || ref_key_cmp(&got, key)) {
		if (r == 0)
			ref_path_release(fs, &p);
		return bad(fs, bytenr, "missing from the extent tree");
	}
	if ((r = decode_inline(fs, x, d, size)))
		goto out;
	while ((r = ref_next(fs, &p)) == 0) {
		ref_path_item(&p, &got, &d, &size);
		if (got.objectid != bytenr || got.type > BTRFS_SHARED_DATA_REF_KEY)
			break;
		struct xref e;
		if (!keyed_decode(&got, d, size, &e))
			continue;
		if (x->nkeyed == x->keyed_cap) {
			size_t cap = x->keyed_cap ? x->keyed_cap * 2 : 16;
			void *np = realloc(x->keyed, cap * sizeof(*x->keyed));
			if (!np) {
				r = ref_fail(fs, ENOMEM, "out of memory");
				goto out;
			}
			x->keyed = np;
			x->keyed_cap = cap;
		}
		x->keyed[x->nkeyed++] = got;
		if ((r = push(fs, x, &e)))
			goto out;
	}
	if (r == 1)
		return 0;
out:
	ref_path_release(fs, &p);
	return r < 0 ? r : 0;
}

void extent_refs_free(struct extent_refs *x)
{
	free(x->refs);
	free(x->keyed);
	x->refs = NULL;
	x->keyed = NULL;
	x->n = x->cap = x->nkeyed = x->keyed_cap = 0;
}

static bool same_ref(const struct xref *e, const struct xref *c)
{
	if (e->type != c->type)
		return false;
	switch (e->type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
		return e->root == c->root;
	case BTRFS_EXTENT_DATA_REF_KEY:
		return e->root == c->root && e->ino == c->ino && e->offset == c->offset;
	default:
		return e->parent == c->parent;
	}
}

int extent_ref_change(ref_fs *fs, struct extent_refs *x, bool tree, const struct dref_ref *c)
{
	struct xref want = { 0 };
	if (tree)
		want.type = c->parent ? BTRFS_SHARED_BLOCK_REF_KEY : BTRFS_TREE_BLOCK_REF_KEY;
	else
		want.type = c->parent ? BTRFS_SHARED_DATA_REF_KEY : BTRFS_EXTENT_DATA_REF_KEY;
	want.root = c->parent ? 0 : c->root;
	want.ino = c->parent || tree ? 0 : c->ino;
	want.offset = c->parent || tree ? 0 : c->offset;
	want.parent = c->parent;
	int64_t delta = c->delta;
	for (size_t i = 0; i < x->n; i++) {
		struct xref *e = &x->refs[i];
		if (!same_ref(e, &want))
			continue;
		if ((int64_t)e->count + delta < 0 || (tree && e->count + delta > 1))
			return bad(fs, bytenr_of(x), (int64_t)e->count + delta < 0
							     ? "reference count below zero"
							     : "a tree block referenced twice the same way");
		e->count = (uint64_t)((int64_t)e->count + delta);
		x->total = (uint64_t)((int64_t)x->total + delta);
		if (e->count == 0)
			x->refs[i] = x->refs[--x->n];
		return 0;
	}
	if (delta < 0)
		return bad(fs, bytenr_of(x), "dropping a reference it does not have");
	if (tree && delta > 1)
		return bad(fs, bytenr_of(x), "a tree block referenced twice the same way");
	x->total += (uint64_t)delta;
	want.count = (uint64_t)delta;
	return push(fs, x, &want);
}

int extent_delete(ref_fs *fs, struct rw_tree *et, const struct extent_refs *x)
{
	int r = bt_delete_key(fs, et, &x->key);
	for (size_t i = 0; i < x->nkeyed && !r; i++)
		r = bt_delete_key(fs, et, &x->keyed[i]);
	return r;
}

static uint64_t seq(const struct xref *e)
{
	switch (e->type) {
	case BTRFS_EXTENT_DATA_REF_KEY:
		return ref_extent_data_ref_hash(e->root, e->ino, e->offset);
	case BTRFS_TREE_BLOCK_REF_KEY:
		return e->root;
	default:
		return e->parent;
	}
}

/* The kernel's order of inline references (tree-checker.c check_extent_item,
 * and where lookup_inline_extent_backref inserts): types ascending, and
 * within a type the root (tree refs), hash (data refs) or parent (shared
 * refs) descending. */
static int cmp_xref(const void *a, const void *b)
{
	const struct xref *x = a, *y = b;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	uint64_t sx = seq(x), sy = seq(y);
	if (sx != sy)
		return sx > sy ? -1 : 1;
	return 0;
}

static uint32_t inline_size(const struct xref *e)
{
	switch (e->type) {
	case BTRFS_EXTENT_DATA_REF_KEY:
		return 1 + 28;
	case BTRFS_SHARED_DATA_REF_KEY:
		return 1 + 8 + 4;
	default:
		return 1 + 8;
	}
}

static void data_ref_encode(uint8_t *p, const struct xref *e)
{
	struct btrfs_extent_data_ref dr = { htole64(e->root), htole64(e->ino), htole64(e->offset),
					    htole32((uint32_t)e->count) };
	memcpy(p, &dr, sizeof(dr));
}

/* A keyed reference at its hash, probing past other references that
 * collide there, as the kernel does. */
static int store_keyed(ref_fs *fs, struct rw_tree *et, uint64_t bytenr, const struct xref *e)
{
	if (e->type == BTRFS_SHARED_DATA_REF_KEY) {
		uint32_t c = htole32((uint32_t)e->count);
		struct ref_key k = { bytenr, BTRFS_SHARED_DATA_REF_KEY, e->parent };
		return bt_insert_data(fs, et, &k, &c, 4);
	}
	if (e->type == BTRFS_TREE_BLOCK_REF_KEY || e->type == BTRFS_SHARED_BLOCK_REF_KEY) {
		struct ref_key k = { bytenr, e->type,
				     e->type == BTRFS_TREE_BLOCK_REF_KEY ? e->root : e->parent };
		return bt_insert_data(fs, et, &k, NULL, 0);
	}
	uint8_t buf[28];
	data_ref_encode(buf, e);
	struct ref_key k = { bytenr, BTRFS_EXTENT_DATA_REF_KEY, seq(e) };
	for (int probe = 0; probe < 1024; probe++, k.offset++) {
		int r = bt_insert_data(fs, et, &k, buf, sizeof(buf));
		if (r != -EEXIST)
			return r;
	}
	return bad(fs, bytenr, "too many colliding keyed references");
}

int extent_store(ref_fs *fs, struct rw_tree *et, struct extent_refs *x)
{
	qsort(x->refs, x->n, sizeof(*x->refs), cmp_xref);
	bool info = x->key.type == BTRFS_EXTENT_ITEM_KEY && x->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK;
	uint32_t size = sizeof(struct btrfs_extent_item) + (info ? (uint32_t)TREE_INFO : 0);
	size_t ninline = 0;
	while (ninline < x->n && size + inline_size(&x->refs[ninline]) <= INLINE_MAX)
		size += inline_size(&x->refs[ninline++]);
	struct ref_path p;
	int r = bt_insert(fs, et, &x->key, size, &p);
	if (r)
		return r == -EEXIST ? bad(fs, bytenr_of(x), "stored twice") : r;
	uint8_t *d = bt_item(&p, NULL);
	struct btrfs_extent_item ei = { htole64(x->total), htole64(x->generation), htole64(x->flags) };
	memcpy(d, &ei, sizeof(ei));
	uint32_t pos = sizeof(ei);
	if (info) {
		struct btrfs_tree_block_info bi;
		memset(&bi, 0, sizeof(bi));
		bi.key.objectid = htole64(x->info_key.objectid);
		bi.key.type = x->info_key.type;
		bi.key.offset = htole64(x->info_key.offset);
		bi.level = x->info_level;
		memcpy(d + pos, &bi, sizeof(bi));
		pos += sizeof(bi);
	}
	for (size_t i = 0; i < ninline; i++) {
		const struct xref *e = &x->refs[i];
		d[pos] = e->type;
		if (e->type == BTRFS_EXTENT_DATA_REF_KEY) {
			data_ref_encode(d + pos + 1, e);
		} else if (e->type == BTRFS_TREE_BLOCK_REF_KEY ||
			   e->type == BTRFS_SHARED_BLOCK_REF_KEY) {
			uint64_t v = htole64(seq(e));
			memcpy(d + pos + 1, &v, 8);
		} else {
			uint64_t parent = htole64(e->parent);
			uint32_t c = htole32((uint32_t)e->count);
			memcpy(d + pos + 1, &parent, 8);
			memcpy(d + pos + 9, &c, 4);
		}
		pos += inline_size(e);
	}
	ref_path_release(fs, &p);
	for (size_t i = ninline; i < x->n && !r; i++)
		r = store_keyed(fs, et, bytenr_of(x), &x->refs[i]);
	return r;
}
