/*
 * model_receive.c - the oracle's model of `receive STREAM DIR`: the send
 * streams of the op applied to the model as btrfs receive (btrfs-progs 6.2)
 * applies them with system calls, each command becoming the call receive
 * makes (mkfile: open O_CREAT|O_EXCL 0600, mkdir 0700, rename(2), link(2),
 * lsetxattr, pwrite, a clone, truncate, chmod, lchown; utimes and
 * update_extent show in nothing the description holds; fileattr is ignored
 * as receive ignores it).  The subvolume becomes received and read-only at
 * its end command.  The stream is decoded by ref's reader (ref/send.h, the
 * format's decoding only: every call it implies is the model's own).
 *
 * Not modelled (the model says it cannot follow): mknod, mkfifo and mksock
 * (the model has no such files), encoded writes (compressed bytes),
 * enable_verity, a parent or clone source found by its own uuid rather
 * than a received one (the model does not know the uuids the file system
 * gave), and a receive that failed after its subvolume was made (what it
 * left is the receiver's; one that failed before changes nothing).
 */
#include "traces/model_internal.h"
#include "ref/send.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATHMAX 8192

struct rx {
	struct model *m;
	const struct wl_op *op;	 /* the receive */
	const uint8_t *buf;
	size_t len;
	struct ref_send_cmd *c;
	char sub[PATHMAX];	 /* the subvolume being received; "" between streams */
	uint8_t uuid[16];	 /* its stream's uuid */
	uint8_t caps[64];	 /* security.capability kept for after a chown */
	uint32_t caps_len;
	char caps_path[PATHMAX];
	size_t made;		 /* subvolumes made so far */
	char *err;
	size_t errlen;
};

static int cannot(struct rx *x, const char *fmt, const char *what)
{
	if (x->errlen) {
		char why[300];
		snprintf(why, sizeof(why), fmt, what);
		snprintf(x->err, x->errlen, "receive %s: offset %llu: %s: %s", x->op->path,
			 (unsigned long long)x->c->offset, ref_send_cmd_name(x->c->cmd), why);
	}
	return -EINVAL;
}

/* A string attribute as a NUL-terminated string in out. */
static int str(struct rx *x, int type, char *out, size_t cap)
{
	const uint8_t *p;
	uint32_t n;
	if (ref_send_bytes(x->c, type, &p, &n) || n >= cap || memchr(p, 0, n))
		return cannot(x, "%s", "a path or name attribute missing, too long or holding a NUL");
	memcpy(out, p, n);
	out[n] = 0;
	return 0;
}

static int u64(struct rx *x, int type, uint64_t *v)
{
	return ref_send_u64(x->c, type, v) ? cannot(x, "%s", "a number attribute missing") : 0;
}

/* sub + "/" + the path attribute `type` of the command. */
static int full(struct rx *x, int type, char *out)
{
	char rel[PATHMAX];
	int r = str(x, type, rel, sizeof(rel));
	if (r)
		return r;
	if ((size_t)snprintf(out, PATHMAX, "%s/%s", x->sub, rel) >= PATHMAX)
		return cannot(x, "%s", "path too long");
	return 0;
}

/* An op through model_apply, its message made the receive's. */
static int apply(struct rx *x, struct wl_op *op)
{
	char why[400];
	int r = model_apply(x->m, op, 0, why, sizeof(why));
	return r == -EINVAL ? cannot(x, "%s", why) : r;
}

static int fixed(struct rx *x, int r, const char *why)
{
	return r == -EINVAL ? cannot(x, "%s", why) : r;
}

/* subvol and snapshot: DIR/NAME made, empty or as the parent is. */
static int begin(struct rx *x)
{
	char name[PATHMAX];
	int r;
	if (x->sub[0])
		return cannot(x, "%s", "a second subvolume before the end command");
	if ((r = str(x, REF_SEND_A_PATH, name, sizeof(name))))
		return r;
	if (ref_send_uuid(x->c, REF_SEND_A_UUID, x->uuid))
		return cannot(x, "%s", "no uuid");
	const char *dir = x->op->path;
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	if ((size_t)snprintf(x->sub, sizeof(x->sub), "%.*s/%s", (int)dl, dir, name) >=
	    sizeof(x->sub))
		return cannot(x, "%s", "path too long");
	if (dl == 1) /* DIR is "/" */
		memmove(x->sub, x->sub + 1, strlen(x->sub));
	struct wl_op op = { .kind = WL_SUBVOL_CREATE, .path = x->sub };
	if (x->c->cmd == REF_SEND_C_SNAPSHOT) {
		uint8_t parent[16];
		char *from = NULL;
		if (ref_send_uuid(x->c, REF_SEND_A_CLONE_UUID, parent))
			return cannot(x, "%s", "no parent uuid");
		r = model_find_received(x->m, parent, &from);
		if (r == -ENOENT)
			return cannot(x, "%s", "no subvolume was received with the parent's uuid "
					       "(one found by its own uuid is not modelled)");
		if (r)
			return r;
		op = (struct wl_op){ .kind = WL_SNAPSHOT, .path = from, .path2 = x->sub };
		r = apply(x, &op);
		free(from);
	} else {
		r = apply(x, &op);
	}
	if (!r)
		x->made++;
	x->caps_len = 0;
	return r;
}

/* The end of a subvolume's stream: received, read-only. */
static int finish(struct rx *x)
{
	if (!x->sub[0])
		return 0;
	char why[400];
	int r = model_set_received(x->m, x->sub, x->uuid, why, sizeof(why));
	x->sub[0] = 0;
	return fixed(x, r, why);
}

static int write_cmd(struct rx *x, const char *path)
{
	uint64_t off;
	const uint8_t *d;
	uint32_t n;
	int r = u64(x, REF_SEND_A_FILE_OFFSET, &off);
	if (r)
		return r;
	if (ref_send_bytes(x->c, REF_SEND_A_DATA, &d, &n))
		return cannot(x, "%s", "no data");
	char why[400];
	return fixed(x, model_write_bytes(x->m, path, off, d, n, why, sizeof(why)), why);
}

static int clone_cmd(struct rx *x, const char *path)
{
	uint64_t off, len, soff;
	uint8_t uuid[16];
	char rel[PATHMAX], src[PATHMAX], *root = NULL;
	int r;
	if ((r = u64(x, REF_SEND_A_FILE_OFFSET, &off)) || (r = u64(x, REF_SEND_A_CLONE_LEN, &len)) ||
	    (r = u64(x, REF_SEND_A_CLONE_OFFSET, &soff)) ||
	    (r = str(x, REF_SEND_A_CLONE_PATH, rel, sizeof(rel))))
		return r;
	if (ref_send_uuid(x->c, REF_SEND_A_CLONE_UUID, uuid))
		return cannot(x, "%s", "no clone uuid");
	if (!memcmp(uuid, x->uuid, 16)) {
		if ((size_t)snprintf(src, sizeof(src), "%s/%s", x->sub, rel) >= sizeof(src))
			return cannot(x, "%s", "path too long");
	} else {
		r = model_find_received(x->m, uuid, &root);
		if (r == -ENOENT)
			return cannot(x, "%s", "no subvolume was received with the clone source's "
					       "uuid (one found by its own uuid is not modelled)");
		if (r)
			return r;
		r = (size_t)snprintf(src, sizeof(src), "%s/%s", root, rel) >= sizeof(src);
		free(root);
		if (r)
			return cannot(x, "%s", "path too long");
	}
	char why[400];
	return fixed(x, model_clone_range(x->m, path, off, src, soff, len, why, sizeof(why)), why);
}

static int xattr_cmd(struct rx *x, const char *path, bool set)
{
	char name[256];
	int r = str(x, REF_SEND_A_XATTR_NAME, name, sizeof(name));
	if (r)
		return r;
	struct wl_op op = { .kind = set ? WL_SETXATTR : WL_REMOVEXATTR, .path = (char *)path,
			    .name = name };
	if (set) {
		const uint8_t *v;
		uint32_t n;
		if (ref_send_bytes(x->c, REF_SEND_A_XATTR_DATA, &v, &n))
			return cannot(x, "%s", "no xattr data");
		op.value = (uint8_t *)v;
		op.vlen = n;
		/* receive keeps capabilities for after the file's chown */
		if (!strcmp(name, "security.capability") && n <= sizeof(x->caps)) {
			memcpy(x->caps, v, n);
			x->caps_len = n;
			snprintf(x->caps_path, sizeof(x->caps_path), "%s", path);
		}
	}
	char why[400];
	return fixed(x, model_apply_nofollow(x->m, &op, why, sizeof(why)), why);
}

static int chown_cmd(struct rx *x, const char *path)
{
	uint64_t uid, gid;
	int r;
	if ((r = u64(x, REF_SEND_A_UID, &uid)) || (r = u64(x, REF_SEND_A_GID, &gid)))
		return r;
	if (uid > UINT32_MAX - 1 || gid > UINT32_MAX - 1)
		return cannot(x, "%s", "uid or gid out of range");
	struct wl_op op = { .kind = WL_CHOWN, .path = (char *)path, .uid = (uint32_t)uid,
			    .gid = (uint32_t)gid };
	char why[400];
	if ((r = model_apply_nofollow(x->m, &op, why, sizeof(why))))
		return fixed(x, r, why);
	/* the kept capabilities go back on the file they came from */
	if (x->caps_len && !strcmp(x->caps_path, path)) {
		op = (struct wl_op){ .kind = WL_SETXATTR, .path = (char *)path,
				     .name = "security.capability", .value = x->caps,
				     .vlen = x->caps_len };
		r = model_apply_nofollow(x->m, &op, why, sizeof(why));
	}
	x->caps_len = 0;
	return fixed(x, r, why);
}

/* One command of a subvolume's stream. */
static int command(struct rx *x)
{
	uint16_t cmd = x->c->cmd;
	if (cmd == REF_SEND_C_SUBVOL || cmd == REF_SEND_C_SNAPSHOT)
		return begin(x);
	if (cmd == REF_SEND_C_END)
		return finish(x);
	if (!x->sub[0])
		return cannot(x, "%s", "a command before any subvolume");
	char path[PATHMAX], other[PATHMAX];
	int r;
	struct wl_op op = { .path = path };
	switch (cmd) {
	case REF_SEND_C_UPDATE_EXTENT:
	case REF_SEND_C_FILEATTR:
		return 0;
	case REF_SEND_C_MKNOD:
	case REF_SEND_C_MKFIFO:
	case REF_SEND_C_MKSOCK:
	case REF_SEND_C_ENCODED_WRITE:
	case REF_SEND_C_ENABLE_VERITY:
		return cannot(x, "%s", "not modelled");
	}
	if ((r = full(x, REF_SEND_A_PATH, path)))
		return r;
	switch (cmd) {
	case REF_SEND_C_MKFILE:
		op.kind = WL_CREATE;
		op.mode = 0600;
		return apply(x, &op);
	case REF_SEND_C_MKDIR:
		op.kind = WL_MKDIR;
		op.mode = 0700;
		return apply(x, &op);
	case REF_SEND_C_SYMLINK:
		if ((r = str(x, REF_SEND_A_PATH_LINK, other, sizeof(other))))
			return r;
		op = (struct wl_op){ .kind = WL_SYMLINK, .path = path, .path2 = other };
		return apply(x, &op);
	case REF_SEND_C_RENAME:
	case REF_SEND_C_LINK:
		if ((r = full(x, cmd == REF_SEND_C_RENAME ? REF_SEND_A_PATH_TO : REF_SEND_A_PATH_LINK,
			      other)))
			return r;
		op = cmd == REF_SEND_C_RENAME
			     ? (struct wl_op){ .kind = WL_RENAME, .path = path, .path2 = other }
			     : (struct wl_op){ .kind = WL_LINK, .path = other, .path2 = path };
		return apply(x, &op);
	case REF_SEND_C_UNLINK:
		op.kind = WL_UNLINK;
		return apply(x, &op);
	case REF_SEND_C_RMDIR:
		op.kind = WL_RMDIR;
		return apply(x, &op);
	case REF_SEND_C_SET_XATTR:
	case REF_SEND_C_REMOVE_XATTR:
		return xattr_cmd(x, path, cmd == REF_SEND_C_SET_XATTR);
	case REF_SEND_C_WRITE:
		return write_cmd(x, path);
	case REF_SEND_C_CLONE:
		return clone_cmd(x, path);
	case REF_SEND_C_TRUNCATE:
		op.kind = WL_TRUNCATE;
		return (r = u64(x, REF_SEND_A_SIZE, &op.size)) ? r : apply(x, &op);
	case REF_SEND_C_CHMOD:
		op.kind = WL_CHMOD;
		if ((r = u64(x, REF_SEND_A_MODE, &op.size)))
			return r;
		op.mode = (uint32_t)(op.size & 07777);
		op.size = 0;
		return apply(x, &op);
	case REF_SEND_C_CHOWN:
		return chown_cmd(x, path);
	case REF_SEND_C_UTIMES: { /* the path must lead somewhere */
		op = (struct wl_op){ .kind = WL_UTIMES, .path = path };
		char why[400];
		return fixed(x, model_apply_nofollow(x->m, &op, why, sizeof(why)), why);
	}
	case REF_SEND_C_FALLOCATE: {
		uint64_t mode;
		if ((r = u64(x, REF_SEND_A_FALLOCATE_MODE, &mode)) ||
		    (r = u64(x, REF_SEND_A_FILE_OFFSET, &op.off)) ||
		    (r = u64(x, REF_SEND_A_SIZE, &op.len)))
			return r;
		op.kind = WL_FALLOCATE;
		op.flags = (int)(mode & 0xff);
		return apply(x, &op);
	}
	default:
		return cannot(x, "%s", "unknown command");
	}
}

/* Every stream of op->value applied to m; 0 or the first failure. */
static int run(struct rx *x)
{
	size_t off = 0;
	int r = 0;
	if (!x->len)
		return cannot(x, "%s", "an empty stream");
	while (off < x->len && !r) {
		uint32_t version;
		char why[300];
		x->c->offset = off;
		x->c->cmd = 0;
		if (ref_send_header(x->buf + off, x->len - off, &version, why, sizeof(why)))
			return cannot(x, "%s", why);
		uint64_t at = off + REF_SEND_HEADER;
		x->caps_len = 0;
		while ((r = ref_send_next(x->buf, x->len, version, &at, x->c, why, sizeof(why))) == 0 &&
		       (r = command(x)) == 0 && x->c->cmd != REF_SEND_C_END)
			;
		if (r > 0 || (r == 0 && x->c->cmd != REF_SEND_C_END))
			return cannot(x, "%s", "the stream ends without an end command");
		if (r == -EBADMSG)
			return cannot(x, "%s", why);
		off = at;
		/* btrfs receive reads on while input is left: a next stream */
	}
	return r;
}

int model_receive(struct model *m, const struct wl_op *op, int result, char *err,
		  size_t errlen)
{
	if (!op->path || op->path[0] != '/')
		return -EINVAL;
	struct model *c = model_clone(m);
	struct rx *x = calloc(1, sizeof(*x));
	struct ref_send_cmd *cmd = malloc(sizeof(*cmd));
	int r = -ENOMEM;
	if (!c || !x || !cmd)
		goto out;
	memset(cmd, 0, sizeof(*cmd));
	*x = (struct rx){ .m = c, .op = op, .buf = op->value, .len = op->vlen, .c = cmd,
			  .err = err, .errlen = errlen };
	r = run(x);
	if (r == -ENOMEM)
		goto out;
	if (result == 0 && r == 0) {
		model_swap(m, c);
	} else if (result != 0 && r != 0 && x->made == 0) {
		r = 0; /* failed before a subvolume was made: nothing changed */
		if (errlen)
			err[0] = 0;
	} else if (result != 0) {
		if (errlen)
			snprintf(err, errlen,
				 "receive %s: the receive failed (%s) after making its subvolume: "
				 "what it left is not modelled",
				 op->path, wl_errno_name(result < 0 ? -result : result));
		r = -EINVAL;
	}
out:
	model_free(c);
	free(x);
	free(cmd);
	return r;
}

int model_receive_subvols(const struct wl_op *op, char ***paths, size_t *n)
{
	*paths = NULL;
	*n = 0;
	if (op->kind != WL_RECEIVE || !op->path)
		return -EINVAL;
	struct ref_send_cmd *c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	struct rx x = { .op = op, .c = c };
	int r = 0;
	size_t off = 0, dl = strlen(op->path);
	while (dl > 1 && op->path[dl - 1] == '/')
		dl--;
	while (off < op->vlen && !r) {
		uint32_t version;
		char why[300], name[PATHMAX];
		if (ref_send_header(op->value + off, op->vlen - off, &version, why, sizeof(why))) {
			r = -EINVAL;
			break;
		}
		uint64_t at = off + REF_SEND_HEADER;
		while ((r = ref_send_next(op->value, op->vlen, version, &at, c, why, sizeof(why))) == 0 &&
		       c->cmd != REF_SEND_C_END) {
			if (c->cmd != REF_SEND_C_SUBVOL && c->cmd != REF_SEND_C_SNAPSHOT)
				continue;
			char **v = realloc(*paths, (*n + 1) * sizeof(*v));
			if (!v) {
				r = -ENOMEM;
				break;
			}
			*paths = v;
			if (str(&x, REF_SEND_A_PATH, name, sizeof(name))) {
				r = -EINVAL;
				break;
			}
			if (asprintf(&v[*n], "%.*s/%s", dl == 1 ? 0 : (int)dl, op->path, name) < 0) {
				r = -ENOMEM;
				break;
			}
			++*n;
		}
		r = r > 0 ? -EINVAL : r; /* no end command */
		off = at;
	}
	free(c);
	if (r) {
		for (size_t i = 0; i < *n; i++)
			free((*paths)[i]);
		free(*paths);
		*paths = NULL;
		*n = 0;
	}
	return r;
}
