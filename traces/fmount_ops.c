/*
 * fmount_ops.c - the FUSE mount's namespace and attribute requests: lookup,
 * forget, getattr, setattr, readlink, mknod, mkdir, symlink, link, unlink,
 * rmdir, rename, create, statfs.  Each names its inodes by nodeid; ref is
 * given the directory as the base of a single name (ref_chdir), or the inode
 * itself as "" (AT_EMPTY_PATH), so that ref's own checks and errnos apply.
 * New inodes are owned by the caller (ref_creds); the kernel has applied
 * the umask and checked permissions (default_permissions) before.
 */
#include "traces/fmount_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define TIMEOUT 1.0 /* seconds the kernel may cache names and attributes: every change comes through here */

int fm_report(fmount *fm, const char *op, int r)
{
	int e = r < 0 ? -r : EIO;
	switch (e) {
	case ENOENT: case EEXIST: case ENOTEMPTY: case ENODATA: case ERANGE: case EACCES:
	case EPERM: case EISDIR: case ENOTDIR: case EINVAL: case EXDEV: case ENAMETOOLONG:
	case EROFS: case EMLINK: case ELOOP: case EOPNOTSUPP: case EBUSY: case EFBIG:
	case ENXIO: case EDQUOT: case ENODEV: case E2BIG: case ENOSPC:
		break;
	default: /* a failure of the file system, not an answer */
		fm->failures++;
		fprintf(stderr, "btrsim mount: %s: %s: %s\n", op, strerror(e), ref_error(fm->fs));
	}
	return e;
}

void fm_reply_err(fuse_req_t req, fmount *fm, const char *op, int r)
{
	fuse_reply_err(req, fm_report(fm, op, r));
}

int fm_stat(fmount *fm, const struct fm_node *n, struct stat *st)
{
	struct ref_stat rs;
	int r = n->ino.ino == BTRFS_EMPTY_SUBVOL_DIR_OBJECTID && n->parent.ino
			? ref_stat_in(fm->fs, &n->parent, &n->ino, &rs)
			: ref_stat(fm->fs, &n->ino, &rs);
	if (r)
		return r;
	memset(st, 0, sizeof(*st));
	st->st_ino = fm_st_ino(fm, &n->ino);
	st->st_mode = rs.mode;
	st->st_nlink = rs.nlink;
	st->st_uid = rs.uid;
	st->st_gid = rs.gid;
	st->st_rdev = makedev(rs.rdev >> 20, rs.rdev & 0xfffff); /* the kernel's dev_t, as btrfs keeps it */
	st->st_size = (off_t)rs.size;
	uint32_t sector = LE32(ref_super(fm->fs)->sectorsize);
	st->st_blocks = (blkcnt_t)((rs.nbytes + sector - 1) / sector * sector / 512);
	st->st_blksize = sector;
	st->st_atim = rs.atime;
	st->st_mtim = rs.mtime;
	st->st_ctim = rs.ctime;
	return 0;
}

/* Replies with the entry of ino found in dir (one lookup more of its node). */
static void reply_entry(fuse_req_t req, fmount *fm, const struct ref_ino *dir,
			const struct ref_ino *ino, const char *op)
{
	struct fm_node *n = fm_node_get(fm, ino);
	if (!n)
		return fm_reply_err(req, fm, op, -ENOMEM);
	n->parent = *dir;
	struct fuse_entry_param e = { .ino = n == &fm->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n,
				      .attr_timeout = TIMEOUT, .entry_timeout = TIMEOUT };
	int r = fm_stat(fm, n, &e.attr);
	if (r)
		return fm_reply_err(req, fm, op, r);
	if (fuse_reply_entry(req, &e) == 0)
		n->nlookup++;
}

/* The inode a name in dir names now (after a change made it). */
static int find(fmount *fm, const struct ref_ino *dir, const char *name, struct ref_ino *out)
{
	return ref_lookup(fm->fs, dir, name, strlen(name), out, NULL);
}

static void fm_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fmount *fm = fm_of(req);
	struct fm_node *p = fm_node(fm, parent);
	struct ref_ino ino;
	int r = find(fm, &p->ino, name, &ino);
	if (r == -ENOENT) { /* a negative entry the kernel may cache */
		struct fuse_entry_param e = { .ino = 0, .entry_timeout = TIMEOUT };
		fuse_reply_entry(req, &e);
		return;
	}
	if (r)
		return fm_reply_err(req, fm, "lookup", r);
	reply_entry(req, fm, &p->ino, &ino, "lookup");
}

static void fm_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fmount *fm = fm_of(req);
	fm_node_forget(fm, fm_node(fm, ino), nlookup);
	fuse_reply_none(req);
}

static void fm_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	fmount *fm = fm_of(req);
	for (size_t i = 0; i < count; i++)
		fm_node_forget(fm, fm_node(fm, forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

static void fm_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	fmount *fm = fm_of(req);
	struct stat st;
	int r = fm_stat(fm, fm_node(fm, ino), &st);
	if (r)
		return fm_reply_err(req, fm, "getattr", r);
	fuse_reply_attr(req, &st, TIMEOUT);
}

/* One setattr is several calls of ref in btrfs_setattr's order: the size,
 * then the owner, the mode and the times. */
static void fm_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	(void)fi;
	fmount *fm = fm_of(req);
	struct fm_node *n = fm_node(fm, ino);
	ref_chdir(fm->fs, &n->ino);
	/* the language's chown, chmod and utimes follow symlinks: a symlink's
	 * own cannot be said */
	struct stat st;
	bool link = fm->opts.record && !fm_stat(fm, n, &st) && S_ISLNK(st.st_mode);
	struct wl_op op;
	int r = 0;
	if (to_set & FUSE_SET_ATTR_SIZE) {
		fm_op_init(&op, WL_TRUNCATE);
		op.path = fm_rec_path(fm, n, NULL);
		op.size = (uint64_t)attr->st_size;
		r = ref_truncate(fm->fs, "", (uint64_t)attr->st_size);
		fm_rec(fm, &op, r);
	}
	if (!r && to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		fm_op_init(&op, WL_CHOWN);
		op.path = link ? (fm_rec_unsaid(fm, "chown of a symlink itself"), NULL) : fm_rec_path(fm, n, NULL);
		op.uid = to_set & FUSE_SET_ATTR_UID ? attr->st_uid : (uint32_t)-1;
		op.gid = to_set & FUSE_SET_ATTR_GID ? attr->st_gid : (uint32_t)-1;
		r = ref_lchown(fm->fs, "", op.uid, op.gid);
		fm_rec(fm, &op, r);
	}
	if (!r && to_set & FUSE_SET_ATTR_MODE) {
		fm_op_init(&op, WL_CHMOD);
		op.path = fm_rec_path(fm, n, NULL);
		op.mode = attr->st_mode & 07777;
		r = ref_chmod(fm->fs, "", op.mode);
		fm_rec(fm, &op, r);
	}
	if (!r && to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
		struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };
		if (to_set & FUSE_SET_ATTR_ATIME)
			ts[0] = to_set & FUSE_SET_ATTR_ATIME_NOW ? (struct timespec){ .tv_nsec = UTIME_NOW }
								 : attr->st_atim;
		if (to_set & FUSE_SET_ATTR_MTIME)
			ts[1] = to_set & FUSE_SET_ATTR_MTIME_NOW ? (struct timespec){ .tv_nsec = UTIME_NOW }
								 : attr->st_mtim;
		fm_op_init(&op, WL_UTIMES);
		op.path = link ? (fm_rec_unsaid(fm, "utimes of a symlink itself"), NULL) : fm_rec_path(fm, n, NULL);
		r = ref_lutimes(fm->fs, "", ts);
		/* "now" recorded as the time it became (the language has no now) */
		struct stat after;
		if (op.path && !r && !fm_stat(fm, n, &after)) {
			op.atime = ts[0].tv_nsec == UTIME_NOW ? after.st_atim : ts[0];
			op.mtime = ts[1].tv_nsec == UTIME_NOW ? after.st_mtim : ts[1];
		} else {
			op.atime = ts[0], op.mtime = ts[1];
		}
		fm_rec(fm, &op, r);
	}
	if (r)
		return fm_reply_err(req, fm, "setattr", r);
	fm_getattr(req, ino, NULL);
}

static void fm_readlink(fuse_req_t req, fuse_ino_t ino)
{
	fmount *fm = fm_of(req);
	char buf[4096];
	ssize_t n = ref_readlink(fm->fs, &fm_node(fm, ino)->ino, buf, sizeof(buf));
	if (n < 0)
		return fm_reply_err(req, fm, "readlink", (int)n);
	fuse_reply_readlink(req, buf);
}

/* Before a call that makes an inode: the base and the caller as owner. */
static struct fm_node *prepare(fuse_req_t req, fuse_ino_t parent)
{
	fmount *fm = fm_of(req);
	struct fm_node *p = fm_node(fm, parent);
	ref_chdir(fm->fs, &p->ino);
	if (!fm->opts.ro) {
		const struct fuse_ctx *c = fuse_req_ctx(req);
		ref_creds(fm->fs, c->uid, c->gid);
	}
	return p;
}

/* After it: the entry of the new inode, or the error. */
static void made(fuse_req_t req, struct fm_node *p, const char *name, int r, const char *op)
{
	fmount *fm = fm_of(req);
	struct ref_ino ino;
	if (!r)
		r = find(fm, &p->ino, name, &ino);
	if (r)
		return fm_reply_err(req, fm, op, r);
	reply_entry(req, fm, &p->ino, &ino, op);
}

static void fm_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	fmount *fm = fm_of(req);
	struct fm_node *p = prepare(req, parent);
	struct wl_op op;
	fm_op_init(&op, WL_CREATE);
	op.path = S_ISREG(mode) ? fm_rec_path(fm, p, name)
				: (fm_rec_unsaid(fm, "mknod of a fifo, socket or device"), NULL);
	op.mode = mode & 07777;
	int r = ref_mknod(fm->fs, name, mode, rdev);
	fm_rec(fm, &op, r);
	made(req, p, name, r, "mknod");
}

static void fm_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	fmount *fm = fm_of(req);
	struct fm_node *p = prepare(req, parent);
	struct wl_op op;
	fm_op_init(&op, WL_MKDIR);
	op.path = fm_rec_path(fm, p, name);
	op.mode = mode & 07777;
	int r = ref_mkdir(fm->fs, name, op.mode);
	fm_rec(fm, &op, r);
	made(req, p, name, r, "mkdir");
}

static void fm_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	fmount *fm = fm_of(req);
	struct fm_node *p = prepare(req, parent);
	struct wl_op op;
	fm_op_init(&op, WL_SYMLINK);
	op.path = fm_rec_path(fm, p, name);
	op.path2 = (char *)link;
	int r = ref_symlink(fm->fs, link, name);
	fm_rec(fm, &op, r);
	made(req, p, name, r, "symlink");
}

static void fm_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	fmount *fm = fm_of(req);
	struct fm_node *n = fm_node(fm, ino), *p = fm_node(fm, newparent);
	struct wl_op op;
	fm_op_init(&op, WL_LINK);
	op.path = fm_rec_path(fm, n, NULL);
	op.path2 = fm_rec_path(fm, p, newname);
	int r = ref_linkat(fm->fs, &n->ino, "", &p->ino, newname);
	fm_rec(fm, &op, r);
	made(req, p, newname, r, "link");
}

static void removed(fuse_req_t req, const struct ref_ino *victim, int r, const char *op)
{
	fmount *fm = fm_of(req);
	if (r)
		return fm_reply_err(req, fm, op, r);
	fm_node_maybe_gone(fm, victim);
	fuse_reply_err(req, 0);
}

static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, bool dir)
{
	fmount *fm = fm_of(req);
	struct fm_node *p = prepare(req, parent);
	struct ref_ino victim = { 0, 0 };
	find(fm, &p->ino, name, &victim);
	struct wl_op op;
	fm_op_init(&op, dir ? WL_RMDIR : WL_UNLINK);
	op.path = fm_rec_path(fm, p, name);
	int r = dir ? ref_rmdir(fm->fs, name) : ref_unlink(fm->fs, name);
	fm_rec(fm, &op, r);
	removed(req, &victim, r, dir ? "rmdir" : "unlink");
}

static void fm_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, false);
}

static void fm_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, true);
}

static void fm_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	fmount *fm = fm_of(req);
	struct fm_node *p = fm_node(fm, parent), *np = fm_node(fm, newparent);
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) /* RENAME_WHITEOUT */
		return fm_reply_err(req, fm, "rename", -EINVAL);
	struct ref_ino victim = { 0, 0 };
	find(fm, &np->ino, newname, &victim);
	struct wl_op op;
	fm_op_init(&op, WL_RENAME);
	op.path = fm_rec_path(fm, p, name);
	op.path2 = fm_rec_path(fm, np, newname);
	op.flags = (int)flags; /* RENAME_NOREPLACE, RENAME_EXCHANGE: the language's values */
	int r = ref_renameat(fm->fs, &p->ino, name, &np->ino, newname, flags);
	fm_rec(fm, &op, r);
	removed(req, &victim, r, "rename");
}

static void fm_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	fmount *fm = fm_of(req);
	struct fm_node *p = prepare(req, parent);
	struct ref_ino ino;
	struct wl_op op;
	fm_op_init(&op, WL_CREATE);
	op.path = fm_rec_path(fm, p, name);
	op.mode = mode & 07777;
	int r = ref_create(fm->fs, name, mode & 07777);
	fm_rec(fm, &op, r);
	if (!r)
		r = find(fm, &p->ino, name, &ino);
	if (r)
		return fm_reply_err(req, fm, "create", r);
	struct fm_node *n = fm_node_get(fm, &ino);
	if (!n)
		return fm_reply_err(req, fm, "create", -ENOMEM);
	n->parent = p->ino;
	struct fuse_entry_param e = { .ino = (fuse_ino_t)(uintptr_t)n, .attr_timeout = TIMEOUT,
				      .entry_timeout = TIMEOUT };
	if ((r = fm_stat(fm, n, &e.attr)) || (r = fm_hold(fm, n)))
		return fm_reply_err(req, fm, "create", r);
	fi->keep_cache = 1;
	if (fuse_reply_create(req, &e, fi) == 0)
		n->nlookup++;
	else
		fm_unhold(fm, n);
}

static void fm_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	fmount *fm = fm_of(req);
	struct ref_statfs s;
	int r = ref_statfs(fm->fs, &s);
	if (r)
		return fm_reply_err(req, fm, "statfs", r);
	struct statvfs v = { .f_bsize = s.bsize, .f_frsize = s.bsize, .f_blocks = s.blocks,
			     .f_bfree = s.bfree, .f_bavail = s.bavail, .f_namemax = s.namelen };
	fuse_reply_statfs(req, &v);
}

static void fm_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* Every write reaches ref as the program made it (no writeback
	 * cache); the kernel keeps the umask's work and the POSIX locks. */
	conn->want &= ~(unsigned)(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_DONT_MASK);
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want &= ~(unsigned)FUSE_CAP_EXPORT_SUPPORT;
	conn->max_write = 1u << 20;
	conn->max_readahead = 1u << 20;
}

const struct fuse_lowlevel_ops fm_ops = {
	.init = fm_init,
	.lookup = fm_lookup,
	.forget = fm_forget,
	.forget_multi = fm_forget_multi,
	.getattr = fm_getattr,
	.setattr = fm_setattr,
	.readlink = fm_readlink,
	.mknod = fm_mknod,
	.mkdir = fm_mkdir,
	.symlink = fm_symlink,
	.link = fm_link,
	.unlink = fm_unlink,
	.rmdir = fm_rmdir,
	.rename = fm_rename,
	.create = fm_create,
	.statfs = fm_statfs,
	.open = fm_open,
	.read = fm_read,
	.write = fm_write,
	.fsync = fm_fsync,
	.release = fm_release,
	.fallocate = fm_fallocate,
	.lseek = fm_lseek,
	.opendir = fm_opendir,
	.readdir = fm_readdir,
	.releasedir = fm_releasedir,
	.fsyncdir = fm_fsync,
	.setxattr = fm_setxattr,
	.getxattr = fm_getxattr,
	.listxattr = fm_listxattr,
	.removexattr = fm_removexattr,
};
