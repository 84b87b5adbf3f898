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
 *    2^63 - 1) are made first too.
 */
#include "traces/run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

_Static_assert(WL_FALLOC_KEEP_SIZE == FALLOC_FL_KEEP_SIZE, "WL_FALLOC_* are FALLOC_FL_*");
_Static_assert(WL_FALLOC_PUNCH_HOLE == FALLOC_FL_PUNCH_HOLE, "WL_FALLOC_* are FALLOC_FL_*");
_Static_assert(WL_RENAME_NOREPLACE == RENAME_NOREPLACE, "WL_RENAME_* are RENAME_*");
_Static_assert(WL_RENAME_EXCHANGE == RENAME_EXCHANGE, "WL_RENAME_* are RENAME_*");
_Static_assert(WL_UTIME_OMIT == UTIME_OMIT, "WL_UTIME_OMIT is UTIME_OMIT");

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

static int do_write(const struct wl_host *h, const struct wl_op *op, char *err, size_t errlen)
{
	int fd = open_path(h, op->path, O_WRONLY, 0, err, errlen);
	if (fd < 0)
		return fd;
	/* One pwrite(2) of the whole range would be refused by rw_verify_area
	 * (EINVAL) when it starts or ends past 2^63 - 1: say so before any chunk
	 * is written. */
	if (op->off > (uint64_t)INT64_MAX || op->len > (uint64_t)INT64_MAX - op->off) {
		close(fd);
		return fail(err, errlen, "pwrite (offset + length past 2^63 - 1)", -EINVAL);
	}
	size_t chunk = op->len < WRITE_CHUNK ? (size_t)op->len : WRITE_CHUNK;
	uint8_t one, *buf = chunk ? malloc(chunk) : &one;
	if (!buf) {
		close(fd);
		return fail(err, errlen, "write buffer", -ENOMEM);
	}
	int r = 0;
	uint64_t done = 0;
	do { /* at least one pwrite, also for a length of 0 */
		size_t n = op->len - done < chunk ? (size_t)(op->len - done) : chunk;
		wl_content(op->seed, op->off + done, buf, n);
		ssize_t w = pwrite(fd, buf, n, (off_t)(op->off + done));
		if (w < 0) {
			r = fail(err, errlen, "pwrite", -errno);
			break;
		}
		if (w == 0 && n > 0) {
			r = fail(err, errlen, "pwrite wrote nothing", -EIO);
			break;
		}
		done += (uint64_t)w;
	} while (done < op->len);
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
		int fd = openat(h->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return fail(err, errlen, "openat (root)", -errno);
		int r = syncfs(fd) < 0 ? fail(err, errlen, "syncfs", -errno) : 0;
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
