/*
 * log_write.h - the fsync log of the running transaction (ref/ only):
 * log_write.c keeps, per subvolume, the items fsync logged since the last
 * commit, and writes them as log trees at each log sync.
 */
#ifndef BTRSIM_REF_LOG_WRITE_H
#define BTRSIM_REF_LOG_WRITE_H

#include "ref/grow.h"
#include "ref/vfs/vfs_int.h"

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

/* What this transaction did to one inode that logging must know: the
 * kernel's logged_trans and last_unlink_trans, for the running transaction
 * (the whole table goes with the commit). */
struct log_ino {
	uint64_t subvol, ino;
	bool logged;   /* logged, whole or "exists only", by a sync of this transaction */
	bool unlinked; /* last_unlink_trans: a name removed, moved or added (log_names.c) */
	bool moved;    /* renamed in this transaction */
	bool xattrs;   /* xattrs changed since it was logged (BTRFS_INODE_COPY_EVERYTHING) */
	/* The inode item's sequence + 1 when a sync of its own fsync logged it
	 * whole (0: never): unchanged since, a new fsync has nothing to log. */
	uint64_t synced_seq;
	size_t same_ino; /* the next entry with this inode number (another subvolume's): index + 1, 0 none */
};

struct log_state {
	struct log_sub *subs;
	size_t nsubs, subs_cap;
	struct log_ino *inos;
	size_t ninos, inos_cap;
	struct u64map ino_idx; /* inode number -> the last entry's index + 1 (a transaction may note many) */
	/* The inodes the running fsync logged (log_conflicts.c checks their names). */
	struct ref_ino *this_sync;
	size_t nthis, this_cap;

	/* Blocks of the log syncs of this transaction: out of free space until
	 * the commit makes them obsolete. */
	uint64_t *blocks;
	size_t nblocks, blocks_cap;
};

/* The state kept for an inode in this transaction; NULL when none (or, with
 * create, out of memory). */
struct log_ino *log_ino_get(ref_fs *fs, const struct ref_ino *in, bool create);

/* log_conflicts.c: the inodes whose names of the last commit the running
 * fsync logged for others, logged too (btrfs_check_ref_name_override,
 * log_conflicting_inodes): 0, 1 with *why when the fsync must commit, or
 * -errno. */
int log_conflicts(ref_fs *fs, struct log_sub *s, const struct ref_ino *fsynced, enum ref_log_full *why);

/* An xattr of in was set or removed: logging it "exists only" again is
 * not a no-op any more (the kernel's need_log_inode). */
void log_note_xattr(ref_fs *fs, const struct ref_ino *in);

/* log_names.c: the kernel's bookkeeping when names change under a log
 * (btrfs_record_unlink_dir, btrfs_log_new_name, the del_*_in_log calls). */
void log_note_unlink(ref_fs *fs, const struct ref_ino *dir, const struct ref_ino *target,
		     bool for_rename);
void log_note_removed(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
		      uint64_t index, const struct ref_ino *target);
void log_note_new_name(ref_fs *fs, const struct ref_ino *target, uint8_t type,
		       const struct ref_ino *old_dir, uint64_t old_index);
void log_note_rmdir(ref_fs *fs, const struct ref_ino *dir, const struct ref_ino *child);
void log_note_dir_changed(ref_fs *fs, const struct ref_ino *dir);
void log_note_must_commit(ref_fs *fs, enum ref_log_full why);

/* ---- Shared by log_write.c and log_dir.c ---- */

/* Calls fn on each item of an inode with a key type in [lo, hi], in key
 * order, until it returns non-zero: 0, or fn's negative errno.  _in: in
 * the tree at root (a commit root too). */
typedef int (*item_fn)(void *ctx, const struct ref_key *k, const uint8_t *d, uint32_t size);
int log_each_item(ref_fs *fs, const struct ref_ino *in, uint8_t lo, uint8_t hi, item_fn fn,
		  void *ctx);
int log_each_item_in(ref_fs *fs, const struct ref_root *root, uint64_t ino, uint8_t lo,
		     uint8_t hi, item_fn fn, void *ctx);
/* Copies the items of in with key types in [lo, hi] that keep() (NULL: all) accepts. */
typedef bool (*keep_fn)(ref_fs *fs, const struct btrfs_inode_item *ii, const struct ref_key *k,
			const uint8_t *d, uint32_t size);
int log_copy_items(ref_fs *fs, struct log_sub *s, const struct ref_ino *in, uint8_t lo,
		   uint8_t hi, const struct btrfs_inode_item *ii, keep_fn keep);
int log_sub_add(ref_fs *fs, struct log_sub *s, const struct ref_key *k, const void *data,
		uint32_t size);
/* Drops every logged item of ino with a key type up to upto. */
void log_sub_forget(struct log_sub *s, uint64_t ino, uint8_t upto);
/* The logged item at exactly k; NULL when none. */
struct log_item *log_sub_find(struct log_sub *s, const struct ref_key *k);
/* Drops one logged item (the last takes its place: items are unsorted). */
void log_sub_drop(struct log_sub *s, struct log_item *it);
/* The log of a subvolume in this transaction, made when there is none;
 * NULL out of memory. */
struct log_sub *log_sub_get(ref_fs *fs, uint64_t subvol);
/* The inode item as the log holds it (exists_only: generation 0). */
int log_inode_item(ref_fs *fs, struct log_sub *s, const struct ref_ino *in,
		   const struct btrfs_inode_item *ii, bool exists_only);
/* 1 when in cannot be logged: a snapshot's stand-in for a subvolume (no
 * inode item), or in a read-only subvolume (replay could not write it);
 * the fsync commits, as where the kernel's log would hold a subvolume. */
int log_unloggable(ref_fs *fs, const struct ref_ino *in);
/* Notes in as logged in this transaction (the kernel's logged_trans). */
int log_mark_logged(ref_fs *fs, const struct ref_ino *in);
/* The kernel's LOG_INODE_EXISTS: item, names, xattrs (nothing if logged whole). */
int log_exists(ref_fs *fs, struct log_sub *s, const struct ref_ino *in);
/* A file's LOG_INODE_ALL: item, names, xattrs, this transaction's extents, holes. */
int log_inode_all(ref_fs *fs, struct log_sub *s, const struct ref_ino *in,
		  const struct btrfs_inode_item *ii);
/* Each directory above in's names that this transaction made, "exists
 * only" (the kernel's log_all_new_ancestors); 1 (with *why) when one above
 * was moved in this transaction: ref commits, where the kernel's replay
 * would bring the names below it back under its old name. */
int log_new_ancestors(ref_fs *fs, struct log_sub *s, const struct ref_ino *in,
		      enum ref_log_full *why);
/* The parent directories of in's names, in the running transaction's tree
 * or (commit) the last commit's; *out malloc'd. */
int log_parents_of(ref_fs *fs, const struct ref_ino *in, bool commit, uint64_t **out, size_t *n);

/* log_dir.c: a directory whole (LOG_INODE_ALL): its item, names, xattrs, the
 * DIR_INDEX items this transaction made with DIR_LOG_INDEX ranges over what
 * it removed, and the inodes of the new entries (directories whole, others
 * "exists only").  1 (with *why) when the kernel would commit instead. */
int log_dir_all(ref_fs *fs, struct log_sub *s, const struct ref_ino *dir, enum ref_log_full *why);
/* The kernel's btrfs_log_all_parents: each directory that held a name of in
 * at the last commit and changed since, logged whole (replay then drops the
 * names in lost).  1 (with *why) when the kernel would commit instead. */
int log_all_parents(ref_fs *fs, struct log_sub *s, const struct ref_ino *in, enum ref_log_full *why);

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
