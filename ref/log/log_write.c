/*
 * log_write.c - fsync through the log tree, as the kernel's btrfs_sync_file:
 * instead of committing the whole transaction, the inode is logged - its
 * items copied into a log tree of its subvolume - the log blocks written and
 * flushed, and the primary superblock (the last commit's, unchanged but for
 * log_root and log_root_level) written with FUA.  After a power loss the
 * next open replays the log (log_replay.c); the next commit drops it.
 *
 * What is logged for a file (the kernel's LOG_INODE_ALL, full sync): its
 * inode item, every INODE_REF/INODE_EXTREF and xattr, the file extent items
 * this transaction made (and every preallocated extent reaching past the
 * size, which replay would otherwise cut), with NO_HOLES an explicit hole
 * for every gap below the size (so that a hole punched now is punched on
 * replay too), and the checksums of the new extents as EXTENT_CSUM items.
 * Each directory on the way up that this transaction created is logged
 * "exists only" (generation 0: its inode item, names and xattrs), so that
 * replay can make the new names.
 *
 * Unlike the kernel, which copies changed log blocks, each log sync here
 * writes the whole log of the transaction as new blocks built from the
 * items kept in memory; the blocks of earlier syncs stay out of free space
 * until the commit, as the kernel pins them.  The bytes and ordering that
 * matter to a crash are the kernel's: log blocks, flush, superblock FUA.
 *
 * Where the kernel gives up and commits (its full-commit cases) ref does the
 * same and counts why; ref also commits where it does not log yet what the
 * kernel logs (a directory fsync, a name removed in this transaction), and
 * says so in the same counters.
 */
#include "faults/points.h"
#include "ref/tree/build.h"
#include "ref/log/log_write.h"
#include "ref/mutant.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

static const char *const reason_names[REF_LOG_FULL_NREASONS] = {
	[REF_LOG_FULL_NOTREELOG] = "notreelog",
	[REF_LOG_FULL_NEW_CHUNK] = "a chunk allocated in this transaction",
	[REF_LOG_FULL_DIR_UNLINK] = "a directory to log, or one above, lost a name to a rename or moved",
	[REF_LOG_FULL_PARENT_GONE] = "a parent directory of the last commit is gone",
	[REF_LOG_FULL_SUBVOL] = "a subvolume in what is logged",
	[REF_LOG_FULL_NO_SPACE] = "no metadata space for the log",
	[REF_LOG_FULL_TOO_BIG] = "the log outgrew its bound",
	[REF_LOG_FULL_ERROR] = "an error while logging",
	[REF_LOG_FULL_CONFLICTS] = "more than ten inodes had the names logged",
};

const char *ref_log_full_reason(enum ref_log_full why)
{
	return why < REF_LOG_FULL_NREASONS ? reason_names[why] : "?";
}

void ref_log_stats(const ref_fs *fs, struct ref_log_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (fs->rw)
		*out = fs->rw->log_stats;
}

static void item_free(struct log_item *it)
{
	free(it->data);
}

static void sub_free(struct log_sub *s)
{
	for (size_t i = 0; i < s->n; i++)
		item_free(&s->it[i]);
	free(s->it);
}

void log_drop(ref_fs *fs)
{
	struct log_state *ls = fs->rw ? fs->rw->log : NULL;
	if (!ls)
		return;
	for (size_t i = 0; i < ls->nsubs; i++)
		sub_free(&ls->subs[i]);
	free(ls->subs);
	free(ls->inos);
	u64map_free(&ls->ino_idx);
	free(ls->this_sync);
	free(ls->blocks);
	free(ls);
	fs->rw->log = NULL;
}

/* The transaction committed: its log is obsolete, and the space of its
 * blocks free again (the new superblocks, durable now, name no log). */
void log_committed(ref_fs *fs)
{
	struct log_state *ls = fs->rw->log;
	if (ls)
		for (size_t i = 0; i < ls->nblocks; i++)
			alloc_log_release(fs, ls->blocks[i]);
	log_drop(fs);
	fs->rw->log_must_commit = false;
}

static struct log_state *state(ref_fs *fs)
{
	if (!fs->rw->log)
		fs->rw->log = calloc(1, sizeof(struct log_state));
	return fs->rw->log;
}

struct log_ino *log_ino_get(ref_fs *fs, const struct ref_ino *in, bool create)
{
	struct log_state *ls = create ? state(fs) : fs->rw->log;
	if (!ls)
		return NULL;
	uint64_t *first = u64map_get(&ls->ino_idx, in->ino, false);
	for (size_t i = first ? (size_t)*first : 0; i; i = ls->inos[i - 1].same_ino)
		if (ls->inos[i - 1].subvol == in->subvol)
			return &ls->inos[i - 1];
	if (!create)
		return NULL;
	if (GROW(ls->inos, ls->ninos, ls->inos_cap))
		return NULL;
	uint64_t *slot = u64map_get(&ls->ino_idx, in->ino, true);
	if (!slot)
		return NULL;
	struct log_ino *li = &ls->inos[ls->ninos++];
	*li = (struct log_ino){ .subvol = in->subvol, .ino = in->ino, .same_ino = (size_t)*slot };
	*slot = ls->ninos;
	return li;
}

struct log_sub *log_sub_get(ref_fs *fs, uint64_t subvol)
{
	struct log_state *ls = state(fs);
	if (!ls)
		return NULL;
	for (size_t i = 0; i < ls->nsubs; i++)
		if (ls->subs[i].subvol == subvol)
			return &ls->subs[i];
	if (GROW(ls->subs, ls->nsubs, ls->subs_cap))
		return NULL;
	struct log_sub *s = &ls->subs[ls->nsubs++];
	memset(s, 0, sizeof(*s));
	s->subvol = subvol;
	return s;
}

struct log_item *log_sub_find(struct log_sub *s, const struct ref_key *k)
{
	for (size_t i = 0; i < s->n; i++)
		if (!ref_key_cmp(&s->it[i].key, k))
			return &s->it[i];
	return NULL;
}

void log_sub_drop(struct log_sub *s, struct log_item *it)
{
	item_free(it);
	*it = s->it[--s->n];
}

void log_sub_forget(struct log_sub *s, uint64_t ino, uint8_t upto)
{
	size_t w = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (s->it[i].key.objectid == ino && s->it[i].key.type <= upto)
			item_free(&s->it[i]);
		else
			s->it[w++] = s->it[i];
	}
	s->n = w;
}

int log_sub_add(ref_fs *fs, struct log_sub *s, const struct ref_key *k, const void *data,
		   uint32_t size)
{
	if (GROW(s->it, s->n, s->cap))
		return ref_fail(fs, ENOMEM, "out of memory");
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return ref_fail(fs, ENOMEM, "out of memory");
	memcpy(copy, data, size);
	s->it[s->n++] = (struct log_item){ *k, size, copy };
	return 0;
}

/* The inode item as the log holds it: generation 0 when it only says the
 * inode exists (its size then the caller's); nbytes is not kept (replay
 * counts it). */
int log_inode_item(ref_fs *fs, struct log_sub *s, const struct ref_ino *in,
			  const struct btrfs_inode_item *ii, bool exists_only)
{
	struct btrfs_inode_item li = *ii;
	li.nbytes = 0;
	li.transid = htole64(fs->rw->transid);
	if (exists_only)
		li.generation = 0;
	struct ref_key k = { in->ino, BTRFS_INODE_ITEM_KEY, 0 };
	return log_sub_add(fs, s, &k, &li, sizeof(li));
}

int log_each_item_in(ref_fs *fs, const struct ref_root *root, uint64_t ino, uint8_t lo,
		     uint8_t hi, item_fn fn, void *ctx)
{
	struct ref_key k = { ino, lo, 0 };
	struct ref_path p;
	int r = ref_search(fs, root, &k, &p);
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid != ino || k.type > hi || (r = fn(ctx, &k, d, size)))
			break;
		r = ref_next(fs, &p);
	}
	ref_path_release(fs, &p);
	return r < 0 ? r : 0;
}

int log_each_item(ref_fs *fs, const struct ref_ino *in, uint8_t lo, uint8_t hi, item_fn fn,
		  void *ctx)
{
	struct ref_root root;
	int r = ref_find_root(fs, in->subvol, &root);
	return r ? r : log_each_item_in(fs, &root, in->ino, lo, hi, fn, ctx);
}

struct copy {
	ref_fs *fs;
	struct log_sub *s;
	const struct btrfs_inode_item *ii;
	keep_fn keep;
};

static int copy_one(void *ctx, const struct ref_key *k, const uint8_t *d, uint32_t size)
{
	struct copy *c = ctx;
	return !c->keep || c->keep(c->fs, c->ii, k, d, size) ? log_sub_add(c->fs, c->s, k, d, size) : 0;
}

/* Copies the items of ino with key types in [lo, hi] that keep() accepts. */
int log_copy_items(ref_fs *fs, struct log_sub *s, const struct ref_ino *in, uint8_t lo,
		      uint8_t hi, const struct btrfs_inode_item *ii, keep_fn keep)
{
	struct copy c = { fs, s, ii, keep };
	return log_each_item(fs, in, lo, hi, copy_one, &c);
}

/* File extents the log needs: this transaction's, and prealloc past the size. */
static bool keep_extent(ref_fs *fs, const struct btrfs_inode_item *ii, const struct ref_key *k,
			const uint8_t *d, uint32_t size)
{
	if (k->type != BTRFS_EXTENT_DATA_KEY || size < offsetof(struct btrfs_file_extent_item, disk_bytenr))
		return false;
	const struct btrfs_file_extent_item *fe = (const void *)d;
	if (LE64(fe->generation) == fs->rw->transid)
		return true;
	return fe->type == BTRFS_FILE_EXTENT_PREALLOC && size >= sizeof(*fe) &&
	       k->offset + LE64(fe->num_bytes) > LE64(ii->size);
}

static int add_hole(ref_fs *fs, struct log_sub *s, uint64_t ino, uint64_t pos, uint64_t len)
{
	struct btrfs_file_extent_item hole;
	memset(&hole, 0, sizeof(hole));
	hole.generation = htole64(fs->rw->transid);
	hole.ram_bytes = htole64(len);
	hole.type = BTRFS_FILE_EXTENT_REG;
	hole.num_bytes = htole64(len);
	struct ref_key k = { ino, BTRFS_EXTENT_DATA_KEY, pos };
	return log_sub_add(fs, s, &k, &hole, sizeof(hole));
}

struct holes {
	ref_fs *fs;
	struct log_sub *s;
	uint64_t ino, pos, end; /* covered up to pos; the hole items end at end */
};

static int hole_before(void *ctx, const struct ref_key *k, const uint8_t *d, uint32_t size)
{
	struct holes *h = ctx;
	(void)size;
	uint64_t ss = h->fs->sectorsize;
	const struct btrfs_file_extent_item *fe = (const void *)d;
	uint64_t e = fe->type == BTRFS_FILE_EXTENT_INLINE
			     ? (k->offset + LE64(fe->ram_bytes) + ss - 1) / ss * ss
			     : k->offset + LE64(fe->num_bytes);
	int r = 0;
	if (k->offset > h->pos)
		r = add_hole(h->fs, h->s, h->ino, h->pos,
			     (k->offset < h->end ? k->offset : h->end) - h->pos);
	if (e > h->pos)
		h->pos = e;
	return r ? r : h->pos >= h->end;
}

/* With NO_HOLES, an explicit hole item for each gap in [0, round_up(size)):
 * replay drops what the last commit had there (a hole punched now). */
static int log_holes(ref_fs *fs, struct log_sub *s, const struct ref_ino *in,
		     const struct btrfs_inode_item *ii)
{
	if (!(LE64(fs->sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_NO_HOLES) || MUTANT(LOG_NO_HOLES))
		return 0;
	uint64_t ss = fs->sectorsize;
	struct holes h = { fs, s, in->ino, 0, (LE64(ii->size) + ss - 1) / ss * ss };
	if (!h.end)
		return 0;
	int r = log_each_item(fs, in, BTRFS_EXTENT_DATA_KEY, BTRFS_EXTENT_DATA_KEY, hole_before, &h);
	if (r)
		return r;
	return h.pos < h.end ? add_hole(fs, s, in->ino, h.pos, h.end - h.pos) : 0;
}

int log_unloggable(ref_fs *fs, const struct ref_ino *in)
{
	if (vfs_is_standin(in))
		return 1;
	struct rw_tree *t;
	int r = rw_tree_get(fs, in->subvol, &t);
	return r ? r : t->rdonly;
}

int log_mark_logged(ref_fs *fs, const struct ref_ino *in)
{
	struct log_ino *li = log_ino_get(fs, in, true);
	struct log_state *ls = fs->rw->log;
	if (!li || GROW(ls->this_sync, ls->nthis, ls->this_cap))
		return ref_fail(fs, ENOMEM, "out of memory");
	li->logged = true;
	li->xattrs = false;
	ls->this_sync[ls->nthis++] = *in;
	return 0;
}

void log_note_xattr(ref_fs *fs, const struct ref_ino *in)
{
	struct log_ino *li = log_ino_get(fs, in, false);
	if (li)
		li->xattrs = true;
}

/* An inode "exists only" (the kernel's LOG_INODE_EXISTS): its item with
 * generation 0 and the size it was logged with (0 if never: replay then
 * keeps an existing inode's), its names and xattrs; extents an earlier
 * sync logged stay.  Nothing when it is logged whole already and its xattrs
 * did not change since (need_log_inode). */
int log_exists(ref_fs *fs, struct log_sub *s, const struct ref_ino *in)
{
	struct ref_key k = { in->ino, BTRFS_INODE_ITEM_KEY, 0 };
	const struct log_item *old = log_sub_find(s, &k);
	const struct log_ino *li0 = log_ino_get(fs, in, false);
	uint64_t logged_size = 0;
	if (old) {
		const struct btrfs_inode_item *oi = (const void *)old->data;
		if (LE64(oi->generation) && !(li0 && li0->xattrs))
			return 0; /* logged whole already */
		logged_size = LE64(oi->size);
	}
	struct btrfs_inode_item ii;
	int r = inode_read(fs, in, &ii);
	if (r)
		return r;
	if (S_ISLNK(LE32(ii.mode))) /* its target is its data: always whole */
		return log_inode_all(fs, s, in, &ii);
	log_sub_forget(s, in->ino, BTRFS_XATTR_ITEM_KEY);
	struct btrfs_inode_item li = ii;
	li.size = htole64(logged_size < LE64(ii.size) ? logged_size : LE64(ii.size));
	if ((r = log_mark_logged(fs, in)) || (r = log_inode_item(fs, s, in, &li, true)))
		return r;
	return log_copy_items(fs, s, in, BTRFS_INODE_REF_KEY, BTRFS_XATTR_ITEM_KEY, &ii, NULL);
}

struct parents {
	ref_fs *fs;
	uint64_t *v;
	size_t n, cap;
};

/* The parent of each name of a ref item (one per INODE_REF item). */
static int parents_in(void *ctx, const struct ref_key *k, const uint8_t *d, uint32_t size)
{
	struct parents *ps = ctx;
	for (uint32_t pos = 0;;) {
		uint64_t parent;
		uint32_t len;
		if (k->type == BTRFS_INODE_REF_KEY) {
			if (pos + sizeof(struct btrfs_inode_ref) > size)
				break;
			parent = k->offset;
			len = (uint32_t)sizeof(struct btrfs_inode_ref) + le16(d + pos + 8);
		} else {
			if (pos + sizeof(struct btrfs_inode_extref) > size)
				break;
			const struct btrfs_inode_extref *x = (const void *)(d + pos);
			parent = LE64(x->parent_objectid);
			len = (uint32_t)sizeof(*x) + LE16(x->name_len);
		}
		if (GROW(ps->v, ps->n, ps->cap))
			return ref_fail(ps->fs, ENOMEM, "out of memory");
		ps->v[ps->n++] = parent;
		pos += len;
		if (k->type == BTRFS_INODE_REF_KEY)
			break; /* one parent per INODE_REF item */
	}
	return 0;
}

int log_parents_of(ref_fs *fs, const struct ref_ino *in, bool commit, uint64_t **out, size_t *n)
{
	struct parents ps = { fs, NULL, 0, 0 };
	struct ref_root root;
	int r = commit ? ref_find_commit_root(fs, in->subvol, &root) : ref_find_root(fs, in->subvol, &root);
	if (!r)
		r = log_each_item_in(fs, &root, in->ino, BTRFS_INODE_REF_KEY, BTRFS_INODE_EXTREF_KEY,
				     parents_in, &ps);
	*out = ps.v;
	*n = ps.n;
	return r;
}

int log_new_ancestors(ref_fs *fs, struct log_sub *s, const struct ref_ino *in,
		      enum ref_log_full *why)
{
	uint64_t *par;
	size_t n;
	int r = log_parents_of(fs, in, false, &par, &n);
	for (size_t i = 0; !r && i < n; i++) {
		struct ref_ino dir = { in->subvol, par[i] };
		for (int depth = 0; !r && depth < 4096; depth++) {
			struct btrfs_inode_item ii;
			if (vfs_is_standin(&dir) || (dir.ino == in->ino && dir.subvol == in->subvol) ||
			    (r = inode_read(fs, &dir, &ii)))
				break;
			const struct log_ino *li = log_ino_get(fs, &dir, false);
			if (li && li->moved) {
				/* Replay would put the names below it under its old
				 * one: here, or above the subvolume, where the log of
				 * this subvolume cannot reach. */
				*why = REF_LOG_FULL_DIR_UNLINK;
				r = 1;
				break;
			}
			if (dir.subvol == in->subvol && LE64(ii.generation) == fs->rw->transid &&
			    (r = log_exists(fs, s, &dir)))
				break;
			struct ref_ino up;
			if ((dir.ino == BTRFS_FIRST_FREE_OBJECTID && dir.subvol == BTRFS_FS_TREE_OBJECTID) ||
			    (r = vfs_dotdot(fs, &dir, &up)))
				break;
			if (up.subvol == dir.subvol && up.ino == dir.ino)
				break;
			dir = up;
		}
	}
	free(par);
	return r;
}

/* The inode whole (LOG_INODE_ALL), replacing what an earlier sync logged. */
int log_inode_all(ref_fs *fs, struct log_sub *s, const struct ref_ino *in,
			 const struct btrfs_inode_item *ii)
{
	log_sub_forget(s, in->ino, UINT8_MAX);
	int r = log_mark_logged(fs, in);
	if (!r)
		r = log_inode_item(fs, s, in, ii, false);
	if (!r)
		r = log_copy_items(fs, s, in, MUTANT(LOG_NO_NAMES) ? BTRFS_XATTR_ITEM_KEY : BTRFS_INODE_REF_KEY,
			       BTRFS_XATTR_ITEM_KEY, ii, NULL);
	if (!r)
		r = log_copy_items(fs, s, in, BTRFS_EXTENT_DATA_KEY, BTRFS_EXTENT_DATA_KEY, ii,
			       keep_extent);
	if (!r)
		r = log_holes(fs, s, in, ii);
	return r;
}

/* ---- Writing the log ---- */

static int cmp_item(const void *a, const void *b)
{
	return ref_key_cmp(&((const struct log_item *)a)->key, &((const struct log_item *)b)->key);
}

/* The checksums of the sub's new regular extents, as EXTENT_CSUM items. */
static int csum_items(ref_fs *fs, const struct log_sub *s, struct log_sub *out)
{
	struct rset want = { 0 };
	int r = 0;
	for (size_t i = 0; i < s->n && !r; i++) {
		const struct log_item *it = &s->it[i];
		if (it->key.type != BTRFS_EXTENT_DATA_KEY || it->size < sizeof(struct btrfs_file_extent_item))
			continue;
		const struct btrfs_file_extent_item *fe = (const void *)it->data;
		if (fe->type != BTRFS_FILE_EXTENT_REG || !LE64(fe->disk_bytenr) ||
		    LE64(fe->generation) != fs->rw->transid)
			continue;
		uint64_t a = LE64(fe->disk_bytenr) + (fe->compression ? 0 : LE64(fe->offset));
		uint64_t len = fe->compression ? LE64(fe->disk_num_bytes) : LE64(fe->num_bytes);
		if (rset_add(&want, a, len))
			r = ref_fail(fs, ENOMEM, "out of memory");
	}
	uint64_t per = (leaf_space(fs->nodesize) - 2 * (uint32_t)ITEM_SIZE) / fs->csum_size - 1;
	uint8_t *cs = malloc(per * fs->csum_size);
	bool *have = malloc(per * sizeof(*have));
	if (!r && (!cs || !have))
		r = ref_fail(fs, ENOMEM, "out of memory");
	for (size_t i = 0; i < want.n && !r; i++) {
		for (uint64_t a = want.r[i][0]; a < want.r[i][1] && !r;) {
			uint64_t n = (want.r[i][1] - a) / fs->sectorsize;
			if (n > per)
				n = per;
			if ((r = data_csums(fs, a, n, cs, have)))
				break;
			/* Runs of sectors that have checksums (none: nodatasum). */
			for (uint64_t j = 0; j < n && !r;) {
				if (!have[j]) {
					j++;
					continue;
				}
				uint64_t e = j;
				while (e < n && have[e])
					e++;
				struct ref_key k = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY,
						     a + j * fs->sectorsize };
				r = log_sub_add(fs, out, &k, cs + j * fs->csum_size,
					    (uint32_t)((e - j) * fs->csum_size));
				j = e;
			}
			a += n * fs->sectorsize;
		}
	}
	free(cs);
	free(have);
	rset_free(&want);
	return r;
}

/* A block of metadata space for the log, taken out of free space until the
 * commit; -ENOSPC when none (the caller commits instead). */
static int log_block(ref_fs *fs, uint64_t *bytenr)
{
	struct log_state *ls = fs->rw->log;
	if (GROW(ls->blocks, ls->nblocks, ls->blocks_cap))
		return ref_fail(fs, ENOMEM, "out of memory");
	int r = alloc_log_block(fs, bytenr);
	if (!r)
		ls->blocks[ls->nblocks++] = *bytenr;
	return r;
}

/* Builds items[0..n) (sorted) as a new tree of log blocks and writes them;
 * *root and *level get its root. */
static int write_tree(ref_fs *fs, struct log_item *items, size_t n, uint64_t *root,
		      uint8_t *level)
{
	struct build_item *bi = malloc((n + 1) * sizeof(*bi));
	if (!bi)
		return ref_fail(fs, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		bi[i] = (struct build_item){ items[i].key, items[i].size, items[i].data };
	size_t count = build_count(fs->nodesize, bi, n);
	uint64_t *addr = malloc(count * sizeof(*addr));
	uint8_t *buf = malloc(count * (size_t)fs->nodesize);
	int r = addr && buf ? 0 : ref_fail(fs, ENOMEM, "out of memory");
	for (size_t b = 0; b < count && !r; b++)
		r = log_block(fs, &addr[b]);
	if (!r) {
		struct build_header h = { .generation = fs->rw->transid,
					  .owner = BTRFS_TREE_LOG_OBJECTID,
					  .csum_type = fs->csum_type,
					  .nodesize = fs->nodesize };
		memcpy(h.fsid, fs->meta_fsid, sizeof(h.fsid));
		memcpy(h.chunk_tree_uuid, fs->rw->chunk_tree_uuid, sizeof(h.chunk_tree_uuid));
		int lv = build_emit(&h, bi, n, addr, count, buf);
		if (lv < 0)
			r = ref_fail(fs, -lv, "log tree: an item does not fit in a leaf");
		else {
			*root = addr[count - 1];
			*level = (uint8_t)lv;
		}
	}
	for (size_t b = 0; b < count && !r; b++) {
		int e = FP_FAIL(FP_REF_COMMIT_WRITE_BLOCKS);
		r = e ? ref_fail(fs, e, "log: writing block %llu (fault point %s)",
				 (unsigned long long)addr[b], FP_REF_COMMIT_WRITE_BLOCKS)
		      : ref_write_logical(fs, addr[b], buf + b * fs->nodesize, fs->nodesize);
	}
	free(bi);
	free(addr);
	free(buf);
	return r;
}

/* The last commit's primary superblock on each device, with the log named. */
static int write_log_supers(ref_fs *fs, uint64_t log_root, uint8_t level)
{
	for (size_t d = 0; d < fs->ndevs; d++) {
		if (fs->devs[d].disk < 0)
			continue;
		unsigned disk = (unsigned)fs->devs[d].disk;
		struct btrfs_super_disk sb;
		uint64_t off = btrfs_super_offset(0);
		int r = sim_read(fs->vol, disk, off, &sb, sizeof(sb));
		if (r)
			return ref_fail(fs, -r, "log: reading superblock of device %llu: %s",
					(unsigned long long)fs->devs[d].devid, sim_volume_error(fs->vol));
		if (LE64(sb.generation) != fs->generation)
			return ref_fail(fs, EUCLEAN, "log: device %llu's superblock is not the last commit's",
					(unsigned long long)fs->devs[d].devid);
		sb.log_root = htole64(log_root);
		sb.log_root_level = level;
		ref_csum(fs->csum_type, (uint8_t *)&sb + BTRFS_CSUM_BYTES,
			 BTRFS_SUPER_SIZE - BTRFS_CSUM_BYTES, sb.csum);
		int e = FP_FAIL(FP_REF_COMMIT_SUPER);
		if (e)
			return ref_fail(fs, e, "log: writing the superblock of device %llu (fault point %s)",
					(unsigned long long)fs->devs[d].devid, FP_REF_COMMIT_SUPER);
		if ((r = sim_write(fs->vol, disk, off, &sb, sizeof(sb), SIM_FUA)))
			return ref_fail(fs, -r, "log: writing the superblock of device %llu: %s",
					(unsigned long long)fs->devs[d].devid, sim_volume_error(fs->vol));
	}
	return 0;
}

static int flush_all(ref_fs *fs)
{
	for (size_t d = 0; d < fs->ndevs; d++) {
		if (fs->devs[d].disk < 0)
			continue;
		int e = FP_FAIL(FP_REF_COMMIT_FLUSH);
		if (!e)
			e = -sim_flush(fs->vol, (unsigned)fs->devs[d].disk);
		if (e)
			return ref_fail(fs, e, "log: flushing device %llu: %s",
					(unsigned long long)fs->devs[d].devid, sim_volume_error(fs->vol));
	}
	return 0;
}

/* Writes every subvolume's log, the log root tree, flushes, then the superblocks. */
static int log_sync(ref_fs *fs)
{
	struct log_state *ls = fs->rw->log;
	size_t nsubs = ls->nsubs;
	struct log_item *roots = calloc(nsubs + 1, sizeof(*roots));
	struct btrfs_root_item *ris = calloc(nsubs + 1, sizeof(*ris));
	int r = roots && ris ? 0 : ref_fail(fs, ENOMEM, "out of memory");
	for (size_t i = 0; i < nsubs && !r; i++) {
		struct log_sub *s = &ls->subs[i];
		struct log_sub all = { .subvol = s->subvol };
		for (size_t j = 0; j < s->n && !r; j++)
			r = log_sub_add(fs, &all, &s->it[j].key, s->it[j].data, s->it[j].size);
		if (!r && !MUTANT(LOG_NO_CSUM))
			r = csum_items(fs, s, &all);
		if (!r)
			qsort(all.it, all.n, sizeof(*all.it), cmp_item);
		uint64_t bytenr = 0;
		uint8_t level = 0;
		if (!r)
			r = write_tree(fs, all.it, all.n, &bytenr, &level);
		sub_free(&all);
		if (r)
			break;
		struct btrfs_root_item *ri = &ris[i];
		ri->inode.generation = htole64(1);
		ri->inode.size = htole64(3);
		ri->inode.nlink = htole32(1);
		ri->inode.nbytes = htole64(fs->nodesize);
		ri->inode.mode = htole32(040755);
		ri->generation = htole64(fs->rw->transid);
		ri->generation_v2 = ri->generation;
		ri->bytenr = htole64(bytenr);
		ri->level = level;
		roots[i] = (struct log_item){ { BTRFS_TREE_LOG_OBJECTID, BTRFS_ROOT_ITEM_KEY, s->subvol },
					      (uint32_t)sizeof(*ri), (uint8_t *)ri };
	}
	uint64_t root = 0;
	uint8_t level = 0;
	if (!r) {
		qsort(roots, nsubs, sizeof(*roots), cmp_item);
		r = write_tree(fs, roots, nsubs, &root, &level);
	}
	free(roots);
	free(ris);
	/* The log and the data it names durable before a superblock names it. */
	if (!r && !MUTANT(LOG_SUPER_FIRST))
		r = flush_all(fs);
	if (!r)
		r = write_log_supers(fs, root, level);
	if (!r && MUTANT(LOG_SUPER_FIRST))
		r = flush_all(fs);
	return r;
}

/* Whether the transaction's log would outgrow what one sync should write. */
static bool too_big(ref_fs *fs)
{
	size_t items = 0;
	for (size_t i = 0; i < fs->rw->log->nsubs; i++)
		items += fs->rw->log->subs[i].n;
	return items > LOG_MAX_ITEMS;
}

static int full_commit(ref_fs *fs, enum ref_log_full why)
{
	fs->rw->log_stats.full_commits++;
	fs->rw->log_stats.full_by_reason[why]++;
	return rw_commit(fs);
}

int log_fsync(ref_fs *fs, const struct ref_ino *in)
{
	struct rw_state *rw = fs->rw;
	if (!rw->treelog)
		return full_commit(fs, REF_LOG_FULL_NOTREELOG);
	if (!rw->in_txn) /* nothing since the last commit: it holds everything */
		return 0;
	struct btrfs_inode_item ii;
	int r = inode_read(fs, in, &ii);
	if (r)
		return r;
	/* skip_inode_logging: no change since the last commit, or since the
	 * sync that logged this inode whole, means no IO at all (a parent
	 * moved since the commit included: fsync of a file does not persist
	 * its directories' names, as on Linux). */
	const struct log_ino *was = log_ino_get(fs, in, false);
	if (LE64(ii.transid) < rw->transid || (was && was->synced_seq == LE64(ii.sequence) + 1)) {
		rw->log_stats.skipped++;
		return 0;
	}
	/* btrfs_log_inode_parent: a file with no links left (open, unlinked)
	 * is never logged, and nothing is synced. */
	if (LE32(ii.nlink) == 0) {
		rw->log_stats.skipped++;
		return 0;
	}
	if (rw->npending)
		return full_commit(fs, REF_LOG_FULL_NEW_CHUNK);
	if ((r = log_unloggable(fs, in)))
		return r < 0 ? r : full_commit(fs, REF_LOG_FULL_SUBVOL);
	if (rw->log_must_commit)
		return full_commit(fs, rw->log_must_commit_why);
	struct log_sub *s = log_sub_get(fs, in->subvol);
	if (!s)
		return ref_fail(fs, ENOMEM, "out of memory");
	uint64_t blocks_before = rw->log->nblocks;
	rw->log->nthis = 0;
	/* btrfs_log_inode_parent: the inode; a file's names changed since the
	 * commit: its parents of the commit whole; the new directories above. */
	enum ref_log_full why = REF_LOG_FULL_ERROR;
	bool dir = S_ISDIR(LE32(ii.mode));
	const struct log_ino *li = log_ino_get(fs, in, false);
	bool unlinked = li && li->unlinked;
	r = dir ? log_dir_all(fs, s, in, &why) : log_inode_all(fs, s, in, &ii);
	if (!r && !dir && unlinked)
		r = log_all_parents(fs, s, in, &why);
	/* Names the commit gave to other inodes: those inodes too. */
	if (!r)
		r = log_conflicts(fs, s, in, &why);
	/* (The kernel skips this for a regular file of the last commit whose
	 * names did not change; ref walks up anyway, for a directory above
	 * moved since the commit, which makes it commit: replay would bring
	 * the file back under that directory's old name.) */
	if (!r)
		r = log_new_ancestors(fs, s, in, &why);
	if (r == 1)
		return full_commit(fs, why);
	if (!r && too_big(fs))
		return full_commit(fs, REF_LOG_FULL_TOO_BIG);
	if (!r)
		r = log_sync(fs);
	if (r == -ENOSPC) {
		/* The blocks this sync took go back; the commit holds everything. */
		for (uint64_t b = blocks_before; b < rw->log->nblocks; b++)
			alloc_log_release(fs, rw->log->blocks[b]);
		rw->log->nblocks = blocks_before;
		return full_commit(fs, REF_LOG_FULL_NO_SPACE);
	}
	if (r) {
		/* The disks may hold a torn log: the kernel commits (the commit's
		 * superblocks name no log); so does ref, or fails with the reason. */
		rw->log_stats.full_by_reason[REF_LOG_FULL_ERROR]++;
		rw->log_stats.full_commits++;
		int c = rw_commit(fs);
		return c ? c : 0;
	}
	rw->log_stats.log_syncs++;
	struct log_ino *now = log_ino_get(fs, in, true);
	if (now)
		now->synced_seq = LE64(ii.sequence) + 1;
	return 0;
}
