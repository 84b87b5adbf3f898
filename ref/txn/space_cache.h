/*
 * space_cache.h - the v1 space cache, read: the free-space files the kernel
 * keeps per block group when mounted with space_cache=v1 (the default before
 * the free-space tree), which `btrfs check` compares with the extent tree.
 * Each is a FREE_SPACE item of the root tree (key FREE_SPACE_OBJECTID, 0,
 * the group's start) naming an inode of the root tree whose data holds the
 * group's free ranges as the kernel's io_ctl writes them (space_cache.c).
 * Callers: the checker (check_fst.c) and the write path, which converts such
 * a file system to the free-space tree (fst_convert.c).
 */
#ifndef BTRSIM_REF_SPACE_CACHE_H
#define BTRSIM_REF_SPACE_CACHE_H

#include "ref/ref.h"

#include <stddef.h>
#include <stdint.h>

/* One cache file, from its FREE_SPACE item. */
struct sc_file {
	uint64_t group;	     /* the block group's start (the key's offset) */
	uint64_t ino;	     /* the inode in the root tree (the header's location) */
	uint64_t generation; /* the header's */
	uint64_t num_entries, num_bitmaps;
};

/* A free range [start, end). */
struct sc_range {
	uint64_t start, end;
};

/* Every FREE_SPACE item of the root tree, in key order: 0 (*out malloc'd,
 * NULL when there is none) or -errno (a malformed item: EUCLEAN). */
int space_cache_files(ref_fs *fs, struct sc_file **out, size_t *n);

/*
 * Loads the free ranges of file f (sorted, adjacent ones merged) as the
 * kernel's __load_free_space_cache does: 1 loaded; 0 when the kernel would
 * not load it (no entries, the inode's generation or the first page's not
 * the header's, a page's crc32c wrong, an entry malformed), with the reason
 * in why; -errno when reading failed.
 */
int space_cache_load(ref_fs *fs, const struct sc_file *f, struct sc_range **out, size_t *n,
		     char *why, size_t whylen);

#endif
