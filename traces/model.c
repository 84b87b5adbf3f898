/*
 * model.c - the oracle's model of the POSIX state (traces/model.h): a table
 * of inodes advanced by workload operations as Linux applies them on btrfs,
 * described in the canonical form of `btrsim manifest`.
 *
 * Inodes are shared between clones behind atomic reference counts and copied
 * on the first change (mut); a file's digest is computed once and kept in its
 * inode until its data changes, so describing many snapshots that share most
 * files hashes each version of a file once.  A regular file holds no data, only its size and
 * a sorted list of extents (offset, length, seed): the bytes of a `write` are
 * wl_content(seed, offset), so they are recomputed when the digest is taken.
 * Directories hold their entries sorted by name and the inode of their parent
 * (directories have one name, so ".." is well defined).
 *
 * Subvolumes are separate trees: every inode belongs to one (sv, the inode
 * number of that subvolume's root directory; the top level is ROOT).  A
 * subvolume's root is a directory of kind SUBVOL whose sv is itself and whose
 * parent is the directory holding its name, in another subvolume.  A
 * snapshot copies every inode of the source subvolume as it is at that
 * instant (the model's copy is deep, with new inode numbers; taken before
 * DEST's own entry is added, so a snapshot inside its source does not hold
 * itself), a subvolume nested in the source becoming an empty stand-in
 * directory (kind STANDIN, the kernel's inode 2 made by new_simple_dir:
 * 0755, the owner of the directory holding it, no xattrs; changes to it do
 * not stick).  Linux's rules, as Linux 6.18 applies them on btrfs: links and
 * renames of anything but a subvolume's root stay inside one subvolume
 * (EXDEV); a subvolume's root moves anywhere, and nothing is renamed over
 * one (ENOTEMPTY); a read-only subvolume refuses every change (EROFS); a
 * stand-in takes no new names, xattrs or renames (EPERM, EACCES,
 * EOPNOTSUPP, ENOTEMPTY), and rmdir removes it; rmdir of an empty subvolume
 * deletes it; `subvol-delete` needs no other subvolume inside.
 *
 * Paths are resolved as openat2(RESOLVE_IN_ROOT) resolves them in
 * wl_exec_host: ".." of the root is the root, an absolute symlink starts
 * again at the root, symlinks in the middle of a path are followed, a final
 * one only when asked (or when slashes follow it).  At most 40 symlinks are
 * followed in one resolution, as Linux's MAXSYMLINKS.
 *
 * Everything that can fail because the model and the target disagree is
 * checked before anything changes, so -EINVAL leaves the model as it was.
 */
#include "traces/manifest.h"
#include "traces/model.h"
#include "traces/model_internal.h"
#include "traces/sha256.h"

#include <errno.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ROOT 0u
#define BLK 4096u	   /* the digest's block */
#define MAX_FOLLOWS 40	   /* Linux's MAXSYMLINKS */
#define KILLPRIV_XATTR "security.capability"

/* Directory kinds (minode.kind). */
enum { K_PLAIN, K_SUBVOL, K_STANDIN };

/* Bytes [off, off + len) of the file are those at o + shift (o the file
 * offset) of wl_write_content(seed, flags, ...) (flags: a write's
 * WL_WRITE_TEXT, or 0); shift is not 0 once an extent was cloned elsewhere.
 * With EXT_LITERAL the bytes are a receive's, in memory the workload holds
 * (model_receive.c): byte o is at address seed + o + shift. */
struct extent {
	uint64_t off, len, seed, shift;
	int flags;
};
#define EXT_LITERAL 0x100

struct xattr {
	char *name; /* NUL-terminated (names hold no NUL) */
	uint8_t *value;
	size_t vlen;
};

struct dent {
	char *name; /* NUL-terminated, no '/' */
	uint32_t ino;
};

struct minode {
	atomic_uint refs;     /* models holding this inode */
	uint32_t mode;	      /* type and permission bits */
	uint32_t uid, gid;
	uint32_t nlink;	      /* names (directories: 1) */
	uint32_t parent;      /* directories: the directory holding it (the root: itself) */
	uint32_t sv;	      /* the subvolume: the inode number of its root directory */
	uint8_t kind;	      /* directories: K_PLAIN, K_SUBVOL (a subvolume's root), K_STANDIN */
	bool ro;	      /* K_SUBVOL: a read-only subvolume */
	bool received;	      /* K_SUBVOL: has a received uuid (btrfs receive finished it) */
	uint8_t ruuid[16];    /* K_SUBVOL, received: the received uuid */
	uint64_t size;	      /* regular files */
	struct extent *ext;   /* regular files: sorted, disjoint, inside [0, size) */
	size_t next, extcap;
	/* regular files: the content digest once computed, or NULL.  A cache,
	 * filled by model_describe on shared inodes too (published with a
	 * compare-and-swap), dropped by a change of the data (on a private
	 * inode). */
	_Atomic(unsigned char *) sha;
	char *target;	      /* symlinks */
	struct dent *ents;    /* directories: sorted by strcmp of name */
	size_t nents, entcap;
	struct xattr *xs;     /* sorted by strcmp of name */
	size_t nxs, xcap;
};

struct model {
	struct minode **ino; /* by inode number; NULL: a free number */
	uint32_t cap;
	uint32_t hint;	     /* no number below it is free to take: numbers are never reused,
			      * as btrfs does not reuse them while mounted, so that a number
			      * names one object across the states of a run (model_inos) */
	uint32_t uid, gid;   /* the owner of new objects */
};

/* ---- Inodes ------------------------------------------------------------- */

static void inode_destroy(struct minode *n)
{
	free(atomic_load_explicit(&n->sha, memory_order_acquire));
	free(n->ext);
	free(n->target);
	for (size_t i = 0; i < n->nents; i++)
		free(n->ents[i].name);
	free(n->ents);
	for (size_t i = 0; i < n->nxs; i++) {
		free(n->xs[i].name);
		free(n->xs[i].value);
	}
	free(n->xs);
	free(n);
}

static void inode_unref(struct minode *n)
{
	if (n && atomic_fetch_sub_explicit(&n->refs, 1, memory_order_acq_rel) == 1)
		inode_destroy(n);
}

static struct minode *inode_new(uint32_t mode, uint32_t uid, uint32_t gid)
{
	struct minode *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	atomic_init(&n->refs, 1);
	atomic_init(&n->sha, NULL);
	n->mode = mode;
	n->uid = uid;
	n->gid = gid;
	n->nlink = 1;
	return n;
}

/* A private copy of n (refs 1); NULL when out of memory. */
static struct minode *inode_copy(const struct minode *n)
{
	struct minode *c = inode_new(n->mode, n->uid, n->gid);
	if (!c)
		return NULL;
	c->nlink = n->nlink;
	c->parent = n->parent;
	c->sv = n->sv;
	c->kind = n->kind;
	c->ro = n->ro;
	c->received = n->received;
	memcpy(c->ruuid, n->ruuid, sizeof(c->ruuid));
	c->size = n->size;
	const unsigned char *sha = atomic_load_explicit(&((struct minode *)n)->sha,
							memory_order_acquire);
	if (sha) {
		unsigned char *d = malloc(crypto_hash_sha256_BYTES);
		if (!d)
			goto oom;
		memcpy(d, sha, crypto_hash_sha256_BYTES);
		atomic_store_explicit(&c->sha, d, memory_order_relaxed);
	}
	if (n->next) {
		if (!(c->ext = malloc(n->next * sizeof(*c->ext))))
			goto oom;
		memcpy(c->ext, n->ext, n->next * sizeof(*c->ext));
		c->next = c->extcap = n->next;
	}
	if (n->target && !(c->target = strdup(n->target)))
		goto oom;
	if (n->nents) {
		if (!(c->ents = calloc(n->nents, sizeof(*c->ents))))
			goto oom;
		c->entcap = n->nents;
		for (; c->nents < n->nents; c->nents++) {
			c->ents[c->nents].ino = n->ents[c->nents].ino;
			if (!(c->ents[c->nents].name = strdup(n->ents[c->nents].name)))
				goto oom;
		}
	}
	if (n->nxs) {
		if (!(c->xs = calloc(n->nxs, sizeof(*c->xs))))
			goto oom;
		c->xcap = n->nxs;
		for (; c->nxs < n->nxs; c->nxs++) {
			const struct xattr *x = &n->xs[c->nxs];
			struct xattr *y = &c->xs[c->nxs];
			if (!(y->name = strdup(x->name)))
				goto oom;
			y->vlen = x->vlen;
			if (x->vlen) {
				if (!(y->value = malloc(x->vlen))) {
					free(y->name);
					goto oom;
				}
				memcpy(y->value, x->value, x->vlen);
			}
		}
	}
	return c;
oom:
	inode_destroy(c);
	return NULL;
}

/* Inode i, private to m so that it may be changed; NULL when out of memory.
 * Pointers to inode i taken before are stale afterwards. */
static struct minode *mut(struct model *m, uint32_t i)
{
	struct minode *n = m->ino[i];
	if (atomic_load_explicit(&n->refs, memory_order_acquire) == 1)
		return n;
	struct minode *c = inode_copy(n);
	if (!c)
		return NULL;
	inode_unref(n);
	m->ino[i] = c;
	return c;
}

/* A free inode number (the table grown as needed); not yet taken. */
static int ino_free_slot(struct model *m, uint32_t *out)
{
	uint32_t i = m->hint > 0 ? m->hint : 1;
	while (i < m->cap && m->ino[i])
		i++;
	if (i == m->cap) {
		if (m->cap >= UINT32_MAX / 2)
			return -ENOMEM;
		uint32_t cap = m->cap * 2;
		struct minode **t = realloc(m->ino, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		memset(t + m->cap, 0, (cap - m->cap) * sizeof(*t));
		m->ino = t;
		m->cap = cap;
	}
	m->hint = i + 1; /* taken: numbers are never reused */
	*out = i;
	return 0;
}

/* Forgets inode i (its last name is gone). */
static void ino_drop(struct model *m, uint32_t i)
{
	inode_unref(m->ino[i]);
	m->ino[i] = NULL;
}

/* ---- Directory entries and xattrs ---------------------------------------- */

/* strcmp of the NUL-terminated s with the n bytes at c (which hold no NUL). */
static int name_cmp(const char *s, const char *c, size_t n)
{
	int r = strncmp(s, c, n);
	if (r == 0 && s[n])
		r = 1;
	return r;
}

/* Binary search of name (c, n) in d: true and *at its index when found,
 * else false and *at where it goes. */
static bool dir_find(const struct minode *d, const char *c, size_t n, size_t *at)
{
	size_t lo = 0, hi = d->nents;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = name_cmp(d->ents[mid].name, c, n);
		if (r == 0) {
			*at = mid;
			return true;
		}
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return false;
}

static bool dir_lookup(const struct minode *d, const char *name, uint32_t *ino)
{
	size_t at;
	if (!dir_find(d, name, strlen(name), &at))
		return false;
	*ino = d->ents[at].ino;
	return true;
}

/* Adds name -> ino to d (the name must not be there); 0 or -ENOMEM. */
static int dir_add(struct minode *d, const char *name, uint32_t ino)
{
	size_t at;
	if (dir_find(d, name, strlen(name), &at))
		return -EEXIST; /* checked by every caller before */
	if (d->nents == d->entcap) {
		size_t cap = d->entcap ? d->entcap * 2 : 8;
		struct dent *p = realloc(d->ents, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		d->ents = p;
		d->entcap = cap;
	}
	char *s = strdup(name);
	if (!s)
		return -ENOMEM;
	memmove(d->ents + at + 1, d->ents + at, (d->nents - at) * sizeof(*d->ents));
	d->ents[at] = (struct dent){ .name = s, .ino = ino };
	d->nents++;
	return 0;
}

static void dir_del(struct minode *d, const char *name)
{
	size_t at;
	if (!dir_find(d, name, strlen(name), &at))
		return;
	free(d->ents[at].name);
	memmove(d->ents + at, d->ents + at + 1, (d->nents - at - 1) * sizeof(*d->ents));
	d->nents--;
}

static void dir_set(struct minode *d, const char *name, uint32_t ino)
{
	size_t at;
	if (dir_find(d, name, strlen(name), &at))
		d->ents[at].ino = ino;
}

static bool xattr_find(const struct minode *n, const char *name, size_t *at)
{
	size_t lo = 0, hi = n->nxs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = strcmp(n->xs[mid].name, name);
		if (r == 0) {
			*at = mid;
			return true;
		}
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return false;
}

static int xattr_set(struct minode *n, const char *name, const uint8_t *value, size_t vlen)
{
	uint8_t *v = NULL;
	if (vlen) {
		if (!(v = malloc(vlen)))
			return -ENOMEM;
		memcpy(v, value, vlen);
	}
	size_t at;
	if (xattr_find(n, name, &at)) {
		free(n->xs[at].value);
		n->xs[at].value = v;
		n->xs[at].vlen = vlen;
		return 0;
	}
	if (n->nxs == n->xcap) {
		size_t cap = n->xcap ? n->xcap * 2 : 4;
		struct xattr *p = realloc(n->xs, cap * sizeof(*p));
		if (!p) {
			free(v);
			return -ENOMEM;
		}
		n->xs = p;
		n->xcap = cap;
	}
	char *s = strdup(name);
	if (!s) {
		free(v);
		return -ENOMEM;
	}
	memmove(n->xs + at + 1, n->xs + at, (n->nxs - at) * sizeof(*n->xs));
	n->xs[at] = (struct xattr){ .name = s, .value = v, .vlen = vlen };
	n->nxs++;
	return 0;
}

static void xattr_del(struct minode *n, const char *name)
{
	size_t at;
	if (!xattr_find(n, name, &at))
		return;
	free(n->xs[at].name);
	free(n->xs[at].value);
	memmove(n->xs + at, n->xs + at + 1, (n->nxs - at - 1) * sizeof(*n->xs));
	n->nxs--;
}

/* ---- File data ------------------------------------------------------------ */

/* Room for `more` extents. */
static int ext_reserve(struct minode *f, size_t more)
{
	if (f->next + more <= f->extcap)
		return 0;
	size_t cap = f->extcap ? f->extcap * 2 : 8;
	while (cap < f->next + more)
		cap *= 2;
	struct extent *p = realloc(f->ext, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	f->ext = p;
	f->extcap = cap;
	return 0;
}

/* Drops the data in [lo, hi): it reads as zeros from now on. */
static int ext_clear(struct minode *f, uint64_t lo, uint64_t hi)
{
	if (lo >= hi)
		return 0;
	if (ext_reserve(f, 1)) /* one extent may become two */
		return -ENOMEM;
	size_t out = 0;
	for (size_t i = 0; i < f->next; i++) {
		struct extent e = f->ext[i];
		uint64_t end = e.off + e.len;
		if (end <= lo || e.off >= hi) {
			f->ext[out++] = e;
			continue;
		}
		if (e.off < lo) { /* the part before lo stays */
			f->ext[out] = e;
			f->ext[out++].len = lo - e.off;
		}
		if (end > hi) { /* and the part after hi; at most once, at the end */
			memmove(f->ext + out + 1, f->ext + i + 1, (f->next - i - 1) * sizeof(*f->ext));
			f->ext[out] = e;
			f->ext[out].off = hi;
			f->ext[out++].len = end - hi;
			out += f->next - i - 1;
			f->next = out;
			return 0;
		}
	}
	f->next = out;
	return 0;
}

/* Bytes [off, off + len) become those of e (its offset and length: off, len);
 * len > 0, no overflow. */
static int ext_put(struct minode *f, struct extent e)
{
	uint64_t off = e.off, len = e.len, seed = e.seed, shift = e.shift;
	int flags = e.flags;
	if (ext_reserve(f, 2) || ext_clear(f, off, off + len))
		return -ENOMEM;
	size_t at = 0;
	while (at < f->next && f->ext[at].off < off)
		at++;
	memmove(f->ext + at + 1, f->ext + at, (f->next - at) * sizeof(*f->ext));
	f->ext[at] = e;
	f->next++;
	/* Neighbours of the same seed, shift and kind touching it are one
	 * extent: byte o of a write depends on (seed, kind, o + shift) alone. */
	if (at + 1 < f->next && f->ext[at + 1].seed == seed && f->ext[at + 1].flags == flags &&
	    f->ext[at + 1].shift == shift && f->ext[at + 1].off == off + len) {
		f->ext[at].len += f->ext[at + 1].len;
		memmove(f->ext + at + 1, f->ext + at + 2, (f->next - at - 2) * sizeof(*f->ext));
		f->next--;
	}
	if (at > 0 && f->ext[at - 1].seed == seed && f->ext[at - 1].flags == flags &&
	    f->ext[at - 1].shift == shift && f->ext[at - 1].off + f->ext[at - 1].len == off) {
		f->ext[at - 1].len += f->ext[at].len;
		memmove(f->ext + at, f->ext + at + 1, (f->next - at - 1) * sizeof(*f->ext));
		f->next--;
	}
	return 0;
}

/* Bytes [off, off + len) become wl_write_content(seed, flags, ...). */
static int ext_write(struct minode *f, uint64_t off, uint64_t len, uint64_t seed, int flags)
{
	return ext_put(f, (struct extent){ .off = off, .len = len, .seed = seed, .flags = flags });
}

/* The n bytes of extent e at file offset o (inside it). */
static void ext_bytes(const struct extent *e, uint64_t o, unsigned char *buf, size_t n)
{
	if (e->flags & EXT_LITERAL)
		memcpy(buf, (const unsigned char *)(uintptr_t)(e->seed + o + e->shift), n);
	else
		wl_write_content(e->seed, e->flags, o + e->shift, buf, n);
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static bool block_zero(const unsigned char *p)
{
	for (size_t i = 0; i < BLK; i++)
		if (p[i])
			return false;
	return true;
}

/* manifest's digest: sha256 over each 4 KiB block that is not all zeros,
 * after its offset (8 bytes little-endian), then the size (8 bytes LE).  Only
 * the blocks an extent touches can hold anything but zeros. */
static void file_digest(const struct minode *f, unsigned char out[crypto_hash_sha256_BYTES])
{
	dg_sha256 st;
	dg_sha256_init(&st);
	unsigned char blk[BLK], le[8];
	uint64_t next_block = 0; /* blocks below it are done */
	size_t e = 0;		 /* extents before it end in done blocks */
	while (e < f->next) {
		uint64_t b = f->ext[e].off / BLK;
		if (b < next_block)
			b = next_block;
		uint64_t base = b * BLK, end = base + BLK;
		memset(blk, 0, BLK);
		for (size_t k = e; k < f->next && f->ext[k].off < end; k++) {
			uint64_t lo = f->ext[k].off > base ? f->ext[k].off : base;
			uint64_t hi = f->ext[k].off + f->ext[k].len;
			if (hi > end)
				hi = end;
			if (lo < hi)
				ext_bytes(&f->ext[k], lo, blk + (lo - base), (size_t)(hi - lo));
		}
		while (e < f->next && f->ext[e].off + f->ext[e].len <= end)
			e++;
		if (!block_zero(blk)) {
			put_le64(le, base);
			dg_sha256_update(&st, le, sizeof(le));
			dg_sha256_update(&st, blk, BLK);
		}
		next_block = b + 1;
	}
	put_le64(le, f->size);
	dg_sha256_update(&st, le, sizeof(le));
	dg_sha256_final(&st, out);
}

/* The digest of f, computed once and kept (NULL when out of memory). */
static const unsigned char *digest_of(const struct minode *f)
{
	_Atomic(unsigned char *) *slot = &((struct minode *)f)->sha;
	unsigned char *d = atomic_load_explicit(slot, memory_order_acquire);
	if (d)
		return d;
	if (!(d = malloc(crypto_hash_sha256_BYTES)))
		return NULL;
	file_digest(f, d);
	unsigned char *was = NULL;
	if (!atomic_compare_exchange_strong_explicit(slot, &was, d, memory_order_acq_rel,
						     memory_order_acquire)) {
		free(d); /* another thread got there first, with the same digest */
		return was;
	}
	return d;
}

/* The data or the size of f (private to its model) changes. */
static void forget_digest(struct minode *f)
{
	free(atomic_exchange_explicit(&f->sha, NULL, memory_order_acq_rel));
}

/* ---- The model ------------------------------------------------------------ */

struct model *model_new(void)
{
	struct model *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->cap = 64;
	m->hint = 1;
	if (!(m->ino = calloc(m->cap, sizeof(*m->ino))) ||
	    !(m->ino[ROOT] = inode_new(S_IFDIR | 0755, 0, 0))) {
		free(m->ino);
		free(m);
		return NULL;
	}
	m->ino[ROOT]->parent = ROOT;
	m->ino[ROOT]->sv = ROOT;
	m->ino[ROOT]->kind = K_SUBVOL; /* the top level, subvolume 5 */
	return m;
}

void model_free(struct model *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->cap; i++)
		inode_unref(m->ino[i]);
	free(m->ino);
	free(m);
}

struct model *model_clone(const struct model *m)
{
	struct model *c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	*c = *m;
	if (!(c->ino = malloc(m->cap * sizeof(*c->ino)))) {
		free(c);
		return NULL;
	}
	for (uint32_t i = 0; i < m->cap; i++) {
		c->ino[i] = m->ino[i];
		if (c->ino[i])
			atomic_fetch_add_explicit(&c->ino[i]->refs, 1, memory_order_relaxed);
	}
	return c;
}

void model_set_owner(struct model *m, uint32_t uid, uint32_t gid)
{
	m->uid = uid;
	m->gid = gid;
}

/* ---- Applying operations ---------------------------------------------------- */

/* "-EINVAL: the model and the target disagree", with "OP PATH: why" in err. */
static int disagree(char *err, size_t errlen, const struct wl_op *op, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int disagree(char *err, size_t errlen, const struct wl_op *op, const char *fmt, ...)
{
	if (errlen) {
		const char *k = wl_kind_name(op->kind);
		int n = snprintf(err, errlen, "%s%s%s: ", k ? k : "?", op->path ? " " : "",
				 op->path ? op->path : "");
		if (n >= 0 && (size_t)n < errlen) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return -EINVAL;
}

/* Resolution failed: why (a static phrase or a component), for disagree. */
struct why {
	char text[160];
};

/*
 * Resolves path (absolute) to an inode, as openat2(RESOLVE_IN_ROOT) does;
 * follow: follow a final symlink (one followed by slashes always is).
 * 0 and *out; 1 with why set when the path does not lead anywhere in the
 * model; -ENOMEM.
 */
static int resolve(const struct model *m, const char *path, bool follow, uint32_t *out,
		   struct why *why)
{
	char *buf = strdup(path);
	if (!buf)
		return -ENOMEM;
	const char *p = buf;
	uint32_t cur = ROOT;
	int follows = 0, rc = 1;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p) {
			*out = cur;
			rc = 0;
			break;
		}
		size_t n = strcspn(p, "/");
		const char *after = p + n, *q = after;
		while (*q == '/')
			q++;
		bool last = !*q, slash = *after == '/';
		if (n == 1 && p[0] == '.') {
			p = after;
			continue;
		}
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			cur = m->ino[cur]->parent;
			p = after;
			continue;
		}
		size_t at;
		const struct minode *d = m->ino[cur];
		if (!dir_find(d, p, n, &at)) {
			snprintf(why->text, sizeof(why->text), "no entry \"%.*s\"", n > 64 ? 64 : (int)n, p);
			break;
		}
		uint32_t child = d->ents[at].ino;
		const struct minode *c = m->ino[child];
		if (S_ISLNK(c->mode) && (!last || slash || follow)) {
			if (++follows > MAX_FOLLOWS) {
				snprintf(why->text, sizeof(why->text), "more than %d symlinks",
					 MAX_FOLLOWS);
				break;
			}
			size_t tl = strlen(c->target), al = strlen(after);
			char *nb = malloc(tl + al + 1);
			if (!nb) {
				rc = -ENOMEM;
				break;
			}
			memcpy(nb, c->target, tl);
			memcpy(nb + tl, after, al + 1);
			if (c->target[0] == '/')
				cur = ROOT;
			free(buf);
			buf = nb;
			p = buf;
			continue;
		}
		if ((!last || slash) && !S_ISDIR(c->mode)) {
			snprintf(why->text, sizeof(why->text), "\"%.*s\" is not a directory",
				 n > 64 ? 64 : (int)n, p);
			break;
		}
		cur = child;
		p = after;
	}
	free(buf);
	return rc;
}

/* The parent and last component of a name operation's path. */
struct name {
	uint32_t dir;
	char *last; /* malloc'd */
	bool slash; /* the path ended in slashes */
};

/* Resolves the parent of path and takes its last component, as wl_exec_host
 * does: 0; 1 with why set (no parent in the model, the path is "/", the last
 * component is "." or ".."); -ENOMEM. */
static int split(const struct model *m, const char *path, struct name *nm, struct why *why)
{
	nm->last = NULL;
	size_t len = strlen(path), end = len;
	while (end > 0 && path[end - 1] == '/')
		end--;
	if (end == 0) {
		snprintf(why->text, sizeof(why->text), "the path is the root");
		return 1;
	}
	size_t start = end;
	while (start > 0 && path[start - 1] != '/')
		start--;
	size_t n = end - start;
	if ((n == 1 && path[start] == '.') || (n == 2 && path[start] == '.' && path[start + 1] == '.')) {
		snprintf(why->text, sizeof(why->text), "the last component is \"%.*s\"", (int)n,
			 path + start);
		return 1;
	}
	char *parent = strndup(path, start);
	if (!parent)
		return -ENOMEM;
	int r = resolve(m, parent, true, &nm->dir, why);
	free(parent);
	if (r)
		return r;
	if (!S_ISDIR(m->ino[nm->dir]->mode)) { /* cannot happen: the parent ends in '/' */
		snprintf(why->text, sizeof(why->text), "the parent is not a directory");
		return 1;
	}
	if (!(nm->last = strndup(path + start, n)))
		return -ENOMEM;
	nm->slash = end < len;
	return 0;
}

/* Whether inode x is a (or the) directory a, or below it. */
static bool is_within(const struct model *m, uint32_t x, uint32_t a)
{
	for (;;) {
		if (x == a)
			return true;
		if (x == ROOT)
			return false;
		x = m->ino[x]->parent;
	}
}

/* Removes one name of inode i (whose entry is gone already). */
static int drop_name(struct model *m, uint32_t i)
{
	if (S_ISDIR(m->ino[i]->mode) || m->ino[i]->nlink <= 1) {
		ino_drop(m, i);
		return 0;
	}
	struct minode *n = mut(m, i);
	if (!n)
		return -ENOMEM;
	n->nlink--;
	return 0;
}

/* What a write, truncate, fallocate or chown does to the file's
 * capabilities (file_remove_privs, ATTR_KILL_PRIV): they go. */
static void killpriv(struct minode *n)
{
	xattr_del(n, KILLPRIV_XATTR);
}

/* Whether inode i is in a read-only subvolume (a change gives EROFS). */
static bool in_ro(const struct model *m, uint32_t i)
{
	return m->ino[m->ino[i]->sv]->ro;
}

/* Why directory d takes no new name (a read-only subvolume: EROFS; a
 * stand-in, which has no directory operations: EPERM, EACCES), or NULL. */
static const char *no_new_names(const struct model *m, uint32_t d)
{
	if (m->ino[d]->kind == K_STANDIN)
		return "the directory is a snapshot's stand-in for a subvolume (Linux: EPERM)";
	if (in_ro(m, d))
		return "the directory is in a read-only subvolume (Linux: EROFS)";
	return NULL;
}

/* Drops every inode of subvolume id, its root included (its name is gone). */
static void drop_subvol(struct model *m, uint32_t id)
{
	for (uint32_t i = 0; i < m->cap; i++)
		if (i != id && m->ino[i] && m->ino[i]->sv == id)
			ino_drop(m, i);
	ino_drop(m, id);
}

/* Whether subvolume id holds another subvolume (a ROOT_REF: ENOTEMPTY). */
static bool holds_subvols(const struct model *m, uint32_t id)
{
	for (uint32_t i = 0; i < m->cap; i++) {
		const struct minode *d = m->ino[i];
		if (!d || d->sv != id || !S_ISDIR(d->mode))
			continue;
		for (size_t k = 0; k < d->nents; k++)
			if (m->ino[d->ents[k].ino]->kind == K_SUBVOL)
				return true;
	}
	return false;
}

/* mkdir, create, symlink: a new object named by op->path. */
static int make(struct model *m, const struct wl_op *op, char *err, size_t errlen)
{
	struct why why;
	struct name nm;
	int r = split(m, op->path, &nm, &why);
	if (r < 0)
		return r;
	if (r > 0)
		return disagree(err, errlen, op, "%s", why.text);
	uint32_t old;
	const char *why_not = no_new_names(m, nm.dir);
	if (dir_lookup(m->ino[nm.dir], nm.last, &old)) {
		r = disagree(err, errlen, op, "\"%s\" exists in the model", nm.last);
		goto out;
	}
	if (nm.slash && op->kind != WL_MKDIR && op->kind != WL_SUBVOL_CREATE) {
		r = disagree(err, errlen, op, "Linux refuses a trailing slash here");
		goto out;
	}
	if (why_not) {
		r = disagree(err, errlen, op, "%s", why_not);
		goto out;
	}
	const struct minode *parent = m->ino[nm.dir];
	bool subvol = op->kind == WL_SUBVOL_CREATE;
	/* A subvolume's root: 0777 less the umask (022, as the host runner
	 * gives it), root's, no set-gid inheritance (btrfs_new_subvol_inode). */
	uint32_t mode = subvol ? S_IFDIR | 0755
		      : op->kind == WL_MKDIR ? S_IFDIR | (op->mode & (0777 | S_ISVTX))
		      : op->kind == WL_CREATE ? S_IFREG | (op->mode & 07777)
					      : S_IFLNK | 0777;
	uint32_t gid = m->gid;
	if ((parent->mode & S_ISGID) && !subvol) { /* inode_init_owner */
		gid = parent->gid;
		if (S_ISDIR(mode))
			mode |= S_ISGID;
	}
	uint32_t ino;
	struct minode *n;
	r = -ENOMEM;
	if (ino_free_slot(m, &ino) || !(n = inode_new(mode, m->uid, gid)))
		goto out;
	n->parent = nm.dir;
	n->sv = subvol ? ino : parent->sv;
	n->kind = subvol ? K_SUBVOL : K_PLAIN;
	if (op->kind == WL_SYMLINK && !(n->target = strdup(op->path2))) {
		inode_destroy(n);
		goto out;
	}
	struct minode *d = mut(m, nm.dir);
	if (!d || dir_add(d, nm.last, ino)) {
		inode_destroy(n);
		goto out;
	}
	m->ino[ino] = n;
	r = 0;
out:
	free(nm.last);
	return r;
}

/* The regular file op->path names (following symlinks), for write,
 * truncate and fallocate: 0 and *ino, else what resolve or disagree say. */
static int file_of(struct model *m, const struct wl_op *op, uint32_t *ino, char *err,
		   size_t errlen)
{
	struct why why;
	int r = resolve(m, op->path, true, ino, &why);
	if (r < 0)
		return r;
	if (r > 0)
		return disagree(err, errlen, op, "%s", why.text);
	if (!S_ISREG(m->ino[*ino]->mode))
		return disagree(err, errlen, op, "not a regular file in the model");
	if (in_ro(m, *ino))
		return disagree(err, errlen, op, "in a read-only subvolume (Linux: EROFS)");
	return 0;
}

static int do_write(struct model *m, const struct wl_op *op, char *err, size_t errlen)
{
	uint32_t i;
	int r = file_of(m, op, &i, err, errlen);
	if (r)
		return r;
	if (op->off + op->len < op->off)
		return disagree(err, errlen, op, "the range passes 2^64");
	if (op->len == 0) /* no data, no size, no killpriv (the write stops early) */
		return 0;
	struct minode *f = mut(m, i);
	if (!f)
		return -ENOMEM;
	forget_digest(f);
	if (ext_write(f, op->off, op->len, op->seed, op->flags & WL_WRITE_TEXT))
		return -ENOMEM;
	if (f->size < op->off + op->len)
		f->size = op->off + op->len;
	killpriv(f);
	return 0;
}

static int do_truncate(struct model *m, const struct wl_op *op, char *err, size_t errlen)
{
	uint32_t i;
	int r = file_of(m, op, &i, err, errlen);
	if (r)
		return r;
	struct minode *f = mut(m, i);
	if (!f)
		return -ENOMEM;
	forget_digest(f);
	if (ext_clear(f, op->size, UINT64_MAX))
		return -ENOMEM;
	f->size = op->size;
	killpriv(f);
	return 0;
}

static int do_fallocate(struct model *m, const struct wl_op *op, char *err, size_t errlen)
{
	uint32_t i;
	int r = file_of(m, op, &i, err, errlen);
	if (r)
		return r;
	uint64_t end = op->off + op->len;
	if (end < op->off) {
		if (!(op->flags & WL_FALLOC_PUNCH_HOLE))
			return disagree(err, errlen, op, "the range passes 2^64");
		end = UINT64_MAX;
	}
	struct minode *f = mut(m, i);
	if (!f)
		return -ENOMEM;
	forget_digest(f);
	if (op->flags & WL_FALLOC_PUNCH_HOLE) {
		if (ext_clear(f, op->off, end < f->size ? end : f->size))
			return -ENOMEM;
	} else if (op->flags & WL_FALLOC_ZERO_RANGE) {
		/* zeros over the range; the size grows to its end unless keep-size */
		if (ext_clear(f, op->off, end < f->size ? end : f->size))
			return -ENOMEM;
		if (!(op->flags & WL_FALLOC_KEEP_SIZE) && op->len && f->size < end)
			f->size = end;
	} else if (!(op->flags & WL_FALLOC_KEEP_SIZE) && op->len && f->size < end) {
		f->size = end; /* preallocated: reads as zeros */
	}
	killpriv(f);
	return 0;
}

static int do_link(struct model *m, const struct wl_op *op, char *err, size_t errlen)
{
	struct why why;
	uint32_t old;
	int r = resolve(m, op->path, false, &old, &why);
	if (r < 0)
		return r;
	if (r > 0)
		return disagree(err, errlen, op, "OLD: %s", why.text);
	if (S_ISDIR(m->ino[old]->mode))
		return disagree(err, errlen, op, "OLD is a directory in the model");
	struct name nm;
	if ((r = split(m, op->path2, &nm, &why)) < 0)
		return r;
	if (r > 0)
		return disagree(err, errlen, op, "NEW: %s", why.text);
	uint32_t x;
	const char *why_not = no_new_names(m, nm.dir);
	if (dir_lookup(m->ino[nm.dir], nm.last, &x)) {
		r = disagree(err, errlen, op, "NEW \"%s\" exists in the model", nm.last);
	} else if (nm.slash) {
		r = disagree(err, errlen, op, "Linux refuses a trailing slash on NEW");
	} else if (why_not) {
		r = disagree(err, errlen, op, "NEW: %s", why_not);
	} else if (m->ino[old]->sv != m->ino[nm.dir]->sv) {
		r = disagree(err, errlen, op, "a link across subvolumes (Linux: EXDEV)");
	} else {
		struct minode *d = mut(m, nm.dir), *n;
		r = -ENOMEM;
		if (d && !dir_add(d, nm.last, old)) {
			if ((n = mut(m, old))) {
				n->nlink++;
				r = 0;
			}
		}
	}
	free(nm.last);
	return r;
}

/* unlink, rmdir. */
static int do_remove(struct model *m, const struct wl_op *op, char *err, size_t errlen)
{
	struct why why;
	struct name nm;
	int r = split(m, op->path, &nm, &why);
	if (r < 0)
		return r;
	if (r > 0)
		return disagree(err, errlen, op, "%s", why.text);
	uint32_t i;
	if (!dir_lookup(m->ino[nm.dir], nm.last, &i)) {
		r = disagree(err, errlen, op, "no entry \"%s\" in the model", nm.last);
		goto out;
	}
	const struct minode *n = m->ino[i];
	if (op->kind == WL_UNLINK && (S_ISDIR(n->mode) || nm.slash)) {
		r = disagree(err, errlen, op, "%s", S_ISDIR(n->mode) ? "a directory in the model"
								     : "a trailing slash");
		goto out;
	}
	if (op->kind == WL_RMDIR && !S_ISDIR(n->mode)) {
		r = disagree(err, errlen, op, "not a directory in the model");
		goto out;
	}
	if (op->kind == WL_RMDIR && n->nents) {
		r = disagree(err, errlen, op, "not empty in the model (%zu entries)", n->nents);
		goto out;
	}
	if (in_ro(m, nm.dir)) {
		r = disagree(err, errlen, op, "the directory is in a read-only subvolume (Linux: EROFS)");
		goto out;
	}
	struct minode *d = mut(m, nm.dir);
	if (!d) {
		r = -ENOMEM;
		goto out;
	}
	dir_del(d, nm.last);
	/* rmdir of an empty subvolume deletes it (btrfs_rmdir, Linux 4.18 on) */
	r = drop_name(m, i);
out:
	free(nm.last);
	return r;
}

/* Why Linux would refuse this rename for subvolumes' sake (btrfs_rename,
 * btrfs_rename_exchange, btrfs_permission), or NULL.  ni: the inode NEW
 * names, NULL when it names none.  (oi == *ni does nothing and is let be.) */
static const char *subvol_rename_problem(const struct model *m, const struct wl_op *op,
					 const struct name *o, const struct name *n, uint32_t oi,
					 const uint32_t *ni)
{
	bool exchange = op->flags & WL_RENAME_EXCHANGE;
	if (ni && *ni == oi)
		return NULL;
	if (in_ro(m, o->dir) || in_ro(m, n->dir))
		return "a directory in a read-only subvolume (Linux: EROFS)";
	/* vfs_rename: a directory moved to another parent is written ("..") */
	if (o->dir != n->dir && ((S_ISDIR(m->ino[oi]->mode) && in_ro(m, oi)) ||
				 (ni && exchange && S_ISDIR(m->ino[*ni]->mode) && in_ro(m, *ni))))
		return "a directory of a read-only subvolume moves to another parent (Linux: EROFS)";
	if (m->ino[n->dir]->kind == K_STANDIN)
		return "NEW's directory is a snapshot's stand-in for a subvolume (Linux: EPERM)";
	if (m->ino[oi]->kind == K_STANDIN || (ni && exchange && m->ino[*ni]->kind == K_STANDIN))
		return "a snapshot's stand-in for a subvolume moves (Linux: ENOTEMPTY; an exchange "
		       "aborts the transaction in Linux 6.18)";
	if (ni && !exchange && m->ino[*ni]->kind == K_SUBVOL)
		return "NEW is a subvolume (Linux: ENOTEMPTY)";
	if (m->ino[o->dir]->sv != m->ino[n->dir]->sv) {
		bool osub = m->ino[oi]->kind == K_SUBVOL;
		if (exchange ? !(osub && m->ino[*ni]->kind == K_SUBVOL) : !osub)
			return "a rename across subvolumes of what is not a subvolume (Linux: EXDEV)";
	}
	return NULL;
}

static int do_rename(struct model *m, const struct wl_op *op, char *err, size_t errlen)
{
	struct why why;
	struct name o = { 0 }, n = { 0 };
	int r = split(m, op->path, &o, &why);
	if (r < 0)
		return r;
	if (r > 0)
		return disagree(err, errlen, op, "OLD: %s", why.text);
	if ((r = split(m, op->path2, &n, &why))) {
		if (r > 0)
			r = disagree(err, errlen, op, "NEW: %s", why.text);
		goto out;
	}
	uint32_t oi = 0, ni = 0;
	bool exists;
	if (!dir_lookup(m->ino[o.dir], o.last, &oi)) {
		r = disagree(err, errlen, op, "no entry \"%s\" in the model", o.last);
		goto out;
	}
	exists = dir_lookup(m->ino[n.dir], n.last, &ni);
	bool odir = S_ISDIR(m->ino[oi]->mode), ndir = exists && S_ISDIR(m->ino[ni]->mode);
	if ((o.slash || n.slash) && !odir) {
		r = disagree(err, errlen, op, "a trailing slash on a non-directory");
		goto out;
	}
	const char *why_sv = subvol_rename_problem(m, op, &o, &n, oi, exists ? &ni : NULL);
	if (why_sv) {
		r = disagree(err, errlen, op, "%s", why_sv);
		goto out;
	}
	if (op->flags & WL_RENAME_EXCHANGE) {
		if (!exists) {
			r = disagree(err, errlen, op, "exchange: no NEW \"%s\" in the model", n.last);
			goto out;
		}
		if (oi == ni) { /* vfs_rename: source == target does nothing */
			r = 0;
			goto out;
		}
		if ((odir && is_within(m, n.dir, oi)) || (ndir && is_within(m, o.dir, ni))) {
			r = disagree(err, errlen, op, "a directory would move below itself");
			goto out;
		}
		struct minode *d = mut(m, o.dir);
		if (!d) {
			r = -ENOMEM;
			goto out;
		}
		dir_set(d, o.last, ni);
		if (!(d = mut(m, n.dir))) {
			r = -ENOMEM;
			goto out;
		}
		dir_set(d, n.last, oi);
		struct minode *x;
		if (odir) {
			if (!(x = mut(m, oi))) {
				r = -ENOMEM;
				goto out;
			}
			x->parent = n.dir;
		}
		if (ndir) {
			if (!(x = mut(m, ni))) {
				r = -ENOMEM;
				goto out;
			}
			x->parent = o.dir;
		}
		r = 0;
		goto out;
	}
	if (exists && oi == ni) { /* the same inode (or the same name): nothing */
		r = (op->flags & WL_RENAME_NOREPLACE)
			    ? disagree(err, errlen, op, "noreplace: NEW \"%s\" exists in the model", n.last)
			    : 0;
		goto out;
	}
	if (exists && (op->flags & WL_RENAME_NOREPLACE)) {
		r = disagree(err, errlen, op, "noreplace: NEW \"%s\" exists in the model", n.last);
		goto out;
	}
	if (exists && odir != ndir) {
		r = disagree(err, errlen, op, "%s over %s in the model",
			     odir ? "a directory" : "a non-directory",
			     ndir ? "a directory" : "a non-directory");
		goto out;
	}
	if (ndir && m->ino[ni]->nents) {
		r = disagree(err, errlen, op, "NEW is a non-empty directory in the model");
		goto out;
	}
	if (odir && is_within(m, n.dir, oi)) {
		r = disagree(err, errlen, op, "a directory would move below itself");
		goto out;
	}
	struct minode *d = mut(m, n.dir);
	r = -ENOMEM;
	if (!d)
		goto out;
	if (exists)
		dir_set(d, n.last, oi);
	else if (dir_add(d, n.last, oi))
		goto out;
	if (!(d = mut(m, o.dir)))
		goto out;
	dir_del(d, o.last);
	if (exists && drop_name(m, ni))
		goto out;
	if (odir) {
		struct minode *x = mut(m, oi);
		if (!x)
			goto out;
		x->parent = n.dir;
	}
	r = 0;
out:
	free(o.last);
	free(n.last);
	return r;
}

/* setxattr, removexattr, chmod, chown, and the checks of utimes, fsync and
 * fdatasync: the object op->path names, following symlinks. */
static int do_attr_at(struct model *m, const struct wl_op *op, bool follow, char *err,
		      size_t errlen)
{
	struct why why;
	uint32_t i;
	int r = resolve(m, op->path, follow, &i, &why);
	if (r < 0)
		return r;
	if (r > 0)
		return disagree(err, errlen, op, "%s", why.text);
	size_t at;
	switch (op->kind) {
	case WL_SETXATTR:
	case WL_REMOVEXATTR:
	case WL_CHMOD:
	case WL_CHOWN:
	case WL_UTIMES:
		break;
	default:
		return 0; /* fsync, fdatasync: nothing the description shows */
	}
	if (m->ino[i]->kind == K_STANDIN) {
		/* No xattr handlers; an attribute change stays in the in-memory
		 * inode, which the next lookup makes anew (in a read-only
		 * subvolume too: a stand-in has no btrfs permission check). */
		if (op->kind == WL_SETXATTR || op->kind == WL_REMOVEXATTR)
			return disagree(err, errlen, op,
					"a snapshot's stand-in has no xattrs (Linux: EOPNOTSUPP)");
		return 0;
	}
	if (in_ro(m, i))
		return disagree(err, errlen, op, "in a read-only subvolume (Linux: EROFS)");
	if (op->kind == WL_UTIMES)
		return 0; /* nothing the description shows */
	if (op->kind == WL_REMOVEXATTR && !xattr_find(m->ino[i], op->name, &at))
		return disagree(err, errlen, op, "no xattr \"%s\" in the model", op->name);
	struct minode *n = mut(m, i);
	if (!n)
		return -ENOMEM;
	switch (op->kind) {
	case WL_SETXATTR:
		return xattr_set(n, op->name, op->value, op->vlen);
	case WL_REMOVEXATTR:
		xattr_del(n, op->name);
		return 0;
	case WL_CHMOD:
		n->mode = (n->mode & S_IFMT) | (op->mode & 07777);
		return 0;
	default: /* chown_common, notify_change; root keeps nothing it would lose */
		if (op->uid != UINT32_MAX)
			n->uid = op->uid;
		if (op->gid != UINT32_MAX)
			n->gid = op->gid;
		if (!S_ISDIR(n->mode)) {
			n->mode &= ~(uint32_t)S_ISUID;
			if (n->mode & S_IXGRP)
				n->mode &= ~(uint32_t)S_ISGID;
			killpriv(n);
		}
		return 0;
	}
}

static int do_attr(struct model *m, const struct wl_op *op, char *err, size_t errlen)
{
	return do_attr_at(m, op, true, err, errlen);
}

/* ---- Subvolumes ------------------------------------------------------------ */

/* A new inode: a stand-in for a subvolume nested in a snapshot's source,
 * as the kernel's new_simple_dir shows it; in subvolume sv, below parent. */
static int add_standin(struct model *m, uint32_t sv, uint32_t parent, uint32_t *out)
{
	uint32_t i;
	struct minode *n;
	if (ino_free_slot(m, &i) || !(n = inode_new(S_IFDIR | 0755, 0, 0)))
		return -ENOMEM;
	n->kind = K_STANDIN;
	n->sv = sv;
	n->parent = parent;
	m->ino[i] = n;
	*out = i;
	return 0;
}

/* snapshot SRC DEST [ro]: every inode of SRC's subvolume copied as it is now
 * (hard links kept), nested subvolumes as stand-ins, the copy named DEST. */
static int do_snapshot(struct model *m, const struct wl_op *op, char *err, size_t errlen)
{
	struct why why;
	uint32_t src;
	int r = resolve(m, op->path, true, &src, &why);
	if (r < 0)
		return r;
	if (r > 0)
		return disagree(err, errlen, op, "SRC: %s", why.text);
	if (m->ino[src]->kind != K_SUBVOL)
		return disagree(err, errlen, op, "SRC is not a subvolume in the model (Linux: EINVAL)");
	struct name nm;
	if ((r = split(m, op->path2, &nm, &why)) < 0)
		return r;
	if (r > 0)
		return disagree(err, errlen, op, "DEST: %s", why.text);
	uint32_t x;
	const char *why_not = no_new_names(m, nm.dir);
	if (dir_lookup(m->ino[nm.dir], nm.last, &x)) {
		r = disagree(err, errlen, op, "DEST \"%s\" exists in the model", nm.last);
		goto out;
	}
	if (why_not) {
		r = disagree(err, errlen, op, "DEST: %s", why_not);
		goto out;
	}
	/* The inodes of the subvolume (old numbers below cap0). */
	uint32_t cap0 = m->cap, nold = 0;
	uint32_t *map = malloc(cap0 * sizeof(*map)), *old = malloc(cap0 * sizeof(*old));
	r = -ENOMEM;
	if (!map || !old)
		goto done;
	for (uint32_t i = 0; i < cap0; i++)
		map[i] = UINT32_MAX;
	for (uint32_t i = 0; i < cap0; i++)
		if (m->ino[i] && m->ino[i]->sv == src)
			old[nold++] = i;
	/* Copies with new numbers, then their entries and parents renumbered. */
	for (uint32_t k = 0; k < nold; k++) {
		uint32_t i;
		struct minode *c;
		if (ino_free_slot(m, &i) || !(c = inode_copy(m->ino[old[k]])))
			goto done;
		m->ino[i] = c;
		map[old[k]] = i;
	}
	uint32_t root = map[src];
	for (uint32_t k = 0; k < nold; k++) {
		struct minode *c = m->ino[map[old[k]]];
		c->sv = root;
		if (!S_ISDIR(c->mode))
			continue;
		c->parent = old[k] == src ? nm.dir : map[c->parent];
		for (size_t e = 0; e < c->nents; e++) {
			uint32_t t = c->ents[e].ino;
			if (t < cap0 && map[t] != UINT32_MAX) {
				c->ents[e].ino = map[t];
			} else { /* a nested subvolume's root */
				uint32_t s;
				if (add_standin(m, root, map[old[k]], &s))
					goto done;
				c = m->ino[map[old[k]]]; /* the table may have moved */
				c->ents[e].ino = s;
			}
		}
	}
	struct minode *rn = m->ino[root];
	rn->kind = K_SUBVOL;
	rn->ro = op->flags & WL_SNAP_RDONLY;
	/* create_pending_snapshot: a writable snapshot is not received */
	if (!rn->ro)
		rn->received = false;
	struct minode *d = mut(m, nm.dir);
	if (!d || dir_add(d, nm.last, root))
		goto done;
	r = 0;
done:
	free(map);
	free(old);
out:
	free(nm.last);
	return r;
}

/* subvol-delete PATH: the subvolume goes from the namespace with everything
 * in it (the cleaner frees its blocks later: nothing the description shows). */
static int do_subvol_delete(struct model *m, const struct wl_op *op, char *err, size_t errlen)
{
	struct why why;
	struct name nm;
	int r = split(m, op->path, &nm, &why);
	if (r < 0)
		return r;
	if (r > 0)
		return disagree(err, errlen, op, "%s", why.text);
	uint32_t i;
	if (!dir_lookup(m->ino[nm.dir], nm.last, &i)) {
		r = disagree(err, errlen, op, "no entry \"%s\" in the model", nm.last);
	} else if (m->ino[i]->kind != K_SUBVOL) {
		r = disagree(err, errlen, op, "not a subvolume in the model (Linux: EINVAL, ENOTDIR)");
	} else if (in_ro(m, nm.dir)) {
		r = disagree(err, errlen, op, "the directory is in a read-only subvolume (Linux: EROFS)");
	} else if (holds_subvols(m, i)) {
		r = disagree(err, errlen, op, "it holds other subvolumes in the model (Linux: ENOTEMPTY)");
	} else {
		struct minode *d = mut(m, nm.dir);
		if (!d) {
			r = -ENOMEM;
		} else {
			dir_del(d, nm.last);
			drop_subvol(m, i);
		}
	}
	free(nm.last);
	return r;
}

/* ---- Reflinks ---------------------------------------------------------------- */

/* clone, clone-range: DST's bytes [DOFF, DOFF + LEN) become SRC's at SOFF
 * (LEN 0: up to SRC's end; FICLONE: all of SRC at 0), as model_clone_range;
 * dedupe shares only equal bytes: nothing the description shows changes,
 * but both must be regular files. */
static int do_reflink(struct model *m, const struct wl_op *op, char *err, size_t errlen)
{
	struct why why;
	uint32_t s, d;
	int r = resolve(m, op->path, true, &s, &why);
	if (r < 0)
		return r;
	if (r > 0)
		return disagree(err, errlen, op, "SRC: %s", why.text);
	if ((r = resolve(m, op->path2, true, &d, &why)) < 0)
		return r;
	if (r > 0)
		return disagree(err, errlen, op, "DST: %s", why.text);
	if (!S_ISREG(m->ino[s]->mode) || !S_ISREG(m->ino[d]->mode))
		return disagree(err, errlen, op, "SRC or DST is no regular file in the model");
	if (op->kind == WL_DEDUPE)
		return 0;
	uint64_t size = m->ino[s]->size, soff = 0, doff = 0, len = 0;
	if (op->kind == WL_CLONE_RANGE) {
		soff = op->off;
		doff = op->off2;
		len = op->len;
	}
	if (len == 0) /* to SRC's end */
		len = soff < size ? size - soff : 0;
	return model_clone_range(m, op->path2, doff, op->path, soff, len, err, errlen);
}

/* ---- What receive needs (model_internal.h) ---------------------------------- */

int model_write_bytes(struct model *m, const char *path, uint64_t off, const uint8_t *data,
		      size_t len, char *err, size_t errlen)
{
	struct wl_op op = { .kind = WL_WRITE, .path = (char *)path, .off = off, .len = len };
	uint32_t i;
	int r = file_of(m, &op, &i, err, errlen);
	if (r)
		return r;
	if (off + len < off)
		return disagree(err, errlen, &op, "the range passes 2^64");
	if (!len)
		return 0;
	struct minode *f = mut(m, i);
	if (!f)
		return -ENOMEM;
	forget_digest(f);
	struct extent e = { .off = off, .len = len, .seed = (uint64_t)(uintptr_t)data,
			    .shift = (uint64_t)0 - off, .flags = EXT_LITERAL };
	if (ext_put(f, e))
		return -ENOMEM;
	if (f->size < off + len)
		f->size = off + len;
	killpriv(f);
	return 0;
}

int model_clone_range(struct model *m, const char *dst, uint64_t doff, const char *src,
		      uint64_t soff, uint64_t len, char *err, size_t errlen)
{
	struct wl_op op = { .kind = WL_WRITE, .path = (char *)dst, .off = doff, .len = len };
	struct wl_op sop = { .kind = WL_WRITE, .path = (char *)src, .off = soff, .len = len };
	uint32_t d, sr;
	struct why why;
	int r = file_of(m, &op, &d, err, errlen);
	if (r || (r = resolve(m, src, true, &sr, &why)) < 0)
		return r;
	if (r > 0)
		return disagree(err, errlen, &sop, "clone source: %s", why.text);
	if (!S_ISREG(m->ino[sr]->mode))
		return disagree(err, errlen, &sop, "the clone source is not a regular file");
	if (doff + len < doff || soff + len < soff)
		return disagree(err, errlen, &op, "the range passes 2^64");
	if (!len)
		return 0;
	/* The source's extents in the range, taken before the destination
	 * changes (they may be one file). */
	const struct minode *s = m->ino[sr];
	size_t n = 0;
	struct extent *v = malloc((s->next ? s->next : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t k = 0; k < s->next; k++) {
		struct extent e = s->ext[k];
		uint64_t lo = e.off > soff ? e.off : soff;
		uint64_t hi = e.off + e.len < soff + len ? e.off + e.len : soff + len;
		if (lo >= hi)
			continue;
		/* byte o of the destination is the source's byte o - doff + soff */
		e.shift += soff - doff;
		e.off = lo - soff + doff;
		e.len = hi - lo;
		v[n++] = e;
	}
	struct minode *f = mut(m, d);
	r = -ENOMEM;
	if (!f)
		goto out;
	forget_digest(f);
	if (ext_clear(f, doff, doff + len))
		goto out;
	for (size_t k = 0; k < n; k++)
		if (ext_put(f, v[k]))
			goto out;
	if (f->size < doff + len)
		f->size = doff + len;
	killpriv(f);
	r = 0;
out:
	free(v);
	return r;
}

int model_apply_nofollow(struct model *m, const struct wl_op *op, char *err, size_t errlen)
{
	if (op->kind != WL_SETXATTR && op->kind != WL_REMOVEXATTR && op->kind != WL_CHOWN &&
	    op->kind != WL_UTIMES)
		return disagree(err, errlen, op, "not an attribute change");
	return do_attr_at(m, op, false, err, errlen);
}

/* The subvolume root path leads to: 0 and *out, or disagree's -EINVAL. */
static int subvol_at(struct model *m, const char *path, uint32_t *out, char *err, size_t errlen)
{
	struct wl_op op = { .kind = WL_RECEIVE, .path = (char *)path };
	struct why why;
	int r = resolve(m, path, false, out, &why);
	if (r < 0)
		return r;
	if (r > 0)
		return disagree(err, errlen, &op, "%s", why.text);
	if (m->ino[*out]->kind != K_SUBVOL || *out == ROOT)
		return disagree(err, errlen, &op, "not a subvolume in the model");
	return 0;
}

int model_set_received(struct model *m, const char *path, const uint8_t uuid[16], char *err,
		       size_t errlen)
{
	uint32_t i;
	int r = subvol_at(m, path, &i, err, errlen);
	if (r)
		return r;
	struct minode *n = mut(m, i);
	if (!n)
		return -ENOMEM;
	n->received = true;
	n->ro = true;
	memcpy(n->ruuid, uuid, sizeof(n->ruuid));
	return 0;
}

/* The absolute path of directory ino (names joined by '/'); malloc'd or NULL. */
static char *dir_path(const struct model *m, uint32_t ino)
{
	if (ino == ROOT)
		return strdup("/");
	const struct minode *p = m->ino[m->ino[ino]->parent];
	const char *name = NULL;
	for (size_t k = 0; k < p->nents && !name; k++)
		if (p->ents[k].ino == ino)
			name = p->ents[k].name;
	char *up = name ? dir_path(m, m->ino[ino]->parent) : NULL, *out = NULL;
	if (up && asprintf(&out, "%s%s%s", up, strcmp(up, "/") ? "/" : "", name) < 0)
		out = NULL;
	free(up);
	return out;
}

int model_find_received(const struct model *m, const uint8_t uuid[16], char **path)
{
	*path = NULL;
	for (uint32_t i = 0; i < m->cap; i++) {
		const struct minode *n = m->ino[i];
		if (n && n->kind == K_SUBVOL && n->received && !memcmp(n->ruuid, uuid, 16))
			return (*path = dir_path(m, i)) ? 0 : -ENOMEM;
	}
	return -ENOENT;
}

void model_swap(struct model *a, struct model *b)
{
	struct model t = *a;
	*a = *b;
	*b = t;
}

int model_apply(struct model *m, const struct wl_op *op, int result, char *err, size_t errlen)
{
	if (errlen)
		err[0] = 0;
	if (op->kind == WL_RECEIVE)
		return model_receive(m, op, result, err, errlen);
	if (result != 0)
		return 0; /* a failed op changes nothing */
	if (op->kind != WL_SYNC && op->kind != WL_MARK && op->kind != WL_CRASH &&
	    op->kind != WL_SUBVOL_SYNC && op->kind != WL_QUOTA_ENABLE && op->kind != WL_BALANCE &&
	    op->kind != WL_DEVICE_REMOVE &&
	    (unsigned)op->kind < WL_NKINDS && (!op->path || op->path[0] != '/'))
		return disagree(err, errlen, op, "no absolute path");
	switch (op->kind) {
	case WL_MKDIR:
	case WL_CREATE:
		return make(m, op, err, errlen);
	case WL_SYMLINK:
		if (!op->path2 || !op->path2[0])
			return disagree(err, errlen, op, "no symlink target");
		return make(m, op, err, errlen);
	case WL_WRITE:
		return do_write(m, op, err, errlen);
	case WL_PWRITE: /* the bytes are the workload's, which outlives the model */
		if (op->vlen && !op->value)
			return disagree(err, errlen, op, "no data");
		return model_write_bytes(m, op->path, op->off, op->value, op->vlen, err, errlen);
	case WL_TRUNCATE:
		return do_truncate(m, op, err, errlen);
	case WL_FALLOCATE:
		return do_fallocate(m, op, err, errlen);
	case WL_LINK:
	case WL_RENAME:
		if (!op->path2 || op->path2[0] != '/')
			return disagree(err, errlen, op, "no absolute NEW");
		return op->kind == WL_LINK ? do_link(m, op, err, errlen) : do_rename(m, op, err, errlen);
	case WL_UNLINK:
	case WL_RMDIR:
		return do_remove(m, op, err, errlen);
	case WL_SETXATTR:
	case WL_REMOVEXATTR:
		if (!op->name || (op->kind == WL_SETXATTR && op->vlen && !op->value))
			return disagree(err, errlen, op, "no xattr name or value");
		return do_attr(m, op, err, errlen);
	case WL_UTIMES:
		/* utimensat with both times omitted succeeds without a lookup */
		if (op->atime.tv_nsec == WL_UTIME_OMIT && op->mtime.tv_nsec == WL_UTIME_OMIT)
			return 0;
		return do_attr(m, op, err, errlen);
	case WL_CHMOD:
	case WL_CHOWN:
	case WL_FSYNC:
	case WL_FDATASYNC:
		return do_attr(m, op, err, errlen);
	case WL_SUBVOL_CREATE:
		return make(m, op, err, errlen);
	case WL_SNAPSHOT:
		if (!op->path2 || op->path2[0] != '/')
			return disagree(err, errlen, op, "no absolute DEST");
		return do_snapshot(m, op, err, errlen);
	case WL_SUBVOL_DELETE:
		return do_subvol_delete(m, op, err, errlen);
	case WL_CLONE:
	case WL_CLONE_RANGE:
	case WL_DEDUPE:
		if (!op->path2 || op->path2[0] != '/')
			return disagree(err, errlen, op, "no absolute DST");
		return do_reflink(m, op, err, errlen);
	case WL_SYNC:
	case WL_MARK:
	case WL_CRASH:
	case WL_SUBVOL_SYNC:
	case WL_QUOTA_ENABLE: /* quota groups show in nothing the model describes */
	case WL_BALANCE:      /* nor where blocks are */
	case WL_DEVICE_REMOVE: /* nor on which devices */
	case WL_DEFRAG:       /* nor how extents are cut */
		return 0;
	default:
		return disagree(err, errlen, op, "unknown operation %d", (int)op->kind);
	}
}

/* ---- The description: manifest's format (traces/manifest.c) ------------ */

struct walk {
	const struct model *m;
	struct manifest mf;
	struct mf_xattrs xs;
};

/* Hands the object at path (escaped) to the manifest formatter. */
static int add_object(struct walk *w, const char *path, uint32_t ino)
{
	const struct minode *n = w->m->ino[ino];
	struct mf_object o = { .path = path, .mode = n->mode, .uid = n->uid, .gid = n->gid,
			       .nlink = n->nlink, .size = n->size, .xattrs = &w->xs };
	if (n->kind == K_STANDIN) { /* new_simple_dir: the parent directory's owner */
		o.uid = w->m->ino[n->parent]->uid;
		o.gid = w->m->ino[n->parent]->gid;
	}
	if (S_ISDIR(n->mode)) { /* btrfs: one link, twice the length of the names */
		o.size = 0;
		for (size_t i = 0; i < n->nents; i++)
			o.size += 2 * strlen(n->ents[i].name);
		o.nlink = 1;
	} else if (S_ISLNK(n->mode)) {
		o.target = n->target;
		o.target_len = strlen(n->target);
		o.size = o.target_len;
	} else if (S_ISREG(n->mode) && !(o.sha256 = digest_of(n))) {
		return -ENOMEM;
	}
	mf_xattrs_clear(&w->xs);
	for (size_t i = 0; i < n->nxs; i++)
		if (mf_xattr_add(&w->xs, n->xs[i].name, strlen(n->xs[i].name), n->xs[i].value,
				 n->xs[i].vlen))
			return -ENOMEM;
	return mf_add(&w->mf, &o);
}

/* Calls fn with every object below directory ino (whose escaped path is
 * path) and its escaped path, parents before their entries. */
static int walk_below(const struct model *m, const char *path, uint32_t ino,
		      int (*fn)(void *ctx, const char *path, uint32_t ino), void *ctx)
{
	const struct minode *d = m->ino[ino];
	int r = 0;
	for (size_t i = 0; i < d->nents && !r; i++) {
		char *sub = mf_path_join(path, d->ents[i].name, strlen(d->ents[i].name));
		if (!sub)
			return -ENOMEM;
		uint32_t c = d->ents[i].ino;
		r = fn(ctx, sub, c);
		if (!r && S_ISDIR(m->ino[c]->mode))
			r = walk_below(m, sub, c, fn, ctx);
		free(sub);
	}
	return r;
}

static int add_object_fn(void *w, const char *path, uint32_t ino)
{
	return add_object(w, path, ino);
}

char *model_describe(const struct model *m)
{
	struct walk w = { .m = m };
	char *out = NULL;
	size_t len = 0;
	int r = add_object(&w, "/", ROOT);
	if (!r)
		r = walk_below(m, "/", ROOT, add_object_fn, &w);
	FILE *f = r ? NULL : open_memstream(&out, &len);
	if (f) {
		r = mf_print(&w.mf, f); /* sorted as manifest sorts */
		if (fclose(f) || r) {
			free(out);
			out = NULL;
		}
	}
	mf_xattrs_clear(&w.xs);
	free(w.xs.x);
	mf_free(&w.mf);
	return out;
}

/* ---- Identities ----------------------------------------------------------- */

struct inos {
	struct model_ino *v;
	size_t n, cap;
};

static int inos_add(void *ctx, const char *path, uint32_t ino)
{
	struct inos *w = ctx;
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		struct model_ino *v = realloc(w->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		w->v = v;
		w->cap = cap;
	}
	if (!(w->v[w->n].path = strdup(path)))
		return -ENOMEM;
	w->v[w->n++].ino = ino;
	return 0;
}

static int cmp_ino_path(const void *a, const void *b)
{
	return strcmp(((const struct model_ino *)a)->path, ((const struct model_ino *)b)->path);
}

int model_inos(const struct model *m, struct model_ino **out, size_t *n)
{
	struct inos w = { 0 };
	int r = inos_add(&w, "/", ROOT);
	if (!r)
		r = walk_below(m, "/", ROOT, inos_add, &w);
	if (r) {
		model_inos_free(w.v, w.n);
		return r;
	}
	qsort(w.v, w.n, sizeof(*w.v), cmp_ino_path);
	*out = w.v;
	*n = w.n;
	return 0;
}

void model_inos_free(struct model_ino *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].path);
	free(v);
}

uint32_t model_ino_find(const struct model_ino *v, size_t n, const char *path)
{
	struct model_ino key = { (char *)path, 0 };
	const struct model_ino *f = v ? bsearch(&key, v, n, sizeof(*v), cmp_ino_path) : NULL;
	return f ? f->ino : MODEL_NO_INO;
}

uint32_t model_ino_of(const struct model *m, const char *path)
{
	struct why why = { 0 };
	uint32_t ino;
	return resolve(m, path, true, &ino, &why) ? MODEL_NO_INO : ino;
}

/* ---- The subvolumes -------------------------------------------------------- */

struct lines {
	char **v;
	size_t n, cap;
	bool oom;
};

static void lines_add(struct lines *l, char *s)
{
	if (!s || l->oom) {
		free(s);
		l->oom = true;
		return;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		char **v = realloc(l->v, cap * sizeof(*v));
		if (!v) {
			free(s);
			l->oom = true;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = s;
}

static void subvols_dir(const struct model *m, struct lines *l, const char *path, uint32_t ino)
{
	const struct minode *d = m->ino[ino];
	for (size_t i = 0; i < d->nents && !l->oom; i++) {
		char *sub = mf_path_join(path, d->ents[i].name, strlen(d->ents[i].name));
		if (!sub) {
			l->oom = true;
			return;
		}
		const struct minode *c = m->ino[d->ents[i].ino];
		char *line = NULL;
		if (c->kind == K_SUBVOL && asprintf(&line, "%s subvol %s%s\n", sub, c->ro ? "ro" : "rw",
						    c->received ? " received" : "") < 0)
			l->oom = true;
		else if (c->kind == K_STANDIN && asprintf(&line, "%s stand-in\n", sub) < 0)
			l->oom = true;
		else if (line)
			lines_add(l, line);
		if (S_ISDIR(c->mode) && c->kind != K_STANDIN)
			subvols_dir(m, l, sub, d->ents[i].ino);
		free(sub);
	}
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char *model_lines_join(char **v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_line);
	size_t len = 1;
	for (size_t i = 0; i < n; i++)
		len += strlen(v[i]);
	char *out = malloc(len), *p = out;
	for (size_t i = 0; out && i < n; i++) {
		size_t k = strlen(v[i]);
		memcpy(p, v[i], k);
		p += k;
	}
	if (out)
		*p = 0;
	return out;
}

char *model_describe_subvols(const struct model *m)
{
	struct lines l = { 0 };
	subvols_dir(m, &l, "/", ROOT);
	char *out = l.oom ? NULL : model_lines_join(l.v, l.n);
	for (size_t i = 0; i < l.n; i++)
		free(l.v[i]);
	free(l.v);
	return out;
}

/* ---- The names of one inode ------------------------------------------------ */

struct names {
	const struct model *m;
	uint32_t target;
	char **v;
	size_t n, cap;
};

static int names_dir(struct names *nw, const char *path, uint32_t ino)
{
	const struct minode *d = nw->m->ino[ino];
	int r = 0;
	for (size_t i = 0; i < d->nents && !r; i++) {
		uint32_t c = d->ents[i].ino;
		bool dir = S_ISDIR(nw->m->ino[c]->mode);
		if (c != nw->target && !dir)
			continue;
		char *sub = mf_path_join(path, d->ents[i].name, strlen(d->ents[i].name));
		if (!sub)
			return -ENOMEM;
		if (c == nw->target) {
			if (nw->n == nw->cap) {
				size_t cap = nw->cap ? 2 * nw->cap : 4;
				char **p = realloc(nw->v, cap * sizeof(*p));
				if (!p) {
					free(sub);
					return -ENOMEM;
				}
				nw->v = p;
				nw->cap = cap;
			}
			size_t l = strlen(sub);
			char *line = malloc(l + 2);
			if (!line) {
				free(sub);
				return -ENOMEM;
			}
			memcpy(line, sub, l);
			memcpy(line + l, "\n", 2);
			nw->v[nw->n++] = line;
		}
		if (dir && c != nw->target && nw->m->ino[c]->kind != K_STANDIN)
			r = names_dir(nw, sub, c);
		free(sub);
	}
	return r;
}

char *model_names_of(const struct model *m, const char *path)
{
	struct why why = { 0 };
	uint32_t ino;
	if (resolve(m, path, true, &ino, &why))
		return NULL;
	struct names nw = { .m = m, .target = ino };
	char *out = NULL;
	if (ino == ROOT) {
		out = strdup("/\n");
	} else if (!names_dir(&nw, "/", ROOT)) {
		out = model_lines_join(nw.v, nw.n);
	}
	for (size_t i = 0; i < nw.n; i++)
		free(nw.v[i]);
	free(nw.v);
	return out;
}
