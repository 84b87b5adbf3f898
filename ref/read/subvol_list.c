/*
 * subvol_list.c - reading the subvolume namespace: which subvolumes are
 * linked (ROOT_BACKREF items of the root tree), the path of each from the
 * top level, and the default subvolume, for `btrsim subvolume list`,
 * `show` and `get-default`.
 */
#include "ref/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 4096 /* path components: a loop in a corrupt image ends here */

/* Prepends "name/" to the path being built backwards in buf[*at..]. */
static int prepend(ref_fs *fs, char *buf, size_t *at, const char *name, size_t len)
{
	if (len + 1 > *at)
		return ref_fail(fs, ENAMETOOLONG, "subvolume path too long");
	*at -= len + 1;
	memcpy(buf + *at, name, len);
	buf[*at + len] = '/';
	return 0;
}

/* A directory's path inside its subvolume, prepended. */
static int dir_path(ref_fs *fs, uint64_t subvol, uint64_t ino, char *buf, size_t *at)
{
	struct ref_root root;
	int r = ref_find_root(fs, subvol, &root);
	for (int depth = 0; !r && ino != BTRFS_FIRST_FREE_OBJECTID; depth++) {
		if (depth == MAX_DEPTH)
			return ref_fail(fs, EUCLEAN, "subvolume %llu: directory %llu loops",
					(unsigned long long)subvol, (unsigned long long)ino);
		struct ref_path p;
		struct ref_key k;
		const uint8_t *d;
		uint32_t size;
		if ((r = ref_find_first(fs, &root, ino, BTRFS_INODE_REF_KEY, &p, &k, &d, &size)))
			return r == -ENOENT ? ref_fail(fs, EUCLEAN, "subvolume %llu: directory %llu has no parent",
						       (unsigned long long)subvol, (unsigned long long)ino)
					    : r;
		const struct btrfs_inode_ref *ir = (const void *)d;
		size_t nl = size >= sizeof(*ir) ? LE16(ir->name_len) : SIZE_MAX;
		if (nl > size - sizeof(*ir) || k.offset == ino) {
			ref_path_release(fs, &p);
			return ref_fail(fs, EUCLEAN, "subvolume %llu: bad inode ref of %llu",
					(unsigned long long)subvol, (unsigned long long)ino);
		}
		r = prepend(fs, buf, at, (const char *)(d + sizeof(*ir)), nl);
		ino = k.offset;
		ref_path_release(fs, &p);
	}
	return r;
}

/* A name of a file that has only extended references (INODE_EXTREF: the
 * names that did not fit its INODE_REF), prepended; *parent its directory. */
static int extref_name(ref_fs *fs, const struct ref_ino *ino, char *buf, size_t *at,
		       uint64_t *parent)
{
	struct ref_root root;
	struct ref_path p;
	struct ref_key k;
	const uint8_t *d;
	uint32_t size;
	int r = ref_find_root(fs, ino->subvol, &root);
	if (r || (r = ref_find_first(fs, &root, ino->ino, BTRFS_INODE_EXTREF_KEY, &p, &k, &d, &size)))
		return r;
	const struct btrfs_inode_extref *x = (const void *)d;
	size_t nl = size >= sizeof(*x) ? LE16(x->name_len) : SIZE_MAX;
	if (nl > size - sizeof(*x))
		r = ref_fail(fs, EUCLEAN, "inode %llu: bad extended reference",
			     (unsigned long long)ino->ino);
	else
		r = prepend(fs, buf, at, (const char *)x->name, nl);
	*parent = LE64(x->parent_objectid);
	ref_path_release(fs, &p);
	return r;
}

int ref_ino_path(ref_fs *fs, const struct ref_ino *ino, char *buf, size_t len)
{
	if (len < 2)
		return ref_fail(fs, ERANGE, "no room for a path");
	char *sv = malloc(len);
	if (!sv)
		return ref_fail(fs, ENOMEM, "out of memory");
	size_t at = len;
	int r = ref_subvol_path(fs, ino->subvol, sv, len);
	if (!r && ino->ino != BTRFS_FIRST_FREE_OBJECTID) {
		struct ref_root root;
		struct ref_path p;
		struct ref_key k;
		const uint8_t *d;
		uint32_t size;
		uint64_t dir = ino->ino;
		/* the first name: an INODE_REF's, else an INODE_EXTREF's */
		if (!(r = ref_find_root(fs, ino->subvol, &root))) {
			r = ref_find_first(fs, &root, ino->ino, BTRFS_INODE_REF_KEY, &p, &k, &d, &size);
			if (r == -ENOENT)
				r = extref_name(fs, ino, buf, &at, &dir);
			else if (!r)
				ref_path_release(fs, &p), r = dir_path(fs, ino->subvol, ino->ino, buf, &at),
					dir = BTRFS_FIRST_FREE_OBJECTID;
		}
		if (!r && dir != BTRFS_FIRST_FREE_OBJECTID)
			r = dir_path(fs, ino->subvol, dir, buf, &at);
		if (r == -ENOENT)
			r = ref_fail(fs, ENOENT, "inode %llu of subvolume %llu has no name",
				     (unsigned long long)ino->ino, (unsigned long long)ino->subvol);
	}
	/* "/" + the subvolume's path + "/" + the names (each with its '/') */
	size_t names = len - at, svl = r ? 0 : strlen(sv);
	if (names) /* the last name's '/' dropped */
		names--;
	size_t sep = svl && names ? 1 : 0;
	if (!r && 1 + svl + sep + names + 1 > len)
		r = ref_fail(fs, ENAMETOOLONG, "path too long");
	if (!r) {
		memmove(buf + 1 + svl + sep, buf + at, names);
		buf[0] = '/';
		memcpy(buf + 1, sv, svl);
		if (sep)
			buf[1 + svl] = '/';
		buf[1 + svl + sep + names] = '\0';
	}
	free(sv);
	return r;
}

int ref_subvol_path(ref_fs *fs, uint64_t subvol, char *buf, size_t len)
{
	if (len == 0)
		return ref_fail(fs, EINVAL, "no room for a path");
	struct ref_root tr;
	int r = ref_find_root(fs, BTRFS_ROOT_TREE_OBJECTID, &tr);
	size_t at = len;
	for (int depth = 0; !r && subvol != BTRFS_FS_TREE_OBJECTID; depth++) {
		if (depth == MAX_DEPTH)
			return ref_fail(fs, EUCLEAN, "subvolume %llu: its parents loop",
					(unsigned long long)subvol);
		struct ref_path p;
		struct ref_key k;
		const uint8_t *d;
		uint32_t size;
		if ((r = ref_find_first(fs, &tr, subvol, BTRFS_ROOT_BACKREF_KEY, &p, &k, &d, &size)))
			return r == -ENOENT ? ref_fail(fs, ENOENT, "subvolume %llu is not linked",
						       (unsigned long long)subvol)
					    : r;
		const struct btrfs_root_ref *rr = (const void *)d;
		size_t nl = size >= sizeof(*rr) ? LE16(rr->name_len) : SIZE_MAX;
		if (nl > size - sizeof(*rr)) {
			ref_path_release(fs, &p);
			return ref_fail(fs, EUCLEAN, "subvolume %llu: bad root backref",
					(unsigned long long)subvol);
		}
		uint64_t dirid = LE64(rr->dirid);
		r = prepend(fs, buf, &at, (const char *)(d + sizeof(*rr)), nl);
		ref_path_release(fs, &p);
		subvol = k.offset;
		if (!r)
			r = dir_path(fs, subvol, dirid, buf, &at);
	}
	if (r)
		return r;
	size_t n = len - at;
	if (n) /* drop the trailing '/' */
		n--;
	memmove(buf, buf + at, n);
	buf[n] = '\0';
	return 0;
}

int ref_subvol_ids(ref_fs *fs, uint64_t **ids, size_t *n)
{
	*ids = NULL;
	*n = 0;
	struct ref_root tr;
	int r = ref_find_root(fs, BTRFS_ROOT_TREE_OBJECTID, &tr);
	if (r)
		return r;
	struct ref_path p;
	struct ref_key k = { BTRFS_FIRST_FREE_OBJECTID, BTRFS_ROOT_BACKREF_KEY, 0 };
	size_t cap = 0;
	for (r = ref_search(fs, &tr, &k, &p); r == 0; r = ref_next(fs, &p)) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid > BTRFS_LAST_FREE_OBJECTID)
			break;
		if (k.type != BTRFS_ROOT_BACKREF_KEY || (*n && (*ids)[*n - 1] == k.objectid))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			void *np = realloc(*ids, cap * sizeof(**ids));
			if (!np) {
				r = ref_fail(fs, ENOMEM, "out of memory");
				break;
			}
			*ids = np;
		}
		(*ids)[(*n)++] = k.objectid;
	}
	if (r == 0)
		ref_path_release(fs, &p);
	if (r < 0) {
		free(*ids);
		*ids = NULL;
		*n = 0;
		return r;
	}
	return 0;
}

int ref_subvol_by_uuid(ref_fs *fs, const uint8_t uuid[BTRFS_UUID_SIZE], bool received,
		       uint64_t *id)
{
	static const uint8_t zero[BTRFS_UUID_SIZE];
	if (!memcmp(uuid, zero, BTRFS_UUID_SIZE)) /* the uuid tree holds no zero uuid */
		return -ENOENT;
	uint64_t *ids;
	size_t n;
	int r = ref_subvol_ids(fs, &ids, &n);
	if (r)
		return r;
	r = -ENOENT;
	for (size_t i = 0; i <= n && r == -ENOENT; i++) {
		uint64_t sv = i < n ? ids[i] : BTRFS_FS_TREE_OBJECTID;
		struct ref_subvol_info si;
		if (!ref_subvol_info(fs, sv, &si) &&
		    !memcmp(received ? si.received_uuid : si.uuid, uuid, BTRFS_UUID_SIZE)) {
			*id = sv;
			r = 0;
		}
	}
	free(ids);
	return r;
}

int ref_subvol_default(ref_fs *fs, uint64_t *id)
{
	struct ref_root tr;
	int r = ref_find_root(fs, BTRFS_ROOT_TREE_OBJECTID, &tr);
	if (r)
		return r;
	struct ref_path p;
	struct ref_key k = { BTRFS_ROOT_TREE_DIR_OBJECTID, BTRFS_DIR_ITEM_KEY,
			     ref_name_hash("default", 7) }, got;
	const uint8_t *d;
	uint32_t size;
	*id = BTRFS_FS_TREE_OBJECTID;
	if ((r = ref_search(fs, &tr, &k, &p)) < 0)
		return r;
	if (r == 1)
		return 0; /* no entry: the top level, as the kernel */
	ref_path_item(&p, &got, &d, &size);
	for (uint32_t pos = 0; !ref_key_cmp(&got, &k) && pos + sizeof(struct btrfs_dir_item) <= size;) {
		const struct btrfs_dir_item *di = (const void *)(d + pos);
		uint32_t nl = LE16(di->name_len), dl = LE16(di->data_len);
		if (pos + sizeof(*di) + nl + dl > size)
			break;
		if (nl == 7 && !memcmp(d + pos + sizeof(*di), "default", 7)) {
			*id = LE64(di->location.objectid);
			break;
		}
		pos += (uint32_t)sizeof(*di) + nl + dl;
	}
	ref_path_release(fs, &p);
	return 0;
}
