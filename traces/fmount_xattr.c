/*
 * fmount_xattr.c - the FUSE mount's extended attributes: set, get, list and
 * remove on the inode itself (a symlink's own, as the kernel hands FUSE the
 * inode the caller's l*xattr or *xattr resolved), with ref's namespaces,
 * POSIX ACLs and btrfs.compression property.
 */
#include "traces/fmount_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The node's path for the record, unless it is a symlink: the language's
 * xattr calls follow symlinks, so a symlink's own cannot be said. */
static char *unsaid_if_link(fmount *fm, const struct fm_node *n, const char *what)
{
	struct stat st;
	if (fm->opts.record && !fm_stat(fm, n, &st) && S_ISLNK(st.st_mode)) {
		fm_rec_unsaid(fm, what);
		return NULL;
	}
	return fm_rec_path(fm, n, NULL);
}

/* POSIX ACLs are no plain xattrs: the kernel keeps an access ACL that says
 * no more than the mode as the mode alone (acl.c), and removing an ACL
 * that is not there succeeds.  The language's setxattr stores bytes (the
 * oracle's model knows no ACLs), so an ACL call is recorded as what it
 * did: a chmod to the mode it left, nothing, or, when it stored an ACL,
 * left out and counted. */
static bool is_acl(const char *name)
{
	return !strncmp(name, "system.posix_acl_", 17);
}

static void record_acl(fmount *fm, struct fm_node *n, const char *name, bool removing, bool had,
		       int r)
{
	if (!fm->opts.record || r)
		return; /* (a refusal changed nothing) */
	ref_chdir(fm->fs, &n->ino);
	bool stored = ref_getxattr(fm->fs, "", name, NULL, 0) >= 0;
	struct stat st;
	if (stored || (removing && had) || strcmp(name, "system.posix_acl_access")) {
		if (stored || had)
			fm_rec_unsaid(fm, "a POSIX ACL beyond the mode bits");
		return;
	}
	if (removing || fm_stat(fm, n, &st))
		return;
	struct wl_op op;
	fm_op_init(&op, WL_CHMOD);
	op.path = fm_rec_path(fm, n, NULL);
	op.mode = st.st_mode & 07777;
	fm_rec(fm, &op, 0);
}

void fm_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
		 int flags)
{
	fmount *fm = fm_of(req);
	struct fm_node *n = fm_node(fm, ino);
	if (is_acl(name)) {
		ref_chdir(fm->fs, &n->ino);
		int r = ref_lsetxattr(fm->fs, "", name, value, size, flags);
		record_acl(fm, n, name, false, false, r);
		if (r)
			return fm_reply_err(req, fm, "setxattr", r);
		return (void)fuse_reply_err(req, 0);
	}
	struct wl_op op;
	fm_op_init(&op, WL_SETXATTR);
	op.path = unsaid_if_link(fm, n, "setxattr of a symlink itself");
	op.name = (char *)name;
	op.value = (uint8_t *)value;
	op.vlen = size;
	ref_chdir(fm->fs, &n->ino);
	int r = ref_lsetxattr(fm->fs, "", name, value, size, flags);
	/* the language's setxattr has no flags: a refusal for them changed
	 * nothing, a success is the plain call's */
	if (flags && r) {
		free(op.path);
		op.path = NULL;
	}
	fm_rec(fm, &op, r);
	if (r)
		return fm_reply_err(req, fm, "setxattr", r);
	fuse_reply_err(req, 0);
}

void fm_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fmount *fm = fm_of(req);
	struct fm_node *n = fm_node(fm, ino);
	if (is_acl(name)) {
		ref_chdir(fm->fs, &n->ino);
		bool had = ref_getxattr(fm->fs, "", name, NULL, 0) >= 0;
		int r = ref_lremovexattr(fm->fs, "", name);
		record_acl(fm, n, name, true, had, r);
		if (r)
			return fm_reply_err(req, fm, "removexattr", r);
		return (void)fuse_reply_err(req, 0);
	}
	struct wl_op op;
	fm_op_init(&op, WL_REMOVEXATTR);
	op.path = unsaid_if_link(fm, n, "removexattr of a symlink itself");
	op.name = (char *)name;
	ref_chdir(fm->fs, &n->ino);
	int r = ref_lremovexattr(fm->fs, "", name);
	fm_rec(fm, &op, r);
	if (r)
		return fm_reply_err(req, fm, "removexattr", r);
	fuse_reply_err(req, 0);
}

void fm_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	fmount *fm = fm_of(req);
	ref_chdir(fm->fs, &fm_node(fm, ino)->ino);
	ssize_t n = ref_getxattr(fm->fs, "", name, NULL, 0);
	if (n < 0)
		return fm_reply_err(req, fm, "getxattr", (int)n);
	if (size == 0)
		return (void)fuse_reply_xattr(req, (size_t)n);
	if ((size_t)n > size)
		return fm_reply_err(req, fm, "getxattr", -ERANGE);
	char *buf = malloc((size_t)n + 1);
	if (!buf)
		return fm_reply_err(req, fm, "getxattr", -ENOMEM);
	n = ref_getxattr(fm->fs, "", name, buf, (size_t)n);
	if (n < 0)
		fm_reply_err(req, fm, "getxattr", (int)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

struct names {
	char *buf;
	size_t len, cap;
};

static int add_name(void *ctx, const char *name, size_t nlen, const uint8_t *value, size_t vlen)
{
	(void)value, (void)vlen;
	struct names *l = ctx;
	if (l->len + nlen + 1 > l->cap) {
		size_t cap = (l->len + nlen + 1) * 2;
		char *b = realloc(l->buf, cap);
		if (!b)
			return -ENOMEM;
		l->buf = b, l->cap = cap;
	}
	memcpy(l->buf + l->len, name, nlen);
	l->buf[l->len + nlen] = '\0';
	l->len += nlen + 1;
	return 0;
}

void fm_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	fmount *fm = fm_of(req);
	struct names l = { 0 };
	int r = ref_listxattr(fm->fs, &fm_node(fm, ino)->ino, add_name, &l);
	if (r)
		fm_reply_err(req, fm, "listxattr", r);
	else if (size == 0)
		fuse_reply_xattr(req, l.len);
	else if (l.len > size)
		fm_reply_err(req, fm, "listxattr", -ERANGE);
	else
		fuse_reply_buf(req, l.buf, l.len);
	free(l.buf);
}
