/*
 * send_full.c - a full send stream of a read-only subvolume (send.h), made
 * as the kernel's send.c makes one without a parent: the subvol command,
 * the root directory's owner and mode, then every inode in the order of its
 * number.  An inode is made under its orphan name "o<ino>-<gen>-0" at the
 * subvolume's root and renamed to its first name; its other names are
 * links.  A name in a directory with a higher number than the inode's makes
 * that directory first, under its orphan name (the kernel's out-of-order
 * directory creation), so that every path a command names exists on the
 * receiving side when the command comes.  Then the inode's xattrs, its data
 * (writes of at most 48 KiB, or update_extent without data; holes and
 * preallocated ranges left as holes, a truncate giving the size past the
 * last data), its owner, mode and times.  Directories get their times at
 * the end, when no entry changes them any more.  Nested subvolumes are not
 * part of the stream (their entries are not inodes of this tree).
 */
#include "ref/send/send_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SEND_WRITE 49152u /* the kernel's BTRFS_SEND_READ_SIZE */
#define PATH_CAP 4096

struct sref {
	uint64_t parent;
	char *name;
};

struct sinode {
	uint64_t ino, gen;
	uint32_t mode;
	struct sref *refs;
	size_t nrefs;
	bool created, placed;
};

struct sender {
	ref_fs *fs;
	uint64_t subvol;
	const struct ref_send_opts *o;
	struct sw w;
	struct sinode *in; /* by inode number, ascending */
	size_t n, cap;
	char *err;
	size_t errlen;
};

static int fail(struct sender *s, int e, const char *fmt, ...)
{
	if (s->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(s->err, s->errlen, fmt, ap);
		va_end(ap);
	}
	return -e;
}

static struct sinode *find(struct sender *s, uint64_t ino)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->in[mid].ino == ino)
			return &s->in[mid];
		if (s->in[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int add_ref(struct sinode *i, uint64_t parent, const uint8_t *name, size_t len)
{
	struct sref *r = realloc(i->refs, (i->nrefs + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	i->refs = r;
	char *nm = malloc(len + 1);
	if (!nm)
		return -ENOMEM;
	memcpy(nm, name, len);
	nm[len] = 0;
	r[i->nrefs++] = (struct sref){ parent, nm };
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
		if (size - at - hdr < nl)
			return -EUCLEAN;
		int r = add_ref(i, parent, d + at + hdr, nl);
		if (r)
			return r;
		at += hdr + nl;
	}
	return 0;
}

/* Every inode of the subvolume with its names, in one pass of its tree. */
static int collect(struct sender *s)
{
	struct ref_root root;
	struct ref_path p;
	int r = ref_find_root(s->fs, s->subvol, &root);
	if (r)
		return fail(s, -r, "subvolume %llu: %s", (unsigned long long)s->subvol,
			    ref_error(s->fs));
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
			if (s->n == s->cap) {
				size_t cap = s->cap ? s->cap * 2 : 256;
				struct sinode *in = realloc(s->in, cap * sizeof(*in));
				if (!in) {
					r = -ENOMEM;
					break;
				}
				s->in = in;
				s->cap = cap;
			}
			cur = &s->in[s->n++];
			*cur = (struct sinode){ .ino = k.objectid, .gen = LE64(ii->generation),
						.mode = LE32(ii->mode) };
		} else if ((k.type == BTRFS_INODE_REF_KEY || k.type == BTRFS_INODE_EXTREF_KEY) && cur &&
			   cur->ino == k.objectid && (r = item_refs(cur, k.type, k.offset, d, size))) {
			break;
		}
		r = ref_next(s->fs, &p);
	}
	if (r > 0)
		return 0;
	if (r < 0)
		ref_path_release(s->fs, &p);
	return r == -EUCLEAN ? fail(s, EUCLEAN, "subvolume %llu: a malformed inode item",
				    (unsigned long long)s->subvol)
	       : r == -ENOMEM ? fail(s, ENOMEM, "out of memory")
			      : fail(s, -r, "subvolume %llu: %s", (unsigned long long)s->subvol,
				     ref_error(s->fs));
}

/* Where inode ino is on the receiving side now: its first name under its
 * directory's current path once placed, its orphan name before. */
static int cur_path(struct sender *s, uint64_t ino, char *out, size_t cap, int depth)
{
	if (ino == BTRFS_FIRST_FREE_OBJECTID) {
		out[0] = 0;
		return 0;
	}
	struct sinode *i = find(s, ino);
	if (!i || depth > 4096)
		return fail(s, EUCLEAN, "inode %llu: no path to the subvolume's root",
			    (unsigned long long)ino);
	if (!i->placed) {
		snprintf(out, cap, "o%llu-%llu-0", (unsigned long long)ino,
			 (unsigned long long)i->gen);
		return 0;
	}
	int r = cur_path(s, i->refs[0].parent, out, cap, depth + 1);
	if (r)
		return r;
	size_t l = strlen(out);
	if ((size_t)snprintf(out + l, cap - l, "%s%s", l ? "/" : "", i->refs[0].name) >= cap - l)
		return fail(s, ENAMETOOLONG, "inode %llu: path too long", (unsigned long long)ino);
	return 0;
}

/* A path in a directory: the directory's current path and the name. */
static int path_in(struct sender *s, uint64_t dir, const char *name, char *out, size_t cap)
{
	int r = cur_path(s, dir, out, cap, 0);
	size_t l = strlen(out);
	if (!r && (size_t)snprintf(out + l, cap - l, "%s%s", l ? "/" : "", name) >= cap - l)
		r = fail(s, ENAMETOOLONG, "path too long under inode %llu", (unsigned long long)dir);
	return r;
}

static int end_cmd(struct sender *s)
{
	int r = sw_end(&s->w);
	return r ? fail(s, -r, "writing the stream: %s", strerror(-r)) : 0;
}

/* The kernel's new_encode_dev of a btrfs rdev (MKDEV: major << 20 | minor). */
static uint64_t encode_dev(uint64_t rdev)
{
	uint64_t major = rdev >> 20, minor = rdev & 0xfffff;
	return (minor & 0xff) | (major << 8) | ((minor & ~0xffull) << 12);
}

/* Makes inode i under its orphan name. */
static int create(struct sender *s, struct sinode *i)
{
	char p[PATH_CAP];
	struct ref_ino ino = { s->subvol, i->ino };
	cur_path(s, i->ino, p, sizeof(p), 0);
	uint32_t m = i->mode;
	uint16_t c = S_ISREG(m) ? REF_SEND_C_MKFILE : S_ISDIR(m) ? REF_SEND_C_MKDIR
		   : S_ISLNK(m) ? REF_SEND_C_SYMLINK : S_ISFIFO(m) ? REF_SEND_C_MKFIFO
		   : S_ISSOCK(m) ? REF_SEND_C_MKSOCK : S_ISCHR(m) || S_ISBLK(m) ? REF_SEND_C_MKNOD : 0;
	if (!c)
		return fail(s, EUCLEAN, "inode %llu: mode %o", (unsigned long long)i->ino, m);
	sw_cmd(&s->w, c);
	sw_str(&s->w, REF_SEND_A_PATH, p);
	sw_u64(&s->w, REF_SEND_A_INO, i->ino);
	if (c == REF_SEND_C_MKNOD || c == REF_SEND_C_MKFIFO || c == REF_SEND_C_MKSOCK) {
		struct ref_stat st; /* as send_create_inode: rdev, then mode */
		if (ref_stat(s->fs, &ino, &st))
			return fail(s, EIO, "inode %llu: %s", (unsigned long long)i->ino, ref_error(s->fs));
		sw_u64(&s->w, REF_SEND_A_RDEV, encode_dev(st.rdev));
		sw_u64(&s->w, REF_SEND_A_MODE, m);
	}
	if (c == REF_SEND_C_SYMLINK) {
		char target[PATH_CAP];
		ssize_t n = ref_readlink(s->fs, &ino, target, sizeof(target));
		if (n < 0)
			return fail(s, (int)-n, "inode %llu: %s", (unsigned long long)i->ino,
				    ref_error(s->fs));
		sw_str(&s->w, REF_SEND_A_PATH_LINK, target);
	}
	i->created = true;
	return end_cmd(s);
}

/* Each name of inode i: the first by renaming it from its orphan name,
 * the others as links; directories they lie in made first when needed. */
static int place(struct sender *s, struct sinode *i)
{
	int r;
	for (size_t k = 0; k < i->nrefs; k++) {
		struct sinode *d = find(s, i->refs[k].parent);
		if (i->refs[k].parent != BTRFS_FIRST_FREE_OBJECTID && !d)
			return fail(s, EUCLEAN, "inode %llu: its directory %llu has no inode item",
				    (unsigned long long)i->ino, (unsigned long long)i->refs[k].parent);
		if (d && !d->created && (r = create(s, d)))
			return r;
	}
	if (!i->created && (r = create(s, i)))
		return r;
	for (size_t k = 0; k < i->nrefs; k++) {
		char from[PATH_CAP], to[PATH_CAP];
		if ((r = cur_path(s, i->ino, from, sizeof(from), 0)) ||
		    (r = path_in(s, i->refs[k].parent, i->refs[k].name, to, sizeof(to))))
			return r;
		sw_cmd(&s->w, k == 0 ? REF_SEND_C_RENAME : REF_SEND_C_LINK);
		sw_str(&s->w, REF_SEND_A_PATH, k == 0 ? from : to);
		sw_str(&s->w, k == 0 ? REF_SEND_A_PATH_TO : REF_SEND_A_PATH_LINK, k == 0 ? to : from);
		if ((r = end_cmd(s)))
			return r;
		i->placed = true;
	}
	return 0;
}

struct xctx {
	struct sender *s;
	const char *path;
};

static int one_xattr(void *ctx, const char *name, size_t nlen, const uint8_t *value, size_t vlen)
{
	struct xctx *x = ctx;
	sw_cmd(&x->s->w, REF_SEND_C_SET_XATTR);
	sw_str(&x->s->w, REF_SEND_A_PATH, x->path);
	sw_attr(&x->s->w, REF_SEND_A_XATTR_NAME, name, nlen);
	sw_attr(&x->s->w, REF_SEND_A_XATTR_DATA, value, vlen);
	return end_cmd(x->s);
}

/* A regular file's data: a write (or update_extent) per 48 KiB of each run
 * of data; a truncate when the size lies past the last of it. */
static int send_data(struct sender *s, const struct ref_ino *ino, const char *path, uint64_t size,
		     struct ref_send_stats *st)
{
	uint8_t *buf = s->o && s->o->no_data ? NULL : malloc(SEND_WRITE);
	if (!buf && !(s->o && s->o->no_data))
		return fail(s, ENOMEM, "out of memory");
	uint64_t off = 0, last = 0;
	int r = 0;
	while (!r && off < size) {
		uint64_t start, end;
		if ((r = ref_next_data(s->fs, ino, off, &start, &end))) {
			r = fail(s, -r, "%s: %s", path, ref_error(s->fs));
			break;
		}
		if (start >= end)
			break;
		if (s->o && s->o->no_data) {
			sw_cmd(&s->w, REF_SEND_C_UPDATE_EXTENT);
			sw_str(&s->w, REF_SEND_A_PATH, path);
			sw_u64(&s->w, REF_SEND_A_FILE_OFFSET, start);
			sw_u64(&s->w, REF_SEND_A_SIZE, end - start);
			r = end_cmd(s);
		}
		for (uint64_t at = start; !r && buf && at < end; at += SEND_WRITE) {
			size_t n = end - at < SEND_WRITE ? (size_t)(end - at) : SEND_WRITE;
			ssize_t got = ref_pread(s->fs, ino, buf, n, at);
			if (got != (ssize_t)n) {
				r = fail(s, got < 0 ? (int)-got : EIO, "%s: reading %zu bytes at %llu: %s",
					 path, n, (unsigned long long)at,
					 got < 0 ? ref_error(s->fs) : "short read");
				break;
			}
			sw_cmd(&s->w, REF_SEND_C_WRITE);
			sw_str(&s->w, REF_SEND_A_PATH, path);
			sw_u64(&s->w, REF_SEND_A_FILE_OFFSET, at);
			sw_data(&s->w, buf, n);
			r = end_cmd(s);
			if (st)
				st->data_bytes += n;
		}
		last = off = end;
	}
	free(buf);
	if (!r && last < size) {
		sw_cmd(&s->w, REF_SEND_C_TRUNCATE);
		sw_str(&s->w, REF_SEND_A_PATH, path);
		sw_u64(&s->w, REF_SEND_A_SIZE, size);
		r = end_cmd(s);
	}
	return r;
}

static int send_utimes(struct sender *s, const char *path, const struct ref_stat *st)
{
	sw_cmd(&s->w, REF_SEND_C_UTIMES);
	sw_str(&s->w, REF_SEND_A_PATH, path);
	sw_time(&s->w, REF_SEND_A_ATIME, &st->atime);
	sw_time(&s->w, REF_SEND_A_MTIME, &st->mtime);
	sw_time(&s->w, REF_SEND_A_CTIME, &st->ctime);
	return end_cmd(s);
}

/* An inode's xattrs, data, owner, mode and (but for a directory) times. */
static int finish(struct sender *s, uint64_t ino_nr, struct ref_send_stats *stats)
{
	char p[PATH_CAP];
	struct ref_ino ino = { s->subvol, ino_nr };
	struct ref_stat st;
	int r = cur_path(s, ino_nr, p, sizeof(p), 0);
	if (r)
		return r;
	if ((r = ref_stat(s->fs, &ino, &st)))
		return fail(s, -r, "inode %llu: %s", (unsigned long long)ino_nr, ref_error(s->fs));
	struct xctx x = { s, p };
	if ((r = ref_listxattr(s->fs, &ino, one_xattr, &x)))
		return r < 0 && s->errlen && !s->err[0] ? fail(s, -r, "%s: %s", p, ref_error(s->fs))
							       : r;
	if (S_ISREG(st.mode) && (r = send_data(s, &ino, p, st.size, stats)))
		return r;
	sw_cmd(&s->w, REF_SEND_C_CHOWN);
	sw_str(&s->w, REF_SEND_A_PATH, p);
	sw_u64(&s->w, REF_SEND_A_UID, st.uid);
	sw_u64(&s->w, REF_SEND_A_GID, st.gid);
	if ((r = end_cmd(s)))
		return r;
	if (!S_ISLNK(st.mode)) {
		sw_cmd(&s->w, REF_SEND_C_CHMOD);
		sw_str(&s->w, REF_SEND_A_PATH, p);
		sw_u64(&s->w, REF_SEND_A_MODE, st.mode & 07777);
		if ((r = end_cmd(s)))
			return r;
	}
	if (stats)
		stats->inodes++;
	return S_ISDIR(st.mode) ? 0 : send_utimes(s, p, &st);
}

/* Every directory's times, now that no entry changes any more. */
static int dir_times(struct sender *s)
{
	int r = 0;
	for (size_t k = 0; !r && k <= s->n; k++) {
		uint64_t nr = k == 0 ? BTRFS_FIRST_FREE_OBJECTID : s->in[k - 1].ino;
		if (k > 0 && (nr == BTRFS_FIRST_FREE_OBJECTID || !S_ISDIR(s->in[k - 1].mode) ||
			      !s->in[k - 1].placed))
			continue;
		char p[PATH_CAP];
		struct ref_ino ino = { s->subvol, nr };
		struct ref_stat st;
		if ((r = cur_path(s, nr, p, sizeof(p), 0)))
			break;
		if ((r = ref_stat(s->fs, &ino, &st)))
			return fail(s, -r, "inode %llu: %s", (unsigned long long)nr, ref_error(s->fs));
		r = send_utimes(s, p, &st);
	}
	return r;
}

static int begin(struct sender *s)
{
	struct ref_subvol_info si;
	char path[PATH_CAP];
	int r = ref_subvol_info(s->fs, s->subvol, &si);
	if (!r)
		r = ref_subvol_path(s->fs, s->subvol, path, sizeof(path));
	if (r)
		return fail(s, -r, "subvolume %llu: %s", (unsigned long long)s->subvol, ref_error(s->fs));
	if (!si.refs)
		return fail(s, ENOENT, "subvolume %llu is being deleted", (unsigned long long)s->subvol);
	if (!(si.flags & BTRFS_ROOT_SUBVOL_RDONLY))
		return fail(s, EPERM, "subvolume %s is not read-only", *path ? path : "/");
	const char *name = strrchr(path, '/');
	sw_cmd(&s->w, REF_SEND_C_SUBVOL);
	sw_str(&s->w, REF_SEND_A_PATH, name ? name + 1 : path);
	sw_attr(&s->w, REF_SEND_A_UUID, si.uuid, BTRFS_UUID_SIZE);
	sw_u64(&s->w, REF_SEND_A_CTRANSID, si.ctransid);
	return end_cmd(s);
}

int ref_send(ref_fs *fs, uint64_t subvol, const struct ref_send_opts *o, FILE *out,
	     struct ref_send_stats *st, char *err, size_t errlen)
{
	struct sender s = { .fs = fs, .subvol = subvol, .o = o, .err = err, .errlen = errlen };
	uint32_t proto = o && o->proto ? o->proto : 1;
	if (errlen)
		err[0] = 0;
	if (proto > 2)
		return fail(&s, EINVAL, "protocol %u: 1 and 2 are supported", proto);
	if (subvol == BTRFS_FS_TREE_OBJECTID)
		return fail(&s, EPERM, "the top-level subvolume is not read-only");
	int r = sw_begin(&s.w, out, proto, !(o && o->omit_header));
	if (r)
		return fail(&s, -r, "writing the stream: %s", strerror(-r));
	if (!(r = begin(&s)) && !(r = collect(&s))) {
		struct sinode *root = find(&s, BTRFS_FIRST_FREE_OBJECTID);
		if (root) /* the subvolume itself: there already */
			root->created = root->placed = true;
		/* the root directory: its xattrs, owner and mode */
		r = finish(&s, BTRFS_FIRST_FREE_OBJECTID, st);
		for (size_t k = 0; !r && k < s.n; k++) {
			struct sinode *i = &s.in[k];
			if (i->ino == BTRFS_FIRST_FREE_OBJECTID || !i->nrefs)
				continue; /* the root; an inode without a name (an orphan) */
			if (!(r = place(&s, i)))
				r = finish(&s, i->ino, st);
		}
		if (!r)
			r = dir_times(&s);
		if (!r && !(o && o->omit_end)) {
			sw_cmd(&s.w, REF_SEND_C_END);
			r = end_cmd(&s);
		}
	}
	if (st) {
		st->commands = s.w.commands;
		st->bytes = s.w.written;
	}
	for (size_t k = 0; k < s.n; k++) {
		for (size_t j = 0; j < s.in[k].nrefs; j++)
			free(s.in[k].refs[j].name);
		free(s.in[k].refs);
	}
	free(s.in);
	sw_free(&s.w);
	return r;
}
