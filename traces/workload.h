/*
 * workload.h - the workload language of btrsim: a text file of file-system
 * operations, one a line, each with the errno it is expected to give
 * (traces/README.md, "Workload language", is the reference).  This header
 * parses such files, prints operations back in the language, builds
 * workloads in code, names errnos, and defines the data a `write` writes.
 *
 * The parser checks syntax only.  Names the file system must refuse
 * (".", "..", a 256-byte component, an empty xattr name, a write past the
 * largest offset) reach it unchanged, so that it is the file system that
 * gives the errno.
 */
#ifndef BTRSIM_TRACES_WORKLOAD_H
#define BTRSIM_TRACES_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

enum wl_kind {
	WL_MKDIR,	/* mkdir PATH [MODE]                     mode (default 0755) */
	WL_CREATE,	/* create PATH [MODE]                    mode (default 0644); open(O_CREAT|O_EXCL|O_WRONLY) */
	WL_WRITE,	/* write PATH OFFSET LENGTH [SEED [sync|dsync]]  off, len, seed (default 0); data: wl_content;
			 * flags WL_WRITE_SYNC/DSYNC: opened O_SYNC/O_DSYNC */
	WL_TRUNCATE,	/* truncate PATH SIZE                    size */
	WL_FALLOCATE,	/* fallocate PATH OFFSET LENGTH [keep-size|punch-hole|zero-range|zero-range-keep-size] */
	WL_LINK,	/* link OLD NEW                          path = OLD, path2 = NEW */
	WL_SYMLINK,	/* symlink TARGET PATH                   path = PATH (the new link), path2 = TARGET */
	WL_RENAME,	/* rename OLD NEW [noreplace|exchange]   path = OLD, path2 = NEW, flags */
	WL_UNLINK,	/* unlink PATH */
	WL_RMDIR,	/* rmdir PATH */
	WL_SETXATTR,	/* setxattr PATH NAME VALUE              name, value/vlen */
	WL_REMOVEXATTR, /* removexattr PATH NAME                 name */
	WL_CHMOD,	/* chmod PATH MODE                       mode */
	WL_CHOWN,	/* chown PATH UID GID                    uid, gid (-1: unchanged) */
	WL_UTIMES,	/* utimes PATH ATIME MTIME               atime, mtime (utimensat) */
	WL_FSYNC,	/* fsync PATH */
	WL_FDATASYNC,	/* fdatasync PATH */
	WL_SYNC,	/* sync */
	WL_MARK,	/* mark NAME                             name: [A-Za-z0-9_.-]+ */
	WL_CRASH,	/* crash                                 power loss here */
	/* Subvolumes (btrfs); each commits before it returns (a persistence point). */
	WL_SUBVOL_CREATE, /* subvol-create PATH                path: an empty subvolume (btrfs subvolume create) */
	WL_SNAPSHOT,	/* snapshot SRC DEST [ro]                path = SRC (a subvolume's root), path2 = DEST, flags */
	WL_SUBVOL_DELETE, /* subvol-delete PATH                path: a subvolume's root (btrfs subvolume delete) */
	WL_SUBVOL_SYNC,	/* subvol-sync                           wait for the cleaner (btrfs subvolume sync) */
	/* Quota groups (btrfs); commits before it returns. */
	WL_QUOTA_ENABLE, /* quota-enable                         btrfs quota enable, the rescan waited for */
	/* Balance (btrfs); commits as it goes. */
	WL_BALANCE,	/* balance                               every block group relocated (btrfs balance start --full-balance) */
	/* Defragmentation (btrfs); not a persistence point. */
	WL_DEFRAG,	/* defrag PATH [zlib|lzo|zstd]           flags: 0, or the compression (REF_COMPRESS_*) of -c */
	/* Receive (btrfs receive); commits when each subvolume is finished. */
	WL_RECEIVE,	/* receive STREAM DIR                    value/vlen: the send stream's bytes (STREAM: a file,
			 * read when parsed, or 0x hex), path = DIR */
	/* Reflinks (btrfs); not persistence points. */
	WL_CLONE,	/* clone SRC DST                         FICLONE: path = SRC, path2 = DST */
	WL_CLONE_RANGE, /* clone-range SRC SOFF LEN DST DOFF     FICLONERANGE: path, off, len, path2, off2 */
	WL_DEDUPE,	/* dedupe SRC SOFF LEN DST DOFF          FIDEDUPERANGE of one destination: EBADE
			 * when the bytes differ (FILE_DEDUPE_RANGE_DIFFERS) */
	/* Devices (btrfs); commits as it goes, as balance. */
	WL_DEVICE_REMOVE, /* device-remove DEVID                devid: the device's chunks relocated onto the
			 * others, then it leaves the volume (btrfs device remove DEVID) */
	/* Given bytes (what `btrsim record` saw a program write). */
	WL_PWRITE,	/* pwrite PATH OFFSET DATA [sync|dsync]   off; value/vlen: the bytes; flags as write's */
	WL_NKINDS
};

/* fallocate flags: the values of Linux's FALLOC_FL_*.  punch-hole is always
 * given with keep-size, as Linux requires; zero-range with or without it. */
#define WL_FALLOC_KEEP_SIZE 0x01
#define WL_FALLOC_PUNCH_HOLE 0x02
#define WL_FALLOC_ZERO_RANGE 0x10
/* rename flags: the values of Linux's RENAME_* (renameat2). */
#define WL_RENAME_NOREPLACE 0x01
#define WL_RENAME_EXCHANGE 0x02
/* snapshot flags: a read-only snapshot (BTRFS_SUBVOL_RDONLY). */
#define WL_SNAP_RDONLY 0x01

/* write: the file opened with O_SYNC (the write then persists as an fsync of
 * the file would) or O_DSYNC (as fdatasync). */
#define WL_WRITE_SYNC 0x01
#define WL_WRITE_DSYNC 0x02
/* write: text data (the seed written tN): wl_text_content. */
#define WL_WRITE_TEXT 0x04
/* utimes: a time of `omit` leaves that time unchanged (utimensat's UTIME_OMIT). */
#define WL_UTIME_OMIT ((long)((1L << 30) - 2L))

/*
 * One operation.  A kind uses the fields its comment above names, plus path
 * (every kind but sync, mark, crash, subvol-sync, quota-enable and balance) and
 * expect; the others are zero when the parser made the op, and are ignored
 * by wl_format and wl_append.
 * Strings are NUL-terminated and never contain a NUL; value may (vlen counts it).
 */
struct wl_op {
	enum wl_kind kind;
	int expect;	 /* 0: success expected; else the positive errno expected */
	size_t line;	 /* 1-based line in the workload file; 0 when built in code */
	char *path;	 /* an absolute path: starts with '/' */
	char *path2;	 /* link, rename: NEW (absolute); symlink: TARGET (any non-empty string);
			  * snapshot: DEST (absolute); clone, clone-range, dedupe: DST */
	char *name;	 /* setxattr, removexattr: the xattr name; mark: the mark's name */
	uint8_t *value;	 /* setxattr: the value, vlen bytes (NULL when vlen is 0 is allowed);
			  * receive: the send stream; pwrite: the bytes written */
	size_t vlen;
	uint64_t off;	 /* write, fallocate; clone-range, dedupe: SRC's offset */
	uint64_t off2;	 /* clone-range, dedupe: DST's offset */
	uint64_t len;	 /* write, fallocate, clone-range, dedupe */
	uint64_t size;	 /* truncate */
	uint64_t seed;	 /* write */
	uint64_t devid;	 /* device-remove: the device (devid = disk + 1) */
	uint32_t mode;	 /* mkdir, create, chmod: permission bits, at most 07777 */
	uint32_t uid;	 /* chown; UINT32_MAX (-1) leaves it unchanged */
	uint32_t gid;
	int flags;	 /* fallocate: WL_FALLOC_*; rename: WL_RENAME_*; snapshot: WL_SNAP_RDONLY;
			  * write: WL_WRITE_SYNC or WL_WRITE_DSYNC */
	struct timespec atime, mtime; /* utimes; tv_nsec WL_UTIME_OMIT: unchanged */
};

/* The header: how the workload's file system is mounted (a `mount-options`
 * line before the first op; traces/README.md, "Workload language").  Zero:
 * the defaults. */
struct wl_mount {
	uint8_t compress;	/* compress= / compress-force=: REF_COMPRESS_* (0: none) */
	int8_t compress_level;	/* 0: the algorithm's default */
	bool compress_force;	/* compress-force= */
};

/* A workload: its ops in order.  Start from `struct wl_workload w = {0};`. */
struct wl_workload {
	char *name;	 /* the file name given to the parser (malloc'd), or NULL */
	struct wl_op *ops;
	size_t n;
	size_t cap;
	struct wl_mount mount;
};

/* "compress=zstd:3" (or compress-force=...), the header's options as a mount
 * -o string, or "" when there are none. */
void wl_mount_format(const struct wl_mount *m, char *buf, size_t len);

/*
 * Parse a workload file ("-" reads standard input).  Returns 0, or a negative
 * errno with a one-line message in err (when errlen > 0):
 *   -EINVAL  a parse error: "FILE:LINE:COL: message" (1-based; COL counts bytes);
 *   -ENOENT, -EACCES, -EIO, ...  the file could not be read: "FILE: reason";
 *   -ENOMEM.
 * On success *out holds the ops (free with wl_free); on error *out is empty.
 */
int wl_parse_file(const char *file, struct wl_workload *out, char *err, size_t errlen);
/* The same for len bytes of text in memory, `name` standing for FILE in
 * messages and in out->name.  The text need not be NUL-terminated. */
int wl_parse_text(const char *name, const char *text, size_t len, struct wl_workload *out,
		  char *err, size_t errlen);

/* The ops of w's setup: through its first `mark setup` (what `btrsim
 * record --setup` writes), 0 when it has none.  Crash exploration takes no
 * crash point before their end, and minimization keeps them all. */
size_t wl_setup_ops(const struct wl_workload *w);

/* Frees everything a workload holds and leaves it empty; NULL is allowed. */
void wl_free(struct wl_workload *w);

/* Why op is not a valid operation (a static English phrase), or NULL when it
 * is: required strings present, paths absolute, modes and flags in range,
 * a mark's name well formed, expect 0 or a named errno. */
const char *wl_op_problem(const struct wl_op *op);

/* Appends a deep copy of op: kind, expect, line and the fields its kind uses
 * (the others are left zero); the caller keeps its own strings.  Returns 0,
 * -EINVAL when wl_op_problem(op) is not NULL, or -ENOMEM. */
int wl_append(struct wl_workload *w, const struct wl_op *op);

/*
 * Writes op in the language, without "\n", into buf as snprintf does: at most
 * len bytes including the NUL, and returns the length of the whole line (so
 * a return >= len means buf was too small; buf may be NULL when len is 0).
 * Returns -EINVAL for an op that wl_op_problem rejects, -EOVERFLOW for a line
 * over INT_MAX bytes.  The line parses back into an op with the same
 * fields (line aside): names with spaces, '#', '"' or bytes outside printable
 * ASCII are quoted with escapes; optional arguments at their default are left out.
 */
int wl_format(const struct wl_op *op, char *buf, size_t len);
/* Writes every op of w, one a line, to f.  Returns 0, or -EINVAL, -ENOMEM or -EIO. */
int wl_print(FILE *f, const struct wl_workload *w);

/* "mkdir", "write", ...; NULL for a value out of range. */
const char *wl_kind_name(enum wl_kind k);
/* The kind named `name`, or -1. */
int wl_kind_parse(const char *name);

/* The Linux name of errno e ("ENOENT"), "0" for 0, NULL when e has no name. */
const char *wl_errno_name(int e);
/* The errno named `name` (also the aliases EWOULDBLOCK, EDEADLOCK, ENOTSUP),
 * 0 for "0" and "OK", -1 for anything else. */
int wl_errno_parse(const char *name);

/*
 * The data of `write PATH OFFSET LENGTH SEED`: fills buf with the len bytes
 * found at file offsets off..off+len-1.  Byte o of a file depends on (seed, o)
 * alone, so any range can be recomputed, however a write was split; two
 * seeds give unrelated data.  Byte o is byte o % 8 (little-endian) of
 *   w(o / 8) = mix((o / 8) * 0x9e3779b97f4a7c15 ^ mix(seed + 0x9e3779b97f4a7c15))
 * where mix is splitmix64's finaliser (traces/README.md): the same on every
 * machine and build.  Several GB/s.
 */
void wl_content(uint64_t seed, uint64_t off, void *buf, size_t len);
/* Text data, of a write whose seed is written tN (WL_WRITE_TEXT): bytes that
 * depend only on the seed and the offset too, but compressible (16 letters
 * in runs of 8), so that compress= has something to compress. */
void wl_text_content(uint64_t seed, uint64_t off, void *buf, size_t len);
/* The bytes [off, off + len) of the file that a write (flags: its
 * WL_WRITE_TEXT) puts there: wl_content or wl_text_content. */
void wl_write_content(uint64_t seed, int flags, uint64_t off, void *buf, size_t len);

#endif
