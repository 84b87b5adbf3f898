/*
 * run_host.c - the host target: each workload operation as the Linux system
 * call it stands for, inside a directory of the running kernel (typically a
 * btrfs mounted over a loop device).  The kernel's errnos are the reference
 * ref is compared with, so every operation is the syscall equivalent, in the
 * kernel's order of checks:
 *  - every path is resolved inside the root with openat2(RESOLVE_IN_ROOT):
 *    "..", absolute paths and absolute symlinks stay inside it;
 *  - name operations resolve the parent (all but the last component) that
 *    way and give the last component, exactly as written (".", "..", "b/",
 *    256 bytes), to the *at syscall, which gives the errno;
 *  - the path "/" (any run of slashes) is the root itself, where Linux's
 *    name operations fail before touching anything (fs/namei.c: "no last
 *    component"): those errnos are given without a syscall, since the host
 *    directory is not a real root (rmdir on it would remove it);
 *  - the few checks the kernel makes before looking a path up (a path of
 *    PATH_MAX bytes or more, an xattr name or value out of range, a negative
 *    truncate size, utimes with both times omitted, a write whose end passes
 *    2^63 - 1) are made first too;
 *  - subvolume operations are btrfs's ioctls on the parent directory, as
 *    btrfs-progs makes them (see do_subvol); quota-enable the quota ioctls
 *    on the root directory (do_quota_enable).
 */
#include "traces/run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

_Static_assert(WL_FALLOC_KEEP_SIZE == FALLOC_FL_KEEP_SIZE, "WL_FALLOC_* are FALLOC_FL_*");
_Static_assert(WL_FALLOC_PUNCH_HOLE == FALLOC_FL_PUNCH_HOLE, "WL_FALLOC_* are FALLOC_FL_*");
_Static_assert(WL_FALLOC_ZERO_RANGE == FALLOC_FL_ZERO_RANGE, "WL_FALLOC_* are FALLOC_FL_*");
_Static_assert(WL_RENAME_NOREPLACE == RENAME_NOREPLACE, "WL_RENAME_* are RENAME_*");
_Static_assert(WL_RENAME_EXCHANGE == RENAME_EXCHANGE, "WL_RENAME_* are RENAME_*");
_Static_assert(WL_UTIME_OMIT == UTIME_OMIT, "WL_UTIME_OMIT is UTIME_OMIT");
_Static_assert(WL_SNAP_RDONLY << 1 == BTRFS_SUBVOL_RDONLY, "snapshot ro is BTRFS_SUBVOL_RDONLY");

/* A write's data is generated and written this much at a time. */
#define WRITE_CHUNK ((size_t)1 << 20)
/* Linux's XATTR_NAME_MAX and XATTR_SIZE_MAX (linux/limits.h). */
#define HOST_XATTR_NAME_MAX 255
#define HOST_XATTR_SIZE_MAX 65536

/* Sets err to "what: strerror(-r)" and returns r (a negative errno). */
static int fail(char *err, size_t errlen, const char *what, int r)
{
	if (errlen)
		snprintf(err, errlen, "%s: %s", what, strerror(-r));
	return r;
}

/* openat2(rootfd, path, flags, RESOLVE_IN_ROOT): an fd or a negative errno.
 * EAGAIN (a rename raced with the walk) is retried. */
static int resolve(int rootfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_IN_ROOT,
	};
	for (int tries = 0;; tries++) {
		long fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
		if (fd >= 0)
			return (int)fd;
		if (errno != EAGAIN || tries >= 100)
			return -errno;
	}
}

/* getname(): a path of PATH_MAX bytes or more is refused before any lookup. */
static int check_len(const char *path, char *err, size_t errlen)
{
	if (strlen(path) >= PATH_MAX)
		return fail(err, errlen, "path", -ENAMETOOLONG);
	return 0;
}

/* A path's parent, resolved, and its last component. */
struct at {
	int dirfd;	  /* the parent directory (O_PATH), -1 for the root */
	const char *last; /* the last component with its trailing slashes; NULL: the path is "/" */
};

/* Resolves path's parent (everything before the last component) inside the
 * root.  0 or the negative errno of the resolution (the op's result). */
static int at_open(const struct wl_host *h, const char *path, struct at *a, const char *which,
		   char *err, size_t errlen)
{
	a->dirfd = -1;
	a->last = NULL;
	size_t end = strlen(path);
	while (end > 0 && path[end - 1] == '/')
		end--;
	if (end == 0)
		return 0; /* "/", "//", ...: the root itself */
	size_t start = end;
	while (start > 0 && path[start - 1] != '/')
		start--;
	char parent[PATH_MAX];
	if (start >= sizeof(parent))
		return fail(err, errlen, "path", -ENAMETOOLONG);
	memcpy(parent, path, start);
	parent[start] = 0; /* "/" or "/a/": start >= 1 since path is absolute */
	int fd = resolve(h->rootfd, parent, O_PATH | O_DIRECTORY, 0);
	if (fd < 0) {
		char what[64];
		snprintf(what, sizeof(what), "openat2 (parent of %s)", which);
		return fail(err, errlen, what, fd);
	}
	a->dirfd = fd;
	a->last = path + start;
	return 0;
}

static void at_close(struct at *a)
{
	if (a->dirfd >= 0)
		close(a->dirfd);
	a->dirfd = -1;
}

/* The last component is "." or ".." (possibly followed by slashes). */
static bool is_dots(const char *last)
{
	size_t n = strcspn(last, "/");
	return (n == 1 && last[0] == '.') || (n == 2 && last[0] == '.' && last[1] == '.');
}

/* The error Linux gives for a name operation on "/" (no last component):
 * the syscall's own check, made before it touches anything. */
static int on_root(const char *sys, int e, char *err, size_t errlen)
{
	if (errlen)
		snprintf(err, errlen, "%s: %s (the path is the root directory)", sys, strerror(e));
	return -e;
}

/* Opens the whole path (following a final symlink) inside the root. */
static int open_path(const struct wl_host *h, const char *path, int flags, mode_t mode,
		     char *err, size_t errlen)
{
	int fd = resolve(h->rootfd, path, flags, mode);
	if (fd < 0)
		return fail(err, errlen, "openat2", fd);
	return fd;
}

/* write (generated data, in chunks) and pwrite (the op's own bytes). */
static int do_write(const struct wl_host *h, const struct wl_op *op, char *err, size_t errlen)
{
	bool given = op->kind == WL_PWRITE;
	uint64_t len = given ? op->vlen : op->len;
	int sync = op->flags & WL_WRITE_SYNC ? O_SYNC : op->flags & WL_WRITE_DSYNC ? O_DSYNC : 0;
	int fd = open_path(h, op->path, O_WRONLY | sync, 0, err, errlen);
	if (fd < 0)
		return fd;
	/* One pwrite(2) of the whole range would be refused by rw_verify_area
	 * (EINVAL) when it starts or ends past 2^63 - 1: say so before any chunk
	 * is written. */
	if (op->off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - op->off) {
		close(fd);
		return fail(err, errlen, "pwrite (offset + length past 2^63 - 1)", -EINVAL);
	}
	size_t chunk = given ? (size_t)len : len < WRITE_CHUNK ? (size_t)len : WRITE_CHUNK;
	uint8_t one, *buf = given || !chunk ? &one : malloc(chunk);
	if (!buf) {
		close(fd);
		return fail(err, errlen, "write buffer", -ENOMEM);
	}
	int r = 0;
	uint64_t done = 0;
	do { /* at least one pwrite, also for a length of 0 */
		size_t n = len - done < chunk ? (size_t)(len - done) : chunk;
		const uint8_t *src = !given ? buf : done ? op->value + done : op->value;
		if (!given)
			wl_write_content(op->seed, op->flags, op->off + done, buf, n);
		ssize_t w = pwrite(fd, src, n, (off_t)(op->off + done));
		if (w < 0) {
			r = fail(err, errlen, "pwrite", -errno);
			break;
		}
		if (w == 0 && n > 0) {
			r = fail(err, errlen, "pwrite wrote nothing", -EIO);
			break;
		}
		done += (uint64_t)w;
	} while (done < len);
	if (buf != &one)
		free(buf);
	close(fd);
	return r;
}

/* truncate, fallocate, setxattr, removexattr, fsync, fdatasync: open the
 * path (following symlinks) with `flags`, then the call on the fd. */
static int on_fd(const struct wl_host *h, const struct wl_op *op, int flags, char *err,
		 size_t errlen)
{
	int fd = open_path(h, op->path, flags, 0, err, errlen);
	if (fd < 0)
		return fd;
	int r;
	const char *sys;
	switch (op->kind) {
	case WL_TRUNCATE:
		sys = "ftruncate";
		r = ftruncate(fd, (off_t)op->size);
		break;
	case WL_FALLOCATE:
		sys = "fallocate";
		r = fallocate(fd, op->flags, (off_t)op->off, (off_t)op->len);
		break;
	case WL_SETXATTR:
		sys = "fsetxattr";
		r = fsetxattr(fd, op->name, op->vlen ? (const void *)op->value : "", op->vlen, 0);
		break;
	case WL_REMOVEXATTR:
		sys = "fremovexattr";
		r = fremovexattr(fd, op->name);
		break;
	case WL_FSYNC:
		sys = "fsync";
		r = fsync(fd);
		break;
	default:
		sys = "fdatasync";
		r = fdatasync(fd);
		break;
	}
	r = r < 0 ? fail(err, errlen, sys, -errno) : 0;
	close(fd);
	return r;
}

/* chmod, chown, utimes: an O_PATH fd of the path (following symlinks), then
 * the call on it through /proc/self/fd or AT_EMPTY_PATH. */
static int on_path_fd(const struct wl_host *h, const struct wl_op *op, char *err, size_t errlen)
{
	int fd = open_path(h, op->path, O_PATH, 0, err, errlen);
	if (fd < 0)
		return fd;
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	int r;
	const char *sys;
	if (op->kind == WL_CHMOD) {
		sys = "chmod";
		r = chmod(proc, (mode_t)op->mode);
	} else if (op->kind == WL_CHOWN) {
		sys = "fchownat";
		r = fchownat(fd, "", (uid_t)op->uid, (gid_t)op->gid, AT_EMPTY_PATH);
	} else {
		sys = "utimensat";
		struct timespec ts[2] = { op->atime, op->mtime };
		r = utimensat(AT_FDCWD, proc, ts, 0);
	}
	r = r < 0 ? fail(err, errlen, sys, -errno) : 0;
	close(fd);
	return r;
}

/* mkdir, unlink, rmdir, symlink: resolve the parent, then the *at call. */
static int on_name(const struct wl_host *h, const struct wl_op *op, char *err, size_t errlen)
{
	int r;
	if (op->kind == WL_SYMLINK && (r = check_len(op->path2, err, errlen)))
		return r; /* symlinkat copies the target first */
	if ((r = check_len(op->path, err, errlen)))
		return r;
	struct at a;
	if ((r = at_open(h, op->path, &a, "PATH", err, errlen)))
		return r;
	const char *sys;
	switch (op->kind) {
	case WL_MKDIR:
		sys = "mkdirat";
		if (!a.last)
			return on_root(sys, EEXIST, err, errlen);
		r = mkdirat(a.dirfd, a.last, (mode_t)op->mode);
		break;
	case WL_UNLINK:
		sys = "unlinkat";
		if (!a.last)
			return on_root(sys, EISDIR, err, errlen);
		r = unlinkat(a.dirfd, a.last, 0);
		break;
	case WL_RMDIR:
		sys = "unlinkat(AT_REMOVEDIR)";
		if (!a.last)
			return on_root(sys, EBUSY, err, errlen);
		r = unlinkat(a.dirfd, a.last, AT_REMOVEDIR);
		break;
	default:
		sys = "symlinkat";
		if (!a.last)
			return on_root(sys, EEXIST, err, errlen);
		r = symlinkat(op->path2, a.dirfd, a.last);
		break;
	}
	r = r < 0 ? fail(err, errlen, sys, -errno) : 0;
	at_close(&a);
	return r;
}

/* link OLD NEW: like linkat(2), OLD is looked up whole (a final symlink not
 * followed) before NEW's parent; then the link is made from an O_PATH fd of
 * OLD through /proc/self/fd (which needs no CAP_DAC_READ_SEARCH, unlike
 * AT_EMPTY_PATH). */
static int do_link(const struct wl_host *h, const struct wl_op *op, char *err, size_t errlen)
{
	int r;
	if ((r = check_len(op->path, err, errlen)) || (r = check_len(op->path2, err, errlen)))
		return r;
	int oldfd = resolve(h->rootfd, op->path, O_PATH | O_NOFOLLOW, 0);
	if (oldfd < 0)
		return fail(err, errlen, "openat2 (OLD)", oldfd);
	struct at n;
	if ((r = at_open(h, op->path2, &n, "NEW", err, errlen))) {
		close(oldfd);
		return r;
	}
	if (!n.last) {
		close(oldfd);
		return on_root("linkat", EEXIST, err, errlen);
	}
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", oldfd);
	r = linkat(AT_FDCWD, proc, n.dirfd, n.last, AT_SYMLINK_FOLLOW);
	r = r < 0 ? fail(err, errlen, "linkat", -errno) : 0;
	at_close(&n);
	close(oldfd);
	return r;
}

/* rename OLD NEW: both parents resolved (OLD's first), then renameat2; on
 * "/" the checks of do_renameat2: OLD not a plain name -> EBUSY, then NEW
 * not a plain name -> EEXIST with noreplace, else EBUSY. */
static int do_rename(const struct wl_host *h, const struct wl_op *op, char *err, size_t errlen)
{
	int r;
	if ((r = check_len(op->path, err, errlen)) || (r = check_len(op->path2, err, errlen)))
		return r;
	struct at o, n;
	if ((r = at_open(h, op->path, &o, "OLD", err, errlen)))
		return r;
	if ((r = at_open(h, op->path2, &n, "NEW", err, errlen))) {
		at_close(&o);
		return r;
	}
	if (!o.last || (!n.last && is_dots(o.last)))
		r = on_root("renameat2", EBUSY, err, errlen);
	else if (!n.last)
		r = on_root("renameat2", op->flags & WL_RENAME_NOREPLACE ? EEXIST : EBUSY, err, errlen);
	else if (renameat2(o.dirfd, o.last, n.dirfd, n.last, (unsigned)op->flags) < 0)
		r = fail(err, errlen, "renameat2", -errno);
	else
		r = 0;
	at_close(&o);
	at_close(&n);
	return r;
}

/* The directory that stands for "/" opened O_RDONLY, for syncfs and the
 * ioctls that act on the whole file system (an O_PATH fd takes none); a
 * negative errno with err set. */
static int open_root(const struct wl_host *h, char *err, size_t errlen)
{
	int fd = openat(h->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? fail(err, errlen, "openat (root)", -errno) : fd;
}

/* ---- Subvolumes: btrfs's ioctls, as btrfs-progs makes them ---- */

/* How long subvol-sync waits for the cleaner before it gives up. */
#define SUBVOL_SYNC_TIMEOUT_S 300

/* The parent of path opened for an ioctl (O_RDONLY: an O_PATH fd takes no
 * ioctl) and the last component with its trailing slashes stripped, as
 * btrfs-progs's basename; name is NULL when the path is "/".  0 or the
 * negative errno of the resolution. */
static int subvol_parent(const struct wl_host *h, const char *path, int *dirfd,
			 char name[BTRFS_SUBVOL_NAME_MAX + 1], bool *root, const char *which,
			 char *err, size_t errlen)
{
	struct at a;
	int r;
	*dirfd = -1;
	*root = false;
	if ((r = at_open(h, path, &a, which, err, errlen)))
		return r;
	if (!a.last) {
		*root = true;
		return 0;
	}
	size_t n = strcspn(a.last, "/");
	if (n > BTRFS_SUBVOL_NAME_MAX) { /* btrfs-progs: "name too long" */
		at_close(&a);
		return fail(err, errlen, "subvolume name (over 4039 bytes)", -ENAMETOOLONG);
	}
	memcpy(name, a.last, n);
	name[n] = 0;
	/* Reopen the parent readable: ioctls refuse O_PATH descriptors. */
	int fd = openat(a.dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = fd < 0 ? fail(err, errlen, "openat (parent)", -errno) : 0;
	at_close(&a);
	*dirfd = fd;
	return r;
}

/* What subvol-create and subvol-delete do before their ioctl: PATH checked,
 * its parent opened (*dirfd) and its last component in args; on "/" (the
 * top level) no ioctl: the errno root_errno as the ioctl `sys` would give. */
static int subvol_path_args(const struct wl_host *h, const struct wl_op *op, const char *sys,
			    int root_errno, struct btrfs_ioctl_vol_args_v2 *args, int *dirfd,
			    char *err, size_t errlen)
{
	memset(args, 0, sizeof(*args));
	bool root;
	int r;
	if ((r = check_len(op->path, err, errlen)) ||
	    (r = subvol_parent(h, op->path, dirfd, args->name, &root, "PATH", err, errlen)))
		return r;
	return root ? on_root(sys, root_errno, err, errlen) : 0;
}

/* subvol-create PATH: BTRFS_IOC_SUBVOL_CREATE_V2 on the parent.  The new
 * root directory's mode is 0777 less the umask (btrfs_new_subvol_inode):
 * the umask is 022 around the ioctl, as `btrfs subvolume create` in a shell,
 * so that it is 0755 (wl_host_open's umask of 0 would make it 0777). */
static int do_subvol_create(const struct wl_host *h, const struct wl_op *op, char *err,
			    size_t errlen)
{
	struct btrfs_ioctl_vol_args_v2 args;
	int dirfd, r = subvol_path_args(h, op, "BTRFS_IOC_SUBVOL_CREATE_V2", EEXIST, &args, &dirfd,
					err, errlen);
	if (r)
		return r;
	mode_t old = umask(022);
	r = ioctl(dirfd, BTRFS_IOC_SUBVOL_CREATE_V2, &args);
	r = r < 0 ? -errno : 0;
	umask(old);
	close(dirfd);
	return r ? fail(err, errlen, "BTRFS_IOC_SUBVOL_CREATE_V2", r) : 0;
}

/* snapshot SRC DEST [ro]: SRC opened first (following symlinks), then DEST's
 * parent, as `btrfs subvolume snapshot` does; BTRFS_IOC_SNAP_CREATE_V2 on the
 * parent with SRC's fd (BTRFS_SUBVOL_RDONLY for ro). */
static int do_snapshot(const struct wl_host *h, const struct wl_op *op, char *err, size_t errlen)
{
	struct btrfs_ioctl_vol_args_v2 args;
	memset(&args, 0, sizeof(args));
	int r;
	if ((r = check_len(op->path, err, errlen)) || (r = check_len(op->path2, err, errlen)))
		return r;
	int src = resolve(h->rootfd, op->path, O_RDONLY, 0);
	if (src < 0)
		return fail(err, errlen, "openat2 (SRC)", src);
	int dirfd;
	bool root;
	if ((r = subvol_parent(h, op->path2, &dirfd, args.name, &root, "DEST", err, errlen))) {
		close(src);
		return r;
	}
	if (root) {
		close(src);
		return on_root("BTRFS_IOC_SNAP_CREATE_V2", EEXIST, err, errlen);
	}
	args.fd = src;
	args.flags = op->flags & WL_SNAP_RDONLY ? BTRFS_SUBVOL_RDONLY : 0;
	r = ioctl(dirfd, BTRFS_IOC_SNAP_CREATE_V2, &args) < 0 ? -errno : 0;
	close(dirfd);
	close(src);
	return r ? fail(err, errlen, "BTRFS_IOC_SNAP_CREATE_V2", r) : 0;
}

/* subvol-delete PATH: BTRFS_IOC_SNAP_DESTROY_V2 on the parent with the last
 * component (not followed: a symlink is not a subvolume).  "/" is the top
 * level, which cannot be deleted: EPERM without an ioctl (the host directory
 * is not the file system's top level). */
static int do_subvol_delete(const struct wl_host *h, const struct wl_op *op, char *err,
			    size_t errlen)
{
	struct btrfs_ioctl_vol_args_v2 args;
	int dirfd, r = subvol_path_args(h, op, "BTRFS_IOC_SNAP_DESTROY_V2", EPERM, &args, &dirfd,
					err, errlen);
	if (r)
		return r;
	r = ioctl(dirfd, BTRFS_IOC_SNAP_DESTROY_V2, &args) < 0 ? -errno : 0;
	close(dirfd);
	return r ? fail(err, errlen, "BTRFS_IOC_SNAP_DESTROY_V2", r) : 0;
}

/* Items of the root tree (tree 1) with objectid in [lo, hi] and type t:
 * how many BTRFS_IOC_TREE_SEARCH finds (at most its buffer's worth), the
 * offsets of the first ones in off[]; or the negative errno. */
static int root_tree_items(int fd, uint64_t lo, uint64_t hi, uint32_t t, uint64_t *off,
			   size_t maxoff)
{
	struct btrfs_ioctl_search_args sa;
	memset(&sa, 0, sizeof(sa));
	sa.key.tree_id = BTRFS_ROOT_TREE_OBJECTID;
	sa.key.min_objectid = lo;
	sa.key.max_objectid = hi;
	sa.key.min_type = sa.key.max_type = t;
	sa.key.max_offset = UINT64_MAX;
	sa.key.max_transid = UINT64_MAX;
	sa.key.nr_items = 4096;
	if (ioctl(fd, BTRFS_IOC_TREE_SEARCH, &sa) < 0)
		return -errno;
	size_t pos = 0, n = 0;
	for (uint32_t i = 0; i < sa.key.nr_items; i++) {
		struct btrfs_ioctl_search_header sh;
		if (pos + sizeof(sh) > sizeof(sa.buf))
			break;
		memcpy(&sh, sa.buf + pos, sizeof(sh));
		pos += sizeof(sh) + sh.len;
		if (sh.type != t || sh.objectid < lo || sh.objectid > hi)
			continue;
		if (n < maxoff)
			off[n] = sh.offset;
		n++;
	}
	return (int)n;
}

/* subvol-sync: what `btrfs subvolume sync` does - the deleted subvolumes
 * are those with an orphan item in the root tree; wait until the ROOT_ITEM
 * of each is gone.  BTRFS_IOC_SYNC between the polls wakes the cleaner
 * (which otherwise waits for the next periodic commit, 30 s).  On a file
 * system other than btrfs the search's errno (ENOTTY). */
static int do_subvol_sync(const struct wl_host *h, char *err, size_t errlen)
{
	int fd = open_root(h, err, errlen);
	if (fd < 0)
		return fd;
	uint64_t ids[512];
	int r = root_tree_items(fd, BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_OBJECTID,
				BTRFS_ORPHAN_ITEM_KEY, ids, 512);
	if (r < 0) {
		close(fd);
		return fail(err, errlen, "BTRFS_IOC_TREE_SEARCH (deleted subvolumes)", r);
	}
	size_t n = (size_t)r < 512 ? (size_t)r : 512;
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < n;) {
		int left = root_tree_items(fd, ids[i], ids[i], BTRFS_ROOT_ITEM_KEY, NULL, 0);
		if (left < 0) {
			close(fd);
			return fail(err, errlen, "BTRFS_IOC_TREE_SEARCH (a root item)", left);
		}
		if (left == 0) {
			i++;
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec > SUBVOL_SYNC_TIMEOUT_S) {
			close(fd);
			return fail(err, errlen, "waiting for the cleaner", -ETIMEDOUT);
		}
		if (ioctl(fd, BTRFS_IOC_SYNC, NULL) < 0) {
			r = -errno;
			close(fd);
			return fail(err, errlen, "BTRFS_IOC_SYNC", r);
		}
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	close(fd);
	return 0;
}

/* ---- Quota groups ---- */

/* quota-enable: what `btrfs quota enable` does, BTRFS_IOC_QUOTA_CTL with
 * BTRFS_QUOTA_CTL_ENABLE on the root directory, then
 * BTRFS_IOC_QUOTA_RESCAN_WAIT, so that the numbers are settled when it
 * returns (ref's ref_qgroup_enable counts them before it returns).  Linux
 * 6.18 gives 0 when quotas are on already, EPERM without CAP_SYS_ADMIN,
 * EROFS on a read-only mount; elsewhere than on btrfs ENOTTY. */
static int do_quota_enable(const struct wl_host *h, char *err, size_t errlen)
{
	int fd = open_root(h, err, errlen);
	if (fd < 0)
		return fd;
	struct btrfs_ioctl_quota_ctl_args qa = { .cmd = BTRFS_QUOTA_CTL_ENABLE };
	int r = 0;
	if (ioctl(fd, BTRFS_IOC_QUOTA_CTL, &qa) < 0)
		r = fail(err, errlen, "BTRFS_IOC_QUOTA_CTL (enable)", -errno);
	else if (ioctl(fd, BTRFS_IOC_QUOTA_RESCAN_WAIT, NULL) < 0)
		r = fail(err, errlen, "BTRFS_IOC_QUOTA_RESCAN_WAIT", -errno);
	close(fd);
	return r;
}

/* balance: `btrfs balance start --full-balance`, BTRFS_IOC_BALANCE_V2 on
 * the root directory with every kind of block group and no filter. */
static int do_balance(const struct wl_host *h, char *err, size_t errlen)
{
	int fd = open_root(h, err, errlen);
	if (fd < 0)
		return fd;
	struct btrfs_ioctl_balance_args ba;
	memset(&ba, 0, sizeof(ba));
	ba.flags = BTRFS_BALANCE_TYPE_MASK;
	int r = ioctl(fd, BTRFS_IOC_BALANCE_V2, &ba) < 0 ? fail(err, errlen, "BTRFS_IOC_BALANCE_V2", -errno)
							  : 0;
	close(fd);
	return r;
}

/* device-remove: `btrfs device remove DEVID`, BTRFS_IOC_RM_DEV_V2 on the root
 * directory, the device named by its id.  A profile that would be left with
 * too few devices is a positive return, one of btrfs's own error codes
 * (BTRFS_ERROR_DEV_RAID1_MIN_NOT_MET...), which btrfs-progs prints as
 * text: EINVAL here, as ref gives. */
static int do_device_remove(const struct wl_host *h, const struct wl_op *op, char *err,
			    size_t errlen)
{
	int fd = open_root(h, err, errlen);
	if (fd < 0)
		return fd;
	struct btrfs_ioctl_vol_args_v2 va;
	memset(&va, 0, sizeof(va));
	va.flags = BTRFS_DEVICE_SPEC_BY_ID;
	va.devid = op->devid;
	int r = ioctl(fd, BTRFS_IOC_RM_DEV_V2, &va);
	if (r < 0)
		r = fail(err, errlen, "BTRFS_IOC_RM_DEV_V2", -errno);
	else if (r > 0)
		r = fail(err, errlen, "BTRFS_IOC_RM_DEV_V2 (btrfs error: too few devices left)", -EINVAL);
	close(fd);
	return r;
}

/* defrag: `btrfs filesystem defragment [-cALG] PATH`, BTRFS_IOC_DEFRAG_RANGE
 * with btrfs-progs' arguments (the whole file, a 32 MiB target); on a
 * directory the kernel defragments its subvolume's tree. */
static int do_defrag(const struct wl_host *h, const struct wl_op *op, char *err, size_t errlen)
{
	int fd = open_path(h, op->path, O_RDONLY, 0, err, errlen);
	if (fd < 0)
		return fd;
	struct btrfs_ioctl_defrag_range_args a;
	memset(&a, 0, sizeof(a));
	a.len = (uint64_t)-1;
	a.extent_thresh = 32u << 20;
	if (op->flags) {
		a.flags = BTRFS_DEFRAG_RANGE_COMPRESS;
		a.compress_type = (uint32_t)op->flags;
	}
	int r = ioctl(fd, BTRFS_IOC_DEFRAG_RANGE, &a) < 0
			? fail(err, errlen, "BTRFS_IOC_DEFRAG_RANGE", -errno)
			: 0;
	close(fd);
	return r;
}

/* clone, clone-range and dedupe through the ioctls: SRC opened for reading,
 * then DST for writing (a dedupe's for reading: the kernel lets the owner,
 * or root, dedupe into a file it only reads, a read-only snapshot's too);
 * O_NONBLOCK so that a fifo cannot hang the run.  A dedupe's status is the
 * result: EBADE for differing bytes (FILE_DEDUPE_RANGE_DIFFERS). */
static int do_reflink(const struct wl_host *h, const struct wl_op *op, char *err, size_t errlen)
{
	int sfd = open_path(h, op->path, O_RDONLY | O_NONBLOCK, 0, err, errlen);
	if (sfd < 0)
		return sfd;
	int dflags = (op->kind == WL_DEDUPE ? O_RDONLY : O_WRONLY) | O_NONBLOCK;
	int dfd = open_path(h, op->path2, dflags, 0, err, errlen);
	if (dfd < 0) {
		close(sfd);
		return dfd;
	}
	int r = 0;
	if (op->kind == WL_CLONE) {
		if (ioctl(dfd, FICLONE, sfd) < 0)
			r = fail(err, errlen, "FICLONE", -errno);
	} else if (op->kind == WL_CLONE_RANGE) {
		struct file_clone_range a = { .src_fd = sfd, .src_offset = op->off,
					      .src_length = op->len, .dest_offset = op->off2 };
		if (ioctl(dfd, FICLONERANGE, &a) < 0)
			r = fail(err, errlen, "FICLONERANGE", -errno);
	} else {
		struct file_dedupe_range *a = calloc(1, sizeof(*a) + sizeof(a->info[0]));
		if (!a) {
			r = fail(err, errlen, "FIDEDUPERANGE", -ENOMEM);
		} else {
			a->src_offset = op->off;
			a->src_length = op->len;
			a->dest_count = 1;
			a->info[0].dest_fd = dfd;
			a->info[0].dest_offset = op->off2;
			if (ioctl(sfd, FIDEDUPERANGE, a) < 0)
				r = fail(err, errlen, "FIDEDUPERANGE", -errno);
			else if (a->info[0].status == FILE_DEDUPE_RANGE_DIFFERS)
				r = fail(err, errlen, "FIDEDUPERANGE (the bytes differ)", -EBADE);
			else if (a->info[0].status < 0)
				r = fail(err, errlen, "FIDEDUPERANGE", a->info[0].status);
			free(a);
		}
	}
	close(dfd);
	close(sfd);
	return r;
}

int wl_exec_host(void *host, const struct wl_op *op, char *err, size_t errlen)
{
	const struct wl_host *h = host;
	if (errlen)
		err[0] = 0;
	const char *why = wl_op_problem(op);
	if (why) {
		if (errlen)
			snprintf(err, errlen, "invalid operation: %s", why);
		return -EINVAL;
	}
	switch (op->kind) {
	case WL_MKDIR:
	case WL_UNLINK:
	case WL_RMDIR:
	case WL_SYMLINK:
		return on_name(h, op, err, errlen);
	case WL_CREATE: {
		int fd = open_path(h, op->path, O_CREAT | O_EXCL | O_WRONLY, (mode_t)op->mode, err,
				   errlen);
		if (fd < 0)
			return fd;
		close(fd);
		return 0;
	}
	case WL_WRITE:
	case WL_PWRITE:
		return do_write(h, op, err, errlen);
	case WL_TRUNCATE:
		/* truncate(2) refuses a negative length before the lookup */
		if (op->size > (uint64_t)INT64_MAX)
			return fail(err, errlen, "truncate (size past 2^63 - 1)", -EINVAL);
		return on_fd(h, op, O_WRONLY, err, errlen);
	case WL_FALLOCATE:
		return on_fd(h, op, O_WRONLY, err, errlen);
	case WL_SETXATTR:
	case WL_REMOVEXATTR: {
		/* setxattr(2) and removexattr(2) copy the name (and value) first */
		size_t nl = strlen(op->name);
		if (nl == 0 || nl > HOST_XATTR_NAME_MAX)
			return fail(err, errlen, "xattr name (empty or over 255 bytes)", -ERANGE);
		if (op->kind == WL_SETXATTR && op->vlen > HOST_XATTR_SIZE_MAX)
			return fail(err, errlen, "xattr value (over 64 KiB)", -E2BIG);
		return on_fd(h, op, O_RDONLY, err, errlen);
	}
	case WL_FSYNC:
	case WL_FDATASYNC:
		return on_fd(h, op, O_RDONLY, err, errlen);
	case WL_LINK:
		return do_link(h, op, err, errlen);
	case WL_RENAME:
		return do_rename(h, op, err, errlen);
	case WL_UTIMES:
		/* utimensat(2) with both times omitted returns before the lookup */
		if (op->atime.tv_nsec == WL_UTIME_OMIT && op->mtime.tv_nsec == WL_UTIME_OMIT)
			return 0;
		return on_path_fd(h, op, err, errlen);
	case WL_CHMOD:
	case WL_CHOWN:
		return on_path_fd(h, op, err, errlen);
	case WL_SYNC: {
		int fd = open_root(h, err, errlen);
		if (fd < 0)
			return fd;
		int r = syncfs(fd) < 0 ? fail(err, errlen, "syncfs", -errno) : 0;
		close(fd);
		return r;
	}
	case WL_SUBVOL_CREATE:
		return do_subvol_create(h, op, err, errlen);
	case WL_SNAPSHOT:
		return do_snapshot(h, op, err, errlen);
	case WL_SUBVOL_DELETE:
		return do_subvol_delete(h, op, err, errlen);
	case WL_SUBVOL_SYNC:
		return do_subvol_sync(h, err, errlen);
	case WL_QUOTA_ENABLE:
		return do_quota_enable(h, err, errlen);
	case WL_BALANCE:
		return do_balance(h, err, errlen);
	case WL_DEVICE_REMOVE:
		return do_device_remove(h, op, err, errlen);
	case WL_DEFRAG:
		return do_defrag(h, op, err, errlen);
	case WL_CLONE:
	case WL_CLONE_RANGE:
	case WL_DEDUPE:
		return do_reflink(h, op, err, errlen);
	case WL_RECEIVE: {
		int fd = open_path(h, op->path, O_PATH | O_DIRECTORY, 0, err, errlen);
		if (fd < 0)
			return fd;
		int r = wl_host_receive(fd, op->value, op->vlen, err, errlen);
		close(fd);
		return r;
	}
	case WL_MARK:
		return 0;
	case WL_CRASH:
		if (errlen)
			snprintf(err, errlen, "crash cannot be run on a host directory");
		return -EOPNOTSUPP;
	default:
		if (errlen)
			snprintf(err, errlen, "unknown operation %d", (int)op->kind);
		return -EINVAL;
	}
}

int wl_host_open(const char *dir, struct wl_host *h, char *err, size_t errlen)
{
	h->rootfd = -1;
	h->root = NULL;
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int r = -errno;
		if (errlen)
			snprintf(err, errlen, "%s: %s", dir, strerror(-r));
		return r;
	}
	int probe = resolve(fd, "/", O_PATH | O_DIRECTORY, 0);
	if (probe < 0) {
		if (errlen)
			snprintf(err, errlen, "%s: openat2 with RESOLVE_IN_ROOT: %s%s", dir,
				 strerror(-probe), probe == -ENOSYS ? " (Linux 5.6 or later needed)" : "");
		close(fd);
		return probe;
	}
	close(probe);
	char *root = realpath(dir, NULL);
	if (!root && !(root = strdup(dir))) {
		close(fd);
		if (errlen)
			snprintf(err, errlen, "%s: out of memory", dir);
		return -ENOMEM;
	}
	umask(0); /* modes come out as the workload gives them */
	h->rootfd = fd;
	h->root = root;
	if (errlen)
		err[0] = 0;
	return 0;
}

void wl_host_close(struct wl_host *h)
{
	if (!h)
		return;
	if (h->rootfd >= 0)
		close(h->rootfd);
	free(h->root);
	h->rootfd = -1;
	h->root = NULL;
}
