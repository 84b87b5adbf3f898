/*
 * dir.c - directory entries and inode back references: a name lives in its
 * directory as a DIR_ITEM (keyed by the name's hash, shared by colliding
 * names) and a DIR_INDEX (keyed by a sequence number: readdir order), and in
 * its inode as an INODE_REF entry (per parent directory), or an INODE_EXTREF
 * (keyed by parent and name hash) once the INODE_REF item is full, as with
 * thousands of hard links.
 */
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <stdlib.h>

#define DIR_ENTRY sizeof(struct btrfs_dir_item)
#define IREF_ENTRY sizeof(struct btrfs_inode_ref)
#define EXTREF_ENTRY sizeof(struct btrfs_inode_extref)

static void fill_dir_entry(uint8_t *buf, const struct ref_ino *target, uint8_t type,
			   uint64_t transid, const char *name, size_t len)
{
	struct btrfs_dir_item di;
	memset(&di, 0, sizeof(di));
	if (target->ino == BTRFS_FIRST_FREE_OBJECTID && type == BTRFS_FT_DIR &&
	    target->subvol != BTRFS_FS_TREE_OBJECTID) {
		di.location.objectid = htole64(target->subvol);
		di.location.type = BTRFS_ROOT_ITEM_KEY;
		di.location.offset = htole64(UINT64_MAX);
	} else {
		di.location.objectid = htole64(target->ino);
		di.location.type = BTRFS_INODE_ITEM_KEY;
	}
	di.transid = htole64(transid);
	di.name_len = htole16((uint16_t)len);
	di.type = type;
	memcpy(buf, &di, sizeof(di));
	memcpy(buf + sizeof(di), name, len);
}

static int next_index(ref_fs *fs, struct rw_tree *t, uint64_t dir, uint64_t *index)
{
	struct ref_path p;
	struct ref_key k = { dir, BTRFS_DIR_INDEX_KEY, UINT64_MAX };
	int r = ref_search_le(fs, &t->root, &k, &p);
	if (r < 0)
		return r;
	*index = 2; /* 0 and 1 are "." and ".." */
	if (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		ref_path_release(fs, &p);
		if (k.objectid == dir && k.type == BTRFS_DIR_INDEX_KEY)
			*index = k.offset + 1;
	}
	uint64_t *cnt = u64map_get(&t->dir_index, dir, true);
	if (!cnt)
		return ref_fail(fs, ENOMEM, "out of memory");
	if (*cnt > *index)
		*index = *cnt;
	*cnt = *index + 1;
	return 0;
}

static int backref_add(ref_fs *fs, struct rw_tree *t, const struct ref_ino *target, uint64_t dir,
		       uint64_t index, const char *name, size_t len)
{
	uint8_t buf[EXTREF_ENTRY + BTRFS_NAME_LEN];
	struct btrfs_inode_ref ir = { htole64(index), htole16((uint16_t)len) };
	memcpy(buf, &ir, IREF_ENTRY);
	memcpy(buf + IREF_ENTRY, name, len);
	struct ref_key k = { target->ino, BTRFS_INODE_REF_KEY, dir };
	int r = bt_item_append(fs, t, &k, buf, (uint32_t)(IREF_ENTRY + len));
	if (r != -EOVERFLOW)
		return r;
	if (!(LE64(fs->sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_EXTENDED_IREF))
		return ref_fail(fs, EMLINK, "too many links in one directory without extended irefs");
	struct btrfs_inode_extref xr;
	xr.parent_objectid = htole64(dir);
	xr.index = htole64(index);
	xr.name_len = htole16((uint16_t)len);
	memcpy(buf, &xr, EXTREF_ENTRY);
	memcpy(buf + EXTREF_ENTRY, name, len);
	struct ref_key xk = { target->ino, BTRFS_INODE_EXTREF_KEY, ref_extref_hash(dir, name, len) };
	r = bt_item_append(fs, t, &xk, buf, (uint32_t)(EXTREF_ENTRY + len));
	return r == -EOVERFLOW ? ref_fail(fs, EMLINK, "too many colliding links") : r;
}

/* A subvolume's name in a directory of another: ROOT_REF (parent -> child)
 * and ROOT_BACKREF (child -> parent) in the root tree, as btrfs_add_root_ref. */
static int root_refs_add(ref_fs *fs, uint64_t parent, uint64_t child, uint64_t dirid,
			 uint64_t index, const char *name, size_t len)
{
	struct rw_tree *rt;
	int r = rw_tree_get(fs, BTRFS_ROOT_TREE_OBJECTID, &rt);
	if (r)
		return r;
	uint8_t buf[sizeof(struct btrfs_root_ref) + BTRFS_NAME_LEN];
	struct btrfs_root_ref rr = { htole64(dirid), htole64(index), htole16((uint16_t)len) };
	memcpy(buf, &rr, sizeof(rr));
	memcpy(buf + sizeof(rr), name, len);
	uint32_t size = (uint32_t)(sizeof(rr) + len);
	struct ref_key fwd = { parent, BTRFS_ROOT_REF_KEY, child };
	struct ref_key back = { child, BTRFS_ROOT_BACKREF_KEY, parent };
	if ((r = bt_insert_data(fs, rt, &fwd, buf, size)) ||
	    (r = bt_insert_data(fs, rt, &back, buf, size)))
		return r == -EEXIST ? ref_fail(fs, EUCLEAN, "subvolume %llu is linked already",
					       (unsigned long long)child)
				    : r;
	return 0;
}

/* Both go again, as btrfs_del_root_ref. */
static int root_refs_remove(ref_fs *fs, uint64_t parent, uint64_t child)
{
	struct rw_tree *rt;
	int r = rw_tree_get(fs, BTRFS_ROOT_TREE_OBJECTID, &rt);
	if (r)
		return r;
	struct ref_key fwd = { parent, BTRFS_ROOT_REF_KEY, child };
	struct ref_key back = { child, BTRFS_ROOT_BACKREF_KEY, parent };
	if ((r = bt_delete_key(fs, rt, &fwd)) || (r = bt_delete_key(fs, rt, &back)))
		return r == -ENOENT ? ref_fail(fs, EUCLEAN, "subvolume %llu is not linked in %llu",
					       (unsigned long long)child, (unsigned long long)parent)
				    : r;
	return 0;
}

/* Whether the entry of target in dir names a subvolume's root (not a stand-in). */
static bool subvol_entry(const struct ref_ino *dir, const struct ref_ino *target)
{
	return target->subvol != dir->subvol;
}

int dir_add(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
	    const struct ref_ino *target, uint8_t type)
{
	uint64_t index;
	return dir_add_index(fs, dir, name, len, target, type, &index);
}

/* Adds the entry at `index` (0: the next free one): the back reference
 * when backref, then DIR_ITEM and DIR_INDEX, and the directory's size; its
 * times when touch. */
static int link_name(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
		     const struct ref_ino *target, uint8_t type, uint64_t *index, bool backref,
		     bool touch)
{
	struct rw_tree *t;
	int r = rw_tree_get(fs, dir->subvol, &t);
	if (r)
		return r;
	struct btrfs_inode_item dii;
	if ((r = inode_read(fs, dir, &dii)) || (!*index && (r = next_index(fs, t, dir->ino, index))))
		return r;
	/* The back reference first, as the kernel's btrfs_add_link: EMLINK (its
	 * item full and no extended irefs) must fail before anything changed. */
	if (!backref)
		r = 0;
	else if (type == BTRFS_FT_DIR && subvol_entry(dir, target))
		r = root_refs_add(fs, dir->subvol, target->subvol, dir->ino, *index, name, len);
	else
		r = backref_add(fs, t, target, dir->ino, *index, name, len);
	if (r)
		return r;
	uint8_t buf[DIR_ENTRY + BTRFS_NAME_LEN];
	fill_dir_entry(buf, target, type, fs->rw->transid, name, len);
	uint32_t esize = (uint32_t)(DIR_ENTRY + len);
	struct ref_key k = { dir->ino, BTRFS_DIR_ITEM_KEY, ref_name_hash(name, len) };
	if ((r = bt_item_append(fs, t, &k, buf, esize)))
		return r == -EOVERFLOW ? ref_fail(fs, EOVERFLOW, "too many names share this hash") : r;
	struct ref_key ik = { dir->ino, BTRFS_DIR_INDEX_KEY, *index };
	if ((r = bt_insert_data(fs, t, &ik, buf, esize)))
		return r == -EEXIST ? ref_fail(fs, EUCLEAN, "directory index %llu taken",
					       (unsigned long long)*index)
				    : r;
	dii.size = htole64(LE64(dii.size) + 2 * len);
	if (touch)
		inode_touch(fs, &dii, true, true);
	return inode_write(fs, dir, &dii);
}

int dir_add_index(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
		  const struct ref_ino *target, uint8_t type, uint64_t *index_out)
{
	*index_out = 0;
	return link_name(fs, dir, name, len, target, type, index_out, true, true);
}

int dir_add_at(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
	       const struct ref_ino *target, uint8_t type, uint64_t index, bool backref)
{
	if (!index)
		return ref_fail(fs, EUCLEAN, "directory index 0 is not an entry's");
	return link_name(fs, dir, name, len, target, type, &index, backref, false);
}

int dir_item_find(ref_fs *fs, const struct ref_root *root, const struct ref_key *k,
		  const char *name, size_t len, uint32_t *off, uint32_t *esize, uint8_t *value,
		  size_t *vlen)
{
	struct ref_path p;
	int r = ref_search(fs, root, k, &p);
	if (r)
		return r == 1 ? -ENOENT : r;
	struct ref_key got;
	const uint8_t *d;
	uint32_t size;
	ref_path_item(&p, &got, &d, &size);
	r = -ENOENT;
	for (uint32_t pos = 0; !ref_key_cmp(&got, k) && pos + DIR_ENTRY <= size;) {
		const struct btrfs_dir_item *di = (const void *)(d + pos);
		uint32_t nl = LE16(di->name_len), dl = LE16(di->data_len);
		if (pos + DIR_ENTRY + nl + dl > size)
			break;
		if (nl == len && !memcmp(d + pos + DIR_ENTRY, name, len)) {
			*off = pos;
			*esize = (uint32_t)DIR_ENTRY + nl + dl;
			if (vlen)
				*vlen = dl;
			if (value)
				memcpy(value, d + pos + DIR_ENTRY + nl, dl);
			r = 0;
			break;
		}
		pos += (uint32_t)DIR_ENTRY + nl + dl;
	}
	ref_path_release(fs, &p);
	return r;
}

/* Removes the back reference of name in dir from target; *index gets it. */
static int backref_remove(ref_fs *fs, struct rw_tree *t, const struct ref_ino *target,
			  uint64_t dir, const char *name, size_t len, uint64_t *index)
{
	struct ref_key k = { target->ino, BTRFS_INODE_REF_KEY, dir };
	struct ref_path p;
	int r = bt_search(fs, t, &k, &p, -1, false);
	if (r < 0)
		return r;
	if (r == 0) {
		uint32_t size, found = UINT32_MAX, esize = 0;
		const uint8_t *d = bt_item(&p, &size);
		for (uint32_t pos = 0; pos + IREF_ENTRY <= size;) {
			uint32_t nl = le16(d + pos + 8);
			if (pos + IREF_ENTRY + nl > size)
				break;
			if (nl == len && !memcmp(d + pos + IREF_ENTRY, name, len)) {
				found = pos;
				esize = (uint32_t)IREF_ENTRY + nl;
				*index = le64(d + pos);
				break;
			}
			pos += (uint32_t)IREF_ENTRY + nl;
		}
		ref_path_release(fs, &p);
		if (found != UINT32_MAX)
			return bt_item_cut(fs, t, &k, found, esize);
	} else {
		ref_path_release(fs, &p);
	}
	struct ref_key xk = { target->ino, BTRFS_INODE_EXTREF_KEY, ref_extref_hash(dir, name, len) };
	if ((r = bt_search(fs, t, &xk, &p, -1, false)) != 0) {
		ref_path_release(fs, &p);
		return r < 0 ? r : ref_fail(fs, EUCLEAN, "inode %llu has no back reference for a name",
					    (unsigned long long)target->ino);
	}
	uint32_t size, found = UINT32_MAX, esize = 0;
	const uint8_t *d = bt_item(&p, &size);
	for (uint32_t pos = 0; pos + EXTREF_ENTRY <= size;) {
		const struct btrfs_inode_extref *x = (const void *)(d + pos);
		uint32_t nl = LE16(x->name_len);
		if (pos + EXTREF_ENTRY + nl > size)
			break;
		if (LE64(x->parent_objectid) == dir && nl == len &&
		    !memcmp(d + pos + EXTREF_ENTRY, name, len)) {
			found = pos;
			esize = (uint32_t)EXTREF_ENTRY + nl;
			*index = LE64(x->index);
			break;
		}
		pos += (uint32_t)EXTREF_ENTRY + nl;
	}
	ref_path_release(fs, &p);
	if (found == UINT32_MAX)
		return ref_fail(fs, EUCLEAN, "inode %llu has no back reference for a name",
				(unsigned long long)target->ino);
	return bt_item_cut(fs, t, &xk, found, esize);
}

struct index_search {
	const char *name;
	size_t len;
	uint64_t index;
};

static int match_index(void *ctx, const struct ref_dirent *de)
{
	struct index_search *is = ctx;
	if (de->len != is->len || memcmp(de->name, is->name, is->len))
		return 0;
	is->index = de->index;
	return 1; /* found: stop */
}

/* The DIR_INDEX of a name, by reading the directory (for subvolume entries,
 * which have no inode back reference here). */
static int index_of(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
		    uint64_t *index)
{
	struct index_search is = { name, len, 0 };
	int r = ref_readdir(fs, dir, match_index, &is);
	if (r >= 0 && is.index) { /* (the walk ends quietly when the callback stops it) */
		*index = is.index;
		return 0;
	}
	return r < 0 ? r : ref_fail(fs, EUCLEAN, "directory %llu: no index for a name",
				    (unsigned long long)dir->ino);
}

int dir_remove(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
	       const struct ref_ino *target)
{
	uint64_t index;
	return dir_remove_at(fs, dir, name, len, target, &index);
}

int dir_remove_at(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
		  const struct ref_ino *target, uint64_t *index_out)
{
	struct rw_tree *t;
	int r = rw_tree_get(fs, dir->subvol, &t);
	if (r)
		return r;
	struct btrfs_inode_item dii;
	if ((r = inode_read(fs, dir, &dii)))
		return r;
	struct ref_key k = { dir->ino, BTRFS_DIR_ITEM_KEY, ref_name_hash(name, len) };
	uint32_t off, esize;
	if ((r = dir_item_find(fs, &t->root, &k, name, len, &off, &esize, NULL, NULL)))
		return r == -ENOENT ? ref_fail(fs, ENOENT, "%.*s: no such entry", (int)len, name) : r;
	uint64_t index = 0;
	if (!subvol_entry(dir, target) && !vfs_is_standin(target))
		r = backref_remove(fs, t, target, dir->ino, name, len, &index);
	else if (!(r = index_of(fs, dir, name, len, &index)) && subvol_entry(dir, target))
		r = root_refs_remove(fs, dir->subvol, target->subvol);
	if (r || (r = bt_item_cut(fs, t, &k, off, esize)))
		return r;
	struct ref_key ik = { dir->ino, BTRFS_DIR_INDEX_KEY, index };
	if ((r = bt_delete_key(fs, t, &ik)))
		return r == -ENOENT ? ref_fail(fs, EUCLEAN, "directory index %llu missing",
					       (unsigned long long)index)
				    : r;
	dii.size = htole64(LE64(dii.size) - 2 * len);
	inode_touch(fs, &dii, true, true);
	*index_out = index;
	return inode_write(fs, dir, &dii);
}

int dir_is_empty(ref_fs *fs, const struct ref_ino *dir)
{
	struct ref_root root;
	int r = ref_find_root(fs, dir->subvol, &root);
	if (r)
		return r;
	struct ref_path p;
	struct ref_key k;
	const uint8_t *d;
	uint32_t size;
	r = ref_find_first(fs, &root, dir->ino, BTRFS_DIR_INDEX_KEY, &p, &k, &d, &size);
	if (r == -ENOENT)
		return 1;
	if (r)
		return r;
	ref_path_release(fs, &p);
	return 0;
}
