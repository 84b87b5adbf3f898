/*
 * held.c - files open in a process (a FUSE mount's open files): a file
 * whose last name goes while it is open keeps its inode, with no links
 * and an ORPHAN_ITEM (ORPHAN_OBJECTID ORPHAN_ITEM ino) in its subvolume's
 * tree, as the kernel's btrfs_unlink_inode and btrfs_orphan_add leave it;
 * it is read, written and truncated through its inode until the last
 * close, which deletes it with its data and the orphan item, as the
 * kernel's btrfs_evict_inode.  Power lost before then leaves both on disk
 * for the next mount's orphan cleanup (orphan.c).  Directories are not
 * held: one removed while open is gone at once (its handle then reads
 * ENOENT where the kernel gives an empty directory).
 */
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

static struct rw_held *find(ref_fs *fs, const struct ref_ino *ino)
{
	struct rw_state *rw = fs->rw;
	for (size_t i = 0; rw && i < rw->nheld; i++)
		if (rw->held[i].ino.subvol == ino->subvol && rw->held[i].ino.ino == ino->ino)
			return &rw->held[i];
	return NULL;
}

bool vfs_held(ref_fs *fs, const struct ref_ino *ino)
{
	return find(fs, ino) != NULL;
}

int ref_hold(ref_fs *fs, const struct ref_ino *ino)
{
	struct rw_state *rw = fs->rw;
	if (!rw) /* mounted read-only: nothing is ever unlinked */
		return 0;
	struct rw_held *h = find(fs, ino);
	if (h) {
		h->count++;
		return 0;
	}
	if (rw->nheld == rw->held_cap) {
		size_t cap = rw->held_cap ? 2 * rw->held_cap : 16;
		struct rw_held *n = realloc(rw->held, cap * sizeof(*n));
		if (!n)
			return ref_fail(fs, ENOMEM, "out of memory");
		rw->held = n, rw->held_cap = cap;
	}
	rw->held[rw->nheld++] = (struct rw_held){ *ino, 1 };
	return 0;
}

int ref_release(ref_fs *fs, const struct ref_ino *ino)
{
	struct rw_held *h = find(fs, ino);
	if (!h || --h->count)
		return 0;
	bool orphaned = h->orphaned;
	*h = fs->rw->held[--fs->rw->nheld];
	if (!orphaned) /* (the common close: nothing to read) */
		return 0;
	struct btrfs_inode_item ii;
	int r = inode_read(fs, ino, &ii);
	if (r == -ENOENT || (!r && LE32(ii.nlink)))
		return 0;
	if (r)
		return r;
	/* The last close of a file without names: evicted. */
	struct rw_tree *t;
	if ((r = vfs_begin(fs, 16, true)) || (r = rw_tree_get(fs, ino->subvol, &t)))
		return vfs_end(fs, r);
	struct ref_key k = { BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, ino->ino };
	if (!(r = inode_drop(fs, ino)))
		r = bt_delete_key(fs, t, &k);
	return vfs_end(fs, r);
}

int held_orphan(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii)
{
	struct rw_tree *t;
	int r = rw_tree_get(fs, ino->subvol, &t);
	if (r)
		return r;
	find(fs, ino)->orphaned = true;
	ii->nlink = 0;
	inode_touch(fs, ii, false, true);
	struct ref_key k = { BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, ino->ino };
	if ((r = inode_write(fs, ino, ii)) || (r = bt_insert_data(fs, t, &k, NULL, 0)))
		return r;
	return 0;
}
