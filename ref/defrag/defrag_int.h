/*
 * defrag_int.h - what the files of ref/defrag/ share (ref/ only):
 *   defrag.c       a file's ranges judged and rewritten (btrfs_defrag_file)
 *   defrag_tree.c  a subvolume's tree leaves copied anew (btrfs_defrag_root)
 */
#ifndef BTRSIM_REF_DEFRAG_INT_H
#define BTRSIM_REF_DEFRAG_INT_H

#include "ref/rw.h"

struct defrag_range {
	uint64_t start, end;
};
struct defrag_targets {
	struct defrag_range *v;
	size_t n, cap;
};

/* The ranges of [start, last_byte) a defragmentation rewrites, judged
 * cluster by cluster on the file's extents as they are now. */
int defrag_targets(ref_fs *fs, const struct ref_ino *ino, uint64_t start, uint64_t last_byte,
		   uint64_t isize, uint64_t thresh, bool every, struct defrag_targets *out);

/* The leaves of subvolume `subvol`'s tree more than 32 KiB away from both
 * neighbours under their parent, COWed to new places. */
int defrag_tree(ref_fs *fs, uint64_t subvol);

#endif
