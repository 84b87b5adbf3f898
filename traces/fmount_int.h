/*
 * fmount_int.h - what the files of the FUSE mount share (traces/fmount*.c):
 * the mount, its table of nodes (the inodes the kernel holds a nodeid of),
 * and the reply helpers.
 */
#ifndef BTRSIM_TRACES_FMOUNT_INT_H
#define BTRSIM_TRACES_FMOUNT_INT_H

#define FUSE_USE_VERSION 34

#include "traces/fmount.h"

#include <fuse_lowlevel.h>

/* An inode the kernel knows by a nodeid: the node's address, or
 * FUSE_ROOT_ID for the root.  Kept while the kernel holds lookups of it
 * (nlookup, dropped by forget) or it is open (nopen). */
struct fm_node {
	struct ref_ino ino;
	struct ref_ino parent; /* where it was last found: a stand-in's owner shows its directory's */
	uint64_t nlookup;
	uint32_t nopen;
	bool indexed;          /* findable by (subvol, ino); not once its inode is gone */
	struct fm_node *next;  /* the index's chain */
	struct fm_node *prev_all, *next_all; /* every node, for the unmount */
};

struct fmount {
	ref_fs *fs;
	struct fmount_opts opts;
	struct fm_node root;
	struct fuse_session *se;
	bool mounted, signals;
	char mnt[4096];
	struct fm_node **buckets; /* index by (subvol, ino) */
	size_t nbuckets, nnodes;
	struct fm_node *all; /* every node but the root */
	uint64_t failures;
	uint64_t rec_lost, rec_unsaid; /* recording: changes lost, calls left out */
	char rec_first_unsaid[96];
};

/* fmount_nodes.c */
struct fm_node *fm_node(fmount *fm, fuse_ino_t id);
/* The node of ino, made when the kernel has none (NULL: out of memory). */
struct fm_node *fm_node_get(fmount *fm, const struct ref_ino *ino);
/* Lookups the kernel dropped; the node goes when none is left and it is not open. */
void fm_node_forget(fmount *fm, struct fm_node *n, uint64_t nlookup);
/* After a change that may have deleted the inode of the name it removed
 * (unlink, rmdir, rename over): a gone inode's node leaves the index, so
 * that a new inode given its number gets a new node. */
void fm_node_maybe_gone(fmount *fm, const struct ref_ino *ino);
void fm_nodes_free(fmount *fm);
/* st_ino: the inode number in the mounted subvolume; in others the
 * subvolume's id above bit 40 (FUSE gives a mount a single st_dev). */
uint64_t fm_st_ino(const fmount *fm, const struct ref_ino *ino);

/* fmount_ops.c */
extern const struct fuse_lowlevel_ops fm_ops;
/* Replies with the error of a failed ref call (r < 0), printing ref's
 * message for the failures that are not ordinary answers. */
void fm_reply_err(fuse_req_t req, fmount *fm, const char *op, int r);
/* The errno of r, printed (and counted) when it is such a failure. */
int fm_report(fmount *fm, const char *op, int r);
/* The attributes of a node (fills st). */
int fm_stat(fmount *fm, const struct fm_node *n, struct stat *st);

/* fmount_data.c: open, read, write, fsync, fallocate, lseek, release */
void fm_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fm_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fm_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi);
void fm_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void fm_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fm_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
		  struct fuse_file_info *fi);
void fm_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi);
/* A node opened (held in ref) and closed. */
int fm_hold(fmount *fm, struct fm_node *n);
void fm_unhold(fmount *fm, struct fm_node *n);

/* fmount_dir.c: opendir, readdir, releasedir */
void fm_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fm_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fm_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* fmount_xattr.c */
void fm_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
		 int flags);
void fm_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void fm_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fm_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* fmount_record.c (each a no-op when not recording) */
/* The path from the top level of node n, or of name in it (name not NULL):
 * malloc'd; NULL when not recording or n has no name. */
char *fm_rec_path(fmount *fm, const struct fm_node *n, const char *name);
/* Appends op (its path, and path2 for link and rename, from fm_rec_path:
 * freed here) with r's errno as its expectation; nothing when a path is
 * NULL. */
void fm_rec(fmount *fm, struct wl_op *op, int r);
/* A call the language cannot say, left out (counted, the first named). */
void fm_rec_unsaid(fmount *fm, const char *what);

static inline void fm_op_init(struct wl_op *op, enum wl_kind k)
{
	*op = (struct wl_op){ .kind = k };
}

static inline fmount *fm_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

#endif
