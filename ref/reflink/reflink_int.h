/*
 * reflink_int.h - what the files of ref/reflink/ share (ref/ only): the
 * checks Linux 6.18 makes of a clone or dedupe range (fs/remap_range.c's
 * generic_remap_checks and generic_remap_check_len) and the remap itself
 * (fs/btrfs/reflink.c's btrfs_clone): the destination range's extents
 * dropped and file extent items added that point at the source's extents.
 */
#ifndef BTRSIM_REF_REFLINK_INT_H
#define BTRSIM_REF_REFLINK_INT_H

#include "ref/vfs/vfs_int.h"

/* One side of a remap: the inode and its item as read at the start. */
struct rl_file {
	const char *path; /* for messages */
	struct ref_ino ino;
	struct btrfs_inode_item ii;
};

/* Reads the inode item of f->ino into f->ii. */
int rl_read(ref_fs *fs, struct rl_file *f);

/* remap_verify_area for one side: an offset or length at or past 2^63, or
 * an end past it, is EINVAL. */
int rl_verify_area(ref_fs *fs, const struct rl_file *f, uint64_t pos, uint64_t len);

/* The checks both calls make after the files are known to be regular: a
 * NODATASUM flag on one side only (EINVAL) and an immutable destination
 * (EPERM). */
int rl_flags_check(ref_fs *fs, const struct rl_file *src, const struct rl_file *dst);

/*
 * generic_remap_checks: offsets aligned to the sector, the source range
 * inside the source (a dedupe's destination range inside the destination),
 * *len cut to the source's end, a range ending at the source's end (and, for
 * a dedupe, at the destination's) taken up to a whole sector, any other
 * rounded down to whole sectors; ranges of one file that overlap refused.
 * A clone that would be shortened is EINVAL; a dedupe is shortened: *len
 * becomes the bytes remapped, *blen the sector-aligned length the extents
 * are remapped over.  0 or -EINVAL/-EFBIG with a message.
 */
int rl_range_checks(ref_fs *fs, const struct rl_file *src, uint64_t soff, const struct rl_file *dst,
		    uint64_t doff, uint64_t *len, uint64_t *blen, bool dedupe);

/*
 * The remap (inside a transaction, checks done): dst's extents over [doff,
 * doff + blen) dropped and the source's over [soff, soff + blen) referenced
 * there (holes stay holes, preallocated extents stay preallocated,
 * compressed ones stay compressed); an inline source extent copied as the
 * kernel's clone_copy_inline_extent does.  dst's size becomes at least doff
 * + len; a clone sets its mtime and ctime, a dedupe leaves them.  dst->ii is
 * written back.
 */
int rl_remap(ref_fs *fs, struct rl_file *src, uint64_t soff, struct rl_file *dst, uint64_t doff,
	     uint64_t len, uint64_t blen, bool dedupe);

/* Metadata items a remap of blen bytes from src may touch (for vfs_begin):
 * counted from the source's extents in the range. */
int rl_items(ref_fs *fs, const struct rl_file *src, uint64_t soff, uint64_t blen, unsigned *items);

#endif
