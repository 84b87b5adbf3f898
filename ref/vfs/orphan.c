/*
 * orphan.c - the kernel's orphan cleanup (btrfs_orphan_cleanup) at a mount
 * for writing: a file unlinked while a process still had it open keeps its
 * inode, with no name, and an ORPHAN_ITEM (key ORPHAN_OBJECTID ORPHAN_ITEM
 * ino) in its subvolume's tree until the last close; power lost before then
 * leaves both on disk.  Before the first change of a mount for writing
 * (vfs_begin), each writable subvolume's orphans are dealt with as the
 * kernel's orphan cleanup of a root before its first use does: an inode without links is deleted with its data
 * (its extents freed at the commit), an orphan item whose inode is gone or
 * still linked (a truncate the kernel had not finished) is removed.  Deleted
 * subvolumes' orphan items, in the root tree, are the cleaner's (cleaner.c).
 */
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <stdlib.h>

/* The first orphan item of tree t: 0 with its inode number, 1 when none. */
static int first_orphan(ref_fs *fs, struct rw_tree *t, uint64_t *ino)
{
	struct ref_key k = { BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, 0 }, got;
	uint32_t size;
	int r = bt_peek(fs, &t->root, &k, false, &got, &size);
	if (r)
		return r;
	if (got.objectid != BTRFS_ORPHAN_OBJECTID || got.type != BTRFS_ORPHAN_ITEM_KEY)
		return 1;
	*ino = got.offset;
	return 0;
}

static int clean_one(ref_fs *fs, struct rw_tree *t, uint64_t subvol, uint64_t ino)
{
	int r = vfs_begin(fs, 16, true);
	struct ref_ino in = { subvol, ino };
	struct btrfs_inode_item ii;
	int got = r ? r : inode_read(fs, &in, &ii);
	if (!r && got && got != -ENOENT)
		r = got;
	if (!r && !got && LE32(ii.nlink) == 0)
		r = inode_drop(fs, &in);
	struct ref_key k = { BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, ino };
	if (!r)
		r = bt_delete_key(fs, t, &k);
	if (!r)
		fs->rw->orphans_cleaned++;
	return vfs_end(fs, r);
}

int orphan_cleanup(ref_fs *fs)
{
	uint64_t *ids = NULL;
	size_t n = 0;
	int r = ref_subvol_ids(fs, &ids, &n);
	/* then the top level, and the data relocation tree, whose inode an
	 * interrupted balance left (reloc_recover.c) */
	for (size_t i = 0; !r && i <= n + 1; i++) {
		uint64_t id = i < n ? ids[i] : i == n ? BTRFS_FS_TREE_OBJECTID
						 : BTRFS_DATA_RELOC_TREE_OBJECTID;
		struct rw_tree *t;
		struct ref_root probe;
		if (id == BTRFS_DATA_RELOC_TREE_OBJECTID && ref_find_root(fs, id, &probe))
			continue; /* (images of old mkfs versions have none) */
		if ((r = rw_tree_get(fs, id, &t)) || t->rdonly)
			continue;
		/* Numbers of the inodes cleaned up are not given again (the
		 * kernel knew its highest before the cleanup). */
		if ((r = inode_numbers_known(fs, t)))
			break;
		uint64_t ino;
		/* A bound against an item that will not go (each pass removes one). */
		for (unsigned pass = 0; !r && pass < 1000000; pass++) {
			int f = first_orphan(fs, t, &ino);
			if (f) {
				r = f < 0 ? f : 0;
				break;
			}
			r = clean_one(fs, t, id, ino);
		}
	}
	free(ids);
	return r;
}
