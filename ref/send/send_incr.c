/*
 * send_incr.c - the body of an incremental send stream (btrfs send -p): the
 * commands that turn a snapshot of the parent into the sent subvolume on the
 * receiving side.  Inodes are the same when their number and generation are
 * (an inode deleted and its number used again is two inodes).  In three
 * passes, so that no command meets a name still in use:
 *
 *   1. names that go: an inode that loses every name (a directory that
 *      moves, a file renamed, a deleted directory) is renamed to its orphan
 *      name at the subvolume's root, carrying what it holds; a deleted file
 *      and the names a file loses besides a kept one are unlinked;
 *   2. deleted directories, empty now, are removed;
 *   3. in the order of their numbers, new inodes are made and placed as in a
 *      full stream, moved ones renamed from their orphan names into place and
 *      given their new links, and every kept inode's changes sent: xattrs
 *      removed and set, the file ranges whose extents differ written (holes
 *      where the parent had data written as zeros, as the kernel sends
 *      them), the size, owner, mode and times.
 *
 * The kernel's send orders the same changes differently (one inode at a
 * time, with its waiting and orphanizing rules); the tree the receiving side
 * ends with is the same.
 */
#include "ref/send/send_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PATH_CAP 4096
#define ZERO_CHUNK 49152u

static bool same_name(const struct sref *a, const struct sref *b)
{
	return a->parent == b->parent && !strcmp(a->name, b->name);
}

static bool has_name(const struct sref *v, size_t n, const struct sref *x)
{
	for (size_t k = 0; k < n; k++)
		if (same_name(&v[k], x))
			return true;
	return false;
}

/* The receiving side starts as the parent: every parent inode at its names;
 * an inode kept in the sent subvolume takes them over. */
static int start_as_parent(struct sender *s)
{
	for (size_t k = 0; k < s->pt.n; k++) {
		struct sinode *p = &s->pt.in[k];
		if (p->ino == BTRFS_FIRST_FREE_OBJECTID)
			continue;
		struct sinode *t = send_find(&s->t, p->ino);
		struct sinode *to = t && t->gen == p->gen && (t->mode & S_IFMT) == (p->mode & S_IFMT) ? t : p;
		for (size_t j = 0; j < p->nrefs; j++) {
			char *nm = strdup(p->refs[j].name);
			struct sref *v = realloc(to->cur, (to->ncur + 1) * sizeof(*v));
			if (!nm || !v) {
				free(nm);
				if (v)
					to->cur = v;
				return send_fail(s, ENOMEM, "out of memory");
			}
			to->cur = v;
			v[to->ncur++] = (struct sref){ p->refs[j].parent, nm };
		}
	}
	return 0;
}

static bool kept(const struct sender *s, const struct sinode *p)
{
	const struct sinode *t = send_find(&s->t, p->ino);
	return t && t->gen == p->gen && (t->mode & S_IFMT) == (p->mode & S_IFMT);
}

/* Pass 1 for one inode on the receiving side (i: its model, names: what it
 * is to have; none for a deleted one). */
static int names_go(struct sender *s, struct sinode *i, const struct sref *names, size_t n)
{
	bool any_kept = false;
	for (size_t k = 0; k < i->ncur; k++)
		any_kept |= has_name(names, n, &i->cur[k]);
	int r = 0;
	if (!any_kept && (S_ISDIR(i->mode) || n)) { /* out of the way, alive */
		char orphan[64];
		send_orphan_name(i, orphan, sizeof(orphan));
		bool at_orphan = i->cur[0].parent == BTRFS_FIRST_FREE_OBJECTID &&
				 !strcmp(i->cur[0].name, orphan);
		if (!at_orphan && (r = send_rename(s, i, BTRFS_FIRST_FREE_OBJECTID, orphan)))
			return r;
		for (size_t k = i->ncur; !r && k-- > 1;)
			r = send_unlink(s, i, k);
		return r;
	}
	for (size_t k = i->ncur; !r && k-- > 0;) {
		if (!has_name(names, n, &i->cur[k]))
			r = send_unlink(s, i, k);
	}
	return r;
}

/* One file's extent items: [off, end) and the item's bytes. */
struct fext {
	uint64_t off, end;
	uint8_t *item;
	uint32_t size;
	bool data; /* holds bytes (inline, or regular with a disk extent) */
};

struct fexts {
	struct fext *v;
	size_t n;
};

static void fexts_free(struct fexts *e)
{
	for (size_t k = 0; k < e->n; k++)
		free(e->v[k].item);
	free(e->v);
	*e = (struct fexts){ 0 };
}

static int add_fext(void *ctx, uint64_t off, const uint8_t *d, uint32_t size)
{
	struct fexts *out = ctx;
	const struct btrfs_file_extent_item *fe = (const void *)d;
	struct fext *v = realloc(out->v, (out->n + 1) * sizeof(*v));
	if (v)
		out->v = v;
	uint8_t *item = malloc(size);
	if (!v || !item) {
		free(item);
		return -ENOMEM;
	}
	memcpy(item, d, size);
	bool in = fe->type == BTRFS_FILE_EXTENT_INLINE;
	uint64_t len = in ? LE64(fe->ram_bytes) : LE64(fe->num_bytes);
	v[out->n++] = (struct fext){ off, off + len, item, size,
				     in || (fe->type == BTRFS_FILE_EXTENT_REG && fe->disk_bytenr) };
	return 0;
}

static int read_extents(struct sender *s, uint64_t subvol, uint64_t ino, struct fexts *out)
{
	return send_each_extent(s, subvol, ino, add_fext, out);
}

static const struct fext *covering(const struct fexts *e, uint64_t at)
{
	for (size_t k = 0; k < e->n; k++)
		if (e->v[k].off <= at && at < e->v[k].end)
			return &e->v[k];
	return NULL;
}

/* Whether two extent items give the same bytes at every offset both cover:
 * the same inline bytes at the same offset, or the same disk extent mapped
 * at the same shift (an extent split by a later write on either side stays
 * the same where it was not written). */
static bool same_map(const struct fext *x, const struct fext *y)
{
	const struct btrfs_file_extent_item *a = (const void *)x->item, *b = (const void *)y->item;
	if (a->type != b->type || a->compression != b->compression)
		return false;
	if (a->type == BTRFS_FILE_EXTENT_INLINE)
		return x->off == y->off && x->size == y->size && !memcmp(x->item + 8, y->item + 8, x->size - 8);
	return a->disk_bytenr == b->disk_bytenr && a->disk_num_bytes == b->disk_num_bytes &&
	       x->off - LE64(a->offset) == y->off - LE64(b->offset);
}

static int write_zeros(struct sender *s, const char *path, uint64_t from, uint64_t to)
{
	static const uint8_t zeros[ZERO_CHUNK];
	int r = 0;
	for (uint64_t at = from; !r && at < to; at += ZERO_CHUNK) {
		size_t n = to - at < ZERO_CHUNK ? (size_t)(to - at) : ZERO_CHUNK;
		if (s->o && s->o->no_data) {
			sw_cmd(&s->w, REF_SEND_C_UPDATE_EXTENT);
			sw_str(&s->w, REF_SEND_A_PATH, path);
			sw_u64(&s->w, REF_SEND_A_FILE_OFFSET, at);
			sw_u64(&s->w, REF_SEND_A_SIZE, n);
		} else {
			sw_cmd(&s->w, REF_SEND_C_WRITE);
			sw_str(&s->w, REF_SEND_A_PATH, path);
			sw_u64(&s->w, REF_SEND_A_FILE_OFFSET, at);
			sw_data(&s->w, zeros, n);
		}
		r = send_end_cmd(s);
	}
	return r;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The ranges of a kept file (below its new size) whose extents differ from
 * the parent's: written anew, or zeroed where the parent had data and the
 * file now has none.  *changed: anything sent. */
static int data_diff(struct sender *s, uint64_t ino_nr, const char *path, uint64_t size,
		     bool *changed)
{
	struct fexts a = { 0 }, b = { 0 };
	int r = read_extents(s, s->parent, ino_nr, &a);
	if (!r)
		r = read_extents(s, s->subvol, ino_nr, &b);
	uint64_t *cuts = r ? NULL : malloc((2 * (a.n + b.n) + 2) * sizeof(*cuts));
	if (!r && !cuts)
		r = -ENOMEM;
	if (r) {
		fexts_free(&a);
		fexts_free(&b);
		free(cuts);
		return send_fail(s, -r, "%s: reading its extents: %s", path,
				 r == -ENOMEM ? "out of memory" : ref_error(s->fs));
	}
	size_t nc = 0;
	cuts[nc++] = 0;
	cuts[nc++] = size;
	for (size_t k = 0; k < a.n; k++)
		cuts[nc++] = a.v[k].off, cuts[nc++] = a.v[k].end;
	for (size_t k = 0; k < b.n; k++)
		cuts[nc++] = b.v[k].off, cuts[nc++] = b.v[k].end;
	qsort(cuts, nc, sizeof(*cuts), cmp_u64);
	struct ref_ino ino = { s->subvol, ino_nr };
	for (size_t k = 0; !r && k + 1 < nc && cuts[k] < size; k++) {
		uint64_t from = cuts[k], to = cuts[k + 1] < size ? cuts[k + 1] : size;
		if (from >= to)
			continue;
		const struct fext *x = covering(&a, from), *y = covering(&b, from);
		bool same = (!x && !y) || (x && y && same_map(x, y));
		if (same || (!(x && x->data) && !(y && y->data)))
			continue;
		*changed = true;
		r = y && y->data ? send_range(s, &ino, path, from, to) : write_zeros(s, path, from, to);
	}
	fexts_free(&a);
	fexts_free(&b);
	free(cuts);
	return r;
}

/* One xattr list, names and values copied. */
struct xattrs {
	char **name;
	uint8_t **value;
	size_t *vlen, n;
};

static int add_xattr(void *ctx, const char *name, size_t nlen, const uint8_t *value, size_t vlen)
{
	struct xattrs *x = ctx;
	char **nv = realloc(x->name, (x->n + 1) * sizeof(*nv));
	if (nv)
		x->name = nv;
	uint8_t **vv = realloc(x->value, (x->n + 1) * sizeof(*vv));
	if (vv)
		x->value = vv;
	size_t *lv = realloc(x->vlen, (x->n + 1) * sizeof(*lv));
	if (lv)
		x->vlen = lv;
	char *n = malloc(nlen + 1);
	uint8_t *v = malloc(vlen ? vlen : 1);
	if (!nv || !vv || !lv || !n || !v) {
		free(n);
		free(v);
		return -ENOMEM;
	}
	memcpy(n, name, nlen);
	n[nlen] = 0;
	memcpy(v, value, vlen);
	x->name[x->n] = n;
	x->value[x->n] = v;
	x->vlen[x->n++] = vlen;
	return 0;
}

static void xattrs_free(struct xattrs *x)
{
	for (size_t k = 0; k < x->n; k++) {
		free(x->name[k]);
		free(x->value[k]);
	}
	free(x->name);
	free(x->value);
	free(x->vlen);
}

static ssize_t find_xattr(const struct xattrs *x, const char *name)
{
	for (size_t k = 0; k < x->n; k++)
		if (!strcmp(x->name[k], name))
			return (ssize_t)k;
	return -1;
}

/* The xattrs removed and set since the parent, but for the capabilities,
 * which go last (send_caps). */
static int xattr_diff(struct sender *s, uint64_t ino_nr, const char *path, bool *changed)
{
	struct xattrs a = { 0 }, b = { 0 };
	struct ref_ino pi = { s->parent, ino_nr }, si = { s->subvol, ino_nr };
	int r = ref_listxattr(s->fs, &pi, add_xattr, &a);
	if (!r)
		r = ref_listxattr(s->fs, &si, add_xattr, &b);
	if (r)
		r = send_fail(s, -r, "%s: its xattrs: %s", path,
			      r == -ENOMEM ? "out of memory" : ref_error(s->fs));
	for (size_t k = 0; !r && k < a.n; k++) {
		if (find_xattr(&b, a.name[k]) >= 0)
			continue;
		*changed = true;
		sw_cmd(&s->w, REF_SEND_C_REMOVE_XATTR);
		sw_str(&s->w, REF_SEND_A_PATH, path);
		sw_str(&s->w, REF_SEND_A_XATTR_NAME, a.name[k]);
		r = send_end_cmd(s);
	}
	for (size_t k = 0; !r && k < b.n; k++) {
		ssize_t j = find_xattr(&a, b.name[k]);
		bool same = j >= 0 && a.vlen[j] == b.vlen[k] && !memcmp(a.value[j], b.value[k], b.vlen[k]);
		if (same || !strcmp(b.name[k], SEND_CAPS))
			continue;
		*changed = true;
		sw_cmd(&s->w, REF_SEND_C_SET_XATTR);
		sw_str(&s->w, REF_SEND_A_PATH, path);
		sw_str(&s->w, REF_SEND_A_XATTR_NAME, b.name[k]);
		sw_attr(&s->w, REF_SEND_A_XATTR_DATA, b.value[k], b.vlen[k]);
		r = send_end_cmd(s);
	}
	xattrs_free(&a);
	xattrs_free(&b);
	return r;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* A kept inode's changes: xattrs, data, size, owner, mode, flags, times. */
static int update_kept(struct sender *s, struct sinode *i, bool renamed)
{
	char p[PATH_CAP];
	struct ref_ino pi = { s->parent, i->ino }, si = { s->subvol, i->ino };
	struct ref_stat a, b;
	int r = send_cur_path(s, i->ino, p, sizeof(p));
	if (r)
		return r;
	if ((r = ref_stat(s->fs, &pi, &a)) || (r = ref_stat(s->fs, &si, &b)))
		return send_fail(s, -r, "inode %llu: %s", (unsigned long long)i->ino, ref_error(s->fs));
	bool changed = renamed;
	if (!changed && b.transid == a.transid && same_time(&a.ctime, &b.ctime) &&
	    same_time(&a.mtime, &b.mtime) && same_time(&a.atime, &b.atime) && a.size == b.size)
		return 0; /* untouched since the parent */
	if ((r = xattr_diff(s, i->ino, p, &changed)))
		return r;
	if (S_ISREG(b.mode)) {
		if ((r = data_diff(s, i->ino, p, b.size, &changed)))
			return r;
		if (a.size != b.size) {
			sw_cmd(&s->w, REF_SEND_C_TRUNCATE);
			sw_str(&s->w, REF_SEND_A_PATH, p);
			sw_u64(&s->w, REF_SEND_A_SIZE, b.size);
			if ((r = send_end_cmd(s)))
				return r;
		}
		if ((r = send_clone_add_self(s, i->ino)))
			return r;
	}
	bool chown = a.uid != b.uid || a.gid != b.gid;
	if (chown) {
		sw_cmd(&s->w, REF_SEND_C_CHOWN);
		sw_str(&s->w, REF_SEND_A_PATH, p);
		sw_u64(&s->w, REF_SEND_A_UID, b.uid);
		sw_u64(&s->w, REF_SEND_A_GID, b.gid);
		if ((r = send_end_cmd(s)))
			return r;
	}
	/* a chown on the receiving side clears set-user-ID and set-group-ID:
	 * the mode is sent again whenever it holds them */
	bool chmod = (a.mode & 07777) != (b.mode & 07777) ||
		     (chown && !S_ISDIR(b.mode) && (b.mode & (S_ISUID | S_ISGID)));
	if (chmod && !S_ISLNK(b.mode)) {
		sw_cmd(&s->w, REF_SEND_C_CHMOD);
		sw_str(&s->w, REF_SEND_A_PATH, p);
		sw_u64(&s->w, REF_SEND_A_MODE, b.mode & 07777);
		if ((r = send_end_cmd(s)))
			return r;
	}
	/* v2: the inode's flags (btrfs_inode_item.flags, whole) when they
	 * changed, as the kernel's send_fileattr (never for a new inode or a
	 * symlink; btrfs receive 6.2 ignores them) */
	if (s->w.version >= 2 && a.flags != b.flags && !S_ISLNK(b.mode)) {
		sw_cmd(&s->w, REF_SEND_C_FILEATTR);
		sw_str(&s->w, REF_SEND_A_PATH, p);
		sw_u64(&s->w, REF_SEND_A_FILEATTR, b.flags);
		if ((r = send_end_cmd(s)))
			return r;
	}
	if ((r = send_caps(s, i->ino, p)))
		return r;
	if (S_ISDIR(b.mode)) {
		i->done = true; /* its times at the end */
		return 0;
	}
	return send_utimes(s, p, &b);
}

int send_incremental(struct sender *s)
{
	int r = start_as_parent(s);
	/* 1: names that go */
	for (size_t k = 0; !r && k < s->pt.n; k++) {
		struct sinode *p = &s->pt.in[k];
		if (p->ino == BTRFS_FIRST_FREE_OBJECTID || kept(s, p) || !p->ncur)
			continue;
		r = names_go(s, p, NULL, 0);
	}
	for (size_t k = 0; !r && k < s->t.n; k++) {
		struct sinode *t = &s->t.in[k];
		if (t->ncur)
			r = names_go(s, t, t->refs, t->nrefs);
	}
	/* 2: deleted directories, empty now */
	for (size_t k = 0; !r && k < s->pt.n; k++) {
		struct sinode *p = &s->pt.in[k];
		if (p->ncur && !kept(s, p))
			r = send_rmdir(s, p);
	}
	/* 3: new and moved inodes placed, kept ones brought up to date */
	struct sinode *root = send_find(&s->t, BTRFS_FIRST_FREE_OBJECTID);
	if (!r && send_find(&s->pt, BTRFS_FIRST_FREE_OBJECTID))
		r = update_kept(s, root, false);
	for (size_t k = 0; !r && k < s->t.n; k++) {
		struct sinode *t = &s->t.in[k];
		if (t->ino == BTRFS_FIRST_FREE_OBJECTID || !t->nrefs)
			continue;
		const struct sinode *p = send_find(&s->pt, t->ino);
		bool is_kept = p && kept(s, p);
		bool moved = false;
		char orphan[64];
		send_orphan_name(t, orphan, sizeof(orphan));
		bool at_orphan = t->ncur == 1 && t->cur[0].parent == BTRFS_FIRST_FREE_OBJECTID &&
				 !strcmp(t->cur[0].name, orphan);
		if (!is_kept || !t->ncur || at_orphan) {
			/* new, or out under its orphan name: placed as in a full stream */
			moved = is_kept;
			if ((r = send_place(s, t)))
				break;
		} else {
			r = send_make_dirs(s, t);
			for (size_t j = 0; !r && j < t->nrefs; j++) {
				if (has_name(t->cur, t->ncur, &t->refs[j]))
					continue;
				moved = true;
				r = send_link(s, t, t->refs[j].parent, t->refs[j].name);
			}
		}
		if (!r)
			r = is_kept ? update_kept(s, t, moved) : send_finish_new(s, t->ino);
		if (!is_kept && S_ISDIR(t->mode))
			t->done = true;
	}
	return r;
}
