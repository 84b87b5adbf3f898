/*
 * extents.h - what `du` and `filefrag` share: their operands (images, then
 * paths), paths walked as open(2) walks them, and a file's EXTENT_DATA items
 * as they lie in its subvolume tree.
 */
#ifndef BTRSIM_CLI_EXTENTS_H
#define BTRSIM_CLI_EXTENTS_H

#include "cli/image.h"

/*
 * Splits the operands IMG... PATH... (n >= 2): the first is always an image
 * and the last always a path; in between, the leading operands that name a
 * host file holding a Btrfs superblock (its magic at 64 KiB) are images too.
 * Returns how many images there are.
 */
int cli_split_operands(char **ops, int n);

/*
 * PATH from the top-level subvolume, walked by ref_lookup_path and
 * ref_stat_path (ref/vfs.h) as open(2) walks it: symlinks
 * followed in the middle of the path, and at its end too when `follow`
 * (O_NOFOLLOW otherwise: *out is then the symlink itself), at most 40 of them
 * (ELOOP); '.' and '..' as Linux has them; a path ending in '/' must name a
 * directory.  Returns 0 with the inode and its stat, or -errno; *detail is
 * then ref_error() when ref said why (a damaged image) or NULL when the errno
 * says it all (ENOENT, ENOTDIR, ELOOP, ENAMETOOLONG).
 */
int cli_path_walk(ref_fs *fs, const char *path, bool follow, struct ref_ino *out,
		  struct ref_stat *st, const char **detail);

/* Prints "btrsim NAME: PATH: ENAME (text)[: detail]" on stderr; returns 1. */
int cli_path_fail(const struct cli_cmd *cmd, const char *path, int err, const char *detail);

/* One EXTENT_DATA item of a file, as it lies in its leaf. */
struct cli_fext {
	uint64_t file_off;  /* the key's offset */
	uint32_t item_size; /* the item's data size (inline: 21 + the payload) */
	uint8_t type;       /* BTRFS_FILE_EXTENT_INLINE, _REG or _PREALLOC */
	uint8_t compression;
	uint64_t generation, ram_bytes;
	/* Regular and preallocated extents only (0 for inline ones). */
	uint64_t disk_bytenr, disk_num_bytes, offset, num_bytes;
	const struct ref_path *path; /* the item's leaf and the blocks above it, during the call */
};

/* Called for each item in key order: 0 goes on; anything else stops the walk
 * and is returned. */
typedef int (*cli_fext_fn)(void *ctx, const struct cli_fext *e);

/*
 * The EXTENT_DATA items of ino, in key order.  Returns 0, fn's non-zero
 * return, or -errno with the reason in err (ref's, or an item too short for
 * its type: EUCLEAN).
 */
int cli_file_extents(ref_fs *fs, const struct ref_ino *ino, cli_fext_fn fn, void *ctx, char *err,
		     size_t errlen);

#endif
