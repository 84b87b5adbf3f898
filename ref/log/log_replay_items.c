/*
 * log_replay_items.c - one log tree replayed into its subvolume, in the
 * kernel's three stages over the log's items (replay_one_buffer):
 *
 *   1. INODE_ITEM: xattrs the log lacks deleted, a directory's entries
 *      inside its logged DIR_LOG_INDEX ranges that the log lacks unlinked,
 *      the inode item copied (nbytes kept or zeroed, a directory's size
 *      kept; generation 0 means "only make sure it exists"), a regular
 *      file's extents past its logged size dropped;
 *   2. DIR_INDEX: names the log holds, conflicting names unlinked first,
 *      added with their back reference unless an INODE_REF in the log will
 *      add them in stage 3;
 *   3. INODE_REF/INODE_EXTREF (names added, stale names of the inode
 *      unlinked, the ref item copied), XATTR_ITEM (copied), EXTENT_DATA
 *      (the range dropped, the item inserted, a data reference added, the
 *      extent item made when the extent never reached a commit, checksums
 *      copied from the log's EXTENT_CSUM items).
 *
 * Every inode whose names may have changed is recounted at the end (the
 * kernel's fixup list): its link count is the number of its back
 * references; one left with none is removed, as the kernel's orphan cleanup
 * at mount does right after the replay (a directory losing its last name
 * has its entries unlinked first).  An inode whose logged link count is 0
 * (unlinked while open) is skipped entirely.
 */
#include "ref/txn/extent.h"
#include "ref/grow.h"
#include "ref/log/log_replay.h"
#include "ref/mutant.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#define DIR_ENTRY sizeof(struct btrfs_dir_item)
#define FE_SIZE sizeof(struct btrfs_file_extent_item)
#define FE_INLINE_HDR offsetof(struct btrfs_file_extent_item, disk_bytenr)

struct lr {
	ref_fs *fs;
	uint64_t subvol;
	struct rw_tree *t;
	struct ref_root log;
	uint64_t *fix; /* the fixup list: inodes to recount, unsorted, unique */
	size_t nfix, fix_cap;
};

static int bad(struct lr *lr, const struct ref_key *k, const char *what)
{
	return ref_fail(lr->fs, EUCLEAN, "log tree of subvolume %llu: item (%llu %u %llu): %s",
			(unsigned long long)lr->subvol, (unsigned long long)k->objectid, k->type,
			(unsigned long long)k->offset, what);
}

static struct ref_ino ino_of(const struct lr *lr, uint64_t ino)
{
	return (struct ref_ino){ lr->subvol, ino };
}

/* A copy of the item at exactly key in a tree: 0, 1 when absent, -errno. */
static int item_get(struct lr *lr, const struct ref_root *root, const struct ref_key *key,
		    uint8_t **data, uint32_t *size)
{
	struct ref_path p;
	int r = ref_search(lr->fs, root, key, &p);
	if (r)
		return r;
	struct ref_key got;
	const uint8_t *d;
	uint32_t n;
	ref_path_item(&p, &got, &d, &n);
	r = 1;
	if (!ref_key_cmp(&got, key)) {
		*data = malloc(n ? n : 1);
		if (!*data)
			r = ref_fail(lr->fs, ENOMEM, "out of memory");
		else {
			memcpy(*data, d, n);
			*size = n;
			r = 0;
		}
	}
	ref_path_release(lr->fs, &p);
	return r;
}

static bool inode_exists(struct lr *lr, uint64_t ino)
{
	struct ref_key k = { ino, BTRFS_INODE_ITEM_KEY, 0 }, got;
	uint32_t size;
	return bt_peek(lr->fs, &lr->t->root, &k, false, &got, &size) == 0 &&
	       !ref_key_cmp(&got, &k);
}

static int need_inode(struct lr *lr, uint64_t ino, const struct ref_key *why)
{
	if (inode_exists(lr, ino))
		return 0;
	ref_fail(lr->fs, ENOENT,
		 "log tree of subvolume %llu: item (%llu %u %llu) needs inode %llu, which does not exist",
		 (unsigned long long)lr->subvol, (unsigned long long)why->objectid, why->type,
		 (unsigned long long)why->offset, (unsigned long long)ino);
	return -ENOENT;
}

/* Inserts the item, or makes the existing one equal to it (the kernel's
 * overwrite_item): nothing changes when it already is. */
static int overwrite(struct lr *lr, const struct ref_key *k, const void *data, uint32_t size)
{
	uint8_t *old;
	uint32_t osize;
	int r = item_get(lr, &lr->t->root, k, &old, &osize);
	if (r < 0)
		return r;
	if (r == 1)
		return bt_insert_data(lr->fs, lr->t, k, data, size);
	bool same = osize == size && !memcmp(old, data, size);
	free(old);
	if (same)
		return 0;
	struct ref_path p;
	if (osize != size)
		r = bt_resize(lr->fs, lr->t, k, size, &p);
	else
		r = bt_lookup_cow(lr->fs, lr->t, k, &p);
	if (r)
		return r;
	memcpy(bt_item(&p, NULL), data, size);
	ref_path_release(lr->fs, &p);
	return 0;
}

static int fixup_add(struct lr *lr, uint64_t ino)
{
	for (size_t i = 0; i < lr->nfix; i++)
		if (lr->fix[i] == ino)
			return 0;
	if (GROW(lr->fix, lr->nfix, lr->fix_cap))
		return ref_fail(lr->fs, ENOMEM, "out of memory");
	lr->fix[lr->nfix++] = ino;
	return 0;
}

/* One name of target leaves dir: DIR_ITEM, DIR_INDEX and back reference
 * gone, the directory's size and times, the target's link count (kept at
 * least 0: the fixup counts it again) and change time. */
static int unlink_name(struct lr *lr, uint64_t dir, uint64_t target, const char *name,
		       size_t len)
{
	struct ref_ino d = ino_of(lr, dir), t = ino_of(lr, target);
	struct btrfs_inode_item ii;
	int r = dir_remove(lr->fs, &d, name, len, &t);
	if (r || (r = inode_read(lr->fs, &t, &ii)))
		return r;
	if (LE32(ii.nlink))
		ii.nlink = htole32(LE32(ii.nlink) - 1);
	inode_touch(lr->fs, &ii, false, true);
	return inode_write(lr->fs, &t, &ii);
}

/* A parsed directory entry (DIR_ITEM, DIR_INDEX or XATTR_ITEM entry). */
struct dent {
	struct btrfs_disk_key loc;
	uint8_t type;
	const char *name;
	uint32_t len, size; /* name length; the whole entry's bytes */
};

static bool dent_at(const uint8_t *d, uint32_t size, uint32_t pos, struct dent *e)
{
	if (pos + DIR_ENTRY > size)
		return false;
	const struct btrfs_dir_item *di = (const void *)(d + pos);
	uint32_t nl = LE16(di->name_len), dl = LE16(di->data_len);
	if (pos + DIR_ENTRY + nl + dl > size || !nl)
		return false;
	e->loc = di->location;
	e->type = di->type;
	e->name = (const char *)(d + pos + DIR_ENTRY);
	e->len = nl;
	e->size = (uint32_t)DIR_ENTRY + nl + dl;
	return true;
}

/* The entry named `name` in the DIR_ITEM/DIR_INDEX/XATTR_ITEM at k of a tree. */
static int find_dent(struct lr *lr, const struct ref_root *root, const struct ref_key *k,
		     const char *name, size_t len, struct dent *out, uint8_t **buf)
{
	uint32_t size;
	int r = item_get(lr, root, k, buf, &size);
	if (r)
		return r;
	struct dent e;
	for (uint32_t pos = 0; dent_at(*buf, size, pos, &e); pos += e.size) {
		if (e.len == len && !memcmp(e.name, name, len)) {
			*out = e;
			return 0;
		}
	}
	free(*buf);
	*buf = NULL;
	return 1;
}

/* ---- Stage 1: inode items ---- */

/* The inode's xattrs in the subvolume that its log lacks go (the log holds
 * all of a logged inode's xattrs). */
static int xattr_deletes(struct lr *lr, uint64_t ino)
{
	struct ref_key at = { ino, BTRFS_XATTR_ITEM_KEY, 0 };
	for (;;) {
		struct ref_key k;
		uint32_t size;
		int r = bt_peek(lr->fs, &lr->t->root, &at, false, &k, &size);
		if (r)
			return r < 0 ? r : 0;
		if (k.objectid != ino || k.type != BTRFS_XATTR_ITEM_KEY)
			return 0;
		uint8_t *d;
		if ((r = item_get(lr, &lr->t->root, &k, &d, &size)))
			return r < 0 ? r : 0;
		struct dent e;
		bool cut = false;
		for (uint32_t pos = 0; !cut && dent_at(d, size, pos, &e); pos += e.size) {
			struct dent le;
			uint8_t *lb = NULL;
			r = find_dent(lr, &lr->log, &k, e.name, e.len, &le, &lb);
			free(lb);
			if (r < 0)
				break;
			if (r == 1) {
				r = bt_item_cut(lr->fs, lr->t, &k, pos, e.size);
				cut = true;
			} else {
				r = 0;
			}
		}
		free(d);
		if (r)
			return r;
		if (!cut) { /* every name stays: on to the next item */
			if (k.offset == UINT64_MAX)
				return 0;
			at = (struct ref_key){ ino, BTRFS_XATTR_ITEM_KEY, k.offset + 1 };
		}
	}
}

/* The logged range of directory indexes [*s, *e] holding `start` or the first
 * after it: 0, 1 when there is none. */
static int dir_range(struct lr *lr, uint64_t dir, uint64_t start, uint64_t *s, uint64_t *e)
{
	struct ref_key k = { dir, BTRFS_DIR_LOG_INDEX_KEY, start };
	struct ref_path p;
	int r = ref_search_le(lr->fs, &lr->log, &k, &p);
	if (r < 0)
		return r;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			r = r == 0 ? ref_next(lr->fs, &p) : ref_search(lr->fs, &lr->log, &k, &p);
			if (r)
				return r < 0 ? r : 1;
		} else if (r) {
			continue;
		}
		struct ref_key got;
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &got, &d, &size);
		if (got.objectid != dir || got.type != BTRFS_DIR_LOG_INDEX_KEY) {
			if (pass == 1 || got.objectid > dir ||
			    (got.objectid == dir && got.type > BTRFS_DIR_LOG_INDEX_KEY)) {
				ref_path_release(lr->fs, &p);
				return 1;
			}
			continue;
		}
		if (size != 8) {
			ref_path_release(lr->fs, &p);
			return bad(lr, &got, "a DIR_LOG_INDEX item is not 8 bytes");
		}
		uint64_t end = le64(d);
		if (end < got.offset) {
			ref_path_release(lr->fs, &p);
			return bad(lr, &got, "a DIR_LOG_INDEX range ends before it starts");
		}
		if (pass == 1 || end >= start) {
			*s = got.offset;
			*e = end;
			ref_path_release(lr->fs, &p);
			return 0;
		}
	}
	ref_path_release(lr->fs, &p);
	return 1;
}

/* Whether the log holds the DIR_INDEX (dir, index) with this name. */
static int index_in_log(struct lr *lr, uint64_t dir, uint64_t index, const char *name, size_t len)
{
	struct ref_key k = { dir, BTRFS_DIR_INDEX_KEY, index };
	struct dent e;
	uint8_t *buf = NULL;
	int r = find_dent(lr, &lr->log, &k, name, len, &e, &buf);
	free(buf);
	return r < 0 ? r : r == 0;
}

/* Entries of dir within its logged ranges (all of them with all) that the
 * log lacks are unlinked (replay_dir_deletes). */
static int dir_deletes(struct lr *lr, uint64_t dir, bool all)
{
	if (MUTANT(LOG_NO_UNLINK))
		return 0;
	if (!inode_exists(lr, dir))
		return 0;
	uint64_t start = 0;
	for (;;) {
		uint64_t rs = 0, re = UINT64_MAX;
		int r = all ? 0 : dir_range(lr, dir, start, &rs, &re);
		if (r)
			return r < 0 ? r : 0;
		for (uint64_t idx = rs;;) {
			struct ref_key at = { dir, BTRFS_DIR_INDEX_KEY, idx }, k;
			uint32_t size;
			if ((r = bt_peek(lr->fs, &lr->t->root, &at, false, &k, &size)))
				return r < 0 ? r : 0;
			if (k.objectid != dir || k.type != BTRFS_DIR_INDEX_KEY)
				return 0;
			if (k.offset > re)
				break;
			uint8_t *d;
			if ((r = item_get(lr, &lr->t->root, &k, &d, &size)) < 0)
				return r;
			struct dent e;
			if (r || !dent_at(d, size, 0, &e)) {
				free(d);
				return ref_fail(lr->fs, EUCLEAN, "subvolume %llu: bad DIR_INDEX %llu of %llu",
						(unsigned long long)lr->subvol,
						(unsigned long long)k.offset, (unsigned long long)dir);
			}
			int in = all ? 0 : index_in_log(lr, dir, k.offset, e.name, e.len);
			if (in < 0) {
				free(d);
				return in;
			}
			if (!in) {
				uint64_t target = LE64(e.loc.objectid);
				if (e.loc.type != BTRFS_INODE_ITEM_KEY)
					r = ref_fail(lr->fs, EOPNOTSUPP,
						     "log replay would unlink the subvolume entry %.*s of directory %llu",
						     (int)e.len, e.name, (unsigned long long)dir);
				else if (!(r = need_inode(lr, target, &k)) && !(r = fixup_add(lr, target)))
					r = unlink_name(lr, dir, target, e.name, e.len);
			}
			free(d);
			if (r)
				return r;
			if (k.offset == UINT64_MAX)
				break;
			idx = k.offset + 1;
		}
		if (re == UINT64_MAX)
			return 0;
		start = re + 1;
	}
}

static int raw_inode_write(struct lr *lr, uint64_t ino, const struct btrfs_inode_item *ii)
{
	struct ref_key k = { ino, BTRFS_INODE_ITEM_KEY, 0 };
	return overwrite(lr, &k, ii, sizeof(*ii));
}

/* The inode item itself, with the kernel's overwrite_item rules. */
static int copy_inode(struct lr *lr, uint64_t ino, const struct btrfs_inode_item *li)
{
	struct btrfs_inode_item s = *li, d;
	struct ref_ino in = ino_of(lr, ino);
	bool dir = S_ISDIR(LE32(s.mode));
	if (!inode_exists(lr, ino)) {
		s.nbytes = 0;
		if (dir)
			s.size = 0; /* names replayed add to it */
		if (!LE64(s.generation))
			s.generation = htole64(lr->fs->rw->transid);
		return raw_inode_write(lr, ino, &s);
	}
	int r = inode_read(lr->fs, &in, &d);
	if (r)
		return r;
	if (!memcmp(&s, &d, sizeof(s)))
		return 0;
	if (!LE64(s.generation)) { /* logged only to say it exists */
		if (S_ISREG(LE32(s.mode)) && S_ISREG(LE32(d.mode)) && LE64(s.size)) {
			d.size = s.size;
			return raw_inode_write(lr, ino, &d);
		}
		return 0;
	}
	s.nbytes = d.nbytes;
	if (dir && S_ISDIR(LE32(d.mode)))
		s.size = d.size;
	return raw_inode_write(lr, ino, &s);
}

static int replay_inode(struct lr *lr, const struct ref_key *k, const uint8_t *d, uint32_t size)
{
	if (size < sizeof(struct btrfs_inode_item))
		return bad(lr, k, "inode item too small");
	struct btrfs_inode_item li;
	memcpy(&li, d, sizeof(li));
	uint64_t ino = k->objectid;
	int r = xattr_deletes(lr, ino);
	if (!r && S_ISDIR(LE32(li.mode)))
		r = dir_deletes(lr, ino, false);
	if (!r)
		r = copy_inode(lr, ino, &li);
	if (!r && S_ISREG(LE32(li.mode))) {
		/* Extents past the logged size go (a prealloc beyond it is logged). */
		struct ref_ino in = ino_of(lr, ino);
		struct btrfs_inode_item ii;
		uint64_t ss = lr->fs->sectorsize, freed = 0;
		if (!(r = inode_read(lr->fs, &in, &ii))) {
			uint64_t from = (LE64(ii.size) + ss - 1) / ss * ss;
			r = file_drop_extents(lr->fs, &in, from, UINT64_MAX, &freed);
			if (!r && freed) {
				uint64_t nb = LE64(ii.nbytes);
				ii.nbytes = htole64(nb > freed ? nb - freed : 0);
				r = inode_write(lr->fs, &in, &ii);
			}
		}
	}
	return r ? r : fixup_add(lr, ino);
}

/* ---- Stage 2: directory indexes ---- */

/* Whether the log's INODE_REF of ino in dir holds the name (stage 3 adds it). */
static int ref_in_log(struct lr *lr, uint64_t ino, uint64_t dir, const char *name, size_t len)
{
	struct ref_key k = { ino, BTRFS_INODE_REF_KEY, dir };
	uint8_t *d;
	uint32_t size;
	int r = item_get(lr, &lr->log, &k, &d, &size);
	if (r)
		return r < 0 ? r : 0;
	int found = 0;
	for (uint32_t pos = 0; pos + sizeof(struct btrfs_inode_ref) <= size;) {
		uint32_t nl = le16(d + pos + 8);
		const uint8_t *nm = d + pos + sizeof(struct btrfs_inode_ref);
		if (pos + sizeof(struct btrfs_inode_ref) + nl > size)
			break;
		if (nl == len && !memcmp(nm, name, len)) {
			found = 1;
			break;
		}
		pos += (uint32_t)sizeof(struct btrfs_inode_ref) + nl;
	}
	free(d);
	return found;
}

/* An existing entry e of dir against the logged one (target loc, type):
 * 1 when it is the same, 0 when it stays or was unlinked. */
static int conflict(struct lr *lr, uint64_t dir, const struct dent *e,
		    const struct btrfs_disk_key *loc, uint8_t type, bool target_exists,
		    const struct ref_key *why)
{
	if (!memcmp(&e->loc, loc, sizeof(*loc)) && e->type == type)
		return 1;
	if (!target_exists)
		return 0;
	uint64_t other = LE64(e->loc.objectid);
	if (e->loc.type != BTRFS_INODE_ITEM_KEY)
		return ref_fail(lr->fs, EOPNOTSUPP,
				"log replay would unlink the subvolume entry %.*s of directory %llu",
				(int)e->len, e->name, (unsigned long long)dir);
	int r = need_inode(lr, other, why);
	if (!r && !(r = fixup_add(lr, other)))
		r = unlink_name(lr, dir, other, e->name, e->len);
	return r;
}

static int replay_dir_index(struct lr *lr, const struct ref_key *k, const uint8_t *d,
			    uint32_t size)
{
	struct dent le;
	if (!dent_at(d, size, 0, &le) || le.size != size)
		return bad(lr, k, "a DIR_INDEX item is not one entry");
	uint64_t dir = k->objectid, index = k->offset, target = LE64(le.loc.objectid);
	if (le.loc.type != BTRFS_INODE_ITEM_KEY)
		return 0; /* a subvolume's entry: never logged (creating one forces a commit) */
	int r = need_inode(lr, dir, k);
	if (r)
		return r;
	bool exists = inode_exists(lr, target);
	char name[BTRFS_NAME_LEN + 1];
	size_t len = le.len < sizeof(name) ? le.len : sizeof(name) - 1;
	memcpy(name, le.name, len);
	int dm = 0, im = 0;
	struct dent e;
	uint8_t *buf = NULL;
	struct ref_key ik = { dir, BTRFS_DIR_ITEM_KEY, ref_name_hash(name, len) };
	if ((r = find_dent(lr, &lr->t->root, &ik, name, len, &e, &buf)) < 0)
		return r;
	if (r == 0)
		dm = conflict(lr, dir, &e, &le.loc, le.type, exists, k);
	free(buf);
	buf = NULL;
	if (dm < 0)
		return dm;
	if ((r = find_dent(lr, &lr->t->root, k, name, len, &e, &buf)) < 0)
		return r;
	if (r == 0)
		im = conflict(lr, dir, &e, &le.loc, le.type, exists, k);
	free(buf);
	if (im < 0)
		return im;
	if (dm && im)
		return 0;
	if ((r = ref_in_log(lr, target, dir, name, len)))
		return r < 0 ? r : 0; /* the INODE_REF replay adds it */
	if (!exists)
		return 0;
	/* Already there under its name (another index): the kernel's EEXIST, ignored. */
	buf = NULL;
	if ((r = find_dent(lr, &lr->t->root, &ik, name, len, &e, &buf)) <= 0) {
		free(buf);
		return r;
	}
	struct ref_ino din = ino_of(lr, dir), tin = ino_of(lr, target);
	if ((r = dir_add_at(lr->fs, &din, name, len, &tin, le.type, index, true)))
		return r;
	return (le.type & 7) == BTRFS_FT_DIR ? 0 : fixup_add(lr, target);
}

/* ---- Stage 3: names, xattrs, file extents ---- */

/* One name of a ref item: parent directory, index, name. */
struct rname {
	uint64_t parent, index;
	const char *name;
	uint32_t len, size;
};

static bool rname_at(const uint8_t *d, uint32_t size, uint32_t pos, bool ext, uint64_t parent,
		     struct rname *n)
{
	uint32_t hdr = ext ? sizeof(struct btrfs_inode_extref) : sizeof(struct btrfs_inode_ref);
	if (pos + hdr > size)
		return false;
	if (ext) {
		const struct btrfs_inode_extref *x = (const void *)(d + pos);
		n->parent = LE64(x->parent_objectid);
		n->index = LE64(x->index);
		n->len = LE16(x->name_len);
	} else {
		n->parent = parent;
		n->index = le64(d + pos);
		n->len = le16(d + pos + 8);
	}
	if (!n->len || n->len > BTRFS_NAME_LEN || pos + hdr + n->len > size)
		return false;
	n->name = (const char *)(d + pos + hdr);
	n->size = hdr + n->len;
	return true;
}

/* Whether the item at k of a tree (INODE_REF or INODE_EXTREF) holds (parent, name). */
static int ref_holds(struct lr *lr, const struct ref_root *root, const struct ref_key *k,
		     uint64_t parent, const char *name, size_t len)
{
	uint8_t *d;
	uint32_t size;
	int r = item_get(lr, root, k, &d, &size);
	if (r)
		return r < 0 ? r : 0;
	bool ext = k->type == BTRFS_INODE_EXTREF_KEY;
	struct rname n;
	int found = 0;
	for (uint32_t pos = 0; rname_at(d, size, pos, ext, k->offset, &n); pos += n.size)
		if (n.parent == parent && n.len == len && !memcmp(n.name, name, len)) {
			found = 1;
			break;
		}
	free(d);
	return found;
}

static void ref_key_for(uint64_t ino, bool ext, uint64_t parent, const char *name, size_t len,
			struct ref_key *k)
{
	*k = ext ? (struct ref_key){ ino, BTRFS_INODE_EXTREF_KEY, ref_extref_hash(parent, name, len) }
		 : (struct ref_key){ ino, BTRFS_INODE_REF_KEY, parent };
}

/* Names of ino in the subvolume's ref item at k that the log's item lacks
 * are unlinked (only those in `parent` when parent != 0): 1 when one was
 * (the caller looks again), 0 when none. */
static int unlink_stale(struct lr *lr, uint64_t ino, const struct ref_key *k, uint64_t parent)
{
	if (MUTANT(LOG_NO_UNLINK))
		return 0;
	uint8_t *d;
	uint32_t size;
	int r = item_get(lr, &lr->t->root, k, &d, &size);
	if (r)
		return r < 0 ? r : 0;
	bool ext = k->type == BTRFS_INODE_EXTREF_KEY;
	struct rname n;
	r = 0;
	for (uint32_t pos = 0; !r && rname_at(d, size, pos, ext, k->offset, &n); pos += n.size) {
		if (parent && n.parent != parent)
			continue;
		struct ref_key lk;
		ref_key_for(ino, ext, n.parent, n.name, n.len, &lk);
		int in = ref_holds(lr, &lr->log, &lk, n.parent, n.name, n.len);
		if (in < 0)
			r = in;
		else if (!in && !(r = need_inode(lr, n.parent, k)) &&
			 !(r = unlink_name(lr, n.parent, ino, n.name, n.len)))
			r = 1;
	}
	free(d);
	return r;
}

/* Whether dir's entry `name` at `index` names ino, in both DIR_ITEM and DIR_INDEX. */
static int inode_in_dir(struct lr *lr, uint64_t dir, uint64_t ino, uint64_t index,
			const char *name, size_t len)
{
	struct ref_key ik = { dir, BTRFS_DIR_INDEX_KEY, index };
	struct ref_key hk = { dir, BTRFS_DIR_ITEM_KEY, ref_name_hash(name, len) };
	struct dent e;
	uint8_t *buf = NULL;
	int r = find_dent(lr, &lr->t->root, &ik, name, len, &e, &buf);
	bool a = r == 0 && LE64(e.loc.objectid) == ino && e.loc.type == BTRFS_INODE_ITEM_KEY;
	free(buf);
	if (r < 0)
		return r;
	buf = NULL;
	r = find_dent(lr, &lr->t->root, &hk, name, len, &e, &buf);
	bool b = r == 0 && LE64(e.loc.objectid) == ino && e.loc.type == BTRFS_INODE_ITEM_KEY;
	free(buf);
	return r < 0 ? r : a && b;
}

/* Whatever dir's entry at key k (DIR_INDEX or DIR_ITEM) named `name` points to is unlinked. */
static int drop_entry(struct lr *lr, uint64_t dir, const struct ref_key *k, const char *name,
		      size_t len, const struct ref_key *why)
{
	struct dent e;
	uint8_t *buf = NULL;
	int r = find_dent(lr, &lr->t->root, k, name, len, &e, &buf);
	if (r) {
		free(buf);
		return r < 0 ? r : 0;
	}
	uint64_t other = LE64(e.loc.objectid);
	if (e.loc.type != BTRFS_INODE_ITEM_KEY)
		r = ref_fail(lr->fs, EOPNOTSUPP,
			     "log replay would unlink the subvolume entry %.*s of directory %llu",
			     (int)len, name, (unsigned long long)dir);
	else if (!(r = need_inode(lr, other, why)) && !(r = fixup_add(lr, other)))
		r = unlink_name(lr, dir, other, name, len);
	free(buf);
	return r ? r : 1;
}

/* Before ino gets `name` at `index` in parent: its names there that the log
 * lacks, and other entries with that name or index, go (__add_inode_ref).
 * 1: ino is the subvolume's root directory (its ".." self reference). */
static int resolve_conflicts(struct lr *lr, uint64_t ino, uint64_t parent, uint64_t index,
			     const char *name, size_t len, const struct ref_key *why)
{
	for (;;) {
		struct ref_key rk = { ino, BTRFS_INODE_REF_KEY, parent }, got;
		uint32_t size;
		int r = bt_peek(lr->fs, &lr->t->root, &rk, false, &got, &size);
		if (r < 0)
			return r;
		if (r == 0 && !ref_key_cmp(&got, &rk)) {
			if (ino == parent)
				return 1;
			if ((r = unlink_stale(lr, ino, &rk, 0)) < 0)
				return r;
			if (r == 1)
				continue;
		}
		struct ref_key xk = { ino, BTRFS_INODE_EXTREF_KEY, ref_extref_hash(parent, name, len) };
		if ((r = unlink_stale(lr, ino, &xk, parent)) < 0)
			return r;
		if (r == 1)
			continue;
		struct ref_key ik = { parent, BTRFS_DIR_INDEX_KEY, index };
		if ((r = drop_entry(lr, parent, &ik, name, len, why)) < 0)
			return r;
		if (r == 1)
			continue;
		struct ref_key hk = { parent, BTRFS_DIR_ITEM_KEY, ref_name_hash(name, len) };
		if ((r = drop_entry(lr, parent, &hk, name, len, why)) < 0)
			return r;
		if (r == 1)
			continue;
		return 0;
	}
}

static int replay_ref(struct lr *lr, const struct ref_key *k, const uint8_t *d, uint32_t size)
{
	bool ext = k->type == BTRFS_INODE_EXTREF_KEY;
	uint64_t ino = k->objectid;
	struct rname n;
	if (!rname_at(d, size, 0, ext, k->offset, &n))
		return bad(lr, k, "a back reference without a name");
	if (!inode_exists(lr, n.parent))
		return 0; /* its directory is gone: the fixup counts the rest */
	int r = need_inode(lr, ino, k);
	if (r)
		return r;
	struct ref_ino in = ino_of(lr, ino);
	struct btrfs_inode_item ii;
	if ((r = inode_read(lr->fs, &in, &ii)))
		return r;
	uint8_t type = mode_to_ft(LE32(ii.mode));
	for (uint32_t pos = 0; rname_at(d, size, pos, ext, k->offset, &n); pos += n.size) {
		if (ext && pos && !inode_exists(lr, n.parent))
			continue;
		char name[BTRFS_NAME_LEN];
		memcpy(name, n.name, n.len);
		if ((r = inode_in_dir(lr, n.parent, ino, n.index, name, n.len)) < 0)
			return r;
		if (r)
			continue;
		r = resolve_conflicts(lr, ino, n.parent, n.index, name, n.len, k);
		if (r < 0)
			return r;
		if (r == 1)
			return 0; /* the root's self reference: nothing to add */
		struct ref_ino din = ino_of(lr, n.parent);
		if ((r = dir_add_at(lr->fs, &din, name, n.len, &in, type, n.index, false)))
			return r;
	}
	/* Names of the subvolume's item that the log's lacks go, then it is the log's. */
	do
		r = unlink_stale(lr, ino, k, 0);
	while (r == 1);
	if (r < 0)
		return r;
	if ((r = overwrite(lr, k, d, size)))
		return r;
	return fixup_add(lr, ino);
}

/* Whether the extent tree holds exactly (bytenr, EXTENT_ITEM, len). */
static int extent_exists(struct lr *lr, uint64_t bytenr, uint64_t len)
{
	struct ref_root er;
	int r = ref_find_root(lr->fs, BTRFS_EXTENT_TREE_OBJECTID, &er);
	if (r)
		return r;
	struct ref_key k = { bytenr, BTRFS_EXTENT_ITEM_KEY, len }, got;
	uint32_t size;
	r = bt_peek(lr->fs, &er, &k, false, &got, &size);
	return r < 0 ? r : r == 0 && !ref_key_cmp(&got, &k);
}

/* The checksums the log holds for [start, end) replace the csum tree's. */
static int replay_csums(struct lr *lr, uint64_t start, uint64_t end)
{
	ref_fs *fs = lr->fs;
	struct ref_key k = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, start };
	struct ref_path p;
	int r = ref_search_le(fs, &lr->log, &k, &p);
	if (r == 1)
		r = ref_search(fs, &lr->log, &k, &p);
	while (r == 0) {
		struct ref_key got;
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &got, &d, &size);
		if (got.objectid != BTRFS_EXTENT_CSUM_OBJECTID || got.type != BTRFS_EXTENT_CSUM_KEY) {
			if (got.objectid > BTRFS_EXTENT_CSUM_OBJECTID ||
			    got.type > BTRFS_EXTENT_CSUM_KEY)
				break;
			r = ref_next(fs, &p);
			continue;
		}
		if (got.offset >= end)
			break;
		uint64_t n = size / fs->csum_size, s = got.offset, e = s + n * fs->sectorsize;
		uint64_t a = s > start ? s : start, b = e < end ? e : end;
		if (a < b) {
			uint64_t first = (a - s) / fs->sectorsize, cnt = (b - a) / fs->sectorsize;
			uint8_t *copy = malloc(cnt * fs->csum_size);
			if (!copy) {
				r = ref_fail(fs, ENOMEM, "out of memory");
				break;
			}
			memcpy(copy, d + first * fs->csum_size, cnt * fs->csum_size);
			r = csum_delete(fs, a, b - a);
			if (!r)
				r = csum_insert(fs, a, copy, cnt);
			free(copy);
			if (r)
				break;
		}
		r = ref_next(fs, &p);
	}
	ref_path_release(fs, &p);
	return r < 0 ? r : 0;
}

static int replay_extent(struct lr *lr, const struct ref_key *k, const uint8_t *d, uint32_t size)
{
	ref_fs *fs = lr->fs;
	if (size < FE_INLINE_HDR)
		return bad(lr, k, "file extent item too small");
	const struct btrfs_file_extent_item *fe = (const void *)d;
	uint64_t start = k->offset, end, nb;
	uint64_t ss = fs->sectorsize;
	bool inl = fe->type == BTRFS_FILE_EXTENT_INLINE;
	if (inl) {
		end = (start + LE64(fe->ram_bytes) + ss - 1) / ss * ss;
		nb = LE64(fe->ram_bytes);
	} else if (fe->type == BTRFS_FILE_EXTENT_REG || fe->type == BTRFS_FILE_EXTENT_PREALLOC) {
		if (size < FE_SIZE)
			return bad(lr, k, "file extent item too small");
		end = start + LE64(fe->num_bytes);
		nb = LE64(fe->disk_bytenr) ? LE64(fe->num_bytes) : 0;
		if (end < start || start % ss || LE64(fe->num_bytes) % ss)
			return bad(lr, k, "file extent not sector-aligned");
	} else {
		return bad(lr, k, "file extent of an unknown type");
	}
	int r = need_inode(lr, k->objectid, k);
	if (r)
		return r;
	struct ref_ino in = ino_of(lr, k->objectid);
	if (!inl) {
		uint8_t *old;
		uint32_t osize;
		if ((r = item_get(lr, &lr->t->root, k, &old, &osize)) < 0)
			return r;
		bool same = r == 0 && osize >= FE_SIZE && !memcmp(old, d, FE_SIZE);
		if (r == 0)
			free(old);
		if (same)
			return 0;
	}
	uint64_t freed = 0;
	if ((r = file_drop_extents(fs, &in, start, end, &freed)))
		return r;
	if (inl) {
		r = overwrite(lr, k, d, size);
	} else if (LE64(fe->disk_bytenr) ||
		   !(LE64(fs->sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_NO_HOLES)) {
		r = bt_insert_data(fs, lr->t, k, d, FE_SIZE);
		if (r == -EEXIST)
			r = bad(lr, k, "file extent still there after its range was dropped");
		uint64_t bytenr = LE64(fe->disk_bytenr), dlen = LE64(fe->disk_num_bytes);
		if (!r && bytenr) {
			int ex = extent_exists(lr, bytenr, dlen);
			r = ex < 0 ? ex
				   : dref_data(fs, bytenr, dlen, lr->subvol, k->objectid,
					       start - LE64(fe->offset), +1, !ex);
			if (!r) {
				uint64_t cs = fe->compression ? bytenr : bytenr + LE64(fe->offset);
				uint64_t ce = fe->compression ? bytenr + dlen : cs + LE64(fe->num_bytes);
				r = replay_csums(lr, cs, ce);
			}
		}
	}
	if (r)
		return r;
	struct btrfs_inode_item ii;
	if ((r = inode_read(fs, &in, &ii)))
		return r;
	uint64_t nbytes = LE64(ii.nbytes) + nb;
	ii.nbytes = htole64(nbytes > freed ? nbytes - freed : 0);
	return inode_write(fs, &in, &ii);
}

/* ---- The fixup: link counts recounted ---- */

static int count_names(struct lr *lr, uint64_t ino, uint32_t *count)
{
	*count = 0;
	for (int ext = 0; ext < 2; ext++) {
		uint8_t type = ext ? BTRFS_INODE_EXTREF_KEY : BTRFS_INODE_REF_KEY;
		struct ref_key k = { ino, type, 0 };
		struct ref_path p;
		int r = ref_search(lr->fs, &lr->t->root, &k, &p);
		while (r == 0) {
			const uint8_t *d;
			uint32_t size;
			ref_path_item(&p, &k, &d, &size);
			if (k.objectid != ino || k.type != type)
				break;
			struct rname n;
			for (uint32_t pos = 0; rname_at(d, size, pos, ext, k.offset, &n); pos += n.size)
				(*count)++;
			r = ref_next(lr->fs, &p);
		}
		ref_path_release(lr->fs, &p);
		if (r < 0)
			return r;
	}
	return 0;
}

static int fixup_all(struct lr *lr)
{
	while (lr->nfix) {
		size_t hi = 0;
		for (size_t i = 1; i < lr->nfix; i++)
			if (lr->fix[i] > lr->fix[hi])
				hi = i;
		uint64_t ino = lr->fix[hi];
		lr->fix[hi] = lr->fix[--lr->nfix];
		struct ref_ino in = ino_of(lr, ino);
		struct btrfs_inode_item ii;
		uint32_t n;
		int r = inode_read(lr->fs, &in, &ii);
		if (r || (r = count_names(lr, ino, &n)))
			return r;
		if (n != LE32(ii.nlink)) {
			ii.nlink = htole32(n);
			if ((r = inode_write(lr->fs, &in, &ii)))
				return r;
		}
		if (n)
			continue;
		/* No name left: what orphan cleanup does at mount, done now. */
		if (S_ISDIR(LE32(ii.mode)) && (r = dir_deletes(lr, ino, true)))
			return r;
		if ((r = inode_drop(lr->fs, &in)))
			return r;
	}
	return 0;
}

/* ---- The walk ---- */

typedef int (*stage_fn)(struct lr *, const struct ref_key *, const uint8_t *, uint32_t);

static int stage_inodes(struct lr *lr, const struct ref_key *k, const uint8_t *d, uint32_t size)
{
	return k->type == BTRFS_INODE_ITEM_KEY ? replay_inode(lr, k, d, size) : 0;
}

static int stage_dir_index(struct lr *lr, const struct ref_key *k, const uint8_t *d, uint32_t size)
{
	return k->type == BTRFS_DIR_INDEX_KEY ? replay_dir_index(lr, k, d, size) : 0;
}

static int stage_all(struct lr *lr, const struct ref_key *k, const uint8_t *d, uint32_t size)
{
	switch (k->type) {
	case BTRFS_XATTR_ITEM_KEY: return overwrite(lr, k, d, size);
	case BTRFS_INODE_REF_KEY:
	case BTRFS_INODE_EXTREF_KEY: return replay_ref(lr, k, d, size);
	case BTRFS_EXTENT_DATA_KEY: return replay_extent(lr, k, d, size);
	default: return 0; /* DIR_LOG_INDEX, EXTENT_CSUM: read where needed */
	}
}

static int walk(struct lr *lr, stage_fn fn)
{
	ref_fs *fs = lr->fs;
	uint8_t *copy = malloc(fs->nodesize);
	if (!copy)
		return ref_fail(fs, ENOMEM, "out of memory");
	struct ref_key k = { 0, 0, 0 };
	struct ref_path p;
	uint64_t skip_ino = UINT64_MAX; /* an inode logged with no links: not replayed */
	int r = ref_search(fs, &lr->log, &k, &p);
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		memcpy(copy, d, size);
		if (k.type == BTRFS_INODE_ITEM_KEY) {
			if (size < sizeof(struct btrfs_inode_item)) {
				r = bad(lr, &k, "inode item too small");
				break;
			}
			skip_ino = LE32(((const struct btrfs_inode_item *)d)->nlink) ? UINT64_MAX
										      : k.objectid;
		}
		if (k.objectid != skip_ino && (r = fn(lr, &k, copy, size)))
			break;
		r = ref_next(fs, &p);
	}
	ref_path_release(fs, &p);
	free(copy);
	return r < 0 ? r : 0;
}

int log_replay_tree(ref_fs *fs, uint64_t subvol, const struct ref_root *log)
{
	struct lr lr = { .fs = fs, .subvol = subvol, .log = *log };
	struct ref_root sr;
	int r = ref_find_root(fs, subvol, &sr);
	if (r == -ENOENT)
		return 1;
	if (r || (r = rw_tree_get(fs, subvol, &lr.t)))
		return r;
	if (!(r = walk(&lr, stage_inodes)) && !(r = walk(&lr, stage_dir_index)) &&
	    !(r = walk(&lr, stage_all)))
		r = fixup_all(&lr);
	free(lr.fix);
	return r;
}
