/*
 * send_full.c - send streams of a read-only subvolume (send.h): the sender's
 * model of the receiving side, the commands every stream uses, and the full
 * stream, made as the kernel's send.c makes one without a parent: the subvol
 * command, the root directory's xattrs, owner and mode, then every inode in
 * the order of its number.  An inode is made under its orphan name
 * "o<ino>-<gen>-0" at the subvolume's root and renamed to its first name;
 * its other names are links.  A name in a directory with a higher number
 * than the inode's makes that directory first, under its orphan name (the
 * kernel's out-of-order directory creation), so that every path a command
 * names exists on the receiving side when the command comes.  Then the
 * inode's xattrs, its data (writes of at most 48 KiB, 128 KiB in version 2,
 * or update_extent
 * without data; holes and preallocated ranges left as holes, a truncate
 * giving the size past the last data), its owner, mode and times.
 * Directories get their times at the end, when no entry changes them any
 * more.  Nested subvolumes are not part of the stream (their entries are not
 * inodes of this tree).  Incremental streams: send_incr.c.
 */
#include "ref/send/send_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The largest write: the kernel's max_send_read_size, its send buffer less
 * 16 KiB (v1: 64 KiB, v2: 16 KiB + 128 KiB). */
#define SEND_WRITE_V1 49152u
#define SEND_WRITE_V2 131072u
#define PATH_CAP 4096

int send_fail(struct sender *s, int e, const char *fmt, ...)
{
	if (s->errlen && !s->err[0]) { /* the first, innermost reason */
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(s->err, s->errlen, fmt, ap);
		va_end(ap);
	}
	return -e;
}

struct sinode *send_find(const struct stable *t, uint64_t ino)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->in[mid].ino == ino)
			return &t->in[mid];
		if (t->in[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct sinode *send_live(struct sender *s, uint64_t ino)
{
	struct sinode *i = send_find(&s->t, ino);
	if (i && i->ncur)
		return i;
	struct sinode *p = send_find(&s->pt, ino);
	return p && p->ncur ? p : i;
}

static int add_name(struct sref **v, size_t *n, uint64_t parent, const char *name, size_t len)
{
	struct sref *r = realloc(*v, (*n + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	*v = r;
	char *nm = malloc(len + 1);
	if (!nm)
		return -ENOMEM;
	memcpy(nm, name, len);
	nm[len] = 0;
	r[(*n)++] = (struct sref){ parent, nm };
	return 0;
}

/* The names of inode i from one INODE_REF (parent: the key's offset) or
 * INODE_EXTREF item. */
static int item_refs(struct sinode *i, uint8_t type, uint64_t off, const uint8_t *d, uint32_t size)
{
	uint32_t at = 0;
	while (at < size) {
		uint64_t parent = off;
		uint32_t hdr = 10; /* INODE_REF: index, name_len */
		if (type == BTRFS_INODE_EXTREF_KEY) {
			if (size - at < 18)
				return -EUCLEAN;
			parent = le64(d + at);
			hdr = 18;
		}
		if (size - at < hdr)
			return -EUCLEAN;
		uint16_t nl = le16(d + at + hdr - 2);
		if (size - at - hdr < nl || memchr(d + at + hdr, 0, nl) || memchr(d + at + hdr, '/', nl))
			return -EUCLEAN;
		int r = add_name(&i->refs, &i->nrefs, parent, (const char *)d + at + hdr, nl);
		if (r)
			return r;
		at += hdr + nl;
	}
	return 0;
}

int send_collect(struct sender *s, uint64_t id, struct stable *t)
{
	struct ref_root root;
	struct ref_path p;
	int r = ref_find_root(s->fs, id, &root);
	if (r)
		return send_fail(s, -r, "subvolume %llu: %s", (unsigned long long)id, ref_error(s->fs));
	struct ref_key k = { BTRFS_FIRST_FREE_OBJECTID, BTRFS_INODE_ITEM_KEY, 0 };
	r = ref_search(s->fs, &root, &k, &p);
	struct sinode *cur = NULL;
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid > BTRFS_LAST_FREE_OBJECTID)
			break;
		if (k.type == BTRFS_INODE_ITEM_KEY) {
			if (size < sizeof(struct btrfs_inode_item)) {
				r = -EUCLEAN;
				break;
			}
			const struct btrfs_inode_item *ii = (const void *)d;
			if (t->n == t->cap) {
				size_t cap = t->cap ? t->cap * 2 : 256;
				struct sinode *in = realloc(t->in, cap * sizeof(*in));
				if (!in) {
					r = -ENOMEM;
					break;
				}
				t->in = in;
				t->cap = cap;
			}
			cur = &t->in[t->n++];
			*cur = (struct sinode){ .ino = k.objectid, .gen = LE64(ii->generation),
						.mode = LE32(ii->mode) };
		} else if ((k.type == BTRFS_INODE_REF_KEY || k.type == BTRFS_INODE_EXTREF_KEY) && cur &&
			   cur->ino == k.objectid && cur->ino != BTRFS_FIRST_FREE_OBJECTID &&
			   (r = item_refs(cur, k.type, k.offset, d, size))) {
			break;
		}
		r = ref_next(s->fs, &p);
	}
	if (r > 0)
		return 0;
	if (r < 0)
		ref_path_release(s->fs, &p);
	return r == -EUCLEAN ? send_fail(s, EUCLEAN, "subvolume %llu: a malformed inode item",
					 (unsigned long long)id)
	       : r == -ENOMEM ? send_fail(s, ENOMEM, "out of memory")
			      : send_fail(s, -r, "subvolume %llu: %s", (unsigned long long)id,
					  ref_error(s->fs));
}

int send_each_extent(struct sender *s, uint64_t subvol, uint64_t ino,
		     int (*fn)(void *ctx, uint64_t off, const uint8_t *item, uint32_t size),
		     void *ctx)
{
	struct ref_root root;
	struct ref_path p;
	int r = ref_find_root(s->fs, subvol, &root);
	if (r)
		return r;
	struct ref_key k = { ino, BTRFS_EXTENT_DATA_KEY, 0 };
	r = ref_search(s->fs, &root, &k, &p);
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid != ino || k.type != BTRFS_EXTENT_DATA_KEY)
			break;
		const struct btrfs_file_extent_item *fe = (const void *)d;
		if (size < 21 || (fe->type != BTRFS_FILE_EXTENT_INLINE && size < sizeof(*fe))) {
			r = -EUCLEAN;
			break;
		}
		if ((r = fn(ctx, k.offset, d, size)))
			break;
		r = ref_next(s->fs, &p);
	}
	if (r <= 0)
		ref_path_release(s->fs, &p);
	return r < 0 ? r : 0;
}

static void free_names(struct sref *v, size_t n)
{
	for (size_t k = 0; k < n; k++)
		free(v[k].name);
	free(v);
}

void send_table_free(struct stable *t)
{
	for (size_t k = 0; k < t->n; k++) {
		free_names(t->in[k].refs, t->in[k].nrefs);
		free_names(t->in[k].cur, t->in[k].ncur);
	}
	free(t->in);
	*t = (struct stable){ 0 };
}

void send_orphan_name(const struct sinode *i, char *out, size_t cap)
{
	snprintf(out, cap, "o%llu-%llu-0", (unsigned long long)i->ino, (unsigned long long)i->gen);
}

static int cur_path(struct sender *s, uint64_t ino, char *out, size_t cap, int depth)
{
	if (ino == BTRFS_FIRST_FREE_OBJECTID) {
		out[0] = 0;
		return 0;
	}
	struct sinode *i = send_live(s, ino);
	if (!i || !i->ncur || depth > 4096)
		return send_fail(s, EUCLEAN, "inode %llu: no path to the subvolume's root",
				 (unsigned long long)ino);
	int r = cur_path(s, i->cur[0].parent, out, cap, depth + 1);
	if (r)
		return r;
	size_t l = strlen(out);
	if ((size_t)snprintf(out + l, cap - l, "%s%s", l ? "/" : "", i->cur[0].name) >= cap - l)
		return send_fail(s, ENAMETOOLONG, "inode %llu: path too long", (unsigned long long)ino);
	return 0;
}

int send_cur_path(struct sender *s, uint64_t ino, char *out, size_t cap)
{
	return cur_path(s, ino, out, cap, 0);
}

/* A path in a directory: the directory's current path and the name. */
static int path_in(struct sender *s, uint64_t dir, const char *name, char *out, size_t cap)
{
	int r = send_cur_path(s, dir, out, cap);
	size_t l = strlen(out);
	if (!r && (size_t)snprintf(out + l, cap - l, "%s%s", l ? "/" : "", name) >= cap - l)
		r = send_fail(s, ENAMETOOLONG, "path too long under inode %llu", (unsigned long long)dir);
	return r;
}

/* A directory an entry goes into or out of on the receiving side: its times
 * change there, so the stream sets them again at its end (dir_times). */
static void touch(struct sender *s, uint64_t dir)
{
	struct sinode *d = send_find(&s->t, dir);
	if (d)
		d->done = true;
}

int send_end_cmd(struct sender *s)
{
	int r = sw_end(&s->w);
	return r ? send_fail(s, -r, "writing the stream: %s", strerror(-r)) : 0;
}

int send_rename(struct sender *s, struct sinode *i, uint64_t parent, const char *name)
{
	char from[PATH_CAP], to[PATH_CAP];
	int r = send_cur_path(s, i->ino, from, sizeof(from));
	if (r || (r = path_in(s, parent, name, to, sizeof(to))))
		return r;
	sw_cmd(&s->w, REF_SEND_C_RENAME);
	sw_str(&s->w, REF_SEND_A_PATH, from);
	sw_str(&s->w, REF_SEND_A_PATH_TO, to);
	char *nm = strdup(name);
	if (!nm)
		return send_fail(s, ENOMEM, "out of memory");
	touch(s, i->cur[0].parent);
	touch(s, parent);
	free(i->cur[0].name);
	i->cur[0] = (struct sref){ parent, nm };
	return send_end_cmd(s);
}

int send_link(struct sender *s, struct sinode *i, uint64_t parent, const char *name)
{
	char from[PATH_CAP], to[PATH_CAP];
	int r = send_cur_path(s, i->ino, from, sizeof(from));
	if (r || (r = path_in(s, parent, name, to, sizeof(to))))
		return r;
	sw_cmd(&s->w, REF_SEND_C_LINK);
	sw_str(&s->w, REF_SEND_A_PATH, to);
	sw_str(&s->w, REF_SEND_A_PATH_LINK, from);
	if (add_name(&i->cur, &i->ncur, parent, name, strlen(name)))
		return send_fail(s, ENOMEM, "out of memory");
	touch(s, parent);
	return send_end_cmd(s);
}

/* The path of i's name k, that name dropped from the model. */
static int drop_name(struct sender *s, struct sinode *i, size_t k, char *path)
{
	int r = path_in(s, i->cur[k].parent, i->cur[k].name, path, PATH_CAP);
	if (r)
		return r;
	touch(s, i->cur[k].parent);
	free(i->cur[k].name);
	memmove(&i->cur[k], &i->cur[k + 1], (i->ncur - k - 1) * sizeof(*i->cur));
	i->ncur--;
	return 0;
}

int send_unlink(struct sender *s, struct sinode *i, size_t k)
{
	char p[PATH_CAP];
	int r = drop_name(s, i, k, p);
	if (r)
		return r;
	sw_cmd(&s->w, REF_SEND_C_UNLINK);
	sw_str(&s->w, REF_SEND_A_PATH, p);
	return send_end_cmd(s);
}

int send_rmdir(struct sender *s, struct sinode *i)
{
	char p[PATH_CAP];
	int r = drop_name(s, i, 0, p);
	if (r)
		return r;
	sw_cmd(&s->w, REF_SEND_C_RMDIR);
	sw_str(&s->w, REF_SEND_A_PATH, p);
	return send_end_cmd(s);
}

/* The kernel's new_encode_dev of a btrfs rdev (MKDEV: major << 20 | minor). */
static uint64_t encode_dev(uint64_t rdev)
{
	uint64_t major = rdev >> 20, minor = rdev & 0xfffff;
	return (minor & 0xff) | (major << 8) | ((minor & ~0xffull) << 12);
}

int send_create(struct sender *s, struct sinode *i)
{
	char p[PATH_CAP];
	struct ref_ino ino = { s->subvol, i->ino };
	send_orphan_name(i, p, sizeof(p));
	uint32_t m = i->mode;
	uint16_t c = S_ISREG(m) ? REF_SEND_C_MKFILE : S_ISDIR(m) ? REF_SEND_C_MKDIR
		   : S_ISLNK(m) ? REF_SEND_C_SYMLINK : S_ISFIFO(m) ? REF_SEND_C_MKFIFO
		   : S_ISSOCK(m) ? REF_SEND_C_MKSOCK : S_ISCHR(m) || S_ISBLK(m) ? REF_SEND_C_MKNOD : 0;
	if (!c)
		return send_fail(s, EUCLEAN, "inode %llu: mode %o", (unsigned long long)i->ino, m);
	sw_cmd(&s->w, c);
	sw_str(&s->w, REF_SEND_A_PATH, p);
	sw_u64(&s->w, REF_SEND_A_INO, i->ino);
	if (c == REF_SEND_C_MKNOD || c == REF_SEND_C_MKFIFO || c == REF_SEND_C_MKSOCK) {
		struct ref_stat st; /* as send_create_inode: rdev, then mode */
		if (ref_stat(s->fs, &ino, &st))
			return send_fail(s, EIO, "inode %llu: %s", (unsigned long long)i->ino,
					 ref_error(s->fs));
		sw_u64(&s->w, REF_SEND_A_RDEV, encode_dev(st.rdev));
		sw_u64(&s->w, REF_SEND_A_MODE, m);
	}
	if (c == REF_SEND_C_SYMLINK) {
		char target[PATH_CAP];
		ssize_t n = ref_readlink(s->fs, &ino, target, sizeof(target));
		if (n < 0)
			return send_fail(s, (int)-n, "inode %llu: %s", (unsigned long long)i->ino,
					 ref_error(s->fs));
		sw_str(&s->w, REF_SEND_A_PATH_LINK, target);
	}
	if (add_name(&i->cur, &i->ncur, BTRFS_FIRST_FREE_OBJECTID, p, strlen(p)))
		return send_fail(s, ENOMEM, "out of memory");
	touch(s, BTRFS_FIRST_FREE_OBJECTID);
	return send_end_cmd(s);
}

int send_make_dirs(struct sender *s, struct sinode *i)
{
	int r;
	for (size_t k = 0; k < i->nrefs; k++) {
		uint64_t dnr = i->refs[k].parent;
		struct sinode *d = send_find(&s->t, dnr);
		if (dnr != BTRFS_FIRST_FREE_OBJECTID && (!d || !S_ISDIR(d->mode)))
			return send_fail(s, EUCLEAN, "inode %llu: its directory %llu is no directory",
					 (unsigned long long)i->ino, (unsigned long long)dnr);
		if (d && dnr != BTRFS_FIRST_FREE_OBJECTID && !d->ncur && (r = send_create(s, d)))
			return r;
	}
	return 0;
}

int send_place(struct sender *s, struct sinode *i)
{
	int r = send_make_dirs(s, i);
	if (r)
		return r;
	if (!i->ncur && (r = send_create(s, i)))
		return r;
	for (size_t k = 0; k < i->nrefs; k++) {
		r = k == 0 ? send_rename(s, i, i->refs[0].parent, i->refs[0].name)
			   : send_link(s, i, i->refs[k].parent, i->refs[k].name);
		if (r)
			return r;
	}
	return 0;
}

struct caps_ctx {
	struct sender *s;
	const char *path;
};

static int one_cap(void *ctx, const char *name, size_t nlen, const uint8_t *value, size_t vlen)
{
	struct caps_ctx *c = ctx;
	if (nlen != sizeof(SEND_CAPS) - 1 || memcmp(name, SEND_CAPS, nlen))
		return 0;
	sw_cmd(&c->s->w, REF_SEND_C_SET_XATTR);
	sw_str(&c->s->w, REF_SEND_A_PATH, c->path);
	sw_attr(&c->s->w, REF_SEND_A_XATTR_NAME, name, nlen);
	sw_attr(&c->s->w, REF_SEND_A_XATTR_DATA, value, vlen);
	return send_end_cmd(c->s);
}

int send_caps(struct sender *s, uint64_t ino_nr, const char *path)
{
	struct ref_ino si = { s->subvol, ino_nr };
	struct caps_ctx c = { s, path };
	int r = ref_listxattr(s->fs, &si, one_cap, &c);
	return r < 0 && s->errlen && !s->err[0] ? send_fail(s, -r, "%s: %s", path, ref_error(s->fs))
						 : r;
}

struct xctx {
	struct sender *s;
	const char *path;
};

static int one_xattr(void *ctx, const char *name, size_t nlen, const uint8_t *value, size_t vlen)
{
	struct xctx *x = ctx;
	if (nlen == sizeof(SEND_CAPS) - 1 && !memcmp(name, SEND_CAPS, nlen))
		return 0; /* last, after chown and chmod (send_caps) */
	sw_cmd(&x->s->w, REF_SEND_C_SET_XATTR);
	sw_str(&x->s->w, REF_SEND_A_PATH, x->path);
	sw_attr(&x->s->w, REF_SEND_A_XATTR_NAME, name, nlen);
	sw_attr(&x->s->w, REF_SEND_A_XATTR_DATA, value, vlen);
	return send_end_cmd(x->s);
}

int send_bytes(struct sender *s, const struct ref_ino *ino, const char *path, uint64_t from,
	       uint64_t to)
{
	bool nodata = s->o && s->o->no_data;
	const size_t chunk = s->w.version >= 2 ? SEND_WRITE_V2 : SEND_WRITE_V1;
	uint8_t *buf = nodata ? NULL : malloc(chunk);
	if (!buf && !nodata)
		return send_fail(s, ENOMEM, "out of memory");
	int r = 0;
	for (uint64_t off = from; !r && off < to;) {
		uint64_t start, end;
		if ((r = ref_next_data(s->fs, ino, off, &start, &end))) {
			r = send_fail(s, -r, "%s: %s", path, ref_error(s->fs));
			break;
		}
		if (start >= end || start >= to)
			break;
		if (end > to)
			end = to;
		if (nodata) {
			sw_cmd(&s->w, REF_SEND_C_UPDATE_EXTENT);
			sw_str(&s->w, REF_SEND_A_PATH, path);
			sw_u64(&s->w, REF_SEND_A_FILE_OFFSET, start);
			sw_u64(&s->w, REF_SEND_A_SIZE, end - start);
			r = send_end_cmd(s);
		}
		for (uint64_t at = start; !r && buf && at < end; at += chunk) {
			size_t n = end - at < chunk ? (size_t)(end - at) : chunk;
			ssize_t got = ref_pread(s->fs, ino, buf, n, at);
			if (got != (ssize_t)n) {
				r = send_fail(s, got < 0 ? (int)-got : EIO, "%s: reading %zu bytes at %llu: %s",
					      path, n, (unsigned long long)at,
					      got < 0 ? ref_error(s->fs) : "short read");
				break;
			}
			sw_cmd(&s->w, REF_SEND_C_WRITE);
			sw_str(&s->w, REF_SEND_A_PATH, path);
			sw_u64(&s->w, REF_SEND_A_FILE_OFFSET, at);
			sw_data(&s->w, buf, n);
			r = send_end_cmd(s);
			if (s->st)
				s->st->data_bytes += n;
		}
		off = end;
	}
	free(buf);
	return r;
}

int send_utimes(struct sender *s, const char *path, const struct ref_stat *st)
{
	sw_cmd(&s->w, REF_SEND_C_UTIMES);
	sw_str(&s->w, REF_SEND_A_PATH, path);
	sw_time(&s->w, REF_SEND_A_ATIME, &st->atime);
	sw_time(&s->w, REF_SEND_A_MTIME, &st->mtime);
	sw_time(&s->w, REF_SEND_A_CTIME, &st->ctime);
	return send_end_cmd(s);
}

int send_owner_mode_times(struct sender *s, uint64_t ino, const char *path,
			  const struct ref_stat *st)
{
	sw_cmd(&s->w, REF_SEND_C_CHOWN);
	sw_str(&s->w, REF_SEND_A_PATH, path);
	sw_u64(&s->w, REF_SEND_A_UID, st->uid);
	sw_u64(&s->w, REF_SEND_A_GID, st->gid);
	int r = send_end_cmd(s);
	if (r)
		return r;
	if (!S_ISLNK(st->mode)) {
		sw_cmd(&s->w, REF_SEND_C_CHMOD);
		sw_str(&s->w, REF_SEND_A_PATH, path);
		sw_u64(&s->w, REF_SEND_A_MODE, st->mode & 07777);
		if ((r = send_end_cmd(s)))
			return r;
	}
	if ((r = send_caps(s, ino, path)))
		return r;
	return S_ISDIR(st->mode) ? 0 : send_utimes(s, path, st);
}

int send_finish_new(struct sender *s, uint64_t ino_nr)
{
	char p[PATH_CAP];
	struct ref_ino ino = { s->subvol, ino_nr };
	struct ref_stat st;
	int r = send_cur_path(s, ino_nr, p, sizeof(p));
	if (r)
		return r;
	if ((r = ref_stat(s->fs, &ino, &st)))
		return send_fail(s, -r, "inode %llu: %s", (unsigned long long)ino_nr, ref_error(s->fs));
	struct xctx x = { s, p };
	if ((r = ref_listxattr(s->fs, &ino, one_xattr, &x)))
		return r < 0 ? send_fail(s, -r, "%s: %s", p, ref_error(s->fs)) : r;
	if (S_ISREG(st.mode)) {
		uint64_t start, end;
		if ((r = send_range(s, &ino, p, 0, st.size)))
			return r;
		/* the size, when the last data ends before it */
		if ((r = ref_next_data(s->fs, &ino, 0, &start, &end)))
			return send_fail(s, -r, "%s: %s", p, ref_error(s->fs));
		uint64_t last = 0;
		while (start < end) {
			last = end;
			if ((r = ref_next_data(s->fs, &ino, end, &start, &end)))
				return send_fail(s, -r, "%s: %s", p, ref_error(s->fs));
		}
		if (last < st.size) {
			sw_cmd(&s->w, REF_SEND_C_TRUNCATE);
			sw_str(&s->w, REF_SEND_A_PATH, p);
			sw_u64(&s->w, REF_SEND_A_SIZE, st.size);
			if ((r = send_end_cmd(s)))
				return r;
		}
		if ((r = send_clone_add_self(s, ino_nr)))
			return r;
	}
	if (s->st)
		s->st->inodes++;
	return send_owner_mode_times(s, ino_nr, p, &st);
}

/* Every directory's times, now that no entry changes any more (incremental:
 * those marked done, the new and the changed). */
static int dir_times(struct sender *s)
{
	int r = 0;
	for (size_t k = 0; !r && k < s->t.n; k++) {
		struct sinode *i = &s->t.in[k];
		if (!S_ISDIR(i->mode) || (s->parent && !i->done) ||
		    (!i->ncur && i->ino != BTRFS_FIRST_FREE_OBJECTID))
			continue;
		char p[PATH_CAP];
		struct ref_ino ino = { s->subvol, i->ino };
		struct ref_stat st;
		if ((r = send_cur_path(s, i->ino, p, sizeof(p))))
			break;
		if ((r = ref_stat(s->fs, &ino, &st)))
			return send_fail(s, -r, "inode %llu: %s", (unsigned long long)i->ino,
					 ref_error(s->fs));
		r = send_utimes(s, p, &st);
	}
	return r;
}

static int full(struct sender *s)
{
	int r = send_finish_new(s, BTRFS_FIRST_FREE_OBJECTID);
	for (size_t k = 0; !r && k < s->t.n; k++) {
		struct sinode *i = &s->t.in[k];
		if (i->ino == BTRFS_FIRST_FREE_OBJECTID || !i->nrefs)
			continue; /* the root; an inode without a name (an orphan) */
		if (!(r = send_place(s, i)))
			r = send_finish_new(s, i->ino);
	}
	return r;
}

/* A subvolume that may be sent: read-only, not being deleted. */
static int sendable(struct sender *s, uint64_t id, struct ref_subvol_info *si, char *path,
		    size_t cap)
{
	int r = ref_subvol_info(s->fs, id, si);
	if (!r)
		r = id == BTRFS_FS_TREE_OBJECTID ? (path[0] = 0, 0)
						 : ref_subvol_path(s->fs, id, path, cap);
	if (r)
		return send_fail(s, -r, "subvolume %llu: %s", (unsigned long long)id, ref_error(s->fs));
	if (!si->refs)
		return send_fail(s, ENOENT, "subvolume %llu is being deleted", (unsigned long long)id);
	if (!(si->flags & BTRFS_ROOT_SUBVOL_RDONLY))
		return send_fail(s, EPERM, "subvolume %s is not read-only", *path ? path : "/");
	return 0;
}

static int begin(struct sender *s)
{
	struct ref_subvol_info si, pi;
	char path[PATH_CAP], ppath[PATH_CAP];
	int r = sendable(s, s->subvol, &si, path, sizeof(path));
	if (r || (s->parent && (r = sendable(s, s->parent, &pi, ppath, sizeof(ppath)))))
		return r;
	const char *name = strrchr(path, '/');
	sw_cmd(&s->w, s->parent ? REF_SEND_C_SNAPSHOT : REF_SEND_C_SUBVOL);
	sw_str(&s->w, REF_SEND_A_PATH, name ? name + 1 : path);
	sw_attr(&s->w, REF_SEND_A_UUID, si.uuid, BTRFS_UUID_SIZE);
	sw_u64(&s->w, REF_SEND_A_CTRANSID, si.ctransid);
	if (s->parent) {
		sw_attr(&s->w, REF_SEND_A_CLONE_UUID, pi.uuid, BTRFS_UUID_SIZE);
		sw_u64(&s->w, REF_SEND_A_CLONE_CTRANSID, pi.ctransid);
	}
	return send_end_cmd(s);
}

int ref_send(ref_fs *fs, uint64_t subvol, const struct ref_send_opts *o, FILE *out,
	     struct ref_send_stats *st, char *err, size_t errlen)
{
	struct sender s = { .fs = fs, .subvol = subvol, .parent = o ? o->parent : 0, .o = o,
			    .st = st, .err = err, .errlen = errlen };
	uint32_t proto = o && o->proto ? o->proto : 1;
	if (errlen)
		err[0] = 0;
	if (st)
		*st = (struct ref_send_stats){ 0 };
	if (proto > 2)
		return send_fail(&s, EINVAL, "protocol %u: 1 and 2 are supported", proto);
	if (o && o->compressed_data && proto < 2)
		return send_fail(&s, EINVAL, "compressed data needs protocol version 2");
	if (s.parent == subvol)
		return send_fail(&s, EINVAL, "a subvolume is not its own parent");
	int r = sw_begin(&s.w, out, proto, !(o && o->omit_header));
	if (r)
		return send_fail(&s, -r, "writing the stream: %s", strerror(-r));
	if (!(r = begin(&s)) && !(r = send_collect(&s, subvol, &s.t)) &&
	    !(s.parent && (r = send_collect(&s, s.parent, &s.pt))) && !(r = send_clone_init(&s))) {
		struct sinode *root = send_find(&s.t, BTRFS_FIRST_FREE_OBJECTID);
		if (!root)
			r = send_fail(&s, EUCLEAN, "subvolume %llu has no root directory",
				      (unsigned long long)subvol);
		else
			r = s.parent ? send_incremental(&s) : full(&s);
		if (!r)
			r = dir_times(&s);
		if (!r && !(o && o->omit_end)) {
			sw_cmd(&s.w, REF_SEND_C_END);
			r = send_end_cmd(&s);
		}
	}
	if (st) {
		st->commands = s.w.commands;
		st->bytes = s.w.written;
	}
	send_clone_free(&s);
	send_table_free(&s.t);
	send_table_free(&s.pt);
	sw_free(&s.w);
	return r;
}
