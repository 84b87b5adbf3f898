/*
 * extent.c - data extent items: decoding the item and its keyed references
 * into one list, changing counts, and encoding it back with the inline
 * references in the order the kernel's tree-checker demands (by type
 * ascending, then by hash or parent descending).
 */
#include "ref/extent.h"

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

static int decode_inline(ref_fs *fs, struct extent_refs *x, const uint8_t *d, uint32_t size)
{
	if (size < sizeof(struct btrfs_extent_item))
		return bad(fs, x->bytenr, "too small");
	x->total = le64(d);
	x->generation = le64(d + 8);
	x->flags = le64(d + 16);
	if (!(x->flags & BTRFS_EXTENT_FLAG_DATA))
		return bad(fs, x->bytenr, "not a data extent");
	uint32_t pos = sizeof(struct btrfs_extent_item);
	while (pos < size) {
		struct xref e = { 0 };
		uint8_t type = d[pos];
		if (type == BTRFS_EXTENT_DATA_REF_KEY && size - pos >= 1 + 28) {
			data_ref_decode(d + pos + 1, &e);
			pos += 1 + 28;
		} else if (type == BTRFS_SHARED_DATA_REF_KEY && size - pos >= 1 + 8 + 4) {
			e.type = type;
			e.parent = le64(d + pos + 1);
			e.count = le32(d + pos + 9);
			pos += 13;
		} else {
			return bad(fs, x->bytenr, "unknown or truncated inline reference");
		}
		int r = push(fs, x, &e);
		if (r)
			return r;
	}
	return 0;
}

int extent_load(ref_fs *fs, struct rw_tree *et, uint64_t bytenr, uint64_t num_bytes,
		struct extent_refs *x)
{
	memset(x, 0, sizeof(*x));
	x->bytenr = bytenr;
	x->num_bytes = num_bytes;
	struct ref_path p;
	struct ref_key k = { bytenr, BTRFS_EXTENT_ITEM_KEY, num_bytes };
	int r = ref_search(fs, &et->root, &k, &p);
	if (r < 0)
		return r;
	struct ref_key got = { 0, 0, 0 };
	const uint8_t *d;
	uint32_t size;
	if (r == 0)
		ref_path_item(&p, &got, &d, &size);
	if (r == 1 || ref_key_cmp(&got, &k)) {
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
		struct xref e = { 0 };
		if (got.type == BTRFS_EXTENT_DATA_REF_KEY && size >= 28) {
			data_ref_decode(d, &e);
		} else if (got.type == BTRFS_SHARED_DATA_REF_KEY && size >= 4) {
			e.type = got.type;
			e.parent = got.offset;
			e.count = le32(d);
		} else {
			continue;
		}
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

int extent_refs_add(ref_fs *fs, struct extent_refs *x, uint64_t root, uint64_t ino,
		    uint64_t offset, int64_t delta)
{
	for (size_t i = 0; i < x->n; i++) {
		struct xref *e = &x->refs[i];
		if (e->type == BTRFS_EXTENT_DATA_REF_KEY && e->root == root && e->ino == ino &&
		    e->offset == offset) {
			if ((int64_t)e->count + delta < 0)
				return bad(fs, x->bytenr, "reference count below zero");
			e->count = (uint64_t)((int64_t)e->count + delta);
			x->total = (uint64_t)((int64_t)x->total + delta);
			if (e->count == 0)
				x->refs[i] = x->refs[--x->n];
			return 0;
		}
	}
	if (delta < 0)
		return bad(fs, x->bytenr, "dropping a reference it does not have");
	x->total += (uint64_t)delta;
	struct xref e = { BTRFS_EXTENT_DATA_REF_KEY, root, ino, offset, 0, (uint64_t)delta };
	return push(fs, x, &e);
}

int extent_delete(ref_fs *fs, struct rw_tree *et, const struct extent_refs *x)
{
	struct ref_key k = { x->bytenr, BTRFS_EXTENT_ITEM_KEY, x->num_bytes };
	int r = bt_delete_key(fs, et, &k);
	for (size_t i = 0; i < x->nkeyed && !r; i++)
		r = bt_delete_key(fs, et, &x->keyed[i]);
	return r;
}

static uint64_t seq(const struct xref *e)
{
	return e->type == BTRFS_EXTENT_DATA_REF_KEY ? ref_extent_data_ref_hash(e->root, e->ino, e->offset)
						    : e->parent;
}

/* The kernel's order of inline references (tree-checker.c check_extent_item,
 * and where lookup_inline_extent_backref inserts): types ascending, and
 * within a type the hash (data refs) or parent (shared refs) descending. */
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
	return e->type == BTRFS_EXTENT_DATA_REF_KEY ? 1 + 28 : 1 + 8 + 4;
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
	uint32_t size = sizeof(struct btrfs_extent_item);
	size_t ninline = 0;
	while (ninline < x->n && size + inline_size(&x->refs[ninline]) <= INLINE_MAX)
		size += inline_size(&x->refs[ninline++]);
	struct ref_key k = { x->bytenr, BTRFS_EXTENT_ITEM_KEY, x->num_bytes };
	struct ref_path p;
	int r = bt_insert(fs, et, &k, size, &p);
	if (r)
		return r == -EEXIST ? bad(fs, x->bytenr, "stored twice") : r;
	uint8_t *d = bt_item(&p, NULL);
	struct btrfs_extent_item ei = { htole64(x->total), htole64(x->generation), htole64(x->flags) };
	memcpy(d, &ei, sizeof(ei));
	uint32_t pos = sizeof(ei);
	for (size_t i = 0; i < ninline; i++) {
		const struct xref *e = &x->refs[i];
		d[pos] = e->type;
		if (e->type == BTRFS_EXTENT_DATA_REF_KEY) {
			data_ref_encode(d + pos + 1, e);
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
		r = store_keyed(fs, et, x->bytenr, &x->refs[i]);
	return r;
}

int extent_drop_tree_ref(ref_fs *fs, struct rw_tree *et, uint64_t bytenr)
{
	struct ref_path p;
	struct ref_key k = { bytenr, BTRFS_METADATA_ITEM_KEY, 0 };
	int r = ref_search(fs, &et->root, &k, &p);
	if (r < 0)
		return r;
	struct ref_key got = { 0, 0, 0 };
	const uint8_t *d;
	uint32_t size = 0;
	if (r == 0) {
		ref_path_item(&p, &got, &d, &size);
		if (got.objectid == bytenr && got.type == BTRFS_METADATA_ITEM_KEY && size >= 24 &&
		    le64(d) != 1) {
			ref_path_release(fs, &p);
			return ref_fail(fs, EOPNOTSUPP,
					"tree block %llu has %llu references; dropping shared tree blocks is not implemented",
					(unsigned long long)bytenr, (unsigned long long)le64(d));
		}
		ref_path_release(fs, &p);
	}
	if (r == 1 || got.objectid != bytenr || got.type != BTRFS_METADATA_ITEM_KEY)
		return ref_fail(fs, EUCLEAN, "tree block %llu has no metadata extent item",
				(unsigned long long)bytenr);
	return bt_delete_key(fs, et, &got);
}
