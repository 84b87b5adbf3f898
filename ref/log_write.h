/*
 * log_write.h - the fsync log of the running transaction (ref/ only):
 * log_write.c keeps, per subvolume, the items fsync logged since the last
 * commit, and writes them as log trees at each log sync.
 */
#ifndef BTRSIM_REF_LOG_WRITE_H
#define BTRSIM_REF_LOG_WRITE_H

#include "ref/vfs_int.h"

/* More items than this in one transaction's log: fsync commits instead
 * (each log sync writes the whole log). */
#define LOG_MAX_ITEMS 20000

struct log_item {
	struct ref_key key;
	uint32_t size;
	uint8_t *data;
};

/* The logged items of one subvolume, unsorted (sorted when written). */
struct log_sub {
	uint64_t subvol;
	struct log_item *it;
	size_t n, cap;
};

struct log_state {
	struct log_sub *subs;
	size_t nsubs, subs_cap;
	/* Blocks of the log syncs of this transaction: out of free space until
	 * the commit makes them obsolete. */
	uint64_t *blocks;
	size_t nblocks, blocks_cap;
};

/* fsync and fdatasync of an inode: its log synced, or the transaction committed. */
int log_fsync(ref_fs *fs, const struct ref_ino *in);
/* After a commit: the log is obsolete, its blocks' space free again. */
void log_committed(ref_fs *fs);
void log_drop(ref_fs *fs);

/* alloc.c: a metadata block for the log, with no extent reference, never a
 * new chunk (-ENOSPC, no message); and its space back. */
int alloc_log_block(ref_fs *fs, uint64_t *bytenr);
void alloc_log_release(ref_fs *fs, uint64_t bytenr);

#endif
