/*
 * send_int.h - the stream writer shared by ref/send/ (ref/ only): commands
 * built attribute by attribute into one buffer, then written to the output
 * with their length and CRC32C (send.h gives the format).
 */
#ifndef BTRSIM_REF_SEND_INT_H
#define BTRSIM_REF_SEND_INT_H

#include "ref/send.h"

#include <stdio.h>

struct sw {
	FILE *out;
	uint32_t version;
	uint8_t *buf; /* the command being built: header, then attributes */
	size_t len, cap;
	uint64_t written; /* bytes of the stream so far */
	uint64_t commands;
	int err; /* the first failure (-errno), after which nothing is written */
};

/* Starts writing a stream of that version to out, with its header (magic,
 * version) unless !header; 0 or -errno. */
int sw_begin(struct sw *w, FILE *out, uint32_t version, bool header);
void sw_cmd(struct sw *w, uint16_t cmd);
void sw_attr(struct sw *w, uint16_t type, const void *v, size_t len);
void sw_u64(struct sw *w, uint16_t type, uint64_t v);
void sw_u32(struct sw *w, uint16_t type, uint32_t v);
void sw_str(struct sw *w, uint16_t type, const char *s);
void sw_time(struct sw *w, uint16_t type, const struct timespec *t);
/* DATA: with its length in a version 1 stream, the rest of the command after. */
void sw_data(struct sw *w, const void *d, size_t len);
/* The command's length and CRC32C filled in, the command written: 0 or -errno. */
int sw_end(struct sw *w);
void sw_free(struct sw *w);

/* ---- The sender (send_full.c, send_incr.c) ---- */

/* A name: the directory's inode number and the name in it. */
struct sref {
	uint64_t parent;
	char *name;
};

/* An inode of a sent subvolume: what its tree says (refs: its names, in key
 * order), and where it is on the receiving side as the commands so far left
 * it (cur: cur[0] is the path commands name it by; none yet: not made). */
struct sinode {
	uint64_t ino, gen;
	uint32_t mode;
	struct sref *refs;
	size_t nrefs;
	struct sref *cur;
	size_t ncur;
	bool done; /* its own commands sent (incremental: compared) */
};

/* Every inode of one subvolume, by number, ascending. */
struct stable {
	struct sinode *in;
	size_t n, cap;
};

/* A subvolume the receiving side has, whose extents a stream may clone:
 * the parent, a -c source, or (index 0) the subvolume sent itself. */
struct csrc {
	uint64_t id;
	uint8_t uuid[16];
	uint64_t ctransid;
	struct stable own;	 /* a -c source's inodes, read for it */
	const struct stable *tab; /* its inodes: own, the parent's s->pt, or s->t */
};

/* Where an extent is used: a file's range of a disk extent. */
struct cuse {
	uint64_t bytenr, ext_off, num, file_off, ino;
	uint32_t src;
	uint32_t next; /* the next in its hash bucket, UINT32_MAX at the end */
};

struct cindex {
	struct csrc *src;
	size_t nsrc;
	struct cuse *use;
	size_t nuse, capuse;
	uint32_t *bucket;
	size_t nbucket;
};

struct sender {
	ref_fs *fs;
	uint64_t subvol, parent; /* parent: 0 for a full stream */
	const struct ref_send_opts *o;
	struct ref_send_stats *st;
	struct sw w;
	struct stable t;  /* the subvolume sent */
	struct stable pt; /* the parent's (incremental) */
	struct cindex ci; /* clone sources (send_clone.c) */
	char *err;
	size_t errlen;
};

int send_fail(struct sender *s, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Reads every inode of subvolume id and its names into t. */
int send_collect(struct sender *s, uint64_t id, struct stable *t);
void send_table_free(struct stable *t);
/* Calls fn for each EXTENT_DATA item of file ino in subvolume `subvol`, in
 * order (its file offset, the item): 0, fn's non-zero return, -EUCLEAN for
 * a short item, or the read's -errno. */
int send_each_extent(struct sender *s, uint64_t subvol, uint64_t ino,
		     int (*fn)(void *ctx, uint64_t off, const uint8_t *item, uint32_t size),
		     void *ctx);
struct sinode *send_find(const struct stable *t, uint64_t ino);
/* The inode with that number on the receiving side now (the sent
 * subvolume's, or the parent's not yet removed). */
struct sinode *send_live(struct sender *s, uint64_t ino);
/* Its path on the receiving side now ("" for the root). */
int send_cur_path(struct sender *s, uint64_t ino, char *out, size_t cap);
/* "o<ino>-<gen>-0": the orphan name of an inode. */
void send_orphan_name(const struct sinode *i, char *out, size_t cap);
/* Commands that move names, the receiving side's names following. */
int send_rename(struct sender *s, struct sinode *i, uint64_t parent, const char *name);
int send_link(struct sender *s, struct sinode *i, uint64_t parent, const char *name);
int send_unlink(struct sender *s, struct sinode *i, size_t k);
int send_rmdir(struct sender *s, struct sinode *i);
/* Makes inode i of the sent subvolume under its orphan name. */
int send_create(struct sender *s, struct sinode *i);
/* The directories of i's names made (under their orphan names) where they
 * are not there yet: the kernel's out-of-order directory creation. */
int send_make_dirs(struct sender *s, struct sinode *i);
/* Gives i (new, or moved out under its orphan name) its names: the first by
 * a rename, the others as links; directories of the names made first when
 * they are not there yet. */
int send_place(struct sender *s, struct sinode *i);
int send_end_cmd(struct sender *s);
int send_utimes(struct sender *s, const char *path, const struct ref_stat *st);
/* chown, chmod (not for a symlink), the capabilities (send_caps) and, unless
 * a directory, utimes. */
int send_owner_mode_times(struct sender *s, uint64_t ino, const char *path,
			  const struct ref_stat *st);
#define SEND_CAPS "security.capability"
/* An inode's capabilities, when it has them, as the kernel's
 * send_capabilities sends them: after its writes, truncate, chown and chmod,
 * each of which drops them on the receiving side (btrfs-progs 6.2's receive
 * sets them where they come, and does not keep them for after a chown). */
int send_caps(struct sender *s, uint64_t ino, const char *path);
/* Data commands for [from, to) of a regular file: writes (update_extent
 * with no_data) of what it holds. */
int send_bytes(struct sender *s, const struct ref_ino *ino, const char *path, uint64_t from,
	       uint64_t to);

/* ---- Clones (send_clone.c) ---- */

/* The clone sources: the sent subvolume, its parent, the -c ones; every
 * regular extent the sources' files use indexed. */
int send_clone_init(struct sender *s);
void send_clone_free(struct sender *s);
/* A sent file's extents become clone sources once it is whole on the
 * receiving side. */
int send_clone_add_self(struct sender *s, uint64_t ino);
/* Data commands for [from, to) of a regular file: clones of what a source
 * holds of the same disk extents (at the alignment the kernel's clone
 * accepts), the rest as send_bytes. */
int send_range(struct sender *s, const struct ref_ino *ino, const char *path, uint64_t from,
	       uint64_t to);
/* A new inode's xattrs, data (a truncate past the last of it), owner, mode
 * and (but for a directory) times. */
int send_finish_new(struct sender *s, uint64_t ino);
/* The incremental stream's body (send_incr.c). */
int send_incremental(struct sender *s);

#endif
