/*
 * compress_int.h - compression on the write path, shared by ref/compress/
 * and the data writes of ref/vfs/write.c (ref/ only):
 *   compress_prop.c       the btrfs.compression property, the inode flags
 *                         c (COMPRESS) and m (NOCOMPRESS), their inheritance
 *   compress_heuristic.c  the kernel's btrfs_compress_heuristic
 *   compress_write.c      what a write compresses: inode_need_compress and
 *                         compress_file_range of Linux 6.18
 */
#ifndef BTRSIM_REF_COMPRESS_INT_H
#define BTRSIM_REF_COMPRESS_INT_H

#include "ref/compress.h"
#include "ref/rw.h"

#include <stdbool.h>

/* rw_state.defrag_compress of a defragmentation with --nocomp */
#define REF_DEFRAG_NOCOMP 0xff
#define CW_CHUNK (UINT64_C(512) * 1024) /* the kernel's async chunk (run_delalloc_compressed) */

/* What writes to one inode may compress with, as the kernel's in-memory
 * inode knows it (flags, prop_compress) with the mount's options and a
 * running defragmentation's choice. */
struct cw_plan {
	uint8_t type; /* the algorithm a compression would use; 0: never compress */
	int level;    /* 0: the algorithm's default */
	bool force;   /* the mount's compress-force: no heuristic, NOCOMPRESS ignored and never set */
	bool defrag;  /* a defragmentation with -c: no heuristic, NOCOMPRESS ignored */
	bool prop;    /* the inode has a compression property: NOCOMPRESS never set */
};

/* compress_prop.c */
/* The property's algorithm from the inode's btrfs.compression xattr
 * (prop_compress: 0 when there is none, or it says no/none). */
int cw_prop_type(ref_fs *fs, const struct ref_ino *ino, uint8_t *type);
/* setxattr or (len 0) removexattr of a btrfs. name, as the kernel's
 * btrfs_set_prop: validated, stored, ii's flags updated (the caller writes
 * ii).  flags: XATTR_CREATE / XATTR_REPLACE. */
int cw_prop_set(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
		const char *name, const void *value, size_t len, int flags);
/* A new inode ino (item ii, in directory dir with item dii) takes the
 * directory's flags and property (btrfs_inherit_iflags,
 * btrfs_inode_inherit_props); ii is written. */
int cw_inherit(ref_fs *fs, const struct ref_ino *dir, const struct btrfs_inode_item *dii,
	       const struct ref_ino *ino, struct btrfs_inode_item *ii);
/* FS_IOC_GETFLAGS / FS_IOC_SETFLAGS (FS_*_FL) over ii's flags; setting
 * changes c and m only (ii updated, the caller writes it). */
int cw_getflags(const struct btrfs_inode_item *ii, uint32_t *fsflags);
int cw_setflags(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
		uint32_t fsflags);
/* The incompat bit a type needs (lzo, zstd) set in the superblock. */
void cw_need_incompat(ref_fs *fs, uint8_t type);

/* compress_heuristic.c: btrfs_compress_heuristic over the first 128 KiB of
 * data[0, len) (data starting at a sector boundary). */
bool cw_heuristic(const uint8_t *data, uint64_t len);

/* compress_write.c */
/* The plan for a write to this inode (ii: its item as it is now). */
int cw_plan_for(ref_fs *fs, const struct ref_ino *ino, const struct btrfs_inode_item *ii,
		struct cw_plan *p);
/* New extents for sector-aligned data at file offset `at` (where the file
 * has none now), as the kernel's writeback of that dirty range makes them
 * with p->type set: ranges of up to 128 MiB, compressed in pieces of up to
 * 128 KiB within chunks of 512 KiB where the heuristic and the savings allow,
 * the rest plain; ii->flags may gain NOCOMPRESS.  isize: the file's size
 * after the write, disk_isize before it. */
int cw_write(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
	     const struct cw_plan *p, uint64_t at, const uint8_t *data, uint64_t len,
	     uint64_t isize, uint64_t disk_isize);
/* A file of newsize <= sectorsize bytes written whole from offset 0 (data: a
 * sector): the encoding of a compressed inline extent in enc (returns its
 * size), or 0 when the file is to be stored plain (ii->flags may gain
 * NOCOMPRESS), or a negative errno. */
ssize_t cw_small(ref_fs *fs, struct btrfs_inode_item *ii, const struct cw_plan *p,
		 const uint8_t *data, uint64_t newsize, uint64_t disk_isize, uint8_t *enc,
		 size_t cap);

#endif
