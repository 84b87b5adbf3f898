/*
 * inode.c - inode items: reading and writing them in the live tree, new
 * inode numbers (the highest in the subvolume plus one, as the kernel), and
 * removing an inode with everything it owns.
 */
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

static struct ref_key inode_key(uint64_t ino)
{
	return (struct ref_key){ ino, BTRFS_INODE_ITEM_KEY, 0 };
}

bool vfs_is_standin(const struct ref_ino *ino)
{
	return ino->ino == BTRFS_EMPTY_SUBVOL_DIR_OBJECTID;
}

int vfs_writable(ref_fs *fs, const struct ref_ino *ino)
{
	if (vfs_is_standin(ino))
		return 0;
	struct rw_tree *t;
	int r = rw_tree_get(fs, ino->subvol, &t);
	if (r)
		return r;
	return t->rdonly ? ref_fail(fs, EROFS, "subvolume %llu is read-only",
				    (unsigned long long)ino->subvol)
			 : 0;
}

int inode_read(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii)
{
	if (vfs_is_standin(ino)) { /* new_simple_dir's inode: made up, never written */
		memset(ii, 0, sizeof(*ii));
		ii->mode = htole32(S_IFDIR | 0755);
		ii->nlink = htole32(1);
		return 0;
	}
	struct ref_root root;
	int r = ref_find_root(fs, ino->subvol, &root);
	if (r)
		return r;
	struct ref_path p;
	struct ref_key k = inode_key(ino->ino);
	const uint8_t *d;
	uint32_t size;
	if ((r = ref_find_first(fs, &root, ino->ino, BTRFS_INODE_ITEM_KEY, &p, &k, &d, &size)))
		return r == -ENOENT ? ref_fail(fs, ENOENT, "inode %llu not found",
					       (unsigned long long)ino->ino)
				    : r;
	if (size < sizeof(*ii)) {
		ref_path_release(fs, &p);
		return ref_fail(fs, EUCLEAN, "inode item %llu too small", (unsigned long long)ino->ino);
	}
	memcpy(ii, d, sizeof(*ii));
	ref_path_release(fs, &p);
	return 0;
}

int inode_write(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii)
{
	if (vfs_is_standin(ino)) /* callers refuse first: this is a bug's safety net */
		return ref_fail(fs, EUCLEAN, "a snapshot's stand-in for a subvolume has no inode item");
	struct rw_tree *t;
	int r = rw_tree_get(fs, ino->subvol, &t);
	if (r)
		return r;
	ii->transid = htole64(fs->rw->transid);
	ii->sequence = htole64(LE64(ii->sequence) + 1);
	struct ref_path p;
	struct ref_key k = inode_key(ino->ino);
	if ((r = bt_lookup_cow(fs, t, &k, &p)))
		return r == -ENOENT ? ref_fail(fs, ENOENT, "inode %llu not found",
					       (unsigned long long)ino->ino)
				    : r;
	memcpy(bt_item(&p, NULL), ii, sizeof(*ii));
	ref_path_release(fs, &p);
	return 0;
}

void inode_touch(ref_fs *fs, struct btrfs_inode_item *ii, bool mtime, bool ctime)
{
	if (mtime)
		vfs_now(fs, &ii->mtime);
	if (ctime)
		vfs_now(fs, &ii->ctime);
}

uint32_t inode_mode(const struct btrfs_inode_item *ii)
{
	return LE32(ii->mode);
}

uint8_t mode_to_ft(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return BTRFS_FT_REG_FILE;
	case S_IFDIR: return BTRFS_FT_DIR;
	case S_IFLNK: return BTRFS_FT_SYMLINK;
	case S_IFCHR: return BTRFS_FT_CHRDEV;
	case S_IFBLK: return BTRFS_FT_BLKDEV;
	case S_IFIFO: return BTRFS_FT_FIFO;
	case S_IFSOCK: return BTRFS_FT_SOCK;
	default: return BTRFS_FT_UNKNOWN;
	}
}

int inode_numbers_known(ref_fs *fs, struct rw_tree *t)
{
	if (!t->next_ino) {
		struct ref_path p;
		struct ref_key k = { BTRFS_LAST_FREE_OBJECTID, 0xff, UINT64_MAX };
		int r = ref_search_le(fs, &t->root, &k, &p);
		if (r < 0)
			return r;
		uint64_t high = BTRFS_FIRST_FREE_OBJECTID;
		if (r == 0) {
			const uint8_t *d;
			uint32_t size;
			ref_path_item(&p, &k, &d, &size);
			ref_path_release(fs, &p);
			if (k.objectid > high)
				high = k.objectid;
		}
		t->next_ino = high + 1;
	}
	return 0;
}

/* The next free inode number of a subvolume. */
static int next_ino(ref_fs *fs, struct rw_tree *t, uint64_t *out)
{
	int r = inode_numbers_known(fs, t);
	if (r)
		return r;
	if (t->next_ino > BTRFS_LAST_FREE_OBJECTID)
		return ref_fail(fs, ENOSPC, "no inode numbers left");
	*out = t->next_ino++;
	return 0;
}

int inode_create(ref_fs *fs, uint64_t subvol, uint32_t mode, struct ref_ino *out,
		 struct btrfs_inode_item *ii)
{
	struct rw_tree *t;
	int r = rw_tree_get(fs, subvol, &t);
	if (r)
		return r;
	uint64_t ino = 0;
	if ((r = next_ino(fs, t, &ino)))
		return r;
	memset(ii, 0, sizeof(*ii));
	ii->generation = htole64(fs->rw->transid);
	ii->transid = htole64(fs->rw->transid);
	ii->nlink = htole32(1);
	ii->mode = htole32(mode);
	vfs_now(fs, &ii->atime);
	ii->ctime = ii->mtime = ii->otime = ii->atime;
	struct ref_key k = inode_key(ino);
	if ((r = bt_insert_data(fs, t, &k, ii, sizeof(*ii))))
		return r == -EEXIST ? ref_fail(fs, EUCLEAN, "inode %llu exists already",
					       (unsigned long long)ino)
				    : r;
	*out = (struct ref_ino){ subvol, ino };
	return 0;
}

int inode_drop(ref_fs *fs, const struct ref_ino *ino)
{
	uint64_t freed;
	int r = file_drop_extents(fs, ino, 0, UINT64_MAX, &freed);
	if (r)
		return r;
	struct rw_tree *t;
	if ((r = rw_tree_get(fs, ino->subvol, &t)))
		return r;
	for (;;) { /* every remaining item of the inode, a leaf's worth at a time */
		struct ref_path p;
		struct ref_key k = { ino->ino, 0, 0 };
		if ((r = ref_search(fs, &t->root, &k, &p)) < 0)
			return r;
		if (r == 1)
			return 0;
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		ref_path_release(fs, &p);
		if (k.objectid != ino->ino)
			return 0;
		if ((r = bt_search(fs, t, &k, &p, -1, true)) < 0)
			return r;
		uint8_t *leaf = p.blk[0]->data;
		int slot = p.slot[0], n = 0;
		while (slot + n < (int)blk_nritems(leaf)) {
			struct ref_key ik;
			blk_key(leaf, slot + n, &ik);
			if (ik.objectid != ino->ino)
				break;
			n++;
		}
		if ((r = bt_delete(fs, t, &p, n)))
			return r;
	}
}
