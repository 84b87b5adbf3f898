/*
 * wrutil.h - helpers for the write path's unit tests: a fresh file system on
 * a memory volume, mounted for writing; its verdicts from ref_check and from
 * `btrfs check --readonly` on a saved image; calls asserted to succeed.
 */
#ifndef BTRSIM_TESTS_UNIT_WRUTIL_H
#define BTRSIM_TESTS_UNIT_WRUTIL_H

#include "ref/vfs.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A memory volume of one disk of `mib` MiB with a new file system (nodesize
 * 16 KiB unless given), mounted. */
ref_fs *wu_fresh(sim_volume **vol, unsigned mib, uint32_t nodesize);
/* A memory volume of n disks of `mib` MiB each made with data and metadata
 * in the profiles given (BTRFS_BLOCK_GROUP_* bits; mkfs seed `seed`), not
 * mounted. */
sim_volume *wu_volume(unsigned n, unsigned mib, uint64_t data, uint64_t meta, uint64_t seed);
/* Files /f0 ... /f(nf-1) in the mounted file system: file f holds the first
 * len - f * shrink bytes of tu_pat(len, tag0 + f). */
void wu_write_files(ref_fs *fs, int nf, size_t len, size_t shrink, uint64_t tag0);
/* Asserts each of them reads back so (and no longer). */
void wu_expect_files(ref_fs *fs, int nf, size_t len, size_t shrink, uint64_t tag0);
/* Saves disks 0..n-1 of vol as d0.img, d1.img, ... in a new temporary
 * directory (returned; tu_rmdir it), their paths into paths[]. */
char *wu_save_images(sim_volume *vol, unsigned n, char **paths);
/* A volume of the images paths[i] whose bit i is set in `use` (writable
 * unless read_only). */
sim_volume *wu_open_images(char *const *paths, unsigned n, uint64_t use, bool read_only);
/* The logical address of the first data extent of the regular file at path
 * (its first EXTENT_DATA item must be a regular extent). */
uint64_t wu_file_extent(ref_fs *fs, const char *path);
/* Where the byte at file offset off of path lives: the disk address of its
 * extent plus its place in it (for an uncompressed extent, the byte's
 * logical address), 0 in a hole; *type (may be NULL) the item's type
 * (BTRFS_FILE_EXTENT_*), or 0xff in a hole.  Two files share that byte's
 * extent when both give the same value. */
uint64_t wu_extent_at(ref_fs *fs, const char *path, uint64_t off, uint8_t *type);
/* Asserts a call returned >= 0, printing ref_error on failure. */
#define WU_OK(fs, call)                                                                      \
	do {                                                                                 \
		long wu_r_ = (long)(call);                                                   \
		cr_assert(wu_r_ >= 0, "%s = %ld (%s): %s", #call, wu_r_,                     \
			  strerror((int)-wu_r_), ref_error(fs));                             \
	} while (0)
/* Asserts a call failed with -err. */
#define WU_ERR(fs, call, err)                                                                \
	do {                                                                                 \
		long wu_r_ = (long)(call);                                                   \
		cr_assert_eq(wu_r_, -(long)(err), "%s = %ld (%s), expected %s", #call, wu_r_, \
			     strerror((int)-wu_r_), #err);                                   \
	} while (0)
/* The manifest (traces/manifest.c, `btrsim manifest`) of what path leads to
 * (a final symlink followed), or of the whole tree from the top level when
 * path is NULL; with times when asked.  A malloc'd text. */
char *wu_manifest(ref_fs *fs, const char *path, bool times);
/* Opens the volume read-only and asserts ref_check finds nothing; then
 * saves disk 0 and asserts `btrfs check --readonly` agrees (when installed). */
void wu_expect_clean(sim_volume *vol);
/* The same check without btrfs check (fast, for loops). */
void wu_expect_ref_clean(sim_volume *vol);
/* Replays the first `upto` requests of a recorded IO log (writes and
 * flushes of 4 KiB sectors) on vol: the volume as they left it. */
void wu_replay(sim_volume *vol, const struct sim_io *log, size_t upto);
/* A copy of base with the first `upto` requests of log replayed, then power
 * lost (unflushed writes kept or dropped at random, some torn), asserted to
 * check clean (ref_check): what a crash at that request leaves. */
sim_volume *wu_crashed_copy(sim_volume *base, const struct sim_io *log, size_t upto);

#endif
