/*
 * statfs.c - statfs(2) of a btrfs, as Linux 6.18's btrfs_statfs counts it:
 * blocks are the volume's size in the data profile's copies, free blocks
 * that less every block group's used bytes (in the same copies), available
 * blocks the data block groups' free bytes plus the space no chunk holds
 * yet, also in data copies; f_files and f_ffree 0 (btrfs has no inode
 * table).  Two simplifications against the kernel: the unallocated space
 * is counted whole, where btrfs_calc_avail_data_space fits the profile's
 * stripes onto the devices, and the global reserve is not taken off.
 */
#include "ref/rw.h"

#include <errno.h>

/* The kernel's btrfs_bg_type_to_factor: the copies a profile keeps. */
static uint64_t copies(uint64_t type)
{
	if (type & BTRFS_BLOCK_GROUP_RAID1C4)
		return 4;
	if (type & BTRFS_BLOCK_GROUP_RAID1C3)
		return 3;
	if (type & (BTRFS_BLOCK_GROUP_DUP | BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_RAID10))
		return 2;
	return 1;
}

/* A block group's used bytes: the write path's count when mounted for
 * writing (it follows the running transaction), else its item's. */
static int bg_used(ref_fs *fs, const struct ref_root *bgroot, const struct ref_chunk *c,
		   uint64_t *used)
{
	if (fs->rw) {
		struct rw_bg *bg = rw_bg_find(fs, c->logical);
		*used = bg ? bg->used : 0;
		return 0;
	}
	struct ref_path p;
	struct ref_key k;
	const uint8_t *d;
	uint32_t size;
	int r = ref_find_first(fs, bgroot, c->logical, BTRFS_BLOCK_GROUP_ITEM_KEY, &p, &k, &d, &size);
	if (r)
		return r == -ENOENT ? ref_fail(fs, EUCLEAN, "chunk %llu has no block group item",
					       (unsigned long long)c->logical)
				    : r;
	*used = size >= 8 ? le64(d) : 0;
	ref_path_release(fs, &p);
	return 0;
}

int ref_statfs(ref_fs *fs, struct ref_statfs *out)
{
	bool bgtree = LE64(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE;
	struct ref_root bgroot;
	int r = ref_find_root(fs, bgtree ? BTRFS_BLOCK_GROUP_TREE_OBJECTID : BTRFS_EXTENT_TREE_OBJECTID,
			      &bgroot);
	if (r)
		return r;
	uint64_t factor = 1, used_disk = 0, data_total = 0, data_used = 0, allocated = 0;
	for (size_t i = 0; i < fs->nchunks; i++) {
		const struct ref_chunk *c = &fs->chunks[i];
		uint64_t used = 0, f = copies(c->type);
		if ((r = bg_used(fs, &bgroot, c, &used)))
			return r;
		used_disk += used * f;
		allocated += chunk_stripe_bytes(c->type, c->length, c->num_stripes) * c->num_stripes;
		if (c->type & BTRFS_BLOCK_GROUP_DATA) {
			factor = f;
			data_total += c->length * f;
			data_used += used * f;
		}
	}
	uint64_t total = LE64(fs->sb.total_bytes), bits = fs->sectorsize;
	uint64_t unalloc = total > allocated ? total - allocated : 0;
	*out = (struct ref_statfs){ .bsize = fs->sectorsize, .namelen = BTRFS_NAME_LEN };
	out->blocks = total / factor / bits;
	uint64_t used_blocks = used_disk / factor / bits;
	out->bfree = out->blocks > used_blocks ? out->blocks - used_blocks : 0;
	out->bavail = ((data_total - data_used) / factor + unalloc / factor) / bits;
	if (out->bavail > out->bfree)
		out->bavail = out->bfree;
	return 0;
}
