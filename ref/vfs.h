/*
 * vfs.h - the file-system API of the reference Btrfs: mounting a volume for
 * writing and the POSIX operations on it, with the errnos Linux gives.
 *
 * Paths are absolute within the top-level subvolume ("/a/b"); symlinks in
 * the middle of a path are followed, the last component as the matching
 * system call does.  Every call returns 0 (or a count) or a negative errno,
 * with one line in ref_error().  Each call is atomic: it changes the file
 * system entirely or not at all.  Changes become durable at a commit
 * (ref_sync, ref_umount, or when the dirty metadata outgrows its limit) or
 * when ref_fsync or ref_fdatasync syncs the fsync log tree (ref/log/log_write.c;
 * or commits, where the kernel's fsync would).  A write to a file opened
 * O_SYNC or O_DSYNC is ref_write then ref_fsync or ref_fdatasync, as Linux's
 * generic_write_sync does it.
 * Reading goes through ref.h (ref_stat, ref_pread, ref_readdir, ...), which
 * sees the uncommitted changes.
 */
#ifndef BTRSIM_REF_VFS_H
#define BTRSIM_REF_VFS_H

#include "ref/ref.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct ref_mount_opts {
	struct ref_open_opts open;
	/* Timestamps come from a clock that starts here (seconds since the
	 * epoch) and advances a microsecond per operation, so that runs are
	 * reproducible; 0 means 2025-01-01. */
	uint64_t clock_start;
	/* Nanoseconds past clock_start (< 10^9): commands give the real time, so
	 * that a change time set now is never before a modify time restored
	 * from a file written earlier in the same second (cp -a's order). */
	uint32_t clock_start_nsec;
	/* Dirty metadata that forces a commit (the cache bound); 0: 64 MiB. */
	uint64_t dirty_limit;
	/* fsync and fdatasync go through the log tree by default, as the
	 * kernel's (ref/log/log_write.c); notreelog: every fsync commits the
	 * transaction, as the kernel's -o notreelog. */
	bool notreelog;
	/* compress=ALG[:LEVEL] and compress-force=ALG[:LEVEL], as the kernel's
	 * mount options (ref/compress/): the algorithm (REF_COMPRESS_*, 0: off),
	 * its level (0: the algorithm's default) and force (every range is
	 * compressed without the heuristic, and a file whose data does not
	 * shrink is not marked NOCOMPRESS).  ref_compress_parse reads them. */
	uint8_t compress;
	int8_t compress_level;
	bool compress_force;
	/* Timestamps from the host's clock (CLOCK_REALTIME, never going back)
	 * instead of the reproducible one: a mount real programs use. */
	bool realtime;
};

/* Why an fsync committed the whole transaction instead of syncing the log. */
enum ref_log_full {
	REF_LOG_FULL_NOTREELOG,
	REF_LOG_FULL_NEW_CHUNK,    /* a chunk allocated in this transaction (the kernel's too) */
	REF_LOG_FULL_DIR_UNLINK,   /* a directory to log whole lost a name to a rename or was moved
				      (the kernel's last_unlink_trans), or one above was moved */
	REF_LOG_FULL_PARENT_GONE,  /* a parent directory of the last commit is gone (the kernel's too) */
	REF_LOG_FULL_SUBVOL,       /* a subvolume entry or root in what is logged (the kernel's too) */
	REF_LOG_FULL_NO_SPACE,     /* no metadata space for the log blocks */
	REF_LOG_FULL_TOO_BIG,      /* the transaction's log outgrew its bound */
	REF_LOG_FULL_ERROR,        /* writing the log failed: the kernel commits too */
	REF_LOG_FULL_CONFLICTS,    /* more than ten inodes had names the fsync logs (the kernel's too) */
	REF_LOG_FULL_NREASONS
};
const char *ref_log_full_reason(enum ref_log_full why);

struct ref_log_stats {
	uint64_t log_syncs;    /* fsyncs that wrote the log */
	uint64_t full_commits; /* fsyncs that committed instead */
	uint64_t full_by_reason[REF_LOG_FULL_NREASONS];
	/* fsyncs with nothing to do, no IO at all: the inode had not changed
	 * since the last commit, or since a log sync that logged it (the
	 * kernel's skip_inode_logging).  What they cover was durable before. */
	uint64_t skipped;
};
/* Counted since mount. */
void ref_log_stats(const ref_fs *fs, struct ref_log_stats *out);

/* Opens the file system for writing.  A file system that the write path
 * cannot keep correct (see ref/README.md) is refused with EROFS and the
 * reason.  After a crash nothing needs recovering: the last commit is whole. */
int ref_mount(sim_volume *vol, const struct ref_mount_opts *opts, ref_fs **out, char *err,
	      size_t errlen);
/* Commits and closes; returns the commit's result, -EIO when an earlier
 * failure had turned the file system read-only (the fs is closed anyway). */
int ref_umount(ref_fs *fs);
int ref_sync(ref_fs *fs);

/* True once a failure half-way through an operation or a commit turned the
 * mount read-only (every later change fails; ref_umount returns -EIO). */
bool ref_failed(const ref_fs *fs);

/* How many transactions were committed since mount. */
uint64_t ref_commits(const ref_fs *fs);

/* The file-creation mask, as a process's umask: new files, directories
 * and device nodes lose its bits, unless their directory has a default ACL
 * (which masks them instead, as in Linux); symlinks never.  0 at mount (the
 * modes given are used as they are).  Returns the mask it replaces. */
uint32_t ref_umask(ref_fs *fs, uint32_t mask);

/* Relative paths: where they start, as a process's working directory or
 * openat's dirfd (NULL: relative paths are refused again, as before the
 * first call).  "" names that inode itself, as AT_EMPTY_PATH does, whatever
 * its type (a symlink is not followed): a FUSE server, which is handed
 * inodes and single names, calls ref_chdir(fs, inode) then ref_write(fs,
 * "", ...) or ref_create(fs, "name", ...).  Absolute paths ignore it. */
void ref_chdir(ref_fs *fs, const struct ref_ino *at);
/* rename and link with a base for each path (NULL: ref_chdir's). */
int ref_renameat(ref_fs *fs, const struct ref_ino *olddir, const char *oldpath,
		 const struct ref_ino *newdir, const char *newpath, unsigned flags);
int ref_linkat(ref_fs *fs, const struct ref_ino *olddir, const char *oldpath,
	       const struct ref_ino *newdir, const char *newpath);
/* A file open in a process (ref/vfs/held.c): while held, its last name
 * going (unlink, rename over it) leaves the inode with no links and an
 * orphan item, as the kernel's; the last ref_release deletes it (a
 * transaction of its own; power lost before leaves the orphan to the next
 * mount's cleanup).  Held files keep working through their inode (ref_chdir
 * and ""); fsync of one without links does nothing, as the kernel's; link
 * to it is ENOENT.  No-ops on a read-only mount. */
int ref_hold(ref_fs *fs, const struct ref_ino *ino);
int ref_release(ref_fs *fs, const struct ref_ino *ino);

/* The owner of new files, directories, device nodes and symlinks, as a
 * process's fsuid and fsgid (a set-group-ID directory's group wins, as in
 * Linux); 0 and 0 at mount.  The caller is privileged all the same: ref
 * does not check permissions (a FUSE mount leaves that to the kernel). */
void ref_creds(ref_fs *fs, uint32_t uid, uint32_t gid);

/* Creates a regular file (open with O_CREAT | O_EXCL). */
int ref_create(ref_fs *fs, const char *path, uint32_t mode);
int ref_mkdir(ref_fs *fs, const char *path, uint32_t mode);
/* mknod(2): a fifo, socket, character or block device (dev as the C
 * library's dev_t, makedev(major, minor), at most 32 bits: EINVAL), or a
 * regular file; a directory is EPERM. */
int ref_mknod(ref_fs *fs, const char *path, uint32_t mode, uint64_t dev);
int ref_symlink(ref_fs *fs, const char *target, const char *path);
int ref_link(ref_fs *fs, const char *oldpath, const char *newpath);
int ref_unlink(ref_fs *fs, const char *path);
int ref_rmdir(ref_fs *fs, const char *path);
/* flags: 0, RENAME_NOREPLACE or RENAME_EXCHANGE (<linux/fs.h> values). */
int ref_rename(ref_fs *fs, const char *oldpath, const char *newpath, unsigned flags);

/* Writes len bytes at off (pwrite); returns len. */
ssize_t ref_write(ref_fs *fs, const char *path, const void *buf, size_t len, uint64_t off);
int ref_truncate(ref_fs *fs, const char *path, uint64_t size);
/* mode: 0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, or
 * FALLOC_FL_ZERO_RANGE with or without FALLOC_FL_KEEP_SIZE. */
int ref_fallocate(ref_fs *fs, const char *path, int mode, uint64_t off, uint64_t len);
int ref_fsync(ref_fs *fs, const char *path);
int ref_fdatasync(ref_fs *fs, const char *path);

/* flags: 0, XATTR_CREATE or XATTR_REPLACE.  Names in the user., trusted. and
 * security. namespaces, the property btrfs.compression (below), and the POSIX ACLs system.posix_acl_access and
 * system.posix_acl_default, kept as Linux keeps them (acl.c: validated,
 * the mode set from an access ACL, an ACL no more than the mode not stored,
 * default ACLs inherited by new inodes, chmod rewriting the access ACL);
 * others EOPNOTSUPP. */
int ref_setxattr(ref_fs *fs, const char *path, const char *name, const void *value, size_t len,
		 int flags);
int ref_removexattr(ref_fs *fs, const char *path, const char *name);
/* The same on a symlink itself (lsetxattr, lremovexattr). */
int ref_lsetxattr(ref_fs *fs, const char *path, const char *name, const void *value, size_t len,
		  int flags);
int ref_lremovexattr(ref_fs *fs, const char *path, const char *name);
/* The inode flags as FS_IOC_GETFLAGS gives them (FS_*_FL of <linux/fs.h>:
 * lsattr), and FS_IOC_SETFLAGS (chattr) for the flags c (FS_COMPR_FL: the
 * compression property set to the mount's algorithm, or zlib) and m
 * (FS_NOCOMP_FL: no compression, the property removed), with the kernel's
 * EINVAL for c with m or either with C; changing any other flag is
 * EOPNOTSUPP (ref does not enforce them).  The property itself is the xattr
 * btrfs.compression ("zlib", "lzo", "zstd", "no", "none"; "" resets), set
 * and removed with ref_setxattr / ref_removexattr as `btrfs property set`
 * does (ref/compress/compress_prop.c). */
int ref_getflags(ref_fs *fs, const char *path, uint32_t *fsflags);

/* Defragmentation, as `btrfs filesystem defragment` asks Linux 6.18 for it
 * (ref/defrag/): on a regular file, BTRFS_IOC_DEFRAG_RANGE over [start,
 * start + len) (len 0 or UINT64_MAX: to the end): the ranges of extents
 * smaller than extent_thresh (0: 256 KiB, the kernel's default for 0;
 * btrfs-progs passes 32 MiB) that a neighbour makes worth merging are
 * rewritten into new extents with the bytes they hold, the kernel's rules
 * for what is skipped (holes, preallocated extents, extents already at
 * their largest) included; snapshot-shared extents are rewritten too, so
 * the file stops sharing them, as the kernel's does.  REF_DEFRAG_COMPRESS
 * rewrites every extent of the range compressed with `compress` (0: zlib)
 * at `level` (0: the default); REF_DEFRAG_NOCOMPRESS rewrites every extent
 * uncompressed.  On a directory, BTRFS_IOC_DEFRAG: the leaves of its
 * subvolume's tree that lie apart from their neighbours are copied anew
 * (file data untouched).  *sectors (may be NULL): the sectors rewritten.
 * Errors as the kernel's: EINVAL for start past the end, both flags, a bad
 * type or level, a path neither file nor directory; EROFS in a read-only
 * snapshot; ENOSPC and EDQUOT with the ranges before the failing one done. */
#define REF_DEFRAG_COMPRESS 1u
#define REF_DEFRAG_NOCOMPRESS 8u
struct ref_defrag {
	uint64_t start, len;
	uint32_t extent_thresh;
	unsigned flags;
	uint8_t compress;
	int8_t level;
};
int ref_defrag(ref_fs *fs, const char *path, const struct ref_defrag *d, uint64_t *sectors);

/* Reflinks (ref/reflink/).  FICLONERANGE of Linux 6.18 on btrfs: the
 * destination's bytes [doff, doff + len) become the source's [soff, soff +
 * len) by sharing its extents (len 0: up to the source's end); offsets
 * must be multiples of the sector, the length too unless the range ends
 * where the source ends and that end lands at or past the destination's
 * end; no range past the source's end, none overlapping itself in one
 * file; both regular files, the destination writable, both with data
 * checksums or both without.  The kernel's errnos (EISDIR, EINVAL, EROFS,
 * EPERM, EFBIG; reflink_clone.c lists them).  The destination grows to doff
 * + len when shorter, loses its file capabilities, gets new mtime and
 * ctime.  ref_clone is FICLONE: the whole source at offset 0. */
int ref_clone_range(ref_fs *fs, const char *src, uint64_t soff, uint64_t len, const char *dst,
		    uint64_t doff);
int ref_clone(ref_fs *fs, const char *src, const char *dst);
/* FIDEDUPERANGE: [off, off + len) of src shared with each destination
 * whose bytes at its offset are the same, compared and shared in one call.
 * Returns 0 (each destination then holds its status: 0, REF_DEDUPE_DIFFERS,
 * or -errno; bytes_deduped the length asked for, cut to 1 GiB, as the
 * kernel reports it), or the whole call's -errno: ENOMEM for more than 127
 * destinations, EISDIR, EINVAL for the source (reflink_dedupe.c). */
#define REF_DEDUPE_DIFFERS 1 /* FILE_DEDUPE_RANGE_DIFFERS */
struct ref_dedupe_dest {
	const char *path;
	uint64_t offset;
	int status;		/* out */
	uint64_t bytes_deduped; /* out */
};
int ref_dedupe_range(ref_fs *fs, const char *src, uint64_t off, uint64_t len,
		     struct ref_dedupe_dest *dest, size_t n);
int ref_setflags(ref_fs *fs, const char *path, uint32_t fsflags);
/* The value's length; -ERANGE when len is too small (len 0: just the size). */
ssize_t ref_getxattr(ref_fs *fs, const char *path, const char *name, void *value, size_t len);
int ref_chmod(ref_fs *fs, const char *path, uint32_t mode);
/* (uint32_t)-1 leaves that id unchanged, as chown(2). */
int ref_chown(ref_fs *fs, const char *path, uint32_t uid, uint32_t gid);
/* chown of a symlink itself (lchown). */
int ref_lchown(ref_fs *fs, const char *path, uint32_t uid, uint32_t gid);
/* times[0] atime, times[1] mtime (tv_nsec UTIME_NOW or UTIME_OMIT as utimensat); NULL: now. */
int ref_utimes(ref_fs *fs, const char *path, const struct timespec times[2]);
/* The same with AT_SYMLINK_NOFOLLOW: a symlink's own times. */
int ref_lutimes(ref_fs *fs, const char *path, const struct timespec times[2]);

/* ---- Subvolumes (subvol.c); each call commits before it returns ---- */

/* Creates an empty subvolume (btrfs subvolume create); *id (may be NULL) gets its id. */
int ref_subvol_create(ref_fs *fs, const char *path, uint64_t *id);
/* Snapshots the subvolume whose root directory is src as dest (btrfs
 * subvolume snapshot [-r]): only src's root block is copied; everything below
 * is shared until one side changes.  EINVAL when src is not a subvolume. */
int ref_snapshot(ref_fs *fs, const char *src, const char *dest, bool readonly, uint64_t *id);
/* Deletes the subvolume whose root directory is path (btrfs subvolume
 * delete): it leaves the namespace at once; the cleaner frees its blocks a
 * part at each later commit, resuming after a crash or remount.  EPERM for
 * the top level and the default subvolume, ENOTEMPTY when it holds others. */
int ref_subvol_delete(ref_fs *fs, const char *path);
/* Runs the cleaner until no deleted subvolume is left, committing after each
 * step (btrfs subvolume sync). */
int ref_subvol_sync(ref_fs *fs);
/* Makes subvolume id (0: the top level) the default (btrfs subvolume set-default). */
int ref_subvol_set_default(ref_fs *fs, uint64_t id);
/* BTRFS_IOC_SUBVOL_SETFLAGS on the subvolume whose root directory path is:
 * read-only or writable (BTRFS_ROOT_SUBVOL_RDONLY).  EINVAL when path is no
 * subvolume's root; EPERM to make a subvolume being deleted writable;
 * nothing done (0) when it already is so.  (subvol_flags.c) */
int ref_subvol_set_readonly(ref_fs *fs, const char *path, bool readonly);
/* BTRFS_IOC_SET_RECEIVED_SUBVOL, as btrfs receive ends a subvolume: its
 * received_uuid and stransid set (the uuid tree's RECEIVED_SUBVOL entry
 * following), rtransid this transaction (*rtransid, may be NULL), rtime now,
 * stime zero.  EROFS on a read-only subvolume, EINVAL as above. */
int ref_subvol_set_received(ref_fs *fs, const char *path, const uint8_t uuid[16],
			    uint64_t stransid, uint64_t *rtransid);

/* What a device replace copied (ref_device_replace). */
struct ref_replace_stats {
	uint64_t tree_extents, data_extents; /* extents with a copy on the device */
	uint64_t bytes_copied;               /* written to the spare */
	uint64_t uncorrectable;              /* bytes no copy held correctly */
};
/* Rebuilds device `devid` (present or missing) onto spare disk `target` (a
 * blank disk of the volume, opened with ref_open_opts.spares, at least the
 * device's size), which takes the device's place: btrfs replace start -B.
 * avoid_src reads the device itself only when no other copy is good (-r).
 * The old disk, when present, has its superblocks wiped.  Commits. */
int ref_device_replace(ref_fs *fs, uint64_t devid, int target, bool avoid_src,
		       struct ref_replace_stats *st);

/* Adds spare disk `disk` (a blank disk of the volume, opened with
 * ref_open_opts.spares; at least 256 MiB) as a new device: btrfs device add.
 * *devid gets its devid.  New chunks may use it from then on.  Commits. */
int ref_device_add(ref_fs *fs, int disk, uint64_t *devid);

/* ---- Balance (balance.c) and device remove (device_remove.c) ---- */

/* What to balance: flags BTRFS_BALANCE_DATA / METADATA / SYSTEM (the kinds
 * of block group) and FORCE; per kind, btrfs balance's filters in the
 * ioctl's btrfs_balance_args (flags BTRFS_BALANCE_ARGS_*: profiles, usage
 * or usage range, devid, drange, vrange, limit or limit range, stripes,
 * convert with target, soft; a single profile is BTRFS_AVAIL_ALLOC_BIT_SINGLE). */
struct ref_balance {
	uint64_t flags;
	struct btrfs_balance_args data, meta, sys;
};
struct ref_balance_stats {
	uint64_t considered, relocated; /* chunks: "had to relocate N out of M chunks" */
	uint64_t tree_blocks, data_extents, data_bytes; /* what moved */
};
/* Relocates every chunk the filters choose (btrfs balance start): -EINVAL for
 * arguments the kernel refuses, -EINPROGRESS when an interrupted balance
 * waits.  Its arguments stay in the balance item until it is done, so that
 * an interrupted balance can be resumed.  Commits as it goes. */
int ref_balance(ref_fs *fs, const struct ref_balance *b, struct ref_balance_stats *st);
/* Resumes an interrupted balance (-ENOTCONN when there is none); chunks a
 * conversion already converted are skipped. */
int ref_balance_resume(ref_fs *fs, struct ref_balance_stats *st);
/* Forgets an interrupted balance (btrfs balance cancel): -ENOTCONN when none. */
int ref_balance_cancel(ref_fs *fs);
/* The interrupted balance's arguments: 0, 1 when there is none, or -errno
 * (works read-only too). */
int ref_balance_get(ref_fs *fs, struct ref_balance *out);

/* Removes device *devid (btrfs device remove; 0: the first missing one, as
 * "btrfs device remove missing", *devid then set): every chunk with a stripe
 * on it relocated to the other devices, its DEV_ITEM and statistics gone,
 * the superblock's counts shrunk, its superblocks wiped (when present; a
 * missing device is removed just the same).  -EINVAL when the profiles in
 * use need more devices than would be left, -ENODEV when there is no such
 * device (or none is missing), -ENOSPC when the others have no room.
 * Commits. */
int ref_device_remove(ref_fs *fs, uint64_t *devid, struct ref_balance_stats *st);

/* Sets every device's error counters to 0 and commits (btrfs device stats -z). */
int ref_dev_stats_reset(ref_fs *fs);

/* ---- Quota groups (qgroup.c); each call commits before it returns ---- */

/* Enables quota groups (btrfs quota enable): the quota tree, a level-0 group
 * for every subvolume, their numbers counted at once (the rescan done before
 * returning).  0 when already enabled. */
int ref_qgroup_enable(ref_fs *fs);
/* Counts every group again from scratch and clears the inconsistent flag
 * (btrfs quota rescan -w).  -ENOTCONN when quotas are off. */
int ref_qgroup_rescan(ref_fs *fs);
/* Sets limits of qgroup id (btrfs qgroup limit): flags names the limits to
 * change (BTRFS_QGROUP_LIMIT_MAX_RFER / _MAX_EXCL), each to its maximum, or
 * removed when that maximum is UINT64_MAX ("none"); limits not named stay.
 * -ENOTCONN when quotas are off, -ENOENT when there is no such group.  Data
 * writes and allocations that would take a group past a limit fail with
 * EDQUOT, whole (ref counts the data of the running transaction against it;
 * metadata counts once committed). */
int ref_qgroup_limit(ref_fs *fs, uint64_t id, uint64_t flags, uint64_t max_rfer,
		     uint64_t max_excl);
/* Quota groups above level 0, as btrfs qgroup create / destroy / assign /
 * remove with Linux 6.18's rules and errnos, each committed.  create: a group
 * with no numbers (-EEXIST when there is one).  destroy: -ENOENT when absent,
 * -EBUSY while it has members, or numbers at level 0; its own relations go
 * with it (1 when one of those left the numbers stale, as below).  assign: child becomes a member of parent (-EINVAL unless parent's
 * level is higher and both exist, -EEXIST when it is one); remove: no longer
 * (-ENOENT when it was not).  When the child's numbers are all exclusive they
 * move into the parent and every group above it at once; otherwise the
 * numbers are marked inconsistent and 1 is returned (the kernel's ioctl
 * answer: a rescan is needed).  -ENOTCONN when quotas are off. */
int ref_qgroup_create(ref_fs *fs, uint64_t id);
int ref_qgroup_destroy(ref_fs *fs, uint64_t id);
int ref_qgroup_assign(ref_fs *fs, uint64_t child, uint64_t parent, bool add);

/* stat (follow = true) or lstat. */
int ref_stat_path(ref_fs *fs, const char *path, bool follow, struct ref_stat *st);
/* The inode a path names (following symlinks when follow). */
int ref_lookup_path(ref_fs *fs, const char *path, bool follow, struct ref_ino *out);

#endif
