/*
 * fst_convert.c - writing on a file system without the free-space tree (made
 * with `mkfs.btrfs -R ^free-space-tree`, used with space_cache=v1 or none):
 * ref converts it at mount as the kernel's `-o space_cache=v2` does
 * (btrfs_create_free_space_tree, then btrfs_set_free_space_cache_v1_active
 * false): the free-space tree is built from the extent tree, every v1 cache
 * file (space_cache.h) is deleted with its FREE_SPACE item and its data
 * extents, and the superblock gets FREE_SPACE_TREE and FREE_SPACE_TREE_VALID
 * with cache_generation 0, all in one commit before anything else is
 * written.  The kernel then mounts it with the tree, as after its own
 * conversion; until that commit, the image is the v1 file system it was.
 */
#include "ref/rw.h"
#include "ref/txn/space_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int extent_used_each(ref_fs *fs, uint64_t start, uint64_t len,
		     int (*fn)(ref_fs *fs, void *ctx, uint64_t start, uint64_t len), void *ctx)
{
	struct ref_root root;
	int r = ref_find_root(fs, BTRFS_EXTENT_TREE_OBJECTID, &root);
	if (r)
		return r;
	struct ref_path path;
	struct ref_key k = { start, 0, 0 };
	/* An extent item starting before `start` may reach into the range only
	 * when the range starts inside one: block groups do not. */
	r = ref_search(fs, &root, &k, &path);
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&path, &k, &d, &size);
		if (k.objectid >= start + len)
			break;
		uint64_t l = k.type == BTRFS_EXTENT_ITEM_KEY	? k.offset
			     : k.type == BTRFS_METADATA_ITEM_KEY ? fs->nodesize
								   : 0;
		if (l && (r = fn(fs, ctx, k.objectid, l)))
			break;
		r = ref_next(fs, &path);
	}
	if (r == 0)
		ref_path_release(fs, &path);
	return r < 0 ? r : 0;
}

static int remove_used(ref_fs *fs, void *ctx, uint64_t start, uint64_t len)
{
	(void)ctx;
	return fst_remove(fs, start, len);
}

/* The tree, one FREE_SPACE_INFO per block group and its free extents. */
static int build_tree(ref_fs *fs)
{
	struct rw_tree *t;
	int r = bt_new_tree_rooted(fs, BTRFS_FREE_SPACE_TREE_OBJECTID, &t);
	if (r)
		return r;
	/* Each group whole, less what the extent tree uses (the blocks this
	 * transaction allocates follow at the commit, as always). */
	struct rw_state *rw = fs->rw;
	for (size_t i = 0; !r && i < rw->nbgs; i++) {
		struct rw_bg *bg = &rw->bgs[i];
		if (!(r = fst_add_bg(fs, bg)))
			r = extent_used_each(fs, bg->start, bg->len, remove_used, NULL);
	}
	return r;
}

/* Deletes cache file f: its inode's items, its data extents' references
 * (freed at the commit) and its FREE_SPACE item. */
static int delete_cache_file(ref_fs *fs, struct rw_tree *rt, const struct sc_file *f)
{
	for (;;) {
		struct ref_key k = { f->ino, 0, 0 }, got;
		uint32_t size;
		int r = bt_peek(fs, &rt->root, &k, false, &got, &size);
		if (r < 0)
			return r;
		if (r || got.objectid != f->ino)
			break;
		if (got.type == BTRFS_EXTENT_DATA_KEY) {
			struct ref_path p;
			if ((r = bt_lookup_cow(fs, rt, &got, &p)))
				return r;
			struct btrfs_file_extent_item fe;
			uint32_t isz;
			const uint8_t *d = bt_item(&p, &isz);
			memset(&fe, 0, sizeof(fe));
			memcpy(&fe, d, isz < sizeof(fe) ? isz : sizeof(fe));
			ref_path_release(fs, &p);
			if (fe.type != BTRFS_FILE_EXTENT_INLINE && isz >= sizeof(fe) && LE64(fe.disk_bytenr) &&
			    (r = dref_data(fs, LE64(fe.disk_bytenr), LE64(fe.disk_num_bytes),
					   BTRFS_ROOT_TREE_OBJECTID, f->ino, got.offset - LE64(fe.offset), -1,
					   false)))
				return r;
		}
		if ((r = bt_delete_key(fs, rt, &got)))
			return r;
	}
	struct ref_key hk = { BTRFS_FREE_SPACE_OBJECTID, 0, f->group };
	return bt_delete_key(fs, rt, &hk);
}

int fst_convert(ref_fs *fs)
{
	/* The feature first: fst.c keeps the new tree in step from here on. */
	fs->sb.compat_ro_flags = htole64(LE64(fs->sb.compat_ro_flags) |
					 BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE |
					 BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID);
	struct sc_file *files = NULL;
	size_t n = 0;
	struct rw_tree *rt;
	int r = space_cache_files(fs, &files, &n);
	if (!r)
		r = rw_tree_get(fs, BTRFS_ROOT_TREE_OBJECTID, &rt);
	if (!r)
		r = build_tree(fs);
	for (size_t i = 0; !r && i < n; i++)
		r = delete_cache_file(fs, rt, &files[i]);
	free(files);
	if (r) {
		fs->rw->failed = true; /* half a conversion must never be committed */
		return r;
	}
	fs->sb.cache_generation = 0;
	fs->rw->fst_converted = true;
	fs->rw->in_txn = true;
	return rw_commit(fs);
}
