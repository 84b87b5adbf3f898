/*
 * reloc_recover.c - a balance or device removal interrupted mid-relocation,
 * dealt with before the first change of a mount for writing, where the
 * kernel's btrfs_recover_relocation runs at mount.
 *
 * What such a crash leaves: a relocation tree per subvolume whose blocks
 * moved (root items TREE_RELOC ROOT_ITEM <subvolume>; copies of the
 * subvolume's tree, full back references throughout, blocks marked
 * HEADER_FLAG_RELOC, file extents pointing at the moved data), the data
 * relocation tree's inode holding the moved copies of data (with an orphan
 * item), and the balance item.  At every commit the subvolume's own tree
 * is whole: merging swaps whole subtrees between the two, each side a
 * complete tree, and the moved copies are never the only ones.
 *
 * The kernel merges each relocation tree into its subvolume (the subvolume
 * then points at the copies) and drops it.  ref cleans up instead: each
 * relocation tree is dropped whole, as the kernel drops a merged one, and
 * the data relocation inode goes with the orphan cleanup (orphan.c), which
 * frees the copies.  The files read the same either way; what differs is
 * only where their blocks lie.  The balance item stays: the block group
 * is relocated again by `btrsim balance resume`, or by the kernel's next
 * mount, which resumes the balance.
 */
#include "ref/grow.h"
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <stdlib.h>

/* The subvolumes that have a relocation tree, from the root tree. */
static int reloc_subvols(ref_fs *fs, uint64_t **ids, size_t *n)
{
	struct ref_root rt;
	int r = ref_find_root(fs, BTRFS_ROOT_TREE_OBJECTID, &rt);
	if (r)
		return r;
	struct ref_path p;
	struct ref_key k = { BTRFS_TREE_RELOC_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0 };
	size_t cap = 0;
	int s = ref_search(fs, &rt, &k, &p);
	while (s == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid != BTRFS_TREE_RELOC_OBJECTID || k.type != BTRFS_ROOT_ITEM_KEY) {
			ref_path_release(fs, &p);
			break;
		}
		if (GROW(*ids, *n, cap)) {
			ref_path_release(fs, &p);
			return -ENOMEM;
		}
		(*ids)[(*n)++] = k.offset;
		s = ref_next(fs, &p);
	}
	return s < 0 ? s : 0;
}

int reloc_recover(ref_fs *fs)
{
	uint64_t *ids = NULL;
	size_t n = 0;
	int r = reloc_subvols(fs, &ids, &n);
	for (size_t i = 0; !r && i < n; i++) {
		r = vfs_begin(fs, 16, true);
		if (!r && !(r = cleaner_drop_reloc(fs, ids[i])))
			fs->rw->relocs_dropped++;
		r = vfs_end(fs, r);
	}
	free(ids);
	return r;
}
