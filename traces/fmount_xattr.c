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

void fm_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
		 int flags)
{
	fmount *fm = fm_of(req);
	ref_chdir(fm->fs, &fm_node(fm, ino)->ino);
	int r = ref_lsetxattr(fm->fs, "", name, value, size, flags);
	if (r)
		return fm_reply_err(req, fm, "setxattr", r);
	fuse_reply_err(req, 0);
}

void fm_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fmount *fm = fm_of(req);
	ref_chdir(fm->fs, &fm_node(fm, ino)->ino);
	int r = ref_lremovexattr(fm->fs, "", name);
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
