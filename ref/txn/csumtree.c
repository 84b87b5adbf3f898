/*
 * csumtree.c - the checksum tree: EXTENT_CSUM items (key offset = the first
 * logical byte covered, one checksum per sector) inserted when data is
 * written and cut out when a data extent is freed.
 */
#include "ref/txn/extent.h"

#include <errno.h>
#include <stdlib.h>

#define CSUM_KEY(off) ((struct ref_key){ BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, (off) })

/* Checksums per item, as the kernel's MAX_CSUM_ITEMS. */
static uint64_t per_item(const ref_fs *fs)
{
	return (leaf_space(fs->nodesize) - 2 * (uint32_t)ITEM_SIZE) / fs->csum_size - 1;
}

int csum_insert(ref_fs *fs, uint64_t bytenr, const uint8_t *csums, uint64_t nsectors)
{
	struct rw_tree *t;
	int r = rw_tree_get(fs, BTRFS_CSUM_TREE_OBJECTID, &t);
	while (!r && nsectors) {
		uint64_t n = nsectors < per_item(fs) ? nsectors : per_item(fs);
		struct ref_key k = CSUM_KEY(bytenr);
		r = bt_insert_data(fs, t, &k, csums, (uint32_t)(n * fs->csum_size));
		if (r == -EEXIST)
			r = ref_fail(fs, EUCLEAN, "checksums for %llu exist already",
				     (unsigned long long)bytenr);
		csums += n * fs->csum_size;
		bytenr += n * fs->sectorsize;
		nsectors -= n;
	}
	return r;
}

/* The checksum item with the largest start <= at: 0 with its key and
 * length in bytes, 1 when there is none. */
static int item_before(ref_fs *fs, struct rw_tree *t, uint64_t at, uint64_t *start, uint64_t *len)
{
	struct ref_key k = CSUM_KEY(at), got;
	uint32_t size;
	int r = bt_peek(fs, &t->root, &k, true, &got, &size);
	if (r)
		return r;
	if (got.objectid != BTRFS_EXTENT_CSUM_OBJECTID || got.type != BTRFS_EXTENT_CSUM_KEY)
		return 1;
	*start = got.offset;
	*len = size / fs->csum_size * (uint64_t)fs->sectorsize;
	return 0;
}

static uint32_t csum_bytes(const ref_fs *fs, uint64_t len)
{
	return (uint32_t)(len / fs->sectorsize * fs->csum_size);
}

int csum_delete(ref_fs *fs, uint64_t bytenr, uint64_t len)
{
	struct rw_tree *t;
	int r = rw_tree_get(fs, BTRFS_CSUM_TREE_OBJECTID, &t);
	uint64_t end = bytenr + len;
	while (!r) {
		uint64_t s, l;
		if ((r = item_before(fs, t, end - 1, &s, &l)))
			return r == 1 ? 0 : r;
		uint64_t e = s + l;
		if (e <= bytenr)
			return 0;
		struct ref_key k = CSUM_KEY(s);
		struct ref_path p;
		if (s >= bytenr && e <= end) { /* wholly inside: goes */
			r = bt_delete_key(fs, t, &k);
		} else if (s < bytenr && e > end) { /* the range is in its middle: split */
			uint32_t tail = csum_bytes(fs, e - end);
			uint8_t *copy = malloc(tail);
			if (!copy)
				return ref_fail(fs, ENOMEM, "out of memory");
			if (!(r = bt_lookup_cow(fs, t, &k, &p))) {
				memcpy(copy, bt_item(&p, NULL) + csum_bytes(fs, end - s), tail);
				ref_path_release(fs, &p);
				r = bt_resize(fs, t, &k, csum_bytes(fs, bytenr - s), &p);
				if (!r) {
					ref_path_release(fs, &p);
					struct ref_key nk = CSUM_KEY(end);
					r = bt_insert_data(fs, t, &nk, copy, tail);
				}
			}
			free(copy);
		} else if (s < bytenr) { /* its tail overlaps: cut it */
			if (!(r = bt_resize(fs, t, &k, csum_bytes(fs, bytenr - s), &p)))
				ref_path_release(fs, &p);
		} else { /* its head overlaps: drop it and move the key */
			if (!(r = bt_lookup_cow(fs, t, &k, &p))) {
				leaf_chop_front(p.blk[0]->data, fs->nodesize, p.slot[0],
						csum_bytes(fs, end - s));
				struct ref_key nk = CSUM_KEY(end);
				bt_set_key(&p, &nk);
				ref_path_release(fs, &p);
			}
		}
	}
	return r;
}
