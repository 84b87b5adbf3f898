/*
 * fst.c - keeping the free-space tree in step with the extent tree: a
 * FREE_SPACE_EXTENT item per free range of a block group, merged with its
 * neighbours when space is freed and split when it is used, and the block
 * group's FREE_SPACE_INFO extent count kept exact.  A block group kept in
 * bitmaps (as the kernel does for fragmented ones) is converted to extents
 * the first time it changes; the kernel converts it back when it wants to.
 */
#include "ref/rw.h"

#include <errno.h>
#include <stdlib.h>

/* Without the tree (a v1 file system a log replay commits on: its space
 * cache goes stale, so the kernel rebuilds it, as after any commit it did
 * not write the cache for), there is nothing to keep in step. */
static bool fst_on(const ref_fs *fs)
{
	return LE64(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE;
}

static int fst_tree(ref_fs *fs, struct rw_tree **t)
{
	return rw_tree_get(fs, BTRFS_FREE_SPACE_TREE_OBJECTID, t);
}

static int info_path(ref_fs *fs, struct rw_tree *t, const struct rw_bg *bg, struct ref_path *p)
{
	struct ref_key k = { bg->start, BTRFS_FREE_SPACE_INFO_KEY, bg->len };
	int r = bt_lookup_cow(fs, t, &k, p);
	if (r == -ENOENT)
		return ref_fail(fs, EUCLEAN, "block group %llu has no free-space info",
				(unsigned long long)bg->start);
	return r;
}

static int bump_count(ref_fs *fs, struct rw_tree *t, const struct rw_bg *bg, int delta)
{
	struct ref_path p;
	int r = info_path(fs, t, bg, &p);
	if (r)
		return r;
	uint32_t size;
	uint8_t *d = bt_item(&p, &size);
	uint32_t n = le32(d);
	n = (uint32_t)((int64_t)n + delta);
	n = htole32(n);
	memcpy(d, &n, 4);
	ref_path_release(fs, &p);
	return 0;
}

static int insert_extent(ref_fs *fs, struct rw_tree *t, uint64_t start, uint64_t len)
{
	struct ref_key k = { start, BTRFS_FREE_SPACE_EXTENT_KEY, len };
	int r = bt_insert_data(fs, t, &k, NULL, 0);
	return r == -EEXIST ? ref_fail(fs, EUCLEAN, "free-space extent %llu exists twice",
				       (unsigned long long)start)
			    : r;
}

static int delete_extent(ref_fs *fs, struct rw_tree *t, uint64_t start, uint64_t len)
{
	struct ref_key k = { start, BTRFS_FREE_SPACE_EXTENT_KEY, len };
	return bt_delete_key(fs, t, &k);
}

/* Bitmaps of the block group to extent items. */
static int convert_bitmaps(ref_fs *fs, struct rw_tree *t, const struct rw_bg *bg)
{
	struct rset free = { 0 };
	struct ref_key keys[64];
	int r = 0;
	for (;;) { /* collect up to 64 bitmap keys a round, delete them */
		size_t nk = 0;
		struct ref_path p;
		struct ref_key k = { bg->start, BTRFS_FREE_SPACE_INFO_KEY, bg->len };
		r = ref_search(fs, &t->root, &k, &p);
		while (r == 0 && nk < 64) {
			const uint8_t *d;
			uint32_t size;
			ref_path_item(&p, &k, &d, &size);
			if (k.objectid >= bg->start + bg->len)
				break;
			if (k.type == BTRFS_FREE_SPACE_BITMAP_KEY) {
				uint64_t bits = k.offset / fs->sectorsize;
				for (uint64_t i = 0; i < bits && i / 8 < size && !r; i++)
					if (d[i / 8] & (1u << (i % 8)))
						r = rset_add(&free, k.objectid + i * fs->sectorsize,
							     fs->sectorsize);
				keys[nk++] = k;
			}
			if (!r)
				r = ref_next(fs, &p);
		}
		if (r == 0)
			ref_path_release(fs, &p);
		if (r < 0)
			goto out;
		r = 0; /* (1: the tree ended right after the group's bitmaps) */
		for (size_t i = 0; i < nk && !r; i++)
			r = bt_delete_key(fs, t, &keys[i]);
		if (r || nk == 0)
			break;
	}
	for (size_t i = 0; i < free.n && !r; i++)
		r = insert_extent(fs, t, free.r[i][0], free.r[i][1] - free.r[i][0]);
	if (!r) {
		struct ref_path p;
		if (!(r = info_path(fs, t, bg, &p))) {
			struct btrfs_free_space_info fi = { htole32((uint32_t)free.n), 0 };
			memcpy(bt_item(&p, NULL), &fi, sizeof(fi));
			ref_path_release(fs, &p);
		}
	}
out:
	rset_free(&free);
	return r < 0 ? r : 0;
}

static int prepare(ref_fs *fs, uint64_t start, uint64_t len, struct rw_tree **t,
		   struct rw_bg **bgp)
{
	struct rw_bg *bg = rw_bg_find(fs, start);
	if (!bg || start + len > bg->start + bg->len)
		return ref_fail(fs, EUCLEAN, "range %llu+%llu is not inside one block group",
				(unsigned long long)start, (unsigned long long)len);
	int r = fst_tree(fs, t);
	if (r)
		return r;
	struct ref_path p;
	struct ref_key k = { bg->start, BTRFS_FREE_SPACE_INFO_KEY, bg->len };
	const uint8_t *d;
	uint32_t size;
	if ((r = ref_search(fs, &(*t)->root, &k, &p)) < 0)
		return r;
	struct ref_key got = { 0, 0, 0 };
	uint32_t flags = 0;
	if (r == 0) {
		ref_path_item(&p, &got, &d, &size);
		if (size >= 8)
			flags = le32(d + 4);
		ref_path_release(fs, &p);
	}
	if (r || ref_key_cmp(&got, &k))
		return ref_fail(fs, EUCLEAN, "block group %llu has no free-space info",
				(unsigned long long)bg->start);
	*bgp = bg;
	if (flags & BTRFS_FREE_SPACE_USING_BITMAPS)
		return convert_bitmaps(fs, *t, bg);
	return 0;
}

/* The free extent item with the largest start <= at inside bg (1: none). */
static int extent_before(ref_fs *fs, struct rw_tree *t, const struct rw_bg *bg, uint64_t at,
			 uint64_t *s, uint64_t *l)
{
	struct ref_key k = { at, BTRFS_FREE_SPACE_EXTENT_KEY, UINT64_MAX }, got;
	int r = bt_peek(fs, &t->root, &k, true, &got, NULL);
	if (r)
		return r;
	if (got.type != BTRFS_FREE_SPACE_EXTENT_KEY || got.objectid < bg->start)
		return 1;
	*s = got.objectid;
	*l = got.offset;
	return 0;
}

/* The free extent item starting exactly at `at` (1: none). */
static int extent_at(ref_fs *fs, struct rw_tree *t, uint64_t at, uint64_t *l)
{
	struct ref_key k = { at, BTRFS_FREE_SPACE_EXTENT_KEY, 0 }, got;
	int r = bt_peek(fs, &t->root, &k, false, &got, NULL);
	if (r)
		return r;
	if (got.objectid != at || got.type != BTRFS_FREE_SPACE_EXTENT_KEY)
		return 1;
	*l = got.offset;
	return 0;
}

int fst_add(ref_fs *fs, uint64_t start, uint64_t len)
{
	if (!fst_on(fs))
		return 0;
	struct rw_tree *t;
	struct rw_bg *bg;
	int r = prepare(fs, start, len, &t, &bg);
	if (r)
		return r;
	uint64_t s = start, e = start + len, ls, ll, rl;
	int merged = 0;
	if ((r = extent_before(fs, t, bg, start, &ls, &ll)) < 0)
		return r;
	if (r == 0 && ls + ll > start)
		return ref_fail(fs, EUCLEAN, "freeing %llu+%llu, already free in the free-space tree",
				(unsigned long long)start, (unsigned long long)len);
	if (r == 0 && ls + ll == start) {
		if ((r = delete_extent(fs, t, ls, ll)))
			return r;
		s = ls;
		merged++;
	}
	if (e < bg->start + bg->len) {
		if ((r = extent_at(fs, t, e, &rl)) < 0)
			return r;
		if (r == 0) {
			if ((r = delete_extent(fs, t, e, rl)))
				return r;
			e += rl;
			merged++;
		}
	}
	if ((r = insert_extent(fs, t, s, e - s)))
		return r;
	return merged == 1 ? 0 : bump_count(fs, t, bg, 1 - merged);
}

int fst_remove(ref_fs *fs, uint64_t start, uint64_t len)
{
	if (!fst_on(fs))
		return 0;
	struct rw_tree *t;
	struct rw_bg *bg;
	int r = prepare(fs, start, len, &t, &bg);
	if (r)
		return r;
	uint64_t s, l;
	if ((r = extent_before(fs, t, bg, start, &s, &l)) < 0)
		return r;
	if (r || s + l < start + len)
		return ref_fail(fs, EUCLEAN, "using %llu+%llu, not free in the free-space tree",
				(unsigned long long)start, (unsigned long long)len);
	if ((r = delete_extent(fs, t, s, l)))
		return r;
	int parts = 0;
	if (start > s) {
		if ((r = insert_extent(fs, t, s, start - s)))
			return r;
		parts++;
	}
	if (s + l > start + len) {
		if ((r = insert_extent(fs, t, start + len, s + l - start - len)))
			return r;
		parts++;
	}
	return parts == 1 ? 0 : bump_count(fs, t, bg, parts - 1);
}

int fst_add_bg(ref_fs *fs, struct rw_bg *bg)
{
	if (!fst_on(fs))
		return 0;
	struct rw_tree *t;
	int r = fst_tree(fs, &t);
	if (r)
		return r;
	struct ref_key k = { bg->start, BTRFS_FREE_SPACE_INFO_KEY, bg->len };
	struct btrfs_free_space_info fi = { htole32(1), 0 };
	if ((r = bt_insert_data(fs, t, &k, &fi, sizeof(fi))))
		return r;
	return insert_extent(fs, t, bg->start, bg->len);
}
