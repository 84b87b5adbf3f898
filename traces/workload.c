/*
 * workload.c - the operations of the workload language and the workload
 * container: the table of kinds and their arguments, defaults, validity of
 * one op, appending (by copy or by move) and freeing.  wl_append copies only
 * the fields the op's kind uses, so the stored op equals what the parser
 * makes of wl_format's line for it.
 */
#include "wl_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef UTIME_OMIT
_Static_assert(WL_UTIME_OMIT == UTIME_OMIT, "WL_UTIME_OMIT is Linux's UTIME_OMIT");
#endif

#define P(label) { WA_PATH, label }
#define K(name, nreq, nargs, ...) { name, nreq, nargs, { __VA_ARGS__ } }

const struct wl_kind_info wl_kinds[WL_NKINDS] = {
	[WL_MKDIR] = K("mkdir", 1, 2, P("PATH"), { WA_MODE, "MODE" }),
	[WL_CREATE] = K("create", 1, 2, P("PATH"), { WA_MODE, "MODE" }),
	[WL_WRITE] = K("write", 3, 5, P("PATH"), { WA_OFF, "OFFSET" }, { WA_LEN, "LENGTH" },
		       { WA_SEED, "SEED" }, { WA_WSYNC, "sync|dsync" }),
	[WL_TRUNCATE] = K("truncate", 2, 2, P("PATH"), { WA_SIZE, "SIZE" }),
	[WL_FALLOCATE] = K("fallocate", 3, 4, P("PATH"), { WA_OFF, "OFFSET" },
			   { WA_LEN, "LENGTH" }, { WA_FALLOC, "keep-size|punch-hole|zero-range|zero-range-keep-size" }),
	[WL_LINK] = K("link", 2, 2, P("OLD"), { WA_PATH2, "NEW" }),
	[WL_SYMLINK] = K("symlink", 2, 2, { WA_TARGET, "TARGET" }, P("PATH")),
	[WL_RENAME] = K("rename", 2, 3, P("OLD"), { WA_PATH2, "NEW" },
			{ WA_RENAME, "noreplace|exchange" }),
	[WL_UNLINK] = K("unlink", 1, 1, P("PATH")),
	[WL_RMDIR] = K("rmdir", 1, 1, P("PATH")),
	[WL_SETXATTR] = K("setxattr", 3, 3, P("PATH"), { WA_XNAME, "NAME" },
			  { WA_XVALUE, "VALUE" }),
	[WL_REMOVEXATTR] = K("removexattr", 2, 2, P("PATH"), { WA_XNAME, "NAME" }),
	[WL_CHMOD] = K("chmod", 2, 2, P("PATH"), { WA_MODE, "MODE" }),
	[WL_CHOWN] = K("chown", 3, 3, P("PATH"), { WA_UID, "UID" }, { WA_GID, "GID" }),
	[WL_UTIMES] = K("utimes", 3, 3, P("PATH"), { WA_ATIME, "ATIME" }, { WA_MTIME, "MTIME" }),
	[WL_FSYNC] = K("fsync", 1, 1, P("PATH")),
	[WL_FDATASYNC] = K("fdatasync", 1, 1, P("PATH")),
	[WL_SYNC] = K("sync", 0, 0, { 0 }),
	[WL_MARK] = K("mark", 1, 1, { WA_MARK, "NAME" }),
	[WL_CRASH] = K("crash", 0, 0, { 0 }),
	[WL_SUBVOL_CREATE] = K("subvol-create", 1, 1, P("PATH")),
	[WL_SNAPSHOT] = K("snapshot", 2, 3, P("SRC"), { WA_PATH2, "DEST" }, { WA_SNAP, "ro" }),
	[WL_SUBVOL_DELETE] = K("subvol-delete", 1, 1, P("PATH")),
	[WL_SUBVOL_SYNC] = K("subvol-sync", 0, 0, { 0 }),
	[WL_QUOTA_ENABLE] = K("quota-enable", 0, 0, { 0 }),
	[WL_BALANCE] = K("balance", 0, 0, { 0 }),
	[WL_DEFRAG] = K("defrag", 1, 2, P("PATH"), { WA_DEFRAG, "zlib|lzo|zstd" }),
	[WL_RECEIVE] = K("receive", 2, 2, { WA_STREAM, "STREAM" }, P("DIR")),
	[WL_CLONE] = K("clone", 2, 2, P("SRC"), { WA_PATH2, "DST" }),
	[WL_CLONE_RANGE] = K("clone-range", 5, 5, P("SRC"), { WA_OFF, "SOFF" }, { WA_LEN, "LEN" },
			     { WA_PATH2, "DST" }, { WA_OFF2, "DOFF" }),
	[WL_DEDUPE] = K("dedupe", 5, 5, P("SRC"), { WA_OFF, "SOFF" }, { WA_LEN, "LEN" },
			{ WA_PATH2, "DST" }, { WA_OFF2, "DOFF" }),
	[WL_DEVICE_REMOVE] = K("device-remove", 1, 1, { WA_DEVID, "DEVID" }),
	[WL_PWRITE] = K("pwrite", 3, 4, P("PATH"), { WA_OFF, "OFFSET" }, { WA_DATA, "DATA" },
			{ WA_WSYNC, "sync|dsync" }),
};

#undef P
#undef K

size_t wl_setup_ops(const struct wl_workload *w)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->ops[i].kind == WL_MARK && w->ops[i].name && !strcmp(w->ops[i].name, "setup"))
			return i + 1;
	return 0;
}

const char *wl_kind_name(enum wl_kind k)
{
	return (unsigned)k < WL_NKINDS ? wl_kinds[k].name : NULL;
}

int wl_kind_parse(const char *name)
{
	for (int k = 0; k < WL_NKINDS; k++)
		if (!strcmp(wl_kinds[k].name, name))
			return k;
	return -1;
}

void wl_usage(enum wl_kind k, char *buf, size_t len)
{
	const struct wl_kind_info *ki = &wl_kinds[k];
	size_t n = (size_t)snprintf(buf, len, "%s", ki->name);
	/* optional arguments nest, being positional: write ... [SEED [sync|dsync]] */
	for (unsigned i = 0; i < ki->nargs; i++) {
		const char *fmt = i < ki->nreq ? " %s" : " [%s";
		n += (size_t)snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, fmt,
				      ki->args[i].label);
	}
	for (unsigned i = ki->nreq; i < ki->nargs; i++)
		n += (size_t)snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, "]");
}

void wl_op_init(struct wl_op *op, enum wl_kind k)
{
	memset(op, 0, sizeof(*op));
	op->kind = k;
	if (k == WL_MKDIR)
		op->mode = 0755;
	else if (k == WL_CREATE)
		op->mode = 0644;
}

bool wl_is_mark_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

static bool is_abs(const char *p)
{
	return p && p[0] == '/';
}

static bool time_ok(const struct timespec *t)
{
	return t->tv_nsec == WL_UTIME_OMIT || (t->tv_nsec >= 0 && t->tv_nsec < 1000000000L);
}

static const char *arg_problem(const struct wl_op *op, enum wl_arg a)
{
	switch (a) {
	case WA_PATH:
		return is_abs(op->path) ? NULL : "path is not absolute";
	case WA_PATH2:
		return is_abs(op->path2) ? NULL : "new path is not absolute";
	case WA_TARGET:
		return op->path2 && op->path2[0] ? NULL : "symlink target is empty";
	case WA_MODE:
		return op->mode <= 07777 ? NULL : "mode is above 07777";
	case WA_FALLOC:
		return op->flags == 0 || op->flags == WL_FALLOC_KEEP_SIZE ||
				       op->flags == (WL_FALLOC_KEEP_SIZE | WL_FALLOC_PUNCH_HOLE) ||
				       op->flags == WL_FALLOC_ZERO_RANGE ||
				       op->flags == (WL_FALLOC_ZERO_RANGE | WL_FALLOC_KEEP_SIZE)
			       ? NULL
			       : "fallocate flags are not 0, keep-size, punch-hole|keep-size or zero-range[|keep-size]";
	case WA_RENAME:
		return op->flags == 0 || op->flags == WL_RENAME_NOREPLACE ||
				       op->flags == WL_RENAME_EXCHANGE
			       ? NULL
			       : "rename flags are not 0, noreplace or exchange";
	case WA_SNAP:
		return op->flags == 0 || op->flags == WL_SNAP_RDONLY ? NULL
								     : "snapshot flags are not 0 or ro";
	case WA_WSYNC:
		return (op->flags & ~WL_WRITE_TEXT) == 0 ||
				       (op->flags & ~WL_WRITE_TEXT) == WL_WRITE_SYNC ||
				       (op->flags & ~WL_WRITE_TEXT) == WL_WRITE_DSYNC
			       ? NULL
			       : "write flags are not 0, sync or dsync (with text data or not)";
	case WA_DEFRAG:
		return op->flags >= 0 && op->flags <= 3 ? NULL
							: "defrag flags are not 0, zlib, lzo or zstd";
	case WA_XNAME:
		return op->name ? NULL : "xattr name is missing";
	case WA_XVALUE:
		return op->value || !op->vlen ? NULL : "xattr value is missing";
	case WA_STREAM:
		return op->value || !op->vlen ? NULL : "send stream is missing";
	case WA_DATA:
		return op->value || !op->vlen ? NULL : "data is missing";
	case WA_ATIME:
		return time_ok(&op->atime) ? NULL : "atime nanoseconds out of range";
	case WA_MTIME:
		return time_ok(&op->mtime) ? NULL : "mtime nanoseconds out of range";
	case WA_MARK:
		if (!op->name || !op->name[0])
			return "mark name is empty";
		for (const char *c = op->name; *c; c++)
			if (!wl_is_mark_byte((unsigned char)*c))
				return "mark name holds a byte outside [A-Za-z0-9_.-]";
		return NULL;
	case WA_DEVID:
		return op->devid ? NULL : "devid is 0 (devids start at 1)";
	default:
		return NULL; /* numbers: every value is valid */
	}
}

const char *wl_op_problem(const struct wl_op *op)
{
	if ((unsigned)op->kind >= WL_NKINDS)
		return "unknown operation kind";
	if (op->expect < 0 || (op->expect > 0 && !wl_errno_name(op->expect)))
		return "expected errno has no name";
	const struct wl_kind_info *ki = &wl_kinds[op->kind];
	for (unsigned i = 0; i < ki->nargs; i++) {
		const char *why = arg_problem(op, ki->args[i].arg);
		if (why)
			return why;
	}
	return NULL;
}

void wl_op_release(struct wl_op *op)
{
	free(op->path);
	free(op->path2);
	free(op->name);
	free(op->value);
	op->path = op->path2 = op->name = NULL;
	op->value = NULL;
}

int wl_push(struct wl_workload *w, struct wl_op *op)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 16;
		if (cap > SIZE_MAX / sizeof(*w->ops))
			return -ENOMEM;
		struct wl_op *ops = realloc(w->ops, cap * sizeof(*ops));
		if (!ops)
			return -ENOMEM;
		w->ops = ops;
		w->cap = cap;
	}
	w->ops[w->n++] = *op;
	memset(op, 0, sizeof(*op));
	return 0;
}

/* *dst = a malloc'd copy of n bytes of src plus a NUL (NULL for src NULL). */
static int dup_bytes(void *dst, const void *src, size_t n)
{
	char *d = NULL;
	if (src) {
		if (!(d = malloc(n + 1)))
			return -ENOMEM;
		memcpy(d, src, n);
		d[n] = 0;
	}
	memcpy(dst, &d, sizeof(d));
	return 0;
}

/* Copies the field(s) argument a lives in from s to d. */
static int copy_arg(struct wl_op *d, const struct wl_op *s, enum wl_arg a)
{
	switch (a) {
	case WA_PATH:
		return dup_bytes(&d->path, s->path, strlen(s->path));
	case WA_PATH2:
	case WA_TARGET:
		return dup_bytes(&d->path2, s->path2, strlen(s->path2));
	case WA_XNAME:
	case WA_MARK:
		return dup_bytes(&d->name, s->name, strlen(s->name));
	case WA_XVALUE:
	case WA_STREAM:
	case WA_DATA:
		d->vlen = s->vlen;
		return dup_bytes(&d->value, s->value, s->vlen);
	case WA_MODE: d->mode = s->mode; break;
	case WA_OFF: d->off = s->off; break;
	case WA_LEN: d->len = s->len; break;
	case WA_OFF2: d->off2 = s->off2; break;
	case WA_SIZE: d->size = s->size; break;
	case WA_SEED: d->seed = s->seed; break;
	case WA_DEVID: d->devid = s->devid; break;
	case WA_FALLOC:
	case WA_RENAME:
	case WA_SNAP:
	case WA_DEFRAG:
	case WA_WSYNC: d->flags = s->flags; break;
	case WA_UID: d->uid = s->uid; break;
	case WA_GID: d->gid = s->gid; break;
	case WA_ATIME: d->atime = s->atime; break;
	case WA_MTIME: d->mtime = s->mtime; break;
	}
	return 0;
}

int wl_append(struct wl_workload *w, const struct wl_op *op)
{
	if (wl_op_problem(op))
		return -EINVAL;
	const struct wl_kind_info *ki = &wl_kinds[op->kind];
	struct wl_op c;
	wl_op_init(&c, op->kind);
	c.expect = op->expect;
	c.line = op->line;
	int ret = 0;
	for (unsigned i = 0; i < ki->nargs && !ret; i++)
		ret = copy_arg(&c, op, ki->args[i].arg);
	if (!ret)
		ret = wl_push(w, &c);
	if (ret)
		wl_op_release(&c);
	return ret;
}

void wl_free(struct wl_workload *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++)
		wl_op_release(&w->ops[i]);
	free(w->ops);
	free(w->name);
	memset(w, 0, sizeof(*w));
}
