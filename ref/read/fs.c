/*
 * fs.c - the namespace: subvolume roots, inode items, directory lookup and
 * listing, symlinks and xattrs.  Every item is bounds-checked before use.
 */
#include "ref/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

static int root_of(ref_fs *fs, uint64_t subvol, struct ref_root *out)
{
	if (fs->rw) /* roots move while writing: always the live one */
		return ref_find_root(fs, subvol, out);
	for (size_t i = 0; i < fs->nroots; i++)
		if (fs->roots[i].id == subvol) {
			*out = fs->roots[i];
			return 0;
		}
	int r = ref_find_root(fs, subvol, out);
	if (r)
		return r;
	fs->roots[fs->roots_next] = *out;
	fs->roots_next = (fs->roots_next + 1) % 16;
	if (fs->nroots < 16)
		fs->nroots++;
	return 0;
}

static bool is_subvol_id(uint64_t id)
{
	return id == BTRFS_FS_TREE_OBJECTID ||
	       (id >= BTRFS_FIRST_FREE_OBJECTID && id <= BTRFS_LAST_FREE_OBJECTID);
}

int ref_subvol_root(ref_fs *fs, uint64_t subvol, struct ref_ino *out)
{
	if (!is_subvol_id(subvol))
		return ref_fail(fs, EINVAL, "tree %llu is not a subvolume", (unsigned long long)subvol);
	struct ref_root root;
	int r = root_of(fs, subvol, &root);
	if (r)
		return r;
	*out = (struct ref_ino){ subvol, BTRFS_FIRST_FREE_OBJECTID };
	return 0;
}

int ref_subvol_info(ref_fs *fs, uint64_t subvol, struct ref_subvol_info *out)
{
	struct ref_path path;
	struct ref_key k;
	const uint8_t *data;
	uint32_t size;
	struct ref_root tr;
	int r = ref_find_root(fs, BTRFS_ROOT_TREE_OBJECTID, &tr);
	if (r)
		return r;
	r = ref_find_first(fs, &tr, subvol, BTRFS_ROOT_ITEM_KEY, &path, &k, &data, &size);
	if (r && r != -ENOENT)
		return r;
	if (r || size < btrfs_legacy_root_item_size()) {
		if (!r)
			ref_path_release(fs, &path);
		return ref_fail(fs, ENOENT, "no subvolume %llu", (unsigned long long)subvol);
	}
	const struct btrfs_root_item *ri = (const void *)data;
	memset(out, 0, sizeof(*out));
	out->id = subvol;
	out->flags = LE64(ri->flags);
	out->generation = LE64(ri->generation);
	out->last_snapshot = LE64(ri->last_snapshot);
	out->refs = LE32(ri->refs);
	if (size >= sizeof(*ri)) {
		memcpy(out->uuid, ri->uuid, BTRFS_UUID_SIZE);
		memcpy(out->parent_uuid, ri->parent_uuid, BTRFS_UUID_SIZE);
		memcpy(out->received_uuid, ri->received_uuid, BTRFS_UUID_SIZE);
		out->ctransid = LE64(ri->ctransid);
		out->otransid = LE64(ri->otransid);
		out->otime = (struct timespec){ (time_t)LE64(ri->otime.sec), LE32(ri->otime.nsec) };
		out->ctime = (struct timespec){ (time_t)LE64(ri->ctime.sec), LE32(ri->ctime.nsec) };
		out->stransid = LE64(ri->stransid);
		out->rtransid = LE64(ri->rtransid);
		out->stime = (struct timespec){ (time_t)LE64(ri->stime.sec), LE32(ri->stime.nsec) };
		out->rtime = (struct timespec){ (time_t)LE64(ri->rtime.sec), LE32(ri->rtime.nsec) };
	}
	ref_path_release(fs, &path);
	r = ref_find_first(fs, &tr, subvol, BTRFS_ROOT_BACKREF_KEY, &path, &k, &data, &size);
	if (r == 0) {
		out->parent = k.offset;
		out->dirid = size >= 8 ? le64(data) : 0;
		ref_path_release(fs, &path);
	}
	return r == -ENOENT ? 0 : r;
}

/* Finds the item with exactly this key in a subvolume's tree; the path holds it. */
static int find_exact(ref_fs *fs, uint64_t subvol, const struct ref_key *key, struct ref_path *path,
		      const uint8_t **data, uint32_t *size)
{
	struct ref_root root;
	int r = root_of(fs, subvol, &root);
	if (r)
		return r;
	r = ref_search(fs, &root, key, path);
	if (r < 0)
		return r;
	struct ref_key k;
	if (r == 0) {
		ref_path_item(path, &k, data, size);
		if (!ref_key_cmp(&k, key))
			return 0;
		ref_path_release(fs, path);
	}
	return -ENOENT;
}

static void ts(struct timespec *t, const struct btrfs_timespec *d)
{
	t->tv_sec = (time_t)LE64(d->sec);
	t->tv_nsec = (long)LE32(d->nsec);
}

int ref_stat(ref_fs *fs, const struct ref_ino *ino, struct ref_stat *st)
{
	if (ino->ino == BTRFS_EMPTY_SUBVOL_DIR_OBJECTID) { /* a snapshot's stand-in */
		*st = (struct ref_stat){ .nlink = 1, .mode = 040755 };
		return 0;
	}
	struct ref_path path;
	const uint8_t *data;
	uint32_t size;
	struct ref_key key = { ino->ino, BTRFS_INODE_ITEM_KEY, 0 };
	int r = find_exact(fs, ino->subvol, &key, &path, &data, &size);
	if (r == -ENOENT)
		return ref_fail(fs, ENOENT, "subvolume %llu: no inode %llu",
				(unsigned long long)ino->subvol, (unsigned long long)ino->ino);
	if (r)
		return r;
	if (size < sizeof(struct btrfs_inode_item)) {
		ref_path_release(fs, &path);
		return ref_fail(fs, EUCLEAN, "subvolume %llu inode %llu: inode item is %u bytes",
				(unsigned long long)ino->subvol, (unsigned long long)ino->ino, size);
	}
	const struct btrfs_inode_item *ii = (const void *)data;
	*st = (struct ref_stat){
		.size = LE64(ii->size), .nbytes = LE64(ii->nbytes), .rdev = LE64(ii->rdev),
		.flags = LE64(ii->flags), .generation = LE64(ii->generation),
		.transid = LE64(ii->transid), .sequence = LE64(ii->sequence),
		.nlink = LE32(ii->nlink), .uid = LE32(ii->uid), .gid = LE32(ii->gid),
		.mode = LE32(ii->mode),
	};
	ts(&st->atime, &ii->atime);
	ts(&st->mtime, &ii->mtime);
	ts(&st->ctime, &ii->ctime);
	ts(&st->otime, &ii->otime);
	ref_path_release(fs, &path);
	return 0;
}

int ref_stat_in(ref_fs *fs, const struct ref_ino *dir, const struct ref_ino *ino,
		struct ref_stat *st)
{
	int r = ref_stat(fs, ino, st);
	if (r || ino->ino != BTRFS_EMPTY_SUBVOL_DIR_OBJECTID)
		return r;
	struct ref_stat ds;
	if ((r = ref_stat(fs, dir, &ds)))
		return r;
	st->uid = ds.uid;
	st->gid = ds.gid;
	return 0;
}

/* Walks the dir_item entries packed in one DIR_ITEM/DIR_INDEX/XATTR_ITEM item.
 * Returns -EUCLEAN when an entry runs past the item. */
typedef int (*entry_fn)(void *ctx, const struct btrfs_dir_item *di, const char *name,
			const uint8_t *value);
static int for_each_entry(ref_fs *fs, const struct ref_key *k, const uint8_t *data, uint32_t size,
			  entry_fn fn, void *ctx)
{
	uint32_t pos = 0;
	while (pos < size) {
		const struct btrfs_dir_item *di = (const void *)(data + pos);
		if (size - pos < sizeof(*di))
			goto bad;
		uint32_t nl = LE16(di->name_len), dl = LE16(di->data_len);
		if (nl == 0 || nl > BTRFS_NAME_LEN || size - pos - sizeof(*di) < nl + dl)
			goto bad;
		const char *name = (const char *)(di + 1);
		int r = fn(ctx, di, name, (const uint8_t *)name + nl);
		if (r)
			return r;
		pos += (uint32_t)sizeof(*di) + nl + dl;
	}
	return 0;
bad:
	return ref_fail(fs, EUCLEAN, "item (%llu %u %llu): directory entry runs past the item",
			(unsigned long long)k->objectid, k->type, (unsigned long long)k->offset);
}

struct lookup_ctx {
	const char *name;
	size_t len;
	struct btrfs_disk_key location;
	uint8_t type;
	bool found;
};

static int lookup_entry(void *ctx, const struct btrfs_dir_item *di, const char *name,
			const uint8_t *value)
{
	struct lookup_ctx *lc = ctx;
	(void)value;
	if (LE16(di->name_len) != lc->len || memcmp(name, lc->name, lc->len))
		return 0;
	lc->location = di->location;
	lc->type = di->type;
	lc->found = true;
	return 1;
}

/* Where a directory entry leads: an inode of the same subvolume, or the root of another. */
/* Whether subvolume `child` hangs at name in directory dir: a ROOT_REF
 * (dir's subvolume, child) naming dir and name.  A snapshot copies the
 * entries of the subvolumes below its source without such a ROOT_REF; the
 * kernel shows those as empty directories, and so does ref. */
static int subvol_linked(ref_fs *fs, const struct ref_ino *dir, uint64_t child, const char *name,
			 size_t len)
{
	struct ref_root tr;
	int r = ref_find_root(fs, BTRFS_ROOT_TREE_OBJECTID, &tr);
	if (r)
		return r;
	struct ref_path path;
	struct ref_key k = { dir->subvol, BTRFS_ROOT_REF_KEY, child };
	if ((r = ref_search(fs, &tr, &k, &path)) < 0)
		return r;
	if (r == 1)
		return 0;
	const uint8_t *d;
	uint32_t size;
	struct ref_key got;
	ref_path_item(&path, &got, &d, &size);
	bool linked = !ref_key_cmp(&got, &k) && size >= sizeof(struct btrfs_root_ref) &&
		      LE64(((const struct btrfs_root_ref *)d)->dirid) == dir->ino &&
		      LE16(((const struct btrfs_root_ref *)d)->name_len) == len &&
		      size >= sizeof(struct btrfs_root_ref) + len &&
		      !memcmp(d + sizeof(struct btrfs_root_ref), name, len);
	ref_path_release(fs, &path);
	return linked;
}

static int entry_target(ref_fs *fs, const struct ref_ino *dir, const struct btrfs_disk_key *loc,
			const char *name, size_t len, bool open_root, struct ref_ino *out)
{
	if (loc->type == BTRFS_ROOT_ITEM_KEY) {
		uint64_t child = LE64(loc->objectid);
		int r = subvol_linked(fs, dir, child, name, len);
		if (r < 0)
			return r;
		if (!r) { /* the kernel's empty stand-in directory */
			*out = (struct ref_ino){ dir->subvol, BTRFS_EMPTY_SUBVOL_DIR_OBJECTID };
			return 0;
		}
		if (!open_root) {
			*out = (struct ref_ino){ child, BTRFS_FIRST_FREE_OBJECTID };
			return 0;
		}
		return ref_subvol_root(fs, child, out);
	}
	if (loc->type != BTRFS_INODE_ITEM_KEY)
		return ref_fail(fs, EUCLEAN, "subvolume %llu dir %llu: entry points to key type %u",
				(unsigned long long)dir->subvol, (unsigned long long)dir->ino,
				loc->type);
	*out = (struct ref_ino){ dir->subvol, LE64(loc->objectid) };
	return 0;
}

int ref_lookup(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
	       struct ref_ino *out, uint8_t *type)
{
	if (len == 0 || len > BTRFS_NAME_LEN)
		return ref_fail(fs, len ? ENAMETOOLONG : ENOENT, "bad name length %zu", len);
	struct ref_path path;
	const uint8_t *data;
	uint32_t size;
	struct ref_key key = { dir->ino, BTRFS_DIR_ITEM_KEY, ref_name_hash(name, len) };
	int r = find_exact(fs, dir->subvol, &key, &path, &data, &size);
	if (r == -ENOENT)
		return ref_fail(fs, ENOENT, "%.*s: no such file or directory", (int)len, name);
	if (r)
		return r;
	struct lookup_ctx lc = { name, len, { 0 }, 0, false };
	r = for_each_entry(fs, &key, data, size, lookup_entry, &lc);
	ref_path_release(fs, &path);
	if (r < 0)
		return r;
	if (!lc.found)
		return ref_fail(fs, ENOENT, "%.*s: no such file or directory", (int)len, name);
	if (type)
		*type = lc.type;
	return entry_target(fs, dir, &lc.location, name, len, true, out);
}

/* The parent of a directory: INODE_REF's offset, or for a subvolume root the
 * directory holding it (ROOT_BACKREF in the root tree). */
static int parent_of(ref_fs *fs, const struct ref_ino *ino, struct ref_ino *out)
{
	if (ino->ino == BTRFS_FIRST_FREE_OBJECTID) {
		if (ino->subvol == BTRFS_FS_TREE_OBJECTID) {
			*out = *ino; /* the top of everything: '..' stays */
			return 0;
		}
		struct ref_path path;
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		int r = ref_find_first(fs, &fs->tree_root, ino->subvol, BTRFS_ROOT_BACKREF_KEY, &path, &k,
				       &data, &size);
		if (r && r != -ENOENT)
			return r;
		if (r || size < sizeof(struct btrfs_root_ref)) {
			if (!r)
				ref_path_release(fs, &path);
			return ref_fail(fs, ENOENT, "subvolume %llu has no parent",
					(unsigned long long)ino->subvol);
		}
		const struct btrfs_root_ref *rr = (const void *)data;
		*out = (struct ref_ino){ k.offset, LE64(rr->dirid) };
		ref_path_release(fs, &path);
		return 0;
	}
	struct ref_root root;
	int r = root_of(fs, ino->subvol, &root);
	if (r)
		return r;
	struct ref_path path;
	struct ref_key k;
	const uint8_t *data;
	uint32_t size;
	r = ref_find_first(fs, &root, ino->ino, BTRFS_INODE_REF_KEY, &path, &k, &data, &size);
	if (r == -ENOENT)
		return ref_fail(fs, ENOENT, "inode %llu has no parent reference",
				(unsigned long long)ino->ino);
	if (r)
		return r;
	ref_path_release(fs, &path);
	*out = (struct ref_ino){ ino->subvol, k.offset };
	return 0;
}

int ref_resolve(ref_fs *fs, const struct ref_ino *start, const char *path, struct ref_ino *out)
{
	struct ref_ino cur = *start;
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = p;
		while (*e && *e != '/')
			e++;
		size_t len = (size_t)(e - p);
		int r = 0;
		if (len == 0 || (len == 1 && p[0] == '.')) {
			/* nothing */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			r = parent_of(fs, &cur, &cur);
		} else {
			struct ref_stat st;
			r = ref_stat(fs, &cur, &st);
			if (!r && !S_ISDIR(st.mode))
				r = ref_fail(fs, ENOTDIR, "%.*s: not a directory", (int)(p - path),
					     path);
			if (!r)
				r = ref_lookup(fs, &cur, p, len, &cur, NULL);
		}
		if (r)
			return r;
		p = e;
	}
	*out = cur;
	return 0;
}

struct readdir_ctx {
	ref_fs *fs;
	const struct ref_ino *dir;
	uint64_t index;
	ref_dirent_fn fn;
	void *ctx;
};

static int readdir_entry(void *ctx, const struct btrfs_dir_item *di, const char *name,
			 const uint8_t *value)
{
	struct readdir_ctx *rc = ctx;
	(void)value;
	struct ref_dirent de = { name, LE16(di->name_len), { 0, 0 }, di->type, rc->index };
	/* A subvolume entry gives its root without opening it. */
	int r = entry_target(rc->fs, rc->dir, &di->location, name, de.len, false, &de.ino);
	if (r)
		return r;
	return rc->fn(rc->ctx, &de);
}

/* Calls fn for every dir_item entry of the items (ino, type, *) in key order;
 * *offset (when not NULL) holds the key offset of the item being walked. */
static int for_each_item_entry(ref_fs *fs, const struct ref_ino *ino, uint8_t type, entry_fn fn,
			       void *ctx, uint64_t *offset)
{
	struct ref_root root;
	int r = root_of(fs, ino->subvol, &root);
	if (r)
		return r;
	struct ref_path path;
	struct ref_key key = { ino->ino, type, 0 };
	r = ref_search(fs, &root, &key, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.objectid != ino->ino || k.type != type)
			break;
		if (offset)
			*offset = k.offset;
		r = for_each_entry(fs, &k, data, size, fn, ctx);
		if (r)
			break;
		r = ref_next(fs, &path);
	}
	ref_path_release(fs, &path);
	return r == 1 ? 0 : r;
}

int ref_readdir(ref_fs *fs, const struct ref_ino *dir, ref_dirent_fn fn, void *ctx)
{
	struct readdir_ctx rc = { fs, dir, 0, fn, ctx };
	return for_each_item_entry(fs, dir, BTRFS_DIR_INDEX_KEY, readdir_entry, &rc, &rc.index);
}

ssize_t ref_readlink(ref_fs *fs, const struct ref_ino *ino, char *buf, size_t len)
{
	struct ref_stat st;
	int r = ref_stat(fs, ino, &st);
	if (r)
		return r;
	if (!S_ISLNK(st.mode))
		return ref_fail(fs, EINVAL, "inode %llu is not a symlink", (unsigned long long)ino->ino);
	if (!len)
		return ref_fail(fs, EINVAL, "no room for the target");
	size_t want = st.size < len - 1 ? (size_t)st.size : len - 1;
	ssize_t n = ref_pread(fs, ino, buf, want, 0);
	if (n < 0)
		return n;
	buf[n] = '\0';
	return n;
}

struct xattr_ctx {
	ref_xattr_fn fn;
	void *ctx;
};

static int xattr_entry(void *ctx, const struct btrfs_dir_item *di, const char *name,
		       const uint8_t *value)
{
	struct xattr_ctx *xc = ctx;
	return xc->fn(xc->ctx, name, LE16(di->name_len), value, LE16(di->data_len));
}

int ref_listxattr(ref_fs *fs, const struct ref_ino *ino, ref_xattr_fn fn, void *ctx)
{
	struct xattr_ctx xc = { fn, ctx };
	return for_each_item_entry(fs, ino, BTRFS_XATTR_ITEM_KEY, xattr_entry, &xc, NULL);
}
